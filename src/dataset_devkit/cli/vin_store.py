"""``store inspect|verify|sample``: the VIN offline store on the command line."""

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
from dataset_devkit.cli.render import (
    count,
    format_size,
    path_parser,
    print_table,
    stdout_console,
    table,
)
from dataset_devkit.cli.vin_build import build_command
from dataset_devkit.errors import ConfigError, DevkitError
from dataset_devkit.kinds import TreeKind
from dataset_devkit.vin_store import VinOfflineStoreReader, inspect_store, verify_store

__all__ = ["register"]

store_app = typer.Typer(
    name="store",
    help="Build, inspect, verify and sample VIN offline stores.",
    no_args_is_help=True,
)
store_app.command("build")(build_command)
StoreArg = Annotated[
    Path, typer.Argument(help="A published VIN offline store.", parser=path_parser)
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the JSON report.")]
_KIND = "vin-store"
#: Trees a store command reads: a store, also once restored from a release, or damaged.
_STORE_KINDS = (TreeKind.VIN_STORE, TreeKind.RESTORED_RELEASE, TreeKind.CONTENT_MANIFEST_TREE)


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
def inspect_command(store: StoreArg, as_json: JsonOpt = False) -> None:
    """Show shards, blocks (dtype, row shape), split sizes, bytes and the root hash."""
    target(_KIND, store)
    refuse_other_kind(store, "VIN offline store", _STORE_KINDS, command="store inspect")
    summary = inspect_store(store)
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
def verify_command(store: StoreArg, as_json: JsonOpt = False) -> None:
    """Check content manifest plus manifest/index/split/shard consistency; list every issue."""
    target(_KIND, store)
    refuse_other_kind(store, "VIN offline store", _STORE_KINDS, command="store verify")
    with progress_bar() as advance:
        report = verify_store(store, progress=advance)
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
) -> None:
    """Print one sample's blocks: numeric blocks summarized, records in full."""
    target(_KIND, store)
    refuse_other_kind(store, "VIN offline store", _STORE_KINDS, command="store sample")
    reader = VinOfflineStoreReader(store)
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
