"""The read-only ``Dataset`` SDK over a validated nuScenes dataroot and its extensions.

Every method returns a defensive deep copy, so a caller mutating a result can never alter the
cached indexes or a later answer; rows of the official tables are copied by their table's own
copier (:mod:`._copies`: the load proved their shape), the rest by a generic JSON copy.
Lookups are dictionary accesses on indexes built once at load time; a bad lookup is a typed
error (``NotFoundError`` for an unknown token or name, ``ConfigError`` for a malformed
argument), never a bare ``KeyError`` or ``None``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from dataset_devkit.errors import ConfigError, FormatError, NotFoundError
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.sdk._copies import ROW_COPIERS, copy_json, plain_json
from dataset_devkit.nuscenes.sdk.load import DatasetIndex, load_index
from dataset_devkit.nuscenes.validation.schema import TABLE_FIELDS
from dataset_devkit.objectstore import refuse_url

__all__ = ["Dataset"]

Record = dict[str, Any]

_copy_sample_data = ROW_COPIERS["sample_data"]
_copy_ego_pose = ROW_COPIERS["ego_pose"]


class Dataset:
    """A read-only view of a ``v1.0-trainval`` dataroot written by this toolkit.

    Parameters
    ----------
    dataroot
        The dataroot directory (``str`` or ``Path``).
    version
        The table version; only ``v1.0-trainval`` is accepted.

    Raises
    ------
    ConfigError
        An unsafe or unsupported version.
    MalformedDataset
        Malformed JSON, unsafe file names, missing or duplicate tokens, broken chains or
        references: every issue is listed.
    UnsafePathError
        The dataroot or a file inside it is a symlink or hard link.
    """

    def __init__(self, dataroot: str | Path, version: str = spec.VERSION) -> None:
        refuse_url(dataroot, "the nuScenes SDK")
        self._ix: DatasetIndex = load_index(dataroot, version)

    def __repr__(self) -> str:
        scenes = len(self._ix.tables["scene"])
        return f"Dataset({str(self._ix.root)!r}, version={self._ix.version!r}, scenes={scenes})"

    @property
    def dataroot(self) -> Path:
        """The dataroot directory."""
        return self._ix.root

    @property
    def version(self) -> str:
        """The table version (``v1.0-trainval``)."""
        return self._ix.version

    # ------------------------------------------------------------------ official tables

    def _rows(self, table_name: str) -> list[Record]:
        if not isinstance(table_name, str) or table_name not in self._ix.tables:
            raise NotFoundError(
                f"unknown table {table_name!r}; tables: {', '.join(spec.TABLE_NAMES)}"
            )
        return self._ix.tables[table_name]

    def table(self, table_name: str) -> list[Record]:
        """Every row of the official table *table_name*, in file order."""
        rows = self._rows(table_name)
        return list(map(ROW_COPIERS[table_name], rows))

    def _record(self, table_name: str, token: str) -> Record:
        self._rows(table_name)
        if not isinstance(token, str):
            raise ConfigError(f"token must be a string, found {token!r}", key="token")
        row = self._ix.tokens[table_name].get(token)
        if row is None:
            raise NotFoundError(f"{table_name} has no token {token!r}")
        return row

    def get(self, table_name: str, token: str) -> Record:
        """The row of *table_name* whose token is *token*."""
        row = self._record(table_name, token)
        return ROW_COPIERS[table_name](row)

    def field2token(self, table_name: str, field_name: str, query: Any) -> list[str]:
        """Tokens of the rows of *table_name* whose *field_name* equals *query*, in file order."""
        rows = self._rows(table_name)
        if field_name not in TABLE_FIELDS[table_name]:
            raise NotFoundError(
                f"{table_name} has no field {field_name!r}; fields: "
                f"{', '.join(TABLE_FIELDS[table_name])}"
            )
        # Vectors are stored as tuples and returned as lists: compare what callers see.
        if isinstance(query, list):
            return [row["token"] for row in rows if plain_json(row[field_name]) == query]
        return [row["token"] for row in rows if row[field_name] == query]

    def scene_samples(self, scene_token: str) -> list[Record]:
        """The samples of a scene in chain order, rechecking cycle, endpoints, scene and count.

        The load already walked every chain (a broken one refuses the dataroot); the walk
        here re-proves the same rules on the cached index, as defence in depth, and a
        failure is a ``FormatError`` naming the table file and row.
        """
        scene = self._record("scene", scene_token)
        rel = self._ix.root / self._ix.version
        order: list[str] = []
        seen: set[str] = set()
        token = scene["first_sample_token"]
        samples = self._ix.tokens["sample"]
        while token:
            row = samples.get(token)
            if token in seen or row is None or row["scene_token"] != scene_token:
                problem = "has a cycle" if token in seen else "leaves the scene"
                raise FormatError(
                    f"the sample chain of scene {scene_token} {problem} at {token}",
                    path=rel / "sample.json",
                    field=f"row {order[-1] if order else token}.next",
                )
            seen.add(token)
            order.append(token)
            token = row["next"]
        if order[-1:] != [scene["last_sample_token"]] or len(order) != scene["nbr_samples"]:
            raise FormatError(
                f"chain of {len(order)} samples does not end at {scene['last_sample_token']} "
                f"with {scene['nbr_samples']} samples",
                path=rel / "scene.json",
                field=f"row {scene_token}",
            )
        copy_sample = ROW_COPIERS["sample"]
        return [copy_sample(samples[t]) for t in order]

    def camera(self, sample_token: str, channel: str) -> Record:
        """The key-frame sample_data row of *channel* (``CAM_*``) for *sample_token*."""
        # The hot path of a training loop: one lookup in the load-time index (whose keys are
        # known samples and valid channels) and the flat row's copy. Only a miss pays for
        # finding out which argument is wrong.
        try:
            row = self._ix.camera[sample_token, channel]
        except (KeyError, TypeError):  # TypeError: an unhashable argument
            raise self._camera_miss(sample_token, channel) from None
        return _copy_sample_data(row)

    def _camera_miss(self, sample_token: object, channel: object) -> Exception:
        """The error of a ``camera`` lookup that found no row, in the order of the checks."""
        if not isinstance(channel, str) or not spec.CHANNEL_RE.match(channel):
            return ConfigError(f"malformed camera channel {channel!r}", key="channel")
        try:
            self._record("sample", sample_token)  # type: ignore[arg-type]
        except (ConfigError, NotFoundError) as exc:
            return exc
        return NotFoundError(
            f"sample {sample_token} has no {channel} image; channels: "
            f"{', '.join(self._ix.channels)}"
        )

    def ego_pose(self, sample_data_token: str) -> Record:
        """The ego pose recorded at the capture time of *sample_data_token*."""
        sd = self._record("sample_data", sample_data_token)
        return _copy_ego_pose(self._ix.tokens["ego_pose"][sd["ego_pose_token"]])

    def image_path(self, sample_data_token: str) -> Path:
        """The path of the image of *sample_data_token* inside the dataroot."""
        filename: str = self._record("sample_data", sample_data_token)["filename"]
        return self._ix.root / filename

    @property
    def channels(self) -> tuple[str, ...]:
        """The normalized camera channels, sorted."""
        return self._ix.channels

    # ------------------------------------------------------------------ extensions

    def _doc(self, name: str) -> Record:
        doc: Record = self._ix.extensions[name]
        return doc

    def _part(self, name: str, part: str) -> list[Record]:
        rows: list[Record] = self._ix.extensions[name][part]
        return rows

    def _keyed(self, kind: str, key: str) -> Record:
        if not isinstance(key, str):
            raise ConfigError(f"{kind} key must be a string, found {key!r}", key=kind)
        value: Record | None = self._ix.by_key[kind].get(key)
        if value is None:
            raise NotFoundError(f"no {kind.replace('_', ' ')} for {key!r}")
        return value

    def _scene(self, scene_token: str) -> None:
        self._record("scene", scene_token)

    def validity(self, scene_token: str) -> Record:
        """The selected-scene validity aggregate (``validity.json`` ``scenes``)."""
        self._scene(scene_token)
        return copy_json(self._keyed("validity", scene_token))

    def recording_validity(self, source_digest: str) -> Record:
        """Per-source observations and grid/sample audits of one recording."""
        return copy_json(self._keyed("recording_validity", source_digest))

    def tags(self, scene_token: str) -> Record:
        """Tags computed from the data for one scene (never from human labels)."""
        self._scene(scene_token)
        return copy_json(self._keyed("tags", scene_token))

    def annotation_records(self) -> list[Record]:
        """Every imported human label record."""
        return copy_json(self._part(spec.ANNOTATIONS_FILE, "records"))

    def annotation_windows(self) -> list[Record]:
        """Every label interval clipped to its recording."""
        return copy_json(self._part(spec.ANNOTATIONS_FILE, "windows"))

    def annotation_matches(self) -> list[Record]:
        """Every label window overlapping an exported scene."""
        return copy_json(self._part(spec.ANNOTATIONS_FILE, "matches"))

    def annotation_scene_references(self) -> list[Record]:
        """Per scene, the label ids and match tokens that concern it."""
        return copy_json(self._part(spec.ANNOTATIONS_FILE, "scene_references"))

    def annotation_record(self, annotation_id: str) -> Record:
        """The label record *annotation_id*."""
        return copy_json(self._keyed("annotation_record", annotation_id))

    def annotation_window(self, window_token: str) -> Record:
        """The label window *window_token*."""
        return copy_json(self._keyed("annotation_window", window_token))

    def annotation_match(self, match_token: str) -> Record:
        """The scene match *match_token*."""
        return copy_json(self._keyed("annotation_match", match_token))

    def annotation_scene_reference(self, scene_token: str) -> Record:
        """The annotation reference of one scene (empty lists when it has no label)."""
        self._scene(scene_token)
        ref: Record | None = self._ix.by_key["annotation_scene_reference"].get(scene_token)
        if ref is None:
            return {"scene_token": scene_token, "annotation_ids": [], "match_tokens": []}
        return copy_json(ref)

    def annotations(self, scene_token: str) -> list[Record]:
        """The human label records that overlap *scene_token*."""
        ref = self.annotation_scene_reference(scene_token)
        return [self.annotation_record(a) for a in ref["annotation_ids"]]

    def scene_annotation_evidence(self, scene_token: str) -> Record:
        """A scene's labels with the windows and matches that tie them to it."""
        ref = self.annotation_scene_reference(scene_token)
        matches = [self.annotation_match(m) for m in ref["match_tokens"]]
        return {
            "scene_token": scene_token,
            "records": [self.annotation_record(a) for a in ref["annotation_ids"]],
            "matches": matches,
            "windows": [self.annotation_window(m["window_token"]) for m in matches],
        }

    def split(self, scene_token: str) -> str:
        """``"train"`` or ``"test"``: the scene's split."""
        self._scene(scene_token)
        return str(self._keyed("split", scene_token))

    def scenes_in_split(self, split: str) -> list[str]:
        """Scene tokens of *split* (``"train"`` or ``"test"``) in scene-table order."""
        if split not in spec.SPLIT_NAMES:
            raise ConfigError(f"unknown split {split!r}; expected 'train' or 'test'", key="split")
        assignment = self._ix.by_key["split"]
        return [s["token"] for s in self._ix.tables["scene"] if assignment[s["token"]] == split]

    def split_scene_names(self) -> dict[str, list[str]]:
        """``{"train": [...], "test": [...]}`` scene names: ``create_splits_scenes()``'s shape.

        nuscenes-devkit users filter scenes by name through
        ``nuscenes.utils.splits.create_splits_scenes()``; this is our split in that shape
        (the official lists never name our scenes, which cannot collide with them).
        """
        names = {s["token"]: s["name"] for s in self._ix.tables["scene"]}
        return {
            split: [names[t] for t in self.scenes_in_split(split)] for split in ("train", "test")
        }

    def recordings(self) -> list[Record]:
        """Every input recording: fingerprint, cameras, scenes and fate (``selected``)."""
        return copy_json(self._part(spec.RECORDINGS_FILE, "recordings"))

    def channel_mapping(self) -> dict[str, str]:
        """Original source camera name -> normalized ``CAM_*`` channel."""
        mapping: dict[str, str] = self._doc(spec.RECORDINGS_FILE)["channel_mapping"]
        return copy_json(mapping)

    def source_metadata(self) -> Record:
        """``source.json``: source type, privacy, pose frame, resolution, JPEG policy."""
        return copy_json(self._doc(spec.SOURCE_FILE))

    def validation_report(self) -> Record:
        """``validation.json``: ``not_run`` before the build service, then its evidence."""
        return copy_json(self._doc(spec.VALIDATION_FILE))

    def pipeline_audit(self) -> Record:
        """Filtering, rejections, ordered selection and the complete scene chronology."""
        return copy_json(self._doc(spec.PIPELINE_AUDIT_FILE))

    def gnss(self) -> Record:
        """``gnss.json``: one row per ego pose with its published global context."""
        doc: Record = msgspec.to_builtins(self._ix.extensions[spec.GNSS_FILE])
        return copy_json(doc)

    def config(self) -> Record:
        """``config.json``: the resolved pipeline configuration and its fingerprints."""
        return copy_json(self._doc(spec.CONFIG_FILE))
