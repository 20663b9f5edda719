"""``climio eva --plot``: maps a scientist could publish, on three real grids.

CESM2 daily tas (regular lat/lon with bounds, longitudes 0..360, a row at the south pole), CORDEX NAM-22 pr
(rotated pole) and ICON tas (an unstructured mesh, drawn as points) are each analysed once, in this process
(:func:`climio.eva.job.run`, one rank), with the network unreachable and cartopy's download directory
watched; each map's Figure is kept for the tests. They check that the map shows the cells' span and no more
(within the bounds, in the map's own projection), in the grid's own projection, with coastlines drawn from
the installed shapefile and nothing downloaded; what the colorbars and the title say; that the extrapolations
marked are the cells whose return period is over five times their record, counted again from the inputs; and
that the plot's time is reported apart from the analysis. The layouts themselves (:class:`Map`) and the
refusal of a layout that is no map are checked on more files, the command's own run at two ranks.
"""

from __future__ import annotations

import glob
import io
import os
import socket
import sys
import time
import tomllib
from dataclasses import dataclass, replace
from fnmatch import fnmatch
from pathlib import Path

import cartopy
import cartopy.crs as ccrs
import cftime
import matplotlib
import netCDF4
import numpy as np
import pytest
from cartopy.io import Downloader
from cartopy.mpl.geoaxes import GeoAxes
from conftest import one_error_line
from matplotlib.collections import Collection, PathCollection
from matplotlib.figure import Figure

from climio.errors import ClimioError
from climio.eva import job, maps, plot
from climio.eva.plot import Axis, Fields, Map
from climio.eva.series import Series, time_rule
from climio.core.inputs import open_inputs
from climio.core.ranges import parse_dim_range

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Batch  # noqa: E402

matplotlib.use("Agg")
pytestmark = pytest.mark.filterwarnings("ignore:WARNING. missing_value not used:UserWarning")  # CESM2's double
ROOT = Path(__file__).resolve().parents[1]
REAL = os.path.join(os.path.dirname(__file__), "data", "real")
SLEEP = 1.0  # seconds the CESM2 plot is held up, to see them counted apart from the analysis


def real(pattern: str) -> list[str]:
    found = sorted(glob.glob(os.path.join(REAL, pattern)))
    assert found, pattern
    return found


CASES = {  # name -> (inputs, options)
    "cesm2": (real("tas_day_CESM2-WACCM_*.nc"), job.Options(var="tas", method="gev")),
    "cordex": (real("pr_NAM-22_*_day_*.nc"), job.Options(var="pr")),
    "icon": (real("tas_Amon_ICON-ESM-LR_*.nc"), job.Options(var="tas", npy=12.0)),
}


@dataclass
class Plotted:
    figure: Figure
    where: Map
    fields: Fields
    summary: job.Summary
    wall: float  # seconds job.run took
    out: Path
    coastline_paths: dict[int, int]  # id(axes) -> coastline paths drawn into it


@pytest.fixture(scope="module")
def plotted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Plotted]:
    """Each case analysed and plotted once; no socket may connect, no cartopy download may start."""
    from mpi4py import MPI

    directory = tmp_path_factory.mktemp("eva-plot")
    made: dict[str, Plotted] = {}
    seen: list[tuple[Figure, Map, Fields]] = []
    drawn: dict[int, int] = {}
    real_figure, real_draw = plot.figure, Collection.draw

    def kept(where: Map, values: dict[str, np.ndarray], fields: Fields) -> Figure:
        figure = real_figure(where, values, fields)
        seen.append((figure, where, fields))
        if where.var == "tas" and where.kind == "grid":
            time.sleep(SLEEP)
        return figure

    def counted(self: Collection, renderer: object) -> None:
        if self.get_gid() == "coastlines":
            drawn[id(self.axes)] = drawn.get(id(self.axes), 0) + len(self.get_paths())
        real_draw(self, renderer)

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network use during a plot: {args}")

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(cartopy.config, "data_dir", str(directory / "cartopy-data"))
        patch.setattr(Downloader, "acquire_resource", refused)
        patch.setattr(socket.socket, "connect", refused)
        patch.setattr(plot, "figure", kept)
        patch.setattr(Collection, "draw", counted)
        for name, (inputs, opts) in CASES.items():
            out = directory / f"{name}.nc"
            started = time.perf_counter()
            summary = job.run(inputs, str(out), MPI.COMM_WORLD, replace(opts, plot=str(directory / f"{name}.png")),
                              quiet=True)
            wall = time.perf_counter() - started
            figure, where, fields = seen[-1]
            made[name] = Plotted(figure, where, fields, summary, wall, out, dict(drawn))
    assert not (directory / "cartopy-data").exists() or not any((directory / "cartopy-data").rglob("*"))
    return made


