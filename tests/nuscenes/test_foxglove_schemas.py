"""Sample protobuf MCAP is written without foxglove-sdk, and reads as foxglove-sdk's does."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2

from dataset_devkit.nuscenes import read_mcap
from dataset_devkit.nuscenes.common.foxglove_schemas import SCHEMA_NAMES, schema_data
from dataset_devkit.nuscenes.samples import SampleDrive, sample_events, write_sample_mcap

DRIVE = SampleDrive(duration_s=2.0)


def _write_with_foxglove_sdk(path: Path, drive: SampleDrive) -> None:
    """The same drive through foxglove-sdk (a dev dependency): the reference writer."""
    import foxglove
    from foxglove import channels as fc
    from foxglove import messages as fm

    def ts(s: dict[str, int]) -> Any:
        return fm.Timestamp(sec=s["sec"], nsec=s["nsec"])

    ctx = foxglove.Context()
    writer = foxglove.open_mcap(path, context=ctx)
    try:
        tf = fc.FrameTransformsChannel("/tf", context=ctx)
        fix = fc.LocationFixChannel("/gnss", context=ctx)
        cams = {n: fc.CompressedImageChannel(f"/{n}/image", context=ctx) for n in drive.cameras}
        cals = {
            n: fc.CameraCalibrationChannel(f"/{n}/calibration", context=ctx) for n in drive.cameras
        }
        for t, kind, p in sample_events(drive):
            stamp = ts(p["timestamp"])
            if kind in ("tf", "ego"):
                tr = fm.FrameTransform(
                    timestamp=stamp,
                    parent_frame_id=p["parent_frame_id"],
                    child_frame_id=p["child_frame_id"],
                    translation=fm.Vector3(**p["translation"]),
                    rotation=fm.Quaternion(**p["rotation"]),
                )
                tf.log(fm.FrameTransforms(transforms=[tr]), log_time=t)
            elif kind == "calibration":
                keys: tuple[str, ...] = (
                    "frame_id",
                    "width",
                    "height",
                    "distortion_model",
                    "D",
                    "K",
                    "R",
                    "P",
                )
                cals[p["frame_id"]].log(
                    fm.CameraCalibration(timestamp=stamp, **{k: p[k] for k in keys}), log_time=t
                )
            elif kind == "fix":
                keys = ("frame_id", "latitude", "longitude", "altitude")
                fix.log(fm.LocationFix(timestamp=stamp, **{k: p[k] for k in keys}), log_time=t)
            else:
                cams[p["frame_id"]].log(
                    fm.CompressedImage(
                        timestamp=stamp, frame_id=p["frame_id"], data=p["data"], format="jpeg"
                    ),
                    log_time=t,
                )
    finally:
        writer.close()


def _fields(data: bytes) -> dict[str, set[tuple[str, int, int, int, str]]]:
    files = descriptor_pb2.FileDescriptorSet.FromString(data).file
    return {
        f"{f.package}.{m.name}": {(x.name, x.number, x.type, x.label, x.type_name) for x in m.field}
        for f in files
        for m in f.message_type
    }


def _summary_schemas(reader: Any) -> list[Any]:
    summary = reader.get_summary()
    assert summary is not None
    return list(summary.schemas.values())


def test_schemas_are_foxglove_published_fields(tmp_path: Path) -> None:
    from mcap.reader import make_reader

    path = tmp_path / "sdk.mcap"
    _write_with_foxglove_sdk(path, DRIVE)
    with path.open("rb") as f:
        theirs = {s.name: s.data for s in _summary_schemas(make_reader(f))}
    assert set(theirs) == set(SCHEMA_NAMES)
    for name, data in theirs.items():
        ours, reference = _fields(schema_data(name)), _fields(data)
        for message, fields in ours.items():
            assert fields <= reference[message], (name, message, fields - reference[message])


def test_protobuf_sample_reads_as_foxglove_sdk_recording(tmp_path: Path) -> None:
    (tmp_path / "ours").mkdir()
    (tmp_path / "sdk").mkdir()
    ours, sdk = tmp_path / "ours" / "drive.mcap", tmp_path / "sdk" / "drive.mcap"
    write_sample_mcap(ours, DRIVE)
    _write_with_foxglove_sdk(sdk, DRIVE)
    a, b = read_mcap(ours), read_mcap(sdk)
    fields: tuple[str, ...] = (
        "cameras",
        "translations",
        "rotations",
        "gnss",
        "recording_id",
        "filtering",
    )
    fields += ("track", "location", "vehicle", "observations")
    for field in fields:
        assert getattr(a, field) == getattr(b, field), field


def test_protobuf_sample_needs_no_foxglove_sdk_and_is_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "foxglove", None)  # import foxglove now fails
    first, second = tmp_path / "a.mcap", tmp_path / "b.mcap"
    write_sample_mcap(first, DRIVE)
    write_sample_mcap(second, DRIVE)
    digest = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (first, second)]
    assert digest[0] == digest[1]
    assert b"foxglove-sdk" not in first.read_bytes()
