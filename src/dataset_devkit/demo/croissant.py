"""Demo step: the Croissant document of each tree the earlier steps published, beside it.

Every published kind gets one (``out/<name>.json``), written outside its tree; ``mlcroissant
validate --jsonld FILE`` accepts each (the tests run it), and docs/croissant.md shows how
mlcroissant loads the records of a read-only tree from such a file.
"""

from __future__ import annotations

from pathlib import Path

from dataset_devkit.croissant import write_croissant
from dataset_devkit.demo.report import DemoReport

__all__ = ["TREES", "run"]

#: Published trees of the earlier steps, relative to the demo output, with a file name.
TREES: tuple[tuple[str, str], ...] = (
    ("integrity-tree", "integrity/published"),
    ("nuscenes-dataroot", "nuscenes_publish/out/v1.0-trainval"),
    ("release", "release/GenVR-duo-demo-packages"),
    ("restored-tree", "release/data/GenVR-duo-demo"),
    ("vin-store", "vin_store/vin-offline-store"),
    ("stereo-dataset", "stereo/GenVR-duo-20261023"),
)


def run(out: Path) -> DemoReport:
    """Write ``out/<name>.json`` for every demo tree that exists beside *out*."""
    lines: list[tuple[str, str]] = []
    for name, rel in TREES:
        tree = out.parent / rel
        if not tree.is_dir():
            continue
        target = out / f"{name}.json"
        described = write_croissant(tree, target)
        record_sets = len(described.document["recordSet"])
        plural = "" if record_sets == 1 else "s"
        lines.append((name, f"{target} ({described.kind.value}, {record_sets} record set{plural})"))
    store = out.parent / "vin_store" / "vin-offline-store"
    licence = "https://creativecommons.org/licenses/by/4.0/"
    return DemoReport(
        "Croissant metadata (dataset-devkit croissant)",
        lines,
        try_next=[("croissant", str(store), "--license", licence)] if store.is_dir() else [],
    )
