"""Demo step: a preview page of each tree the earlier steps wrote, and where to open it.

Kept cheap (one scene, one pair, few rows): the demo shows the pages exist and look right;
``dataset-devkit preview`` on a real tree draws more.
"""

from __future__ import annotations

from pathlib import Path

from dataset_devkit.demo.report import DemoReport
from dataset_devkit.preview import preview

__all__ = ["TREES", "run"]

#: Trees of the earlier steps, relative to the demo output, with a label.
TREES: tuple[tuple[str, str], ...] = (
    ("integrity tree", "integrity/published"),
    ("nuScenes dataroot", "nuscenes/staging-mcap"),
    ("release directory", "release/GenVR-duo-demo-packages"),
    ("restored tree", "release/data/GenVR-duo-demo"),
    ("VIN store", "vin_store/vin-offline-store"),
    ("stereo dataset", "stereo/GenVR-duo-20261023"),
)


def run(out: Path) -> DemoReport:
    """Draw every demo tree that exists beside *out* into ``out/<name>/index.html``."""
    lines: list[tuple[str, str]] = []
    for label, rel in TREES:
        tree = out.parent / rel
        if not tree.is_dir():
            continue
        name = rel.split("/")[0] + "-" + tree.name
        page = preview(tree, out / name, scenes=1, pairs=1, rows=32)
        lines.append((label, str(page)))
    return DemoReport("preview pages (dataset-devkit preview)", lines)
