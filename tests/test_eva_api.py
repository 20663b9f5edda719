"""The in-memory API gives what the command writes, and behaves as an xarray user expects.

Every number is checked against an independent path: ``pot.analyse`` on the raw numpy values (read with
netCDF4 for the real files), or the eager result for dask input.

The command's runs the API is compared with are made once, in one process (``helpers/eva_batch.py``: one
start-up for all of them).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import dask
import dask.array
import netCDF4
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import DATA

from climio.errors import ClimioError
from climio.eva import cf, fit_gev, fit_pot, gev, pot
from climio.eva.api import NoFitWarning, UnitsWarning
from climio.eva.cf import PERIOD_ATTRS
from climio.gen import cmip

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Runs  # noqa: E402

REAL = DATA / "real"
CORDEX = REAL / "pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20510101-20551231.nc"
CESM = REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
MONTHLY = REAL / "tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc"
def gamma_field(ndays: int = 2000, shape: tuple[int, ...] = (3, 4), seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).gamma(0.6, 5.0, size=(ndays, *shape))


def daily(values: np.ndarray, time: object = None, **attrs: object) -> xr.DataArray:
    """(time, lat, lon) DataArray of daily values, with units unless told."""
    time = pd.date_range("2000-01-01", periods=values.shape[0], freq="D") if time is None else time
    ny, nx = values.shape[1:]
    return xr.DataArray(values, dims=("time", "lat", "lon"), name="pr",
                        coords={"time": time, "lat": np.linspace(-30, 30, ny), "lon": np.arange(nx) * 10.0},
                        attrs={"units": "mm d-1", **attrs})


def reference(values: np.ndarray, **kwargs: object) -> pot.Result:
    """pot.analyse on a (time, ...) numpy array, the defaults of fit_pot."""
    options = {"tail": 0.01, "periods": [100.0], "npy": 365.25, "min_exceed": 10, **kwargs}
    return pot.analyse(values.reshape(values.shape[0], -1), **options)  # type: ignore[arg-type]


def assert_matches(result: xr.Dataset, ref: pot.Result) -> None:
    """Every field of fit_pot's result equals pot.analyse's, bit for bit, in the result's shape."""
    for field in cf.RESULT_TYPES:
        expected = getattr(ref, field).reshape(result[field].shape)
        assert np.array_equal(result[field].values, expected, equal_nan=True), field


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> tuple[Runs, Path]:
    """The command's runs, in one plain process: (their outcomes, their directory)."""
    d = tmp_path_factory.mktemp("commands")
    runs = Runs(d / "runs", timeout=300)
    runs.add("gen", "gen", "cmip", d / "pr.nc", "--shape", "1500,4,6")
    runs.add("pot", "eva", d / "pr.nc", d / "eva.nc", "--tail", "0.02", "--return-period", "5", "50")
    runs.add("gev", "eva", CESM, d / "gev.nc", "--method", "gev", "-v", "tas", "--min-blocks", "5", "--return-period",
             "10", "50")
    return runs.run(), d


def test_dataarray_matches_the_command(commands: tuple[Runs, Path]) -> None:
    runs, d = commands
    path, out = d / "pr.nc", d / "eva.nc"
    assert runs["gen"].returncode == 0
    assert runs["pot"].returncode == 0
    with xr.open_dataset(path) as ds:
        result = fit_pot(ds["pr"], "time", tail=0.02, return_periods=[5, 50])
    with netCDF4.Dataset(out) as written:
        written.set_auto_mask(False)
        for name in cf.RESULT_TYPES:
            assert np.array_equal(result[name].values, written[name][:], equal_nan=True), name
        assert result.attrs["climio_npy"] == written.climio_npy
    assert result["return_level"].dims == ("period", "lat", "lon")
    assert np.array_equal(result["lat"].values, cmip.grid(4, 6)[0])
    assert result["threshold"].attrs["units"] == "kg m-2 s-1"


