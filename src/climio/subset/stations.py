"""Stations for ``climio subset --points``: the points file, and each station's cell on any grid kind.

A station's cell is the one whose centre is nearest by great-circle distance (CDO's ``remapnn``, clisops'
``subset_gridpoint``), or with ``--points-inside`` the one whose bounds contain it. On a regular grid the nearest
cell is found from the two axes alone: for any latitude row the nearest longitude is the same, so the longitude
index comes first and the latitude row is the nearest along it. On every other grid each rank searches its block
of the cells (a k-d tree of their unit vectors: the chord orders as the great circle does) and the ranks agree
on the best. Distances within :data:`TIE` of each other are a tie, broken by the lowest cell index, so that the
answer does not depend on the number of ranks or on the last bit of a sine.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from climio.core.decomp import block_range
from climio.errors import ClimioError
from climio.subset import curvilinear
from climio.subset.grids import EARTH_RADIUS_M, Curvilinear, Mesh, Points, Regular, has_outlines

if TYPE_CHECKING:
    from mpi4py import MPI

TIE = 1e-9  # distances whose ratio is within this of 1 are equal: the lowest cell index wins
CANDIDATES = 16  # the cells nearest a station that are tested for containing it
SPACING_NEIGHBOURS = 8  # a cell's nearest centres looked at for its spacing
UNBOUNDED_REACH = 1.5  # without cell bounds, a station this many spacings from the nearest centre is off the grid
NAME_COLUMNS = ("name", "station", "station_name", "id", "site")
LAT_COLUMNS = ("lat", "latitude")
LON_COLUMNS = ("lon", "longitude", "long")


@dataclass(frozen=True)
class Stations:
    """The points a user asked for, in the file's order: names and degrees."""

    path: str
    names: tuple[str, ...]
    lat: np.ndarray
    lon: np.ndarray

    def __len__(self) -> int:
        return len(self.names)

    @property
    def xyz(self) -> np.ndarray:
        return unit_vectors(self.lat, self.lon)


def read_stations(path: str) -> Stations:
    """A CSV (header with name, lat, lon), a GeoJSON of points, or a netCDF file of stations (CF's
    ``timeSeries``: latitude/longitude on the station dimension, names in the ``timeseries_id``)."""
    if not os.path.isfile(path):
        raise ClimioError(f"--points {path}: no such file", collective=True)
    suffix = os.path.splitext(path)[1].lower()
    if suffix in (".nc", ".nc4", ".cdf"):
        names, lat, lon = _from_netcdf(path)
    elif suffix in (".geojson", ".json"):
        names, lat, lon = _from_geojson(path)
    else:
        names, lat, lon = _from_csv(path)
    return make_stations(path, names, lat, lon)


def make_stations(path: str, names: list[str], lat: list[float], lon: list[float]) -> Stations:
    """Stations from names and degrees, checked: some, with unique names, on the globe. ``path`` names where
    they come from in messages."""
    if not names:
        raise ClimioError(f"--points {path}: no stations in the file", collective=True)
    seen: dict[str, int] = {}
    for k, name in enumerate(names):
        if name in seen:
            raise ClimioError(f"--points {path}: station name '{name}' is given twice (stations {seen[name] + 1} and "
                              f"{k + 1}); names identify the series, make them unique", collective=True)
        seen[name] = k
    lat_deg, lon_deg = np.asarray(lat, dtype=np.float64), np.asarray(lon, dtype=np.float64)
    for k in range(len(names)):
        if not (-90.0 <= lat_deg[k] <= 90.0) or not (-360.0 <= lon_deg[k] <= 360.0):
            raise ClimioError(f"--points {path}: station '{names[k]}' at latitude {lat_deg[k]:g}, longitude "
                              f"{lon_deg[k]:g} is off the globe (latitude -90..90, longitude -360..360)",
                              collective=True)
    return Stations(path, tuple(names), lat_deg, lon_deg)


def _number(path: str, where: str, column: str, text: object) -> float:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ClimioError(f"--points {path}: {where}: {column} '{text}' is not a number", collective=True) from None
    if not math.isfinite(value):
        raise ClimioError(f"--points {path}: {where}: {column} '{text}' is not a number", collective=True)
    return value


