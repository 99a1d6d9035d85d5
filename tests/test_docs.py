"""Every code block of README.md and docs/ runs, as a user would run it.

Blocks are read in document order. ``bash`` and ``python`` blocks run in one working folder per
document that holds a copy of ``dataset-devkit demo demo-out`` (the tour's starting point),
with the installed ``dataset-devkit`` on PATH; a block that fails fails the test, naming the
file and line. Blocks that are not commands say so by their language (``text``, ``json``,
``toml``, ``powershell``: layouts, file contents, Windows commands). Two kinds of commands are
checked without running them here, for a stated reason:

- ``bash ci``: the README's quick start; ``.ci/run`` runs exactly these lines (running the
  test suite from inside the test suite would recurse).
- ``bash benchmark``: a benchmark takes minutes of CPU; the script must exist, the block must
  parse, and every ``--option`` it uses must be one the script's ``--help`` lists.

The tour's first block, ``dataset-devkit demo demo-out``, is the command the fixture runs
to make the copy every document starts from.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.optional import need

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
RUN = {"bash", "python"}
SHOWN = {"text", "json", "toml", "powershell"}
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
#: Words user-facing docs never use (internal notes, issue numbers, machine paths).
INTERNAL = re.compile(
    r"\bthe seed\b|\bseed'?s? `?0\d\d|\bseed's\b|\bissues? #?\d|\bTask \d|/work/|/tmp/[a-z]"
    r"|\bother engineers\b|\bour team\b",
    re.I,
)


def _blocks(path: Path) -> list[tuple[int, str, str]]:
    text = path.read_text("utf-8")
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(1).strip(), m.group(2))
        for m in FENCE.finditer(text)
    ]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH")) if p
    )
    env["COLUMNS"] = "100"
    return env


DEMO = "dataset-devkit demo demo-out"
#: Benchmarks that import an optional dependency (``tests/optional.py``) before their
#: options are parsed: their ``--help`` is checked where it is installed.
BENCHMARK_NEEDS = {"benchmarks/objectstore_cache_epochs.py": "torch"}


@pytest.fixture(scope="session")
def demo_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("docs-demo")
    subprocess.run(
        ["bash", "-euo", "pipefail", "-c", DEMO],
        cwd=folder,
        env=_env(),
        check=True,
        capture_output=True,
        timeout=600,
    )
    return folder / "demo-out"


def _doc_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_docs_speak_to_users(doc: Path) -> None:
    hits = [
        f"{_doc_id(doc)}:{n}: {line.strip()}"
        for n, line in enumerate(doc.read_text("utf-8").splitlines(), 1)
        if INTERNAL.search(line)
    ]
    assert hits == []


@pytest.mark.parametrize("doc", DOCS, ids=_doc_id)
def test_every_code_block_is_tagged(doc: Path) -> None:
    known = RUN | SHOWN | {"bash ci", "bash benchmark"}
    bad = [
        f"{_doc_id(doc)}:{line}: ```{info}" for line, info, _ in _blocks(doc) if info not in known
    ]
    assert bad == [], "tag each block: bash/python run; text/json/toml/powershell are shown"


def _runnable_docs() -> list[Path]:
    return [d for d in DOCS if any(info in RUN for _, info, _ in _blocks(d))]


@pytest.mark.docs
@pytest.mark.parametrize("doc", _runnable_docs(), ids=_doc_id)
def test_bash_and_python_blocks_run(doc: Path, demo_out: Path, tmp_path: Path) -> None:
    shutil.copytree(demo_out, tmp_path / "demo-out", symlinks=True)
    for line, info, body in _blocks(doc):
        if info == "bash":  # the fixture ran exactly this command: the copy is its output
            body = "\n".join(ln for ln in body.splitlines() if ln.split("#")[0].strip() != DEMO)
        if not body.strip():
            continue
        if info == "bash":
            argv = ["bash", "-euo", "pipefail", "-c", body]
        elif info == "python":  # as a script file, as a user saves it (spawn pools need one)
            script = tmp_path / f"doc_block_{line}.py"
            script.write_text(body, "utf-8")
            argv = [sys.executable, script.name]
        else:
            continue
        done = subprocess.run(
            argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (
            f"{_doc_id(doc)}:{line}: ```{info} block failed ({done.returncode})\n"
            f"{body}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
        )


def test_the_quick_start_is_two_commands_that_ci_runs() -> None:
    blocks = [b for d in DOCS for b in _blocks(d) if b[1] == "bash ci"]
    assert len(blocks) == 1
    commands = [ln.split("#")[0].strip() for ln in blocks[0][2].splitlines() if ln.strip()]
    assert commands == ["bash scripts/quickstart.sh demo", "bash scripts/quickstart.sh test"]
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    for command in commands:
        assert command in ci


def _benchmark_blocks() -> list[tuple[str, str]]:
    return [
        (f"{_doc_id(d)}:{line}", body)
        for d in DOCS
        for line, info, body in _blocks(d)
        if info == "bash benchmark"
    ]


@pytest.mark.parametrize(
    ("where", "body"), _benchmark_blocks(), ids=[w for w, _ in _benchmark_blocks()]
)
def test_benchmark_commands_name_real_scripts_and_options(where: str, body: str) -> None:
    assert subprocess.run(["bash", "-n", "-c", body], check=False).returncode == 0, where
    scripts = re.findall(r"benchmarks/\w+\.py", body)
    assert scripts, f"{where}: no benchmarks/*.py script in the block"
    for script in set(scripts):
        assert (ROOT / script).is_file(), f"{where}: {script} does not exist"
        if script in BENCHMARK_NEEDS:  # it imports the dependency to parse its arguments
            need(BENCHMARK_NEEDS[script])
        shown = subprocess.run(
            [sys.executable, str(ROOT / script), "--help"],
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert shown.returncode == 0, f"{where}: {script} --help failed\n{shown.stderr}"
        for option in set(re.findall(r"(?<![\w-])--[a-z][\w-]*", body)):
            assert option in shown.stdout, f"{where}: {script} has no option {option}"
