"""ROS 1 ``.bag`` files and sqlite3 ROS 2 bags, read through rosbags' ``AnyReader``.

rosbags reads both containers without a ROS install: it registers the message definitions
the bag carries (ROS 1 bags always carry them; ROS 2 bags since Iron) and falls back to the
typestore of ``ingest.ros_distro`` for a bag without them, and it spells ROS 1 type names
the ROS 2 way (``sensor_msgs/msg/Image``) so the same normalizers read both. Messages are
iterated raw and deserialized only for wanted channels.

A ROS 1 bag cut by a crash has no index, and rosbags refuses it; the message says to
reindex it (``rosbag reindex``) rather than guessing at what the cut lost.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dataset_devkit.errors import FormatError, MissingDependencyError, UnsafePathError
from dataset_devkit.nuscenes.ingest.backend import Channel, Message, ReadState, Wanted
from dataset_devkit.nuscenes.ingest.mcap import decode_errors
from dataset_devkit.nuscenes.ingest.messages import DEFAULT_ROS_DISTRO, ros_typestore
from dataset_devkit.nuscenes.ingest.rosbag import BAG_METADATA_FILE, BagLayout
from dataset_devkit.nuscenes.ingest.schemas import canonical_schema_name, schema_info
from dataset_devkit.nuscenes.ingest.source import (
    SourceDigest,
    SourceIdentity,
    open_regular,
    source_identity,
)

__all__ = [
    "BACKEND_ROS1",
    "BACKEND_SQLITE3",
    "ROS1_SUFFIX",
    "AnyBagLog",
    "message_errors",
    "replay_anybag",
    "rosbags_reader",
]

BACKEND_ROS1 = "rosbag1"
BACKEND_SQLITE3 = "rosbag2_sqlite3"
ROS1_SUFFIX = ".bag"
#: The first bytes of a ROS 1 bag (format version 2.0).
ROS1_MAGIC = b"#ROSBAG V2.0\n"


@contextmanager
def rosbags_reader(path: Path, ros_distro: str, what: Path) -> Iterator[Any]:
    """An open rosbags ``AnyReader``; its refusals as one-line FormatErrors."""
    try:
        from rosbags.highlevel import AnyReader, AnyReaderError
    except ImportError as exc:
        raise MissingDependencyError(
            "rosbags", extra="mcap", purpose="reading ROS 1 and sqlite3 ROS 2 bags"
        ) from exc
    try:
        reader = AnyReader([path], default_typestore=ros_typestore(ros_distro))
        reader.open()
    except AnyReaderError as exc:
        text = str(exc)
        if "not indexed" in text or "reindex" in text:
            raise FormatError(
                "the bag has no index (a recording cut by a crash, or still being written): "
                "reindex it with `rosbag reindex` and build again",
                path=what,
            ) from None
        raise FormatError(f"rosbags cannot read the bag: {text}", path=what) from None
    except (KeyError, ValueError, OSError) as exc:
        raise FormatError(
            f"rosbags cannot read the bag: {type(exc).__name__}: {exc}", path=what
        ) from None
    try:
        yield reader
    finally:
        reader.close()


def message_errors() -> tuple[type[BaseException], ...]:
    """What deserializing a malformed bag message raises (rosbags' own error and the
    decoders' builtins)."""
    from rosbags.highlevel import AnyReaderError

    error: type[BaseException] = AnyReaderError
    return (error, *decode_errors())


def _messages(
    reader: Any,
    path: Path,
    wanted: Wanted,
    state: ReadState | None,
    only: frozenset[str] | None = None,
) -> Iterator[Message]:
    """Messages in log-time order; with *only*, just those topics are read from the files."""
    errors = message_errors()
    described: dict[int, Channel] = {}
    encoding = "cdr" if reader.is2 else "ros1"
    for connection in reader.connections:
        described[id(connection)] = Channel(
            topic=connection.topic,
            schema=canonical_schema_name(connection.msgtype),
            encoding=encoding,
        )
    selected = [c for c in reader.connections if c.topic in only] if only is not None else None
    if selected == []:
        return
    for connection, log_time, raw in reader.messages(connections=selected or ()):
        info = described[id(connection)]
        if state is not None:
            state.messages += 1
        known = schema_info(info.schema)
        if known is None or not wanted(info):
            yield Message(info, log_time, None)
            continue
        try:
            records = known.normalize(reader.deserialize(raw, connection.msgtype))
        except errors as exc:
            raise FormatError(
                f"topic {info.topic!r} (schema {connection.msgtype!r}): malformed message at "
                f"log_time {log_time}: {type(exc).__name__}: {exc}",
                path=path,
            ) from exc
        yield Message(info, log_time, records)


class AnyBagLog:
    """A ROS 1 ``.bag`` file or a sqlite3 ROS 2 bag folder, as one recording."""

    def __init__(
        self, path: Path, layout: BagLayout | None, *, ros_distro: str = DEFAULT_ROS_DISTRO
    ) -> None:
        self.path = path
        self.layout = layout
        self.backend = BACKEND_ROS1 if layout is None else BACKEND_SQLITE3
        self.ros_distro = ros_distro

    def digest_members(self) -> list[tuple[str, Path]]:
        if self.layout is None:
            return [(self.path.name, self.path)]
        return [(BAG_METADATA_FILE, self.layout.metadata)] + [
            (p.name, p) for p in self.layout.parts
        ]

    def read(
        self, wanted: Wanted, state: ReadState, digest: SourceDigest | None = None
    ) -> Iterator[Message]:
        """Hash every member (refusing links and special files), then read the messages;
        the members must not change while the bag is read."""
        before: list[tuple[Path, SourceIdentity]] = []
        for name, member in self.digest_members():
            with open_regular(member, name if name == BAG_METADATA_FILE else "recording") as f:
                if self.layout is None:
                    _check_ros1_magic(f.read(len(ROS1_MAGIC)), member)
                    f.seek(0)
                if digest is not None:
                    digest.add_file(name, f, member)
                if name == BAG_METADATA_FILE and self.layout is not None:
                    if f.read() != self.layout.raw:
                        raise UnsafePathError("changed while it was read", path=member)
                    continue
                before.append((member, source_identity(f)))
        with rosbags_reader(self.path, self.ros_distro, self.path) as reader:
            yield from _messages(reader, self.path, wanted, state)
        for member, identity in before:
            with open_regular(member) as f:
                if source_identity(f) != identity:
                    raise UnsafePathError("recording changed while it was read", path=member)
        state.identities.extend(before)


def _check_ros1_magic(head: bytes, path: Path) -> None:
    if head != ROS1_MAGIC:
        raise FormatError(
            f"not a ROS 1 bag: expected the header {ROS1_MAGIC!r}, found {head!r}", path=path
        )


def replay_anybag(
    path: Path,
    members: tuple[tuple[Path, SourceIdentity], ...],
    topics: frozenset[str],
    ros_distro: str,
) -> Iterator[Message]:
    """The second pass: the messages of *topics*, decoded, from an unchanged bag."""
    for member, expected in members:
        with open_regular(member) as f:
            if source_identity(f) != expected:
                raise UnsafePathError("recording changed since it was ingested", path=member)
    with rosbags_reader(path, ros_distro, path) as reader:
        yield from _messages(reader, path, lambda c: c.topic in topics, None, topics)
