"""What a build over a fleet of recordings left out, and why, as lines for people.

A fleet is uneven: drives that contribute no scene, truncated drives, damaged video, scene
windows that fail a rule. None of this fails a build; all of it is recorded in
``mz_extensions/`` (``recordings.json``, ``validity.json``, ``pipeline_audit.json``). These
lines are what ``build`` prints and ``inspect`` shows, so nothing is only a field in a file.
"""

from __future__ import annotations

from dataclasses import dataclass

from dataset_devkit.nuscenes import spec

__all__ = ["FleetNotes", "fleet_notes"]


@dataclass(frozen=True, slots=True)
class FleetNotes:
    """``warnings``: recordings that lost data; ``dropped``: what was not exported, why."""

    warnings: tuple[str, ...]
    dropped: tuple[str, ...]


def fleet_notes(
    recordings: spec.RecordingsDocument,
    validity: spec.ValidityDocument,
    audit: spec.PipelineAuditDocument,
) -> FleetNotes:
    """One line per truncated or damaged recording and per dropped recording or scene."""
    names = {
        r.source_digest: f"recording {r.recording_id} ({r.source_name})"
        for r in recordings.recordings
    }
    warnings: list[str] = []
    dropped: list[str] = []
    for rec in recordings.recordings:
        name = names[rec.source_digest]
        if rec.truncated:
            kept = len(rec.scene_tokens)
            warnings.append(
                f"{name} is truncated ({rec.truncation_detail or 'no footer'}); "
                f"{kept} complete scene{'s' if kept != 1 else ''} before the cut kept"
            )
        if rec.clock == "simulation":
            warnings.append(
                f"{name} is stamped with a simulator's clock (seconds since the simulation "
                "started, not since 1970): its log dates and times of day mean nothing"
            )
        if not rec.selected:
            dropped.append(f"{name} contributes no scene: {rec.reason}")
    for validity_rec in validity.recordings:
        obs = validity_rec.observations
        if obs.invalid_frames:
            total = sum(obs.invalid_frames.values())
            warnings.append(
                f"{names.get(validity_rec.source_digest, validity_rec.recording_id)} has "
                f"{total} invalid video frames, never exported: "
                + "; ".join(obs.invalid_frame_detail)
            )
    for chron in audit.chronology:
        for entry in chron.entries:
            if not entry.selected:
                dropped.append(
                    f"scene window {entry.scene_index} of "
                    f"{names.get(chron.source_digest, chron.source_digest)} dropped: "
                    f"{entry.reason}"
                )
    return FleetNotes(warnings=tuple(warnings), dropped=tuple(dropped))
