"""Compact in-memory forms of per-frame facts give exactly the old bytes and behaviour."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec
import pytest

from dataset_devkit.errors import VerificationFailed
from dataset_devkit.nuscenes.common.tokens import encode_canonical
from dataset_devkit.nuscenes.evidence import Evidence, recheck_evidence
from dataset_devkit.nuscenes.evidence import writer as evidence_writer
from dataset_devkit.nuscenes.ingest.mcap_scan import CameraFrames


@pytest.mark.parametrize("block", [1, 3, 4096])
@pytest.mark.parametrize("kind", ["mcap", "decoded"])
def test_evidence_encoded_in_blocks_is_the_canonical_json_to_the_byte(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kind: str, block: int
) -> None:
    evidence: Evidence = request.getfixturevalue(f"{kind}_evidence")
    monkeypatch.setattr(evidence_writer, "_BLOCK", block)
    doc = evidence.document
    assert evidence_writer.encode_document(doc) == encode_canonical(doc)
    assert (evidence.root / "evidence.json").read_bytes() == encode_canonical(doc)


def test_camera_frames_keep_the_first_of_duplicate_times_in_any_arrival_order() -> None:
    frames = CameraFrames()
    arrivals = [(30, (4, 2)), (10, (4, 2)), (20, (8, 6)), (10, (8, 6)), (40, (4, 2)), (30, (1, 1))]
    kept = [frames.add(t, dims) for t, dims in arrivals]
    assert kept == [True, True, True, False, True, False]
    assert list(frames.by_time()) == [(10, (4, 2)), (20, (8, 6)), (30, (4, 2)), (40, (4, 2))]
    assert len(frames) == 4
    in_order = CameraFrames()
    assert [in_order.add(t, (2, 2)) for t in (1, 2, 2, 3)] == [True, True, False, True]
    assert [t for t, _ in in_order.by_time()] == [1, 2, 3]


def test_a_recheck_decodes_again_when_the_document_was_swapped(
    mcap_evidence: Evidence,
) -> None:
    recheck_evidence(mcap_evidence)  # the very document decoded from these bytes
    doc = mcap_evidence.document
    other = msgspec.structs.replace(doc, label_file_name="swapped")
    with pytest.raises(VerificationFailed, match="differs from the opened evidence"):
        recheck_evidence(dataclasses.replace(mcap_evidence, document=other))
    # An equal document that is another object is decoded and compared, and passes.
    copy = msgspec.json.decode(msgspec.json.encode(doc), type=type(doc))
    recheck_evidence(dataclasses.replace(mcap_evidence, document=copy))


def test_a_recheck_still_refuses_evidence_changed_on_disk(
    tmp_path: Path, mcap_evidence: Evidence
) -> None:
    import shutil

    from dataset_devkit.nuscenes.evidence import read_evidence

    root = tmp_path / "evidence"
    shutil.copytree(mcap_evidence.root, root)
    opened = read_evidence(root)
    target = root / "evidence.json"
    target.write_bytes(
        target.read_bytes().replace(b'"label_file_name":""', b'"label_file_name":"x"')
    )
    with pytest.raises(VerificationFailed, match="does not match the content manifest"):
        recheck_evidence(opened)
