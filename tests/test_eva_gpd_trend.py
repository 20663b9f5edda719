"""The GPD fit whose log scale is linear in a covariate (``eva/gpd_trend.py``), against references written here.

* the maximum: on every cell a slow scipy search (Nelder-Mead from several shapes, then Powell from each, in a
  centred covariate) never finds a lower -log L; the returned -log L is the plain formula's at the returned
  parameters; the stationary fit's -log L is ``gpd.fit``'s and never below the trend fit's;
* the covariance: the inverse of a Richardson-extrapolated numerical Hessian of the plain formula;
* effective return levels and their delta-method interval from their formulas;
* recovery of a known trend (mean and coverage of the slope's interval), invariances, degenerate rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import richardson_hessian
from scipy import optimize

from climio.eva import gpd, gpd_trend

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # scipy's inf - inf
PAD = 1e6  # what rows hold past their count: any use of it shows


def sample(rng: np.random.Generator, n: int, phi0: float, phi1: float, xi: float, years: tuple[float, float]
           ) -> tuple[np.ndarray, np.ndarray]:
    """n excesses at times uniform over ``years`` with log scale phi0 + phi1 (t - 2000) (inverse CDF)."""
    t = np.sort(rng.uniform(*years, n))
    sigma = np.exp(phi0 + phi1 * (t - 2000.0))
    u = rng.uniform(size=n)
    e = sigma * (np.expm1(-xi * np.log1p(-u)) / xi if xi != 0 else -np.log1p(-u))
    return e, t


def padded(rows: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    width = max(e.size for e, _ in rows)
    excess, times = np.full((len(rows), width), PAD), np.full((len(rows), width), PAD)
    for i, (e, t) in enumerate(rows):
        excess[i, :e.size], times[i, :t.size] = e, t
    return excess, times, np.array([e.size for e, _ in rows])


def reference(e: np.ndarray, c: np.ndarray) -> float:
    """The least -log L scipy finds (log scale phi0 + phi1 (c - mean c), shape >= -1): Nelder-Mead from four
    shapes, each start's scale raised until it reaches every excess, then Powell from each of the four."""
    cbar = c.mean()

    def nll(p: np.ndarray) -> float:
        return gpd_trend.negative_log_likelihood(e, c - cbar, *p) if p[2] >= -1.0 else math.inf

    starts = []
    for xi in (-0.5, 0.0, 0.5, 1.5):
        start = np.array([math.log(e.mean()), 0.0, xi])
        while not math.isfinite(nll(start)):  # (at -0.5 the mean excess is below some end point: no search from
            start[0] += math.log(2.0)  # there moves) a larger scale reaches every excess
        starts.append(start)
    found = [optimize.minimize(nll, s, method="Nelder-Mead",
                               options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000, "maxfev": 40000})
             for s in starts]
    found += [optimize.minimize(nll, r.x, method="Powell", options={"xtol": 1e-11, "ftol": 1e-14}) for r in found]
    return min(r.fun for r in found)


@pytest.fixture(scope="module")
def cells() -> tuple[np.ndarray, np.ndarray, np.ndarray, gpd_trend.Fit, list[tuple[float, float, float]]]:
    rng = np.random.default_rng(11)
    rows, truth = [], []
    for i in range(120):
        xi = [-0.4, -0.2, 0.0, 0.1, 0.3, 0.6][i % 6]
        phi1 = [0.0, 0.01, -0.02][i % 3]
        n = [15, 40, 150][i % 3]
        rows.append(sample(rng, n, 1.0, phi1, xi, (1950.0, 2020.0)))
        truth.append((1.0, phi1, xi))
    excess, times, count = padded(rows)
    return excess, times, count, gpd_trend.fit(excess, times, count), truth


