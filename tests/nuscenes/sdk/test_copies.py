"""The SDK's copies: every row copier is a full deep copy of any row its table's schema allows."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataset_devkit.nuscenes.sdk import _copies
from dataset_devkit.nuscenes.sdk._copies import ROW_COPIERS, copy_json, plain_json
from dataset_devkit.nuscenes.validation.schema import TABLE_FIELDS

_FLOAT = st.floats(allow_nan=False, allow_infinity=False)
_TOKEN = st.text("0123456789abcdef", min_size=32, max_size=32)


def _vector(size: int) -> st.SearchStrategy[Any]:
    items = st.lists(_FLOAT, min_size=size, max_size=size)
    return items | items.map(tuple)  # the typed load stores tuples, the row-by-row one lists


_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "token": _TOKEN,
    "link": _TOKEN | st.just(""),
    "str": st.text(max_size=8),
    "int": st.integers(),
    "bool": st.booleans(),
    "num": _FLOAT,
    "vec3": _vector(3),
    "quat": _vector(4),
    "tokens": st.lists(_TOKEN, max_size=3) | st.lists(_TOKEN, max_size=3).map(tuple),
    "intrinsic": st.just([]) | st.lists(_vector(3), min_size=3, max_size=3) | st.just(()),
}


@st.composite
def rows(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """(table, a row of that table with every field of its kind)."""
    table = draw(st.sampled_from(sorted(TABLE_FIELDS)))
    return table, {name: draw(_VALUES[kind]) for name, kind in TABLE_FIELDS[table].items()}


def _containers(value: Any) -> list[Any]:
    """Every dict and list inside *value*, *value* included."""
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            if isinstance(item, list):
                found.append(item)
            stack.extend(item)
    return found


def _mutate_everything(value: Any) -> None:
    for container in _containers(value):
        if isinstance(container, dict):
            for key in list(container):
                container[key] = "junk"
            container["junk"] = 1
        else:
            container[:] = ["junk"]


def test_every_official_table_has_a_row_copier() -> None:
    assert set(ROW_COPIERS) == set(TABLE_FIELDS)


@given(rows())
def test_a_row_copy_equals_the_generic_deep_copy(case: tuple[str, dict[str, Any]]) -> None:
    table, row = case
    copied = ROW_COPIERS[table](row)
    # Same keys in the same order, the same values, vectors as lists (what JSON gives).
    assert list(copied) == list(row)
    assert repr(copied) == repr(plain_json(row))


@given(rows())
def test_no_mutation_of_a_row_copy_reaches_the_row(case: tuple[str, dict[str, Any]]) -> None:
    table, row = case
    before = repr(row)
    copied = ROW_COPIERS[table](row)
    inside = {id(c) for c in _containers(row)}
    assert not inside & {id(c) for c in _containers(copied)}
    _mutate_everything(copied)
    assert repr(row) == before


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _FLOAT | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(_JSON)
def test_the_generic_copy_shares_no_container_and_turns_tuples_into_lists(value: Any) -> None:
    before = repr(value)
    copied = copy_json(value)
    assert not {id(c) for c in _containers(value)} & {id(c) for c in _containers(copied)}
    assert not any(isinstance(c, tuple) for c in _containers(copied))
    _mutate_everything(copied)
    assert repr(value) == before


def test_a_field_kind_without_a_copy_rule_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(TABLE_FIELDS, "sample", {"token": "token", "tree": "nested"})
    with pytest.raises(TypeError, match=r"sample: no row copy for field kinds \['nested'\]"):
        _copies._row_copier("sample")
