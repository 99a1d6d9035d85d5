"""Verification reports every kind of difference, sorted, in one run."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from dataset_devkit.errors import VerificationFailed
from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, verify_tree, write_manifest
from dataset_devkit.integrity.progress import ProgressUpdate
from tests.integrity.helpers import make_tree


def _published(tmp_path: Path) -> Path:
    root = make_tree(tmp_path / "t")
    write_manifest(root)
    return root


def test_untouched_tree_verifies(tmp_path: Path) -> None:
    root = _published(tmp_path)
    report = verify_tree(root)
    assert report.ok
    assert report.actual_root_sha256 == report.root_sha256


def test_verify_reports_every_difference_sorted_in_one_run(tmp_path: Path) -> None:
    root = _published(tmp_path)
    (root / "a.txt").write_bytes(b"ALPHA\n")  # same size, other bytes
    (root / "b/d/e.json").write_bytes(b"{}")  # other size
    (root / "b/d/empty").unlink()
    (root / "new.bin").write_bytes(b"x")
    (root / "z/\u00fcnicode \u2603.txt").unlink()
    (root / "z/\u00fcnicode \u2603.txt").symlink_to("../a.txt")
    os.link(root / "b/c.bin", root / "b/c-hardlink.bin")
    os.mkfifo(root / "fifo")
    report = verify_tree(root)
    assert [str(issue).split(":")[0:2] for issue in report.details] == [
        ["a.txt", " changed"],
        ["b/c-hardlink.bin", " linked"],
        ["b/c.bin", " linked"],
        ["b/d/e.json", " changed"],
        ["b/d/empty", " missing"],
        ["fifo", " not-regular"],
        ["new.bin", " extra"],
        ["z/\u00fcnicode \u2603.txt", " linked"],
    ]
    assert "size 2, expected 9" in report.issues[3]
    assert "sha256" in report.issues[0]
    with pytest.raises(VerificationFailed) as caught:
        report.raise_for_issues()
    assert "8 issues" in str(caught.value)
    assert caught.value.issues == report.issues


def test_verify_rejects_a_socket(tmp_path: Path) -> None:
    root = _published(tmp_path)
    sock = socket.socket(socket.AF_UNIX)
    sock_path = root / "s"
    try:
        sock.bind(str(sock_path))
        report = verify_tree(root)
    finally:
        sock.close()
    assert [str(issue) for issue in report.details] == ["s: not-regular: is a socket"]


def test_verify_reports_a_missing_or_symlinked_manifest(tmp_path: Path) -> None:
    root = _published(tmp_path)
    manifest = root / CONTENT_MANIFEST_NAME
    data = manifest.read_bytes()
    manifest.unlink()
    assert verify_tree(root).issues == ["content_manifest.json: missing: no content manifest"]
    (tmp_path / "elsewhere.json").write_bytes(data)
    manifest.symlink_to(tmp_path / "elsewhere.json")
    assert verify_tree(root).issues == ["content_manifest.json: linked: is a symlink"]


def test_verify_reports_a_corrupt_manifest(tmp_path: Path) -> None:
    root = _published(tmp_path)
    (root / CONTENT_MANIFEST_NAME).chmod(0o644)
    (root / CONTENT_MANIFEST_NAME).write_text("{not json")
    (issue,) = verify_tree(root).details
    assert issue.kind == "manifest"
    assert "not valid JSON" in issue.detail


def test_a_file_rewritten_by_another_thread_while_hashed_is_reported_as_raced(
    tmp_path: Path,
) -> None:
    root = tmp_path / "t"
    root.mkdir()
    big = root / "big.bin"
    big.write_bytes(b"\x01" * (8 << 20))
    write_manifest(root)
    reading = threading.Event()
    rewritten = threading.Event()

    def rewrite_when_reading() -> None:
        reading.wait(timeout=30)
        with big.open("r+b") as handle:  # same inode, new bytes and size: a live writer
            handle.seek(0, os.SEEK_END)
            handle.write(b"appended while hashed")
        rewritten.set()

    writer = threading.Thread(target=rewrite_when_reading)
    writer.start()

    def progress(update: ProgressUpdate) -> None:
        if update.nbytes and not reading.is_set():  # mid-read, not the totals
            reading.set()
            rewritten.wait(timeout=30)

    report = verify_tree(root, progress=progress)
    writer.join()
    assert [(issue.path, issue.kind) for issue in report.details] == [("big.bin", "raced")]
    assert "changed while hashed" in report.details[0].detail


def test_a_file_replaced_by_another_process_while_hashed_is_reported_as_raced(
    tmp_path: Path,
) -> None:
    root = tmp_path / "t"
    root.mkdir()
    target = root / "big.bin"
    target.write_bytes(b"\x02" * (4 << 20))
    write_manifest(root)
    calls = 0

    def progress(update: ProgressUpdate) -> None:
        nonlocal calls
        calls += update.nbytes > 0  # blocks read, not the totals
        if calls == 1:  # mid-read: another process swaps the directory entry
            os.spawnlp(
                os.P_WAIT,
                "sh",
                "sh",
                "-c",
                f"cp '{target}' '{target}.new' && mv '{target}.new' '{target}'",
            )

    report = verify_tree(root, progress=progress)
    assert [(issue.path, issue.kind) for issue in report.details] == [("big.bin", "raced")]
    assert "replaced" in report.details[0].detail
