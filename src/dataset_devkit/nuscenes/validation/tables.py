"""Strict loading of the 13 official tables: JSON, row shape, field kinds, unique tokens.

Every problem is appended to an issue list rather than raised, so one validation run reports
all of them. Rows that fail their shape check are left out of the loaded table (and the
failure is an issue), so later graph checks never trip over a malformed value.
"""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from dataset_devkit.errors import DevkitError
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.compact import compact_rows
from dataset_devkit.nuscenes.validation.io import DatarootReader
from dataset_devkit.nuscenes.validation.schema import (
    OFFICIAL_TABLES,
    TABLE_FIELDS,
    TOKEN_RE,
    hex_tokens,
)

__all__ = [
    "LoadedTables",
    "channel_of",
    "check_field",
    "decode_json",
    "key_frame_channels",
    "key_frame_tokens",
    "load_tables",
    "sample_data_channels",
]

#: A table row: a dict, or with ``compact=True`` a :class:`.compact.CompactRow` when its table
#: is well formed. Both are read the same way (``row["field"]``, ``row.get("field")``).
Row = Any


@dataclass(slots=True)
class LoadedTables:
    """The official tables of one dataroot, with a token index per table.

    Attributes
    ----------
    version
        The table directory name (``v1.0-trainval``).
    tables
        Well-formed rows per table, in file order.
    index
        ``table -> token -> row``.
    broken
        Tables that could not be read or decoded at all; references into them are not
        reported again as missing tokens.
    """

    version: str
    tables: dict[str, list[Row]] = field(default_factory=dict)
    index: dict[str, dict[str, Row]] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)
    #: ``calibrated_sensor token -> channel``, computed on first use by the graph checks.
    channel_of_calibration: dict[str, str] | None = None
    #: The channel of each sample_data row, computed on first use.
    sample_data_channels: list[str | None] | None = None
    #: ``(sample_token, channel)`` of every key frame, computed on first use.
    key_frame_channels: list[tuple[str, str | None]] | None = None

    def forget_derived(self) -> None:
        """Drop the per-row lists derived for the graph checks (recomputed on next use)."""
        self.channel_of_calibration = None
        self.sample_data_channels = None
        self.key_frame_channels = None

    def rel(self, table: str) -> str:
        """The dataroot-relative path of *table*'s JSON file."""
        return f"{self.version}/{table}.json"


def decode_json(data: bytes, rel: str, issues: list[str]) -> tuple[bool, Any]:
    """Decode strict JSON (no NaN/Infinity): ``(True, value)``, or ``(False, None)`` and an issue.

    The flag keeps a document that is literally ``null`` apart from one that failed.
    """
    try:
        return True, msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:  # msgspec caps nesting so
        issues.append(f"{rel}: malformed JSON ({exc})")
        return False, None


