"""unpack.py end to end: families into one output, re-runs, conflicts, broken downloads."""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dataset_devkit.integrity import ContentManifest, ManifestEntry, canonical_json
from dataset_devkit.release import unpack
from dataset_devkit.release.metadata import unpack_py_bytes
from tests.release import unpack_script
from tests.release.helpers import SAMPLE, fingerprint, make_tree, pack, read_tree

DEPTH = "ue5-pro/map0001/scene0001/cams01/depth-zstd-5-mm/"
UNPACK_SOURCE = Path(unpack.__file__)


@pytest.fixture
def release(tmp_path: Path) -> Path:
    return pack(make_tree(tmp_path / "ds"), tmp_path / "rel", restore_test="none")


@pytest.mark.unpack_script
def test_base_only_then_depth_into_the_same_output_restores_the_whole_tree(
    release: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    first = unpack_script.unpack_release(str(release), str(data), ["base"])
    restored = read_tree(data / "ds")
    assert restored == {p: b for p, b in SAMPLE.items() if not p.startswith(DEPTH)}
    base_state = fingerprint(data / "ds")
    second = unpack_script.unpack_release(str(release), str(data), ["depth"])
    assert read_tree(data / "ds") == SAMPLE
    after = fingerprint(data / "ds")
    assert all(after[rel] == value for rel, value in base_state.items())
    assert first.written + second.written == len(SAMPLE)
    state = json.loads((data / "ds.unpack-state.json").read_text())
    assert state["families"] == ["base", "depth"]


@pytest.mark.unpack_script
def test_rerun_verifies_and_skips_identical_files_without_changing_anything(
    release: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    unpack_script.unpack_release(str(release), str(data), everything=True)
    before = fingerprint(data)
    again = unpack_script.unpack_release(str(release), str(data), everything=True)
    assert (again.written, again.skipped) == (0, len(SAMPLE))
    assert fingerprint(data) == before


@pytest.mark.unpack_script
def test_existing_file_that_differs_is_reported_and_kept(release: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    unpack_script.unpack_release(str(release), str(data), everything=True)
    (data / "ds" / "README.md").write_bytes(b"# SAMPLX\n")
    with pytest.raises(unpack.UnpackError, match=r"README.md: existing file differs.*kept"):
        unpack_script.unpack_release(str(release), str(data), everything=True)
    assert (data / "ds" / "README.md").read_bytes() == b"# SAMPLX\n"


@pytest.mark.unpack_script
def test_existing_file_of_another_size_stops_before_anything_is_written(
    release: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    (data / "ds").mkdir(parents=True)
    (data / "ds" / "README.md").write_bytes(b"mine, not the release's\n")
    with pytest.raises(unpack.UnpackError, match="nothing was written"):
        unpack_script.unpack_release(str(release), str(data), ["base"])
    assert read_tree(data) == {"ds/README.md": b"mine, not the release's\n"}


def test_gnu_tar_of_every_package_restores_the_same_bytes(release: Path, tmp_path: Path) -> None:
    data = tmp_path / "gnu"
    data.mkdir()
    for package in sorted(release.glob("*/*.tar")):
        subprocess.run(["tar", "-xf", str(package), "-C", str(data)], check=True)
    assert read_tree(data / "ds") == SAMPLE


@pytest.mark.unpack_script
def test_pending_family_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    release = pack(make_tree(tmp_path / "ds"), tmp_path / "rel", deliver=("base",))
    for families, everything in ((["depth"], False), ([], True)):
        with pytest.raises(unpack.UnpackError, match="declared but not delivered"):
            unpack_script.unpack_release(str(release), str(tmp_path / "data"), families, everything)
    assert not (tmp_path / "data").exists()
    summary = unpack_script.unpack_release(str(release), str(tmp_path / "data"), ["base"])
    assert summary.written == len([p for p in SAMPLE if not p.startswith(DEPTH)])


@pytest.mark.unpack_script
def test_depth_published_later_adds_into_the_base_output(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "ds")
    downloads = pack(tree, tmp_path / "rel1", deliver=("base",))
    data = tmp_path / "data"
    unpack_script.unpack_release(str(downloads), str(data), ["base"])
    later = pack(tree, tmp_path / "rel2", deliver=("depth",), previous=downloads)
    for name in ("manifest.json", "files.jsonl", "unpack.py", "SHA256SUMS", "validation.json"):
        shutil.copyfile(later / name, downloads / name)
    shutil.copytree(later / "depth", downloads / "depth")
    unpack_script.unpack_release(str(downloads), str(data), ["depth"])
    assert read_tree(data / "ds") == SAMPLE
    unpack_script.verify_release(str(downloads), everything=True)


@pytest.mark.unpack_script
def test_packages_of_another_snapshot_are_never_merged_into_an_output(tmp_path: Path) -> None:
    first = pack(make_tree(tmp_path / "a" / "ds"), tmp_path / "rel1", restore_test="none")
    changed = dict(SAMPLE, **{DEPTH + "meta.json": b'{"scale": 1}\n'})
    second = pack(make_tree(tmp_path / "b" / "ds", changed), tmp_path / "rel2", restore_test="none")
    data = tmp_path / "data"
    unpack_script.unpack_release(str(first), str(data), ["base"])
    before = fingerprint(data)
    with pytest.raises(unpack.UnpackError, match="refusing to mix packages of different"):
        unpack_script.unpack_release(str(second), str(data), ["depth"])
    assert fingerprint(data) == before


@pytest.mark.unpack_script
def test_output_restored_by_native_tar_from_another_snapshot_is_detected(tmp_path: Path) -> None:
    first = pack(make_tree(tmp_path / "a" / "ds"), tmp_path / "rel1", restore_test="none")
    changed = dict(SAMPLE, **{"README.md": b"# SAMPLX\n"})
    second = pack(make_tree(tmp_path / "b" / "ds", changed), tmp_path / "rel2", restore_test="none")
    data = tmp_path / "data"
    data.mkdir()
    for package in sorted(first.glob("base/*.tar")):
        subprocess.run(["tar", "-xf", str(package), "-C", str(data)], check=True)
    with pytest.raises(unpack.UnpackError, match=r"README.md: existing file differs"):
        unpack_script.unpack_release(str(second), str(data), ["depth"])


@pytest.mark.unpack_script
def test_truncated_package_is_refused(release: Path, tmp_path: Path) -> None:
    package = release / "base" / "base-0001.tar"
    package.write_bytes(package.read_bytes()[:-700])
    with pytest.raises(unpack.UnpackError, match="truncated or a different file"):
        unpack_script.unpack_release(str(release), str(tmp_path / "data"), ["base"])
    with pytest.raises(unpack.UnpackError, match="7680 \\(truncated or a different file"):
        unpack_script.verify_release(str(release), ["base"])
    assert not (tmp_path / "data").exists()


@pytest.mark.unpack_script
def test_package_with_wrong_sha256_is_refused(release: Path, tmp_path: Path) -> None:
    package = release / "depth" / "depth-0001.tar"
    data = bytearray(package.read_bytes())
    data[1500] ^= 0xFF
    package.write_bytes(bytes(data))
    with pytest.raises(unpack.UnpackError, match=r"depth-0001.tar SHA-256 is"):
        unpack_script.unpack_release(str(release), str(tmp_path / "data"), ["depth"])
    with pytest.raises(unpack.UnpackError, match=r"depth-0001.tar"):
        unpack_script.verify_release(str(release), ["depth"])


@pytest.mark.unpack_script
def test_missing_package_is_refused(release: Path, tmp_path: Path) -> None:
    (release / "base" / "base-0002.tar").unlink()
    with pytest.raises(unpack.UnpackError, match=r"base-0002.tar is missing"):
        unpack_script.unpack_release(str(release), str(tmp_path / "data"), ["base"])
    with pytest.raises(unpack.UnpackError, match=r"base-0002.tar is missing"):
        unpack_script.verify_release(str(release), ["base"])


@pytest.mark.unpack_script
def test_unlisted_files_in_a_family_folder_are_ignored_with_a_notice(
    release: Path, tmp_path: Path
) -> None:
    shutil.copyfile(release / "base" / "base-0001.tar", release / "base" / "base-0099.tar")
    (release / "base" / ".DS_Store").write_bytes(b"\x00\x01 finder")
    notes: list[str] = []
    unpack_script.verify_release(str(release), ["base"], log=notes.append)
    unpack_script.unpack_release(str(release), str(tmp_path / "data"), ["base"], log=notes.append)
    assert read_tree(tmp_path / "data" / "ds") == {
        p: b for p, b in SAMPLE.items() if not p.startswith(DEPTH)
    }
    ignored = [n for n in notes if n.startswith("notice: ignoring")]
    assert len(ignored) == 4, notes
    assert any("base/.DS_Store" in n for n in ignored)
    assert any("base/base-0099.tar" in n for n in ignored)


@pytest.mark.unpack_script
def test_metadata_from_another_release_is_refused(release: Path, tmp_path: Path) -> None:
    rows = (release / "files.jsonl").read_bytes().replace(b'"size":0', b'"size":1')
    (release / "files.jsonl").write_bytes(rows)
    with pytest.raises(unpack.UnpackError, match="metadata files are from different releases"):
        unpack_script.verify_release(str(release), ["base"])


def test_root_hash_and_canonical_json_agree_with_the_integrity_core() -> None:
    entries = [
        ManifestEntry(path=p, size=len(b), sha256=hashlib.sha256(b).hexdigest())
        for p, b in SAMPLE.items()
    ]
    expected = ContentManifest.from_entries(entries).root_sha256
    assert unpack.root_sha256((e.path, e.size, e.sha256) for e in entries) == expected
    value = {"ü": [1, "☃", None], "a": {"z": 1.5, "b": True}}
    assert unpack.canonical_json(value) == canonical_json(value)


def test_unpack_py_imports_only_the_standard_library_and_parses_as_python_3_9() -> None:
    source = UNPACK_SOURCE.read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 9))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0
            imported.add((node.module or "").split(".")[0])
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
    assert not any("extract" in n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))


_TYPES = frozenset(["bool", "bytes", "dict", "float", "frozenset", "int", "list", "object"])
_TYPES |= frozenset(["set", "str", "tuple", "type"])


def _runtime_unions(tree: ast.Module) -> list[int]:
    """Lines where ``X | Y`` of types is evaluated: Python 3.10+, and vermin cannot see it.

    Annotations are strings under ``from __future__ import annotations`` and are skipped; an
    operand counts as a type when it is ``None``, a builtin type, a subscript (``list[int]``)
    or a class of the module (``a | b`` of ints and flags stays allowed).
    """
    classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    annotations: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            annotations.update(id(n) for n in ast.walk(node.annotation))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            annotations.update(id(n) for n in ast.walk(node.returns))

    def is_type(operand: ast.expr) -> bool:
        if isinstance(operand, ast.BinOp) and isinstance(operand.op, ast.BitOr):
            return is_type(operand.left) or is_type(operand.right)
        if isinstance(operand, ast.Constant):
            return operand.value is None
        if isinstance(operand, ast.Name):
            return operand.id in _TYPES or operand.id in classes
        return isinstance(operand, ast.Subscript)

    return sorted(
        {
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.BitOr)
            and id(node) not in annotations
            and is_type(node)
        }
    )


