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
    made["recording"] = root / "drive.mcap"
    made["recording"].write_bytes(b"\x89MCAP0\r\n" + bytes(64))
    config = (
        'namespace = "x"\n{extra}[sources]\ntype = "mcap_hf"\npaths = ["drive.mcap"]\n'
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        '[paths]\noutput_dir = "out"\n'
    )
    made["key_typo"] = root / "key-typo.toml"
    made["key_typo"].write_text(config.format(extra="[scenario]\nscene_duraton_s = 2.0\n"))
    made["table_typo"] = root / "table-typo.toml"
    made["table_typo"].write_text(config.format(extra="[splt]\ntest_fraction = 0.5\n"))
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
    (("release", "verify", "{file}"), 1, "{file}: expected a release directory (a directory)"),
    # What the path is, and what the command takes instead.
    (("release", "verify", "{missing}"), 1, "{missing}: no such release directory"),
    (
        ("stereo", "build", "{stereo}", "--out", "{empty}/ds"),
        1,
        "{stereo}: not a render export, this is a stereo-dataset (stereo build takes the "
        "folder a renderer exported; check this one with: dataset-devkit stereo validate",
    ),
    (
        ("stereo", "build", "{empty}", "--out", "{empty}/ds"),
        1,
        "{empty}: not a render export: it holds no export.json",
    ),
    (
        ("store", "inspect", "{store}/manifest.json"),
        1,
        "{store}/manifest.json: a file of the vin-store {store}, not the tree itself; give "
        "its folder: dataset-devkit store inspect {store}",
    ),
    (
        ("build", "{recording}"),
        1,
        "{recording}: this is a recording (of sources.type 'mcap_hf'), not a build config; "
        "build takes a TOML file that lists the recordings under [sources] paths",
    ),
    (
        ("validate", "--dataroot", "{stereo}", "--version", "v1.0-trainval"),
        1,
        "{stereo}: not a nuScenes dataroot, this is a stereo-dataset (check it with: "
        "dataset-devkit stereo validate {stereo})",
    ),
    (
        ("inspect", "--dataroot", "{release}", "--version", "v1.0-trainval"),
        1,
        "{release}: not a nuScenes dataroot, this is a release",
    ),
    (("build", "{key_typo}"), 1, "scenario.scene_duraton_s: unknown key; did you mean "),
    (("build", "{table_typo}"), 1, "unknown config key 'splt'; did you mean 'split'?"),
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
    wrong = []  # every case is checked, and every one that fails is listed
    for (code, out, err), (argv, expected, message) in zip(
        run_many(package_env, argvs), CASES, strict=True
    ):
        try:
            _check(code, out, err, expected, message.format(**names))
        except AssertionError as exc:
            wrong.append((argv, str(exc) or err))
    assert wrong == []
    assert list(trees["empty"].iterdir()) == []  # nothing was written


def _check(code: int, out: str, err: str, expected: int, message: str) -> None:
    assert code == expected, err
    report = check_report(out, ok=False)
    assert "Traceback" not in err and not report.get("notes"), (err, report)
    if expected == 1:
        assert err == f"error: {report['error']}\n", err
    if message in report["error"]:
        return
    # A verification report: the message is one of the issues it found, with no aside.
    root = report["root"]
    found = [f"{root}/{i['path']}: {i['detail']}" for i in report["issues"] if i["path"]]
    assert message in found, (report["error"], found)
