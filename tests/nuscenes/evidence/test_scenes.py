"""Scene windows, the 2 Hz grid, per-camera audits and validity."""

from __future__ import annotations

import itertools

import msgspec

from dataset_devkit.nuscenes.common.streams import FixRows, PoseRows, QuatRows
from dataset_devkit.nuscenes.evidence.records import EvCamera, EvRecording
from dataset_devkit.nuscenes.evidence.scenes import derive_scenes, time_of_day
from dataset_devkit.nuscenes.spec import RecordingObservations, ScenarioConfig

T0 = 1_699_960_000_000_000_000
MS = 1_000_000


def _recording(times: dict[str, list[int]], pose_until_ns: int | None = None) -> EvRecording:
    end = pose_until_ns if pose_until_ns is not None else max(max(t) for t in times.values())
    pose_times = list(range(T0 - 100 * MS, end + 100 * MS, 50 * MS))
    obs = RecordingObservations(
        messages_read=0,
        image_frames={},
        calibrations={},
        poses=0,
        gnss_fixes=0,
        truncated=False,
        truncation_detail="",
        rejected_messages=0,
    )
    cams = tuple(
        EvCamera(
            source_name=name.lower(),
            channel=name,
            topic="",
            frame_id="",
            width=8,
            height=8,
            intrinsic=((1.0, 0.0, 4.0), (0.0, 1.0, 4.0), (0.0, 0.0, 1.0)),
            distortion_model="",
            distortion=(),
            translation=(0.0, 0.0, 0.0),
            rotation=(1.0, 0.0, 0.0, 0.0),
            timestamps_ns=tuple(ts),
        )
        for name, ts in sorted(times.items())
    )
    return EvRecording(
        recording_id="r",
        source_type="mcap_hf",
        backend="mcap",
        source_name="r.mcap",
        source_size=1,
        source_digest="mcap:sha256:" + "ab" * 32,
        vehicle="v",
        location="l",
        truncated=False,
        longitude_deg=0.0,
        observations=obs,
        filtering=(),
        cameras=cams,
        translations=PoseRows.from_rows(
            (t, (float(t - T0) / 1e9 * 2.0, 0.0, 0.0)) for t in pose_times
        ),
        rotations=QuatRows.from_rows((t, (1.0, 0.0, 0.0, 0.0)) for t in pose_times),
        gnss=FixRows.from_rows((t, 10.0, 20.0) for t in pose_times),
        track=PoseRows.from_rows((t, (float(t - T0) / 1e9 * 2.0, 0.0, 0.0)) for t in pose_times),
    )


def _ten_hz(seconds: float, offset_ns: int = 0) -> list[int]:
    return [T0 + offset_ns + i * 100 * MS for i in range(int(seconds * 10))]


CONFIG = ScenarioConfig(scene_duration_s=2.0, min_scene_duration_s=1.0)


def test_windows_cover_the_recording_on_a_2_hz_grid() -> None:
    scenes = derive_scenes(_recording({"CAM_A": _ten_hz(5.0)}), CONFIG, include_sweeps=False)
    assert [s.scene_index for s in scenes] == [0, 1, 2]
    assert [len(s.grid_timestamps_ns) for s in scenes] == [4, 4, 2]
    assert all(
        b - a == 500 * MS for s in scenes for a, b in itertools.pairwise(s.grid_timestamps_ns)
    )
    assert [s.valid for s in scenes] == [True, True, False]
    assert "less than min_scene_duration_s" in scenes[2].reasons[0]
    assert scenes[0].distance_m == scenes[0].mean_speed_mps * 1.5 > 0
    assert [f.timestamp_ns for f in scenes[0].frames] == list(scenes[0].grid_timestamps_ns)


def test_a_camera_missing_grid_points_invalidates_only_its_scene() -> None:
    times = [t for t in _ten_hz(4.0) if not (T0 + 2400 * MS <= t <= T0 + 2600 * MS)]
    scenes = derive_scenes(
        _recording({"CAM_A": _ten_hz(4.0), "CAM_B": times}), CONFIG, include_sweeps=False
    )
    assert scenes[0].valid
    assert not scenes[1].valid
    audit = {a.channel: a for a in scenes[1].audits}["CAM_B"]
    assert audit.missing_grid_indices == (1,)
    assert audit.offsets_ns == (0, None, 0, 0)
    assert audit.matched == 3
    assert scenes[1].reasons == ("CAM_B misses 1 of 4 grid points",)
    assert scenes[1].frames == ()


def test_frames_match_within_the_tolerance_and_report_the_offset() -> None:
    near = _recording({"CAM_A": _ten_hz(2.0), "CAM_B": _ten_hz(2.0, offset_ns=30 * MS)})
    scenes = derive_scenes(near, CONFIG, include_sweeps=False)
    assert scenes[0].valid
    assert {a.channel: a.max_abs_offset_ns for a in scenes[0].audits} == {
        "CAM_A": 0,
        "CAM_B": 30 * MS,
    }
    far = _recording({"CAM_A": _ten_hz(2.0), "CAM_B": _ten_hz(2.0, offset_ns=60 * MS)})
    assert not derive_scenes(far, CONFIG, include_sweeps=False)[0].valid