def test_return_periods_take_a_scalar_or_any_sequence() -> None:
    values = gamma_field()
    da = daily(values)
    one = fit_pot(da, return_periods=100)  # a TypeError before
    assert one["return_level"].dims == ("period", "lat", "lon")
    assert one["period"].values.tolist() == [100.0]
    assert_matches(one, reference(values, periods=[100.0]))
    ref = reference(values, periods=[20.0, 100.0])
    for periods in ([20, 100], (20.0, 100.0), np.array([20, 100]), range(20, 101, 80), (p for p in (20, 100)),
                    xr.DataArray([20, 100])):
        assert_matches(fit_pot(da, return_periods=periods), ref)
    for bad, match in ((0.5, "over 1 year"), ([], "over 1 year"), ([[20, 50]], "over 1 year"),
                       (["ten"], "numbers"), ([20, 20], "different")):
        with pytest.raises(ClimioError, match=match):
            fit_pot(da, return_periods=bad)


def test_npy_comes_from_the_time_coordinate_in_any_encoding() -> None:
    values = gamma_field(ndays=1800)
    n = values.shape[0]
    noleap = xr.cftime_range("2000-01-01", periods=n, freq="D", calendar="noleap")
    raw = xr.DataArray(np.arange(n) * 24.0 + 12, dims="time",
                       attrs={"units": "hours since 2000-01-01", "calendar": "360_day"})
    cases = [(daily(values), 365.2425),  # datetime64: proleptic_gregorian
             (daily(values, noleap), 365.0),  # cftime objects (use_cftime=True, non-standard calendars)
             (daily(values).assign_coords(time=raw), 360.0)]  # raw numbers with CF units
    for da, days in cases:
        result = fit_pot(da, npy="calendar", return_periods=[10, 50])
        assert result.attrs["climio_npy"] == days
        assert_matches(result, reference(values, periods=[10.0, 50.0], npy=days))
        assert fit_pot(da).attrs["climio_npy"] == 365.25
    # Encoded calendars win over xarray's decoded name (a file's 'standard' reads back as 'proleptic_gregorian').
    julian = daily(values)
    julian["time"].encoding.update(calendar="julian", units="days since 2000-01-01")
    assert fit_pot(julian, npy="calendar").attrs["climio_npy"] == 365.25
    assert fit_pot(julian, npy=300).attrs["climio_npy"] == 300.0

    monthly = xr.DataArray(values[:120], dims=("time", "lat", "lon"), attrs={"units": "K"},
                           coords={"time": pd.date_range("2000-01-01", periods=120, freq="MS")})
    six_hourly = daily(values).assign_coords(
        time=xr.DataArray(np.arange(n) * 6.0, dims="time", attrs={"units": "hours since 2000-01-01"}))
    for da, step in ((monthly, r"3\d(\.\d+)? days \(monthly\)"), (six_hourly, r"0\.25 days \(6-hourly\)")):
        for npy in (None, "calendar"):
            with pytest.raises(ClimioError, match=f"'time' of .* steps by {step}, not daily: give npy"):
                fit_pot(da, npy=npy)
    result = fit_pot(monthly, npy=12, min_exceed=1, tail=0.05)
    assert result.attrs["climio_npy"] == 12.0
    assert_matches(result, reference(values[:120], npy=12.0, min_exceed=1, tail=0.05))
    with pytest.raises(ClimioError, match="npy takes a number"):
        fit_pot(daily(values), npy="daily")
    with pytest.raises(ClimioError, match="positive"):
        fit_pot(daily(values), npy=0)
    # numpy input: no time coordinate, so 365.25 unchecked; 'calendar' cannot be known.
    assert fit_pot(values, axis=0, units="mm").attrs["climio_npy"] == 365.25
    with pytest.raises(ClimioError, match="calendar"):
        fit_pot(values, axis=0, npy="calendar", units="mm")


