"""``PackOptions(workers=N)``: packages written by worker processes, the same release.

Real worker processes (the fork server of the integrity core's worker pool) write whole
packages; these tests compare every byte of the result with the one-process pack, make a
file vanish after the plan so a worker meets it, kill the workers under a pack, and kill a
``release pack --workers 2`` at random moments and re-run it.
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import msgspec
import pytest

from dataset_devkit.errors import ConfigError
from dataset_devkit.integrity.progress import ProgressUpdate
from dataset_devkit.release import FamilyRules, PackOptions, pack_release
from dataset_devkit.release.errors import (
    PackWorkerError,
    ReleaseVerificationError,
    UnsafeTreeError,
)
from dataset_devkit.release.package_workers import (
    SMALL_FILES_MEAN,
    check_package,
    package_pool,
    workers_help,
    write_package,
    write_packages_in_workers,
)
from dataset_devkit.release.planner import PlannedPackage, plan_packages
from dataset_devkit.release.scan import SourceFile, scan_tree
from tests.release.helpers import SAMPLE, make_tree
from tests.scale_tree import run_limited

#: Small files in many folders (the shape workers are for), a depth family, some large files.
TREE = {
    **SAMPLE,
    **{f"scenes/s{n // 40:03d}/cams/meta{n:04d}.json": b'{"n": %d}\n' % n for n in range(2400)},
    **{f"scenes/s{n:03d}/depth-zstd-5-mm/0.0.0": os.urandom(500 + n) for n in range(12)},
    **{f"videos/v{n}.mp4": os.urandom((1 << 20) + 17 * n) for n in range(3)},
}


def _digests(release: Path) -> dict[str, str]:
    return {
        path.relative_to(release).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(release.rglob("*"))
        if path.is_file()
    }


def _planned(tmp_path: Path) -> tuple[Path, Path, list[PlannedPackage]]:
    """The tree, an empty staging directory with its family folders, and the plans."""
    tree = make_tree(tmp_path / "ds", TREE)
    files = scan_tree(tree, "ds")
    families = FamilyRules().assign(f.path for f in files)
    planned = plan_packages(files, families, root_name="ds", limit=1_200_000)
    plans = [plan for _, packages in sorted(planned.items()) for plan in packages]
    staging = tmp_path / "staging"
    for family in planned:
        (staging / family).mkdir(parents=True)
    return tree, staging, plans


def _write_all(
    pool: ProcessPoolExecutor,
    tree: Path,
    staging: Path,
    plans: list[PlannedPackage],
    on_package: Callable[[PlannedPackage], None] = lambda plan: None,
) -> list[str]:
    """Every plan written and read back on *pool*, nothing else run alongside; returns the
    read-backs' problems."""
    _, checks = write_packages_in_workers(
        pool, tree, staging, "ds", plans, True, alongside=lambda: None, on_package=on_package
    )
    return checks.problems()


