"""The build configuration: a documented TOML file, parsed strictly with ``tomllib``.

::

    namespace = "fleet-a-2026"            # dataset namespace: seeds every token and the split

    [sources]
    type = "mcap_hf"                      # message logs (.mcap, .bag, ROS 2 bag folders),
                                          # or "decoded_hf"; one source type per dataset
    paths = ["drives/a.mcap", "drives/b.mcap"]   # relative to this file
    labels = "labels.json"                # optional human label file

    [ingest]                              # spec.IngestConfig
    vehicle_frame = "base_link"           # the robot's frame in the transform tree
    exclude_topics = ["/debug/*"]         # optional: topics left out (shell patterns)
    ros_distro = "humble"                 # optional: definitions for bags without them

    [ingest.pose]                         # optional; default: source = "gnss"
    source = "tf"                         # gnss | tf | odometry | pose
    world_frame = "map"                   # the fixed frame of the poses
    # topic = "/odom"                     # odometry and pose sources only

    [[ingest.cameras]]                    # optional; default: every camera topic
    topic = "/oakd/rgb/image_raw"
    channel = "CAM_FRONT"
    calibration_topic = "/oakd/rgb/camera_info"   # optional
    # frame_id = "oakd_rgb_camera_optical_frame"  # optional override

    [scenario]                            # spec.ScenarioConfig
    scene_duration_s = 20.0
    rules = [{ kind = "require_valid" }, { kind = "max_scenes", value = 50 }]

    [split]                               # spec.SplitConfig
    test_fraction = 0.2

    [image]
    jpeg_quality = 95                     # must be 95 (v1 contract)

    [export]
    include_sweeps = false

    [publication]
    version = "v1.0-trainval"             # must be v1.0-trainval
    refuse_overwrite = true               # must be true

    [paths]
    output_dir = "out"                    # the dataroot is published at out/v1.0-trainval
    evidence_dir = "out/evidence"         # optional; default <output_dir>/evidence

    [executor]                            # optional; where the per-recording work runs
    workers = 4                           # local processes; default one per core (max 32)
    # scheduler = "tcp://10.0.0.5:8786"   # or a Dask scheduler (workers share the paths)
    # connect_timeout_s = 10.0

Any unknown key, wrong type or value outside the v1 contract is a ``ConfigError`` whose
``key`` is the dotted TOML key.
"""

from __future__ import annotations

import os
import re
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity import did_you_mean, path_argument
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.cluster import ExecutorConfig, ExecutorTable, parse_executor
from dataset_devkit.nuscenes.evidence.derive import check_config
from dataset_devkit.nuscenes.ingest.fingerprint import source_type_of

__all__ = ["BuildConfig", "SourcesConfig", "load_build_config", "parse_build_config"]

_TOP_KEYS = (
    "namespace",
    "sources",
    "ingest",
    "scenario",
    "split",
    "image",
    "export",
    "publication",
    "paths",
    "executor",
)
_PATH_RE = re.compile(r"(?: - )?at `\$\.?(?P<path>[^`]*)`")
_UNKNOWN_RE = re.compile(r"unknown field `([^`]*)`")
_SHAPES = {
    spec.SOURCE_MCAP: "message log (an .mcap or .bag file, or a ROS 2 bag folder)",
    spec.SOURCE_DECODED: "decoded recording folder (recording.json)",
}
#: The allowed values of enumerated keys, by the key's last part, for error messages.
_CHOICES: dict[str, tuple[str, ...]] = {
    "kind": typing.get_args(spec.SelectionRuleKind),
    "type": typing.get_args(spec.SourceType),
    "method": ("recording_groups_v1",),
    "source": typing.get_args(spec.PoseSourceKind),
    "ros_distro": typing.get_args(spec.RosDistro),
}


