"""Regions for ``climio subset --region``: polygons from a GeoJSON file or a shapefile, and the cells they hold.

A region is the union of the chosen features' polygons (holes and multipolygons included), in longitude and
latitude degrees. It answers what a box answers (:class:`climio.subset.options.Box`), so every grid kind cuts by
it the way it cuts by a box: :meth:`Region.contains` for cell centres, :meth:`Region.touches` for cells by their
bounds. Tests are made in the longitude-latitude plane, with each point or cell also shifted by 360 degrees
either way, so that a region drawn across the dateline (longitudes beyond 180) or a cell on the other side of a
file's seam meets it; a region around a pole is drawn there as in Natural Earth's Antarctica, along the pole
from one longitude to the other. :meth:`Region.fractions` gives the part of each cell inside the region, by
exact polygon intersection in that plane.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from climio.errors import ClimioError
from climio.subset.grids import EARTH_RADIUS_M

NAME_PROPERTIES = ("name", "NAME", "name_en", "NAME_EN", "ADMIN", "admin", "id")
SHIFTS = (0.0, -360.0, 360.0)
SLIVER = 1e-12  # fractions of a cell's area this close to 0 or 1 are the overlay's rounding


@dataclass(frozen=True)
class Region:
    """The polygons a user asked for, in longitude/latitude degrees (a shapely geometry)."""

    path: str
    name: str | None
    shape: Any  # shapely Polygon or MultiPolygon
    kind = "the region"

    @property
    def description(self) -> str:
        return f"the region {self.name!r} of {self.path}" if self.name else f"the region of {self.path}"

    def contains(self, lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
        """Points (degrees) in the region, its edges included."""
        import shapely

        lat, lon = np.broadcast_arrays(np.asarray(lat_deg, np.float64), np.asarray(lon_deg, np.float64))
        x = _into(lon, self.shape)
        inside = np.zeros(lat.shape, dtype=bool)
        known = np.isfinite(lat) & np.isfinite(x)
        for shift in SHIFTS:
            inside[known] |= shapely.intersects_xy(self.shape, x[known] + shift, lat[known])
        return inside

    def touches(self, lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
        """Cells, given by their corners ((..., nv) degrees, in order around each), that share some area with
        the region (a cell only beside it does not); a cell with a missing corner touches nothing."""
        return self.fractions(lat_deg, lon_deg) > 0

    def fractions(self, lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
        """The part of each cell's area (corners (..., nv) in degrees) inside the region, 0 to 1, by exact
        intersection of polygons in the longitude-latitude plane."""
        import shapely

        cells = _polygons(np.asarray(lat_deg, np.float64), np.asarray(lon_deg, np.float64), self.shape)
        out = np.zeros(cells.shape, dtype=np.float64)
        valid = ~shapely.is_missing(cells)
        area = np.where(valid, shapely.area(cells), 0.0)
        valid &= area > 0
        if not valid.any():
            return out
        region = self.shape
        shapely.prepare(region)
        for shift in SHIFTS:
            moved = shapely.transform(cells[valid], lambda xy, s=shift: xy + np.array([s, 0.0]))
            near = shapely.intersects(region, moved)
            part = np.zeros(moved.shape)
            part[near] = shapely.area(shapely.intersection(moved[near], region))
            out[valid] += part
        out[valid] /= area[valid]
        # a cell only along the region's edge meets it in a sliver of rounding: none of it is inside
        return np.where(out < SLIVER, 0.0, np.where(out > 1.0 - SLIVER, 1.0, out))


def _into(lon: np.ndarray, shape: Any) -> np.ndarray:
    """Longitudes moved into the 360 degrees that start at the region's westernmost point."""
    west = shape.bounds[0]
    return west + np.mod(lon - west, 360.0)


def _polygons(lat: np.ndarray, lon: np.ndarray, shape: Any) -> np.ndarray:
    """The cells as shapely polygons in the longitude-latitude plane, None where a corner is missing.

    Each cell's corners are unwrapped step by step (no step over 180 degrees) and the cell moved into the 360
    degrees from the region's west. A corner at a pole becomes the stretch of the pole between its neighbours'
    longitudes; a cell around a pole (its steps wind through 360 degrees) is closed along the pole. A cell's
    polygon depends on its corners alone, so that every rank count gives the same fractions."""
    import shapely

    flat_lat = lat.reshape(-1, lat.shape[-1])
    flat_lon = lon.reshape(-1, lon.shape[-1])
    # every corner doubled, a polar one at its two neighbours' longitudes (the others twice, the repeat removed
    # below: each cell is built the same whatever cells come with it)
    pole = np.abs(flat_lat) >= 90.0 - 1e-9
    before, after = np.roll(flat_lon, 1, axis=1), np.roll(flat_lon, -1, axis=1)
    doubled = (len(flat_lat), 2 * flat_lat.shape[1])
    flat_lon = np.stack([np.where(pole, before, flat_lon), np.where(pole, after, flat_lon)], axis=-1).reshape(doubled)
    flat_lat = np.repeat(flat_lat, 2, axis=1)
    steps = np.mod(np.diff(flat_lon, axis=1) + 180.0, 360.0) - 180.0
    x = _into(flat_lon[:, :1], shape) + np.concatenate([np.zeros((len(steps), 1)), np.cumsum(steps, axis=1)], axis=1)
    closing = np.mod(flat_lon[:, :1] - flat_lon[:, -1:] + 180.0, 360.0) - 180.0
    winding = (x[:, -1:] + closing - x[:, :1])[:, 0]
    around = np.abs(winding) > 180.0
    coords = np.stack([x, flat_lat], axis=-1)
    polygons = np.full(len(coords), None, dtype=object)
    valid = np.all(np.isfinite(coords), axis=(1, 2))
    plain = valid & ~around
    if plain.any():
        polygons[plain] = shapely.make_valid(shapely.remove_repeated_points(shapely.polygons(coords[plain])))
    for k in np.flatnonzero(valid & around):  # close along the pole the cell winds around
        cap = 90.0 if flat_lat[k].mean() > 0 else -90.0
        x0, end = x[k, 0], x[k, 0] + winding[k]
        ring = np.vstack([coords[k], [[end, flat_lat[k, 0]], [end, cap], [x0, cap]]])
        polygons[k] = shapely.make_valid(shapely.remove_repeated_points(shapely.Polygon(ring)))
    return polygons.reshape(lat.shape[:-1])


