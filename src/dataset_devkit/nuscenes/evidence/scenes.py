"""Scenes (the seed's Task 5): scene windows, the 2 Hz grid, per-camera audits and validity.

Pure functions of a recording's evidence inputs and the scenario config, so export can run
them again and compare.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from datetime import UTC, datetime

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.nuscenes.common.geometry import lerp, slerp
from dataset_devkit.nuscenes.common.streams import TimedRows
from dataset_devkit.nuscenes.evidence.records import EvCamera, EvFrame, EvRecording, EvScene
from dataset_devkit.nuscenes.spec import SAMPLE_INTERVAL_NS, CameraGridAudit, ScenarioConfig

__all__ = ["complete_until", "derive_scenes", "scene_id", "time_of_day"]


def scene_id(source_digest: str, scene_index: int) -> str:
    """Stable identity of a scene window: ``<source digest>#<index>``."""
    return f"{source_digest}#{scene_index}"


def time_of_day(solar_hour: float) -> str:
    """Coarse time of day from the local solar hour."""
    if 7.0 <= solar_hour < 18.0:
        return "day"
    if 5.0 <= solar_hour < 7.0:
        return "dawn"
    if 18.0 <= solar_hour < 21.0:
        return "dusk"
    return "night"


def _clock_is_solar(rec: EvRecording) -> bool:
    """Whether the stamps and the position give a local solar time: wall-clock stamps and a
    GNSS longitude (GNSS-positioned poses, or fixes beside local poses)."""
    if not isinstance(rec.clock, msgspec.UnsetType):
        return False
    return isinstance(rec.pose_frame, msgspec.UnsetType) or len(rec.gnss) > 0


def _solar_hour(t_ns: int, longitude_deg: float) -> float:
    utc = datetime.fromtimestamp(t_ns / 1e9, tz=UTC)
    hour = utc.hour + utc.minute / 60 + utc.second / 3600
    # Rounded to 0.01 h: enough for a time-of-day tag, too coarse to re-derive a longitude.
    return round((hour + longitude_deg / 15.0) % 24.0, 2)


class _Streams:
    """Pose/GNSS/track streams of a recording, read in place from their arrays."""

    def __init__(self, rec: EvRecording, tolerance_ns: int) -> None:
        self.tolerance_ns = tolerance_ns
        # Poses in the recording's own tree (or pose topic) frame stand without a GNSS fix;
        # GNSS-positioned poses do not.
        self.needs_fix = isinstance(rec.pose_frame, msgspec.UnsetType)
        self.translations = rec.translations
        self.rotations = rec.rotations
        self.gnss = rec.gnss
        self.track = rec.track

    def frames(
        self, channel: str, times: Sequence[int], key: bool, grid_indices: Sequence[int]
    ) -> list[EvFrame | None]:
        """The frame at each of *times* (with its grid index) with its interpolated pose, or
        None where it has none.

        Each stream is searched for all the times at once (one ``searchsorted``) and the
        stream times around them are read as one list: a search and a numpy scalar per
        frame and stream cost more than the interpolation itself.
        """
        if not times:
            return []
        wanted = np.asarray(times, dtype=np.int64)
        at_t = _Around(self.translations, wanted)
        at_r = _Around(self.rotations, wanted)
        at_fix = _Around(self.gnss, wanted)
        out: list[EvFrame | None] = []
        for n, (t, g) in enumerate(zip(times, grid_indices, strict=True)):
            bracket_t = _bracket(at_t, n, t, self.tolerance_ns)
            bracket_r = _bracket(at_r, n, t, self.tolerance_ns)
            fix = _nearest_row(at_fix, n, t, self.tolerance_ns)
            if bracket_t is None or bracket_r is None or (fix is None and self.needs_fix):
                out.append(None)
                continue
            i, j, frac = bracket_t
            translation = lerp(self.translations.vec3(i), self.translations.vec3(j), frac)
            i, j, frac = bracket_r
            rotation = slerp(self.rotations.quat(i), self.rotations.quat(j), frac)
            east, north = self.gnss.fix(fix) if fix is not None else (None, None)
            out.append(
                EvFrame(
                    channel=channel,
                    timestamp_ns=t,
                    is_key_frame=key,
                    grid_index=g,
                    ego_translation=translation,
                    ego_rotation=rotation,
                    gnss_timestamp_ns=at_fix.time(fix) if fix is not None else None,
                    gnss_east_m=east,
                    gnss_north_m=north,
                )
            )
        return out

    def motion(self, start: int, end: int) -> tuple[float, float, float]:
        """Distance (m), mean and max speed (m/s) of the track between two times."""
        lo = int(np.searchsorted(self.track.times, start, side="left"))
        hi = int(np.searchsorted(self.track.times, end, side="right"))
        # Python ints and floats, as track.time and track.value give them, in two calls
        points = list(
            zip(self.track.times[lo:hi].tolist(), self.track.values[lo:hi].tolist(), strict=True)
        )
        distance = 0.0
        max_speed = 0.0
        for (t0, a), (t1, b) in itertools.pairwise(points):
            step = math.dist(a, b)
            distance += step
            if t1 > t0:
                max_speed = max(max_speed, step / ((t1 - t0) / 1e9))
        span = (points[-1][0] - points[0][0]) / 1e9 if len(points) > 1 else 0.0
        mean = distance / span if span > 0 else 0.0
        return (round(distance, 6), round(mean, 6), round(max_speed, 6))


