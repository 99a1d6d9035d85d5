"""Ship the layout with the release packer: base + depth, restore base only, then depth."""

from __future__ import annotations

import numpy as np
import pytest

from dataset_devkit.release import PackOptions, pack_release, restore_release
from dataset_devkit.stereo import DepthNotInstalledError, StereoDataset, validate_stereo


def test_pack_base_and_depth_then_restore_base_only_and_then_depth(built, tmp_path):
    release = pack_release(
        built.root, tmp_path / "GenVR-duo-20261023-packages", PackOptions(package_limit=64 * 1024)
    ).release
    assert len(list((release / "base").glob("base-*.tar"))) >= 2  # 64 KiB packages
    assert list((release / "depth").glob("depth-*.tar"))
    data = tmp_path / "data"
    restore_release(release, data, ["base"])
    root = data / "GenVR-duo-20261023"
    assert not list(root.rglob("depth-*"))
    base = StereoDataset(root)
    original = StereoDataset(built.root, use_depth=True)
    assert np.array_equal(base.read(2, [0, 12]).left, original.read(2, [0, 12]).left)
    with pytest.raises(DepthNotInstalledError, match=r"unpack\.py --depth"):
        StereoDataset(root, use_depth=True)
    assert validate_stereo(root).issues == []

    restore_release(release, data, ["depth"])
    deep = StereoDataset(root, use_depth=True).read(1, [3, 11])
    expected = original.read(1, [3, 11])
    assert deep.depth is not None and expected.depth is not None
    assert np.array_equal(deep.depth["right"], expected.depth["right"])
    assert np.array_equal(deep.right, expected.right)
    assert validate_stereo(root, with_depth=True, full=True).issues == []
