"""Demo step: ``dataset-devkit build`` on two sample recordings, then ``validate`` and ``inspect``.

Two protobuf MCAP drives are written at demo time with the real writer (mcap, protobuf), a TOML
build config next to it, and the build service publishes ``out/v1.0-trainval`` read-only;
the published dataroot is then revalidated, inspected and queried through the SDK.
"""

from __future__ import annotations

from pathlib import Path

from dataset_devkit.demo.report import DemoReport
from dataset_devkit.nuscenes.build.service import build_dataset
from dataset_devkit.nuscenes.config import load_build_config
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap
from dataset_devkit.nuscenes.sdk.dataset import Dataset
from dataset_devkit.nuscenes.validation.dataroot import validate_dataroot
from dataset_devkit.nuscenes.validation.summary import inspect_dataroot

__all__ = ["run"]

_DRIVES = {
    "drive-0001.mcap": SampleDrive(cameras=("cam_front", "cam_back", "cam_left"), duration_s=8.0),
    "drive-0002.mcap": SampleDrive(
        cameras=("cam_front", "cam_back", "cam_left"),
        duration_s=8.0,
        start_ns=1_699_970_000_000_000_000,
    ),
}
_CONFIG = """\
namespace = "demo-publish"

[sources]
type = "mcap_hf"
paths = ["recordings/drive-0001.mcap", "recordings/drive-0002.mcap"]

[scenario]
scene_duration_s = 4.0
min_scene_duration_s = 2.0

[split]
test_fraction = 0.5

[image]
jpeg_quality = 95

[publication]
version = "v1.0-trainval"
refuse_overwrite = true

[paths]
output_dir = "out"
"""


def run(out: Path) -> DemoReport:
    """Build, publish, validate, inspect and query two sample MCAP recordings under *out*."""
    (out / "recordings").mkdir(parents=True, exist_ok=True)
    for name, drive in _DRIVES.items():
        write_sample_mcap(out / "recordings" / name, drive)
    config_path = out / "build.toml"
    config_path.write_text(_CONFIG, encoding="utf-8")
    result = build_dataset(load_build_config(config_path))
    report = validate_dataroot(result.dataroot)
    report.raise_for_issues()
    summary = inspect_dataroot(result.dataroot).to_json()
    ds = Dataset(result.dataroot)
    scene = ds.table("scene")[0]
    first = ds.scene_samples(scene["token"])[0]
    front = ds.camera(first["token"], "CAM_FRONT")
    scenes = summary["scenes"]
    return DemoReport(
        title="nuScenes build, validate, inspect",
        lines=[
            ("build config", str(config_path)),
            ("published dataroot", f"{result.dataroot} (read-only)"),
            (
                "contents",
                f"{scenes['total']} scenes ({scenes['train']} train / {scenes['test']} test), "
                f"{summary['tables']['sample']} samples, {summary['images']['total']} images",
            ),
            ("channels", ", ".join(summary["channels"])),
            ("source", f"{summary['source_type']}, {summary['privacy']}, {summary['pose_frame']}"),
            (
                "official loader",
                f"{result.loader.loader}: {result.loader.channel} -> {result.loader.filename}",
            ),
            (
                "validate",
                f"OK, {len(report.issues)} issues; validation.json {summary['validation_state']}",
            ),
            ("SDK", f"camera({first['token'][:8]}…, CAM_FRONT) -> {front['filename']}"),
        ],
        root_sha256={"dataroot": result.root_sha256},
        try_next=[
            ("inspect", "--dataroot", str(result.dataroot), "--version", "v1.0-trainval"),
        ],
    )
