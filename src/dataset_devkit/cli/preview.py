"""``preview PATH --out DIR``: draw a dataset tree to PNGs and an ``index.html``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dataset_devkit.cli.needs import require_for
from dataset_devkit.cli.output import emit_report, target
from dataset_devkit.cli.progress import progress_bar
from dataset_devkit.cli.render import path_parser

__all__ = ["register"]


def preview_command(
    path: Annotated[
        Path, typer.Argument(help="Any tree the devkit writes (kind detected).", parser=path_parser)
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out", help="An absent or empty directory for the page.", parser=path_parser
        ),
    ],
    scenes: Annotated[int, typer.Option("--scenes", min=1, help="nuScenes scenes drawn.")] = 3,
    pairs: Annotated[int, typer.Option("--pairs", min=1, help="Stereo pairs drawn.")] = 4,
    rows: Annotated[
        int,
        typer.Option("--rows", min=1, help="VIN rows sampled; nuScenes samples per scene grid."),
    ] = 256,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the sampled subset.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
) -> None:
    """Draw PATH (nuScenes, stereo, VIN store, release, restored or any manifest tree).

    On a terminal a bar per stage counts the items drawn (logs, scenes, pairs, rows).
    """
    from dataset_devkit.kinds import detect_tree
    from dataset_devkit.preview import preview

    target(None, path)
    tree = detect_tree(path)
    target(tree.kind.value, tree.root)
    require_for("preview", kind=tree.kind)
    with progress_bar() as advance:
        page = preview(
            path, out, scenes=scenes, pairs=pairs, rows=rows, seed=seed, progress=advance
        )
    if as_json:
        emit_report(ok=True, page=str(page))
        return
    typer.echo(str(page))


def register(app: typer.Typer) -> None:
    """Add ``preview`` to the root app."""
    app.command("preview")(preview_command)
