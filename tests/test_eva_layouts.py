"""``climio eva`` on layouts other than (time, lat, lon): time last and not unlimited, a level picked by value,
ensemble members as cells, one station series, a cut by dates; and the -d / time-step / calendar refusals.

Small synthetic files written here with netCDF4 (gamma values, so every fit succeeds); each run is compared,
bit for bit, with :func:`climio.eva.pot.analyse` on the array written and with the same data in the ordinary
(time, lat, lon) layout.

The command's runs are made once, one process per rank count (``helpers/eva_batch.py``: one start-up for all of
them, each run in a directory of its own, its inputs written first); each test checks its own runs' outcomes and
files.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import leftovers, one_error_line

from climio.eva import pot

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Outcome, Runs  # noqa: E402

T, NLAT, NLON = 2000, 3, 4
FIELDS = ("threshold", "scale", "shape", "rate", "n_exceed", "return_level", "nll", "status")
LAT = np.array([-10.0, 0.0, 10.0])
LON = np.array([0.0, 90.0, 180.0, 270.0])
PLEV = np.array([100000.0, 85000.0, 50000.0])
COORD_ATTRS: dict[str, dict[str, str]] = {
    "lat": {"units": "degrees_north", "standard_name": "latitude", "axis": "Y"},
    "lon": {"units": "degrees_east", "standard_name": "longitude", "axis": "X"},
    "plev": {"units": "Pa", "standard_name": "air_pressure", "axis": "Z", "positive": "down"},
}


def gamma(shape: Sequence[int], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).gamma(0.8, 5.0, size=tuple(shape)).astype(np.float32)


def write(path: Path, dims: Sequence[str], data: np.ndarray, *, var: str = "pr", unlimited: bool = True,
          time: np.ndarray | None = None, calendar: str = "noleap", units: str = "days since 2000-01-01",
          coords: Mapping[str, np.ndarray] | None = None) -> Path:
    """``var(dims)`` = data, with a CF time coordinate and the given 1-D coordinates (lat/lon by default)."""
    coords = {"lat": LAT, "lon": LON, **(coords or {})}
    nt = data.shape[list(dims).index("time")]
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        for dim, size in zip(dims, data.shape):
            ds.createDimension(dim, None if dim == "time" and unlimited else size)
        t = ds.createVariable("time", "f8", ("time",))
        t.setncatts({"units": units, "calendar": calendar, "standard_name": "time", "axis": "T"})
        t[:] = np.arange(nt, dtype=float) if time is None else time
        for dim in dims:
            if dim in coords:
                c = ds.createVariable(dim, "f8", (dim,))
                c.setncatts(COORD_ATTRS.get(dim, {}))
                c[:] = coords[dim]
        v = ds.createVariable(var, "f4", tuple(dims), fill_value=np.float32(1e20))
        v.setncatts({"units": "kg m-2 s-1", "standard_name": "precipitation_flux", "cell_methods": "time: mean"})
        v[:] = data
        ds.setncattr("source_id", "synthetic")
    return path


def analyse(series: np.ndarray, cells: tuple[int, ...], npy: float = 365.25) -> dict[str, np.ndarray]:
    """The reference: pot.analyse on the (time, cells...) array as written, shaped as the output's variables."""
    result = pot.analyse(series.reshape(series.shape[0], -1), tail=0.01, periods=[100], npy=npy, min_exceed=10,
                         missing=[1e20])
    return {name: getattr(result, name).reshape((1, *cells) if name == "return_level" else cells)
            for name in FIELDS}


def read(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: np.asarray(ds[name][:]) for name in FIELDS}


def assert_same(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray]) -> None:
    for name in FIELDS:
        assert got[name].shape == want[name].shape, (name, got[name].shape, want[name].shape)
        assert np.array_equal(got[name], want[name], equal_nan=True), name


