"""Compact in-memory forms of per-frame facts give exactly the old bytes and behaviour."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dataset_devkit.errors import FormatError, VerificationFailed
from dataset_devkit.integrity import ContentManifest, read_manifest
from dataset_devkit.integrity.location import ManifestNotFoundError
from dataset_devkit.nuscenes.common.streams import (
    FixRows,
    PoseRows,
    QuatRows,
    decode_hook,
    encode_hook,
)
from dataset_devkit.nuscenes.common.tokens import encode_canonical
from dataset_devkit.nuscenes.evidence import Evidence, recheck_evidence
from dataset_devkit.nuscenes.evidence import writer as evidence_writer
from dataset_devkit.nuscenes.ingest.scan import CameraFrames


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
    raw = msgspec.json.encode(doc, enc_hook=encode_hook)
    copy = msgspec.json.decode(raw, type=type(doc), dec_hook=decode_hook)
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


def test_timed_streams_keep_the_exact_rows_of_their_json() -> None:
    rows: list[Any] = [
        [1_700_000_000_000_000_001, [0.1, -0.0, 1e300]],
        [2**62, [5e-324, 2.5, -7.0]],
    ]
    poses = PoseRows.from_json(rows)
    assert poses.to_builtins() == rows
    assert poses.to_builtins(1) == rows[1:]
    assert encode_canonical(poses) == encode_canonical(rows)
    assert poses == PoseRows.from_rows((t, tuple(v)) for t, v in rows)
    assert poses != PoseRows.from_json([[rows[0][0], [0.1, 0.0, 1e300]], rows[1]])  # -0.0 kept
    fixes = FixRows.from_json([[5, 1.5, -2.0]])
    assert fixes.to_builtins() == [[5, 1.5, -2.0]] and fixes.fix(0) == (1.5, -2.0)
    assert QuatRows.from_rows([]).to_builtins() == []
    import pickle

    assert pickle.loads(pickle.dumps(poses)) == poses


@pytest.mark.parametrize(
    "rotations",
    [
        "[[1, [1.0, 0.0, 0.0]]]",  # three numbers for a quaternion
        "[[1.5, [1.0, 0.0, 0.0, 0.0]]]",  # a float time
        '[[1, [1.0, 0.0, 0.0, "x"]]]',
        "[[1, [1.0, 0.0, 0.0, true]]]",
        "[[1, 1.0, 0.0, 0.0, 0.0]]",  # flat where nested rows are expected
        "[[99999999999999999999, [1.0, 0.0, 0.0, 0.0]]]",  # beyond int64
        "{}",
    ],
)
def test_a_malformed_stream_in_evidence_names_the_field(
    tmp_path: Path, mcap_evidence: Evidence, rotations: str
) -> None:
    from dataset_devkit.nuscenes.evidence.reader import _decode

    raw = (mcap_evidence.root / "evidence.json").read_bytes()
    start = raw.index(b'"rotations":') + len(b'"rotations":')
    end = raw.index(b',"source_digest"', start)
    bad = raw[:start] + rotations.encode() + raw[end:]
    with pytest.raises(FormatError) as caught:
        _decode(bad, tmp_path / "evidence.json")
    assert caught.value.field == "$.recordings[0].rotations"


def test_a_recheck_reads_a_manifest_whose_bytes_changed_in_full(
    tmp_path: Path, mcap_evidence: Evidence, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from dataset_devkit.nuscenes.evidence import read_evidence, reader

    root = tmp_path / "evidence"
    shutil.copytree(mcap_evidence.root, root)
    opened = read_evidence(root)
    assert opened.manifest_sha256
    parsed: list[Path] = []
    real = read_manifest

    def counted(root: Path, **kwargs: Any) -> ContentManifest:
        parsed.append(root)
        return real(root, **kwargs)

    monkeypatch.setattr(reader, "read_manifest", counted)
    recheck_evidence(opened)
    assert not parsed  # the very bytes checked at opening: not decoded again
    manifest = root / "content_manifest.json"
    manifest.write_bytes(manifest.read_bytes().replace(b'"file_count":', b'"file_count": '))
    recheck_evidence(opened)  # other bytes, the same manifest: decoded, compared, accepted
    assert parsed
    text = manifest.read_bytes()
    first = text.index(b'"sha256": "') + len(b'"sha256": "')
    flipped = b"0" if text[first : first + 1] != b"0" else b"1"
    manifest.write_bytes(text[:first] + flipped + text[first + 1 :])
    with pytest.raises((VerificationFailed, FormatError)):
        recheck_evidence(opened)
    manifest.unlink()
    with pytest.raises(ManifestNotFoundError):
        recheck_evidence(opened)
