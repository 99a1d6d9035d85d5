"""Splits (the seed's Task 6): a full, disjoint, deterministic train/test assignment.

Selected scenes of one recording with consecutive scene indexes form a group; groups, not
scenes, are assigned, so genuinely adjacent scenes never straddle the split. The assignment
depends only on the namespace and stable identities (source digest, scene index).
"""

from __future__ import annotations

from collections.abc import Sequence

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes.common.tokens import fingerprint, make_token
from dataset_devkit.nuscenes.evidence.records import EvScene, EvSplit
from dataset_devkit.nuscenes.spec import SplitConfig

__all__ = ["assign_splits", "check_split"]


def check_split(config: SplitConfig) -> None:
    """Refuse a test fraction outside [0, 1] (NaN included), naming the key."""
    if not 0.0 <= config.test_fraction <= 1.0:
        raise ConfigError(
            f"split.test_fraction must be within [0, 1], found {config.test_fraction}",
            key="split.test_fraction",
        )


def assign_splits(
    namespace: str, selected: Sequence[EvScene], config: SplitConfig
) -> tuple[EvSplit, ...]:
    """Assign every selected scene to ``train`` or ``test`` by its adjacency group."""
    check_split(config)
    groups: list[list[EvScene]] = []
    for scene in selected:
        last = groups[-1][-1] if groups else None
        if (
            last is not None
            and last.source_digest == scene.source_digest
            and last.scene_index + 1 == scene.scene_index
        ):
            groups[-1].append(scene)
        else:
            groups.append([scene])
    scores = []
    for group in groups:
        first = group[0]
        digest = fingerprint(namespace, "split", first.source_digest, str(first.scene_index))
        scores.append(int(digest[:16], 16) / float(1 << 64))
    is_test = [score < config.test_fraction for score in scores]
    # Keep both splits non-empty when there is more than one group and a fraction strictly
    # between 0 and 1: move the group whose score is closest to the threshold.
    if len(groups) > 1 and 0.0 < config.test_fraction < 1.0:
        if not any(is_test):
            is_test[min(range(len(groups)), key=lambda i: scores[i])] = True
        elif all(is_test):
            is_test[max(range(len(groups)), key=lambda i: scores[i])] = False
    out = []
    for group, test in zip(groups, is_test, strict=True):
        first = group[0]
        group_id = make_token(namespace, "split_group", first.source_digest, first.scene_index)
        for scene in group:
            out.append(
                EvSplit(
                    scene_id=scene.scene_id, split="test" if test else "train", group_id=group_id
                )
            )
    return tuple(out)
