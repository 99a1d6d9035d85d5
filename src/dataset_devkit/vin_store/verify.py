"""Check a VIN offline store end to end and report every issue, sorted, at once.

Beyond the content manifest (every byte as published), it checks what the format promises:
manifest inventory, index lines, the binary sidecar, split files, shard directories (no
missing or extra file, no extra shard), Zarr metadata, the arithmetic chunk layout and the
record offsets.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from dataset_devkit.errors import DevkitError, VerificationFailed
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    decode_json_record,
    load_npy,
    verify_tree,
)
from dataset_devkit.integrity.progress import OnProgress
from dataset_devkit.objectstore import is_url
from dataset_devkit.vin_store._files import require_regular
from dataset_devkit.vin_store._shards import RecordBlockHandle, open_block
from dataset_devkit.vin_store._zarr_meta import dimension_names
from dataset_devkit.vin_store.config import VinOfflineStoreConfig
from dataset_devkit.vin_store.errors import VinOfflineFormatError
from dataset_devkit.vin_store.spec import (
    MANIFEST_NAME,
    SAMPLE_INDEX_NAME,
    SAMPLE_INDEX_SIDECAR_NAME,
    SHARDS_DIR,
    SPLIT_NAMES,
    SPLITS_DIR,
    VinOfflineBlockSpec,
    VinOfflineIndexRecord,
    VinOfflineManifest,
    VinOfflineShardSpec,
)
from dataset_devkit.vin_store.writer import chunk_file_path

__all__ = [
    "NumericCheck",
    "VinOfflineVerifyReport",
    "check_index",
    "check_shard_blocks",
    "check_shard_listing",
    "collect_store_issues",
    "raise_for_store_issues",
    "store_notes",
    "verify_store",
]


@dataclass(frozen=True, slots=True)
class VinOfflineVerifyReport:
    """The outcome of :func:`verify_store`: every issue found, sorted."""

    store_dir: Path | str
    issues: tuple[str, ...]
    root_sha256: str | None
    #: Facts that are not issues, e.g. that readers derive the index sidecar at open.
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when nothing is wrong."""
        return not self.issues

    def raise_for_issues(self) -> None:
        """Raise :class:`VerificationFailed` listing every issue, if there is any."""
        if self.issues:
            raise VerificationFailed(
                f"{self.store_dir}: VIN offline store does not verify ({len(self.issues)} "
                f"issue{'' if len(self.issues) == 1 else 's'})",
                self.issues,
            )


def _expected_shard_files(shard: VinOfflineShardSpec) -> set[str]:
    files = {"zarr.json"}
    for block in shard.blocks.values():
        if block.kind == "msgpack_indexed_records":
            files.update(block.paths)
            continue
        parts = block.paths[0].split("/")
        files.update("/".join([*parts[:i], "zarr.json"]) for i in range(1, len(parts) + 1))
        ndim = len(block.shape or ())
        files.add(chunk_file_path(Path(block.paths[0]), ndim).as_posix())
    return files


def _check_zarr_metadata(path: Path, block: VinOfflineBlockSpec) -> Iterator[str]:
    try:
        require_regular(path)
        raw = path.read_bytes()
        meta = decode_json_record(raw, dict[str, Any], path, error=VinOfflineFormatError)
    except OSError as exc:
        yield f"{path}: unreadable Zarr metadata: {exc.strerror or exc}"
        return
    except DevkitError as exc:
        yield f"unreadable Zarr metadata: {exc}"
        return
    shape = list(block.shape or ())
    expected: dict[str, Any] = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": block.dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shape}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    }
    for key, value in expected.items():
        if meta.get(key) != value:
            yield f"{path} at $.{key}: expected {value!r}, found {meta.get(key)!r}"
    # Stores written before arrays named their dimensions have none: still valid.
    names = dimension_names(block.name, len(shape))
    if "dimension_names" in meta and meta["dimension_names"] != names:
        found = meta["dimension_names"]
        yield f"{path} at $.dimension_names: expected {names!r} (or none), found {found!r}"
    inner = {
        "chunk_shape": [1, *shape[1:]],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_location": "end",
    }
    # Compared as plain values: any element of a damaged document may be any JSON type.
    codecs = meta.get("codecs")
    codec = codecs[0] if isinstance(codecs, list) and len(codecs) == 1 else None
    config = codec.get("configuration") if isinstance(codec, dict) else None
    if not (
        isinstance(codec, dict)
        and codec.get("name") == "sharding_indexed"
        and isinstance(config, dict)
        and all(config.get(k) == v for k, v in inner.items())
    ):
        yield f"{path} at $.codecs: expected one uncompressed sharding_indexed codec {inner}"


