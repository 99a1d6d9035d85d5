"""Hostile and broken archives: every one is refused, nothing outside the output changes."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.release import unpack
from tests.release import unpack_script
from tests.release.helpers import craft_release, file_info, fingerprint, row, tar_bytes

GOOD = b"good content\n"


def _special(name: str, kind: bytes, **fields: Any) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in fields.items():
        setattr(info, key, value)
    return info, None


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """An output holding one pre-existing file, and a sibling folder that must stay intact."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_bytes(b"do not touch\n")
    output = tmp_path / "out"
    (output / "ds").mkdir(parents=True)
    (output / "keep.txt").write_bytes(GOOD)
    return {"root": tmp_path, "outside": outside, "output": output}


def _attempt(
    world: dict[str, Path], package: bytes, rows: list[dict[str, Any]], match: str, **kw: Any
) -> None:
    release = craft_release(world["root"] / "release", package, rows, **kw)
    before_outside = fingerprint(world["outside"])
    before_output = fingerprint(world["output"])
    with pytest.raises(unpack.UnpackError, match=match):
        unpack_script.unpack_release(str(release), str(world["output"]), ["base"])
    assert fingerprint(world["outside"]) == before_outside
    after = fingerprint(world["output"])
    for rel, value in before_output.items():
        assert after[rel] == value, rel
    new = [rel for rel in after if rel.endswith(".tmp") and rel not in before_output]
    assert not new, "temporary files left behind"
    assert (world["output"] / "ds.unpack-state.json").exists() is False
    # Nothing was written: no journal claims the output's files for a later run.
    assert not (world["output"] / "ds.unpack-journal.json").exists()


@pytest.mark.unpack_script
def test_absolute_member_path_is_refused(world: dict[str, Path]) -> None:
    victim = str(world["outside"] / "victim.txt")
    package = tar_bytes([file_info(victim, b"owned\n")])
    _attempt(world, package, [row("victim.txt", b"owned\n")], "is an absolute path")


@pytest.mark.unpack_script
def test_absolute_path_in_files_jsonl_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds//etc/x", b"owned\n")])
    _attempt(world, package, [row("/etc/x", b"owned\n")], "absolute path")


@pytest.mark.unpack_script
def test_dot_dot_member_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/../outside/victim.txt", b"owned\n")])
    _attempt(world, package, [row("x.txt", b"owned\n")], "component '..' is not allowed")


@pytest.mark.unpack_script
def test_dot_dot_in_files_jsonl_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/../outside/victim.txt", b"owned\n")])
    _attempt(world, package, [row("../outside/victim.txt", b"owned\n")], "component '..'")


@pytest.mark.parametrize(
    ("kind", "what"),
    [
        (tarfile.SYMTYPE, "symbolic link"),
        (tarfile.LNKTYPE, "hard link"),
        (tarfile.CHRTYPE, "character device"),
        (tarfile.BLKTYPE, "block device"),
        (tarfile.FIFOTYPE, "FIFO"),
        (tarfile.DIRTYPE, "directory"),
        (tarfile.CONTTYPE, "contiguous file"),
    ],
)
@pytest.mark.unpack_script
def test_every_non_regular_member_type_is_refused(
    world: dict[str, Path], kind: bytes, what: str
) -> None:
    link = str(world["outside"])
    package = tar_bytes(
        [_special("ds/link", kind, linkname=link), file_info("ds/link/victim.txt", b"owned\n")]
    )
    rows = [row("link/victim.txt", b"owned\n")]
    _attempt(world, package, rows, f"member 'ds/link/?' is a {what}")


@pytest.mark.unpack_script
def test_symlink_planted_in_output_directory_is_never_followed(world: dict[str, Path]) -> None:
    (world["output"] / "ds" / "sub").symlink_to(world["outside"], target_is_directory=True)
    package = tar_bytes([file_info("ds/sub/victim.txt", b"owned\n")])
    _attempt(world, package, [row("sub/victim.txt", b"owned\n")], "is not a regular file; kept")


@pytest.mark.unpack_script
def test_symlink_planted_as_the_file_is_kept_and_not_written_through(
    world: dict[str, Path],
) -> None:
    (world["output"] / "ds" / "a.txt").symlink_to(world["outside"] / "victim.txt")
    package = tar_bytes([file_info("ds/a.txt", b"owned\n")])
    _attempt(world, package, [row("a.txt", b"owned\n")], "not a regular file; kept")


