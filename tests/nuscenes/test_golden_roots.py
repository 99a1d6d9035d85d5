"""Today's recordings and configs keep giving byte-identical evidence and dataroots.

The three recordings under ``data/golden/`` are the shapes the pipeline has read from the
start (Foxglove protobuf and JSON MCAP with GNSS fixes, a ROS 2 MCAP bag), committed as
files so that a new release of a writer library cannot change the inputs. Their evidence
and staging dataroot root hashes were recorded before pose sources, topic mapping and new
camera encodings were added: a default ``build.toml`` must still give exactly these bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.integrity import build_manifest
from dataset_devkit.nuscenes import build_evidence, export_dataset
from tests.nuscenes.helpers import CONFIG

GOLDEN = Path(__file__).parent / "data" / "golden"

#: recording -> (evidence root_sha256, staging dataroot root_sha256)
ROOTS = {
    "drive-pb.mcap": (
        "0e4baeb3310c63dcdba63c3b5c48151b51832c8807488bec34222ac0dae08c53",
        "777f11bc9205f80e2985e50e0cd7826dd94a92958412b610ab8f00af7d86129f",
    ),
    "drive-json.mcap": (
        "ab10baa39df48f0884da52d87aa6e213069cab571ff008cc2523f605d3613f92",
        "9680f020b1ffd46be379ebd02e52c0c737fd52f37c68c5859a6d7e4f7752ee8e",
    ),
    "drive-ros2": (
        "9d39f1237416c1c260a4e5dc030a03bd82f88fbd056185a9725ac07c67d922cd",
        "d01efcb8d9ba84839c2c1e16e8723dcf6b9a863984dd91041a0d36833e964686",
    ),
    "drive-ros2/drive-ros2.mcap": (
        "3246a1504af955093e9ecf1d6abd66bb9d1b4b2fbbe9ef1e5836ad31757379c5",
        "06bb12de2d983fa570936569044636de1bd9e64f37c068a066797b32d19844cd",
    ),
}


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_a_default_config_gives_the_recorded_evidence_and_dataroot_bytes(
    name: str, tmp_path: Path
) -> None:
    evidence = build_evidence([GOLDEN / name], CONFIG, tmp_path / "evidence")
    export_dataset(tmp_path / "staging", evidence)
    found = (evidence.root_sha256, build_manifest(tmp_path / "staging").root_sha256)
    assert found == ROOTS[name]
