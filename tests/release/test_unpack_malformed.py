"""Malformed and hostile releases: each class is refused with one line naming the package,
member or index line and the rule, by a restore and by ``--verify-only`` alike."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dataset_devkit.release import unpack
from tests.release import unpack_script
from tests.release.helpers import craft_release, file_info, row, tar_bytes

A = b"a\n"


def _release(tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes]], rows: Any) -> Path:
    return craft_release(tmp_path / "release", tar_bytes(members), rows)


def _rewrite(release: Path, index: Callable[[bytes], bytes], **snapshot: Any) -> Path:
    """Change files.jsonl (and snapshot fields), keeping the manifest's hash of it true: the
    attacker controls every file, so only unpack.py's own rules can refuse the result."""
    data = index((release / "files.jsonl").read_bytes())
    (release / "files.jsonl").write_bytes(data)
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    manifest["files_jsonl_sha256"] = hashlib.sha256(data).hexdigest()
    manifest["snapshot"].update(snapshot)
    (release / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return release


def _refused_everywhere(release: Path, tmp_path: Path, match: str) -> None:
    """A restore and --verify-only refuse it with the same reason; nothing is written."""
    out = tmp_path / "out"
    with pytest.raises(unpack.UnpackError, match=match):
        unpack_script.unpack_release(str(release), str(out), everything=True)
    assert not (out / "ds").exists() or not any((out / "ds").rglob("*"))
    with pytest.raises(unpack.UnpackError, match=match):
        unpack_script.verify_release(str(release), everything=True)


def _main_refuses(release: Path, capsys: pytest.CaptureFixture[str], *needles: str) -> None:
    argv = ["--all", "--verify-only", "--quiet", "--release-dir", str(release)]
    assert unpack_script.main(argv) == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith("FAILED: ")
    for needle in needles:
        assert needle in first, first


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("n" * 256, "longer than 255 bytes"),
        ("é" * 128, "longer than 255 bytes"),  # 256 bytes in UTF-8, 128 characters
        ("/".join(["d" * 200] * 21), "longer than 4095 bytes"),
    ],
)
@pytest.mark.unpack_script
def test_paths_past_the_platform_limits_are_refused_at_index_load(
    tmp_path: Path, path: str, rule: str, capsys: pytest.CaptureFixture[str]
) -> None:
    release = _release(tmp_path, [file_info(f"ds/{path}", A)], [row(path, A)])
    _refused_everywhere(release, tmp_path, rule)
    _main_refuses(release, capsys, "files.jsonl")


@pytest.mark.unpack_script
def test_a_member_name_past_the_limit_is_refused_naming_package_and_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The index is fine; the member's own name (a pax path) is not what the index lists.
    long = "m" * 300
    release = _release(tmp_path, [file_info(f"ds/{long}", A)], [row("a.txt", A)])
    _refused_everywhere(release, tmp_path, "longer than 255 bytes")
    _main_refuses(release, capsys, "base/base-0001.tar", "member 'ds/mmm", "255 bytes")


@pytest.mark.unpack_script
@pytest.mark.parametrize("name", ["/ds/a.txt", "//ds/a.txt"])
def test_absolute_member_names_are_refused_not_made_relative(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    release = _release(tmp_path, [file_info(name, A)], [row("a.txt", A)])
    _refused_everywhere(release, tmp_path, "is an absolute path")
    _main_refuses(release, capsys, "base/base-0001.tar", repr(name), "absolute path")


@pytest.mark.unpack_script
@pytest.mark.parametrize("digits", ["\u00b2", "\u0662", "1\u00b2", "+2", " 2", ""])
def test_pax_sizes_take_ascii_decimal_digits_only(
    tmp_path: Path, digits: str, capsys: pytest.CaptureFixture[str]
) -> None:
    info, data = file_info("ds/a.txt", A)
    info.pax_headers = {"size": digits}
    release = _release(tmp_path, [(info, data)], [row("a.txt", A)])
    _refused_everywhere(release, tmp_path, "ASCII digits|malformed pax record")
    _main_refuses(release, capsys, "base/base-0001.tar")


@pytest.mark.unpack_script
@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "x\\ud83d"])
def test_a_lone_surrogate_in_files_jsonl_is_one_line_not_a_traceback(
    tmp_path: Path, escape: str, capsys: pytest.CaptureFixture[str]
) -> None:
    release = _release(tmp_path, [file_info("ds/a.txt", A)], [row("a.txt", A)])
    _rewrite(release, lambda data: data.replace(b'"a.txt"', f'"a{escape}.txt"'.encode()))
    _refused_everywhere(release, tmp_path, "lone surrogate")
    _main_refuses(release, capsys, "files.jsonl line 1", "lone surrogate")


