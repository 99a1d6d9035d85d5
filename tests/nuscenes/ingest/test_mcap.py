"""MCAP ingest: Foxglove protobuf and JSON, ROS 2 CDR, truncation, rejections."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from dataset_devkit.errors import FormatError, UnsafePathError
from dataset_devkit.nuscenes.ingest import read_mcap
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap
from tests.nuscenes.helpers import DRIVE, rewrite_mcap

FRAMES = int(DRIVE.duration_s * DRIVE.fps)


def test_protobuf_json_and_ros2_recordings_read_to_the_same_cameras_and_poses(
    recordings: dict[str, Path],
) -> None:
    sources = {name: read_mcap(recordings[name]) for name in ("protobuf", "json", "ros2")}
    reference = sources["protobuf"]
    assert [c.source_name for c in reference.cameras] == ["cam_back", "cam_front"]
    assert reference.source_type == "mcap_hf"
    for source in sources.values():
        assert [c.timestamps_ns for c in source.cameras] == [
            c.timestamps_ns for c in reference.cameras
        ]
        for cam, ref in zip(source.cameras, reference.cameras, strict=True):
            assert cam.intrinsic == ref.intrinsic
            assert cam.distortion == pytest.approx(ref.distortion)
            assert cam.translation == pytest.approx(ref.translation)
            assert cam.rotation == pytest.approx(ref.rotation)
        assert len(source.translations) == len(reference.translations)
        assert source.rotations[3].value == pytest.approx(reference.rotations[3].value)
        assert not source.truncated
    assert len({s.source_digest for s in sources.values()}) == 3


def test_camera_extrinsics_come_from_the_transform_tree_in_wxyz(
    recordings: dict[str, Path],
) -> None:
    front = {c.source_name: c for c in read_mcap(recordings["protobuf"]).cameras}["cam_front"]
    assert front.translation == pytest.approx((1.5, 0.0, 1.6))
    # optical frame: z forward (vehicle x), x right (vehicle -y), y down (vehicle -z)
    assert front.rotation == pytest.approx((0.5, -0.5, 0.5, -0.5))


def test_poses_are_projected_to_web_mercator(recordings: dict[str, Path]) -> None:
    source = read_mcap(recordings["json"])
    east, north, alt = source.translations[2].value
    assert east == pytest.approx(1288522.36, abs=2.0)
    assert north == pytest.approx(6129677.07, abs=2.0)
    assert alt == pytest.approx(520.0, abs=0.01)


def test_extracted_frames_are_the_verbatim_jpeg_bytes(recordings: dict[str, Path]) -> None:
    source = read_mcap(recordings["protobuf"])
    cam = source.cameras[1]
    wanted = {cam.source_name: frozenset(cam.timestamps_ns[:2])}
    frames = list(source.extract_frames(wanted))
    assert [(n, t) for n, t, _ in frames] == [(cam.source_name, t) for t in cam.timestamps_ns[:2]]
    assert all(data[:2] == b"\xff\xd8" for _, _, data in frames)


def test_capture_time_is_the_header_stamp_not_the_log_time(tmp_path: Path) -> None:
    lagging = SampleDrive(duration_s=2.0, width=16, height=8, log_delay_ns=37_000_123)
    path = write_sample_mcap(tmp_path / "lag.mcap", lagging)
    from mcap.reader import make_reader

    with path.open("rb") as f:
        log_times = sorted(
            m.log_time for _, c, m in make_reader(f).iter_messages() if c.topic.endswith("/image")
        )
    assert log_times[0] == lagging.frame_times()[0] + 37_000_123
    cams = read_mcap(path).cameras
    assert cams[1].timestamps_ns == tuple(lagging.frame_times())


def test_truncated_recording_is_read_up_to_the_last_complete_record(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    data = recordings["json"].read_bytes()
    cut = tmp_path / "crashed.mcap"
    cut.write_bytes(data[: len(data) * 2 // 3])
    source = read_mcap(cut)
    assert source.truncated
    assert source.observations.truncated
    assert "messages salvaged" in source.observations.truncation_detail
    frames = sum(len(c.timestamps_ns) for c in source.cameras)
    assert 0 < frames < 2 * FRAMES


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("webp", r"image format 'webp' is neither JPEG nor PNG"),
        ("png", r"image is not a PNG \(no PNG signature\)"),
        ("16UC1; compressedDepth png", r"is a compressed depth map, not a camera image"),
    ],
)
def test_an_image_format_other_than_jpeg_or_png_is_refused_naming_topic_and_schema(
    tmp_path: Path, fmt: str, message: str
) -> None:
    from mcap.writer import Writer

    path = tmp_path / "png.mcap"
    with path.open("wb") as f:
        writer = Writer(f)
        writer.start()
        sid = writer.register_schema(
            name="foxglove.CompressedImage", encoding="jsonschema", data=b"{}"
        )
        cid = writer.register_channel(topic="/cam/png", message_encoding="json", schema_id=sid)
        msg = {"timestamp": {"sec": 1, "nsec": 0}, "frame_id": "cam", "format": fmt, "data": ""}
        writer.add_message(cid, log_time=1, publish_time=1, data=json.dumps(msg).encode())
        writer.finish()
    with pytest.raises(
        FormatError, match=r"'/cam/png' \(schema 'foxglove.CompressedImage'\).*" + message
    ):
        read_mcap(path)


def test_unknown_message_encoding_is_refused_naming_topic_and_schema(tmp_path: Path) -> None:
    from mcap.writer import Writer

    path = tmp_path / "cbor.mcap"
    with path.open("wb") as f:
        writer = Writer(f)
        writer.start()
        sid = writer.register_schema(name="foxglove.LocationFix", encoding="", data=b"")
        cid = writer.register_channel(topic="/gnss", message_encoding="cbor", schema_id=sid)
        writer.add_message(cid, log_time=1, publish_time=1, data=b"\xa0")
        writer.finish()
    with pytest.raises(
        FormatError, match=r"'/gnss' \(schema 'foxglove.LocationFix'\) uses message encoding 'cbor'"
    ):
        read_mcap(path)


def test_a_camera_without_calibration_is_refused(tmp_path: Path) -> None:
    from mcap.writer import Writer

    from dataset_devkit.nuscenes.common.jpeg import encode_jpeg

    path = tmp_path / "nocal.mcap"
    image = encode_jpeg(SampleDrive(width=16, height=8).image(0, 0), 90)
    with path.open("wb") as f:
        writer = Writer(f)
        writer.start()
        sid = writer.register_schema(
            name="foxglove.CompressedImage", encoding="jsonschema", data=b"{}"
        )
        cid = writer.register_channel(topic="/cam/image", message_encoding="json", schema_id=sid)
        import base64

        msg = {
            "timestamp": {"sec": 1, "nsec": 0},
            "frame_id": "cam_left",
            "format": "jpeg",
            "data": base64.b64encode(image).decode(),
        }
        writer.add_message(cid, log_time=1, publish_time=1, data=json.dumps(msg).encode())
        writer.finish()
    with pytest.raises(FormatError, match=r"camera 'cam_left' .* has no calibration"):
        read_mcap(path)


def test_a_camera_outside_the_transform_tree_is_refused(tmp_path: Path) -> None:
    path = write_sample_mcap(tmp_path / "x.mcap", DRIVE, encoding="json")
    with pytest.raises(FormatError, match="not reachable from 'chassis'"):
        read_mcap(path, vehicle_frame="chassis")


def test_a_symlinked_recording_is_refused(tmp_path: Path, recordings: dict[str, Path]) -> None:
    link = tmp_path / "link.mcap"
    link.symlink_to(recordings["json"])
    with pytest.raises(UnsafePathError):
        read_mcap(link)


def test_ego_orientation_may_come_from_pose_in_frame(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    import base64

    from mcap.writer import Writer

    from dataset_devkit.nuscenes.samples import sample_events

    path = tmp_path / "pose.mcap"
    with path.open("wb") as f:
        writer = Writer(f)
        writer.start()
        ids: dict[tuple[str, str], int] = {}
        for t, kind, p in sample_events(DRIVE):
            if kind == "ego":
                schema, topic = "foxglove.PoseInFrame", "/pose"
                p = {
                    "timestamp": p["timestamp"],
                    "frame_id": "world",
                    "pose": {"position": p["translation"], "orientation": p["rotation"]},
                }
            elif kind == "tf":
                schema, topic = "foxglove.FrameTransform", "/tf_static"
            elif kind == "fix":
                schema, topic = "foxglove.LocationFix", "/gnss"
            elif kind == "calibration":
                schema, topic = "foxglove.CameraCalibration", f"/{p['frame_id']}/calibration"
            else:
                schema, topic = "foxglove.CompressedImage", f"/{p['frame_id']}/image"
                p = {**p, "data": base64.b64encode(p["data"]).decode()}
            if (topic, schema) not in ids:
                sid = writer.register_schema(name=schema, encoding="jsonschema", data=b"{}")
                ids[(topic, schema)] = writer.register_channel(
                    topic=topic, message_encoding="json", schema_id=sid
                )
            writer.add_message(
                ids[(topic, schema)], log_time=t, publish_time=t, data=json.dumps(p).encode()
            )
        writer.finish()
    source = read_mcap(path)
    reference = read_mcap(recordings["json"])
    assert len(source.rotations) == len(reference.rotations)
    assert source.rotations[7].value == pytest.approx(reference.rotations[7].value)
    assert source.observations.poses == len(DRIVE.pose_times())


def test_gnss_messages_without_a_fix_are_dropped_and_recorded(tmp_path: Path) -> None:
    import base64

    from mcap.writer import Writer

    from dataset_devkit.nuscenes.samples import sample_events

    drive = SampleDrive(duration_s=1.0, width=16, height=8)
    path = tmp_path / "nofix.mcap"
    names = {
        "tf": "foxglove.FrameTransform",
        "ego": "foxglove.FrameTransform",
        "fix": "foxglove.LocationFix",
        "calibration": "foxglove.CameraCalibration",
        "image": "foxglove.CompressedImage",
    }
    with path.open("wb") as f:
        writer = Writer(f)
        writer.start()
        ids: dict[str, int] = {}
        dropped = 0
        for t, kind, p in sample_events(drive):
            if kind not in ids:
                sid = writer.register_schema(name=names[kind], encoding="jsonschema", data=b"{}")
                ids[kind] = writer.register_channel(
                    topic=f"/{kind}", message_encoding="json", schema_id=sid
                )
            if kind == "image":
                p = {**p, "data": base64.b64encode(p["data"]).decode()}
            if kind == "fix" and dropped < 3:
                p = {**p, "latitude": 123.0}
                dropped += 1
            writer.add_message(ids[kind], log_time=t, publish_time=t, data=json.dumps(p).encode())
        writer.finish()
    source = read_mcap(path)
    reasons = [r.reason for r in source.filtering if r.subject == "topic /fix"]
    assert len(reasons) == 3
    assert all("no usable fix: dropped" in r for r in reasons)
    assert source.observations.gnss_fixes == len(drive.pose_times())  # observed, before filtering
    assert source.observations.rejected_messages == 3
    assert len(source.gnss) == len(drive.pose_times()) - 3


def test_batched_frame_transforms_read_like_single_frame_transforms(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    # foxglove.FrameTransforms (plural) carries a batch: the static tree goes in one message
    # and each ego pose in its own; the result must equal the single-transform recording.
    import base64

    from mcap.writer import Writer

    from dataset_devkit.nuscenes.samples import sample_events

    events = list(sample_events(DRIVE))
    static = [p for _t, kind, p in events if kind == "tf"]
    assert len(static) >= 2  # one per camera: a real batch
    path = tmp_path / "batched.mcap"
    with path.open("wb") as f:
        writer = Writer(f)
        writer.start()
        ids: dict[tuple[str, str], int] = {}
        batched = False
        for t, kind, p in events:
            if kind in ("tf", "ego"):
                if kind == "tf" and batched:
                    continue
                schema, topic = "foxglove.FrameTransforms", "/tf" if kind == "ego" else "/tf_static"
                p = {"transforms": static if kind == "tf" else [p]}
                batched = batched or kind == "tf"
            elif kind == "fix":
                schema, topic = "foxglove.LocationFix", "/gnss"
            elif kind == "calibration":
                schema, topic = "foxglove.CameraCalibration", f"/{p['frame_id']}/calibration"
            else:
                schema, topic = "foxglove.CompressedImage", f"/{p['frame_id']}/image"
                p = {**p, "data": base64.b64encode(p["data"]).decode()}
            if (topic, schema) not in ids:
                sid = writer.register_schema(name=schema, encoding="jsonschema", data=b"{}")
                ids[(topic, schema)] = writer.register_channel(
                    topic=topic, message_encoding="json", schema_id=sid
                )
            writer.add_message(
                ids[(topic, schema)], log_time=t, publish_time=t, data=json.dumps(p).encode()
            )
        writer.finish()
    source = read_mcap(path)
    reference = read_mcap(recordings["json"])
    for cam, ref in zip(source.cameras, reference.cameras, strict=True):
        assert cam.source_name == ref.source_name
        assert cam.translation == pytest.approx(ref.translation)
        assert cam.rotation == pytest.approx(ref.rotation)
    assert len(source.translations) == len(reference.translations) == len(DRIVE.pose_times())
    assert source.translations[5].value == pytest.approx(reference.translations[5].value)
    assert source.rotations[5].value == pytest.approx(reference.rotations[5].value)


@pytest.mark.parametrize(
    "content", [b"", b"\x89PNG\r\n\x1a\n" + bytes(64), b"not an mcap at all\n"]
)
def test_a_file_that_is_not_mcap_is_refused_naming_the_magic(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "drive.mcap"
    path.write_bytes(content)
    with pytest.raises(FormatError, match="not an MCAP file: expected the magic") as info:
        read_mcap(path)
    assert str(path) in str(info.value)


def test_a_recording_cut_before_any_image_is_refused_not_read_as_empty(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    path = tmp_path / "cut.mcap"
    path.write_bytes(recordings["protobuf"].read_bytes()[:40])
    with pytest.raises(FormatError, match=r"no camera image .* in 0 messages read; truncated"):
        read_mcap(path)


def _one_message_mcap(path: Path, schema: str, message: dict[str, object]) -> Path:
    from mcap.writer import Writer

    with path.open("wb") as f:
        writer = Writer(f)
        writer.start()
        sid = writer.register_schema(name=schema, encoding="jsonschema", data=b"{}")
        cid = writer.register_channel(topic="/t", message_encoding="json", schema_id=sid)
        writer.add_message(cid, log_time=7, publish_time=7, data=json.dumps(message).encode())
        writer.finish()
    return path


@pytest.mark.parametrize(
    ("schema", "message", "expected"),
    [
        (
            "foxglove.CompressedImage",
            {
                "timestamp": {"sec": 1, "nsec": 0},
                "frame_id": "cam",
                "format": "jpeg",
                "data": "/9hnYXJiYWdl",
            },  # FF D8 then garbage
            "image is a malformed JPEG",
        ),
        (
            "foxglove.CameraCalibration",
            {
                "timestamp": {"sec": 1, "nsec": 0},
                "frame_id": "cam",
                "width": 64,
                "height": 48,
                "distortion_model": "plumb_bob",
                "D": [float("inf"), 0.0],
                "K": [57.6, 0, 32, 0, 57.6, 24, 0, 0, 1],
            },
            r"distortion D must be finite, found \[inf, 0.0\]",
        ),
        (
            "foxglove.FrameTransform",
            {
                "timestamp": {"sec": 1, "nsec": 0},
                "parent_frame_id": "base_link",
                "child_frame_id": "cam",
                "translation": {"x": float("inf"), "y": 0, "z": 0},
                "rotation": {"x": 0, "y": 0, "z": 0, "w": 1},
            },
            r"translation must be finite, found \[inf, 0.0, 0.0\]",
        ),
    ],
)
def test_a_bad_message_is_refused_naming_file_topic_and_log_time(
    tmp_path: Path, schema: str, message: dict[str, object], expected: str
) -> None:
    path = _one_message_mcap(tmp_path / "bad.mcap", schema, message)
    with pytest.raises(FormatError, match=expected) as info:
        read_mcap(path)
    text = str(info.value)
    assert text.startswith(f"{path}: topic '/t'") and "(message at log_time 7)" in text, text


def _with_metadata(src: Path, dst: Path, metadata: dict[str, str]) -> Path:
    """Copy every message of *src* into *dst* and add a ``recording`` metadata record."""
    return rewrite_mcap(src, dst, metadata=metadata)


def test_the_metadata_recording_id_names_the_recording_and_must_be_safe(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    good = _with_metadata(recordings["json"], tmp_path / "good.mcap", {"recording_id": "d-1"})
    assert read_mcap(good).recording_id == "d-1"
    for i, bad_id in enumerate(("", "../x", "a\nb")):
        bad = _with_metadata(
            recordings["json"], tmp_path / f"bad{i}.mcap", {"recording_id": bad_id}
        )
        with pytest.raises(FormatError, match=r"metadata 'recording': recording_id .* must match"):
            read_mcap(bad)


def _corrupt_one(src: Path, dst: Path, schema_name: str) -> Path:
    """Copy *src* with the second message of *schema_name* cut to half its bytes."""
    seen = 0

    def cut_second(name: str, data: bytes) -> bytes:
        nonlocal seen
        if name != schema_name:
            return data
        seen += 1
        return data[: len(data) // 2] if seen == 2 else data

    return rewrite_mcap(src, dst, cut_second)


@pytest.mark.parametrize(
    ("source", "schema_name"),
    [
        ("protobuf", "foxglove.CompressedImage"),
        ("protobuf", "foxglove.LocationFix"),
        ("ros2", "sensor_msgs/msg/NavSatFix"),
        ("ros2", "tf2_msgs/msg/TFMessage"),
    ],
)
def test_a_message_cut_short_is_a_format_error_naming_topic_and_schema(
    tmp_path: Path, recordings: dict[str, Path], source: str, schema_name: str
) -> None:
    path = recordings[source]
    src = path if path.suffix == ".mcap" else next(path.glob("*.mcap"))
    bad = _corrupt_one(src, tmp_path / "bad.mcap", schema_name)
    with pytest.raises(FormatError, match=f"\\(schema '{schema_name}'\\): malformed message"):
        read_mcap(bad)
    # The digest hashed the file on a thread of its own: it was stopped, not left reading.
    assert not [t for t in threading.enumerate() if t.name == "source-digest"]
