"""``manifest``, ``verify`` and ``publish``: the integrity core on the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dataset_devkit.cli.expect import refuse_other_kind
from dataset_devkit.cli.output import emit_report, target
from dataset_devkit.cli.progress import progress_bar
from dataset_devkit.cli.release import verify_partial_restore
from dataset_devkit.cli.remote import (
    TransferOptions,
    is_url,
    location_parser,
    publish_to_url,
    show_verification,
    verify_url,
)
from dataset_devkit.cli.render import (
    READABLE_BY_HELP,
    ReadableByChoice,
    count,
    format_size,
    hidden_alias,
    path_parser,
    renamed,
    size_option,
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
from dataset_devkit.integrity.sampling import VerifySample, parse_sample
from dataset_devkit.integrity.verify import check_root_hex
from dataset_devkit.kinds import TreeKind

__all__ = ["register"]

_KIND = "content-manifest-tree"
_LOCATION_HELP = (
    "Where the manifest lives, relative to the tree (a path ending in content_manifest.json, "
    "e.g. mz_extensions/content_manifest.json; default: content_manifest.json)."
)
_JSON = Annotated[bool, typer.Option("--json", help="Print the JSON report.")]
_OLD_LOCATION = Annotated[str | None, hidden_alias("--location", "--manifest-location")]
_WORKERS = Annotated[
    int | None,
    typer.Option("--workers", min=1, help="With a URL: objects transferred at once (default: 8)."),
]
_RETRIES = Annotated[
    int | None,
    typer.Option(
        "--retries",
        min=0,
        help="With a URL: retries of each request after a 5xx answer, a refused or dropped "
        "connection or a timeout, with exponential backoff (default: 5).",
    ),
]


def manifest(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="The tree to hash.", parser=path_parser)
    ],
    manifest_location: Annotated[
        str | None, typer.Option("--manifest-location", help=_LOCATION_HELP)
    ] = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the manifest instead of writing it.")
    ] = False,
    as_json: _JSON = False,
    old_location: _OLD_LOCATION = None,
) -> None:
    """Write DIR/content_manifest.json (or at --manifest-location), never replacing one."""
    target(_KIND, directory)
    location = (
        renamed(manifest_location, old_location, "--manifest-location", "--location")
        or CONTENT_MANIFEST_NAME
    )
    with progress_bar() as advance:
        if print_only:
            result = build_manifest(directory, location=location, progress=advance)
        else:
            result = write_manifest(directory, location=location, progress=advance)
    if as_json:
        emit_report(
            ok=True,
            root_sha256=result.root_sha256,
            manifest_location=location,
            written=not print_only,
            files=result.file_count,
            bytes=result.total_bytes,
            **({"manifest": json.loads(result.to_bytes())} if print_only else {}),
        )
        return
    if print_only:
        typer.echo(result.to_bytes().decode("utf-8"), nl=False)
        return
    console = stdout_console()
    console.print(
        f"wrote {directory / location}: {count(result.file_count, 'file')}, "
        f"{format_size(result.total_bytes)}"
    )
    console.print(f"root_sha256 {result.root_sha256}")


def verify(
    directory: Annotated[
        str,
        typer.Argument(
            metavar="DIR",
            help="A tree holding content_manifest.json, or its URL (s3://bucket/prefix, "
            "gs://, az://, file://).",
            parser=location_parser,
        ),
    ],
    manifest_location: Annotated[
        str | None,
        typer.Option(
            "--manifest-location",
            help="Where the manifest is (default: found at the top, or the one subdirectory "
            "whose manifest names itself).",
        ),
    ] = None,
    as_json: _JSON = False,
    expect_root: Annotated[
        str | None,
        typer.Option(
            "--expect-root",
            metavar="HEX",
            help="Fail unless the manifest's root_sha256 is this one (the root printed when "
            "the tree was published).",
        ),
    ] = None,
    old_location: _OLD_LOCATION = None,
    workers: _WORKERS = None,
    retries: _RETRIES = None,
    sample: Annotated[
        str | None,
        typer.Option(
            "--sample",
            metavar="SHARE",
            help="Hash only a deterministic part of the files: 5% (about one in twenty) or "
            "N/T (the N-th of T disjoint parts, e.g. 1/20); every file's presence and size "
            "is still checked.",
        ),
    ] = None,
    sample_seed: Annotated[
        int,
        typer.Option(
            "--sample-seed",
            metavar="N",
            min=0,
            help="With --sample: another seed picks other files (default 0).",
        ),
    ] = 0,
) -> None:
    """Check DIR against its content manifest; exit 1 with every difference listed.

    A URL is verified in place: every object is read and hashed, none is downloaded to
    disk. A tree restored in part by unpack.py (base without depth) is checked family by
    family against its release index instead, naming the absent families."""
    target(_KIND, directory)
    chosen = None
    if sample is not None:
        try:
            chosen = parse_sample(sample, sample_seed)
        except ConfigError as exc:
            raise typer.BadParameter(str(exc), param_hint="--sample") from None
    if expect_root is not None:
        try:
            check_root_hex(expect_root)
        except ConfigError as exc:
            raise typer.BadParameter(str(exc), param_hint="--expect-root") from None
    location = renamed(manifest_location, old_location, "--manifest-location", "--location")
    transfer = TransferOptions(workers=workers, retries=retries)
    if is_url(directory):
        verify_url(
            directory,
            manifest_location=location,
            as_json=as_json,
            expect_root=expect_root,
            transfer=transfer,
            sample=chosen,
        )
        return
    transfer.refuse_for_local(directory)
    return _verify_local(Path(directory), location, as_json, expect_root, chosen)


def _verify_local(
    directory: Path,
    location: str | None,
    as_json: bool,
    expect_root: str | None,
    sample: VerifySample | None,
) -> None:
    partial = location is None and sample is None  # a sampled verify reads the manifest
    if partial and verify_partial_restore(directory, as_json, expect_root):
        return
    with progress_bar() as advance:
        report = verify_tree(
            directory,
            location=location,
            progress=advance,
            expect_root=expect_root,
            sample=sample,
        )
    if report.manifest_location is None:  # a release directory has no manifest of its own
        accepted = (kind for kind in TreeKind if kind is not TreeKind.RELEASE)
        refuse_other_kind(directory, "tree with a content manifest", accepted, command="verify")
    show_verification(report, shown=directory, as_json=as_json)


def publish(
    staging: Annotated[Path, typer.Argument(help="The complete staged tree.", parser=path_parser)],
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            help="The final name (must not exist), or an object store URL "
            "(s3://bucket/prefix, gs://, az://, file://) to upload the tree to.",
            parser=location_parser,
            metavar="FINAL|URL",
        ),
    ] = None,
    manifest_location: Annotated[
        str | None, typer.Option("--manifest-location", help=_LOCATION_HELP)
    ] = None,
    readable_by: Annotated[
        ReadableByChoice, typer.Option("--readable-by", help=READABLE_BY_HELP)
    ] = ReadableByChoice.owner,
    as_json: _JSON = False,
    old_out: Annotated[Path | None, hidden_alias("--to", "--out", path=True)] = None,
    workers: _WORKERS = None,
    part_size: Annotated[
        int | None,
        size_option(
            "--part-size",
            "With a URL: the multipart part size, e.g. 64MiB (default: 32MiB; S3 takes "
            "5MiB to 5GiB). Files up to --part-concurrency parts go in one request.",
        ),
    ] = None,
    part_concurrency: Annotated[
        int | None,
        typer.Option(
            "--part-concurrency",
            min=1,
            help="With a URL: parts of one large file sent at once (default: 2).",
        ),
    ] = None,
    retries: _RETRIES = None,
) -> None:
    """Publish STAGING under --out: manifest, read-only modes, fsync, atomic rename.

    With a URL, the verified tree is uploaded and its content manifest written last, only
    if the prefix holds no dataset yet; re-running the same command resumes an
    interrupted upload."""
    target(_KIND, staging)
    named = renamed(out, None if old_out is None else str(old_out), "--out", "--to")
    if named is None:
        raise typer.BadParameter("missing --out, the final name", param_hint="--out")
    target(_KIND, named)
    transfer = TransferOptions(workers, part_size, part_concurrency, retries)
    if is_url(named):
        publish_to_url(
            staging,
            named,
            manifest_location=manifest_location,
            as_json=as_json,
            transfer=transfer,
        )
        return
    transfer.refuse_for_local(named)
    final = Path(named)
    location = manifest_location or CONTENT_MANIFEST_NAME
    with progress_bar() as advance:
        result = publish_tree(
            staging,
            final,
            manifest_location=location,
            progress=advance,
            readable_by=readable_by.value,
        )
    if as_json:
        emit_report(
            ok=True,
            root=result.final,
            root_sha256=result.root_sha256,
            manifest_location=result.manifest_location,
            files=result.manifest.file_count,
            bytes=result.manifest.total_bytes,
            already_published=result.already_published,
        )
        return
    console = stdout_console()
    if result.already_published:
        console.print(
            f"already published {result.final}: an earlier run of this command published "
            f"{staging.name} there; {count(result.manifest.file_count, 'file')} verified, "
            "nothing to do"
        )
    else:
        console.print(
            f"published {result.final}: {count(result.manifest.file_count, 'file')} (read-only), "
            f"manifest {result.manifest_location}"
        )
    console.print(f"root_sha256 {result.root_sha256}")


def register(app: typer.Typer) -> None:
    """Add the integrity commands to the root app."""
    app.command("manifest")(manifest)
    app.command("verify")(verify)
    app.command("publish")(publish)
