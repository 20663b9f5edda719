"""``climio eva --plot map.png``: maps of a return level and of the GPD shape, drawn on rank 0.

A grid with 2-D latitude/longitude (a rotated pole, a curvilinear ocean grid) is
drawn on them; a regular grid on its own coordinates, labelled by their
``long_name``/``units``; an unstructured grid with 1-D latitude/longitude (ICON as
CMIP6 stores it) as points.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from climio.core import targets
from climio.errors import ClimioError
from climio.eva.series import Series

PER_SECOND_TO_PER_DAY = {"kg m-2 s-1": ("mm/day", 86400.0)}  # show fluxes as people read them
LATITUDE_UNITS = ("degrees_north", "degree_north", "degrees_N", "degree_N")
LONGITUDE_UNITS = ("degrees_east", "degree_east", "degrees_E", "degree_E")


def _label(attrs: dict[str, object], fallback: str) -> str:
    name = str(attrs.get("long_name") or attrs.get("standard_name") or fallback)
    units = attrs.get("units")
    return f"{name} ({units})" if units else name


def _lat_lon(series: Series, dims: tuple[str, ...]) -> tuple[str, str] | None:
    """Auxiliary latitude and longitude coordinates on exactly ``dims``, from the variable's ``coordinates``."""
    variables = series.inputs.variables
    named = [variables[n] for n in str(series.var.attrs.get("coordinates", "")).split() if n in variables]
    lat = next((v.name for v in named if v.dims == dims and v.attrs.get("units") in LATITUDE_UNITS), None)
    lon = next((v.name for v in named if v.dims == dims and v.attrs.get("units") in LONGITUDE_UNITS), None)
    return (lat, lon) if lat and lon else None


@dataclass(frozen=True)
class Map:
    """Where each cell is drawn and what the axes and titles say."""

    kind: str  # "mesh" (pcolormesh) or "points" (scatter)
    x: str | None  # output variable holding x (None: cell index)
    y: str | None
    xlabel: str
    ylabel: str
    var: str
    units: str
    period: str

    @staticmethod
    def of(series: Series) -> Map:
        """How to draw the series' cells; refuses (before the analysis) a layout that is not a map."""
        dims = series.cell_dims
        variables = series.inputs.variables
        units = str(series.var.attrs.get("units", ""))
        period = series.period()
        if len(dims) == 1 and (found := _lat_lon(series, dims)):
            lat, lon = found
            return Map("points", lon, lat, _label(dict(variables[lon].attrs), lon),
                       _label(dict(variables[lat].attrs), lat), series.name, units, period)
        if len(dims) != 2:
            raise ClimioError(f"--plot draws maps of two cell dimensions, but '{series.name}' has cells along "
                              f"{', '.join(dims) or 'none'}: cut the others to one value with -d", collective=True)
        if found := _lat_lon(series, dims):
            lat, lon = found
            return Map("mesh", lon, lat, _label(dict(variables[lon].attrs), lon),
                       _label(dict(variables[lat].attrs), lat), series.name, units, period)
        ydim, xdim = dims
        x = xdim if xdim in variables and variables[xdim].dims == (xdim,) else None
        y = ydim if ydim in variables and variables[ydim].dims == (ydim,) else None
        xlabel = _label(dict(variables[xdim].attrs), xdim) if x else f"{xdim} (index)"
        ylabel = _label(dict(variables[ydim].attrs), ydim) if y else f"{ydim} (index)"
        return Map("mesh", x, y, xlabel, ylabel, series.name, units, period)


def draw(path: str, where: Map, values: dict[str, np.ndarray], level: np.ndarray, period: float,
         shape: np.ndarray, distribution: str = "GPD", at: str = "") -> None:
    """Two panels, the ``period``-year return level (``at``: which season, where a covariate takes which value)
    and the shape, written atomically to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown_units, factor = PER_SECOND_TO_PER_DAY.get(where.units, (where.units, 1.0))
    ny, nx = (1, level.size) if where.kind == "points" else level.shape
    x = values[where.x] if where.x else np.arange(nx)
    y = values[where.y] if where.y else np.arange(ny)
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.6), constrained_layout=True)
    for ax, field, title, cmap, label in (
            (axes[0], level * factor, f"{period:g}-year return level{at} of {where.var} ({shown_units or '1'})", "viridis",
             shown_units or "1"),
            (axes[1], shape, f"{distribution} shape of {where.var}", "RdBu_r", "1")):
        limit = np.nanmax(np.abs(field)) if cmap == "RdBu_r" and np.isfinite(field).any() else None
        scale = {"cmap": cmap, "vmin": -limit if limit else None, "vmax": limit}
        if where.kind == "points":
            drawn = ax.scatter(x, y, c=field, s=6, **scale)
        else:
            with warnings.catch_warnings():  # 2-D lat/lon of a rotated grid are not monotonic: drawn all the same
                warnings.simplefilter("ignore", UserWarning)
                drawn = ax.pcolormesh(x, y, field, shading="auto", **scale)
        figure.colorbar(drawn, ax=ax, label=label)
        ax.set_title(f"{title}\n{where.period}", fontsize=10)
        ax.set_xlabel(where.xlabel)
        ax.set_ylabel(where.ylabel)
    try:
        targets.write_atomically(path, "--plot", lambda temp: figure.savefig(temp, dpi=110, format="png"),
                                 "; the analysis was not published either")
    finally:
        plt.close(figure)
