"""``climio eva --covariate year|FILE:VAR`` end to end: a GEV location (``--method gev``) or a GPD log scale
(``--method pot``) linear in a covariate.

* the same results at 1, 2 and 3 ranks over every scheme and split, and from ``fit_gev(covariate=)`` (eager
  and dask-chunked);
* against references written here from the input file: each cell's annual maxima (cftime years of the file's
  calendar, complete years only), the covariate's annual means, a slow scipy multi-start fit (never a lower
  -log L than climio's), the stationary fit, the return-level formula and the likelihood-ratio p-value;
* real model output: 20 years of ECHO-G daily precipitation (360-day calendar) with a trend in years, and
  three EC-EARTH decades of monthly temperature (joined, time units rebased) against their own global mean
  made with NCO's ``ncwa``/``ncrcat``;
* peaks over threshold: the threshold, excesses and their years (or, declustered, each cluster's largest
  and its year) found in the test from the file, then the same checks against scipy and the formulas;
* bad options refused in one line, nothing written.

The command's runs are made once, one process per rank count (``helpers/eva_batch.py``: one start-up for all of
them, each run in a directory of its own); each test checks its own runs' outcomes and files.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import cftime
import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio, leftovers, one_error_line
from scipy import optimize, stats

from climio.eva import gev, gev_trend, gpd, gpd_trend

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Made, Runs  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # scipy's inf - inf
TIMEOUT = 120  # every mpiexec run: a hang fails the test
PERIODS = ("20", "100")
ECHO_G = DATA / "cmip" / "pr.sresa2.miub_echo_g.run1.atm.da.nc"
EC_EARTH = [DATA / "real" / f"tas_Amon_EC-EARTH_historical_r1i1p1_{d}01-{d + 9}12.nc"
            for d in (1850, 1860, 1870)]


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 years of daily CMIP-like precipitation on 6 x 8 cells (365-day calendar)."""
    path = tmp_path_factory.mktemp("trend") / "pr.nc"
    result = climio("gen", "cmip", str(path), "--shape", "7305,6,8", timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    return path


def read(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: ds[name][...] for name in ds.variables}


def gev_args(inputs: list[Path] | Path, out: Path, *args: str) -> list[object]:
    """``climio eva`` of a GEV run (the command line the tests' ``eva`` ran)."""
    paths = [str(p) for p in (inputs if isinstance(inputs, list) else [inputs])]
    return ["eva", *paths, str(out), "--method", "gev", "--return-period", *PERIODS, *args]


def pot_args(inputs: Path, out: Path, *args: str) -> list[object]:
    """``climio eva`` of a peaks-over-threshold trend run."""
    return ["eva", str(inputs), str(out), "--return-period", *PERIODS, "--covariate", "year", *args]


RUNS = [(2, "slab", "lat"), (2, "transpose", "block"), (2, "root", "lon"), (3, "slab", "block"), (3, "transpose", "lat")]
POT_RUNS = [(2, "slab", "lat"), (3, "transpose", "block"), (2, "root", "lon")]
BAD_OPTIONS = [
    (("--covariate", "year", "--min-exceed", "4"), ("--min-exceed", "at least 5")),
    (("--method", "gev", "--covariate-at", "2000"), ("--covariate-at", "--covariate year")),
    (("--method", "gev", "--covariate", "nowhere.nc:tas"), ("--covariate", "nowhere.nc", "does not exist")),
    (("--method", "gev", "--covariate", "bad"), ("--covariate 'bad'", "FILE:VAR")),
    (("--method", "gev", "--covariate", "year", "--ci", "0.95"), ("--ci", "--ci-method normal")),
    (("--method", "gev", "--covariate", "year", "--min-blocks", "4"), ("--min-blocks", "at least 5")),
]


@pytest.fixture(scope="module")
def made(field: Path, tmp_path_factory: pytest.TempPathFactory) -> Made:
    runs = Runs(tmp_path_factory.mktemp("runs"), timeout=540)
    dirs: dict[object, Path] = {}

    def add(key: object, argv: Callable[[Path], list[object]], nranks: int | None = None) -> None:
        dirs[key] = runs.case_dir()
        runs.add(key, *argv(dirs[key]), nranks=nranks)

    # one rank, plainly
    add("one", lambda d: gev_args(field, d / "eva.nc", "--covariate", "year", "--ci", "0.9", "--ci-method", "normal"))
    add("pot-one", lambda d: pot_args(field, d / "eva.nc", "--ci", "0.9", "--ci-method", "normal"))
    add("covariate-at", lambda d: gev_args(field, d / "eva.nc", "--covariate", "year", "--covariate-at", "1950",
                                           "2000", "2100", "--plot", str(d / "map.png")))

    def from_file(d: Path) -> list[object]:
        write_series(d / "gmst.nc", COVARIATE_YEARS, covariate_series(), "proleptic_gregorian")
        return gev_args(field, d / "eva.nc", "--covariate", f"{d / 'gmst.nc'}:gmst")

    add("covariate-file", from_file)
    add("not-series", lambda d: ["eva", str(field), str(d / "eva.nc"), "--method", "gev", "--covariate",
                                 f"{field}:pr"])
    add("echo-g", lambda d: gev_args(ECHO_G, d / "a.nc", "--covariate", "year"))
    dirs["gm"] = runs.case_dir()
    gm = global_means(dirs["gm"])
    add("ec-earth", lambda d: gev_args(EC_EARTH, d / "eva.nc", "-v", "tas", "--covariate", f"{gm}:tas",
                                       "--min-blocks", "20"))
    add("pot-declustered", lambda d: pot_args(field, d / "a.nc", "--decluster", "runs:2"))
    add("echo-g-pot", lambda d: pot_args(ECHO_G, d / "a.nc", "--npy", "360"))
    # 2 and 3 ranks
    for nranks, scheme, split in RUNS:
        add(("gev", nranks, scheme, split), lambda d: gev_args(field, d / "eva.nc", "--covariate", "year", "--ci",
                                                               "0.9", "--ci-method", "normal", "--scheme", scheme,
                                                               "--split", split), nranks)
    for nranks, scheme, split in POT_RUNS:
        add(("pot", nranks, scheme, split), lambda d: pot_args(field, d / "eva.nc", "--ci", "0.9", "--ci-method",
                                                               "normal", "--scheme", scheme, "--split", split),
            nranks)

    def short(d: Path) -> list[object]:
        write_series(d / "short.nc", range(1960, 1981), np.zeros(12 * 21, "f4"))
        return ["eva", str(field), str(d / "eva.nc"), "--method", "gev", "--covariate", f"{d / 'short.nc'}:gmst"]

    add("misses-years", short, 2)
    for n, (args, _) in enumerate(BAD_OPTIONS):
        add(("bad", n), lambda d: ["eva", str(field), str(d / "eva.nc"), *args], 2)

    def no_dates(d: Path) -> list[object]:
        with netCDF4.Dataset(d / "bad.nc", "w") as ds:  # a time axis whose units are no dates
            ds.createDimension("time", 3)
            time = ds.createVariable("time", "f8", ("time",))
            time.units = "days since garbage"
            ds.createVariable("g", "f4", ("time",))[:] = [1.0, 2.0, 3.0]
        return ["eva", str(field), str(d / "eva.nc"), "--method", "gev", "--covariate", f"{d / 'bad.nc'}:g"]

    add("no-dates", no_dates, 2)
    add("echo-g-2", lambda d: gev_args(ECHO_G, d / "b.nc", "--covariate", "year", "--split", "block"), 2)
    add("pot-declustered-2", lambda d: pot_args(field, d / "b.nc", "--decluster", "runs:2", "--split", "block"), 2)
    add("ec-earth-3", lambda d: gev_args(EC_EARTH, d / "eva2.nc", "-v", "tas", "--covariate", f"{gm}:tas",
                                         "--min-blocks", "20"), 3)
    add("echo-g-pot-3", lambda d: pot_args(ECHO_G, d / "b.nc", "--npy", "360"), 3)
    return Made(runs.run(), dirs, read)


@pytest.fixture(scope="module")
def one_rank(made: Made) -> dict[str, np.ndarray]:
    return made.result("one")


BASELINES = {"gev": "one_rank", "pot": "pot_one"}  # each method's one-rank run


@pytest.mark.parametrize("method, nranks, scheme, split", [("gev", *run) for run in RUNS] +
                         [("pot", *run) for run in POT_RUNS])
def test_every_rank_count_scheme_and_split_gives_the_same_fit(made: Made, request: pytest.FixtureRequest,
                                                              method: str, nranks: int, scheme: str,
                                                              split: str) -> None:
    want_all = request.getfixturevalue(BASELINES[method])
    got = made.result((method, nranks, scheme, split))
    assert set(got) == set(want_all)
    for name, want in want_all.items():
        assert np.array_equal(got[name], want, equal_nan=True), name


def test_the_api_gives_the_same_fit(field: Path, one_rank: dict[str, np.ndarray]) -> None:
    import xarray as xr

    from climio.eva import fit_gev

    with xr.open_dataset(field) as ds:
        eager = fit_gev(ds, var="pr", return_periods=[float(p) for p in PERIODS], covariate="year", ci=0.9,
                        ci_method="normal")
        lazy = fit_gev(ds.chunk({"lat": 4}), var="pr", return_periods=[float(p) for p in PERIODS],
                       covariate="year", ci=0.9, ci_method="normal").compute()
    assert eager["return_level"].dims == ("covariate", "period", "lat", "lon")
    for out in (eager, lazy):
        for name in out.data_vars:
            assert np.array_equal(out[name].values, one_rank[name], equal_nan=True), name
        assert np.array_equal(out["covariate"].values, one_rank["covariate"])


# -- independent references ---------------------------------------------------------------------------------------
def annual_maxima(path: Path, var: str) -> tuple[np.ndarray, np.ndarray]:
    """(years, maxima (years, cells)) of the complete calendar years of a daily file, read plainly."""
    with netCDF4.Dataset(path) as ds:
        time = ds["time"]
        dates = cftime.num2date(time[:], time.units, getattr(time, "calendar", "standard"))
        data = np.ma.filled(ds[var][...].astype(np.float64), np.nan)
    year = np.array([d.year for d in dates])
    length = 360 if dates[0].calendar == "360_day" else 365
    years = np.array([y for y in np.unique(year) if np.sum(year == y) == length])
    maxima = np.stack([np.nanmax(data[year == y], axis=0).reshape(-1) for y in years])
    return years, maxima


# Nelder-Mead from a start where -log L is infinite, as it is at all its first simplex's vertices, reflects and
# contracts to infinite values and shrinks the simplex by half onto that start, N + 2 evaluations an iteration (N
# parameters, 3 or 4 here): 40000 evaluations (its maxfev) of infinity, and a result of infinity. After HOPELESS
# evaluations all infinite the simplex is under 2^-99 of its first size around a point where -log L is infinite,
# so such a run is ended there with the same result, infinity: the same search, without its dead end.
HOPELESS = 600


class _Hopeless(Exception):
    pass


def nelder_mead(nll: Callable[[np.ndarray], float], start: np.ndarray) -> optimize.OptimizeResult:
    """scipy's Nelder-Mead from ``start`` (tolerances 1e-10 in x, 1e-12 in -log L), ended as HOPELESS says."""
    calls, finite = [0], [False]

    def counted(p: np.ndarray) -> float:
        value = nll(p)
        calls[0] += 1
        finite[0] = finite[0] or math.isfinite(value)
        if not finite[0] and calls[0] >= HOPELESS:
            raise _Hopeless
        return value

    try:
        return optimize.minimize(counted, start, method="Nelder-Mead",
                                 options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000, "maxfev": 40000})
    except _Hopeless:
        return optimize.OptimizeResult(x=np.asarray(start, dtype=float), fun=math.inf)


