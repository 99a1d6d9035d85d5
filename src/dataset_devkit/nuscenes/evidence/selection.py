"""Ordered scenario selection: configurable rules applied in order, every rejection recorded."""

from __future__ import annotations

import fnmatch
import math
import typing
from collections.abc import Callable, Mapping, Sequence

import msgspec

from dataset_devkit.errors import ConfigError
from dataset_devkit.nuscenes.evidence.records import EvScene
from dataset_devkit.nuscenes.spec import SelectionRule, SelectionRuleKind, SelectionStep

__all__ = ["check_rules", "select_scenes"]

_TIMES_OF_DAY = frozenset({"night", "dawn", "day", "dusk"})


def _number(rule: SelectionRule, key: str) -> float:
    """The rule's value as a finite, non-negative number (every numeric rule is a bound)."""
    value = rule.value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(
            f"{key}.value: rule {rule.kind!r} needs a number, found {value!r}", key=key
        )
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not (math.isfinite(number) and number >= 0):
        raise ConfigError(
            f"{key}.value: rule {rule.kind!r} needs a finite number >= 0, found {value!r}",
            key=key,
        )
    return number


def _words(rule: SelectionRule, key: str) -> frozenset[str]:
    if not isinstance(rule.value, str) or not rule.value.strip():
        raise ConfigError(
            f"{key}.value: rule {rule.kind!r} needs a comma-separated list, found {rule.value!r}",
            key=key,
        )
    return frozenset(w.strip() for w in rule.value.split(",") if w.strip())


def _predicate(rule: SelectionRule, key: str) -> Callable[[EvScene], bool] | None:
    """The keep-predicate of a filtering rule, or None for ``max_scenes``."""
    kind = rule.kind
    if kind == "require_valid":
        if rule.value is not None:
            raise ConfigError(
                f"{key}.value: rule 'require_valid' takes no value, found {rule.value!r}",
                key=key,
            )
        return lambda s: s.valid
    if kind == "min_samples":
        n = _number(rule, key)
        return lambda s: len(s.grid_timestamps_ns) >= n
    if kind == "min_distance_m":
        d = _number(rule, key)
        return lambda s: s.distance_m >= d
    if kind == "min_mean_speed_mps":
        v = _number(rule, key)
        return lambda s: s.mean_speed_mps >= v
    if kind == "max_mean_speed_mps":
        v = _number(rule, key)
        return lambda s: s.mean_speed_mps <= v
    if kind == "time_of_day":
        allowed = _words(rule, key)
        unknown = sorted(allowed - _TIMES_OF_DAY)
        if unknown:
            raise ConfigError(
                f"{key}.value: unknown time of day {unknown}; use {sorted(_TIMES_OF_DAY)}",
                key=key,
            )
        return lambda s: s.time_of_day in allowed
    if kind == "require_cameras":
        needed = _words(rule, key)
        return lambda s: needed <= set(s.channels)
    if kind == "max_scenes":
        n = _number(rule, key)
        if n != int(n):
            raise ConfigError(
                f"{key}.value: max_scenes must be a non-negative integer, found {rule.value!r}",
                key=key,
            )
        return None
    raise ConfigError(
        f"{key}.kind: unknown selection rule {kind!r}; expected one of "
        f"{', '.join(typing.get_args(SelectionRuleKind))}",
        key=f"{key}.kind",
    )


def _detail(rule: SelectionRule, scene: EvScene) -> str:
    """What a rejected scene lacks, where the rule's name alone does not say it."""
    if rule.kind == "require_cameras" and isinstance(rule.value, str):
        needed = {w.strip() for w in rule.value.split(",") if w.strip()}
        missing = sorted(needed - set(scene.channels))
        return f": its recording has no {', '.join(missing)}"
    if rule.kind == "require_valid" and scene.reasons:
        return ": " + "; ".join(scene.reasons)
    return ""


def _scope(rule: SelectionRule, key: str) -> tuple[str, ...] | None:
    """The rule's recording patterns, or None when it applies to every recording."""
    patterns = rule.recordings
    if isinstance(patterns, msgspec.UnsetType):
        return None
    if not patterns or not all(isinstance(p, str) and p.strip() for p in patterns):
        raise ConfigError(
            f"{key}.recordings: expected a non-empty list of recording ids or shell patterns "
            f'("van-*"), found {list(patterns)!r}',
            key=f"{key}.recordings",
        )
    return patterns


