"""Publication and revalidation of a published dataroot, including tamper tests."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dataset_devkit.errors import DestinationExistsError, MissingDependencyError, UnsafePathError
from dataset_devkit.integrity import new_staging_dir
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.build.publish import final_dataroot, publish_dataroot
from dataset_devkit.nuscenes.validation.dataroot import DatarootInvalid, validate_dataroot
from dataset_devkit.nuscenes.validation.loader import check_official_loader
from dataset_devkit.nuscenes.validation.summary import inspect_dataroot
from tests.cli_run import run_devkit
from tests.nuscenes.dataroot_fixture import (
    Fixture,
    jpeg_bytes,
    publish_fixture,
    read_extension,
    read_table,
    rewrite_table,
    writable_copy,
    write_dataroot,
)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Fixture]:
    return publish_fixture(tmp_path_factory.mktemp("pub"))


@pytest.fixture
def copy(published: tuple[Path, Fixture], tmp_path: Path) -> Path:
    return writable_copy(published[0], tmp_path / "copy")


def issues_of(root: Path) -> list[str]:
    return list(validate_dataroot(root).issues)


def test_a_published_dataroot_is_read_only_and_revalidates(published: tuple[Path, Fixture]) -> None:
    final, _ = published
    report = validate_dataroot(final)
    assert report.ok, report.issues
    assert report.root_sha256 is not None and len(report.root_sha256) == 64
    assert stat.S_IMODE(final.stat().st_mode) == 0o500
    assert stat.S_IMODE((final / spec.VERSION / "scene.json").stat().st_mode) == 0o400
    doc = read_extension(final, spec.VALIDATION_FILE)
    assert doc["state"] == "passed" and all(check["passed"] for check in doc["checks"])
    assert doc["loader_scene_token"] == read_table(final, "scene")[0]["token"]
    assert not [p for p in final.parent.iterdir() if ".staging-" in p.name]


@pytest.mark.needs("nuscenes")
def test_the_same_inputs_publish_the_same_root_hash(tmp_path: Path) -> None:
    first, _ = publish_fixture(tmp_path / "a")
    second, _ = publish_fixture(tmp_path / "b")
    assert (first / spec.CONTENT_MANIFEST_PATH).read_bytes() == (
        second / spec.CONTENT_MANIFEST_PATH
    ).read_bytes()
    assert validate_dataroot(first).root_sha256 == validate_dataroot(second).root_sha256


def test_a_changed_image_byte_is_caught(copy: Path, published: tuple[Path, Fixture]) -> None:
    image = copy / published[1].tables["sample_data"][0]["filename"]
    data = bytearray(image.read_bytes())
    data[-3] ^= 0xFF
    image.write_bytes(bytes(data))
    rel = published[1].tables["sample_data"][0]["filename"]
    assert any(f"content manifest: {rel}" in i and "sha256" in i for i in issues_of(copy))


def test_an_added_file_is_caught(copy: Path) -> None:
    (copy / "samples" / "CAM_FRONT" / "extra.jpg").write_bytes(b"x")
    issues = issues_of(copy)
    assert any("samples/CAM_FRONT/extra.jpg" in i and "content manifest" in i for i in issues)
    assert any("extra.jpg: image file is not referenced" in i for i in issues)


def test_a_removed_table_row_is_caught(copy: Path) -> None:
    rows = read_table(copy, "ego_pose")
    rewrite_table(copy, "ego_pose", rows[1:])
    issues = issues_of(copy)
    assert any("content manifest: v1.0-trainval/ego_pose.json" in i for i in issues)
    assert any(f"token {rows[0]['token']} not found in ego_pose" in i for i in issues)


def test_a_broken_chain_is_caught(copy: Path) -> None:
    rows = read_table(copy, "sample")
    rows[0]["next"] = ""
    rewrite_table(copy, "sample", rows)
    assert any("chain is not symmetric" in i for i in issues_of(copy))


def test_a_symlink_is_caught(copy: Path) -> None:
    table = copy / spec.VERSION / "log.json"
    real = copy / "log.json"
    table.rename(real)
    os.symlink(real, table)
    issues = issues_of(copy)
    assert any("v1.0-trainval/log.json" in i and "symlink" in i for i in issues)


def test_a_hard_link_is_caught(copy: Path) -> None:
    os.link(copy / spec.VERSION / "log.json", copy / "maps" / "hard.json")
    issues = issues_of(copy)
    assert any("log.json" in i and "link" in i for i in issues)


def test_inspect_refuses_to_summarize_tampered_content(copy: Path) -> None:
    (copy / "mz_extensions" / "note.txt").write_text("hi")
    with pytest.raises(DatarootInvalid, match=r"not a valid v1\.0-trainval dataroot"):
        inspect_dataroot(copy)


def test_inspect_summarizes_a_published_dataroot(published: tuple[Path, Fixture]) -> None:
    summary = inspect_dataroot(published[0]).to_json()
    assert summary["tables"]["sample_data"] == 12
    assert summary["channels"] == ["CAM_BACK", "CAM_FRONT"]
    assert summary["scenes"] == {"total": 2, "train": 1, "test": 1}
    assert (summary["source_type"], summary["privacy"], summary["pose_frame"]) == (
        "decoded_hf",
        "privacy_transformed",
        "recording_local_enu_v1",
    )
    assert summary["validation_state"] == "passed"
    assert summary["content_manifest"] == "mz_extensions/content_manifest.json"
    assert (published[0] / summary["content_manifest"]).is_file()
    assert summary == inspect_dataroot(published[0]).to_json()


def test_an_existing_destination_is_never_replaced(published: tuple[Path, Fixture]) -> None:
    final, _ = published
    staging = new_staging_dir(final.parent / "other")
    write_dataroot(staging)
    with pytest.raises(DestinationExistsError):
        publish_dataroot(staging, final)
    assert validate_dataroot(final).ok


def test_a_symlinked_output_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePathError, match="symlink"):
        publish_dataroot(tmp_path / "real" / "x", final_dataroot(tmp_path / "link"))


def test_an_invalid_staging_root_is_not_published(tmp_path: Path) -> None:
    final = tmp_path / spec.VERSION
    staging = new_staging_dir(final)
    write_dataroot(staging)
    rewrite_table(staging, "scene", [])
    with pytest.raises(DatarootInvalid, match="issue"):
        publish_dataroot(staging, final)
    assert not final.exists()
    assert read_extension(staging, spec.VALIDATION_FILE)["state"] == "not_run"


def test_a_missing_official_loader_is_an_error_never_a_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "nuscenes.nuscenes", None)
    final = tmp_path / spec.VERSION
    staging = new_staging_dir(final)
    write_dataroot(staging)
    with pytest.raises(MissingDependencyError, match=r"dataset-devkit\[nuscenes\]"):
        check_official_loader(staging, spec.VERSION, "0" * 32)
    with pytest.raises(MissingDependencyError):
        publish_dataroot(staging, final)
    assert not final.exists()


@pytest.mark.needs("nuscenes")
@pytest.mark.parametrize("phase", ["validated", "manifest-written", "sealed", "rechecked"])
def test_a_killed_build_leaves_no_final_dataroot(
    tmp_path: Path, phase: str, package_env: dict[str, str]
) -> None:
    final = tmp_path / spec.VERSION
    staging = new_staging_dir(final)
    write_dataroot(staging)
    script = textwrap.dedent(
        f"""
        import os, signal
        from dataset_devkit.nuscenes.build.publish import publish_dataroot
        def on_phase(name):
            if name == {phase!r}:
                os.kill(os.getpid(), signal.SIGKILL)
        publish_dataroot({str(staging)!r}, {str(final)!r}, on_phase=on_phase)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], env=package_env, check=False)
    assert proc.returncode == -9
    assert not final.exists()


