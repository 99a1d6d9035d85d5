"""The Croissant document of a stereo video dataset (GenVR-duo layout).

Records mlcroissant reads: ``pairs`` (the default index, one row per stereo pair),
``pairs_with_depth`` (the with-depth index, when the dataset has depth), ``cameras``
(every ``cameras/<eye>.json``: intrinsics and image size), ``depth`` (every depth group's
``meta.json``) and ``files`` (the content manifest). The videos and the depth arrays are
``FileSet``s without a record set: mlcroissant has no MP4 or Zarr reader (a record set over
them fails to load), so the index rows name each pair's videos, read with PyAV or the
dataset's reader, and the depth with zarr, xarray or TensorStore.
"""

from __future__ import annotations

from pathlib import Path

from dataset_devkit.croissant._nodes import (
    Node,
    dataset,
    field,
    file_set,
    manifest_files_record_set,
    record_set,
    source,
    top_level_file_objects,
)
from dataset_devkit.croissant._tree import TreeFiles
from dataset_devkit.croissant.spec import MEDIA_TYPES, CroissantOptions
from dataset_devkit.stereo.spec import (
    DEPTH_DIR,
    INDEX_DEFAULT,
    INDEX_NODEPTH,
    INDEX_WITH_DEPTH,
    READER_VALIDATION,
    RELEASE_MANIFEST,
    REQUIREMENTS,
    REQUIREMENTS_WITH_DEPTH,
    SOURCE_MAPPING,
    SOURCE_RELEASE_MANIFEST,
)

__all__ = ["stereo_document"]

_DESCRIPTIONS = {
    INDEX_DEFAULT: "The default index: one row per pair, never requires depth.",
    INDEX_NODEPTH: "The index without depth (the same rows as the default).",
    INDEX_WITH_DEPTH: "The same pairs, each with its depth group.",
    REQUIREMENTS: "What a loader of the default index needs (use_depth=false).",
    REQUIREMENTS_WITH_DEPTH: "What a loader of the with-depth index needs (use_depth=true).",
    SOURCE_MAPPING: "Built path -> source path, per pair.",
    RELEASE_MANIFEST: "Every file: path, size, SHA-256, family (base or depth).",
    SOURCE_RELEASE_MANIFEST: "Every source file used: path, size, SHA-256.",
    READER_VALIDATION: "What the build's reader check read.",
}

_INDEX_FIELDS = (
    ("id", "sc:Text", "The pair's id: project/mapNNNN/sceneNNNN/camsNN."),
    ("path", "sc:Text", "The left video (the trainer's primary path)."),
    ("cap", "sc:Text", "Procedural scene metadata as a sentence (not a human caption)."),
    ("cap_kind", "sc:Text", "Always procedural_scene_metadata."),
    ("fps", "sc:Float", "Frames per second of both videos."),
    ("num_frames", "cr:Int64", "Frames of each video."),
    ("duration", "sc:Float", "num_frames / fps, seconds."),
    ("left_video", "sc:Text", "Left eye's MP4, relative to the root."),
    ("right_video", "sc:Text", "Right eye's MP4, relative to the root."),
    ("left_camera", "sc:Text", "Left eye's cameras JSON."),
    ("right_camera", "sc:Text", "Right eye's cameras JSON."),
    ("prompt_path", "sc:Text", "The pair's prompt.txt."),
    ("meta_path", "sc:Text", "The pair's meta.json."),
)
#: The pair id and eye of a file under a pair directory, from its path.
_PAIR = r"^(.*)/(?:videos|cameras|" + DEPTH_DIR + r")/.*$"
_EYE = r"^.*/(left|right)\.json$"


def _index_record_set(name: str, index: str, description: str) -> Node:
    fields = [
        field(name, column, kind, source(file_object=index, column=column), text)
        for column, kind, text in _INDEX_FIELDS
    ]
    return record_set(name, description, fields, key=["id"])


def _from_path(record: str, name: str, file_set_id: str, regex: str, text: str) -> Node:
    return field(
        record, name, "sc:Text",
        source(file_set=file_set_id, file_property="fullpath", regex=regex), text,
    )  # fmt: skip


