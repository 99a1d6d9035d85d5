"""Format version, file names and the typed on-disk records of the VIN offline store.

Every record is a frozen msgspec Struct decoded strictly: an unknown field, a wrong type,
an unsupported version or an inconsistent inventory raises a typed error that names the
file and the ``$.json.path`` of the field (:mod:`dataset_devkit.vin_store.errors`).
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeAlias, TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from dataset_devkit.vin_store._files import require_regular
from dataset_devkit.vin_store.errors import (
    InventoryError,
    UnsupportedVersionError,
    VinOfflineFormatError,
)

__all__ = [
    "BLOCK_FAMILIES",
    "MANIFEST_NAME",
    "OFFLINE_DATASET_VERSION",
    "SAMPLE_INDEX_NAME",
    "SAMPLE_INDEX_SIDECAR_NAME",
    "SHARDS_DIR",
    "SPLITS_DIR",
    "SPLIT_NAMES",
    "BlockKind",
    "Split",
    "VinOfflineBlockSpec",
    "VinOfflineIndexRecord",
    "VinOfflineManifest",
    "VinOfflineMaterializedBlocks",
    "VinOfflineShardSpec",
    "block_family",
    "check_inventory",
    "check_record_offsets",
    "uses_vin_layout",
    "vin_family",
]

#: Version of the immutable VIN offline dataset format (``manifest.json`` ``$.version``).
OFFLINE_DATASET_VERSION: Final = 1

MANIFEST_NAME: Final = "manifest.json"
SAMPLE_INDEX_NAME: Final = "sample_index.jsonl"
#: Binary sidecar of the index: int64 ``sample_index`` per global row, so open parses no JSON.
SAMPLE_INDEX_SIDECAR_NAME: Final = "sample_index.npy"
SPLITS_DIR: Final = "splits"
SHARDS_DIR: Final = "shards"
SPLIT_NAMES: Final = ("all", "train", "val")

Split: TypeAlias = Literal["all", "train", "val"]
BlockKind: TypeAlias = Literal["zarr_array", "msgpack_indexed_records"]
# Every count, row and index is stored as int64: a larger decoded value is a field error,
# never an OverflowError where it meets NumPy.
_INT64_MAX: Final = 2**63 - 1
NonNegative = Annotated[int, msgspec.Meta(ge=0, le=_INT64_MAX)]
Positive = Annotated[int, msgspec.Meta(ge=1, le=_INT64_MAX)]

#: Optional block families by logical-name prefix, keyed by their materialized-blocks flag.
BLOCK_FAMILIES: Final[dict[str, tuple[str, ...]]] = {
    "backbone": ("backbone.",),
    "depths": ("oracle.depths",),
    "candidate_pcs": ("oracle.candidate_pcs",),
    "gt_obbs": ("gt.",),
    "detected_obbs": ("detected.",),
    "trajectory": ("vin.trajectory.",),
}

_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_][A-Za-z0-9_\-]*)*$")
_NUMERIC_DTYPES = frozenset(
    (
        "bool",
        *("int8", "int16", "int32", "int64"),
        *("uint8", "uint16", "uint32", "uint64"),
        *("float16", "float32", "float64"),
    )
)
_T = TypeVar("_T")
_LOCATION_RE = re.compile(r" - at `(\$[^`]*)`$")


def block_family(name: str) -> str | None:
    """Return the optional family flag a logical block name belongs to, or None for core."""
    for family, prefixes in BLOCK_FAMILIES.items():
        if name.startswith(prefixes):
            return family
    return None


#: Logical-name prefix of the VIN core blocks (``vin.points_world``, ``vin.lengths``, ...).
VIN_CORE_PREFIX: Final = "vin."


def vin_family(name: str) -> str | None:
    """The VIN family of a block: an optional family of :data:`BLOCK_FAMILIES`, ``"core"``
    for the other ``vin.*`` blocks, or None for a block outside the VIN layout (a store of
    camera frames names its blocks as it likes: ``camera.image``)."""
    family = block_family(name)
    if family is None and name.startswith(VIN_CORE_PREFIX):
        return "core"
    return family


def uses_vin_layout(names: Iterable[str]) -> bool:
    """Whether any of the block *names* belongs to the VIN layout (:func:`vin_family`).

    Only such a store has VIN families to speak of: on any other store, "absent families:
    backbone, candidate_pcs, ..." would describe a model it was never built for.
    """
    return any(vin_family(name) is not None for name in names)


def _check_relative(path: str) -> None:
    # String checks, not PurePosixPath: a 10M-sample manifest has ~40k of these at open.
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in path:
        raise ValueError(f"expected a normalized relative POSIX path, found {path!r}")


class VinOfflineBlockSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Descriptor for one stored block inside a shard.

    Attributes
    ----------
    name
        Logical block name, for example ``"vin.points_world"``.
    kind
        ``"zarr_array"`` (fixed-shape numeric rows) or ``"msgpack_indexed_records"``.
    paths
        Shard-relative Zarr array path, or the payload and offsets file names.
    dtype
        NumPy dtype name of a numeric block; None for records.
    shape
        Full stored shape; axis 0 is the shard row (``[num_records]`` for records).
    optional
        Whether the block may be absent for some datasets.
    """

    name: str
    kind: BlockKind
    paths: tuple[str, ...]
    dtype: str | None = None
    shape: tuple[NonNegative, ...] | None = None
    optional: bool = False

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ValueError(f"invalid block name {self.name!r}")
        for path in self.paths:
            _check_relative(path)
        if not self.shape:
            raise ValueError("shape must list at least the row axis")
        if self.kind == "zarr_array":
            if len(self.paths) != 1 or self.dtype not in _NUMERIC_DTYPES:
                raise ValueError(
                    f"a zarr_array needs one path and a numeric dtype, found "
                    f"{len(self.paths)} paths and dtype {self.dtype!r}"
                )
        elif len(self.paths) != 2 or self.dtype is not None or len(self.shape) != 1:
            raise ValueError("indexed records need [payload, offsets] paths, no dtype, 1-D shape")

    @staticmethod
    def zarr_array_path(name: str) -> str:
        """Return the hierarchical Zarr path of a logical name (``"a.b.c"`` -> ``"a/b/c"``)."""
        return name.replace(".", "/")

    @staticmethod
    def msgpack_records_path(name: str) -> str:
        """Return the shard-local payload file name of a record block."""
        return f"{name}.msgpack"

    @staticmethod
    def msgpack_records_offsets_path(name: str) -> str:
        """Return the shard-local int64 offsets file name of a record block."""
        return f"{name}.offsets.npy"

    @classmethod
    def for_zarr_array(
        cls, name: str, array_path: str, dtype: str, shape: list[int], optional: bool = False
    ) -> VinOfflineBlockSpec:
        """Build the descriptor of one Zarr-backed numeric array."""
        return cls(
            name=name,
            kind="zarr_array",
            paths=(array_path,),
            dtype=dtype,
            shape=tuple(shape),
            optional=optional,
        )

    @classmethod
    def for_indexed_msgpack_records(
        cls,
        name: str,
        relative_payload_path: str,
        relative_offsets_path: str,
        num_records: int,
        optional: bool = True,
    ) -> VinOfflineBlockSpec:
        """Build the descriptor of indexed per-row MessagePack records."""
        return cls(
            name=name,
            kind="msgpack_indexed_records",
            paths=(relative_payload_path, relative_offsets_path),
            shape=(num_records,),
            optional=optional,
        )


