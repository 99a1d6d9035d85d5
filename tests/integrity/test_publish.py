"""Publication: read-only modes, no replacement ever, crash safety, one winner per name."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dataset_devkit.errors import DestinationExistsError, PublicationError, UnsafePathError
from dataset_devkit.integrity import (
    CONTENT_MANIFEST_NAME,
    PUBLISH_PHASES,
    new_staging_dir,
    publish_tree,
    read_manifest,
    remove_staging,
    remove_stale_staging,
    staged_publication,
    verify_tree,
    write_manifest,
)
from tests.integrity.helpers import SAMPLE, make_tree

NESTED = "meta/content_manifest.json"
WITH_META = {**SAMPLE, "meta/config.json": b"{}\n"}


def _modes(root: Path) -> set[tuple[str, int]]:
    found = {("dir", stat.S_IMODE(root.stat().st_mode))}
    for path in root.rglob("*"):
        kind = "dir" if path.is_dir() else "file"
        found.add((kind, stat.S_IMODE(path.lstat().st_mode)))
    return found


def test_staged_publication_publishes_a_read_only_verified_tree(tmp_path: Path) -> None:
    final = tmp_path / "dataset"
    with staged_publication(final) as staging:
        assert staging.parent == final.parent
        make_tree(staging)
    assert _modes(final) == {("dir", 0o500), ("file", 0o400)}
    report = verify_tree(final)
    assert report.ok
    assert report.file_count == len(SAMPLE)
    assert [p.name for p in tmp_path.iterdir()] == ["dataset"]  # no staging left behind


def test_same_content_published_twice_gives_the_same_root_hash(tmp_path: Path) -> None:
    first = tmp_path / "first"
    second = tmp_path / "second"
    with staged_publication(first) as staging:
        make_tree(staging)
    with staged_publication(second) as staging:
        make_tree(staging, reverse=True)
    assert read_manifest(first).root_sha256 == read_manifest(second).root_sha256
    assert (first / CONTENT_MANIFEST_NAME).read_bytes() == (
        second / CONTENT_MANIFEST_NAME
    ).read_bytes()


@pytest.mark.parametrize("kind", ["dir", "file", "symlink", "dangling-symlink"])
def test_an_existing_final_path_is_refused_and_left_untouched(tmp_path: Path, kind: str) -> None:
    final = tmp_path / "dataset"
    if kind == "dir":
        final.mkdir()
        (final / "keep").write_text("mine")
    elif kind == "file":
        final.write_text("mine")
    elif kind == "symlink":
        (tmp_path / "target").mkdir()
        final.symlink_to(tmp_path / "target")
    else:
        final.symlink_to(tmp_path / "nowhere")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(DestinationExistsError), staged_publication(final) as staging:
        make_tree(staging)
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_a_final_name_that_appears_during_publication_is_never_replaced(tmp_path: Path) -> None:
    final = tmp_path / "dataset"
    staging = new_staging_dir(final)
    make_tree(staging)

    def appear(phase: str) -> None:
        if phase == "rechecked":
            final.mkdir()
            (final / "theirs").write_text("other publisher")

    with pytest.raises(DestinationExistsError):
        publish_tree(staging, final, on_phase=appear)
    assert [p.name for p in final.iterdir()] == ["theirs"]
    remove_staging(staging)
    assert not staging.exists()


def test_a_symlinked_parent_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePathError), staged_publication(tmp_path / "alias" / "dataset"):
        pass
    assert list((tmp_path / "real").iterdir()) == []


def test_a_failing_validator_publishes_nothing_and_cleans_staging(tmp_path: Path) -> None:
    final = tmp_path / "dataset"

    def reject(root: Path) -> None:
        raise PublicationError(f"{root}: validation says no")

    with (
        pytest.raises(PublicationError, match="validation says no"),
        staged_publication(final, validate=reject) as staging,
    ):
        make_tree(staging)
    assert list(tmp_path.iterdir()) == []


def test_a_change_after_the_manifest_is_written_prevents_publication(tmp_path: Path) -> None:
    final = tmp_path / "dataset"
    staging = new_staging_dir(final)
    make_tree(staging)

    def tamper(phase: str) -> None:
        if phase == "sealed":
            (staging / "a.txt").chmod(0o600)
            (staging / "a.txt").write_bytes(b"changed\n")

    with pytest.raises(PublicationError, match=r"a\.txt: changed"):
        publish_tree(staging, final, on_phase=tamper)
    assert not final.exists()


def test_a_change_right_after_the_rename_moves_the_tree_out_of_the_final_name(
    tmp_path: Path,
) -> None:
    final = tmp_path / "dataset"
    staging = new_staging_dir(final)
    make_tree(staging)

    def tamper(phase: str) -> None:
        if phase == "renamed":  # root can write into a 0500 directory: an accident
            (final / "late.txt").write_text("written after the rename")

    with pytest.raises(PublicationError, match="moved out to"):
        publish_tree(staging, final, on_phase=tamper)
    assert not final.exists()
    (rejected,) = tmp_path.glob(".dataset.rejected-*")
    assert (rejected / "late.txt").exists()


def test_staging_must_be_a_sibling_of_the_final_name(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    staging = make_tree(tmp_path / "elsewhere" / "staging")
    with pytest.raises(PublicationError, match="sibling"):
        publish_tree(staging, tmp_path / "dataset")
    assert not (tmp_path / "dataset").exists()


_KILLABLE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from dataset_devkit.integrity import publish_tree

    stop_at, location = sys.argv[3], sys.argv[4]

    def hook(phase):
        print(phase, flush=True)
        if phase == stop_at:
            time.sleep(600)

    publish_tree(Path(sys.argv[1]), Path(sys.argv[2]), manifest_location=location, on_phase=hook)
    print("done", flush=True)
    """
)


