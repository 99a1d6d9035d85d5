"""Leaf helpers every stage may use: tokens, geometry, geodesy, JPEG codec, argument checks.

In: plain values (strings, arrays, bytes). Out: plain values. Nothing here reads or writes a
dataset or imports a pipeline stage, so ingest, evidence, export, validation, the SDK and the
build service can all depend on it without an import circle. Contract: the constants of
:mod:`dataset_devkit.nuscenes.spec`.
"""

from __future__ import annotations

__all__: list[str] = []
