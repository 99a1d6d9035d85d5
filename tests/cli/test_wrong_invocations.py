"""A newcomer's mistakes: the wrong kind of tree, a missing path, a bad flag value.

Each is one line that says what is wrong and, when the tree is of another kind, which
command checks it; never a traceback, never a list of files the tree was never meant to
have. All command lines run in one child process (a process each costs a second).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.kinds import RELEASE_MARKERS, STEREO_MARKERS, VIN_MARKERS
from tests.cli.report_check import check_report
from tests.cli_run import run_many


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Directories each kind detector recognises (their marker names), plus odd paths."""
    root = tmp_path_factory.mktemp("kinds")
    made = {}
    for name, markers in (
        ("release", RELEASE_MARKERS),
        ("stereo", STEREO_MARKERS),
        ("store", VIN_MARKERS),
    ):
        made[name] = root / name
        made[name].mkdir()
        for marker in markers:
            (made[name] / marker).mkdir() if marker in ("shards", "splits") else (
                made[name] / marker
            ).write_text("{}")
    made["empty"] = root / "empty"
    made["empty"].mkdir()
    made["file"] = root / "a-file"
    made["file"].write_text("not a tree")
    made["missing"] = root / "missing"
    return made


#: (command line, exit code, the message's text); {name} is a path from ``trees``.
CASES = [
    (
        ("store", "verify", "{stereo}"),
        1,
        "{stereo}: not a VIN offline store, this is a stereo-dataset "
        "(check it with: dataset-devkit stereo validate {stereo})",
    ),
    (("store", "inspect", "{release}"), 1, "this is a release (check it with: dataset-devkit"),
    (("store", "sample", "{stereo}", "0"), 1, "not a VIN offline store, this is a stereo"),
    (
        ("stereo", "validate", "{store}"),
        1,
        "{store}: not a stereo dataset, this is a vin-store "
        "(check it with: dataset-devkit store verify {store})",
    ),
    (("release", "verify", "{store}"), 1, "not a release directory, this is a vin-store"),
    (("release", "unpack", "{stereo}", "--all", "--out", "{empty}"), 1, "this is a stereo"),
    (
        ("verify", "{release}"),
        1,
        "{release}: not a tree with a content manifest, this is a release "
        "(check it with: dataset-devkit release verify {release})",
    ),
    # A tree of no known kind goes on to the command's own checks, without asides.
    (("store", "verify", "{empty}"), 1, "{empty}/manifest.json: is this a VIN offline store?"),
    # The release directory is named once, not twice.
    (("release", "verify", "{empty}"), 1, "{empty}/manifest.json: missing"),
    (("release", "verify", "{file}"), 1, "release directory {file}: exists and is not a dir"),
    (("stereo", "build", "{missing}", "--out", "{empty}/ds"), 1, "{missing}: no such export"),
    (("stereo", "build", "{file}", "--out", "{empty}/ds"), 1, "{file}: expected the export"),
    (
        ("release", "pack", "{stereo}", "--out", "{empty}/r", "--package-limit", "10"),
        2,
        "Invalid value for '--package-limit'",
    ),
]


def test_each_mistake_is_one_line_naming_what_to_do(
    trees: dict[str, Path], package_env: dict[str, str]
) -> None:
    names = {name: str(path) for name, path in trees.items()}
    argvs = [[part.format(**names) for part in (*argv, "--json")] for argv, _, _ in CASES]
    for (code, out, err), (argv, expected, message) in zip(
        run_many(package_env, argvs), CASES, strict=True
    ):
        assert code == expected, (argv, err)
        report = check_report(out, ok=False)
        assert "Traceback" not in err and not report.get("notes"), (argv, err, report)
        if "error" not in report:  # a verification report: the issues it found, no aside
            found = [f"{issue['path']}: {issue['detail']}" for issue in report["issues"]]
            assert message.format(**names) in found, (argv, found)
            continue
        assert message.format(**names) in report["error"], (argv, report["error"])
        if expected == 1:
            assert err == f"error: {report['error']}\n", (argv, err)
    assert list(trees["empty"].iterdir()) == []  # nothing was written
