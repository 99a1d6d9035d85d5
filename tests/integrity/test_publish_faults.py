"""A full disk or a kill at any moment: the re-run of the same ``publish`` finishes the job.

Faults are real: ``RLIMIT_FSIZE`` makes every write past a size fail with ``EFBIG`` in any
write path (buffered or not), the way a full disk fails it, and SIGKILL stops the child at
random moments. The re-run is the same command with nothing cleaned up by hand.
"""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dataset_devkit.integrity import SafeDir, publish_tree, verify_tree, write_manifest
from dataset_devkit.integrity.atomic import partial_name, remove_stale_partials
from dataset_devkit.integrity.publish_record import record_name
from tests.integrity.helpers import make_tree
from tests.scale_tree import run_limited

#: Enough files that the manifest is several KiB: a write limit cuts it in the middle.
MANY = {f"pairs/{n:03d}/meta.json": f'{{"pair": {n}}}\n'.encode() for n in range(60)}


def test_a_full_disk_while_the_manifest_is_written_names_it_and_the_rerun_publishes(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    staging = make_tree(tmp_path / "staging", MANY)
    final = tmp_path / "final"
    args = ["publish", str(staging), "--out", str(final)]
    failed = run_limited(package_env, args, fsize=4096)
    assert failed.returncode == 1
    manifest = staging / "content_manifest.json"
    assert failed.stderr.strip() == f"error: File too large: {manifest}"
    assert not manifest.exists()  # never half a manifest under the real name
    assert sorted(p.name for p in staging.iterdir()) == ["pairs"]
    done = run_limited(package_env, args)
    assert done.returncode == 0, done.stderr
    assert verify_tree(final).ok


def test_enospc_in_any_manifest_write_leaves_nothing_and_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_tree(tmp_path / "tree", MANY)
    real_write = os.write

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        if len(data) > 1000:
            return real_write(fd, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError, match="No space left on device") as caught:
        write_manifest(root)
    assert caught.value.filename == str(root / "content_manifest.json")
    monkeypatch.undo()
    assert sorted(p.name for p in root.iterdir()) == sorted({"pairs"})
    assert write_manifest(root).file_count == len(MANY)


def test_a_partial_manifest_left_by_a_killed_run_is_not_content_and_is_removed(
    tmp_path: Path,
) -> None:
    staging = make_tree(tmp_path / "staging", MANY)
    left = partial_name("content_manifest.json")
    (staging / left).write_bytes(b'{"format": "dataset-devkit/con')  # a killed writer's
    result = publish_tree(staging, tmp_path / "final")
    assert left not in {entry.path for entry in result.manifest.files}
    assert not (tmp_path / "final" / left).exists()
    assert result.manifest.file_count == len(MANY)


def test_a_partial_file_of_a_live_writer_is_kept(tmp_path: Path) -> None:
    import fcntl

    root = make_tree(tmp_path / "tree", MANY)
    live = root / partial_name("content_manifest.json")
    with live.open("wb") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        with SafeDir.open(root) as pinned:
            assert remove_stale_partials(pinned, "content_manifest.json") == []
    assert live.exists()


_PUBLISH = (
    "import sys\n"
    "from dataset_devkit.cli.app import main\n"
    "main(['publish', sys.argv[1], '--out', sys.argv[2]])\n"
)
#: What :data:`_PUBLISH` does before it publishes: start Python and import the command line.
_IMPORT_ONLY = "from dataset_devkit.cli.app import main\n"


def test_publish_killed_at_random_moments_is_finished_by_the_same_command(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    chance = random.Random(12)
    files = {f"d{n % 7}/{n:04d}.bin": os.urandom(64) * (n % 5) for n in range(300)}
    # The start-up and two whole runs of the very command the trials kill, timed on this
    # machine's load, so that the kills land inside a publication: the faster of the two
    # (the first may compile bytecode).
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", _IMPORT_ONLY], env=package_env, check=True)
    start_up = time.monotonic() - started
    runs = []
    for n in range(2):
        timing, timed = make_tree(tmp_path / f"timing{n}", files), tmp_path / f"timed{n}"
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-c", _PUBLISH, str(timing), str(timed)], env=package_env, check=True
        )
        runs.append(time.monotonic() - started)
    whole = max(min(runs), start_up + 0.05)
    killed = 0
    finals = [f"final{trial}" for trial in range(12)]
    for trial in range(12):
        if trial >= 2 and killed >= 2:
            break
        staging = make_tree(tmp_path / f"staging{trial}", files)
        final = tmp_path / f"final{trial}"
        child = subprocess.Popen(
            [sys.executable, "-c", _PUBLISH, str(staging), str(final)],
            env=package_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(chance.uniform(start_up, whole))
        if child.poll() is not None:  # finished first: nothing was killed, nothing to heal
            assert child.returncode == 0
            continue
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        killed += 1
        rerun = run_limited(package_env, ["publish", str(staging), "--out", str(final)])
        # Any kill, also past the rename or after the last step: the same command finishes.
        assert rerun.returncode == 0, rerun.stderr
        report = verify_tree(final)
        assert report.ok, report.issues
        assert report.file_count == len(files)
        leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
        records = {record_name(tmp_path / name) for name in ("timed0", "timed1", *finals)}
        assert set(leftovers) <= records  # each publication's record of its staging, only
    assert killed >= 2  # the kills must have hit publications in progress


@pytest.mark.parametrize("how", ["write_bytes", "write_new", "copy_from"])
def test_a_full_disk_in_any_leaf_write_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    from dataset_devkit.integrity import write_new

    source = tmp_path / "source.bin"
    source.write_bytes(b"x" * 5000)
    (tmp_path / "out").mkdir()

    def full(*_args: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    real_fdopen = os.fdopen

    class FullDisk:  # a buffered file whose writes fail as on a full disk
        def __init__(self, fd: int, *args: object, **kwargs: object) -> None:
            self.inner = real_fdopen(fd, "wb")

        def __enter__(self) -> FullDisk:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

        def write(self, _data: object) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    monkeypatch.setattr(os, "fdopen", FullDisk)
    with SafeDir.open(tmp_path / "out") as out, pytest.raises(OSError) as caught:
        if how == "write_bytes":
            out.write_bytes("a.bin", b"x" * 5000)
        elif how == "write_new":
            write_new(out, "a.bin", b"x" * 5000)
        else:
            out.copy_from(source, "a.bin")
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(tmp_path / "out" / "a.bin")


def test_without_an_atomic_no_replace_rename_the_manifest_is_linked_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataset_devkit.errors import DestinationExistsError, PublicationError
    from dataset_devkit.integrity import atomic

    def unsupported(*_args: object) -> None:
        raise PublicationError("atomic no-replace rename is not implemented on darwin")

    monkeypatch.setattr(atomic, "rename_noreplace", unsupported)
    root = make_tree(tmp_path / "tree", MANY)
    written = write_manifest(root)
    assert verify_tree(root).root_sha256 == written.root_sha256
    assert os.stat(root / "content_manifest.json").st_nlink == 1
    with SafeDir.open(root) as pinned, pytest.raises(DestinationExistsError):
        atomic.write_atomic(pinned, "content_manifest.json", b"{}")
    assert sorted(p.name for p in root.iterdir()) == ["content_manifest.json", "pairs"]