def reference_nll(x: np.ndarray, c: np.ndarray, start: np.ndarray) -> float:
    """The least -log L scipy finds for the trend GEV: Nelder-Mead from several starts (the covariate centred,
    log sigma), then Powell from the best; shapes kept in [-1, 3]."""
    cbar = c.mean()

    def nll(p: np.ndarray) -> float:
        if not -1.0 <= p[3] <= 3.0:
            return math.inf
        return gev_trend.negative_log_likelihood(x, c - cbar, p[0], p[1], math.exp(p[2]), p[3])

    sd = x.std()
    starts = [start] + [np.array([x.mean() - 0.45 * sd, 0.0, math.log(0.78 * sd), xi]) for xi in (-0.3, 0.0, 0.3, 0.8)]
    best = min((nelder_mead(nll, s) for s in starts), key=lambda r: r.fun)
    polished = optimize.minimize(nll, best.x, method="Powell", options={"xtol": 1e-10, "ftol": 1e-13})
    return min(best.fun, polished.fun)


def level(intercept: float, slope: float, scale: float, shape: float, value: float, period: float) -> float:
    y = -math.log(1.0 - 1.0 / period)
    return intercept + slope * value + (scale * (y ** -shape - 1.0) / shape if shape != 0 else -scale * math.log(y))


