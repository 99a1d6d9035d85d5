"""``store inspect|verify|sample URL`` and ``cache ls|prune`` as a user runs them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli.report_check import check_report
from tests.cli_run import run_many
from tests.upload import upload_tree


def test_store_commands_read_a_url_as_they_read_the_folder(
    store: Path, s3_bucket: str, tmp_path: Path, package_env: dict[str, str]
) -> None:
    url = f"s3://{s3_bucket}/datasets/vin"
    upload_tree(store, url)
    cache = str(tmp_path / "cache")
    env = {**package_env, **os.environ, "DATASET_DEVKIT_CACHE_DIR": str(tmp_path / "env-cache")}
    runs = run_many(
        env,
        [
            ["store", "inspect", str(store), "--json"],
            ["store", "inspect", url, "--json", "--cache-dir", cache],
            ["store", "sample", str(store), "4", "--json"],
            ["store", "sample", url, "4", "--json", "--cache-dir", cache, "--cache-limit", "1MiB"],
            ["store", "verify", url, "--cache-dir", cache],
            ["store", "verify", url, "--json"],  # the cache from the environment
            ["store", "inspect", str(store), "--cache-dir", cache],
            ["store", "verify", url, "--cache-dir", cache, "--cache-limit", "12 furlongs"],
            ["store", "sample", url, "4", "--cache-dir", cache, "--cache-limit", "10"],
        ],
    )
    (lc, local, _), (uc, remote, err) = runs[:2]
    assert lc == uc == 0, err
    here, there = check_report(local, ok=True), check_report(remote, ok=True)
    assert there["root"] == url
    assert {k: v for k, v in there.items() if k != "root"} == {
        k: v for k, v in here.items() if k != "root"
    }
    (sc, sample, _), (rc, remote_sample, err) = runs[2:4]
    assert sc == rc == 0, err
    assert check_report(remote_sample, ok=True)["blocks"] == check_report(sample, ok=True)["blocks"]
    code, out, err = runs[4]
    assert code == 0, err
    assert out.splitlines()[0].startswith("note: every object hashed in place")
    assert out.splitlines()[-1].startswith(f"OK {url}: root_sha256 ")
    code, out, err = runs[5]
    assert code == 0 and check_report(out, ok=True)["root"] == url, err
    assert list((tmp_path / "env-cache").glob("*/tree/manifest.json"))
    code, _, err = runs[6]
    assert code == 2 and "--cache-dir apply to a store URL" in err
    code, _, err = runs[7]
    assert code == 2 and "expected a size such as" in err
    code, _, err = runs[8]
    assert code == 1 and err.count("\n") == 1 and "raise cache_limit to at least" in err


def test_cache_ls_shows_each_store_and_prune_trims_to_the_size_asked(
    store: Path, s3_bucket: str, tmp_path: Path, package_env: dict[str, str]
) -> None:
    urls = [f"s3://{s3_bucket}/one", f"s3://{s3_bucket}/two"]
    for url in urls:
        upload_tree(store, url)
    cache = tmp_path / "cache"
    (tmp_path / "plain").mkdir()
    env = {**package_env, **os.environ}
    runs = run_many(
        env,
        [
            ["store", "sample", urls[0], "4", "--cache-dir", str(cache)],
            ["store", "inspect", urls[1], "--cache-dir", str(cache)],
            ["cache", "ls", str(cache), "--json"],
            ["cache", "prune", str(cache), "--max", "2kB", "--json"],
            ["cache", "ls", str(cache)],
            ["cache", "prune", str(cache)],
            ["cache", "ls", str(cache), "--json"],
            ["cache", "ls", str(tmp_path / "plain")],
            ["cache", "prune", str(tmp_path / "nowhere")],
            ["cache", "prune", str(cache), "--max", "lots"],
        ],
    )
    assert [code for code, _, _ in runs[:2]] == [0, 0], runs[:2]
    listing = check_report(runs[2][1], ok=True, kind="cache")
    assert sorted(t["url"] for t in listing["trees"]) == urls
    assert listing["bytes"] == sum(t["bytes"] for t in listing["trees"]) > 2000
    pruned = check_report(runs[3][1], ok=True)
    assert pruned["evicted_files"] > 0 and pruned["bytes"] <= 2000
    assert listing["bytes"] - pruned["evicted_bytes"] == pruned["bytes"]
    code, out, _ = runs[4]
    assert code == 0 and f"{cache}: " in out and "bytes" in out
    code, out, _ = runs[5]
    assert code == 0 and out.endswith(", 0 bytes left\n")
    assert json.loads(runs[6][1])["trees"] == []
    code, _, err = runs[7]
    assert code == 1 and "not a dataset-devkit cache directory" in err and err.count("\n") == 1
    code, _, err = runs[8]
    assert code == 1 and "no such cache directory" in err
    assert runs[9][0] == 2
