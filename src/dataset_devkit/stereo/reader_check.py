"""The reader check: read frames 0, middle and last of sample pairs and record exactly that.

It goes through :class:`StereoDataset`, the reader a trainer uses, and writes down per pair
and stream which frames were returned, their shape and dtype, what was checked about them,
and a SHA-256 of the returned bytes where those bytes are deterministic (cameras, prompt,
depth). Decoded video pixels are not hashed: the RGB conversion may differ between FFmpeg
builds, and the record must not make the dataset's bytes depend on the building machine.
What was not read or not checked is listed, never implied.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import DevkitError
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.stereo.cameras import TOLERANCE
from dataset_devkit.stereo.reader import StereoDataset, StereoSample
from dataset_devkit.stereo.spec import (
    EYES,
    FORMAT_VERSION,
    INDEX_DEFAULT,
    INDEX_WITH_DEPTH,
    FrameRead,
    IndexRow,
    ReaderValidation,
)

NOT_CHECKED = [
    "no training run was performed",
    "no visual review of frame content was performed",
    "only the frames listed in reads were returned and checked; frames between a keyframe and "
    "a listed frame were decoded only to reach it",
    "video frames were checked for shape and dtype only; their pixels were not compared with "
    "a reference decode nor hashed (RGB conversion may differ between FFmpeg builds)",
]


def sample_pairs(count: int, full: bool) -> list[int]:
    """Pairs the reader check reads: all with ``full``, else first, middle and last."""
    return list(range(count)) if full else sorted({0, (count - 1) // 2, count - 1})


def _sha256(*arrays: npt.NDArray[Any]) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _shape_problem(array: npt.NDArray[Any], dtype: str, shape: tuple[int, ...]) -> str | None:
    if str(array.dtype) != dtype or array.shape != shape:
        return f"{array.dtype} {list(array.shape)}, expected {dtype} {list(shape)}"
    return None


def _reads(row: IndexRow, frames: list[int], item: StereoSample) -> list[FrameRead]:
    count, height, width = len(frames), row.resolution.height, row.resolution.width
    reads: list[FrameRead] = []

    def record(what: str, array: npt.NDArray[Any], problem: str | None, digest: str | None) -> None:
        reads.append(
            FrameRead(
                id=row.id,
                what=what,
                frames=frames,
                shape=list(array.shape),
                dtype=str(array.dtype),
                ok=problem is None,
                error=problem,
                sha256=digest,
            )
        )

    for eye, video in (("left", item.left), ("right", item.right)):
        record(
            f"{eye} video", video, _shape_problem(video, "uint8", (count, height, width, 3)), None
        )
    for eye in EYES:
        k, pose = item.K[eye], item.camera_to_world[eye]
        problem = _shape_problem(pose, "float64", (count, 4, 4)) or _shape_problem(
            k, "float64", (count, 3, 3)
        )
        if problem is None and np.abs(np.linalg.det(pose[:, :3, :3]) - 1.0).max() > TOLERANCE:
            problem = "camera_to_world rotation is not proper (det != +1)"
        record(f"{eye} camera", pose, problem, _sha256(k, pose))
    if item.depth is not None:
        for eye in EYES:
            depth = item.depth[eye]
            problem = _shape_problem(depth, "float32", (count, height, width))
            if problem is None and not (np.isfinite(depth).all() and (depth >= 0).all()):
                problem = "depth holds negative or non-finite metres"
            record(f"{eye} depth", depth, problem, _sha256(depth))
    text = np.frombuffer(item.prompt.encode("utf-8"), dtype=np.uint8)
    record("prompt", text, None if item.prompt else "empty prompt", _sha256(text))
    return reads


def _read_pair(dataset: StereoDataset, sample: int) -> list[FrameRead]:
    """Read frames 0, middle and last of one pair; a failure is one failed read."""
    row = dataset.rows[sample]
    frames = sorted({0, (row.num_frames - 1) // 2, row.num_frames - 1})
    try:
        item = dataset.read(sample, frames)
    except (DevkitError, IndexError) as exc:
        return [
            FrameRead(
                id=row.id,
                what="pair",
                frames=frames,
                shape=[],
                dtype="",
                ok=False,
                error=str(exc),
            )
        ]
    return _reads(row, frames, item)


def reader_validation(
    root: Path, *, use_depth: bool, full: bool, progress: OnProgress | None = None
) -> ReaderValidation:
    """Read frames 0, middle, last of both eyes (and depth) of sample pairs; record it all.

    *progress* hears of each pair read (stage ``"read back"``, unit ``pairs``).
    """
    index = INDEX_WITH_DEPTH if use_depth else INDEX_DEFAULT
    dataset = StereoDataset(root, index=index, use_depth=use_depth)
    picked = sample_pairs(len(dataset), full) if len(dataset) else []
    reads: list[FrameRead] = []
    report(progress, ProgressUpdate("read back", total_items=len(picked), unit="pairs"))
    for sample in picked:
        reads.extend(_read_pair(dataset, sample))
        report(progress, ProgressUpdate("read back", items=1, unit="pairs"))
    dataset.close()
    not_checked = list(NOT_CHECKED)
    if not use_depth:
        not_checked.append("depth was not read (use_depth=false)")
    chosen = set(picked)
    return ReaderValidation(
        format="genvr-reader-validation",
        version=FORMAT_VERSION,
        scope="full" if full else "sample",
        index=index,
        use_depth=use_depth,
        pairs_total=len(dataset),
        pairs_read=[dataset.rows[s].id for s in picked],
        pairs_not_read=[row.id for s, row in enumerate(dataset.rows) if s not in chosen],
        reads=reads,
        passed=bool(reads) and all(r.ok for r in reads),
        not_checked=not_checked,
    )
