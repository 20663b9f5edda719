"""``climio eva --plot map.png``: maps of a return level and of the fitted shape, drawn on rank 0.

What is drawn, and where, comes from the file (:class:`Map`, decided on every rank before the analysis, so a
layout that is no map is refused first); how, from :mod:`climio.eva.maps` (cartopy, imported by rank 0 alone):

* a rotated-pole grid (the variable's ``grid_mapping`` is CF ``rotated_latitude_longitude`` with 1-D
  ``rlat``/``rlon``) on its own rotated coordinates, in cartopy's ``RotatedPole``;
* a regular latitude/longitude grid in ``PlateCarree``, centred on the data (longitudes 0..360 or -180..180);
* any other grid with 2-D latitude/longitude (curvilinear, projected x/y) on those, in ``PlateCarree``;
* an unstructured mesh with 1-D latitude/longitude per cell (ICON as CMIP6 stores it) as points;
* a grid with neither (x/y in km, or no coordinates) on its own coordinates or indices, without coastlines.

Cells span their ``bounds`` where the file has them, else halfway to their neighbours; the map shows exactly
the cells' span (latitudes within [-90, 90]). A map's grid whose bounds leave gaps between its cells (a
thinned copy) is drawn as points at the cells' centres: to scale its cells could be specks. Coastlines come
from the GSHHG shapefile installed with climio (``climio/eva/coastlines``): a plot never downloads anything.

Extrapolations: a return level for a period T longer than five times the record behind a cell's fit (its
years of valid data: valid values over values per year for GPD, complete blocks for GEV) is hatched (points:
stippled), and the figure says so in its legend and footnote. Beyond a few record lengths a return level
is the fitted tail's shape carried far past the data: its uncertainty grows quickly and the map should not
be read as if it were measured.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from climio.core import targets
from climio.errors import ClimioError
from climio.eva.output import grid_mappings
from climio.eva.series import Series

if TYPE_CHECKING:
    from matplotlib.figure import Figure

EXTRAPOLATION_FACTOR = 5.0  # a return period beyond this many record lengths is an extrapolation
LATITUDE_UNITS = ("degrees_north", "degree_north", "degrees_N", "degree_N")
LONGITUDE_UNITS = ("degrees_east", "degree_east", "degrees_E", "degree_E")
ROTATED = "rotated_latitude_longitude"


def _label(attrs: dict[str, object], fallback: str) -> str:
    name = str(attrs.get("long_name") or attrs.get("standard_name") or fallback)
    units = attrs.get("units")
    return f"{name} ({units})" if units else name


def _is(attrs: dict[str, object], units: tuple[str, ...], standard_name: str) -> bool:
    return attrs.get("units") in units or attrs.get("standard_name") == standard_name


@dataclass(frozen=True)
class Axis:
    """A coordinate the map is drawn on: the output variable with its values, its bounds', and its label."""

    name: str
    bounds: str | None
    label: str
    indexed: bool = False  # no coordinate variable: the cells' indices


@dataclass(frozen=True)
class Pole:
    """CF ``rotated_latitude_longitude``: where the rotated grid's north pole lies."""

    latitude: float
    longitude: float
    grid_longitude: float = 0.0  # north_pole_grid_longitude


@dataclass(frozen=True)
class Map:
    """Where each cell is drawn, in which projection, and what the titles say."""

    kind: str  # "grid" (1-D x and y), "curvilinear" (2-D lat/lon), "points" (1-D lat/lon per cell)
    x: Axis  # longitude, rotated longitude, or x
    y: Axis
    geographic: bool  # x/y are longitude/latitude (or rotated ones): drawn with cartopy and coastlines
    pole: Pole | None  # a rotated grid's pole
    transposed: bool  # the cells' dimensions are (x, y)
    var: str
    long_name: str
    units: str
    period: str

    @staticmethod
    def of(series: Series) -> Map:
        """How to draw the series' cells; refuses (before the analysis) a layout that is not a map."""
        dims = series.cell_dims
        attrs = dict(series.var.attrs)
        common = {"var": series.name, "long_name": str(attrs.get("long_name") or attrs.get("standard_name")
                                                        or series.name),
                  "units": str(attrs.get("units", "")), "period": series.period()}
        if len(dims) == 1 and (found := _lat_lon(series, dims)):
            return Map("points", *found, geographic=True, pole=None, transposed=False, **common)
        if len(dims) != 2:
            raise ClimioError(f"--plot draws maps of two cell dimensions, but '{series.name}' has cells along "
                              f"{', '.join(dims) or 'none'}: cut the others to one value with -d", collective=True)
        variables = series.inputs.variables
        own = [_axis(series, d) if d in variables and variables[d].dims == (d,) else None for d in dims]
        kinds = [dict(variables[a.name].attrs) if a else {} for a in own]
        names = sorted(str(k.get("standard_name")) for k in kinds)
        pole = _pole(series)
        if pole and names == ["grid_latitude", "grid_longitude"]:
            x, y = _ordered(own, kinds, "grid_longitude")
            return Map("grid", x, y, True, pole, x is own[0], **common)
        if sorted(_is(k, LONGITUDE_UNITS, "longitude") for k in kinds) == [False, True] and \
                any(_is(k, LATITUDE_UNITS, "latitude") for k in kinds):
            x, y = _ordered(own, kinds, "longitude")
            return Map("grid", x, y, True, None, x is own[0], **common)
        if found := _lat_lon(series, dims):
            return Map("curvilinear", *found, geographic=True, pole=None, transposed=False, **common)
        y, x = (a or Axis(d, None, f"{d} (index)", indexed=True) for a, d in zip(own, dims))
        return Map("grid", x, y, geographic=False, pole=None, transposed=False, **common)


