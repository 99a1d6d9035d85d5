"""Camera-Z depth as integer millimetres in a Zarr v2 group: layout, encode, check, read.

Stored values are ``uint32`` millimetres with 0 meaning invalid; a reader decodes them with
``array.astype(float32) / 1000`` to metres. The group is Zarr format 2, Blosc zstd level 5
with byte shuffle, chunks of 4 frames, every chunk written (``depth_writer`` writes it).
Reading does not go through zarr: the reader checks ``.zarray`` against the exact expected
metadata once, then decodes whole chunk files with numcodecs, which keeps DataLoader
workers free of zarr's event loop thread (unsafe across ``fork``) and costs nothing over a
direct chunk decode.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import decode_json_record
from dataset_devkit.stereo.millimetres import MillimetreEncoder
from dataset_devkit.stereo.spec import (
    DEPTH_CHUNK_FRAMES,
    DEPTH_COMPRESSOR,
    DEPTH_DIMENSIONS,
    DEPTH_DTYPE,
    DEPTH_INVALID,
    DEPTH_SCALE,
    EYES,
)
from dataset_devkit.stereo.special_files import require_regular

U32 = npt.NDArray[np.uint32]
F32 = npt.NDArray[np.float32]


def expected_zarray(num_frames: int, height: int, width: int) -> dict[str, Any]:
    """The exact ``.zarray`` document of one eye's depth array."""
    return {
        "chunks": [DEPTH_CHUNK_FRAMES, height, width],
        "compressor": dict(DEPTH_COMPRESSOR),
        "dimension_separator": ".",
        "dtype": DEPTH_DTYPE,
        "fill_value": DEPTH_INVALID,
        "filters": None,
        "order": "C",
        "shape": [num_frames, height, width],
        "zarr_format": 2,
    }


def chunk_names(num_frames: int) -> list[str]:
    """Chunk file names of one eye, in time order (``0.0.0`` .. ``60.0.0`` for 241 frames)."""
    return [f"{c}.0.0" for c in range(math.ceil(num_frames / DEPTH_CHUNK_FRAMES))]


def encode_depth_mm(
    metres: npt.NDArray[Any], far_limit_m: float | None, *, where: str, first: int
) -> tuple[U32, int]:
    """Encode float metres ``[T, H, W]`` to millimetres; return the array and invalid count.

    NaN, infinities, values <= 0, values beyond ``far_limit_m`` and values below half a
    millimetre become 0 (invalid). A finite value that does not fit ``uint32`` is an error,
    never a wrap-around. A frame may be entirely invalid (a camera facing the sky): it is
    stored as zeros, and four such frames make an all-fill chunk that is still written.
    The values are those of ``rint(float64(metres) * 1000)`` (see
    :mod:`~dataset_devkit.stereo.millimetres`).
    """
    depth = np.asarray(metres)
    if depth.dtype.kind != "f":
        depth = depth.astype(np.float64)
    encoded = np.empty(depth.shape, dtype=np.uint32)
    invalid = MillimetreEncoder(depth.dtype, far_limit_m).encode(
        depth, encoded, where=where, first=first
    )
    return encoded, invalid


def _json(path: Path) -> Any:
    """A Zarr metadata document: strict JSON (no NaN, no unbounded nesting) or FormatError."""
    return decode_json_record(path.read_bytes(), Any, path)


def _attribute_problems(path: Path) -> list[str]:
    """An eye's ``.zattrs``: present, an object, and naming its axes right if it names them."""
    if not path.is_file():
        return [f"{path}: missing"]
    try:
        require_regular(path)
        found = _json(path)
    except OSError as exc:
        return [f"{path}: cannot be read ({exc})"]
    except FormatError as exc:
        return [str(exc)]
    if not isinstance(found, dict):
        return [f"{path}: is a JSON {type(found).__name__}, expected an object"]
    names = found.get("_ARRAY_DIMENSIONS", list(DEPTH_DIMENSIONS))
    if names != list(DEPTH_DIMENSIONS):
        expected = list(DEPTH_DIMENSIONS)
        return [f"{path} at $._ARRAY_DIMENSIONS: found {names!r}, expected {expected!r} (or none)"]
    return []