def check_against_references(got: dict[str, np.ndarray], years: np.ndarray, maxima: np.ndarray,
                             covariate: np.ndarray, cells: list[int]) -> None:
    """Every fitted cell of ``got`` is the trend fit of ``maxima`` (years, cells) against ``covariate`` (years,),
    no worse than scipy's on ``cells``; levels, p-values and the stationary fit from their formulas."""
    flat = {k: v.reshape(*v.shape[:-2], -1) if v.ndim >= 2 else v for k, v in got.items()}
    ok = flat["status"] == 0
    assert ok.mean() > 0.9
    assert np.all(flat["n_blocks"][ok] == years.size)
    n = maxima.shape[1]
    direct = gev_trend.fit(maxima.T, covariate, np.full(n, years.size))
    stationary = gev.fit(maxima.T, np.full(n, years.size))
    for name in ("location_intercept", "location_slope", "scale", "shape", "nll", "nll_stationary"):
        np.testing.assert_allclose(flat[name][ok], getattr(direct, name)[ok], rtol=1e-9, atol=0, err_msg=name)
    np.testing.assert_allclose(flat["nll_stationary"][ok], stationary.nll[ok], rtol=1e-12)
    assert np.all(flat["nll"][ok] <= flat["nll_stationary"][ok] + 1e-9 * np.abs(flat["nll_stationary"][ok]))
    deviance = np.maximum(2 * (flat["nll_stationary"] - flat["nll"]), 0)
    np.testing.assert_allclose(flat["trend_p_value"][ok], stats.chi2.sf(deviance[ok], 1), rtol=1e-9, atol=1e-15)
    for c in np.flatnonzero(ok):
        p = [flat[k][c] for k in ("location_intercept", "location_slope", "scale", "shape")]
        assert gev_trend.negative_log_likelihood(maxima[:, c], covariate, *p) == pytest.approx(flat["nll"][c],
                                                                                              rel=1e-10)
        for i, value in enumerate(flat["covariate"]):
            for k, period in enumerate(PERIODS):
                assert flat["return_level"][i, k, c] == pytest.approx(level(*p, value, float(period)), rel=1e-9)
    for c in cells:
        if not ok[c]:
            continue
        cbar = covariate.mean()
        start = np.array([flat["location_intercept"][c] + flat["location_slope"][c] * cbar,
                          flat["location_slope"][c], math.log(flat["scale"][c]), flat["shape"][c]])
        assert flat["nll"][c] <= reference_nll(maxima[:, c], covariate, start) + 1e-7 * abs(flat["nll"][c]), c


