"""A faithful small-file copy of a GenVR-duo release tree, made in seconds.

The real release holds 2,008 stereo pairs in about 10,000 directories and 50,000 files; what
breaks at that size is the shape (many directories, many siblings, a deep depth family), not
the bytes. This tree has the same layout as a built stereo dataset (``ue5-pro/mapNNNN/
sceneNNNN/camsNN/`` with videos, cameras, prompt, meta and a Zarr depth group of chunk files)
with tiny files, so every command can be run on it under ``ulimit -n 256`` in a test.

Shared by the scale tests and ``benchmarks/release_scale_tree.py``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: The GenVR-duo release: 2,008 pairs.
GENVR_PAIRS: Final = 2008
#: Depth chunk files per eye: with the 13 other files of a pair, 25 files per pair.
CHUNKS_PER_EYE: Final = 6
PAIRS_PER_SCENE: Final = 2
SCENES_PER_MAP: Final = 400

_ROOT_FILES: Final = (
    "genvr_i2s.jsonl",
    "genvr_i2s_nodepth.jsonl",
    "genvr_i2s_with_depth.jsonl",
    "loader_requirements.json",
    "loader_requirements_with_depth.json",
    "source_mapping.jsonl",
    "release_manifest.json",
    "source_dataset_release_manifest.json",
    "reader_validation.json",
)


@dataclass(frozen=True, slots=True)
class TreeShape:
    """What :func:`make_genvr_tree` made."""

    root: Path
    pairs: int
    directories: int
    files: int
    depth: int


def pair_dir(number: int) -> str:
    """``ue5-pro/mapNNNN/sceneNNNN/camsNN`` of pair *number* (0-based)."""
    scene = number // PAIRS_PER_SCENE
    return (
        f"ue5-pro/map{1 + scene // SCENES_PER_MAP:04d}/scene{1 + scene:04d}"
        f"/cams{number % PAIRS_PER_SCENE:02d}"
    )


def _pair_files(number: int) -> dict[str, bytes]:
    tag = f"pair {number}\n".encode()
    files = {
        "prompt.txt": b"A harbour street at dusk, " + tag,
        "meta.json": b'{"id": "' + pair_dir(number).encode() + b'"}\n',
        "videos/left.mp4": b"\x00\x00\x00\x18ftypmp42left" + tag,
        "videos/right.mp4": b"\x00\x00\x00\x18ftypmp42right" + tag,
        "cameras/left.json": b'{"eye": "left"}\n' + tag,
        "cameras/right.json": b'{"eye": "right"}\n' + tag,
        "depth-zstd-5-mm/meta.json": b'{"units": "millimetre"}\n',
        "depth-zstd-5-mm/group.zarr/.zgroup": b'{"zarr_format": 2}\n',
        "depth-zstd-5-mm/group.zarr/.zattrs": b"{}\n",
    }
    for eye in ("left", "right"):
        base = f"depth-zstd-5-mm/group.zarr/{eye}"
        files[f"{base}/.zarray"] = b'{"chunks": [4, 4, 4]}\n'
        files[f"{base}/.zattrs"] = b"{}\n"
        for chunk in range(CHUNKS_PER_EYE):
            files[f"{base}/{chunk}.0.0"] = bytes([chunk, number % 251]) * 8 + tag
    return files


def make_genvr_tree(root: Path, pairs: int = GENVR_PAIRS) -> TreeShape:
    """Write the tree under *root* (which must not exist) and return its shape."""
    root.mkdir(parents=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    directories = {""}
    files = 0
    for name in _ROOT_FILES:
        (root / name).write_bytes(name.encode() + b"\n")
        files += 1
    for number in range(pairs):
        base = pair_dir(number)
        for rel, data in _pair_files(number).items():
            folder = f"{base}/{rel}".rpartition("/")[0]
            if folder not in directories:
                (root / folder).mkdir(parents=True, exist_ok=True)
                parts = folder.split("/")
                directories.update("/".join(parts[: i + 1]) for i in range(len(parts)))
            fd = os.open(root / base / rel, flags, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            files += 1
    depth = max(d.count("/") + 1 for d in directories if d)
    return TreeShape(root=root, pairs=pairs, directories=len(directories), files=files, depth=depth)