def eva(result: Outcome) -> Outcome:
    """A run that must have succeeded."""
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def base() -> np.ndarray:
    """(time, lat, lon) daily values."""
    return gamma((T, NLAT, NLON), seed=11)


@pytest.fixture(scope="module")
def ordinary(tmp_path_factory: pytest.TempPathFactory, base: np.ndarray) -> Path:
    return write(tmp_path_factory.mktemp("ordinary") / "pr.nc", ("time", "lat", "lon"), base)


@pytest.fixture(scope="module")
def time_last(tmp_path_factory: pytest.TempPathFactory, base: np.ndarray) -> Path:
    """The same values as (lat, lon, time), time a fixed-size dimension."""
    return write(tmp_path_factory.mktemp("time_last") / "pr.nc", ("lat", "lon", "time"), np.moveaxis(base, 0, -1),
                 unlimited=False)


@pytest.fixture(scope="module")
def time_last_unlimited(tmp_path_factory: pytest.TempPathFactory, base: np.ndarray) -> Path:
    """(lat, lon, time) with time unlimited: netCDF-4 allows it (climio once refused such files)."""
    return write(tmp_path_factory.mktemp("time_last_unlimited") / "pr.nc", ("lat", "lon", "time"),
                 np.moveaxis(base, 0, -1), unlimited=True)


@pytest.fixture(scope="module")
def monthly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("monthly") / "monthly.nc", ("time", "lat", "lon"),
                 gamma((240, NLAT, NLON), seed=15), time=np.arange(240) * 30.0 + 15.0, calendar="360_day")


TIME_LAST = [(None, "slab", False), (2, "slab", False), (2, "transpose", False), (None, "slab", True),
             (3, "root", True)]
CUTS = [0, 700, 1300, T]
REFUSALS = ["stride", "wrapped", "missing_dim", "monthly", "calendars"]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, base: np.ndarray, ordinary: Path, time_last: Path,
         time_last_unlimited: Path, monthly: Path) -> tuple[Runs, dict[object, Path]]:
    """Every run of this file, made once, each in its own directory with the inputs it alone reads: (their
    outcomes, each run's directory)."""
    runs = Runs(tmp_path_factory.mktemp("runs"), timeout=540)
    dirs: dict[object, Path] = {}

    def add(key: object, *argv: object, nranks: int | None = None) -> None:
        runs.add(key, "eva", *argv, nranks=nranks)

    def new_dir(key: object) -> Path:
        dirs[key] = runs.case_dir()
        return dirs[key]

    add("ordinary", ordinary, new_dir("ordinary") / "eva.nc")
    for nranks, scheme, unlimited in TIME_LAST:
        key = ("time-last", nranks, scheme, unlimited)
        add(key, time_last_unlimited if unlimited else time_last, new_dir(key) / "eva.nc", "--scheme", scheme,
            "--split", "lon" if nranks else "lat", nranks=nranks)
    d = new_dir("split")
    paths = []
    for k, (a, b) in enumerate(zip(CUTS, CUTS[1:])):
        origin = 365.0 * k  # days since 2000-01-01 of the file's own time origin (noleap)
        paths.append(write(d / f"pr{k}.nc", ("lat", "lon", "time"), np.moveaxis(base[a:b], 0, -1), unlimited=False,
                           time=np.arange(a, b, dtype=float) - origin, units=f"days since {2000 + k}-01-01"))
    add("split", *paths, d / "eva.nc", "--split", "block", nranks=2)
    add("cut", ordinary, new_dir("cut") / "eva.nc", "-d", "lat,-10.,0.", "-d", "lon,1,3")
    data = gamma((T, len(PLEV), NLAT, NLON), seed=12)
    d = new_dir("levels-first")
    levels_first = write(d / "pr4d.nc", ("plev", "time", "lat", "lon"), np.moveaxis(data, 1, 0),
                         coords={"plev": PLEV}, unlimited=False)
    add("levels-first", levels_first, d / "eva.nc", "-d", "plev,85000.")
    d = new_dir("level")
    four = write(d / "pr4d.nc", ("time", "plev", "lat", "lon"), data, coords={"plev": PLEV})
    three = write(d / "pr850.nc", ("time", "lat", "lon"), data[:, 1])
    add("picked", four, d / "picked.nc", "-d", "plev,85000.")
    add("alone", three, d / "alone.nc")
    d = new_dir("ensemble")
    add("ensemble", write(d / "ens.nc", ("time", "member", "lat", "lon"), gamma((T, MEMBERS, NLAT, NLON), seed=13)),
        d / "eva.nc", "--split", "block", nranks=2)
    d = new_dir("station")
    add("station", write(d / "station.nc", ("time",), gamma((T,), seed=14)), d / "eva.nc", nranks=2)
    d = new_dir("dates")
    nco = subprocess.run(["ncks", "-O", "-d", "time,2001-01-01,2004-12-31", str(ordinary), str(d / "cut.nc")],
                         capture_output=True, text=True, timeout=60)
    assert nco.returncode == 0, nco.stderr
    add("by-dates", ordinary, d / "dates.nc", "-d", "time,2001-01-01,2004-12-31")
    add("of-cut", d / "cut.nc", d / "of_cut.nc")
    for case in REFUSALS:
        d = new_dir(("refused", case))
        out = d / "eva.nc"
        if case == "stride":
            add(("refused", case), ordinary, out, "-d", "lon,0,3,2")
        elif case == "wrapped":
            add(("refused", case), ordinary, out, "-d", "lon,270.,90.")
        elif case == "missing_dim":
            add(("refused", case), ordinary, out, "-d", "plev,0")
        elif case == "monthly":
            add(("refused", case), monthly, out)
        else:
            later = write(d / "later.nc", ("time", "lat", "lon"), base[:10], calendar="standard",
                          time=np.arange(T, T + 10, dtype=float))
            add(("refused", case), ordinary, later, out)
    add("monthly-npy", monthly, new_dir("monthly-npy") / "eva.nc", "--npy", "12", "--tail", "0.1")
    return runs.run(), dirs


