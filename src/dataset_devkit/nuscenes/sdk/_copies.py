"""The copies the SDK hands out, so that a caller's mutation never reaches its indexes.

Lookups such as ``camera(sample, channel)`` run once per frame in training loops, and a
generic recursive copy of a twelve-field row was most of their cost. The rows of the
official tables do not need one: the load proved their shape (exactly the fields of
:data:`~dataset_devkit.nuscenes.validation.schema.TABLE_FIELDS`, each of its kind), their
scalars are immutable and can be shared, and only the vector fields hold containers, of a
known depth. So each table has its own copier: ``dict.copy`` for a table of scalars, plus one
``list()`` per vector and per matrix row otherwise. Vectors are stored as tuples (the typed
decode) and come out as lists, as JSON gives them. Extension documents have no fixed shape
and take the generic :func:`copy_json`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from dataset_devkit.nuscenes.validation.schema import TABLE_FIELDS

__all__ = ["ROW_COPIERS", "RowCopier", "copy_json", "plain_json"]

Row = dict[str, Any]
RowCopier = Callable[[Row], Row]
T = TypeVar("T")

#: Kinds whose values are immutable scalars (str, int, bool, float).
_SCALAR_KINDS: Final = frozenset({"token", "link", "str", "int", "bool", "num"})
#: Kinds whose values are one flat list of scalars.
_VECTOR_KINDS: Final = frozenset({"vec3", "quat", "tokens"})
#: Kinds whose values are a list of flat lists of scalars (the 3x3 intrinsic, or ``[]``).
_MATRIX_KINDS: Final = frozenset({"intrinsic"})

_CONTAINERS = (dict, list, tuple)


def plain_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists or tuples, scalars); tuples become lists.

    Scalars are immutable and shared; only containers recurse, so a flat dict costs one
    comprehension. Faster than ``copy.deepcopy``, which memoizes every object it meets.
    """
    if isinstance(value, dict):
        return {k: plain_json(v) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(v) if isinstance(v, _CONTAINERS) else v for v in value]
    return value


def copy_json(value: T) -> T:
    """:func:`plain_json` typed as its argument (the copy has the same JSON shape)."""
    copied: T = plain_json(value)
    return copied


def _row_copier(table: str) -> RowCopier:
    fields = TABLE_FIELDS[table]
    unknown = set(fields.values()) - _SCALAR_KINDS - _VECTOR_KINDS - _MATRIX_KINDS
    if unknown:
        # A new field kind must say how deep its values go before the SDK can copy them.
        raise TypeError(f"{table}: no row copy for field kinds {sorted(unknown)}")
    vectors = tuple(name for name, kind in fields.items() if kind in _VECTOR_KINDS)
    matrices = tuple(name for name, kind in fields.items() if kind in _MATRIX_KINDS)
    if not vectors and not matrices:
        return dict.copy

    def copy_row(row: Row) -> Row:
        out = row.copy()
        for name in vectors:
            out[name] = list(out[name])
        for name in matrices:
            out[name] = [list(r) for r in out[name]]
        return out

    return copy_row


#: ``table -> copier`` of a row the SDK loaded (and so checked) from that official table.
ROW_COPIERS: Final[dict[str, RowCopier]] = {table: _row_copier(table) for table in TABLE_FIELDS}
