"""``build``, ``validate`` and ``inspect``: the nuScenes pipeline on the command line.

Exactly as the seed names them::

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
from rich.table import Table

from dataset_devkit.cli.render import print_json, stderr_console, stdout_console
from dataset_devkit.nuscenes.build.service import build_dataset
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
    """One progress bar per stage on stderr (hidden when stderr is not a terminal)."""
    console = stderr_console()
    bars = Progress(
        TextColumn("{task.description:<18}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    )
    tasks: dict[str, TaskID] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bars.add_task(_LABELS.get(stage, stage), total=total or None)
        bars.update(tasks[stage], completed=done, total=total or None)

    with bars:
        yield update


def build(
    # A str, not a Path: typer would turn "" into Path("."), see _DATAROOT below.
    config: Annotated[str, typer.Argument(help="The TOML build config.")],
) -> None:
    """Build recordings into a validated, published, read-only v1.0-trainval dataroot."""
    resolved = load_build_config(config)
    with _stage_progress() as progress:
        result = build_dataset(resolved, progress=progress)
    console = stdout_console()
    console.print(f"published {result.dataroot} (read-only)")
    console.print(
        f"{result.scenes} scenes, {result.samples} samples, {result.images} images, "
        f"channels {', '.join(result.channels)}"
    )
    console.print(
        f"official loader: scene {result.loader.scene_token} sample "
        f"{result.loader.sample_token} {result.loader.channel} -> {result.loader.filename}"
    )
    console.print(f"root_sha256 {result.root_sha256}")


# A str, not a Path: typer would turn "" into Path("."), the working directory; the library
# refuses an empty name with a ConfigError naming the key instead.
_DATAROOT = Annotated[str, typer.Option("--dataroot", help="The published dataroot.")]
_VERSION = Annotated[str, typer.Option("--version", help="The table version: v1.0-trainval.")]


def validate(dataroot: _DATAROOT, version: _VERSION) -> None:
    """Revalidate a published dataroot fully; exit 1 listing every issue."""
    with _stage_progress() as progress:
        report = validate_dataroot(dataroot, version, state="published", progress=progress)
    report.raise_for_issues()
    stdout_console().print(
        f"OK {dataroot}: valid {version} dataroot, root_sha256 {report.root_sha256}"
    )


def inspect(
    dataroot: _DATAROOT,
    version: _VERSION,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
) -> None:
    """Validate, then summarize a published dataroot (deterministic output)."""
    with _stage_progress() as progress:
        summary = inspect_dataroot(dataroot, version, progress=progress)
    data = summary.to_json()
    if as_json:
        print_json(data)
        return
    table = Table(title=f"{version} dataroot", show_header=True)
    table.add_column("item")
    table.add_column("value")
    for name, count in data["tables"].items():
        table.add_row(f"table {name}", str(count))
    images = data["images"]
    table.add_row(
        "images",
        f"{images['total']} ({images['key_frames']} key frames, {images['sweeps']} sweeps)",
    )
    table.add_row("channels", ", ".join(data["channels"]))
    table.add_row("recordings", str(data["recordings"]))
    scenes = data["scenes"]
    table.add_row("scenes", f"{scenes['total']} (train {scenes['train']}, test {scenes['test']})")
    table.add_row("source type", data["source_type"])
    table.add_row("privacy", data["privacy"])
    table.add_row("pose frame", data["pose_frame"])
    table.add_row("validation", data["validation_state"])
    table.add_row("content manifest", data["content_manifest"])
    console = stdout_console()
    console.print(table)
    console.print(f"root_sha256 {data['root_sha256']}")


def register(app: typer.Typer) -> None:
    """Add ``build``, ``validate`` and ``inspect`` to the root app."""
    app.command("build")(build)
    app.command("validate")(validate)
    app.command("inspect")(inspect)
