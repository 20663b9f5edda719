"""``climio eva`` on layouts other than (time, lat, lon): time last and not unlimited, a level picked by value,
ensemble members as cells, one station series, a cut by dates; and the -d / time-step / calendar refusals.

Small synthetic files written here with netCDF4 (gamma values, so every fit succeeds); each run is compared,
bit for bit, with :func:`climio.eva.pot.analyse` on the array written and with the same data in the ordinary
(time, lat, lon) layout.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import climio, leftovers, one_error_line

from climio.eva import pot

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


def eva(*args: str, nranks: int | None = None) -> subprocess.CompletedProcess[str]:
    result = climio("eva", *args, nranks=nranks)
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
def ordinary_results(tmp_path_factory: pytest.TempPathFactory, ordinary: Path,
                     base: np.ndarray) -> dict[str, np.ndarray]:
    """The ordinary layout's output, checked against the reference once."""
    out = tmp_path_factory.mktemp("ordinary_out") / "eva.nc"
    eva(str(ordinary), str(out))
    got = read(out)
    assert_same(got, analyse(base, (NLAT, NLON)))
    status = got["status"]  # fits ran everywhere (a short gamma tail may put a shape at its bound, -1)
    assert set(np.unique(status).tolist()) <= {pot.STATUS_OK, pot.AT_BOUND} and np.count_nonzero(status == 0) >= 10
    return got


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


@pytest.mark.parametrize("nranks,scheme,unlimited", [(None, "slab", False), (2, "slab", False),
                                                     (2, "transpose", False), (None, "slab", True),
                                                     (3, "root", True)])
def test_time_last_equals_time_first(tmp_path: Path, time_last: Path, time_last_unlimited: Path, base: np.ndarray,
                                     ordinary_results: dict[str, np.ndarray], nranks: int | None, scheme: str,
                                     unlimited: bool) -> None:
    source = time_last_unlimited if unlimited else time_last
    with netCDF4.Dataset(source) as ds:
        assert ds["pr"].dimensions == ("lat", "lon", "time") and ds.dimensions["time"].isunlimited() == unlimited
    out = tmp_path / "eva.nc"
    eva(str(source), str(out), "--scheme", scheme, "--split", "lon" if nranks else "lat", nranks=nranks)
    got = read(out)
    assert_same(got, ordinary_results)
    assert_same(got, analyse(base, (NLAT, NLON)))
    with netCDF4.Dataset(out) as ds:
        assert ds["return_level"].dimensions == ("period", "lat", "lon")
        assert ds["lat"][:].tolist() == LAT.tolist() and ds["lon"][:].tolist() == LON.tolist()
        assert ds["time"].shape == () and ds["time_bnds"][:].tolist() == [0.0, T - 1.0]
    assert leftovers(str(tmp_path)) == []


def test_files_split_along_a_time_axis_that_is_last_join_as_one(tmp_path: Path, base: np.ndarray,
                                                                 ordinary_results: dict[str, np.ndarray]) -> None:
    """Three (lat, lon, time) files, time fixed-size, each with its own time units: joined, rebased, and the
    results bit-identical to the one (time, lat, lon) file's."""
    cuts = [0, 700, 1300, T]
    paths = []
    for k, (a, b) in enumerate(zip(cuts, cuts[1:])):
        origin = 365.0 * k  # days since 2000-01-01 of the file's own time origin (noleap)
        paths.append(str(write(tmp_path / f"pr{k}.nc", ("lat", "lon", "time"), np.moveaxis(base[a:b], 0, -1),
                               unlimited=False, time=np.arange(a, b, dtype=float) - origin,
                               units=f"days since {2000 + k}-01-01")))
    out = tmp_path / "eva.nc"
    result = eva(*paths, str(out), "--split", "block", nranks=2)
    assert "3 files, 2000 steps" in result.stdout, result.stdout
    assert_same(read(out), ordinary_results)
    with netCDF4.Dataset(out) as ds:
        assert ds["time"].units == "days since 2000-01-01" and ds["time_bnds"][:].tolist() == [0.0, T - 1.0]


def test_cells_cut_by_values_and_by_indices(tmp_path: Path, ordinary: Path, base: np.ndarray) -> None:
    out = tmp_path / "eva.nc"
    eva(str(ordinary), str(out), "-d", "lat,-10.,0.", "-d", "lon,1,3")
    assert_same(read(out), analyse(base[:, 0:2, 1:4], (2, 3)))
    with netCDF4.Dataset(out) as ds:
        assert ds["lat"][:].tolist() == [-10.0, 0.0] and ds["lon"][:].tolist() == [90.0, 180.0, 270.0]


def test_a_level_before_time_picked_by_value(tmp_path: Path) -> None:
    data = gamma((T, len(PLEV), NLAT, NLON), seed=12)
    levels_first = write(tmp_path / "pr4d.nc", ("plev", "time", "lat", "lon"), np.moveaxis(data, 1, 0),
                         coords={"plev": PLEV}, unlimited=False)
    out = tmp_path / "eva.nc"
    result = climio("eva", str(levels_first), str(out), "-d", "plev,85000.")
    assert result.returncode == 0, result.stderr
    assert_same(read(out), analyse(data[:, 1], (NLAT, NLON)))


