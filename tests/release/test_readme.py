"""The release README in English and Chinese: same sections, commands, tables and facts."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.release import PackOptions, pack_release
from dataset_devkit.release.readme import render_readme
from dataset_devkit.release.spec import ReleaseManifest, ValidationReport
from tests.release.helpers import make_tree

_CJK = re.compile(r"[\u4e00-\u9fff]")


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """Fenced code blocks as (language, lines without trailing ``# comments``)."""
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", text, flags=re.M | re.S)
    return [
        (lang, [re.sub(r"\s+#\s.*$", "", line) for line in body.splitlines()])
        for lang, body in blocks
    ]


def _tables(text: str) -> list[list[str]]:
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def _facts(text: str) -> list[str]:
    """Numbers with digit groups, hashes, inline code: what both languages must carry."""
    numbers = re.findall(
        r"\b\d{1,3}(?:,\d{3})+\b|\b[0-9a-f]{64}\b|\b\d+(?:\.\d+)? [kMGT]?B\b", text
    )
    code = re.findall(r"`([^`\n]+)`", text)
    return sorted(set(numbers) | set(code))


@pytest.fixture(scope="module", params=["all delivered", "depth pending"])
def release(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("readme")
    deliver = ("base",) if request.param == "depth pending" else None
    options = PackOptions(deliver=deliver, readme_lang="zh", restore_test="sample")
    return pack_release(make_tree(root / "ds"), root / "rel", options).release


def _records(release: Path) -> tuple[ReleaseManifest, ValidationReport]:
    manifest = msgspec.json.decode((release / "manifest.json").read_bytes(), type=ReleaseManifest)
    validation = msgspec.json.decode(
        (release / "validation.json").read_bytes(), type=ValidationReport
    )
    return manifest, validation


def test_the_chinese_readme_carries_every_section_command_table_and_fact(release: Path) -> None:
    manifest, validation = _records(release)
    en = render_readme(manifest, validation)
    zh = (release / "README.md").read_text("utf-8")
    assert zh == render_readme(manifest, validation, "zh")  # what pack wrote
    headings = [re.findall(r"^(#+) ", t, flags=re.M) for t in (en, zh)]
    assert headings[0] == headings[1] and len(headings[0]) >= 6
    assert _blocks(zh) == _blocks(en)  # commands identical, only comments translated
    en_rows, zh_rows = _tables(en), _tables(zh)
    assert len(zh_rows) == len(en_rows) == len(manifest.families)
    status = {"delivered": "已交付", "pending": "暂缓"}
    for e, z in zip(en_rows, zh_rows, strict=True):
        assert z == [e[0], status[e[1]], *e[2:]]
    missing = [fact for fact in _facts(en) if fact not in zh]
    assert missing == []
    assert len(_CJK.findall(zh)) > 500
    # every recorded check is rendered for the reader, none left as an English sentence
    section = zh.split("未校验的项目：", 1)[1]
    items = [line for line in section.splitlines() if line.startswith("- ")]
    assert len(items) == len(validation.not_verified)
    assert all(_CJK.search(item) for item in items), items


def test_sizes_read_in_a_unit_that_fits_never_about_zero(release: Path) -> None:
    manifest, validation = _records(release)
    for lang in ("en", "zh"):
        text = render_readme(manifest, validation, lang)
        assert "0.0 GB" not in text
        assert re.search(r"\d\.\d kB", text)  # a tree of a few kB reads in kB
    assert "约 " in render_readme(manifest, validation, "zh")


def test_a_large_release_reads_about_146_3_gb(release: Path) -> None:
    manifest, validation = _records(release)
    big = msgspec.structs.replace(
        manifest,
        snapshot=msgspec.structs.replace(manifest.snapshot, total_bytes=146_318_100_480),
    )
    assert "146,318,100,480 bytes (about 146.3 GB)" in render_readme(big, validation)
    assert "146,318,100,480 字节（约 146.3 GB）" in render_readme(big, validation, "zh")


def test_an_unknown_readme_language_is_refused_before_packing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="readme_lang must be one of en, zh, found 'fr'"):
        PackOptions(readme_lang="fr")  # type: ignore[arg-type]
