"""Ordered scenario selection and the train/test split."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes.evidence.records import EvScene
from dataset_devkit.nuscenes.evidence.selection import select_scenes
from dataset_devkit.nuscenes.evidence.splits import assign_splits
from dataset_devkit.nuscenes.spec import SelectionRule, SplitConfig


def _scene(
    digest: str, index: int, *, valid: bool = True, speed: float = 5.0, tod: str = "day"
) -> EvScene:
    return EvScene(
        scene_id=f"{digest}#{index}",
        source_digest=digest,
        scene_index=index,
        start_timestamp_ns=index,
        end_timestamp_ns=index + 1,
        grid_timestamps_ns=(0, 1, 2, 3),
        valid=valid,
        reasons=() if valid else ("bad",),
        audits=(),
        channels=("CAM_A",),
        distance_m=speed * 1.5,
        mean_speed_mps=speed,
        max_speed_mps=speed,
        local_solar_hour=12.0,
        time_of_day=tod,
        frames=(),
    )


def test_rules_apply_in_order_and_record_what_each_rejected() -> None:
    scenes = [
        _scene("a", 0),
        _scene("a", 1, valid=False),
        _scene("a", 2, speed=0.5),
        _scene("a", 3, tod="night"),
        _scene("a", 4),
        _scene("a", 5),
    ]
    rules = [
        SelectionRule(kind="require_valid"),
        SelectionRule(kind="min_mean_speed_mps", value=1.0),
        SelectionRule(kind="time_of_day", value="day,dusk"),
        SelectionRule(kind="max_scenes", value=2),
    ]
    steps, selected, rejected = select_scenes(scenes, rules)
    assert selected == ("a#0", "a#4")
    assert [s.rejected_scene_ids for s in steps] == [("a#1",), ("a#2",), ("a#3",), ("a#5",)]
    assert rejected == {
        "a#1": "rule 0 require_valid: bad",  # the validity reasons follow the rule
        "a#2": "rule 1 min_mean_speed_mps",
        "a#3": "rule 2 time_of_day",
        "a#5": "rule 3 max_scenes",
    }


def test_invalid_scenes_are_never_selected_even_without_the_rule() -> None:
    _, selected, rejected = select_scenes([_scene("a", 0), _scene("a", 1, valid=False)], [])
    assert selected == ("a#0",)
    assert rejected["a#1"].startswith("invalid: ")


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (SelectionRule(kind="min_distance_m", value="far"), "needs a number"),
        (SelectionRule(kind="time_of_day", value="noon"), "unknown time of day"),
        (SelectionRule(kind="max_scenes", value=1.5), "non-negative integer"),
        (SelectionRule(kind="require_valid", value=1), "takes no value"),
    ],
)
def test_malformed_rules_are_config_errors_naming_the_rule(
    rule: SelectionRule, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        select_scenes([_scene("a", 0)], [SelectionRule(kind="require_valid"), rule])
    assert info.value.key == "scenario.rules[1]"


@settings(max_examples=60, deadline=None)
@given(
    layout=st.lists(st.lists(st.booleans(), min_size=1, max_size=8), min_size=1, max_size=5),
    fraction=st.sampled_from([0.0, 0.2, 0.5, 0.9, 1.0]),
    namespace=st.text(min_size=1, max_size=8),
)
def test_splits_are_full_disjoint_deterministic_and_never_split_adjacent_scenes(
    layout: list[list[bool]], fraction: float, namespace: str
) -> None:
    selected = [
        _scene(f"rec{r}", i) for r, picks in enumerate(layout) for i, p in enumerate(picks) if p
    ]
    config = SplitConfig(test_fraction=fraction)
    splits = assign_splits(namespace, selected, config)
    assert splits == assign_splits(namespace, selected, config)
    assert [s.scene_id for s in splits] == [s.scene_id for s in selected]
    assert all(s.split in ("train", "test") for s in splits)
    by_id = {s.scene_id: s for s in splits}
    for a, b in itertools.pairwise(selected):
        if a.source_digest == b.source_digest and a.scene_index + 1 == b.scene_index:
            assert by_id[a.scene_id].split == by_id[b.scene_id].split
            assert by_id[a.scene_id].group_id == by_id[b.scene_id].group_id
    groups = {s.group_id for s in splits}
    if fraction == 0.0:
        assert all(s.split == "train" for s in splits)
    elif fraction == 1.0:
        assert all(s.split == "test" for s in splits)
    elif len(groups) > 1:
        assert {s.split for s in splits} == {"train", "test"}


def test_a_test_fraction_outside_zero_one_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        assign_splits("ns", [_scene("a", 0)], SplitConfig(test_fraction=1.5))
    assert info.value.key == "split.test_fraction"
