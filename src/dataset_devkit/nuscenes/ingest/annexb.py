"""What an H.264 or H.265 access unit (Annex B bytes) holds, read from its NAL unit headers.

:mod:`~dataset_devkit.nuscenes.ingest.video_packets` needs three facts per message that the
decoder does not report reliably: whether it is a key frame (a decoder can start there),
whether it carries parameter sets, and, for H.264, whether a reference frame before it is
missing. FFmpeg decodes an H.264 P-frame whose reference was dropped without logging an
error (a ``frame_num`` gap is only a DEBUG line) and conceals it with a stale picture, so
the gap is found here: each reference picture's ``frame_num`` must follow the previous
one's (H.264 §7.4.3). H.265 needs no such check: a lost reference is an error FFmpeg logs
("Could not find ref with POC ...").

Hand-written because no maintained Python library reads slice headers; only the first
fields are parsed (``first_mb_in_slice`` to ``frame_num``), plus the SPS and PPS fields
that locate them. A NAL that does not parse is left to the decoder, never an exception.
Known limit: a stream using memory-management operation 5 (which resets ``frame_num``;
x264, NVENC and the usual camera encoders do not emit it) would be seen as having a gap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

__all__ = ["AccessUnit", "AnnexBReader"]

_H264_SLICE: Final = 1
_H264_IDR: Final = 5
_H264_SPS: Final = 7
_H264_PPS: Final = 8
_H265_IRAP: Final = range(16, 24)  # BLA, IDR, CRA and the reserved IRAP types
_H265_VPS: Final = 32
_H265_SPS: Final = 33
#: Profiles whose SPS carries chroma format, bit depths and scaling matrices (§7.3.2.1.1).
_H264_HIGH_PROFILES: Final = frozenset(
    {100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135}
)


@dataclass(frozen=True, slots=True)
class AccessUnit:
    """The facts of one access unit that decide how far its frame can be trusted."""

    nal_types: tuple[int, ...]
    key: bool  # an IDR (H.264) or IRAP (H.265) picture: decoding can start here
    parameter_sets: bool  # carries an SPS (H.264) or a VPS and an SPS (H.265)
    missing_reference: str = ""  # why a reference picture before it must be missing


@dataclass(slots=True)
class _H264Sps:
    log2_max_frame_num: int
    separate_colour_plane: bool
    gaps_allowed: bool


@dataclass(slots=True)
class AnnexBReader:
    """Reads the access units of one stream in decode order (keeps H.264 SPS/PPS state)."""

    format: str  # "h264" or "h265"
    _sps: dict[int, _H264Sps] = field(default_factory=dict, init=False, repr=False)
    _pps: dict[int, int] = field(default_factory=dict, init=False, repr=False)  # pps -> sps
    _prev_ref_frame_num: int | None = field(default=None, init=False, repr=False)

    def read(self, data: bytes | memoryview) -> AccessUnit:
        """The facts of *data*, one message's access unit, and update the stream state."""
        units = list(_nal_units(bytes(data)))
        if self.format == "h265":
            types = tuple((unit[0] >> 1) & 0x3F for unit in units)
            return AccessUnit(
                nal_types=types,
                key=any(t in _H265_IRAP for t in types),
                parameter_sets=_H265_VPS in types and _H265_SPS in types,
            )
        types = tuple(unit[0] & 0x1F for unit in units)
        for unit, kind in zip(units, types, strict=True):
            if kind == _H264_SPS:
                self._read_sps(unit)
            elif kind == _H264_PPS:
                self._read_pps(unit)
        key = _H264_IDR in types
        slices = [u for u, t in zip(units, types, strict=True) if t in (_H264_SLICE, _H264_IDR)]
        missing = self._check_frame_num(slices[0], key) if slices else ""
        return AccessUnit(
            nal_types=types, key=key, parameter_sets=_H264_SPS in types, missing_reference=missing
        )

    def _read_sps(self, unit: bytes) -> None:
        try:
            bits = _Bits(_unescape(unit[1:]))
            profile = bits.u(8)
            bits.u(16)  # constraint flags, level
            sps_id = bits.ue()
            separate = False
            if profile in _H264_HIGH_PROFILES:
                chroma_format = bits.ue()
                if chroma_format == 3:
                    separate = bool(bits.u(1))
                bits.ue()  # bit_depth_luma_minus8
                bits.ue()  # bit_depth_chroma_minus8
                bits.u(1)  # qpprime_y_zero_transform_bypass_flag
                if bits.u(1):  # seq_scaling_matrix_present_flag
                    for i in range(12 if chroma_format == 3 else 8):
                        if bits.u(1):
                            _skip_scaling_list(bits, 16 if i < 6 else 64)
            log2_max_frame_num = bits.ue() + 4
            poc_type = bits.ue()
            if poc_type == 0:
                bits.ue()  # log2_max_pic_order_cnt_lsb_minus4
            elif poc_type == 1:
                bits.u(1)
                bits.se()
                bits.se()
                for _ in range(bits.ue()):
                    bits.se()
            bits.ue()  # max_num_ref_frames
            gaps_allowed = bool(bits.u(1))
        except _OutOfBits:
            return
        if log2_max_frame_num <= 16:
            self._sps[sps_id] = _H264Sps(log2_max_frame_num, separate, gaps_allowed)

    def _read_pps(self, unit: bytes) -> None:
        try:
            bits = _Bits(_unescape(unit[1:]))
            pps_id = bits.ue()
            self._pps[pps_id] = bits.ue()
        except _OutOfBits:
            return

    def _check_frame_num(self, unit: bytes, key: bool) -> str:
        """Why a reference picture is missing before this slice's picture, or ``""``."""
        reference = (unit[0] >> 5) & 0x3 != 0
        try:
            bits = _Bits(_unescape(unit[1:40]))
            bits.ue()  # first_mb_in_slice
            bits.ue()  # slice_type
            sps = self._sps.get(self._pps.get(bits.ue(), -1))
            if sps is None:
                return ""  # parameter sets not seen: the decoder will say so
            if sps.separate_colour_plane:
                bits.u(2)
            frame_num = bits.u(sps.log2_max_frame_num)
        except _OutOfBits:
            return ""
        previous = self._prev_ref_frame_num
        missing = ""
        if key:
            previous = 0
        elif previous is not None and not sps.gaps_allowed:
            following = (previous + 1) % (1 << sps.log2_max_frame_num)
            if frame_num not in (previous, following):
                missing = (
                    f"a reference frame before it is missing (H.264 frame_num {frame_num} "
                    f"follows {previous}, expected {following})"
                )
        self._prev_ref_frame_num = frame_num if reference else previous
        return missing


