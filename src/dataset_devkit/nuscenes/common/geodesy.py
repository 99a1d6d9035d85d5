"""Geodesy: WGS84 to ECEF to a local ENU tangent frame, and WGS84 to Web Mercator (EPSG:3857).

pyproj does the ellipsoid work (no flat-earth shortcut); the ECEF to ENU step is the exact
rotation into the tangent plane at the origin.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from dataset_devkit.errors import FormatError, MissingDependencyError
from dataset_devkit.nuscenes.spec import Vec3

__all__ = ["LocalEnu", "to_web_mercator", "wgs84_to_ecef"]


@lru_cache(maxsize=4)
def _transformer(src: str, dst: str) -> Any:
    try:
        from pyproj import Transformer
    except ImportError as exc:  # pragma: no cover - the nuscenes and mcap extras install it
        raise MissingDependencyError(
            "pyproj", extra="nuscenes", purpose="GNSS fixes to ego poses"
        ) from exc
    return Transformer.from_crs(src, dst, always_xy=True)


def _check(lat: float, lon: float, alt: float) -> None:
    if not (math.isfinite(lat) and math.isfinite(lon) and math.isfinite(alt)):
        raise FormatError(f"GNSS fix must be finite, found ({lat}, {lon}, {alt})")
    if not (-90.0 <= lat <= 90.0 and -180.0 <= lon <= 180.0):
        raise FormatError(f"GNSS fix out of range: latitude {lat}, longitude {lon}")


def wgs84_to_ecef(lat: float, lon: float, alt: float) -> Vec3:
    """Geodetic WGS84 (degrees, ellipsoidal metres) to ECEF metres (EPSG:4979 → EPSG:4978)."""
    _check(lat, lon, alt)
    x, y, z = _transformer("EPSG:4979", "EPSG:4978").transform(lon, lat, alt)
    return (float(x), float(y), float(z))


def to_web_mercator(lat: float, lon: float) -> tuple[float, float]:
    """WGS84 degrees to Web Mercator metres (EPSG:4326 → EPSG:3857)."""
    _check(lat, lon, 0.0)
    x, y = _transformer("EPSG:4326", "EPSG:3857").transform(lon, lat)
    return (float(x), float(y))


class LocalEnu:
    """A local east-north-up tangent frame at a WGS84 origin."""

    def __init__(self, lat: float, lon: float, alt: float) -> None:
        self.origin_ecef = wgs84_to_ecef(lat, lon, alt)
        phi, lam = math.radians(lat), math.radians(lon)
        sp, cp, sl, cl = math.sin(phi), math.cos(phi), math.sin(lam), math.cos(lam)
        self._rows = (
            (-sl, cl, 0.0),
            (-sp * cl, -sp * sl, cp),
            (cp * cl, cp * sl, sp),
        )

    def from_wgs84(self, lat: float, lon: float, alt: float) -> Vec3:
        """Position of a WGS84 point in this ENU frame (metres)."""
        x, y, z = wgs84_to_ecef(lat, lon, alt)
        ox, oy, oz = self.origin_ecef
        dx, dy, dz = x - ox, y - oy, z - oz
        # Added left to right, as Python 3.11's sum() did: 3.12 made sum() of floats
        # compensated, which would tie the recorded bytes to the Python version.
        e, n, u = (0.0 + r[0] * dx + r[1] * dy + r[2] * dz for r in self._rows)
        return (e, n, u)

    def to_wgs84(self, east: float, north: float, up: float) -> tuple[float, float, float]:
        """Inverse of :meth:`from_wgs84`: ``(latitude, longitude, altitude)``."""
        rows = self._rows
        d = [0.0 + rows[0][c] * east + rows[1][c] * north + rows[2][c] * up for c in range(3)]
        ox, oy, oz = self.origin_ecef
        lon, lat, alt = _transformer("EPSG:4978", "EPSG:4979").transform(
            ox + d[0], oy + d[1], oz + d[2]
        )
        return (float(lat), float(lon), float(alt))