def _finite(value: Any) -> bool:
    """A finite JSON number that fits a float (a 400-digit integer does not)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def check_field(kind: str, value: Any) -> str | None:
    """Return why *value* is not of field *kind*, or None when it is."""
    if kind == "token":
        ok = isinstance(value, str) and TOKEN_RE.match(value) is not None
        return None if ok else f"expected a 32-hex token, found {value!r}"
    if kind == "link":
        ok = isinstance(value, str) and (value == "" or TOKEN_RE.match(value) is not None)
        return None if ok else f"expected a token or '', found {value!r}"
    if kind == "str":
        return None if isinstance(value, str) else f"expected a string, found {value!r}"
    if kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"expected an integer, found {value!r}"
    if kind == "bool":
        return None if isinstance(value, bool) else f"expected true/false, found {value!r}"
    if kind in ("vec3", "quat"):
        size = 3 if kind == "vec3" else 4
        ok = isinstance(value, list) and len(value) == size and all(_finite(v) for v in value)
        return None if ok else f"expected {size} finite numbers, found {value!r}"
    if kind == "intrinsic":
        if value == []:
            return None
        ok = (
            isinstance(value, list)
            and len(value) == 3
            and all(isinstance(r, list) and len(r) == 3 and all(map(_finite, r)) for r in value)
        )
        return None if ok else f"expected a 3x3 finite matrix or [], found {value!r}"
    if kind == "tokens":
        ok = isinstance(value, list) and all(
            isinstance(v, str) and TOKEN_RE.match(v) is not None for v in value
        )
        return None if ok else f"expected a list of 32-hex tokens, found {value!r}"
    raise AssertionError(f"unknown field kind {kind}")  # pragma: no cover - schema bug


def _types(values: list[Any]) -> set[type]:
    return set(map(type, values))


def _numbers_ok(flat: list[Any]) -> bool:
    if not _types(flat) <= {float, int}:
        return False
    try:
        return math.isfinite(math.fsum(flat))
    except OverflowError:
        return False


def _column_ok(kind: str, col: list[Any]) -> bool:
    """Column-wise check of one field over all rows; True means every value is valid.

    Type checks are ``set(map(type, column))``: one C-level pass per field.
    """
    if not col:
        return True
    if kind in ("token", "link"):
        if _types(col) != {str}:
            return False
        return hex_tokens(list(filter(None, col)) if kind == "link" else col)
    if kind in _SCALAR_TYPES:
        return _types(col) == {_SCALAR_TYPES[kind]}
    if kind in ("vec3", "quat"):
        size = 3 if kind == "vec3" else 4
        if _types(col) != {list} or set(map(len, col)) != {size}:
            return False
        return _numbers_ok(list(itertools.chain.from_iterable(col)))
    if kind == "tokens":
        if _types(col) != {list}:
            return False
        return _column_ok("token", list(itertools.chain.from_iterable(col)))
    # "intrinsic" is rare (one row per camera): check it row by row.
    return all(check_field(kind, v) is None for v in col)


_SCALAR_TYPES: dict[str, type] = {"str": str, "int": int, "bool": bool}


def _fast_rows(table: str, rows: list[Any]) -> list[Row] | None:
    """All rows when the whole table is well formed and tokens unique, else None.

    The common case (a valid table) is checked a column at a time with one regex or one
    C-level pass per field; any doubt falls back to the row-by-row path that names each issue.
    """
    fields = TABLE_FIELDS[table]
    # Same number of keys in every row and every expected key present (no KeyError below)
    # means exactly the expected keys.
    if rows and (_types(rows) != {dict} or set(map(len, rows)) != {len(fields)}):
        return None
    try:
        columns = {name: list(map(operator.itemgetter(name), rows)) for name in fields}
    except KeyError:
        return None
    for name, kind in fields.items():
        if not _column_ok(kind, columns[name]):
            return None
    if len(set(map(operator.itemgetter("token"), rows))) != len(rows):
        return None
    return rows


def _check_rows(table: str, rows: list[Any], rel: str, issues: list[str]) -> list[Row]:
    fast = _fast_rows(table, rows)
    if fast is not None:
        return fast
    fields = TABLE_FIELDS[table]
    expected = set(fields)
    good: list[Row] = []
    seen: set[str] = set()
    for i, row in enumerate(rows):
        where = f"{rel} at $[{i}]"
        if not isinstance(row, dict):
            issues.append(f"{where}: expected an object, found {type(row).__name__}")
            continue
        ok = True
        missing = expected - row.keys()
        extra = row.keys() - expected
        if missing:
            issues.append(f"{where}: missing fields {sorted(missing)}")
            ok = False
        if extra:
            issues.append(f"{where}: unknown fields {sorted(extra)}")
            ok = False
        for name, kind in fields.items():
            if name in row and (problem := check_field(kind, row[name])) is not None:
                issues.append(f"{where}.{name}: {problem}")
                ok = False
        if ok and row["token"] in seen:
            issues.append(f"{where}.token: duplicate token {row['token']}")
        elif ok:
            seen.add(row["token"])
            good.append(row)
    return good


#: One strict decoder per table: ``list[<spec record>]`` (exact fields, kinds, fixed-length
#: vectors and matrices; JSON itself cannot hold NaN or infinity).
_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    table: msgspec.json.Decoder(list[record])  # type: ignore[valid-type]
    for table, record in spec.TABLE_RECORDS.items()
}


def _typed_rows(table: str, data: bytes) -> list[Row] | None:
    """The rows of a well-formed table through its typed decoder, else None.

    The typed decode proves everything but the token shapes in one C pass; the primary
    ``token`` column is then checked for 32 lowercase hex in one C-level pass. Every other
    token-valued field is a foreign key (``FOREIGN_KEYS`` covers them all, a contract
    test keeps it so), and ``check_references`` proves each one is ``""`` or a key of its
    target's index — keys that passed this very check — so checking their shape here too
    would be the same work twice. Rows come back as dicts whose vectors are tuples
    (the SDK's copies turn them into lists). Any doubt returns None, and the caller takes the
    row-by-row path that names every issue.
    """
    try:
        structs = _DECODERS[table].decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    # A TypedDict decode would skip the Struct but also silently drop unknown fields, and
    # ``structs.asdict`` per row measured no faster than one ``to_builtins``.
    rows: list[Row] = msgspec.to_builtins(structs)
    column = list(map(operator.itemgetter("token"), rows))
    if not hex_tokens(column) or len(set(column)) != len(column):
        return None
    return rows


def _untyped_rows(
    loaded: LoadedTables, table: str, data: bytes, rel: str, issues: list[str]
) -> list[Row]:
    """The row-by-row path: decode untyped and report every malformed row and field."""
    ok, decoded = decode_json(data, rel, issues)
    if not ok:
        loaded.broken.add(table)
        return []
    if not isinstance(decoded, list):
        issues.append(f"{rel}: expected a JSON array, found {type(decoded).__name__}")
        loaded.broken.add(table)
        return []
    return _check_rows(table, decoded, rel, issues)


def load_tables(
    reader: DatarootReader, version: str, issues: list[str], *, compact: bool = False
) -> LoadedTables:
    """Read, decode and shape-check every official table of the dataroot behind *reader*.

    With *compact*, well-formed tables are kept as :class:`CompactRow` structs whose
    mentions of one token share one string (the validation's checks read both kinds);
    without it, every row is a plain dict (what the SDK hands out).
    """
    loaded = LoadedTables(version=version)
    try:
        entries = reader.list_dir(version)
    except DevkitError as exc:
        issues.append(f"{version}: cannot list the table directory ({exc})")
        entries = []
    expected = {f"{table}.json" for table in OFFICIAL_TABLES}
    for name, kind in entries:
        if name not in expected:
            issues.append(f"{version}/{name}: unexpected {kind} in the table directory")
    words: dict[str, str] = {}
    for table in OFFICIAL_TABLES:
        rel = loaded.rel(table)
        rows: list[Row] = []
        data: bytes | None = None
        try:
            data = reader.read_bytes(rel)
        except DevkitError as exc:
            issues.append(f"{rel}: cannot read table ({exc})")
            loaded.broken.add(table)
        index: dict[str, Row] | None = None
        if data is not None:
            compacted = compact_rows(table, data, loaded.index, words) if compact else None
            if compacted is not None:
                rows, index = compacted
            else:
                typed = None if compact else _typed_rows(table, data)
                rows = typed or _untyped_rows(loaded, table, data, rel, issues)
            data = None  # the table's bytes are not kept while the next one is read
        loaded.tables[table] = rows
        loaded.index[table] = {row["token"]: row for row in rows} if index is None else index
    return loaded


def sample_data_channels(t: LoadedTables) -> list[str | None]:
    """The channel of every sample_data row, in table order (None when unresolvable)."""
    if t.sample_data_channels is None:
        get = _calibration_channels(t).get
        rows = t.tables["sample_data"]
        t.sample_data_channels = [get(sd["calibrated_sensor_token"]) for sd in rows]
    return t.sample_data_channels


def key_frame_channels(t: LoadedTables) -> list[tuple[str, str | None]]:
    """``(sample_token, channel)`` of every key-frame sample_data row, in table order.

    Built with C-level ``map``/``zip``/``compress`` passes: the coverage check and the SDK's
    camera index both run it over every image at load time.
    """
    if t.key_frame_channels is None:
        rows = t.tables["sample_data"]
        keys = zip(
            map(operator.itemgetter("sample_token"), rows), sample_data_channels(t), strict=True
        )
        flags = map(operator.itemgetter("is_key_frame"), rows)
        t.key_frame_channels = list(itertools.compress(keys, flags))
    return t.key_frame_channels


def key_frame_tokens(t: LoadedTables) -> list[str]:
    """The token of every key-frame sample_data row, aligned with ``key_frame_channels``."""
    rows = t.tables["sample_data"]
    tokens = map(operator.itemgetter("token"), rows)
    return list(itertools.compress(tokens, map(operator.itemgetter("is_key_frame"), rows)))


def _calibration_channels(t: LoadedTables) -> dict[str, str]:
    if t.channel_of_calibration is None:
        t.channel_of_calibration = {}
        for cs in t.tables["calibrated_sensor"]:
            sensor = t.index["sensor"].get(cs["sensor_token"])
            if sensor is not None:
                t.channel_of_calibration[cs["token"]] = sensor["channel"]
    return t.channel_of_calibration


def channel_of(t: LoadedTables, sd: Row) -> str | None:
    """The channel of one sample_data row through its calibration and sensor, or None."""
    return _calibration_channels(t).get(sd["calibrated_sensor_token"])
