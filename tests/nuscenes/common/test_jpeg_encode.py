"""The one JPEG encoder (arrays and PIL images give the same bytes) and PNG camera frames."""

from __future__ import annotations

import io
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import cv2
import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.jpeg import (
    encode_jpeg,
    encode_pixels,
    png_dimensions,
    png_to_pixels,
)
from tests.nuscenes.camera_content import Array, psnr, scene

WHAT = "/cam/image/compressed at 5 ns"


def _pillow_bytesio(image: Image.Image, quality: int) -> bytes:
    """The encoder as it was before it wrote through a file descriptor (the reference)."""
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=quality, optimize=False, subsampling=0)
    return buf.getvalue()


# ---------------------------------------------------------------------------------- JPEG
@settings(max_examples=40, deadline=None)
@given(
    height=st.integers(1, 40),
    width=st.integers(1, 40),
    grey=st.booleans(),
    quality=st.sampled_from([1, 50, 95, 100]),
    seed=st.integers(0, 2**16),
)
def test_encode_pixels_gives_the_bytes_of_encode_jpeg_and_of_the_former_encoder(
    height: int, width: int, grey: bool, quality: int, seed: int
) -> None:
    pixels = scene(height, width, seed)
    if grey:
        pixels = np.ascontiguousarray(pixels[:, :, 1])
    image = Image.fromarray(pixels)
    data = encode_pixels(pixels, quality)
    assert data == encode_jpeg(image, quality) == _pillow_bytesio(image, quality)
    assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"


@settings(max_examples=40, deadline=None)
@given(
    height=st.integers(1, 24),
    width=st.integers(1, 24),
    pixel=st.sampled_from([3, 4]),
    reversed_channels=st.booleans(),
    padding=st.integers(0, 5),
    seed=st.integers(0, 2**16),
)
def test_strided_views_encode_like_their_contiguous_copies(
    height: int, width: int, pixel: int, reversed_channels: bool, padding: int, seed: int
) -> None:
    """The views raw frames give (padded rows, BGR order, 4-byte pixels) encode as copies."""
    rgb = scene(height, width, seed)
    stored = np.zeros((height, width * pixel + padding), dtype=np.uint8)
    pixels = stored[:, : width * pixel].reshape(height, width, pixel)
    pixels[:, :, :3] = rgb[:, :, ::-1] if reversed_channels else rgb
    view = pixels[:, :, 2::-1] if reversed_channels else pixels[:, :, :3]
    np.testing.assert_array_equal(view, rgb)
    assert encode_pixels(view, 95) == encode_pixels(np.ascontiguousarray(rgb), 95)


def test_decoded_video_frames_give_the_bytes_the_decoded_path_writes() -> None:
    """Frames of a decoded recording are written as encode_jpeg of the frame's RGB image: the
    array path of the same frame (what video packets hand over) must give those bytes. The
    scalers are this test's own, not PyAV 19's per-thread one, which would hang a child
    forked from another thread later in the session (Python 3.13)."""
    import av
    import av.video.reformatter

    scaler = av.video.reformatter.VideoReformatter()
    encoder = av.CodecContext.create("libx264", "w")
    encoder.width, encoder.height, encoder.pix_fmt = 64, 48, "yuv420p"
    encoder.time_base = Fraction(1, 10)
    frames = [
        av.VideoFrame.from_ndarray(scene(48, 64, shift=3 * k), format="rgb24") for k in range(4)
    ]
    packets = []
    for k, frame in enumerate(frames):
        frame.pts = k
        packets += encoder.encode(scaler.reformat(frame, format="yuv420p"))
    packets += encoder.encode(None)
    decoder = av.CodecContext.create("h264", "r")
    decoded = [f for p in packets for f in decoder.decode(p)] + list(decoder.decode(None))
    assert len(decoded) == 4
    for frame in decoded:
        rgb = scaler.reformat(frame, format="rgb24")
        pixels = np.asarray(rgb.to_ndarray(), dtype=np.uint8)
        assert encode_pixels(pixels, 95) == encode_jpeg(rgb.to_image(), 95)


def test_encoding_is_deterministic_across_calls_and_threads() -> None:
    frames = [scene(120, 160, seed) for seed in range(6)]
    once = [encode_pixels(f, 95) for f in frames]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for _ in range(3):
            assert list(pool.map(lambda f: encode_pixels(f, 95), frames)) == once
    assert [encode_pixels(f, 95) for f in frames] == once


