"""``preview(path, out)``: detect the kind of tree, draw it, write ``out/index.html``.

The page is written into a hidden sibling directory and renamed into place at the end, so a
crash never leaves a half page at *out* and a re-run starts clean.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from dataset_devkit.errors import ConfigError, DestinationExistsError
from dataset_devkit.extras import require_extras
from dataset_devkit.integrity.oserrors import creating_in
from dataset_devkit.integrity.progress import OnProgress
from dataset_devkit.preview.html import write_index
from dataset_devkit.preview.kinds import Kind, detect
from dataset_devkit.preview.page import Section

__all__ = ["preview"]


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be an int >= 1, found {value!r}", key=name)
    return value


def _render(
    kind: Kind,
    path: Path,
    out: Path,
    scenes: int,
    pairs: int,
    rows: int,
    seed: int,
    progress: OnProgress | None,
) -> list[Section]:
    # Imported per kind: a VIN preview must not need the nuScenes or stereo extras.
    if kind is Kind.NUSCENES:
        from dataset_devkit.preview.nuscenes import render_nuscenes

        return render_nuscenes(path, out, scenes=scenes, samples=rows, seed=seed, progress=progress)
    if kind is Kind.STEREO:
        from dataset_devkit.preview.stereo import render_stereo

        sections = render_stereo(path, out, pairs=pairs, seed=seed, progress=progress)
    elif kind is Kind.VIN_STORE:
        from dataset_devkit.preview.vin import render_vin_store

        sections = render_vin_store(path, out, rows=rows, seed=seed, progress=progress)
    elif kind is Kind.RELEASE:
        from dataset_devkit.preview.release import render_release

        return render_release(path, out)
    elif kind is Kind.RESTORED:
        from dataset_devkit.kinds import detect_content
        from dataset_devkit.preview.release import render_restore_state, render_restored

        # A restored dataset is drawn as that dataset (its frames, its blocks), after the
        # restore state; any other restored tree shows its files.
        inner = detect_content(path)
        if inner is None:
            return render_restored(path, out)
        state = render_restore_state(path)
        inner_kind = Kind(inner.kind.value)
        return [state, *_render(inner_kind, path, out, scenes, pairs, rows, seed, progress)]
    else:
        sections = []
    if (path / "content_manifest.json").is_file():
        from dataset_devkit.preview.manifest import render_manifest

        sections += render_manifest(path, out)
    return sections


def preview(
    path: str | Path,
    out: str | Path,
    *,
    scenes: int = 3,
    pairs: int = 4,
    rows: int = 256,
    seed: int = 0,
    progress: OnProgress | None = None,
) -> Path:
    """Draw the tree at *path* into the absent or empty directory *out*; return ``index.html``.

    ``scenes`` (nuScenes), ``pairs`` (stereo) and ``rows`` (VIN rows sampled for histograms,
    and nuScenes key-frame rows per scene grid) bound the work on large trees; the subset is
    drawn with the fixed ``seed``, so the same tree gives the same page, byte for byte.
    *progress* hears one update per item drawn (nuScenes logs and scenes, stereo pairs,
    VIN rows read), with the stage's total.
    """
    source, target = Path(path), Path(out)
    for name, value in (("scenes", scenes), ("pairs", pairs), ("rows", rows)):
        _count(name, value)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be an int >= 0, found {seed!r}", key="seed")
    if target.is_symlink() or (target.exists() and (not target.is_dir() or any(target.iterdir()))):
        raise DestinationExistsError(
            f"{target}: preview output must be absent or an empty directory"
        )
    kind, source = detect(source)
    require_extras("preview", ["preview"])  # matplotlib and Pillow, before anything is made
    with creating_in(target.parent, target):  # a folder the user may not write is named
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        sections = _render(kind, source, staging, scenes, pairs, rows, seed, progress)
        write_index(staging, f"{kind.value} preview: {source.name}", sections)
        staging.chmod(0o755)  # mkdtemp makes it private; a page is for sharing
        if target.is_dir():
            target.rmdir()  # empty, checked above
        staging.replace(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target / "index.html"
