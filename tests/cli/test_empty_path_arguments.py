"""An empty path argument (``"$DIR"`` with DIR unset) is a usage error, never the cwd."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_run import run_devkit

COMMANDS = [
    ("manifest", ""),
    ("verify", ""),
    ("publish", "", "--out", "final"),
    ("publish", "staging", "--out", ""),
    ("publish", "staging", "--to", ""),  # the old spelling refuses "" too
    ("store", "inspect", ""),
    ("release", "pack", "", "--out", "rel"),
    ("release", "pack", "tree", "--out", ""),
    ("release", "unpack", "rel", "--all", "--out", ""),
    ("release", "unpack", "rel", "--all", "--output", ""),
    ("validate", ""),
    ("inspect", ""),
    ("stereo", "build", "", "--out", "ds"),
    ("stereo", "validate", ""),
    ("demo", ""),
    ("build", ""),
    ("validate", "--dataroot", "", "--version", "v1.0-trainval"),
    ("inspect", "--dataroot", "", "--version", "v1.0-trainval"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_an_empty_path_is_a_usage_error_and_nothing_is_written(
    args: tuple[str, ...],
    tmp_path: Path,
    package_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "keep.txt").write_text("keep")
    monkeypatch.chdir(tmp_path)  # Path("") would have been this directory
    result = run_devkit(package_env, *args)
    assert result.returncode == 2
    assert "must not be empty (an unset shell variable?)" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
