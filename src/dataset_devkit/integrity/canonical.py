"""Canonical JSON: the one byte encoding that every hashed document uses.

The encoding is plain standard-library JSON with sorted keys, no insignificant whitespace,
UTF-8 without escaping of non-ASCII text, and no NaN or infinity. It is spelled with
:mod:`json` rather than a faster encoder on purpose: the release's stdlib-only ``unpack.py``
must recompute the exact same bytes, and so must anyone checking a root hash by hand.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["canonical_json", "pretty_json"]


def canonical_json(value: Any) -> bytes:
    """Encode *value* as canonical JSON bytes (sorted keys, compact, UTF-8, finite numbers)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def pretty_json(value: Any) -> bytes:
    """Encode *value* as deterministic, human-readable JSON bytes ending in a newline."""
    text = json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")
