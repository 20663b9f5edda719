"""How ``climio eva --plot`` draws its maps (rank 0 only: cartopy and matplotlib are imported here).

Each cell layout (:class:`climio.eva.plot.Map`) has its :class:`Cells`: a grid is drawn in its projection's own
coordinates (longitude minus the map's central longitude, or rotated longitude/latitude) from its cells' edges;
a curvilinear grid and a mesh's points in longitude/latitude, which cartopy projects. Coastlines are the GSHHG
shapefile installed with climio, read with cartopy's shapefile reader and added as geometries: nothing here
asks cartopy for its own (downloaded) features.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Mapping
from functools import lru_cache
from importlib.resources import files
from typing import Any, Protocol

import cartopy.crs as ccrs
import numpy as np
import shapely
from cartopy.io import shapereader
from cartopy.mpl.ticker import LatitudeFormatter, LongitudeFormatter
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from climio.eva.plot import EXTRAPOLATION_FACTOR, Axis, Fields, Map

COASTLINES = files("climio.eva") / "coastlines" / "GSHHS_c_L1.shp"
COASTLINES_CREDIT = "Coastlines: GSHHG (Wessel & Smith), LGPL-3.0."
PER_SECOND_TO_PER_DAY = {"kg m-2 s-1": ("mm/day", 86400.0)}  # show fluxes as people read them
NO_FIT = "#c8c8c8"
HATCH = "//"
HATCH_COLOUR = (0.0, 0.0, 0.0, 0.6)  # dark enough to see on yellow, light enough to read the colour beneath
PANEL_WIDTH = 6.2  # inches per map
GLOBAL_GAP = 10.0  # degrees of longitude: points with no wider gap between them go round the globe
FOOTNOTE_WIDTH = 200  # characters a line of the footnote holds across both maps
GEODETIC = ccrs.PlateCarree()  # longitude/latitude in degrees, as files give them

Extent = tuple[float, float, float, float]  # x0, x1, y0, y1 in the map's coordinates


class Cells(Protocol):
    """How a layout's cells are drawn: a field over them, a mark on some (``marking`` says how it looks), and
    the map's extent in its projection (None: plain axes)."""

    marking: str
    extent: Extent
    projection: ccrs.Projection | None

    def paint(self, ax: Axes, field: np.ndarray, **style: Any) -> ScalarMappable: ...

    def mark(self, ax: Axes, mask: np.ndarray) -> Artist: ...


class GridCells:
    """A grid of 1-D x and y coordinates, drawn from its cells' edges in the map's own coordinates (on plain
    axes, cells whose bounds leave gaps between them are drawn as they are, the gaps empty)."""

    marking = "hatched"

    def __init__(self, x: Edges, y: Edges, transposed: bool, projection: ccrs.Projection | None) -> None:
        self.x, self.y, self.transposed, self.projection = x, y, transposed, projection
        self.extent = (*x.span, *y.span)
        self.where = {} if projection is None else {"transform": projection}

    def _spread(self, field: np.ndarray) -> np.ma.MaskedArray:
        """The field on the edges' intervals, gaps and missing values masked."""
        field = field.T if self.transposed else field
        spread = np.full((self.y.edges.size - 1, self.x.edges.size - 1), np.nan)
        spread[np.ix_(self.y.cell, self.x.cell)] = field
        return np.ma.masked_invalid(spread)

    def paint(self, ax: Axes, field: np.ndarray, **style: Any) -> ScalarMappable:
        return ax.pcolormesh(self.x.edges, self.y.edges, self._spread(field), **style, **self.where)

    def mark(self, ax: Axes, mask: np.ndarray) -> Artist:
        return ax.pcolor(self.x.edges, self.y.edges, self._spread(np.where(mask, 1.0, np.nan)), hatch=HATCH,
                         facecolor="none", edgecolor=HATCH_COLOUR, linewidth=0.0, **self.where)


