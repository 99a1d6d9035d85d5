"""Decoded recording folders: strict recording.json, PyAV decode, JPEG quality 95."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from dataset_devkit.errors import FormatError, UnsafePathError
from dataset_devkit.nuscenes.common.jpeg import encode_jpeg
from dataset_devkit.nuscenes.ingest import read_decoded
from tests.nuscenes.helpers import DRIVE


def _copy(src: Path, dst: Path, **changes: object) -> Path:
    shutil.copytree(src, dst)
    doc = json.loads((dst / "recording.json").read_text())
    for key, value in changes.items():
        target, _, field = key.partition("__")
        if field:
            doc[target][0][field] = value
        else:
            doc[key] = value
    (dst / "recording.json").write_text(json.dumps(doc))
    return dst


def test_decoded_folder_reads_cameras_poses_and_fixes(recordings: dict[str, Path]) -> None:
    source = read_decoded(recordings["decoded"])
    assert source.source_type == "decoded_hf"
    assert source.backend == "pyav"
    assert source.recording_id == "drive-decoded"
    assert [c.source_name for c in source.cameras] == ["cam_front", "cam_back"]
    front = source.cameras[0]
    assert front.rotation == pytest.approx((0.5, -0.5, 0.5, -0.5))
    assert front.timestamps_ns == tuple(DRIVE.frame_times())
    assert len(source.translations) == len(source.gnss) == len(DRIVE.pose_times())
    assert source.source_digest.startswith("pyav:sha256:")


def test_needed_frames_are_decoded_and_encoded_as_jpeg(recordings: dict[str, Path]) -> None:
    source = read_decoded(recordings["decoded"])
    times = source.cameras[0].timestamps_ns
    frames = list(source.extract_frames({"cam_front": frozenset({times[0], times[5]})}))
    assert [t for _, t, _ in frames] == [times[0], times[5]]
    with Image.open(io.BytesIO(frames[1][2])) as img:
        assert img.format == "JPEG"
        assert img.size == (DRIVE.width, DRIVE.height)


def test_unknown_fields_are_refused_naming_the_field(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad", cameras__lens="fisheye")
    with pytest.raises(FormatError, match=r"recording.json at \$.cameras\[0\]"):
        read_decoded(bad)


def test_timestamps_must_strictly_increase(tmp_path: Path, recordings: dict[str, Path]) -> None:
    times = list(DRIVE.frame_times())
    times[3] = times[2]
    bad = _copy(recordings["decoded"], tmp_path / "bad", cameras__timestamps_ns=times)
    with pytest.raises(FormatError, match=r"timestamps_ns\[3\]: timestamps must strictly increase"):
        read_decoded(bad)


def test_non_finite_calibration_is_refused(tmp_path: Path, recordings: dict[str, Path]) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad")
    text = (bad / "recording.json").read_text()
    doc = json.loads(text)
    doc["cameras"][0]["translation"] = [1.0, 0.0, 0.0]
    raw = json.dumps(doc).replace(
        '"translation": [1.0, 0.0, 0.0]', '"translation": [1e999, 0.0, 0.0]', 1
    )
    (bad / "recording.json").write_text(raw)
    with pytest.raises(FormatError, match="finite"):
        read_decoded(bad)


def test_a_video_whose_size_disagrees_with_the_calibration_is_refused(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad", cameras__width=DRIVE.width * 2)
    with pytest.raises(FormatError, match="video is 32x24, calibration says 64x24"):
        read_decoded(bad)


def test_a_video_with_fewer_frames_than_timestamps_is_refused(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    times = list(DRIVE.frame_times())
    times.append(times[-1] + 100_000_000)
    bad = _copy(recordings["decoded"], tmp_path / "bad", cameras__timestamps_ns=times)
    # The MP4 declares its frame count, so the mismatch is found before any decode.
    with pytest.raises(FormatError, match=r"video declares 60 frames but recording\.json lists 61"):
        read_decoded(bad)


def test_a_camera_without_timestamps_is_refused_not_silently_unchecked(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad", cameras__timestamps_ns=[])
    with pytest.raises(FormatError, match=r"timestamps_ns: a camera needs at least one frame"):
        read_decoded(bad)


def test_an_unsafe_video_name_or_symlinked_folder_is_refused(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad", cameras__video="../x.mp4")
    with pytest.raises(FormatError, match="unsafe video name"):
        read_decoded(bad)
    (tmp_path / "link").symlink_to(recordings["decoded"])
    with pytest.raises(UnsafePathError):
        read_decoded(tmp_path / "link")


def test_an_uncalibrated_all_zero_k_is_refused(tmp_path: Path, recordings: dict[str, Path]) -> None:
    zeros = [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    bad = _copy(recordings["decoded"], tmp_path / "bad", cameras__K=zeros)
    with pytest.raises(FormatError, match=r"cameras\[0\].K: camera 'cam_front': K is not"):
        read_decoded(bad)


def test_the_documented_json_schema_matches_the_reader(recordings: dict[str, Path]) -> None:
    from dataset_devkit.nuscenes.ingest import decoded_schema as decoded

    docs = (Path(__file__).parents[3] / "docs" / "nuscenes.md").read_text()
    block = docs.split("JSON schema of `recording.json`:", 1)[1].split("```json", 1)[1]
    schema = json.loads(block.split("```", 1)[0])
    props = schema["properties"]

    def fields(struct: type) -> set[str]:
        return set(struct.__struct_fields__)  # type: ignore[attr-defined]

    assert set(props) == set(schema["required"]) == fields(decoded._Recording)
    items = {
        "cameras": decoded._Camera,
        "ego_poses": decoded._Pose,
        "gnss": decoded._Fix,
    }
    for key, struct in items.items():
        item = props[key]["items"]
        assert set(item["properties"]) == set(item["required"]) == fields(struct), key
        assert item["additionalProperties"] is False
    origin = props["enu_origin"]
    assert set(origin["properties"]) == set(origin["required"]) == fields(decoded._Origin)
    sample = json.loads((recordings["decoded"] / "recording.json").read_text())
    assert set(sample) == set(props)
    assert set(sample["cameras"][0]) == set(props["cameras"]["items"]["properties"])


def _edit(src: Path, dst: Path, edit: Callable[[dict[str, Any]], object]) -> Path:
    shutil.copytree(src, dst)
    doc = json.loads((dst / "recording.json").read_text())
    edit(doc)
    (dst / "recording.json").write_text(json.dumps(doc))
    return dst


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (
            lambda d: d["enu_origin"].update(latitude_deg=100.0),
            r"\$.enu_origin",
            r"latitude_deg must be within \[-90, 90\]",
        ),
        (
            lambda d: d["cameras"][1].update(name=d["cameras"][0]["name"]),
            r"\$.cameras\[1\].name",
            r"repeats \$.cameras\[0\].name",
        ),
        (
            lambda d: d["cameras"][1].update(video=d["cameras"][0]["video"]),
            r"\$.cameras\[1\].video",
            r"repeats \$.cameras\[0\].video",
        ),
        (
            lambda d: d["cameras"][1].update(name="!!!"),
            r"\$.cameras\[1\].name",
            "does not normalize to a CAM_",
        ),
        (
            lambda d: d["cameras"][1].update(rotation_vector=[1e308, 1e308, 0.0]),
            r"\$.cameras\[1\].rotation_vector",
            "must be an angle of at most",
        ),
        (
            lambda d: d["ego_poses"][2].update(rotation_vector=[0.0, 1e300, 0.0]),
            r"\$.ego_poses\[2\].rotation_vector",
            "must be an angle of at most",
        ),
        (
            lambda d: d["cameras"][0]["timestamps_ns"].__setitem__(-1, 10**30),
            r"\$.cameras\[0\].timestamps_ns\[\d+\]",
            "must fit in a signed 64-bit integer",
        ),
    ],
)
def test_a_recording_json_mistake_is_refused_naming_the_field(
    tmp_path: Path,
    recordings: dict[str, Path],
    edit: Callable[[dict[str, Any]], object],
    field: str,
    message: str,
) -> None:
    bad = _edit(recordings["decoded"], tmp_path / "bad", edit)
    with pytest.raises(FormatError, match=rf"recording.json at {field}: .*{message}"):
        read_decoded(bad)


def test_a_corrupt_video_packet_is_a_format_error_naming_the_file_and_frame(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad")
    video = bad / "cam_front.mp4"
    data = bytearray(video.read_bytes())
    at = len(data) // 5  # inside the media data, after the first frames
    data[at : at + 200] = b"\xff" * 200
    video.write_bytes(bytes(data))
    source = read_decoded(bad)
    times = frozenset(source.cameras[0].timestamps_ns)
    with pytest.raises(FormatError, match=r"video does not decode after frame \d+ of") as info:
        list(source.extract_frames({"cam_front": times}))
    assert str(video) in str(info.value)


def test_a_png_named_like_a_video_has_no_decodable_video_stream(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad")
    (bad / "cam_front.mp4").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    with pytest.raises(FormatError, match=r"cam_front\.mp4: no decodable video stream"):
        read_decoded(bad)


def test_a_single_jpeg_named_like_a_video_fails_the_frame_count_when_decoded(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad")
    (bad / "cam_front.mp4").write_bytes(encode_jpeg(DRIVE.image(0, 0), 95))
    source = read_decoded(bad)  # an image pipe declares no frame count
    times = source.cameras[0].timestamps_ns
    with pytest.raises(FormatError, match=f"video has 1 frames but {len(times)} timestamps"):
        list(source.extract_frames({"cam_front": frozenset(times)}))