def test_unpack_py_evaluates_no_union_of_types_at_run_time() -> None:
    tree = ast.parse(UNPACK_SOURCE.read_text(encoding="utf-8"))
    assert _runtime_unions(tree) == []
    caught = ast.parse("isinstance(x, int | str)\nT = Release | None\nclass Release: ...\n")
    assert _runtime_unions(caught) == [1, 2]
    allowed = ast.parse(
        "flags = os.O_RDONLY | os.O_DIRECTORY\ndef f(a: int | None) -> str | None: ..."
    )
    assert _runtime_unions(allowed) == []


def test_release_ships_unpack_py_verbatim(release: Path) -> None:
    shipped = (release / "unpack.py").read_bytes()
    assert shipped == unpack_py_bytes() == UNPACK_SOURCE.read_bytes()
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["unpack_py_sha256"] == hashlib.sha256(shipped).hexdigest()


@pytest.mark.unpack_script
def test_shipped_script_runs_standalone_and_fails_loudly(release: Path, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"}
    script = [unpack_script.PYTHON, "-I", "unpack.py"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*script, *args], cwd=release, env=env, capture_output=True, text=True
        )

    ok = run("--base", "--output", str(tmp_path / "data"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("OK: base restored")
    assert run("--all", "--verify-only", "--quiet").returncode == 0
    usage = run("--output", str(tmp_path / "data"))
    assert usage.returncode == 2
    (release / "depth" / "depth-0001.tar").unlink()
    failed = run("--depth", "--output", str(tmp_path / "data"))
    assert failed.returncode == 1
    assert "FAILED" in failed.stderr and "depth-0001.tar is missing" in failed.stderr
    assert "OK" not in failed.stdout


def test_windows_style_fallback_without_dir_fd_round_trips(
    release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(unpack, "_DIR_FD", False)
    unpack.unpack_release(str(release), str(tmp_path / "data"), everything=True)
    again = unpack.unpack_release(str(release), str(tmp_path / "data"), everything=True)
    assert again.skipped == len(SAMPLE)
    assert read_tree(tmp_path / "data" / "ds") == SAMPLE


@pytest.mark.unpack_script
def test_names_holding_unicode_line_breaks_round_trip(tmp_path: Path) -> None:
    files = {"a\u2028b.txt": b"x", "c\x85d/e\u2029f.txt": b"y"}
    release = pack(make_tree(tmp_path / "ds", files), tmp_path / "rel")
    unpack_script.unpack_release(str(release), str(tmp_path / "data"), everything=True)
    assert read_tree(tmp_path / "data" / "ds") == files