@pytest.mark.parametrize("location", [CONTENT_MANIFEST_NAME, NESTED])
@pytest.mark.parametrize("phase", PUBLISH_PHASES)
def test_sigkill_at_any_phase_leaves_the_final_name_absent_or_complete(
    tmp_path: Path, phase: str, location: str, package_env: dict[str, str]
) -> None:
    final = tmp_path / "dataset"
    staging = new_staging_dir(final)
    make_tree(staging, WITH_META)
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLABLE, str(staging), str(final), phase, location],
        stdout=subprocess.PIPE,
        text=True,
        env=package_env,
    )
    assert child.stdout is not None
    seen = []
    for line in child.stdout:
        seen.append(line.strip())
        if line.strip() == phase:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert seen[-1] == phase
    if final.exists():
        assert PUBLISH_PHASES.index(phase) >= PUBLISH_PHASES.index("renamed")
        report = verify_tree(final)
        assert report.ok
        assert report.manifest_location == location
        assert not staging.exists()
    else:
        assert PUBLISH_PHASES.index(phase) < PUBLISH_PHASES.index("renamed")
        remove_staging(staging)  # the failed attempt's cleanup
        assert list(tmp_path.iterdir()) == []


_RACER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from dataset_devkit.errors import DestinationExistsError
    from dataset_devkit.integrity import publish_tree

    staging, final, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    while not go.exists():
        time.sleep(0.001)
    try:
        result = publish_tree(staging, final, manifest_location=sys.argv[4])
    except DestinationExistsError as exc:
        print("lost", exc, flush=True)
    else:
        print("won", result.root_sha256, flush=True)
    """
)


@pytest.mark.parametrize("location", [CONTENT_MANIFEST_NAME, NESTED])
def test_two_processes_racing_for_one_name_give_exactly_one_winner(
    tmp_path: Path, location: str, package_env: dict[str, str]
) -> None:
    final = tmp_path / "dataset"
    go = tmp_path / "go"
    stagings = [new_staging_dir(final) for _ in range(2)]
    make_tree(stagings[0], {"who": b"first\n", "meta/m": b""})
    make_tree(stagings[1], {"who": b"second\n", "meta/m": b""})
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(s), str(final), str(go), location],
            stdout=subprocess.PIPE,
            text=True,
            env=package_env,
        )
        for s in stagings
    ]
    time.sleep(0.5)
    go.touch()
    outcomes = sorted(racer.communicate(timeout=60)[0].split()[0] for racer in racers)
    assert outcomes == ["lost", "won"]
    assert verify_tree(final).ok
    assert (final / location).is_file()
    assert (final / "who").read_bytes() in (b"first\n", b"second\n")
    assert os.stat(final).st_mode & 0o777 == 0o500


_BUILDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from dataset_devkit.integrity import new_staging_dir

    staging = new_staging_dir(Path(sys.argv[1]))
    (staging / "partial.bin").write_bytes(b"half a dataset")
    print(staging, flush=True)
    time.sleep(600)
    """
)


