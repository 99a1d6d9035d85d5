"""The per-pair and root records of a stereo dataset, derived from a checked source pair.

Kept apart from the writer so that what a record says (ids, relative paths, requirements)
is decided in one place and the writer only moves bytes.
"""

from __future__ import annotations

from dataset_devkit.stereo.source import LoadedPair, SceneMetadata
from dataset_devkit.stereo.spec import (
    BASE_FAMILY,
    CAMERA_AXES,
    CAMERA_FILES,
    DEPTH_CHUNK_FRAMES,
    DEPTH_COMPRESSOR,
    DEPTH_DTYPE,
    DEPTH_FAMILY,
    DEPTH_GROUP,
    DEPTH_INSTALL_HINT,
    DEPTH_INVALID,
    DEPTH_META,
    DEPTH_SCALE,
    EYES,
    FORMAT_VERSION,
    INDEX_DEFAULT,
    INDEX_NODEPTH,
    INDEX_WITH_DEPTH,
    PAIR_META,
    PROJECT,
    PROMPT,
    PROMPT_KIND,
    VIDEO_FILES,
    WORLD_FRAME,
    DepthMeta,
    DepthRef,
    IndexRow,
    LoaderRequirements,
    PairMeta,
    Resolution,
)

#: Row fields holding root-relative paths that must exist for every sample.
BASE_ROW_PATHS = (
    "left_camera",
    "left_video",
    "meta_path",
    "path",
    "prompt_path",
    "right_camera",
    "right_video",
)
DEPTH_ROW_PATHS = ("depth.meta", "depth.zarr")


def pair_dir(item: LoadedPair) -> str:
    """Root-relative directory of a pair, which is also its sample id."""
    return f"{PROJECT}/{item.pair.pair_id}"


def procedural_prompt(scene: SceneMetadata) -> str:
    """A sentence generated from render metadata; it describes the scene setup, not pixels."""
    subjects = ", ".join(scene.subjects) if scene.subjects else "no listed subjects"
    return (
        f"A rendered {scene.environment} scene on map {scene.map_name} at {scene.time_of_day} "
        f"in {scene.weather} weather, camera {scene.camera_motion}, with {subjects}."
    )


def depth_ref(item: LoadedPair) -> DepthRef | None:
    """Where the pair's depth attachment lives, or ``None`` when the source had no depth."""
    if not item.has_depth:
        return None
    base = pair_dir(item)
    return DepthRef(
        zarr=f"{base}/{DEPTH_GROUP}",
        meta=f"{base}/{DEPTH_META}",
        arrays={eye: eye for eye in EYES},
        scale=DEPTH_SCALE,
        invalid_value=DEPTH_INVALID,
        family=DEPTH_FAMILY,
    )


def source_files(item: LoadedPair, index: int) -> dict[str, str]:
    """Built path -> source path (or export location) for everything a pair is made of."""
    base, pair = pair_dir(item), item.pair
    mapping = {
        f"{base}/{PAIR_META}": f"export.json#$.pairs[{index}]",
        f"{base}/{PROMPT}": f"export.json#$.pairs[{index}].scene_metadata",
    }
    for eye in EYES:
        files = getattr(pair, eye)
        mapping[f"{base}/{VIDEO_FILES[eye]}"] = files.video
        mapping[f"{base}/{CAMERA_FILES[eye]}"] = files.camera
        if files.depth is not None:
            mapping[f"{base}/{DEPTH_GROUP}/{eye}"] = files.depth
    return mapping


