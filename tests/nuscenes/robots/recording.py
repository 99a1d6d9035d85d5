"""Write a scenario in one of five containers and describe what was written.

``write_recording(kind, folder, scenario)`` is the entry point tests use; the returned
:class:`RecordedRobot` has the path to hand to the devkit, the topics and their types as
the container names them, the frame names, and the ground truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias, get_args

from tests.nuscenes.robots.foxglove_mcap import FOXGLOVE_SCHEMAS, write_foxglove_mcap
from tests.nuscenes.robots.messages import Role
from tests.nuscenes.robots.plan import plan
from tests.nuscenes.robots.ros import (
    ROS_TYPES,
    write_cdr_mcap,
    write_rosbag1,
    write_rosbag2,
)
from tests.nuscenes.robots.spec import Scenario
from tests.nuscenes.robots.truth import Truth

__all__ = ["KINDS", "Frames", "Kind", "RecordedRobot", "TopicInfo", "write_recording"]

#: ``ros2_mcap``/``ros2_sqlite3``: rosbag2 folders (rosbags); ``ros1``: a ``.bag`` (rosbags);
#: ``foxglove_mcap``: Foxglove protobuf schemas (foxglove-sdk); ``ros2_cdr_mcap``: one MCAP
#: file of ROS 2 CDR messages, profile ``ros2`` (mcap + mcap-ros2-support).
Kind: TypeAlias = Literal["ros2_mcap", "ros2_sqlite3", "ros1", "foxglove_mcap", "ros2_cdr_mcap"]
KINDS: Final[tuple[Kind, ...]] = get_args(Kind)


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic as written: its message type in the container's own naming, and count.

    ``msgtype``: ``sensor_msgs/msg/Image`` (ROS 2 and plain MCAP), ``sensor_msgs/Image``
    (ROS 1 connection header), ``foxglove.RawImage`` (Foxglove). ``count``: messages
    written (for a damaged ROS 1 bag, ``RecordedRobot.readable`` has what survives).
    """

    topic: str
    role: Role
    msgtype: str
    count: int
    publishers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Frames:
    """Frame names of a recording (REP-105)."""

    world: str
    odom: str
    odom_child: str
    base_link: str
    base_footprint: str
    #: Camera name → optical frame (the images' ``frame_id``).
    cameras: dict[str, str]
    gnss: str | None


@dataclass(frozen=True, slots=True)
class RecordedRobot:
    """One written recording.

    ``path``: the bag folder (``ros2_*``), the ``.bag`` file (``ros1``) or the ``.mcap``
    file (``foxglove_mcap``, ``ros2_cdr_mcap``). ``camera_topics``/``calibration_topics``:
    camera name → topic. ``readable``: per topic, the messages a reader can reach (differs
    from ``topics[t].count`` only for a damaged ROS 1 bag).
    """

    kind: Kind
    scenario: Scenario
    path: Path
    topics: dict[str, TopicInfo]
    truth: Truth
    camera_topics: dict[str, str]
    calibration_topics: dict[str, str]
    frames: Frames
    readable: dict[str, int]

    @property
    def start_ns(self) -> int:
        """The scenario's start stamp: the first camera frames are at or just after it."""
        return self.scenario.start_ns


def _ros1_name(msgtype: str) -> str:
    package, _, name = msgtype.split("/")
    return f"{package}/{name}"


def write_recording(kind: Kind, folder: Path, scenario: Scenario) -> RecordedRobot:
    """Write *scenario* as a *kind* recording inside *folder* (named after the scenario)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, found {kind!r}")
    if scenario.empty_schema_topics and kind != "ros2_cdr_mcap":
        raise ValueError(f"{scenario.name}: empty schema definitions exist only in ros2_cdr_mcap")
    if scenario.ros1_damage != "none" and kind != "ros1":
        raise ValueError(f"{scenario.name}: ROS 1 damage needs kind 'ros1', found {kind!r}")
    folder.mkdir(parents=True, exist_ok=True)
    layout = plan(scenario)
    counts = {t: len(v) for t, v in layout.truth.stamps.items()}
    readable = dict(counts)
    if kind in ("ros2_mcap", "ros2_sqlite3"):
        storage = "mcap" if kind == "ros2_mcap" else "sqlite3"
        path = write_rosbag2(folder / f"{scenario.name}_{storage}", layout, storage)
    elif kind == "ros1":
        path, readable = write_rosbag1(folder / f"{scenario.name}.bag", layout)
    elif kind == "foxglove_mcap":
        path = write_foxglove_mcap(folder / f"{scenario.name}_foxglove.mcap", layout)
    else:
        path = write_cdr_mcap(folder / f"{scenario.name}_ros2.mcap", layout)

    def msgtype(role: Role) -> str:
        if kind == "foxglove_mcap":
            return FOXGLOVE_SCHEMAS[role]
        return _ros1_name(ROS_TYPES[role]) if kind == "ros1" else ROS_TYPES[role]

    topics = {
        t.topic: TopicInfo(t.topic, t.role, msgtype(t.role), counts[t.topic], t.publishers)
        for t in layout.topics
    }
    return RecordedRobot(
        kind=kind,
        scenario=scenario,
        path=path,
        topics=topics,
        truth=layout.truth,
        camera_topics={c.name: c.topic for c in scenario.cameras},
        calibration_topics={c.name: c.info_topic for c in scenario.cameras},
        frames=Frames(
            world="map",
            odom="odom",
            odom_child=scenario.odom_child,
            base_link="base_link",
            base_footprint="base_footprint",
            cameras={c.name: c.optical_frame for c in scenario.cameras},
            gnss="gps_link" if scenario.gnss else None,
        ),
        readable=readable,
    )
