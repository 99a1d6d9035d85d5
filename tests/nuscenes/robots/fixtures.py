"""Session fixtures: each (container, scenario) recording is written once per test session.

Import ``robot_recording`` into a ``conftest.py`` to use it (``tests/nuscenes/conftest.py``
does). The recordings are shared read-only: copy one before damaging it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.nuscenes.robots.recording import Kind, RecordedRobot, write_recording
from tests.nuscenes.robots.spec import Scenario

__all__ = ["RobotRecordings", "robot_recording"]

RobotRecordings = Callable[[Kind, Scenario], RecordedRobot]


@pytest.fixture(scope="session")
def robot_recording(tmp_path_factory: pytest.TempPathFactory) -> RobotRecordings:
    """``robot_recording(kind, scenario)`` → the :class:`RecordedRobot`, written on first use.

    Example: ``rec = robot_recording("ros2_mcap", NAV2_TURTLEBOT)``, then build ``rec.path``.
    """
    root = tmp_path_factory.mktemp("robots")
    cache: dict[tuple[Kind, Scenario], RecordedRobot] = {}

    def get(kind: Kind, scenario: Scenario) -> RecordedRobot:
        key = (kind, scenario)
        if key not in cache:
            cache[key] = write_recording(kind, root / kind, scenario)
        return cache[key]

    return get