class _Sources(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    type: Literal["mcap_hf", "decoded_hf"]
    paths: tuple[str, ...]
    labels: str | None = None


class _Publication(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    version: str
    refuse_overwrite: bool


class _Paths(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    output_dir: str
    evidence_dir: str | None = None


@dataclass(frozen=True, slots=True)
class SourcesConfig:
    """Where the recordings are, resolved against the config file's directory."""

    type: str
    paths: tuple[Path, ...]
    labels: Path | None


@dataclass(frozen=True, slots=True)
class BuildConfig:
    """A resolved build configuration.

    Attributes
    ----------
    pipeline
        The global config recorded in the evidence (namespace, scenario, split, image, export).
    sources
        The recordings to ingest.
    output_dir
        Where the final dataroot ``output_dir/v1.0-trainval`` is published.
    evidence_dir
        Where the immutable evidence directory is written.
    executor
        Where the per-recording work runs (it never changes what is published).
    """

    pipeline: spec.PipelineConfig
    sources: SourcesConfig
    output_dir: Path
    evidence_dir: Path
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)

    @property
    def final_dataroot(self) -> Path:
        """``output_dir/v1.0-trainval``."""
        return self.output_dir / spec.VERSION


def _convert(value: Any, kind: type[Any], key: str) -> Any:
    try:
        return msgspec.convert(value, kind, strict=True)
    except msgspec.ValidationError as exc:
        text = str(exc)
        m = _PATH_RE.search(text)
        sub = m.group("path") if m else ""
        sub = sub.replace("[", ".").replace("]", "") if sub else ""
        unknown = _UNKNOWN_RE.search(text)
        dotted = ".".join(part for part in (key, sub, unknown.group(1) if unknown else "") if part)
        reason = _PATH_RE.sub("", text).rstrip(" -")
        choices = _CHOICES.get(dotted.rsplit(".", 1)[-1])
        if choices and reason.startswith("Invalid enum value"):
            reason += f"; expected one of {', '.join(choices)}"
        if unknown:  # a typo of a key: the near miss, and the keys that table takes
            fields = _fields_at(kind, [p for p in sub.split(".") if p])
            reason = "unknown key" + did_you_mean(unknown.group(1), fields, known="expected one of")
        raise ConfigError(f"{dotted or 'config'}: {reason}", key=dotted) from None


def _fields_at(kind: Any, parts: list[str]) -> list[str]:
    """The keys of the table at *parts* (``["scenario", "rules", "0"]``) inside *kind*."""
    info: Any = msgspec.inspect.type_info(kind)
    for part in parts:
        while not isinstance(info, msgspec.inspect.StructType):
            if isinstance(info, msgspec.inspect.UnionType):  # X | None
                info = next(t for t in info.types if not isinstance(t, msgspec.inspect.NoneType))
            elif hasattr(info, "item_type"):  # list, tuple: the index comes next
                info = info.item_type
            else:
                return []
        if not part.isdigit():
            found = [f.type for f in info.fields if f.encode_name == part]
            if not found:
                return []
            info = found[0]
    while isinstance(info, msgspec.inspect.UnionType):
        info = next(t for t in info.types if not isinstance(t, msgspec.inspect.NoneType))
    if hasattr(info, "item_type"):
        info = info.item_type
    return [f.encode_name for f in getattr(info, "fields", ())]


def _path(value: str | None, key: str) -> str | None:
    """A path option must name something: ``""`` would silently mean the config's folder."""
    if value is not None and not value.strip():
        raise ConfigError(f"{key}: expected a non-empty path, found {value!r}", key=key)
    return value


def parse_build_config(data: dict[str, Any], *, base: Path) -> BuildConfig:
    """Resolve a decoded TOML document; relative paths are taken from *base*."""
    for key in data:
        if key not in _TOP_KEYS:
            raise ConfigError(
                f"unknown config key {key!r}"
                + did_you_mean(key, _TOP_KEYS, known="expected one of"),
                key=key,
            )
    for key in ("namespace", "sources", "publication", "paths"):
        if key not in data:
            raise ConfigError(f"missing required config key {key!r}", key=key)
    namespace = data["namespace"]
    if not isinstance(namespace, str) or not namespace.strip():
        raise ConfigError(
            f"namespace: expected a non-empty string, found {namespace!r}", key="namespace"
        )
    sections = {k: data.get(k, {}) for k in ("ingest", "scenario", "split", "image", "export")}
    pipeline = _convert({"namespace": namespace, **sections}, spec.PipelineConfig, "")
    check_config(pipeline)  # every value, before a recording is read
    if pipeline.image.jpeg_quality != spec.JPEG_QUALITY:
        raise ConfigError(
            f"image.jpeg_quality must be {spec.JPEG_QUALITY} in the v1 contract, "
            f"found {pipeline.image.jpeg_quality}",
            key="image.jpeg_quality",
        )
    publication = _convert(data["publication"], _Publication, "publication")
    if publication.version != spec.VERSION:
        raise ConfigError(
            f"publication.version must be {spec.VERSION!r}, found {publication.version!r}",
            key="publication.version",
        )
    if publication.refuse_overwrite is not True:
        raise ConfigError(
            "publication.refuse_overwrite must be true: a published dataroot is never "
            "replaced (build into an absent destination)",
            key="publication.refuse_overwrite",
        )
    sources = _convert(data["sources"], _Sources, "sources")
    if not sources.paths:
        raise ConfigError("sources.paths lists no recording", key="sources.paths")
    for i, source in enumerate(sources.paths):
        _path(source, f"sources.paths[{i}]")
    _path(sources.labels, "sources.labels")
    for i, source in enumerate(sources.paths):
        # The shape of each path tells its type: a mismatch is caught before any decoding.
        found = source_type_of((base / source).absolute())
        if found is not None and found != sources.type:
            raise ConfigError(
                f"sources.type is {sources.type!r} but sources.paths[{i}] ({source}) is a "
                f"{_SHAPES[found]} ({found!r}); set sources.type = {found!r} or list "
                f"{sources.type} recordings only",
                key="sources.type",
            )
    paths = _convert(data["paths"], _Paths, "paths")
    _path(paths.output_dir, "paths.output_dir")
    _path(paths.evidence_dir, "paths.evidence_dir")
    output_dir = (base / paths.output_dir).absolute()
    evidence = output_dir / "evidence" if paths.evidence_dir is None else base / paths.evidence_dir
    evidence_dir = Path(os.path.normpath(evidence.absolute()))
    final = Path(os.path.normpath(output_dir / spec.VERSION))
    if evidence_dir == final or final in evidence_dir.parents:
        raise ConfigError(
            f"paths.evidence_dir: {evidence_dir} is inside the dataroot {final} that the build "
            "publishes; choose a directory outside it",
            key="paths.evidence_dir",
        )
    if evidence_dir == Path(os.path.normpath(output_dir)) or evidence_dir in final.parents:
        raise ConfigError(
            f"paths.evidence_dir: {evidence_dir} would hold the published dataroot {final}; "
            "choose a separate directory (the default is <output_dir>/evidence)",
            key="paths.evidence_dir",
        )
    return BuildConfig(
        pipeline=pipeline,
        sources=SourcesConfig(
            type=sources.type,
            paths=tuple((base / p).absolute() for p in sources.paths),
            labels=None if sources.labels is None else (base / sources.labels).absolute(),
        ),
        output_dir=output_dir,
        evidence_dir=evidence_dir,
        executor=parse_executor(_convert(data.get("executor", {}), ExecutorTable, "executor")),
    )


def load_build_config(path: str | Path) -> BuildConfig:
    """Read and resolve the TOML build config at *path*.

    Every error names the file, then the dotted key: ``build.toml at paths.output_dir: ...``.
    """
    path = path_argument(path, "config")
    # A recording given where its config belongs is named as what it is, not as bad TOML.
    shape = source_type_of(path.absolute()) if os.path.lexists(path) else None
    if shape is not None:
        raise ConfigError(
            f"{path}: this is a recording (of sources.type {shape!r}), not a build config; "
            "build takes a TOML file that lists the recordings under [sources] paths",
            key="config",
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file does not exist", key="config") from None
    except IsADirectoryError:
        raise ConfigError(
            f"{path}: expected a TOML config file, found a directory", key="config"
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}: not a TOML build config ({exc}); build takes a TOML file that lists "
            "the recordings under [sources] paths",
            key="config",
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the config ({exc.strerror})", key="config"
        ) from None
    try:
        return parse_build_config(data, base=path.parent.absolute())
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}", key=exc.key) from None
