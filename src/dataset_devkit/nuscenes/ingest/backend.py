"""What every container backend gives the rest of ingest: channels and decoded messages.

A backend (MCAP files and ROS 2 MCAP bags in :mod:`.mcap`, ROS 1 bags and sqlite3 ROS 2
bags in :mod:`.anybag`) reads its files and yields :class:`Message` values in recording
order; it never decides what a topic is for, picks cameras or computes poses. It decodes
only the channels a ``wanted`` predicate accepts (rosbags' "raw iteration, explicit decode"),
so a recording's hours of camera data cost nothing in a pass that needs only transforms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dataset_devkit.nuscenes.ingest.records import Normalized
from dataset_devkit.nuscenes.ingest.source import SourceIdentity

__all__ = ["Channel", "Message", "MessageLog", "ReadState", "Wanted"]


@dataclass(frozen=True, slots=True)
class Channel:
    """One topic of a recording as its container describes it."""

    topic: str
    #: Canonical schema name (ROS 1 ``pkg/Type`` spelled ``pkg/msg/Type``); ``""`` if none.
    schema: str
    #: The container's message encoding (``cdr``, ``protobuf``, ``json``, ``ros1``).
    encoding: str


@dataclass(frozen=True, slots=True)
class Message:
    """One message: its channel, log time, and its normalized records if it was wanted."""

    channel: Channel
    log_time_ns: int
    #: None when the channel was not wanted (the message was counted, not decoded).
    records: list[Normalized] | None


Wanted = Callable[[Channel], bool]
"""Whether a channel's messages must be decoded."""


@dataclass
class ReadState:
    """What a pass over a recording learned besides its messages."""

    #: Messages read so far, over every member (wanted or not).
    messages: int = 0
    truncated: bool = False
    detail: str = ""
    #: The recording's own metadata record (``recording_id``, ``vehicle``, ``location``).
    metadata: dict[str, str] = field(default_factory=dict)
    #: ``(file, identity)`` of each member read, in order, for the second pass.
    identities: list[tuple[Path, SourceIdentity]] = field(default_factory=list)


class MessageLog(Protocol):
    """A recording as a message log: the interface every container backend implements."""

    #: The backend name recorded in ``source_digest`` (``mcap``, ``rosbag1``, ...).
    backend: str
    #: The file or folder the user named.
    path: Path

    def digest_members(self) -> list[tuple[str, Path]]:
        """``(name, file)`` of every member hashed into the source digest, in order."""
        ...

    def read(self, wanted: Wanted, state: ReadState) -> Iterator[Message]:
        """Every message in recording order; fills *state* (truncation, identities)."""
        ...
