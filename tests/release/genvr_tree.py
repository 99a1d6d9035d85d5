"""A faithful small-file GenVR-duo tree: the real layout and counts, tiny contents."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

from dataset_devkit.release import unpack

#: The real release: 2,008 stereo pairs (about 10,000 directories, 50,000 files).
PAIRS = 2008
CHUNKS = 8  # depth chunks per eye: 29 files and 7 directories per pair


def _blob(seed: str, size: int) -> bytes:
    block = hashlib.sha256(seed.encode()).digest()
    return (block * (size // 32 + 1))[:size]


def pair_files(index: int) -> dict[str, bytes]:
    """The files of stereo pair *index* (relative paths under the dataset root)."""
    cams = f"ue5-pro/map{index // 100:04d}/scene{index // 4:04d}/cams{index % 4:02d}"
    files = {
        f"{cams}/prompt.txt": f"scene {index}\n".encode(),
        f"{cams}/meta.json": b'{"fps": 24}\n',
        f"{cams}/videos/left.mp4": _blob(f"{index}l", 96),
        f"{cams}/videos/right.mp4": _blob(f"{index}r", 96),
        f"{cams}/cameras/left.json": b'{"K": [1]}\n',
        f"{cams}/cameras/right.json": b'{"K": [2]}\n',
        f"{cams}/depth-zstd-5-mm/meta.json": b'{"scale": 1000}\n',
        f"{cams}/depth-zstd-5-mm/group.zarr/.zgroup": b'{"zarr_format": 2}',
        f"{cams}/depth-zstd-5-mm/group.zarr/.zattrs": b"{}",
    }
    for eye in ("left", "right"):
        base = f"{cams}/depth-zstd-5-mm/group.zarr/{eye}"
        files[f"{base}/.zarray"] = b'{"chunks": [4]}'
        files[f"{base}/.zattrs"] = b"{}"
        for chunk in range(CHUNKS):
            files[f"{base}/{chunk}.0.0"] = _blob(f"{index}{eye}{chunk}", 40)
    return files


def write_genvr_tree(root: Path, pairs: int = PAIRS) -> tuple[int, int]:
    """Write the tree under *root*; return ``(directories, files)``."""
    made: set[str] = set()
    count = 0
    for index in range(pairs):
        for rel, data in pair_files(index).items():
            parent = os.path.dirname(rel)
            if parent not in made:
                os.makedirs(root / parent, exist_ok=True)
                parts = parent.split("/")
                made.update("/".join(parts[: i + 1]) for i in range(len(parts)))
            with open(root / rel, "wb") as out:
                out.write(data)
            count += 1
    (root / "genvr_i2s.jsonl").write_bytes(b'{"id": 0}\n')
    return len(made), count + 1


def _package_of(path: str) -> str:
    return "depth" if "/depth-" in path else "base"


def craft_genvr_release(folder: Path, pairs: int = PAIRS, packages: int = 35) -> Path:
    """Write a release of the tree straight from memory, in the real format.

    The same metadata ``release pack`` writes (manifest, files.jsonl, pax/ustar packages
    holding ``ds/<path>``), without writing and re-reading 58,000 source files first.
    """
    files: dict[str, bytes] = {"genvr_i2s.jsonl": b'{"id": 0}\n'}
    for index in range(pairs):
        files.update(pair_files(index))
    paths = sorted(files)
    by_family = {f: [p for p in paths if _package_of(p) == f] for f in ("base", "depth")}
    per = -(-len(paths) // packages)
    folder.mkdir(parents=True)
    rows: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    for family, members in by_family.items():
        (folder / family).mkdir()
        for number, start in enumerate(range(0, len(members), per), 1):
            name = f"{family}/{family}-{number:04d}.tar"
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for path in members[start : start + per]:
                    info = tarfile.TarInfo("ds/" + path)
                    info.size = len(files[path])
                    tar.addfile(info, io.BytesIO(files[path]))
                    rows.append(
                        {
                            "family": family,
                            "package": name,
                            "path": path,
                            "sha256": hashlib.sha256(files[path]).hexdigest(),
                            "size": info.size,
                        }
                    )
            data = buffer.getvalue().rstrip(b"\0")
            data += bytes(-len(data) % 512) + bytes(1024)  # two zero blocks, no record padding
            (folder / name).write_bytes(data)
            count = len(members[start : start + per])
            records.append(
                {
                    "name": name,
                    "family": family,
                    "size": len(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "member_count": count,
                }
            )
    listing = b"".join(sorted(unpack.canonical_json(r) + b"\n" for r in rows))
    (folder / "files.jsonl").write_bytes(listing)
    script = Path(unpack.__file__).read_bytes()
    (folder / "unpack.py").write_bytes(script)
    manifest = {
        "format": "dataset-devkit-release",
        "format_version": 1,
        "name": "ds",
        "snapshot": {
            "root_sha256": unpack.root_sha256((r["path"], r["size"], r["sha256"]) for r in rows),
            "source": "computed",
            "excluded": [],
            "file_count": len(rows),
            "total_bytes": sum(r["size"] for r in rows),
        },
        "package_limit_bytes": 1 << 32,
        "default_family": "base",
        "family_rules": [{"pattern": "depth-*/**", "family": "depth"}],
        "families": [
            {
                "name": family,
                "status": "delivered",
                "file_count": len(members),
                "total_bytes": sum(len(files[p]) for p in members),
                "package_count": sum(1 for r in records if r["family"] == family),
            }
            for family, members in by_family.items()
        ],
        "packages": records,
        "files_jsonl_sha256": hashlib.sha256(listing).hexdigest(),
        "unpack_py_sha256": hashlib.sha256(script).hexdigest(),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return folder
