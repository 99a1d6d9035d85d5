"""Building the layout: files, byte-identical videos, indexes, manifests, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataset_devkit.errors import DestinationExistsError
from dataset_devkit.integrity import hash_file, read_manifest, verify_tree
from dataset_devkit.stereo import build_stereo_dataset, make_sample_source
from dataset_devkit.stereo.spec import (
    DepthRef,
    IndexRow,
    LoaderRequirements,
    ReleaseManifest,
    Resolution,
    encode_jsonl,
)

PAIR = "ue5-pro/map0001/scene0001/cams00"


def _rows(path: Path) -> list[IndexRow]:
    return [msgspec.json.decode(line, type=IndexRow) for line in path.read_bytes().splitlines()]


def test_the_root_holds_every_documented_file(built):
    names = sorted(p.name for p in built.root.iterdir())
    assert names == [
        "content_manifest.json",
        "genvr_i2s.jsonl",
        "genvr_i2s_nodepth.jsonl",
        "genvr_i2s_with_depth.jsonl",
        "loader_requirements.json",
        "loader_requirements_with_depth.json",
        "reader_validation.json",
        "release_manifest.json",
        "source_dataset_release_manifest.json",
        "source_mapping.jsonl",
        "ue5-pro",
    ]
    pair = built.root / PAIR
    for rel in [
        "prompt.txt",
        "meta.json",
        "videos/left.mp4",
        "videos/right.mp4",
        "cameras/left.json",
        "cameras/right.json",
        "depth-zstd-5-mm/meta.json",
        "depth-zstd-5-mm/group.zarr/.zgroup",
        "depth-zstd-5-mm/group.zarr/.zattrs",
        "depth-zstd-5-mm/group.zarr/left/.zattrs",
        "depth-zstd-5-mm/group.zarr/right/3.0.0",
    ]:
        assert (pair / rel).is_file(), rel
    assert verify_tree(built.root).ok


def test_videos_are_copied_byte_for_byte(built, source):
    assert hash_file(built.root / PAIR / "videos/left.mp4") == hash_file(
        source / "renders/shot000/left.mp4"
    )


def test_indexes_list_the_same_samples_and_differ_only_by_depth(built):
    plain = _rows(built.root / "genvr_i2s.jsonl")
    assert (built.root / "genvr_i2s_nodepth.jsonl").read_bytes() == (
        built.root / "genvr_i2s.jsonl"
    ).read_bytes()
    deep = _rows(built.root / "genvr_i2s_with_depth.jsonl")
    assert [r.id for r in plain] == [r.id for r in deep] and len(plain) == 3
    for a, b in zip(plain, deep, strict=True):
        assert a.depth is None and b.depth is not None
        assert msgspec.structs.replace(b, depth=None) == a
    row = plain[0]
    assert (row.path, row.fps, row.num_frames, row.duration) == (
        f"{PAIR}/videos/left.mp4",
        24.0,
        13,
        13 / 24,
    )
    assert (row.resolution.width, row.resolution.height) == (64, 48)
    assert row.cap_kind == "procedural_scene_metadata"


def test_requirements_keep_cameras_and_raw_video_mode_in_both_modes(built):
    for name, use_depth in [
        ("loader_requirements.json", False),
        ("loader_requirements_with_depth.json", True),
    ]:
        req = msgspec.json.decode((built.root / name).read_bytes(), type=LoaderRequirements)
        assert (
            req.use_depth,
            req.use_camera,
            req.online_vae_encoding,
            req.online_text_encoding,
            req.is_v2v,
        ) == (use_depth, True, True, True, False)


def test_release_manifest_lists_every_file_with_its_family(built):
    manifest = msgspec.json.decode(
        (built.root / "release_manifest.json").read_bytes(), type=ReleaseManifest
    )
    content = read_manifest(built.root).by_path()
    listed = {entry.path: entry for entry in manifest.files}
    assert set(listed) == set(content) - {"release_manifest.json"}
    for path, entry in listed.items():
        assert (entry.size, entry.sha256) == (content[path].size, content[path].sha256)
        assert entry.family == ("depth" if "/depth-zstd-5-mm/" in path else "base")
    assert manifest.families["depth"]["files"] == 3 * (3 + 2 * (2 + 4))


def test_source_mapping_and_source_manifest_use_relative_paths(built, source):
    mapping = [json.loads(line) for line in (built.root / "source_mapping.jsonl").open()]
    assert mapping[0]["files"][f"{PAIR}/videos/right.mp4"] == "renders/shot000/right.mp4"
    manifest = json.loads((built.root / "source_dataset_release_manifest.json").read_text())
    paths = [f["path"] for f in manifest["files"]]
    assert "export.json" in paths and not any(p.startswith("/") for p in paths)
    by_path = {f["path"]: f for f in manifest["files"]}
    for rel in ("renders/shot001/left.mp4", "renders/shot002/right_depth.npy", "export.json"):
        assert (by_path[rel]["size"], by_path[rel]["sha256"]) == hash_file(source / rel)
    assert str(source) not in (built.root / "source_dataset_release_manifest.json").read_text()


def test_depth_meta_states_units_scale_and_camera_z(built):
    meta = json.loads((built.root / PAIR / "depth-zstd-5-mm/meta.json").read_text())
    assert (meta["units"], meta["scale"], meta["invalid_value"], meta["kind"]) == (
        "millimetre",
        1000,
        0,
        "camera_z_depth",
    )
    assert meta["not_disparity"] is True
    assert meta["invalid_pixels"] == {"left": 4 * 13, "right": 4 * 13}


def test_the_prompt_is_procedural_and_never_called_a_human_caption(built):
    meta = json.loads((built.root / PAIR / "meta.json").read_text())
    assert meta["human_caption"] is False and meta["prompt_kind"] == "procedural_scene_metadata"
    assert (built.root / PAIR / "prompt.txt").read_text().startswith("A rendered harbour")


def test_building_twice_gives_the_same_root_hash(built, source, tmp_path):
    again = build_stereo_dataset(source, tmp_path / "GenVR-duo-20261023")
    assert again.root_sha256 == built.root_sha256


def test_an_existing_destination_is_never_replaced(built, source):
    before = read_manifest(built.root).root_sha256
    with pytest.raises(DestinationExistsError):
        build_stereo_dataset(source, built.root)
    assert read_manifest(built.root).root_sha256 == before


def test_a_source_without_depth_builds_only_the_default_index(tmp_path):
    source = make_sample_source(tmp_path / "src", pairs=1, frames=5, depth=False)
    result = build_stereo_dataset(source, tmp_path / "out")
    assert not result.has_depth
    assert not (result.root / "genvr_i2s_with_depth.jsonl").exists()
    assert not list(result.root.rglob("depth-*"))


def test_the_built_depth_reads_with_plain_zarr_and_numcodecs(built, source):
    import numpy as np
    import zarr
    from numcodecs import Blosc

    from dataset_devkit.stereo.depth import encode_depth_mm

    group = zarr.open_group(str(built.root / PAIR / "depth-zstd-5-mm/group.zarr"), mode="r")
    assert group.metadata.zarr_format == 2
    raw = np.load(source / "renders/shot000/right_depth.npy")
    expected, _ = encode_depth_mm(raw, 1000.0, where="", first=0)
    array = group["right"]
    assert isinstance(array, zarr.Array)
    assert array.dtype == np.dtype("<u4") and array.chunks == (4, 48, 64)
    assert np.array_equal(np.asarray(array[:]), expected)
    last = Blosc().decode(
        (built.root / PAIR / "depth-zstd-5-mm/group.zarr/right/3.0.0").read_bytes()
    )
    chunk = np.frombuffer(last, dtype="<u4").reshape(4, 48, 64)
    assert np.array_equal(chunk[0], expected[12]) and not chunk[1:].any()  # fill beyond frame 12


def test_a_spawn_process_pool_encodes_depth_to_the_same_bytes(built, source, tmp_path):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        result = build_stereo_dataset(source, tmp_path / "GenVR-duo-20261023", executor=pool)
    assert result.root_sha256 == built.root_sha256


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789/_-.", min_size=1, max_size=40)


@given(
    names,
    st.text(max_size=200),
    st.floats(min_value=0.001, max_value=1000, allow_nan=False),
    st.integers(1, 10_000),
    st.booleans(),
)
def test_index_rows_round_trip_through_their_jsonl_bytes(name, cap, fps, frames, deep):
    depth = DepthRef(
        zarr=f"{name}/g.zarr",
        meta=f"{name}/m.json",
        arrays={"left": "left", "right": "right"},
        scale=1000,
        invalid_value=0,
        family="depth",
    )
    row = IndexRow(
        id=name,
        path=f"{name}/l.mp4",
        cap=cap,
        cap_kind="procedural_scene_metadata",
        fps=fps,
        num_frames=frames,
        duration=frames / fps,
        resolution=Resolution(width=64, height=48),
        left_video="l",
        right_video="r",
        left_camera="lc",
        right_camera="rc",
        prompt_path="p",
        meta_path="m",
        depth=depth if deep else None,
    )
    data = encode_jsonl([row])
    assert data.count(b"\n") == 1
    assert msgspec.json.decode(data, type=IndexRow) == row
    assert encode_jsonl([msgspec.json.decode(data, type=IndexRow)]) == data


def test_pair_meta_holds_ids_timing_source_mapping_and_depth_as_an_attachment(built):
    meta = json.loads((built.root / PAIR / "meta.json").read_text())
    assert (meta["id"], meta["map"], meta["scene"], meta["cams"]) == (
        PAIR,
        "map0001",
        "scene0001",
        "cams00",
    )
    assert (meta["num_frames"], meta["fps"], meta["duration"]) == (13, 24.0, 13 / 24)
    assert meta["resolution"] == {"width": 64, "height": 48}
    assert meta["videos"] == {
        "left": f"{PAIR}/videos/left.mp4",
        "right": f"{PAIR}/videos/right.mp4",
    }
    assert meta["source"][f"{PAIR}/videos/left.mp4"] == "renders/shot000/left.mp4"
    assert meta["depth"]["zarr"] == f"{PAIR}/depth-zstd-5-mm/group.zarr"
    assert meta["depth"]["family"] == "depth" and "optional attachment" in meta["depth_note"]
    assert (meta["camera_axes"], meta["world_frame"]) == (
        "opencv: x right, y down, z forward",
        "metres, (UE_Y, -UE_Z, UE_X) / 100 from Unreal Engine centimetres",
    )