def test_frames_without_ego_pose_invalidate_the_scene() -> None:
    rec = _recording({"CAM_A": _ten_hz(4.0)}, pose_until_ns=T0 + 1500 * MS)
    scenes = derive_scenes(rec, CONFIG, include_sweeps=False)
    assert scenes[0].valid
    assert not scenes[1].valid
    assert "key frames without ego pose" in scenes[1].reasons[0]


def test_sweeps_are_the_frames_between_key_frames() -> None:
    scenes = derive_scenes(_recording({"CAM_A": _ten_hz(2.0)}), CONFIG, include_sweeps=True)
    frames = scenes[0].frames
    assert sum(f.is_key_frame for f in frames) == 4
    assert len(frames) == 16  # 0.0 .. 1.5 s at 10 Hz
    assert all(0 <= f.grid_index < 4 for f in frames)


def test_derivation_is_deterministic() -> None:
    rec = _recording({"CAM_A": _ten_hz(4.0), "CAM_B": _ten_hz(4.0, 1000)})
    a = derive_scenes(rec, CONFIG, include_sweeps=True)
    b = derive_scenes(rec, CONFIG, include_sweeps=True)
    assert msgspec.json.encode(a) == msgspec.json.encode(b)


def test_time_of_day_buckets_the_solar_hour() -> None:
    assert [time_of_day(h) for h in (2.0, 6.0, 12.0, 19.0, 22.0)] == [
        "night",
        "dawn",
        "day",
        "dusk",
        "night",
    ]


def _reference_frame(rec: EvRecording, t: int, tolerance_ns: int) -> tuple[object, ...] | None:
    """One frame's pose the plain way: a search per stream and time, over Python lists."""
    import bisect

    from dataset_devkit.nuscenes.common.geometry import lerp, slerp

    def bracket(times: list[int], values: list[list[float]]) -> tuple[float, ...] | None:
        j = bisect.bisect_left(times, t)
        if j < len(times) and times[j] == t:
            i, frac = j, 0.0
        elif j in (0, len(times)) or times[j] - times[j - 1] > tolerance_ns:
            return None
        else:
            i, frac = j - 1, (t - times[j - 1]) / (times[j] - times[j - 1])
        a, b = tuple(values[i]), tuple(values[j])
        return lerp(a, b, frac) if len(a) == 3 else slerp(a, b, frac)  # type: ignore[arg-type]

    translation = bracket(rec.translations.times.tolist(), rec.translations.values.tolist())
    rotation = bracket(rec.rotations.times.tolist(), rec.rotations.values.tolist())
    fixes = rec.gnss.times.tolist()
    j = bisect.bisect_left(fixes, t)
    near = [k for k in (j - 1, j) if 0 <= k < len(fixes) and abs(fixes[k] - t) <= tolerance_ns]
    fix = min(near, key=lambda k: abs(fixes[k] - t)) if near else None  # earlier wins a tie
    if translation is None or rotation is None or fix is None:
        return None
    return (translation, rotation, fixes[fix], *rec.gnss.value(fix))


def test_poses_looked_up_for_many_frames_at_once_match_one_lookup_per_frame() -> None:
    from dataset_devkit.nuscenes.evidence.scenes import _Streams

    rec = _recording({"CAM_A": _ten_hz(1.0)})
    pose_times = [T0 + i * 50 * MS for i in range(20)] + [
        T0 + 2000 * MS + i * 50 * MS for i in range(5)
    ]
    rec = msgspec.structs.replace(
        rec,
        translations=PoseRows.from_rows((t, (t / 1e9, -t / 3e9, 1.5)) for t in pose_times),
        rotations=QuatRows.from_rows((t, (0.9, 0.1 * (t % 7), -0.2, 0.3)) for t in pose_times),
        # every other fix only: times between two fixes tie, the earlier must win
        gnss=FixRows.from_rows((t, t / 1e8, 2.0) for t in pose_times[::2]),
    )
    tolerance = 60 * MS
    wanted = sorted(
        {T0 - 10 * MS, T0, T0 + 25 * MS, T0 + 50 * MS, T0 + 77 * MS, T0 + 949 * MS}
        | {T0 + 960 * MS, T0 + 1500 * MS, T0 + 2000 * MS, T0 + 2120 * MS, T0 + 2300 * MS}
    )
    got = _Streams(rec, tolerance).frames("CAM_A", wanted, True, list(range(len(wanted))))
    expected = [_reference_frame(rec, t, tolerance) for t in wanted]
    assert [
        None
        if f is None
        else (f.ego_translation, f.ego_rotation, f.gnss_timestamp_ns, f.gnss_east_m, f.gnss_north_m)
        for f in got
    ] == expected
    assert sum(e is None for e in expected) >= 4  # before, in the gap, after: no pose
    assert sum(e is not None for e in expected) >= 5
    assert _Streams(rec, tolerance).frames("CAM_A", [], True, []) == []
