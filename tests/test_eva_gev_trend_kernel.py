"""The GEV fit whose location is linear in a covariate (``eva/gev_trend.py``), against references written here.

* the maximum: on every tested cell a slow scipy search (Nelder-Mead from a grid of shapes, then Powell, in a
  centred covariate and log sigma) never finds a lower -log L; the -log L returned is the plain formula's at
  the returned parameters (at shape -1, the corner's closed form); the stationary fit's is ``gev.fit``'s and
  never below the trend fit's; covariates in calendar years (large offsets) and standardized series;
* the covariance: the inverse of a Richardson-extrapolated numerical Hessian of the plain formula;
* effective return levels and their delta-method interval from their formulas;
* recovery of a known trend (mean, coverage of the slope's interval); invariances; degenerate rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import richardson_hessian
from scipy import optimize, stats

from climio.eva import gev, gev_trend

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # scipy's inf - inf
PAD = 1e6  # what rows hold past their count: any use of it shows


def sample(rng: np.random.Generator, n: int, mu0: float, mu1: float, sigma: float, xi: float, c: np.ndarray
           ) -> np.ndarray:
    """n maxima GEV(mu0 + mu1 c, sigma, xi) (scipy's c = -xi)."""
    return stats.genextreme.rvs(-xi, loc=mu0 + mu1 * c[:n], scale=sigma, random_state=rng)


def padded(rows: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    width = max(x.size for x, _ in rows)
    maxima, covariate = np.full((len(rows), width), PAD), np.full((len(rows), width), PAD)
    for i, (x, c) in enumerate(rows):
        maxima[i, :x.size], covariate[i, :c.size] = x, c
    return maxima, covariate, np.array([x.size for x, _ in rows])


def reference(x: np.ndarray, c: np.ndarray) -> float:
    """The least -log L scipy finds (location mu0 + mu1 (c - mean c), log sigma, -1 <= xi <= 3)."""
    cbar = c.mean()

    def nll(p: np.ndarray) -> float:
        if not -1.0 <= p[3] <= 3.0:
            return math.inf
        return gev_trend.negative_log_likelihood(x, c - cbar, p[0], p[1], math.exp(p[2]), p[3])

    sd = x.std()
    slope = np.polyfit(c - cbar, x, 1)[0]
    starts = [np.array([x.mean() - 0.45 * sd, slope, math.log(0.78 * sd), xi]) for xi in (-0.5, 0.0, 0.5)]
    best = min((optimize.minimize(nll, s, method="Nelder-Mead",
                                  options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000, "maxfev": 40000})
                for s in starts), key=lambda r: r.fun)
    return min(best.fun, optimize.minimize(nll, best.x, method="Powell", options={"xtol": 1e-11, "ftol": 1e-14}).fun)


@pytest.fixture(scope="module")
def cells() -> tuple[np.ndarray, np.ndarray, np.ndarray, gev_trend.Fit]:
    rng = np.random.default_rng(21)
    rows = []
    for i in range(120):
        n = [20, 35, 60][i % 3]
        xi = [-0.4, -0.2, 0.0, 1e-8, 0.2, 0.5][i % 6]
        if i % 4 < 2:  # calendar years
            c = np.arange(1950.0, 1950.0 + n)
            mu1 = [0.0, 0.05][i % 2]
        else:  # a standardized, noisy, GMST-like series
            c = np.linspace(-1.5, 1.5, n) + rng.normal(0, 0.2, n)
            mu1 = [0.0, 2.0][i % 2]
        rows.append((sample(rng, n, 30.0, mu1, 5.0, xi, c), c))
    maxima, covariate, count = padded(rows)
    return maxima, covariate, count, gev_trend.fit(maxima, covariate, count)


def test_never_below_an_independent_search(cells) -> None:
    maxima, covariate, count, fit = cells
    assert not np.isnan(fit.nll).any()
    stationary = gev.fit(maxima, count)
    np.testing.assert_allclose(fit.nll_stationary, stationary.nll, rtol=1e-12)
    assert np.all(fit.nll <= fit.nll_stationary + 1e-10 * np.abs(fit.nll_stationary))
    for r in range(0, 120, 5):
        n = count[r]
        x, c = maxima[r, :n], covariate[r, :n]
        p = (fit.location_intercept[r], fit.location_slope[r], fit.scale[r], fit.shape[r])
        if fit.at_bound[r] and fit.shape[r] == -1.0:  # the corner: -log L = n log sigma + sum w_i, every w_i >= 0
            w = 1.0 - (x - p[0] - p[1] * c) / p[2]
            assert w.min() >= -1e-12
            assert n * math.log(p[2]) + w.sum() == pytest.approx(fit.nll[r], rel=1e-10)
        else:
            assert gev_trend.negative_log_likelihood(x, c, *p) == pytest.approx(fit.nll[r], rel=1e-10)
        assert fit.nll[r] <= reference(x, c) + 1e-8 * abs(fit.nll[r]), r


def test_the_bounds_of_small_samples() -> None:
    """Ten uniform-like maxima: the supremum often sits at shape -1 (the corner's closed form) or, with four
    parameters for ten values, runs to the top of the region (xi = 3); never worse than scipy at either."""
    rng = np.random.default_rng(2)
    years = np.arange(2000.0, 2010.0)
    maxima = rng.uniform(0, 1, (40, 10)) + 0.02 * (years - 2000)
    fit = gev_trend.fit(maxima, years, np.full(40, 10))
    lower, upper = fit.at_bound & (fit.shape == -1.0), fit.at_bound & (fit.shape == gev_trend.XI_MAX)
    assert lower.sum() >= 5 and upper.sum() >= 3 and np.array_equal(fit.at_bound, lower | upper)
    assert np.isnan(fit.covariance[fit.at_bound]).all()
    for r in [*np.flatnonzero(lower)[:5], *np.flatnonzero(upper)[:3]]:
        assert fit.nll[r] <= reference(maxima[r], years) + 1e-9 * abs(fit.nll[r]), r


def numerical_hessian(x: np.ndarray, c: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The Hessian of the plain -log L in (mu at the mean covariate, mu1, sigma, xi) (conftest's)."""
    cbar = c.mean()
    return richardson_hessian(lambda q: gev_trend.negative_log_likelihood(x, c - cbar, *q),
                              np.array([p[0] + p[1] * cbar, p[1], p[2], p[3]]),
                              1e-2 * np.array([p[2], p[2] / c.std(), p[2], 1.0]))


def test_covariance_is_the_inverse_information(cells) -> None:
    """In centred parameters: J Cov J' against the numerical Hessian's inverse (J: mu_c = mu0 + mu1 cbar)."""
    maxima, covariate, count, fit = cells
    checked = 0
    for r in range(2, 120, 3):  # the cells with 60 maxima
        if fit.at_bound[r] or not fit.shape[r] > -0.5:
            continue
        n = count[r]
        x, c = maxima[r, :n], covariate[r, :n]
        p = np.array([fit.location_intercept[r], fit.location_slope[r], fit.scale[r], fit.shape[r]])
        want = np.linalg.inv(numerical_hessian(x, c, p))
        jac = np.eye(4)
        jac[0, 1] = c.mean()
        got = jac @ fit.covariance[r] @ jac.T
        np.testing.assert_allclose(np.sqrt(np.diag(got)), np.sqrt(np.diag(want)), rtol=1e-4)
        checked += 1
    assert checked >= 25


def test_effective_levels_and_their_normal_interval(cells) -> None:
    _, _, _, fit = cells
    for value in (1960.0, 2100.0):
        z = gev_trend.return_level(fit, value, 100.0)
        lower, upper = gev_trend.normal_bounds(fit, value, 100.0, 1.959963984540054)
        y = -math.log(0.99)
        for r in range(0, fit.shape.size, 5):
            mu0, mu1, sigma, xi = fit.location_intercept[r], fit.location_slope[r], fit.scale[r], fit.shape[r]
            want = mu0 + mu1 * value + (sigma * (y**-xi - 1) / xi if xi != 0 else -sigma * math.log(y))
            assert z[r] == pytest.approx(want, rel=1e-9, abs=1e-9)
            if fit.at_bound[r]:
                continue

            def level(q: np.ndarray) -> float:
                return q[0] + q[1] * value + q[2] * (y ** -q[3] - 1) / q[3]

            q0 = np.array([mu0, mu1, sigma, xi if abs(xi) > 1e-6 else 1e-6])
            steps = np.array([1e-6, 1e-9, 1e-6, 1e-6])
            grad = np.array([(level(q0 + h) - level(q0 - h)) / (2 * h.sum()) for h in np.diag(steps)])
            half = 1.959963984540054 * math.sqrt(grad @ fit.covariance[r] @ grad)
            assert upper[r] - z[r] == pytest.approx(half, rel=1e-4)
            assert z[r] - lower[r] == pytest.approx(half, rel=1e-4)


def test_a_known_trend_is_recovered() -> None:
    rng = np.random.default_rng(8)
    years = np.arange(1951.0, 2011.0)
    maxima = np.stack([sample(rng, 60, -70.0, 0.05, 5.0, 0.1, years) for _ in range(500)])
    fit = gev_trend.fit(maxima, years, np.full(500, 60))
    se = np.sqrt(fit.covariance[:, 1, 1])
    assert abs(np.mean(fit.location_slope) - 0.05) < 3 * np.std(fit.location_slope) / math.sqrt(500)
    coverage = np.mean(np.abs(fit.location_slope - 0.05) <= 1.959964 * se)
    assert 0.91 <= coverage <= 0.98, coverage


def test_invariances(cells) -> None:
    """A shifted covariate moves only the intercept; scaled maxima scale the location and scale parameters and
    add n log(factor) to -log L."""
    maxima, covariate, count, fit = cells
    rows = slice(0, 40)
    shifted = gev_trend.fit(maxima[rows], np.where(covariate[rows] == PAD, PAD, covariate[rows] + 500.0),
                            count[rows])
    np.testing.assert_allclose(shifted.nll, fit.nll[rows], rtol=1e-9)
    np.testing.assert_allclose(shifted.location_slope, fit.location_slope[rows], rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(shifted.location_intercept + 500.0 * shifted.location_slope,
                               fit.location_intercept[rows], rtol=1e-7, atol=1e-6)
    scaled = gev_trend.fit(np.where(maxima[rows] == PAD, PAD, 3.0 * maxima[rows]), covariate[rows], count[rows])
    np.testing.assert_allclose(scaled.nll, fit.nll[rows] + count[rows] * math.log(3.0), rtol=1e-9)
    np.testing.assert_allclose(scaled.scale, 3.0 * fit.scale[rows], rtol=1e-6)
    np.testing.assert_allclose(scaled.shape, fit.shape[rows], rtol=1e-6, atol=1e-8)


def test_degenerate_rows() -> None:
    years = np.array([2000.0, 2001, 2002, 2003, 2004])
    x = np.array([[1.0, 3.0, 2.0, 5.0, 4.0], [1.0, 2.0, PAD, PAD, PAD], [2.0] * 5, [1.0, 3.0, 2.0, 5.0, 4.0]])
    c = np.stack([years, years, years, np.full(5, 2000.0)])
    fit = gev_trend.fit(x, c, np.array([5, 2, 5, 5]))
    assert np.isfinite(fit.nll[0])
    assert np.isnan(fit.nll[1:]).all() and np.isnan(fit.covariance[1:]).all()  # 2 maxima; constant; one c
    empty = gev_trend.fit(np.empty((0, 3)), np.empty((0, 3)), np.empty(0, int))
    assert empty.nll.shape == (0,) and empty.covariance.shape == (0, 4, 4)
