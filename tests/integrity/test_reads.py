"""The one bounded read loop: short reads continued, the end told apart, used everywhere."""

from __future__ import annotations

import ast
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.integrity.reads import FdReader, fill, read_exactly, read_expected

SRC = Path(__file__).resolve().parents[2] / "src" / "dataset_devkit"


class _Trickle:
    """A source that hands out at most the next chunk size per call (short reads)."""

    def __init__(self, data: bytes, chunks: list[int]) -> None:
        self.data, self.chunks, self.at, self.calls = data, chunks, 0, 0

    def readinto(self, buffer: memoryview, /) -> int:
        limit = self.chunks[self.calls % len(self.chunks)] if self.chunks else len(buffer)
        self.calls += 1
        count = min(len(buffer), limit, len(self.data) - self.at)
        buffer[:count] = self.data[self.at : self.at + count]
        self.at += count
        return count


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=2000),
    room=st.integers(0, 2500),
    chunks=st.lists(st.integers(1, 300), max_size=8),
)
def test_fill_reads_until_full_or_the_end_whatever_the_short_reads(
    data: bytes, room: int, chunks: list[int]
) -> None:
    view = memoryview(bytearray(room))
    count = fill(_Trickle(data, chunks), view)
    assert count == min(room, len(data))
    assert view[:count] == data[:count]


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=500), extra=st.integers(0, 3), chunks=st.lists(st.integers(1, 50)))
def test_read_exactly_names_what_ended_early(data: bytes, extra: int, chunks: list[int]) -> None:
    view = memoryview(bytearray(len(data) + extra))
    if extra:
        with pytest.raises(EOFError, match=rf"frame\.jpg: ended after {len(data)} of"):
            read_exactly(_Trickle(data, chunks), view, "frame.jpg")
    else:
        read_exactly(_Trickle(data, chunks), view, "frame.jpg")
        assert view == data


@settings(max_examples=30, deadline=None)
@given(data=st.binary(max_size=70_000), pieces=st.lists(st.integers(1, 9000), min_size=1))
def test_read_expected_continues_short_reads_of_a_pipe(data: bytes, pieces: list[int]) -> None:
    read_end, write_end = os.pipe()

    def writer() -> None:
        at, i = 0, 0
        while at < len(data):
            n = pieces[i % len(pieces)]
            os.write(write_end, data[at : at + n])  # each write may reach the reader alone
            at, i = at + n, i + 1
        os.close(write_end)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert read_expected(read_end, len(data)) == data
    finally:
        thread.join()
        os.close(read_end)


@pytest.mark.parametrize("offset", [None, 0, 5])
def test_read_expected_reveals_growth_and_shrinking(tmp_path: Path, offset: int | None) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    fd = os.open(path, os.O_RDONLY)
    try:
        start = offset or 0
        rest = 10 - start
        assert read_expected(fd, rest, offset) == b"0123456789"[start:]
        if offset is None:
            os.lseek(fd, 0, os.SEEK_SET)
        assert len(read_expected(fd, rest - 1, offset)) == rest  # grew: one byte more
        if offset is None:
            os.lseek(fd, 0, os.SEEK_SET)
        assert len(read_expected(fd, rest + 3, offset)) == rest  # shrank: what is there
    finally:
        os.close(fd)


def test_fd_reader_fills_from_a_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * 10)
    fd = os.open(path, os.O_RDONLY)
    try:
        view = memoryview(bytearray(3000))
        assert fill(FdReader(fd), view) == 2560 and view[:2560] == bytes(range(256)) * 10
    finally:
        os.close(fd)


#: The only modules that loop over raw reads: the helper, and unpack.py (stdlib-only, it
#: ships alone and cannot import it; it says so).
OWN_LOOPS = {"integrity/reads.py", "release/unpack.py"}
_RAW_READS = {"read", "pread", "readv", "readinto"}


def _raw_read_calls(loop: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = node.func.attr
            if name in {"read", "pread", "readv"} and isinstance(owner, ast.Name):
                if owner.id == "os":
                    found.append(f"os.{name}")
            elif name == "readinto":
                found.append(".readinto")
    return found


def test_every_bounded_read_loop_of_the_library_is_the_one_helper() -> None:
    loops = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in OWN_LOOPS:
            continue
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.While | ast.For):
                calls = _raw_read_calls(node)
                if calls:
                    loops.append(f"{rel}:{node.lineno}: a loop over {', '.join(calls)}")
    assert loops == [], "use dataset_devkit.integrity.reads (fill, read_exactly, read_expected)"
    unpack = (SRC / "release" / "unpack.py").read_text("utf-8")
    assert "dataset_devkit.integrity.reads" in unpack  # it says why it keeps its own
