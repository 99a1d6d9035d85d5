"""Run one seeded mutation against a format's reader and validator and classify the outcome.

A format is a valid tree (built once), the metadata files to damage, a reader that returns
what a user would get (reduced to a comparable digest) and a validator that returns its
issues. A mutation is written into a writable copy of the tree, both run under a deadline,
and the file's original bytes are put back, so thousands of mutations share one build.

Outcome classes, best first: the reader returned the original data and the validator found
nothing (``correct data``, e.g. whitespace added to JSON); something was flagged with a
typed error or issue naming a file of the tree (``typed error naming file``); flagged with a
typed error that names no file; a raw (non-devkit) exception; a hang; or the reader returned
different data and nothing flagged it (``undetected change``).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from dataset_devkit.errors import DevkitError
from tests.fuzz.mutations import mutate

__all__ = [
    "CLASSES",
    "CORRECT",
    "HANG",
    "NAMED",
    "RAW",
    "UNDETECTED",
    "UNNAMED",
    "Format",
    "Outcome",
    "Tree",
    "digest",
    "prepare",
    "run_mutation",
]

CORRECT = "correct data"
NAMED = "typed error naming file"
UNNAMED = "typed error not naming file"
RAW = "raw exception"
HANG = "hang"
UNDETECTED = "undetected change"
CLASSES = (CORRECT, NAMED, UNNAMED, RAW, HANG, UNDETECTED)
FAILURES = frozenset((UNNAMED, RAW, HANG, UNDETECTED))


@dataclass(frozen=True)
class Format:
    """How to build, damage, read and validate one on-disk format."""

    name: str
    build: Callable[[Path], Path]
    files: Callable[[Path], list[str]]
    read: Callable[[Path], Any]
    validate: Callable[[Path], Sequence[str]]


@dataclass
class Tree:
    """A writable valid tree of one format with its baseline read."""

    fmt: Format
    root: Path
    files: list[str]
    baseline: Any
    names: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Outcome:
    """What one mutation did: its seed, the file, the mutation and the outcome class."""

    fmt: str
    seed: int
    file: str
    mutation: str
    cls: str
    detail: str = ""

    def describe(self) -> str:
        """One line a developer can reproduce from (format and seed)."""
        return f"{self.fmt} seed {self.seed}: {self.cls}: {self.file}: {self.mutation}" + (
            f"\n    {self.detail}" if self.detail else ""
        )


def digest(*parts: Any) -> str:
    """A stable digest of arrays, bytes and plain values (what the reader returned)."""
    h = hashlib.sha256()
    for part in parts:
        if hasattr(part, "tobytes") and hasattr(part, "dtype"):
            h.update(f"{part.dtype}{part.shape}".encode())
            h.update(part.tobytes())
        elif isinstance(part, bytes):
            h.update(part)
        else:
            h.update(repr(part).encode())
        h.update(b"\x00")
    return h.hexdigest()


class Hang(BaseException):
    """Raised by the deadline: a BaseException, so no ``except Exception`` swallows it."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Interrupt Python code still running after *seconds* (main thread only)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _make_writable(root: Path) -> None:
    for dirpath, _dirs, names in os.walk(root):
        Path(dirpath).chmod(0o755)
        for name in names:
            (Path(dirpath) / name).chmod(0o644)


def prepare(fmt: Format, workdir: Path) -> Tree:
    """Build *fmt*'s valid tree under *workdir*, make it writable, record the baseline."""
    built = fmt.build(workdir / "built")
    root = workdir / "tree"
    shutil.copytree(built, root, symlinks=True)
    _make_writable(root)
    issues = list(fmt.validate(root))
    if issues:
        raise AssertionError(f"{fmt.name}: the valid tree does not validate: {issues[:3]}")
    every = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
    names = frozenset(every) | frozenset(Path(p).name for p in every)
    return Tree(
        fmt=fmt, root=root, files=sorted(fmt.files(root)), baseline=fmt.read(root), names=names
    )


def _attempt(call: Callable[[Path], Any], root: Path) -> tuple[str, Any]:
    try:
        return "ok", call(root)
    except DevkitError as exc:
        return "typed", exc
    except Exception as exc:
        return "raw", exc


def _raw_detail(side: str, exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-2:]
    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames))
    return f"{side}: {type(exc).__name__}: {str(exc)[:300]} ({where})"


def classify(tree: Tree, timeout: float) -> tuple[str, str]:
    """Run reader and validator on the (mutated) tree; return (class, detail)."""
    try:
        with deadline(timeout):
            read_kind, read_value = _attempt(tree.fmt.read, tree.root)
            check_kind, check_value = _attempt(tree.fmt.validate, tree.root)
    except Hang:
        return HANG, f"no answer within {timeout} s"
    for side, kind, value in (
        ("reader", read_kind, read_value),
        ("validator", check_kind, check_value),
    ):
        if kind == "raw":
            return RAW, _raw_detail(side, value)
    messages = []
    if read_kind == "typed":
        messages.append(("reader", str(read_value)))
    if check_kind == "typed":
        messages.append(("validator", str(check_value)))
    else:
        messages.extend(("validator issue", str(issue)) for issue in check_value)
    if not messages:
        if read_value == tree.baseline:
            return CORRECT, ""
        return UNDETECTED, "the reader returned different data and the validator found nothing"
    for side, message in messages:
        if not any(name in message for name in tree.names):
            return UNNAMED, f"{side}: {message[:300]}"
    return NAMED, ""


def run_mutation(tree: Tree, seed: int, *, timeout: float = 10.0) -> Outcome:
    """Apply mutation *seed* to a file of *tree*, classify, and restore the file."""
    rng = random.Random(f"{tree.fmt.name}/{seed}")
    rel = rng.choice(tree.files)
    path = tree.root / rel
    original = path.read_bytes()
    mutated, what = mutate(original, rng)
    try:
        path.write_bytes(mutated)
        cls, detail = classify(tree, timeout)
    finally:
        path.write_bytes(original)
    return Outcome(tree.fmt.name, seed, rel, what, cls, detail)
