"""unpack.py creates each file at its final name with ``O_CREAT | O_EXCL``: a name that
exists, whenever it appeared, is never opened for writing, replaced or removed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dataset_devkit.release import unpack
from tests.release.helpers import SAMPLE, make_tree, pack, read_tree

TIERS = ("dir_fd", "paths")


@pytest.fixture(params=TIERS)
def tier(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Directories pinned by descriptor (POSIX), or checked paths (the Windows fallback)."""
    name: str = request.param
    if name == "paths":
        monkeypatch.setattr(unpack, "_DIR_FD", False)
    yield name


@pytest.mark.parametrize("theirs", [b"their README\n", SAMPLE["README.md"]])
def test_a_file_created_after_the_existence_check_is_kept(
    tier: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, theirs: bytes
) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", restore_test="none")
    data = tmp_path / "data"
    real = unpack.PinnedDir.open_new
    raced = []

    def concurrent_writer(self: unpack.PinnedDir, name: str, mode: int = 0o644) -> int:
        # Another process creates the final name after unpack.py's look at the output:
        # the last moment before this run creates it.
        if name == "README.md":
            (Path(self.path) / name).write_bytes(theirs)
            raced.append(name)
        return real(self, name, mode)

    monkeypatch.setattr(unpack.PinnedDir, "open_new", concurrent_writer)
    if theirs == SAMPLE["README.md"]:  # the very bytes of the release: verified, skipped
        summary = unpack.unpack_release(str(release), str(data), everything=True)
        assert summary.skipped == 1
        assert read_tree(data / "ds") == SAMPLE
        return
    with pytest.raises(unpack.UnpackError, match=r"README.md: appeared while restoring.*kept"):
        unpack.unpack_release(str(release), str(data), everything=True)
    assert raced
    restored = read_tree(data / "ds")
    assert restored.pop("README.md") == theirs
    assert restored == {p: b for p, b in SAMPLE.items() if p != "README.md"}
    assert not (data / "ds.unpack-state.json").exists()
    # The journal remembers the file as someone else's: a re-run keeps it too.
    monkeypatch.setattr(unpack.PinnedDir, "open_new", real)
    with pytest.raises(unpack.UnpackError, match=r"README.md: .*kept"):
        unpack.unpack_release(str(release), str(data), everything=True)
    assert (data / "ds" / "README.md").read_bytes() == theirs


def test_the_final_name_is_opened_exclusively(tier: str, tmp_path: Path) -> None:
    (tmp_path / "final").write_bytes(b"theirs")
    folder = unpack.PinnedDir.open_root(str(tmp_path), create=False)
    try:
        with pytest.raises(FileExistsError):
            folder.open_new("final")
    finally:
        folder.close()
    assert (tmp_path / "final").read_bytes() == b"theirs"