def _check_shard(root: Path, shard: VinOfflineShardSpec) -> Iterator[str]:
    shard_dir = root / shard.relative_dir
    if not shard_dir.is_dir():
        yield f"{shard_dir}: shard directory is missing"
        return
    found = {p.relative_to(shard_dir).as_posix() for p in shard_dir.rglob("*") if not p.is_dir()}
    yield from check_shard_listing(shard_dir, shard, found)
    yield from check_shard_blocks(shard_dir, shard)


def check_shard_listing(
    shard_dir: Path, shard: VinOfflineShardSpec, found: set[str]
) -> Iterator[str]:
    """Missing and unexpected files of a shard, given the files *found* in it."""
    expected = _expected_shard_files(shard)
    yield from (f"{shard_dir / name}: missing shard file" for name in sorted(expected - found))
    yield from (
        f"{shard_dir / name}: unexpected file in shard" for name in sorted(found - expected)
    )


#: Checks one numeric block's chunk file some other way than by opening it (a store in
#: object storage checks sizes from its listing and reads only the shard index).
NumericCheck: TypeAlias = Callable[[str, VinOfflineBlockSpec], Iterator[str]]


def check_shard_blocks(
    shard_dir: Path, shard: VinOfflineShardSpec, numeric: NumericCheck | None = None
) -> Iterator[str]:
    """Zarr metadata, chunk layout (or *numeric*) and every record of a shard's blocks."""
    for name, block in shard.blocks.items():
        if block.kind == "zarr_array":
            yield from _check_zarr_metadata(shard_dir / block.paths[0] / "zarr.json", block)
            if numeric is not None:
                yield from numeric(name, block)
                continue
        try:
            handle = open_block(shard_dir, block)
            if isinstance(handle, RecordBlockHandle):
                handle.check_rows()
        except DevkitError as exc:
            yield f"{exc} (block {name!r})"


# Field readers for the index check's columns: ``map`` over these runs in C, where a
# generator expression per column cost more than decoding the lines.
_SHARD_ID = operator.attrgetter("shard_id")
_ROW = operator.attrgetter("row")
_SAMPLE_INDEX = operator.attrgetter("sample_index")
_SPLIT = operator.attrgetter("split")


def check_index(config: VinOfflineStoreConfig, manifest: VinOfflineManifest) -> Iterator[str]:
    """Issues of the sample index, its sidecar and the split files against the manifest."""
    # Streamed: what stays in memory is one int64 index and one split code per sample.
    # Each batch is compared with the manifest's layout as arrays (a few field reads per
    # line in Python): this runs over every line of a ten-million-sample index.
    path = config.sample_index_path
    shards = manifest.shards
    position_of = {shard.shard_id: k for k, shard in enumerate(shards)}
    bounds = np.cumsum([0, *(shard.num_rows for shard in shards)], dtype=np.int64)
    code_of = {name: code for code, name in enumerate(SPLIT_NAMES)}
    parts: list[npt.NDArray[np.int64]] = []
    codes: list[npt.NDArray[np.uint8]] = []
    count = 0
    try:
        for first, batch in VinOfflineIndexRecord.read_batches(path):
            size = len(batch)
            places = np.arange(count, min(count + size, int(bounds[-1])), dtype=np.int64)
            want_shard = np.searchsorted(bounds, places, side="right") - 1
            want_row = places - bounds[want_shard]
            listed = batch[: places.shape[0]]
            got_shard = np.fromiter(
                map(position_of.get, map(_SHARD_ID, listed), itertools.repeat(-1)),
                np.int64,
                len(listed),
            )
            got_row = np.fromiter(map(_ROW, listed), np.int64, len(listed))
            for j in np.flatnonzero((got_shard != want_shard) | (got_row != want_row)).tolist():
                yield (
                    f"{path} at line {first + j}: expected {shards[want_shard[j]].shard_id} "
                    f"row {int(want_row[j])}, found {listed[j].shard_id} row {listed[j].row}"
                )
            parts.append(np.fromiter(map(_SAMPLE_INDEX, batch), "<i8", size))
            codes.append(np.fromiter(map(code_of.__getitem__, map(_SPLIT, batch)), "u1", size))
            count += size
    except (DevkitError, OSError) as exc:
        yield str(exc)
        return
    if count != manifest.num_rows:
        yield f"{path}: expected {manifest.num_rows} records (manifest rows), found {count}"
    indices = np.concatenate(parts) if parts else np.empty(0, dtype="<i8")
    split_codes = np.concatenate(codes) if codes else np.empty(0, dtype="u1")
    sidecar_path = config.sample_index_sidecar_path
    if sidecar_path.exists() or sidecar_path.is_symlink():  # absent: readers derive it
        try:
            sidecar = _load_index_array(sidecar_path, "index sidecar")
        except DevkitError as exc:
            yield str(exc)
        else:
            if not np.array_equal(sidecar, indices):
                yield f"{sidecar_path}: differs from {SAMPLE_INDEX_NAME}"
    for split in SPLIT_NAMES:
        wanted = indices if split == "all" else indices[split_codes == SPLIT_NAMES.index(split)]
        try:
            values = _load_index_array(config.split_path(split), f"split {split!r}")
        except DevkitError as exc:
            yield str(exc)
        else:
            if not np.array_equal(values, wanted):
                yield f"{config.split_path(split)}: differs from the {split!r} records of the index"


