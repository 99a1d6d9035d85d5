"""Per-camera validity timeline of a nuScenes recording, from ``mz_extensions``.

The exporter audits every scene window of every recording on its 2 Hz grid
(``validity.json``: which camera had a key frame at each grid point) and says which windows
the selection kept (``pipeline_audit.json`` chronology). Drawn with time on x and one row
per camera, a user sees at a glance where a camera dropped out and what the pipeline threw
away, which the tables alone (only what was kept) cannot show.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

from matplotlib.patches import Patch

from dataset_devkit.nuscenes import Dataset
from dataset_devkit.nuscenes.spec import SAMPLE_INTERVAL_NS
from dataset_devkit.preview.figures import figure, save
from dataset_devkit.preview.page import Image, Section, Table, Text

__all__ = ["COLOURS", "State", "grid_states", "render_recording_validity", "render_validity"]


class State(StrEnum):
    """What one camera had at one grid point of one scene window."""

    PRESENT = "present"
    MISSING = "missing"
    REJECTED = "rejected"


#: Colour of each state; no window at all stays the axes' white.
COLOURS: dict[State, str] = {
    State.PRESENT: "#2ca02c",
    State.MISSING: "#d62728",
    State.REJECTED: "#8c8c8c",
}

_LEGEND = {
    State.PRESENT: "present (key frame on the grid)",
    State.MISSING: "missing (no frame within tolerance)",
    State.REJECTED: "rejected (window not exported)",
}

#: Rejected windows listed with their reason per recording; more are counted.
LISTED_REJECTIONS = 20

#: Windows whose start is marked and index written above the timeline (more would overlap).
LABELLED_WINDOWS = 30

Record = Mapping[str, Any]
Run = tuple[float, float]


def grid_states(window: Record, selected: bool) -> dict[str, list[tuple[int, State]]]:
    """Per camera channel: ``(grid time ns, state)`` for each grid point of *window*.

    A grid point a camera missed is *missing* whether or not the window was kept (that is
    often why it was not); every other point of a window the selection dropped is *rejected*.
    """
    start = int(window["start_timestamp_ns"])
    out: dict[str, list[tuple[int, State]]] = {}
    for camera in window["cameras"]:
        missing = set(camera["missing_grid_indices"])
        kept = State.PRESENT if selected else State.REJECTED
        out[camera["channel"]] = [
            (start + g * SAMPLE_INTERVAL_NS, State.MISSING if g in missing else kept)
            for g in range(int(camera["grid_points"]))
        ]
    return out


def render_validity(ds: Dataset, logs: Sequence[str], out: Path, *, limit: int) -> Section:
    """A timeline per recording of *logs*, then up to *limit* recordings that exported
    nothing (their windows were all rejected: the ones a user most needs to see)."""
    section = Section("Camera validity per recording")
    recordings = ds.recordings()
    by_log = {r["log_token"]: r for r in recordings if r.get("selected", True)}
    dropped = [r for r in recordings if not r.get("selected", True)]
    chronology = {c["source_digest"]: c["entries"] for c in ds.pipeline_audit()["chronology"]}
    mapping = ds.channel_mapping()
    drawn = [(f"nuscenes_log{n:03d}_validity.png", by_log[t]) for n, t in enumerate(logs)]
    drawn += [(f"nuscenes_dropped{n:03d}_validity.png", r) for n, r in enumerate(dropped[:limit])]
    for name, recording in drawn:
        digest = recording["source_digest"]
        validity = ds.recording_validity(digest)
        invalid = Counter(
            {
                mapping.get(cam, cam): n
                for cam, n in validity["observations"].get("invalid_frames", {}).items()
            }
        )
        section.items.extend(
            render_recording_validity(
                recording, validity, chronology.get(digest, ()), out, name, invalid
            )
        )
    if len(dropped) > limit:
        section.items.append(
            Text(f"{len(dropped) - limit} more recordings exported nothing (not drawn)")
        )
    if not drawn:
        section.items.append(Text("no recording to draw"))
    return section


def _runs(points: Iterable[tuple[int, State]], origin: int) -> dict[State, list[Run]]:
    """Merge consecutive grid points of one state into ``(x, width)`` bars in seconds."""
    step = SAMPLE_INTERVAL_NS / 1e9
    runs: dict[State, list[Run]] = {state: [] for state in State}
    last: tuple[State, float] | None = None
    for t, state in points:
        x = (t - origin) / 1e9
        bars = runs[state]
        if last is not None and last[0] is state and abs(bars[-1][0] + bars[-1][1] - x) < 1e-9:
            bars[-1] = (bars[-1][0], bars[-1][1] + step)
        else:
            bars.append((x, step))
        last = (state, x)
    return runs


def render_recording_validity(
    recording: Record,
    validity: Record,
    chronology: Sequence[Record],
    out: Path,
    name: str,
    invalid_frames: Mapping[str, int],
) -> list[Image | Table | Text]:
    """The timeline PNG of one recording plus its per-camera counts and rejected windows.

    *recording* is its ``recordings.json`` row, *validity* its ``validity.json`` recording,
    *chronology* its pipeline-audit entries (which windows were selected, and why not),
    *invalid_frames* the video frames per channel that never decoded cleanly.
    """
    entries = {int(e["scene_index"]): e for e in chronology}
    windows = sorted(validity["scene_windows"], key=lambda w: int(w["start_timestamp_ns"]))
    label = str(recording["recording_id"])
    if not windows:
        return [Text(f"recording {label}: no scene window was audited")]
    origin = int(recording["start_timestamp_ns"])
    points: dict[str, list[tuple[int, State]]] = {}
    counts: dict[str, Counter[State]] = {}
    rejected: list[tuple[str, ...]] = []
    for window in windows:
        entry = entries.get(int(window["scene_index"]))
        selected = bool(entry["selected"]) if entry is not None else bool(window["valid"])
        for channel, states in grid_states(window, selected).items():
            points.setdefault(channel, []).extend(states)
            counts.setdefault(channel, Counter()).update(s for _, s in states)
        if not selected:
            why = str(entry["reason"]) if entry is not None else "; ".join(window["reasons"])
            rejected.append(
                (
                    str(window["scene_index"]),
                    f"{(int(window['start_timestamp_ns']) - origin) / 1e9:.1f}",
                    f"{(int(window['end_timestamp_ns']) - origin) / 1e9:.1f}",
                    why,
                )
            )
    channels = sorted(points)
    image = _draw(label, recording, windows, channels, points, origin, out, name)
    table = Table(
        ("camera", "present", "missing", "rejected", "invalid video frames"),
        tuple(
            (
                ch,
                str(counts[ch][State.PRESENT]),
                str(counts[ch][State.MISSING]),
                str(counts[ch][State.REJECTED]),
                str(invalid_frames.get(ch, 0)),
            )
            for ch in channels
        ),
        f"recording {label}: grid points per camera over {len(windows)} scene windows",
    )
    items: list[Image | Table | Text] = [image, table]
    if rejected:
        more = len(rejected) - LISTED_REJECTIONS
        items.append(
            Table(
                ("window", "start s", "end s", "why not exported"),
                tuple(rejected[:LISTED_REJECTIONS]),
                f"rejected windows of {label}"
                + (f" (first {LISTED_REJECTIONS}; {more} more)" if more > 0 else ""),
            )
        )
    return items


def _draw(
    label: str,
    recording: Record,
    windows: Sequence[Record],
    channels: list[str],
    points: dict[str, list[tuple[int, State]]],
    origin: int,
    out: Path,
    name: str,
) -> Image:
    height = 1.5 + 0.42 * len(channels)
    with figure(10, height) as fig:
        ax = fig.add_subplot(1, 1, 1)
        for row, channel in enumerate(channels):
            for state, bars in _runs(points[channel], origin).items():
                if bars:
                    ax.broken_barh(bars, (row - 0.38, 0.76), facecolors=COLOURS[state])
        if len(windows) <= LABELLED_WINDOWS:  # more boundaries would hide the bars
            for window in windows:
                x = (int(window["start_timestamp_ns"]) - origin) / 1e9
                ax.axvline(x, color="#444444", linewidth=0.5)
                ax.text(x, -0.42, f" #{window['scene_index']}", fontsize=6, va="bottom")
        ax.set_yticks(range(len(channels)), channels, fontsize=8)
        ax.set_ylim(len(channels) - 0.5, -0.75)  # first camera on top, window labels above
        end = (int(windows[-1]["end_timestamp_ns"]) - origin) / 1e9
        ax.set_xlim(min(0.0, (int(windows[0]["start_timestamp_ns"]) - origin) / 1e9), end)
        ax.set_xlabel("time from recording start (s); each 2 Hz grid point spans 0.5 s")
        fate = "exported" if recording.get("selected", True) else "nothing exported"
        ax.set_title(f"recording {label} ({fate}): camera validity per scene window", fontsize=9)
        handles = [Patch(facecolor=COLOURS[s], label=_LEGEND[s]) for s in State]
        fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7, frameon=False)
        fig.tight_layout(rect=(0, 0.3 / height, 1, 1))  # room for the legend
        return save(fig, out, name, f"camera validity timeline, recording {label}")
