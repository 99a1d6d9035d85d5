"""The evidence's per-recording tasks, runnable on any executor (a process pool, Dask).

Two tasks per recording bracket the one step that needs every recording at once (scenes,
selection and splits): :func:`ingest_recording` reads it, :func:`store_recording_frames`
writes the JPEG frames of its selected scenes into the evidence. Both take paths and
picklable records only, so a worker on another machine that mounts the same filesystem can
run them; each opens what it needs by path, without following links.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import NamedTuple

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import SafeDir
from dataset_devkit.nuscenes.common.executor import Task, run_tasks
from dataset_devkit.nuscenes.common.jpeg import decode_jpeg, jpeg_dimensions
from dataset_devkit.nuscenes.evidence.inputs import check_span, open_recording
from dataset_devkit.nuscenes.evidence.records import FRAMES_DIR, EvImage
from dataset_devkit.nuscenes.ingest import RecordingSource
from dataset_devkit.nuscenes.ingest.model import FrameExtractor
from dataset_devkit.nuscenes.ingest.open import DEFAULT_POSE_TOLERANCE_NS
from dataset_devkit.nuscenes.options import IngestConfig

__all__ = [
    "FrameTarget",
    "ingest_recording",
    "ingest_recordings",
    "store_frames",
    "store_recording_frames",
]

Progress = Callable[[str, int, int], None]


def ingest_recording(
    path: Path, options: IngestConfig, pose_tolerance_ns: int = DEFAULT_POSE_TOLERANCE_NS
) -> RecordingSource:
    """Read one recording (task): the backend its shape selects, then the span check."""
    source = open_recording(path, options, pose_tolerance_ns=pose_tolerance_ns)
    check_span(source, path)
    return source


def ingest_recordings(
    paths: Sequence[Path],
    options: IngestConfig,
    pose_tolerance_ns: int,
    executor: Executor | None,
    report: Progress,
) -> list[RecordingSource]:
    """Ingest every recording on *executor* (inline when None), in the order listed."""
    total = len(paths)
    report("ingest", 0, total)
    # A worker elsewhere has another working directory: it gets absolute paths.
    tasks: list[Task] = [
        (str(p), (p if executor is None else p.absolute(), options, pose_tolerance_ns))
        for p in paths
    ]
    return run_tasks(
        executor,
        ingest_recording,
        tasks,
        on_result=lambda i, _: report("ingest", i + 1, total),
    )


class FrameTarget(NamedTuple):
    """Where one recording's frames go and what they must look like (a task's argument)."""

    out: Path
    folder: str
    source_digest: str
    #: Source camera name -> (channel, topic, width, height).
    cameras: Mapping[str, tuple[str, str, int, int]]
    origin: str
    #: Cameras whose frames this build encoded from pixels (raw, PNG, video sources).
    encoded: frozenset[str] = frozenset()


def store_recording_frames(
    target: FrameTarget,
    extract: FrameExtractor,
    request: Mapping[str, frozenset[int]],
    on_frame: Callable[[], None] | None = None,
) -> tuple[EvImage, ...]:
    """Extract *request*'s frames into ``out/frames/<folder>/`` (task).

    The task gets the recording's frame extractor (its paths and file identities), not the
    whole ingested recording: poses and per-frame times would make every task carry
    megabytes through a cluster's scheduler. Each frame is checked against its calibration
    (header and a strict decode) before it is written exclusively; returns the frames'
    records in extraction order. *on_frame* is called after each frame when the task runs in
    the calling process (progress).

    The strict decode is for frames copied as they came (a recording's JPEGs, which may be
    damaged); a frame this build encoded from pixels a moment ago is only checked by its
    header: decoding it again would prove what libjpeg-turbo's encoder already guarantees,
    at half the cost of the encode.
    """
    out, folder, origin = target.out, target.folder, target.origin
    channels = {name: cam[0] for name, cam in target.cameras.items()}
    images: list[EvImage] = []
    with (
        SafeDir.open(out) as root,
        root.opendir(FRAMES_DIR) as frames,
        frames.mkdir(folder) as rec_dir,
    ):
        for channel in sorted({channels[name] for name, times in request.items() if times}):
            rec_dir.mkdir(channel).close()
        for name, ts, data in extract(request):
            _, topic, width, height = target.cameras[name]
            what = f"{origin}: camera {name!r} (topic {topic!r}) frame {ts}"
            dims = jpeg_dimensions(data, what)
            strict = name not in target.encoded
            if dims != (width, height) or (strict and decode_jpeg(data, what) != dims):
                raise FormatError(
                    f"{what} is {dims[0]}x{dims[1]}, calibration says {width}x{height}"
                )
            rel = f"{channels[name]}/{ts}.jpg"
            rec_dir.write_bytes(rel, data)
            images.append(
                EvImage(
                    source_digest=target.source_digest,
                    channel=channels[name],
                    timestamp_ns=ts,
                    path=f"{FRAMES_DIR}/{folder}/{rel}",
                    size=len(data),
                    sha256=hashlib.sha256(data).hexdigest(),
                    width=dims[0],
                    height=dims[1],
                )
            )
            if on_frame is not None:
                on_frame()
    return tuple(images)


def store_frames(
    out: Path,
    sources: Sequence[RecordingSource],
    wanted: Mapping[str, Mapping[str, set[int]]],
    mapping: Mapping[str, str],
    origin: Mapping[str, Path],
    executor: Executor | None,
    report: Progress,
) -> tuple[EvImage, ...]:
    """Store the wanted frames of every recording (one task each) under ``out/frames/``.

    *wanted* maps a source digest to channel → capture times. The records come back sorted
    by recording, channel and time, whichever worker wrote them.
    """
    total = sum(len(ts) for per in wanted.values() for ts in per.values())
    done = 0

    def frame_done() -> None:
        nonlocal done
        done += 1
        report("frames", done, total)

    def recording_done(_: int, stored: tuple[EvImage, ...]) -> None:
        nonlocal done
        done += len(stored)
        report("frames", done, total)

    tasks: list[Task] = []
    out = out if executor is None else out.absolute()
    for src in sources:
        per_channel = wanted.get(src.source_digest)
        if not per_channel:
            continue
        names = sorted(c.source_name for c in src.cameras)
        request = {name: frozenset(per_channel.get(mapping[name], ())) for name in names}
        subject = str(origin[src.source_digest])
        target = FrameTarget(
            out=out,
            folder=src.source_digest.rsplit(":", 1)[-1][:16],
            source_digest=src.source_digest,
            cameras={
                c.source_name: (mapping[c.source_name], c.topic, c.width, c.height)
                for c in src.cameras
            },
            origin=subject,
            encoded=frozenset(c.source_name for c in src.cameras if c.source_encoding),
        )
        args = (target, src.extract_frames, request)
        # In this process progress counts frames; from an executor, whole recordings.
        tasks.append((subject, args + ((frame_done,) if executor is None else ())))
    report("frames", 0, total)
    stored = run_tasks(
        executor,
        store_recording_frames,
        tasks,
        on_result=None if executor is None else recording_done,
    )
    images = [image for batch in stored for image in batch]
    images.sort(key=lambda im: (im.source_digest, im.channel, im.timestamp_ns))
    return tuple(images)
