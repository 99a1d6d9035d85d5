"""What the commands print reads right: identifiers whole at any width, counts that agree
with their nouns, sizes as sizes, sizes accepted with units by every size option, and a
usage error in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dataset_devkit.integrity import write_manifest
from dataset_devkit.stereo import build_stereo_dataset, make_sample_source
from tests.cli.report_check import check_report
from tests.cli_run import run_many

_SAMPLES = """
import numpy as np
from dataset_devkit.vin_store import VinOfflineSample

def made():
    for i in range(12):
        yield VinOfflineSample(
            sample_key=f"s-{i:03d}", scene_id="scene-0", snippet_id=str(i),
            arrays={"vin.a_rather_long_block_name_for_the_table": np.full((8,), i, np.int64)},
        )
"""


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("wording")
    export = make_sample_source(root / "export", pairs=2, frames=5, width=32, height=24)
    stereo = build_stereo_dataset(export, root / "stereo").root
    (root / "one").mkdir()
    (root / "one" / "only.txt").write_text("one file\n")
    write_manifest(root / "one")
    (root / "samples.py").write_text(_SAMPLES)
    return {"root": root, "export": export, "stereo": stereo, "one": root / "one"}


def test_tables_piped_at_80_columns_keep_every_identifier_whole(
    trees: dict[str, Path], package_env: dict[str, str]
) -> None:
    root = trees["root"]
    store = root / "store"
    argvs = [
        ["store", "build", f"{root / 'samples.py'}:made", "--out", str(store)],
        ["stereo", "validate", str(trees["stereo"])],
        ["store", "inspect", str(store)],
        ["store", "sample", str(store), "3"],
        ["inspect", str(trees["stereo"])],
        ["inspect", str(store)],
    ]
    results = run_many(package_env, argvs, columns=80)
    assert [code for code, _, _ in results] == [0] * len(argvs), results
    text = "\n".join(out for _, out, _ in results)
    assert "…" not in text
    pairs = [json.loads(line)["id"] for line in (trees["stereo"] / "genvr_i2s.jsonl").open()]
    shown = {line.split("│")[1].strip() for line in text.splitlines() if "│ ue5-pro" in line}
    assert set(pairs) <= shown, (pairs, shown)
    assert "vin.a_rather_long_block_name_for_the_table" in text


def test_counts_agree_with_their_nouns_and_sizes_read_as_sizes(
    trees: dict[str, Path], tmp_path: Path, package_env: dict[str, str]
) -> None:
    argvs = [
        ["stereo", "build", str(trees["export"]), "--out", str(tmp_path / "ds")],
        ["release", "pack", str(trees["one"]), "--out", str(tmp_path / "rel")],
        ["release", "verify", str(tmp_path / "rel")],
        ["verify", str(trees["one"])],
        ["store", "build", f"{trees['root'] / 'samples.py'}:made", "--out", str(tmp_path / "s")],
        ["store", "inspect", str(tmp_path / "s")],
    ]
    results = run_many(package_env, argvs)
    assert [code for code, _, _ in results] == [0] * len(argvs), results
    outs = [out for _, out, _ in results]
    assert "2 pairs of 5 frames each" in outs[0]  # per pair, not a sum over the pairs
    assert re.search(r"base: delivered, 2 files, \d+ B, 1 package\n", outs[1]), outs[1]
    assert f"wrote {tmp_path / 'rel'} (1 package)" in outs[1]
    assert "1 package (" in outs[2] and "1 file, 9 B match" in outs[3], outs[2:4]
    text = "\n".join(outs)
    assert not re.search(r"\b1 (files|packages|pairs|samples|shards)\b", text), text
    assert not re.search(r"\d bytes\b", text), text  # never a raw count where sizes print


def test_every_size_option_takes_units_and_one_line_says_when_it_cannot(
    trees: dict[str, Path], tmp_path: Path, package_env: dict[str, str]
) -> None:
    one, samples = str(trees["one"]), f"{trees['root'] / 'samples.py'}:made"
    good = [
        ["release", "pack", one, "--out", str(tmp_path / "r"), "--package-limit", "64KiB"],
        ["store", "build", samples, "--out", str(tmp_path / "s"), "--shard-bytes", "1MiB"],
        ["publish", one, "--out", (tmp_path / "bucket").as_uri(), "--part-size", "8MiB"],
    ]
    bad = [
        ["release", "pack", one, "--out", str(tmp_path / "r2"), "--package-limit", "64 parsecs"],
        ["release", "pack", one, "--out", str(tmp_path / "r2"), "--package-limit", "1KiB"],
        ["store", "build", samples, "--out", str(tmp_path / "s2"), "--shard-bytes", "1MB/s"],
        ["publish", one, "--out", (tmp_path / "b2").as_uri(), "--part-size", "-5"],
    ]
    results = run_many(package_env, [*good, *[[*argv, "--json"] for argv in bad]])
    for argv, (code, _, err) in zip(good, results, strict=False):
        assert code == 0, (argv, err)
    for argv, (code, out, err) in zip(bad, results[len(good) :], strict=True):
        assert code == 2 and err.count("\n") == 1, (argv, err)
        assert err.startswith("error: Invalid value for ") and "--help)" in err, err
        check_report(out, ok=False)
    assert not (tmp_path / "r2").exists() and not (tmp_path / "s2").exists()


def test_a_negative_sample_index_is_a_usage_error_in_one_line(
    trees: dict[str, Path], tmp_path: Path, package_env: dict[str, str]
) -> None:
    store = tmp_path / "s"
    samples = f"{trees['root'] / 'samples.py'}:made"
    argvs = [
        ["store", "build", samples, "--out", str(store)],
        ["store", "sample", str(store), "-1"],
        ["store", "sample", str(store), "-1", "--json"],
        ["store", "sample", str(store), "--no-such-flag", "1"],
    ]
    results = run_many(package_env, argvs)
    assert results[0][0] == 0, results[0]
    for code, _, err in results[1:]:
        assert code == 2 and err.count("\n") == 1, err
        assert "(see: dataset-devkit store sample --help)" in err
    assert "INDEX" in results[1][2]
    check_report(results[2][1], ok=False)