class _Around:
    """Where each of some times falls in one stream, and the stream's times around them.

    ``found[n]`` is the index at which ``wanted[n]`` goes in the stream's times
    (``searchsorted``, left); :meth:`time` reads the stream's time of a row next to one of
    them from a Python list of the rows the times span, taken once.
    """

    __slots__ = ("base", "count", "found", "nearby")

    def __init__(self, stream: TimedRows, wanted: npt.NDArray[np.int64]) -> None:
        times = stream.times
        found = np.searchsorted(times, wanted, side="left")
        self.count = len(times)
        self.found: list[int] = found.tolist()
        self.base = max(int(found.min()) - 1, 0)
        self.nearby: list[int] = times[self.base : int(found.max()) + 1].tolist()

    def time(self, row: int) -> int:
        """The stream's time of *row*, one of the rows next to a wanted time."""
        return self.nearby[row - self.base]


def _bracket(around: _Around, n: int, t: int, tolerance_ns: int) -> tuple[int, int, float] | None:
    """Rows ``(i, j)`` around *t* (the *n*-th time of *around*) and the fraction, or None
    outside or across a gap.

    The ingest model's bracketing of tuples, on the stream's arrays: the same Python ints
    and floats go into lerp and slerp, so the evidence's bytes do not depend on storage.
    """
    j = around.found[n]
    if j < around.count and around.time(j) == t:
        return (j, j, 0.0)
    if j == 0 or j == around.count:
        return None
    ti, tj = around.time(j - 1), around.time(j)
    if tj - ti > tolerance_ns:
        return None
    return (j - 1, j, (t - ti) / (tj - ti))


def _nearest_row(around: _Around, n: int, t: int, tolerance_ns: int) -> int | None:
    """:func:`_nearest` over a stream's times, for *t*, the *n*-th time of *around*."""
    j = around.found[n]
    best: int | None = None
    for k in (j - 1, j):
        in_range = 0 <= k < around.count and abs(around.time(k) - t) <= tolerance_ns
        if in_range and (best is None or abs(around.time(k) - t) < abs(around.time(best) - t)):
            best = k
    return best


def _nearest(times: Sequence[int], t: int, tolerance_ns: int) -> int | None:
    """Index of the time nearest *t* (earlier wins a tie) within the tolerance."""
    j = bisect.bisect_left(times, t)
    best: int | None = None
    for k in (j - 1, j):
        in_range = 0 <= k < len(times) and abs(times[k] - t) <= tolerance_ns
        if in_range and (best is None or abs(times[k] - t) < abs(times[best] - t)):
            best = k
    return best


def _audit_camera(
    cam: EvCamera,
    grid: Sequence[int],
    window: tuple[int, int],
    streams: _Streams,
    tolerance_ns: int,
    include_sweeps: bool,
) -> tuple[CameraGridAudit, list[EvFrame]]:
    times = cam.timestamps_ns
    frames: list[EvFrame] = []
    missing: list[int] = []
    max_offset = 0
    without_pose = 0
    keys: set[int] = set()
    offsets: list[int | None] = []
    matched_times: list[int] = []
    matched_grid: list[int] = []
    for g, t in enumerate(grid):
        k = _nearest(times, t, tolerance_ns)
        if k is None or times[k] in keys:
            missing.append(g)
            offsets.append(None)
            continue
        keys.add(times[k])
        offsets.append(times[k] - t)
        max_offset = max(max_offset, abs(times[k] - t))
        matched_times.append(times[k])
        matched_grid.append(g)
    for frame in streams.frames(cam.channel, matched_times, True, matched_grid):
        if frame is None:
            without_pose += 1
        else:
            frames.append(frame)
    lo = bisect.bisect_left(times, window[0])
    hi = bisect.bisect_left(times, window[1])
    if include_sweeps and frames:
        first, last = frames[0].timestamp_ns, frames[-1].timestamp_ns
        sweep_times = [t for t in times[lo:hi] if first < t < last and t not in keys]
        sweep_grid = [_nearest_index(grid, t) for t in sweep_times]
        for sweep in streams.frames(cam.channel, sweep_times, False, sweep_grid):
            if sweep is None:
                without_pose += 1
            else:
                frames.append(sweep)
    audit = CameraGridAudit(
        channel=cam.channel,
        grid_points=len(grid),
        matched=len(grid) - len(missing),
        missing_grid_indices=tuple(missing),
        max_abs_offset_ns=max_offset,
        frames_in_window=hi - lo,
        frames_without_pose=without_pose,
        offsets_ns=tuple(offsets),
    )
    frames.sort(key=lambda f: f.timestamp_ns)
    return audit, frames


