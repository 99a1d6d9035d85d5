"""``store build``: a VIN offline store from the user's own sample function."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dataset_devkit.cli.output import emit_report, target
from dataset_devkit.cli.progress import progress_bar
from dataset_devkit.cli.render import count, path_parser, size_option, stdout_console
from dataset_devkit.errors import ConfigError

__all__ = ["build_command"]

_KIND = "vin-store"


def build_command(
    function: Annotated[
        str,
        typer.Argument(
            metavar="MODULE:FUNCTION",
            help="Your sample function: package.module:function or path/to/file.py:function. "
            "Without --items it is called with no arguments and returns the samples "
            "(VinOfflineSample, in sample_index order); with --items it is called as "
            "function(start, stop) for each part, in worker processes.",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option("--out", help="The store to publish (must not exist).", parser=path_parser),
    ],
    items: Annotated[
        str | None,
        typer.Option(
            "--items",
            metavar="N|START:STOP",
            help="Items the function covers, called as function(start, stop): samples are "
            "made on every core and the bar shows time left.",
        ),
    ] = None,
    shard_bytes: Annotated[
        int, size_option("--shard-bytes", "Target shard size, e.g. 64MiB.", default="128MiB")
    ] = 128 << 20,
    rows_per_shard: Annotated[
        int | None,
        typer.Option("--rows-per-shard", min=1, help="Cap on the rows (samples) of a shard."),
    ] = None,
    val_fraction: Annotated[
        float,
        typer.Option(
            "--val-fraction",
            min=0.0,
            max=1.0,
            help="Share of samples in the val split, chosen by a hash of each sample_key "
            "(0: every sample in 'all').",
        ),
    ] = 0.0,
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="Worker threads or processes (default: cores)."),
    ] = None,
    no_resume: Annotated[
        bool,
        typer.Option(
            "--no-resume",
            help="Start over instead of reusing the shards an interrupted build finished.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
) -> None:
    """Build a VIN offline store at --out from your sample function, then publish it.

    Shards are written in parallel, the store is validated and published read-only with
    its content manifest. An interrupted build (Ctrl-C, a crash in your function) keeps
    its finished shards: the same command run again reuses them.
    """
    from dataset_devkit.vin_store import build_vin_offline_store  # numpy loads lazily
    from dataset_devkit.vin_store.user_function import (
        load_function,
        parse_function_spec,
        parse_items,
        samples_of,
        sources_of,
    )

    target(_KIND, out)
    shard_size = shard_bytes
    try:  # the command line's own spelling: a usage error (exit 2), before any import
        parse_function_spec(function)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="MODULE:FUNCTION") from None
    try:
        span = parse_items(items) if items is not None else None
    except ConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--items") from None
    produce, name = load_function(function)
    samples = samples_of(produce, name) if span is None else sources_of(produce, name, *span)
    with progress_bar() as advance:
        result = build_vin_offline_store(
            samples,
            out,
            shard_bytes=shard_size,
            rows_per_shard=rows_per_shard,
            val_fraction=val_fraction,
            workers=workers,
            resume=not no_resume,
            progress=advance,
        )
    if as_json:
        emit_report(
            ok=True,
            root=result.store_dir,
            root_sha256=result.root_sha256,
            samples=result.num_samples,
            shards=result.num_shards,
            reused_shards=result.reused_shards,
        )
        return
    console = stdout_console()
    reused = f" ({result.reused_shards} reused)" if result.reused_shards else ""
    console.print(
        f"built {result.store_dir}: {count(result.num_samples, 'sample')} in "
        f"{count(result.num_shards, 'shard')}{reused}"
    )
    console.print(f"root_sha256 {result.root_sha256}")
