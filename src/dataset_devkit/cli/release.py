"""``release pack|verify|unpack``: cut a tree into verified packages and restore them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import typer

from dataset_devkit.cli.expect import refuse_other_kind
from dataset_devkit.cli.output import emit_report, fail_with_report, target
from dataset_devkit.cli.progress import progress_bar
from dataset_devkit.cli.render import (
    ReadableByChoice,
    count,
    format_size,
    hidden_alias,
    path_parser,
    renamed,
    size_option,
    stdout_console,
)
from dataset_devkit.errors import VerificationFailed
from dataset_devkit.kinds import TreeKind
from dataset_devkit.release import (
    DEFAULT_PACKAGE_LIMIT,
    FamilyRules,
    PackOptions,
    pack_release,
    parse_rule,
    restore_release,
    verify_release,
)
from dataset_devkit.release.restored import verify_partial_restore as partial_restore_verdict

__all__ = ["register", "verify_partial_restore"]

release_app = typer.Typer(
    help="Release packaging: verified <= 4 GiB tar packages and a stdlib-only unpack.py.",
    no_args_is_help=True,
)

FamilyFlags = tuple[bool, bool, bool, list[str]]
_KIND = "release"
_EXPECT_HELP = "Fail unless the release is the snapshot with this root_sha256."
_EXPECT = Annotated[str | None, typer.Option("--expect-root", metavar="HEX", help=_EXPECT_HELP)]


def _note(message: str) -> None:
    """Notices (ignored stray files, waiting for another restore) go to stderr."""
    if message.startswith("notice:"):
        typer.echo(message, err=True)


_JSON = Annotated[bool, typer.Option("--json", help="Print the JSON report.")]
_PACK_JSON = Annotated[
    bool, typer.Option("--json", help="Print the JSON report (manifest.json under manifest).")
]


def _families(base: bool, depth: bool, everything: bool, family: list[str] | None) -> list[str]:
    names = list(family or []) + (["base"] if base else []) + (["depth"] if depth else [])
    return [*names, "all"] if everything else names


@release_app.command("pack")
def pack(
    tree: Annotated[Path, typer.Argument(help="The tree to release.", parser=path_parser)],
    out: Annotated[
        Path, typer.Option("--out", help="The new release directory.", parser=path_parser)
    ],
    name: Annotated[
        str | None, typer.Option(help="Root folder inside packages (default: TREE's name).")
    ] = None,
    package_limit: Annotated[
        int,
        size_option(
            "--package-limit",
            "Max size of a package, e.g. 64KiB or 1GiB (at least 4096 bytes).",
            minimum=4096,
            default=f"{DEFAULT_PACKAGE_LIMIT} bytes, 4 GiB less one",
        ),
    ] = DEFAULT_PACKAGE_LIMIT,
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule",
            metavar="PATTERN=FAMILY",
            help="Family rule in gitignore syntax, first match wins "
            "(repeatable; default **/depth-*/**=depth).",
        ),
    ] = None,
    default_family: Annotated[str, typer.Option(help="Family of unmatched files.")] = "base",
    deliver: Annotated[
        list[str] | None,
        typer.Option(
            "--deliver", metavar="FAMILY", help="A family to package now (repeatable; default all)."
        ),
    ] = None,
    previous: Annotated[
        Path | None,
        typer.Option(
            help="Earlier release of the same snapshot to carry over.", parser=path_parser
        ),
    ] = None,
    restore_test: Annotated[
        str,
        typer.Option(
            metavar="full|sample|none",
            help="Restore test before publishing: every package, a sample, or none.",
        ),
    ] = "sample",
    read_back: Annotated[bool, typer.Option(help="Re-read every new package.")] = True,
    readme_lang: Annotated[
        str,
        typer.Option(
            "--readme-lang", metavar="en|zh", help="Language of the release README: en or zh."
        ),
    ] = "en",
    readable_by: Annotated[
        ReadableByChoice,
        typer.Option(
            "--readable-by",
            help="Who may read the release folder: owner (0700), group (0750) or all (0755).",
        ),
    ] = ReadableByChoice.owner,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Processes writing the packages (default: one per core); 1 writes them in "
            "this process. The release is the same whatever the count.",
        ),
    ] = None,
    as_json: _PACK_JSON = False,
) -> None:
    """Pack TREE into the new release directory --out (verified, never overwritten)."""
    target(_KIND, out)
    if restore_test not in ("full", "sample", "none"):
        raise typer.BadParameter("must be full, sample or none", param_hint="--restore-test")
    mode: Literal["full", "sample", "none"] = restore_test  # type: ignore[assignment]
    if readme_lang not in ("en", "zh"):
        raise typer.BadParameter("must be en or zh", param_hint="--readme-lang")
    lang: Literal["en", "zh"] = readme_lang  # type: ignore[assignment]
    rules = FamilyRules(
        rules=tuple(parse_rule(r) for r in rule) if rule else FamilyRules().rules,
        default=default_family,
        require_matches=bool(rule),
    )
    options = PackOptions(
        name=name,
        package_limit=package_limit,
        rules=rules,
        deliver=tuple(deliver) if deliver else None,
        previous=previous,
        read_back=read_back,
        restore_test=mode,
        readme_lang=lang,
        readable_by=readable_by.value,
        workers=workers if workers is not None else _cores(),
    )
    with progress_bar() as advance:
        result = pack_release(tree, out, options, progress=advance)
    if as_json:
        emit_report(
            ok=True,
            root=result.release,
            root_sha256=result.manifest.snapshot.root_sha256,
            manifest=msgspec.to_builtins(result.manifest),
        )
        return
    console = stdout_console()
    for fam in result.manifest.families:
        console.print(
            f"{fam.name}: {fam.status}, {count(fam.file_count, 'file')}, "
            f"{format_size(fam.total_bytes)}, {count(fam.package_count, 'package')}"
        )
    console.print(f"wrote {result.release} ({count(len(result.manifest.packages), 'package')})")
    console.print(f"root_sha256 {result.manifest.snapshot.root_sha256}")


def _cores() -> int:
    from dataset_devkit.integrity.workers import available_cores  # not at every CLI start

    return available_cores()


_BASE = Annotated[bool, typer.Option("--base", help="The base family.")]
_DEPTH = Annotated[bool, typer.Option("--depth", help="The depth family.")]
_ALL = Annotated[bool, typer.Option("--all", help="Every delivered family.")]
_FAMILY = Annotated[
    list[str] | None,
    typer.Option("--family", metavar="NAME", help="A family by name (repeat for more)."),
]


def _summary(summary: Any) -> dict[str, Any]:
    return {
        "families": list(summary.families),
        "packages": summary.packages,
        "package_bytes": summary.package_bytes,
    }


@release_app.command("verify")
def verify(
    release_dir: Annotated[Path, typer.Argument(help="The release directory.", parser=path_parser)],
    base: _BASE = False,
    depth: _DEPTH = False,
    everything: _ALL = False,
    family: _FAMILY = None,
    expect_root: _EXPECT = None,
    as_json: _JSON = False,
) -> None:
    """Verify packages and every member against files.jsonl (default: delivered families)."""
    target(_KIND, release_dir)
    refuse_other_kind(
        release_dir, "release directory", (TreeKind.RELEASE,), command="release verify"
    )
    with progress_bar() as advance:
        summary = verify_release(
            release_dir,
            _families(base, depth, everything, family),
            expect_root=expect_root,
            log=_note,
            progress=advance,
        )
    if as_json:
        emit_report(ok=True, root_sha256=_snapshot_root(release_dir), **_summary(summary))
        return
    stdout_console().print(
        f"OK {release_dir}: {count(summary.packages, 'package')} "
        f"({format_size(summary.package_bytes)}) of "
        f"{', '.join(summary.families)} verified"
    )


@release_app.command("unpack")
def unpack(
    release_dir: Annotated[Path, typer.Argument(help="The release directory.", parser=path_parser)],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Restore into OUT/<name>.", parser=path_parser),
    ] = None,
    base: _BASE = False,
    depth: _DEPTH = False,
    everything: _ALL = False,
    family: _FAMILY = None,
    no_fsync: Annotated[
        bool, typer.Option("--no-fsync", help="Skip fsync (faster, not power-cut safe).")
    ] = False,
    readable_by: Annotated[
        ReadableByChoice,
        typer.Option(
            "--readable-by",
            help="Who may read the restored tree: owner (0400/0500), group (0440/0550), "
            "all (0444/0555).",
        ),
    ] = ReadableByChoice.owner,
    expect_root: _EXPECT = None,
    no_wait: Annotated[
        bool, typer.Option("--no-wait", help="Fail if another restore writes into OUT.")
    ] = False,
    as_json: _JSON = False,
    old_out: Annotated[Path | None, hidden_alias("--output", "--out", path=True)] = None,
) -> None:
    """Verify and restore families with the same logic as the shipped unpack.py."""
    target(_KIND, release_dir)
    refuse_other_kind(
        release_dir, "release directory", (TreeKind.RELEASE,), command="release unpack"
    )
    output = renamed(out, old_out, "--out", "--output")
    if output is None:
        raise typer.BadParameter("missing --out, the directory to restore into", param_hint="--out")
    families = _families(base, depth, everything, family)
    if not families:
        raise typer.BadParameter("choose --base, --depth, --family NAME or --all")
    with progress_bar() as advance:
        summary = restore_release(
            release_dir,
            output,
            families,
            fsync=not no_fsync,
            readable_by=readable_by.value,
            expect_root=expect_root,
            wait=not no_wait,
            log=_note,
            progress=advance,
        )
    if as_json:
        emit_report(
            ok=True,
            kind="restored-release",
            root=summary.output,
            root_sha256=_snapshot_root(release_dir),
            written=summary.written,
            skipped=summary.skipped,
            release=str(release_dir),
            **_summary(summary),
        )
        return
    stdout_console().print(
        f"OK: {', '.join(summary.families)} restored into {summary.output}: "
        f"{count(summary.written, 'file')} written, {summary.skipped} already present and "
        "verified"
    )


def _snapshot_root(release_dir: Path) -> str | None:
    from dataset_devkit.release.unpack import load_release

    return load_release(str(release_dir)).snapshot_root


def verify_partial_restore(directory: Path, as_json: bool, expect_root: str | None = None) -> bool:
    """``verify`` of a tree that ``unpack.py`` restored only in part (base without depth).

    Checks the families present against the release index recorded with the restore and
    names the absent ones; returns False (nothing done) for any other tree. With
    *expect_root*, the restored release must be the snapshot with that root.
    """
    report = partial_restore_verdict(directory, expect_root=expect_root)
    if report is None:
        return False
    failure = VerificationFailed(f"{directory}: {report.describe()}", report.issues)
    if as_json:
        details = report.to_json()
        facts: dict[str, Any] = {
            "kind": "restored-release",
            "root": directory,
            "root_sha256": report.snapshot_root,
            "issues": details.pop("issues"),
            **{k: v for k, v in details.items() if k not in ("ok", "tree")},
        }
        if not report.ok:
            fail_with_report(failure, **facts)
        emit_report(ok=True, **facts)
        return True
    if not report.ok:
        raise failure
    stdout_console().print(f"OK {directory}: {report.describe()}")
    return True


def register(app: typer.Typer) -> None:
    """Add the ``release`` command group to the root app."""
    app.add_typer(release_app, name="release")
