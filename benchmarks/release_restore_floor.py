"""The floor under a small-file restore: CPU seconds of the peer, of ``unpack.py``, and of a
bare Python loop that only creates, writes and renames the same number of files.

On a small-file release wall time is mostly the kernel's (journal, other users' load), so
this reports CPU seconds (user + system) of each contender, which a shared machine disturbs
far less:

* ``tar -xf`` of every package + ``sha256sum -c`` of the packages (the shell peer);
* the shipped ``unpack.py --all`` (every check, every byte verified);
* a Python loop with no parsing, hashing or checks: per directory ``mkdir`` + ``open``, per
  file create (``O_EXCL``) + write + close (what ``unpack.py`` does per file: it writes at
  the final name under a restore journal), and the same plus a rename (the temporary-name
  design of earlier versions).

Usage (a release made by ``release pack``, e.g. by ``release_pack_unpack.py --shape small``)::

    python benchmarks/release_restore_floor.py RELEASE_DIR [--workdir /dev/shm/ddk-floor]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of a child process."""
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _children_cpu() - cpu


def floor(root: Path, files: int, dirs: int, rename: bool) -> tuple[float, float]:
    """Create *files* files of 32 bytes spread over *dirs* directories, nothing else."""
    root.mkdir(parents=True)
    cpu, start = time.process_time(), time.perf_counter()
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    per, made = files // dirs + 1, 0
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    for index in range(dirs):
        os.mkdir(f"d{index}", dir_fd=top)
        folder = os.open(f"d{index}", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
        for leaf in range(min(per, files - made)):
            fd = os.open(f".t{leaf}.tmp", flags, 0o400, dir_fd=folder)
            os.write(fd, b"x" * 32)
            os.close(fd)
            if rename:
                os.rename(f".t{leaf}.tmp", f"f{leaf}", src_dir_fd=folder, dst_dir_fd=folder)
            made += 1
        os.close(folder)
    os.close(top)
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("release", type=Path)
    parser.add_argument("--workdir", type=Path, default=Path("/dev/shm/ddk-floor"))
    args = parser.parse_args()
    release, work = args.release.resolve(), args.workdir
    manifest = json.loads((release / "manifest.json").read_text("utf-8"))
    files = sum(f["file_count"] for f in manifest["families"])
    rows = (release / "files.jsonl").read_text("utf-8").splitlines()
    dirs = len({json.loads(r)["path"].rpartition("/")[0] for r in rows})
    packages = sorted(str(p) for p in release.glob("*/*.tar"))

    def fresh(name: str) -> Path:
        path = work / name
        if path.exists():
            subprocess.run(["chmod", "-R", "u+w", str(path)], check=True)
            shutil.rmtree(path)
        return path

    results: dict[str, tuple[float, float]] = {}
    peer = fresh("peer")
    peer.mkdir(parents=True)
    script = " && ".join(f"tar -xf {p} -C {peer}" for p in packages)
    script += f" && cd {release} && grep '\\.tar$' SHA256SUMS | sha256sum -c --quiet -"
    results["tar -xf + sha256sum -c"] = run(["bash", "-c", script])
    ours = fresh("ours")
    results["unpack.py --all"] = run(
        [sys.executable, str(release / "unpack.py"), "--all", "--quiet", "--output", str(ours)]
    )
    results["python floor: create+write+rename"] = floor(fresh("floor"), files, dirs, True)
    results["python floor: create+write"] = floor(fresh("floor2"), files, dirs, False)
    for name in ("peer", "ours", "floor", "floor2"):
        fresh(name)
    base = results["tar -xf + sha256sum -c"][1]
    print(f"{files} files in {dirs} folders holding files, {len(packages)} packages, in {work}")
    print(f"{'contender':36} {'wall s':>7} {'CPU s':>6} {'CPU ratio':>9}")
    for label, (wall, cpu) in results.items():
        print(f"{label:36} {wall:7.2f} {cpu:6.2f} {cpu / base:8.2f}x")


if __name__ == "__main__":
    main()