def maps_of(figure: Figure) -> list[GeoAxes]:
    return [ax for ax in figure.axes if isinstance(ax, GeoAxes)]


def colorbar_labels(figure: Figure) -> list[str]:
    return [ax.get_xlabel() for ax in figure.axes if not isinstance(ax, GeoAxes)]


def read(path: str, *names: str) -> list[np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        return [np.ma.filled(ds[n][:].astype(float), np.nan) for n in names]


@pytest.mark.parametrize("case", CASES)
def test_extent_is_the_cells_span(plotted: dict[str, Plotted], case: str) -> None:
    """CESM2's latitudes from -90 once drew an axis down to -135 and its longitudes from -60 (the cells'
    midpoints extrapolated past the poles, the bounds ignored): each map now spans the cells' bounds and no
    more, in its own projection, latitudes within the poles."""
    path = CASES[case][0][0]
    for ax in maps_of(plotted[case].figure):
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        assert -90.0 <= y0 < y1 <= 90.0
        if case == "cesm2":  # exactly the bounds: -90 to the top row's upper bound, 0..360 longitudes unbroken
            lon_bnds, lat_bnds = read(path, "lon_bnds", "lat_bnds")
            lon, lat = np.meshgrid(lon_bnds.ravel(), lat_bnds.ravel())
            xy = ax.projection.transform_points(ccrs.PlateCarree(), lon.ravel(), lat.ravel())
            assert np.allclose((x0, x1, y0, y1), (xy[:, 0].min(), xy[:, 0].max(), -90.0, lat_bnds.max()))
            assert np.isclose(x1 - x0, lon_bnds.max() - lon_bnds.min())
        elif case == "cordex":  # no bounds: the cells' centres inside, the extent half a cell beyond them
            lon, lat, rlon, rlat = read(path, "lon", "lat", "rlon", "rlat")
            xy = ax.projection.transform_points(ccrs.PlateCarree(), lon.ravel(), lat.ravel())
            assert np.allclose(xy[:, 0], np.tile(rlon, 3), atol=1e-3)  # in its own rotated coordinates
            assert np.allclose(xy[:, 1], np.repeat(rlat, 4), atol=1e-3)
            half = np.diff(rlon)[0] / 2, np.diff(rlat)[0] / 2
            assert np.allclose((x0, x1, y0, y1), (rlon[0] - half[0], rlon[-1] + half[0], rlat[0] - half[1],
                                                  rlat[-1] + half[1]))
        else:  # every longitude of the extent inside some cell's vertices (cells cross the antimeridian)
            lon, lon_bnds, lat_bnds = read(path, "longitude", "longitude_bnds", "latitude_bnds")
            offset = np.mod(lon_bnds - lon[:, None] + 180.0, 360.0) - 180.0
            west, width = lon + offset.min(axis=1), np.ptp(offset, axis=1)
            seen = np.linspace(x0, x1, 721) + ax.projection.proj4_params["lon_0"]
            assert (np.mod(seen[:, None] - west[None, :], 360.0) <= width[None, :] + 1e-9).any(axis=1).all()
            assert lat_bnds.min() <= y0 and y1 <= lat_bnds.max()


@pytest.mark.parametrize("case, projection", [("cesm2", ccrs.PlateCarree), ("cordex", ccrs.RotatedPole),
                                              ("icon", ccrs.PlateCarree)])
def test_the_grid_s_own_projection(plotted: dict[str, Plotted], case: str, projection: type) -> None:
    axes = maps_of(plotted[case].figure)
    assert len(axes) == 2 and all(type(ax.projection) is projection for ax in axes)
    if case == "cordex":  # CF rotated_latitude_longitude 42.5 N, 83 E: PROJ's o_lat_p and lon_0 = 180 + 83
        params = axes[0].projection.proj4_params
        assert np.isclose(params["o_lat_p"], 42.5) and np.isclose(params["lon_0"] % 360.0, 263.0)
    if case == "icon":  # the mesh as points, every cell one
        points = [c for c in axes[0].collections if isinstance(c, PathCollection) and c.get_gid() == "no fit"]
        assert len(points) == 1 and len(points[0].get_offsets()) == 20480


@pytest.mark.parametrize("case", CASES)
def test_coastlines_drawn_without_download(plotted: dict[str, Plotted], case: str) -> None:
    """The coastlines are the installed GSHHG shapefile's, drawn into both maps; the fixture refused every
    socket and cartopy download and found nothing in cartopy's data directory."""
    made = plotted[case]
    for ax in maps_of(made.figure):
        assert made.coastline_paths.get(id(ax), 0) > 0, case
    assert maps.COASTLINES.is_file()


@pytest.mark.parametrize("case, units", [("cesm2", "(K)"), ("cordex", "(mm/day)"), ("icon", "(K)")])
def test_colorbars_say_what_and_in_which_units(plotted: dict[str, Plotted], case: str, units: str) -> None:
    made = plotted[case]
    level, shape = colorbar_labels(made.figure)
    long_name = {"cesm2": "Near-Surface Air Temperature", "cordex": "Precipitation",
                 "icon": "Near-Surface Air Temperature"}[case]
    distribution = "GEV" if case == "cesm2" else "GPD"
    assert level == f"100-year return level of {long_name} {units}"
    assert shape == f"{distribution} shape \u03be of {long_name} (dimensionless)"
    assert "1" not in shape and not level.endswith("(1)")


@pytest.mark.parametrize("case, method, first, last", [
    ("cesm2", "GEV of block maxima (annual blocks)", "2000-01-01", "2009-12-31"),
    ("cordex", "GPD over threshold (each cell's 99th percentile)", "2051-01-01", "2060-12-31"),
    ("icon", "GPD over threshold (each cell's 99th percentile)", "1850-01-16", "1850-01-16")])
def test_title_says_variable_method_period_and_return_period(plotted: dict[str, Plotted], case: str, method: str,
                                                             first: str, last: str) -> None:
    title = plotted[case].figure.get_suptitle()
    var = CASES[case][1].var
    assert f"({var})" in title and method in title and "100-year return level" in title
    assert f"{first} " in title and f".. {last}" in title


def marked(ax: GeoAxes) -> int:
    """Cells a map marks as extrapolations (stipples or hatched cells)."""
    found = [c for c in ax.collections if c.get_gid() == "extrapolated"]
    if not found:
        return 0
    (marks,) = found
    return len(marks.get_offsets()) if isinstance(marks, PathCollection) else len(marks.get_paths())


def independent_years(case: str, out: Path) -> np.ndarray:
    """Each cell's years of data, from the input: complete years (GEV; at most 10 % of the days missing) or
    valid values over the analysis' values per year (GPD)."""
    paths, opts = CASES[case]
    values, times = [], []
    for path in paths:
        with netCDF4.Dataset(path) as ds:
            values.append(np.ma.getmaskarray(ds[opts.var][:]) == 0)
            times.append(cftime.num2date(ds["time"][:], ds["time"].units, ds["time"].calendar))
    valid = np.concatenate(values).reshape(sum(len(t) for t in times), -1)
    if opts.method == "gev":
        years = np.array([t.year for t in np.concatenate(times)])
        per_year = np.stack([valid[years == y].sum(axis=0) for y in np.unique(years)])
        return (per_year >= 0.9 * 365).sum(axis=0).astype(float)
    with netCDF4.Dataset(out) as ds:
        npy = float(ds.climio_npy)  # the analysis' values per year (CORDEX: 365.25 days, ICON: 12 months)
    return valid.sum(axis=0) / npy


@pytest.mark.parametrize("case", CASES)
def test_extrapolations_marked(plotted: dict[str, Plotted], case: str) -> None:
    """The return level's map marks exactly the fitted cells whose return period is over 5 x their record,
    counted again from the input and eva's output file; the shape's map marks none; the footnote says the
    rule."""
    made = plotted[case]
    (level,) = read(str(made.out), "return_level")
    expected = int((np.isfinite(level[0].ravel()) & (100.0 > 5.0 * independent_years(case, made.out))).sum())
    level_map, shape_map = maps_of(made.figure)
    assert marked(level_map) == expected and marked(shape_map) == 0
    assert {"cesm2": 6, "cordex": 12, "icon": 0}[case] == expected  # 10 years of data; ICON: one month, no fit
    footnote = made.figure.get_supxlabel()
    if expected:
        assert "extrapolations, where the 100-year return period exceeds 5 \u00d7 the years of data" in footnote
    else:
        assert "Grey: no fit (20480 of 20480 cells" in footnote


def test_extrapolation_marks_follow_each_cell_s_record() -> None:
    """Cells with different records on a small regular grid: only those whose record is under a fifth of the
    return period are hatched, a cell without a fit is not."""
    lat, lon = np.array([-10.0, 0.0, 10.0]), np.array([350.0, 0.0, 10.0, 20.0])
    values = {"lat": lat, "lon": lon}
    where = Map("grid", Axis("lon", None, "longitude"), Axis("lat", None, "latitude"), True, None, False,
                "pr", "Precipitation", "kg m-2 s-1", "2001-01-01 .. 2030-12-31")
    years = np.array([[30.0, 19.0, 21.0, 4.0], [2.0, 30.0, 30.0, 30.0], [10.0, 20.0, 19.9, 30.0]])
    level = np.full(years.shape, 1e-4)
    level[2, 0] = np.nan
    fields = Fields(level, np.zeros(years.shape), years, 100.0, "GPD over threshold", "GPD")
    figure = plot.figure(where, values, fields)
    expected = int((np.isfinite(level) & (100.0 > 5.0 * years)).sum())
    assert expected == 4 and marked(maps_of(figure)[0]) == expected
    assert "extrapolations" in figure.get_supxlabel() and "2 to 30 years" in figure.get_supxlabel()
    x0, x1 = maps_of(figure)[0].get_xlim()  # 350..20 east: one run of 40 degrees across Greenwich
    assert np.isclose(x1 - x0, 40.0)


def test_a_curvilinear_grid_is_drawn_on_its_2d_lat_lon() -> None:
    """A grid known only by its 2-D latitude/longitude (a projected or curvilinear grid), here across Greenwich:
    PlateCarree centred on it, the extent its centres' span, extrapolations hatched cell by cell."""
    j, i = np.meshgrid(np.arange(4.0), np.arange(5.0), indexing="ij")
    lon, lat = np.mod(340.0 + 10.0 * i + 2.0 * j, 360.0), 40.0 + 5.0 * j - 1.0 * i
    where = Map("curvilinear", Axis("lon", None, "longitude"), Axis("lat", None, "latitude"), True, None, False,
                "tas", "Near-Surface Air Temperature", "K", "2001-01-01 .. 2030-12-31")
    years = np.where(i > 2, 10.0, 30.0)
    fields = Fields(np.full(years.shape, 300.0), np.zeros(years.shape), years, 100.0, "GEV of block maxima", "GEV")
    figure = plot.figure(where, {"lon": lon, "lat": lat}, fields)
    ax = maps_of(figure)[0]
    assert type(ax.projection) is ccrs.PlateCarree
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert np.isclose(x1 - x0, 46.0) and (y0, y1) == (lat.min(), lat.max())
    assert marked(ax) == 8 and "(dimensionless)" in colorbar_labels(figure)[1]


def test_plot_time_is_reported_apart(plotted: dict[str, Plotted]) -> None:
    """Summary.plot_seconds is the plot's time (held up here by SLEEP), and Summary.seconds leaves it out."""
    summary, wall = plotted["cesm2"].summary, plotted["cesm2"].wall
    assert summary.plot_seconds >= SLEEP
    assert summary.seconds + summary.plot_seconds + summary.compiled <= wall + 0.05
    assert summary.seconds < wall - SLEEP


def test_coastlines_are_package_data() -> None:
    """pyproject's package data carries the shapefile (all three parts), its README and licences into the wheel."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["climio.eva"]
    here = ROOT / "src" / "climio" / "eva"
    shipped = {p.relative_to(here).as_posix() for p in (here / "coastlines").iterdir()}
    assert {"coastlines/GSHHS_c_L1.shp", "coastlines/GSHHS_c_L1.shx", "coastlines/GSHHS_c_L1.dbf",
            "coastlines/README.md", "coastlines/LGPL-3.0.txt", "coastlines/GPL-3.0.txt"} <= shipped
    assert all(any(fnmatch(name, g) for g in globs) for name in shipped)
    assert sum((here / name).stat().st_size for name in shipped) < 500_000


def map_of(paths: list[str], var: str, ranges: tuple[str, ...] = ()) -> Map:
    from mpi4py import MPI

    with open_inputs(paths, MPI.COMM_WORLD, time_rule(var, paths[0]), False, label="inputs") as inputs:
        return Map.of(Series(inputs, var, [parse_dim_range(r) for r in ranges], paths[0]))


def test_rotated_pole_is_drawn_on_rlat_rlon() -> None:
    for pattern, var, pole in (("pr_NAM-22_*_day_*.nc", "pr", (42.5, 83.0)),
                               ("tas_EUR-11_*.nc", "tas", (39.25, -162.0))):
        where = map_of(real(pattern), var)
        assert (where.kind, where.x.name, where.y.name, where.transposed) == ("grid", "rlon", "rlat", False)
        assert where.pole is not None and (where.pole.latitude, where.pole.longitude) == pole
    assert where.units == "K" and where.long_name == "Near-Surface Air Temperature"


def test_regular_grid_icon_and_curvilinear() -> None:
    cesm = map_of(real("tas_day_CESM2-WACCM_*.nc"), "tas")
    assert (cesm.kind, cesm.x, cesm.y, cesm.pole) == ("grid", Axis("lon", "lon_bnds", "longitude (degrees_east)"),
                                                      Axis("lat", "lat_bnds", "latitude (degrees_north)"), None)
    icon = map_of(real("tas_Amon_ICON-ESM-LR_*.nc"), "tas")
    assert (icon.kind, icon.x.name, icon.x.bounds, icon.y.name) == ("points", "longitude", "longitude_bnds",
                                                                    "latitude")


def test_stations_are_drawn_whole(tmp_path: Path) -> None:
    """A stations file (climio subset --points: centres, no bounds) maps as points, its extent a margin wider than
    the stations' span so that the outer ones are drawn whole, and within the globe."""
    from climio.subset.job import Request, subset
    from climio.subset.stations import make_stations
    from mpi4py import MPI

    path = str(tmp_path / "stations.nc")
    lat, lon = [-33.92, 1.35, 52.1, -10.0], [18.42, 103.82, 5.18, 250.0]
    subset(Request(inputs=real("tas_day_CESM2-WACCM_*.nc"), output=path, variables=["tas"],
                   points=make_stations("test", ["a", "b", "c", "d"], lat, lon)), MPI.COMM_WORLD)
    where = map_of([path], "tas")
    assert (where.kind, where.x.name, where.x.bounds, where.y.name) == ("points", "lon", None, "lat")
    with netCDF4.Dataset(path) as ds:
        values = {name: ds[name][:] for name in ("lon", "lat")}
    cells = maps.cells_of(where, values, (4,))
    x0, x1, y0, y1 = cells.extent
    east = np.sort(np.mod(lon, 360.0))
    span = 360.0 - np.max(np.diff(np.append(east, east[0] + 360.0)))  # the shortest arc that holds them all
    assert x1 - x0 == pytest.approx(span + 2 * max(0.05 * span, 1.0))
    margin = 0.05 * (max(lat) - min(lat))
    assert (y0, y1) == pytest.approx((min(lat) - margin, max(lat) + margin))


def test_a_plain_grid_is_labelled_by_its_coordinates(tmp_path: Path) -> None:
    """No latitude/longitude: the map is drawn on the grid's own coordinates (or indices), plain, no coastlines."""
    path = tmp_path / "grid.nc"
    with netCDF4.Dataset(path, "w") as ds:
        for name, size in (("time", 40), ("y", 3), ("x", 4)):
            ds.createDimension(name, size)
        ds.createVariable("time", "f8", ("time",)).setncatts({"units": "days since 2000-01-01"})
        northing = ds.createVariable("y", "f8", ("y",))
        northing.setncatts({"long_name": "northing", "units": "km"})
        northing[:] = [0.0, 5.0, 10.0]
        ds.createVariable("pr", "f4", ("time", "y", "x"))[:] = np.ones((40, 3, 4), "f4")
    where = map_of([str(path)], "pr")
    assert (where.kind, where.geographic, where.x.indexed, where.y.name) == ("grid", False, True, "y")
    figure = plot.figure(where, {"y": np.array([0.0, 5.0, 10.0])},
                         Fields(np.ones((3, 4)), np.zeros((3, 4)), np.full((3, 4), 40.0), 100.0, "GPD", "GPD"))
    ax = figure.axes[0]
    assert not maps_of(figure) and (ax.get_xlabel(), ax.get_ylabel()) == ("x (index)", "northing (km)")
    assert np.allclose((*ax.get_xlim(), *ax.get_ylim()), (-0.5, 3.5, -2.5, 12.5))
    figure.savefig(io.BytesIO(), format="png")


def test_three_cell_dimensions_are_no_map() -> None:
    with pytest.raises(ClimioError, match="--plot draws maps of two cell dimensions.*lev, lat, lon"):
        map_of(real("o3_AERmon_*.nc"), "o3")
    assert map_of(real("o3_AERmon_*.nc"), "o3", ("lev,0",)).x.name == "lon"


def test_cordex_plot_and_refusal_from_the_command(tmp_path: Path) -> None:
    """Both runs, one after the other, in one 2-rank process (``helpers/eva_batch.py``: one start-up)."""
    png, out = tmp_path / "map.png", tmp_path / "eva.nc"
    batch = Batch(tmp_path.parent / f"{tmp_path.name}-batch", 2, timeout=300)
    batch.add("cordex", "eva", *real("pr_NAM-22_*_day_*.nc"), out, "--plot", png)
    batch.add("o3", "eva", *real("o3_AERmon_*.nc"), tmp_path / "o3.nc", "-v", "o3", "--npy", "12", "--plot",
              tmp_path / "o3.png")
    result = batch["cordex"]
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    refused = batch["o3"]
    one_error_line(refused, "--plot", "-d")
    assert sorted(os.listdir(tmp_path)) == ["eva.nc", "map.png"]
