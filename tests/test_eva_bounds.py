"""No estimate on a bound of its shape's region passes as ``ok``.

The searches stop a little short of a bound they run into (Brent never evaluates its bracket's ends; the GPD's
Newton bisects towards the top of its range in s): every fit flags an estimate within its ``BOUND_TOLERANCE`` of
a bound, takes the bound itself where it is at least as good, and the statuses, the command and the API say so.
Checked on samples built to sit on each bound (GEV at XI_MAX and -1, GPD at -1 and at the top of its search, both
trend fits), on the generated field whose cell (lat 4, lon 5) the GEV fit used to leave at 3 - 2e-10 with status
ok, and on interior samples, whose fits must stay the maximum scipy finds.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from conftest import climio
from scipy import optimize, stats

from climio.eva import cf, fit_gev, fit_pot, gev, gev_trend, gpd, gpd_trend, pot, trend
from climio.gen import cmip

FIELD_SHAPE = (3650, 6, 8)  # climio gen cmip --shape 3650,6,8 (seed 1): ten noleap years
CELL = (4, 5)  # its cell whose annual maxima's likelihood rises all the way to xi = XI_MAX
# maxima with a few huge values among tiny ones: Brent stopped 1e-10 to 2e-10 short of XI_MAX on each
TOWARD_TOP = [[0.001, 0.01, 0.1, 10.0, 20.0],
              [0.0, 0.05, 0.1, 5.0, 10.0],
              [0.001, 0.004641588833612777, 0.021544346900318832, 0.1, 1000.0],
              list(np.geomspace(0.001, 0.1, 9)) + [1000.0]]
UNIFORM_TOP = [0.2, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0, 1.0, 1.0, 1.0]  # maxima nearly uniform with a hard upper end
PILED = [1.0, 0.999, 0.998, 0.997, 0.996, 0.995, 0.994, 0.993, 0.5, 0.2, 0.999, 0.998]  # excesses at an end point
# 19 excesses over a threshold tied at 0.5: six a rounding error above it (1.1e-16 of the largest), so that the GPD
# profile still falls at the top of the search in s (the deep basin lies beyond s = 36)
ROUNDING_ABOVE = [np.nextafter(0.5, 1.0)] * 6 + list(0.5 + np.array([0.05, 0.1, 0.15, 0.2, 0.3, 0.35, 0.45, 0.5, 0.6,
                                                                      0.7, 0.8, 0.9, 1.0]))


def cell_maxima() -> np.ndarray:
    """The annual maxima of the generated field's cell CELL, from the generator the command uses."""
    field = cmip.field(1, 0, FIELD_SHAPE[0], cmip.climatology(*FIELD_SHAPE[1:])).reshape(FIELD_SHAPE)
    return field[:, CELL[0], CELL[1]].reshape(-1, cmip.DAYS_PER_YEAR).max(axis=1).astype(np.float64)


def fit_one(module: object, x: np.ndarray) -> object:
    return module.fit(np.asarray(x, dtype=float)[None], np.array([len(x)]))  # type: ignore[attr-defined]


def scaled(x: np.ndarray) -> np.ndarray:
    return (x - x.min()) / (x.max() - x.min())


# -- (1) samples on each bound -------------------------------------------------------------------------------------

@pytest.mark.parametrize("maxima", [cell_maxima(), *map(np.array, TOWARD_TOP)], ids=["cell", *map(str, range(4))])
def test_gev_rising_to_the_top_is_on_it(maxima: np.ndarray) -> None:
    """Brent's bracket [2, 3] ends at XI_MAX, which it never evaluates: the estimate is XI_MAX itself, flagged, its
    -log L the plain formula's there and no worse than anywhere in Brent's last bracket."""
    fit = fit_one(gev, maxima)
    assert fit.at_bound[0] and fit.shape[0] == gev.XI_MAX, fit.shape[0]
    assert fit.nll[0] == pytest.approx(gev.negative_log_likelihood(maxima, fit.location[0], fit.scale[0],
                                                                   gev.XI_MAX), rel=1e-9)
    x = scaled(maxima)
    d = np.empty(x.size)
    for xi in (gev.XI_MAX - gev.BOUND_TOLERANCE, gev.XI_MAX - 1e-6):
        inside = gev._profile(x, d, x.size, xi, 0.0)[0] + x.size * math.log(np.ptp(maxima))
        assert fit.nll[0] <= inside + 1e-12 * abs(inside), xi


@pytest.mark.parametrize("maxima", [cell_maxima(), *map(np.array, TOWARD_TOP)], ids=["cell", *map(str, range(4))])
def test_brent_stops_within_the_bound_tolerance(maxima: np.ndarray) -> None:
    """The tolerance follows from Brent's stopping rule: on [2, XI_MAX] from 2 it stops short of XI_MAX, by no
    more than BOUND_TOLERANCE."""
    x = scaled(maxima)
    d = np.empty(x.size)
    f2, s2 = gev._profile(x, d, x.size, 2.0, 0.0)
    xi = gev._brent(x, d, x.size, 2.0, gev.XI_MAX, 2.0, f2, s2)[0]
    assert 0.0 < gev.XI_MAX - xi <= gev.BOUND_TOLERANCE, xi


