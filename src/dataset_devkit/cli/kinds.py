"""``validate`` and ``inspect``: any tree dataset-devkit writes, told apart by its markers.

``validate PATH`` runs the checks of the kind :func:`~dataset_devkit.kinds.detect_tree`
finds; ``--dataroot D --version V`` keeps the nuScenes contract's spelling. Every system's
own command (``verify``, ``store verify``, ``release verify``, ``stereo validate``) stays
for its options; these two are the ones a user can point at anything.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from dataset_devkit.cli.expect import refuse_other_kind
from dataset_devkit.cli.needs import require_for
from dataset_devkit.cli.nuscenes import inspect_nuscenes, validate_nuscenes
from dataset_devkit.cli.output import emit_report, target
from dataset_devkit.cli.progress import progress_bar
from dataset_devkit.cli.remote import inspect_url, is_url, location_parser, validate_url
from dataset_devkit.cli.render import format_size, print_table, stdout_console, table, text_parser
from dataset_devkit.errors import VerificationFailed
from dataset_devkit.integrity import read_manifest, verify_tree
from dataset_devkit.kinds import UNPACK_STATE_SUFFIX, DetectedTree, TreeKind, detect_tree

__all__ = ["register"]

_PATH = Annotated[
    str | None,
    typer.Argument(
        help="The tree: a release, a restored release, a nuScenes dataroot, a stereo "
        "dataset, a VIN store or any tree with a content manifest; or the URL of a "
        "published dataset (s3://bucket/prefix), checked as a content-manifest tree.",
        parser=location_parser,
        show_default=False,
    ),
]
# A str, not a Path: typer would turn "" into Path("."), the working directory.
_DATAROOT = Annotated[
    str | None,
    typer.Option(
        "--dataroot",
        help="A published nuScenes dataroot (the contract's spelling).",
        parser=text_parser,
    ),
]
_VERSION = Annotated[
    str | None,
    typer.Option(
        "--version", help="nuScenes table version, v1.0-trainval (default: the one found)."
    ),
]
_JSON = Annotated[bool, typer.Option("--json", help="Print the JSON report.")]


def _verified(tree: DetectedTree, location: str | None = None) -> dict[str, Any]:
    """Verify a tree against its content manifest, with a bar; raise listing every issue."""
    with progress_bar() as advance:
        report = verify_tree(tree.root, location=location, progress=advance)
    report.raise_for_issues()
    return {
        "root_sha256": report.root_sha256,
        "files": report.file_count,
        "bytes": report.total_bytes,
        "manifest": report.manifest_location,
    }


def _restore_record(root: Path) -> dict[str, Any]:
    state_path = root.parent / f"{root.name}{UNPACK_STATE_SUFFIX}"
    try:
        record = json.loads(state_path.read_bytes()[: 1 << 20])
    except (OSError, ValueError) as exc:
        raise VerificationFailed(f"{state_path}: unreadable restore state ({exc})") from None
    if not isinstance(record, dict):
        raise VerificationFailed(f"{state_path}: expected a JSON object")
    return record


def _validate_tree(tree: DetectedTree) -> dict[str, Any]:
    if tree.kind is TreeKind.RELEASE:
        from dataset_devkit.release import verify_release

        with progress_bar() as advance:
            summary = verify_release(tree.root, [], progress=advance)
        from dataset_devkit.release.unpack import load_release

        return {
            "root_sha256": load_release(str(tree.root)).snapshot_root,
            "families": summary.families,
            "packages": summary.packages,
            "package_bytes": summary.package_bytes,
        }
    if tree.kind is TreeKind.RESTORED_RELEASE:
        from dataset_devkit.release.restored import verify_partial_restore

        # A family restored alone (base now, depth later) is a supported state: the same
        # verdict as ``verify`` gives it, from the release index recorded with the restore.
        partial = verify_partial_restore(tree.root)
        if partial is not None:
            partial.raise_for_issues()
            return {
                "root_sha256": partial.snapshot_root,
                "families": partial.present,
                "families_absent": partial.absent,
                "files": partial.file_count,
                "bytes": partial.total_bytes,
                "verdict": partial.describe(),
            }
        record = _restore_record(tree.root)
        families = ", ".join(record.get("families", [])) or "none"
        try:
            facts = _verified(tree)
        except VerificationFailed as exc:
            if exc.issues and all(": missing: " in issue for issue in exc.issues):
                # A family restored alone (base now, depth later) lacks the others' files.
                raise VerificationFailed(
                    f"{tree.root}: {len(exc.issues)} files of the snapshot are not here; "
                    f"restored families: {families} (unpack the others into the same "
                    "output, or validate the release directory itself)",
                    exc.issues,
                ) from None
            raise
        if facts["root_sha256"] != record.get("snapshot_root_sha256"):
            raise VerificationFailed(
                f"{tree.root}: content manifest root {facts['root_sha256']} is not the "
                f"restored snapshot {record.get('snapshot_root_sha256')}"
            )
        return {**facts, "families": record.get("families", [])}
    if tree.kind is TreeKind.STEREO_DATASET:
        from dataset_devkit.stereo import validate_stereo

        with progress_bar() as advance:
            result = validate_stereo(tree.root, progress=advance)
        result.raise_for_issues()
        return {"root_sha256": read_manifest(tree.root).root_sha256, "pairs": result.pairs}
    if tree.kind is TreeKind.VIN_STORE:
        from dataset_devkit.vin_store import verify_store

        with progress_bar() as advance:
            report = verify_store(tree.root, progress=advance)
        report.raise_for_issues()
        return {"root_sha256": report.root_sha256}
    return _verified(tree)


#: Trees ``--dataroot`` reads: a dataroot, also once restored, or a damaged one.
_DATAROOT_KINDS = (
    TreeKind.NUSCENES_DATAROOT,
    TreeKind.RESTORED_RELEASE,
    TreeKind.CONTENT_MANIFEST_TREE,
)


def _refuse_other_than_a_dataroot(dataroot: str, command: str) -> None:
    """``--dataroot`` given another kind of tree says so, as ``validate PATH`` does."""
    target("nuscenes-dataroot", dataroot)
    if dataroot:  # "" is refused by the library, naming the option
        refuse_other_kind(Path(dataroot), "nuScenes dataroot", _DATAROOT_KINDS, command=command)


def validate(
    path: _PATH = None, dataroot: _DATAROOT = None, version: _VERSION = None, as_json: _JSON = False
) -> None:
    """Tell what kind of tree PATH is and run that kind's full checks; exit 1 listing issues."""
    if dataroot is not None or (path is None and version is not None):
        if path is not None:
            raise typer.BadParameter("give PATH or --dataroot, not both", param_hint="PATH")
        if dataroot is None or version is None:
            raise typer.BadParameter("--dataroot D --version v1.0-trainval go together")
        _refuse_other_than_a_dataroot(dataroot, "validate")
        validate_nuscenes(dataroot, version)
        return
    if path is None:
        raise typer.BadParameter("give the tree to validate", param_hint="PATH")
    if is_url(path):
        validate_url(path, as_json=as_json)
        return
    target(None, path)
    tree = detect_tree(Path(path))
    target(tree.kind.value, tree.root)
    require_for("validate", kind=tree.kind)
    if tree.kind is TreeKind.NUSCENES_DATAROOT:
        validate_nuscenes(str(tree.root), version or tree.version or "v1.0-trainval")
        return
    facts = _validate_tree(tree)
    verdict = facts.pop("verdict", None)
    if as_json:
        emit_report(ok=True, **facts)
        return
    if verdict is not None:
        stdout_console().print(f"OK {tree.root}: {verdict}")
        return
    stdout_console().print(
        Text.assemble(("OK", "green"), f" {tree.root}: valid {tree.kind.value}"),
        f"root_sha256 {facts['root_sha256']}",
        sep="\n",
    )


