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

from dataset_devkit.cli.needs import require_for
from dataset_devkit.cli.output import emit_report, target
from dataset_devkit.cli.render import stderr_console, stdout_console
from dataset_devkit.integrity import path_argument
from dataset_devkit.integrity.numbers import count
from dataset_devkit.nuscenes.config import load_build_config
from dataset_devkit.nuscenes.ingest.inspect import EdgeReport, RecordingReport, inspect_recording
from dataset_devkit.nuscenes.options import IngestConfig

__all__ = ["register"]

recording_app = typer.Typer(
    help="Look into robot recordings (MCAP, ROS 1 and ROS 2 bags, decoded folders).",
    no_args_is_help=True,
)


def _rate(value: float | None) -> str:
    return "" if value is None else f"  {value:.3g} Hz"


def _seconds(t_ns: int | None, start_ns: int | None) -> str:
    if t_ns is None:
        return ""
    return f"{(t_ns - (start_ns or 0)) / 1e9:.3f} s"


def _tree_lines(report: RecordingReport) -> list[str]:
    """The transform tree drawn by indentation, roots first (``~`` dynamic, ``=`` static)."""
    children: dict[str, list[EdgeReport]] = {}
    for edge in report.transforms:
        children.setdefault(edge.parent, []).append(edge)
    childs = {e.child for e in report.transforms}
    roots = sorted(p for p in children if p not in childs)
    start = report.start_ns
    lines: list[str] = []

    def walk(frame: str, depth: int) -> None:
        for edge in sorted(children.get(frame, []), key=lambda e: e.child):
            if edge.static:
                what = "static"
            else:
                first = None if edge.first_s is None else round(edge.first_s * 1e9)
                last = None if edge.last_s is None else round(edge.last_s * 1e9)
                span = f"{_seconds(first, start)} to {_seconds(last, start)}"
                what = f"{count(edge.samples, 'sample')}, {span}"
            mark = "=" if edge.static else "~"
            lines.append(f"{'  ' * (depth + 1)}{mark} {edge.child}  ({what})")
            walk(edge.child, depth + 1)

    for root in roots:
        lines.append(f"  {root}")
        walk(root, 0)
    return lines


def _print(report: RecordingReport) -> None:
    """Plain lines, never a table cell: nothing is cut at any terminal width or in a pipe."""
    out = stdout_console()

    def say(text: str) -> None:
        out.print(text, markup=False, highlight=False, soft_wrap=True)

    duration = "" if report.duration_s is None else f", {report.duration_s:g} s of camera frames"
    say(f"{report.path}: {report.container}, {count(report.messages, 'message')}{duration}")
    if report.clock == "simulation":
        say("clock: simulation (header stamps count from the simulator's start, not from 1970)")
    if report.truncated:
        say(f"truncated: {report.truncation_detail}")
    if report.topics:
        say("topics:")
    for t in report.topics:
        schema = t.schema or "(no schema)"
        say(f"  {t.topic}  {schema}  {count(t.messages, 'message')}{_rate(t.rate_hz)}")
        say(f"      {t.role}: {t.reason}" if t.role != t.reason else f"      {t.role}")
    if report.cameras:
        say("cameras (times from the header stamps):")
    for c in report.cameras:
        invalid = f", {c.invalid_frames} not decodable" if c.invalid_frames else ""
        say(
            f"  {c.name}: {c.topic or 'video'}, {c.encoding}, {count(c.frames, 'frame')}{invalid}, "
            f"{' '.join(c.sizes)}, frame {c.frame_id}, channel {c.channel}"
        )
    if report.transforms:
        say("transform tree (~ dynamic, = static; times from the first camera frame):")
        for line in _tree_lines(report):
            say(line)
    if report.pose and report.build == "ready":
        say(f"ego pose: {report.pose}")
    say(f"build: {report.build}")
    for problem in report.problems:
        say(f"  missing: {problem}")
    if report.suggestions:
        say("build.toml lines that would read it (choose each camera's channel):")
        for line in report.suggestions:
            say(f"  {line}")


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
    require_for("recording inspect")
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
