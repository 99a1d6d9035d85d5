"""The export's frame copies as batches for any executor (a process pool, Dask workers).

In this process the export copies on a thread pool over pinned directory descriptors
(:func:`.images.copy_all`). A descriptor cannot travel to another process or machine, so a
batch carries paths instead: the worker opens the evidence root and the staging dataroot by
path without following links, then runs the same :func:`.images.copy_verified` on every
frame of the batch (source verified against the evidence and its manifest, exclusive write,
re-read, re-hash and strict decode of the copy). The staging folders exist before any batch
runs; a batch only creates files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from pathlib import Path

from dataset_devkit.integrity import ContentManifest, ManifestEntry, SafeDir
from dataset_devkit.nuscenes.common.executor import Task, run_tasks
from dataset_devkit.nuscenes.evidence.records import EvImage
from dataset_devkit.nuscenes.export.images import FrameSource, copy_verified

__all__ = ["BATCH_FRAMES", "copy_batch", "copy_through"]

#: Frames per task: enough to amortize a task's overhead on a Dask cluster (a few ms), few
#: enough that a fleet keeps every worker busy.
BATCH_FRAMES = 256

#: ``(evidence image, its manifest entry, staging folder, file name)``.
CopyJob = tuple[EvImage, ManifestEntry | None, str, str]


class _BatchSource(FrameSource):
    """A :class:`FrameSource` over the manifest entries of one batch only."""

    def __init__(self, root: Path, entries: dict[str, ManifestEntry]) -> None:
        empty = ContentManifest(file_count=0, total_bytes=0, root_sha256="", files=())
        super().__init__(root, empty)
        self.entries = entries


def copy_batch(evidence_root: Path, staging: Path, jobs: Sequence[CopyJob]) -> int:
    """Copy one batch of verified frames into *staging* (task); returns the bytes copied."""
    entries = {image.path: entry for image, entry, _, _ in jobs if entry is not None}
    total = 0
    with _BatchSource(evidence_root, entries) as source, SafeDir.open(staging) as root:
        dests: dict[str, SafeDir] = {}
        try:
            for image, _, folder, name in jobs:
                dest = dests.get(folder)
                if dest is None:
                    dest = dests[folder] = root.opendir(folder)
                total += copy_verified(source, image, dest, name)
        finally:
            for dest in dests.values():
                dest.close()
    return total


def copy_through(
    executor: Executor,
    evidence_root: Path,
    manifest: ContentManifest,
    staging: Path,
    jobs: Sequence[tuple[EvImage, str, str]],
    report: Callable[[str, int, int], None] | None = None,
    alongside: Callable[[], None] | None = None,
) -> int:
    """Copy every ``(image, staging folder, name)`` in batches on *executor*; returns bytes.

    *alongside* (the rest of the export: tables, extensions) runs in this process while the
    batches copy, as :func:`.run_tasks` runs it."""
    entries = manifest.by_path()
    tasks: list[Task] = []
    for start in range(0, len(jobs), BATCH_FRAMES):
        batch = [
            (image, entries.get(image.path), folder, name)
            for image, folder, name in jobs[start : start + BATCH_FRAMES]
        ]
        subject = f"{evidence_root}: frames {batch[0][0].path} to {batch[-1][0].path}"
        tasks.append((subject, (evidence_root, staging, batch)))
    done = 0

    def progress(i: int, _: int) -> None:
        nonlocal done
        done = min(len(jobs), (i + 1) * BATCH_FRAMES)
        if report is not None:
            report("images", done, len(jobs))

    return sum(run_tasks(executor, copy_batch, tasks, on_result=progress, alongside=alongside))
