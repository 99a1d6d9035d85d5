"""``dataset-devkit store build MODULE:FUNCTION``: a store from the user's own code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from dataset_devkit.vin_store import VinOfflineSample, build_vin_offline_store
from tests.cli.report_check import check_report
from tests.cli_run import run_devkit, run_many
from tests.tty_run import BAR, last_frames, run_on_tty

#: The user's module, as they would write it next to their data.
USER_MODULE = """
import os

import numpy as np

from dataset_devkit.vin_store import VinOfflineSample


def render(start, stop):
    for i in range(start, stop):
        if str(i) == os.environ.get("FAIL_AT"):
            raise ValueError(f"snippet {i} is corrupt")
        yield VinOfflineSample(
            sample_key=f"snippet-{i:04d}", scene_id=f"scene-{i // 50}", snippet_id=str(i),
            arrays={"vin.points_world": np.full((16, 3), i, np.float32)},
            records={"oracle.candidate_pcs": {"n": i % 3}},
        )


def all_samples():
    return render(0, 240)


def as_list():
    return list(render(0, 240))


NOT_A_FUNCTION = 3


def needs_a_path(path):
    return []
"""


def _samples(n: int) -> list[VinOfflineSample]:
    return [
        VinOfflineSample(
            sample_key=f"snippet-{i:04d}",
            scene_id=f"scene-{i // 50}",
            snippet_id=str(i),
            arrays={"vin.points_world": np.full((16, 3), i, np.float32)},
            records={"oracle.candidate_pcs": {"n": i % 3}},
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("store-build")
    (folder / "my_samples.py").write_text(USER_MODULE)
    return folder


@pytest.fixture(scope="module")
def expected_root(work: Path) -> str:
    """The root hash of the same samples built through the library."""
    return build_vin_offline_store(_samples(240), work / "api", rows_per_shard=64).root_sha256


def test_a_function_found_from_the_current_folder_or_pythonpath_builds_the_same_store(
    work: Path, expected_root: str, package_env: dict[str, str]
) -> None:
    on_path = {**package_env, "PYTHONPATH": f"{package_env['PYTHONPATH']}:{work}"}
    roots = []
    for env, cwd, out in ((package_env, str(work), "here"), (on_path, "/", str(work / "there"))):
        done = run_devkit(
            env,
            "store", "build", "my_samples:all_samples", "--out", out, "--rows-per-shard", "64",
            "--json",
            cwd=cwd,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""  # not a terminal: no bar
        report = check_report(done.stdout, ok=True, kind="vin-store")
        assert (report["samples"], report["shards"]) == (240, 4)
        assert report["root"] == str(work / "here" if out == "here" else out)
        roots.append(report["root_sha256"])
    assert roots == [expected_root] * 2
    text = run_devkit(package_env, "store", "verify", str(work / "there"))
    assert text.returncode == 0 and expected_root in text.stdout


def test_a_terminal_shows_samples_done_rate_and_time_and_json_stays_clean(
    work: Path, package_env: dict[str, str]
) -> None:
    code, shown = run_on_tty(
        package_env,
        "store", "build", "my_samples:as_list", "--out", "tty", "--rows-per-shard", "16",
        cwd=str(work),
    )  # fmt: skip
    assert code == 0, shown
    frame = last_frames(shown)["build"]
    assert "240/240 samples" in frame and "samples/s" in frame, frame
    assert "built " in shown and "root_sha256 " in shown
    code, shown = run_on_tty(
        package_env,
        "store", "build", "my_samples:all_samples", "--out", "tty-json", "--json",
        cwd=str(work),
    )  # fmt: skip
    assert code == 0 and BAR not in shown, shown
    assert json.loads(shown.replace("\r\n", "\n"))["samples"] == 240


def test_a_file_s_function_runs_in_worker_processes_and_a_failure_resumes(
    work: Path, expected_root: str, package_env: dict[str, str]
) -> None:
    # FILE.py:FUNCTION from another folder: the spawned workers import it by name too.
    function = f"{work / 'my_samples.py'}:render"
    argv = ["store", "build", function, "--items", "0:240", "--out", str(work / "resumed")]
    argv += ["--rows-per-shard", "64", "--workers", "2"]
    failed = run_devkit({**package_env, "FAIL_AT": "200"}, *argv, cwd="/")
    assert failed.returncode == 1
    assert (
        failed.stderr == f"error: {function}(192, 240) raised ValueError: snippet 200 is corrupt\n"
    )
    assert not (work / "resumed").exists()
    again = run_devkit(package_env, *argv, "--json", cwd="/")
    assert again.returncode == 0, again.stderr
    report = check_report(again.stdout, ok=True)
    assert report["reused_shards"] == 3 and report["root_sha256"] == expected_root


#: Wrong invocations, each with its exit code and the message it must print.
WRONG = [
    (("my_samples",), 2, "expected MODULE:FUNCTION or FILE.py:FUNCTION, found 'my_samples'"),
    (("my_samples:render", "--items", "9:3"), 2, "expected 0 <= START < STOP, found '9:3'"),
    (("my_samples:render", "--items", "ten"), 2, "expected N or START:STOP (integers)"),
    (("my_samples:all_samples", "--shard-bytes", "1XB"), 2, "expected a size such as"),
    (("my_samples:missing",), 1, "my_samples: has no 'missing'"),
    (("my_samples:NOT_A_FUNCTION",), 1, "my_samples:NOT_A_FUNCTION: is a int, expected a"),
    (("no_such_module:f",), 1, "cannot import module 'no_such_module'"),
    (("nowhere.py:f",), 1, "nowhere.py: no such Python file"),
    (("my_samples:render",), 1, "expected a function taking () without --items"),
    (("my_samples:needs_a_path", "--items", "5"), 1, "taking (start, stop) with --items"),
    (("my_samples:all_samples", "--out", "api"), 1, "already exists"),
]


def test_wrong_invocations_are_one_clear_line_and_leave_nothing(
    work: Path, expected_root: str, package_env: dict[str, str]
) -> None:
    argvs = [
        ["store", "build", *argv, *(() if "--out" in argv else ("--out", "never")), "--json"]
        for argv, _, _ in WRONG
    ]
    for (code, out, err), (argv, expected, message) in zip(
        run_many(package_env, argvs, cwd=str(work)), WRONG, strict=True
    ):
        assert code == expected, (argv, err)
        report = check_report(out, ok=False)
        assert report["exit_code"] == expected and message in report["error"], (argv, report)
        assert "Traceback" not in err
        if expected == 1:
            assert err.startswith("error: ") and err.count("\n") == 1, err
    assert not [name for name in os.listdir(work) if "never" in name]
