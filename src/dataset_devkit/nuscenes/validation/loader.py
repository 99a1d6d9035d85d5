"""The official-loader check: the dataroot must load in nuscenes-devkit 1.2.0 itself.

Our own validator is stricter than the official loader, but only the loader proves the
tables are consumable by the tool users actually run. The check instantiates ``NuScenes``,
queries the first selected scene, its first sample and camera, and opens the resolved image.
nuscenes-devkit is heavy (OpenCV, matplotlib, scikit-learn, ``numpy<2``), so it is the
``nuscenes`` extra and imported only here; a missing extra is an error, never a skip.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_devkit.errors import FormatError, MissingDependencyError

__all__ = ["OfficialLoaderCheck", "check_official_loader", "import_official_loader"]


@dataclass(frozen=True, slots=True)
class OfficialLoaderCheck:
    """What the official loader resolved: deterministic facts recorded as evidence."""

    loader: str
    scene_token: str
    sample_token: str
    channel: str
    sample_data_token: str
    filename: str
    width: int
    height: int

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON values (for ``validation.json``)."""
        return {
            "loader": self.loader,
            "scene_token": self.scene_token,
            "sample_token": self.sample_token,
            "channel": self.channel,
            "sample_data_token": self.sample_data_token,
            "filename": self.filename,
            "width": self.width,
            "height": self.height,
        }


def import_official_loader() -> Any:
    """Return the ``nuscenes.nuscenes.NuScenes`` class or raise MissingDependencyError."""
    try:
        from nuscenes.nuscenes import NuScenes
    except ImportError as exc:
        raise MissingDependencyError(
            "nuscenes",
            extra="nuscenes",
            purpose=f"Checking the dataroot with the official nuScenes loader ({exc})",
        ) from exc
    return NuScenes


def check_official_loader(dataroot: Path, version: str, scene_token: str) -> OfficialLoaderCheck:
    """Load *dataroot* with ``NuScenes`` and resolve one scene, sample, camera and image.

    Raises
    ------
    MissingDependencyError
        The ``nuscenes`` extra is not installed.
    FormatError
        The official loader rejected the dataroot or could not resolve the image.
    """
    nuscenes_cls = import_official_loader()
    from PIL import Image

    nusc: Any = None
    try:
        # The loader prints even when quiet in some paths; the library never prints.
        with contextlib.redirect_stdout(io.StringIO()):
            nusc = nuscenes_cls(version=version, dataroot=str(dataroot), verbose=False)
            scene = nusc.get("scene", scene_token)
            sample = nusc.get("sample", scene["first_sample_token"])
            if not sample["data"]:
                raise FormatError("the first sample has no camera data", path=dataroot)
            channel = sorted(sample["data"])[0]
            sd = nusc.get("sample_data", sample["data"][channel])
            path = nusc.get_sample_data_path(sd["token"])
            with Image.open(path) as img:
                img.load()
                width, height = img.size
    except FormatError:
        raise
    except Exception as exc:  # the official loader raises anything from AssertionError to KeyError
        raise FormatError(
            f"the official nuScenes loader failed: {type(exc).__name__}: {exc}", path=dataroot
        ) from exc
    finally:
        # ``NuScenes`` holds itself in a cycle (``nusc.explorer.nusc``): without a collection
        # now, every table it loaded stays alive through the rest of the build (the second
        # validation and the hashing), adding its size to the build's peak memory.
        nusc = None
        gc.collect()
    if (width, height) != (sd["width"], sd["height"]):
        raise FormatError(
            f"the official loader opened {sd['filename']} at {width}x{height}, the table says "
            f"{sd['width']}x{sd['height']}",
            path=dataroot,
        )
    return OfficialLoaderCheck(
        loader=f"nuscenes-devkit {importlib.metadata.version('nuscenes-devkit')}",
        scene_token=scene["token"],
        sample_token=sample["token"],
        channel=channel,
        sample_data_token=sd["token"],
        filename=sd["filename"],
        width=width,
        height=height,
    )
