"""Family rules: gitignore patterns (pathspec), first match wins, defaults unchanged."""

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


def _old_regex_family(path: str) -> str:
    """The hand-written rule this module used before pathspec, for the default family."""
    import re

    return "depth" if re.match(r"(?:[^/]+/)*depth-[^/]*/.*\Z", path) else "base"


def test_default_families_are_unchanged_from_the_hand_written_rule() -> None:
    paths = [
        "depth-zstd-5-mm/a.zarr/.zarray",
        "x/y/depth-zstd-5-mm/a.zarr/0.0.0",
        "depth-x",
        "a/depth-x",
        "a/xdepth-y/z",
        "a/depth-/z",
        "depth/x",
        "videos/depth-1.mp4",
        "a/b/c/depth-q/r/s/t.bin",
        "DEPTH-x/y",
    ]
    rules = FamilyRules()
    assert {p: rules.family_of(p) for p in paths} == {p: _old_regex_family(p) for p in paths}


def test_patterns_follow_gitignore_anchoring_and_directory_rules() -> None:
    rules = FamilyRules(
        rules=(
            parse_rule("renders/=video"),  # a directory: everything below it, at any depth
            parse_rule("meta/*.json=meta"),  # a slash inside: anchored at the top
            parse_rule("*.npy=arrays"),  # no slash: any depth
        )
    )
    assert rules.family_of("renders/a.mp4") == "video"
    assert rules.family_of("x/renders/a.mp4") == "video"
    assert rules.family_of("meta/a.json") == "meta"
    assert rules.family_of("x/meta/a.json") == "base"
    assert rules.family_of("x/y/z.npy") == "arrays"


@pytest.mark.parametrize("pattern", ["!depth-*/**", "# note", "  "])
def test_negations_comments_and_blank_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(ConfigError, match="gitignore-style pattern that selects files"):
        FamilyRules(rules=(parse_rule(f"{pattern}=x"),))