def _from_csv(path: str) -> tuple[list[str], list[float], list[float]]:
    with open(path, newline="", encoding="utf-8-sig") as stream:
        rows = [row for row in csv.reader(stream) if row and any(cell.strip() for cell in row)
                and not row[0].lstrip().startswith("#")]
    if not rows:
        return [], [], []
    header = [cell.strip().lower() for cell in rows[0]]

    def column(choices: tuple[str, ...]) -> int | None:
        return next((header.index(c) for c in choices if c in header), None)

    name_at, lat_at, lon_at = column(NAME_COLUMNS), column(LAT_COLUMNS), column(LON_COLUMNS)
    if lat_at is None or lon_at is None:
        raise ClimioError(f"--points {path}: the first line must name the columns, with 'lat' and 'lon' (and "
                          f"'name'); it is: {','.join(rows[0])}", collective=True)
    names, lat, lon = [], [], []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) < len(header):
            raise ClimioError(f"--points {path}: line {line} has {len(row)} columns, the header {len(header)}",
                              collective=True)
        names.append(row[name_at].strip() if name_at is not None else str(line - 1))
        lat.append(_number(path, f"line {line}", "lat", row[lat_at].strip()))
        lon.append(_number(path, f"line {line}", "lon", row[lon_at].strip()))
    return names, lat, lon


def _from_geojson(path: str) -> tuple[list[str], list[float], list[float]]:
    try:
        with open(path, encoding="utf-8") as stream:
            doc = json.load(stream)
    except (OSError, ValueError) as err:
        raise ClimioError(f"--points {path}: not a GeoJSON file ({err})", collective=True) from None
    features = doc.get("features") if isinstance(doc, dict) and doc.get("type") == "FeatureCollection" else \
        [doc] if isinstance(doc, dict) and doc.get("type") == "Feature" else None
    if not isinstance(features, list):
        raise ClimioError(f"--points {path}: expected a GeoJSON FeatureCollection of points", collective=True)
    names, lat, lon = [], [], []
    for k, feature in enumerate(features, start=1):
        geometry = feature.get("geometry") or {} if isinstance(feature, dict) else {}
        properties = feature.get("properties") or {} if isinstance(feature, dict) else {}
        if geometry.get("type") != "Point" or len(geometry.get("coordinates") or ()) < 2:
            raise ClimioError(f"--points {path}: feature {k} is a {geometry.get('type', 'feature without geometry')}, "
                              f"not a Point", collective=True)
        key = next((p for p in properties if str(p).lower() in NAME_COLUMNS), None)
        names.append(str(properties[key]) if key is not None else str(k))
        x, y = geometry["coordinates"][:2]
        lon.append(_number(path, f"feature {k}", "longitude", x))
        lat.append(_number(path, f"feature {k}", "latitude", y))
    return names, lat, lon


def _from_netcdf(path: str) -> tuple[list[str], list[float], list[float]]:
    import netCDF4

    try:
        ds = netCDF4.Dataset(path)
    except OSError as err:
        raise ClimioError(f"--points {path}: cannot read it as netCDF ({err})", collective=True) from None
    with ds:
        ds.set_auto_mask(False)
        one_d = [v for v in ds.variables.values() if v.ndim == 1]

        def find(kind: str) -> netCDF4.Variable | None:
            units = ("degrees_north", "degree_north") if kind == "latitude" else ("degrees_east", "degree_east")
            return next((v for v in one_d if getattr(v, "standard_name", None) == kind
                         or str(getattr(v, "units", "")).lower() in units), None)

        lat_var, lon_var = find("latitude"), find("longitude")
        if lat_var is None or lon_var is None or lat_var.dimensions != lon_var.dimensions:
            raise ClimioError(f"--points {path}: no 1-D latitude and longitude on one station dimension",
                              collective=True)
        count = len(lat_var)
        ids = next((v for v in ds.variables.values() if getattr(v, "cf_role", None) == "timeseries_id"), None)
        names = [str(k + 1) for k in range(count)]
        if ids is not None:
            raw = ids[:]
            if raw.dtype.kind == "S":
                raw = netCDF4.chartostring(raw) if raw.ndim > 1 else raw.astype(str)
            names = [str(n).strip() for n in np.asarray(raw).ravel()[:count]]
        return names, lat_var[:].astype(np.float64).tolist(), lon_var[:].astype(np.float64).tolist()


