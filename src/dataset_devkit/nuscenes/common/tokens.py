"""Deterministic identities: tokens, camera channel names, source fingerprints, canonical JSON."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache
from typing import Any

import msgspec

from dataset_devkit.errors import FormatError
from dataset_devkit.integrity import canonical_json
from dataset_devkit.nuscenes.common.streams import encode_hook
from dataset_devkit.nuscenes.spec import CHANNEL_RE

__all__ = ["TokenChain", "encode_canonical", "fingerprint", "make_token", "normalize_channel"]

_TOKEN_DOMAIN = b"dataset-devkit/nuscenes/token/v1"


def make_token(namespace: str, kind: str, *parts: str | int) -> str:
    """A 32-hex token from the dataset namespace, the record kind and a stable identity.

    Same namespace and identity give the same token in every run; a different namespace gives
    unrelated tokens, so two datasets never share tokens by accident.
    """
    h = _token_prefix(namespace, kind).copy()
    for part in parts:
        h.update(_length_prefixed(str(part).encode()))
    return h.hexdigest()[:32]


class TokenChain:
    """The tokens of one kind whose identities share their leading parts.

    ``TokenChain(namespace, kind, *shared).token(*rest)`` is
    ``make_token(namespace, kind, *shared, *rest)``: the hash state after the shared parts is
    kept and copied per token. An export names two records per camera frame by recording,
    channel and time, and re-hashing the recording digest for each was a third of the cost.
    """

    __slots__ = ("_state",)

    def __init__(self, namespace: str, kind: str, *shared: str | int) -> None:
        state = _token_prefix(namespace, kind).copy()
        for part in shared:
            state.update(_length_prefixed(str(part).encode()))
        self._state = state

    def token(self, *parts: str | int) -> str:
        """The token of the identity ``(*shared, *parts)``."""
        h = self._state.copy()
        for part in parts:
            h.update(_length_prefixed(str(part).encode()))
        return h.hexdigest()[:32]


@lru_cache(maxsize=64)
def _token_prefix(namespace: str, kind: str) -> hashlib._Hash:
    """The hash state after the domain, namespace and kind: an export makes tens of thousands
    of tokens of a handful of kinds, and copying this state is cheaper than re-hashing it."""
    h = hashlib.sha256(_TOKEN_DOMAIN)
    for part in (namespace, kind):
        h.update(_length_prefixed(part.encode()))
    return h


def _length_prefixed(raw: bytes) -> bytes:
    """*raw* after its length (8 bytes, big-endian): hashed parts never run into each other."""
    return len(raw).to_bytes(8, "big") + raw


def fingerprint(*parts: bytes | str) -> str:
    """SHA-256 hex over length-prefixed parts (no ambiguity between part boundaries)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(_length_prefixed(part.encode() if isinstance(part, str) else part))
    return h.hexdigest()


_NON_ALNUM = re.compile(r"[^A-Z0-9]+")


def normalize_channel(source_name: str) -> str:
    """Map a source camera name to a safe ``CAM_*`` channel.

    Accented letters are transliterated (Unicode NFKD, marks dropped: ``Rückfahr`` →
    ``RUCKFAHR``); a letter or digit with no ASCII form (``ß``, ``東``) is refused rather
    than silently turned into a separator. Then upper-case, every run of other characters
    becomes ``_``, a leading ``CAM``/``CAMERA`` word is dropped and ``CAM_`` is prefixed:
    ``/camera/front-left`` → ``CAM_FRONT_LEFT``.
    """
    ascii_name = "".join(
        c for c in unicodedata.normalize("NFKD", source_name) if not unicodedata.combining(c)
    )
    foreign = sorted({c for c in ascii_name if not c.isascii() and c.isalnum()})
    if foreign:
        raise FormatError(
            f"camera name {source_name!r} has letters without an ASCII form "
            f"({', '.join(foreign)}); rename the camera using A-Z, 0-9 and separators"
        )
    words = [w for w in _NON_ALNUM.split(ascii_name.upper()) if w]
    if words and words[0] in ("CAM", "CAMERA"):
        words = words[1:]
    channel = "CAM_" + "_".join(words)
    if not words or CHANNEL_RE.fullmatch(channel) is None:
        raise FormatError(f"camera name {source_name!r} does not normalize to a CAM_* channel")
    return channel


def encode_canonical(obj: Any) -> bytes:
    """Canonical JSON (the integrity core's encoding); NaN and infinity are refused."""
    try:
        return canonical_json(msgspec.to_builtins(obj, enc_hook=encode_hook))
    except ValueError as exc:
        raise FormatError(f"document holds a non-finite number: {exc}") from exc