def test_never_below_an_independent_search(cells) -> None:
    excess, times, count, fit, _ = cells
    assert not np.isnan(fit.nll).any()
    stationary = gpd.fit(excess, count)
    np.testing.assert_allclose(fit.nll_stationary, stationary.nll, rtol=1e-12)
    assert np.all(fit.nll <= fit.nll_stationary + 1e-10 * np.abs(fit.nll_stationary))
    for c in range(0, 120, 5):
        n = count[c]
        e, t = excess[c, :n], times[c, :n]
        if fit.at_bound[c]:
            # xi = -1: uniform excesses on [0, sigma_i], -log L = sum log sigma_i, some excess on its end point
            # (so the plain formula's 1 + xi e/sigma is 0 up to rounding there)
            sigma = np.exp(fit.log_scale_intercept[c] + fit.log_scale_slope[c] * t)
            assert fit.shape[c] == -1.0 and np.max(e / sigma) <= 1.0 + 1e-12
            assert np.sum(np.log(sigma)) == pytest.approx(fit.nll[c], rel=1e-12)
        else:
            own = gpd_trend.negative_log_likelihood(e, t, fit.log_scale_intercept[c], fit.log_scale_slope[c],
                                                    fit.shape[c])
            assert own == pytest.approx(fit.nll[c], rel=1e-10)
        assert fit.nll[c] <= reference(e, t) + 1e-8 * abs(fit.nll[c]), c