def test_each_cell_is_the_fit_of_its_annual_maxima(field: Path, one_rank: dict[str, np.ndarray]) -> None:
    years, maxima = annual_maxima(field, "pr")
    assert np.array_equal(one_rank["covariate"], [years[0], years[-1]])
    check_against_references(one_rank, years, maxima, years.astype(float), cells=list(range(0, 48, 3)))


def test_standard_errors_and_normal_intervals(one_rank: dict[str, np.ndarray]) -> None:
    ok = one_rank["status"] == 0
    for name in ("location_intercept_se", "location_slope_se", "scale_se", "shape_se"):
        assert np.all(one_rank[name][ok] > 0), name
    lower, upper, z = one_rank["return_level_lower"], one_rank["return_level_upper"], one_rank["return_level"]
    np.testing.assert_allclose((upper - z)[:, :, ok], (z - lower)[:, :, ok], rtol=1e-9)
    assert np.all(lower[:, :, ok] < z[:, :, ok])


def test_covariate_at_values_and_plot(made: Made) -> None:
    got = made.result("covariate-at")
    d = made.dir("covariate-at")
    assert np.array_equal(got["covariate"], [1950.0, 2000.0, 2100.0])
    assert got["return_level"].shape == (3, 2, 6, 8)
    ok = got["status"] == 0
    step = got["return_level"][2] - got["return_level"][1]  # a century of the slope
    np.testing.assert_allclose(step[:, ok], np.broadcast_to(100 * got["location_slope"][ok], step[:, ok].shape),
                               rtol=1e-6, atol=1e-12)
    assert (d / "map.png").stat().st_size > 10_000
    with netCDF4.Dataset(d / "eva.nc") as ds:
        assert ds.climio_covariate == "year"
        assert ds["location_slope"].units == "(kg m-2 s-1)/(year)"
        assert "p-value" in ds["trend_p_value"].long_name
        assert ds["return_level"].dimensions == ("covariate", "period", "lat", "lon")


