"""Fuzz the SDK loader with malformed tables: always a typed error, never a traceback."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataset_devkit.errors import DevkitError
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.sdk.dataset import Dataset
from dataset_devkit.nuscenes.validation.schema import TABLE_FIELDS
from tests.nuscenes.dataroot_fixture import write_dataroot

_NON_EMPTY = [t for t in spec.TABLE_NAMES if t not in spec.EMPTY_TABLES]

_WRONG: dict[str, st.SearchStrategy[Any]] = {
    "token": st.one_of(
        st.integers(), st.none(), st.text(max_size=40).filter(lambda s: len(s) != 32)
    ),
    "link": st.one_of(st.integers(), st.none(), st.text(min_size=1, max_size=31)),
    "str": st.one_of(st.integers(), st.none(), st.lists(st.integers(), max_size=2)),
    "int": st.one_of(st.text(max_size=5), st.floats(allow_nan=False), st.booleans(), st.none()),
    "bool": st.one_of(st.integers(), st.text(max_size=5), st.none()),
    "vec3": st.one_of(st.text(max_size=5), st.lists(st.floats(-1, 1), max_size=2), st.none()),
    "quat": st.one_of(st.text(max_size=5), st.lists(st.floats(-1, 1), max_size=3), st.none()),
    "intrinsic": st.one_of(st.text(max_size=5), st.lists(st.integers(), min_size=1, max_size=2)),
    "tokens": st.one_of(st.text(max_size=5), st.lists(st.integers(), min_size=1, max_size=2)),
}


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, str, Any]:
    """(table, kind of mutation, argument) — every mutation makes the table invalid."""
    kind = draw(st.sampled_from(["drop", "wrong", "unknown", "duplicate", "truncate", "replace"]))
    table = draw(st.sampled_from(_NON_EMPTY))
    fields = TABLE_FIELDS[table]
    if kind in ("drop", "wrong"):
        name = draw(st.sampled_from(sorted(fields)))
        value = draw(_WRONG[fields[name]]) if kind == "wrong" else None
        return table, kind, (draw(st.integers(0, 1000)), name, value)
    if kind == "truncate":
        return table, kind, draw(st.floats(0.0, 0.99))
    if kind == "replace":
        junk = st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=4),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=3), inner, max_size=3)
            ),
            max_leaves=6,
        )
        return table, kind, draw(junk)
    return table, kind, draw(st.integers(0, 1000))


def _apply(root: Path, table: str, kind: str, arg: Any) -> None:
    path = root / spec.VERSION / f"{table}.json"
    raw = path.read_text()
    rows: list[dict[str, Any]] = json.loads(raw)
    if kind == "truncate":
        text = raw[: int(len(raw) * arg)]
    elif kind == "replace":
        text = json.dumps(arg)
    else:
        i = (arg[0] if isinstance(arg, tuple) else arg) % len(rows)
        if kind == "drop":
            del rows[i][arg[1]]
        elif kind == "wrong":
            rows[i][arg[1]] = arg[2]
        elif kind == "unknown":
            rows[i]["unexpected_field"] = 1
        else:
            rows.append(dict(rows[i]))
        text = json.dumps(rows)
    path.write_text(text)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "root"
    write_dataroot(root, scenes=2, samples=2, width=8, height=8)
    return root


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(mutation=mutations())
def test_malformed_tables_always_raise_a_devkit_error(
    template: Path, mutation: tuple[str, str, Any]
) -> None:
    table, kind, arg = mutation
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        shutil.copytree(template, root)
        _apply(root, table, kind, arg)
        with pytest.raises(DevkitError):
            Dataset(root)


def test_the_unmutated_template_loads(template: Path) -> None:
    assert len(Dataset(template).table("scene")) == 2
