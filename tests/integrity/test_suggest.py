"""Near misses of a typed name: the one "did you mean" wording of every error message."""

from __future__ import annotations

from dataset_devkit.integrity import close_matches, did_you_mean


def test_a_near_miss_is_suggested_with_the_list_of_what_exists() -> None:
    text = did_you_mean("CAM_FRNT", ["CAM_BACK", "CAM_FRONT", "CAM_FRONT_LEFT"], known="channels")
    assert text.startswith("; did you mean 'CAM_FRONT'")
    assert text.endswith("(channels: CAM_BACK, CAM_FRONT, CAM_FRONT_LEFT)")


def test_a_name_differing_only_in_case_is_the_first_suggestion() -> None:
    assert close_matches("cam_front", ["CAM_BACK", "CAM_FRONT"])[0] == "CAM_FRONT"


def test_without_a_near_miss_only_the_known_names_are_listed() -> None:
    assert did_you_mean("zzz", ["alpha", "beta"], known="topics") == "; topics: alpha, beta"
    assert did_you_mean("zzz", [], known="topics") == "; topics: none"


def test_a_long_list_is_cut_and_counted() -> None:
    text = did_you_mean("x", [f"/topic{i:02d}" for i in range(20)], known="topics")
    assert "... (8 more)" in text
