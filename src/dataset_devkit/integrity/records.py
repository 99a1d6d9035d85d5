"""Strict decoding of JSON documents into typed records, with errors that name the field."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from dataset_devkit.errors import FormatError

__all__ = ["decode_json_record"]

T = TypeVar("T")


def decode_json_record(
    raw: bytes,
    record_type: type[T],
    path: str | Path,
    *,
    error: type[FormatError] = FormatError,
    dec_hook: Callable[[type, Any], Any] | None = None,
) -> T:
    """Decode *raw* JSON into *record_type* strictly, or raise :class:`FormatError`.

    *dec_hook* builds the record's custom field types (msgspec's hook; its ValueError is a
    field error like any other).

    *error* is the :class:`FormatError` subclass a system raises for its own files. Invalid
    UTF-8, NaN or Infinity literals, out-of-range numbers and wrong types all end here: the
    one place every reader of a JSON document turns bad bytes into a typed error.

    msgspec reports the offending location as ``... - at `$.a[0].b```; that location
    becomes the error's ``field`` and the rest its message, so every reader of a document
    we own says which file and which field is wrong in the same words.
    """
    try:
        return msgspec.json.decode(raw, type=record_type, strict=True, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        message, _, where = str(exc).partition(" - at ")
        raise error(message, path=path, field=where.strip("`") or None) from exc
    except msgspec.DecodeError as exc:
        raise error(f"not valid JSON ({exc})", path=path) from exc
    except RecursionError:  # msgspec's answer to nesting deeper than the interpreter allows
        raise error("not valid JSON (nested too deeply)", path=path) from None