@pytest.mark.unpack_script
def test_a_lone_surrogate_in_manifest_json_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    release = _release(tmp_path, [file_info("ds/a.txt", A)], [row("a.txt", A)])
    text = (release / "manifest.json").read_text(encoding="utf-8")
    (release / "manifest.json").write_text(text.replace('"base"', '"b\\udc80"', 1))
    _refused_everywhere(release, tmp_path, "lone surrogate")
    _main_refuses(release, capsys, "manifest.json", "lone surrogate")


@pytest.mark.parametrize(
    "digest",
    [
        hashlib.sha256(A).hexdigest().upper(),
        hashlib.sha256(A).hexdigest()[:63],
        "g" * 64,
        " " + hashlib.sha256(A).hexdigest()[1:],
    ],
)
@pytest.mark.unpack_script
def test_malformed_sha256_strings_are_refused_at_index_load(
    tmp_path: Path, digest: str, capsys: pytest.CaptureFixture[str]
) -> None:
    release = _release(tmp_path, [file_info("ds/a.txt", A)], [row("a.txt", A)])
    good = hashlib.sha256(A).hexdigest()
    _rewrite(release, lambda data: data.replace(good.encode(), digest.encode()))
    _refused_everywhere(release, tmp_path, "is not 64 lowercase hex digits")
    _main_refuses(release, capsys, "files.jsonl line 1", "sha256")


def _two_rows(tmp_path: Path) -> Path:
    members = [file_info("ds/a.txt", A), file_info("ds/b.txt", b"b\n")]
    return _release(tmp_path, members, [row("a.txt", A), row("b.txt", b"b\n")])


@pytest.mark.unpack_script
def test_rows_out_of_order_are_refused(tmp_path: Path) -> None:
    release = _two_rows(tmp_path)
    _rewrite(release, lambda data: b"".join(reversed(data.splitlines(keepends=True))))
    _refused_everywhere(release, tmp_path, "line 2: out of order after line 1")


@pytest.mark.unpack_script
def test_a_duplicated_row_is_refused(tmp_path: Path) -> None:
    release = _two_rows(tmp_path)
    _rewrite(release, lambda data: data + data.splitlines(keepends=True)[-1])
    _refused_everywhere(release, tmp_path, "line 3: a duplicate of line 2")


@pytest.mark.parametrize(
    ("fields", "rule"),
    [
        ({"file_count": 3}, "file_count 3, the files.jsonl rows give 2"),
        ({"total_bytes": 5}, "total_bytes 5, the files.jsonl rows give 4"),
        ({"excluded": ["b.txt"]}, "only a content manifest's own location"),
        (
            {"excluded": ["content_manifest.json"], "source": "content_manifest"},
            "is not a content_manifest.json listed",
        ),
        ({"excluded": ["b.txt"], "source": "content_manifest"}, "'b.txt' is not a content_"),
    ],
)
@pytest.mark.unpack_script
def test_snapshot_fields_that_disagree_with_the_index_are_refused(
    tmp_path: Path, fields: dict[str, Any], rule: str
) -> None:
    release = _rewrite(_two_rows(tmp_path), lambda data: data, **fields)
    _refused_everywhere(release, tmp_path, rule)


@pytest.mark.unpack_script
def test_family_totals_that_disagree_with_the_index_are_refused(tmp_path: Path) -> None:
    release = _two_rows(tmp_path)
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["families"][0]["file_count"] = 7
    (release / "manifest.json").write_text(json.dumps(manifest))
    _refused_everywhere(release, tmp_path, "family base: file_count 7, the release gives 2")


@pytest.mark.unpack_script
@pytest.mark.parametrize("mode", [0o4755, 0o2755, 0o1777, 0o6777])
def test_setuid_setgid_and_sticky_bits_are_never_restored(tmp_path: Path, mode: int) -> None:
    release = _release(tmp_path, [file_info("ds/tool", A, mode=mode)], [row("tool", A)])
    unpack_script.unpack_release(str(release), str(tmp_path / "out"), everything=True)
    restored = os.lstat(tmp_path / "out" / "ds" / "tool").st_mode
    assert stat.S_IMODE(restored) == 0o400
    assert not restored & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX)
