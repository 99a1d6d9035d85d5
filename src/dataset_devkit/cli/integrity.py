"""``manifest``, ``verify`` and ``publish``: the integrity core on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dataset_devkit.cli.render import (
    READABLE_BY_HELP,
    ReadableByChoice,
    byte_progress,
    path_parser,
    print_json,
    stdout_console,
)
from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    build_manifest,
    publish_tree,
    verify_tree,
    write_manifest,
)
from dataset_devkit.integrity.tree_size import tree_size
from dataset_devkit.integrity.verify import check_root_hex

__all__ = ["register"]


_LOCATION_HELP = (
    "Where the manifest lives, relative to the tree (a path ending in content_manifest.json, "
    "e.g. mz_extensions/content_manifest.json)."
)


def manifest(
    directory: Annotated[Path, typer.Argument(help="The tree to hash.", parser=path_parser)],
    location: Annotated[
        str, typer.Option("--location", help=_LOCATION_HELP)
    ] = CONTENT_MANIFEST_NAME,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the manifest instead of writing it.")
    ] = False,
) -> None:
    """Write DIR/content_manifest.json or DIR/LOCATION (never replacing one); print its root."""
    with byte_progress("hashing", tree_size(directory)) as advance:
        if print_only:
            result = build_manifest(directory, location=location, progress=advance)
        else:
            result = write_manifest(directory, location=location, progress=advance)
    if print_only:
        typer.echo(result.to_bytes().decode("utf-8"), nl=False)
        return
    console = stdout_console()
    console.print(
        f"wrote {directory / result.location}: {result.file_count} files, "
        f"{result.total_bytes} bytes"
    )
    console.print(f"root_sha256 {result.root_sha256}")


def verify(
    directory: Annotated[
        Path, typer.Argument(help="A tree holding content_manifest.json.", parser=path_parser)
    ],
    location: Annotated[
        str | None,
        typer.Option(
            "--location",
            help="Where the manifest is (default: found at the top, or the one subdirectory "
            "whose manifest names itself).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report.")] = False,
    expect_root: Annotated[
        str | None,
        typer.Option(
            "--expect-root",
            metavar="HEX",
            help="Fail unless the manifest's root_sha256 is this one (the root printed when "
            "the tree was published).",
        ),
    ] = None,
) -> None:
    """Check DIR against its content manifest; exit 1 with every difference listed."""
    if expect_root is not None:
        try:
            check_root_hex(expect_root)
        except ConfigError as exc:
            raise typer.BadParameter(str(exc), param_hint="--expect-root") from None
    with byte_progress("verifying", tree_size(directory)) as advance:
        report = verify_tree(
            directory, location=location, progress=advance, expect_root=expect_root
        )
    if as_json:
        print_json(report.to_json())
        if not report.ok:
            raise typer.Exit(1)
        return
    if report.ok:
        stdout_console().print(
            f"OK {directory}: {report.file_count} files, {report.total_bytes} bytes match "
            f"{report.manifest_location}, root_sha256 {report.root_sha256}"
        )
        return
    report.raise_for_issues()


def publish(
    staging: Annotated[Path, typer.Argument(help="The complete staged tree.", parser=path_parser)],
    to: Annotated[
        Path, typer.Option("--to", help="The final name (must not exist).", parser=path_parser)
    ],
    manifest_location: Annotated[
        str, typer.Option("--manifest-location", help=_LOCATION_HELP)
    ] = CONTENT_MANIFEST_NAME,
    readable_by: Annotated[
        ReadableByChoice, typer.Option("--readable-by", help=READABLE_BY_HELP)
    ] = ReadableByChoice.owner,
) -> None:
    """Publish STAGING under FINAL: manifest, read-only modes, fsync, atomic rename."""
    with byte_progress("publishing", tree_size(staging)) as advance:
        result = publish_tree(
            staging,
            to,
            manifest_location=manifest_location,
            progress=advance,
            readable_by=readable_by.value,
        )
    console = stdout_console()
    console.print(
        f"published {result.final}: {result.manifest.file_count} files (read-only), "
        f"manifest {result.manifest_location}"
    )
    console.print(f"root_sha256 {result.root_sha256}")


def register(app: typer.Typer) -> None:
    """Add the integrity commands to the root app."""
    app.command("manifest")(manifest)
    app.command("verify")(verify)
    app.command("publish")(publish)
