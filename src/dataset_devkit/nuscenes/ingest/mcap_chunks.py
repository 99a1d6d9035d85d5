"""The records inside an MCAP chunk, read without copying the messages out of it.

mcap's stream reader breaks each chunk up through a ``BytesIO``: the chunk is copied once
into it and every message once more out of it. For camera recordings, where almost every
byte is image payload (a 1280x720 rgb8 frame is 2.8 MB), those two copies per pass cost more
than parsing everything else. Here the stream reader hands over whole chunks
(``emit_chunks``), the chunk's records are framed by their opcode and length, and mcap's own
record classes read each one from a memoryview: a message's ``data`` is a view into the
chunk's bytes, and a decoder that takes buffers (rosbags' CDR deserializer) keeps it a view.

The same framing serves the salvage of a chunk a crashed recorder left incomplete
(:mod:`.salvage`), which stops at the first record that is cut instead of refusing it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from dataset_devkit.errors import FormatError
from dataset_devkit.extras import import_optional

__all__ = ["chunk_payload", "chunk_records"]

_HEAD = struct.Struct("<BQ")  # opcode, record length
_SCHEMA, _CHANNEL, _MESSAGE = 0x03, 0x04, 0x05
#: The module that decompresses each chunk compression of the MCAP specification.
_CODECS = {"zstd": "zstandard", "lz4": "lz4.frame"}


class _View:
    """A read-only file over a memoryview whose reads are slices of it (no copy).

    mcap's ``ReadDataStream`` needs only ``read(n)``; a short slice at the end makes its
    fixed-width reads fail the way a short file read does (``struct.error``).
    """

    __slots__ = ("_pos", "_view")

    def __init__(self, view: memoryview) -> None:
        self._view = view
        self._pos = 0

    def read(self, n: int = -1) -> memoryview:
        start = self._pos
        end = len(self._view) if n < 0 else min(start + n, len(self._view))
        self._pos = end
        return self._view[start:end]


def chunk_records(raw: bytes | memoryview, *, complete_only: bool = False) -> Iterator[Any]:
    """The Schema, Channel and Message records of a chunk's uncompressed *raw* records.

    Other record kinds inside a chunk are skipped, as mcap's reader skips them. A record cut
    short by the end of *raw* raises mcap's ``EndOfFile``; with *complete_only* (a salvaged
    chunk) iteration stops before it instead.
    """
    from mcap.data_stream import ReadDataStream
    from mcap.exceptions import EndOfFile
    from mcap.records import Channel, Message, Schema

    view = memoryview(raw)
    offset, size = 0, len(view)
    while offset < size:
        if offset + _HEAD.size > size:
            if complete_only:
                return
            raise EndOfFile()
        opcode, length = _HEAD.unpack_from(view, offset)
        start = offset + _HEAD.size
        if start + length > size:
            if complete_only:
                return
            raise EndOfFile()
        if opcode in (_SCHEMA, _CHANNEL, _MESSAGE):
            # ReadDataStream only calls read(): the view file stands in for IO[bytes].
            stream = ReadDataStream(cast("IO[bytes]", _View(view[start : start + length])))
            if opcode == _SCHEMA:
                yield Schema.read(stream)
            elif opcode == _CHANNEL:
                yield Channel.read(stream)
            else:
                yield Message.read(stream, length)
        offset = start + length


def chunk_payload(chunk: Any, path: Path) -> bytes | memoryview:
    """The uncompressed records of an MCAP ``Chunk`` record (its own bytes when stored
    uncompressed); MissingDependencyError when its codec is not installed."""
    data: bytes | memoryview = chunk.data
    if chunk.compression == "":
        return data
    if chunk.compression not in _CODECS:
        raise FormatError(
            f"a chunk is compressed with {chunk.compression!r}; MCAP defines zstd and lz4",
            path=path,
        )
    codec = import_optional(
        _CODECS[chunk.compression], extra="mcap", purpose=f"{path}: reading its compressed chunks"
    )
    if chunk.compression == "zstd":
        return bytes(codec.decompress(data, chunk.uncompressed_size))
    return bytes(codec.decompress(data))
