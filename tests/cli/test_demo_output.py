"""``dataset-devkit demo OUT`` with an OUT it must not use: one error line, nothing touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_run import run_devkit


def _snapshot(root: Path) -> dict[str, tuple[bool, bytes | str]]:
    return {
        p.relative_to(root).as_posix(): (
            (True, str(p.readlink())) if p.is_symlink() else (False, p.read_bytes())
        )
        for p in sorted(root.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


@pytest.mark.needs("nuscenes")
@pytest.mark.parametrize("kind", ["file", "non-empty dir", "link to a dir", "dangling link"])
def test_an_output_that_exists_is_refused_and_left_untouched(
    tmp_path: Path, package_env: dict[str, str], kind: str
) -> None:
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("keep")
    elif kind == "non-empty dir":
        out.mkdir()
        (out / "keep.txt").write_text("keep")
    elif kind == "link to a dir":
        (tmp_path / "target").mkdir()
        out.symlink_to(tmp_path / "target")
    else:
        out.symlink_to(tmp_path / "missing")
    before = _snapshot(tmp_path)
    result = run_devkit(package_env, "demo", str(out))
    assert result.returncode == 1
    assert result.stderr == f"error: {out}: demo output must be absent or an empty directory\n"
    assert result.stdout == ""
    assert _snapshot(tmp_path) == before


@pytest.mark.needs("nuscenes")
def test_an_output_below_a_file_is_one_clear_error(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    (tmp_path / "afile").write_text("keep")
    out = tmp_path / "afile" / "demo"
    result = run_devkit(package_env, "demo", str(out))
    assert result.returncode == 1
    assert result.stderr == (
        f"error: {out}: cannot create the demo output directory (Not a directory)\n"
    )
    assert (tmp_path / "afile").read_text() == "keep"


@pytest.mark.needs("nuscenes")  # the demo checks its dataroot with the official loader
def test_a_second_demo_into_the_same_output_is_refused(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    out = tmp_path / "demo"
    first = run_devkit(package_env, "demo", str(out))
    assert first.returncode == 0, first.stderr
    before = _snapshot(out)
    second = run_devkit(package_env, "demo", str(out))
    assert second.returncode == 1
    assert "demo output must be absent or an empty directory" in second.stderr
    assert _snapshot(out) == before
