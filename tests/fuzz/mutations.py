"""Seeded mutations of one file's bytes: byte-level damage and JSON-aware value swaps.

Every mutation is a pure function of the file's bytes and a ``random.Random``, so a seed
names it exactly and reproduces it anywhere. JSON-aware operators parse the document (or
one line of a JSON-lines file) with the standard library, replace one node, and write it
back; special values (NaN, deep nesting, invalid UTF-8) are spliced in as raw bytes because
no encoder would write them.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any

__all__ = ["OPERATORS", "mutate"]

_MARK = "\x00fuzz-mark\x00"
_MARK_JSON = json.dumps(_MARK).encode()

Mutation = tuple[bytes, str]


def _flip(data: bytes, rng: random.Random) -> Mutation:
    out = bytearray(data)
    spots = sorted(rng.randrange(len(out)) for _ in range(rng.choice((1, 1, 2, 3))))
    for at in spots:
        out[at] ^= 1 << rng.randrange(8)
    return bytes(out), f"flip bits at {spots}"


def _truncate(data: bytes, rng: random.Random) -> Mutation:
    at = rng.randrange(len(data))
    return data[:at], f"truncate to {at} bytes"


_INSERTS = (b"{", b"}", b"[", b"]", b'"', b",", b":", b"\n", b"\x00", b"0", b"-", b" ", b"\\")


def _insert(data: bytes, rng: random.Random) -> Mutation:
    at = rng.randrange(len(data) + 1)
    if rng.random() < 0.5:
        junk = rng.choice(_INSERTS)
    else:
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return data[:at] + junk + data[at:], f"insert {junk!r} at {at}"


def _delete_line(data: bytes, rng: random.Random) -> Mutation:
    lines = data.splitlines(keepends=True)
    at = rng.randrange(len(lines))
    return b"".join(lines[:at] + lines[at + 1 :]), f"delete line {at + 1}"


def _duplicate_line(data: bytes, rng: random.Random) -> Mutation:
    lines = data.splitlines(keepends=True)
    at = rng.randrange(len(lines))
    if not lines[at].endswith(b"\n"):
        return data + b"\n" + lines[at], f"duplicate line {at + 1}"
    return b"".join(lines[: at + 1] + lines[at:]), f"duplicate line {at + 1}"


_STRING_RE = re.compile(rb'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')


def _invalid_utf8(data: bytes, rng: random.Random) -> Mutation:
    bad = rng.choice((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\x80"))
    strings = list(_STRING_RE.finditer(data))
    if strings:
        match = rng.choice(strings)
        at = rng.randint(match.start() + 1, match.end() - 1)
    else:
        at = rng.randrange(len(data) + 1)
    return data[:at] + bad + data[at:], f"invalid UTF-8 {bad!r} at {at}"


_NUMBER_RE = re.compile(rb"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _same_size_digit(data: bytes, rng: random.Random) -> Mutation:
    """One digit changed in place: the edit a size check cannot see."""
    numbers = list(_NUMBER_RE.finditer(data))
    if not numbers:
        return _flip(data, rng)
    match = rng.choice(numbers)
    digits = [i for i in range(match.start(), match.end()) if data[i : i + 1].isdigit()]
    at = rng.choice(digits)
    new = rng.choice([d for d in b"0123456789" if d != data[at]])
    return data[:at] + bytes([new]) + data[at + 1 :], f"digit at {at} -> {chr(new)}"


# ---- JSON-aware ------------------------------------------------------------------------


def _nodes(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found.extend(_nodes(value, (*path, key)))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found.extend(_nodes(value, (*path, i)))
    return found


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return doc


def _swap_value(old: Any, rng: random.Random) -> tuple[Any, str]:
    choices: list[tuple[Any, str]] = [
        (None, "null"),
        ({"x": 1}, "object"),
        ([], "empty list"),
        ("7", "string"),
        (7, "number"),
        (True, "bool"),
        (-1, "negative number"),
        (0.5, "fraction"),
    ]
    if isinstance(old, str):
        choices.append((old + "x", "string edit"))
        choices.append(("", "empty string"))
    if isinstance(old, int | float) and not isinstance(old, bool):
        choices.append((str(old), "number as string"))
    return rng.choice(choices)


_RAW_VALUES: tuple[tuple[bytes, str], ...] = (
    (b"NaN", "NaN"),
    (b"Infinity", "Infinity"),
    (b"-Infinity", "-Infinity"),
    (b"1e999", "1e999"),
)
_HUGE: tuple[tuple[bytes, str], ...] = (
    (b"100000000000000000000000000000", "10**29"),
    (b"-100000000000000000000000000000", "-10**29"),
    (b"9223372036854775807", "2**63-1"),
    (b"18446744073709551616", "2**64"),
    (b"1e308", "1e308"),
    (b"4294967296", "2**32"),
)


def _deep(rng: random.Random) -> tuple[bytes, str]:
    depth = rng.choice((200, 5_000, 50_000))
    if rng.random() < 0.5:
        return b"[" * depth + b"]" * depth, f"list nested {depth} deep"
    return b'{"a":' * depth + b"1" + b"}" * depth, f"object nested {depth} deep"


def _json_op(data: bytes, rng: random.Random, kind: str) -> Mutation | None:
    """Replace one node of a JSON document (or of one JSON line); None if not JSON."""
    lines = data.splitlines(keepends=True)
    candidates: list[tuple[int | None, Any]] = []
    try:
        candidates.append((None, json.loads(data)))
    except ValueError:
        for number, line in enumerate(lines):
            try:
                candidates.append((number, json.loads(line)))
            except ValueError:
                continue
    if not candidates:
        return None
    line_no, doc = rng.choice(candidates)
    path = rng.choice(_nodes(doc))
    raw: bytes | None = None
    if kind == "swap":
        value, what = _swap_value(_get(doc, path), rng)
    else:
        value, what = _MARK, ""
        if kind == "nonfinite":
            raw, what = rng.choice(_RAW_VALUES)
        elif kind == "huge":
            raw, what = rng.choice(_HUGE)
        else:
            raw, what = _deep(rng)
    doc = _replace(doc, path, value)
    pretty = line_no is None and b"\n " in data
    text = json.dumps(doc, indent=2 if pretty else None, ensure_ascii=False).encode()
    if raw is not None:
        text = text.replace(_MARK_JSON, raw)
    where = "$" + "".join(f"[{k!r}]" for k in path)
    if line_no is None:
        return text + (b"\n" if data.endswith(b"\n") else b""), f"{kind} {where} -> {what}"
    ending = b"\n" if lines[line_no].endswith(b"\n") else b""
    lines[line_no] = text + ending
    return b"".join(lines), f"{kind} line {line_no + 1} {where} -> {what}"


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _json(kind: str) -> Callable[[bytes, random.Random], Mutation]:
    def op(data: bytes, rng: random.Random) -> Mutation:
        result = _json_op(data, rng, kind)
        if result is not None:
            return result
        # Not JSON (a .npy header, MessagePack, SHA256SUMS): damage a number token instead.
        numbers = list(_NUMBER_RE.finditer(data))
        if not numbers:
            return _insert(data, rng)
        match = rng.choice(numbers)
        raw = {"swap": b'"x"', "nonfinite": b"nan", "huge": b"99999999999999999999"}.get(
            kind, b"(" * 2000
        )
        return (
            data[: match.start()] + raw + data[match.end() :],
            f"{kind}: number token at {match.start()} -> {raw[:12]!r}",
        )

    op.__name__ = f"json_{kind}"
    return op


OPERATORS: tuple[Callable[[bytes, random.Random], Mutation], ...] = (
    _flip,
    _truncate,
    _insert,
    _delete_line,
    _duplicate_line,
    _invalid_utf8,
    _same_size_digit,
    _json("swap"),
    _json("swap"),
    _json("huge"),
    _json("nonfinite"),
    _json("deep"),
)


def mutate(data: bytes, rng: random.Random) -> Mutation:
    """One seeded mutation of *data* that changes it; returns the bytes and what was done."""
    for _ in range(8):
        operator = rng.choice(OPERATORS)
        if not data:
            return b"{", "insert into an empty file"
        out, what = operator(data, rng)
        if out != data:
            return out, f"{operator.__name__.lstrip('_')}: {what}"
    return data[:-1], "truncate: last byte"