def unit_vectors(lat_deg: np.ndarray, lon_deg: np.ndarray) -> np.ndarray:
    lat, lon = np.radians(lat_deg), np.radians(lon_deg)
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)


def great_circle_m(lat1: np.ndarray, lon1: np.ndarray, lat2: np.ndarray, lon2: np.ndarray) -> np.ndarray:
    """Distance in metres on :data:`EARTH_RADIUS_M` (haversine: exact for near points too)."""
    p1, p2 = np.radians(lat1), np.radians(lat2)
    h = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2
    return 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


def _first_least(values: np.ndarray) -> np.ndarray:
    """Per row of ``values`` (stations x cells), the lowest index whose value ties the row's least."""
    least = np.nanmin(values, axis=1, keepdims=True)
    return np.argmax(values <= least * (1 + TIE) + 1e-300, axis=1)


def nearest_on_axes(lat_axis: np.ndarray, lon_axis: np.ndarray, stations: Stations) -> tuple[np.ndarray, np.ndarray]:
    """Latitude and longitude indices of each station's nearest cell on a regular grid (degrees)."""
    east = np.abs(np.mod(stations.lon[:, None] - lon_axis[None, :] + 180.0, 360.0) - 180.0)
    k = _first_least(east)
    j = _first_least(great_circle_m(stations.lat[:, None], stations.lon[:, None], lat_axis[None, :],
                                    lon_axis[k][:, None]))
    return j, k


def inside_on_axes(lat_edges: np.ndarray, lon_edges: np.ndarray, stations: Stations) -> tuple[np.ndarray, np.ndarray]:
    """Latitude and longitude indices of the cell of a regular grid whose bounds ((n, 2) in degrees) hold each
    station, the lowest where a station is on a shared edge; -1 where none does."""
    low, high = lat_edges.min(axis=1), lat_edges.max(axis=1)
    in_lat = (stations.lat[:, None] >= low[None, :]) & (stations.lat[:, None] <= high[None, :])
    first, span = lon_edges[:, 0], np.mod(lon_edges[:, 1] - lon_edges[:, 0], 360.0)
    span = np.where((span == 0) & (lon_edges[:, 1] != lon_edges[:, 0]), 360.0, span)
    in_lon = np.mod(stations.lon[:, None] - first[None, :], 360.0) <= span[None, :]
    j = np.where(in_lat.any(axis=1), np.argmax(in_lat, axis=1), -1)
    k = np.where(in_lon.any(axis=1), np.argmax(in_lon, axis=1), -1)
    off = (j < 0) | (k < 0)
    return np.where(off, -1, j), np.where(off, -1, k)


