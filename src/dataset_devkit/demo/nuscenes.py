"""Demo step: sample drive recordings → evidence → staging nuScenes dataroot → official loader.

The recordings are generated at demo time with the real writers (foxglove-sdk for a
protobuf MCAP file, PyAV for a decoded recording folder), so nothing binary is committed.
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
)
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_decoded, write_sample_mcap

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
    """Build and export one MCAP and one decoded sample recording under *out*."""
    out.mkdir(parents=True, exist_ok=True)
    recordings = out / "recordings"
    recordings.mkdir(exist_ok=True)
    sources = {
        "mcap": write_sample_mcap(recordings / "drive-0001.mcap", _DRIVE),
        "decoded": write_sample_decoded(
            recordings / "drive-0002", _DRIVE, recording_id="drive-0002"
        ),
    }
    lines: list[tuple[str, str]] = []
    hashes: dict[str, str] = {}
    for kind, source in sources.items():
        config = PipelineConfig(
            namespace=f"demo-{kind}", scenario=_CONFIG, split=SplitConfig(test_fraction=0.5)
        )
        evidence = build_evidence([source], config, out / f"evidence-{kind}")
        staging = out / f"staging-{kind}"
        result = export_dataset(staging, evidence, config=config)
        derived = evidence.document.derived
        splits = [s.split for s in derived.splits]
        lines += [
            (f"{kind} recording", source.name),
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
    return DemoReport(title="nuScenes export", lines=lines, root_sha256=hashes)