def test_gev_at_minus_one() -> None:
    maxima = np.array(UNIFORM_TOP)
    fit = fit_one(gev, maxima)
    assert fit.at_bound[0] and fit.shape[0] == gev.XI_MIN
    n = maxima.size
    assert fit.nll[0] == pytest.approx(n * math.log(np.mean(maxima.max() - maxima)) + n, rel=1e-12)


def test_gpd_at_minus_one() -> None:
    fit = fit_one(gpd, np.array(PILED))
    assert fit.at_bound[0] and fit.shape[0] == gpd.XI_MIN and fit.scale[0] == 1.0


def test_gpd_falling_at_the_top_of_its_search_is_on_it() -> None:
    """Newton bisects towards s = GRID_S[-1] + S_REACH and stops a relative 1e-10 short of it: the estimate is the
    profile at that end itself, flagged (the shape there is no bound of the model, but the estimate no maximum)."""
    e = np.array(ROUNDING_ABOVE) - 0.5
    fit = fit_one(gpd, e)
    f, xi, sigma, _, _ = gpd._profile(gpd.GRID_S[-1] + gpd.S_REACH, e / e.max(), e.size, False)
    assert fit.at_bound[0] and fit.shape[0] == xi and fit.scale[0] == sigma * e.max()
    assert fit.nll[0] == pytest.approx(gpd.negative_log_likelihood(e, fit.scale[0], fit.shape[0]), rel=1e-9)


def test_gev_trend_at_the_top() -> None:
    """Heavy-tailed maxima (rounded lognormal) whose trend fit is on XI_MAX; from just short of it, the fit held at
    the top (what the fit takes when its polish stops there) finds the same -log L."""
    maxima = np.array([0.09, 0.019, 0.475, 3.53, 30.209, 1.39, 0.191, 0.095, 9.452, 134.875])
    covariate = np.arange(float(maxima.size))
    fit = gev_trend.fit(maxima[None], covariate, np.array([maxima.size]))
    assert fit.at_bound[0] and fit.shape[0] == gev.XI_MAX and np.isnan(fit.covariance).all()
    spread, c = np.ptp(maxima), (covariate - covariate.mean()) / covariate.std()  # the kernel's units
    theta = np.array([(fit.location_intercept[0] + fit.location_slope[0] * covariate.mean() - maxima.min()) / spread,
                      fit.location_slope[0] * covariate.std() / spread, math.log(fit.scale[0] / spread),
                      gev.XI_MAX - trend.BOUND_TOLERANCE])
    held = trend.at_shape(trend.GEV, scaled(maxima), c, maxima.size, theta, gev.XI_MAX)
    assert theta[3] == gev.XI_MAX
    assert held + maxima.size * math.log(spread) == pytest.approx(fit.nll[0], rel=1e-12)


def test_trend_fits_at_minus_one() -> None:
    maxima = np.array(UNIFORM_TOP)
    covariate = np.arange(float(maxima.size))
    fit = gev_trend.fit(maxima[None], covariate, np.array([maxima.size]))
    assert fit.at_bound[0] and fit.shape[0] == gev.XI_MIN
    fit = gpd_trend.fit(np.array(PILED)[None], np.arange(float(len(PILED))), np.array([len(PILED)]))
    assert fit.at_bound[0] and fit.shape[0] == gpd.XI_MIN


# -- statuses: the POT layer and the API ---------------------------------------------------------------------------

def pot_series() -> np.ndarray:
    """(time, 3 cells) of 2000 values: ROUNDING_ABOVE over a threshold tied at 0.5 (the 0.99 quantile falls on the
    ties), PILED excesses over 0.5, and a gamma sample."""
    rng = np.random.default_rng(11)
    top = np.concatenate([np.linspace(0.0, 0.4, 1979), [0.5, 0.5], ROUNDING_ABOVE])
    piled = np.concatenate([np.linspace(0.0, 0.4, 1979), [0.5] * 9, 0.5 + np.array(PILED)])
    return np.stack([rng.permutation(top), rng.permutation(piled), rng.gamma(0.6, 5.0, top.size)], axis=1)


def test_pot_and_fit_pot_report_both_bounds() -> None:
    series = pot_series()
    result = pot.analyse(series, tail=0.01, periods=[100.0], npy=365.25, min_exceed=10)
    assert [cf.STATUS_MEANINGS[s] for s in result.status] == ["shape_at_upper_bound", "shape_at_lower_bound", "ok"]
    assert result.threshold[0] == 0.5 and result.shape[1] == -1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no units
        api = fit_pot(series, axis=0)
    assert api["status"].values.tolist() == result.status.tolist()
    assert api["status"].attrs["flag_meanings"].split() == list(cf.STATUS_MEANINGS)
    assert api["status"].attrs["flag_values"].tolist() == list(range(len(cf.STATUS_MEANINGS)))