def read_region(text: str) -> Region:
    """``FILE`` or ``FILE:NAME`` (a feature whose name property is NAME) or ``FILE:KEY=VALUE`` (whose property
    KEY is VALUE): the union of the features chosen, from a GeoJSON file or a shapefile."""
    path, name = (text, None) if os.path.exists(text) or ":" not in text else tuple(text.rsplit(":", 1))
    if not os.path.isfile(path):
        raise ClimioError(f"--region {path}: no such file", collective=True)
    features = _shapefile(path) if path.lower().endswith(".shp") else _geojson(path)
    chosen = [(props, geometry) for props, geometry in features if name is None or _matches(props, name)]
    if not chosen:
        names = sorted({str(_name(props)) for props, _ in features if _name(props) is not None})
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        raise ClimioError(f"--region {text}: no feature of {path} is called '{name}' (it has: {shown or 'no names'})",
                          collective=True)
    import shapely
    from shapely.geometry import shape as to_shape

    try:
        union = shapely.union_all([shapely.make_valid(to_shape(geometry)) for _, geometry in chosen])
    except (ValueError, TypeError, AttributeError, KeyError) as err:
        raise ClimioError(f"--region {text}: a feature's geometry cannot be read ({err})", collective=True) from None
    polygons = shapely.get_parts(union)
    polygons = polygons[np.isin(shapely.get_type_id(polygons), (3, 6))]  # polygons, multipolygons
    if polygons.size == 0 or shapely.area(shapely.union_all(polygons)) <= 0:
        raise ClimioError(f"--region {text}: the features chosen hold no polygon (a region needs an area)",
                          collective=True)
    return Region(path, name, shapely.union_all(polygons))


def _name(props: dict[str, Any]) -> Any:
    return next((props[k] for k in NAME_PROPERTIES if props.get(k) not in (None, "")), None)


def _matches(props: dict[str, Any], wanted: str) -> bool:
    if "=" in wanted:
        key, value = wanted.split("=", 1)
        return str(props.get(key, "")) == value
    return any(str(v).casefold() == wanted.casefold() for v in props.values() if isinstance(v, (str, int)))


def _geojson(path: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    try:
        with open(path, encoding="utf-8") as stream:
            doc = json.load(stream)
    except (OSError, ValueError) as err:
        raise ClimioError(f"--region {path}: not a GeoJSON file ({err})", collective=True) from None
    kind = doc.get("type") if isinstance(doc, dict) else None
    if kind == "FeatureCollection":
        features = doc.get("features") or []
    elif kind == "Feature":
        features = [doc]
    elif kind in ("Polygon", "MultiPolygon", "GeometryCollection"):
        features = [{"properties": {}, "geometry": doc}]
    else:
        raise ClimioError(f"--region {path}: expected a GeoJSON FeatureCollection, Feature or Polygon",
                          collective=True)
    return [(f.get("properties") or {}, f.get("geometry")) for f in features
            if isinstance(f, dict) and f.get("geometry")]


def _shapefile(path: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    import shapefile

    try:
        with shapefile.Reader(path) as reader:
            return [(dict(record.as_dict()), shape.__geo_interface__) for record, shape
                    in zip(reader.iterRecords(), reader.iterShapes()) if shape.shapeType != shapefile.NULL]
    except (OSError, shapefile.ShapefileException) as err:
        raise ClimioError(f"--region {path}: not a readable shapefile ({err})", collective=True) from None


def rectangle_areas(lat_edges: np.ndarray, lon_edges: np.ndarray) -> np.ndarray:
    """Areas (m^2) of a regular grid's cells, bounded by parallels and meridians: ``lat_edges`` (nlat, 2) and
    ``lon_edges`` (nlon, 2) in degrees, giving (nlat, nlon)."""
    band = np.abs(np.diff(np.sin(np.radians(lat_edges)), axis=1))[:, 0]
    width = np.radians(np.mod(lon_edges[:, 1] - lon_edges[:, 0], 360.0))
    width = np.where((width == 0) & (lon_edges[:, 1] != lon_edges[:, 0]), 2 * np.pi, width)
    return EARTH_RADIUS_M ** 2 * band[:, None] * width[None, :]


def polygon_areas(lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
    """Areas (m^2) of cells with great-circle edges, corners (..., nv) in degrees in order around each: the sum
    of the spherical triangles fanned from the first corner (each by Van Oosterom and Strackee's formula).
    Repeated corners add nothing; NaN where a corner is missing."""
    lat, lon = np.radians(lat_deg), np.radians(lon_deg)
    xyz = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)
    a = xyz[..., :1, :]
    b, c = xyz[..., 1:-1, :], xyz[..., 2:, :]
    triple = np.einsum("...k,...k->...", a, np.cross(b, c))
    below = 1 + np.einsum("...k,...k->...", a, b) + np.einsum("...k,...k->...", b, c) \
        + np.einsum("...k,...k->...", c, a)
    excess = 2 * np.arctan2(triple, below)
    return EARTH_RADIUS_M ** 2 * np.abs(excess.sum(axis=-1))
