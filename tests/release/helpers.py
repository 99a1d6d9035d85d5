"""Trees, packed releases and hand-crafted hostile releases for the release tests."""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dataset_devkit.release import PackOptions, pack_release
from dataset_devkit.release import unpack as unpack_mod
from dataset_devkit.release.metadata import unpack_py_bytes

SAMPLE: dict[str, bytes] = {
    "README.md": b"# sample\n",
    "genvr_i2s.jsonl": b'{"id": 1}\n',
    "ue5-pro/map0001/scene0001/cams01/meta.json": b'{"depth": "optional"}\n',
    "ue5-pro/map0001/scene0001/cams01/prompt.txt": "a procedural scene ☃\n".encode(),
    "ue5-pro/map0001/scene0001/cams01/videos/left.mp4": bytes(range(256)) * 9,
    "ue5-pro/map0001/scene0001/cams01/videos/right.mp4": bytes(range(255, -1, -1)) * 9,
    "ue5-pro/map0001/scene0001/cams01/cameras/left.json": b'{"K": []}\n',
    "ue5-pro/map0001/scene0001/cams01/empty.txt": b"",
    "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/meta.json": b'{"scale": 1000}\n',
    "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/group.zarr/.zgroup": b'{"zarr_format": 2}',
    "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/group.zarr/.zattrs": b"{}",
    "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/group.zarr/left/.zarray": b"{}",
    "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/group.zarr/left/0.0.0": os.urandom(3000),
    "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/group.zarr/left/1.0.0": os.urandom(2000),
    "données/ünïcode 名前.txt": "ünïcode\n".encode(),
    "x" * 60 + "/" + "y" * 80 + ".bin": b"long name needs pax\n",
}


def make_tree(root: Path, files: dict[str, bytes] = SAMPLE) -> Path:
    """Write *files* under *root*."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def read_tree(root: Path) -> dict[str, bytes]:
    """Every regular file below *root* by relative POSIX path."""
    out = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def fingerprint(root: Path) -> dict[str, Any]:
    """Everything observable below *root* (types, link targets, bytes, modes), no-follow."""
    out: dict[str, Any] = {}
    if not os.path.lexists(root):
        return out
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", st.st_mode, path.read_bytes())
            else:
                out[rel] = ("other", st.st_mode)
    return out


def pack(tree: Path, out: Path, **options: Any) -> Path:
    """Pack *tree* with small test limits; return the release directory."""
    options.setdefault("package_limit", 8192)
    options.setdefault("restore_test", "full")
    pack_release(tree, out, PackOptions(**options))
    return out


def tar_bytes(members: Iterable[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    """Build a tar in memory with :mod:`tarfile` (pax format unless the info says otherwise)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def file_info(name: str, data: bytes, **fields: Any) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data


def craft_release(
    folder: Path,
    package: bytes,
    rows: list[dict[str, Any]],
    *,
    name: str = "ds",
    family: str = "base",
    member_count: int | None = None,
) -> Path:
    """Write a hostile but self-consistent release: metadata that matches the crafted tar.

    The attacker controls every file, so the manifest agrees with the package's hash; only
    ``unpack.py``'s own checks stand between the archive and the output.
    """
    folder.mkdir(parents=True)
    (folder / family).mkdir()
    pkg_name = f"{family}/{family}-0001.tar"
    (folder / pkg_name).write_bytes(package)
    for row in rows:
        row.setdefault("family", family)
        row.setdefault("package", pkg_name)
    lines = [unpack_mod.canonical_json(r) + b"\n" for r in sorted(rows, key=lambda r: r["path"])]
    files_data = b"".join(lines)
    (folder / "files.jsonl").write_bytes(files_data)
    (folder / "unpack.py").write_bytes(unpack_py_bytes())
    manifest = {
        "format": "dataset-devkit-release",
        "format_version": 1,
        "name": name,
        "snapshot": {
            "root_sha256": unpack_mod.root_sha256(
                (r["path"], r["size"], r["sha256"]) for r in rows
            ),
            "source": "computed",
            "excluded": [],
            "file_count": len(rows),
            "total_bytes": sum(r["size"] for r in rows),
        },
        "package_limit_bytes": 1 << 20,
        "default_family": family,
        "family_rules": [],
        "families": [
            {
                "name": family,
                "status": "delivered",
                "file_count": len(rows),
                "total_bytes": sum(r["size"] for r in rows),
                "package_count": 1,
            }
        ],
        "packages": [
            {
                "name": pkg_name,
                "family": family,
                "size": len(package),
                "sha256": hashlib.sha256(package).hexdigest(),
                "member_count": len(rows) if member_count is None else member_count,
            }
        ],
        "files_jsonl_sha256": hashlib.sha256(files_data).hexdigest(),
        "unpack_py_sha256": "0" * 64,
    }
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def row(path: str, data: bytes) -> dict[str, Any]:
    return {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
