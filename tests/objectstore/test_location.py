"""URLs name object stores; endpoint and credentials come from the AWS environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import obstore
import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.objectstore import is_url, open_location


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s3://bucket/prefix", True),
        ("S3://bucket", True),
        ("gs://bucket/x", True),
        ("file:///tmp/x", True),
        ("s3:/bucket", False),
        ("relative/path", False),
        ("/abs/path", False),
        ("http://example.com/x", False),
    ],
)
def test_is_url(text: str, expected: bool) -> None:
    assert is_url(text) is expected
    assert is_url(Path("s3:") / "bucket") is False


def test_open_location_scopes_keys_to_the_prefix(s3_bucket: str) -> None:
    location = open_location(f"s3://{s3_bucket}/datasets/one/")
    assert location.url == f"s3://{s3_bucket}/datasets/one"
    obstore.put(location.store, "content_manifest.json", b"{}")
    root = open_location(f"s3://{s3_bucket}")
    keys = [meta["path"] for batch in obstore.list(root.store) for meta in batch]
    assert keys == ["datasets/one/content_manifest.json"]
    assert location.describe("a/b") == f"s3://{s3_bucket}/datasets/one/a/b"


@pytest.mark.parametrize("url", ["s3://", "s3:///prefix", "ftp://host/x", "plain/path"])
def test_bad_urls_are_one_line_config_errors(url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_location(url)
    assert url in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("url", ["s3://", "gs:///data", "az://"])
def test_a_url_without_a_bucket_shows_the_expected_form(url: str) -> None:
    scheme = url.split(":")[0]
    with pytest.raises(ConfigError, match=f"expected {scheme}://BUCKET/PREFIX, found no bucket"):
        open_location(url)


@pytest.mark.parametrize("given", ["s3://bucket/data", Path("s3://bucket/data"), "gs://b/x"])
def test_local_only_readers_refuse_urls_in_one_line(given: Any, tmp_path: Path) -> None:
    from dataset_devkit.nuscenes.sdk import Dataset
    from dataset_devkit.stereo import StereoDataset

    for make, what in ((StereoDataset, "the stereo reader"), (Dataset, "the nuScenes SDK")):
        with pytest.raises(ConfigError) as info:
            make(given)
        assert "\n" not in str(info.value)
        assert f"{what} reads a local directory, not an object store URL" in str(info.value)
