"""Every demo tree's Croissant document: mlcroissant validates it and loads its records."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import mlcroissant as mlc
import pytest
from etils import epath

from dataset_devkit.croissant import CONFORMS_TO, CroissantOptions, croissant_document
from dataset_devkit.integrity import read_manifest, scan_tree
from tests.croissant.conftest import DEMO_TREES

MLCROISSANT = Path(sys.executable).with_name("mlcroissant")


def _dataset(document: dict[str, Any], tree: Path) -> mlc.Dataset:
    """mlcroissant's loader on a document kept outside the (read-only) tree it describes."""
    context = mlc.Context(folder=epath.Path(tree))
    return mlc.Dataset.from_metadata(mlc.Metadata.from_json(ctx=context, json_=document))


def _records(document: dict[str, Any], tree: Path, record_set: str) -> list[dict[str, Any]]:
    return list(_dataset(document, tree).records(record_set))


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


@pytest.mark.parametrize("kind", sorted(DEMO_TREES))
def test_mlcroissant_validate_accepts_the_document_of_every_demo_tree(
    kind: str, demo_trees: dict[str, Path], tmp_path: Path
) -> None:
    options = CroissantOptions(
        license="https://creativecommons.org/licenses/by/4.0/",
        url="https://example.org/datasets/demo",
        creators=("Example Lab",),
        date_published="2026-11-30",
        version="1.0.0",
        cite_as="@misc{demo, title={Demo}}",
    )
    described = croissant_document(demo_trees[kind], options)
    assert described.missing == ()
    path = tmp_path / "croissant.json"
    path.write_bytes(described.to_bytes())
    done = subprocess.run(
        [str(MLCROISSANT), "validate", "--jsonld", str(path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "error(s)" not in done.stderr and "warning(s)" not in done.stderr, done.stderr
    document = json.loads(path.read_bytes())
    assert document["conformsTo"] == CONFORMS_TO


@pytest.mark.parametrize("kind", sorted(DEMO_TREES))
def test_every_file_object_carries_the_size_and_sha256_the_tree_records(
    kind: str, demo_trees: dict[str, Path]
) -> None:
    tree = demo_trees[kind]
    document = croissant_document(tree).document
    objects = [n for n in document["distribution"] if n["@type"] == "cr:FileObject"]
    assert objects
    if kind == "release":
        sums: dict[str, str] = {}
        for line in (tree / "SHA256SUMS").read_text().splitlines():
            digest, name = line.split("  ", 1)
            sums[name] = digest
        expected = {p: (d, (tree / p).stat().st_size) for p, d in sums.items()}
    else:
        # hashed afresh from the files, the content manifest too: not copied from records
        expected = {path: (sha, size) for path, (size, sha) in scan_tree(tree).files.items()}
    for node in objects:
        sha, size = expected[node["@id"]]
        assert (node["sha256"], node["contentSize"]) == (sha, f"{size} B"), node["@id"]
        assert node["contentUrl"] == node["@id"]


def test_the_vin_store_records_load_with_mlcroissant(demo_trees: dict[str, Path]) -> None:
    tree = demo_trees["vin-store"]
    document = croissant_document(tree).document
    index = [json.loads(line) for line in (tree / "sample_index.jsonl").read_text().splitlines()]
    samples = _records(document, tree, "samples")
    assert [{k.split("/", 1)[1]: _text(v) for k, v in r.items()} for r in samples] == index
    shards = _records(document, tree, "shards")
    manifest = json.loads((tree / "manifest.json").read_bytes())
    assert [_text(r["shards/relative_dir"]) for r in shards] == [
        s["relative_dir"] for s in manifest["shards"]
    ]
    assert [int(r["shards/num_rows"]) for r in shards] == [
        s["num_rows"] for s in manifest["shards"]
    ]


def test_the_vin_store_block_families_give_each_blocks_dtype_and_row_shape(
    demo_trees: dict[str, Path],
) -> None:
    tree = demo_trees["vin-store"]
    document = croissant_document(tree).document
    blocks = json.loads((tree / "manifest.json").read_bytes())["shards"][0]["blocks"]
    sets = {rs["@id"]: rs for rs in document["recordSet"]}
    assert {"core", "trajectory", "candidate_pcs"} <= set(sets)
    fields = {f["name"]: f for name in ("core", "trajectory") for f in sets[name]["field"]}
    for name, block in blocks.items():
        if block["kind"] != "zarr_array":
            continue
        dtype = {"float32": "cr:Float32", "int64": "cr:Int64"}[block["dtype"]]
        assert fields[name]["dataType"] == dtype
        assert fields[name]["arrayShape"] == ",".join(str(n) for n in block["shape"][1:])
    assert len(_records(document, tree, "core")) == len(
        (tree / "sample_index.jsonl").read_text().splitlines()
    )


def test_the_stereo_index_cameras_and_depth_load_with_mlcroissant(
    demo_trees: dict[str, Path],
) -> None:
    tree = demo_trees["stereo-dataset"]
    document = croissant_document(tree).document
    index = [json.loads(line) for line in (tree / "genvr_i2s.jsonl").read_text().splitlines()]
    pairs = _records(document, tree, "pairs")
    assert [_text(r["pairs/id"]) for r in pairs] == [row["id"] for row in index]
    assert [_text(r["pairs/left_video"]) for r in pairs] == [row["left_video"] for row in index]
    assert [int(r["pairs/num_frames"]) for r in pairs] == [row["num_frames"] for row in index]
    assert len(_records(document, tree, "pairs_with_depth")) == len(index)
    cameras = _records(document, tree, "cameras")
    assert len(cameras) == 2 * len(index)
    for record in cameras:
        pair, eye = _text(record["cameras/pair_id"]), _text(record["cameras/eye"])
        camera = json.loads((tree / pair / "cameras" / f"{eye}.json").read_bytes())
        assert record["cameras/K"] == camera["K"]
        assert int(record["cameras/width"]) == camera["width"]
    depth = _records(document, tree, "depth")
    assert sorted(_text(r["depth/pair_id"]) for r in depth) == sorted(r["id"] for r in index)
    assert all(int(r["depth/scale"]) == 1000 for r in depth)


def test_the_nuscenes_tables_and_images_load_with_mlcroissant(
    demo_trees: dict[str, Path],
) -> None:
    tree = demo_trees["nuscenes-dataroot"]
    document = croissant_document(tree).document
    sets = [rs["@id"] for rs in document["recordSet"]]
    assert len([s for s in sets if s not in ("images", "files")]) == 13
    tables = tree / "v1.0-trainval"
    for table in ("scene", "sample_data", "ego_pose", "calibrated_sensor", "category"):
        rows = json.loads((tables / f"{table}.json").read_bytes())
        records = _records(document, tree, table)
        assert [_text(r[f"{table}/token"]) for r in records] == [row["token"] for row in rows]
    poses = _records(document, tree, "ego_pose")
    first = json.loads((tables / "ego_pose.json").read_bytes())[0]
    assert poses[0]["ego_pose/translation"] == first["translation"]
    images = _records(document, tree, "images")
    filenames = {row["filename"] for row in json.loads((tables / "sample_data.json").read_bytes())}
    assert {_text(r["images/filename"]) for r in images} == filenames
    assert images[0]["images/image"].size[0] > 0  # decoded by Pillow


def test_the_release_files_and_packages_load_with_mlcroissant(
    demo_trees: dict[str, Path],
) -> None:
    tree = demo_trees["release"]
    document = croissant_document(tree).document
    rows = [json.loads(line) for line in (tree / "files.jsonl").read_text().splitlines()]
    files = _records(document, tree, "files")
    assert [_text(r["files/path"]) for r in files] == [row["path"] for row in rows]
    manifest = json.loads((tree / "manifest.json").read_bytes())
    packages = _records(document, tree, "packages")
    assert [_text(r["packages/sha256"]) for r in packages] == [
        p["sha256"] for p in manifest["packages"]
    ]
    restored = [n for n in document["distribution"] if n["@id"].startswith("restored-")]
    assert sorted(n["@id"] for n in restored) == ["restored-base", "restored-depth"]
    assert document["identifier"] == f"sha256:{manifest['snapshot']['root_sha256']}"


def test_the_content_manifest_lists_every_file_as_records(demo_trees: dict[str, Path]) -> None:
    tree = demo_trees["content-manifest-tree"]
    document = croissant_document(tree).document
    manifest = read_manifest(tree)
    files = _records(document, tree, "files")
    assert [(_text(r["files/path"]), _text(r["files/sha256"])) for r in files] == [
        (e.path, e.sha256) for e in manifest.files
    ]
    assert document["identifier"] == f"sha256:{manifest.root_sha256}"


def test_mlcroissant_refuses_a_file_whose_bytes_differ_from_the_recorded_sha256(
    demo_trees: dict[str, Path], tmp_path: Path
) -> None:
    copy = tmp_path / "store"
    shutil.copytree(demo_trees["vin-store"], copy)
    document = croissant_document(copy).document
    index = copy / "sample_index.jsonl"
    index.chmod(0o600)
    index.write_bytes(index.read_bytes().replace(b"scene-000", b"scene-999", 1))
    with pytest.raises(mlc.GenerationError) as raised:
        _records(document, copy, "samples")
    chain: list[BaseException] = []
    error: BaseException | None = raised.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert any("is not identical with the reference" in str(e) for e in chain), chain


def test_a_copy_with_the_document_at_its_root_loads_by_the_file_alone(
    demo_trees: dict[str, Path], tmp_path: Path
) -> None:
    copy = tmp_path / "GenVR-duo-20261023"
    shutil.copytree(demo_trees["stereo-dataset"], copy)
    for path in [copy, *copy.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)
    (copy / "croissant.json").write_bytes(croissant_document(copy).to_bytes())
    pairs = list(mlc.Dataset(jsonld=str(copy / "croissant.json")).records("pairs"))
    assert len(pairs) == len((copy / "genvr_i2s.jsonl").read_text().splitlines())
