"""Demo step: pack a small GenVR-like tree into base and depth families, restore, re-run."""

from __future__ import annotations

import hashlib
from pathlib import Path

from dataset_devkit.demo.report import DemoReport
from dataset_devkit.integrity import SafeDir, staged_publication, verify_tree
from dataset_devkit.integrity.numbers import count
from dataset_devkit.release import PackOptions, pack_release, restore_release, verify_release

__all__ = ["run"]

_CAMS = "ue5-pro/map0001/scene0001/cams01/"


def _sample() -> dict[str, bytes]:
    """A tiny stereo-release-shaped tree: videos, cameras, and a Zarr depth group."""
    files: dict[str, bytes] = {
        "README.md": b"# GenVR-duo demo\n",
        "genvr_i2s.jsonl": b'{"id": "map0001/scene0001/cams01", "use_depth": false}\n',
        "loader_requirements.json": b'{"use_depth": false}\n',
        _CAMS + "prompt.txt": b"procedural scene metadata, not a human caption\n",
        _CAMS + "meta.json": b'{"frames": 241, "depth": "optional attachment"}\n',
        _CAMS + "cameras/left.json": b'{"K": [[640, 0, 639.5], [0, 640, 359.5], [0, 0, 1]]}\n',
        _CAMS + "cameras/right.json": b'{"K": [[640, 0, 639.5], [0, 640, 359.5], [0, 0, 1]]}\n',
        _CAMS + "depth-zstd-5-mm/meta.json": b'{"scale": 1000, "invalid": 0}\n',
        _CAMS + "depth-zstd-5-mm/group.zarr/.zgroup": b'{"zarr_format": 2}\n',
        _CAMS + "depth-zstd-5-mm/group.zarr/.zattrs": b"{}\n",
        _CAMS + "depth-zstd-5-mm/group.zarr/left/.zarray": b'{"chunks": [4, 720, 1280]}\n',
    }
    for eye in ("left", "right"):
        seed = hashlib.sha256(eye.encode()).digest()
        files[_CAMS + f"videos/{eye}.mp4"] = seed * 150
    for t in range(3):
        files[_CAMS + f"depth-zstd-5-mm/group.zarr/left/{t}.0.0"] = bytes([t]) * 3000
    return files


def run(out: Path) -> DemoReport:
    """Publish the sample, pack it in 8 KiB packages, restore base then depth, re-run."""
    out.mkdir(parents=True, exist_ok=True)
    tree = out / "GenVR-duo-demo"
    with staged_publication(tree) as staging, SafeDir.open(staging) as root:
        for rel, content in sorted(_sample().items()):
            if "/" in rel:
                root.makedirs(rel.rsplit("/", 1)[0]).close()
            root.write_bytes(rel, content)
    release = out / "GenVR-duo-demo-packages"
    result = pack_release(tree, release, PackOptions(package_limit=8192, restore_test="full"))
    verify_release(release, [])
    data = out / "data"
    base = restore_release(release, data, ["base"])
    depth = restore_release(release, data, ["depth"])
    again = restore_release(release, data, ["all"])
    restored = verify_tree(data / tree.name)
    restored.raise_for_issues()
    manifest = result.manifest
    packages = ", ".join(p.name for p in manifest.packages)
    return DemoReport(
        title="release packaging",
        lines=[
            ("release", str(release)),
            ("packages", f"{count(len(manifest.packages), 'tar')} ≤ 8 KiB: {packages}"),
            (
                "families",
                ", ".join(f"{f.name} ({count(f.file_count, 'file')})" for f in manifest.families),
            ),
            (
                "restore",
                f"base: {count(base.written, 'file')}, then depth: {count(depth.written, 'file')}",
            ),
            (
                "re-run",
                f"{count(again.skipped, 'file')} verified and skipped, {again.written} written",
            ),
            ("restored tree", f"{data / tree.name} verifies: {restored.ok}"),
        ],
        root_sha256={
            "published": manifest.snapshot.root_sha256,
            "restored": restored.root_sha256 or "",
        },
        try_next=[
            ("release", "verify", str(release), "--all"),
            ("validate", str(data / tree.name)),
        ],
    )
