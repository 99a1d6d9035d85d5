"""The ``dataset-devkit demo`` tour: every system run on embedded sample data.

Each system contributes one module ``dataset_devkit.demo.<name>`` with a
``run(out: Path) -> DemoReport`` function, listed in :data:`DEMO_STEPS` in tour order.
The library never prints: steps return reports and the CLI renders them.
"""

from __future__ import annotations

from dataset_devkit.demo.report import DemoReport, DemoStep, run_demo

__all__ = ["DEMO_EXTRAS", "DEMO_STEPS", "DemoReport", "DemoStep", "run_demo"]

#: ``dataset_devkit.demo.<name>`` modules run by ``dataset-devkit demo``, in order.
DEMO_STEPS: tuple[str, ...] = (
    "integrity",
    "nuscenes",
    "nuscenes_publish",
    "release",
    "vin_store",
    "stereo",
    "croissant",
    "preview",
)

#: The extras the steps import (checked before the first step writes anything).
DEMO_EXTRAS: tuple[str, ...] = ("video", "mcap", "nuscenes", "preview")
