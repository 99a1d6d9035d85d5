"""Each preview page opened in headless Chromium: no failed request, no console error, every
image loaded at its natural size, a screenshot that is not blank."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dataset_devkit.preview import Kind
from tests.preview.browser import CHROMIUM, PageReport, open_page
from tests.preview.conftest import TREES

pytestmark = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="chromium is not installed (apt-get install -y chromium; .ci/run installs it)",
)


def _colours(png: bytes) -> int:
    with Image.open(io.BytesIO(png)) as image:
        pixels = np.asarray(image.convert("RGB")).astype(np.uint32)
    return len(np.unique((pixels[..., 0] << 16) | (pixels[..., 1] << 8) | pixels[..., 2]))


def _problems(report: PageReport) -> list[str]:
    problems = [f"failed request {r}" for r in report.failed_requests]
    problems += [f"console error {e}" for e in report.console_errors]
    problems += [f"{src} not loaded" for src, done, w, h in report.images if not done or w == 0]
    if _colours(report.screenshot) < 20:
        problems.append("blank screenshot")
    return problems


@pytest.mark.parametrize("kind", list(TREES))
def test_page_loads_cleanly_in_chromium(pages: dict[Kind, Path], kind: Kind) -> None:
    page = pages[kind]
    report = open_page(page)
    assert _problems(report) == []
    on_disk = sorted(p.name for p in page.parent.glob("*.png"))
    assert sorted(src for src, *_ in report.images) == on_disk
    for src, _, width, height in report.images:
        with Image.open(page.parent / src) as image:
            assert (width, height) == image.size


def test_the_check_sees_a_missing_image(pages: dict[Kind, Path], tmp_path: Path) -> None:
    copy = tmp_path / "page"
    shutil.copytree(pages[Kind.RELEASE].parent, copy)
    (copy / "release_packages.png").unlink()
    problems = _problems(open_page(copy / "index.html"))
    assert any("failed request" in p for p in problems)
    assert "release_packages.png not loaded" in problems
