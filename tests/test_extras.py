"""The extras table (``dataset_devkit.extras``) is the one ``pyproject.toml`` declares, and a
missing package is one message naming every package and the extras that bring them."""

from __future__ import annotations

import copy
import pickle
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dataset_devkit.errors import MissingDependencyError
from dataset_devkit.extras import (
    EXTRAS,
    import_optional,
    missing_modules,
    package_of,
    require_extras,
)
from tests.absent import without

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
#: Extras that are not a part of the toolkit a command needs: every extra, and our tools.
_NOT_PARTS = {"all", "dev", "bench"}


def _distribution(requirement: str) -> str:
    """``"dask[distributed]>=2024.1"`` → ``"dask[distributed]"``; ``"Pillow>=10"`` → Pillow."""
    return re.split(r"[<>=!~; ]", requirement, maxsplit=1)[0]


def test_the_table_lists_every_extra_of_pyproject_with_exactly_its_packages() -> None:
    declared = tomllib.loads(PYPROJECT.read_text("utf-8"))["project"]["optional-dependencies"]
    parts = {name: deps for name, deps in declared.items() if name not in _NOT_PARTS}
    assert set(EXTRAS) == set(parts)
    for extra, modules in EXTRAS.items():
        assert {package_of(m) for m in modules} == {_distribution(d) for d in parts[extra]}, extra


@pytest.mark.needs("nuscenes")
@pytest.mark.needs("torch")
def test_every_module_of_every_extra_is_installed_here() -> None:
    assert missing_modules(EXTRAS) == []  # CI installs [all]: the table names real modules


@pytest.mark.needs("nuscenes")
@pytest.mark.needs("torch")
def test_a_missing_extra_names_every_package_and_one_install_line(
    tmp_path: Path, package_env: dict[str, str]
) -> None:
    code = (
        "from dataset_devkit.extras import require_extras\n"
        "require_extras('dataset-devkit demo', ['video', 'mcap', 'nuscenes', 'preview'])\n"
    )
    env = without(package_env, tmp_path, ["PIL", "matplotlib", "zstandard"])
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.stderr.strip().splitlines()[-1] == (
        "dataset_devkit.errors.MissingDependencyError: dataset-devkit demo needs the Python "
        "packages 'Pillow', 'zstandard', 'matplotlib', which are not installed; install them "
        "with: pip install 'dataset-devkit[video,mcap,preview]'"
    )


def test_import_optional_names_the_extra_and_keeps_a_broken_install_s_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert import_optional("json", extra="video", purpose="x").dumps([]) == "[]"
    with pytest.raises(MissingDependencyError, match=r"'not_here'.*dataset-devkit\[mcap\]"):
        import_optional("not_here", extra="mcap", purpose="y")
    assert (package_of("yaml"), package_of("PIL.Image"), package_of("av")) == (
        "PyYAML",
        "Pillow",
        "av",
    )
    (tmp_path / "broken_package.py").write_text("import a_dependency_it_lacks\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as inner:  # installed, but broken inside
        import_optional("broken_package", extra="video", purpose="z")
    assert not isinstance(inner.value, MissingDependencyError)


def test_the_error_survives_pickling_and_copying_with_its_facts() -> None:
    error = MissingDependencyError("PIL", extra="preview", purpose="p", more=[("av", "video")])
    for again in (pickle.loads(pickle.dumps(error)), copy.copy(error)):
        assert type(again) is MissingDependencyError
        assert str(again) == str(error)
        assert (again.packages, again.extras) == (("Pillow", "av"), ("preview", "video"))


@pytest.mark.needs("nuscenes")
@pytest.mark.needs("torch")
def test_require_extras_passes_when_everything_is_installed() -> None:
    require_extras("everything", EXTRAS)
