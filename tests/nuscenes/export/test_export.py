"""export_dataset: the official layout nuscenes-devkit loads, plus mz_extensions."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from dataset_devkit.errors import ConfigError, DestinationExistsError, UnsafePathError
from dataset_devkit.integrity import build_manifest, verify_tree
from dataset_devkit.nuscenes import export_dataset
from dataset_devkit.nuscenes.evidence import Evidence
from dataset_devkit.nuscenes.spec import (
    EXTENSION_FILES,
    EXTENSIONS_DIR,
    MAP_CATEGORY,
    TABLE_NAMES,
    VERSION,
    PipelineConfig,
)
from tests.nuscenes.helpers import CONFIG

TOKEN = re.compile(r"^[0-9a-f]{32}$")


def _table(root: Path, name: str) -> Any:
    return json.loads((root / VERSION / f"{name}.json").read_text())


@pytest.mark.needs("nuscenes")
def test_official_loader_opens_the_export_and_resolves_an_image(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    from nuscenes.nuscenes import NuScenes
    from PIL import Image

    export_dataset(tmp_path / "staging", mcap_evidence)
    nusc = NuScenes(version=VERSION, dataroot=str(tmp_path / "staging"), verbose=False)
    scene = nusc.scene[0]
    sample = nusc.get("sample", scene["first_sample_token"])
    assert sorted(sample["data"]) == ["CAM_BACK", "CAM_FRONT"]
    path, boxes, intrinsic = nusc.get_sample_data(sample["data"]["CAM_FRONT"])
    assert boxes == []
    assert intrinsic.shape == (3, 3)
    with Image.open(path) as img:
        assert img.size == (32, 24)
    assert nusc.log[0]["map_token"] == nusc.map[0]["token"]


def test_export_writes_every_table_and_extension_and_nothing_else(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    root = tmp_path / "staging"
    result = export_dataset(root, mcap_evidence)
    tables = sorted(p.name for p in (root / VERSION).iterdir())
    assert tables == sorted(f"{n}.json" for n in TABLE_NAMES)
    for empty in ("category", "attribute", "visibility", "instance", "sample_annotation"):
        assert _table(root, empty) == []
    assert sorted(p.name for p in (root / EXTENSIONS_DIR).iterdir()) == sorted(EXTENSION_FILES)
    assert sorted(p.name for p in root.iterdir()) == ["maps", EXTENSIONS_DIR, "samples", VERSION]
    assert result.table_counts["sample_data"] == result.images == len(_table(root, "sample_data"))
    validation = json.loads((root / EXTENSIONS_DIR / "validation.json").read_text())
    assert validation["state"] == "not_run"


def test_tokens_chains_and_timestamps_follow_the_official_rules(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    root = tmp_path / "staging"
    export_dataset(root, mcap_evidence)
    for name in TABLE_NAMES:
        for row in _table(root, name):
            assert TOKEN.match(row["token"]), (name, row["token"])
    samples = {s["token"]: s for s in _table(root, "sample")}
    data = _table(root, "sample_data")
    by_token = {d["token"]: d for d in data}
    for scene in _table(root, "scene"):
        assert re.fullmatch(r"mz-[0-9a-f]{12}-\d{4}", scene["name"])
        token, seen = scene["first_sample_token"], []
        while token:
            seen.append(samples[token])
            token = samples[token]["next"]
        assert seen[-1]["token"] == scene["last_sample_token"]
        assert len(seen) == scene["nbr_samples"]
        assert all(a["timestamp"] < b["timestamp"] for a, b in itertools.pairwise(seen))
    heads = [d for d in data if d["prev"] == ""]
    for head in heads:
        chain = [head]
        while chain[-1]["next"]:
            nxt = by_token[chain[-1]["next"]]
            assert nxt["prev"] == chain[-1]["token"]
            chain.append(nxt)
        assert all(a["timestamp"] < b["timestamp"] for a, b in itertools.pairwise(chain))
    assert sum(1 for d in data if d["next"] == "") == len(heads)
    for d in data:
        assert d["filename"] == f"samples/{d['filename'].split('/')[1]}/{d['token']}.jpg"
        assert d["is_key_frame"] and d["sample_token"] in samples
        assert (root / d["filename"]).is_file()
    poses = _table(root, "ego_pose")
    assert len({p["token"] for p in poses}) == len(data)
    for p in poses:
        assert abs(sum(c * c for c in p["rotation"]) - 1.0) < 1e-9
    (map_record,) = _table(root, "map")
    assert map_record["category"] == MAP_CATEGORY
    assert map_record["log_tokens"] == sorted(log["token"] for log in _table(root, "log"))


def test_export_is_deterministic_to_the_byte(tmp_path: Path, mcap_evidence: Evidence) -> None:
    export_dataset(tmp_path / "a", mcap_evidence)
    export_dataset(tmp_path / "b", mcap_evidence)
    assert build_manifest(tmp_path / "a").root_sha256 == build_manifest(tmp_path / "b").root_sha256


def test_export_refuses_a_non_empty_destination(tmp_path: Path, mcap_evidence: Evidence) -> None:
    dest = tmp_path / "staging"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    with pytest.raises(DestinationExistsError, match="not empty"):
        export_dataset(dest, mcap_evidence)
    assert (dest / "keep.txt").read_text() == "mine"


def test_export_accepts_an_empty_directory_but_refuses_a_symlink(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    (tmp_path / "empty").mkdir()
    export_dataset(tmp_path / "empty", mcap_evidence)
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(UnsafePathError, match="absent or an empty real directory"):
        export_dataset(tmp_path / "link", mcap_evidence)
    assert list((tmp_path / "target").iterdir()) == []


def test_export_refuses_a_config_or_namespace_that_differs_from_the_evidence(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    other = PipelineConfig(namespace="other-ns", scenario=CONFIG.scenario, split=CONFIG.split)
    with pytest.raises(ConfigError, match="namespace: evidence 'test-ns', given 'other-ns'"):
        export_dataset(tmp_path / "staging", mcap_evidence, config=other)
    assert not (tmp_path / "staging").exists()
    export_dataset(tmp_path / "ok", mcap_evidence, config=CONFIG)


def test_export_from_a_path_verifies_the_whole_evidence(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    copy = tmp_path / "evidence"
    shutil.copytree(mcap_evidence.root, copy)
    export_dataset(tmp_path / "staging", copy)
    assert (tmp_path / "staging" / VERSION / "scene.json").is_file()


@pytest.mark.needs("nuscenes")
def test_several_recordings_export_as_several_logs_with_one_scaffold_map(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    from nuscenes.nuscenes import NuScenes

    from dataset_devkit.nuscenes import build_evidence

    sources = [recordings["protobuf"], recordings["json"], recordings["ros2"]]
    evidence = build_evidence(sources, CONFIG, tmp_path / "ev")
    root = tmp_path / "staging"
    export_dataset(root, evidence)
    nusc = NuScenes(version=VERSION, dataroot=str(root), verbose=False)
    assert len(nusc.log) == 3
    assert len(nusc.scene) == 9
    assert len(nusc.sensor) == 2  # one sensor per channel, shared by the recordings
    assert len(nusc.calibrated_sensor) == 6  # one calibration per recording and channel
    assert {log["map_token"] for log in nusc.log} == {nusc.map[0]["token"]}
    splits = json.loads((root / EXTENSIONS_DIR / "split.json").read_text())["assignments"]
    assert {a["split"] for a in splits} == {"train", "test"}
    groups: dict[str, set[str]] = {}
    for a in splits:
        groups.setdefault(a["group_id"], set()).add(a["split"])
    assert all(len(s) == 1 for s in groups.values())


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"staging_dataroot": 3}, "staging_dataroot"),
        ({"evidence": 3}, "evidence"),
        ({"config": {"namespace": "x"}}, "config"),
        ({"workers": 0}, "workers"),
        ({"workers": "2"}, "workers"),
    ],
)
def test_a_wrong_argument_is_a_config_error_before_anything_is_written(
    tmp_path: Path, mcap_evidence: Evidence, kwargs: dict[str, Any], key: str
) -> None:
    args: dict[str, Any] = {"staging_dataroot": tmp_path / "staging", "evidence": mcap_evidence}
    with pytest.raises(ConfigError, match=f"^{key} must be") as info:
        export_dataset(**{**args, **kwargs})
    assert info.value.key == key
    assert not (tmp_path / "staging").exists()


def test_a_staging_root_inside_the_evidence_is_refused_and_the_evidence_stays_intact(
    mcap_evidence: Evidence,
) -> None:
    for inside in (mcap_evidence.root / "staging", mcap_evidence.root / "frames" / "x"):
        with pytest.raises(ConfigError, match="is inside the evidence") as info:
            export_dataset(inside, mcap_evidence)
        assert info.value.key == "staging_dataroot"
        assert not inside.exists()
    assert verify_tree(mcap_evidence.root).ok


def test_export_is_the_same_bytes_whatever_the_number_of_copying_threads(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    # the tables and extensions are written while the frames copy: never a different byte
    roots = {}
    for workers in (1, 2, 3):
        export_dataset(tmp_path / f"w{workers}", mcap_evidence, workers=workers)
        roots[workers] = build_manifest(tmp_path / f"w{workers}").root_sha256
    assert len(set(roots.values())) == 1, roots
