"""Names, versions and on-disk records of the GenVR-duo stereo video layout.

Everything a reader needs to find its way in a built root is declared here, so the writer,
the reader and the validator agree on one vocabulary. The layout is documented in
``docs/stereo.md``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, TypeAlias

import msgspec

FORMAT_VERSION: Final = 1

# Root files -------------------------------------------------------------------------------
INDEX_DEFAULT: Final = "genvr_i2s.jsonl"
INDEX_NODEPTH: Final = "genvr_i2s_nodepth.jsonl"
INDEX_WITH_DEPTH: Final = "genvr_i2s_with_depth.jsonl"
REQUIREMENTS: Final = "loader_requirements.json"
REQUIREMENTS_WITH_DEPTH: Final = "loader_requirements_with_depth.json"
SOURCE_MAPPING: Final = "source_mapping.jsonl"
RELEASE_MANIFEST: Final = "release_manifest.json"
SOURCE_RELEASE_MANIFEST: Final = "source_dataset_release_manifest.json"
READER_VALIDATION: Final = "reader_validation.json"

# Per-pair files, relative to the pair directory -------------------------------------------
PROJECT: Final = "ue5-pro"
PAIR_META: Final = "meta.json"
PROMPT: Final = "prompt.txt"
EYES: Final = ("left", "right")
VIDEO_FILES: Final = {"left": "videos/left.mp4", "right": "videos/right.mp4"}
CAMERA_FILES: Final = {"left": "cameras/left.json", "right": "cameras/right.json"}
DEPTH_DIR: Final = "depth-zstd-5-mm"
DEPTH_META: Final = f"{DEPTH_DIR}/meta.json"
DEPTH_GROUP: Final = f"{DEPTH_DIR}/group.zarr"

# Depth encoding ---------------------------------------------------------------------------
DEPTH_SCALE: Final = 1000
DEPTH_INVALID: Final = 0
DEPTH_DTYPE: Final = "<u4"
DEPTH_CHUNK_FRAMES: Final = 4
DEPTH_COMPRESSOR: Final[dict[str, Any]] = {
    "id": "blosc",
    "cname": "zstd",
    "clevel": 5,
    "shuffle": 1,
    "blocksize": 0,
}
#: Each eye's axes, named in its ``.zattrs`` as ``_ARRAY_DIMENSIONS`` (the Zarr v2
#: convention xarray reads). Depth written before the names were added has none.
DEPTH_DIMENSIONS: Final = ("frame", "y", "x")
DEPTH_FAMILY: Final = "depth"
BASE_FAMILY: Final = "base"

#: What a user must do when depth is asked for but not installed.
DEPTH_INSTALL_HINT: Final = (
    "download every depth/depth-*.tar package of the same release and run "
    "`python unpack.py --depth --output DIR` with the DIR used for the base packages"
)

PROMPT_KIND: Final = "procedural_scene_metadata"
CAMERA_AXES: Final = "opencv: x right, y down, z forward"
WORLD_FRAME: Final = "metres, (UE_Y, -UE_Z, UE_X) / 100 from Unreal Engine centimetres"

#: Bounds of decoded sizes, so a damaged number is a decode error naming its field rather
#: than an allocation of terabytes: up to 10 million frames, 65536 pixels a side, 1000 fps.
Frames: TypeAlias = Annotated[int, msgspec.Meta(ge=1, le=10_000_000)]
Pixels: TypeAlias = Annotated[int, msgspec.Meta(ge=1, le=65_536)]
Rate: TypeAlias = Annotated[float, msgspec.Meta(gt=0, le=1000)]
Seconds: TypeAlias = Annotated[float, msgspec.Meta(ge=0, le=1e9)]

_STRICT: dict[str, Any] = {"frozen": True, "kw_only": True, "forbid_unknown_fields": True}


def family_of(path: str) -> str:
    """Return the release family of a root-relative path: files under ``depth-*/`` are depth."""
    parts = path.split("/")
    return DEPTH_FAMILY if any(part.startswith("depth-") for part in parts[:-1]) else BASE_FAMILY


class Resolution(msgspec.Struct, **_STRICT):
    """Frame size in pixels, named the way video trainers read it."""

    width: Pixels
    height: Pixels


class CameraFile(msgspec.Struct, **_STRICT):
    """``cameras/<eye>.json``: pinhole intrinsics and poses in OpenCV axes.

    ``K`` is one 3x3 matrix when the intrinsics never change, else one per frame; the same
    holds for the two 4x4 pose matrices (one when the camera is static).
    """

    K: list[Any]
    camera_to_world: list[Any]
    world_to_camera: list[Any]
    height: Pixels
    width: Pixels


class DepthRef(msgspec.Struct, **_STRICT):
    """Where a pair's depth lives; an optional attachment installed by the depth family."""

    zarr: str
    meta: str
    arrays: dict[str, str]
    scale: int
    invalid_value: int
    family: str