@pytest.fixture(scope="module")
def ordinary_results(made: tuple[Runs, dict[object, Path]], base: np.ndarray) -> dict[str, np.ndarray]:
    """The ordinary layout's output, checked against the reference once."""
    runs, dirs = made
    eva(runs["ordinary"])
    got = read(dirs["ordinary"] / "eva.nc")
    assert_same(got, analyse(base, (NLAT, NLON)))
    status = got["status"]  # fits ran everywhere (a short gamma tail may put a shape at its bound, -1)
    assert set(np.unique(status).tolist()) <= {pot.STATUS_OK, pot.AT_BOUND} and np.count_nonzero(status == 0) >= 10
    return got


MEMBERS = 2


@pytest.mark.parametrize("nranks,scheme,unlimited", TIME_LAST)
def test_time_last_equals_time_first(made: tuple[Runs, dict[object, Path]], time_last: Path,
                                     time_last_unlimited: Path, base: np.ndarray,
                                     ordinary_results: dict[str, np.ndarray], nranks: int | None, scheme: str,
                                     unlimited: bool) -> None:
    runs, dirs = made
    key = ("time-last", nranks, scheme, unlimited)
    source = time_last_unlimited if unlimited else time_last
    with netCDF4.Dataset(source) as ds:
        assert ds["pr"].dimensions == ("lat", "lon", "time") and ds.dimensions["time"].isunlimited() == unlimited
    out = dirs[key] / "eva.nc"
    eva(runs[key])
    got = read(out)
    assert_same(got, ordinary_results)
    assert_same(got, analyse(base, (NLAT, NLON)))
    with netCDF4.Dataset(out) as ds:
        assert ds["return_level"].dimensions == ("period", "lat", "lon")
        assert ds["lat"][:].tolist() == LAT.tolist() and ds["lon"][:].tolist() == LON.tolist()
        assert ds["time"].shape == () and ds["time_bnds"][:].tolist() == [0.0, T - 1.0]
    assert leftovers(str(dirs[key])) == []


