"""``preview`` on every kind the demo writes and on nuScenes dataroots of growing size.

Each preview runs in a fresh process (so imports are not shared and the peak RSS is its
own) and reports wall time, the PNGs it drew, the items its progress counted (nuScenes logs
and scenes, stereo pairs, VIN rows) per second, the RSS after imports and the peak RSS. The
dataroots of ``--sizes`` scenes are drawn with the same sampling flags, so a flat peak RSS
across sizes shows the preview's memory follows the flags, not the tree; what grows is the
SDK's in-memory tables (every nuScenes loader holds them).

Usage::

    PYTHONPATH=src:. python benchmarks/preview.py --sizes 10,50 --samples 20 --cameras 6
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CAMERAS = ("CAM_FRONT", "CAM_FRONT_LEFT", "CAM_FRONT_RIGHT", "CAM_BACK", "CAM_BACK_LEFT")

#: Demo trees drawn, relative to the demo output.
DEMO_TREES = (
    "integrity/published",
    "nuscenes/staging-mcap",
    "release/GenVR-duo-demo-packages",
    "release/data/GenVR-duo-demo",
    "vin_store/vin-offline-store",
    "stereo/GenVR-duo-20261023",
)


def _peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM: reset by exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(tree: Path, out: Path, scenes: int, rows: int) -> dict[str, Any]:
    """One preview in this fresh process, imports loaded before the clock starts."""
    import matplotlib.figure  # noqa: F401

    from dataset_devkit.integrity.progress import ProgressUpdate
    from dataset_devkit.nuscenes import Dataset  # noqa: F401
    from dataset_devkit.preview import preview
    from dataset_devkit.stereo import StereoDataset  # noqa: F401
    from dataset_devkit.vin_store import VinOfflineStoreReader  # noqa: F401

    base = _peak_rss_mb()
    seen: list[ProgressUpdate] = []
    start = time.perf_counter()
    page = preview(tree, out, scenes=scenes, rows=rows, progress=seen.append)
    wall = time.perf_counter() - start
    return {
        "wall_s": wall,
        "pngs": len(list(page.parent.glob("*.png"))),
        "stages": {u.stage: sum(v.items for v in seen if v.stage == u.stage) for u in seen},
        "import_rss_mb": base,
        "peak_rss_mb": _peak_rss_mb(),
    }


def run(tree: Path, work: Path, scenes: int, rows: int) -> dict[str, Any]:
    out = work / "pages" / f"p{len(list((work / 'pages').glob('*'))):03d}"
    args = [sys.executable, __file__, "--child", str(tree), str(out), str(scenes), str(rows)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"preview of {tree} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def fleet(parent: Path, scenes: int, samples: int, cameras: int, width: int, height: int) -> Path:
    from tests.nuscenes.dataroot_fixture import publish_fixture

    final, _ = publish_fixture(
        parent,
        audit=True,
        scenes=scenes,
        samples=samples,
        cameras=("CAM_BACK_RIGHT", *CAMERAS)[:cameras],
        width=width,
        height=height,
    )
    return final


def _row(name: str, r: dict[str, Any]) -> str:
    stages: dict[str, int] = r["stages"]
    items = ", ".join(f"{n} {stage}" for stage, n in stages.items()) or "-"
    most = max(stages.values(), default=0)  # the stage with the most items (scenes, rows)
    return (
        f"| {name} | {r['wall_s']:.2f} | {r['pngs']} | {r['pngs'] / r['wall_s']:.1f} "
        f"| {items} | {most / r['wall_s']:.1f} | {r['import_rss_mb']:.0f} | {r['peak_rss_mb']:.0f} "
        f"| {r['peak_rss_mb'] - r['import_rss_mb']:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,50", help="scene counts of the dataroots")
    parser.add_argument("--samples", type=int, default=20, help="key frames per scene")
    parser.add_argument("--cameras", type=int, default=6, help="cameras per sample (<= 6)")
    parser.add_argument("--width", type=int, default=1600)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--scenes", type=int, default=3, help="preview --scenes")
    parser.add_argument("--rows", type=int, default=256, help="preview --rows")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        tree, out, scenes, rows = args.child
        print(json.dumps(child(Path(tree), Path(out), int(scenes), int(rows))))
        return

    from dataset_devkit.demo import run_demo

    work = Path(tempfile.mkdtemp(prefix="bench-preview-"))
    try:
        (work / "pages").mkdir()
        t = time.perf_counter()
        steps = ("integrity", "nuscenes", "release", "vin_store", "stereo")
        for _ in run_demo(work / "demo", steps):
            pass
        print(f"demo trees built in {time.perf_counter() - t:.1f} s")
        print(
            "| tree | wall s | PNGs | PNGs/s | progress items | items/s (largest stage) "
            "| RSS after imports MB | peak RSS MB | preview's own MB |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for rel in DEMO_TREES:
            print(_row(rel, run(work / "demo" / rel, work, args.scenes, args.rows)), flush=True)
        for size in (int(s) for s in args.sizes.split(",")):
            t = time.perf_counter()
            root = fleet(
                work / f"fleet-{size}", size, args.samples, args.cameras, args.width, args.height
            )
            files = sum(1 for p in root.rglob("*") if p.is_file())
            built = time.perf_counter() - t
            name = (
                f"nuScenes {size} scenes x {args.samples} samples x {args.cameras} cameras "
                f"({files} files, built {built:.0f} s)"
            )
            print(_row(name, run(root, work, args.scenes, args.rows)), flush=True)
    finally:
        for path in work.rglob("*"):  # published trees are read-only
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