@pytest.mark.unpack_script
def test_member_not_in_files_jsonl_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n"), file_info("ds/sneaky.txt", b"x\n")])
    rows = [row("a.txt", b"a\n"), row("b.txt", b"x\n")]
    _attempt(world, package, rows, "'ds/sneaky.txt' is not listed for this package")


@pytest.mark.unpack_script
def test_duplicate_member_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n"), file_info("ds/a.txt", b"a\n")])
    rows = [row("a.txt", b"a\n"), row("b.txt", b"b\n")]
    _attempt(world, package, rows, "duplicate member 'ds/a.txt'")


@pytest.mark.unpack_script
def test_more_members_than_listed_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n"), file_info("ds/a.txt", b"a\n")])
    _attempt(world, package, [row("a.txt", b"a\n")], "more members than the 1 listed")


@pytest.mark.unpack_script
def test_member_with_a_different_size_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"longer content\n")])
    _attempt(world, package, [row("a.txt", b"short\n")], "has 15 bytes, files.jsonl says 6")


@pytest.mark.unpack_script
def test_member_whose_hash_differs_is_not_renamed_into_place(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"evil!\n")])
    rows = [{"path": "a.txt", "size": 6, "sha256": "ab" * 32}]
    _attempt(world, package, rows, "SHA-256 .* differs from files.jsonl")
    assert not (world["output"] / "ds" / "a.txt").exists()


def _first_header_patched(package: bytes, start: int, value: bytes, fix_checksum: bool) -> bytes:
    header = bytearray(package[:512])
    header[start : start + len(value)] = value
    if fix_checksum:
        header[148:156] = b" " * 8
        header[148:156] = b"%06o\x00 " % sum(header)
    return bytes(header) + package[512:]


@pytest.mark.unpack_script
def test_damaged_header_checksum_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n")])
    damaged = _first_header_patched(package, 3, b"X", fix_checksum=False)
    _attempt(world, damaged, [row("a.txt", b"a\n")], "header checksum mismatch")


@pytest.mark.unpack_script
def test_negative_base256_size_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n")])
    negative = _first_header_patched(package, 124, b"\xff" * 12, fix_checksum=True)
    _attempt(world, negative, [row("a.txt", b"a\n")], "base-256 size field")


@pytest.mark.unpack_script
def test_non_octal_size_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n")])
    bad = _first_header_patched(package, 124, b"-0000000002\x00", fix_checksum=True)
    _attempt(world, bad, [row("a.txt", b"a\n")], "size field .* is not an octal number")


@pytest.mark.unpack_script
def test_truncated_member_data_is_refused(world: dict[str, Path]) -> None:
    data = b"z" * 5000
    package = tar_bytes([file_info("ds/a.txt", data)])[:2048]
    _attempt(world, package, [row("a.txt", data)], "truncated")
    assert not (world["output"] / "ds" / "a.txt").exists()


@pytest.mark.unpack_script
def test_missing_end_of_archive_marker_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n")])[:1024]
    _attempt(world, package, [row("a.txt", b"a\n")], "truncated")


@pytest.mark.unpack_script
def test_single_zero_block_end_marker_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n")])[:1024] + bytes(512) + b"x" * 512
    _attempt(world, package, [row("a.txt", b"a\n")], "single zero block")


@pytest.mark.unpack_script
def test_data_after_end_marker_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n")]) + b"hidden payload" + bytes(498)
    _attempt(world, package, [row("a.txt", b"a\n")], "data after the end-of-archive marker")


@pytest.mark.unpack_script
def test_non_zero_padding_is_refused(world: dict[str, Path]) -> None:
    package = bytearray(tar_bytes([file_info("ds/a.txt", b"a\n")]))
    package[512 + 2] = 0x41
    _attempt(world, bytes(package), [row("a.txt", b"a\n")], "non-zero padding")


@pytest.mark.unpack_script
def test_listed_member_missing_from_package_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n")])
    rows = [row("a.txt", b"a\n"), row("b.txt", b"b\n")]
    _attempt(world, package, rows, "1 listed members are missing")


