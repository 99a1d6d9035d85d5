"""``release pack|verify|unpack``: cut a tree into verified packages and restore them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import msgspec
import typer

from dataset_devkit.cli.render import (
    ReadableByChoice,
    byte_progress,
    path_parser,
    print_json,
    stdout_console,
)
from dataset_devkit.integrity.tree_size import tree_size
from dataset_devkit.release import (
    DEFAULT_PACKAGE_LIMIT,
    FamilyRules,
    PackOptions,
    pack_release,
    parse_rule,
    restore_release,
    verify_release,
)

__all__ = ["register"]

release_app = typer.Typer(
    help="Release packaging: verified <= 4 GiB tar packages and a stdlib-only unpack.py.",
    no_args_is_help=True,
)

FamilyFlags = tuple[bool, bool, bool, list[str]]


def _families(base: bool, depth: bool, everything: bool, family: list[str] | None) -> list[str]:
    names = list(family or []) + (["base"] if base else []) + (["depth"] if depth else [])
    return [*names, "all"] if everything else names


@release_app.command("pack")
def pack(
    tree: Annotated[Path, typer.Argument(help="The tree to release.", parser=path_parser)],
    out: Annotated[
        Path, typer.Option("--out", help="The new release directory.", parser=path_parser)
    ],
    name: Annotated[str | None, typer.Option(help="Root folder inside packages.")] = None,
    package_limit: Annotated[
        int, typer.Option("--package-limit", help="Max bytes per package.")
    ] = DEFAULT_PACKAGE_LIMIT,
    rule: Annotated[
        list[str] | None,
        typer.Option("--rule", help="PATTERN=FAMILY, first match wins (default depth-*/**=depth)."),
    ] = None,
    default_family: Annotated[str, typer.Option(help="Family of unmatched files.")] = "base",
    deliver: Annotated[
        list[str] | None, typer.Option("--deliver", help="Families to package now (default all).")
    ] = None,
    previous: Annotated[
        Path | None,
        typer.Option(
            help="Earlier release of the same snapshot to carry over.", parser=path_parser
        ),
    ] = None,
    restore_test: Annotated[
        str, typer.Option(help="Restore test: full, sample or none.")
    ] = "sample",
    read_back: Annotated[bool, typer.Option(help="Re-read every new package.")] = True,
    readable_by: Annotated[
        ReadableByChoice,
        typer.Option(
            "--readable-by",
            help="Who may read the release folder: owner (0700), group (0750) or all (0755).",
        ),
    ] = ReadableByChoice.owner,
    as_json: Annotated[bool, typer.Option("--json", help="Print manifest.json.")] = False,
) -> None:
    """Pack TREE into the new release directory OUT (verified, never overwritten)."""
    if restore_test not in ("full", "sample", "none"):
        raise typer.BadParameter("must be full, sample or none", param_hint="--restore-test")
    mode: Literal["full", "sample", "none"] = restore_test  # type: ignore[assignment]
    rules = FamilyRules(
        rules=tuple(parse_rule(r) for r in rule) if rule else FamilyRules().rules,
        default=default_family,
        require_matches=bool(rule),
    )
    options = PackOptions(
        name=name,
        package_limit=package_limit,
        rules=rules,
        deliver=tuple(deliver) if deliver else None,
        previous=previous,
        read_back=read_back,
        restore_test=mode,
        readable_by=readable_by.value,
    )
    with byte_progress("packing", tree_size(tree)) as advance:
        result = pack_release(tree, out, options, progress=advance)
    if as_json:
        print_json(msgspec.to_builtins(result.manifest))
        return
    console = stdout_console()
    for fam in result.manifest.families:
        console.print(
            f"{fam.name}: {fam.status}, {fam.file_count} files, {fam.total_bytes} bytes, "
            f"{fam.package_count} packages"
        )
    console.print(f"wrote {result.release} ({len(result.manifest.packages)} packages)")
    console.print(f"root_sha256 {result.manifest.snapshot.root_sha256}")


@release_app.command("verify")
def verify(
    release_dir: Annotated[Path, typer.Argument(help="The release directory.", parser=path_parser)],
    base: Annotated[bool, typer.Option("--base")] = False,
    depth: Annotated[bool, typer.Option("--depth")] = False,
    everything: Annotated[bool, typer.Option("--all")] = False,
    family: Annotated[list[str] | None, typer.Option("--family")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Verify packages and every member against files.jsonl (default: delivered families)."""
    summary = verify_release(release_dir, _families(base, depth, everything, family))
    report = {
        "ok": True,
        "families": summary.families,
        "packages": summary.packages,
        "package_bytes": summary.package_bytes,
    }
    if as_json:
        print_json(report)
        return
    stdout_console().print(
        f"OK {release_dir}: {summary.packages} packages ({summary.package_bytes} bytes) of "
        f"{', '.join(summary.families)} verified"
    )


@release_app.command("unpack")
def unpack(
    release_dir: Annotated[Path, typer.Argument(help="The release directory.", parser=path_parser)],
    output: Annotated[
        Path, typer.Option("--output", help="Restore into OUTPUT/<name>.", parser=path_parser)
    ],
    base: Annotated[bool, typer.Option("--base")] = False,
    depth: Annotated[bool, typer.Option("--depth")] = False,
    everything: Annotated[bool, typer.Option("--all")] = False,
    family: Annotated[list[str] | None, typer.Option("--family")] = None,
    no_fsync: Annotated[
        bool, typer.Option("--no-fsync", help="Skip fsync (faster, not power-cut safe).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Verify and restore families with the same logic as the shipped unpack.py."""
    families = _families(base, depth, everything, family)
    if not families:
        raise typer.BadParameter("choose --base, --depth, --family NAME or --all")
    summary = restore_release(release_dir, output, families, fsync=not no_fsync)
    report = {
        "ok": True,
        "families": summary.families,
        "output": summary.output,
        "written": summary.written,
        "skipped": summary.skipped,
    }
    if as_json:
        print_json(report)
        return
    stdout_console().print(
        f"OK: {', '.join(summary.families)} restored into {summary.output}: "
        f"{summary.written} files written, {summary.skipped} already present and verified"
    )


def register(app: typer.Typer) -> None:
    """Add the ``release`` command group to the root app."""
    app.add_typer(release_app, name="release")