class PairMeta(msgspec.Struct, **_STRICT):
    """Per-pair ``meta.json``: identity, timing, files and where they came from."""

    format: str
    version: int
    id: str
    project: str
    map: str
    scene: str
    cams: str
    num_frames: Frames
    fps: Rate
    duration: Seconds
    resolution: Resolution
    videos: dict[str, str]
    cameras: dict[str, str]
    camera_axes: str
    world_frame: str
    prompt: str
    prompt_kind: str
    human_caption: bool
    depth: DepthRef | None
    depth_note: str
    source: dict[str, str]


class IndexRow(msgspec.Struct, **_STRICT):
    """One line of a ``genvr_i2s*.jsonl`` index: what a raw-video trainer reads plus stereo."""

    id: str
    path: str
    cap: str
    cap_kind: str
    fps: Rate
    num_frames: Frames
    duration: Seconds
    resolution: Resolution
    left_video: str
    right_video: str
    left_camera: str
    right_camera: str
    prompt_path: str
    meta_path: str
    depth: DepthRef | None = None


class LoaderRequirements(msgspec.Struct, **_STRICT):
    """``loader_requirements*.json``: which index to read and what must be installed."""

    format: str
    version: int
    dataset: str
    indexes: list[str]
    num_samples: int
    use_depth: bool
    use_camera: bool
    online_vae_encoding: bool
    online_text_encoding: bool
    is_v2v: bool
    video_mode: str
    eyes: list[str]
    required_row_paths: list[str]
    required_families: list[str]
    depth_install_hint: str


class DepthMeta(msgspec.Struct, **_STRICT):
    """``depth-zstd-5-mm/meta.json``: how to turn stored integers back into metres."""

    format: str
    version: int
    kind: str
    not_disparity: bool
    units: str
    dtype: str
    scale: int
    invalid_value: int
    decode: str
    invalid_sources: list[str]
    far_limit_m: float | None
    zarr_format: int
    group: str
    arrays: list[str]
    shape: list[int]
    chunks: list[int]
    compressor: dict[str, Any]
    invalid_pixels: dict[str, int]


class ManifestFile(msgspec.Struct, **_STRICT):
    """One file of ``release_manifest.json`` or the source manifest."""

    path: str
    size: int
    sha256: str
    family: str | None = None


class ReleaseManifest(msgspec.Struct, **_STRICT):
    """``release_manifest.json`` and ``source_dataset_release_manifest.json``."""

    format: str
    version: int
    dataset: str
    snapshot: str
    files: list[ManifestFile]
    families: dict[str, dict[str, int]]
    excluded: list[str]
    note: str


class SourceMappingRow(msgspec.Struct, **_STRICT):
    """One line of ``source_mapping.jsonl``: built file -> source file."""

    id: str
    files: dict[str, str]


class FrameRead(msgspec.Struct, **_STRICT):
    """One read done by reader validation: which frames of which stream, and what came back.

    ``sha256`` hashes the returned bytes where they are deterministic (cameras, prompt, depth)
    so a later check can prove it read the same values; it is ``None`` for video pixels.
    """

    id: str
    what: str
    frames: list[int]
    shape: list[int]
    dtype: str
    ok: bool
    error: str | None = None
    sha256: str | None = None


class ReaderValidation(msgspec.Struct, **_STRICT):
    """``reader_validation.json``: exactly what the reader read, and what it did not."""

    format: str
    version: int
    scope: str
    index: str
    use_depth: bool
    pairs_total: int
    pairs_read: list[str]
    pairs_not_read: list[str]
    reads: list[FrameRead]
    passed: bool
    not_checked: list[str]


def encode_json(record: msgspec.Struct | dict[str, Any]) -> bytes:
    """Deterministic, indented JSON bytes (sorted keys, trailing newline) for a record."""
    raw = msgspec.json.encode(record, order="deterministic")
    return msgspec.json.format(raw, indent=2) + b"\n"


def encode_jsonl(rows: list[Any]) -> bytes:
    """Deterministic JSON Lines bytes: one compact sorted-key object per line."""
    return b"".join(msgspec.json.encode(row, order="deterministic") + b"\n" for row in rows)
