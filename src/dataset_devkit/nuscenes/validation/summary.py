"""Deterministic inspection of a published dataroot: validate first, then summarize.

``inspect_dataroot`` never summarizes malformed content: it runs the full published
validation and raises with every issue before reading a single count.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.dataroot import Progress, validate_dataroot
from dataset_devkit.nuscenes.validation.fleet import fleet_notes

__all__ = ["DatarootSummary", "inspect_dataroot"]


@dataclass(frozen=True, slots=True)
class DatarootSummary:
    """What ``dataset-devkit inspect`` reports, as plain values."""

    dataroot: Path
    version: str
    table_counts: dict[str, int]
    image_count: int
    key_frame_count: int
    sweep_count: int
    channels: tuple[str, ...]
    recording_count: int
    scene_count: int
    train_scene_count: int
    test_scene_count: int
    source_type: str
    privacy: str
    pose_frame: str
    validation_state: str
    root_sha256: str
    #: Recordings that contribute at least one scene (``recording_count`` lists every input).
    selected_recording_count: int = 0
    #: Recordings that lost data, and what was not exported and why (see fleet_report).
    warnings: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The summary as a JSON-ready mapping (no absolute path: output is deterministic)."""
        return {
            "version": self.version,
            "tables": dict(self.table_counts),
            "images": {
                "total": self.image_count,
                "key_frames": self.key_frame_count,
                "sweeps": self.sweep_count,
            },
            "channels": list(self.channels),
            "recordings": self.recording_count,
            "recordings_selected": self.selected_recording_count,
            "warnings": list(self.warnings),
            "dropped": list(self.dropped),
            "scenes": {
                "total": self.scene_count,
                "train": self.train_scene_count,
                "test": self.test_scene_count,
            },
            "source_type": self.source_type,
            "privacy": self.privacy,
            "pose_frame": self.pose_frame,
            "validation_state": self.validation_state,
            "content_manifest": spec.CONTENT_MANIFEST_PATH,
            "root_sha256": self.root_sha256,
        }


def inspect_dataroot(
    dataroot: str | Path,
    version: str = spec.VERSION,
    *,
    progress: Progress | None = None,
) -> DatarootSummary:
    """Validate the published *dataroot* (raising with every issue), then summarize it."""
    report = validate_dataroot(dataroot, version, state="published", progress=progress)
    report.raise_for_issues()
    t, ext = report.tables, report.extensions
    source: spec.SourceDocument = ext.get(spec.SOURCE_FILE)
    split: spec.SplitDocument = ext.get(spec.SPLIT_FILE)
    recordings: spec.RecordingsDocument = ext.get(spec.RECORDINGS_FILE)
    validation: spec.ValidationDocument = ext.get(spec.VALIDATION_FILE)
    notes = fleet_notes(recordings, ext.get(spec.VALIDITY_FILE), ext.get(spec.PIPELINE_AUDIT_FILE))
    key_frames = sum(1 for sd in t.tables["sample_data"] if sd["is_key_frame"])
    images = len(t.tables["sample_data"])
    return DatarootSummary(
        dataroot=report.dataroot,
        version=version,
        table_counts={name: len(t.tables[name]) for name in spec.TABLE_NAMES},
        image_count=images,
        key_frame_count=key_frames,
        sweep_count=images - key_frames,
        channels=tuple(sorted(row["channel"] for row in t.tables["sensor"])),
        recording_count=len(recordings.recordings),
        scene_count=len(t.tables["scene"]),
        train_scene_count=sum(1 for a in split.assignments if a.split == "train"),
        test_scene_count=sum(1 for a in split.assignments if a.split == "test"),
        source_type=source.source_type,
        privacy=source.privacy,
        pose_frame=source.pose_frame,
        validation_state=validation.state,
        root_sha256=report.root_sha256 or "",
        selected_recording_count=sum(1 for r in recordings.recordings if r.selected),
        warnings=notes.warnings,
        dropped=notes.dropped,
    )