def _flip_byte(package: Path, offset: int) -> None:
    with package.open("r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)
        fh.seek(offset)
        fh.write(bytes([byte[0] ^ 1]))


@pytest.mark.parametrize("deliver", [None, ("base",)], ids=["every-family", "depth-pending"])
@pytest.mark.parametrize("read_back", [True, False], ids=["read-back", "no-read-back"])
def test_workers_write_the_very_release_one_process_writes(
    tmp_path: Path, deliver: tuple[str, ...] | None, read_back: bool
) -> None:
    tree = make_tree(tmp_path / "ds", TREE)
    releases = {}
    for workers in (1, 2, 3):
        out = tmp_path / f"release-{workers}"
        options = PackOptions(
            package_limit=1_200_000,
            deliver=deliver,
            read_back=read_back,
            restore_test="sample",
            workers=workers,
        )
        result = pack_release(tree, out, options)
        assert len(result.manifest.packages) > 3  # the workers had packages to share
        releases[workers] = _digests(out)
    assert releases[1] == releases[2] == releases[3]
    assert any(name.endswith(".tar") for name in releases[1])


def test_workers_take_trees_of_small_files_and_leave_large_files_to_this_process(
    tmp_path: Path,
) -> None:
    _, _, plans = _planned(tmp_path)
    assert workers_help(plans)  # the tree the other tests pack on workers
    assert not workers_help(plans[:1])  # one package: nothing to share
    large = [
        PlannedPackage(
            name=f"base/base-{n:04d}.tar",
            family="base",
            files=tuple(SourceFile(f"v{n}-{k}.mp4", SMALL_FILES_MEAN) for k in range(3)),
            size=0,
        )
        for n in range(4)
    ]
    assert not workers_help(large)


def test_a_file_that_vanished_after_the_plan_is_named_by_the_worker_that_met_it(
    tmp_path: Path,
) -> None:
    tree, staging, plans = _planned(tmp_path)
    # a package after two others, with many small files: read in one of the workers' loops
    target = max(range(2, len(plans)), key=lambda i: len(plans[i].files))
    assert len(plans[target].files) > 50
    gone = plans[target].files[len(plans[target].files) // 2].path
    (tree / gone).unlink()
    done: list[str] = []
    with package_pool(2) as pool:
        assert pool is not None
        with pytest.raises(UnsafeTreeError, match=gone.rsplit("/", 1)[-1]):
            _write_all(pool, tree, staging, plans, on_package=lambda plan: done.append(plan.name))
    assert done == [plan.name for plan in plans[:target]]  # in plan order, up to the failure


def test_a_killed_worker_fails_the_pack_with_a_clear_error_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    tree, staging, plans = _planned(tmp_path)
    with package_pool(2) as pool:
        assert pool is not None
        for pid in {pool.submit(os.getpid).result() for _ in range(8)}:
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        with pytest.raises(PackWorkerError, match=r"worker process .* stopped"):
            _write_all(pool, tree, staging, plans)


def test_a_package_damaged_after_its_worker_wrote_it_is_caught_by_its_read_back(
    tmp_path: Path,
) -> None:
    tree, staging, plans = _planned(tmp_path)
    damaged = plans[1]
    # The check of a package is submitted only after on_package returns: the damage always
    # lands between the writer's hash and the read-back.

    def on_package(plan: PlannedPackage) -> None:
        if plan is damaged:
            _flip_byte(staging / plan.name, 512 + 3)

    with package_pool(2) as pool:
        assert pool is not None
        problems = _write_all(pool, tree, staging, plans, on_package=on_package)
    on_disk = hashlib.sha256((staging / damaged.name).read_bytes()).hexdigest()
    assert len(problems) == 2, problems
    assert problems[0] == (
        f"{damaged.name}: member {damaged.files[0].path!r} SHA-256 differs from files.jsonl"
    )
    read, written = problems[1].split(", written with ")
    assert read == f"{damaged.name}: read back with SHA-256 {on_disk}"
    assert len(written) == 64 and written != on_disk


def test_a_package_check_compares_the_bytes_on_disk_with_the_writers_hash(
    tmp_path: Path,
) -> None:
    tree, staging, plans = _planned(tmp_path)
    plan = plans[0]
    written = write_package(tree, staging, "ds", plan)
    path = staging / plan.name
    assert written.record.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    files = ([f.path for f in plan.files], [f.size for f in plan.files], written.digests)
    assert check_package(staging, "ds", written.record, files, True) == []
    # A writer whose hash went wrong while every member is intact: only the package hash
    # tells.
    wrong = msgspec.structs.replace(written.record, sha256="0" * 64)
    assert check_package(staging, "ds", wrong, files, True) == [
        f"{plan.name}: read back with SHA-256 {written.record.sha256}, written with {'0' * 64}"
    ]
    assert check_package(staging, "ds", wrong, files, False) == []  # a flush only
    # A change the strict parser sees is reported as such (the last byte of the first
    # member's padding).
    first = plan.files[0].size
    assert first % 512
    _flip_byte(path, 512 + first + -first % 512 - 1)
    assert check_package(staging, "ds", written.record, files, True) == [
        f"{plan.name}: non-zero padding after member 'ds/{plan.files[0].path}'"
    ]


def test_a_pack_on_workers_whose_package_is_damaged_before_its_read_back_publishes_nothing(
    tmp_path: Path,
) -> None:
    tree = make_tree(tmp_path / "ds", TREE)
    out = tmp_path / "release"
    damaged: list[Path] = []

    def progress(update: ProgressUpdate) -> None:
        # The first update after the totals: the first package is written, not yet checked.
        if damaged or update.total_items is not None:
            return
        (staging,) = tmp_path.glob(".release.staging-*")
        damaged.append(staging / "base" / "base-0001.tar")
        _flip_byte(damaged[0], 512 + 3)

    with pytest.raises(ReleaseVerificationError, match="read-back of the new packages failed"):
        pack_release(tree, out, PackOptions(package_limit=1_200_000, workers=2), progress=progress)
    assert damaged and sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


@pytest.mark.parametrize("workers", [0, -1, True, 1.5, "2"])
def test_workers_must_be_a_positive_int(workers: object) -> None:
    with pytest.raises(ConfigError, match="workers must be an int of at least 1"):
        PackOptions(workers=workers)  # type: ignore[arg-type]


def test_the_command_packs_the_same_release_on_one_or_two_workers_under_256_descriptors(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    tree = make_tree(tmp_path / "ds", TREE)
    releases = {}
    for workers in ("1", "2"):
        out = tmp_path / f"release-{workers}"
        args = ["release", "pack", str(tree), "--out", str(out), "--package-limit", "1200000"]
        done = run_limited(package_env, [*args, "--workers", workers])
        assert done.returncode == 0, done.stderr
        releases[workers] = _digests(out)
    assert releases["1"] == releases["2"]


def test_the_command_refuses_zero_workers_in_one_line(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    tree = make_tree(tmp_path / "ds", TREE)
    done = run_limited(
        package_env, ["release", "pack", str(tree), "--out", str(tmp_path / "r"), "--workers", "0"]
    )
    assert done.returncode == 2
    assert "--workers" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()
