"""Build a GenVR-duo stereo dataset from a rendered export, published atomically.

Everything is written into a fresh staging directory next to the destination: videos are
copied byte for byte (hashed while copying), cameras converted, depth encoded through zarr,
indexes and requirements derived from the same records, then the reader reads frames back
(``reader_validation.json``) and ``release_manifest.json`` is written last before the
integrity core seals and renames the tree. A failure anywhere leaves no destination.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path

from dataset_devkit.errors import (
    ConfigError,
    DestinationExistsError,
    MissingPathError,
    VerificationFailed,
)
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    SafeDir,
    hash_file,
    path_argument,
    read_manifest,
    staged_publication,
)
from dataset_devkit.integrity.modes import ReadableBy
from dataset_devkit.integrity.progress import OnProgress, ProgressUpdate, report
from dataset_devkit.integrity.workers import available_cores
from dataset_devkit.stereo.depth import chunk_names
from dataset_devkit.stereo.depth_writer import WrittenDepth, write_pair_depth
from dataset_devkit.stereo.reader_check import reader_validation
from dataset_devkit.stereo.records import (
    depth_meta,
    index_row,
    pair_dir,
    pair_meta,
    procedural_prompt,
    requirements,
    source_files,
)
from dataset_devkit.stereo.source import SOURCE_FILE, LoadedPair, LoadedSource, load_source
from dataset_devkit.stereo.source_files import copy_and_hash
from dataset_devkit.stereo.spec import (
    CAMERA_FILES,
    DEPTH_DIR,
    DEPTH_GROUP,
    DEPTH_META,
    EYES,
    FORMAT_VERSION,
    INDEX_DEFAULT,
    INDEX_NODEPTH,
    INDEX_WITH_DEPTH,
    PAIR_META,
    PROMPT,
    READER_VALIDATION,
    RELEASE_MANIFEST,
    REQUIREMENTS,
    REQUIREMENTS_WITH_DEPTH,
    SOURCE_MAPPING,
    SOURCE_RELEASE_MANIFEST,
    VIDEO_FILES,
    ManifestFile,
    ReleaseManifest,
    SourceMappingRow,
    encode_json,
    encode_jsonl,
    family_of,
)


@dataclass(frozen=True, slots=True)
class BuildResult:
    """What a build published."""

    root: Path
    root_sha256: str
    pairs: int
    #: Frames of one eye summed over every pair (each pair's left and right hold as many).
    frames_per_eye: int
    has_depth: bool
    files: int
    bytes: int
    #: The frames of each pair (both eyes hold as many), in the export's pair order.
    frames_per_pair: tuple[int, ...] = ()


def _write_pairs(
    source: LoadedSource,
    root: SafeDir,
    hashes: dict[str, tuple[int, str]],
    source_hashes: dict[str, tuple[int, str]],
    executor: Executor | None,
    progress: OnProgress | None = None,
) -> None:
    """Write every pair; record built-file hashes and the hashes of source files read."""
    jobs: list[tuple[LoadedPair, Future[WrittenDepth]]] = []
    order = {pair.pair_id: i for i, pair in enumerate(source.export.pairs)}
    for item in source.pairs:
        base, pair = pair_dir(item), item.pair
        index = order[pair.pair_id]
        copied_bytes = 0
        with root.makedirs(base) as folder:
            for eye in EYES:
                files = getattr(pair, eye)
                folder.makedirs(VIDEO_FILES[eye].rsplit("/", 1)[0]).close()
                copied = copy_and_hash(source.root / files.video, folder, VIDEO_FILES[eye])
                hashes[f"{base}/{VIDEO_FILES[eye]}"] = source_hashes[files.video] = copied
                copied_bytes += copied[0]
                folder.makedirs(CAMERA_FILES[eye].rsplit("/", 1)[0]).close()
                folder.write_bytes(CAMERA_FILES[eye], encode_json(item.cameras[eye]))
            prompt = procedural_prompt(pair.scene_metadata)
            folder.write_bytes(PROMPT, prompt.encode() + b"\n")
            folder.write_bytes(PAIR_META, encode_json(pair_meta(item, index)))
            if item.has_depth:
                folder.mkdir(DEPTH_DIR).close()
                npy = {eye: str(source.root / getattr(pair, eye).depth) for eye in EYES}
                args = (str(root.path / base / DEPTH_GROUP), npy, pair.depth_far_m)
                if executor is None:  # here, on every core: chunks pipelined over threads
                    done: Future[WrittenDepth] = Future()
                    done.set_result(write_pair_depth(*args, threads=available_cores()))
                    jobs.append((item, done))
                else:  # a pair per worker, each reading while one thread encodes
                    jobs.append((item, executor.submit(write_pair_depth, *args)))
        # Videos copied count as bytes written; a pair with depth counts once encoded.
        finished = 0 if item.has_depth else 1
        update = ProgressUpdate("write pairs", nbytes=copied_bytes, items=finished, unit="pairs")
        report(progress, update)
    for item, job in jobs:  # results in pair order, so the bytes never depend on scheduling
        pair, group = item.pair, root.path / pair_dir(item) / DEPTH_GROUP
        written = job.result()
        report(progress, ProgressUpdate("write pairs", items=1, unit="pairs"))
        for eye in EYES:  # hashed while encoding: the source manifest does not read it again
            source_hashes[str(getattr(pair, eye).depth)] = written.sources[eye]
        for name, hashed in written.chunks.items():  # hashed as written: not read again
            hashes[f"{pair_dir(item)}/{DEPTH_GROUP}/{name}"] = hashed
        shape = [pair.num_frames, pair.height, pair.width]
        root.write_bytes(
            f"{pair_dir(item)}/{DEPTH_META}",
            encode_json(depth_meta(shape, written.invalid, pair.depth_far_m)),
        )
        for eye in EYES:
            present = {p.name for p in (group / eye).iterdir()}
            missing = set(chunk_names(pair.num_frames)) - present
            if missing:  # all-fill chunks are written too
                raise VerificationFailed(f"{group / eye}: chunks not written", sorted(missing))


def _root_files(
    source: LoadedSource, root: SafeDir, source_hashes: dict[str, tuple[int, str]]
) -> None:
    dataset = f"{source.export.dataset}-{source.export.snapshot}"
    prompts = {
        item.pair.pair_id: procedural_prompt(item.pair.scene_metadata) for item in source.pairs
    }
    plain = [index_row(i, prompts[i.pair.pair_id], with_depth=False) for i in source.pairs]
    root.write_bytes(INDEX_DEFAULT, encode_jsonl(plain))
    root.write_bytes(INDEX_NODEPTH, encode_jsonl(plain))
    root.write_bytes(REQUIREMENTS, encode_json(requirements(dataset, len(plain), use_depth=False)))
    if source.has_depth:
        deep = [index_row(i, prompts[i.pair.pair_id], with_depth=True) for i in source.pairs]
        root.write_bytes(INDEX_WITH_DEPTH, encode_jsonl(deep))
        root.write_bytes(
            REQUIREMENTS_WITH_DEPTH, encode_json(requirements(dataset, len(deep), use_depth=True))
        )
    order = {pair.pair_id: i for i, pair in enumerate(source.export.pairs)}
    mapping = [
        SourceMappingRow(id=pair_dir(i), files=source_files(i, order[i.pair.pair_id]))
        for i in source.pairs
    ]
    root.write_bytes(SOURCE_MAPPING, encode_jsonl(mapping))
    referenced = {SOURCE_FILE}
    for item in source.pairs:
        for eye in EYES:
            files = getattr(item.pair, eye)
            referenced |= {files.video, files.camera} | ({files.depth} if files.depth else set())
    # videos and depth were hashed while copied or encoded: no second read of the largest files
    entries = []
    for rel in sorted(referenced):
        size, digest = (
            source_hashes[rel]
            if rel in source_hashes
            else copy_and_hash(source.root / rel, None, rel)
        )
        entries.append(ManifestFile(path=rel, size=size, sha256=digest))
    root.write_bytes(
        SOURCE_RELEASE_MANIFEST,
        encode_json(
            _manifest(source, entries, [], "the rendered export files this dataset was built from")
        ),
    )


def _manifest(
    source: LoadedSource, files: list[ManifestFile], excluded: list[str], note: str
) -> ReleaseManifest:
    families: dict[str, dict[str, int]] = {}
    for entry in files:
        if entry.family is not None:
            totals = families.setdefault(entry.family, {"files": 0, "bytes": 0})
            totals["files"] += 1
            totals["bytes"] += entry.size
    return ReleaseManifest(
        format="genvr-release-manifest",
        version=FORMAT_VERSION,
        dataset=source.export.dataset,
        snapshot=source.export.snapshot,
        files=files,
        families=families,
        excluded=excluded,
        note=note,
    )


def _release_manifest(
    source: LoadedSource, root: SafeDir, hashes: dict[str, tuple[int, str]]
) -> None:
    entries = []
    for rel in sorted(root.iter_files()):
        if rel in (RELEASE_MANIFEST, CONTENT_MANIFEST_NAME):
            continue
        size, digest = hashes[rel] if rel in hashes else hash_file(root.path / rel)
        entries.append(ManifestFile(path=rel, size=size, sha256=digest, family=family_of(rel)))
    note = (
        "every file of the dataset with its release family; depth-* files ship in the depth "
        "family and may be absent from a base-only install"
    )
    root.write_bytes(
        RELEASE_MANIFEST,
        encode_json(_manifest(source, entries, [RELEASE_MANIFEST, CONTENT_MANIFEST_NAME], note)),
    )


def build_stereo_dataset(
    source: Path,
    out: Path,
    *,
    executor: Executor | None = None,
    progress: OnProgress | None = None,
    readable_by: ReadableBy = "owner",
) -> BuildResult:
    """Check ``source`` fully, then build and publish the dataset at ``out`` (never replaced).

    Depth encoding is the costly part of a build. Without ``executor`` it runs in this
    process on every core it may use: each pair's chunks are read, converted, compressed
    and hashed in a pipeline of threads. ``executor`` (a process pool or a Dask
    ``distributed`` client's executor whose workers see the same filesystem) encodes
    whole pairs in parallel instead, one pair per worker. The output bytes are the same
    either way. Use a ``spawn`` or
    ``forkserver`` process pool: zarr keeps an event loop thread that a fork does not copy.
    ``readable_by`` (``owner``, ``group`` or ``all``) is who may read the published tree.
    ``progress`` hears of every stage in order: ``check source`` and ``write pairs``
    (pairs; bytes of video copied), ``read back`` (pairs), then the publication's ``hash``
    and ``verify`` (files and bytes).

    Raises
    ------
    SourceIssues, SourceError
        The export is not as documented; every problem found is listed.
    DestinationExistsError
        ``out`` exists.
    VerificationFailed
        Reader validation of the staged tree failed.
    """
    path_argument(source, "source")
    path_argument(out, "out")
    if os.path.lexists(out):  # fail before the source check, which reads every video
        raise DestinationExistsError(f"{out}: already exists; a published tree is never replaced")
    if not Path(source).is_dir():
        if os.path.lexists(source):
            raise ConfigError(f"{source}: expected the export directory, found a file")
        raise MissingPathError("no such export directory", path=source)
    loaded = load_source(Path(source), progress=progress)
    pairs = len(loaded.pairs)
    hashes: dict[str, tuple[int, str]] = {}
    source_hashes: dict[str, tuple[int, str]] = {}
    with (
        staged_publication(Path(out), readable_by=readable_by, progress=progress) as staging,
        SafeDir.open(staging) as root,
    ):
        report(progress, ProgressUpdate("write pairs", total_items=pairs, unit="pairs"))
        _write_pairs(loaded, root, hashes, source_hashes, executor, progress)
        _root_files(loaded, root, source_hashes)
        reads = reader_validation(
            staging, use_depth=loaded.has_depth, full=False, progress=progress
        )
        root.write_bytes(READER_VALIDATION, encode_json(reads))
        if not reads.passed:
            raise VerificationFailed(
                f"{out}: reader validation failed",
                sorted(f"{r.id} {r.what}: {r.error}" for r in reads.reads if not r.ok),
            )
        _release_manifest(loaded, root, hashes)
    manifest = read_manifest(Path(out))
    return BuildResult(
        root=Path(out),
        root_sha256=manifest.root_sha256,
        pairs=len(loaded.pairs),
        frames_per_eye=sum(item.pair.num_frames for item in loaded.pairs),
        frames_per_pair=tuple(item.pair.num_frames for item in loaded.pairs),
        has_depth=loaded.has_depth,
        files=len(manifest.files),
        bytes=sum(entry.size for entry in manifest.files),
    )
