r"""GPD excesses whose scale moves with a covariate, fitted at every cell (Coles 2001, section 6.3; extRemes
``fevd(x, threshold = u, type = "GP", scale.fun = ~ covariate, use.phi = TRUE)``).

Excess e_i over a constant threshold at time t_i is GPD(sigma_i, xi) with log sigma_i = phi_0 + phi_1 c_i, c_i the
covariate at that time (:mod:`climio.eva.covariate`: its year, or a series' annual mean): the log link keeps every
scale positive (a scale linear in the covariate itself turns negative when extrapolated). The *effective*
return level at a covariate value v is u + sigma(v) g(xi), g = ((T npy rate)^xi - 1)/xi, with the cell's rate of
exceedance, as for the stationary fit.

**The fit is the maximum over xi >= -1.** Each cell's excesses are scaled by their largest and its covariate to
mean 0 and unit standard deviation. For a fixed shape (> -1) -log L is convex in (phi_0, phi_1): each excess's
term is convex in its log scale, which is linear in them. So the profile over the shape, on a grid from -0.9 to 3
(each point Newton's method in (phi_0, phi_1), from its neighbour's solution), is exact at every grid point and
finds the basins; Newton's method in all three parameters, with the exact gradient and Hessian, polishes every
grid minimum near the best and the stationary fit (:mod:`climio.eva.gpd`, phi_1 = 0; its shape may exceed 3).
The models are nested: the result is never worse than the stationary fit, whose -log L is returned beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from climio.eva import gev, gpd, intervals, trend

PARAMETERS = ("log_scale_intercept", "log_scale_slope", "shape")
MOVES = "scale"  # the stationary parameter the trend replaces ...
COEFFICIENTS = ("log_scale_intercept", "log_scale_slope")  # ... by these
XI_MIN = gpd.XI_MIN
BOUND_TOLERANCE = trend.BOUND_TOLERANCE  # the shared search's: its polish stops within about this of a bound
GRID = gev.GRID_XI  # shapes of the profile's grid


@dataclass(frozen=True)
class Fit:
    """Per-cell maximum likelihood estimates (NaN where a cell was not fitted), in the data's units."""

    log_scale_intercept: np.ndarray  # phi_0: log sigma where the covariate is 0
    log_scale_slope: np.ndarray  # phi_1: the change of log sigma per unit of the covariate
    shape: np.ndarray
    nll: np.ndarray
    nll_stationary: np.ndarray  # -log L of the stationary fit of the same excesses
    at_bound: np.ndarray  # the shape is at -1, to within BOUND_TOLERANCE (no bound above: the shape is free)
    covariance: np.ndarray  # (cells, 3, 3): the inverse observed information in PARAMETERS; NaN at the bound


@numba.njit(cache=True, error_model="numpy")
def _fit_cell(e: np.ndarray, c: np.ndarray, n: int, best: np.ndarray, grid_s: np.ndarray, fs0: np.ndarray
              ) -> tuple[float, float, bool]:
    """The fit of excesses e[:n] scaled to a largest of 1 with covariate c[:n] of mean 0 (``best``: (phi_0,
    phi_1, xi) in those units); returns (-log L, the stationary fit's -log L, whether the shape is on -1 to within
    BOUND_TOLERANCE)."""
    sigma0, xi0, f0, _ = gpd._fit_cell(e, n, grid_s, fs0)
    f0 *= n  # gpd's kernel gives -log L per excess
    mean = 0.0
    for i in range(n):
        mean += e[i]
    start = np.array([math.log(mean / n), 0.0, 0.0])  # the exponential's estimate
    f_best = trend.search(trend.GPD, e, c, n, GRID, start, np.array([math.log(sigma0), 0.0, xi0]), best)
    # the corner xi = -1: uniform excesses on [0, sigma_i], -log L = sum log sigma_i with every log sigma_i at or
    # above log e_i: the lowest line above the points (log e_i, c_i) (the polish only creeps up to it)
    logs = np.empty(n)
    for i in range(n):
        logs[i] = math.log(e[i])
    top, slope = trend.envelope_min(logs, c, n)
    corner = 0.0
    for i in range(n):
        corner += top + slope * c[i]
    if corner <= f_best:
        f_best = corner
        best[0], best[1], best[2] = top, slope, XI_MIN
    return f_best, f0, best[2] - XI_MIN <= BOUND_TOLERANCE


