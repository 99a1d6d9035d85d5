"""dataset-devkit: build, verify, publish, ship and read immutable ML datasets.

Importing the package stays light: each system lives in its own subpackage
(``integrity``, ``vin_store``, ``nuscenes``, ``release``, ``stereo``) and heavy
dependencies are imported lazily where they are used.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
