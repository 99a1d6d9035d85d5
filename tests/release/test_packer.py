"""Packing: families, exact package limits, deterministic bytes, identity, refusals."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from dataset_devkit.errors import ConfigError, VerificationFailed
from dataset_devkit.integrity import verify_tree, write_manifest
from dataset_devkit.release import (
    PackageLimitError,
    ReleaseExistsError,
    SnapshotMismatchError,
    UnsafeTreeError,
    unpack,
)
from tests.release.helpers import SAMPLE, make_tree, pack, read_tree

DEPTH = "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/"


def test_round_trip_restores_every_byte_across_many_packages(tmp_path: Path) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", package_limit=6144)
    manifest = json.loads((release / "manifest.json").read_text())
    assert len(manifest["packages"]) >= 4
    for pkg in manifest["packages"]:
        assert (release / pkg["name"]).stat().st_size == pkg["size"] <= 6144
    unpack.unpack_release(str(release), str(tmp_path / "data"), everything=True)
    assert read_tree(tmp_path / "data" / "ds") == SAMPLE


def test_fifty_megabyte_file_round_trips_among_several_packages(tmp_path: Path) -> None:
    files = dict(SAMPLE)
    files["videos/big.mp4"] = os.urandom(50_000_000)
    files.update({f"videos/part{i}.bin": bytes([i]) * 3_000_000 for i in range(4)})
    release = pack(make_tree(tmp_path / "ds", files), tmp_path / "rel", package_limit=52_000_000)
    names = [p["name"] for p in json.loads((release / "manifest.json").read_text())["packages"]]
    assert len([n for n in names if n.startswith("base/")]) >= 2
    unpack.unpack_release(str(release), str(tmp_path / "data"), everything=True)
    assert read_tree(tmp_path / "data" / "ds") == files


def test_same_tree_gives_byte_identical_releases(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds")
    first = read_tree(pack(tree, tmp_path / "one"))
    os.utime(tree / "README.md", (1, 1))
    second = read_tree(pack(tree, tmp_path / "two"))
    assert first == second


def test_tar_headers_are_normalized_and_members_sorted(tmp_path: Path) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", package_limit=1 << 20)
    with tarfile.open(release / "base" / "base-0001.tar") as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names) and all(n.startswith("ds/") for n in names)
    for member in members:
        assert member.isreg()
        assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (
            0,
            0,
            0,
            "",
            "",
        )
        assert member.mode == 0o644
    long_name = next(m for m in members if len(m.name) > 100)
    assert long_name.pax_headers == {"path": long_name.name}
    assert all(m.pax_headers == {} for m in members if m.name.isascii() and len(m.name) < 100)


def test_depth_rule_splits_families_without_overlap_and_keeps_dotfiles(tmp_path: Path) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel")
    rows = [json.loads(line) for line in (release / "files.jsonl").read_text().splitlines()]
    depth = {r["path"] for r in rows if r["family"] == "depth"}
    assert depth == {p for p in SAMPLE if p.startswith(DEPTH)}
    assert {r["path"] for r in rows} == set(SAMPLE)
    assert DEPTH + "group.zarr/.zgroup" in depth
    assert all(r["package"].startswith(r["family"] + "/") for r in rows)


def test_tree_with_content_manifest_is_verified_and_its_root_recorded(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds")
    content = write_manifest(tree)
    release = pack(tree, tmp_path / "rel")
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["snapshot"]["root_sha256"] == content.root_sha256
    assert manifest["snapshot"]["source"] == "content_manifest"
    unpack.unpack_release(str(release), str(tmp_path / "data"), everything=True)
    report = verify_tree(tmp_path / "data" / "ds")
    assert report.ok and report.root_sha256 == content.root_sha256


def test_tree_that_differs_from_its_content_manifest_is_refused_and_nothing_left(
    tmp_path: Path,
) -> None:
    tree = make_tree(tmp_path / "ds")
    write_manifest(tree)
    (tree / "README.md").write_bytes(b"# SAMPLE\n")
    with pytest.raises(VerificationFailed, match=r"README.md: SHA-256"):
        pack(tree, tmp_path / "rel")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_links_and_special_files_in_the_tree_are_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds")
    (tree / "link").symlink_to(tree / "README.md")
    os.mkfifo(tree / "pipe")
    with pytest.raises(UnsafeTreeError) as info:
        pack(tree, tmp_path / "rel")
    assert "link: is a symbolic link" in str(info.value)
    assert "pipe: is a special file" in str(info.value)


def test_names_unsafe_on_windows_are_refused_when_packing(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", {"a/CON.txt": b"x", "a/Readme": b"1", "a/README": b"2"})
    with pytest.raises(UnsafeTreeError) as info:
        pack(tree, tmp_path / "rel")
    assert "reserved device name" in str(info.value)
    assert "collide on case-insensitive systems" in str(info.value)


def test_file_larger_than_a_package_is_an_error_never_a_split(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", {"big.bin": b"b" * 10_000, "small": b"s"})
    with pytest.raises(PackageLimitError, match=r"big.bin: 10000 bytes"):
        pack(tree, tmp_path / "rel", package_limit=8192)
    assert not (tmp_path / "rel").exists()


def test_existing_release_directory_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "rel").mkdir()
    with pytest.raises(ReleaseExistsError):
        pack(make_tree(tmp_path / "ds"), tmp_path / "rel")


def test_undelivered_family_is_listed_as_pending_not_delivered(tmp_path: Path) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", deliver=("base",))
    manifest = json.loads((release / "manifest.json").read_text())
    status = {f["name"]: f["status"] for f in manifest["families"]}
    assert status == {"base": "delivered", "depth": "pending"}
    assert {p["family"] for p in manifest["packages"]} == {"base"}
    assert not (release / "depth").exists()
    rows = [json.loads(line) for line in (release / "files.jsonl").read_text().splitlines()]
    assert all(r["package"] is None for r in rows if r["family"] == "depth")
    readme = (release / "README.md").read_text()
    assert "not delivered in this release (pending)" in readme
    validation = json.loads((release / "validation.json").read_text())
    assert any("family depth is pending" in n for n in validation["not_verified"])


def test_family_published_later_carries_the_earlier_packages_for_the_same_snapshot(
    tmp_path: Path,
) -> None:
    tree = make_tree(tmp_path / "ds")
    first = pack(tree, tmp_path / "rel1", deliver=("base",))
    second = pack(tree, tmp_path / "rel2", deliver=("depth",), previous=first)
    one = json.loads((first / "manifest.json").read_text())
    two = json.loads((second / "manifest.json").read_text())
    assert one["snapshot"] == two["snapshot"]
    assert [p for p in two["packages"] if p["family"] == "base"] == one["packages"]
    assert {f["status"] for f in two["families"]} == {"delivered"}
    assert not (second / "base").exists()
    validation = json.loads((second / "validation.json").read_text())
    checked_by = {c["name"]: c["checked_by"] for c in validation["packages"]}
    assert checked_by["base/base-0001.tar"] == "an earlier release of the same snapshot"


def test_later_family_from_a_different_snapshot_is_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds")
    first = pack(tree, tmp_path / "rel1", deliver=("base",))
    (tree / DEPTH / "meta.json").write_bytes(b'{"scale": 1001}\n')
    with pytest.raises(SnapshotMismatchError, match="never mixed"):
        pack(tree, tmp_path / "rel2", deliver=("depth",), previous=first)


def test_delivering_an_unknown_family_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot deliver"):
        pack(make_tree(tmp_path / "ds"), tmp_path / "rel", deliver=("stereo",))


def test_sha256sums_is_accepted_by_sha256sum_check(tmp_path: Path) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel")
    result = subprocess.run(
        ["sha256sum", "-c", "SHA256SUMS"], cwd=release, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    listed = {line.split("  ", 1)[1] for line in (release / "SHA256SUMS").read_text().splitlines()}
    expected = {"README.md", "files.jsonl", "manifest.json", "unpack.py", "validation.json"}
    assert expected <= listed and any(name.endswith(".tar") for name in listed)


def test_validation_report_claims_only_what_was_run(tmp_path: Path) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", restore_test="sample")
    validation = json.loads((release / "validation.json").read_text())
    assert all(c["read_back"] == "passed" for c in validation["packages"])
    assert validation["restore_test"]["mode"] == "sample"
    assert validation["restore_test"]["packages"] == ["base/base-0001.tar", "depth/depth-0001.tar"]
    assert validation["restore_test"]["restored_root_sha256"] is None
    assert any("native tar" in n for n in validation["not_verified"])
    assert any("sample packages" in n for n in validation["not_verified"])
    unread = pack(
        make_tree(tmp_path / "ds2"), tmp_path / "rel2", read_back=False, restore_test="none"
    )
    report = json.loads((unread / "validation.json").read_text())
    assert {c["read_back"] for c in report["packages"]} == {"not run"}
    assert "the packages were not read back after writing" in report["not_verified"]


def test_package_damaged_after_writing_fails_the_read_back_and_nothing_is_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.release import packer
    from dataset_devkit.release.errors import ReleaseVerificationError
    from dataset_devkit.release.tarwriter import TarPackageWriter

    class Flaky(TarPackageWriter):
        def __exit__(self, *exc: object) -> None:
            super().__exit__(*exc)  # type: ignore[arg-type]
            if self.path.name == "depth-0001.tar":
                with self.path.open("r+b") as fh:
                    fh.seek(1100)
                    byte = fh.read(1)
                    fh.seek(1100)
                    fh.write(bytes([byte[0] ^ 1]))

    monkeypatch.setattr(packer, "TarPackageWriter", Flaky)
    with pytest.raises(ReleaseVerificationError, match="read-back of the new packages failed"):
        pack(make_tree(tmp_path / "ds"), tmp_path / "rel")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_readme_states_the_disk_space_needed_per_family_and_in_total(tmp_path: Path) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", deliver=("base",))
    manifest = json.loads((release / "manifest.json").read_text())
    readme = (release / "README.md").read_text()
    base = next(f for f in manifest["families"] if f["name"] == "base")
    depth = next(f for f in manifest["families"] if f["name"] == "depth")
    packed = sum(p["size"] for p in manifest["packages"])
    assert f"- **base**: packages {packed:,} bytes" in readme
    assert f"restored files {base['total_bytes']:,} bytes" in readme
    assert f"- **depth** (pending): restored files {depth['total_bytes']:,} bytes" in readme
    total = packed + base["total_bytes"] + 2 * depth["total_bytes"]
    assert f"restoring every family needs about {total / 1000:.1f} kB" in readme  # not 0.0 GB
    assert "never opening an existing file" in readme and "--no-fsync" in readme


@pytest.mark.parametrize("read_back", [True, False])
def test_every_package_file_and_folder_is_fsynced_with_or_without_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_back: bool
) -> None:
    synced: set[int] = set()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.add(os.fstat(fd).st_ino)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", read_back=read_back)
    packages = sorted(release.glob("*/*.tar"))
    assert len(packages) > 2
    assert {p.stat().st_ino for p in packages} <= synced
    metadata = [p for p in release.iterdir() if p.is_file()]
    folders = [release, release / "base", release / "depth", tmp_path]
    assert {p.stat().st_ino for p in [*metadata, *folders]} <= synced


def test_package_truncated_after_writing_fails_validation_even_without_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.release import packer
    from dataset_devkit.release.errors import ReleaseVerificationError
    from dataset_devkit.release.tarwriter import TarPackageWriter

    class Truncating(TarPackageWriter):
        def __exit__(self, *exc: object) -> None:
            super().__exit__(*exc)  # type: ignore[arg-type]
            if self.path.name == "base-0001.tar":
                os.truncate(self.path, 512)

    monkeypatch.setattr(packer, "TarPackageWriter", Truncating)
    with pytest.raises(ReleaseVerificationError, match="metadata does not verify") as caught:
        pack(make_tree(tmp_path / "ds"), tmp_path / "rel", read_back=False, restore_test="none")
    assert "base/base-0001.tar has 512 bytes" in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
