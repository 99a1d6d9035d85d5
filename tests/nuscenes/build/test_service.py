"""The build service around any exporter: staging, refusal and cleanup on failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.errors import ConfigError, DestinationExistsError, UnsafePathError
from dataset_devkit.nuscenes.build.service import build_dataset
from dataset_devkit.nuscenes.config import BuildConfig, parse_build_config
from dataset_devkit.nuscenes.validation.dataroot import DatarootInvalid, Progress, validate_dataroot
from tests.nuscenes.dataroot_fixture import rewrite_table, write_dataroot


def make_config(tmp_path: Path, output: str = "out") -> BuildConfig:
    return parse_build_config(
        {
            "namespace": "fixture",
            "sources": {"type": "decoded_hf", "paths": ["unused"]},
            "publication": {"version": "v1.0-trainval", "refuse_overwrite": True},
            "paths": {"output_dir": output},
        },
        base=tmp_path,
    )


def fixture_exporter(config: BuildConfig, staging: Path, progress: Progress) -> None:
    write_dataroot(staging)


def staging_dirs(config: BuildConfig) -> list[Path]:
    if not config.output_dir.exists():  # a failed build removes the empty folder it made
        return []
    return [p for p in config.output_dir.iterdir() if ".staging-" in p.name]


@pytest.mark.needs("nuscenes")
def test_build_publishes_what_the_exporter_staged(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    phases: list[str] = []
    result = build_dataset(config, exporter=fixture_exporter, on_phase=phases.append)
    assert result.dataroot == config.final_dataroot
    assert (result.scenes, result.samples, result.images) == (2, 6, 12)
    assert result.channels == ("CAM_BACK", "CAM_FRONT")
    assert phases[-2:] == ["renamed", "verified"]
    assert validate_dataroot(result.dataroot).root_sha256 == result.root_sha256
    assert staging_dirs(config) == []


@pytest.mark.needs("nuscenes")
def test_an_existing_destination_is_refused_before_any_work(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    config.final_dataroot.mkdir(parents=True)
    called: list[Path] = []
    with pytest.raises(DestinationExistsError):
        build_dataset(config, exporter=lambda c, s, p: called.append(s))
    assert called == []
    assert staging_dirs(config) == []


@pytest.mark.needs("nuscenes")
def test_a_failed_export_leaves_neither_staging_nor_final(tmp_path: Path) -> None:
    config = make_config(tmp_path)

    def failing(config: BuildConfig, staging: Path, progress: Progress) -> None:
        write_dataroot(staging)
        raise RuntimeError("recorder crashed")

    with pytest.raises(RuntimeError, match="recorder crashed"):
        build_dataset(config, exporter=failing)
    assert not config.final_dataroot.exists()
    assert staging_dirs(config) == []
    assert not config.output_dir.exists()  # it made the folder, and removed it empty


@pytest.mark.needs("nuscenes")
def test_an_invalid_export_is_not_published(tmp_path: Path) -> None:
    config = make_config(tmp_path)

    def broken(config: BuildConfig, staging: Path, progress: Progress) -> None:
        write_dataroot(staging)
        rewrite_table(staging, "map", [])

    with pytest.raises(DatarootInvalid, match="issue") as info:
        build_dataset(config, exporter=broken)
    assert any("compatibility_scaffold map" in issue for issue in info.value.issues)
    assert not config.final_dataroot.exists()
    assert staging_dirs(config) == []


@pytest.mark.needs("nuscenes")
def test_a_symlinked_output_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePathError):
        build_dataset(make_config(tmp_path), exporter=fixture_exporter)
    assert list((tmp_path / "real").iterdir()) == []


@pytest.mark.needs("nuscenes")
@pytest.mark.parametrize(
    "manifest", ["content_manifest.json", "mz_extensions/content_manifest.json"]
)
def test_an_output_dir_inside_a_published_tree_is_refused_before_writing(
    tmp_path: Path, manifest: str
) -> None:
    sealed = tmp_path / "sealed"
    (sealed / manifest).parent.mkdir(parents=True, exist_ok=True)
    (sealed / manifest).write_text("{}")
    (sealed / "deep").mkdir()
    before = sorted(p.relative_to(sealed) for p in sealed.rglob("*"))
    for output in ("sealed", "sealed/deep/out", "sealed/new/out"):
        with pytest.raises(ConfigError, match=r"paths\.output_dir: .* is inside .*sealed, a pub"):
            build_dataset(make_config(tmp_path, output), exporter=fixture_exporter)
    # A link to the sealed tree does not hide it.
    (tmp_path / "alias").symlink_to(sealed / "deep")
    with pytest.raises(ConfigError, match="a published tree"):
        build_dataset(make_config(tmp_path, "alias/out"), exporter=fixture_exporter)
    assert sorted(p.relative_to(sealed) for p in sealed.rglob("*")) == before