@pytest.mark.unpack_script
def test_pax_linkpath_keyword_is_refused(world: dict[str, Path]) -> None:
    info, data = file_info("ds/a.txt", b"a\n")
    info.pax_headers = {"linkpath": "/etc/passwd"}
    _attempt(world, tar_bytes([(info, data)]), [row("a.txt", b"a\n")], "pax keyword 'linkpath'")


@pytest.mark.unpack_script
def test_oversized_pax_header_is_refused_without_reading_it(world: dict[str, Path]) -> None:
    info, data = file_info("ds/a.txt", b"a\n")
    info.pax_headers = {"comment": "x" * 70000}
    _attempt(world, tar_bytes([(info, data)]), [row("a.txt", b"a\n")], "oversized pax header")


@pytest.mark.unpack_script
def test_gnu_long_name_member_is_refused(world: dict[str, Path]) -> None:
    name = "ds/" + "n" * 120
    info, data = file_info(name, b"a\n")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(data))
    _attempt(world, raw.getvalue(), [row("n" * 120, b"a\n")], "not a POSIX ustar/pax header")


@pytest.mark.unpack_script
def test_member_outside_the_release_root_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("other/a.txt", b"a\n")])
    _attempt(world, package, [row("a.txt", b"a\n")], "is not under 'ds/'")


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("CON", "reserved device name"),
        ("docs/aux.txt", "reserved device name"),
        ("docs/LPT1.log", "reserved device name"),
        ("docs/name.", "ends with a dot or a space"),
        ("docs/name ", "ends with a dot or a space"),
        ("docs\\evil.txt", "characters Windows rejects"),
        ("C:evil.txt", "characters Windows rejects"),
        ("docs/what?.txt", "characters Windows rejects"),
        ("docs/tab\there", "characters Windows rejects"),
    ],
)
@pytest.mark.unpack_script
def test_windows_unsafe_names_are_refused(world: dict[str, Path], path: str, problem: str) -> None:
    package = tar_bytes([file_info(f"ds/{path}", b"a\n")])
    _attempt(world, package, [row(path, b"a\n")], problem)


@pytest.mark.parametrize(
    "pair",
    [("docs/Read.md", "docs/read.md"), ("caf\u00e9.txt", "cafe\u0301.txt"), ("A/x", "a/y")],
)
@pytest.mark.unpack_script
def test_names_colliding_on_case_insensitive_systems_are_refused(
    world: dict[str, Path], pair: tuple[str, str]
) -> None:
    package = tar_bytes([file_info(f"ds/{p}", b"a\n") for p in sorted(pair)])
    _attempt(world, package, [row(p, b"a\n") for p in pair], "collide on case-insensitive systems")


@pytest.mark.unpack_script
def test_path_that_is_both_file_and_directory_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a", b"a\n"), file_info("ds/a/b", b"b\n")])
    _attempt(world, package, [row("a", b"a\n"), row("a/b", b"b\n")], "both a file and a directory")


