"""The build service: recordings to a validated, published, read-only dataroot in one call.

``build_dataset`` runs the stages in order — ingest, evidence, export into a fresh sibling
staging directory, validation, the official loader, finalization and atomic publication — and
reports each through one progress callback. On any failure the staging directory is removed
and the final name is untouched; a killed process leaves at most a hidden
``.v1.0-trainval.staging-*`` directory, never a final dataroot.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.errors import ConfigError, MissingPathError, UnsafePathError
from dataset_devkit.extras import require_extras
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    new_staging_dir,
    remove_staging,
    remove_stale_staging,
)
from dataset_devkit.integrity.modes import ReadableBy, check_readable_by
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.build.publish import check_final_destination, publish_dataroot
from dataset_devkit.nuscenes.cluster import BuildExecutors, open_executors
from dataset_devkit.nuscenes.config import BuildConfig
from dataset_devkit.nuscenes.evidence.inputs import check_recording
from dataset_devkit.nuscenes.validation.dataroot import Progress
from dataset_devkit.nuscenes.validation.loader import OfficialLoaderCheck

__all__ = [
    "BUILD_STAGES",
    "SOURCE_EXTRAS",
    "BuildResult",
    "Exporter",
    "build_dataset",
    "required_extras",
]

#: Stage names passed to ``progress``, in order (the first four come from the exporter).
BUILD_STAGES = (
    "ingest",
    "scenes",
    "frames",
    "images",
    "check-images",
    "official-loader",
    "hash",
)

#: The extras a build needs for the ``sources.type`` of its config: the readers of that
#: kind of recording, and the official nuScenes loader that checks what is published.
SOURCE_EXTRAS: dict[str, tuple[str, ...]] = {
    spec.SOURCE_MCAP: ("mcap", "nuscenes"),
    spec.SOURCE_DECODED: ("video", "nuscenes"),
}

#: ``exporter(config, staging, progress)`` writes the staging dataroot from the recordings.
Exporter = Callable[[BuildConfig, Path, Progress], None]


@dataclass(frozen=True, slots=True)
class BuildResult:
    """What a build published."""

    dataroot: Path
    root_sha256: str
    scenes: int
    samples: int
    images: int
    channels: tuple[str, ...]
    loader: OfficialLoaderCheck
    #: One line per recording that lost data (truncated, invalid video frames).
    warnings: tuple[str, ...] = ()
    #: One line per recording that contributes no scene and per scene window not exported.
    dropped: tuple[str, ...] = ()


def _refuse_inside_published(path: Path) -> None:
    """Refuse an output directory inside a sealed tree (one holding a content manifest).

    Writing there would change content its manifest seals (``verify`` then fails with
    every new file). Each folder is tested with ``lstat`` (a manifest that is a link counts
    too), walking up both the path as written and the real location of the part of it that
    exists, so a link on the way cannot hide the sealed tree the output would land in.
    """
    written = Path(os.path.normpath(path.absolute()))
    existing = next(p for p in (written, *written.parents) if os.path.lexists(p))
    real = Path(os.path.realpath(existing))
    folders = dict.fromkeys([written, *written.parents, real, *real.parents])
    for folder in folders:
        for manifest in (
            folder / CONTENT_MANIFEST_NAME,
            folder / spec.EXTENSIONS_DIR / spec.CONTENT_MANIFEST_FILE,
        ):
            if os.path.lexists(manifest):
                raise ConfigError(
                    f"paths.output_dir: {path} is inside {folder}, a published tree (it holds "
                    f"{manifest.relative_to(folder)}); build outside it",
                    key="paths.output_dir",
                )


def _check_inputs(config: BuildConfig) -> None:
    """Each recording and the label file is there and has a recording's shape (nothing read)."""
    for path in config.sources.paths:
        check_recording(path)
    labels = config.sources.labels
    if labels is not None and not os.path.lexists(labels):
        raise MissingPathError("label file not found (sources.labels)", path=labels)


