"""``publish --out URL`` and ``verify URL``: the integrity commands on an object store.

The commands keep their names and output: a URL (``s3://``, ``gs://``, ``az://``,
``file://``) where a path was is all a user changes. Endpoint and credentials come from
each cloud's standard environment (``AWS_*``, ``AZURE_STORAGE_*``, ``GOOGLE_*``; see
:mod:`dataset_devkit.objectstore.environment`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import typer

from dataset_devkit.cli.needs import URL_EXTRAS, require_for
from dataset_devkit.cli.output import emit_report, fail_with_report, target
from dataset_devkit.cli.progress import progress_bar
from dataset_devkit.cli.render import count, format_size, stderr_console, stdout_console
from dataset_devkit.errors import DevkitError
from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, ManifestNotFoundError
from dataset_devkit.integrity.bucket import (
    RetryPolicy,
    publish_remote,
    read_remote_manifest,
    verify_remote,
)
from dataset_devkit.integrity.sampling import VerifySample
from dataset_devkit.integrity.verify import VerificationReport
from dataset_devkit.objectstore import is_url, open_location

__all__ = [
    "TransferOptions",
    "inspect_url",
    "is_url",
    "location_parser",
    "publish_to_url",
    "show_verification",
    "validate_url",
    "verify_url",
]


@dataclass(frozen=True)
class TransferOptions:
    """``--workers``, ``--part-size``, ``--part-concurrency`` and ``--retries``: how a
    command talks to an object store. ``None`` keeps the library's default."""

    workers: int | None = None
    part_size: int | None = None
    part_concurrency: int | None = None
    retries: int | None = None

    def given(self) -> list[str]:
        """The flags the user set, for the error when the destination is not a URL."""
        names = ("--workers", "--part-size", "--part-concurrency", "--retries")
        values = (self.workers, self.part_size, self.part_concurrency, self.retries)
        return [name for name, value in zip(names, values, strict=True) if value is not None]

    def refuse_for_local(self, where: str) -> None:
        """A local path takes none of these: say so instead of ignoring them."""
        if self.given():
            raise typer.BadParameter(
                f"{', '.join(self.given())} apply to an object store URL, not to the local "
                f"path {where}"
            )

    def keywords(self, *, upload: bool) -> dict[str, Any]:
        """Keyword arguments of ``publish_remote`` (*upload*) or ``verify_remote``."""
        kwargs: dict[str, Any] = {}
        if self.workers is not None:
            kwargs["workers"] = self.workers
        if self.retries is not None:
            kwargs["retry"] = replace(RetryPolicy(), request_retries=self.retries)
        if upload and self.part_size is not None:
            kwargs["part_size"] = self.part_size
        if upload and self.part_concurrency is not None:
            kwargs["part_concurrency"] = self.part_concurrency
        return kwargs


def show_verification(
    report: VerificationReport, *, shown: Path | str, as_json: bool, root: Path | str | None = None
) -> None:
    """Print a verify report, local or remote, the one way: JSON (exit 1 unless ok), or
    ``OK`` with the counts and root hash, or every issue (exit 1)."""
    if as_json:
        facts: dict[str, Any] = {
            "root": root,
            "root_sha256": report.root_sha256,
            "issues": report.details,
            "manifest_location": report.manifest_location,
            "actual_root_sha256": report.actual_root_sha256,
            "files": report.file_count,
            "bytes": report.total_bytes,
            "sample": None if report.sample is None else report.sample.to_json(),
        }
        if not report.ok:
            try:
                report.raise_for_issues()
            except DevkitError as exc:
                fail_with_report(exc, **facts)
        emit_report(ok=True, **facts)
        return
    if report.sample is not None:
        stdout_console().print(f"note: {report.sample.describe()}", markup=False)
    if report.ok:
        if report.sample is None:
            verdict = f"{count(report.file_count, 'file')}, {format_size(report.total_bytes)} match"
        else:
            verdict = (
                f"the {count(report.sample.files, 'sampled file')} match, and all "
                f"{count(report.file_count, 'file')} are there with their sizes, as in"
            )
        stdout_console().print(
            f"OK {shown}: {verdict} {report.manifest_location}",
            f"root_sha256 {report.root_sha256}",
            sep="\n",
        )
        return
    report.raise_for_issues()


def location_parser(value: str) -> str:
    """A local path or an object store URL, refusing ``""`` (an unset shell variable)."""
    if not value:
        raise typer.BadParameter("must not be empty (an unset shell variable?)")
    return value


