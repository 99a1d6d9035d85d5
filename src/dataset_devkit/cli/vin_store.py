"""``store inspect|verify|sample``: the VIN offline store on the command line.

Each takes a local store or its URL (``s3://bucket/store``, ``gs://``, ``az://``,
``file://``); a URL is read through a local cache (``--cache-dir``, ``--cache-limit``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any

import msgspec
import numpy as np
import typer
from rich.markup import escape

from dataset_devkit.cli.expect import refuse_other_kind
from dataset_devkit.cli.output import emit_report, fail_with_report, target
from dataset_devkit.cli.progress import progress_bar
from dataset_devkit.cli.remote import location_parser
from dataset_devkit.cli.render import (
    byte_size_parser,
    count,
    format_size,
    print_table,
    stdout_console,
    table,
)
from dataset_devkit.cli.vin_build import build_command
from dataset_devkit.errors import ConfigError, DevkitError
from dataset_devkit.integrity.bucket.cache_settings import (
    CACHE_DIR_ENV,
    CACHE_LIMIT_ENV,
    default_cache_dir,
)
from dataset_devkit.kinds import TreeKind
from dataset_devkit.objectstore import is_url
from dataset_devkit.vin_store import VinOfflineStoreReader, inspect_store, verify_store
from dataset_devkit.vin_store.inspect import store_config

__all__ = ["register"]

store_app = typer.Typer(
    name="store",
    help="Build, inspect, verify and sample VIN offline stores.",
    no_args_is_help=True,
)
store_app.command("build")(build_command)
StoreArg = Annotated[
    str,
    typer.Argument(
        help="A published VIN offline store: a folder, or its URL (s3://, gs://, az://, file://).",
        parser=location_parser,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the JSON report.")]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        metavar="DIR",
        help=f"With a URL: the local cache of verified files (default: ${CACHE_DIR_ENV}, "
        "else ~/.cache/dataset-devkit).",
    ),
]
CacheLimitOpt = Annotated[
    str | None,
    typer.Option(
        "--cache-limit",
        metavar="SIZE",
        help=f"With a URL: what the cache may hold, e.g. 200GB (default: ${CACHE_LIMIT_ENV}, "
        "else no limit).",
    ),
]
_KIND = "vin-store"
#: Trees a store command reads: a store, also once restored from a release, or damaged.
_STORE_KINDS = (TreeKind.VIN_STORE, TreeKind.RESTORED_RELEASE, TreeKind.CONTENT_MANIFEST_TREE)


def _store(
    store: str, cache_dir: Path | None, cache_limit: str | None, command: str
) -> tuple[Path | str, dict[str, Any]]:
    """The store to open (a URL stays a str) and the cache keywords of a URL.

    A local store is checked for being one (another kind of tree is named); the cache
    options apply to URLs only.
    """
    target(_KIND, store)
    if is_url(store):
        cache = cache_dir if cache_dir is not None else default_cache_dir()
        limit = None if cache_limit is None else byte_size_parser(cache_limit)
        return store, {"cache_dir": cache, "cache_limit": limit}
    given = [f for f, v in (("--cache-dir", cache_dir), ("--cache-limit", cache_limit)) if v]
    if given:
        raise typer.BadParameter(f"{', '.join(given)} apply to a store URL, not to {store}")
    refuse_other_kind(Path(store), "VIN offline store", _STORE_KINDS, command=command)
    return Path(store), {}


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


@store_app.command("inspect")
def inspect_command(
    store: StoreArg,
    as_json: JsonOpt = False,
    cache_dir: CacheDirOpt = None,
    cache_limit: CacheLimitOpt = None,
) -> None:
    """Show shards, blocks (dtype, row shape), split sizes, bytes and the root hash."""
    where, cache = _store(store, cache_dir, cache_limit, "store inspect")
    summary = inspect_store(where, **cache)
    if as_json:
        data = _jsonable(dataclasses.asdict(summary))
        data.pop("store_dir")
        emit_report(ok=True, **data)
        return
    console = stdout_console()
    console.print(
        f"{summary.store_dir}: format v{summary.version}, {count(summary.num_samples, 'sample')} "
        f"in {count(summary.num_shards, 'shard')}, {count(summary.num_files, 'file')}, "
        f"{format_size(summary.total_bytes)}"
    )
    # The VIN families describe stores of the VIN layout only: a store of camera frames has
    # its own blocks, and no family is "absent" from it (``--json`` keeps ``optional``).
    family_column = ("VIN family",) if summary.vin_layout else ()
    blocks = table("block", "kind", "dtype", "row shape", *family_column)
    for block in summary.blocks:
        family = (block.family or "-",) if summary.vin_layout else ()
        blocks.add_row(
            escape(block.name), block.kind, block.dtype or "-", str(list(block.row_shape)), *family
        )
    print_table(console, blocks)
    splits = ", ".join(f"{name} {size}" for name, size in summary.split_sizes.items())
    console.print(f"splits: {splits}")
    if summary.vin_layout:
        present = [name for name, flag in summary.materialized.items() if flag]
        absent = ", ".join(summary.absent_families) or "none"
        console.print(f"VIN families: {', '.join(present) or 'core only'}; absent: {absent}")
    console.print(f"root_sha256 {summary.root_sha256}")


@store_app.command("verify")
def verify_command(
    store: StoreArg,
    as_json: JsonOpt = False,
    cache_dir: CacheDirOpt = None,
    cache_limit: CacheLimitOpt = None,
) -> None:
    """Check content manifest plus manifest/index/split/shard consistency; list every issue.

    A URL is checked in place: every object hashed where it is, the format checks reading
    metadata, index and record files through the cache.
    """
    where, cache = _store(store, cache_dir, cache_limit, "store verify")
    with progress_bar() as advance:
        report = verify_store(where, progress=advance, **cache)
    if as_json:
        facts: dict[str, Any] = {
            "root_sha256": report.root_sha256,
            "issues": report.issues,
            "notes": list(report.notes),
        }
        if not report.ok:
            try:
                report.raise_for_issues()
            except DevkitError as exc:
                fail_with_report(exc, **facts)
        emit_report(ok=True, **facts)
        return
    for note in report.notes:
        stdout_console().print(f"note: {note}", markup=False, highlight=False)
    report.raise_for_issues()
    stdout_console().print(f"OK {store}: root_sha256 {report.root_sha256}")


# A negative INDEX (-1) is read as the argument it is meant to be, and refused by its range,
# not as an unknown option.
@store_app.command("sample", context_settings={"ignore_unknown_options": True})
def sample_command(
    store: StoreArg,
    index: Annotated[int, typer.Argument(help="The sample_index to read.", min=0)],
    blocks: Annotated[
        str | None, typer.Option("--blocks", help="Comma-separated block names (default all).")
    ] = None,
    as_json: JsonOpt = False,
    cache_dir: CacheDirOpt = None,
    cache_limit: CacheLimitOpt = None,
) -> None:
    """Print one sample's blocks: numeric blocks summarized, records in full."""
    where, cache = _store(store, cache_dir, cache_limit, "store sample")
    reader = VinOfflineStoreReader(store_config(where, **cache))
    record = reader.record(index)
    names = None if blocks is None else [b.strip() for b in blocks.split(",") if b.strip()]
    if names == []:
        raise ConfigError(f"--blocks: expected comma-separated block names, found {blocks!r}")
    values = reader.read_sample(index, names)
    if as_json:
        emit_report(
            ok=True,
            record=msgspec.to_builtins(record),
            blocks=_jsonable(values),
        )
        return
    console = stdout_console()
    console.print(
        f"sample {record.sample_index} key={record.sample_key} scene={record.scene_id} "
        f"snippet={record.snippet_id} split={record.split} at {record.shard_id} row {record.row}"
    )
    values_table = table("block", "dtype", "shape", "value")
    for name, value in values.items():
        if isinstance(value, np.ndarray):
            flat = value.reshape(-1)
            preview = np.array2string(flat[:6], precision=4, separator=", ")
            if flat.size > 6:
                preview = preview[:-1] + ", ...]"
            values_table.add_row(escape(name), str(value.dtype), str(list(value.shape)), preview)
        else:
            values_table.add_row(escape(name), "record", "-", escape(repr(value)))
    print_table(console, values_table)


def register(app: typer.Typer) -> None:
    """Add the ``store`` command group to the root app."""
    app.add_typer(store_app, name="store")
