"""The demo's Croissant step: one document per published demo tree, beside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dataset_devkit.croissant import croissant_document
from dataset_devkit.demo import DEMO_STEPS
from dataset_devkit.demo.croissant import TREES, run


def test_the_step_runs_after_the_trees_and_writes_each_ones_document(
    demo_trees: dict[str, Path],
) -> None:
    made = {rel.split("/", 1)[0] for _, rel in TREES}
    assert DEMO_STEPS.index("croissant") > max(DEMO_STEPS.index(step) for step in made)
    out = demo_trees["vin-store"].parents[1] / "croissant"
    report = run(out)
    assert [label for label, _ in report.lines] == [name for name, _ in TREES]
    for name, rel in TREES:
        written = (out / f"{name}.json").read_bytes()
        assert written == croissant_document(out.parent / rel).to_bytes()
    assert report.try_next[0][0] == "croissant"
    again = run(out)  # a second run finds the same bytes and succeeds
    assert again.lines == report.lines
    done = subprocess.run(
        [str(Path(sys.executable).with_name("mlcroissant")), "validate", "--jsonld",
         str(out / "nuscenes-dataroot.json")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
