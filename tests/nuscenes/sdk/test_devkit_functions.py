"""What nuscenes-devkit's own functions do on a camera-only dataroot the demo publishes.

docs/nuscenes_sdk.md lists which devkit functions work on our dataroots and which cannot
(they need LIDAR_TOP, a map expansion, or an OpenCV window); each claim there is a case
here, so a devkit upgrade that changes one fails a test instead of silently making the page
wrong. The video workaround the page gives (frames from ``render_sample_data``, a video by
PyAV) runs here too.
"""

from __future__ import annotations

import contextlib
import io
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import av
import cv2
import matplotlib
import matplotlib.pyplot as plt
import pytest
from PIL import Image

from tests.optional import need

need("nuscenes")

from nuscenes.map_expansion.map_api import NuScenesMap  # noqa: E402
from nuscenes.nuscenes import NuScenes  # noqa: E402

from dataset_devkit.demo import nuscenes_publish  # noqa: E402


@pytest.fixture(scope="module")
def nusc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NuScenes]:
    matplotlib.use("Agg")  # the devkit draws with pyplot; no display here
    out = tmp_path_factory.mktemp("devkit")
    nuscenes_publish.run(out)
    yield NuScenes(version="v1.0-trainval", dataroot=str(out / "out" / "v1.0-trainval"),
                   verbose=False)  # fmt: skip
    plt.close("all")
    for path in [out, *out.rglob("*")]:
        path.chmod(stat.S_IRWXU)


def _first(nusc: NuScenes) -> tuple[dict[str, Any], dict[str, Any], str]:
    scene = nusc.scene[0]
    sample = nusc.get("sample", scene["first_sample_token"])
    return scene, sample, sample["data"]["CAM_FRONT"]


def _quiet(call: Callable[[], Any]) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        call()
    return printed.getvalue()


def test_listing_and_lookup_functions_work(nusc: NuScenes) -> None:
    scene, sample, cam = _first(nusc)
    assert scene["name"] in _quiet(nusc.list_scenes)
    assert "channel: CAM_FRONT" in _quiet(lambda: nusc.list_sample(sample["token"]))
    _quiet(nusc.list_categories)  # no categories: prints the header only
    _quiet(nusc.list_attributes)
    path, boxes, intrinsic = nusc.get_sample_data(cam)
    assert Path(path).is_file() and boxes == [] and intrinsic.shape == (3, 3)
    assert nusc.field2token("scene", "name", scene["name"]) == [scene["token"]]


@pytest.mark.parametrize("render", ["render_sample_data", "render_sample"])
def test_camera_renders_to_a_file_work(nusc: NuScenes, tmp_path: Path, render: str) -> None:
    _, sample, cam = _first(nusc)
    out = tmp_path / f"{render}.png"
    token = cam if render == "render_sample_data" else sample["token"]
    getattr(nusc, render)(token, out_path=str(out), verbose=False)
    plt.close("all")
    with Image.open(out) as image:
        assert image.width > 100 and image.height > 100


@pytest.mark.parametrize("render", ["render_scene_channel", "render_scene"])
def test_video_renders_open_an_opencv_window_even_with_out_path(
    nusc: NuScenes, tmp_path: Path, render: str
) -> None:
    scene, _, _ = _first(nusc)
    with pytest.raises(cv2.error, match="not implemented"):
        getattr(nusc, render)(scene["token"], out_path=str(tmp_path / "scene.avi"))


def test_point_cloud_and_ego_pose_on_map_renders_need_lidar_top(
    nusc: NuScenes, tmp_path: Path
) -> None:
    _, sample, _ = _first(nusc)
    with pytest.raises(KeyError, match="LIDAR_TOP"):
        nusc.render_pointcloud_in_image(sample["token"], out_path=str(tmp_path / "pc.png"))
    with pytest.raises(KeyError, match="LIDAR_TOP"):
        nusc.render_egoposes_on_map(nusc.log[0]["location"], out_path=str(tmp_path / "e.png"))
    plt.close("all")


def test_the_map_expansion_and_lidarseg_are_absent(nusc: NuScenes) -> None:
    with pytest.raises(FileNotFoundError, match=r"maps/expansion/singapore-onenorth\.json"):
        NuScenesMap(dataroot=nusc.dataroot, map_name="singapore-onenorth")
    with pytest.raises(AssertionError, match="lidarseg not installed"):
        nusc.list_lidarseg_categories()


def test_the_documented_video_workaround_writes_one_frame_per_camera_image(
    nusc: NuScenes, tmp_path: Path
) -> None:
    scene, _, token = _first(nusc)
    frames: list[Path] = []
    while token:  # the block of docs/nuscenes_sdk.md, on this dataroot
        sd = nusc.get("sample_data", token)
        if nusc.get("sample", sd["sample_token"])["scene_token"] != scene["token"]:
            break
        frames.append(tmp_path / f"{len(frames):05d}.png")
        nusc.render_sample_data(token, out_path=str(frames[-1]), verbose=False)
        plt.close("all")
        token = sd["next"]
    video_path = tmp_path / "scene.mp4"
    with av.open(str(video_path), "w") as video:
        stream = video.add_stream("libx264", rate=2)
        with Image.open(frames[0]) as first:
            stream.width, stream.height = first.width // 2 * 2, first.height // 2 * 2
        stream.pix_fmt = "yuv420p"
        for frame in frames:
            with Image.open(frame) as image:
                rgb = image.convert("RGB").crop((0, 0, stream.width, stream.height))
            video.mux(stream.encode(av.VideoFrame.from_image(rgb)))
        video.mux(stream.encode())
    with av.open(str(video_path)) as video:
        decoded = sum(1 for _ in video.decode(video=0))
    assert decoded == len(frames) == scene["nbr_samples"]  # key frames only in the demo
