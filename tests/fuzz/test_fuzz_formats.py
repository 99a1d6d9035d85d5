"""Damaged copies of every format: the reader and validator answer with data or a typed error.

A fixed budget of seeded mutations per format (``benchmarks/fuzz_formats.py`` runs any
number): each must end as the correct data or a ``dataset_devkit.errors`` error or issue
that names a file; a raw exception, a hang or a change nothing flagged fails the test and
prints the seeds, which reproduce with ``benchmarks/fuzz_formats.py --format F --seed N``.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.fuzz.formats import FORMATS
from tests.fuzz.harness import (
    CORRECT,
    FAILURES,
    NAMED,
    RAW,
    UNDETECTED,
    Format,
    Tree,
    classify,
    prepare,
    run_mutation,
)
from tests.fuzz.mutations import OPERATORS, mutate

BUDGET = 200  # mutations per format and run
TIMEOUT = 10.0  # seconds per mutation: a hang fails, never blocks the suite


@pytest.fixture(scope="session")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Tree]:
    """Each format's valid tree, built once per session."""
    return {name: prepare(fmt, tmp_path_factory.mktemp(name)) for name, fmt in FORMATS.items()}


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_mutation_ends_in_the_data_or_a_typed_error_naming_a_file(
    trees: dict[str, Tree], name: str
) -> None:
    tree = trees[name]
    outcomes = [run_mutation(tree, seed, timeout=TIMEOUT) for seed in range(BUDGET)]
    failed = [o for o in outcomes if o.cls in FAILURES]
    assert not failed, "\n".join(
        [
            f"{len(failed)} of {BUDGET} mutations failed (reproduce: python "
            f"benchmarks/fuzz_formats.py --format {name} --seed N -v):"
        ]
        + [o.describe() for o in failed]
    )
    assert sum(o.cls == NAMED for o in outcomes) > BUDGET // 2  # the damage was noticed
    after = [run_mutation(tree, seed, timeout=TIMEOUT) for seed in range(3)]
    assert after == outcomes[:3]  # seeded: the same seed is the same mutation and outcome


def test_mutations_are_reproducible_and_always_change_the_bytes() -> None:
    data = b'{\n  "a": [1, 2.5, "x"],\n  "b": {"c": null}\n}\n'
    for seed in range(300):
        first = mutate(data, random.Random(seed))
        assert first == mutate(data, random.Random(seed))
        assert first[0] != data
    names = {mutate(data, random.Random(s))[1].split(":")[0] for s in range(300)}
    assert names == {op.__name__.lstrip("_") for op in OPERATORS}


def test_the_classifier_reports_raw_errors_hangs_and_undetected_changes(tmp_path: Path) -> None:
    def build(out: Path) -> Path:
        out.mkdir(parents=True)
        (out / "data.json").write_text('{"n": 1}\n')
        return out

    def read(root: Path) -> object:
        text = (root / "data.json").read_text()
        if "loop" in text:
            while True:
                pass
        return int(text.split(":")[1].strip(" }\n"))  # raw ValueError on damage

    fmt = Format("toy", build, lambda root: ["data.json"], read, lambda root: [])
    tree = prepare(fmt, tmp_path)
    assert classify(tree, 5.0) == (CORRECT, "")
    (tree.root / "data.json").write_text('{"n": 2}\n')
    assert classify(tree, 5.0)[0] == UNDETECTED
    (tree.root / "data.json").write_text('{"n": x}\n')
    assert classify(tree, 5.0)[0] == RAW
    (tree.root / "data.json").write_text('{"loop": 1}\n')
    assert classify(tree, 0.2)[0] == "hang"
