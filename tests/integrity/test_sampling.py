"""Sampled verification: deterministic subsets, what a sample checks, local and remote alike."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import verify_tree, write_manifest
from dataset_devkit.integrity.bucket import publish_remote, verify_remote
from dataset_devkit.integrity.sampling import VerifySample, parse_sample
from tests.cli_run import run_many
from tests.integrity.helpers import make_tree

NAMES = [f"d{i % 7}/file-{i:04d}.bin" for i in range(400)]


def test_specs_parse_and_bad_ones_are_one_line() -> None:
    assert parse_sample("5%").fraction == 0.05
    assert parse_sample(" 12.5 % ", 3).fraction == 0.125
    assert (parse_sample("3/20").group, parse_sample("3/20").groups) == (3, 20)
    for bad in ("0%", "101%", "0/20", "21/20", "half", "", None, "1/0"):
        with pytest.raises(ConfigError, match="expected a share such as 5%"):
            parse_sample(bad)
    with pytest.raises(ConfigError, match="seed must be an int >= 0"):
        parse_sample("5%", -1)


@settings(max_examples=50, deadline=None)
@given(groups=st.integers(1, 12), seed=st.integers(0, 2**32))
def test_the_n_of_t_subsets_are_disjoint_and_cover_every_file(groups: int, seed: int) -> None:
    chosen = [
        {n for n in NAMES if parse_sample(f"{k}/{groups}", seed).selects(n)}
        for k in range(1, groups + 1)
    ]
    assert sum(map(len, chosen)) == len(NAMES)
    assert set().union(*chosen) == set(NAMES)


def test_a_share_picks_about_that_share_and_a_seed_picks_others() -> None:
    first = {n for n in NAMES if parse_sample("10%").selects(n)}
    again = {n for n in NAMES if parse_sample("10%").selects(n)}
    other = {n for n in NAMES if parse_sample("10%", 1).selects(n)}
    assert first == again and 20 <= len(first) <= 60
    assert first != other and 20 <= len(other) <= 60
    assert all(parse_sample("100%").selects(n) for n in NAMES)


def _tree(root: Path) -> Path:
    make_tree(root, {n: n.encode() * 3 for n in NAMES[:60]})
    write_manifest(root)
    return root


def _split(sample: VerifySample) -> tuple[list[str], list[str]]:
    inside = [n for n in NAMES[:60] if sample.selects(n)]
    outside = [n for n in NAMES[:60] if not sample.selects(n)]
    return inside, outside


def _damage(root: Path, inside: list[str], outside: list[str]) -> None:
    for rel in (inside[0], outside[0]):  # the same size, other bytes: only a hash can tell
        path = root / rel
        path.write_bytes(path.read_bytes().swapcase())
    (root / outside[1]).write_bytes(b"short")  # a size any check sees
    (root / outside[2]).unlink()
    (root / "stray.txt").write_text("x")


def test_a_sample_hashes_its_files_and_checks_every_file_present_with_its_size(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path / "tree")
    sample = parse_sample("1/4", 5)
    inside, outside = _split(sample)
    clean = verify_tree(root, sample=sample)
    assert clean.ok and clean.sample is not None and clean.actual_root_sha256 is None
    assert (clean.sample.files, clean.sample.of_files) == (len(inside), 60)
    _damage(root, inside, outside)
    report = verify_tree(root, sample=sample)
    assert {(i.path, i.kind.value) for i in report.details} == {
        (inside[0], "changed"),
        (outside[1], "changed"),
        (outside[2], "missing"),
        ("stray.txt", "extra"),
    }
    assert {i.path for i in verify_tree(root).details} >= {outside[0]}  # all of it would tell


def test_a_bucket_sample_picks_the_files_a_local_sample_picks(
    tmp_path: Path, bucket_url: str
) -> None:
    root = _tree(tmp_path / "tree")
    url = f"{bucket_url}/sampled"
    publish_remote(root, url)
    sample = parse_sample("30%", 2)
    assert verify_remote(url, sample=sample).sample == verify_tree(root, sample=sample).sample
    inside, outside = _split(sample)
    import obstore

    from dataset_devkit.objectstore import open_location

    store = open_location(url).store
    for rel in (inside[0], outside[0]):
        obstore.put(store, rel, (root / rel).read_bytes().swapcase())
    report = verify_remote(url, sample=sample)
    assert [(i.path, i.kind.value) for i in report.details] == [(inside[0], "changed")]
    assert report.actual_root_sha256 is None


def test_verify_sample_on_the_command_line_says_what_it_covered(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    root = _tree(tmp_path / "tree")
    env = {**package_env, **os.environ}
    runs = run_many(
        env,
        [
            ["verify", str(root), "--sample", "5%"],
            ["verify", str(root), "--sample", "2/3", "--sample-seed", "9", "--json"],
            ["verify", root.as_uri(), "--sample", "2/3", "--sample-seed", "9", "--json"],
            ["verify", str(root), "--sample", "zero"],
            ["verify", str(root), "--sample-seed", "-2", "--sample", "5%"],
        ],
    )
    code, out, err = runs[0]
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("note: sample 5% (seed 0): hashed ") and "of 60 files" in lines[0]
    assert lines[1].startswith(f"OK {root}: the ") and "all 60 files are there" in lines[1]
    local, remote = (json.loads(runs[k][1]) for k in (1, 2))
    assert local["sample"] == remote["sample"] and local["sample"]["of_files"] == 60
    assert local["sample"]["spec"] == "2/3" and local["sample"]["seed"] == 9
    assert runs[3][0] == 2 and "expected a share such as 5%" in runs[3][2]
    assert runs[4][0] == 2
