"""The Croissant document of a VIN offline store: the index, the shards and every block.

Records mlcroissant reads: ``samples`` (one per line of ``sample_index.jsonl``) and
``shards`` (the shard table of ``manifest.json``). Then one record set per block family
(``core``, ``trajectory``, ``candidate_pcs``, ...), one record per sample, one field per
block with its dtype and row shape. Those fields have no ``source``: the blocks live in
Zarr v3 arrays and indexed MessagePack files, for which mlcroissant has no reader (and a
record set of several file sets needs joins it cannot make on rows), so they describe the
data and name the ``FileSet`` that holds it; a Zarr reader (zarr-python, TensorStore,
xarray) or ``VinOfflineStoreReader`` reads it. mlcroissant gives ``None`` for them.
"""

from __future__ import annotations

from pathlib import Path

from dataset_devkit.croissant._nodes import (
    Node,
    dataset,
    field,
    file_object,
    file_set,
    record_set,
    source,
)
from dataset_devkit.croissant._tree import TreeFiles
from dataset_devkit.croissant.spec import DATA_TYPES, MEDIA_TYPES, CroissantOptions
from dataset_devkit.vin_store.spec import (
    MANIFEST_NAME,
    SAMPLE_INDEX_NAME,
    SAMPLE_INDEX_SIDECAR_NAME,
    SPLITS_DIR,
    VinOfflineBlockSpec,
    VinOfflineManifest,
    block_family,
)

__all__ = ["vin_store_document"]

_INDEX_FIELDS = (
    ("sample_index", "cr:Int64", "The sample's index (unique, strictly increasing)."),
    ("sample_key", "sc:Text", "The sample's key, unique in the store."),
    ("scene_id", "sc:Text", "The scene the sample belongs to."),
    ("snippet_id", "sc:Text", "The snippet the sample belongs to."),
    ("split", "sc:Text", "train, val, or all when the store has no validation split."),
    ("shard_id", "sc:Text", "The shard holding the sample's rows."),
    ("row", "cr:Int64", "The sample's row in every block array of its shard."),
)
_SHARD_FIELDS = (
    ("shard_id", "sc:Text", "The shard's id."),
    ("relative_dir", "sc:Text", "The shard's directory, relative to the store's root."),
    ("row_start", "cr:Int64", "The global row of the shard's first row."),
    ("num_rows", "cr:Int64", "Rows (samples) in the shard."),
)


def _family(name: str) -> str:
    return block_family(name) or "core"


def _block_files(block: VinOfflineBlockSpec) -> list[str]:
    """Globs, from the store's root, of a block's files in every shard."""
    if block.kind == "msgpack_indexed_records":
        return [f"shards/*/{path}" for path in block.paths]
    array = block.paths[0]
    chunk = "/".join(["c", *["0"] * len(block.shape or ())])
    return [f"shards/*/{array}/zarr.json", f"shards/*/{array}/{chunk}"]


def _block_field(family: str, block: VinOfflineBlockSpec) -> Node:
    files = f"file set blocks/{block.name}"
    if block.kind == "msgpack_indexed_records":
        return field(
            family,
            block.name,
            "sc:Text",  # bytes, as mlcroissant types file content; no bytes type exists
            None,
            f"Block {block.name}: one MessagePack value per row, bytes "
            f"offsets[row]:offsets[row + 1] of the shard's {block.paths[0]} "
            f"(offsets: {block.paths[1]}, int64; {files}).",
        )
    row_shape = list((block.shape or ())[1:])
    dims = ", ".join(["row", *(f"{block.name}.dim{i}" for i in range(1, len(row_shape) + 1))])
    return field(
        family,
        block.name,
        DATA_TYPES[block.dtype or ""],
        None,
        f"Block {block.name}: {block.dtype} {row_shape} per row; row `row` of the Zarr v3 "
        f"array {block.paths[0]} of the sample's shard (dimensions {dims}; {files}).",
        array_shape=row_shape,
    )


def vin_store_document(root: Path, files: TreeFiles, options: CroissantOptions) -> Node:
    """The Croissant document of the VIN store at *root*."""
    manifest = VinOfflineManifest.read(root / MANIFEST_NAME)
    blocks = dict(sorted(manifest.shards[0].blocks.items())) if manifest.shards else {}
    distribution = [
        file_object(files, MANIFEST_NAME, MEDIA_TYPES["json"], options,
                    description="The store's manifest: shards, blocks, dtypes, shapes."),
        file_object(files, SAMPLE_INDEX_NAME, MEDIA_TYPES["jsonl"], options,
                    description="One index record per sample, in sample_index order."),
        file_object(files, SAMPLE_INDEX_SIDECAR_NAME, MEDIA_TYPES["npy"], options,
                    description="int64 sample_index of each global row.")
        if SAMPLE_INDEX_SIDECAR_NAME in files else None,
        *(
            file_object(files, path, MEDIA_TYPES["npy"], options,
                        description="int64 sample indices of the split, increasing.")
            for path in files.matching(f"{SPLITS_DIR}/*.npy")
        ),
        file_object(files, files.source, MEDIA_TYPES["json"], options,
                    description="Every file's path, size and SHA-256, and the root hash."),
    ]  # fmt: skip
    for name, block in blocks.items():
        media = MEDIA_TYPES["msgpack" if block.kind == "msgpack_indexed_records" else "zarr3"]
        distribution.append(
            file_set(f"blocks/{name}", _block_files(block), media,
                     f"The files of block {name} in every shard (SHA-256 of each: "
                     f"{files.source}).")
        )  # fmt: skip
    families: dict[str, list[VinOfflineBlockSpec]] = {}
    for name, block in blocks.items():
        families.setdefault(_family(name), []).append(block)
    index = [
        field("samples", name, kind, source(file_object=SAMPLE_INDEX_NAME, column=name), text)
        for name, kind, text in _INDEX_FIELDS
    ]
    shards = [
        field("shards", name, kind,
              source(file_object=MANIFEST_NAME, json_path=f"$.shards[*].{name}"), text)
        for name, kind, text in _SHARD_FIELDS
    ]  # fmt: skip
    record_sets = [
        record_set("samples", "One record per sample: its key, ids, split and location.",
                   index, key=["sample_index"]),
        record_set("shards", "One record per shard: its directory and rows.", shards,
                   key=["shard_id"]),
    ]  # fmt: skip
    for family, members in sorted(families.items()):
        fields = [
            field(family, "sample_index", "cr:Int64",
                  source(file_object=SAMPLE_INDEX_NAME, column="sample_index"),
                  "The sample the blocks belong to (see record set samples)."),
            *(_block_field(family, block) for block in members),
        ]  # fmt: skip
        record_sets.append(
            record_set(family, f"Blocks of family {family}, one record per sample; "
                       "read the arrays with a Zarr reader (zarr-python, TensorStore, "
                       "xarray) or dataset-devkit's VinOfflineStoreReader.",
                       fields, key=["sample_index"])
        )  # fmt: skip
    stats = manifest.stats
    description = (
        f"A VIN offline store (format {manifest.version}) of {stats.get('num_samples', '?')} "
        f"samples in {len(manifest.shards)} shards, blocks "
        + ", ".join(blocks)
        + f", written by dataset-devkit. Root hash {files.root_sha256}."
    )
    return dataset(
        options,
        name=root.name,
        description=description,
        keywords=["dataset-devkit", "vin-offline-store", "zarr"],
        files=files,
        distribution=[node for node in distribution if node is not None],
        record_sets=record_sets,
    )