def test_an_image_swapped_after_the_manifest_check_is_caught(
    copy: Path, published: tuple[Path, Fixture], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.integrity import verify_tree as real_verify
    from dataset_devkit.nuscenes.validation import dataroot as validation

    rel = published[1].tables["sample_data"][0]["filename"]

    def verify_then_swap(root: Path, **_: object) -> object:
        report = real_verify(root)
        image = copy / rel
        replacement = jpeg_bytes(16, 8, shade=10)
        image.unlink()
        image.write_bytes(replacement)
        return report

    monkeypatch.setattr(validation, "verify_tree", verify_then_swap)
    issues = list(validate_dataroot(copy).issues)
    assert any(f"image {rel} changed after the content manifest was verified" in i for i in issues)


@pytest.mark.needs("nuscenes")
def test_a_dataroot_changed_right_after_the_rename_is_moved_out_of_the_final_name(
    tmp_path: Path,
) -> None:
    # Seed: "If the post-rename check fails, the publisher moves the same identity-bound
    # tree out of the final name." Tamper with an image between the rename and that check.
    from dataset_devkit.errors import PublicationError

    final = tmp_path / spec.VERSION
    staging = new_staging_dir(final)
    write_dataroot(staging)

    def on_phase(name: str) -> None:
        if name == "renamed":
            image = next((final / spec.SAMPLES_DIR).rglob("*.jpg"))
            image.chmod(0o600)
            with image.open("ab") as f:
                f.write(b"\0")

    with pytest.raises(PublicationError, match="moved out to"):
        publish_dataroot(staging, final, on_phase=on_phase)
    assert not final.exists()
    (rejected,) = tmp_path.glob(f".{spec.VERSION}.rejected-*")
    # The same tree, moved whole: its tables, its extensions and the tampered image.
    assert (rejected / spec.VERSION / "sample_data.json").is_file()
    assert (rejected / spec.EXTENSIONS_DIR / spec.VALIDATION_FILE).is_file()
    assert (rejected / spec.CONTENT_MANIFEST_PATH).is_file()


def test_the_content_manifest_lives_in_mz_extensions_and_names_itself(
    published: tuple[Path, Fixture],
) -> None:
    final, _ = published
    assert spec.CONTENT_MANIFEST_PATH == "mz_extensions/content_manifest.json"
    assert not (final / "content_manifest.json").exists()
    document = json.loads((final / spec.CONTENT_MANIFEST_PATH).read_text("utf-8"))
    assert document["excluded"] == [spec.CONTENT_MANIFEST_PATH]
    paths = [entry["path"] for entry in document["files"]]
    assert paths == sorted(paths)
    assert spec.CONTENT_MANIFEST_PATH not in paths
    assert f"{spec.EXTENSIONS_DIR}/{spec.VALIDATION_FILE}" in paths
    assert validate_dataroot(final).root_sha256 == document["root_sha256"]


def test_a_manifest_moved_to_the_top_of_the_dataroot_is_refused_naming_both_paths(
    copy: Path,
) -> None:
    shutil.move(copy / spec.CONTENT_MANIFEST_PATH, copy / "content_manifest.json")
    issues = issues_of(copy)
    assert (
        "content_manifest.json: unexpected file at the top of the dataroot (the content "
        "manifest belongs at mz_extensions/content_manifest.json)"
    ) in issues
    assert (
        "content manifest: mz_extensions/content_manifest.json: missing: no content manifest"
    ) in issues


def test_a_root_level_manifest_copy_beside_the_real_one_is_an_extra_file(copy: Path) -> None:
    shutil.copy(copy / spec.CONTENT_MANIFEST_PATH, copy / "content_manifest.json")
    issues = issues_of(copy)
    assert any(i.startswith("content manifest: content_manifest.json: extra") for i in issues)
    assert any(i.startswith("content_manifest.json: unexpected file at the top") for i in issues)


def test_a_manifest_in_a_staging_or_finalized_dataroot_is_unexpected(tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    write_dataroot(staging)
    (staging / spec.CONTENT_MANIFEST_PATH).write_text("{}")
    issues = validate_dataroot(staging, state="staging").issues
    assert any(
        i.startswith("mz_extensions/content_manifest.json: unexpected file: the content manifest")
        for i in issues
    )


def test_the_cli_verify_command_finds_the_dataroot_manifest(
    published: tuple[Path, Fixture], package_env: dict[str, str]
) -> None:
    done = run_devkit(package_env, "verify", "--json", str(published[0]))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True
    assert report["manifest_location"] == spec.CONTENT_MANIFEST_PATH
    assert report["root_sha256"] == validate_dataroot(published[0]).root_sha256


def test_the_official_loader_and_the_sdk_open_the_published_dataroot(
    published: tuple[Path, Fixture],
) -> None:
    from nuscenes.nuscenes import NuScenes

    from dataset_devkit.nuscenes.sdk.dataset import Dataset

    final, fixture = published
    with contextlib.redirect_stdout(io.StringIO()):
        nusc = NuScenes(version=spec.VERSION, dataroot=str(final), verbose=False)
    ds = Dataset(final)
    assert len(nusc.sample_data) == len(ds.table("sample_data"))
    assert len(nusc.sample_data) == len(fixture.tables["sample_data"])


@pytest.mark.needs("nuscenes")
def test_a_dataroot_published_for_the_group_is_group_readable(tmp_path: Path) -> None:
    final = tmp_path / spec.VERSION
    staging = new_staging_dir(final)
    write_dataroot(staging)
    publish_dataroot(staging, final, readable_by="group")
    assert stat.S_IMODE(final.stat().st_mode) == 0o550
    assert stat.S_IMODE((final / spec.VERSION / "scene.json").stat().st_mode) == 0o440
    assert validate_dataroot(final).ok
