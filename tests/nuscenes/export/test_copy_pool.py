"""copy_all: the work done alongside the copies, and which failure is raised."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from dataset_devkit.errors import IntegrityError
from dataset_devkit.nuscenes.export import images


class _Source:
    def pin(self, folders: Any) -> None:
        list(folders)


def _jobs(n: int) -> list[Any]:
    return [(SimpleNamespace(path=f"frames/{i}.jpg"), None, f"{i}.jpg") for i in range(n)]


def test_alongside_runs_once_in_the_calling_thread_while_the_pool_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(images, "copy_verified", lambda source, image, dest, name: 10)
    caller = threading.get_ident()
    ran: list[int] = []
    for workers in (1, 2):
        total = images.copy_all(
            _Source(),  # type: ignore[arg-type]
            _jobs(100),
            workers=workers,
            alongside=lambda: ran.append(threading.get_ident()),
        )
        assert total == 1000
    assert ran == [caller, caller]


def test_a_failing_copy_is_raised_before_a_failure_alongside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failed = threading.Event()

    def copy(source: Any, image: Any, dest: Any, name: str) -> int:
        if name == "0.jpg":
            failed.set()
            raise IntegrityError("frame 0 is bad")
        return 1

    def alongside() -> None:
        assert failed.wait(30)  # the copy has failed by then
        raise OSError("disk full")

    monkeypatch.setattr(images, "copy_verified", copy)
    with pytest.raises(IntegrityError, match="frame 0 is bad"):
        images.copy_all(_Source(), _jobs(64), workers=2, alongside=alongside)  # type: ignore[arg-type]


def test_a_failure_alongside_is_raised_when_every_copy_succeeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def alongside() -> None:
        raise OSError("disk full")

    monkeypatch.setattr(images, "copy_verified", lambda source, image, dest, name: 1)
    with pytest.raises(OSError, match="disk full"):
        images.copy_all(_Source(), _jobs(64), workers=2, alongside=alongside)  # type: ignore[arg-type]


def _sized(sizes: list[int]) -> list[Any]:
    return [SimpleNamespace(path=f"frames/{i}.jpg", size=s) for i, s in enumerate(sizes)]


def test_default_threads_are_one_for_small_frames_and_one_per_core_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 6)
    small = images.SMALL_FRAME_BYTES
    assert images.default_copy_threads(_sized([small - 1] * 10)) == 1
    # the mean decides: one large frame among small ones does not make threads pay
    assert images.default_copy_threads(_sized([small * 3, 100, 100, 100])) == 1
    assert images.default_copy_threads(_sized([small] * 10)) == 6
    assert images.default_copy_threads(_sized([small * 8, 100])) == 6
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    assert images.default_copy_threads(_sized([small * 2])) == images.MAX_DEFAULT_WORKERS


@pytest.mark.parametrize(("size", "threaded"), [(1000, False), (64 << 10, True)])
def test_copy_all_without_workers_copies_small_frames_in_the_calling_thread(
    monkeypatch: pytest.MonkeyPatch, size: int, threaded: bool
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    where: set[int] = set()

    def copy(source: Any, image: Any, dest: Any, name: str) -> int:
        where.add(threading.get_ident())
        return int(image.size)

    monkeypatch.setattr(images, "copy_verified", copy)
    jobs = [(image, None, f"{i}.jpg") for i, image in enumerate(_sized([size] * 64))]
    assert images.copy_all(_Source(), jobs) == 64 * size  # type: ignore[arg-type]
    assert (threading.get_ident() not in where) is threaded
