"""From a robot's bag to a published dataroot, as a user does it on the command line.

``recording inspect`` says what a nav2 robot's bag lacks for a build (a GNSS fix) and which
``build.toml`` lines would read it; with those lines ``build`` publishes a dataroot whose
channels are the official camera names, and nuscenes-devkit's own ``list_scenes``,
``render_sample_data`` and ``render_sample`` work on it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.cli.report_check import check_report
from tests.cli_run import run_devkit as run
from tests.nuscenes.robots import NAV2_TURTLEBOT, RecordedRobot, compare_dataroot
from tests.nuscenes.robots.fixtures import RobotRecordings

#: Built through nuscenes-devkit (a build's publish gate is the official loader).
pytestmark = pytest.mark.needs("nuscenes")

HEAD = """namespace = "robots"
[sources]
type = "mcap_hf"
paths = ["{bag}"]
[publication]
version = "v1.0-trainval"
refuse_overwrite = true
[paths]
output_dir = "out"
"""


class Inspected(NamedTuple):
    config: Path
    inspect: subprocess.CompletedProcess[str]
    report: Any
    rec: RecordedRobot
    env: dict[str, str]


@pytest.fixture(scope="module")
def published(
    robot_recording: RobotRecordings, tmp_path_factory: pytest.TempPathFactory
) -> Inspected:
    """The ROS 1 nav2 bag, inspected, with a build.toml made of the inspect's suggestions."""
    rec = robot_recording("ros1", NAV2_TURTLEBOT)
    work = tmp_path_factory.mktemp("robot-build")
    env = _env()
    done = run(env, "recording", "inspect", str(rec.path), "--json")
    report = json.loads(done.stdout)
    config = work / "build.toml"
    config.write_text(
        HEAD.format(bag=rec.path) + "[ingest]\n" + "\n".join(report["recordings"][0]["suggestions"])
    )
    return Inspected(config, done, report, rec, env)


def _env() -> dict[str, str]:
    import dataset_devkit

    env = dict(os.environ)
    source_root = str(Path(dataset_devkit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
    env["MPLBACKEND"] = "Agg"
    return env


def test_inspect_says_the_bag_lacks_a_gnss_fix_and_which_lines_would_read_it(
    published: Inspected,
) -> None:
    assert published.inspect.returncode == 1
    check_report(published.inspect.stdout)
    (recording,) = published.report["recordings"]
    assert recording["container"] == "ROS 1 bag" and recording["build"] == "refused"
    assert recording["problems"] == [
        "no ego pose: the pose source is GNSS and the recording has no GNSS fix"
    ]
    roles = {t["topic"]: t["role"] for t in recording["topics"]}
    assert roles["/tf_static"] == "static transforms" and roles["/odom"] == "ignored"
    assert roles["/oakd/rgb/preview/image_raw"] == "camera"
    assert recording["suggestions"][:3] == ["[ingest.pose]", 'source = "tf"', 'world_frame = "map"']
    assert 'calibration_topic = "/camera/left/camera_info"' in recording["suggestions"]
    tree = {(e["parent"], e["child"]): e["static"] for e in recording["transforms"]}
    assert tree[("map", "odom")] is False and tree[("base_link", "base_footprint")] is True


def test_the_suggested_config_reads_the_bag_and_builds_a_published_dataroot(
    published: Inspected,
) -> None:
    config, _, _, rec, env = published
    ready = run(env, "recording", "inspect", str(rec.path), "--config", str(config))
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert "build: ready" in ready.stdout
    assert "ego pose: tf map -> base_link" in ready.stdout
    built = run(env, "build", str(config), "--json")
    assert built.returncode == 0, built.stderr
    result = json.loads(built.stdout)
    assert sorted(result["channels"]) == ["CAM_FRONT", "CAM_FRONT_LEFT"]
    dataroot = config.parent / "out" / "v1.0-trainval"
    channels = {"camera_left": "CAM_FRONT", "oakd_rgb": "CAM_FRONT_LEFT"}
    comparison = compare_dataroot(
        dataroot,
        rec,
        world_frame="map",
        vehicle_frame="base_link",
        channels=channels,
    )
    assert comparison.mismatches == []
    validated = run(env, "validate", str(dataroot))
    assert validated.returncode == 0, validated.stderr


def test_nuscenes_devkit_renders_the_robot_dataroot(published: Inspected, tmp_path: Path) -> None:
    config, env = published.config, published.env
    dataroot = config.parent / "out" / "v1.0-trainval"
    if not dataroot.exists():
        built = run(env, "build", str(config))
        assert built.returncode == 0, built.stderr
    script = f"""
import matplotlib
matplotlib.use("Agg")
from nuscenes.nuscenes import NuScenes

nusc = NuScenes(version="v1.0-trainval", dataroot={str(dataroot)!r}, verbose=False)
nusc.list_scenes()
sample = nusc.sample[0]
nusc.render_sample_data(sample["data"]["CAM_FRONT"], out_path={str(tmp_path / "front.png")!r})
nusc.render_sample(sample["token"], out_path={str(tmp_path / "sample.png")!r})
print("rendered", sorted(sample["data"]))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "rendered ['CAM_FRONT', 'CAM_FRONT_LEFT']" in done.stdout
    assert "mz-" in done.stdout  # list_scenes names our scenes
    for name in ("front.png", "sample.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