class CurvilinearCells:
    """A grid with 2-D longitude/latitude, each cell drawn around its centre."""

    marking = "hatched"

    def __init__(self, lon: np.ndarray, lat: np.ndarray, extent: Extent, projection: ccrs.Projection) -> None:
        self.lon = np.unwrap(np.unwrap(lon, period=360.0, axis=1), period=360.0, axis=0)
        self.lat, self.extent, self.projection = lat, extent, projection

    def paint(self, ax: Axes, field: np.ndarray, **style: Any) -> ScalarMappable:
        return ax.pcolormesh(self.lon, self.lat, np.ma.masked_invalid(field), shading="nearest",
                             transform=GEODETIC, **style)

    def mark(self, ax: Axes, mask: np.ndarray) -> Artist:
        return ax.pcolor(self.lon, self.lat, np.ma.masked_invalid(np.where(mask, 1.0, np.nan)), shading="nearest",
                         hatch=HATCH, facecolor="none", edgecolor=HATCH_COLOUR, linewidth=0.0, transform=GEODETIC)


class PointCells:
    """Cells as points at their centres (an unstructured mesh, or a grid thinned to cells far apart, which drawn
    to scale would be specks); extrapolations stippled. A field is (cells,), or (y, x) as the centres came."""

    marking = "stippled"

    def __init__(self, x: np.ndarray, y: np.ndarray, extent: Extent, projection: ccrs.Projection,
                 transform: ccrs.CRS, transposed: bool = False) -> None:
        self.x, self.y, self.extent, self.projection = x.ravel(), y.ravel(), extent, projection
        self.where, self.transposed = {"transform": transform}, transposed
        area = (PANEL_WIDTH * 72.0) * (_map_height(extent) * 72.0)
        self.size = float(np.clip(0.9 * area / max(self.x.size, 1), 0.5, 150.0))  # points^2: about tiles the map

    def _flat(self, field: np.ndarray) -> np.ndarray:
        return np.ravel(field.T if self.transposed else field)

    def paint(self, ax: Axes, field: np.ndarray, **style: Any) -> ScalarMappable:
        return ax.scatter(self.x, self.y, c=self._flat(field), s=self.size, linewidths=0.0, **style, **self.where)

    def mark(self, ax: Axes, mask: np.ndarray) -> Artist:
        chosen = self._flat(mask)
        return ax.scatter(self.x[chosen], self.y[chosen], s=max(self.size / 6.0, 0.3), c="black", marker=".",
                          linewidths=0.0, **self.where)


class Edges:
    """The edges of a 1-D coordinate's cells, the interval of each cell among them, and the span they cover."""

    def __init__(self, edges: np.ndarray, cell: np.ndarray) -> None:
        self.edges, self.cell = edges, cell
        self.span = (float(edges.min()), float(edges.max()))
        self.gapped = cell.size > 1 and bool(cell[1] - cell[0] > 1)

    @property
    def centres(self) -> np.ndarray:
        return 0.5 * (self.edges[self.cell] + self.edges[self.cell + 1])

    @staticmethod
    def of(centres: np.ndarray, bounds: np.ndarray | None) -> Edges:
        """From the file's bounds (cells that leave gaps get the gaps as empty intervals between them), else
        halfway between neighbouring centres."""
        if bounds is None:
            step = np.diff(centres) if centres.size > 1 else np.ones(1)
            inner = centres[:-1] + step / 2.0
            edges = np.concatenate([[centres[0] - step[0] / 2.0], inner, [centres[-1] + step[-1] / 2.0]])
            return Edges(edges, np.arange(centres.size))
        rising = centres.size < 2 or centres[-1] >= centres[0]
        pairs = np.sort(bounds, axis=1) if rising else -np.sort(-bounds, axis=1)
        if np.allclose(pairs[1:, 0], pairs[:-1, 1]):
            return Edges(np.append(pairs[:, 0], pairs[-1, 1]), np.arange(centres.size))
        return Edges(pairs.ravel(), 2 * np.arange(centres.size))

    def shifted(self, by: float, low: float, high: float) -> Edges:
        """The edges moved by ``by`` and held within [low, high] (latitudes within the poles)."""
        return Edges(np.clip(self.edges + by, low, high), self.cell)