def _nal_units(data: bytes) -> list[bytes]:
    """The NAL units of an Annex B byte stream, start codes and trailing zeros removed."""
    units: list[bytes] = []
    start = data.find(b"\x00\x00\x01")
    while start >= 0:
        begin = start + 3
        start = data.find(b"\x00\x00\x01", begin)
        unit = data[begin:] if start < 0 else data[begin:start]
        unit = unit.rstrip(b"\x00")  # trailing_zero_8bits and a 4-byte start code's zero
        if unit:
            units.append(unit)
    return units


def _unescape(payload: bytes) -> bytes:
    """RBSP from NAL payload: drop the emulation-prevention byte of each ``00 00 03``."""
    return payload.replace(b"\x00\x00\x03", b"\x00\x00")


def _skip_scaling_list(bits: _Bits, size: int) -> None:
    last = next_scale = 8
    for _ in range(size):
        if next_scale:
            next_scale = (last + bits.se() + 256) % 256
        last = next_scale or last


class _OutOfBits(Exception):
    """The NAL ended inside a field: it is cut short or not what its type says."""


class _Bits:
    """A big-endian bit reader with Exp-Golomb codes (H.264 §9.1)."""

    def __init__(self, data: bytes) -> None:
        self._value = int.from_bytes(data, "big")
        self._left = len(data) * 8

    def u(self, count: int) -> int:
        if count > self._left:
            raise _OutOfBits
        self._left -= count
        return (self._value >> self._left) & ((1 << count) - 1)

    def ue(self) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
            if zeros > 31:
                raise _OutOfBits
        return (1 << zeros) - 1 + self.u(zeros)

    def se(self) -> int:
        code = self.ue()
        return (code + 1) // 2 if code % 2 else -(code // 2)