def test_files_split_along_a_time_axis_that_is_last_join_as_one(made: tuple[Runs, dict[object, Path]],
                                                                 base: np.ndarray,
                                                                 ordinary_results: dict[str, np.ndarray]) -> None:
    """Three (lat, lon, time) files, time fixed-size, each with its own time units: joined, rebased, and the
    results bit-identical to the one (time, lat, lon) file's."""
    runs, dirs = made
    d = dirs["split"]
    for k, (a, b) in enumerate(zip(CUTS, CUTS[1:])):  # the files as the run read them
        with netCDF4.Dataset(d / f"pr{k}.nc") as ds:
            assert ds["pr"].dimensions == ("lat", "lon", "time") and not ds.dimensions["time"].isunlimited()
            assert ds["time"].units == f"days since {2000 + k}-01-01"
            assert np.array_equal(ds["pr"][:], np.moveaxis(base[a:b], 0, -1))
    result = eva(runs["split"])
    assert "3 files, 2000 steps" in result.stdout, result.stdout
    out = d / "eva.nc"
    assert_same(read(out), ordinary_results)
    with netCDF4.Dataset(out) as ds:
        assert ds["time"].units == "days since 2000-01-01" and ds["time_bnds"][:].tolist() == [0.0, T - 1.0]


def test_cells_cut_by_values_and_by_indices(made: tuple[Runs, dict[object, Path]], base: np.ndarray) -> None:
    runs, dirs = made
    out = dirs["cut"] / "eva.nc"
    eva(runs["cut"])
    assert_same(read(out), analyse(base[:, 0:2, 1:4], (2, 3)))
    with netCDF4.Dataset(out) as ds:
        assert ds["lat"][:].tolist() == [-10.0, 0.0] and ds["lon"][:].tolist() == [90.0, 180.0, 270.0]


def test_a_level_before_time_picked_by_value(made: tuple[Runs, dict[object, Path]]) -> None:
    runs, dirs = made
    data = gamma((T, len(PLEV), NLAT, NLON), seed=12)
    with netCDF4.Dataset(dirs["levels-first"] / "pr4d.nc") as ds:
        assert ds["pr"].dimensions == ("plev", "time", "lat", "lon")
    result = runs["levels-first"]
    assert result.returncode == 0, result.stderr
    assert_same(read(dirs["levels-first"] / "eva.nc"), analyse(data[:, 1], (NLAT, NLON)))


def test_a_level_picked_by_value_equals_the_3d_file_of_that_level(made: tuple[Runs, dict[object, Path]]) -> None:
    runs, dirs = made
    data = gamma((T, len(PLEV), NLAT, NLON), seed=12)
    picked, alone = dirs["level"] / "picked.nc", dirs["level"] / "alone.nc"
    result = eva(runs["picked"])
    assert "fitted as a cell axis" not in result.stdout
    eva(runs["alone"])
    got = read(picked)
    assert_same(got, read(alone))
    assert_same(got, analyse(data[:, 1], (NLAT, NLON)))
    with netCDF4.Dataset(picked) as ds:
        assert ds["threshold"].dimensions == ("lat", "lon")
        assert "plev" not in ds.dimensions and ds["plev"].dimensions == ()
        assert float(ds["plev"][...]) == 85000.0 and ds["plev"].units == "Pa"
        assert "plev" in ds["threshold"].coordinates.split()