def _longitudes(centres: np.ndarray, bounds: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Longitudes as one unbroken run (0..360 or -180..180 alike, across the antimeridian), each cell's bounds
    beside its centre, the run's middle within [-180, 180)."""
    run = np.unwrap(centres, period=360.0)
    run -= 360.0 * np.floor((0.5 * (run.min() + run.max()) + 180.0) / 360.0)
    if bounds is None:
        return run, None
    return run, run[:, None] + np.mod(bounds - centres[:, None] + 180.0, 360.0) - 180.0


def longitude_span(lon: np.ndarray) -> tuple[float, float]:
    """The shortest interval [lo, hi] (lo in [-180, 180)) that holds every longitude; all of them, -180 to 180,
    when no gap between them is wider than ``GLOBAL_GAP``."""
    ring = np.sort(np.mod(lon[np.isfinite(lon)].ravel(), 360.0))
    gaps = np.diff(np.append(ring, ring[0] + 360.0))
    widest = int(np.argmax(gaps))
    if gaps[widest] <= GLOBAL_GAP:
        return -180.0, 180.0
    lo, hi = (ring[0], ring[-1]) if widest == ring.size - 1 else (ring[widest + 1], ring[widest] + 360.0)
    shift = 360.0 if lo >= 180.0 else 0.0
    return float(lo - shift), float(hi - shift)


def _geographic_extent(lon: np.ndarray, lat: np.ndarray) -> tuple[Extent, float]:
    """The extent of longitudes/latitudes in PlateCarree centred on them, and that centre."""
    lo, hi = longitude_span(lon)
    centre = 0.5 * (lo + hi)
    return (lo - centre, hi - centre, max(float(np.nanmin(lat)), -90.0), min(float(np.nanmax(lat)), 90.0)), centre


def cells_of(where: Map, values: Mapping[str, np.ndarray], shape: tuple[int, ...]) -> Cells:
    """The cells of ``where`` (``shape``: the field's) with the coordinates the output copied (``values``)."""

    def read(axis: Axis, n: int) -> tuple[np.ndarray, np.ndarray | None]:
        """An axis's values and bounds (none where any is missing: then the cells' centres say the span)."""
        if axis.indexed:
            return np.arange(n, dtype=float), None
        bounds = None if axis.bounds is None else np.asarray(values[axis.bounds], float)
        if bounds is not None and not np.isfinite(bounds).all():
            bounds = None
        return np.asarray(values[axis.name], float), bounds

    if where.kind == "grid":
        nx, ny = shape if where.transposed else shape[::-1]
        (x, x_bounds), (y, y_bounds) = read(where.x, nx), read(where.y, ny)
        if not where.geographic:
            return _grid(Edges.of(x, x_bounds), Edges.of(y, y_bounds), where.transposed, None)
        lon, lat = Edges.of(*_longitudes(x, x_bounds)), Edges.of(y, y_bounds)
        if where.pole is not None:
            return _grid(lon, lat.shifted(0.0, -90.0, 90.0), where.transposed,
                         ccrs.RotatedPole(pole_longitude=where.pole.longitude, pole_latitude=where.pole.latitude,
                                          central_rotated_longitude=where.pole.grid_longitude))
        centre = 0.5 * sum(lon.span)
        return _grid(lon.shifted(-centre, -180.0, 180.0), lat.shifted(0.0, -90.0, 90.0), where.transposed,
                     ccrs.PlateCarree(central_longitude=centre))
    (lon, lon_bounds), (lat, lat_bounds) = read(where.x, 0), read(where.y, 0)
    extent, centre = _geographic_extent(lon if lon_bounds is None else lon_bounds,
                                        lat if lat_bounds is None else lat_bounds)
    projection = ccrs.PlateCarree(central_longitude=centre)
    if where.kind == "curvilinear":
        return CurvilinearCells(lon, lat, extent, projection)
    if lon_bounds is None or lat_bounds is None:  # centres alone (stations): a margin keeps the outer ones whole
        extent = _padded(extent)
    return PointCells(lon, lat, extent, projection, GEODETIC)


def _padded(extent: Extent) -> Extent:
    """An extent of points widened by a twentieth of its span each way (at least a degree), within the globe."""
    x0, x1, y0, y1 = extent
    dx, dy = max(0.05 * (x1 - x0), 1.0), max(0.05 * (y1 - y0), 1.0)
    half = min(0.5 * (x1 - x0) + dx, 180.0)
    middle = 0.5 * (x0 + x1)
    return middle - half, middle + half, max(y0 - dy, -90.0), min(y1 + dy, 90.0)


def _grid(x: Edges, y: Edges, transposed: bool, projection: ccrs.Projection | None) -> Cells:
    """A grid's cells in its projection's coordinates: to scale, or as points if they lie far apart."""
    if not (x.gapped or y.gapped) or projection is None:
        return GridCells(x, y, transposed, projection)
    xs, ys = np.meshgrid(x.centres, y.centres)
    return PointCells(xs, ys, (*x.span, *y.span), projection, projection, transposed)


def _map_height(extent: Extent) -> float:
    """Inches of a map ``PANEL_WIDTH`` wide that keeps the extent's aspect (within reason)."""
    x0, x1, y0, y1 = extent
    return float(np.clip(PANEL_WIDTH * (y1 - y0) / max(x1 - x0, 1e-9), 2.2, 6.0))


@lru_cache(maxsize=1)
def coastlines() -> tuple[shapely.LineString, ...]:
    """The installed GSHHG shorelines as lines, read once."""
    pyshp = logging.getLogger("shapefile")
    level = pyshp.level
    pyshp.setLevel(logging.ERROR)  # two polygons are stored as holes only: pyshp warns, they draw all the same
    try:
        polygons = list(shapereader.Reader(str(COASTLINES)).geometries())
    finally:
        pyshp.setLevel(level)
    rings = shapely.get_rings(shapely.get_parts(polygons))
    return tuple(shapely.LineString(run) for ring in rings for run in _shore(shapely.get_coordinates(ring)))


def _shore(ring: np.ndarray) -> list[np.ndarray]:
    """A ring's runs of shore: GSHHG cuts its polygons along the meridians 0 and 180 and closes Antarctica
    along the south pole; segments running exactly there are those cuts, not coast."""
    a, b = ring[:-1], ring[1:]
    cut = ((a[:, 0] == b[:, 0]) & np.isin(np.abs(a[:, 0]), (0.0, 180.0))) | ((a[:, 1] == -90.0) & (b[:, 1] == -90.0))
    ends = np.flatnonzero(cut)
    starts, stops = np.append(0, ends + 1), np.append(ends, len(a))  # run k: points starts[k] .. stops[k]
    return [ring[i:j + 1] for i, j in zip(starts, stops) if j > i]


def _add_coastlines(ax: Axes) -> None:
    """The coastlines that cross the map (fewer to project into a regional map)."""
    lon0, lon1, lat0, lat1 = ax.get_extent(GEODETIC)
    seen = shapely.box(lon0, lat0, lon1, lat1)
    near = [g for g in coastlines() if g.intersects(seen)]
    if near:
        ax.add_geometries(near, crs=GEODETIC, facecolor="none", edgecolor="black", linewidth=0.5, gid="coastlines")


def _norm(field: np.ndarray, symmetric: bool) -> tuple[Normalize, str]:
    """Colour limits (2nd to 98th percentile of many cells, else all of them) and which ends the colorbar
    extends past."""
    finite = field[np.isfinite(field)]
    if finite.size == 0:
        return Normalize(-1.0, 1.0) if symmetric else Normalize(0.0, 1.0), "neither"
    values = np.abs(finite) if symmetric else finite
    lo, hi = np.percentile(values, [2, 98]) if finite.size >= 100 else (values.min(), values.max())
    if symmetric:
        lo, hi = -hi, hi
    if hi <= lo:
        lo, hi = lo - max(abs(lo), 1.0) * 0.05, hi + max(abs(hi), 1.0) * 0.05
    below, above = bool(finite.min() < lo), bool(finite.max() > hi)
    return Normalize(lo, hi), {(False, False): "neither", (True, False): "min", (False, True): "max",
                               (True, True): "both"}[(below, above)]


def _units(units: str) -> str:
    """Units as a colorbar says them: '1' is dimensionless."""
    return {"": "units not given", "1": "dimensionless"}.get(units, units)


def _years(years: np.ndarray) -> str:
    lo, hi = float(years.min()), float(years.max())
    return f"{lo:.3g} years" if np.isclose(lo, hi, rtol=1e-3) else f"{lo:.3g} to {hi:.3g} years"


def figure(where: Map, values: Mapping[str, np.ndarray], fields: Fields) -> Figure:
    """The return level and the shape side by side, each with its colorbar; the title says what, how and when,
    the footnote which levels are extrapolations."""
    cells = cells_of(where, values, fields.level.shape)
    units, factor = PER_SECOND_TO_PER_DAY.get(where.units, (where.units, 1.0))
    height = _map_height(cells.extent)
    fig = Figure(figsize=(2.0 * PANEL_WIDTH + 0.8, height + 2.0), layout="constrained")
    subplot = {} if cells.projection is None else {"projection": cells.projection}
    fitted = np.isfinite(fields.level)
    extrapolated = fields.extrapolated
    no_fit = np.where(~fitted, 1.0, np.nan)
    period = f"{fields.period:g}-year"
    panels = ((fields.level * factor, False, "viridis", f"{period} return level{fields.note}",
               f"{period} return level of {where.long_name} ({_units(units)})"),
              (fields.shape, True, "RdBu_r", f"{fields.distribution} shape \u03be",
               f"{fields.distribution} shape \u03be of {where.long_name} (dimensionless)"))
    for i, (field, symmetric, cmap, title, label) in enumerate(panels):
        ax = fig.add_subplot(1, 2, i + 1, **subplot)
        norm, extend = _norm(field, symmetric)
        drawn = cells.paint(ax, field, cmap=cmap, norm=norm)
        legend: list[Artist] = []
        if not fitted.all():
            cells.paint(ax, no_fit, cmap=ListedColormap([NO_FIT])).set_gid("no fit")
            legend.append(Patch(facecolor=NO_FIT, label="no fit"))
        if i == 0 and extrapolated.any():
            cells.mark(ax, extrapolated).set_gid("extrapolated")
            legend.append(Line2D([], [], color="black", marker=".", linestyle="none", label="extrapolation")
                          if cells.marking == "stippled" else
                          Patch(facecolor="none", edgecolor=HATCH_COLOUR, hatch=HATCH, label="extrapolation"))
        _frame(ax, cells, where)
        if legend:
            ax.legend(handles=legend, loc="lower left", fontsize=7, framealpha=0.85)
        ax.set_title(title, fontsize=10)
        bar = fig.colorbar(drawn, ax=ax, orientation="horizontal", extend=extend, shrink=0.9, label=label)
        if not np.isfinite(field).any():
            bar.set_ticks([])  # no value: no scale to read
    fig.suptitle(f"{where.long_name} ({where.var}): {period} return level and {fields.distribution} shape\n"
                 f"{fields.method}, {where.period}", fontsize=11)
    fig.supxlabel(textwrap.fill(_footnote(fields, cells.marking), FOOTNOTE_WIDTH), fontsize=7.5, x=0.01, ha="left")
    return fig


def _frame(ax: Axes, cells: Cells, where: Map) -> None:
    """The map's extent (the cells' span) and ticks: longitudes and latitudes in degrees east/north on a
    PlateCarree map, the grid's own coordinates (rotated, or plain) labelled as the file names them. A map's
    coastlines too."""
    x0, x1, y0, y1 = cells.extent
    if cells.projection is not None and where.pole is None:
        lon0, lat0 = x0 + cells.projection.proj4_params["lon_0"], y0
        ax.set_xticks(_degree_ticks(lon0, lon0 + x1 - x0, 7), crs=GEODETIC)
        ax.set_yticks(_degree_ticks(lat0, y1, 6), crs=GEODETIC)
        ax.xaxis.set_major_formatter(LongitudeFormatter())
        ax.yaxis.set_major_formatter(LatitudeFormatter())
    else:
        ax.set_xticks(MaxNLocator(6).tick_values(x0, x1))
        ax.set_yticks(MaxNLocator(6).tick_values(y0, y1))
        ax.set_xlabel(where.x.label)
        ax.set_ylabel(where.y.label)
    ax.tick_params(labelsize=7)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_autoscale_on(False)
    if cells.projection is not None:
        _add_coastlines(ax)


def _degree_ticks(lo: float, hi: float, most: int) -> np.ndarray:
    """Round degrees within [lo, hi], at most ``most`` of them."""
    steps = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)
    step = next((s for s in steps if (hi - lo) / s < most), 90.0)
    return np.arange(np.ceil(lo / step) * step, hi + 1e-9, step)


def _footnote(fields: Fields, marking: str) -> str:
    fitted = np.isfinite(fields.level)
    text = ""
    if fitted.any():
        text = (f"{marking.capitalize()}: extrapolations, where the {fields.period:g}-year return period exceeds "
                f"{EXTRAPOLATION_FACTOR:g} \u00d7 the years of data behind the cell's fit "
                f"({_years(fields.years[fitted])}): {int(fields.extrapolated.sum())} of {int(fitted.sum())} fitted "
                f"cells. ")
    if not fitted.all():
        text += f"Grey: no fit ({int((~fitted).sum())} of {fitted.size} cells; see the output's status). "
    return text + COASTLINES_CREDIT