def _json_field(
    record: str, name: str, kind: str, file_set_id: str, text: str, shape: list[int] | None
) -> Node:
    path_source = source(file_set=file_set_id, json_path=f"$.{name}")
    return field(record, name, kind, path_source, text, array_shape=shape)


def stereo_document(root: Path, files: TreeFiles, options: CroissantOptions) -> Node:
    """The Croissant document of the stereo dataset at *root*."""
    has_depth = INDEX_WITH_DEPTH in files
    distribution = [
        *top_level_file_objects(files, options, _DESCRIPTIONS),
        file_set("video-files", ["*/videos/*.mp4"], MEDIA_TYPES["mp4"],
                 "Left and right H.264 videos of every pair."),
        file_set("camera-files", ["*/cameras/*.json"], MEDIA_TYPES["json"],
                 "Per eye: K, camera_to_world, world_to_camera, height, width (OpenCV axes)."),
        file_set("prompt-files", ["*/prompt.txt"], MEDIA_TYPES["text"],
                 "Per pair: the procedural scene sentence."),
        file_set("pair-meta-files", ["*/cams??/meta.json"], MEDIA_TYPES["json"],
                 "Per pair: ids, frames, fps, resolution, file names."),
    ]  # fmt: skip
    if has_depth:
        distribution += [
            file_set("depth-meta-files", [f"*/{DEPTH_DIR}/meta.json"], MEDIA_TYPES["json"],
                     "Per pair: how the depth is encoded (camera-Z, millimetres, 0 invalid)."),
            file_set("depth-array-files", [f"*/{DEPTH_DIR}/group.zarr/*"], MEDIA_TYPES["zarr2"],
                     "Per pair: Zarr v2 group, arrays left and right, uint32 [frame, y, x] "
                     "millimetres; metres = value / 1000, 0 = invalid."),
        ]  # fmt: skip
    record_sets = [
        _index_record_set("pairs", INDEX_DEFAULT, "One record per stereo pair (default "
                          "index, no depth)."),
        record_set("cameras", "One record per eye of every pair: intrinsics and size.", [
            _from_path("cameras", "pair_id", "camera-files", _PAIR, "The pair the camera is of."),
            _from_path("cameras", "eye", "camera-files", _EYE, "left or right."),
            _json_field("cameras", "K", "cr:Float64", "camera-files",
                        "Intrinsics [[f, 0, cx], [0, f, cy], [0, 0, 1]] in pixels.", [3, 3]),
            _json_field("cameras", "width", "cr:Int64", "camera-files", "Image width, px.", None),
            _json_field("cameras", "height", "cr:Int64", "camera-files", "Image height, px.", None),
        ]),
    ]  # fmt: skip
    if has_depth:
        record_sets += [
            _index_record_set("pairs_with_depth", INDEX_WITH_DEPTH,
                              "One record per stereo pair (the with-depth index)."),
            record_set("depth", "One record per pair's depth group: its encoding.", [
                _from_path("depth", "pair_id", "depth-meta-files", _PAIR, "The pair."),
                _json_field("depth", "units", "sc:Text", "depth-meta-files", "millimetre.", None),
                _json_field("depth", "scale", "cr:Int64", "depth-meta-files",
                            "Stored value per metre (1000).", None),
                _json_field("depth", "invalid_value", "cr:Int64", "depth-meta-files",
                            "The stored value of an invalid pixel (0).", None),
                _json_field("depth", "shape", "cr:Int64", "depth-meta-files",
                            "Each eye's array shape [frames, height, width].", [3]),
            ]),
        ]  # fmt: skip
    record_sets.append(manifest_files_record_set(files))
    pairs = sum(1 for path in files.files if path.endswith("/videos/left.mp4"))
    description = (
        f"A stereo video dataset in the GenVR-duo layout: {pairs} pairs of left/right "
        f"videos with cameras{' and camera-Z depth' if has_depth else ''}, written by "
        f"dataset-devkit. Root hash {files.root_sha256}."
    )
    return dataset(
        options,
        name=root.name,
        description=description,
        keywords=["dataset-devkit", "stereo", "video", "depth" if has_depth else "cameras"],
        files=files,
        distribution=distribution,
        record_sets=record_sets,
    )
