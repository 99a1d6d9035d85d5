"""Demo step: sample drive recordings → evidence → staging nuScenes dataroot → official loader.

The recordings are generated at demo time with the real writers (the mcap writer for a
protobuf MCAP file, PyAV for a decoded recording folder, rosbags for a robot's ROS 2 bag),
so nothing binary is committed. The robot's bag has no GNSS: its ``build.toml`` takes the
poses from the transform tree and maps its camera topics to official channels.
"""

from __future__ import annotations

from pathlib import Path

from dataset_devkit.demo.report import DemoReport
from dataset_devkit.errors import MissingDependencyError
from dataset_devkit.integrity import build_manifest
from dataset_devkit.integrity.numbers import count, format_size
from dataset_devkit.nuscenes import (
    PipelineConfig,
    ScenarioConfig,
    SelectionRule,
    SplitConfig,
    build_evidence,
    export_dataset,
    load_build_config,
)
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_decoded, write_sample_mcap
from dataset_devkit.nuscenes.samples_robot import SampleRobot, robot_cameras, write_sample_robot

__all__ = ["run"]

_DRIVE = SampleDrive(cameras=("cam_front", "cam_back", "cam_left"), duration_s=12.0, fps=10.0)
_CONFIG = ScenarioConfig(
    scene_duration_s=4.0,
    min_scene_duration_s=2.0,
    rules=(
        SelectionRule(kind="require_valid"),
        SelectionRule(kind="min_mean_speed_mps", value=1.0),
    ),
)


#: A small robot recording: two cameras at 10 Hz, small frames, so the demo stays quick.
_ROBOT = SampleRobot(duration_s=25.0, fps=10.0, width=160, height=120, cameras=robot_cameras(2))
#: What a user writes for their own robot: recordings, the tf pose source, the camera mapping.
_ROBOT_TOML = """\
namespace = "demo-robot"

[sources]
type = "mcap_hf"
paths = ["recordings/robot-bag"]

[ingest]
vehicle_frame = "base_footprint"

[ingest.pose]
source = "tf"
world_frame = "map"

[[ingest.cameras]]
topic = "/oakd/rgb/preview/image_raw"
channel = "CAM_FRONT"
calibration_topic = "/oakd/rgb/preview/camera_info"

[[ingest.cameras]]
topic = "/rear_camera/image_raw"
channel = "CAM_BACK"
calibration_topic = "/rear_camera/camera_info"

[scenario]
scene_duration_s = 8.0
min_scene_duration_s = 4.0

[split]
test_fraction = 0.5

[image]
jpeg_quality = 95

[publication]
version = "v1.0-trainval"
refuse_overwrite = true

[paths]
output_dir = "robot-out"
"""


def _official_loader_check(dataroot: Path) -> str:
    """Open the staging dataroot with nuscenes-devkit and resolve the first front image."""
    try:
        from nuscenes.nuscenes import NuScenes
    except ImportError as exc:
        raise MissingDependencyError("nuscenes", extra="nuscenes", purpose="the demo") from exc
    nusc = NuScenes(version="v1.0-trainval", dataroot=str(dataroot), verbose=False)
    sample = nusc.get("sample", nusc.scene[0]["first_sample_token"])
    path = Path(nusc.get_sample_data_path(sample["data"]["CAM_FRONT"]))
    return f"{len(nusc.scene)} scenes, {len(nusc.sample_data)} images; first CAM_FRONT {path.name}"


def run(out: Path) -> DemoReport:
    """Build and export an MCAP, a decoded and a robot (ROS 2 bag) sample recording."""
    out.mkdir(parents=True, exist_ok=True)
    recordings = out / "recordings"
    recordings.mkdir(exist_ok=True)
    robot_toml = out / "robot-build.toml"
    robot_toml.write_text(_ROBOT_TOML, encoding="utf-8")
    robot = load_build_config(robot_toml)
    sources = {
        "mcap": (
            write_sample_mcap(recordings / "drive-0001.mcap", _DRIVE),
            _pipeline_config("mcap"),
        ),
        "decoded": (
            write_sample_decoded(recordings / "drive-0002", _DRIVE, recording_id="drive-0002"),
            _pipeline_config("decoded"),
        ),
        "robot": (write_sample_robot(recordings / "robot-bag", _ROBOT), robot.pipeline),
    }
    lines: list[tuple[str, str]] = []
    hashes: dict[str, str] = {}
    for kind, (source, config) in sources.items():
        evidence = build_evidence([source], config, out / f"evidence-{kind}")
        staging = out / f"staging-{kind}"
        result = export_dataset(staging, evidence, config=config)
        derived = evidence.document.derived
        splits = [s.split for s in derived.splits]
        lines.append((f"{kind} recording", source.name))
        if kind == "robot":
            lines.append(("robot build config", f"{robot_toml} (poses from tf in map)"))
        lines += [
            (
                f"{kind} evidence",
                f"{len(derived.scenes)} scene windows, {len(derived.selected_scene_ids)} "
                f"selected ({splits.count('train')} train / {splits.count('test')} test)",
            ),
            (
                f"{kind} staging dataroot",
                f"{staging} ({count(result.images, 'image')}, "
                f"{format_size(result.image_bytes)} of JPEG)",
            ),
            (f"{kind} official loader", _official_loader_check(staging)),
        ]
        hashes[f"evidence-{kind}"] = evidence.root_sha256
        hashes[f"staging-{kind}"] = build_manifest(staging).root_sha256
    bag = str(sources["robot"][0])
    return DemoReport(
        title="nuScenes export",
        lines=lines,
        root_sha256=hashes,
        try_next=[
            ("recording", "inspect", bag, "--config", str(robot_toml)),
            ("build", str(robot_toml)),
        ],
    )


def _pipeline_config(kind: str) -> PipelineConfig:
    return PipelineConfig(
        namespace=f"demo-{kind}", scenario=_CONFIG, split=SplitConfig(test_fraction=0.5)
    )