def test_a_dataset_needs_var_only_with_several_data_variables() -> None:
    """Bounds and grid mappings are no candidates (climio.core.datavars): one data variable needs no var=."""
    values = gamma_field()
    one = rotated_pole_dataset(values)
    one["lat_bnds"] = (("rlat", "bnds"), np.zeros((3, 2)))
    one["rlat"].attrs["bounds"] = "lat_bnds"
    assert_matches(fit_pot(one).transpose(..., "rlat", "rlon"), reference(values))  # a ClimioError before
    ds = xr.Dataset({"pr": daily(values), "tas": daily(values + 1.0)})
    with pytest.raises(ClimioError, match=r"the Dataset has 2 data variables \('pr', 'tas'\): give var="):
        fit_pot(ds)
    with pytest.raises(ClimioError, match="no data variable 'huss'.*'pr', 'tas'"):
        fit_pot(ds, var="huss")
    assert_matches(fit_pot(ds, var="tas"), reference(values + 1.0))
    with pytest.raises(ClimioError, match="var= names a variable of a Dataset"):
        fit_pot(ds["pr"], var="pr")


def test_numpy_needs_axis_and_xarray_finds_time_by_cf() -> None:
    data = gamma_field(shape=(3, 4)).transpose(1, 0, 2).copy()  # (y, time, x)
    with pytest.raises(ClimioError, match="axis="):  # time was silently axis 0 before
        fit_pot(data, units="mm")
    with pytest.raises(ClimioError, match="axis="):
        fit_pot(data, 1, units="mm")  # dim= is for xarray
    on_axis = fit_pot(data, axis=1, tail=0.02, units="mm")
    assert on_axis["shape"].dims == ("dim_0", "dim_1") and on_axis["shape"].shape == (3, 4)
    assert on_axis["return_level"].shape == (1, 3, 4)
    assert_matches(on_axis, reference(np.moveaxis(data, 1, 0), tail=0.02))
    assert_matches(fit_pot(data, axis=-2, tail=0.02, units="mm"), reference(np.moveaxis(data, 1, 0), tail=0.02))
    with pytest.raises(ClimioError, match="axis must be one of the 3 axes"):
        fit_pot(data, axis=3, units="mm")
    with pytest.raises(ClimioError, match="axis= is for numpy"):
        fit_pot(daily(gamma_field()), axis=0)

    values = gamma_field()
    ref = reference(values)
    plain = daily(values).rename(time="t")  # a datetime coordinate on a dimension not called time
    assert_matches(fit_pot(plain), ref)
    by_axis = plain.assign_coords(t=("t", np.arange(values.shape[0]), {"axis": "T"}))
    assert_matches(fit_pot(by_axis), ref)
    by_name = plain.assign_coords(t=("t", np.arange(values.shape[0]), {"standard_name": "time"}))
    assert_matches(fit_pot(by_name), ref)
    nothing = xr.DataArray(np.ones((10, 2)), dims=("t", "x"), name="pr", attrs={"units": "1"})
    with pytest.raises(ClimioError, match="no 'time' dimension.*give dim="):
        fit_pot(nothing)
    with pytest.warns(NoFitWarning, match=r"\(constant_series: 2\)$"):
        assert fit_pot(nothing, "t")["status"].dims == ("x",)
    two = xr.DataArray(np.ones((10, 3)), dims=("t", "u"), name="pr", attrs={"units": "1"},
                       coords={"t": pd.date_range("2000", periods=10), "u": pd.date_range("2001", periods=3)})
    with pytest.raises(ClimioError, match=r"several time-like dimensions \['t', 'u'\]"):
        fit_pot(two)
    with pytest.raises(ClimioError, match="no dimension 'time'"):
        fit_pot(two, "time")


