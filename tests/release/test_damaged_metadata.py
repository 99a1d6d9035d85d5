"""Damaged release metadata found by mutation fuzzing: one typed error naming the file."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from dataset_devkit.release import ReleaseVerificationError, restore_release, verify_release
from tests.release import unpack_script
from tests.release.helpers import make_tree, pack

DEEP = "[" * 50_000 + "]" * 50_000


@pytest.fixture
def release(tmp_path: Path) -> Path:
    tree = make_tree(tmp_path / "ds", {"a.txt": b"alpha\n", "depth-x/d.bin": b"\x00\x01" * 50})
    return pack(tree, tmp_path / "rel", restore_test="none")


def _deepen_manifest(release: Path) -> None:
    path = release / "manifest.json"
    path.chmod(0o644)
    doc = json.loads(path.read_bytes())
    doc["family_rules"] = "MARK"
    path.write_text(json.dumps(doc).replace('"MARK"', DEEP))


def _deepen_files_jsonl(release: Path) -> None:
    """A deeply nested row whose file still hashes to the manifest's files_jsonl_sha256."""
    files, manifest = release / "files.jsonl", release / "manifest.json"
    files.chmod(0o644)
    manifest.chmod(0o644)
    lines = files.read_text().split("\n")
    lines[0] = '{"path": ' + DEEP + "}"
    files.write_text("\n".join(lines))
    doc = json.loads(manifest.read_bytes())
    doc["files_jsonl_sha256"] = hashlib.sha256(files.read_bytes()).hexdigest()
    manifest.write_text(json.dumps(doc))


@pytest.mark.unpack_script
@pytest.mark.parametrize(
    ("damage", "name"),
    [(_deepen_manifest, "manifest.json"), (_deepen_files_jsonl, "files.jsonl")],
)
def test_deeply_nested_metadata_is_a_verification_error_naming_the_file(
    release: Path, tmp_path: Path, damage: object, name: str
) -> None:
    damage(release)  # type: ignore[operator]
    with pytest.raises(ReleaseVerificationError, match=name.replace(".", r"\.")):
        verify_release(release, [])
    with pytest.raises(ReleaseVerificationError, match=name.replace(".", r"\.")):
        restore_release(release, tmp_path / "out", ["all"], fsync=False)
    shipped = subprocess.run(
        [unpack_script.PYTHON, str(release / "unpack.py"), "--verify-only", "--all"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shipped.returncode != 0
    assert name in shipped.stderr
    assert "Traceback" not in shipped.stderr


def test_a_deeply_nested_restore_state_is_an_error_naming_it(release: Path, tmp_path: Path) -> None:
    from dataset_devkit.release.unpack import STATE_SUFFIX

    out = tmp_path / "out"
    restore_release(release, out, ["all"], fsync=False)
    state = next(out.glob(f"*{STATE_SUFFIX}"))
    state.chmod(0o644)
    state.write_text(DEEP)
    with pytest.raises(ReleaseVerificationError, match=f"{state.name}: unreadable restore state"):
        restore_release(release, out, ["all"], fsync=False)


@pytest.mark.parametrize("bad", ["README.md\x00", "../manifest.json", "other.txt"])
def test_a_sums_line_naming_anything_but_a_shipped_file_is_an_issue(
    release: Path, bad: str
) -> None:
    sums = release / "SHA256SUMS"
    sums.chmod(0o644)
    text = sums.read_text()
    sums.write_text(text.replace("  README.md\n", f"  {bad}\n"))
    with pytest.raises(ReleaseVerificationError, match=r"SHA256SUMS line \d+: .* does not match"):
        verify_release(release, [])
