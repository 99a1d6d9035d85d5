"""``croissant TREE [--out FILE]``: a tree's Croissant (MLCommons) metadata."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from dataset_devkit.cli.output import emit_report, target
from dataset_devkit.cli.render import path_parser, stderr_console

__all__ = ["register"]

#: The option that gives each property the Croissant specification requires.
_FLAGS = {
    "license": "--license",
    "url": "--url",
    "creator": "--creator",
    "datePublished": "--date-published",
}


def croissant_command(
    path: Annotated[
        Path, typer.Argument(help="Any tree the devkit writes (kind detected).", parser=path_parser)
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write the document to this new file, outside the tree (default: stdout).",
            parser=path_parser,
        ),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Dataset name.")] = None,
    description: Annotated[
        str | None, typer.Option("--description", help="Dataset description.")
    ] = None,
    license_url: Annotated[
        str | None, typer.Option("--license", help="Licence URL (e.g. an SPDX or CC URL).")
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="The dataset's web page.")] = None,
    creators: Annotated[
        list[str] | None,
        typer.Option("--creator", help="A creating organisation or person (repeatable)."),
    ] = None,
    date_published: Annotated[
        str | None, typer.Option("--date-published", help="Publication date, YYYY-MM-DD.")
    ] = None,
    dataset_version: Annotated[
        str | None, typer.Option("--dataset-version", help="Dataset version, MAJOR.MINOR.PATCH.")
    ] = None,
    cite_as: Annotated[str | None, typer.Option("--cite-as", help="BibTeX citation.")] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="Prefix of every contentUrl: where the tree is hosted (default: paths "
            "relative to the tree's root).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the JSON report.")] = False,
) -> None:
    """Describe PATH (VIN store, nuScenes dataroot, stereo dataset, release, any manifest
    tree) as Croissant 1.1 JSON-LD, with each file's SHA-256 from the tree's own records.

    The tree is only read. Same tree and options, same bytes. Properties the Croissant
    specification requires of a published dataset (license, url, creator, datePublished)
    are written only when given; a note on stderr lists those missing.
    """
    from dataset_devkit.croissant import CroissantOptions, croissant_document, write_croissant

    if as_json and out is None:
        raise typer.BadParameter(
            "--json reports on a written file: give --out FILE", param_hint="--json"
        )
    target(None, path)
    options = CroissantOptions(
        name=name,
        description=description,
        license=license_url,
        url=url,
        creators=tuple(creators or ()),
        date_published=date_published,
        version=dataset_version,
        cite_as=cite_as,
        base_url=base_url,
    )
    if out is None:
        described = croissant_document(path, options)
        sys.stdout.write(described.to_bytes().decode("utf-8"))
        sys.stdout.flush()
    else:
        described = write_croissant(path, out, options)
    target(described.kind.value, described.root)
    if described.missing:
        flags = ", ".join(_FLAGS[m] for m in described.missing)
        stderr_console().print(
            f"note: not given, required to publish the dataset: {flags}", highlight=False
        )
    if out is None:
        return
    if as_json:
        emit_report(
            ok=True,
            root_sha256=described.root_sha256,
            out=str(out),
            missing=list(described.missing),
        )
        return
    typer.echo(str(out))


def register(app: typer.Typer) -> None:
    """Add ``croissant`` to the root app."""
    app.command("croissant")(croissant_command)