def test_units_from_attrs_or_argument_else_one_warning() -> None:
    values = gamma_field()
    da = daily(values, standard_name="precipitation_flux", cell_methods="time: mean")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = fit_pot(da)
    for field in ("threshold", "return_level"):
        assert result[field].attrs["units"] == "mm d-1"
        assert result[field].attrs["standard_name"] == "precipitation_flux"
        assert result[field].attrs["cell_methods"].startswith("time: mean time: point")
    assert result["scale"].attrs["units"] == "mm d-1" and result["shape"].attrs["units"] == "1"
    assert fit_pot(da, units="kg m-2 d-1")["return_level"].attrs["units"] == "kg m-2 d-1"  # units= wins

    scaled = da * 86400  # xarray drops the attributes
    with pytest.warns(UnitsWarning) as caught:
        result = fit_pot(scaled, return_periods=[10, 100])
    assert len([w for w in caught if issubclass(w.category, UnitsWarning)]) == 1
    assert "unitless" in str(caught[0].message)
    assert result["return_level"].attrs["units"] == "1" and result["threshold"].attrs["units"] == "1"
    assert_matches(result, reference(values * 86400, periods=[10.0, 100.0]))
    with pytest.warns(UnitsWarning):
        fit_pot(values, axis=0)


def test_dask_input_stays_lazy_and_equals_eager() -> None:
    values = gamma_field(ndays=1500, shape=(5, 4))
    values[:40, 0, 0] = np.nan  # missing as NaN
    values[100:130, 1, 1] = -999.0  # missing as _FillValue in the attributes (mask_and_scale=False)
    da = daily(values, _FillValue=-999.0)
    eager = fit_pot(da, return_periods=[10, 100])
    masked = values.copy()
    masked[masked == -999.0] = np.nan
    assert_matches(eager, reference(masked, periods=[10.0, 100.0]))
    assert eager["rate"].values[1, 1] == eager["n_exceed"].values[1, 1] / 1470  # 30 values left out
    assert eager["rate"].values[0, 0] == eager["n_exceed"].values[0, 0] / 1460

    def no_compute(*args: object, **kwargs: object) -> None:
        raise AssertionError("computed before .compute()")

    for chunks in ({"lat": 2}, {"lat": 2, "time": 400}):  # a chunked time axis is rechunked to one chunk
        lazy_input = da.chunk(chunks)
        with dask.config.set(scheduler=no_compute):
            lazy = fit_pot(lazy_input, return_periods=[10, 100])
        for field in cf.RESULT_TYPES:
            assert isinstance(lazy[field].data, dask.array.Array), field
            assert lazy[field].dtype == eager[field].dtype, field
        assert lazy["status"].chunks == ((2, 2, 1), (4,))
        computed = lazy.compute()
        for field in cf.RESULT_TYPES:
            assert computed[field].dims == eager[field].dims
            assert np.array_equal(computed[field].values, eager[field].values, equal_nan=True), field
        assert computed.attrs == {**eager.attrs, "history": computed.attrs["history"]}
    bare = fit_pot(dask.array.from_array(masked, chunks=(500, 2, 4)), axis=0, units="mm d-1",
                   return_periods=[10, 100])  # a bare dask array, time chunked too
    assert isinstance(bare["shape"].data, dask.array.Array)
    assert_matches(bare.compute(), reference(masked, periods=[10.0, 100.0]))


def test_warns_when_no_cell_could_be_fitted() -> None:
    one_year = daily(gamma_field(ndays=365))  # 0.01 * 365: 3 or 4 exceedances per cell, under min_exceed
    with pytest.warns(NoFitWarning, match=r"no cell of 'pr' could be fitted \(too_few_exceedances: 12\)"):
        result = fit_pot(one_year)
    assert (result["status"] == 4).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_pot(one_year.chunk({"lat": 1}))  # statuses are known only at compute time: no warning
        fit_pot(one_year, min_exceed=3)  # some cells fitted
    constant = daily(np.ones((400, 1, 2)))
    with pytest.warns(NoFitWarning, match=r"\(constant_series: 2\)"):
        fit_pot(constant)


