"""Hand-written code against the libraries of the field: same results.

``jpeg_dimensions`` now reads headers with libjpeg-turbo; the marker walk it replaced is kept
here as the reference. ``geometry`` stays hand-written (its bytes feed the root hash) and is
checked against pyquaternion, the quaternion library nuscenes-devkit itself uses.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pytest
from PIL import Image
from pyquaternion import Quaternion

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common import geometry as g
from dataset_devkit.nuscenes.common.jpeg import jpeg_dimensions
from dataset_devkit.nuscenes.spec import Quat

_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _marker_walk(data: bytes) -> tuple[int, int]:
    """The hand-written SOF search this module used before simplejpeg."""
    pos = 2
    while pos + 4 <= len(data):
        marker = data[pos + 1]
        if marker == 0xFF:
            pos += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        if marker in _SOF:
            return (data[pos + 7] << 8 | data[pos + 8], data[pos + 5] << 8 | data[pos + 6])
        pos += 2 + (data[pos + 2] << 8 | data[pos + 3])
    raise AssertionError("no frame header")


def _jpegs() -> list[bytes]:
    rng = np.random.default_rng(3)
    out = []
    cases: list[tuple[str, tuple[int, int], dict[str, Any]]] = [
        ("RGB", (64, 48), {}),
        ("RGB", (1, 1), {}),
        ("RGB", (1280, 720), {"quality": 50}),
        ("L", (33, 17), {}),
        ("RGB", (61, 37), {"progressive": True}),
        ("RGB", (40, 24), {"subsampling": 0, "exif": b"Exif\x00\x00" + bytes(64)}),
        ("RGB", (129, 65), {"subsampling": 1, "restart_marker_blocks": 1}),
        ("CMYK", (20, 30), {}),
    ]
    for mode, (w, h), options in cases:
        bands = {"RGB": 3, "L": 1, "CMYK": 4}[mode]
        pixels = rng.integers(0, 255, (h, w, bands), dtype=np.uint8)
        image = Image.frombytes(mode, (w, h), pixels.tobytes())
        buf = io.BytesIO()
        image.save(buf, format="JPEG", **options)
        out.append(buf.getvalue())
    return out


@pytest.mark.parametrize("data", _jpegs(), ids=lambda d: str(len(d)))
def test_jpeg_dimensions_equal_the_marker_walk_also_on_a_header_only_prefix(data: bytes) -> None:
    assert jpeg_dimensions(data) == _marker_walk(data)
    header = data[: data.index(b"\xff\xda") + 16]  # up to the scan: no entropy data
    assert jpeg_dimensions(header) == _marker_walk(data)


def _unit(rng: np.random.Generator) -> Quat:
    return g.quat_normalize(tuple(float(c) for c in rng.normal(size=4)))


def _canonical(q: Quaternion) -> tuple[float, ...]:
    return tuple(q.q) if q.w >= 0 else tuple(-q.q)


def test_geometry_agrees_with_pyquaternion_within_1e_12() -> None:
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(2000):
        a, b = _unit(rng), _unit(rng)
        x, y, z = (float(c) for c in rng.normal(size=3) * 100)
        v = (x, y, z)
        t = float(rng.random())
        rvec = [float(c) for c in rng.normal(size=3)]
        pairs: list[tuple[tuple[float, ...], tuple[float, ...]]] = [
            (g.quat_mul(a, b), tuple((Quaternion(a) * Quaternion(b)).q)),
            (g.quat_rotate(a, v), tuple(Quaternion(a).rotate(list(v)))),
            (g.slerp(a, b, t), _canonical(Quaternion.slerp(Quaternion(a), Quaternion(b), t))),
            (
                g.rvec_to_quat(rvec),
                _canonical(Quaternion(axis=list(rvec), angle=math.hypot(*rvec))),
            ),
            (g.compose((v, a), (v, b))[1], _canonical(Quaternion(a) * Quaternion(b))),
        ]
        for ours, theirs in pairs:
            worst = max(
                worst, max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(ours, theirs, strict=True))
            )
    assert worst < 1e-12


def test_a_jpeg_cut_before_its_scan_header_is_refused_not_sized() -> None:
    """The marker walk sized such a stream from its SOF alone; libjpeg refuses it."""
    data = _jpegs()[0]
    cut = data[: data.index(b"\xff\xda")]
    assert _marker_walk(data[: len(cut)]) == (64, 48)
    with pytest.raises(FormatError, match="frame is a malformed JPEG"):
        jpeg_dimensions(cut, "frame")
