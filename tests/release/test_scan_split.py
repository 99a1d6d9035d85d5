"""The scan with worker processes: the same files and the same problems as in one process.

The split scan lists the top levels itself and walks the subtrees below them on a pool and
in the scanning process; the names check runs per subtree, or over the whole listing when
the listed levels hold a problem or a collision.
Every test compares it with the one-process scan, on trees with the problems a release
refuses placed at the split levels, inside the subtrees and across them.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dataset_devkit.integrity.workers import worker_pool
from dataset_devkit.release import scan
from dataset_devkit.release.errors import UnsafeTreeError
from dataset_devkit.release.scan import SourceFile, scan_tree

Outcome = list[SourceFile] | str


def _outcome(tree: Path, pool: Executor | None) -> Outcome:
    """The listing, or the whole error message."""
    try:
        return scan_tree(tree, "ds", pool=pool)
    except UnsafeTreeError as exc:
        return str(exc)


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


@pytest.fixture(scope="module")
def processes() -> Iterator[Executor]:
    with worker_pool(2, preload=["dataset_devkit.release.scan"]) as pool:
        yield pool


@pytest.fixture
def threads() -> Iterator[Executor]:
    with ThreadPoolExecutor(2) as pool:
        yield pool


#: Many folders of small files, two levels down: the shape the split is for.
WIDE = {f"scenes/s{n // 9:03d}/cam{n % 3}/f{n:05d}.json": b"%d" % n for n in range(900)}

#: What a release refuses, placed at the levels the scan lists itself (the root and
#: ``scenes``), at the subtrees' own names, and deep inside them.
PROBLEMS: dict[str, dict[str, bytes]] = {
    "subtree roots collide": {"scenes/S004/cam0/x.json": b"1"},
    "colliding subtrees' entries collide": {"scenes/S004/Cam1/z.json": b"1"},
    "a file collides with a subtree": {"scenes/S004": b"file", "Scenes": b""},
    "collision inside a subtree": {"scenes/s002/Cam1/f.json": b"1"},
    "reserved subtree name": {"scenes/CON/a.json": b"1", "scenes/con.d/b.json": b"2"},
    "reserved leaf only": {"scenes/s001/cam0/NUL.txt": b"1"},
    "trailing dot at a split level": {"scenes./a.json": b"1"},
    "bad leaves hide a collision": {"scenes/T/AUX": b"1", "scenes/t/ok.json": b"2"},
    "empty folder collides with nothing": {"scenes/E/x": b"1"},
    "control character in a deep name": {"scenes/s003/cam2/a\tb.json": b"1"},
}


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
@pytest.mark.parametrize("split", [2, 16], ids=["2-tasks", "16-tasks"])
def test_the_split_scan_refuses_with_the_messages_of_the_one_process_scan(
    tmp_path: Path,
    threads: Executor,
    monkeypatch: pytest.MonkeyPatch,
    problem: str,
    split: int,
) -> None:
    monkeypatch.setattr(scan, "SCAN_TASKS", split)
    tree = _write(tmp_path / "ds", {**WIDE, **PROBLEMS[problem]})
    (tree / "scenes" / "e").mkdir()  # an empty folder: never a collision
    serial = _outcome(tree, None)
    assert _outcome(tree, threads) == serial
    if problem not in ("empty folder collides with nothing",):
        assert isinstance(serial, str), "each case is a tree the scan refuses"


def test_links_special_files_and_undecodable_names_are_reported_the_same(
    tmp_path: Path, threads: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "SCAN_TASKS", 4)
    tree = _write(tmp_path / "ds", WIDE)
    (tree / "scenes" / "s001" / "cam0" / "link").symlink_to("f00009.json")
    (tree / "scenes" / "s007").rename(tree / "scenes" / "real")
    (tree / "scenes" / "s007").symlink_to("real", target_is_directory=True)
    (tree / "top-link").symlink_to("scenes")
    os.mkfifo(tree / "scenes" / "s002" / "pipe")
    bad = os.fsencode(tree / "scenes" / "s003") + b"/caf\xe9.json"
    with open(bad, "wb") as handle:
        handle.write(b"x")
    serial = _outcome(tree, None)
    assert isinstance(serial, str)
    for expected in ("top-link: is a symbolic link", "s007: is a symbolic link", "pipe: is a"):
        assert expected in serial
    assert "caf\\xe9.json: name is not valid UTF-8" in serial
    assert _outcome(tree, threads) == serial


def test_worker_processes_list_a_wide_tree_as_one_process_does(
    tmp_path: Path, processes: Executor
) -> None:
    files = {**WIDE, "README.md": b"top", "scenes/index.json": b"[]", "z/last.bin": b"z"}
    tree = _write(tmp_path / "ds", files)
    listed = scan_tree(tree, "ds", pool=processes)
    assert listed == scan_tree(tree, "ds")
    assert [f.path for f in listed] == sorted(files)
    assert {f.path: f.size for f in listed} == {p: len(d) for p, d in files.items()}


def test_a_broken_pool_leaves_the_whole_walk_to_the_scanning_process(tmp_path: Path) -> None:
    tree = _write(tmp_path / "ds", WIDE)
    with worker_pool(1, preload=["dataset_devkit.release.scan"]) as pool:
        pid = pool.submit(os.getpid).result()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(Exception, match="terminated abruptly"):
            pool.submit(os.getpid).result()  # the pool knows it is broken
        assert scan_tree(tree, "ds", pool=pool) == scan_tree(tree, "ds")


def test_runs_are_shared_between_the_pool_and_the_scanning_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool that takes only the first runs: the scanning process walks the rest, last
    first, and the listing is whole and in order."""
    tree = _write(tmp_path / "ds", WIDE)
    in_pool: list[list[str]] = []
    walk: Callable[[str, list[str]], scan.Walked] = scan.walk_subtrees

    def recorded(root: str, prefixes: list[str]) -> scan.Walked:
        in_pool.append(prefixes)
        return walk(root, prefixes)

    monkeypatch.setattr(scan, "walk_subtrees", recorded)
    with ThreadPoolExecutor(1) as one_thread:
        listed = scan_tree(tree, "ds", pool=one_thread)
    assert listed == scan_tree(tree, "ds")
    subtrees = {f"scenes/s{n:03d}" for n in range(100)}
    walked_here = subtrees - {prefix for run in in_pool for prefix in run}
    assert in_pool and walked_here, "both the pool and the scanning process walked runs"