def test_ensemble_members_are_cells_each_as_analysed_alone(made: tuple[Runs, dict[object, Path]]) -> None:
    runs, dirs = made
    members = MEMBERS
    data = gamma((T, members, NLAT, NLON), seed=13)
    out = dirs["ensemble"] / "eva.nc"
    result = eva(runs["ensemble"])
    assert f"member ({members}) fitted as a cell axis" in result.stdout, result.stdout
    got = read(out)
    for m in range(members):
        alone = analyse(data[:, m], (NLAT, NLON))
        for name in FIELDS:
            mine = got[name][:, m] if name == "return_level" else got[name][m]
            assert np.array_equal(mine, alone[name], equal_nan=True), (m, name)
    with netCDF4.Dataset(out) as ds:
        assert ds["return_level"].dimensions == ("period", "member", "lat", "lon")
        assert ds["threshold"].dimensions == ("member", "lat", "lon")


def test_a_station_series_gives_scalar_results(made: tuple[Runs, dict[object, Path]]) -> None:
    runs, dirs = made
    series = gamma((T,), seed=14)
    out = dirs["station"] / "eva.nc"
    eva(runs["station"])
    got = read(out)
    want = analyse(series, ())
    want["return_level"] = want["return_level"].reshape(1)
    assert_same(got, want)
    with netCDF4.Dataset(out) as ds:
        assert ds["threshold"].dimensions == () and ds["return_level"].dimensions == ("period",)
        assert int(ds["status"][...]) in (pot.STATUS_OK, pot.AT_BOUND)


def test_dates_on_time_equal_the_ncks_cut_and_the_numpy_slice(made: tuple[Runs, dict[object, Path]],
                                                              base: np.ndarray) -> None:
    runs, dirs = made
    cut = dirs["dates"] / "cut.nc"
    with netCDF4.Dataset(cut) as ds:
        times = ds["time"][:]
    # noleap, days since 2000-01-01 at midnight: 2001-01-01 is day 365, 2004-12-31 day 1824
    assert times[0] == 365.0 and times[-1] == 1824.0 and times.size == 1460
    by_dates, of_cut = dirs["dates"] / "dates.nc", dirs["dates"] / "of_cut.nc"
    result = eva(runs["by-dates"])
    assert "1460 steps" in result.stdout, result.stdout
    eva(runs["of-cut"])
    got = read(by_dates)
    assert_same(got, read(of_cut))
    assert_same(got, analyse(base[365:1825], (NLAT, NLON)))
    with netCDF4.Dataset(by_dates) as ds:
        assert ds["time_bnds"][:].tolist() == [365.0, 1824.0]


@pytest.mark.parametrize("case", REFUSALS)
def test_refusals_are_one_line_with_exit_2(made: tuple[Runs, dict[object, Path]], ordinary: Path, case: str) -> None:
    runs, dirs = made
    d = dirs[("refused", case)]
    out = d / "eva.nc"
    result = runs[("refused", case)]
    if case == "stride":
        one_error_line(result, "-d lon,0,3,2", "contiguous")
    elif case == "wrapped":
        one_error_line(result, "-d lon,270.,90.", "contiguous")
    elif case == "missing_dim":
        one_error_line(result, "-d plev,0", "no dimension 'plev'")
    elif case == "monthly":
        one_error_line(result, "monthly", "--npy")
    else:
        later = d / "later.nc"
        one_error_line(result, "calendars differ", "noleap", "standard", str(ordinary), str(later))
    assert not out.exists() and leftovers(str(d)) == []


def test_monthly_with_npy_runs(made: tuple[Runs, dict[object, Path]], monthly: Path) -> None:
    """The same monthly file is analysed once --npy says how many values make a year."""
    runs, dirs = made
    out = dirs["monthly-npy"] / "eva.nc"
    eva(runs["monthly-npy"])
    with netCDF4.Dataset(monthly) as ds:
        ds.set_auto_mask(False)
        data = ds["pr"][:]
    result = pot.analyse(data.reshape(240, -1), tail=0.1, periods=[100], npy=12.0, min_exceed=10, missing=[1e20])
    got = read(out)
    assert np.array_equal(got["return_level"], result.return_level.reshape(1, NLAT, NLON), equal_nan=True)
    assert np.array_equal(got["threshold"], result.threshold.reshape(NLAT, NLON))
