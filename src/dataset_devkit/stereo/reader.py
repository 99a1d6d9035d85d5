"""``StereoDataset``: map-style access to a built (or restored) GenVR-duo root.

The loader requirements file that names the chosen index decides what must be installed:
the default index never needs depth, so a base-only install opens cleanly; the with-depth
index needs the depth family and says which packages to fetch when it is absent. Handles
(video containers) are opened lazily in the process that reads, so the same object works
in the main process and in fork or spawn DataLoader workers.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import ConfigError, FormatError, MissingPathError, NotFoundError
from dataset_devkit.integrity import path_argument
from dataset_devkit.objectstore import refuse_url
from dataset_devkit.stereo.cameras import per_frame
from dataset_devkit.stereo.clip import DEFAULT_MAX_ITEM_BYTES, Clip, check_item_bytes
from dataset_devkit.stereo.depth import DepthReader
from dataset_devkit.stereo.errors import DepthNotInstalledError, OutOfRangeError
from dataset_devkit.stereo.index import decode_json, load_index, load_requirements, row_path
from dataset_devkit.stereo.spec import (
    DEPTH_INSTALL_HINT,
    EYES,
    INDEX_DEFAULT,
    INDEX_WITH_DEPTH,
    CameraFile,
    IndexRow,
)
from dataset_devkit.stereo.special_files import require_regular
from dataset_devkit.stereo.video import VideoInfo, VideoReader

FrameSelector = Callable[[int, int], Sequence[int]]
_MAX_OPEN_VIDEOS = 16


@dataclass(frozen=True, slots=True)
class StereoSample:
    """Frames, cameras, prompt and (optionally) depth of one pair for a set of frames.

    Attributes
    ----------
    frames
        The frame numbers read, in the requested order.
    left, right
        ``uint8 [T, H, W, 3]`` RGB frames.
    K, camera_to_world
        Per eye: ``float64 [T, 3, 3]`` intrinsics and ``[T, 4, 4]`` OpenCV poses.
    depth
        Per eye ``float32 [T, H, W]`` camera-Z metres (0 = invalid), or ``None``.
    """

    id: str
    frames: tuple[int, ...]
    left: npt.NDArray[np.uint8]
    right: npt.NDArray[np.uint8]
    K: dict[str, npt.NDArray[np.float64]]
    camera_to_world: dict[str, npt.NDArray[np.float64]]
    prompt: str
    fps: float
    depth: dict[str, npt.NDArray[np.float32]] | None


def _frame_list(frames: object) -> list[int]:
    """*frames* as a list of ints; a str, a bare number or floats are refused, not coerced."""
    if isinstance(frames, np.ndarray) and frames.ndim == 1 and frames.dtype.kind in "iu":
        return [int(f) for f in frames]
    if not isinstance(frames, Sequence) or isinstance(frames, str | bytes):
        raise ConfigError(f"frames must be a list of frame numbers, found {frames!r}", key="frames")
    if not all(isinstance(f, int | np.integer) and not isinstance(f, bool) for f in frames):
        raise ConfigError(f"frames must be ints, found {list(frames)!r}", key="frames")
    return [int(f) for f in frames]


class StereoDataset:
    """Read stereo pairs of a GenVR-duo root by sample number.

    Parameters
    ----------
    root
        The dataset root (``GenVR-duo-YYYYMMDD/``).
    index
        Index file name; defaults to the with-depth index when ``use_depth`` else the default.
    use_depth
        Return depth; must agree with the index's loader requirements.
    clip
        Which frames ``dataset[i]`` reads: a :class:`Clip` (``Clip(16, stride=2)``;
        ``Clip.whole()`` for every frame) or a callable ``(sample_index, num_frames) ->
        frame numbers``. Without one, ``dataset[i]`` refuses and only :meth:`read` and
        :meth:`read_clip` read, so no item decodes a whole video by accident.
    max_item_bytes
        Cap on the decoded size of one read (frames of both eyes plus depth); a larger read
        is refused before decoding, naming the memory it would take.
    decoder_threads
        FFmpeg threads per video; keep 1 (the default) when DataLoader workers fork.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        index: str | None = None,
        use_depth: bool = False,
        clip: Clip | FrameSelector | None = None,
        max_item_bytes: int = DEFAULT_MAX_ITEM_BYTES,
        decoder_threads: int = 1,
    ) -> None:
        refuse_url(root, "the stereo reader")
        path_argument(root, "root")
        if not isinstance(use_depth, bool):
            raise ConfigError(
                f"use_depth must be True or False, found {use_depth!r}", key="use_depth"
            )
        if clip is not None and not isinstance(clip, Clip) and not callable(clip):
            raise ConfigError(
                f"clip must be a Clip or a callable (sample, num_frames) -> frames, found {clip!r}",
                key="clip",
            )
        if (
            isinstance(max_item_bytes, bool)
            or not isinstance(max_item_bytes, int)
            or max_item_bytes < 1
        ):
            raise ConfigError(
                f"max_item_bytes must be an int >= 1, found {max_item_bytes!r}",
                key="max_item_bytes",
            )
        if isinstance(decoder_threads, bool) or not isinstance(decoder_threads, int):
            raise ConfigError(
                f"decoder_threads must be an int, found {decoder_threads!r}", key="decoder_threads"
            )
        if decoder_threads < 0:
            raise ConfigError(
                f"decoder_threads must be >= 0, found {decoder_threads}", key="decoder_threads"
            )
        self.root = Path(root)
        if not self.root.is_dir():
            if self.root.exists():
                raise ConfigError(
                    f"{self.root}: expected a dataset directory, found a file", key="root"
                )
            raise MissingPathError("no such dataset directory", path=self.root)
        self.decoder_threads = decoder_threads
        self.index = index or (INDEX_WITH_DEPTH if use_depth else INDEX_DEFAULT)
        self.requirements = load_requirements(self.root, self.index)
        if self.requirements.use_depth != use_depth:
            raise ConfigError(
                f"{self.index} is read with use_depth={str(self.requirements.use_depth).lower()}"
                f" (its requirements say so); got use_depth={str(use_depth).lower()}",
                key="use_depth",
            )
        self.use_depth = use_depth
        self.rows = load_index(self.root / self.index)
        if len(self.rows) != self.requirements.num_samples:
            raise FormatError(
                f"lists {len(self.rows)} samples, requirements say {self.requirements.num_samples}",
                path=self.root / self.index,
            )
        self._check_installed()
        self.clip = clip
        self.max_item_bytes = max_item_bytes
        self.epoch = 0
        self._videos: OrderedDict[tuple[int, str], VideoReader] = OrderedDict()
        # frame indexes outlive the handles: a reopened video is not demuxed again
        self._video_infos: dict[tuple[int, str], VideoInfo] = {}

    def _check_installed(self) -> None:
        missing: list[str] = []
        missing_depth: list[str] = []
        for row in self.rows:
            for dotted in self.requirements.required_row_paths:
                rel = row_path(row, dotted)
                if not (self.root / rel).exists():
                    (missing_depth if dotted.startswith("depth.") else missing).append(rel)
                elif not (self.root / rel).is_dir():  # depth.zarr is a folder
                    require_regular(self.root / rel)  # a FIFO would block the first read
        if missing:
            raise NotFoundError(
                f"{self.root}: {len(missing)} file(s) required by {self.index} are missing, "
                f"first {missing[0]}"
            )
        if missing_depth:
            raise DepthNotInstalledError(
                f"{self.root}: depth is not installed ({len(missing_depth)} depth path(s) "
                f"missing, first {missing_depth[0]}); {DEPTH_INSTALL_HINT}, or read the "
                f"default index {INDEX_DEFAULT} with use_depth=False"
            )

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._repr_args()})"

    def _repr_args(self) -> str:
        """``'ROOT', index='genvr_i2s.jsonl', pairs=N, use_depth=False`` for reprs."""
        return (
            f"{str(self.root)!r}, index={self.index!r}, pairs={len(self)}, "
            f"use_depth={self.use_depth}"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_videos"] = OrderedDict()  # containers never cross a process boundary
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def ids(self) -> list[str]:
        """Sample ids in index order."""
        return [row.id for row in self.rows]

    def _video(self, sample: int, eye: str) -> VideoReader:
        key = (sample, eye)
        reader = self._videos.pop(key, None)
        if reader is None:
            row = self.rows[sample]
            path = self.root / (row.left_video if eye == "left" else row.right_video)
            reader = VideoReader(path, self.decoder_threads, self._video_infos.get(key))
        self._videos[key] = reader
        while len(self._videos) > _MAX_OPEN_VIDEOS:
            old_key, old = self._videos.popitem(last=False)
            if old.indexed is not None:
                self._video_infos[old_key] = old.indexed
            old.close()
        return reader

    def _row(self, sample: int) -> IndexRow:
        if isinstance(sample, bool) or not isinstance(sample, int | np.integer):
            raise ConfigError(f"sample must be an int, found {sample!r}", key="sample")
        if not -len(self.rows) <= sample < len(self.rows):
            raise OutOfRangeError(f"sample {sample} outside 0..{len(self.rows) - 1}")
        return self.rows[sample]

    def set_epoch(self, epoch: int) -> None:
        """Draw the random clip starts of *epoch* (call it before each epoch, as with
        ``DistributedSampler``; DataLoader workers see it unless ``persistent_workers``)."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ConfigError(f"epoch must be an int >= 0, found {epoch!r}", key="epoch")
        self.epoch = epoch

    def default_frames(self, sample: int) -> list[int]:
        """The frames ``dataset[sample]`` reads in the current epoch, from the ``clip``."""
        row = self._row(sample)
        sample %= len(self.rows)
        if self.clip is None:
            raise ConfigError(
                "dataset[i] needs a clip: StereoDataset(root, clip=Clip(16)) reads 16 frames "
                "from a random start, Clip.whole() every frame; or call read(i, frames)",
                key="clip",
            )
        if isinstance(self.clip, Clip):
            try:
                return self.clip.frames(sample, row.num_frames, self.epoch)
            except ValueError as exc:
                raise OutOfRangeError(f"{row.id} {exc}") from exc
        return list(self.clip(sample, row.num_frames))

    def __getitem__(self, sample: int) -> StereoSample:
        return self.read(sample, self.default_frames(sample))

    def read_clip(self, sample: int, start: int, length: int) -> StereoSample:
        """Read ``length`` consecutive frames from ``start``."""
        for name, value, low in (("start", start, 0), ("length", length, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigError(f"{name} must be an int >= {low}, found {value!r}", key=name)
        return self.read(sample, list(range(start, start + length)))

    def read(
        self, sample: int, frames: Sequence[int] | npt.NDArray[np.integer[Any]]
    ) -> StereoSample:
        """Read exactly the given frames of both eyes, their cameras, prompt and depth."""
        row = self._row(sample)
        sample %= len(self.rows)
        frames = _frame_list(frames)
        bad = [f for f in frames if not 0 <= f < row.num_frames]
        if bad:
            raise OutOfRangeError(
                f"{row.id}: frame {bad[0]} outside 0..{row.num_frames - 1} (num_frames of "
                f"line {sample + 1} of {self.index})"
            )
        check_item_bytes(
            row.id,
            len(frames),
            row.resolution.height,
            row.resolution.width,
            depth=self.use_depth and row.depth is not None,
            cap=self.max_item_bytes,
        )
        picked = np.asarray(frames, dtype=np.intp)
        ks: dict[str, npt.NDArray[np.float64]] = {}
        poses: dict[str, npt.NDArray[np.float64]] = {}
        for eye in EYES:
            path = self.root / (row.left_camera if eye == "left" else row.right_camera)
            camera: CameraFile = decode_json(path, CameraFile)
            try:
                ks[eye] = per_frame(camera.K, row.num_frames, 3, "K")[picked]
                poses[eye] = per_frame(
                    camera.camera_to_world, row.num_frames, 4, "camera_to_world"
                )[picked]
            except ValueError as exc:
                raise FormatError(str(exc), path=path) from exc
        depth = None
        if self.use_depth and row.depth is not None:
            reader = DepthReader(
                self.root / row.depth.zarr,
                row.num_frames,
                row.resolution.height,
                row.resolution.width,
            )
            depth = {eye: reader.read(row.depth.arrays[eye], frames) for eye in EYES}
        return StereoSample(
            id=row.id,
            frames=tuple(frames),
            left=self._video(sample, "left").read(frames),
            right=self._video(sample, "right").read(frames),
            K=ks,
            camera_to_world=poses,
            prompt=row.cap,
            fps=row.fps,
            depth=depth,
        )

    def close(self) -> None:
        """Close every open video of this process."""
        while self._videos:
            key, reader = self._videos.popitem()
            if reader.indexed is not None:
                self._video_infos[key] = reader.indexed
            reader.close()