def test_a_level_picked_by_value_equals_the_3d_file_of_that_level(tmp_path: Path) -> None:
    data = gamma((T, len(PLEV), NLAT, NLON), seed=12)
    four = write(tmp_path / "pr4d.nc", ("time", "plev", "lat", "lon"), data, coords={"plev": PLEV})
    three = write(tmp_path / "pr850.nc", ("time", "lat", "lon"), data[:, 1])
    picked, alone = tmp_path / "picked.nc", tmp_path / "alone.nc"
    result = eva(str(four), str(picked), "-d", "plev,85000.")
    assert "fitted as a cell axis" not in result.stdout
    eva(str(three), str(alone))
    got = read(picked)
    assert_same(got, read(alone))
    assert_same(got, analyse(data[:, 1], (NLAT, NLON)))
    with netCDF4.Dataset(picked) as ds:
        assert ds["threshold"].dimensions == ("lat", "lon")
        assert "plev" not in ds.dimensions and ds["plev"].dimensions == ()
        assert float(ds["plev"][...]) == 85000.0 and ds["plev"].units == "Pa"
        assert "plev" in ds["threshold"].coordinates.split()


def test_ensemble_members_are_cells_each_as_analysed_alone(tmp_path: Path) -> None:
    members = 2
    data = gamma((T, members, NLAT, NLON), seed=13)
    path = write(tmp_path / "ens.nc", ("time", "member", "lat", "lon"), data)
    out = tmp_path / "eva.nc"
    result = eva(str(path), str(out), "--split", "block", nranks=2)
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


def test_a_station_series_gives_scalar_results(tmp_path: Path) -> None:
    series = gamma((T,), seed=14)
    path = write(tmp_path / "station.nc", ("time",), series)
    out = tmp_path / "eva.nc"
    eva(str(path), str(out), nranks=2)
    got = read(out)
    want = analyse(series, ())
    want["return_level"] = want["return_level"].reshape(1)
    assert_same(got, want)
    with netCDF4.Dataset(out) as ds:
        assert ds["threshold"].dimensions == () and ds["return_level"].dimensions == ("period",)
        assert int(ds["status"][...]) in (pot.STATUS_OK, pot.AT_BOUND)


def test_dates_on_time_equal_the_ncks_cut_and_the_numpy_slice(tmp_path: Path, ordinary: Path,
                                                              base: np.ndarray) -> None:
    cut = tmp_path / "cut.nc"
    nco = subprocess.run(["ncks", "-O", "-d", "time,2001-01-01,2004-12-31", str(ordinary), str(cut)],
                         capture_output=True, text=True, timeout=60)
    assert nco.returncode == 0, nco.stderr
    with netCDF4.Dataset(cut) as ds:
        times = ds["time"][:]
    # noleap, days since 2000-01-01 at midnight: 2001-01-01 is day 365, 2004-12-31 day 1824
    assert times[0] == 365.0 and times[-1] == 1824.0 and times.size == 1460
    by_dates, of_cut = tmp_path / "dates.nc", tmp_path / "of_cut.nc"
    result = eva(str(ordinary), str(by_dates), "-d", "time,2001-01-01,2004-12-31")
    assert "1460 steps" in result.stdout, result.stdout
    eva(str(cut), str(of_cut))
    got = read(by_dates)
    assert_same(got, read(of_cut))
    assert_same(got, analyse(base[365:1825], (NLAT, NLON)))
    with netCDF4.Dataset(by_dates) as ds:
        assert ds["time_bnds"][:].tolist() == [365.0, 1824.0]


@pytest.fixture(scope="module")
def monthly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("monthly") / "monthly.nc", ("time", "lat", "lon"),
                 gamma((240, NLAT, NLON), seed=15), time=np.arange(240) * 30.0 + 15.0, calendar="360_day")


@pytest.mark.parametrize("case", ["stride", "wrapped", "missing_dim", "monthly", "calendars"])
def test_refusals_are_one_line_with_exit_2(tmp_path: Path, ordinary: Path, monthly: Path, base: np.ndarray,
                                           case: str) -> None:
    out = tmp_path / "eva.nc"
    if case == "stride":
        result = climio("eva", str(ordinary), str(out), "-d", "lon,0,3,2")
        one_error_line(result, "-d lon,0,3,2", "contiguous")
    elif case == "wrapped":
        result = climio("eva", str(ordinary), str(out), "-d", "lon,270.,90.")
        one_error_line(result, "-d lon,270.,90.", "contiguous")
    elif case == "missing_dim":
        result = climio("eva", str(ordinary), str(out), "-d", "plev,0")
        one_error_line(result, "-d plev,0", "no dimension 'plev'")
    elif case == "monthly":
        result = climio("eva", str(monthly), str(out))
        one_error_line(result, "monthly", "--npy")
    else:
        later = write(tmp_path / "later.nc", ("time", "lat", "lon"), base[:10], calendar="standard",
                      time=np.arange(T, T + 10, dtype=float))
        result = climio("eva", str(ordinary), str(later), str(out))
        one_error_line(result, "calendars differ", "noleap", "standard", str(ordinary), str(later))
    assert not out.exists() and leftovers(str(tmp_path)) == []


def test_monthly_with_npy_runs(tmp_path: Path, monthly: Path) -> None:
    """The same monthly file is analysed once --npy says how many values make a year."""
    out = tmp_path / "eva.nc"
    eva(str(monthly), str(out), "--npy", "12", "--tail", "0.1")
    with netCDF4.Dataset(monthly) as ds:
        ds.set_auto_mask(False)
        data = ds["pr"][:]
    result = pot.analyse(data.reshape(240, -1), tail=0.1, periods=[100], npy=12.0, min_exceed=10, missing=[1e20])
    got = read(out)
    assert np.array_equal(got["return_level"], result.return_level.reshape(1, NLAT, NLON), equal_nan=True)
    assert np.array_equal(got["threshold"], result.threshold.reshape(NLAT, NLON))
