"""Staging-dataroot validation: every rule reports a precise issue, all issues at once."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.dataroot import DatarootInvalid, validate_dataroot
from tests.nuscenes.dataroot_fixture import (
    Fixture,
    jpeg_bytes,
    read_extension,
    read_table,
    rewrite_extension,
    rewrite_table,
    write_dataroot,
)


@pytest.fixture
def fx(tmp_path: Path) -> Fixture:
    return write_dataroot(tmp_path / "root")


def issues_of(root: Path) -> list[str]:
    return list(validate_dataroot(root, state="staging").issues)


def edit(root: Path, table: str, change: Callable[[list[dict[str, Any]]], None]) -> None:
    rows = read_table(root, table)
    change(rows)
    rewrite_table(root, table, rows)


def assert_issue(root: Path, *fragments: str) -> list[str]:
    issues = issues_of(root)
    for fragment in fragments:
        assert any(fragment in issue for issue in issues), (fragment, issues)
    return issues


def test_a_valid_staging_dataroot_has_no_issue(fx: Fixture) -> None:
    report = validate_dataroot(fx.root, state="staging")
    assert report.ok and report.issues == ()
    report.raise_for_issues()


def test_an_unsupported_or_unsafe_version_is_a_config_error(fx: Fixture) -> None:
    with pytest.raises(ConfigError, match="unsupported dataset version"):
        validate_dataroot(fx.root, "v1.0-mini", state="staging")
    with pytest.raises(ConfigError, match="unsafe dataset version"):
        validate_dataroot(fx.root, "../v1.0-trainval", state="staging")


def test_a_duplicate_token_is_reported(fx: Fixture) -> None:
    edit(fx.root, "ego_pose", lambda rows: rows.append(dict(rows[0])))
    assert_issue(fx.root, "ego_pose.json at $[", "duplicate token")


def test_a_dangling_foreign_key_names_table_row_and_field(fx: Fixture) -> None:
    bad = "f" * 32

    def change(rows: list[dict[str, Any]]) -> None:
        rows[0]["ego_pose_token"] = bad

    edit(fx.root, "sample_data", change)
    token = fx.tables["sample_data"][0]["token"]
    assert_issue(fx.root, f"sample_data.json row {token}.ego_pose_token: token {bad} not found")


def test_every_issue_is_reported_in_one_run(fx: Fixture) -> None:
    edit(fx.root, "log", lambda rows: rows[0].update(vehicle=3))
    edit(fx.root, "sensor", lambda rows: rows[0].update(modality="lidar"))
    issues = assert_issue(fx.root, "log.json at $[0].vehicle: expected a string", "modality")
    assert issues == sorted(issues)


def test_an_asymmetric_sample_chain_is_reported(fx: Fixture) -> None:
    edit(fx.root, "sample", lambda rows: rows[1].update(prev=rows[2]["token"]))
    assert_issue(fx.root, "chain is not symmetric")


def test_a_sample_chain_cycle_is_reported(fx: Fixture) -> None:
    edit(fx.root, "sample", lambda rows: rows[2].update(next=rows[0]["token"]))
    assert_issue(fx.root, "sample chain has a cycle")


def test_a_wrong_scene_sample_count_and_endpoint_are_reported(fx: Fixture) -> None:
    edit(fx.root, "scene", lambda rows: rows[0].update(nbr_samples=7))
    assert_issue(fx.root, ".nbr_samples: is 7, the chain has 3 samples")
    edit(
        fx.root,
        "scene",
        lambda rows: rows[0].update(last_sample_token=rows[1]["first_sample_token"]),
    )
    assert_issue(fx.root, ".last_sample_token: chain ends at")


def test_non_increasing_sample_timestamps_are_reported(fx: Fixture) -> None:
    edit(fx.root, "sample", lambda rows: rows[1].update(timestamp=rows[0]["timestamp"]))
    assert_issue(fx.root, "does not increase strictly")


def test_a_broken_camera_chain_is_reported(fx: Fixture) -> None:
    def change(rows: list[dict[str, Any]]) -> None:
        rows[1]["prev"] = ""
        rows[0]["next"] = ""

    edit(fx.root, "sample_data", change)
    assert_issue(fx.root, "chain heads, expected 1")


def test_missing_camera_coverage_is_reported(fx: Fixture) -> None:
    edit(fx.root, "sample_data", lambda rows: rows[0].update(is_key_frame=False))
    # The issue names the scene and its recording, not only the sample token.
    assert_issue(fx.root, "expected exactly one CAM_FRONT key frame, found 0 (scene mz-")
    assert any(", recording " in i for i in issues_of(fx.root) if "CAM_FRONT key frame" in i)


def test_missing_corrupt_and_resized_jpegs_are_reported(fx: Fixture) -> None:
    sds = fx.tables["sample_data"]
    (fx.root / sds[0]["filename"]).unlink()
    data = (fx.root / sds[1]["filename"]).read_bytes()
    (fx.root / sds[1]["filename"]).write_bytes(data[: len(data) // 2])
    (fx.root / sds[2]["filename"]).write_bytes(jpeg_bytes(32, 8))
    (fx.root / sds[3]["filename"]).write_bytes(b"\x89PNG not a jpeg")
    assert_issue(
        fx.root,
        f"{sds[0]['filename']} cannot be read (",
        f"image {sds[1]['filename']}: JPEG does not decode",
        f"image {sds[2]['filename']} is 32x8, the row says 16x8",
        "not a JPEG stream",
    )


def test_an_unreferenced_image_file_is_reported(fx: Fixture) -> None:
    (fx.root / "samples" / "CAM_FRONT" / "stray.jpg").write_bytes(jpeg_bytes(16, 8))
    assert_issue(fx.root, "samples/CAM_FRONT/stray.jpg: image file is not referenced")


def test_a_symlinked_image_or_table_is_refused(fx: Fixture) -> None:
    target = fx.root / fx.tables["sample_data"][0]["filename"]
    target.rename(fx.root / "elsewhere.jpg")
    os.symlink(fx.root / "elsewhere.jpg", target)
    table = fx.root / spec.VERSION / "log.json"
    table.rename(fx.root / "log.json")
    os.symlink(fx.root / "log.json", table)
    assert_issue(
        fx.root, "symlink", "log.json: cannot read table", "elsewhere.jpg: unexpected file"
    )


def test_non_finite_values_and_unnormalized_quaternions_are_reported(fx: Fixture) -> None:
    path = fx.root / spec.VERSION / "ego_pose.json"
    text = path.read_text().replace("0.0", "1e999", 1)
    path.unlink()
    path.write_text(text)
    path = fx.root / spec.VERSION / "log.json"
    text = path.read_text().replace('"rec-0"', "NaN", 1)
    path.unlink()
    path.write_text(text)
    edit(fx.root, "calibrated_sensor", lambda rows: rows[0].update(rotation=[0.9, 0, 0, 0]))
    assert_issue(
        fx.root,
        "ego_pose.json: malformed JSON (Number out of range",
        "log.json: malformed JSON",
        "rotation: quaternion is not normalized",
    )


def test_malformed_json_and_unknown_fields_are_reported(fx: Fixture) -> None:
    path = fx.root / spec.VERSION / "scene.json"
    path.write_text("[{")
    edit(fx.root, "log", lambda rows: rows[0].update(extra=1))
    assert_issue(fx.root, "scene.json: malformed JSON", "unknown fields ['extra']")


def test_the_map_must_be_the_one_scaffold_linked_to_every_log(fx: Fixture) -> None:
    edit(fx.root, "map", lambda rows: rows[0].update(log_tokens=[], category="semantic"))
    assert_issue(fx.root, "must list every log exactly once", "expected 'compatibility_scaffold'")


def test_an_empty_selection_cannot_validate(tmp_path: Path) -> None:
    fx = write_dataroot(tmp_path / "root")
    for table in ("scene", "sample", "sample_data", "ego_pose"):
        rewrite_table(fx.root, table, [])
    assert_issue(fx.root, "no scene is selected; an empty dataset cannot publish")


def test_extra_tables_and_lidar_tables_are_refused(fx: Fixture) -> None:
    (fx.root / spec.VERSION / "lidarseg.json").write_text("[]")
    assert_issue(fx.root, "lidarseg.json: must not exist")


def test_object_tables_must_stay_empty(fx: Fixture) -> None:
    rows = [{"token": "a" * 32, "name": "car", "description": ""}]
    rewrite_table(fx.root, "category", rows)
    assert_issue(fx.root, "category.json: expected an empty array")


def test_extension_references_must_resolve(fx: Fixture) -> None:
    doc = read_extension(fx.root, spec.TAGS_FILE)
    doc["tags"][0]["scene_token"] = "0" * 32
    rewrite_extension(fx.root, spec.TAGS_FILE, doc)
    assert_issue(fx.root, "tags.json: scene 000", "has no scene entry")


def test_the_split_must_be_full_and_disjoint(fx: Fixture) -> None:
    doc = read_extension(fx.root, spec.SPLIT_FILE)
    doc["assignments"][1]["group_id"] = doc["assignments"][0]["group_id"]
    doc["assignments"].append(dict(doc["assignments"][0]))
    rewrite_extension(fx.root, spec.SPLIT_FILE, doc)
    assert_issue(fx.root, "straddles train and test", "is listed twice")


def test_gnss_rows_must_match_their_ego_pose_and_be_whole_metres(fx: Fixture) -> None:
    doc = read_extension(fx.root, spec.GNSS_FILE)
    doc["rows"][0]["translation_xyz_m"] = [9.0, 9.0, 9.0]
    rewrite_extension(fx.root, spec.GNSS_FILE, doc)
    assert_issue(fx.root, "translation_xyz_m: [9.0, 9.0, 9.0] differs from ego_pose.translation")
    doc["rows"][0]["published_east_m"] = 1000.5
    rewrite_extension(fx.root, spec.GNSS_FILE, doc)
    assert_issue(fx.root, "gnss.json: does not match GnssDocument", "published_east_m")


def test_a_source_outside_the_fixed_contract_is_refused(fx: Fixture) -> None:
    doc = read_extension(fx.root, spec.SOURCE_FILE)
    doc["privacy"] = "restricted_raw"
    rewrite_extension(fx.root, spec.SOURCE_FILE, doc)
    assert_issue(fx.root, "is outside the fixed contract")


def test_a_staging_root_must_not_claim_success(fx: Fixture) -> None:
    doc = read_extension(fx.root, spec.VALIDATION_FILE)
    doc["state"] = "passed"
    rewrite_extension(fx.root, spec.VALIDATION_FILE, doc)
    assert_issue(fx.root, "validation.json: expected")


def test_the_config_fingerprint_must_match_the_config(fx: Fixture) -> None:
    doc = read_extension(fx.root, spec.CONFIG_FILE)
    doc["config"]["split"]["test_fraction"] = 0.5
    rewrite_extension(fx.root, spec.CONFIG_FILE, doc)
    assert_issue(fx.root, "config.json at $.config_fingerprint", "differ from config")


def test_the_chronology_must_account_for_every_scene(fx: Fixture) -> None:
    doc = read_extension(fx.root, spec.PIPELINE_AUDIT_FILE)
    doc["chronology"][0]["entries"][1].update(selected=False, reason="")
    rewrite_extension(fx.root, spec.PIPELINE_AUDIT_FILE, doc)
    assert_issue(fx.root, "an unselected window needs a reason", "has no chronology entry")


def test_raise_for_issues_lists_every_issue(fx: Fixture) -> None:
    edit(fx.root, "log", lambda rows: rows[0].update(vehicle=3))
    report = validate_dataroot(fx.root, state="staging")
    with pytest.raises(DatarootInvalid) as info:
        report.raise_for_issues()
    assert info.value.issues == list(report.issues)
    assert "vehicle" in str(info.value)


def test_validity_sample_times_must_match_the_chain(fx: Fixture) -> None:
    doc = read_extension(fx.root, spec.VALIDITY_FILE)
    doc["scenes"][0]["sample_timestamps_ns"][1] += 5_000
    rewrite_extension(fx.root, spec.VALIDITY_FILE, doc)
    assert_issue(fx.root, "validity.json at $.scenes[0].sample_timestamps_ns")


def test_a_number_too_large_for_a_float_is_an_issue_not_a_crash(fx: Fixture) -> None:
    path = fx.root / spec.VERSION / "ego_pose.json"
    text = path.read_text().replace("0.0", "9" * 400, 1)
    path.unlink()
    path.write_text(text)
    assert_issue(fx.root, "ego_pose.json at $[0].", "finite numbers")


def test_an_empty_dataroot_name_is_a_config_error_not_the_working_directory() -> None:
    with pytest.raises(ConfigError, match="dataroot must be a non-empty str or Path"):
        validate_dataroot("")