def _nearest_index(grid: Sequence[int], t: int) -> int:
    j = bisect.bisect_left(grid, t)
    if j == 0:
        return 0
    if j == len(grid) or t - grid[j - 1] <= grid[j] - t:
        return j - 1
    return j


def _invalid_note(cam: EvCamera, start: int, end: int) -> str:
    """Why frames are missing when the decoder damaged some in the window, else ``""``."""
    bad = [(t, why) for t, why in cam.invalid_frames if start <= t < end]
    if not bad:
        return ""
    return f" ({len(bad)} frames in the window are invalid, first at {bad[0][0]} ns: {bad[0][1]})"


def complete_until(rec: EvRecording) -> int:
    """The last time every stream of a truncated recording reaches: data before it is whole.

    A crash cuts the streams at different times (one camera's last frame, the last pose, the
    last fix); a window cut at the latest of them would miss grid points on the others and
    lose its complete data before the cut, so a truncated recording ends at the earliest.
    """
    ends = [c.timestamps_ns[-1] for c in rec.cameras if c.timestamps_ns]
    ends += [s.time(len(s) - 1) for s in (rec.translations, rec.rotations, rec.gnss) if len(s)]
    return min(ends)


def derive_scenes(
    rec: EvRecording, config: ScenarioConfig, *, include_sweeps: bool
) -> tuple[EvScene, ...]:
    """Cut *rec* into scene windows and audit each one's 2 Hz grid per camera."""
    starts = [c.timestamps_ns[0] for c in rec.cameras if c.timestamps_ns]
    if not starts:
        return ()
    rec_start = min(starts)
    rec_end = max(c.timestamps_ns[-1] for c in rec.cameras if c.timestamps_ns)
    if rec.truncated:
        rec_end = max(rec_start, complete_until(rec))
    duration_ns = round(config.scene_duration_s * 1e9)
    tolerance_ns = round(config.frame_tolerance_ms * 1e6)
    streams = _Streams(rec, round(config.pose_tolerance_ms * 1e6))
    channels = tuple(sorted(c.channel for c in rec.cameras))
    scenes: list[EvScene] = []
    index = 0
    while rec_start + index * duration_ns <= rec_end:
        start = rec_start + index * duration_ns
        end = start + duration_ns
        grid = tuple(range(start, min(end, rec_end + 1), SAMPLE_INTERVAL_NS))
        reasons: list[str] = []
        if (min(end, rec_end + 1) - start) / 1e9 < config.min_scene_duration_s:
            reasons.append(
                f"window spans {(min(end, rec_end + 1) - start) / 1e9:.3f} s of data, "
                f"less than min_scene_duration_s={config.min_scene_duration_s}"
            )
        audits = []
        frames: list[EvFrame] = []
        for cam in sorted(rec.cameras, key=lambda c: c.channel):
            audit, cam_frames = _audit_camera(
                cam, grid, (start, end), streams, tolerance_ns, include_sweeps
            )
            audits.append(audit)
            frames.extend(cam_frames)
            if audit.missing_grid_indices:
                reasons.append(
                    f"{cam.channel} misses {len(audit.missing_grid_indices)} of "
                    f"{audit.grid_points} grid points" + _invalid_note(cam, start, end)
                )
            keys_without_pose = audit.matched - sum(1 for f in cam_frames if f.is_key_frame)
            if keys_without_pose:
                reasons.append(f"{cam.channel} has {keys_without_pose} key frames without ego pose")
        worst = max((m for t, m in rec.gnss_pose_offsets_m if start <= t < end), default=0.0)
        if worst > config.gnss_pose_tolerance_m:
            reasons.append(
                f"GNSS fixes lie up to {worst:.1f} m from the ego poses "
                f"(gnss_pose_tolerance_m={config.gnss_pose_tolerance_m})"
            )
        valid = not reasons
        distance, mean_speed, max_speed = streams.motion(grid[0], grid[-1])
        solar = _solar_hour(start, rec.longitude_deg) if _clock_is_solar(rec) else None
        scenes.append(
            EvScene(
                scene_id=scene_id(rec.source_digest, index),
                source_digest=rec.source_digest,
                scene_index=index,
                start_timestamp_ns=start,
                end_timestamp_ns=end,
                grid_timestamps_ns=grid,
                valid=valid,
                reasons=tuple(reasons),
                audits=tuple(audits),
                channels=channels,
                distance_m=distance,
                mean_speed_mps=mean_speed,
                max_speed_mps=max_speed,
                local_solar_hour=solar,
                time_of_day=time_of_day(solar) if solar is not None else "unknown",
                frames=tuple(sorted(frames, key=lambda f: (f.channel, f.timestamp_ns)))
                if valid
                else (),
            )
        )
        index += 1
    return tuple(scenes)
