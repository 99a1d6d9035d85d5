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
import subprocess
import sys
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


def run_limited(
    env: dict[str, str], args: list[str], *, nofile: int = 256, fsize: int | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``dataset-devkit ARGS`` in a child under ``RLIMIT_NOFILE`` (and ``RLIMIT_FSIZE``).

    ``fsize`` makes every write past that many bytes fail with ``EFBIG``, the way a full
    disk fails a write: a real fault in every write path, buffered or not.
    """
    code = (
        "import resource, signal, sys\n"
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({nofile}, {nofile}))\n"
        + (
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({fsize}, {fsize}))\n"
            if fsize is not None
            else ""
        )
        + "from dataset_devkit.cli.app import main\n"
        "main(sys.argv[1:])\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def make_stereo_export(out: Path, pairs: int) -> Path:
    """A rendered export of *pairs* one-frame pairs, all in one map (hundreds of siblings).

    One tiny real H.264 clip and camera track per eye are hard-linked into every pair (the
    builder copies hard-linked exports as bytes), so the export is made in a fraction of a
    second while every video still probes and decodes for real.
    """
    import msgspec

    from dataset_devkit.stereo.sample import camera_track, write_clip
    from dataset_devkit.stereo.source import SOURCE_FILE, SOURCE_FORMAT

    proto = out / "proto"
    proto.mkdir(parents=True)
    for eye, name in enumerate(("left", "right")):
        write_clip(proto / f"{name}.mp4", 1, 16, 16, eye, gop=1)
        (proto / f"{name}.json").write_bytes(msgspec.json.encode(camera_track(1, 16, 16, eye)))
    entries = []
    for number in range(pairs):
        folder = f"renders/{number:05d}"
        (out / folder).mkdir(parents=True)
        eyes = {}
        for name in ("left", "right"):
            for ext in ("mp4", "json"):
                os.link(proto / f"{name}.{ext}", out / folder / f"{name}.{ext}")
            eyes[name] = {"video": f"{folder}/{name}.mp4", "camera": f"{folder}/{name}.json"}
        entries.append(
            {
                "map": 1,
                "scene": 1 + number,
                "cams": 0,
                "fps": 24,
                "num_frames": 1,
                "width": 16,
                "height": 16,
                **eyes,
                "scene_metadata": {
                    "map_name": "Harbor",
                    "environment": "harbour street",
                    "time_of_day": "noon",
                    "weather": "clear",
                    "camera_motion": "static",
                    "subjects": [],
                },
            }
        )
    export = {
        "format": SOURCE_FORMAT,
        "version": 1,
        "dataset": "GenVR-duo",
        "snapshot": "20261023",
        "pairs": entries,
    }
    (out / SOURCE_FILE).write_bytes(msgspec.json.encode(export))
    return out
