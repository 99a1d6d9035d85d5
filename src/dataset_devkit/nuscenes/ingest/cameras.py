"""Camera payloads by kind and format: what a frame is at scan time, and its JPEG at export.

Every camera frame takes one of three routes, chosen by its kind and format:

- **JPEG** (``CompressedImage`` with a JPEG format): the bytes are copied verbatim, never
  re-encoded (the size is read from the frame header at scan time);
- **PNG** and **raw pixels** (``sensor_msgs/Image``, ``foxglove.RawImage``): the size is
  known without decoding at scan time; at export the frame is decoded (Pillow for PNG,
  :mod:`..common.pixels` for raw encodings) and encoded once at JPEG quality 95;
- **video** (``foxglove.CompressedVideo``, H.264/H.265): packets depend on earlier ones, so a
  stream is decoded in order by one :class:`~.video_packets.VideoPacketDecoder` per topic,
  at scan time to find sizes and damaged frames, at export to take the wanted frames.

Non-JPEG frames leave only through :func:`..common.jpeg.encode_pixels` at the contract's
quality, so the same pixels always give the same bytes.
"""

from __future__ import annotations

from typing import Any, Final

from dataset_devkit.errors import FormatError
from dataset_devkit.nuscenes.common.jpeg import (
    encode_pixels,
    jpeg_dimensions,
    png_dimensions,
    png_to_pixels,
)
from dataset_devkit.nuscenes.common.pixels import RAW_ENCODINGS, raw_to_pixels
from dataset_devkit.nuscenes.ingest.records import CompressedFrame, RawFrame, VideoPacket
from dataset_devkit.nuscenes.spec import JPEG_QUALITY

__all__ = [
    "ENCODING_JPEG",
    "ENCODING_PNG",
    "VIDEO_FORMATS",
    "CameraFrame",
    "compressed_encoding",
    "frame_encoding",
    "probe_still",
    "still_to_jpeg",
]

ENCODING_JPEG: Final = "jpeg"
ENCODING_PNG: Final = "png"
VIDEO_FORMATS: Final = ("h264", "h265")

CameraFrame = CompressedFrame | RawFrame | VideoPacket


def compressed_encoding(fmt: str, what: str) -> str:
    """``jpeg`` or ``png`` from a ``CompressedImage`` format string; FormatError otherwise.

    Drivers write ``"jpeg"``, ``"png"``, or image_transport's ``"bgr8; jpeg compressed bgr8"``
    (the last part names the compression). ``compressedDepth`` (a depth map with a private
    header) is not a camera image.
    """
    text = fmt.strip().lower()
    last = text.split(";")[-1]
    if "compresseddepth" in text:
        raise FormatError(
            f"{what}: format {fmt!r} is a compressed depth map, not a camera image; leave the "
            "topic out (ingest.exclude_topics)"
        )
    if text in ("jpeg", "jpg") or "jpeg" in last or "jpg" in last:
        return ENCODING_JPEG
    if text == "png" or "png" in last:
        return ENCODING_PNG
    raise FormatError(
        f"{what}: image format {fmt!r} is neither JPEG nor PNG (the compressed formats read); "
        "leave the topic out (ingest.exclude_topics) or record it as JPEG, PNG or raw"
    )


def frame_encoding(frame: CameraFrame, what: str) -> str:
    """The source encoding recorded for a camera: ``jpeg``, ``png``, a raw encoding, ``h264``."""
    if isinstance(frame, CompressedFrame):
        return compressed_encoding(frame.format, what)
    if isinstance(frame, RawFrame):
        return frame.encoding
    fmt = frame.format.strip().lower()
    if fmt not in VIDEO_FORMATS:
        raise FormatError(
            f"{what}: video format {frame.format!r} is not read; expected one of "
            f"{', '.join(VIDEO_FORMATS)}"
        )
    return fmt


def probe_still(frame: CompressedFrame | RawFrame, encoding: str, what: str) -> tuple[int, int]:
    """``(width, height)`` of a still frame without decoding its pixels."""
    if isinstance(frame, RawFrame):
        if frame.encoding not in RAW_ENCODINGS:
            raw_to_pixels(  # raises the one message listing what is supported
                frame.data,
                encoding=frame.encoding,
                width=frame.width,
                height=frame.height,
                step=frame.step,
                is_bigendian=frame.is_bigendian,
                what=what,
            )
        _check_raw_size(frame, what)
        return (frame.width, frame.height)
    if encoding == ENCODING_JPEG:
        return jpeg_dimensions(frame.data, f"{what} image")
    return png_dimensions(frame.data, f"{what} image")


def _check_raw_size(frame: RawFrame, what: str) -> None:
    """Cheap header checks at scan time; the full checks run when the frame is decoded."""
    if frame.width < 1 or frame.height < 1:
        raise FormatError(
            f"{what}: image size must be positive, found {frame.width}x{frame.height}"
        )
    if frame.step < frame.width:
        raise FormatError(
            f"{what}: step {frame.step} is smaller than the width {frame.width} ({frame.encoding})"
        )
    if len(frame.data) < frame.step * (frame.height - 1) + frame.width:
        raise FormatError(
            f"{what}: {len(frame.data)} bytes of pixel data, expected at least "
            f"{frame.step} x {frame.height} (step x height, {frame.encoding})"
        )


def still_to_jpeg(frame: CompressedFrame | RawFrame, encoding: str, what: str) -> bytes:
    """The JPEG of a still frame: a JPEG's own bytes, anything else encoded at quality 95."""
    if isinstance(frame, CompressedFrame) and encoding == ENCODING_JPEG:
        return frame.data
    return encode_pixels(_pixels(frame, what), JPEG_QUALITY)


def _pixels(frame: CompressedFrame | RawFrame, what: str) -> Any:
    if isinstance(frame, CompressedFrame):
        return png_to_pixels(frame.data, f"{what} image")
    return raw_to_pixels(
        frame.data,
        encoding=frame.encoding,
        width=frame.width,
        height=frame.height,
        step=frame.step,
        is_bigendian=frame.is_bigendian,
        what=what,
    )