NAMES = st.sampled_from(["a", "A", "b", "con", "x.", "é", "e\u0301", "d-1", "D-1"])


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(paths=st.lists(st.lists(NAMES, min_size=1, max_size=4), min_size=1, max_size=25))
@example(paths=[["a", "a"], ["a", "d-1"], ["A", "D-1"]])  # folders that merge
def test_random_trees_give_the_same_listing_or_the_same_refusal(
    tmp_path_factory: pytest.TempPathFactory,
    threads: Executor,
    paths: list[list[str]],
) -> None:
    tree = tmp_path_factory.mktemp("tree") / "ds"
    tree.mkdir()
    for parts in paths:
        path = tree.joinpath(*parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"/".join(p.encode() for p in parts))
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            continue  # a file where a folder is wanted, or the reverse: that tree is not made
    scan_tasks = scan.SCAN_TASKS
    try:
        for split in (1, 2, 3):
            setattr(scan, "SCAN_TASKS", split)  # noqa: B010 (a Final, changed for this test)
            assert _outcome(tree, threads) == _outcome(tree, None)
    finally:
        setattr(scan, "SCAN_TASKS", scan_tasks)  # noqa: B010


def test_a_clean_tree_is_checked_run_by_run_not_as_a_whole(
    tmp_path: Path, threads: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The names check of the whole listing is the fallback for trees refused anyway."""
    from dataset_devkit.release import unpack

    tree = _write(tmp_path / "ds", WIDE)
    checked: list[int] = []
    check = unpack.check_tree_names

    def counted(paths: Iterable[str]) -> list[str]:
        listed = list(paths)
        checked.append(len(listed))
        return check(listed)

    monkeypatch.setattr(unpack, "check_tree_names", counted)
    assert len(scan_tree(tree, "ds", pool=threads)) == len(WIDE)
    assert max(checked) < len(WIDE) / 4  # runs of at most seven folders of nine files
    checked.clear()
    scan_tree(tree, "ds")
    assert checked == [len(WIDE)]
