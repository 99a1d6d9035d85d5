"""Demo step: build a small tree, publish it read-only, verify it, then tamper with a copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from dataset_devkit.demo.report import DemoReport
from dataset_devkit.integrity import SafeDir, staged_publication, verify_tree
from dataset_devkit.integrity.numbers import count, format_size

__all__ = ["run"]

_SAMPLE_FILES: dict[str, bytes] = {
    "README.txt": b"A tiny sample dataset published by the dataset-devkit demo.\n",
    "data/train/000000.bin": bytes(range(256)) * 64,
    "data/train/000001.bin": b"\x00" * 4096,
    "data/val/000000.bin": b"validation sample\n",
    "labels/classes.json": b'{"classes": ["car", "pedestrian", "cyclist"]}\n',
    "notes/caf\u00e9.md": b"Unicode names are ordinary members.\n",
    "empty.txt": b"",
}


def _write_sample(staging: Path) -> None:
    with SafeDir.open(staging) as root:
        for rel, data in sorted(_SAMPLE_FILES.items()):
            if "/" in rel:
                root.makedirs(rel.rsplit("/", 1)[0]).close()
            root.write_bytes(rel, data)


def _tampered_copy(published: Path, target: Path) -> list[str]:
    """Copy the published tree writable, then damage it in four different ways."""
    shutil.copytree(published, target)
    for dirpath, _dirnames, filenames in os.walk(target):
        Path(dirpath).chmod(0o755)
        for name in filenames:
            (Path(dirpath) / name).chmod(0o644)
    damaged = target / "data/train/000000.bin"
    data = bytearray(damaged.read_bytes())
    data[100] ^= 0xFF
    damaged.write_bytes(bytes(data))
    (target / "data/val/000000.bin").unlink()
    (target / "data/stray.bin").write_bytes(b"not published")
    (target / "labels/link.json").symlink_to("classes.json")
    return [
        "flipped one byte of data/train/000000.bin",
        "deleted data/val/000000.bin",
        "added data/stray.bin",
        "added a symlink labels/link.json",
    ]


def run(out: Path) -> DemoReport:
    """Publish a sample tree under *out* and show verification of it and of a damaged copy."""
    out.mkdir(parents=True, exist_ok=True)
    final = out / "published"
    with staged_publication(final) as staging:
        _write_sample(staging)
    clean = verify_tree(final)
    clean.raise_for_issues()
    tampered = out / "tampered-copy"
    changes = _tampered_copy(final, tampered)
    report = verify_tree(tampered)
    lines: list[tuple[str, str]] = [
        (
            "published",
            f"{final} ({count(clean.file_count, 'file')}, {format_size(clean.total_bytes)}, "
            "0400/0500)",
        ),
        ("verify published", "OK: every file matches content_manifest.json"),
        ("tampered copy", f"{tampered}: " + "; ".join(changes)),
    ]
    lines.extend(("verify tampered", issue) for issue in report.issues)
    return DemoReport(
        title="integrity core: content manifest, read-only publication, verification",
        lines=lines,
        root_sha256={"published": clean.root_sha256 or ""},
        try_next=[("verify", str(tampered)), ("inspect", str(final))],
    )