def numerical_hessian(e: np.ndarray, t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The Hessian of the plain -log L in (phi0 at the mean time, phi1, xi) (conftest's)."""
    tbar = t.mean()
    return richardson_hessian(lambda q: gpd_trend.negative_log_likelihood(e, t - tbar, *q),
                              np.array([p[0] + p[1] * tbar, p[1], p[2]]),
                              np.array([1e-2, 1e-2 / max(t.std(), 1.0), 1e-2]))


def test_covariance_is_the_inverse_information(cells) -> None:
    """In centred parameters (phi0 at the mean time, phi1, xi): J' Cov J against the numerical Hessian's
    inverse, J the exact map from the data parameters (phi0_c = phi0 + phi1 tbar)."""
    excess, times, count, fit, _ = cells
    checked = 0
    for c in range(2, 120, 3):  # the cells with 150 excesses
        if fit.at_bound[c] or not (fit.shape[c] > -0.5):
            continue
        n = count[c]
        e, t = excess[c, :n], times[c, :n]
        p = np.array([fit.log_scale_intercept[c], fit.log_scale_slope[c], fit.shape[c]])
        want = np.linalg.inv(numerical_hessian(e, t, p))
        jac = np.array([[1.0, t.mean(), 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        got = jac @ fit.covariance[c] @ jac.T
        np.testing.assert_allclose(np.sqrt(np.diag(got)), np.sqrt(np.diag(want)), rtol=2e-5)
        checked += 1
    assert checked >= 20


def test_effective_levels_and_their_normal_interval(cells) -> None:
    excess, times, count, fit, _ = cells
    cellsn = fit.shape.size
    threshold, rate = np.full(cellsn, 10.0), np.full(cellsn, 0.01)
    for value in (1960.0, 2050.0):
        z = gpd_trend.return_level(fit, value, threshold, rate, 100.0, 365.25)
        lower, upper = gpd_trend.normal_bounds(fit, value, threshold, rate, 100.0, 365.25, 1.959963984540054)
        for c in range(0, cellsn, 7):
            sigma = math.exp(fit.log_scale_intercept[c] + fit.log_scale_slope[c] * value)
            m, xi = 100.0 * 365.25 * 0.01, fit.shape[c]
            assert z[c] == pytest.approx(10.0 + sigma * (m**xi - 1) / xi, rel=1e-10)
            if fit.at_bound[c]:
                continue

            def level(q: np.ndarray) -> float:
                return 10.0 + math.exp(q[0] + q[1] * value) * (m ** q[2] - 1) / q[2]

            q0 = np.array([fit.log_scale_intercept[c], fit.log_scale_slope[c], xi])
            grad = np.array([(level(q0 + h) - level(q0 - h)) / (2 * h.sum()) for h in np.eye(3) * 1e-7])
            half = 1.959963984540054 * math.sqrt(grad @ fit.covariance[c] @ grad)
            assert upper[c] - z[c] == pytest.approx(half, rel=1e-5)
            assert z[c] - lower[c] == pytest.approx(half, rel=1e-5)


def test_a_known_trend_is_recovered() -> None:
    rng = np.random.default_rng(7)
    rows = [sample(rng, 200, 1.5, 0.01, 0.1, (1950.0, 2020.0)) for _ in range(400)]
    excess, times, count = padded(rows)
    fit = gpd_trend.fit(excess, times, count)
    se = np.sqrt(fit.covariance[:, 1, 1])
    assert abs(np.mean(fit.log_scale_slope) - 0.01) < 3 * np.std(fit.log_scale_slope) / math.sqrt(400)
    coverage = np.mean(np.abs(fit.log_scale_slope - 0.01) <= 1.959964 * se)
    assert 0.91 <= coverage <= 0.98, coverage
    assert np.median(fit.nll_stationary - fit.nll) > 1.0  # the trend is seen


def test_invariances(cells) -> None:
    """A shifted covariate moves only the intercept; scaled excesses shift it by log(factor) and -log L by
    n log(factor)."""
    excess, times, count, fit, _ = cells
    rows = slice(0, 30)
    shifted = gpd_trend.fit(excess[rows], np.where(times[rows] == PAD, PAD, times[rows] - 1000.0), count[rows])
    np.testing.assert_allclose(shifted.nll, fit.nll[rows], rtol=1e-9)
    np.testing.assert_allclose(shifted.log_scale_slope, fit.log_scale_slope[rows], rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(shifted.log_scale_intercept - 1000.0 * shifted.log_scale_slope,
                               fit.log_scale_intercept[rows], rtol=1e-7, atol=1e-7)
    scaled = gpd_trend.fit(np.where(excess[rows] == PAD, PAD, 7.0 * excess[rows]), times[rows], count[rows])
    np.testing.assert_allclose(scaled.nll, fit.nll[rows] + count[rows] * math.log(7.0), rtol=1e-9)
    np.testing.assert_allclose(scaled.log_scale_intercept, fit.log_scale_intercept[rows] + math.log(7.0),
                               rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(scaled.shape, fit.shape[rows], rtol=1e-6, atol=1e-8)


def test_degenerate_rows() -> None:
    e = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 2.0, PAD, PAD, PAD], [1.0, 2.0, 3.0, 4.0, 5.0]])
    t = np.array([[2000.0, 2001, 2002, 2003, 2004], [2000.0, 2001, PAD, PAD, PAD], [2000.0] * 5])
    fit = gpd_trend.fit(e, t, np.array([5, 2, 5]))
    assert np.isfinite(fit.nll[0])
    assert np.isnan(fit.nll[1]) and np.isnan(fit.nll[2])  # two excesses; one covariate value
    assert np.isnan(fit.covariance[1]).all() and np.isnan(fit.covariance[2]).all()
    empty = gpd_trend.fit(np.empty((0, 3)), np.empty((0, 3)), np.empty(0, int))
    assert empty.nll.shape == (0,) and empty.covariance.shape == (0, 3, 3)


def test_a_bounded_tail_at_the_lower_bound() -> None:
    """Uniform excesses (xi = -1 exactly) with few values: the fit may sit on the bound, then flagged, with no
    covariance; either way never worse than the stationary fit."""
    rng = np.random.default_rng(3)
    rows = [(rng.uniform(0, 1, 12), np.sort(rng.uniform(1950, 2020, 12))) for _ in range(200)]
    excess, times, count = padded(rows)
    fit = gpd_trend.fit(excess, times, count)
    assert np.all(fit.nll <= fit.nll_stationary + 1e-10 * np.abs(fit.nll_stationary))
    bound = fit.at_bound
    assert bound.any(), "no sample reached the bound"
    assert np.all(fit.shape[bound] == -1.0) and np.isnan(fit.covariance[bound]).all()
