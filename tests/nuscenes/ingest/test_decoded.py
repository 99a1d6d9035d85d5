"""Decoded recording folders: strict recording.json, PyAV decode, JPEG quality 95."""

from __future__ import annotations

import io
import json
import random
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
from tests.workers import fork_from_another_thread


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


def test_decoding_frames_leaves_nothing_that_hangs_a_later_fork(
    recordings: dict[str, Path],
) -> None:
    source = read_decoded(recordings["decoded"])
    times = source.cameras[0].timestamps_ns
    assert len(list(source.extract_frames({"cam_front": frozenset(times[:3])}))) == 3
    fork_from_another_thread()


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


@pytest.mark.parametrize(
    ("where", "damage"),
    [
        (0.3, random.Random(0).randbytes(48)),  # 48 bytes at 30%: concealed, then lost
        (0.3, random.Random(7).randbytes(48)),
        (0.2, b"\xff" * 200),  # a packet that no longer decodes at all
    ],
)
def test_damaged_packets_make_their_frames_invalid_and_never_exported(
    tmp_path: Path, recordings: dict[str, Path], where: float, damage: bytes
) -> None:
    intact = read_decoded(recordings["decoded"])
    bad = _copy(recordings["decoded"], tmp_path / "bad")
    video = bad / "cam_front.mp4"
    data = bytearray(video.read_bytes())
    at = int(len(data) * where)
    data[at : at + len(damage)] = damage
    video.write_bytes(bytes(data))
    source = read_decoded(bad)
    front, back = source.cameras
    assert back == intact.cameras[1]  # the intact camera is untouched
    assert front.invalid_frames, "a damaged packet must make frames invalid"
    invalid = {t for t, _ in front.invalid_frames}
    assert sorted(invalid | set(front.timestamps_ns)) == list(intact.cameras[0].timestamps_ns)
    assert not invalid & set(front.timestamps_ns)
    reasons = " ".join(why for _, why in front.invalid_frames)
    assert "decoder concealed damaged data" in reasons or "does not decode" in reasons
    detail = " ".join(source.observations.invalid_frame_detail)
    assert source.observations.invalid_frames == {"cam_front": len(invalid)}
    assert "cam_front.mp4" in detail and "invalid" in detail
    assert any(r.subject == "camera cam_front" for r in source.filtering)
    # Every frame left decodes exactly as in the intact video: nothing damaged slips through.
    wanted = {"cam_front": frozenset(front.timestamps_ns)}
    good = {(n, t): b for n, t, b in intact.extract_frames(wanted)}
    got = {(n, t): b for n, t, b in source.extract_frames(wanted)}
    assert got == good


def test_a_png_named_like_a_video_has_no_decodable_video_stream(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad")
    (bad / "cam_front.mp4").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(200))
    with pytest.raises(FormatError, match=r"cam_front\.mp4: no decodable video stream"):
        read_decoded(bad)


def test_a_single_jpeg_named_like_a_video_fails_the_frame_count_at_ingest(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad")
    (bad / "cam_front.mp4").write_bytes(encode_jpeg(DRIVE.image(0, 0), 95))
    # An image pipe declares no frame count: ingest decodes every packet and counts.
    with pytest.raises(FormatError, match=r"cam_front\.mp4: video has 1 frames but recording"):
        read_decoded(bad)


def test_camera_names_normalizing_to_one_channel_name_recording_json_and_field(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    bad = _copy(recordings["decoded"], tmp_path / "bad")
    doc = json.loads((bad / "recording.json").read_text())
    doc["cameras"][1]["name"] = "Cam-Front"
    (bad / "recording.json").write_text(json.dumps(doc))
    with pytest.raises(FormatError) as info:
        read_decoded(bad)
    assert str(info.value) == (
        f"{bad / 'recording.json'} at $.cameras[1].name: name 'Cam-Front' normalizes to "
        "CAM_FRONT, as $.cameras[0].name 'cam_front' does; rename one so each camera has its "
        "own channel"
    )


def _h264(folder: Path, camera: int, frames: int) -> None:
    """Re-encode one camera as H.264 with B-frames (the decoder delays and reorders output)."""
    import av

    path = folder / "cam_front.mp4"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = DRIVE.width, DRIVE.height, "yuv420p"
        stream.options = {"bf": "2", "g": "12"}
        for k in range(frames):
            image = DRIVE.image(camera, k)
            for packet in stream.encode(av.VideoFrame.from_image(image)):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def test_damage_in_a_reordering_h264_video_is_found_by_packet_not_by_output_order(
    tmp_path: Path, recordings: dict[str, Path]
) -> None:
    intact_dir = _copy(recordings["decoded"], tmp_path / "intact")
    frames = len(read_decoded(intact_dir).cameras[0].timestamps_ns)
    _h264(intact_dir, 0, frames)
    bad = tmp_path / "bad"
    shutil.copytree(intact_dir, bad)
    video = bad / "cam_front.mp4"
    data = bytearray(video.read_bytes())
    at = int(len(data) * 0.3)
    data[at : at + 48] = random.Random(1).randbytes(48)
    video.write_bytes(bytes(data))
    intact, source = read_decoded(intact_dir), read_decoded(bad)
    assert not intact.cameras[0].invalid_frames
    assert source.cameras[0].invalid_frames
    wanted = {"cam_front": frozenset(source.cameras[0].timestamps_ns)}
    good = {(n, t): b for n, t, b in intact.extract_frames(wanted)}
    assert {(n, t): b for n, t, b in source.extract_frames(wanted)} == good
