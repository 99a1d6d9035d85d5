"""Each preview page opened in headless Chromium: no failed request, no console error, every
image loaded at its natural size, a screenshot that is not blank.

One browser opens every page in its own tab (a launch costs seconds; a tab does not).
"""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dataset_devkit.preview import Kind
from tests.preview.browser import CHROMIUM, PageReport, open_pages
from tests.preview.conftest import EXTRA, TREES

pytestmark = pytest.mark.skipif(
    not os.access(CHROMIUM, os.X_OK),
    reason="chromium is not installed (apt-get install -y chromium; .ci/run installs it)",
)

#: Pages beside the demo's kinds: the 50-scene dataroot and a copy missing one PNG.
FLEET, BROKEN = "fleet", "broken"


@pytest.fixture(scope="module")
def seen(
    pages: dict[Kind, Path],
    fleet_page: Path,
    extra_pages: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[Path, PageReport]]:
    copy = tmp_path_factory.mktemp("broken") / "page"
    shutil.copytree(pages[Kind.RELEASE].parent, copy)
    (copy / "release_packages.png").unlink()
    named = {kind.value: page for kind, page in pages.items()}
    named[FLEET] = fleet_page
    named.update(extra_pages)
    named[BROKEN] = copy / "index.html"
    reports = open_pages(list(named.values()))
    return {
        name: (page, report) for (name, page), report in zip(named.items(), reports, strict=True)
    }


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


@pytest.mark.parametrize("name", [kind.value for kind in TREES] + [FLEET, *EXTRA])
def test_page_loads_cleanly_in_chromium(
    seen: dict[str, tuple[Path, PageReport]], name: str
) -> None:
    page, report = seen[name]
    assert _problems(report) == []
    on_disk = sorted(p.name for p in page.parent.glob("*.png"))
    assert sorted(src for src, *_ in report.images) == on_disk
    for src, _, width, height in report.images:
        with Image.open(page.parent / src) as image:
            assert (width, height) == image.size


def test_the_check_sees_a_missing_image(seen: dict[str, tuple[Path, PageReport]]) -> None:
    problems = _problems(seen[BROKEN][1])
    assert any("failed request" in p for p in problems)
    assert "release_packages.png not loaded" in problems
