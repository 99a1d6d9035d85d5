"""A release directory (packages) or a restored tree: package sizes, families, restore state."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from dataset_devkit.errors import FormatError
from dataset_devkit.preview.figures import figure, save
from dataset_devkit.preview.manifest import render_manifest
from dataset_devkit.preview.page import Section, Table, Text
from dataset_devkit.preview.units import byte_unit, human_bytes

__all__ = ["render_release", "render_restore_state", "render_restored"]


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise FormatError(f"expected a JSON object ({exc})", path=path) from None
    if not isinstance(data, dict):
        raise FormatError("expected a JSON object", path=path)
    return data


def render_release(root: Path, out: Path) -> list[Section]:
    """Package sizes per family against the package limit, and each family's status."""
    path = root / "manifest.json"
    manifest = _load(path)
    try:
        limit = int(manifest["package_limit_bytes"])
        packages = [
            (str(p["family"]), str(p["name"]), int(p["size"])) for p in manifest["packages"]
        ]
        families = [(str(f["name"]), str(f["status"]), f) for f in manifest["families"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise FormatError(
            f"expected packages[], families[], package_limit_bytes ({exc})", path=path
        ) from None
    section = Section(f"Release {manifest.get('name', root.name)}")
    section.items.append(
        Table(
            ("family", "status", "packages", "files", "bytes"),
            tuple(
                (
                    name,
                    status,
                    str(f.get("package_count", "-")),
                    str(f.get("file_count", "-")),
                    human_bytes(int(f.get("total_bytes", 0))),
                )
                for name, status, f in families
            ),
        )
    )
    delivered = [n for n, s, _ in families if s == "delivered"]
    pending = [n for n, s, _ in families if s != "delivered"]
    section.items.append(
        Text(
            f"delivered: {', '.join(delivered) or 'none'}; pending: {', '.join(pending) or 'none'}"
        )
    )
    by_family: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for family, name, size in packages:
        by_family[family].append((name, size))
    # Sizes in the unit the largest reads best in (GiB for 4 GiB packages), and the legend
    # outside the bars, above them: inside, it covered the bars at the limit line.
    unit, scale = byte_unit(max([limit, *(size for _, _, size in packages)]))
    with figure(9, 1.0 + 0.28 * max(len(packages), 1)) as fig:
        ax = fig.add_subplot(1, 1, 1)
        labels: list[str] = []
        y = 0
        for i, family in enumerate(sorted(by_family)):
            for name, size in by_family[family]:
                ax.barh(
                    y,
                    size / scale,
                    color=f"C{i}",
                    label=family if name == by_family[family][0][0] else None,
                )
                labels.append(name)
                y += 1
        ax.axvline(limit / scale, color="red", linestyle="--", label=f"limit {human_bytes(limit)}")
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(f"package size ({unit})")
        ax.legend(
            fontsize=7,
            loc="lower left",
            bbox_to_anchor=(0, 1.02),
            ncol=len(by_family) + 1,
            frameon=False,
            borderaxespad=0,
        )
        fig.tight_layout()
        section.items.append(
            save(fig, out, "release_packages.png", f"{len(packages)} packages against the limit")
        )
    return [section]


def render_restored(root: Path, out: Path) -> list[Section]:
    """The restore state beside the tree, then its contents when it has a content manifest."""
    sections = [render_restore_state(root)]
    if (root / "content_manifest.json").is_file():
        sections += render_manifest(root, out)
    return sections


def render_restore_state(root: Path) -> Section:
    """The restore state ``unpack`` left beside the tree: families restored, snapshot."""
    state_path = root.with_name(root.name + ".unpack-state.json")
    state = _load(state_path)
    section = Section("Restore state")
    section.items.append(
        Table(
            ("field", "value"),
            tuple(
                (str(k), json.dumps(v) if not isinstance(v, str) else v)
                for k, v in sorted(state.items())
            ),
        )
    )
    return section