@numba.njit(cache=True)
def _fit_all(excess: np.ndarray, covariate: np.ndarray, count: np.ndarray, grid_s: np.ndarray, out: np.ndarray,
             information: np.ndarray, at_bound: np.ndarray) -> None:
    """out[:, :] = (phi_0, phi_1, xi, nll, nll_stationary) per row (NaN where not fitted); information: the
    Hessian of -log L in (phi_0, phi_1, xi), data units; at_bound: the shape on -1."""
    width = excess.shape[1]
    e, c = np.empty(width), np.empty(width)
    fs0 = np.empty(grid_s.size)
    best = np.empty(3)
    jacobian = np.zeros((3, 3))
    for r in range(excess.shape[0]):
        n = count[r]
        if n <= 2:
            continue
        c_mean, c_spread = trend.standardize(covariate[r], n, c)
        if not c_spread > 0.0:
            continue
        peak = gpd._scale_to_peak(excess[r], n, e)
        f, f0, bound = _fit_cell(e, c, n, best, grid_s, fs0)
        at_bound[r] = bound
        slope = best[1] / c_spread
        out[r, 0] = best[0] - slope * c_mean + math.log(peak)
        out[r, 1] = slope
        out[r, 2] = best[2]
        out[r, 3] = f + n * math.log(peak)
        out[r, 4] = f0 + n * math.log(peak)
        # J = d(scaled parameters)/d(data parameters): phi_0' = phi_0 + phi_1 c_mean - log peak, phi_1' = phi_1 c_spread
        jacobian[0, 0], jacobian[0, 1], jacobian[1, 1], jacobian[2, 2] = 1.0, c_mean, c_spread, 1.0
        trend.information(trend.GPD, e, c, n, best, jacobian, information[r])


def fit(excess: np.ndarray, covariate: np.ndarray, count: np.ndarray) -> Fit:
    """Fit the trend GPD to each row of ``excess`` (cells, k): its first ``count[i]`` excesses, with the covariate
    at each in the same place of ``covariate``. Rows with fewer than three excesses, or one covariate value, stay
    NaN."""
    excess = np.ascontiguousarray(excess, dtype=np.float64)
    covariate = np.ascontiguousarray(np.broadcast_to(covariate, excess.shape), dtype=np.float64)
    count = np.ascontiguousarray(count, dtype=np.int64)
    cells = excess.shape[0]
    out = np.full((cells, 5), np.nan)
    information = np.full((cells, 3, 3), np.nan)
    at_bound = np.zeros(cells, bool)
    _fit_all(excess, covariate, count, gpd.GRID_S, out, information, at_bound)
    covariance = intervals.invert(np.where(at_bound[:, None, None], np.nan, information))
    return Fit(*(out[:, j].copy() for j in range(5)), at_bound, covariance)


def negative_log_likelihood(excess: np.ndarray, covariate: np.ndarray, intercept: float, slope: float,
                            shape: float) -> float:
    """-log L of one cell's excesses with their covariate: the plain formula, independent of the kernel."""
    e = np.asarray(excess, dtype=float)
    sigma = np.exp(intercept + slope * np.asarray(covariate, dtype=float))
    if shape == 0.0:
        return float(np.sum(np.log(sigma) + e / sigma))
    z = shape * e / sigma
    if np.any(z <= -1.0):
        return math.inf
    return float(np.sum(np.log(sigma) + (1.0 + 1.0 / shape) * np.log1p(z)))


def return_level(result: Fit, value: float, threshold: np.ndarray, rate: np.ndarray, period: float,
                 npy: float) -> np.ndarray:
    """The effective level exceeded once in ``period`` years on average where the covariate stays at ``value``."""
    scale = np.exp(result.log_scale_intercept + result.log_scale_slope * value)
    return gpd.return_level(threshold, scale, result.shape, rate, period, npy)


def normal_bounds(result: Fit, value: float, threshold: np.ndarray, rate: np.ndarray, period: float, npy: float,
                  quantile: float) -> tuple[np.ndarray, np.ndarray]:
    """The delta-method interval of :func:`return_level` (the threshold and rate taken as known, as for the
    stationary fit): gradient (sigma g, v sigma g, sigma g') in PARAMETERS, L = log(T npy rate)."""
    scale = np.exp(result.log_scale_intercept + result.log_scale_slope * value)
    with np.errstate(divide="ignore", invalid="ignore"):
        big_l = np.log(period * npy * np.asarray(rate, dtype=np.float64))
    g, g1 = intervals.level_factors(result.shape, np.where(big_l > 0.0, big_l, np.nan))  # as gpd's intervals
    gradient = np.stack([scale * g, value * scale * g, scale * g1], axis=1)
    return intervals.delta_bounds(return_level(result, value, threshold, rate, period, npy), gradient,
                                  result.covariance, quantile)
