"""Recover the complete records of an MCAP chunk that a crashed recorder left incomplete.

A chunk is one record holding many messages, possibly compressed. When the file ends inside
it, the stream reader can only give up on the whole chunk; here the available bytes are
decompressed as far as they go (zstd and lz4 frames stream, uncompressed chunks are read
as is) and every record that is complete is returned, so a recording is read up to its last
complete message.
"""

from __future__ import annotations

import io
import struct
from typing import Any

from dataset_devkit.extras import import_optional

__all__ = ["salvage_chunk"]

_CHUNK = 0x06
_SCHEMA, _CHANNEL, _MESSAGE = 0x03, 0x04, 0x05


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
    from mcap.data_stream import ReadDataStream
    from mcap.records import Channel, Message, Schema

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
    records: list[Any] = []
    offset = 0
    while offset + 9 <= len(raw):
        opcode = raw[offset]
        (length,) = struct.unpack_from("<Q", raw, offset + 1)
        start = offset + 9
        if start + length > len(raw):
            break
        stream = ReadDataStream(io.BytesIO(raw[start : start + length]))
        if opcode == _SCHEMA:
            records.append(Schema.read(stream))
        elif opcode == _CHANNEL:
            records.append(Channel.read(stream))
        elif opcode == _MESSAGE:
            records.append(Message.read(stream, length))
        offset = start + length
    return records
