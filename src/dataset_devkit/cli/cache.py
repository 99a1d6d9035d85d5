"""``cache ls|prune``: what a cache of verified files from object storage holds, and trimming it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from dataset_devkit.cli.output import emit_report, target
from dataset_devkit.cli.render import byte_size_parser, path_parser, stdout_console
from dataset_devkit.integrity.bucket.cache_admin import list_cache, prune_cache
from dataset_devkit.integrity.numbers import format_size

__all__ = ["register"]

cache_app = typer.Typer(
    name="cache",
    help="Show and trim a cache of verified files read from object storage.",
    no_args_is_help=True,
)
CacheArg = Annotated[
    Path,
    typer.Argument(
        help="A cache directory (the --cache-dir or cache_dir of readers).",
        parser=path_parser,
        metavar="CACHE_DIR",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the JSON report.")]
_KIND = "cache"


def _when(ns: int | None) -> str:
    if ns is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ns / 1e9))


@cache_app.command("ls")
def ls_command(cache_dir: CacheArg, as_json: JsonOpt = False) -> None:
    """List the stores a cache holds: URL, files, bytes, last use."""
    target(_KIND, cache_dir)
    listing = list_cache(cache_dir)
    if as_json:
        emit_report(
            ok=True,
            trees=[
                {
                    "url": tree.url,
                    "folder": tree.key,
                    "files": tree.files,
                    "bytes": tree.bytes,
                    "last_used_ns": tree.last_used_ns,
                }
                for tree in listing.trees
            ],
            in_flight_bytes=listing.in_flight_bytes,
            bytes=listing.total_bytes,
        )
        return
    console = stdout_console()
    table = Table()
    table.add_column("url", overflow="fold")
    table.add_column("folder", overflow="fold")
    for name in ("files", "bytes", "last used"):
        table.add_column(name, justify="right", no_wrap=True)
    for tree in listing.trees:
        table.add_row(
            tree.url or "?",
            tree.key,
            str(tree.files),
            format_size(tree.bytes),
            _when(tree.last_used_ns),
        )
    console.print(table)
    flight = f", {listing.in_flight_bytes} bytes downloading" if listing.in_flight_bytes else ""
    console.print(
        f"{cache_dir}: {len(listing.trees)} stores, {listing.total_bytes} bytes "
        f"({format_size(listing.total_bytes)}){flight}"
    )


@cache_app.command("prune")
def prune_command(
    cache_dir: CacheArg,
    max_size: Annotated[
        str | None,
        typer.Option(
            "--max",
            metavar="SIZE",
            help="Keep at most this much (e.g. 50GB), least recently used files going first "
            "(default: 0, remove every file no process is opening).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Evict least-recently-used files until the cache holds at most --max."""
    target(_KIND, cache_dir)
    limit = 0 if max_size is None else byte_size_parser(max_size)
    result = prune_cache(cache_dir, limit)
    if as_json:
        emit_report(
            ok=True,
            evicted_files=result.evicted_files,
            evicted_bytes=result.evicted_bytes,
            bytes=result.remaining_bytes,
        )
        return
    stdout_console().print(
        f"pruned {cache_dir}: {result.evicted_files} files ({result.evicted_bytes} bytes) "
        f"evicted, {result.remaining_bytes} bytes left"
    )


def register(app: typer.Typer) -> None:
    """Add the ``cache`` command group to the root app."""
    app.add_typer(cache_app, name="cache")