def _in_scope(
    rule: SelectionRule, key: str, names: Mapping[str, tuple[str, ...]]
) -> Callable[[EvScene], bool]:
    """Whether a scene's recording is one the rule applies to (by id or file name).

    A pattern that matches no recording of the build is refused: a typo would otherwise
    silently turn the rule off.
    """
    patterns = _scope(rule, key)
    if patterns is None:
        return lambda _: True
    matched = {
        digest
        for digest, ids in names.items()
        if any(fnmatch.fnmatchcase(n, p) for n in ids for p in patterns)
    }
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(n, pattern) for ids in names.values() for n in ids):
            known = sorted({ids[0] for ids in names.values()})
            raise ConfigError(
                f"{key}.recordings: {pattern!r} matches no recording of this build "
                f"(recording ids: {', '.join(known)})",
                key=f"{key}.recordings",
            )
    return lambda s: s.source_digest in matched


def _label(rule: SelectionRule) -> str:
    """``rule i <kind>`` names the rule; a scoped rule also says which recordings."""
    if isinstance(rule.recordings, msgspec.UnsetType):
        return rule.kind
    return f"{rule.kind} (recordings {', '.join(rule.recordings)})"


def check_rules(rules: Sequence[SelectionRule]) -> None:
    """Refuse a rule whose value does not fit its kind, before any recording is read."""
    for i, rule in enumerate(rules):
        _predicate(rule, f"scenario.rules[{i}]")
        _scope(rule, f"scenario.rules[{i}]")


def select_scenes(
    scenes: Sequence[EvScene],
    rules: Sequence[SelectionRule],
    recordings: Mapping[str, tuple[str, ...]] | None = None,
) -> tuple[tuple[SelectionStep, ...], tuple[str, ...], dict[str, str]]:
    """Apply *rules* in order to *scenes* (already in chronological order).

    *recordings* maps each source digest to the recording's names (id, file name) that a
    rule's ``recordings`` patterns match. A scoped rule judges only the scenes of matching
    recordings (a scoped ``max_scenes`` keeps that many of theirs); the rest pass it.

    Returns the steps (with the scenes each rejected), the selected scene ids in order, and
    for every unselected scene the rule that rejected it. Unselected-by-validity scenes carry
    their validity reasons so the chronology says why.
    """
    names = recordings if recordings is not None else {}
    candidates = list(scenes)
    steps: list[SelectionStep] = []
    rejected_by: dict[str, str] = {}
    for i, rule in enumerate(rules):
        key = f"scenario.rules[{i}]"
        keep = _predicate(rule, key)
        judged = _in_scope(rule, key, names)
        if keep is None:
            quota = int(_number(rule, key))
            kept = []
            for s in candidates:
                if not judged(s):
                    kept.append(s)
                elif quota > 0:
                    kept.append(s)
                    quota -= 1
        else:
            kept = [s for s in candidates if not judged(s) or keep(s)]
        kept_ids = {s.scene_id for s in kept}
        dropped = tuple(s.scene_id for s in candidates if s.scene_id not in kept_ids)
        for s in candidates:
            if s.scene_id not in kept_ids:
                rejected_by[s.scene_id] = f"rule {i} {_label(rule)}" + _detail(rule, s)
        steps.append(
            SelectionStep(
                rule=rule,
                candidates_before=len(candidates),
                candidates_after=len(kept),
                rejected_scene_ids=dropped,
            )
        )
        candidates = kept
    # A scene that is not valid can never be exported, whatever the rules say.
    for s in candidates:
        if not s.valid:
            rejected_by[s.scene_id] = "invalid: " + "; ".join(s.reasons)
    selected = tuple(s.scene_id for s in candidates if s.valid)
    if len(selected) != len(candidates):
        steps.append(
            SelectionStep(
                rule=SelectionRule(kind="require_valid"),
                candidates_before=len(candidates),
                candidates_after=len(selected),
                rejected_scene_ids=tuple(s.scene_id for s in candidates if not s.valid),
            )
        )
    return tuple(steps), selected, dict(sorted(rejected_by.items()))
