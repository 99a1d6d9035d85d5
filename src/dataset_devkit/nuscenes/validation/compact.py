"""Compact table rows for the thorough validation: structs that share one string per token.

A build validates its whole dataroot twice, and a dict per row, each holding its own copy
of every token it names, made that validation the build's peak memory. Here a well-formed
table is decoded a block of rows at a time into slot structs (a third of a dict), and every
mention of a token that resolves becomes the ``token`` string of the row it names: values
are unchanged, only copies go. The structs are read like dicts (``row["field"]``,
``row.get``), so every check serves them and the row-by-row path's dicts alike.
"""

from __future__ import annotations

import operator
from typing import Any

import msgspec

from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.validation.schema import FOREIGN_KEYS, TABLE_FIELDS, hex_tokens

__all__ = ["CompactRow", "compact_rows"]

#: ``table -> token -> row`` of the tables loaded so far.
Indexes = dict[str, dict[str, Any]]
#: Rows decoded and shared at a time: the unshared copies of one block are all that exist.
_BLOCK = 1024
#: Repeated words held once (not names or file names, which are unique).
_SHARED_WORDS = ("fileformat", "modality", "channel")


class CompactRow(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, gc=False):
    """Base of the compact rows; ``gc=False`` because rows hold only strings, numbers and
    tuples of numbers (no cycle to collect)."""

    #: ``row["field"]`` in C: the field is read as an attribute (every field exists).
    __getitem__ = object.__getattribute__

    def get(self, name: str, default: Any = None) -> Any:
        """``row.get("field", default)``, as on a dict row."""
        return getattr(self, name, default)


def _compact_type(record: type[msgspec.Struct]) -> type[CompactRow]:
    """A compact row type with the fields, kinds and strictness of the spec *record*."""
    fields = [(f.name, f.type) for f in msgspec.structs.fields(record)]
    compact: type[CompactRow] = msgspec.defstruct(  # type: ignore[assignment]
        record.__name__,
        fields,
        bases=(CompactRow,),
        module=__name__,
        kw_only=True,
        forbid_unknown_fields=True,
        gc=False,
    )
    return compact


#: A table as its undecoded rows: the whole document's syntax is checked in one pass.
_RAW_ROWS: msgspec.json.Decoder[list[msgspec.Raw]] = msgspec.json.Decoder(list[msgspec.Raw])
#: One strict decoder per table's row: the exact fields and kinds of its ``spec`` record.
_ROW_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {
    table: msgspec.json.Decoder(_compact_type(record))
    for table, record in spec.TABLE_RECORDS.items()
}


def _share(table: str, rows: list[Any], indexes: Indexes, words: dict[str, str]) -> None:
    """Make each resolving reference of *rows* the token string of the row it names.

    A reference into a table not loaded yet (or not yet reached in this one) keeps its own
    string; one that resolves nowhere is reported by the checks. A camera frame's
    ``timestamp`` becomes its ego pose's equal int, and the repeated words one string each.
    """
    for (source, name), target in FOREIGN_KEYS.items():
        index = indexes.get(target)
        if source != table or index is None or TABLE_FIELDS[table][name] == "tokens":
            continue
        values = list(map(operator.attrgetter(name), rows))
        for row, other in zip(rows, map(index.get, values), strict=True):
            if other is not None:
                setattr(row, name, other["token"])
    if table == "sample_data" and "ego_pose" in indexes:
        poses = indexes["ego_pose"]
        for row in rows:
            pose = poses.get(row.ego_pose_token)
            if pose is not None and pose["timestamp"] == row.timestamp:
                row.timestamp = pose["timestamp"]
    setdefault = words.setdefault
    for name in _SHARED_WORDS:
        if name in TABLE_FIELDS[table]:
            values = list(map(operator.attrgetter(name), rows))
            for row, value in zip(rows, map(setdefault, values, values), strict=True):
                setattr(row, name, value)