def test_a_forked_child_encodes_through_its_own_scratch_file() -> None:
    """The in-memory files are reused; a forked child must not share its parent's (both
    would write the same file at once), and must not hang on the parent's lock."""
    import os

    from dataset_devkit.nuscenes.common import jpeg

    big, small = scene(240, 320, 1), scene(24, 32, 2)
    reference = _pillow_bytesio(Image.fromarray(small), 95)
    assert encode_pixels(big, 95) == _pillow_bytesio(Image.fromarray(big), 95)
    with jpeg._SCRATCH.lend() as parent_fd:
        parent_file = os.fstat(parent_fd).st_ino
        read_end, write_end = os.pipe()
        pid = os.fork()  # while the parent holds a file: a child must make its own
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                with jpeg._SCRATCH.lend() as fd:
                    ok = os.fstat(fd).st_ino != parent_file
                ok = ok and encode_pixels(small, 95) == reference
                os.write(write_end, b"1" if ok else b"0")
            finally:
                os._exit(0)
        os.close(write_end)
        try:
            assert os.read(read_end, 1) == b"1"
        finally:
            os.close(read_end)
            os.waitpid(pid, 0)
    with jpeg._SCRATCH.lend() as fd:
        assert fd == parent_fd  # reused
    assert encode_pixels(small, 95) == reference  # after a larger frame: only its own bytes


