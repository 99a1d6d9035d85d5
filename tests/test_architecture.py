"""The house rules of the layout, checked by walking the source's imports (STYLE 2, 5)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import dataset_devkit
from dataset_devkit.errors import MissingDependencyError
from tests.optional import allowed_missing

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
        if name.startswith("dataset_devkit.")
        and name.split(".")[1] not in ("integrity", "errors", "objectstore")
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
        missing = [name for name in exported if not _provides(package, name)]
        assert missing == [], f"{info.name}.__all__ names missing attributes: {missing}"


def _provides(package: object, name: str) -> bool:
    """*name* resolves on *package*; a lazy name whose extra this run may lack counts (its
    dependency's own tests say it is skipped, tests/optional.py)."""
    try:
        return hasattr(package, name)
    except MissingDependencyError as exc:
        if exc.module in allowed_missing():
            return True
        raise


def _fresh_python(code: str) -> str:
    """What *code* prints in a fresh interpreter that sees only this checkout's package."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(SRC.parent), "PATH": "/usr/bin:/bin"},
    ).stdout


def test_importing_the_package_and_integrity_core_stays_light() -> None:
    code = (
        "import sys, dataset_devkit, dataset_devkit.integrity, dataset_devkit.errors\n"
        "heavy = [m for m in ('numpy', 'zarr', 'torch', 'av', 'nuscenes', 'dask', 'mcap',"
        " 'PIL', 'typer', 'rich') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    assert _fresh_python(code).strip() == ""


#: What a process that only reads a store (a DataLoader's parent, whose heap each forked
#: worker inherits) must not import: building, verifying, object storage, torch, the CLI.
READER_NEVER_IMPORTS = (
    "dataset_devkit.vin_store.builder",
    "dataset_devkit.vin_store.writer",
    "dataset_devkit.vin_store.verify",
    "dataset_devkit.integrity.bucket.cache",
    "http.client",
    "multiprocessing",
    "concurrent.futures.process",
    "torch",
    "zarr",
    "numcodecs",
    "rich",
    "typer",
)


def _objects_created_by(statement: str) -> tuple[int, list[str]]:
    """gc-tracked objects *statement* creates in a fresh interpreter (numpy and msgspec, which
    reading needs, counted out), and which of READER_NEVER_IMPORTS it left imported."""
    code = (
        "import gc, sys\n"
        "import numpy, msgspec\n"
        "before = len(gc.get_objects())\n"
        f"{statement}\n"
        "print(len(gc.get_objects()) - before)\n"
        f"print(','.join(m for m in {READER_NEVER_IMPORTS!r} if m in sys.modules))\n"
    )
    objects, heavy = _fresh_python(code).splitlines()
    return int(objects), [name for name in heavy.split(",") if name]


def test_the_store_reader_imports_only_what_reading_needs() -> None:
    # Every forked DataLoader worker's first collection walks what the parent holds, so the
    # reader's import stays small. The bound is relative to the whole command line's import in
    # the same Python: how many objects an import creates differs between versions (2,900
    # against 25,800 on 3.11; 4,600 for the reader on 3.13).
    reader, heavy = _objects_created_by(
        "from dataset_devkit.vin_store import VinOfflineStoreReader"
    )
    assert heavy == []
    everything, _ = _objects_created_by(
        "from dataset_devkit.cli.app import full_command; full_command()"
    )
    assert reader * 4 < everything, (reader, everything)


#: What the shard writer (the module a build's fork server preloads before it forks the
#: first worker, which a build from sources waits for) must not import: publication,
#: manifests and verification are the driver's work.
SHARD_WRITER_NEVER_IMPORTS = (
    "dataset_devkit.integrity.publish",
    "dataset_devkit.integrity.manifest",
    "dataset_devkit.integrity.verify",
    "dataset_devkit.integrity.scan",
    "dataset_devkit.vin_store.verify",
    "dataset_devkit.vin_store.reader",
)


def test_the_shard_writer_imports_no_publication() -> None:
    code = (
        "import sys, dataset_devkit.vin_store._shard_task\n"
        f"print(','.join(m for m in {SHARD_WRITER_NEVER_IMPORTS!r} if m in sys.modules))\n"
    )
    assert _fresh_python(code).strip() == ""


def test_every_name_of_the_integrity_core_resolves() -> None:
    # Its names are imported on first use: each one listed must come from its module.
    import dataset_devkit.integrity as core
    from dataset_devkit.integrity.publish import publish_tree
    from dataset_devkit.integrity.stamps import file_stamp

    assert sorted(core.__all__) == sorted(core._MODULE_OF)
    for name in core.__all__:
        value = getattr(core, name)
        assert (
            getattr(
                importlib.import_module(f"dataset_devkit.integrity.{core._MODULE_OF[name]}"), name
            )
            is value
        )
    assert core.publish_tree is publish_tree
    assert set(core.__all__) <= set(dir(core))
    from dataset_devkit.integrity import publish

    assert publish.file_stamp is file_stamp  # still importable from where it was
    try:
        core.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


# --------------------------------------------------------------------------- import graph
#: The nuScenes pipeline, in the order the data flows. A module may import its own stage and
#: earlier ones, never a later one; ``sdk`` and ``build`` both sit on top and ignore each other.
NUSCENES_STAGES: dict[str, int] = {
    "constants": 0,
    "options": 0,
    "tables": 0,
    "extensions": 0,
    "spec": 0,
    "common": 0,
    "samples": 0,
    "samples_robot": 0,
    "ingest": 1,
    "evidence": 2,
    "export": 3,
    "validation": 4,
    "sdk": 5,
    "config": 6,
    "cluster": 6,
    "build": 6,
}
_TOP = 7  # the package facade ``dataset_devkit.nuscenes`` itself


def _resolved_imports(path: Path, known: set[str]) -> set[str]:
    """Absolute imports of *path* as module names, ``from pkg import submodule`` resolved."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return found


def _graph(prefix: str) -> dict[str, set[str]]:
    """Module -> the modules under *prefix* it imports (TYPE_CHECKING imports included)."""
    modules = dict(_modules())
    for name in list(modules):
        if name.endswith(".__init__"):
            modules[name.removesuffix(".__init__")] = modules.pop(name)
    known = set(modules)
    ours = {name for name in known if name == prefix or name.startswith(prefix + ".")}
    return {name: (_resolved_imports(modules[name], known) & ours) - {name} for name in ours}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def _rank(module: str) -> int:
    return NUSCENES_STAGES[_stage(module)] if _stage(module) else _TOP


def test_every_nuscenes_module_belongs_to_a_known_stage() -> None:
    unknown = sorted(
        m
        for m in _graph("dataset_devkit.nuscenes")
        if _stage(m) and _stage(m) not in NUSCENES_STAGES
    )
    assert unknown == [], f"add these to NUSCENES_STAGES in pipeline order: {unknown}"


def test_nuscenes_stages_import_only_themselves_and_earlier_stages() -> None:
    violations = []
    for module, targets in sorted(_graph("dataset_devkit.nuscenes").items()):
        for target in sorted(targets):
            later = _rank(target) > _rank(module)
            sideways = {_stage(module), _stage(target)} == {"sdk", "build"}
            if later or sideways:
                violations.append(f"{module} imports {target}")
    assert violations == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_circle_and_accepts_a_chain() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_nuscenes_and_release_have_no_import_circle() -> None:
    for system in ("dataset_devkit.nuscenes", "dataset_devkit.release"):
        assert _cycles(_graph(system)) == [], system


def test_objectstore_imports_only_the_errors() -> None:
    violations = [
        f"{module} imports {name}"
        for module, path in _modules()
        if module.startswith("dataset_devkit.objectstore")
        for name in _imports(path)
        if name.startswith("dataset_devkit.")
        and name.split(".")[1] not in ("objectstore", "errors")
    ]
    assert violations == []


def test_no_system_and_not_the_integrity_core_imports_the_croissant_package() -> None:
    # Croissant describes finished trees from the outside: a system's build never needs it.
    violations = [
        f"{module} imports {name}"
        for module, path in _modules()
        if module.split(".")[1] in (*SYSTEMS, "integrity", "objectstore", "kinds", "errors")
        for name in _imports(path)
        if name.startswith("dataset_devkit.croissant")
    ]
    assert violations == []