def _axis(series: Series, name: str) -> Axis:
    variables = series.inputs.variables
    attrs = dict(variables[name].attrs)
    bounds = str(attrs.get("bounds", ""))
    has_bounds = bounds in variables and variables[bounds].dims[:-1] == variables[name].dims
    return Axis(name, bounds if has_bounds else None, _label(attrs, name))


def _ordered(own: list[Axis | None], kinds: list[dict[str, object]], x_name: str) -> tuple[Axis, Axis]:
    """(x, y) of a grid's two 1-D coordinates: x is the (rotated) longitude."""
    first, second = own
    assert first is not None and second is not None
    first_is_x = kinds[0].get("standard_name") == x_name or kinds[0].get("units") in LONGITUDE_UNITS
    return (first, second) if first_is_x else (second, first)


def _lat_lon(series: Series, dims: tuple[str, ...]) -> tuple[Axis, Axis] | None:
    """(longitude, latitude) auxiliary coordinates on exactly ``dims``, from the variable's ``coordinates``."""
    variables = series.inputs.variables
    named = [n for n in str(series.var.attrs.get("coordinates", "")).split() if n in variables]
    on_cells = [n for n in named if variables[n].dims == dims]
    lat = next((n for n in on_cells if _is(dict(variables[n].attrs), LATITUDE_UNITS, "latitude")), None)
    lon = next((n for n in on_cells if _is(dict(variables[n].attrs), LONGITUDE_UNITS, "longitude")), None)
    return (_axis(series, lon), _axis(series, lat)) if lat and lon else None


def _pole(series: Series) -> Pole | None:
    """The rotated pole of the variable's ``grid_mapping``, if it is CF's rotated latitude/longitude."""
    variables = series.inputs.variables
    for name in grid_mappings(series.var.attrs.get("grid_mapping", "")):
        attrs = dict(variables[name].attrs) if name in variables else {}
        if attrs.get("grid_mapping_name") == ROTATED:
            try:
                return Pole(float(attrs["grid_north_pole_latitude"]),  # type: ignore[arg-type]
                            float(attrs["grid_north_pole_longitude"]),  # type: ignore[arg-type]
                            float(attrs.get("north_pole_grid_longitude", 0.0)))  # type: ignore[arg-type]
            except (KeyError, TypeError, ValueError):
                raise ClimioError(f"--plot: the grid mapping '{name}' of '{series.name}' is {ROTATED} but lacks "
                                  f"a numeric grid_north_pole_latitude or grid_north_pole_longitude",
                                  collective=True) from None
    return None


@dataclass(frozen=True)
class Fields:
    """What the two maps show, on the whole grid (rank 0)."""

    level: np.ndarray  # the return level at every cell
    shape: np.ndarray  # the fitted shape
    years: np.ndarray  # the years of data behind each cell's fit
    period: float  # the return period of ``level``, years
    method: str  # "GPD over threshold (...)" or "GEV of block maxima (...)"
    distribution: str  # "GPD" or "GEV"
    note: str = ""  # which season, at which covariate value

    @property
    def extrapolated(self) -> np.ndarray:
        """Cells whose return level is an extrapolation: a period over five times the cell's record."""
        with np.errstate(invalid="ignore"):
            return np.isfinite(self.level) & (self.period > EXTRAPOLATION_FACTOR * self.years)


def figure(where: Map, values: dict[str, np.ndarray], fields: Fields) -> Figure:
    """The figure, not saved: the return level and the shape side by side."""
    from climio.eva import maps

    return maps.figure(where, values, fields)


def draw(path: str, where: Map, values: dict[str, np.ndarray], fields: Fields) -> None:
    """Both maps, written atomically to ``path``."""
    drawn = figure(where, values, fields)
    kind = os.path.splitext(path)[1][1:].lower()  # the suffix chooses the format (core.targets.IMAGE_SUFFIXES)
    targets.write_atomically(path, "--plot", lambda temp: drawn.savefig(temp, dpi=130, format=kind),
                             "; the analysis was not published either")
