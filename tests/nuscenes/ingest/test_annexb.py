"""Access-unit facts from Annex B NAL headers: key frames, parameter sets, H.264 frame_num gaps."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dataset_devkit.nuscenes.ingest.annexb import AnnexBReader, _Bits, _nal_units, _unescape
from tests.nuscenes.ingest.test_video_packets import GOP, encode_stream


def _exp_golomb(values: list[tuple[str, int]]) -> bytes:
    """Write ue(v)/se(v)/u(n) fields as H.264 §9.1 defines them (the test's own writer)."""
    bits = ""
    for kind, value in values:
        if kind == "se":
            value = 2 * value - 1 if value > 0 else -2 * value
        if kind in ("ue", "se"):
            code = bin(value + 1)[2:]
            bits += "0" * (len(code) - 1) + code
        else:
            bits += format(value, "08b")
    bits += "1"  # rbsp_stop_one_bit
    bits += "0" * (-len(bits) % 8)
    return int(bits, 2).to_bytes(len(bits) // 8, "big")


@settings(max_examples=200)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("ue"), st.integers(0, 2**20)),
            st.tuples(st.just("se"), st.integers(-(2**19), 2**19)),
            st.tuples(st.just("u8"), st.integers(0, 255)),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_exp_golomb_fields_round_trip(values: list[tuple[str, int]]) -> None:
    bits = _Bits(_exp_golomb(values))
    read = [bits.ue() if k == "ue" else bits.se() if k == "se" else bits.u(8) for k, _ in values]
    assert read == [v for _, v in values]


def test_nal_units_split_on_3_and_4_byte_start_codes_and_drop_trailing_zeros() -> None:
    data = b"\x00\x00\x00\x01\x67\xaa\x00\x00\x01\x68\xbb\x00\x00\x00\x00\x01\x65\xcc\x00"
    assert _nal_units(data) == [b"\x67\xaa", b"\x68\xbb", b"\x65\xcc"]
    assert _unescape(b"\x00\x00\x03\x01\x00\x00\x03\x00") == b"\x00\x00\x01\x00\x00\x00"


def test_key_frames_and_parameter_sets_are_recognised_in_both_codecs() -> None:
    for fmt in ("h264", "h265"):
        stream = encode_stream(fmt)
        reader = AnnexBReader(fmt)
        units = [reader.read(m) for m in stream.messages]
        assert [k for k, u in enumerate(units) if u.key] == stream.keys == [0, GOP, 2 * GOP]
        assert all(u.parameter_sets for u in units if u.key)
        assert not any(u.parameter_sets for u in units if not u.key)
        assert all(u.missing_reference == "" for u in units)


def test_an_h264_reference_frame_dropped_is_seen_at_the_next_frame() -> None:
    stream = encode_stream("h264")
    reader = AnnexBReader("h264")
    facts = [reader.read(m) for k, m in enumerate(stream.messages) if k != GOP + 2]
    gaps = [k for k, u in enumerate(facts) if u.missing_reference]
    assert gaps == [GOP + 2]  # the message after the dropped one (indexes shift by one)
    assert facts[GOP + 2].missing_reference == (
        "a reference frame before it is missing (H.264 frame_num 3 follows 1, expected 2)"
    )


@settings(max_examples=300)
@given(
    fmt=st.sampled_from(["h264", "h265"]),
    units=st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=6),
)
def test_garbage_nal_units_never_raise(fmt: str, units: list[bytes]) -> None:
    reader = AnnexBReader(fmt)
    for _ in range(2):
        facts = reader.read(b"".join(b"\x00\x00\x01" + u for u in units))
        assert isinstance(facts.key, bool)
