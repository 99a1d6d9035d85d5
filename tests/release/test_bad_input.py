"""A user's mistakes with release packaging: clear errors, exit 1, nothing changed on disk."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from dataset_devkit.errors import ConfigError, DevkitError
from dataset_devkit.release import (
    PackOptions,
    ReleaseVerificationError,
    UnsafeTreeError,
    pack_release,
    restore_release,
    verify_release,
)
from tests.cli_run import run_devkit
from tests.release import unpack_script
from tests.release.helpers import fingerprint, make_tree, pack

SMALL = {"a.txt": b"alpha\n", "depth-x/d.bin": b"\x00\x01" * 50}


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return pack(make_tree(tmp_path / "ds", SMALL), tmp_path / "rel", restore_test="none")


def _shipped(release: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the release's own unpack.py as a downloader would."""
    return subprocess.run(
        [unpack_script.PYTHON, str(release / "unpack.py"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def _edit_manifest(release: Path, key: str, value: object, package: bool = False) -> None:
    path = release / "manifest.json"
    data = json.loads(path.read_bytes())
    (data["packages"][0] if package else data)[key] = value
    path.write_text(json.dumps(data))  # json.dumps writes NaN for float("nan")


def test_a_tree_that_is_a_file_missing_or_empty_is_one_clear_error(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(UnsafeTreeError, match=f"{afile}: exists and is not a directory"):
        pack_release(afile, tmp_path / "r1")
    with pytest.raises(UnsafeTreeError, match=f"{tmp_path / 'nope'}: no such directory"):
        pack_release(tmp_path / "nope", tmp_path / "r2")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="the tree holds no files; there is nothing to release"):
        pack_release(tmp_path / "empty", tmp_path / "r3")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "empty"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": ""}, "release name '' is not a portable directory name"),
        ({"package_limit": 10**23}, "package limit must be an int of 4096 to 2\\*\\*63 - 1 bytes"),
        ({"package_limit": 12}, "found 12"),
    ],
)
def test_pack_options_out_of_range_are_config_errors(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    tree = make_tree(tmp_path / "ds", SMALL)
    with pytest.raises(ConfigError, match=message):
        pack_release(tree, tmp_path / "rel", PackOptions(**options))  # type: ignore[arg-type]
    assert not (tmp_path / "rel").exists()


def test_a_previous_release_that_is_a_file_is_a_clear_error(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", SMALL)
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(DevkitError, match=f"release directory {afile}: exists and is not a dir"):
        pack_release(tree, tmp_path / "rel", PackOptions(previous=afile))


@pytest.mark.parametrize(
    ("key", "value", "package", "message"),
    [
        ("package_limit_bytes", float("nan"), False, "NaN is not a JSON number"),
        ("size", -1, True, "field 'size' must be >= 0"),
        ("member_count", -2, True, "field 'member_count' must be >= 0"),
        ("snapshot", {"root_sha256": "0" * 64, "excluded": [[1]]}, False, "must list paths"),
    ],
)
def test_a_damaged_release_manifest_names_the_field(
    release: Path, key: str, value: object, package: bool, message: str
) -> None:
    _edit_manifest(release, key, value, package)
    with pytest.raises(ReleaseVerificationError, match=message):
        verify_release(release, ["all"])


def test_a_manifest_that_is_not_an_object_says_so(release: Path) -> None:
    (release / "manifest.json").write_text("[]")
    with pytest.raises(ReleaseVerificationError, match="expected a JSON object, found list"):
        verify_release(release, [])


def test_verify_refuses_an_altered_unpack_py_and_checksum_file(release: Path) -> None:
    verify_release(release, [])
    with (release / "unpack.py").open("a") as stream:
        stream.write("raise SystemExit(0)\n")
    sums = release / "SHA256SUMS"
    sums.write_text("".join(ln for ln in sums.read_text().splitlines(True) if "README" not in ln))
    with pytest.raises(ReleaseVerificationError) as caught:
        verify_release(release, [])
    issues = "\n".join(caught.value.issues)
    assert "unpack.py: SHA-256" in issues and "manifest.json says" in issues
    assert "SHA256SUMS line" in issues and "unpack.py has SHA-256" in issues
    assert "SHA256SUMS: no line for README.md" in issues


def test_a_family_folder_that_is_a_file_is_listed_not_a_traceback(
    release: Path, package_env: dict[str, str]
) -> None:
    for tar in (release / "depth").iterdir():
        tar.unlink()
    (release / "depth").rmdir()
    (release / "depth").write_text("x")
    result = run_devkit(package_env, "release", "verify", str(release), "--all")
    assert result.returncode == 1
    assert "depth/depth-0001.tar cannot be read (Not a directory: depth/ must be a folder)" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr


@pytest.mark.unpack_script
@pytest.mark.parametrize("kind", ["file", "dangling link"])
def test_an_output_that_is_not_a_directory_is_refused_and_kept(
    release: Path, tmp_path: Path, package_env: dict[str, str], kind: str
) -> None:
    output = tmp_path / "out"
    if kind == "file":
        output.write_text("keep")
        expected = f"{output}: exists and is not a directory"
    else:
        output.symlink_to(tmp_path / "missing")
        expected = f"{output}: is a symbolic link to a missing target, not a directory"
    before = fingerprint(tmp_path)
    cli = run_devkit(package_env, "release", "unpack", str(release), "--all", "--out", str(output))
    assert cli.returncode == 1
    assert expected in cli.stderr and "Errno" not in cli.stderr
    shipped = _shipped(release, "--all", "--output", str(output))
    assert shipped.returncode == 1
    assert shipped.stderr.strip().endswith(expected)
    assert fingerprint(tmp_path) == before


@pytest.mark.unpack_script
def test_a_release_dir_that_is_a_file_is_named_by_the_shipped_script(
    release: Path, tmp_path: Path
) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    shipped = _shipped(release, "--all", "--verify-only", "--release-dir", str(afile))
    assert shipped.returncode == 1
    assert shipped.stderr == f"FAILED: release directory {afile}: exists and is not a directory\n"


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ("{", "unreadable restore state, expected UTF-8 JSON"),
        ("[]", "unreadable restore state, expected an object with snapshot_root_sha256"),
    ],
)
def test_a_damaged_restore_state_file_is_named_not_taken_for_another_snapshot(
    release: Path, tmp_path: Path, state: str, message: str
) -> None:
    output = tmp_path / "data"
    restore_release(release, output, ["all"], fsync=False)
    (output / "ds.unpack-state.json").write_text(state)
    before = fingerprint(output)
    with pytest.raises(ReleaseVerificationError, match=message):
        restore_release(release, output, ["all"], fsync=False)
    assert fingerprint(output) == before


@pytest.mark.unpack_script
def test_verify_only_with_an_output_is_a_usage_error_not_a_silent_no_restore(
    release: Path, tmp_path: Path
) -> None:
    shipped = _shipped(release, "--all", "--verify-only", "--output", str(tmp_path / "data"))
    assert shipped.returncode == 2
    assert "--verify-only writes nothing: drop --output DIR" in shipped.stderr
    assert not (tmp_path / "data").exists()


def test_a_file_name_that_is_not_utf8_is_refused_at_scan_time(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds", SMALL)
    (tree / os.fsdecode(b"bad\xffname")).write_bytes(b"x")
    with pytest.raises(UnsafeTreeError, match=r"bad\\xffname: name is not valid UTF-8"):
        pack_release(tree, tmp_path / "rel")  # a read-back failure about 'hdrcharset' before
    assert not (tmp_path / "rel").exists()


def test_library_entry_points_refuse_arguments_of_the_wrong_type(
    release: Path, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "ds2", SMALL)
    with pytest.raises(ConfigError, match="tree must be a non-empty str or Path, found None"):
        pack_release(None, tmp_path / "r")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="out must be a non-empty str or Path, found ''"):
        pack_release(tree, "")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="options must be PackOptions, found dict"):
        pack_release(tree, tmp_path / "r", {"name": "x"})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="families must be a list of names, found 'base'"):
        restore_release(release, tmp_path / "data", "base")
    with pytest.raises(ConfigError, match="output must be a non-empty str or Path"):
        restore_release(release, "", ["base"])  # type: ignore[arg-type]
    assert not (tmp_path / "r").exists() and not (tmp_path / "data").exists()