def test_threads_that_encoded_leave_nothing_that_hangs_a_later_fork() -> None:
    """Python 3.13 frees other threads' thread-local objects in a forked child; a finalizer
    there hangs it. The encoder keeps nothing per thread."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.workers import fork_from_another_thread

    frames = [scene(24, 32, seed) for seed in range(8)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda f: encode_pixels(f, 95), frames))
        fork_from_another_thread()


def test_quality_95_keeps_natural_content_above_40_db() -> None:
    for seed, (height, width) in enumerate([(480, 640), (97, 203), (64, 64)]):
        pixels = scene(height, width, seed)
        decoded = simplejpeg.decode_jpeg(encode_pixels(pixels, 95), colorspace="RGB")
        assert decoded.shape == pixels.shape
        assert psnr(decoded, pixels) >= 40.0
        grey = np.ascontiguousarray(pixels[:, :, 0])
        back = simplejpeg.decode_jpeg(encode_pixels(grey, 95), colorspace="GRAY")[:, :, 0]
        assert psnr(back, grey) >= 40.0


@pytest.mark.parametrize(
    ("pixels", "quality", "message"),
    [
        (np.zeros((4, 4, 3), dtype=np.uint16), 95, "got uint16 (4, 4, 3)"),
        (np.zeros((4, 4, 4), dtype=np.uint8), 95, "got uint8 (4, 4, 4)"),
        (np.zeros((0, 4, 3), dtype=np.uint8), 95, "got uint8 (0, 4, 3)"),
        (np.zeros(16, dtype=np.uint8), 95, "got uint8 (16,)"),
        (np.zeros((4, 4, 3), dtype=np.uint8), 0, "quality must be an integer in 1..100, got 0"),
        (np.zeros((4, 4, 3), dtype=np.uint8), 95.0, "got 95.0"),
    ],
)
def test_arrays_and_qualities_the_encoder_cannot_take_are_refused(
    pixels: npt.NDArray[np.generic], quality: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        encode_pixels(pixels, quality)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------- PNG
def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _handmade_png(width: int, height: int, depth: int, colour: int, rows: bytes) -> bytes:
    """A PNG written from the specification (for modes neither Pillow nor OpenCV write)."""
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    stride = len(rows) // height
    filtered = b"".join(b"\x00" + rows[i * stride : (i + 1) * stride] for i in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(filtered))
        + _chunk(b"IEND", b"")
    )


def test_png_modes_decode_to_rgb_or_grey_deterministically() -> None:
    rgb = scene(20, 30)
    grey = np.ascontiguousarray(rgb[:, :, 1])
    alpha = np.full((20, 30, 1), 77, dtype=np.uint8)
    cases: dict[str, tuple[bytes, Array]] = {
        "RGB": (_png(Image.fromarray(rgb)), rgb),
        "L": (_png(Image.fromarray(grey)), grey),
        "RGBA, alpha dropped": (_png(Image.fromarray(np.concatenate([rgb, alpha], 2))), rgb),
        "LA, alpha dropped": (
            _png(Image.fromarray(np.concatenate([grey[:, :, None], alpha], 2), "LA")),
            grey,
        ),
        "1, bilevel to 0/255": (
            _png(Image.fromarray(grey > 128)),
            np.where(grey > 128, 255, 0).astype(np.uint8),
        ),
    }
    palette = Image.fromarray(rgb).quantize(colors=16, dither=Image.Dither.NONE)
    cases["P, palette expanded"] = (_png(palette), np.asarray(palette.convert("RGB")))
    for what, (data, expected) in cases.items():
        assert png_dimensions(data, what) == (30, 20)
        out = png_to_pixels(data, what)
        assert out.dtype == np.uint8, what
        np.testing.assert_array_equal(out, expected, err_msg=what)


def test_16_bit_pngs_keep_the_high_byte_as_mono16_does() -> None:
    rng = np.random.default_rng(5)
    grey16 = rng.integers(0, 65536, (9, 11), dtype=np.uint16)
    rgb16 = rng.integers(0, 65536, (9, 11, 3), dtype=np.uint16)
    ok_grey, grey_png = cv2.imencode(".png", grey16)
    ok_rgb, rgb_png = cv2.imencode(".png", rgb16[:, :, ::-1])  # OpenCV writes BGR
    assert ok_grey and ok_rgb
    high = (grey16 >> 8).astype(np.uint8)
    np.testing.assert_array_equal(png_to_pixels(grey_png.tobytes(), "grey16"), high)
    np.testing.assert_array_equal(
        png_to_pixels(rgb_png.tobytes(), "rgb16"), (rgb16 >> 8).astype(np.uint8)
    )
    grey_alpha16 = np.stack([grey16, np.full_like(grey16, 9999)], -1).astype(">u2")
    data = _handmade_png(11, 9, 16, 4, grey_alpha16.tobytes())
    np.testing.assert_array_equal(png_to_pixels(data, "grey+alpha16"), high)


@settings(max_examples=80, deadline=None)
@given(cut=st.integers(0, 10_000))
def test_every_truncated_png_is_refused(cut: int) -> None:
    data = _png(Image.fromarray(scene(16, 24)))
    cut %= len(data)
    with pytest.raises(FormatError, match=rf"^{WHAT} is (not a PNG|a truncated PNG|a PNG cut)"):
        png_to_pixels(data[:cut], WHAT)


@settings(max_examples=120, deadline=None)
@given(at=st.integers(0, 10_000), flip=st.integers(1, 255))
def test_any_changed_byte_in_a_png_is_refused(at: int, flip: int) -> None:
    data = bytearray(_png(Image.fromarray(scene(16, 24))))
    at %= len(data)
    data[at] ^= flip
    with pytest.raises(FormatError, match=rf"^{WHAT} is "):
        png_to_pixels(bytes(data), WHAT)


def test_png_refusals_name_the_chunk_and_what_was_expected() -> None:
    data = _png(Image.fromarray(scene(16, 24)))
    idat = data.index(b"IDAT") - 4
    flipped = bytearray(data)
    flipped[idat + 20] ^= 0x10
    with pytest.raises(FormatError) as info:
        png_to_pixels(bytes(flipped), WHAT)
    assert str(info.value) == f"{WHAT} is a corrupt PNG: chunk IDAT at byte {idat} fails its CRC"
    with pytest.raises(FormatError) as info:
        png_to_pixels(data + b"\x00\x00", WHAT)
    assert str(info.value) == f"{WHAT} is a malformed PNG: 2 bytes after IEND"
    with pytest.raises(FormatError) as info:
        png_to_pixels(data[: idat + 30], WHAT)
    assert str(info.value).startswith(
        f"{WHAT} is a truncated PNG: chunk IDAT at byte {idat} needs "
    )
    jpeg = encode_pixels(scene(8, 8), 95)
    for read in (png_dimensions, png_to_pixels):
        with pytest.raises(FormatError, match=rf"^{WHAT} is not a PNG \(no PNG signature\)$"):
            read(jpeg, WHAT)


def test_png_dimensions_reads_only_the_header() -> None:
    data = _png(Image.fromarray(scene(13, 57)))
    header_only = data[: 8 + 12 + 13]
    assert png_dimensions(header_only, WHAT) == (57, 13)
    with pytest.raises(FormatError, match="truncated PNG"):
        png_to_pixels(header_only, WHAT)
    zero_wide = _handmade_png(1, 1, 8, 0, b"\x00")
    at = zero_wide.index(b"IHDR")
    header = struct.pack(">IIBBBBB", 0, 1, 8, 0, 0, 0, 0)
    bad = zero_wide[: at - 4] + _chunk(b"IHDR", header) + zero_wide[at + 4 + 13 + 4 :]
    with pytest.raises(FormatError) as info:
        png_dimensions(bad, WHAT)
    assert str(info.value) == f"{WHAT} is a PNG of 0x1 pixels; expected 1..2^31-1 each"


def test_image_data_that_does_not_decode_is_refused_even_with_valid_crcs() -> None:
    rows = bytes(3 * 4 * 4)
    filtered = b"".join(b"\x00" + rows[i * 12 : (i + 1) * 12] for i in range(4))
    short = zlib.compress(filtered)[:-9]  # a deflate stream cut short, re-checksummed
    data = (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0))
        + _chunk(b"IDAT", short)
        + _chunk(b"IEND", b"")
    )
    with pytest.raises(FormatError, match=rf"^{WHAT} is a PNG whose image data does not decode"):
        png_to_pixels(data, WHAT)
