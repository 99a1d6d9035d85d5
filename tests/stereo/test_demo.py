"""The stereo demo step builds, validates and reads a tiny set and draws a contact sheet."""

from __future__ import annotations

import numpy as np
from PIL import Image

from dataset_devkit.demo.stereo import depth_colormap, run


def test_demo_writes_a_contact_sheet_of_three_frames_by_three_columns(tmp_path):
    report = run(tmp_path / "stereo")
    sheet = Image.open(tmp_path / "stereo" / "contact_sheet.png")
    assert sheet.size == (3 * 128, 3 * 72)
    assert set(report.root_sha256) == {"stereo"}
    assert ("validated", "2 pairs, depth checked, 0 issues") in report.lines


def test_depth_colormap_paints_invalid_pixels_black():
    depth = np.array([[0.0, 1.0, 2.0]], dtype=np.float32)
    colours = depth_colormap(depth)
    assert colours[0, 0].tolist() == [0, 0, 0]
    assert colours[0, 1].tolist() != colours[0, 2].tolist()
