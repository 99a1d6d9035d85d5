"""``stereo build`` and ``stereo validate``: the GenVR-duo stereo layout on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer

from dataset_devkit.cli.expect import refuse_any_kind, refuse_other_kind
from dataset_devkit.cli.needs import require_for
from dataset_devkit.cli.output import emit_report, fail_with_report, target
from dataset_devkit.cli.progress import progress_bar
from dataset_devkit.cli.render import (
    READABLE_BY_HELP,
    ReadableByChoice,
    count,
    format_size,
    path_parser,
    print_table,
    stdout_console,
    table,
)
from dataset_devkit.errors import ConfigError, DestinationExistsError, DevkitError
from dataset_devkit.integrity import read_manifest
from dataset_devkit.kinds import TreeKind

__all__ = ["register"]

_KIND = "stereo-dataset"
#: Trees ``stereo validate`` reads: a dataset, also once restored from a release, or damaged.
_STEREO_KINDS = (
    TreeKind.STEREO_DATASET,
    TreeKind.RESTORED_RELEASE,
    TreeKind.CONTENT_MANIFEST_TREE,
)
_TABLE_ROWS = 16  # a --full check of thousands of pairs is summarised, not printed row by row

stereo_app = typer.Typer(
    help="Stereo video datasets (GenVR-duo layout): build, validate.", no_args_is_help=True
)


@stereo_app.command("build")
def build(
    source: Annotated[
        Path, typer.Argument(help="Rendered export directory with export.json.", parser=path_parser)
    ],
    out: Annotated[
        Path,
        typer.Option("--out", help="Dataset root to publish (must not exist).", parser=path_parser),
    ],
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=0,
            help="Processes encoding depth, a pair each (0: this process, on every core).",
        ),
    ] = 0,
    readable_by: Annotated[
        ReadableByChoice, typer.Option("--readable-by", help=READABLE_BY_HELP)
    ] = ReadableByChoice.owner,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
) -> None:
    """Check SOURCE fully, build the dataset, read it back, publish it read-only at --out."""
    from dataset_devkit.integrity.workers import worker_pool
    from dataset_devkit.stereo import build_stereo_dataset  # numpy and friends load lazily

    target(_KIND, out)
    require_for("stereo build")
    refuse_any_kind(source, "render export", "stereo build takes the folder a renderer exported")
    with progress_bar() as advance:
        if workers:
            # spawn: zarr's loop thread does not fork; the workers die with this process
            with worker_pool(workers, method="spawn") as pool:
                result = build_stereo_dataset(
                    source, out, executor=pool, progress=advance, readable_by=readable_by.value
                )
        else:
            result = build_stereo_dataset(
                source, out, progress=advance, readable_by=readable_by.value
            )
    summary: dict[str, Any] = {
        "pairs": result.pairs,
        "frames_per_pair": list(result.frames_per_pair),
        "has_depth": result.has_depth,
        "files": result.files,
        "bytes": result.bytes,
    }
    if as_json:
        emit_report(ok=True, root=result.root, root_sha256=result.root_sha256, **summary)
        return
    console = stdout_console()
    frames = sorted(set(result.frames_per_pair))
    each = str(frames[0]) if len(frames) == 1 else f"{frames[0]} to {frames[-1]}"
    console.print(
        f"built {result.root}: {count(result.pairs, 'pair')} of {each} frames each, "
        f"depth {'yes' if result.has_depth else 'no'}, {count(result.files, 'file')}, "
        f"{format_size(result.bytes)}"
    )
    console.print(f"root_sha256 {result.root_sha256}")


@stereo_app.command("validate")
def validate(
    root: Annotated[Path, typer.Argument(help="A stereo dataset root.", parser=path_parser)],
    with_depth: Annotated[
        bool, typer.Option("--with-depth", help="Also check and read the depth family.")
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help="Reader check on every pair, not only samples.")
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Write the reader_validation.json record to this file.",
            parser=path_parser,
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
) -> None:
    """Check every pair, both indexes, requirements and depth; read frames 0/middle/last."""
    from dataset_devkit.stereo import validate_stereo

    target(_KIND, root)
    refuse_other_kind(root, "stereo dataset", _STEREO_KINDS, command="stereo validate")
    require_for("stereo validate")
    with progress_bar() as advance:
        result = validate_stereo(root, with_depth=with_depth, full=full, progress=advance)
    reader = result.reader
    if report is not None and reader is not None:
        try:
            with report.open("xb") as handle:  # never replace an existing report
                handle.write(msgspec.json.format(msgspec.json.encode(reader), indent=2) + b"\n")
        except FileExistsError as exc:
            raise DestinationExistsError(f"{report}: exists; a report is never replaced") from exc
        except OSError as exc:  # a missing parent, a parent that is a file
            raise ConfigError(
                f"--report {report}: cannot be created ({exc.strerror})", key="report"
            ) from exc
    if as_json:
        facts: dict[str, Any] = {
            "root_sha256": _root_sha256(root),
            "issues": result.issues,
            "pairs": result.pairs,
            "with_depth": with_depth,
            "reader_validation": msgspec.to_builtins(reader),
        }
        if not result.ok:
            try:
                result.raise_for_issues()
            except DevkitError as exc:
                fail_with_report(exc, **facts)
        emit_report(ok=True, **facts)
        return
    if reader is not None:
        reads = table("pair", "read", "frames", "shape", "ok", title="reader validation")
        shown = [r for r in reader.reads if not r.ok] or reader.reads[:_TABLE_ROWS]
        for row in shown[:_TABLE_ROWS]:
            reads.add_row(row.id, row.what, str(row.frames), str(row.shape), str(row.ok))
        print_table(stdout_console(), reads)
        if len(reader.reads) > len(shown[:_TABLE_ROWS]):
            stdout_console().print(
                f"{count(len(reader.reads), 'read')} of {count(len(reader.pairs_read), 'pair')} "
                "in all "
                f"({sum(not r.ok for r in reader.reads)} failed); --report FILE keeps every one"
            )
    result.raise_for_issues()
    stdout_console().print(
        f"OK {root}: {count(result.pairs, 'pair')}"
        + (", depth checked" if with_depth else ", depth not checked")
    )


def _root_sha256(root: Path) -> str | None:
    """The content manifest's root hash, when the manifest reads (validate reports why not)."""
    try:
        return read_manifest(root).root_sha256
    except (DevkitError, OSError):
        return None


def register(app: typer.Typer) -> None:
    """Add the ``stereo`` command group to the root app."""
    app.add_typer(stereo_app, name="stereo")