def rotated_pole_dataset(values: np.ndarray) -> xr.Dataset:
    """A CORDEX-like (rlat, time, rlon) variable: 2-D lat/lon, a scalar height, a time-dependent coordinate."""
    nt, ny, nx = values.shape
    rlat, rlon = np.linspace(-10, 10, ny), np.linspace(-20, 20, nx)
    lat = 40 + rlat[:, None] + 0.1 * rlon[None, :]
    pr = xr.DataArray(np.moveaxis(values, 0, 1), dims=("rlat", "time", "rlon"),
                      attrs={"units": "kg m-2 s-1", "grid_mapping": "rotated_pole",
                             "standard_name": "precipitation_flux"},
                      coords={"time": xr.cftime_range("2051-01-01", periods=nt, calendar="365_day"),
                              "rlat": ("rlat", rlat, {"axis": "Y"}), "rlon": ("rlon", rlon, {"axis": "X"}),
                              "lat": (("rlat", "rlon"), lat, {"units": "degrees_north"}),
                              "lon": (("rlat", "rlon"), -90 + rlon[None, :] + 0 * rlat[:, None]),
                              "height": ((), 2.0, {"units": "m"}),
                              "day_of_year": ("time", np.arange(nt) % 365)})
    pole = xr.DataArray(np.array(b"", dtype="S1"), attrs={"grid_mapping_name": "rotated_latitude_longitude",
                                                          "grid_north_pole_latitude": 42.5})
    return xr.Dataset({"pr": pr, "rotated_pole": pole},
                      attrs={"experiment_id": "rcp45", "history": "made", "tracking_id": "hdl:1",
                             "Conventions": "CF-1.6"})


def test_coordinates_grid_mapping_and_attributes_are_carried() -> None:
    values = gamma_field(ndays=1200, shape=(3, 4))
    ds = rotated_pole_dataset(values)
    result = fit_pot(ds, var="pr", return_periods=[10, 100])
    assert_matches(result.transpose(..., "rlat", "rlon"), reference(values, periods=[10.0, 100.0]))
    assert result["status"].dims == ("rlat", "rlon")
    assert result["return_level"].dims == ("period", "rlat", "rlon")
    # day_of_year depends on time; time is the analysed period's scalar coordinate, numbers in the input's units
    assert set(result.coords) == {"rlat", "rlon", "lat", "lon", "height", "time", "period"}
    assert result["time_bnds"].values.tolist() == [0.0, 1199.0] and result["time"].item() == 599.5
    assert result["time"].attrs["calendar"] == "noleap" and result["time"].attrs["bounds"] == "time_bnds"
    assert np.array_equal(result["lat"].values, ds["lat"].values) and result["lat"].attrs == ds["lat"].attrs
    assert result["height"].item() == 2.0 and result["rlat"].attrs == {"axis": "Y"}
    assert dict(result["period"].attrs) == PERIOD_ATTRS == {"long_name": "return period", "units": "years"}
    for field in cf.RESULT_TYPES:  # all on the input's grid, as in the command's file
        assert result[field].attrs["grid_mapping"] == "rotated_pole", field
    assert result["rotated_pole"].attrs == ds["rotated_pole"].attrs
    assert result.attrs["experiment_id"] == "rcp45" and result.attrs["history"].endswith("\nmade")
    assert "tracking_id" not in result.attrs and result.attrs["Conventions"] == "CF-1.8"  # the input file's own
    assert result.attrs["title"] == "peaks-over-threshold GPD fits of pr" and result.attrs["climio_npy"] == 365.25
    assert "climio.eva.fit_pot(pr, tail=0.01, return_periods=[10.0, 100.0], npy=365.25" in result.attrs["history"]
    # A DataArray keeps its coordinates; it has no grid-mapping variable, so nothing refers to one (as the command
    # drops references to what it does not copy).
    alone = fit_pot(ds["pr"], return_periods=[10, 100])
    assert "rotated_pole" not in alone and "grid_mapping" not in alone["threshold"].attrs
    assert set(alone.coords) == set(result.coords)
    # A grid mapping decoded as a coordinate (decode_coords="all") stays one, named in encoding.
    decoded = ds["pr"].assign_coords(rotated_pole=ds["rotated_pole"])
    decoded.encoding["grid_mapping"] = decoded.attrs.pop("grid_mapping")
    carried = fit_pot(decoded, return_periods=[10, 100])
    assert "rotated_pole" in carried.coords and carried["return_level"].encoding["grid_mapping"] == "rotated_pole"


