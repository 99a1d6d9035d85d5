"""A build runs on any executor (local processes, threads, a Dask cluster) and publishes the
same bytes; ``[executor]`` is checked strictly, and a failed task names its recording."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dataset_devkit.errors import ConfigError, FormatError
from dataset_devkit.nuscenes.build.service import build_dataset
from dataset_devkit.nuscenes.cluster import check_cluster
from dataset_devkit.nuscenes.common.executor import ExecutorError, run_tasks
from dataset_devkit.nuscenes.config import load_build_config
from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap
from tests.cli_run import run_devkit

SMALL = SampleDrive(duration_s=6.0, fps=10.0, width=32, height=24)
RIG3 = ("cam_front", "cam_back", "cam_front_left")
LATER = 1_699_970_000_000_000_000
DRIVES = {
    "van-a.mcap": replace(SMALL, cameras=RIG3),
    "van-b.mcap": replace(SMALL, cameras=RIG3, start_ns=LATER),
    "car-c.mcap": replace(SMALL, start_ns=LATER + 10**12),  # a 2-camera rig
}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fleet")
    for name, drive in DRIVES.items():
        write_sample_mcap(folder / name, drive)
    return folder


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A Dask cluster on 127.0.0.1 (in-process workers, reached over TCP like a real one)."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as local:
        yield local


def _toml(fleet: Path, out: str, executor: str = "", paths: tuple[str, ...] = ()) -> Path:
    listed = ", ".join(f'"{fleet / p}"' for p in (paths or tuple(DRIVES)))
    path = fleet / f"{out}.toml"
    path.write_text(
        f'namespace = "fleet"\n[sources]\ntype = "mcap_hf"\npaths = [{listed}]\n'
        "[scenario]\nscene_duration_s = 2.0\nmin_scene_duration_s = 1.0\n"
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        f'[paths]\noutput_dir = "{out}"\n{executor}'
    )
    return path


class CountingThreads(ThreadPoolExecutor):
    """A thread pool that counts the tasks of each kind it ran."""

    def __init__(self) -> None:
        super().__init__(max_workers=3)
        self.ran: dict[str, int] = {}

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.ran[fn.__name__] = self.ran.get(fn.__name__, 0) + 1
        return super().submit(fn, *args, **kwargs)


@pytest.mark.needs("nuscenes")
def test_every_executor_publishes_the_same_root_hash(fleet: Path, cluster: Any) -> None:
    local = build_dataset(load_build_config(_toml(fleet, "local", "[executor]\nworkers = 2\n")))
    inline = build_dataset(load_build_config(_toml(fleet, "inline", "[executor]\nworkers = 1\n")))
    with CountingThreads() as threads:
        threaded = build_dataset(load_build_config(_toml(fleet, "threads")), executor=threads)
    dask_table = f'[executor]\nscheduler = "{cluster.scheduler_address}"\n'
    on_dask = build_dataset(load_build_config(_toml(fleet, "dask", dask_table)))

    assert {inline.root_sha256, threaded.root_sha256, on_dask.root_sha256} == {local.root_sha256}
    assert (local.scenes, local.images) == (on_dask.scenes, on_dask.images)
    assert local.scenes == 9 and local.channels == ("CAM_BACK", "CAM_FRONT", "CAM_FRONT_LEFT")
    # Each recording is one ingest task and one frame task; the copies go in batches.
    assert threads.ran["ingest_recording"] == 3
    assert threads.ran["store_recording_frames"] == 3
    assert threads.ran["copy_batch"] >= 1
    # ... and on the cluster, the scheduler ran the same kinds of tasks.
    assert {"ingest_recording", "store_recording_frames", "copy_batch"} <= set(
        cluster.scheduler.task_prefixes
    )


@pytest.mark.parametrize(
    ("table", "key", "expected"),
    [
        ("workers = 0", "executor.workers", "within [1, 1024], found 0"),
        ("workers = true", "executor.workers", "Expected `int | null`, got `bool`"),
        ('workers = "2"', "executor.workers", "Expected `int | null`, got `str`"),
        ('scheduler = "localhost"', "executor.scheduler", "like 'tcp://host:8786'"),
        ("scheduler = 8786", "executor.scheduler", "Expected `str | null`, got `int`"),
        ('scheduler = "tcp://h:1"\nworkers = 2', "executor.workers", "not both"),
        ('scheduler = "tcp://h:1"\nconnect_timeout_s = 0', "executor.connect_timeout_s", "0"),
        ("connect_timeout_s = 5", "executor.connect_timeout_s", "a Dask scheduler only"),
        ("threads = 2", "executor.threads", "unknown key; expected one of: connect_timeout_s"),
    ],
)
def test_a_bad_executor_table_is_one_line_naming_its_key(
    fleet: Path, table: str, key: str, expected: str
) -> None:
    path = _toml(fleet, "never", f"[executor]\n{table}\n")
    with pytest.raises(ConfigError) as caught:
        load_build_config(path)
    assert caught.value.key == key
    message = str(caught.value)
    assert message.startswith(f"{path}: {key}") and expected in message
    assert "\n" not in message


def test_a_cluster_whose_workers_miss_a_path_is_refused_naming_it(
    fleet: Path, cluster: Any, tmp_path: Path
) -> None:
    from distributed import Client

    with Client(cluster) as client:
        check_cluster(client, [fleet / "van-a.mcap"], 5)  # the workers see it
        with pytest.raises(ExecutorError) as caught:
            check_cluster(client, [fleet / "van-a.mcap", tmp_path / "elsewhere"], 5)
    message = str(caught.value)
    assert message.startswith("executor.scheduler: Dask worker tcp://127.0.0.1:")
    assert f"does not see {tmp_path / 'elsewhere'} (1 of 2 paths)" in message


@pytest.mark.needs("nuscenes")
def test_a_scheduler_without_workers_is_one_line(fleet: Path) -> None:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=0,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as empty:
        table = f'[executor]\nscheduler = "{empty.scheduler_address}"\nconnect_timeout_s = 0.5\n'
        with pytest.raises(ExecutorError) as caught:
            build_dataset(load_build_config(_toml(fleet, "idle", table)))
    assert str(caught.value) == (
        f"executor.scheduler: the Dask scheduler at {empty.scheduler_address} has no worker "
        f"after 0.5 s; start workers with: dask worker {empty.scheduler_address}"
    )


@pytest.mark.needs("nuscenes")
def test_an_unreachable_scheduler_is_one_line(fleet: Path, package_env: dict[str, str]) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    table = f'[executor]\nscheduler = "tcp://127.0.0.1:{port}"\nconnect_timeout_s = 1\n'
    done = run_devkit(package_env, "build", str(_toml(fleet, "unreached", table)))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert (
        f"executor.scheduler: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}"
        in (lines[0])
    )
    assert not (fleet / "unreached" / "v1.0-trainval").exists()


class FailingFor(ThreadPoolExecutor):
    """Runs tasks on threads, but a task about *name* dies as a lost worker would."""

    def __init__(self, name: str) -> None:
        super().__init__(max_workers=2)
        self.name = name

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if any(self.name in str(arg) for arg in args):
            future: Future[Any] = Future()
            future.set_exception(RuntimeError("worker lost its connection"))
            return future
        return super().submit(fn, *args, **kwargs)


@pytest.mark.needs("nuscenes")
def test_a_worker_failure_names_the_recording(fleet: Path) -> None:
    config = load_build_config(_toml(fleet, "failing"))
    with FailingFor("van-b.mcap") as pool, pytest.raises(ExecutorError) as caught:
        build_dataset(config, executor=pool)
    assert str(caught.value) == (
        f"{fleet / 'van-b.mcap'}: failed on a worker: RuntimeError: worker lost its connection"
    )
    assert not (fleet / "failing").exists()  # no staging, no evidence, not even the folder


@pytest.mark.needs("nuscenes")
def test_a_damaged_recording_on_the_cluster_is_its_typed_error(fleet: Path, cluster: Any) -> None:
    (fleet / "damaged.mcap").write_bytes(b"not an mcap file at all")
    table = f'[executor]\nscheduler = "{cluster.scheduler_address}"\n'
    config = load_build_config(_toml(fleet, "damaged", table, paths=("van-a.mcap", "damaged.mcap")))
    with pytest.raises(FormatError) as caught:
        build_dataset(config)
    assert str(caught.value).startswith(f"{fleet / 'damaged.mcap'}: not an MCAP file")


@pytest.mark.needs("nuscenes")
def test_decoded_recordings_build_the_same_on_local_processes(tmp_path: Path) -> None:
    """Decoded frames are re-decoded from video in the worker that stores them."""
    from dataset_devkit.nuscenes.samples import write_sample_decoded

    write_sample_decoded(tmp_path / "d1", SMALL, recording_id="d1")
    write_sample_decoded(tmp_path / "d2", replace(SMALL, start_ns=LATER), recording_id="d2")
    roots = []
    for workers in (1, 2):
        path = tmp_path / f"w{workers}.toml"
        path.write_text(
            'namespace = "fleet"\n[sources]\ntype = "decoded_hf"\npaths = ["d1", "d2"]\n'
            "[scenario]\nscene_duration_s = 2.0\nmin_scene_duration_s = 1.0\n"
            '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
            f'[paths]\noutput_dir = "out{workers}"\n[executor]\nworkers = {workers}\n'
        )
        roots.append(build_dataset(load_build_config(path)).root_sha256)
    assert roots[0] == roots[1]


def test_a_failure_waits_for_the_tasks_still_running() -> None:
    """The build removes its half-written output right after: nothing may write there then."""
    finished: list[str] = []
    started = threading.Event()

    def task(name: str) -> str:
        if name == "first":
            started.wait(10)  # fail while the second task is running
            raise FormatError("damaged", path="first")
        started.set()
        time.sleep(0.2)
        finished.append(name)
        return name

    with ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(FormatError, match="first: damaged"):
            run_tasks(pool, task, [("first", ("first",)), ("second", ("second",))])
        assert finished == ["second"]  # before the pool shuts down


def test_alongside_runs_while_the_tasks_run_and_inline_after_them() -> None:
    order: list[str] = []
    gate = threading.Event()

    def task(name: str) -> str:
        assert gate.wait(10), "alongside did not run while the tasks waited for it"
        order.append(name)
        return name

    with ThreadPoolExecutor(max_workers=2) as pool:
        got = run_tasks(pool, task, [("a", ("a",)), ("b", ("b",))], alongside=gate.set)
    assert got == ["a", "b"]
    inline: list[str] = []
    run_tasks(None, inline.append, [("x", ("x",))], alongside=lambda: inline.append("after"))
    assert inline == ["x", "after"]


def test_a_failing_task_is_raised_before_the_failure_of_alongside() -> None:
    def task(name: str) -> str:
        if name == "bad":
            raise FormatError("damaged frame", path="bad")
        return name

    def fail() -> None:
        time.sleep(0.1)  # the failing task is done by now
        raise RuntimeError("tables could not be written")

    with ThreadPoolExecutor(max_workers=2) as pool:
        with pytest.raises(FormatError, match="bad: damaged frame"):
            run_tasks(pool, task, [("ok", ("ok",)), ("bad", ("bad",))], alongside=fail)
        with pytest.raises(RuntimeError, match="tables could not be written"):
            run_tasks(pool, task, [("ok", ("ok",))], alongside=fail)


@pytest.mark.needs("nuscenes")
def test_a_local_build_copies_small_frames_on_its_worker_processes(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.nuscenes.build import export as build_export
    from dataset_devkit.nuscenes.export.dataset import export_dataset as export

    used: list[object] = []

    def recorded(*args: Any, **kwargs: Any) -> Any:
        used.append(kwargs["executor"])
        return export(*args, **kwargs)

    monkeypatch.setattr(build_export, "export_dataset", recorded)
    two = build_dataset(load_build_config(_toml(fleet, "small-2", "[executor]\nworkers = 2\n")))
    one = build_dataset(load_build_config(_toml(fleet, "small-1", "[executor]\nworkers = 1\n")))
    assert used[0] is not None and used[1] is None  # a pool of two processes, then inline
    assert two.root_sha256 == one.root_sha256


def test_small_frames_are_those_under_the_threads_threshold() -> None:
    from dataset_devkit.nuscenes.export.images import SMALL_FRAME_BYTES, small_frames

    def images(*sizes: int) -> list[Any]:
        return [type("Image", (), {"size": size})() for size in sizes]

    assert small_frames(images(1000, 2000, 3000))
    assert not small_frames(images(SMALL_FRAME_BYTES, SMALL_FRAME_BYTES))
    assert not small_frames(images(100, 2 * SMALL_FRAME_BYTES))
