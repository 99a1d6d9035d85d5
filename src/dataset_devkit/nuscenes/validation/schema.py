"""The official nuScenes v1.0 table schema as the validator and the SDK check it.

``spec.py`` defines the structs the exporter writes; this module keeps the *reader's* view
of the same contract: which fields each official table must carry, of
which JSON kind, and which fields are foreign keys or chain links. Keeping it as data lets
the validator report every field problem at once instead of stopping at the first.
"""

from __future__ import annotations

import re
from typing import Final

from dataset_devkit.nuscenes import spec

__all__ = [
    "CAMERA_CHANNEL_RE",
    "CHAIN_LINKS",
    "DATASET_VERSION",
    "EXTENSIONS_DIR",
    "FOREIGN_KEYS",
    "MAPS_DIR",
    "OFFICIAL_TABLES",
    "SAMPLES_DIR",
    "TABLE_FIELDS",
    "TOKEN_RE",
    "VERSION_RE",
    "hex_tokens",
]

#: The only dataset version of the v1 contract.
DATASET_VERSION: Final = spec.VERSION
#: A version string that is safe as one directory name.
VERSION_RE: Final = re.compile(r"^v[0-9]+\.[0-9]+(-[a-z0-9]+)?$")
#: Deterministic tokens: 32 lowercase hex characters.
TOKEN_RE: Final = spec.TOKEN_RE
#: Normalized camera channels.
CAMERA_CHANNEL_RE: Final = spec.CHANNEL_RE

SAMPLES_DIR: Final = spec.SAMPLES_DIR
MAPS_DIR: Final = spec.MAPS_DIR
EXTENSIONS_DIR: Final = spec.EXTENSIONS_DIR

#: The 13 tables nuscenes-devkit 1.2.0 loads, in its load order.
OFFICIAL_TABLES: Final = spec.TABLE_NAMES

# Field kinds: "token" (32 hex), "link" (token or "" at a chain end), "str", "int", "bool",
# "vec3"/"quat" (finite numbers), "intrinsic" (3x3 finite or []), "tokens" (list of tokens),
# "num" (finite number).
TABLE_FIELDS: Final[dict[str, dict[str, str]]] = {
    "category": {"token": "token", "name": "str", "description": "str"},
    "attribute": {"token": "token", "name": "str", "description": "str"},
    "visibility": {"token": "token", "level": "str", "description": "str"},
    "instance": {
        "token": "token",
        "category_token": "token",
        "nbr_annotations": "int",
        "first_annotation_token": "token",
        "last_annotation_token": "token",
    },
    "sensor": {"token": "token", "channel": "str", "modality": "str"},
    "calibrated_sensor": {
        "token": "token",
        "sensor_token": "token",
        "translation": "vec3",
        "rotation": "quat",
        "camera_intrinsic": "intrinsic",
    },
    "ego_pose": {"token": "token", "timestamp": "int", "rotation": "quat", "translation": "vec3"},
    "log": {
        "token": "token",
        "logfile": "str",
        "vehicle": "str",
        "date_captured": "str",
        "location": "str",
    },
    "scene": {
        "token": "token",
        "name": "str",
        "description": "str",
        "log_token": "token",
        "nbr_samples": "int",
        "first_sample_token": "token",
        "last_sample_token": "token",
    },
    "sample": {
        "token": "token",
        "timestamp": "int",
        "scene_token": "token",
        "prev": "link",
        "next": "link",
    },
    "sample_data": {
        "token": "token",
        "sample_token": "token",
        "ego_pose_token": "token",
        "calibrated_sensor_token": "token",
        "filename": "str",
        "fileformat": "str",
        "width": "int",
        "height": "int",
        "timestamp": "int",
        "is_key_frame": "bool",
        "prev": "link",
        "next": "link",
    },
    "sample_annotation": {
        "token": "token",
        "sample_token": "token",
        "instance_token": "token",
        "attribute_tokens": "tokens",
        "visibility_token": "str",
        "translation": "vec3",
        "size": "vec3",
        "rotation": "quat",
        "prev": "link",
        "next": "link",
        "num_lidar_pts": "int",
        "num_radar_pts": "int",
    },
    "map": {"token": "token", "log_tokens": "tokens", "category": "str", "filename": "str"},
}

#: ``(table, field) -> referenced table`` for every official foreign key.
FOREIGN_KEYS: Final[dict[tuple[str, str], str]] = {
    ("instance", "category_token"): "category",
    ("instance", "first_annotation_token"): "sample_annotation",
    ("instance", "last_annotation_token"): "sample_annotation",
    ("calibrated_sensor", "sensor_token"): "sensor",
    ("scene", "log_token"): "log",
    ("scene", "first_sample_token"): "sample",
    ("scene", "last_sample_token"): "sample",
    ("sample", "scene_token"): "scene",
    ("sample", "prev"): "sample",
    ("sample", "next"): "sample",
    ("sample_data", "sample_token"): "sample",
    ("sample_data", "ego_pose_token"): "ego_pose",
    ("sample_data", "calibrated_sensor_token"): "calibrated_sensor",
    ("sample_data", "prev"): "sample_data",
    ("sample_data", "next"): "sample_data",
    ("sample_annotation", "sample_token"): "sample",
    ("sample_annotation", "instance_token"): "instance",
    ("sample_annotation", "attribute_tokens"): "attribute",
    ("sample_annotation", "prev"): "sample_annotation",
    ("sample_annotation", "next"): "sample_annotation",
    ("map", "log_tokens"): "log",
}

#: Tables whose rows form doubly linked ``prev``/``next`` chains.
CHAIN_LINKS: Final = ("sample", "sample_data", "sample_annotation")


def hex_tokens(col: list[str]) -> bool:
    """Whether every string is 32 lowercase hex characters, in a few C-level passes."""
    if not col:
        return True
    if set(map(len, col)) != {32}:
        return False
    joined = "".join(col)
    try:
        # fromhex rejects non-hex (and skips whitespace); hex() round-trips only lowercase,
        # so equality proves every character was a lowercase hex digit.
        return bytes.fromhex(joined).hex() == joined
    except ValueError:
        return False
