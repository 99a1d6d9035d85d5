"""nuScenes export: recordings (MCAP, decoded video) to an official ``v1.0-trainval`` dataroot."""

from __future__ import annotations

__all__: list[str] = []
