"""Every command's ``--json`` follows one schema, on success and on failure alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataset_devkit.cli.output import REPORT_SCHEMA, issue_record
from dataset_devkit.integrity import Issue, IssueKind
from tests.cli.report_check import check_report, problems
from tests.cli_run import run_devkit, run_many


def test_the_checker_catches_what_the_schema_forbids() -> None:
    good = {"ok": True, "kind": "release", "root": "r", "root_sha256": "a" * 64, "issues": []}
    assert problems(good, REPORT_SCHEMA) == []
    assert problems({**good, "ok": "yes"}, REPORT_SCHEMA) == [
        "$.ok: expected ['boolean'], found str"
    ]
    assert problems({**good, "root_sha256": "abc"}, REPORT_SCHEMA) != []
    assert problems({k: v for k, v in good.items() if k != "issues"}, REPORT_SCHEMA) != []
    assert problems({**good, "issues": ["a: b"]}, REPORT_SCHEMA) != []
    assert problems({**good, "issues": [{"path": "a", "kind": "x"}]}, REPORT_SCHEMA) != []
    assert problems({**good, "exit_code": True}, REPORT_SCHEMA) != []


#: A command line per command, each failing on a path that does not exist.
FAILING = [
    ("manifest", "{missing}"),
    ("manifest", "{missing}", "--print"),
    ("verify", "{missing}"),
    ("publish", "{missing}", "--out", "{tmp}/final"),
    ("build", "{missing}"),
    ("validate", "{missing}"),
    ("inspect", "{missing}"),
    ("validate", "--dataroot", "{missing}", "--version", "v1.0-trainval"),
    ("inspect", "--dataroot", "{missing}", "--version", "v1.0-trainval"),
    ("release", "pack", "{missing}", "--out", "{tmp}/rel"),
    ("release", "verify", "{missing}"),
    ("release", "unpack", "{missing}", "--all", "--out", "{tmp}/data"),
    ("store", "inspect", "{missing}"),
    ("store", "verify", "{missing}"),
    ("store", "sample", "{missing}", "0"),
    ("stereo", "build", "{missing}", "--out", "{tmp}/ds"),
    ("stereo", "validate", "{missing}"),
    ("croissant", "{missing}", "--out", "{tmp}/croissant.json"),
    ("demo", "{tmp}/afile/demo"),
]


def test_a_failure_prints_the_report_with_its_exit_code_and_one_stderr_line(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    (tmp_path / "afile").write_text("keep")
    argvs = [
        [a.format(missing=tmp_path / "missing", tmp=tmp_path) for a in (*args, "--json")]
        for args in FAILING
    ]
    for argv, (code, stdout, stderr) in zip(argvs, run_many(package_env, argvs), strict=True):
        assert code == 1, (argv, stderr)
        report = check_report(stdout, ok=False)
        assert report["exit_code"] == 1
        assert stderr.startswith("error: ") and stderr.count("\n") == 1, (argv, stderr)
        assert report["error"] == stderr.removeprefix("error: ").rstrip("\n")
        assert "Traceback" not in stderr
    # The same through the installed entry point, as a script would run it.
    alone = run_devkit(package_env, *argvs[0])
    assert alone.returncode == 1 and check_report(alone.stdout, ok=False)["error"]


def test_a_usage_error_prints_the_report_with_exit_code_2(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    done = run_devkit(package_env, "verify", str(tmp_path), "--no-such-flag", "--json")
    assert done.returncode == 2
    report = check_report(done.stdout, ok=False)
    assert report["exit_code"] == 2 and "--no-such-flag" in report["error"]


def test_the_documented_schema_is_the_one_checked() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
    text = docs.read_text("utf-8")
    start = text.index("```json\n", text.index("## The JSON report schema")) + len("```json\n")
    assert json.loads(text[start : text.index("```", start)]) == REPORT_SCHEMA


@pytest.mark.parametrize(
    ("issue", "record"),
    [
        (Issue("data/a.bin", IssueKind.CHANGED, "size 7"), ("data/a.bin", "changed", "size 7")),
        ("data/a.bin: missing: expected 9 bytes", ("data/a.bin", "missing", "expected 9 bytes")),
        ("/r/tree/data/a.bin: too short", ("data/a.bin", "invalid", "too short")),
        (
            "tree/index.jsonl at line 3 $.x: unknown",
            ("index.jsonl", "invalid", "at line 3 $.x: unknown"),
        ),
        (
            "package base/b-1.tar SHA-256 is 1, expected 2",
            ("base/b-1.tar", "invalid", "SHA-256 is 1, expected 2"),
        ),
        ("base/b-1.tar: member 'x' differs", ("base/b-1.tar", "invalid", "member 'x' differs")),
        (
            "family 'nope' is not part of this release",
            ("", "invalid", "family 'nope' is not part of this release"),
        ),
        ("reader: no index lists it", ("", "invalid", "reader: no index lists it")),
    ],
)
def test_every_issue_becomes_a_path_inside_the_root_a_known_kind_and_a_detail(
    issue: object, record: tuple[str, str, str]
) -> None:
    root = "/r/tree" if str(issue).startswith("/r/") else "tree"
    assert issue_record(issue, root) == dict(zip(("path", "kind", "detail"), record, strict=True))
