"""The ``-b``/``-X`` boxes a user asks ``climio subset`` for, in degrees whatever the file's units.

The ``-d`` ranges, which ``climio eva`` takes too, are :mod:`climio.core.ranges`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from climio.errors import ClimioError
from climio.subset.regions import Region



@dataclass(frozen=True)
class Box:
    """A latitude/longitude box in degrees; ``west > east`` crosses the dateline."""

    north: float
    south: float
    west: float
    east: float

    kind = "the box"

    @property
    def description(self) -> str:
        return f"the box {self.south:g}..{self.north:g}N, {self.west:g}..{self.east:g}E"

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

    def overlaps_lat(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Latitude intervals that share more than a point with the box's (a cell beside the box is not in it)."""
        return (low < self.north) & (high > self.south)

    def overlaps_lon(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Longitude intervals ``low..high`` (degrees, ``high`` east of ``low`` by less than 360) that share more
        than a point with the box's, wherever the seam of either lies."""
        if self.width >= 360.0:
            return np.ones(np.shape(low), dtype=bool)
        start = self.west + np.mod(low - self.west, 360.0)  # the interval moved to start in [west, west + 360)
        return (start < self.west + self.width) | (start + (high - low) - 360.0 > self.west)

    def touches(self, lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
        """Cells, given by their corners (``(..., nv)`` in degrees, in order around the cell), that share some
        area with the box: a cell only beside it does not.

        The cell and the box are compared in the latitude/longitude plane (edges straight in degrees, as the box's
        own edges are) by separating axes: they are apart when their projections on an axis of the box or on the
        normal of a cell edge do not overlap. A corner at a pole, where longitude means nothing, becomes the stretch
        of the pole between its neighbours' longitudes; a cell around a pole (its edges wind through 360 degrees of
        longitude) reaches the pole at every longitude. Cells with a missing corner touch nothing."""
        lat, lon = _at_poles(np.asarray(lat_deg, dtype=np.float64), np.asarray(lon_deg, dtype=np.float64))
        valid = np.all(np.isfinite(lat) & np.isfinite(lon), axis=-1)
        lat, lon = np.where(valid[..., None], lat, 0.0), np.where(valid[..., None], lon, 0.0)
        steps = np.mod(np.diff(lon, axis=-1, append=lon[..., :1]) + 180.0, 360.0) - 180.0
        around = np.abs(steps.sum(axis=-1)) > 180.0
        x = lon[..., :1] + np.mod(lon - lon[..., :1] + 180.0, 360.0) - 180.0  # corners within 180 of the first
        low = x.min(axis=-1)
        north = lat.mean(axis=-1) > 0
        cap_low = np.where(around & north, lat.min(axis=-1), np.where(around, -90.0, lat.min(axis=-1)))
        cap_high = np.where(around & ~north, lat.max(axis=-1), np.where(around, 90.0, lat.max(axis=-1)))
        hit = self.overlaps_lat(cap_low, cap_high) & valid
        if self.width < 360.0:  # a box around the globe is bounded by its latitudes alone
            near = hit & ~around  # only these need their edges compared
            x, lat, low = x[near], lat[near], low[near]
            placed = x + (self.west + np.mod(low - self.west, 360.0) - low)[..., None]
            hit[near] = self._crosses(placed, lat) | self._crosses(placed - 360.0, lat)
        return hit

    def _crosses(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Cells at longitudes ``x`` (placed against the box) that no separating axis keeps apart from it."""
        east = self.west + self.width
        apart = (x.max(axis=-1) <= self.west) | (x.min(axis=-1) >= east)
        corners_x = np.array([self.west, east, east, self.west])
        corners_y = np.array([self.south, self.south, self.north, self.north])
        ex, ey = np.roll(x, -1, axis=-1) - x, np.roll(y, -1, axis=-1) - y
        for k in range(x.shape[-1]):
            nx, ny = -ey[..., k:k + 1], ex[..., k:k + 1]
            cell, box = nx * x + ny * y, nx * corners_x + ny * corners_y
            edge = (ex[..., k] != 0) | (ey[..., k] != 0)
            apart |= edge & ((cell.max(axis=-1) <= box.min(axis=-1)) | (box.max(axis=-1) <= cell.min(axis=-1)))
        return ~apart


def _at_poles(lat: np.ndarray, lon: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Corners (..., nv) with each corner at a pole doubled into the pole's two ends at its neighbours'
    longitudes, so that the cell's outline in the latitude/longitude plane is right; (..., 2 nv) corners."""
    pole = np.abs(lat) >= 90.0 - 1e-9
    before, after = np.roll(lon, 1, axis=-1), np.roll(lon, -1, axis=-1)
    first = np.where(pole, before, lon)
    second = np.where(pole, after, lon)
    shape = (*lat.shape[:-1], 2 * lat.shape[-1])
    lats = np.stack([lat, lat], axis=-1).reshape(shape)
    lons = np.stack([first, second], axis=-1).reshape(shape)
    return lats, lons


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


Area = Box | Region  # what -b/-X or --region cut: both tell which points and cells they hold
