"""``climio eva --ci LEVEL --ci-method normal|profile`` end to end: the same intervals at 1, 2 and 3 ranks over
every scheme and split, equal to the API's, the profile ends checked from the input file with an independent
profile likelihood (scipy), CF attributes, real CMIP6 output, and bad options refused in one line.

The command's runs are made once, one process per rank count (``helpers/eva_batch.py``: one start-up for all of
them, each run in a directory of its own); each test checks its own runs' outcomes and files.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio, leftovers, one_error_line
from scipy import optimize

from climio.eva import gpd

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Made, Runs  # noqa: E402

TIMEOUT = 120  # every mpiexec run: a hang fails the test
PERIODS = ("20", "100")
CESM2 = DATA / "real" / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
INTERVALS = ("return_level_lower", "return_level_upper")


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 years of daily CMIP-like precipitation on 6 x 8 cells."""
    path = tmp_path_factory.mktemp("ci") / "pr.nc"
    result = climio("gen", "cmip", str(path), "--shape", "7305,6,8", timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    return path


def read(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: ds[name][...] for name in ds.variables}


METHODS = ("profile", "normal")
RUNS = [(2, "slab", "lat"), (2, "transpose", "block"), (2, "root", "lon"), (3, "slab", "block"), (3, "transpose", "lat")]
GEV_RUNS = {"a.nc": (None, ()), "b.nc": (2, ("--split", "block")),  # output -> (ranks, options)
            "c.nc": (3, ("--scheme", "transpose", "--split", "lon"))}
CESM2_ARGS = ("-v", "tas", "--npy", "calendar", "--ci", "0.95")
BAD_OPTIONS = [
    (("--ci", "1.5"), ("--ci", "inside (0, 1)")),
    (("--ci", "0"), ("--ci", "inside (0, 1)")),
    (("--ci", "0.95", "--ci-method", "bootstrap"), ("--ci-method 'bootstrap'", "normal, profile")),
    (("--ci-method", "normal"), ("--ci-method", "--ci 0.95")),
    (("--method", "gev", "--tail", "0.02"), ("--tail", "peaks over threshold only")),
]


@pytest.fixture(scope="module")
def made(field: Path, tmp_path_factory: pytest.TempPathFactory) -> Made:
    runs = Runs(tmp_path_factory.mktemp("runs"), timeout=540)
    dirs: dict[object, Path] = {}

    def add(key: object, inputs: Path, out: str, *args: str, nranks: int | None = None) -> None:
        """A run of ``eva`` (the command line the tests' ``eva`` ran) in a directory of its own."""
        dirs[key] = runs.case_dir()
        runs.add(key, "eva", inputs, dirs[key] / out, "--return-period", *PERIODS, *args, nranks=nranks)

    for method in METHODS:
        add(("one", method), field, "eva.nc", "--ci", "0.95", "--ci-method", method)
    add("profile-ends", field, "eva.nc", "--ci", "0.95")
    add("cf", field, "eva.nc", "--ci", "0.9", "--ci-method", "normal")
    add("cesm2-one", CESM2, "a.nc", *CESM2_ARGS)
    for nranks, scheme, split in RUNS:
        for method in METHODS:
            add((method, nranks, scheme, split), field, "eva.nc", "--ci", "0.95", "--ci-method", method, "--scheme",
                scheme, "--split", split, nranks=nranks)
    for method in ("normal", "profile"):
        for out, (nranks, extra) in GEV_RUNS.items():
            add(("gev", method, out), field, out, "--method", "gev", "--ci", "0.95", "--ci-method", method, "-O",
                *extra, nranks=nranks)
    add("cesm2-two", CESM2, "b.nc", *CESM2_ARGS, nranks=2)
    for n, (args, _) in enumerate(BAD_OPTIONS):
        dirs[("bad", n)] = runs.case_dir()
        runs.add(("bad", n), "eva", field, dirs[("bad", n)] / "eva.nc", *args, nranks=2)
    return Made(runs.run(), dirs, read)


@pytest.fixture(scope="module", params=["profile", "normal"])
def one_rank(request: pytest.FixtureRequest, made: Made) -> tuple[str, dict[str, np.ndarray]]:
    return request.param, made.result(("one", request.param))


@pytest.mark.parametrize("nranks, scheme, split", RUNS)
def test_every_rank_count_scheme_and_split_gives_the_same_intervals(
        made: Made, one_rank: tuple[str, dict[str, np.ndarray]], nranks: int, scheme: str, split: str) -> None:
    method, want = one_rank
    got = made.result((method, nranks, scheme, split))
    for name in (*INTERVALS, "scale_se", "shape_se", "return_level", "shape"):
        assert np.array_equal(got[name], want[name], equal_nan=True), (method, name)


def test_intervals_are_the_apis(field: Path, one_rank: tuple[str, dict[str, np.ndarray]]) -> None:
    import xarray as xr

    from climio.eva import fit_pot

    method, want = one_rank
    with xr.open_dataset(field) as ds:
        got = fit_pot(ds, var="pr", return_periods=[float(p) for p in PERIODS], ci=0.95, ci_method=method)
        for name in (*INTERVALS, "scale_se", "shape_se"):
            assert np.array_equal(got[name].values, want[name], equal_nan=True), name


def test_ends_bracket_the_level_and_normal_is_symmetric(one_rank: tuple[str, dict[str, np.ndarray]]) -> None:
    method, got = one_rank
    ok = got["status"] == 0
    assert ok.sum() >= 40
    lower, level, upper = got["return_level_lower"], got["return_level"], got["return_level_upper"]
    assert np.all(lower[:, ok] < level[:, ok]) and np.all(level[:, ok] < upper[:, ok])
    assert np.all(np.isnan(lower[:, ~ok])) and np.all(np.isnan(upper[:, ~ok]))
    assert np.all(got["scale_se"][ok] > 0) and np.all(got["shape_se"][ok] > 0)
    if method == "normal":
        np.testing.assert_allclose(upper - level, level - lower, rtol=1e-9)
    else:  # the profile interval of a right-skewed level reaches farther up than down
        assert np.mean((upper - level)[:, ok] > (level - lower)[:, ok]) > 0.9


def independent_profile(excess: np.ndarray, level_above: float, big_l: float) -> float:
    """min over the shape of the GPD -log L with the level held at ``level_above`` over the threshold (scipy's
    bounded search on pieces of [-1, 5], best of all)."""
    def nll(xi: float) -> float:
        g = math.expm1(xi * big_l) / xi if xi != 0 else big_l
        return gpd.negative_log_likelihood(excess, level_above / g, xi)

    pieces = [(-1.0, -0.5), (-0.5, -0.1), (-0.1, 0.1), (0.1, 0.5), (0.5, 1.5), (1.5, 5.0)]
    return min(optimize.minimize_scalar(nll, bounds=p, method="bounded", options={"xatol": 1e-12}).fun
               for p in pieces)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # scipy meets -log L = inf
def test_profile_ends_from_the_input_file(field: Path, made: Made) -> None:
    """At each end, the profile -log L of the cell's excesses (taken from the input here) is the maximum's plus
    half the chi-square(1) 95% quantile (3.841459/2)."""
    got = made.result("profile-ends")
    with netCDF4.Dataset(field) as ds:
        pr = ds["pr"][:].filled(np.nan).astype(np.float64)
    for j, i in [(0, 0), (2, 3), (5, 7), (3, 1)]:
        if got["status"][j, i] != 0:
            continue
        u = got["threshold"][j, i]
        y = pr[:, j, i]
        excess = y[y > u] - u
        assert excess.size == got["n_exceed"][j, i]
        nll_hat = gpd.negative_log_likelihood(excess, got["scale"][j, i], got["shape"][j, i])
        np.testing.assert_allclose(nll_hat, got["nll"][j, i], rtol=1e-10)
        for k, period in enumerate(PERIODS):
            big_l = math.log(float(period) * 365.25 * got["rate"][j, i])
            for end in INTERVALS:
                p = independent_profile(excess, got[end][k, j, i] - u, big_l)
                assert p - nll_hat == pytest.approx(3.841458820694124 / 2, abs=2e-6), (j, i, period, end)


def test_cf_attributes_say_which_interval(made: Made) -> None:
    out = made.dirs["cf"] / "eva.nc"
    made.result("cf")
    with netCDF4.Dataset(out) as ds:
        assert ds.climio_ci_level == 0.9 and ds.climio_ci_method == "normal"
        lower = ds["return_level_lower"]
        assert lower.dimensions == ("period", "lat", "lon")
        assert "90% normal-approximation (delta method) confidence interval" in lower.long_name
        assert lower.units == ds["return_level"].units
        assert lower.cell_methods.endswith("lower end of the 90% normal-approximation (delta method) "
                                           "confidence interval)")
        assert ds["shape_se"].units == "1" and ds["scale_se"].units == ds["scale"].units
        assert ds["scale_se"].dimensions == ("lat", "lon")


def test_gev_intervals_at_one_and_two_ranks(field: Path, made: Made) -> None:
    """GEV intervals on annual maxima: the same at one, two and three ranks (two schemes and splits) and from
    the API, and around the level."""
    import xarray as xr

    from climio.eva import fit_gev

    for method in ("normal", "profile"):
        one, two, three = (made.result(("gev", method, out), out) for out in GEV_RUNS)
        with xr.open_dataset(field) as ds:
            api = fit_gev(ds, var="pr", return_periods=[float(p) for p in PERIODS], ci=0.95, ci_method=method)
        for name in (*INTERVALS, "location_se", "scale_se", "shape_se"):
            assert np.array_equal(one[name], two[name], equal_nan=True), (method, name)
            assert np.array_equal(one[name], three[name], equal_nan=True), (method, name)
            assert np.array_equal(api[name].values, one[name], equal_nan=True), (method, name)
        ok = one["status"] == 0
        assert np.all(one["return_level_lower"][:, ok] < one["return_level"][:, ok])
        assert np.all(one["return_level"][:, ok] < one["return_level_upper"][:, ok])


def test_cesm2_tas_profile_intervals_one_and_two_ranks(made: Made) -> None:
    one = made.result("cesm2-one", "a.nc")
    two = made.result("cesm2-two", "b.nc")
    for name in (*INTERVALS, "scale_se", "shape_se"):
        assert np.array_equal(one[name], two[name], equal_nan=True), name
    ok = one["status"] == 0
    assert ok.mean() > 0.9
    lower, level, upper = one["return_level_lower"], one["return_level"], one["return_level_upper"]
    assert np.all(lower[:, ok] < level[:, ok]) and np.all(level[:, ok] < upper[:, ok])
    assert np.all(np.isfinite(lower[:, ok])) and np.all(lower[:, ok] > one["threshold"][ok])


@pytest.mark.parametrize("args, needles", BAD_OPTIONS)
def test_bad_options_one_line_and_no_output(made: Made, args: tuple[str, ...], needles: tuple[str, ...]) -> None:
    key = ("bad", BAD_OPTIONS.index((args, needles)))
    d = made.dirs[key]
    one_error_line(made.runs[key], *needles)
    assert not (d / "eva.nc").exists() and not leftovers(str(d))
