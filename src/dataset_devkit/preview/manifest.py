"""Any tree with a ``content_manifest.json``: bytes by top-level folder and file type."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path, PurePosixPath

from dataset_devkit.errors import FormatError
from dataset_devkit.preview.figures import figure, save
from dataset_devkit.preview.page import Section, Table
from dataset_devkit.preview.units import byte_unit, human_bytes

__all__ = ["render_manifest"]

#: Bars per chart and rows in the largest-files table; the rest is summed as "(other)".
TOP = 12


def _files(root: Path) -> list[tuple[str, int]]:
    path = root / "content_manifest.json"
    try:
        data = json.loads(path.read_text("utf-8"))
        files = [(str(f["path"]), int(f["size"])) for f in data["files"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FormatError(
            f"expected a content manifest with files[].path/size ({exc})", path=path
        ) from None
    return files


def _top(counter: Counter[str]) -> list[tuple[str, int]]:
    ranked = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))
    head, rest = ranked[:TOP], ranked[TOP:]
    if rest:
        head.append(("(other)", sum(v for _, v in rest)))
    return head


def render_manifest(root: Path, out: Path, prefix: str = "manifest") -> list[Section]:
    """Bar charts of bytes per top-level folder and per file type, and the largest files."""
    files = _files(root)
    by_folder: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    for name, size in files:
        parts = PurePosixPath(name).parts
        by_folder[parts[0] + "/" if len(parts) > 1 else "(top level)"] += size
        by_type[PurePosixPath(name).suffix.lower() or "(none)"] += size
    section = Section("Contents (content_manifest.json)")
    total = sum(size for _, size in files)
    with figure(10, 3.6) as fig:
        for i, (title, counter) in enumerate(
            (("bytes by top-level folder", by_folder), ("bytes by file type", by_type))
        ):
            ax = fig.add_subplot(1, 2, i + 1)
            items = _top(counter)[::-1]
            unit, scale = byte_unit(max((v for _, v in items), default=0))
            ax.barh([k for k, _ in items], [v / scale for _, v in items], color="#1f77b4")
            ax.set_title(title)
            ax.set_xlabel(f"size ({unit})")
        fig.tight_layout()
        section.items.append(
            save(fig, out, f"{prefix}_sizes.png", f"{len(files)} files, {human_bytes(total)}")
        )
    largest = sorted(files, key=lambda f: (-f[1], f[0]))[:TOP]
    section.items.append(
        Table(("file", "size"), tuple((n, human_bytes(s)) for n, s in largest), "largest files")
    )
    return [section]