def contains(station_xyz: np.ndarray, corner_lat: np.ndarray, corner_lon: np.ndarray) -> np.ndarray:
    """Whether each cell (corners ``(n, nv)`` in degrees, in order around it, great-circle edges) holds its
    station (``(n, 3)``), its edges included. The corners are seen from the station in the gnomonic projection,
    where great circles are straight: a convex cell holds the station when every edge turns the same way around
    it. A cell with a missing corner or one beyond the station's horizon holds nothing."""
    corners = unit_vectors(corner_lat, corner_lon)  # (n, nv, 3)
    valid = np.all(np.isfinite(corners), axis=(1, 2))
    corners = np.where(valid[:, None, None], corners, 0.0)
    facing = np.einsum("nvk,nk->nv", corners, station_xyz)
    valid &= np.all(facing > 0, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        seen = corners / np.where(facing > 0, facing, 1.0)[:, :, None] - station_xyz[:, None, :]
    turns = np.einsum("nk,nvk->nv", station_xyz, np.cross(seen, np.roll(seen, -1, axis=1)))
    scale = np.max(np.abs(turns), axis=1, keepdims=True) * 1e-12
    turns = np.where(np.abs(turns) <= scale, 0.0, turns)
    return valid & (np.all(turns >= 0, axis=1) | np.all(turns <= 0, axis=1))


class Search:
    """This rank's block of a grid's cells (global flat indices, ascending, and centres), searched for stations'
    cells; every method is collective and gives every rank the same answer."""

    def __init__(self, comm: MPI.Comm, index: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> None:
        from scipy.spatial import cKDTree

        self.comm = comm
        known = np.isfinite(lat) & np.isfinite(lon)
        self.index = np.asarray(index, dtype=np.int64)[known]
        self.lat, self.lon = np.asarray(lat, np.float64)[known], np.asarray(lon, np.float64)[known]
        self.position = np.flatnonzero(known)  # where each searched cell is in the block given
        self.tree = cKDTree(unit_vectors(self.lat, self.lon)) if self.index.size else None

    def _agree(self, chord: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """The ranks' candidates (chord, cell; inf/-1 for none) -> the nearest, ties to the lowest cell."""
        gathered = self.comm.allgather((chord, cells))
        chords = np.stack([c for c, _ in gathered])
        index = np.stack([i for _, i in gathered])
        best = np.min(chords, axis=0)
        tied = chords <= best * (1 + TIE) + 1e-300
        return np.where(np.isfinite(best), np.min(np.where(tied, index, np.iinfo(np.int64).max), axis=0), -1)

    def nearest(self, xyz: np.ndarray) -> np.ndarray:
        """The global index of the cell whose centre is nearest each point."""
        chord = np.full(len(xyz), np.inf)
        cells = np.full(len(xyz), -1, dtype=np.int64)
        if self.tree is not None and len(xyz):
            chord, _ = self.tree.query(xyz, k=1)
            for s, near in enumerate(self.tree.query_ball_point(xyz, chord * (1 + TIE) + 1e-15)):
                cells[s] = int(self.index[near].min())  # the nearest itself is always within reach
        return self._agree(chord, cells)

    def candidates(self, xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """This rank's cells nearest each point (up to :data:`CANDIDATES`): positions in the block given and
        global indices, (n, k) with -1 where it has fewer."""
        k = min(CANDIDATES, self.index.size)
        if k == 0 or not len(xyz):
            empty = np.full((len(xyz), 0), -1, dtype=np.int64)
            return empty, empty
        _, found = self.tree.query(xyz, k=k)
        found = np.asarray(found).reshape(len(xyz), k)
        return self.position[found], self.index[found]

    def first_containing(self, hits: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Per point, the lowest global index among the cells that hold it on any rank, -1 where none."""
        none = np.iinfo(np.int64).max
        mine = np.min(np.where(hits, index, none), axis=1, initial=none) if index.size else \
            np.full(len(hits), none, dtype=np.int64)
        best = _least(self.comm, mine)
        return np.where(best == none, -1, best)

    def centres(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latitude and longitude of the given cells (NaN for -1), from whichever rank holds each."""
        lat, lon = np.full(len(cells), np.nan), np.full(len(cells), np.nan)
        if self.index.size:
            pos = np.clip(np.searchsorted(self.index, cells), 0, self.index.size - 1)  # the index ascends
            mine = self.index[pos] == cells
            lat[mine], lon[mine] = self.lat[pos[mine]], self.lon[pos[mine]]
        gathered = self.comm.allgather((lat, lon))
        return (np.fmax.reduce([a for a, _ in gathered]), np.fmax.reduce([b for _, b in gathered]))

    def spacing(self, cells: np.ndarray, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        """Great-circle distance (m) from each given cell's centre to the nearest other centre (one at another
        place: a grid that repeats a centre, as along a tripolar fold, is not spaced by it)."""
        chord = np.full(len(cells), np.inf)
        known = np.isfinite(lat) & np.isfinite(lon)
        if self.tree is not None and known.any():
            k = min(SPACING_NEIGHBOURS, self.index.size)
            found_chord, found = self.tree.query(unit_vectors(lat[known], lon[known]), k=k)
            found_chord, found = found_chord.reshape(-1, k), np.asarray(found).reshape(-1, k)
            apart = (self.index[found] != cells[known, None]) & (found_chord > 0)
            chord[known] = np.min(np.where(apart, found_chord, np.inf), axis=1)
        chord = _least(self.comm, chord)
        return np.where(np.isfinite(chord), 2 * EARTH_RADIUS_M * np.arcsin(np.minimum(chord / 2, 1.0)), np.inf)


def _least(comm: MPI.Comm, values: np.ndarray) -> np.ndarray:
    """The element-wise least of every rank's ``values`` (collective)."""
    from mpi4py import MPI

    values = np.ascontiguousarray(values)
    out = np.empty_like(values)
    comm.Allreduce(values, out, op=MPI.MIN)
    return out


@dataclass(frozen=True)
class Located:
    """Where each station's series comes from."""

    cells: dict[str, np.ndarray]  # each of the grid's dimensions -> every station's index along it, -1 off the grid
    lat: np.ndarray  # the cell's centre in degrees, NaN off the grid
    lon: np.ndarray
    distance: np.ndarray  # from the station to that centre, m; NaN off the grid

    @property
    def off(self) -> np.ndarray:
        return next(iter(self.cells.values())) < 0


Rows = Callable[[str, np.ndarray], np.ndarray]  # a variable's rows along its first dimension (collective)
Geometry = Callable[[Mesh, np.ndarray], tuple[np.ndarray, np.ndarray]]  # a mesh's cells -> lat, lon in degrees


def locate(points: Stations, grid: Regular | Curvilinear | Points | Mesh, sizes: dict[str, int], comm: MPI.Comm,
           rows: Rows, centres: Geometry, corners: Geometry, inside: bool, where: str) -> Located:
    """Each station's cell (collective): the nearest centre, or with ``inside`` the cell that contains it.
    ``rows``, ``centres`` and ``corners`` read the grid (collective); ``where`` names its file in messages."""
    if isinstance(grid, Regular):
        return _on_axes(points, grid, sizes, rows, inside, where)
    dims = cell_dims(grid)
    lo, n = block_range(sizes[dims[0]], comm.Get_size(), comm.Get_rank())
    block = np.arange(lo, lo + n, dtype=np.int64)
    inner = math.prod(sizes[d] for d in dims[1:])
    index = (block[:, None] * inner + np.arange(inner)[None, :]).ravel()
    bounded = has_outlines(grid)
    if inside and not bounded:
        _refuse_inside(grid, where)
    if isinstance(grid, Mesh):
        lat, lon = centres(grid, block)
        outline = corners(grid, block) if bounded else None
    else:
        scale = np.degrees if grid.radians else np.asarray
        lat, lon = (scale(rows(name, block).astype(np.float64)).ravel() for name in (grid.lat, grid.lon))
        outline = _outlines(grid, block, rows, where) if bounded else None
    search = Search(comm, index, lat, lon)
    xyz = points.xyz
    holder = None
    if outline is not None:
        position, candidates = search.candidates(xyz)
        hits = contains(np.repeat(xyz, position.shape[1], axis=0), outline[0][position.ravel()],
                        outline[1][position.ravel()]).reshape(position.shape) if position.size else \
            np.zeros(position.shape, dtype=bool)
        holder = search.first_containing(hits, candidates)
    chosen = holder if inside and holder is not None else search.nearest(xyz)
    clat, clon = search.centres(chosen)
    distance = great_circle_m(points.lat, points.lon, clat, clon)
    if not inside:  # off a regional grid: in no cell, or (without bounds) far from the nearest centre
        spacing = search.spacing(chosen, clat, clon)
        off = distance > spacing * (1 + TIE) if holder is not None else distance > UNBOUNDED_REACH * spacing
        if holder is not None:
            off &= holder < 0
        chosen = np.where(off, -1, chosen)
    return _located(chosen, dims, sizes, clat, clon, distance)


def _located(chosen: np.ndarray, dims: tuple[str, ...], sizes: dict[str, int], lat: np.ndarray, lon: np.ndarray,
             distance: np.ndarray) -> Located:
    off = chosen < 0
    parts = np.unravel_index(np.where(off, 0, chosen), tuple(sizes[d] for d in dims))
    cells = {d: np.where(off, -1, p).astype(np.int64) for d, p in zip(dims, parts)}
    nan = np.full(len(chosen), np.nan)
    return Located(cells, np.where(off, nan, lat), np.where(off, nan, lon), np.where(off, nan, distance))


def cell_dims(grid: Regular | Curvilinear | Points | Mesh) -> tuple[str, ...]:
    """The dimensions a cell is indexed by (a regular grid's in the order of its coordinates)."""
    if isinstance(grid, Regular):
        return (str(grid.lat), str(grid.lon))
    if isinstance(grid, Curvilinear):
        return grid.dims
    return (grid.dim,) if isinstance(grid, Points) else (grid.primary,)


def _refuse_inside(grid: Regular | Curvilinear | Points | Mesh, where: str) -> None:
    if isinstance(grid, Mesh):
        raise ClimioError(f"--points-inside: the {grid.family} mesh in {where} has no cell corners (a cell -> node "
                          f"connectivity and node latitude/longitude); leave out --points-inside for the nearest "
                          f"cell", collective=True)
    raise ClimioError(f"--points-inside: {where} has no cell bounds for {grid.lat}/{grid.lon} (no CF bounds "
                      f"attribute); leave out --points-inside for the nearest cell", collective=True)


def _outlines(grid: Curvilinear | Points, block: np.ndarray, rows: Rows, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The corners (cells, nv) in degrees of a block of rows: CF bounds, or a staggered corner grid (GEOS)."""
    if isinstance(grid, Curvilinear):
        lat, lon = curvilinear.corners(grid, rows, block, where)
    else:
        scale = np.degrees if grid.radians else np.asarray
        lat, lon = (scale(rows(str(name), block).astype(np.float64)) for name in (grid.lat_bounds, grid.lon_bounds))
    return lat.reshape(-1, lat.shape[-1]), lon.reshape(-1, lon.shape[-1])


def _extent(centres: np.ndarray, edges: np.ndarray | None) -> tuple[float, float]:
    """The span an axis covers: its bounds, else half a step beyond the first and last centres."""
    if edges is not None:
        return float(np.min(edges)), float(np.max(edges))
    if centres.size < 2:
        return -math.inf, math.inf
    ordered = np.sort(centres)
    return float(ordered[0] - (ordered[1] - ordered[0]) / 2), float(ordered[-1] + (ordered[-1] - ordered[-2]) / 2)


def _on_axes(points: Stations, grid: Regular, sizes: dict[str, int], rows: Rows, inside: bool,
             where: str) -> Located:
    """A regular grid: every rank works the stations out from the two axes (and their bounds)."""
    scale = np.degrees if grid.radians else np.asarray

    def whole(name: str | None, dim: str) -> np.ndarray | None:
        return None if name is None else scale(rows(name, np.arange(sizes[dim])).astype(np.float64))

    lat_dim, lon_dim = cell_dims(grid)
    lat_axis, lon_axis = whole(lat_dim, lat_dim), whole(lon_dim, lon_dim)
    lat_edges, lon_edges = whole(grid.lat_bounds, lat_dim), whole(grid.lon_bounds, lon_dim)
    assert lat_axis is not None and lon_axis is not None
    if inside:
        if lat_edges is None or lon_edges is None:
            _refuse_inside(grid, where)
        j, k = inside_on_axes(lat_edges, lon_edges, points)
    else:
        j, k = nearest_on_axes(lat_axis, lon_axis, points)
        south, north = _extent(lat_axis, lat_edges)
        west, east = _extent(lon_axis, lon_edges)
        off = (points.lat < south) | (points.lat > north)
        if east - west < 360.0:
            off |= west + np.mod(points.lon - west, 360.0) > east
        j, k = np.where(off, -1, j), np.where(off, -1, k)
    valid = j >= 0
    lat = np.where(valid, lat_axis[np.where(valid, j, 0)], np.nan)
    lon = np.where(valid, lon_axis[np.where(valid, k, 0)], np.nan)
    flat = np.where(valid, j * sizes[lon_dim] + k, -1)
    return _located(flat, cell_dims(grid), sizes, lat, lon, great_circle_m(points.lat, points.lon, lat, lon))
