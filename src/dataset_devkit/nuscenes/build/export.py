"""The build service's default exporter: recordings -> evidence -> staging dataroot.

Evidence is immutable: when ``paths.evidence_dir`` already holds evidence (an earlier build of
the same recordings), it is verified and reused, and ``export_dataset`` refuses it unless its
recorded config and namespace equal this build's. Otherwise it is built from the recordings.
"""

from __future__ import annotations

import os
from pathlib import Path

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import CONTENT_MANIFEST_NAME
from dataset_devkit.nuscenes.cluster import BuildExecutors
from dataset_devkit.nuscenes.config import BuildConfig
from dataset_devkit.nuscenes.evidence import Evidence, build_evidence, read_evidence
from dataset_devkit.nuscenes.export.dataset import export_dataset
from dataset_devkit.nuscenes.export.images import small_frames
from dataset_devkit.nuscenes.ingest.fingerprint import file_sha256, recording_digest
from dataset_devkit.nuscenes.validation.dataroot import Progress

__all__ = ["export_from_recordings"]


def _check_same_inputs(config: BuildConfig, evidence: Evidence) -> None:
    """Refuse reused evidence whose recordings or label file are not the configured ones.

    Evidence records each recording's digest and the label file's SHA-256; a build that lists
    another recording, an added one, or one changed since must not publish the old data.
    """
    doc = evidence.document
    hint = "remove that directory or set paths.evidence_dir to a new one"
    recorded = sorted(r.source_digest for r in doc.recordings)
    listed = sorted(recording_digest(p) for p in config.sources.paths)
    if recorded != listed:
        names = sorted(r.source_name for r in doc.recordings)
        raise ConfigError(
            f"{config.evidence_dir}: existing evidence was built from other recordings "
            f"({', '.join(names)}) than sources.paths lists now, or they changed since; {hint}",
            key="sources.paths",
        )
    labels = config.sources.labels
    sha = "" if labels is None else file_sha256(labels, "label file")
    if sha != doc.label_file_sha256:
        raise ConfigError(
            f"{config.evidence_dir}: existing evidence was built with another label file "
            f"({doc.label_file_name or 'none'}) than sources.labels names now; {hint}",
            key="sources.labels",
        )


def export_from_recordings(
    config: BuildConfig,
    staging: Path,
    progress: Progress,
    executors: BuildExecutors | None = None,
) -> None:
    """Build or reuse the evidence of *config*, then export it into *staging*.

    *executors* run the per-recording work and the frame copies (in this process when None).
    """
    run_on = executors or BuildExecutors(recordings=None, copies=None)
    reused = os.path.lexists(config.evidence_dir)
    if reused:
        manifest = config.evidence_dir / CONTENT_MANIFEST_NAME
        real_dir = config.evidence_dir.is_dir() and not config.evidence_dir.is_symlink()
        if real_dir and not os.path.lexists(manifest):
            # Evidence writes its manifest last: without one this is a build killed midway
            # (or some other directory), never evidence to verify and reuse.
            raise ConfigError(
                f"{config.evidence_dir}: exists but is not evidence (no {CONTENT_MANIFEST_NAME}: "
                "a build killed while writing it, or another directory); remove it or set "
                "paths.evidence_dir to a new one",
                key="paths.evidence_dir",
            )
        evidence = read_evidence(config.evidence_dir)
        _check_same_inputs(config, evidence)
    else:
        evidence = build_evidence(
            config.sources.paths,
            config.pipeline,
            config.evidence_dir,
            labels=config.sources.labels,
            progress=progress,
            executor=run_on.recordings,
        )
    found = evidence.document.source_type
    if found != config.sources.type:
        raise ConfigError(
            f"sources.type is {config.sources.type!r} but the recordings are {found!r}",
            key="sources.type",
        )
    copies = run_on.copies
    if copies is None and run_on.recordings is not None:
        # The build's local processes: small frames copy there, where threads would take
        # turns holding one GIL; larger ones on threads, whose decodes run side by side.
        copies = run_on.recordings if small_frames(evidence.document.images) else None
    try:
        export_dataset(
            staging,
            evidence,
            config=config.pipeline,
            progress=progress,
            workers=run_on.copy_threads,
            executor=copies,
        )
    except ConfigError as exc:
        if not reused:
            raise
        # The evidence of an earlier build with another config: say where it is and what to do.
        raise ConfigError(
            f"{config.evidence_dir}: existing evidence was built with another config ({exc}); "
            "remove that directory or set paths.evidence_dir to a new one",
            key=exc.key,
        ) from None
