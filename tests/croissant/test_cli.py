"""``dataset-devkit croissant``: stdout, --out, --json, and its failures, as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

from dataset_devkit.croissant import croissant_document
from tests.cli.report_check import check_report
from tests.cli_run import run_many


def test_the_document_goes_to_stdout_or_to_a_new_file_and_notes_what_is_missing(
    demo_trees: dict[str, Path], package_env: dict[str, str], tmp_path: Path
) -> None:
    tree = str(demo_trees["stereo-dataset"])
    out = tmp_path / "stereo.croissant.json"
    license_url = "https://creativecommons.org/licenses/by/4.0/"
    results = run_many(package_env, [
        ["croissant", tree],
        ["croissant", tree, "--out", str(out), "--license", license_url, "--json"],
        ["croissant", tree, "--out", str(tmp_path / "x.json"), "--creator", "A", "--creator",
         "B", "--url", "https://e.org", "--date-published", "2026-01-02",
         "--dataset-version", "1.2.0", "--name", "Duo", "--license", license_url],
    ])  # fmt: skip
    (code, stdout, stderr), (code2, stdout2, stderr2), (code3, stdout3, stderr3) = results
    assert code == 0, stderr
    assert stdout.encode() == croissant_document(tree).to_bytes()
    assert "not given, required to publish the dataset: --license, --url" in stderr
    assert code2 == 0, stderr2
    report = check_report(stdout2, ok=True, kind="stereo-dataset")
    assert report["out"] == str(out) and report["missing"] == ["url", "creator", "datePublished"]
    assert json.loads(out.read_bytes())["license"] == license_url
    assert code3 == 0 and stderr3 == "" and stdout3.strip() == str(tmp_path / "x.json")
    written = json.loads((tmp_path / "x.json").read_bytes())
    assert (written["name"], written["version"]) == ("Duo", "1.2.0")


def test_failures_are_one_line_with_exit_1_and_usage_errors_exit_2(
    demo_trees: dict[str, Path], package_env: dict[str, str], tmp_path: Path
) -> None:
    tree = demo_trees["vin-store"]
    taken = tmp_path / "taken.json"
    taken.write_text("{}")
    results = run_many(package_env, [
        ["croissant", str(tree), "--out", str(tree / "croissant.json")],
        ["croissant", str(tree), "--out", str(taken), "--json"],
        ["croissant", str(tmp_path / "missing")],
        ["croissant", str(tree), "--json"],
    ])  # fmt: skip
    (c1, _, e1), (c2, o2, e2), (c3, _, e3), (c4, _, e4) = results
    assert c1 == 1 and "inside the tree" in e1 and len(e1.strip().splitlines()) == 1, e1
    assert c2 == 1 and "exists with other content" in e2
    assert check_report(o2, ok=False)["exit_code"] == 1
    assert taken.read_text() == "{}"
    assert c3 == 1 and "no such directory" in e3 and "Traceback" not in e3
    assert c4 == 2 and "give --out FILE" in e4
    assert not (tree / "croissant.json").exists()