def write_series(path: Path, years: range, values: np.ndarray, calendar: str = "standard") -> None:
    """A monthly 1-D series (mid-month dates) with CF time units."""
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        time = ds.createVariable("time", "f8", ("time",))
        time.units, time.calendar = "days since 1900-01-01", calendar
        var = ds.createVariable("gmst", "f4", ("time",))
        var.units, var.long_name = "K", "global mean temperature"
        dates = [cftime.datetime(y, m, 15, calendar=calendar) for y in years for m in range(1, 13)]
        time[:] = cftime.date2num(dates, time.units, calendar)
        var[:] = values


COVARIATE_YEARS = range(1950, 1981)


def covariate_series() -> np.ndarray:
    """A monthly global mean temperature, 1950-1980, with a trend."""
    rng = np.random.default_rng(3)
    n = 12 * len(COVARIATE_YEARS)
    return (287 + 0.02 * np.arange(n) / 12 + rng.normal(0, 0.2, n)).astype("f4")


def test_a_covariate_from_a_file(field: Path, made: Made) -> None:
    """A monthly series in another calendar: each block takes its year's mean."""
    monthly = covariate_series()
    d = made.dir("covariate-file")
    with netCDF4.Dataset(d / "gmst.nc") as ds:  # the series the run read
        assert np.array_equal(ds["gmst"][:], monthly) and ds["time"].calendar == "proleptic_gregorian"
    got = made.result("covariate-file")
    years, maxima = annual_maxima(field, "pr")
    means = monthly.astype(np.float64).reshape(-1, 12).mean(axis=1)
    covariate = means[years - 1950]
    np.testing.assert_allclose(got["covariate"], [covariate[0], covariate[-1]], rtol=1e-12)
    check_against_references(got, years, maxima, covariate, cells=[0, 17, 40])
    with netCDF4.Dataset(d / "eva.nc") as ds:
        assert "global mean temperature (gmst in gmst.nc)" in ds["covariate"].long_name
        assert ds["location_slope"].units == "(kg m-2 s-1)/(K)"


def test_a_covariate_that_misses_years_is_refused(made: Made) -> None:
    d = made.dir("misses-years")
    one_error_line(made.outcome("misses-years"), "--covariate", "1955, 1956", "-d time")
    assert not (d / "eva.nc").exists() and not leftovers(str(d))


@pytest.mark.parametrize("args, needles", BAD_OPTIONS)
def test_bad_options_are_refused(made: Made, args: tuple[str, ...], needles: tuple[str, ...]) -> None:
    key = ("bad", BAD_OPTIONS.index((args, needles)))
    d = made.dir(key)
    one_error_line(made.outcome(key), *needles)
    assert not (d / "eva.nc").exists() and not leftovers(str(d))


def test_a_covariate_that_is_not_a_series_is_refused(made: Made) -> None:
    one_error_line(made.outcome("not-series"), "--covariate", "1-D series")
    assert not (made.dir("not-series") / "eva.nc").exists()
    one_error_line(made.outcome("no-dates"), "--covariate", "'time'", "days since garbage", "cannot be read as dates")
    assert not (made.dir("no-dates") / "eva.nc").exists()


# -- real model output --------------------------------------------------------------------------------------------
def test_echo_g_precipitation_trend_in_years(made: Made) -> None:
    one = made.result("echo-g", "a.nc")
    two = made.result("echo-g-2", "b.nc")
    for name, want in one.items():
        assert np.array_equal(two[name], want, equal_nan=True), name
    years, maxima = annual_maxima(ECHO_G, "pr")
    assert years.size == 20
    check_against_references(one, years, maxima, years.astype(float), cells=[0, 11, 25, 41])


