"""Recover the complete records of an MCAP chunk that a crashed recorder left incomplete.

A chunk is one record holding many messages, possibly compressed. When the file ends inside
it, the stream reader can only give up on the whole chunk; here the available bytes are
decompressed as far as they go (zstd and lz4 frames stream, uncompressed chunks are read
as is) and every record that is complete is returned, so a recording is read up to its last
complete message.
"""

from __future__ import annotations

import struct
from typing import Any

from dataset_devkit.extras import import_optional
from dataset_devkit.nuscenes.ingest.mcap_chunks import chunk_records

__all__ = ["salvage_chunk"]

_CHUNK = 0x06


#: The module that decompresses each chunk compression of the MCAP specification.
_CODECS = {"zstd": "zstandard", "lz4": "lz4.frame"}


def _decompress_partial(compression: str, payload: bytes) -> bytes:
    if compression == "":
        return payload
    if compression not in _CODECS:
        return b""
    # Outside the try: a missing codec is a missing extra, not a chunk with nothing in it.
    codec = import_optional(
        _CODECS[compression], extra="mcap", purpose=f"reading {compression}-compressed MCAP"
    )
    try:
        if compression == "zstd":
            return bytes(codec.ZstdDecompressor().decompressobj().decompress(payload))
        return bytes(codec.LZ4FrameDecompressor().decompress(payload))
    except Exception:
        return b""


def salvage_chunk(tail: bytes) -> list[Any]:
    """Schema, Channel and Message records that are complete in a truncated chunk record.

    *tail* starts at the chunk's opcode byte. Returns ``[]`` when it is not a chunk or holds
    no complete record.
    """
    header = 1 + 8 + 8 + 8 + 8 + 4 + 4
    if len(tail) < header or tail[0] != _CHUNK:
        return []
    pos = 1 + 8 + 8 + 8 + 8 + 4
    (name_len,) = struct.unpack_from("<I", tail, pos)
    pos += 4
    if len(tail) < pos + name_len + 8:
        return []
    compression = tail[pos : pos + name_len].decode("utf-8", "replace")
    pos += name_len + 8  # skip the records length: the bytes may end before it
    raw = _decompress_partial(compression, tail[pos:])
    records: list[Any] = list(chunk_records(raw, complete_only=True))
    return records
