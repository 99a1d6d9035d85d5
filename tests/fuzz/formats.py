"""The formats the fuzzer damages: each builds a small valid tree and reads it as a user would.

Readers return a digest of everything they hand a user, so a change that slips through is
visible; validators return their issues (a typed error is also an answer). Trees are tiny:
the fuzzer mutates metadata, never rebuilds.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.fuzz.harness import Format, digest

__all__ = ["FORMATS"]


# ---- content manifest -------------------------------------------------------------------


def _build_content(out: Path) -> Path:
    from dataset_devkit.integrity import write_manifest

    out.mkdir(parents=True)
    (out / "a.txt").write_text("alpha\n")
    (out / "sub").mkdir()
    (out / "sub" / "b.bin").write_bytes(bytes(range(256)))
    (out / "sub" / "c.json").write_text('{"k": [1, 2, 3]}\n')
    (out / "empty").write_bytes(b"")
    write_manifest(out)
    return out


def _read_content(root: Path) -> Any:
    from dataset_devkit.integrity import read_manifest

    manifest = read_manifest(root)
    return digest(manifest.to_bytes(), manifest.root_sha256)


def _validate_content(root: Path) -> Sequence[str]:
    from dataset_devkit.integrity import verify_tree

    return [str(issue) for issue in verify_tree(root).issues]


# ---- VIN offline store ------------------------------------------------------------------


def _build_vin(out: Path) -> Path:
    from dataset_devkit.vin_store import build_vin_offline_store
    from tests.vin_store.conftest import make_samples

    out.mkdir(parents=True)
    with ThreadPoolExecutor(1) as pool:
        build_vin_offline_store(
            make_samples(), out / "store", rows_per_shard=4, val_fraction=0.3, executor=pool
        )
    return out / "store"


def _vin_files(root: Path) -> list[str]:
    names = ["manifest.json", "sample_index.jsonl", "sample_index.npy"]
    names += [f"splits/{s}.npy" for s in ("all", "train", "val")]
    shard = root / "shards" / "shard-000001"
    names += [
        p.relative_to(root).as_posix()
        for p in sorted(shard.rglob("*"))
        if p.name == "zarr.json" or p.suffix in (".npy", ".msgpack")
    ]
    return names


def _read_vin(root: Path) -> Any:
    from dataset_devkit.vin_store import VinOfflineStoreConfig, VinOfflineStoreReader

    reader = VinOfflineStoreReader(root)
    batch = reader.read_positions(range(len(reader)))  # every block of every row
    parts: list[Any] = [reader.sample_indices, *[(name, batch[name]) for name in sorted(batch)]]
    parts += [reader.index_records, reader.read_sample(int(reader.sample_indices[-1]))]
    for split in ("train", "val"):  # what a split reader serves: its sample indices
        parts += [split, VinOfflineStoreReader(VinOfflineStoreConfig(root, split)).sample_indices]
    return digest(*parts)


def _validate_vin(root: Path) -> Sequence[str]:
    from dataset_devkit.vin_store import verify_store

    return verify_store(root).issues


# ---- stereo (GenVR-duo) -----------------------------------------------------------------


def _build_stereo(out: Path) -> Path:
    from dataset_devkit.stereo import build_stereo_dataset, make_sample_source

    out.mkdir(parents=True)
    source = make_sample_source(out / "export", pairs=2, frames=5, width=32, height=24)
    return build_stereo_dataset(source, out / "GenVR-duo-20261023").root


def _stereo_files(root: Path) -> list[str]:
    pair = root / "ue5-pro" / "map0001" / "scene0002" / "cams00"
    if not pair.is_dir():
        pair = sorted(root.glob("ue5-pro/*/*/*"))[-1]
    names = [p.name for p in root.iterdir() if p.suffix in (".json", ".jsonl")]
    names = [n for n in names if n != "content_manifest.json"]
    names += [
        p.relative_to(root).as_posix()
        for p in sorted(pair.rglob("*"))
        if p.is_file() and p.suffix != ".mp4" and not p.name[0].isdigit()
    ]
    return sorted(names)


def _read_stereo(root: Path) -> Any:
    from dataset_devkit.stereo import StereoDataset

    parts: list[Any] = []
    for use_depth in (False, True):  # the default index, then the depth index
        dataset = StereoDataset(root, use_depth=use_depth)
        for sample in range(len(dataset)):
            item = dataset.read(sample, [0])
            parts += [item.id, item.frames, item.prompt, item.fps, item.left, item.right]
            parts += [item.K[e] for e in sorted(item.K)]
            parts += [item.camera_to_world[e] for e in sorted(item.camera_to_world)]
            if item.depth is not None:
                parts += [item.depth[e] for e in sorted(item.depth)]
        dataset.close()
    return digest(*parts)


def _validate_stereo(root: Path) -> Sequence[str]:
    from dataset_devkit.stereo import validate_stereo

    return validate_stereo(root, with_depth=True).issues


# ---- nuScenes dataroot ------------------------------------------------------------------


def _build_nuscenes(out: Path) -> Path:
    from tests.nuscenes.dataroot_fixture import publish_fixture

    final, _ = publish_fixture(out, scenes=2, samples=2, width=8, height=8)
    return final


def _nuscenes_files(root: Path) -> list[str]:
    from dataset_devkit.nuscenes import spec

    tables = [f"{spec.VERSION}/{name}.json" for name in spec.TABLE_NAMES]
    extensions = [
        p.relative_to(root).as_posix()
        for p in sorted((root / spec.EXTENSIONS_DIR).iterdir())
        if p.is_file()
    ]
    return tables + extensions


def _read_nuscenes(root: Path) -> Any:
    from dataset_devkit.nuscenes import Dataset, spec

    dataset = Dataset(root)
    parts: list[Any] = [dataset.table(name) for name in spec.TABLE_NAMES]
    for scene in dataset.table("scene"):
        token = scene["token"]
        parts += [dataset.scene_samples(token), dataset.split(token), dataset.tags(token)]
        parts += [dataset.validity(token), dataset.annotations(token)]
    parts += [dataset.channels, dataset.recordings(), dataset.channel_mapping()]
    parts += [dataset.source_metadata(), dataset.validation_report()]
    parts += [dataset.split_scene_names(), dataset.annotation_records()]
    return digest(*parts)


def _validate_nuscenes(root: Path) -> Sequence[str]:
    from dataset_devkit.nuscenes import validate_dataroot

    return validate_dataroot(root, workers=1).issues


# ---- release -------------------------------------------------------------------------


def _build_release(out: Path) -> Path:
    from tests.release.helpers import SAMPLE, make_tree, pack

    out.mkdir(parents=True)
    files = {k: v for k, v in SAMPLE.items() if not k.endswith(("0.0.0", "1.0.0"))}
    files["data/chunk.bin"] = bytes(range(256)) * 20  # deterministic: seeds reproduce
    tree = make_tree(out / "tree", files)
    return pack(tree, out / "release", restore_test="none")


def _release_files(root: Path) -> list[str]:
    return ["manifest.json", "files.jsonl", "SHA256SUMS"]


def _read_release(root: Path) -> Any:
    import tempfile

    from dataset_devkit.release import restore_release

    with tempfile.TemporaryDirectory(prefix="fuzz-restore-") as tmp:
        restore_release(root, Path(tmp), ["all"], fsync=False)
        restored = sorted(p for p in Path(tmp).rglob("*") if p.is_file())
        return digest(*[(p.relative_to(tmp).as_posix(), p.read_bytes()) for p in restored])


def _validate_release(root: Path) -> Sequence[str]:
    from dataset_devkit.release import verify_release

    verify_release(root, [])  # raises ReleaseVerificationError listing every issue
    return []


FORMATS: dict[str, Format] = {
    fmt.name: fmt
    for fmt in (
        Format(
            "content_manifest",
            _build_content,
            lambda root: ["content_manifest.json"],
            _read_content,
            _validate_content,
        ),
        Format("vin_store", _build_vin, _vin_files, _read_vin, _validate_vin),
        Format("stereo", _build_stereo, _stereo_files, _read_stereo, _validate_stereo),
        Format("nuscenes", _build_nuscenes, _nuscenes_files, _read_nuscenes, _validate_nuscenes),
        Format("release", _build_release, _release_files, _read_release, _validate_release),
    )
}
