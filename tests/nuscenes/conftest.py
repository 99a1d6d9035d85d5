"""Fixtures for the nuScenes tests: tiny recordings written with the real writers."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.nuscenes import build_evidence
from dataset_devkit.nuscenes.evidence import Evidence
from dataset_devkit.nuscenes.samples import write_sample_decoded, write_sample_mcap
from tests.nuscenes.helpers import CONFIG, DRIVE, write_ros2
from tests.nuscenes.robots.fixtures import robot_recording as robot_recording


@pytest.fixture(scope="session")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One recording per writer, shared read-only by the session."""
    root = tmp_path_factory.mktemp("recordings")
    return {
        "protobuf": write_sample_mcap(root / "drive-pb.mcap", DRIVE),
        "json": write_sample_mcap(root / "drive-json.mcap", DRIVE, encoding="json"),
        "ros2": write_ros2(root / "drive-ros2"),
        "decoded": write_sample_decoded(
            root / "drive-decoded", DRIVE, recording_id="drive-decoded"
        ),
    }


@pytest.fixture(scope="session")
def mcap_evidence(
    tmp_path_factory: pytest.TempPathFactory, recordings: dict[str, Path]
) -> Evidence:
    """Evidence of the protobuf MCAP recording (read-only: copy before tampering)."""
    return build_evidence(
        [recordings["protobuf"]], CONFIG, tmp_path_factory.mktemp("ev") / "evidence"
    )


@pytest.fixture(scope="session")
def decoded_evidence(
    tmp_path_factory: pytest.TempPathFactory, recordings: dict[str, Path]
) -> Evidence:
    return build_evidence(
        [recordings["decoded"]], CONFIG, tmp_path_factory.mktemp("ev") / "evidence"
    )