def pair_meta(item: LoadedPair, index: int) -> PairMeta:
    """The pair's ``meta.json``."""
    base, pair = pair_dir(item), item.pair
    return PairMeta(
        format="genvr-duo-pair",
        version=FORMAT_VERSION,
        id=base,
        project=PROJECT,
        map=f"map{pair.map:04d}",
        scene=f"scene{pair.scene:04d}",
        cams=f"cams{pair.cams:02d}",
        num_frames=pair.num_frames,
        fps=float(pair.fps),
        duration=pair.num_frames / float(pair.fps),
        resolution=Resolution(width=pair.width, height=pair.height),
        videos={eye: f"{base}/{VIDEO_FILES[eye]}" for eye in EYES},
        cameras={eye: f"{base}/{CAMERA_FILES[eye]}" for eye in EYES},
        camera_axes=CAMERA_AXES,
        world_frame=WORLD_FRAME,
        prompt=f"{base}/{PROMPT}",
        prompt_kind=PROMPT_KIND,
        human_caption=False,
        depth=depth_ref(item),
        depth_note=(
            "optional attachment shipped in the depth family; listed here whether or not it "
            "is installed"
            if item.has_depth
            else "this pair has no depth"
        ),
        source=source_files(item, index),
    )


def index_row(item: LoadedPair, prompt: str, *, with_depth: bool) -> IndexRow:
    """One index line; the with-depth index differs only by its ``depth`` field."""
    base, pair = pair_dir(item), item.pair
    return IndexRow(
        id=base,
        path=f"{base}/{VIDEO_FILES['left']}",
        cap=prompt,
        cap_kind=PROMPT_KIND,
        fps=float(pair.fps),
        num_frames=pair.num_frames,
        duration=pair.num_frames / float(pair.fps),
        resolution=Resolution(width=pair.width, height=pair.height),
        left_video=f"{base}/{VIDEO_FILES['left']}",
        right_video=f"{base}/{VIDEO_FILES['right']}",
        left_camera=f"{base}/{CAMERA_FILES['left']}",
        right_camera=f"{base}/{CAMERA_FILES['right']}",
        prompt_path=f"{base}/{PROMPT}",
        meta_path=f"{base}/{PAIR_META}",
        depth=depth_ref(item) if with_depth else None,
    )


def requirements(dataset: str, num_samples: int, *, use_depth: bool) -> LoaderRequirements:
    """A loader requirements document; both modes keep cameras and raw video reading."""
    return LoaderRequirements(
        format="genvr-loader-requirements",
        version=FORMAT_VERSION,
        dataset=dataset,
        indexes=[INDEX_WITH_DEPTH] if use_depth else [INDEX_DEFAULT, INDEX_NODEPTH],
        num_samples=num_samples,
        use_depth=use_depth,
        use_camera=True,
        online_vae_encoding=True,
        online_text_encoding=True,
        is_v2v=False,
        video_mode="raw",
        eyes=list(EYES),
        required_row_paths=[*BASE_ROW_PATHS, *(DEPTH_ROW_PATHS if use_depth else ())],
        required_families=[BASE_FAMILY, DEPTH_FAMILY] if use_depth else [BASE_FAMILY],
        depth_install_hint=DEPTH_INSTALL_HINT,
    )


def depth_meta(shape: list[int], invalid: dict[str, int], far: float | None) -> DepthMeta:
    """The depth ``meta.json`` record: every value fixed by the format but the measured ones."""
    return DepthMeta(
        format="genvr-duo-depth",
        version=FORMAT_VERSION,
        kind="camera_z_depth",
        not_disparity=True,
        units="millimetre",
        dtype=DEPTH_DTYPE,
        scale=DEPTH_SCALE,
        invalid_value=DEPTH_INVALID,
        decode="metres = array.astype(float32) / 1000; 0 means invalid",
        invalid_sources=["NaN", "inf", "<= 0", "beyond far_limit_m", "< 0.5 mm"],
        far_limit_m=far,
        zarr_format=2,
        group="group.zarr",
        arrays=list(EYES),
        shape=shape,
        chunks=[DEPTH_CHUNK_FRAMES, *shape[1:]],
        compressor=dict(DEPTH_COMPRESSOR),
        invalid_pixels=invalid,
    )