def _facts_of(tree: DetectedTree) -> dict[str, Any]:
    """A summary of a tree from its metadata alone (``validate`` does the full check)."""
    if tree.kind is TreeKind.RELEASE:
        from dataset_devkit.release.unpack import load_release

        release = load_release(str(tree.root))
        return {
            "root_sha256": release.snapshot_root,
            "name": release.name,
            "families": {
                name: family.get("status", "") for name, family in sorted(release.families.items())
            },
            "packages": len(release.packages),
            "package_bytes": sum(int(p["size"]) for p in release.packages.values()),
        }
    if tree.kind is TreeKind.VIN_STORE:
        from dataset_devkit.vin_store import inspect_store

        summary = inspect_store(tree.root)
        return {
            "root_sha256": summary.root_sha256,
            "samples": summary.num_samples,
            "shards": summary.num_shards,
            "split_sizes": dict(summary.split_sizes),
            "files": summary.num_files,
            "bytes": summary.total_bytes,
        }
    manifest = read_manifest(tree.root)
    facts: dict[str, Any] = {
        "root_sha256": manifest.root_sha256,
        "files": manifest.file_count,
        "bytes": manifest.total_bytes,
    }
    if tree.kind is TreeKind.STEREO_DATASET:
        index = (tree.root / "genvr_i2s.jsonl").read_bytes()
        facts["pairs"] = sum(1 for line in index.splitlines() if line.strip())
        facts["depth"] = any(
            entry.path.startswith("depth") or "/depth-" in entry.path for entry in manifest.files
        )
    if tree.kind is TreeKind.RESTORED_RELEASE:
        facts["families"] = _restore_record(tree.root).get("families", [])
    return facts