def read_raw(path: object, name: str) -> tuple[np.ndarray, list[float]]:
    """A variable's values as stored (netCDF4, no masking) and its missing-value markers: the independent path."""
    with netCDF4.Dataset(path) as nc:
        var = nc[name]
        var.set_auto_maskandscale(False)
        markers = [float(getattr(var, k)) for k in ("_FillValue", "missing_value") if k in var.ncattrs()]
        return var[:], markers


def test_real_cordex_rotated_pole() -> None:
    values, missing = read_raw(CORDEX, "pr")
    expected = pot.analyse(values.reshape(values.shape[0], -1), tail=0.02, periods=[5.0, 20.0], npy=365.0,
                           min_exceed=10, missing=missing)
    with xr.open_dataset(CORDEX) as ds:
        result = fit_pot(ds, var="pr", tail=0.02, return_periods=[5, 20], npy="calendar")  # 365_day
        lazy = fit_pot(ds.chunk({"rlat": 2}), var="pr", tail=0.02, return_periods=[5, 20], npy="calendar")
        lat = ds["lat"].values
        assert isinstance(lazy["return_level"].data, dask.array.Array)
        lazy = lazy.compute()
    assert result.attrs["climio_npy"] == 365.0
    assert_matches(result, expected)
    assert_matches(lazy, expected)
    assert (result["status"] == 0).all()
    assert result["lat"].dims == ("rlat", "rlon") and np.array_equal(result["lat"].values, lat)
    assert result["lon"].dims == ("rlat", "rlon")
    assert result["rotated_pole"].attrs["grid_mapping_name"] == "rotated_latitude_longitude"
    assert result["return_level"].attrs["grid_mapping"] == "rotated_pole"
    assert result["return_level"].attrs["units"] == "kg m-2 s-1"
    assert result["return_level"].attrs["standard_name"] == "precipitation_flux"
    assert result.attrs["CORDEX_domain"] == "NAM-22" and result.attrs["driving_experiment_name"] == "rcp45"


