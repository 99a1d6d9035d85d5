"""Tree builders shared by the integrity tests."""

from __future__ import annotations

import os
from pathlib import Path

SAMPLE: dict[str, bytes] = {
    "a.txt": b"alpha\n",
    "b/c.bin": bytes(range(256)) * 40,
    "b/d/e.json": b'{"x": 1}\n',
    "b/d/empty": b"",
    "z/\u00fcnicode \u2603.txt": b"snow\n",
    ".hidden/.zarray": b"{}\n",
}


def make_tree(root: Path, files: dict[str, bytes] = SAMPLE, *, reverse: bool = False) -> Path:
    """Write *files* under *root*; ``reverse`` creates them in the opposite order."""
    root.mkdir(parents=True, exist_ok=True)
    for rel in sorted(files, reverse=reverse):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[rel])
    return root


def make_writable(root: Path) -> None:
    """Undo a publication's read-only modes so a test can tamper with a copy."""
    for dirpath, _dirs, files in os.walk(root):
        Path(dirpath).chmod(0o755)
        for name in files:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(0o644)
