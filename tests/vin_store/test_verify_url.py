"""``verify_store(URL)``: the same verdict in object storage as on disk, without the chunks."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dataset_devkit.integrity import CONTENT_MANIFEST_NAME, write_manifest
from dataset_devkit.vin_store import verify_store
from dataset_devkit.vin_store._verify_url import URL_VERIFY_NOTE
from tests.integrity.helpers import make_writable
from tests.upload import upload_tree

Damage = Callable[[Path], None]


def _extra_shard(root: Path) -> None:
    (root / "shards" / "shard-999999").mkdir()
    (root / "shards" / "shard-999999" / "x.bin").write_bytes(b"x")


def _extra_root_entry(root: Path) -> None:
    (root / "notes.txt").write_text("hello")


def _extra_shard_file(root: Path) -> None:
    (root / "shards" / "shard-000001" / "stray.bin").write_bytes(b"?")


def _missing_zarr_json(root: Path) -> None:
    (root / "shards" / "shard-000001" / "vin" / "lengths" / "zarr.json").unlink()


def _zarr_metadata(root: Path) -> None:
    path = root / "shards" / "shard-000000" / "vin" / "lengths" / "zarr.json"
    meta = json.loads(path.read_text())
    meta["shape"] = [5, 1]
    path.write_text(json.dumps(meta))


def _offsets(root: Path) -> None:
    path = root / "shards" / "shard-000001" / "oracle.candidate_pcs.offsets.npy"
    values = np.load(path)
    values[-1] += 3
    path.unlink()
    np.save(path, values)


def _chunk_index(root: Path) -> None:
    path = root / "shards" / "shard-000002" / "vin" / "points_world" / "c" / "0" / "0" / "0"
    data = bytearray(path.read_bytes())
    data[-12] ^= 0x01  # the last row's byte count in the shard index
    path.write_bytes(bytes(data))


def _chunk_truncated(root: Path) -> None:
    path = root / "shards" / "shard-000000" / "vin" / "t_world_rig" / "c" / "0" / "0"
    path.write_bytes(path.read_bytes()[:-4])


def _split(root: Path) -> None:
    path = root / "splits" / "val.npy"
    path.unlink()
    np.save(path, np.array([1], dtype="<i8"))


DAMAGES: dict[str, Damage] = {
    "extra shard": _extra_shard,
    "extra root entry": _extra_root_entry,
    "extra shard file": _extra_shard_file,
    "missing Zarr metadata": _missing_zarr_json,
    "Zarr metadata": _zarr_metadata,
    "record offsets": _offsets,
    "chunk index": _chunk_index,
    "chunk size": _chunk_truncated,
    "split": _split,
}


def _republished(store: Path, out: Path, damage: Damage) -> Path:
    """A copy of *store* with *damage*, its content manifest made anew to match: the damage
    is in what was published, so only the format checks can find it."""
    shutil.copytree(store, out)
    make_writable(out)
    damage(out)
    (out / CONTENT_MANIFEST_NAME).unlink()
    write_manifest(out)
    return out


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_a_url_store_has_the_issues_its_local_copy_has(
    name: str, store: Path, s3_bucket: str, tmp_path: Path
) -> None:
    damaged = _republished(store, tmp_path / "damaged", DAMAGES[name])
    local = verify_store(damaged)
    assert local.issues, name  # the damage is one the format checks see
    url = f"s3://{s3_bucket}/{name.replace(' ', '-')}"
    upload_tree(damaged, url)
    remote = verify_store(url, cache_dir=tmp_path / "cache")
    assert remote.issues == tuple(sorted(i.replace(str(damaged), url) for i in local.issues))
    assert remote.root_sha256 == local.root_sha256 and remote.notes == (URL_VERIFY_NOTE,)


def test_a_sound_url_store_verifies_without_downloading_its_chunks(
    store: Path, s3_bucket: str, tmp_path: Path
) -> None:
    url = f"s3://{s3_bucket}/sound"
    upload_tree(store, url)
    cache = tmp_path / "cache"
    report = verify_store(url, cache_dir=cache)
    assert report.ok and report.store_dir == url
    cached = {
        p.relative_to(next(cache.glob("*/tree"))).as_posix() for p in cache.glob("*/tree/**/*")
    }
    assert not [rel for rel in cached if "/c/" in rel]
    assert "manifest.json" in cached and "sample_index.jsonl" in cached


def test_a_changed_object_is_a_content_issue_and_its_format_is_not_rechecked(
    store: Path, s3_bucket: str, tmp_path: Path
) -> None:
    url = f"s3://{s3_bucket}/changed"
    upload_tree(store, url)
    import obstore

    from dataset_devkit.objectstore import open_location

    rel = "shards/shard-000001/oracle.candidate_pcs.offsets.npy"
    obstore.put(open_location(url).store, rel, b"not an npy file")
    report = verify_store(url, cache_dir=tmp_path / "cache")
    assert [i for i in report.issues if rel in i] == [
        next(i for i in report.issues if i.startswith(f"{rel}: changed: "))
    ]