def verify_url(
    url: str,
    *,
    manifest_location: str | None,
    as_json: bool,
    expect_root: str | None,
    transfer: TransferOptions | None = None,
    sample: VerifySample | None = None,
) -> None:
    """Verify the dataset at *url* in place; the same output as a local ``verify``."""
    require_for("verify", URL_EXTRAS)
    options = (transfer or TransferOptions()).keywords(upload=False)
    with progress_bar() as advance:
        report = verify_remote(
            url,
            location=manifest_location,
            expect_root=expect_root,
            progress=advance,
            sample=sample,
            **options,
        )
    show_verification(report, shown=report.root, as_json=as_json, root=report.root)


def publish_to_url(
    tree: Path,
    url: str,
    *,
    manifest_location: str | None,
    as_json: bool,
    transfer: TransferOptions | None = None,
) -> None:
    """Upload *tree* to *url* and commit it; exit 0 also when it is already published."""
    require_for("publish", URL_EXTRAS)
    options = (transfer or TransferOptions()).keywords(upload=True)
    with progress_bar() as advance:
        result = publish_remote(
            tree, url, manifest_location=manifest_location, progress=advance, **options
        )
    if result.notice:
        stderr_console().print(f"notice: {result.notice}")
    if result.aborted_uploads:
        stderr_console().print(
            f"notice: aborted {result.aborted_uploads} unfinished multipart upload(s) an "
            "earlier, interrupted run left under the prefix"
        )
    if as_json:
        emit_report(
            ok=True,
            root=result.url,
            root_sha256=result.root_sha256,
            manifest_location=result.manifest_location,
            files=result.file_count,
            bytes=result.total_bytes,
            uploaded_files=result.uploaded_files,
            uploaded_bytes=result.uploaded_bytes,
            skipped_files=result.skipped_files,
            already_published=result.already_published,
            aborted_uploads=result.aborted_uploads,
        )
        return
    console = stdout_console()
    if result.already_published and not result.uploaded_files:
        console.print(
            f"already published {result.url}: {count(result.file_count, 'file')}, "
            f"manifest {result.manifest_location}"
        )
    else:
        skipped = f", {result.skipped_files} already there" if result.skipped_files else ""
        console.print(
            f"published {result.url}: {count(result.file_count, 'file')} "
            f"({result.uploaded_files} uploaded{skipped}), manifest {result.manifest_location}"
        )
    console.print(f"root_sha256 {result.root_sha256}")


_KIND = "content-manifest-tree"
_REMOTE_NOTE = (
    "checked against its content manifest; the checks specific to a release, VIN store, "
    "stereo or nuScenes tree run on a local copy"
)


def validate_url(url: str, *, as_json: bool) -> None:
    """``validate URL``: a dataset on an object store is checked as a content-manifest tree
    (every object hashed in place); the kind-specific checks need the tree on disk."""
    target(_KIND, url)
    require_for("validate", URL_EXTRAS)
    with progress_bar() as advance:
        report = verify_remote(url, progress=advance)
    report.raise_for_issues()
    if as_json:
        emit_report(
            ok=True,
            root=report.root,
            root_sha256=report.root_sha256,
            files=report.file_count,
            bytes=report.total_bytes,
            manifest=report.manifest_location,
            note=_REMOTE_NOTE,
        )
        return
    stdout_console().print(
        f"OK {report.root}: valid {_KIND} ({_REMOTE_NOTE})",
        f"root_sha256 {report.root_sha256}",
        sep="\n",
    )


def inspect_url(url: str, *, as_json: bool) -> None:
    """``inspect URL``: the dataset's content manifest, read from the object store."""
    target(_KIND, url)
    require_for("inspect", URL_EXTRAS)
    location = open_location(url)
    policy = RetryPolicy()
    manifest = read_remote_manifest(location, CONTENT_MANIFEST_NAME, policy)
    if manifest is None:
        raise ManifestNotFoundError(
            "no content manifest; a prefix without its manifest is not a dataset "
            "(inspect reads the manifest at the top of the prefix)",
            path=location.describe(CONTENT_MANIFEST_NAME),
        )
    if as_json:
        emit_report(
            ok=True,
            root=location.url,
            root_sha256=manifest.root_sha256,
            markers=[CONTENT_MANIFEST_NAME],
            files=manifest.file_count,
            bytes=manifest.total_bytes,
        )
        return
    console = stdout_console()
    console.print(
        f"{_KIND} {location.url}: {count(manifest.file_count, 'file')}, "
        f"{format_size(manifest.total_bytes)}"
    )
    console.print(f"root_sha256 {manifest.root_sha256}")