def test_fit_gev_reports_both_bounds_with_and_without_a_trend() -> None:
    """Three cells of ten noleap years whose annual maxima are TOWARD_TOP[3], UNIFORM_TOP and a Gumbel sample."""
    years, days = 10, cmip.DAYS_PER_YEAR
    maxima = np.stack([np.array(TOWARD_TOP[3]), np.array(UNIFORM_TOP),
                       np.random.default_rng(1).gumbel(10.0, 2.0, years)], axis=1)
    values = np.zeros((years * days, 1, 3))
    values[np.arange(years) * days + 200, 0, :] = maxima  # every other day 0
    data = xr.DataArray(values, dims=("time", "lat", "lon"), name="pr", attrs={"units": "mm d-1"},
                        coords={"time": xr.cftime_range("2001-01-01", periods=years * days, calendar="noleap"),
                                "lat": [0.0], "lon": [0.0, 1.0, 2.0]})
    names = np.array(cf.BLOCK_STATUS_MEANINGS)
    result = fit_gev(data)
    assert names[result["status"].values[0]].tolist() == ["shape_at_upper_bound", "shape_at_lower_bound", "ok"]
    assert result["shape"].values[0, :2].tolist() == [gev.XI_MAX, gev.XI_MIN]
    with_trend = fit_gev(data, covariate="year")
    assert names[with_trend["status"].values[0, :2]].tolist() == ["shape_at_upper_bound", "shape_at_lower_bound"]


# -- (2) the generated field through the command -------------------------------------------------------------------

@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``climio gen cmip y.nc --shape 3650,6,8`` (written in this process, by the same code) and ``climio eva y.nc
    g.nc --method gev``: the result and the command's output."""
    where = tmp_path_factory.mktemp("bounds")
    source, out = where / "y.nc", where / "g.nc"
    cmip.write(str(source), FIELD_SHAPE)
    result = climio("eva", str(source), str(out), "--method", "gev")
    assert result.returncode == 0, result.stderr
    return out, result.stdout + result.stderr


def test_generated_field_has_no_ok_cell_on_a_bound(generated: tuple[Path, str]) -> None:
    out, said = generated
    with netCDF4.Dataset(out) as ds:
        ds.set_auto_mask(False)
        shape, status = ds["shape"][:], ds["status"][:]
        names = np.array(ds["status"].flag_meanings.split())
    ok = names[status] == "ok"
    assert not np.any(ok & ((np.abs(shape - gev.XI_MAX) < 1e-6) | (np.abs(shape - gev.XI_MIN) < 1e-6)))
    assert names[status[CELL]] == "shape_at_upper_bound" and shape[CELL] == gev.XI_MAX
    counts = {name: int(np.count_nonzero(names[status] == name)) for name in names}
    assert f"shape_at_upper_bound {counts['shape_at_upper_bound']}" in said, said  # the summary line counts them


# -- (3) interior fits are the maximum, as before --------------------------------------------------------------------

def tight_fmin(func, x0, args=(), disp=0):  # noqa: ANN001, ANN201 (scipy's optimizer signature)
    return optimize.fmin(func, x0, args=args, xtol=1e-10, ftol=1e-12, maxiter=20000, maxfun=40000, disp=disp)


def test_interior_gev_fits_match_scipy() -> None:
    rng = np.random.default_rng(21)
    for xi, n in ((0.1, 60), (-0.2, 40), (0.4, 30)):
        y = stats.genextreme.rvs(-xi, loc=10.0, scale=2.0, size=n, random_state=rng)
        fit = fit_one(gev, y)
        assert not fit.at_bound[0] and gev.XI_MIN + 1e-3 < fit.shape[0] < gev.XI_MAX - 1e-3
        c, loc, scale = stats.genextreme.fit(y, -fit.shape[0] + 0.01, loc=fit.location[0], scale=fit.scale[0],
                                             optimizer=tight_fmin)
        theirs = -stats.genextreme.logpdf(y, c, loc, scale).sum()
        assert fit.nll[0] <= theirs + 1e-9 * abs(theirs)
        assert fit.shape[0] == pytest.approx(-c, abs=1e-6)
        assert (fit.location[0], fit.scale[0]) == pytest.approx((loc, scale), rel=1e-6)


def test_interior_gpd_fits_match_scipy() -> None:
    rng = np.random.default_rng(22)
    for xi, n in ((0.1, 200), (-0.3, 100), (0.5, 80)):
        e = stats.genpareto.rvs(xi, scale=3.0, size=n, random_state=rng)
        fit = fit_one(gpd, e)
        assert not fit.at_bound[0] and fit.shape[0] > gpd.XI_MIN + 1e-3
        c, _, scale = stats.genpareto.fit(e, fit.shape[0] + 0.01, floc=0.0, scale=fit.scale[0], optimizer=tight_fmin)
        theirs = -stats.genpareto.logpdf(e, c, 0.0, scale).sum()
        assert fit.nll[0] <= theirs + 1e-9 * abs(theirs)
        assert fit.shape[0] == pytest.approx(c, abs=1e-6)
        assert fit.scale[0] == pytest.approx(scale, rel=1e-6)