def _load_index_array(path: Path, what: str) -> Any:
    return load_npy(path, dtype="<i8", ndim=1, what=what, error=VinOfflineFormatError)


def collect_store_issues(store_dir: Path, *, content: bool = True) -> list[str]:
    """Every issue of a store, sorted; ``content=False`` skips the content manifest."""
    root = Path(store_dir)
    issues: list[str] = []
    if content:
        issues.extend(verify_tree(root, location=CONTENT_MANIFEST_NAME).issues)
    config = VinOfflineStoreConfig(store_dir=root)
    try:
        manifest = VinOfflineManifest.read(config.manifest_path)
    except (DevkitError, OSError) as exc:
        return sorted([*issues, str(exc)])
    issues.extend(check_index(config, manifest))
    known = {shard.relative_dir for shard in manifest.shards}
    if config.shards_dir.is_dir():
        for entry in sorted(config.shards_dir.iterdir()):
            if f"{SHARDS_DIR}/{entry.name}" not in known:
                issues.append(f"{entry}: extra shard not in {MANIFEST_NAME}")
    for shard in manifest.shards:
        issues.extend(_check_shard(root, shard))
    top = {MANIFEST_NAME, SAMPLE_INDEX_NAME, SAMPLE_INDEX_SIDECAR_NAME, SPLITS_DIR, SHARDS_DIR}
    top.add(CONTENT_MANIFEST_NAME)
    issues.extend(
        f"{p}: unexpected entry in the store root"
        for p in sorted(root.iterdir())
        if p.name not in top
    )
    return sorted(set(issues))


def raise_for_store_issues(store_dir: Path) -> None:
    """Publication validator: raise with every structural issue (content not yet hashed)."""
    VinOfflineVerifyReport(
        Path(store_dir), tuple(collect_store_issues(store_dir, content=False)), None
    ).raise_for_issues()


def verify_store(
    store_dir: Path | str,
    *,
    progress: OnProgress | None = None,
    cache_dir: Path | str | None = None,
    cache_limit: int | str | None = None,
) -> VinOfflineVerifyReport:
    """Verify content manifest and format consistency; every issue is reported.

    *progress* hears about the hashing, the long part (stage ``"verify"``: the manifest's
    totals, then bytes and files as they are hashed).

    *store_dir* may be a URL (``s3://bucket/store``): every object is then hashed in place,
    and the format checks read the files they need through *cache_dir* (see
    :func:`~dataset_devkit.vin_store._verify_url.verify_url_store`).
    """
    if isinstance(store_dir, str) and is_url(store_dir):
        from dataset_devkit.vin_store._verify_url import verify_url_store

        return verify_url_store(
            store_dir, cache_dir=cache_dir, cache_limit=cache_limit, progress=progress
        )
    root = Path(store_dir)
    report = verify_tree(root, location=CONTENT_MANIFEST_NAME, progress=progress)
    issues = sorted(set(report.issues) | set(collect_store_issues(root, content=False)))
    return VinOfflineVerifyReport(root, tuple(issues), report.root_sha256, store_notes(root))


def store_notes(store_dir: Path) -> tuple[str, ...]:
    """What a reader of this store does that is correct but not the fast path."""
    config = VinOfflineStoreConfig(store_dir=Path(store_dir))
    sidecar = config.sample_index_sidecar_path
    if sidecar.exists() or sidecar.is_symlink() or not config.manifest_path.is_file():
        return ()  # a fast path of a store: no note for what is not a store at all
    return (
        f"{sidecar}: absent; readers derive the sample indices from {SAMPLE_INDEX_NAME} at "
        "each open (slower open, same data)",
    )
