"""The ``dataset-devkit`` command line: thin commands that parse, call the library, render."""

from __future__ import annotations

from dataset_devkit.cli.app import main, new_app

__all__ = ["main", "new_app"]