def compact_rows(
    table: str, data: bytes, indexes: Indexes, words: dict[str, str]
) -> tuple[list[Any], dict[str, Any]] | None:
    """The rows of a well-formed *table* and their token index, or None at any doubt.

    Accepts exactly what the whole-table typed decode accepts (every row of the ``spec``
    record, tokens of 32 lowercase hex, each once); None sends the caller to the row-by-row
    path that names every issue. *indexes* (the tables loaded before) and *words* are used
    to share strings and are not modified.
    """
    try:
        raws = _RAW_ROWS.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    decode = _ROW_DECODERS[table].decode
    rows: list[Any] = []
    own: dict[str, Any] = {}
    with_own = {**indexes, table: own}  # ``prev`` links resolve to rows already decoded
    try:
        for start in range(0, len(raws), _BLOCK):
            block = list(map(decode, raws[start : start + _BLOCK]))
            own.update(zip(map(operator.attrgetter("token"), block), block, strict=True))
            _share(table, block, with_own, words)
            rows.extend(block)
    except (msgspec.DecodeError, RecursionError):
        return None
    del raws
    if len(own) != len(rows) or not hex_tokens(list(own)):
        return None
    _share(table, rows, {table: own}, words)  # the ``next`` links, now that all are in
    return rows, own


class _GnssRows(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """``gnss.json`` with its rows undecoded: the other fields as ``spec.GnssDocument``."""

    schema_version: int
    global_crs: str
    global_horizontal_resolution_m: float | None
    rows: list[msgspec.Raw]


_GNSS_DOCUMENT = msgspec.json.Decoder(_GnssRows)
_GNSS_ROW = msgspec.json.Decoder(spec.GnssRow)


def _share_gnss(rows: list[spec.GnssRow], indexes: Indexes, shared: dict[Any, Any]) -> None:
    """Make each GNSS row name its pose, frame, recording and position with shared objects.

    There is one GNSS row per image: decoded, each holds its own copies of two tokens, of
    its recording's digest and of its pose's translation. A translation is shared only when
    ``==`` to the pose's, the comparison the contract check makes.
    """
    poses, frames = indexes["ego_pose"], indexes["sample_data"]
    share = msgspec.structs.force_setattr
    setdefault = shared.setdefault
    for row in rows:
        pose = poses.get(row.ego_pose_token)
        if pose is not None:
            share(row, "ego_pose_token", pose["token"])
            if row.translation_xyz_m == pose["translation"]:
                share(row, "translation_xyz_m", pose["translation"])
        frame = frames.get(row.sample_data_token)
        if frame is not None:
            share(row, "sample_data_token", frame["token"])
        share(row, "source_digest", setdefault(row.source_digest, row.source_digest))
        # Whole metres repeat from one frame to the next of a slow vehicle.
        share(row, "published_east_m", setdefault(row.published_east_m, row.published_east_m))
        share(row, "published_north_m", setdefault(row.published_north_m, row.published_north_m))


def compact_gnss(data: bytes, indexes: Indexes) -> spec.GnssDocument | None:
    """``gnss.json`` decoded a block of rows at a time, sharing objects with the tables.

    Accepts exactly what ``msgspec.json.decode(data, type=spec.GnssDocument)`` accepts;
    None at any doubt, and the caller decodes it whole to name the problem.
    """
    if "ego_pose" not in indexes or "sample_data" not in indexes:
        return None
    try:
        doc = _GNSS_DOCUMENT.decode(data)
        rows: list[spec.GnssRow] = []
        shared: dict[Any, Any] = {}
        for start in range(0, len(doc.rows), _BLOCK):
            block = list(map(_GNSS_ROW.decode, doc.rows[start : start + _BLOCK]))
            _share_gnss(block, indexes, shared)
            rows.extend(block)
    except (msgspec.DecodeError, RecursionError):
        return None
    return spec.GnssDocument(
        schema_version=doc.schema_version,
        global_crs=doc.global_crs,
        global_horizontal_resolution_m=doc.global_horizontal_resolution_m,
        rows=tuple(rows),
    )
