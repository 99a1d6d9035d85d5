"""MCAP chunks compressed with zstd or lz4: read with the ``[mcap]`` extra's codecs, and a
missing codec is the missing-extra error, never a recording that seems to end early."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

from dataset_devkit.nuscenes.ingest import read_mcap
from dataset_devkit.nuscenes.ingest.salvage import salvage_chunk
from tests.absent import without
from tests.nuscenes.helpers import rewrite_mcap

CODECS = {"zstd": "zstandard", "lz4": "lz4"}

_READ = """
import sys
from dataset_devkit.errors import MissingDependencyError
from dataset_devkit.nuscenes.ingest import read_mcap
from dataset_devkit.nuscenes.ingest.salvage import salvage_chunk
try:
    if sys.argv[2] == "salvage":
        salvage_chunk(open(sys.argv[1], "rb").read())
    else:
        read_mcap(sys.argv[1])
except MissingDependencyError as exc:
    print(exc)
    sys.exit(3)
"""


def _chunk_tail(path: Path) -> bytes:
    """The bytes of *path* from its first chunk record (opcode 0x06) on."""
    data = path.read_bytes()
    start = 8  # after the magic: records of an opcode byte, a u64 length and the body
    while data[start] != 0x06:
        start += 9 + int.from_bytes(data[start + 1 : start + 9], "little")
    return data[start:]


@pytest.mark.parametrize("compression", sorted(CODECS))
def test_compressed_chunks_read_like_plain_ones_and_a_missing_codec_names_the_extra(
    compression: Literal["zstd", "lz4"],
    recordings: dict[str, Path],
    tmp_path: Path,
    package_env: dict[str, str],
) -> None:
    plain = read_mcap(recordings["protobuf"])
    packed = rewrite_mcap(
        recordings["protobuf"], tmp_path / f"{compression}.mcap", compression=compression
    )
    read = read_mcap(packed)
    assert [c.timestamps_ns for c in read.cameras] == [c.timestamps_ns for c in plain.cameras]
    assert not read.truncated
    chunk = tmp_path / f"{compression}.chunk"
    chunk.write_bytes(_chunk_tail(packed))
    assert salvage_chunk(chunk.read_bytes()) != []  # the salvage path decompresses too
    env = without(package_env, tmp_path / "hook", [CODECS[compression]])
    for how in ("read", "salvage"):
        done = subprocess.run(
            [sys.executable, "-c", _READ, str(chunk if how == "salvage" else packed), how],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 3, (how, done.stdout, done.stderr)
        assert f"'{CODECS[compression]}'" in done.stdout, done.stdout
        assert "pip install 'dataset-devkit[mcap]'" in done.stdout
        if how == "read":
            assert str(packed) in done.stdout