class VinOfflineIndexRecord(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Global sample-index entry: where one sample lives and which split it is in."""

    sample_index: NonNegative
    sample_key: str
    scene_id: str
    snippet_id: str
    split: Split
    shard_id: str
    row: NonNegative

    @classmethod
    def read_many(cls, path: Path) -> list[VinOfflineIndexRecord]:
        """Read ``sample_index.jsonl`` strictly; records must be ordered by sample_index."""
        return [record for _, batch in cls.read_batches(path) for record in batch]

    @classmethod
    def read_batches(
        cls, path: Path, lines: int = 1 << 16
    ) -> Iterator[tuple[int, list[VinOfflineIndexRecord]]]:
        """Read ``sample_index.jsonl`` strictly, *lines* at a time: (first line number, records).

        Memory holds one batch, so a ten-million-sample index is checked in bounded memory;
        the errors are those of :meth:`read_many` (which reads through this).
        """
        require_regular(path)
        try:
            stream = Path(path).open("rb")  # noqa: SIM115 - closed by the with below
        except FileNotFoundError:
            raise VinOfflineFormatError(
                "missing: is this a VIN offline store?", path=path
            ) from None
        except OSError as exc:
            raise VinOfflineFormatError(f"unreadable: {exc.strerror}", path=path) from None
        previous: int | None = None
        first = 1
        with stream:
            while True:
                chunk = list(itertools.islice(stream, lines))
                if not chunk:
                    return
                if not chunk[-1].endswith(b"\n"):
                    raise VinOfflineFormatError("the last line has no newline", path=path)
                try:
                    # Each line keeps its newline: JSON whitespace before the comma, so no
                    # line is copied to cut it off.
                    records = _INDEX_LIST_DECODER.decode(b"[" + b",".join(chunk) + b"]")
                except msgspec.ValidationError as exc:
                    raise _format_error(exc, path, line_based=True, line_offset=first - 1) from None
                except (msgspec.DecodeError, RecursionError) as exc:  # msgspec caps nesting so
                    raise VinOfflineFormatError(f"not JSON lines: {exc}", path=path) from None
                if len(records) != len(chunk):
                    raise VinOfflineFormatError(
                        f"expected one JSON object per line ({len(chunk)} lines), found "
                        f"{len(records)}",
                        path=path,
                    )
                indices = np.fromiter(
                    map(operator.attrgetter("sample_index"), records),
                    dtype=np.int64,
                    count=len(records),
                )
                steps = np.diff(indices, prepend=-1 if previous is None else previous)
                if previous is None:
                    steps[0] = 1
                bad = np.flatnonzero(steps <= 0)
                if bad.size:
                    j = int(bad[0])
                    before = previous if j == 0 else int(indices[j - 1])
                    raise InventoryError(
                        f"sample_index must increase, found {int(indices[j])} after {before}",
                        path=path,
                        field=f"line {first + j} $.sample_index",
                    )
                previous = int(indices[-1])
                yield first, records
                first += len(records)

    @staticmethod
    def write_many(path: Path, records: list[VinOfflineIndexRecord]) -> None:
        """Write ``sample_index.jsonl`` and its binary sidecar exclusively, never overwriting.

        The sidecar (``sample_index.npy`` beside it: the int64 ``sample_index`` of each line)
        is what a reader maps at open, so a store written through this API opens as fast as
        a built one.
        """
        path = Path(path)
        with path.open("xb") as stream:
            for record in records:
                stream.write(_ENCODER.encode(record) + b"\n")
        indices = np.array([record.sample_index for record in records], dtype="<i8")
        with path.with_suffix(".npy").open("xb") as stream:
            np.save(stream, indices, allow_pickle=False)


class VinOfflineMaterializedBlocks(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True
):
    """Which optional payload families the store holds (shard blocks stay authoritative)."""

    backbone: bool
    depths: bool
    candidate_pcs: bool
    gt_obbs: bool = False
    detected_obbs: bool = False
    trajectory: bool = False

    @classmethod
    def from_block_names(cls, names: list[str]) -> VinOfflineMaterializedBlocks:
        """Infer the flags from the logical block names a store holds."""
        present = {block_family(name) for name in names}
        return cls(**{family: family in present for family in BLOCK_FAMILIES})


class VinOfflineShardSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Descriptor for one immutable shard: its directory, global rows and blocks."""

    shard_id: str
    relative_dir: str
    row_start: NonNegative
    num_rows: Positive
    blocks: dict[str, VinOfflineBlockSpec] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_relative(self.relative_dir)


class _VersionProbe(msgspec.Struct):
    version: int


class VinOfflineManifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Top-level manifest for one immutable VIN offline dataset."""

    version: int
    created_at: str
    source: dict[str, Any]
    oracle: dict[str, Any]
    vin: dict[str, Any]
    materialized_blocks: VinOfflineMaterializedBlocks
    stats: dict[str, Any] = msgspec.field(default_factory=dict)
    provenance: dict[str, Any] = msgspec.field(default_factory=dict)
    shards: tuple[VinOfflineShardSpec, ...] = ()

    @property
    def num_rows(self) -> int:
        """Total number of stored samples."""
        return sum(shard.num_rows for shard in self.shards)

    def write(self, path: Path) -> None:
        """Persist the manifest exclusively as deterministic, indented JSON."""
        with Path(path).open("xb") as stream:
            stream.write(msgspec.json.format(_ENCODER.encode(self), indent=2) + b"\n")

    @classmethod
    def read(cls, path: Path) -> VinOfflineManifest:
        """Load a manifest: version first, then strict fields, then inventory consistency."""
        data = _read_bytes(path)
        version = _decode(data, _VersionProbe, path).version
        if version != OFFLINE_DATASET_VERSION:
            raise UnsupportedVersionError(
                f"unsupported format version: expected {OFFLINE_DATASET_VERSION}, found {version}",
                path=path,
                field="$.version",
            )
        manifest = _decode(data, cls, path)  # the probe skipped what it did not decode
        check_inventory(manifest, path)
        return manifest


def check_inventory(manifest: VinOfflineManifest, path: Path | str) -> None:
    """Raise :class:`InventoryError` when rows, shard blocks and family flags disagree."""
    expected_start = 0
    reference: dict[str, tuple[BlockKind, str | None, tuple[int, ...]]] | None = None
    seen_ids: set[str] = set()
    for i, shard in enumerate(manifest.shards):
        where = f"$.shards[{i}]"
        if shard.shard_id in seen_ids:
            raise InventoryError(f"duplicate shard_id {shard.shard_id!r}", path=path, field=where)
        seen_ids.add(shard.shard_id)
        if shard.row_start != expected_start:
            raise InventoryError(
                f"expected row_start {expected_start}, found {shard.row_start}",
                path=path,
                field=f"{where}.row_start",
            )
        expected_start += shard.num_rows
        layout = {}
        for key, block in shard.blocks.items():
            if key != block.name:
                raise InventoryError(
                    f"block keyed {key!r} is named {block.name!r}",
                    path=path,
                    field=f"{where}.blocks.{key}.name",
                )
            shape = block.shape or (0,)  # never empty: VinOfflineBlockSpec checks it
            if shape[0] != shard.num_rows:
                raise InventoryError(
                    f"block shape {list(shape)} disagrees with the shard's {shard.num_rows} rows",
                    path=path,
                    field=f"{where}.blocks.{key}.shape",
                )
            layout[key] = (block.kind, block.dtype, shape[1:])
        if reference is None:
            reference = layout
        elif layout != reference:
            if sorted(layout) != sorted(reference):
                raise InventoryError(
                    f"blocks differ from the first shard's: expected {sorted(reference)}, "
                    f"found {sorted(layout)}",
                    path=path,
                    field=f"{where}.blocks",
                )
            key = next(k for k in sorted(layout) if layout[k] != reference[k])
            raise InventoryError(
                "(kind, dtype, row shape) differs from the first shard's: expected "
                f"{reference[key]}, found {layout[key]}",
                path=path,
                field=f"{where}.blocks.{key}",
            )
    names = [] if reference is None else list(reference)
    present = VinOfflineMaterializedBlocks.from_block_names(names)
    for family in BLOCK_FAMILIES:
        flagged = getattr(manifest.materialized_blocks, family)
        stored = getattr(present, family)
        if flagged != stored:
            state = "no shard has its blocks" if flagged else "shards hold its blocks"
            raise InventoryError(
                f"flag is {str(flagged).lower()} but {state}",
                path=path,
                field=f"$.materialized_blocks.{family}",
            )


def check_record_offsets(
    offsets: npt.NDArray[Any], num_records: int, payload_size: int, path: Path | str
) -> None:
    """Raise :class:`InventoryError` unless offsets run from 0 up to the payload size."""
    if offsets.dtype != np.dtype("<i8") or offsets.shape != (num_records + 1,):
        raise InventoryError(
            f"expected int64 offsets of shape ({num_records + 1},), found {offsets.dtype} "
            f"{offsets.shape}",
            path=path,
        )
    if offsets[0] != 0 or offsets[-1] != payload_size:
        raise InventoryError(
            f"offsets must run from 0 to the payload size {payload_size}, found "
            f"{int(offsets[0])}..{int(offsets[-1])}",
            path=path,
        )
    steps = np.diff(offsets)
    if steps.size and int(steps.min()) < 0:
        bad = int(np.argmax(steps < 0)) + 1
        raise InventoryError(f"offsets decrease at entry {bad}", path=path, field=f"[{bad}]")


def _read_bytes(path: Path | str) -> bytes:
    require_regular(path)
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise VinOfflineFormatError("missing: is this a VIN offline store?", path=path) from None
    except OSError as exc:
        raise VinOfflineFormatError(f"unreadable: {exc.strerror}", path=path) from None


def _decode(data: bytes, kind: type[_T], path: Path | str) -> _T:
    """Strictly decode one JSON document: every failure is a format error naming *path*."""
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        raise _format_error(exc, path) from None
    except (msgspec.DecodeError, RecursionError) as exc:  # msgspec caps nesting so
        raise VinOfflineFormatError(f"not JSON: {exc}", path=path) from None


def _format_error(
    exc: msgspec.ValidationError,
    path: Path | str,
    *,
    line_based: bool = False,
    line_offset: int = 0,
) -> VinOfflineFormatError:
    message = str(exc)
    match = _LOCATION_RE.search(message)
    field = match.group(1) if match else None
    detail = message[: match.start()] if match else message
    unknown = re.search(r"unknown field `([^`]*)`", detail)
    if unknown:  # msgspec locates the object; name the offending field itself
        field = f"{field or '$'}.{unknown.group(1)}"
    if line_based and field:
        line = re.match(r"^\$\[(\d+)\]", field)
        if line:
            field = f"line {int(line.group(1)) + 1 + line_offset} ${field[line.end() :]}"
    return VinOfflineFormatError(detail, path=path, field=field)


_ENCODER = msgspec.json.Encoder(order="deterministic")
_INDEX_LIST_DECODER = msgspec.json.Decoder(list[VinOfflineIndexRecord])