def depth_problems(group_path: Path, num_frames: int, height: int, width: int) -> list[str]:
    """Every difference between a depth group on disk and the exact expected layout."""
    problems: list[str] = []
    try:
        require_regular(group_path / ".zgroup")
        zgroup = _json(group_path / ".zgroup")
    except OSError as exc:
        return [f"{group_path / '.zgroup'}: cannot be read ({exc})"]
    except FormatError as exc:
        return [str(exc)]
    if zgroup != {"zarr_format": 2}:
        problems.append(f"{group_path / '.zgroup'}: {zgroup!r}, expected {{'zarr_format': 2}}")
    if not (group_path / ".zattrs").is_file():
        problems.append(f"{group_path / '.zattrs'}: missing")
    expected = expected_zarray(num_frames, height, width)
    names = set(chunk_names(num_frames))
    for eye in EYES:
        array_dir = group_path / eye
        try:
            require_regular(array_dir / ".zarray")
            found = _json(array_dir / ".zarray")
        except OSError as exc:
            problems.append(f"{array_dir / '.zarray'}: cannot be read ({exc})")
            continue
        except FormatError as exc:
            problems.append(str(exc))
            continue
        if not isinstance(found, dict):
            problems.append(
                f"{array_dir / '.zarray'}: is a JSON {type(found).__name__}, expected an object"
            )
            continue
        for key in sorted(set(expected) | set(found)):
            if found.get(key, "<missing>") != expected.get(key, "<absent>"):
                problems.append(
                    f"{array_dir / '.zarray'} at $.{key}: found {found.get(key, '<missing>')!r}, "
                    f"expected {expected.get(key, '<absent>')!r}"
                )
        problems.extend(_attribute_problems(array_dir / ".zattrs"))
        present = {p.name for p in array_dir.iterdir() if not p.name.startswith(".")}
        for name in sorted(names - present, key=lambda n: int(n.split(".")[0])):
            problems.append(f"{array_dir / name}: chunk file missing")
        for name in sorted(present - names):
            problems.append(f"{array_dir / name}: unexpected file")
    return problems


class DepthReader:
    """Chunk-aligned reads of one pair's depth group, decoded to float32 metres.

    Metadata is checked once, on first use; each requested chunk file is read and decoded
    once per call, however many of its frames are requested.
    """

    def __init__(self, group_path: Path, num_frames: int, height: int, width: int) -> None:
        self.group_path = group_path
        self.shape = (num_frames, height, width)
        self._checked = False

    def _check(self) -> None:
        if self._checked:
            return
        expected = expected_zarray(*self.shape)
        for eye in EYES:
            path = self.group_path / eye / ".zarray"
            require_regular(path)
            try:
                found = _json(path)
            except OSError as exc:
                raise FormatError(f"cannot be read ({exc})", path=path) from exc
            if found != expected:
                raise FormatError(f"is {found!r}, expected {expected!r}", path=path)
        self._checked = True

    def _chunks(self, frames: Sequence[int]) -> Iterator[tuple[int, list[tuple[int, int]]]]:
        by_chunk: dict[int, list[tuple[int, int]]] = {}
        for slot, frame in enumerate(frames):
            if not 0 <= frame < self.shape[0]:
                raise IndexError(f"{self.group_path}: frame {frame} outside 0..{self.shape[0] - 1}")
            by_chunk.setdefault(frame // DEPTH_CHUNK_FRAMES, []).append((slot, frame))
        yield from sorted(by_chunk.items())

    def read_chunk(self, eye: str, chunk: int) -> U32:
        """Decode one whole chunk file to ``uint32 [frames_in_chunk, H, W]``."""
        from numcodecs import Blosc

        self._check()
        path = self.group_path / eye / f"{chunk}.0.0"
        require_regular(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise FormatError(f"depth chunk cannot be read ({exc})", path=path) from exc
        _, height, width = self.shape
        first = chunk * DEPTH_CHUNK_FRAMES
        frames = f"frames {first}..{min(first + DEPTH_CHUNK_FRAMES, self.shape[0]) - 1}"
        try:
            decoded = np.frombuffer(Blosc().decode(raw), dtype=DEPTH_DTYPE)
        except (RuntimeError, ValueError) as exc:  # numcodecs reports corrupt input so
            raise FormatError(
                f"depth chunk of {frames} is not a valid Blosc block ({exc})", path=path
            ) from exc
        expected = DEPTH_CHUNK_FRAMES * height * width
        if decoded.size != expected:
            raise FormatError(
                f"depth chunk of {frames} decodes to {decoded.size} values, "
                f"expected {expected} (4 x {height} x {width})",
                path=path,
            )
        return decoded.reshape(DEPTH_CHUNK_FRAMES, height, width)

    def read(self, eye: str, frames: Sequence[int]) -> F32:
        """Depth in metres (0 = invalid) for ``frames`` of one eye: ``float32 [T, H, W]``."""
        out = np.empty((len(frames), *self.shape[1:]), dtype=np.float32)
        for chunk, slots in self._chunks(frames):
            data = self.read_chunk(eye, chunk)
            for slot, frame in slots:
                out[slot] = data[frame - chunk * DEPTH_CHUNK_FRAMES]
        out /= np.float32(DEPTH_SCALE)
        return out
