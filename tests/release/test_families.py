"""Family rules: first match wins, globs per component, ``**`` across components."""

from __future__ import annotations

import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.release import FamilyRules, parse_rule


def test_default_rule_sends_depth_directories_at_any_depth_to_depth() -> None:
    rules = FamilyRules()
    assert rules.family_of("a/b/depth-zstd-5-mm/group.zarr/.zgroup") == "depth"
    assert rules.family_of("depth-x/y") == "depth"
    assert rules.family_of("a/depth-x") == "base"  # a file, not a directory
    assert rules.family_of("a/xdepth-y/z") == "base"
    assert rules.declared == ("base", "depth")


def test_anchored_patterns_character_classes_and_first_match_wins() -> None:
    rules = FamilyRules(
        rules=(
            parse_rule("/videos/*.mp4=video"),
            parse_rule("**/*.[jp]pg=images"),
            parse_rule("**/*.mp4=other"),
        ),
        default="meta",
    )
    assert rules.family_of("videos/a.mp4") == "video"
    assert rules.family_of("x/videos/a.mp4") == "other"
    assert rules.family_of("a/b/c.jpg") == "images"
    assert rules.family_of("c.ppg") == "images"
    assert rules.family_of("notes.txt") == "meta"


@pytest.mark.parametrize("text", ["no-equals", "=family", "pattern="])
def test_malformed_rules_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_rule(text)


def test_family_names_must_be_folder_safe() -> None:
    with pytest.raises(ConfigError, match="family name"):
        FamilyRules(default="Base/../x")


def test_rules_a_user_typed_must_each_take_a_file() -> None:
    paths = ["videos/a.mp4", "depth-x/y.zarr", "notes.txt"]
    typed = (parse_rule("**/*.mp4=video"), parse_rule("**=x=y"), parse_rule("videos/**=other"))
    assert FamilyRules(rules=typed).assign(paths)["videos/a.mp4"] == "video"  # lenient
    with pytest.raises(ConfigError, match=r"'\*\*=x=y', 'videos/\*\*=other' matches no file"):
        FamilyRules(rules=typed, require_matches=True).assign(paths)


def test_the_default_rules_stay_optional_for_a_tree_without_depth() -> None:
    assert set(FamilyRules().assign(["a.mp4", "meta/b.json"]).values()) == {"base"}