def _check_output_dir(path: Path) -> bool:
    """Check the output directory can be used (nothing is made); whether it exists."""
    _refuse_inside_published(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        raise ConfigError(
            f"paths.output_dir: a parent of {path} is not a directory", key="paths.output_dir"
        ) from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError("output directory is a symlink; refusing to follow it", path=path)
    return True


def _make_output_dir(path: Path) -> list[Path]:
    """Create the absent output directory; return the directories made, deepest first."""
    made = [path]
    while not os.path.lexists(made[-1].parent) and made[-1].parent != made[-1]:
        made.append(made[-1].parent)
    try:
        path.mkdir(parents=True)
    except OSError as exc:  # a parent is a file, read-only, or not permitted
        raise ConfigError(
            f"paths.output_dir: cannot create {path} ({exc.strerror})", key="paths.output_dir"
        ) from None
    return made


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove the output folders a failed build made, deepest first, while they are empty
    (evidence a build kept, or anything a user put there meanwhile, stays)."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def required_extras(config: BuildConfig, *, exporter: bool = False) -> tuple[str, ...]:
    """The extras building *config* needs (only the official loader's for a caller's own
    *exporter*; a Dask ``executor.scheduler`` adds ``dask``)."""
    needed = ("nuscenes",) if exporter else SOURCE_EXTRAS[config.sources.type]
    return (*needed, "dask") if config.executor.scheduler is not None else needed


def _default_exporter(
    config: BuildConfig, staging: Path, progress: Progress, executors: BuildExecutors
) -> None:
    from dataset_devkit.nuscenes.build.export import export_from_recordings

    export_from_recordings(config, staging, progress, executors)


def build_dataset(
    config: BuildConfig,
    *,
    progress: Progress | None = None,
    exporter: Exporter | None = None,
    on_phase: Callable[[str], None] | None = None,
    workers: int = 2,
    executor: Executor | None = None,
    readable_by: ReadableBy = "owner",
) -> BuildResult:
    """Build and publish ``config.output_dir/v1.0-trainval`` from ``config``'s recordings.

    Parameters
    ----------
    config
        The resolved build configuration (see :mod:`dataset_devkit.nuscenes.config`).
    progress
        ``progress(stage, done, total)`` for every stage of :data:`BUILD_STAGES`.
    exporter
        Writes the staging dataroot; defaults to ingest + evidence + ``export_dataset``.
    on_phase
        Called with each publication phase (``integrity.PUBLISH_PHASES``).
    workers
        Image decode threads during validation.
    executor
        Runs the per-recording ingest and frame extraction and the export's frame copies
        (any ``concurrent.futures.Executor``: a process pool, a Dask cluster's
        ``Client.get_executor()`` whose workers share this filesystem). The caller keeps
        it open and shuts it down. Default: ``config.executor`` (``[executor]``). The
        published bytes and root hash do not depend on it.
    readable_by
        Who may read the published dataroot: ``"owner"`` (0400/0500, the default),
        ``"group"`` (0440/0550) or ``"all"`` (0444/0555).

    Raises
    ------
    DestinationExistsError
        The final dataroot exists: it is never replaced.
    DatarootInvalid
        The exported dataroot failed validation (every issue listed); nothing was published.
    MissingDependencyError
        An extra the build needs is not installed (:func:`required_extras`); checked
        before anything is written.
    """
    report: Progress = progress or (lambda _stage, _n, _total: None)
    readable = check_readable_by(readable_by)  # a bad value fails before anything is built
    # Every package the stages import, before anything is written (not in a worker later).
    require_extras("building a nuScenes dataroot", required_extras(config, exporter=bool(exporter)))
    final = config.final_dataroot
    exists = _check_output_dir(config.output_dir)
    if exporter is None:
        _check_inputs(config)  # a missing or wrong recording, before any folder is made
    made = [] if exists else _make_output_dir(config.output_dir)
    try:
        check_final_destination(final)
        remove_stale_staging(final)  # left by killed builds; a live build's staging is locked
        staging = new_staging_dir(final)
    except BaseException:
        _remove_if_empty(made)
        raise
    try:
        if exporter is not None:
            exporter(config, staging, report)
        else:
            shared = [config.output_dir, *config.sources.paths]
            count = len(config.sources.paths)
            with open_executors(config.executor, count, executor, shared) as run_on:
                _default_exporter(config, staging, report, run_on)
        published = publish_dataroot(
            staging,
            final,
            progress=report,
            on_phase=on_phase,
            workers=workers,
            readable_by=readable,
        )
    except BaseException:
        remove_staging(staging)
        _remove_if_empty(made)
        raise
    summary = published.summary
    return BuildResult(
        dataroot=published.dataroot,
        root_sha256=published.root_sha256,
        scenes=summary.scenes,
        samples=summary.samples,
        images=summary.images,
        channels=summary.channels,
        loader=published.loader,
        warnings=summary.notes.warnings,
        dropped=summary.notes.dropped,
    )