def test_windows_style_fallback_without_dir_fd_also_refuses_planted_links(
    world: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(unpack, "_DIR_FD", False)
    (world["output"] / "ds" / "sub").symlink_to(world["outside"], target_is_directory=True)
    package = tar_bytes([file_info("ds/sub/victim.txt", b"owned\n")])
    _attempt(world, package, [row("sub/victim.txt", b"owned\n")], "not a regular file; kept")


@pytest.mark.unpack_script
def test_release_root_planted_as_a_symlink_is_never_followed(world: dict[str, Path]) -> None:
    (world["output"] / "ds").rmdir()
    (world["output"] / "ds").symlink_to(world["outside"], target_is_directory=True)
    package = tar_bytes([file_info("ds/victim.txt", b"owned\n")])
    _attempt(world, package, [row("victim.txt", b"owned\n")], "is a link in the output")


@pytest.mark.unpack_script
def test_a_file_that_only_looks_like_a_temporary_file_is_reported_not_removed(
    world: dict[str, Path],
) -> None:
    (world["output"] / "ds" / ".unpack-notours.tmp").write_bytes(b"someone's")
    package = tar_bytes([file_info("ds/a.txt", b"a\n")])
    _attempt(world, package, [row("a.txt", b"a\n")], "is not part of snapshot")


@pytest.mark.unpack_script
def test_fifo_in_place_of_a_package_fails_instead_of_hanging(tmp_path: Path) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n")])
    release = craft_release(tmp_path / "release", package, [row("a.txt", b"a\n")])
    (release / "base" / "base-0001.tar").unlink()
    os.mkfifo(release / "base" / "base-0001.tar")
    with pytest.raises(unpack.UnpackError, match="not a regular file"):
        unpack_script.verify_release(str(release), ["base"])
    with pytest.raises(unpack.UnpackError, match="not a regular file"):
        unpack._open_read_path(str(release / "base" / "base-0001.tar"))


@settings(max_examples=200)
@given(data=st.binary(max_size=1100) | st.integers(0, 1100).map(lambda n: b"\xff" * n))
def test_the_header_byte_sum_is_exact_for_any_bytes(data: bytes) -> None:
    assert unpack.byte_sum(data) == sum(data)


@pytest.mark.unpack_script
def test_a_checksum_off_by_the_adler_modulus_is_refused(world: dict[str, Path]) -> None:
    """The byte sum is exact, not modulo 65521 (the modulus of the Adler-32 it is read from)."""
    package = tar_bytes([file_info("ds/a.txt", b"a\n")])
    header = bytearray(package[:512])
    header[148:156] = b"%06o\x00 " % (int(header[148:154], 8) + 65521)
    damaged = bytes(header) + package[512:]
    _attempt(world, damaged, [row("a.txt", b"a\n")], "header checksum mismatch")


@pytest.mark.unpack_script
def test_a_ustar_name_split_into_prefix_and_name_is_restored(world: dict[str, Path]) -> None:
    name = "ds/" + "d" * 90 + "/" + "f" * 60
    info, data = file_info(name, b"split\n")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        tar.addfile(info, io.BytesIO(data))
    package = buffer.getvalue()
    assert package[345:346] == b"d"  # the name's directory went to the ustar prefix field
    release = craft_release(world["root"] / "release", package, [row(name[3:], data)])
    unpack_script.unpack_release(str(release), str(world["output"]), ["base"])
    assert (world["output"] / name).read_bytes() == data


@pytest.mark.unpack_script
def test_a_regular_member_with_a_link_target_is_refused(world: dict[str, Path]) -> None:
    package = tar_bytes([file_info("ds/a.txt", b"a\n", linkname="elsewhere")])
    _attempt(world, package, [row("a.txt", b"a\n")], "regular member .* carries a link target")


def _names_checked_one_by_one(paths: list[str]) -> list[str]:
    """check_tree_names without its shortcuts: every component of every path, each time."""
    issues: set[str] = set()
    files: set[str] = set()
    folders: dict[str, str] = {}  # folder -> its folded form
    seen: dict[tuple[str, str], str] = {}
    for path in paths:
        problem = unpack._relpath_problem(path)
        if problem:
            issues.add(f"unsafe path {path!r}: {problem}")
            continue
        if path in files:
            issues.add(f"duplicate path {path!r}")
            continue
        files.add(path)
        parent, parent_fold = "", ""
        parts = path.split("/")
        for depth, name in enumerate(parts):
            last = depth == len(parts) - 1
            full = f"{parent}/{name}" if parent else name
            if not last and full in folders:
                parent, parent_fold = full, folders[full]
                continue
            fold = unpack._fold(name)
            other = seen.setdefault((parent_fold, fold), name)
            if other != name:
                where = parent or "the root"
                issues.add(f"{other!r} and {name!r} in {where} collide on case-insensitive systems")
            if not last:
                folders[full] = f"{parent_fold}/{fold}"
                parent, parent_fold = full, folders[full]
    issues.update(f"{p!r} is both a file and a directory" for p in files & set(folders))
    return sorted(issues)


@settings(max_examples=300)
@given(
    paths=st.lists(
        st.lists(st.sampled_from(["a", "A", "b", "é", "e\u0301", "con", "x."]), max_size=3).map(
            "/".join
        ),
        max_size=12,
    )
)
def test_tree_names_are_checked_as_if_every_component_were_checked_each_time(
    paths: list[str],
) -> None:
    assert unpack.check_tree_names(paths) == _names_checked_one_by_one(paths)