def global_means(directory: Path) -> Path:
    """The EC-EARTH decades' global (plain) means made by NCO, joined by ncrcat: gm.nc beside gm0..2.nc."""
    parts = []
    for i, path in enumerate(EC_EARTH):
        part = directory / f"gm{i}.nc"
        subprocess.run(["ncwa", "-O", "-a", "lat,lon", "-v", "tas", str(path), str(part)], check=True, timeout=120)
        parts.append(str(part))
    subprocess.run(["ncrcat", "-O", *parts, str(directory / "gm.nc")], check=True, timeout=120)
    return directory / "gm.nc"


def test_ec_earth_against_its_own_global_mean(made: Made) -> None:
    """30 years of monthly tas in three files with different time units; the covariate is their global (plain)
    mean made by NCO, joined by ncrcat: each block is a year, its maximum the warmest month."""
    got = made.result("ec-earth")
    two = made.result("ec-earth-3", "eva2.nc")
    for name, want in got.items():
        assert np.array_equal(two[name], want, equal_nan=True), name
    data, gm = [], []
    for i, path in enumerate(EC_EARTH):
        with netCDF4.Dataset(path) as ds, netCDF4.Dataset(made.dir("gm") / f"gm{i}.nc") as mean:
            data.append(ds["tas"][...].astype(np.float64).reshape(-1, 12, 8).max(axis=1))
            gm.append(mean["tas"][...].astype(np.float64).reshape(-1, 12).mean(axis=1))
    maxima, covariate = np.concatenate(data), np.concatenate(gm)
    years = np.arange(1850, 1880)
    np.testing.assert_allclose(got["covariate"], covariate[[0, -1]], rtol=1e-12)
    check_against_references(got, years, maxima, covariate, cells=list(range(8)))


# -- peaks over threshold: the GPD log scale linear in the covariate -------------------------------------------
@pytest.fixture(scope="module")
def pot_one(made: Made) -> dict[str, np.ndarray]:
    return made.result("pot-one")


def test_pot_trend_from_the_api(field: Path, pot_one: dict[str, np.ndarray]) -> None:
    import xarray as xr

    from climio.eva import fit_pot

    with xr.open_dataset(field) as ds:
        eager = fit_pot(ds, var="pr", return_periods=[float(p) for p in PERIODS], covariate="year", ci=0.9,
                        ci_method="normal")
        lazy = fit_pot(ds.chunk({"lat": 4}), var="pr", return_periods=[float(p) for p in PERIODS],
                       covariate="year", ci=0.9, ci_method="normal").compute()
    assert "scale" not in eager and eager["return_level"].dims == ("covariate", "period", "lat", "lon")
    for out in (eager, lazy):
        for name in out.data_vars:
            assert np.array_equal(out[name].values, pot_one[name], equal_nan=True), name


def daily_cells(path: Path, var: str) -> tuple[np.ndarray, np.ndarray]:
    """(the calendar year of each step, values (time, cells)) of a daily file, read plainly."""
    with netCDF4.Dataset(path) as ds:
        time = ds["time"]
        dates = cftime.num2date(time[:], time.units, getattr(time, "calendar", "standard"))
        data = np.ma.filled(ds[var][...].astype(np.float64), np.nan)
    return np.array([d.year for d in dates]), data.reshape(data.shape[0], -1)


def runs_maxima(steps: np.ndarray, excess: np.ndarray, run: int) -> tuple[np.ndarray, np.ndarray]:
    """Runs declustering written plainly: (each cluster's largest excess, its time step)."""
    order = np.argsort(steps, kind="stable")
    steps, excess = steps[order], excess[order]
    clusters: list[list[int]] = [[0]]
    for i in range(1, steps.size):
        if steps[i] - steps[i - 1] - 1 >= run:
            clusters.append([i])
        else:
            clusters[-1].append(i)
    tops = [c[int(np.argmax(excess[c]))] for c in clusters]
    return excess[tops], steps[tops]


