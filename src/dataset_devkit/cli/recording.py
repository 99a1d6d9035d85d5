"""``recording inspect``: what recordings hold and what a build would make of them.

::

    dataset-devkit recording inspect PATH... [--config build.toml] [--json]

Exit 0 when a build would read every recording, 1 when it would refuse one (the report says
what is missing and the ``build.toml`` lines that would fix it).
"""

from __future__ import annotations

from typing import Annotated

import msgspec
import typer
from rich.table import Table

from dataset_devkit.cli.output import emit_report, target
from dataset_devkit.cli.render import stderr_console, stdout_console
from dataset_devkit.integrity import path_argument
from dataset_devkit.nuscenes.config import load_build_config
from dataset_devkit.nuscenes.ingest.inspect import RecordingReport, inspect_recording
from dataset_devkit.nuscenes.options import IngestConfig

__all__ = ["register"]

recording_app = typer.Typer(
    help="Look into robot recordings (MCAP, ROS 1 and ROS 2 bags, decoded folders).",
    no_args_is_help=True,
)


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:g} Hz"


def _print(report: RecordingReport) -> None:
    console = stdout_console()
    duration = "" if report.duration_s is None else f", {report.duration_s:g} s of camera frames"
    console.print(
        f"{report.path}: {report.container}, {report.messages} messages{duration}",
        markup=False,
        highlight=False,
    )
    if report.clock == "simulation":
        console.print(
            "  clock: simulation (header stamps count from the simulator's start, not 1970)",
            markup=False,
        )
    if report.truncated:
        console.print(f"  truncated: {report.truncation_detail}", markup=False)
    topics = Table(show_header=True, box=None, pad_edge=False)
    for column in ("topic", "schema", "messages", "rate", "role", "why"):
        topics.add_column(column, overflow="fold")
    for t in report.topics:
        topics.add_row(t.topic, t.schema, str(t.messages), _rate(t.rate_hz), t.role, t.reason)
    console.print(topics)
    if report.cameras:
        cameras = Table(show_header=True, box=None, pad_edge=False, title="cameras")
        for column in ("camera", "topic", "encoding", "frames", "size", "frame", "channel"):
            cameras.add_column(column, overflow="fold")
        for c in report.cameras:
            frames = str(c.frames) + (f" ({c.invalid_frames} invalid)" if c.invalid_frames else "")
            cameras.add_row(
                c.name, c.topic, c.encoding, frames, ", ".join(c.sizes), c.frame_id, c.channel
            )
        console.print(cameras)
    if report.transforms:
        edges = Table(show_header=True, box=None, pad_edge=False, title="transform tree")
        for column in ("parent", "child", "kind", "samples", "from", "to"):
            edges.add_column(column, overflow="fold")
        for e in report.transforms:
            edges.add_row(
                e.parent,
                e.child,
                "static" if e.static else "dynamic",
                str(e.samples),
                "" if e.first_s is None else f"{e.first_s:.3f} s",
                "" if e.last_s is None else f"{e.last_s:.3f} s",
            )
        console.print(edges)
    if report.pose:
        console.print(f"  ego pose: {report.pose}", markup=False, highlight=False)
    console.print(f"  build: {report.build}", markup=False)
    for problem in report.problems:
        console.print(f"  missing: {problem}", markup=False, highlight=False)
    if report.suggestions:
        console.print("  build.toml lines that would read it:", markup=False)
        for line in report.suggestions:
            console.print(f"    {line}", markup=False, highlight=False)


def inspect(
    paths: Annotated[list[str], typer.Argument(help="Recordings: .mcap, .bag, bag folders.")],
    config: Annotated[
        str | None,
        typer.Option("--config", help="Read them as this build.toml's [ingest] would."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
) -> None:
    """Show each recording's topics, cameras, transforms and ego pose, as a build sees them."""
    target("recording", paths[0] if len(paths) == 1 else None)
    options = IngestConfig()
    tolerance_ns = None
    if config is not None:
        resolved = load_build_config(config)
        options = resolved.pipeline.ingest
        tolerance_ns = round(resolved.pipeline.scenario.pose_tolerance_ms * 1e6)
    reports = []
    for i, path in enumerate(paths):
        recording = path_argument(path, f"paths[{i}]")
        if tolerance_ns is None:
            reports.append(inspect_recording(recording, options))
        else:
            reports.append(inspect_recording(recording, options, pose_tolerance_ns=tolerance_ns))
    refused = [r for r in reports if r.build != "ready"]
    if as_json:
        emit_report(
            ok=not refused,
            issues=[f"{r.path}: {p}" for r in refused for p in r.problems],
            recordings=[msgspec.to_builtins(r) for r in reports],
            exit_code=1 if refused else None,
        )
    else:
        for report in reports:
            _print(report)
    if refused:
        if not as_json:
            stderr_console().print(
                f"error: a build would refuse {len(refused)} of {len(reports)} recordings "
                "(see 'missing' above)",
                markup=False,
                highlight=False,
            )
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``recording`` group to the root app."""
    recording_app.command("inspect")(inspect)
    app.add_typer(recording_app, name="recording")