def inspect(
    path: _PATH = None, dataroot: _DATAROOT = None, version: _VERSION = None, as_json: _JSON = False
) -> None:
    """Tell what kind of tree PATH is and summarize it (nuScenes: validated first)."""
    if dataroot is not None or (path is None and version is not None):
        if path is not None:
            raise typer.BadParameter("give PATH or --dataroot, not both", param_hint="PATH")
        if dataroot is None or version is None:
            raise typer.BadParameter("--dataroot D --version v1.0-trainval go together")
        _refuse_other_than_a_dataroot(dataroot, "inspect")
        inspect_nuscenes(dataroot, version, as_json)
        return
    if path is None:
        raise typer.BadParameter("give the tree to inspect", param_hint="PATH")
    if is_url(path):
        inspect_url(path, as_json=as_json)
        return
    target(None, path)
    tree = detect_tree(Path(path))
    target(tree.kind.value, tree.root)
    require_for("inspect", kind=tree.kind)
    if tree.kind is TreeKind.NUSCENES_DATAROOT:
        inspect_nuscenes(str(tree.root), version or tree.version or "v1.0-trainval", as_json)
        return
    facts = _facts_of(tree)
    if as_json:
        emit_report(ok=True, markers=list(tree.markers), **facts)
        return
    facts_table = table(
        "item", "value", title=f"{tree.kind.value} {tree.root}", show_header=False,
        title_justify="left",
    )  # fmt: skip
    show: Callable[[Any], str] = lambda v: (  # noqa: E731
        ", ".join(f"{k} {x}" for k, x in v.items())
        if isinstance(v, dict)
        else ", ".join(map(str, v))
        if isinstance(v, list)
        else str(v)
    )
    for key, value in facts.items():
        if key in ("bytes", "package_bytes"):  # sizes read as sizes, as everywhere
            value = f"{format_size(value)} ({value:,} bytes)"
        if key != "root_sha256":
            facts_table.add_row(key.replace("_", " "), show(value))
    facts_table.add_row("told by", ", ".join(tree.markers))
    console = stdout_console()
    print_table(console, facts_table)
    console.print(f"root_sha256 {facts['root_sha256']}")


def register(app: typer.Typer) -> None:
    """Add ``validate`` and ``inspect`` to the root app."""
    app.command("validate")(validate)
    app.command("inspect")(inspect)
