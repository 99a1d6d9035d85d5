"""``build``, and the nuScenes side of ``validate``/``inspect``, on the command line.

As the nuScenes contract names them (``validate``/``inspect`` live in ``cli/kinds.py``,
which also accepts any other kind of tree as ``validate PATH``)::

    dataset-devkit build CONFIG
    dataset-devkit validate --dataroot D --version v1.0-trainval
    dataset-devkit inspect --dataroot D --version v1.0-trainval [--json]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from dataset_devkit.cli.needs import require_for
from dataset_devkit.cli.output import emit_report, state, target
from dataset_devkit.cli.progress import bars_enabled
from dataset_devkit.cli.render import (
    READABLE_BY_HELP,
    ReadableByChoice,
    count,
    print_table,
    stderr_console,
    stdout_console,
    table,
    text_parser,
)
from dataset_devkit.kinds import TreeKind
from dataset_devkit.nuscenes.build.service import build_dataset, required_extras
from dataset_devkit.nuscenes.config import load_build_config
from dataset_devkit.nuscenes.validation.dataroot import validate_dataroot
from dataset_devkit.nuscenes.validation.summary import inspect_dataroot

__all__ = ["register"]

_LABELS = {
    "ingest": "ingest recordings",
    "scenes": "derive scenes",
    "frames": "store frames",
    "images": "export images",
    "check-images": "validate images",
    "official-loader": "official loader",
    "hash": "hash content",
}


@contextmanager
def _stage_progress() -> Iterator[Callable[[str, int, int], None]]:
    """One progress bar per stage on stderr (only on a terminal, never with --json/--quiet)."""
    console = stderr_console()
    bars = Progress(
        TextColumn("{task.description:<18}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=False,
        disable=not bars_enabled(),
    )
    tasks: dict[str, TaskID] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bars.add_task(_LABELS.get(stage, stage), total=total or None)
        bars.update(tasks[stage], completed=done, total=total or None)

    with bars:
        yield update


def build(
    # A str, not a Path: typer would turn "" into Path("."), the working directory.
    config: Annotated[str, typer.Argument(help="The TOML build config.", parser=text_parser)],
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
    readable_by: Annotated[
        ReadableByChoice, typer.Option("--readable-by", help=READABLE_BY_HELP)
    ] = ReadableByChoice.owner,
) -> None:
    """Build recordings into a validated, published, read-only v1.0-trainval dataroot."""
    target("nuscenes-dataroot", None)
    resolved = load_build_config(config)
    require_for("build", required_extras(resolved))
    with _stage_progress() as progress:
        result = build_dataset(resolved, progress=progress, readable_by=readable_by.value)
    if as_json:
        emit_report(
            ok=True,
            root=result.dataroot,
            root_sha256=result.root_sha256,
            scenes=result.scenes,
            samples=result.samples,
            images=result.images,
            channels=list(result.channels),
            loader={
                "scene_token": result.loader.scene_token,
                "sample_token": result.loader.sample_token,
                "channel": result.loader.channel,
                "filename": str(result.loader.filename),
            },
        )
        return
    console = stdout_console()
    console.print(f"published {result.dataroot} (read-only)")
    console.print(
        f"{count(result.scenes, 'scene')}, {count(result.samples, 'sample')}, "
        f"{count(result.images, 'image')}, "
        f"channels {', '.join(result.channels)}"
    )
    console.print(
        f"official loader: scene {result.loader.scene_token} sample "
        f"{result.loader.sample_token} {result.loader.channel} -> {result.loader.filename}"
    )
    console.print(f"root_sha256 {result.root_sha256}")
    # Nothing a fleet build leaves out is silent: each line names the recording and why.
    errors = stderr_console()
    for line in result.warnings:
        errors.print(f"warning: {line}", markup=False, highlight=False)
    for line in result.dropped:
        console.print(f"dropped: {line}", markup=False, highlight=False)


def validate_nuscenes(dataroot: str, version: str) -> None:
    """Revalidate a published dataroot fully; exit 1 listing every issue."""
    target("nuscenes-dataroot", dataroot)
    require_for("validate", kind=TreeKind.NUSCENES_DATAROOT)
    with _stage_progress() as progress:
        report = validate_dataroot(dataroot, version, state="published", progress=progress)
    report.raise_for_issues()
    if state.json:
        emit_report(ok=True, root_sha256=report.root_sha256, version=version)
        return
    stdout_console().print(
        f"OK {dataroot}: valid {version} dataroot, root_sha256 {report.root_sha256}"
    )


def inspect_nuscenes(dataroot: str, version: str, as_json: bool) -> None:
    """Validate, then summarize a published dataroot (deterministic output)."""
    target("nuscenes-dataroot", dataroot)
    require_for("inspect", kind=TreeKind.NUSCENES_DATAROOT)
    with _stage_progress() as progress:
        summary = inspect_dataroot(dataroot, version, progress=progress)
    data = summary.to_json()
    if as_json:
        # The nuScenes contract's summary keys stay at the top level, as before.
        emit_report(ok=True, **data)
        return
    rows = table("item", "value", title=f"{version} dataroot", show_header=True)
    for name, rows_of_table in data["tables"].items():
        rows.add_row(f"table {name}", str(rows_of_table))
    images = data["images"]
    rows.add_row(
        "images",
        f"{images['total']} ({images['key_frames']} key frames, {images['sweeps']} sweeps)",
    )
    rows.add_row("channels", ", ".join(data["channels"]))
    rows.add_row(
        "recordings", f"{data['recordings']} ({data['recordings_selected']} contribute scenes)"
    )
    scenes = data["scenes"]
    rows.add_row("scenes", f"{scenes['total']} (train {scenes['train']}, test {scenes['test']})")
    rows.add_row("source type", data["source_type"])
    rows.add_row("privacy", data["privacy"])
    rows.add_row("pose frame", data["pose_frame"])
    rows.add_row("validation", data["validation_state"])
    rows.add_row("content manifest", data["content_manifest"])
    console = stdout_console()
    print_table(console, rows)
    console.print(f"root_sha256 {data['root_sha256']}")
    for line in data["warnings"]:
        console.print(f"warning: {line}", markup=False, highlight=False)
    for line in data["dropped"]:
        console.print(f"dropped: {line}", markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``build`` to the root app (``validate``/``inspect`` serve every kind: cli/kinds)."""
    app.command("build")(build)
