"""build_evidence and export_dataset check where they write before any work starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataset_devkit.errors import ConfigError, DestinationExistsError, MissingPathError
from dataset_devkit.nuscenes import build_evidence, export_dataset
from dataset_devkit.nuscenes.evidence import Evidence, writer
from dataset_devkit.nuscenes.export import dataset as export_module
from tests.nuscenes.helpers import CONFIG


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the ingest or the evidence read starts."""

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started before the output location was checked")

    monkeypatch.setattr(writer, "open_recording", started)
    monkeypatch.setattr(export_module, "read_evidence", started)


def test_evidence_into_a_missing_folder_is_refused_before_the_ingest(
    recordings: dict[str, Path], tmp_path: Path, no_work: None
) -> None:
    with pytest.raises(MissingPathError, match=r"work: the folder that would hold out does not"):
        build_evidence([recordings["protobuf"]], CONFIG, tmp_path / "work" / "evidence")
    assert not (tmp_path / "work").exists()


def test_evidence_over_an_existing_path_or_inside_a_recording_is_refused_first(
    recordings: dict[str, Path], tmp_path: Path, no_work: None
) -> None:
    (tmp_path / "evidence").mkdir()
    with pytest.raises(DestinationExistsError, match="out already exists"):
        build_evidence([recordings["protobuf"]], CONFIG, tmp_path / "evidence")
    inside = recordings["decoded"] / "evidence"
    with pytest.raises(ConfigError, match="overlaps the input"):
        build_evidence([recordings["decoded"]], CONFIG, inside)
    assert not inside.exists()


def test_export_into_a_missing_folder_is_refused_before_reading_the_evidence(
    mcap_evidence: Evidence, tmp_path: Path, no_work: None
) -> None:
    with pytest.raises(MissingPathError, match="the folder that would hold staging_dataroot"):
        export_dataset(tmp_path / "work" / "v1.0-trainval", mcap_evidence.root)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_bytes(b"")
    with pytest.raises(DestinationExistsError, match="staging_dataroot is not empty"):
        export_dataset(tmp_path / "full", mcap_evidence.root)
    with pytest.raises(ConfigError, match="inside the evidence"):
        export_dataset(mcap_evidence.root / "out", mcap_evidence.root)
