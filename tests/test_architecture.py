"""The house rules of the layout, checked by walking the source's imports (STYLE 2, 5)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import dataset_devkit

SRC = Path(dataset_devkit.__file__).parent
SYSTEMS = ("vin_store", "nuscenes", "release", "stereo")
STDLIB = set(sys.stdlib_module_names)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _modules() -> list[tuple[str, Path]]:
    return [
        (".".join(path.relative_to(SRC.parent).with_suffix("").parts), path)
        for path in sorted(SRC.rglob("*.py"))
    ]


def test_systems_import_only_integrity_errors_and_themselves() -> None:
    violations = []
    for module, path in _modules():
        parts = module.split(".")
        if len(parts) < 2 or parts[1] not in SYSTEMS:
            continue
        own = parts[1]
        for name in _imports(path):
            if not name.startswith("dataset_devkit."):
                continue
            target = name.split(".")[1]
            if (target in SYSTEMS and target != own) or target in ("cli", "demo"):
                violations.append(f"{module} imports {name}")
    assert violations == []


def test_nothing_outside_the_cli_imports_the_cli() -> None:
    violations = [
        f"{module} imports {name}"
        for module, path in _modules()
        if not module.startswith(("dataset_devkit.cli", "dataset_devkit.__main__"))
        for name in _imports(path)
        if name.startswith("dataset_devkit.cli")
    ]
    assert violations == []


def test_integrity_core_imports_no_system() -> None:
    violations = [
        f"{module} imports {name}"
        for module, path in _modules()
        if module.startswith("dataset_devkit.integrity")
        for name in _imports(path)
        if name.startswith("dataset_devkit.") and name.split(".")[1] not in ("integrity", "errors")
    ]
    assert violations == []


def test_unpack_script_uses_only_the_standard_library() -> None:
    unpack = SRC / "release" / "unpack.py"
    outside = {name for name in _imports(unpack) if name.split(".")[0] not in STDLIB}
    assert outside == set()


def _isort_key(name: str) -> tuple[int, str]:
    """Ruff's RUF022 order: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return (0, name)
    return (1 if name[:1].isupper() else 2, name)


def test_every_public_package_lists_its_names_sorted_and_complete() -> None:
    for info in pkgutil.walk_packages([str(SRC)], prefix="dataset_devkit."):
        if not info.ispkg or info.name.split(".")[-1].startswith("_"):
            continue
        package = importlib.import_module(info.name)
        exported = getattr(package, "__all__", None)
        assert exported is not None, f"{info.name} has no __all__"
        assert list(exported) in (sorted(exported), sorted(exported, key=_isort_key)), (
            f"{info.name}.__all__ is not sorted"
        )
        missing = [name for name in exported if not hasattr(package, name)]
        assert missing == [], f"{info.name}.__all__ names missing attributes: {missing}"


def test_importing_the_package_and_integrity_core_stays_light() -> None:
    code = (
        "import sys, dataset_devkit, dataset_devkit.integrity, dataset_devkit.errors\n"
        "heavy = [m for m in ('numpy', 'zarr', 'torch', 'av', 'nuscenes', 'dask', 'mcap',"
        " 'PIL', 'typer', 'rich') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(SRC.parent), "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == ""