def test_real_noleap_daily_in_every_time_decoding() -> None:
    values, missing = read_raw(CESM, "tas")
    expected = pot.analyse(values.reshape(values.shape[0], -1), tail=0.01, periods=[100.0], npy=365.0,
                           min_exceed=10, missing=missing)
    for options in ({}, {"use_cftime": True}, {"decode_times": False}, {"mask_and_scale": False}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", xr.SerializationWarning)  # the file's _FillValue and missing_value
            with xr.open_dataset(CESM, **options) as ds:
                result = fit_pot(ds, var="tas", npy="calendar")  # noleap
        assert result.attrs["climio_npy"] == 365.0, options
        assert_matches(result, expected)
        assert result["threshold"].attrs["units"] == "K"


def test_real_monthly_file_needs_npy() -> None:
    values, missing = read_raw(MONTHLY, "tas")
    for options in ({}, {"use_cftime": True}, {"decode_times": False}):
        with xr.open_dataset(MONTHLY, **options) as ds:
            for npy in (None, "calendar"):
                with pytest.raises(ClimioError, match=r"steps by 30\.\d+ days \(monthly\), not daily"):
                    fit_pot(ds, var="tas", npy=npy)
            result = fit_pot(ds, var="tas", npy=12, tail=0.1, min_exceed=5)
        expected = pot.analyse(values.reshape(values.shape[0], -1), tail=0.1, periods=[100.0], npy=12.0,
                               min_exceed=5, missing=missing)
        assert_matches(result, expected)


def test_api_errors() -> None:
    da = xr.DataArray(np.ones((10, 2)), dims=("t", "x"), name="pr", attrs={"units": "1"})
    with pytest.raises(ClimioError, match="no 'time' dimension"):
        fit_pot(da)
    with pytest.raises(ClimioError, match="tail"):
        fit_pot(da, "t", tail=0.9)
    with pytest.raises(ClimioError, match="over 1 year"):
        fit_pot(da, "t", return_periods=[0.5])
    with pytest.raises(ClimioError, match="dimension 'period'"):
        fit_pot(da.rename(x="period"), "t")
    with pytest.raises(ClimioError, match="packed"):
        fit_pot(da.assign_attrs(scale_factor=0.1), "t")


# -- fit_gev ------------------------------------------------------------------------------------------------

GEV_FIELDS = ("location", "scale", "shape", "n_blocks", "return_level", "nll", "status")


def test_fit_gev_matches_the_command_bit_for_bit(commands: tuple[Runs, Path]) -> None:
    """fit_gev on a real noleap file (xarray's cftime decoding, and raw numbers with CF units) gives the
    command's results bit for bit, eager and dask-backed."""
    runs, d = commands
    out = d / "gev.nc"
    result = runs["gev"]
    assert result.returncode == 0, result.stderr
    with xr.open_dataset(CESM, use_cftime=True) as ds, xr.open_dataset(CESM, decode_times=False) as raw, \
            netCDF4.Dataset(out) as command:
        for data in (ds, raw, ds.chunk({"lat": 1})):
            fitted = fit_gev(data, var="tas", min_blocks=5, return_periods=[10, 50]).compute()
            for field in GEV_FIELDS:
                assert np.array_equal(fitted[field].values, command[field][:], equal_nan=True), field
            assert fitted["location"].attrs["units"] == "K" and fitted.attrs["climio_block"] == "year"
            assert list(fitted["status"].attrs["flag_meanings"].split()) == list(cf.BLOCK_STATUS_MEANINGS)


def test_fit_gev_blocks_from_datetime64_and_missing_days() -> None:
    """Blocks come from numpy datetime64 dates (proleptic Gregorian years of 365/366 days): each cell's
    parameters are the GEV fit of its complete years' maxima, found independently here with pandas."""
    values = gamma_field(ndays=365 * 14 + 3 + 200, shape=(2, 3), seed=4)
    time = pd.date_range("1990-03-01", periods=values.shape[0], freq="D")  # a partial first and last year
    values[400:460, 0, 0] = np.nan  # 60 days missing in 1991: more than 10 %, that year is dropped
    values[800:820, 0, 1] = np.nan  # 20 days in 1992: kept
    result = fit_gev(daily(values, time), return_periods=[20])
    years = time.year.to_numpy()
    full = [y for y in np.unique(years) if (years == y).sum() == (366 if pd.Timestamp(y, 1, 1).is_leap_year else 365)]
    for j in range(2):
        for i in range(3):
            series = values[:, j, i]
            kept = [y for y in full if np.isnan(series[years == y]).sum() <= 0.1 * (years == y).sum()]
            maxima = np.array([np.nanmax(series[years == y]) for y in kept])
            assert int(result["n_blocks"][j, i]) == len(kept)
            own = gev.negative_log_likelihood(maxima, *(float(result[p][j, i]) for p in gev.PARAMETERS))
            assert own == pytest.approx(float(result["nll"][j, i]), rel=1e-10)
    assert int(result["n_blocks"][0, 0]) == int(result["n_blocks"][1, 1]) - 1


def test_fit_gev_errors() -> None:
    """Bad options and inputs without dates are refused by name."""
    data = daily(gamma_field(ndays=4000))
    for kwargs, words in (({"block": "XYZ"}, "^block 'XYZ'"), ({"max_missing": 1.0}, "^max_missing must"),
                          ({"min_blocks": 1}, "^min_blocks must"), ({"return_periods": [1.0]}, "over 1 year")):
        with pytest.raises(ClimioError, match=words):
            fit_gev(data, **kwargs)
    with pytest.raises(ClimioError, match="time coordinate"):
        fit_gev(data.drop_vars("time"))
    with pytest.raises(ClimioError, match="DataArray"):
        fit_gev(data.values)  # type: ignore[arg-type]
    with pytest.warns(NoFitWarning, match="min_blocks=20"):
        fit_gev(data, min_blocks=20)
