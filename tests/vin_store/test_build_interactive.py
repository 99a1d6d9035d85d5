"""A build from sources started in a session with no main file: a notebook, ``python -c``.

Worker processes cannot import such a session's functions by name; they are sent by value.
The documentation's "Building at scale" block is run here as a notebook runs it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "vin_store.md"


def _scale_block() -> str:
    text = DOC.read_text("utf-8")
    start = text.index("## Building at scale")
    found = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert found is not None
    return found.group(1)


def _session(code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run *code* as ``python -c`` does: ``__main__`` has no file, as in a notebook."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_documented_build_runs_in_a_session_without_a_main_file(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    done = _session(_scale_block(), tmp_path, package_env)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    # the progress callback prints the build's samples, once the total, then each shard
    assert lines[0] == "1000 samples to build"
    shards = [int(m.group(1)) for ln in lines if (m := re.fullmatch(r"\+(\d+) samples", ln))]
    assert sum(shards) == 1000 and len(lines) == 1 + len(shards) + 1
    root, num_shards, reused = lines[-1].split()
    assert (int(num_shards), int(reused)) == (len(shards), 0) and len(root) == 64
    script = tmp_path / "as_a_file"
    script.mkdir()
    (script / "build.py").write_text(_scale_block(), "utf-8")
    saved = subprocess.run(
        [sys.executable, "build.py"], cwd=script, env=package_env, capture_output=True, text=True
    )
    assert saved.returncode == 0, saved.stderr[-3000:]
    assert saved.stdout.splitlines()[-1] == lines[-1]  # same samples, same root hash


SESSION = """
import functools
import numpy as np
from dataset_devkit.vin_store import VinOfflineSample, VinOfflineShardSource
from dataset_devkit.vin_store import build_vin_offline_store

OFFSET = 7  # a global of the session, read by the function in the worker

def values(i):  # a helper of the session, called by the source function
    return np.full((4,), i + OFFSET, np.float32)

def make(start, stop, scale):
    for i in range(start, stop):
        yield VinOfflineSample(sample_key=f"k{i}", scene_id="s", snippet_id=str(i),
                               arrays={"vin.points_world": values(i) * scale})

sources = [VinOfflineShardSource(functools.partial(make, scale=2.0), a, a + 10)
           for a in range(0, 30, 10)]
done = build_vin_offline_store(sources, "store", rows_per_shard=8, workers=2)
from dataset_devkit.vin_store import VinOfflineStoreReader
reader = VinOfflineStoreReader("store")
print(done.num_shards, float(reader.read_sample(29)["vin.points_world"][0]))
"""


def test_a_partial_a_helper_and_a_global_of_the_session_reach_the_workers(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    done = _session(SESSION, tmp_path, package_env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["4", str((29 + 7) * 2.0)]


def test_without_cloudpickle_the_session_is_told_what_to_do_before_anything_is_made(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    code = "import sys; sys.modules['cloudpickle'] = None\n" + SESSION
    done = _session(code, tmp_path, package_env)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "source function make is defined in an interactive session" in last
    assert "pip install cloudpickle" in last and "executor=ThreadPoolExecutor()" in last
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_code_piped_into_python_is_refused_before_anything_is_made(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-"],
        input=SESSION,
        cwd=tmp_path,
        env=package_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1
    assert "main module is '<stdin>', not a file" in done.stderr.strip().splitlines()[-1]
    assert sorted(p.name for p in tmp_path.iterdir()) == []
