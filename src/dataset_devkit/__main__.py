"""``python -m dataset_devkit``: the same CLI as the ``dataset-devkit`` script."""

from __future__ import annotations

from dataset_devkit.cli import main

main()
