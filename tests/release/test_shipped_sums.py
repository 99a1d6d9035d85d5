"""``SHA256SUMS`` is read strictly by ``release verify``: every line the packer would not
write is an issue naming the line, however ``sha256sum -c`` would take it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from dataset_devkit.release import ReleaseVerificationError, verify_release
from dataset_devkit.release.restore import sums_lines
from tests.cli_run import run_devkit
from tests.release.helpers import make_tree, pack

SMALL = {"a.txt": b"alpha\n", "depth-x/d.bin": b"\x00\x01" * 50}
OTHER = "0" * 64

#: An edit of the lines of SHA256SUMS, and what the issue about it must say.
Edit = Callable[[list[str]], list[str]]


def _line_of(lines: list[str], name: str) -> str:
    return next(line for line in lines if line.endswith(f"  {name}\n"))


EDITS: dict[str, tuple[Edit, str]] = {
    "duplicate, same hash": (
        lambda ls: [*ls, _line_of(ls, "README.md")],
        r"line 8: README\.md listed again with the same SHA-256 \(first on line 1\)",
    ),
    "duplicate package, same hash": (
        lambda ls: [_line_of(ls, "base/base-0001.tar"), *ls],
        r"line 3: base/base-0001\.tar listed again with the same SHA-256 \(first on line 1\)",
    ),
    "duplicate, another hash": (
        lambda ls: [*ls, f"{OTHER}  manifest.json\n"],
        rf"line 8: manifest\.json listed again with another SHA-256, {OTHER}",
    ),
    "duplicate package, another hash, listed first": (
        lambda ls: [f"{OTHER}  depth/depth-0001.tar\n", *ls],
        r"line 4: depth/depth-0001\.tar listed again with another SHA-256",
    ),
    "two spellings of one path": (
        lambda ls: [*ls, _line_of(ls, "base/base-0001.tar").replace("  base/", "  ./base/")],
        r"line 8: base/base-0001\.tar listed again",
    ),
    "a spelling in place of the name": (
        lambda ls: [ln.replace("  README.md", "  *README.md") for ln in ls],
        r"line 1: '.*\*README\.md' does not match the release; that is README\.md, spelled",
    ),
    "doubled slash": (
        lambda ls: [ln.replace("  base/", "  base//") for ln in ls],
        r"line 2: '.*base//base-0001\.tar' does not match the release; that is base/base-0001",
    ),
    "blank line between": (lambda ls: [*ls[:3], "\n", *ls[3:]], r"line 4: blank line"),
    "blank line at the end": (lambda ls: [*ls, "\n"], r"line 8: blank line"),
    "spaces only": (lambda ls: [*ls[:1], "   \n", *ls[1:]], r"line 2: blank line"),
    "one space": (
        lambda ls: [ls[0].replace("  ", " ", 1), *ls[1:]],
        r"line 1: '.*' is malformed; expected 64 lowercase hexadecimal digits, two spaces",
    ),
    "upper-case digest": (
        lambda ls: [ls[0][:64].upper() + ls[0][64:], *ls[1:]],
        r"line 1: '.*' is malformed",
    ),
    "short digest": (lambda ls: [ls[0][1:], *ls[1:]], r"line 1: '.*' is malformed"),
    "a comment": (lambda ls: ["# checksums\n", *ls], r"line 1: '# checksums' is malformed"),
    "CRLF": (
        lambda ls: [ln.replace("\n", "\r\n") for ln in ls],
        r"line 1: CR in a line \(CRLF line endings\?\); expected LF",
    ),
    "no final line feed": (
        lambda ls: [*ls[:-1], ls[-1].rstrip("\n")],
        r"SHA256SUMS: the last line has no line feed",
    ),
    "not UTF-8": (lambda ls: [*ls[:2], "\udcff\n", *ls[2:]], r"line 3: not UTF-8 text"),
}


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return pack(make_tree(tmp_path / "ds", SMALL), tmp_path / "rel", restore_test="none")


def _edit(release: Path, edit: Edit) -> None:
    sums = release / "SHA256SUMS"
    sums.chmod(0o644)
    lines = sums.read_text("utf-8").splitlines(keepends=True)
    assert len(lines) == 7  # README, 2 packages, files.jsonl, manifest, unpack.py, validation
    sums.write_bytes("".join(edit(lines)).encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize("case", list(EDITS))
def test_every_line_the_packer_would_not_write_is_refused_naming_it(
    release: Path, case: str
) -> None:
    verify_release(release, [])  # as packed: it verifies
    edit, expected = EDITS[case]
    _edit(release, edit)
    with pytest.raises(ReleaseVerificationError) as caught:
        verify_release(release, [])
    issues = caught.value.issues
    assert any(re.search(expected, issue) for issue in issues), issues
    assert all("\n" not in issue and issue.startswith("SHA256SUMS") for issue in issues), issues


def test_the_command_exits_1_with_one_line_per_issue(
    release: Path, package_env: dict[str, str]
) -> None:
    _edit(release, EDITS["duplicate, same hash"][0])
    done = run_devkit(package_env, "release", "verify", str(release))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == f"error: {release}: release does not verify"
    assert lines[1:] == [
        "  - SHA256SUMS line 8: README.md listed again with the same SHA-256 (first on line 1); "
        "expected one line per file"
    ]


def test_the_lines_the_packer_writes_parse_back_whole() -> None:
    known = {"README.md", "base/base-0001.tar"}
    text = f"{'a' * 64}  README.md\n{'b' * 64}  base/base-0001.tar\n".encode()
    assert sums_lines(text, known) == (
        [(1, "a" * 64, "README.md"), (2, "b" * 64, "base/base-0001.tar")],
        [],
    )
    assert sums_lines(b"", known) == ([], [])