def test_stale_staging_of_a_killed_builder_is_removed_but_a_live_one_is_kept(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    final = tmp_path / "dataset"
    builders = [
        subprocess.Popen(
            [sys.executable, "-c", _BUILDER, str(final)],
            stdout=subprocess.PIPE,
            text=True,
            env=package_env,
        )
        for _ in range(2)
    ]
    stagings = []
    for builder in builders:
        assert builder.stdout is not None
        stagings.append(Path(builder.stdout.readline().strip()))
    mine = new_staging_dir(final)
    try:
        builders[0].send_signal(signal.SIGKILL)
        builders[0].wait(timeout=30)
        assert remove_stale_staging(final) == [stagings[0]]
        assert not stagings[0].exists()
        assert stagings[1].exists()  # its builder is alive
        assert mine.exists()  # this process holds it
    finally:
        builders[1].kill()
        builders[1].wait(timeout=30)
        remove_staging(mine)
    assert remove_stale_staging(final) == [stagings[1]]
    assert list(tmp_path.iterdir()) == []


def test_a_nested_manifest_is_written_last_where_asked_and_checked_after_the_rename(
    tmp_path: Path,
) -> None:
    final = tmp_path / "dataset"
    seen: list[tuple[str, bool]] = []
    staging = new_staging_dir(final)
    make_tree(staging, WITH_META)

    def watch(phase: str) -> None:
        where = final if phase in ("renamed", "verified") else staging
        seen.append((phase, (where / NESTED).exists()))

    result = publish_tree(staging, final, manifest_location=NESTED, on_phase=watch)
    assert seen[:2] == [("checked", False), ("validated", False)]
    assert all(present for _, present in seen[2:])
    assert result.manifest_location == NESTED
    assert not (final / CONTENT_MANIFEST_NAME).exists()
    assert _modes(final) == {("dir", 0o500), ("file", 0o400)}
    report = verify_tree(final)
    assert (report.ok, report.manifest_location) == (True, NESTED)
    assert report.root_sha256 == result.root_sha256


def test_a_change_after_a_nested_manifest_is_written_prevents_publication(
    tmp_path: Path,
) -> None:
    final = tmp_path / "dataset"
    staging = new_staging_dir(final)
    make_tree(staging, WITH_META)

    def tamper(phase: str) -> None:
        if phase == "sealed":  # a root-level manifest appears: an extra file, not "the" one
            (staging).chmod(0o700)
            (staging / CONTENT_MANIFEST_NAME).write_bytes((staging / NESTED).read_bytes())

    with pytest.raises(PublicationError, match=r"content_manifest\.json: extra"):
        publish_tree(staging, final, manifest_location=NESTED, on_phase=tamper)
    assert not final.exists()
    remove_staging(staging)


def test_a_staged_nested_manifest_must_verify_and_a_missing_directory_is_named(
    tmp_path: Path,
) -> None:
    final = tmp_path / "dataset"
    with (
        pytest.raises(FileNotFoundError, match="meta"),
        staged_publication(final, manifest_location=NESTED) as staging,
    ):
        make_tree(staging, {"a": b"1"})
    assert list(tmp_path.iterdir()) == []
    with staged_publication(final, manifest_location=NESTED) as staging:
        make_tree(staging, WITH_META)
        write_manifest(staging, location=NESTED)
    assert verify_tree(final).manifest_location == NESTED