def reference_pot_nll(e: np.ndarray, c: np.ndarray, start: np.ndarray) -> float:
    """The least -log L scipy finds for the GPD with log scale linear in c (centred): Nelder-Mead from several
    starts, then Powell; shapes >= -1."""
    cbar = c.mean()

    def nll(p: np.ndarray) -> float:
        return gpd_trend.negative_log_likelihood(e, c - cbar, *p) if p[2] >= -1.0 else math.inf

    starts = [start] + [np.array([math.log(e.mean()), 0.0, xi]) for xi in (-0.3, 0.0, 0.3, 0.8)]
    best = min((nelder_mead(nll, s) for s in starts), key=lambda r: r.fun)
    return min(best.fun, optimize.minimize(nll, best.x, method="Powell", options={"xtol": 1e-10, "ftol": 1e-13}).fun)


def check_pot_against_references(got: dict[str, np.ndarray], path: Path, var: str, run: int | None,
                                 cells: list[int]) -> None:
    years, data = daily_cells(path, var)
    flat = {k: v.reshape(*v.shape[:-2], -1) if v.ndim >= 2 else v for k, v in got.items()}
    ok = flat["status"] == 0
    assert ok.mean() > 0.9
    for c in np.flatnonzero(ok):
        valid = np.isfinite(data[:, c])
        u = np.quantile(data[valid, c], 0.99)  # numpy's default is R's type 7
        assert flat["threshold"][c] == pytest.approx(u, rel=1e-12, abs=1e-300)
        steps = np.flatnonzero(valid & (data[:, c] > u))
        e = data[steps, c] - u
        if run is not None:
            e, steps = runs_maxima(steps, e, run)
        x = years[steps].astype(float)
        p = [flat[k][c] for k in ("log_scale_intercept", "log_scale_slope", "shape")]
        assert gpd_trend.negative_log_likelihood(e, x, *p) == pytest.approx(flat["nll"][c], rel=1e-9)
        stationary = gpd.fit(e[None, :], np.array([e.size]))
        assert flat["nll_stationary"][c] == pytest.approx(stationary.nll[0], rel=1e-9)
        assert flat["nll"][c] <= flat["nll_stationary"][c] + 1e-9 * abs(flat["nll_stationary"][c])
        deviance = max(2 * (flat["nll_stationary"][c] - flat["nll"][c]), 0)
        assert flat["trend_p_value"][c] == pytest.approx(stats.chi2.sf(deviance, 1), rel=1e-9, abs=1e-15)
        rate = e.size / valid.sum()
        for i, value in enumerate(flat["covariate"]):
            sigma = math.exp(p[0] + p[1] * value)
            for k, period in enumerate(PERIODS):
                m = float(period) * 365.25 * rate
                want = u + sigma * (m ** p[2] - 1) / p[2] if p[2] != 0 else u + sigma * math.log(m)
                assert flat["return_level"][i, k, c] == pytest.approx(want, rel=1e-9)
        if c in cells:
            start = np.array([p[0] + p[1] * x.mean(), p[1], p[2]])
            assert flat["nll"][c] <= reference_pot_nll(e, x, start) + 1e-7 * abs(flat["nll"][c]), c


def test_pot_trend_against_the_file_read_plainly(field: Path, pot_one: dict[str, np.ndarray]) -> None:
    check_pot_against_references(pot_one, field, "pr", None, cells=[0, 9, 30, 47])
    ok = pot_one["status"] == 0
    lower, upper, z = pot_one["return_level_lower"], pot_one["return_level_upper"], pot_one["return_level"]
    np.testing.assert_allclose((upper - z)[:, :, ok], (z - lower)[:, :, ok], rtol=1e-9)
    for name in ("log_scale_intercept_se", "log_scale_slope_se", "shape_se"):
        assert np.all(pot_one[name][ok] > 0), name


def test_pot_trend_declustered(field: Path, made: Made) -> None:
    got = made.result("pot-declustered", "a.nc")
    two = made.result("pot-declustered-2", "b.nc")
    for name, want in got.items():
        assert np.array_equal(two[name], want, equal_nan=True), name
    assert np.all(got["n_clusters"] <= got["n_exceed"]) and np.any(got["n_clusters"] < got["n_exceed"])
    check_pot_against_references(got, field, "pr", 2, cells=[5, 40])


def test_echo_g_pot_trend(made: Made) -> None:
    got = made.result("echo-g-pot", "a.nc")
    three = made.result("echo-g-pot-3", "b.nc")
    for name, want in got.items():
        assert np.array_equal(three[name], want, equal_nan=True), name
    years, data = daily_cells(ECHO_G, "pr")
    assert np.array_equal(got["covariate"], [years.min(), years.max()])
