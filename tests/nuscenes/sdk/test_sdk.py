"""The read-only Dataset SDK: every method, defensive copies and typed lookup errors."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from dataset_devkit.errors import ConfigError, FormatError, NotFoundError, UnsafePathError
from dataset_devkit.nuscenes import spec
from dataset_devkit.nuscenes.sdk.dataset import Dataset
from dataset_devkit.nuscenes.sdk.load import MalformedDataset
from tests.nuscenes.dataroot_fixture import (
    Fixture,
    publish_fixture,
    read_table,
    rewrite_table,
    write_dataroot,
)
from tests.workers import START_METHODS, run_in_worker


@pytest.fixture(scope="module")
def pub(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Fixture]:
    return publish_fixture(tmp_path_factory.mktemp("sdk"))


@pytest.fixture(scope="module")
def ds(pub: tuple[Path, Fixture]) -> Dataset:
    return Dataset(pub[0])


def test_dataset_accepts_str_and_path(pub: tuple[Path, Fixture]) -> None:
    assert Dataset(str(pub[0])).table("scene") == Dataset(pub[0]).table("scene")
    assert Dataset(pub[0]).version == "v1.0-trainval"


def test_table_get_and_field2token_answer_like_the_official_loader(
    ds: Dataset, pub: tuple[Path, Fixture]
) -> None:
    fx = pub[1]
    assert ds.table("sample_data") == fx.tables["sample_data"]
    row = fx.tables["ego_pose"][3]
    assert ds.get("ego_pose", row["token"]) == row
    assert ds.field2token("sensor", "channel", "CAM_BACK") == [
        r["token"] for r in fx.tables["sensor"] if r["channel"] == "CAM_BACK"
    ]
    assert ds.field2token("sensor", "channel", "CAM_NONE") == []


def test_scene_samples_walk_the_chain_in_order(ds: Dataset, pub: tuple[Path, Fixture]) -> None:
    scene = pub[1].tables["scene"][1]
    samples = ds.scene_samples(scene["token"])
    assert samples[0]["token"] == scene["first_sample_token"]
    assert samples[-1]["token"] == scene["last_sample_token"]
    assert len(samples) == scene["nbr_samples"]
    assert all(a["next"] == b["token"] for a, b in itertools.pairwise(samples))


def test_camera_returns_exactly_the_key_frame_of_a_channel(ds: Dataset) -> None:
    scene = ds.table("scene")[0]
    sample = scene["first_sample_token"]
    row = ds.camera(sample, "CAM_FRONT")
    assert row["sample_token"] == sample and row["is_key_frame"]
    assert row["filename"] == f"samples/CAM_FRONT/{row['token']}.jpg"
    assert ds.ego_pose(row["token"])["token"] == row["ego_pose_token"]
    assert ds.image_path(row["token"]).is_file()


def _front_camera(ds: Dataset) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    row = ds.camera(ds.table("scene")[0]["first_sample_token"], "CAM_FRONT")
    with Image.open(ds.image_path(row["token"])) as image:
        pixels = image.tobytes()
    return row, ds.ego_pose(row["token"]), pixels


@pytest.mark.parametrize("method", START_METHODS)
def test_a_dataset_used_in_the_parent_answers_the_same_in_every_kind_of_worker(
    tmp_path: Path, method: str
) -> None:
    ds = Dataset(write_dataroot(tmp_path / "root").root)  # a staging dataroot: no devkit needed
    expected = _front_camera(ds)
    assert run_in_worker(method, _front_camera, ds) == expected
    assert _front_camera(ds) == expected


def test_bad_lookups_raise_typed_errors(ds: Dataset) -> None:
    sample = ds.table("sample")[0]["token"]
    with pytest.raises(NotFoundError, match="unknown table"):
        ds.table("lidarseg")
    with pytest.raises(NotFoundError, match="has no token"):
        ds.get("scene", "0" * 32)
    with pytest.raises(ConfigError):
        ds.get("scene", 5)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match="has no field"):
        ds.field2token("scene", "nope", 1)
    with pytest.raises(ConfigError, match="malformed camera channel"):
        ds.camera(sample, "front")
    with pytest.raises(NotFoundError, match="has no CAM_LEFT image"):
        ds.camera(sample, "CAM_LEFT")
    with pytest.raises(NotFoundError):
        ds.camera("0" * 32, "CAM_FRONT")
    with pytest.raises(NotFoundError):
        ds.ego_pose("0" * 32)
    with pytest.raises(ConfigError, match="unknown split"):
        ds.scenes_in_split("val")
    with pytest.raises(NotFoundError):
        ds.recording_validity("nope")
    with pytest.raises(NotFoundError):
        ds.annotation_record("nope")
    with pytest.raises(NotFoundError):
        ds.annotation_window("nope")
    with pytest.raises(NotFoundError):
        ds.annotation_match("nope")
    for method in (ds.validity, ds.tags, ds.split, ds.annotations, ds.scene_annotation_evidence):
        with pytest.raises(NotFoundError):
            method("0" * 32)


def test_every_returned_value_is_a_defensive_copy(ds: Dataset) -> None:
    scene = ds.table("scene")[0]["token"]
    mutated: list[Any] = [
        ds.table("scene"),
        ds.get("scene", scene),
        ds.scene_samples(scene),
        ds.validity(scene),
        ds.tags(scene),
        ds.annotations(scene),
        ds.annotation_records(),
        ds.annotation_windows(),
        ds.annotation_matches(),
        ds.annotation_scene_references(),
        ds.scene_annotation_evidence(scene),
        ds.recordings(),
        ds.source_metadata(),
        ds.validation_report(),
        ds.pipeline_audit(),
        ds.channel_mapping(),
    ]
    before = [repr(v) for v in mutated]
    for value in mutated:
        if isinstance(value, list):
            if value and isinstance(value[0], dict):
                value[0].clear()
            value.append("junk")
        else:
            value.clear()
    again = [
        ds.table("scene"),
        ds.get("scene", scene),
        ds.scene_samples(scene),
        ds.validity(scene),
        ds.tags(scene),
        ds.annotations(scene),
        ds.annotation_records(),
        ds.annotation_windows(),
        ds.annotation_matches(),
        ds.annotation_scene_references(),
        ds.scene_annotation_evidence(scene),
        ds.recordings(),
        ds.source_metadata(),
        ds.validation_report(),
        ds.pipeline_audit(),
        ds.channel_mapping(),
    ]
    assert [repr(v) for v in again] == before


def _every_answer(ds: Dataset) -> list[Any]:
    """One answer of every public method, for every official table and every camera."""
    scene = ds.table("scene")[0]["token"]
    sample = ds.table("sample")[0]["token"]
    answers: list[Any] = [ds.table(name) for name in spec.TABLE_NAMES]
    answers += [
        ds.get(name, rows[0]["token"]) for name in spec.TABLE_NAMES if (rows := ds.table(name))
    ]
    cameras = [ds.camera(sample, channel) for channel in ds.channels]
    answers += cameras + [ds.ego_pose(row["token"]) for row in cameras]
    answers += [ds.scene_samples(scene), ds.validity(scene), ds.tags(scene)]
    answers += [ds.annotations(scene), ds.scene_annotation_evidence(scene)]
    answers += [ds.annotation_scene_reference(scene), ds.scenes_in_split("train")]
    answers += [ds.annotation_records(), ds.annotation_windows(), ds.annotation_matches()]
    answers += [ds.annotation_scene_references(), ds.recordings(), ds.channel_mapping()]
    answers += [ds.source_metadata(), ds.validation_report(), ds.pipeline_audit()]
    answers += [ds.gnss(), ds.config(), ds.split_scene_names()]
    answers.append(ds.field2token("sample_data", "sample_token", sample))
    return answers


def _mutate_at_every_depth(value: Any) -> None:
    stack = [value]
    containers: list[Any] = []
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            containers.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            containers.append(item)
            stack.extend(item)
    for container in containers:
        if isinstance(container, dict):
            for key in list(container):
                container[key] = "junk"
        else:
            container[:] = ["junk"]


def test_no_mutation_at_any_depth_reaches_a_later_answer(pub: tuple[Path, Fixture]) -> None:
    ds = Dataset(pub[0])  # its own instance: this test mutates what it is given
    before = repr(_every_answer(ds))
    assert "(" not in before.replace("Path(", "")  # lists, never the stored tuples
    for answer in _every_answer(ds):
        _mutate_at_every_depth(answer)
    assert repr(_every_answer(ds)) == before


def test_camera_lookups_with_unhashable_or_wrong_arguments_are_typed_errors(
    ds: Dataset,
) -> None:
    sample = ds.table("sample")[0]["token"]
    with pytest.raises(ConfigError, match="malformed camera channel"):
        ds.camera(sample, ["CAM_FRONT"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="malformed camera channel"):
        ds.camera("0" * 32, "front")  # the channel is checked first, as it always was
    with pytest.raises(ConfigError, match="token must be a string"):
        ds.camera([sample], "CAM_FRONT")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match="sample has no token"):
        ds.camera("0" * 32, "CAM_FRONT")
    with pytest.raises(
        NotFoundError, match=r"has no CAM_LEFT image; channels: CAM_BACK, CAM_FRONT"
    ):
        ds.camera(sample, "CAM_LEFT")


def test_extension_queries_resolve_scene_evidence(ds: Dataset) -> None:
    first, second = (s["token"] for s in ds.table("scene"))
    assert ds.split(first) == "train" and ds.split(second) == "test"
    assert ds.scenes_in_split("train") == [first]
    assert ds.scenes_in_split("test") == [second]
    assert ds.validity(first)["sample_tokens"] == [s["token"] for s in ds.scene_samples(first)]
    digest = ds.recordings()[0]["source_digest"]
    assert ds.recording_validity(digest)["recording_id"] == "rec-0"
    assert ds.tags(first)["scene_token"] == first
    assert [a["annotation_id"] for a in ds.annotations(first)] == ["lbl-1"]
    assert ds.annotations(second) == []
    evidence = ds.scene_annotation_evidence(first)
    assert evidence["records"][0]["label"] == "rain"
    assert evidence["windows"][0]["window_token"] == evidence["matches"][0]["window_token"]
    match = ds.annotation_matches()[0]
    assert ds.annotation_match(match["match_token"]) == match
    assert ds.annotation_window(match["window_token"])["annotation_id"] == "lbl-1"
    assert ds.annotation_record("lbl-1")["attributes"] == {"intensity": "light"}
    assert ds.annotation_scene_reference(second)["annotation_ids"] == []
    assert len(ds.annotation_scene_references()) == 1
    assert ds.source_metadata()["source_type"] == "decoded_hf"
    assert ds.validation_report()["state"] == "passed"
    assert ds.pipeline_audit()["chronology"][0]["entries"][0]["scene_token"] == first
    assert ds.channel_mapping() == {"cam_back": "CAM_BACK", "cam_front": "CAM_FRONT"}
    assert len(ds.gnss()["rows"]) == len(ds.table("ego_pose"))
    assert ds.config()["config"]["namespace"] == "fixture"


def test_an_unsafe_or_unsupported_version_is_refused(pub: tuple[Path, Fixture]) -> None:
    with pytest.raises(ConfigError, match="unsafe"):
        Dataset(pub[0], version="../../etc")
    with pytest.raises(ConfigError, match="unsupported"):
        Dataset(pub[0], version="v1.0-mini")


def test_missing_and_duplicate_tokens_are_refused(tmp_path: Path) -> None:
    fx = write_dataroot(tmp_path / "root")
    rows = read_table(fx.root, "sample")
    rewrite_table(fx.root, "sample", [*rows, rows[0]])
    with pytest.raises(MalformedDataset, match="duplicate token") as info:
        Dataset(fx.root)
    assert info.value.issues
    rewrite_table(fx.root, "sample", rows[1:])
    with pytest.raises(MalformedDataset, match="not found in sample"):
        Dataset(fx.root)


def test_unsafe_filenames_are_refused(tmp_path: Path) -> None:
    fx = write_dataroot(tmp_path / "root")
    rows = read_table(fx.root, "sample_data")
    rows[0]["filename"] = "../../etc/passwd"
    rewrite_table(fx.root, "sample_data", rows)
    with pytest.raises(MalformedDataset, match=r"\.filename: expected 'samples/"):
        Dataset(fx.root)


def test_a_symlinked_dataroot_is_refused(tmp_path: Path) -> None:
    fx = write_dataroot(tmp_path / "root")
    (tmp_path / "link").symlink_to(fx.root)
    with pytest.raises(UnsafePathError):
        Dataset(tmp_path / "link")


def test_a_staging_dataroot_reads_with_validation_not_run(tmp_path: Path) -> None:
    fx = write_dataroot(tmp_path / "root")
    assert Dataset(fx.root).validation_report()["state"] == spec.VALIDATION_NOT_RUN


@pytest.mark.parametrize(
    ("table", "field", "value"),
    [
        ("sample", "next", "NOT-A-TOKEN"),
        ("sample_data", "ego_pose_token", "A" * 32),
        ("map", "log_tokens", ["../../etc"]),
    ],
)
def test_a_malformed_reference_is_refused_naming_table_row_and_field(
    tmp_path: Path, table: str, field: str, value: Any
) -> None:
    fx = write_dataroot(tmp_path / "root")
    rows = read_table(fx.root, table)
    rows[0][field] = value
    rewrite_table(fx.root, table, rows)
    with pytest.raises(MalformedDataset) as info:
        Dataset(fx.root)
    bad = value[0] if isinstance(value, list) else value
    assert any(
        f"{spec.VERSION}/{table}.json row {rows[0]['token']}.{field}" in issue and bad in issue
        for issue in info.value.issues
    ), info.value.issues


def test_split_scene_names_have_the_official_create_splits_scenes_shape(ds: Dataset) -> None:
    from nuscenes.utils.splits import create_splits_scenes

    splits = ds.split_scene_names()
    assert list(splits) == ["train", "test"]
    names = {s["token"]: s["name"] for s in ds.table("scene")}
    for split, scene_names in splits.items():
        assert scene_names == [names[t] for t in ds.scenes_in_split(split)]
    assert sorted(splits["train"] + splits["test"]) == sorted(names.values())
    official = set().union(*create_splits_scenes().values())
    assert not official & set(names.values())  # our names never match an official split list
    splits["train"].clear()
    assert ds.split_scene_names()["train"] == [names[t] for t in ds.scenes_in_split("train")]


def _scene_chain(root: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return read_table(root, "scene"), read_table(root, "sample")


@pytest.mark.parametrize("fault", ["cycle", "endpoint", "count", "other_scene"])
def test_a_broken_scene_chain_refuses_the_load_naming_the_table(tmp_path: Path, fault: str) -> None:
    fx = write_dataroot(tmp_path / "root", scenes=2, samples=3)
    scenes, samples = _scene_chain(fx.root)
    first = scenes[0]
    chain = [s for s in samples if s["scene_token"] == first["token"]]
    if fault == "cycle":
        chain[-1]["next"] = chain[0]["token"]
        rewrite_table(fx.root, "sample", samples)
        expected = f"sample chain has a cycle at {chain[0]['token']}"
    elif fault == "endpoint":
        first["last_sample_token"] = chain[1]["token"]
        rewrite_table(fx.root, "scene", scenes)
        expected = f"{first['token']}.last_sample_token: chain ends at {chain[-1]['token']}"
    elif fault == "count":
        first["nbr_samples"] = 7
        rewrite_table(fx.root, "scene", scenes)
        expected = f"{first['token']}.nbr_samples: is 7, the chain has 3 samples"
    else:
        chain[1]["scene_token"] = scenes[1]["token"]
        rewrite_table(fx.root, "sample", samples)
        expected = f"sample.json row {chain[1]['token']}.scene_token"
    with pytest.raises(MalformedDataset) as info:
        Dataset(fx.root)
    assert any(expected in issue for issue in info.value.issues), info.value.issues


def test_scene_samples_rechecks_the_cached_chain(tmp_path: Path) -> None:
    # Defence in depth: the public API cannot corrupt the cache (every value is a copy),
    # so corrupt the private index directly and expect a FormatError naming the file.
    fx = write_dataroot(tmp_path / "root", scenes=1, samples=3)
    ds = Dataset(fx.root)
    scene = ds.table("scene")[0]
    rows = ds._ix.tokens["sample"]
    order = [s["token"] for s in ds.scene_samples(scene["token"])]
    rows[order[-1]]["next"] = order[0]
    with pytest.raises(FormatError, match=r"sample\.json at row .*: .* has a cycle at"):
        ds.scene_samples(scene["token"])
    rows[order[-1]]["next"] = ""
    rows[order[1]]["next"] = ""
    with pytest.raises(FormatError, match=r"scene\.json at row .*: chain of 2 samples"):
        ds.scene_samples(scene["token"])


def test_an_ambiguous_or_missing_camera_key_frame_refuses_the_load(tmp_path: Path) -> None:
    fx = write_dataroot(tmp_path / "root")
    rows = read_table(fx.root, "sample_data")
    twin = {**rows[0], "token": "e" * 32, "filename": rows[0]["filename"].rsplit("/", 1)[0]}
    twin["filename"] += f"/{'e' * 32}.jpg"
    rewrite_table(fx.root, "sample_data", [*rows, twin])
    channel = twin["filename"].split("/")[1]
    with pytest.raises(MalformedDataset) as info:
        Dataset(fx.root)
    assert any(
        f"sample.json row {twin['sample_token']}: expected exactly one {channel} key frame, "
        "found 2" in issue
        for issue in info.value.issues
    ), info.value.issues
    rewrite_table(fx.root, "sample_data", [r for r in rows if r["token"] != rows[0]["token"]])
    with pytest.raises(MalformedDataset, match=f"one {channel} key frame, found 0"):
        Dataset(fx.root)


def test_gnss_rows_must_name_their_own_frame_and_a_recording(tmp_path: Path) -> None:
    from tests.nuscenes.dataroot_fixture import read_extension, rewrite_extension

    fx = write_dataroot(tmp_path / "root")
    doc = read_extension(fx.root, spec.GNSS_FILE)
    rows = doc["rows"]
    assert len(rows) >= 2
    rows[0]["sample_data_token"], rows[1]["sample_data_token"] = (
        rows[1]["sample_data_token"],
        rows[0]["sample_data_token"],
    )  # both frames exist: only the pose pairing can tell
    rewrite_extension(fx.root, spec.GNSS_FILE, doc)
    with pytest.raises(MalformedDataset, match=r"rows\[0\]\.sample_data_token: .* is not the"):
        Dataset(fx.root)
    rows[0]["sample_data_token"], rows[1]["sample_data_token"] = (
        rows[1]["sample_data_token"],
        rows[0]["sample_data_token"],
    )
    rows[1]["source_digest"] = "mcap:sha256:" + "0" * 64
    rewrite_extension(fx.root, spec.GNSS_FILE, doc)
    with pytest.raises(MalformedDataset, match=r"rows\[1\]\.source_digest: .* is not a recording"):
        Dataset(fx.root)


@pytest.mark.parametrize("dataroot", [None, 123, "", b"/tmp"])
def test_a_dataroot_that_is_not_a_non_empty_str_or_path_is_a_config_error(
    dataroot: Any,
) -> None:
    with pytest.raises(ConfigError, match="dataroot must be a non-empty str or Path"):
        Dataset(dataroot)


def test_the_dataset_repr_says_root_version_and_scenes(ds: Dataset) -> None:
    scenes = len(ds.table("scene"))
    assert scenes > 0
    assert repr(ds) == f"Dataset({str(ds.dataroot)!r}, version={ds.version!r}, scenes={scenes})"
