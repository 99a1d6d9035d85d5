"""A builder killed with SIGKILL takes its worker processes with it, at any moment.

Each command that runs worker processes (``build``, ``stereo build --workers``, ``store
build --items``) is killed early (inside its first second, while its pool starts), once its
workers run, and at a random later moment; then no process that it started may remain.
Its processes are told by a token in their environment (every child inherits it), read
from ``/proc``, so a worker reparented to init is found as surely as a child.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from dataset_devkit.nuscenes.samples import SampleDrive, write_sample_mcap
from dataset_devkit.stereo import make_sample_source

#: How long the killed builder's processes get to notice and exit (the fork server and the
#: resource tracker wait for their own EOF; a worker's watcher wakes on the pidfd at once).
_GRACE_S = 30.0

_SAMPLES = """
import numpy as np
from dataset_devkit.vin_store import VinOfflineSample

def render(start, stop):
    for i in range(start, stop):
        yield VinOfflineSample(
            sample_key=f"s-{i:06d}", scene_id=f"scene-{i // 100}", snippet_id=str(i),
            arrays={"vin.points_world": np.full((4096, 3), i, np.float32)},
        )
"""


def _carrying(token: str) -> set[int]:
    """Every live process whose environment holds *token* (zombies have none to read)."""
    found = set()
    needle = f"KILLED_BUILDER_TOKEN={token}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                if needle in environ.read():
                    found.add(int(name))
        except OSError:  # gone meanwhile, or a kernel thread
            continue
    return found


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("inputs")
    drive = SampleDrive(duration_s=8.0, fps=10.0, width=64, height=48)
    for n in range(3):
        write_sample_mcap(root / f"drive-{n}.mcap", replace(drive, start_ns=(n + 1) * 10**15))
    listed = ", ".join(f'"{root}/drive-{n}.mcap"' for n in range(3))
    (root / "build.toml").write_text(
        f'namespace = "killed"\n[sources]\ntype = "mcap_hf"\npaths = [{listed}]\n'
        "[scenario]\nscene_duration_s = 2.0\nmin_scene_duration_s = 1.0\n"
        '[publication]\nversion = "v1.0-trainval"\nrefuse_overwrite = true\n'
        '[paths]\noutput_dir = "OUT"\n[executor]\nworkers = 3\n'
    )
    make_sample_source(root / "export", pairs=4, frames=24, width=64, height=48)
    (root / "killed_samples.py").write_text(_SAMPLES)
    return root


def _command(name: str, inputs: Path, out: Path) -> list[str]:
    if name == "build":
        config = out.parent / f"{out.name}.toml"
        config.write_text((inputs / "build.toml").read_text().replace("OUT", str(out)))
        return ["build", str(config)]
    if name == "stereo build":
        return ["stereo", "build", str(inputs / "export"), "--out", str(out), "--workers", "2"]
    return [
        "store", "build", f"{inputs / 'killed_samples.py'}:render", "--items", "4000",
        "--rows-per-shard", "50", "--workers", "2", "--out", str(out),
    ]  # fmt: skip


def _kill_and_count(argv: list[str], env: dict[str, str], when: str, rng: random.Random) -> bool:
    """Run, SIGKILL at *when*; assert nothing of it survives; False if it ended first."""
    token = uuid.uuid4().hex
    child = subprocess.Popen(
        [sys.executable, "-m", "dataset_devkit", *argv],
        env={**env, "KILLED_BUILDER_TOKEN": token},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = time.monotonic()
    try:
        if when == "workers":  # the pool is up: more processes than the builder carry it
            while child.poll() is None and len(_carrying(token) - {child.pid}) < 2:
                time.sleep(0.02)
        else:
            time.sleep({"early": rng.uniform(0.1, 0.9)}.get(when) or rng.uniform(1.0, 4.0))
        if child.poll() is not None:
            return False
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        left = _carrying(token)
        while left and time.monotonic() - started < _GRACE_S + 30:
            time.sleep(0.1)
            left = _carrying(token)
        assert left == set(), f"{argv[0]} killed ({when}) left processes {sorted(left)} alive"
        return True
    finally:
        for pid in _carrying(token):
            os.kill(pid, signal.SIGKILL)
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.parametrize(
    "name",
    [pytest.param("build", marks=pytest.mark.needs("nuscenes")), "stereo build", "store build"],
)
def test_a_killed_builder_leaves_no_worker_alive(
    name: str, inputs: Path, tmp_path: Path, package_env: dict[str, str]
) -> None:
    rng = random.Random(name)
    kills = {"early": 0, "workers": 0, "later": 0}
    for trial, when in enumerate(["early", "early", "workers", "workers", "later"]):
        argv = _command(name, inputs, tmp_path / f"out-{trial}")
        kills[when] += _kill_and_count(argv, package_env, when, rng)
    assert kills["early"] == 2 and kills["workers"] >= 1, kills
