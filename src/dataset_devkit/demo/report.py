"""What one demo step made, as plain data the CLI renders."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dataset_devkit.extras import require_extras


@dataclass(frozen=True, slots=True)
class DemoReport:
    """The outcome of one demo step.

    Parameters
    ----------
    title
        The system shown, e.g. ``"integrity core"``.
    lines
        ``(label, value)`` pairs in display order: what was made, where, what was checked.
    root_sha256
        Root content hashes of the trees the step published, by a short name.
    try_next
        Command lines (argument lists, without the program name) a user can run next on
        what the step wrote, so the tour ends where the user's own work begins.
    """

    title: str
    lines: Sequence[tuple[str, str]] = ()
    root_sha256: dict[str, str] = field(default_factory=dict)
    try_next: Sequence[tuple[str, ...]] = ()


DemoStep = Callable[[Path], DemoReport]


def run_demo(out: Path, steps: Sequence[str], extras: Sequence[str] = ()) -> Iterator[DemoReport]:
    """Run each named step (``dataset_devkit.demo.<name>.run``) into its own folder of *out*.

    The *extras* the steps need are checked first: a missing one stops the demo before
    its first step writes anything, naming every package to install.
    """
    require_extras("the demo", extras)
    for name in steps:
        module = importlib.import_module(f"dataset_devkit.demo.{name}")
        step: DemoStep = module.run
        target = out / name
        yield step(target)
