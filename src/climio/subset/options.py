"""The ``-b``/``-X`` boxes a user asks ``climio subset`` for, in degrees whatever the file's units.

The ``-d`` ranges, which ``climio eva`` takes too, are :mod:`climio.core.ranges`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from climio.errors import ClimioError



@dataclass(frozen=True)
class Box:
    """A latitude/longitude box in degrees; ``west > east`` crosses the dateline."""

    north: float
    south: float
    west: float
    east: float

    @property
    def width(self) -> float:
        """Eastward extent from ``west`` to ``east`` in degrees, 0 < width <= 360."""
        if self.east - self.west >= 360.0:
            return 360.0
        return (self.east - self.west) % 360.0

    def contains(self, lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
        """Inclusive test of points (degrees): centres on the box's edges are inside."""
        return self.contains_lat(lat_deg) & self.contains_lon(lon_deg)

    def contains_lat(self, lat_deg: np.ndarray) -> np.ndarray:
        return (lat_deg >= self.south) & (lat_deg <= self.north)

    def contains_lon(self, lon_deg: np.ndarray) -> np.ndarray:
        if self.width >= 360.0:
            return np.ones(np.shape(lon_deg), dtype=bool)
        return np.mod(lon_deg - self.west, 360.0) <= self.width


def _four(text: str, option: str) -> tuple[float, float, float, float]:
    parts = text.split(",")
    if len(parts) != 4:
        raise ClimioError(f"{option} {text}: expected four numbers", collective=True)
    try:
        a, b, c, d = (float(p) for p in parts)
    except ValueError:
        raise ClimioError(f"{option} {text}: expected four numbers", collective=True) from None
    return a, b, c, d


def parse_box(text: str, option: str) -> Box:
    """``-b NORTH,SOUTH,EAST,WEST`` (pagoda) or ``-X LONMIN,LONMAX,LATMIN,LATMAX`` (NCO)."""
    if option == "-b":
        north, south, east, west = _four(text, option)
    else:
        west, east, south, north = _four(text, option)
    if north < south:
        raise ClimioError(f"{option} {text}: north {north:g} is south of south {south:g}", collective=True)
    for lat in (north, south):
        if not -90.0 <= lat <= 90.0:
            raise ClimioError(f"{option} {text}: latitude {lat:g} is outside -90..90", collective=True)
    if east == west:
        raise ClimioError(f"{option} {text}: the box has no width (east == west); for all longitudes "
                          f"give -180,180", collective=True)
    for lon in (east, west):
        if not -360.0 <= lon <= 360.0:
            raise ClimioError(f"{option} {text}: longitude {lon:g} is outside -360..360", collective=True)
    return Box(north, south, west, east)
