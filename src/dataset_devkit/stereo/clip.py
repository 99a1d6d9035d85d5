"""Which frames one item reads: an explicit clip, as video training loaders take it.

A GenVR-duo pair is hundreds of full-HD frames per eye; decoding all of them for every item
(1.33 GB for a 241-frame 1280x720 pair) is never what a training step wants by accident. So
``dataset[i]`` reads a :class:`Clip` (number of frames, stride, a random start drawn from a
seed and the epoch, or a fixed start), the whole video only through :meth:`Clip.whole`, and
every read is checked against a memory cap before anything is decoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from rich.filesize import decimal

from dataset_devkit.errors import ConfigError

__all__ = ["DEFAULT_MAX_ITEM_BYTES", "Clip", "check_item_bytes", "item_bytes"]

#: Default cap on the decoded size of one item (frames of both eyes, plus depth): 1 GiB.
DEFAULT_MAX_ITEM_BYTES = 1 << 30


def _int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ConfigError(f"{name} must be an int >= {low}, found {value!r}", key=name)
    return int(value)


@dataclass(frozen=True, slots=True)
class Clip:
    """``num_frames`` frames, ``stride`` apart, from a random or a fixed start.

    Parameters
    ----------
    num_frames
        Frames per item; ``None`` means every frame (ask for it with :meth:`whole`).
    stride
        Step between the frames read (2 reads every other frame).
    start
        ``"random"``: a start drawn uniformly from the starts where the clip fits, from
        ``(seed, epoch, sample)``, so every worker and every re-run draws the same frames
        for the same epoch and a new epoch draws new ones. An int: that fixed first frame.
    seed
        Seed of the random start.
    """

    num_frames: int | None
    stride: int = 1
    start: Literal["random"] | int = "random"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.num_frames is not None:
            _int("num_frames", self.num_frames, 1)
        _int("stride", self.stride, 1)
        if self.start != "random":
            _int("start", self.start, 0)
        _int("seed", self.seed, 0)

    @classmethod
    def whole(cls, stride: int = 1) -> Clip:
        """Every frame of the video (every ``stride``-th): only when asked for."""
        return cls(num_frames=None, stride=stride, start=0)

    def span(self, total: int) -> int:
        """How many consecutive frames the clip covers in a video of *total* frames."""
        if self.num_frames is None:
            return total
        return (self.num_frames - 1) * self.stride + 1

    def frames(self, sample: int, total: int, epoch: int = 0) -> list[int]:
        """The frame numbers of *sample* (a video of *total* frames) in *epoch*.

        Raises ``ValueError`` when the clip does not fit; the reader names the sample.
        """
        if self.num_frames is None:
            return list(range(0 if self.start == "random" else int(self.start), total, self.stride))
        span = self.span(total)
        if self.start == "random":
            if span > total:
                raise ValueError(
                    f"has {total} frames; a clip of {self.num_frames} frames at stride "
                    f"{self.stride} spans {span}"
                )
            rng = np.random.default_rng((self.seed, epoch, sample))
            first = int(rng.integers(0, total - span + 1))
        else:
            first = int(self.start)
            if first + span > total:
                raise ValueError(
                    f"has {total} frames; a clip of {self.num_frames} frames at stride "
                    f"{self.stride} from frame {first} ends at frame {first + span - 1}"
                )
        return list(range(first, first + span, self.stride))


def item_bytes(frames: int, height: int, width: int, *, depth: bool) -> int:
    """Decoded bytes of one item: RGB uint8 frames of both eyes, float32 depth of both."""
    per_frame = height * width * 3 + (height * width * 4 if depth else 0)
    return 2 * frames * per_frame


def check_item_bytes(
    what: str, frames: int, height: int, width: int, *, depth: bool, cap: int
) -> None:
    """Refuse, before decoding, an item larger than *cap*, saying how much it would take."""
    size = item_bytes(frames, height, width, depth=depth)
    if size > cap:
        extra = " and depth" if depth else ""
        raise ConfigError(
            f"{what}: {frames} frames of both eyes{extra} at {width}x{height} would take "
            f"{decimal(size)} ({size:,} bytes) in memory, over max_item_bytes="
            f"{cap:,} ({decimal(cap)}); read a shorter Clip(num_frames=..., stride=...) "
            f"or raise max_item_bytes",
            key="max_item_bytes",
        )
