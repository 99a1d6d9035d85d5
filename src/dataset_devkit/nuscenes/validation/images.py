"""JPEG existence, decodability and dimension checks, plus the map scaffold PNG.

Every referenced image is read through the no-follow reader and really decoded. The decode
is :func:`dataset_devkit.nuscenes.common.jpeg.decode_jpeg`: every entropy-coded block is decoded
strictly, so a truncated or corrupt stream fails, while the inverse transform runs at 1/8
size.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dataset_devkit.errors import DevkitError, FormatError
from dataset_devkit.nuscenes.common.jpeg import decode_jpeg
from dataset_devkit.nuscenes.validation.io import DatarootReader
from dataset_devkit.nuscenes.validation.tables import LoadedTables

__all__ = ["check_images", "decode_jpeg_size"]

_BATCH = 64


def decode_jpeg_size(data: bytes) -> tuple[int, int]:
    """Decode a JPEG stream and return ``(width, height)``; raise ValueError if it is not one.

    The same strict reduced-scale decode the export runs (:func:`decode_jpeg`), so
    validation accepts exactly the frames the export accepted.
    """
    if not data.startswith(b"\xff\xd8\xff"):
        raise ValueError("not a JPEG stream (no SOI marker)")
    try:
        return decode_jpeg(data, "JPEG")
    except FormatError as exc:
        raise ValueError(str(exc)) from None


def _check_one(
    reader: DatarootReader,
    rel_table: str,
    sd: dict[str, Any],
    manifest: Mapping[str, str] | None,
) -> str | None:
    where = f"{rel_table} row {sd['token']}.filename"
    try:
        data = reader.read_bytes(sd["filename"])
    except DevkitError as exc:
        return f"{where}: image {sd['filename']} cannot be read ({exc})"
    if manifest is not None:
        # Bind the decoded bytes to the verified manifest, so a file swapped between the
        # manifest check and this read is caught rather than validated in its place.
        want = manifest.get(sd["filename"])
        got = hashlib.sha256(data).hexdigest()
        if want is not None and got != want:
            return (
                f"{where}: image {sd['filename']} changed after the content manifest was "
                f"verified (sha256 {got}, manifest {want})"
            )
    try:
        width, height = decode_jpeg_size(data)
    except ValueError as exc:
        return f"{where}: image {sd['filename']}: {exc}"
    if (width, height) != (sd["width"], sd["height"]):
        return (
            f"{where}: image {sd['filename']} is {width}x{height}, the row says "
            f"{sd['width']}x{sd['height']}"
        )
    return None


def _check_extra_images(reader: DatarootReader, t: LoadedTables, issues: list[str]) -> None:
    expected = {sd["filename"] for sd in t.tables["sample_data"]}
    entries = reader.list_dir("")
    for top in ("samples", "sweeps"):
        if (top, "dir") not in entries:
            if any((top, kind) in entries for kind in ("file", "link", "other")):
                issues.append(f"{top}: expected a directory")
            continue
        for channel, kind in reader.list_dir(top):
            if kind != "dir":
                issues.append(f"{top}/{channel}: unexpected {kind} (expected a CAM_* directory)")
                continue
            for name, kind2 in reader.list_dir(f"{top}/{channel}"):
                rel = f"{top}/{channel}/{name}"
                if kind2 != "file":
                    issues.append(
                        f"{rel}: unexpected {kind2}; only regular image files belong here"
                    )
                elif rel not in expected:
                    issues.append(f"{rel}: image file is not referenced by sample_data")


def check_images(
    reader: DatarootReader,
    t: LoadedTables,
    issues: list[str],
    *,
    progress: Callable[[int], None] | None = None,
    workers: int = 2,
    manifest: Mapping[str, str] | None = None,
) -> None:
    """Decode every referenced JPEG and the map PNG; report missing, corrupt and extra files.

    *manifest* (``path -> sha256`` of a published dataroot) binds each decoded image to the
    content manifest: the bytes decoded must be the bytes that were verified.
    """
    rel_table = t.rel("sample_data")
    rows = t.tables["sample_data"]
    # Batches amortize the executor's per-task cost, which rivals a small image's decode.
    batches = [rows[i : i + _BATCH] for i in range(0, len(rows), _BATCH)]

    def check_batch(batch: list[dict[str, Any]]) -> list[str | None]:
        return [_check_one(reader, rel_table, sd, manifest) for sd in batch]

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for batch, problems in zip(batches, pool.map(check_batch, batches), strict=True):
            issues.extend(problem for problem in problems if problem is not None)
            if progress is not None:
                progress(len(batch))
    _check_extra_images(reader, t, issues)
    _check_map_png(reader, t, issues)


def _check_map_png(reader: DatarootReader, t: LoadedTables, issues: list[str]) -> None:
    from PIL import Image

    for record in t.tables["map"]:
        where = f"{t.rel('map')} row {record['token']}.filename"
        if not record["filename"].startswith("maps/"):
            issues.append(f"{where}: expected a file under maps/, found {record['filename']!r}")
            continue
        try:
            data = reader.read_bytes(record["filename"])
            with Image.open(io.BytesIO(data), formats=["PNG"]) as img:
                img.load()
                ok = img.size == (1, 1) and img.mode == "L" and img.getpixel((0, 0)) == 0
        except DevkitError as exc:
            issues.append(f"{where}: {exc}")
            continue
        except (OSError, SyntaxError) as exc:
            issues.append(f"{where}: scaffold PNG does not decode ({exc})")
            continue
        if not ok:
            issues.append(f"{where}: scaffold must be a 1x1 black grayscale PNG")
