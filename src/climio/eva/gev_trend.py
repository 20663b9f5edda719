r"""GEV block maxima whose location moves linearly with a covariate, fitted at every cell (Coles 2001, section
6.2; extRemes ``fevd(x, type = "GEV", location.fun = ~ covariate)``).

Block i's maximum is x_i ~ GEV(mu_0 + mu_1 c_i, sigma, xi), c_i the block's covariate (its year, or a 1-D
series such as global mean temperature: :mod:`climio.eva.covariate`). The *effective* return level at a covariate
value v, z_T(v) = mu_0 + mu_1 v + sigma g(xi), g = ((-log(1 - 1/T))^-xi - 1)/xi, is the level a block with
covariate v exceeds with probability 1/T.

**The fit is the maximum over the region** -1 <= xi <= ``gev.XI_MAX`` of the stationary fit. Each cell's maxima
are scaled to [0, 1] and its covariate to mean 0 and unit standard deviation: the four parameters are then of one
size and nearly uncorrelated (in calendar years mu_0 and mu_1 are correlated to 1 - 1e-6). The profile over the
shape on the stationary fit's grid (each point Newton's method in (mu_0, mu_1, log sigma), started from its
neighbour's solution) finds the basins; Newton's method in all four parameters, with the exact gradient and
Hessian (the terms of :func:`climio.eva.gev.terms`, summed with the covariate's weights), polishes each grid
minimum and the stationary fit (mu_1 = 0); the best is kept. The models are nested, so the result is never worse
than the stationary fit, whose -log L is returned beside it for the likelihood-ratio test of the trend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from climio.eva import gev, intervals, trend

PARAMETERS = ("location_intercept", "location_slope", "scale", "shape")
MOVES = "location"  # the stationary parameter the trend replaces ...
COEFFICIENTS = ("location_intercept", "location_slope")  # ... by these
XI_MIN, XI_MAX = gev.XI_MIN, gev.XI_MAX
BOUND_TOLERANCE = trend.BOUND_TOLERANCE  # the shared search's: its polish stops within about this of a bound
EULER = 0.5772156649015329  # the Gumbel mean is mu + EULER sigma
LINE_TOLERANCE = 1e-12  # maxima within this (of their range) of a line in the covariate are not fitted
LOG_SCALE_FLOOR = math.log(1e-8)  # nor are those whose fitted scale falls below this (of their range)


@dataclass(frozen=True)
class Fit:
    """Per-cell maximum likelihood estimates (NaN where a cell was not fitted), in the data's units."""

    location_intercept: np.ndarray  # mu_0: the location where the covariate is 0
    location_slope: np.ndarray  # mu_1: the location's change per unit of the covariate
    scale: np.ndarray
    shape: np.ndarray
    nll: np.ndarray  # -log L at the estimate
    nll_stationary: np.ndarray  # -log L of the stationary fit (mu_1 = 0) of the same maxima
    at_bound: np.ndarray  # the shape is at -1 or XI_MAX, to within BOUND_TOLERANCE
    covariance: np.ndarray  # (cells, 4, 4): the inverse observed information in PARAMETERS; NaN at a bound


@numba.njit(cache=True, error_model="numpy")
def _fit_cell(x: np.ndarray, c: np.ndarray, n: int, best: np.ndarray, d: np.ndarray, fs0: np.ndarray,
              ss0: np.ndarray) -> tuple[float, float, bool]:
    """The fit of maxima x[:n] scaled to [0, 1] with covariate c[:n] of mean 0 (``best``: (mu_0, mu_1,
    log sigma, xi) in those units); returns (-log L, the stationary fit's -log L, whether the shape is on a bound
    of the region to within BOUND_TOLERANCE)."""
    mu0, sigma0, xi0, f0, _ = gev._fit_cell(x, d, n, gev.GRID_XI, fs0, ss0)
    # the grid starts at xi = 0 from Gumbel: the least-squares slope, the moments of what it leaves
    cx = cc = mean = spread = 0.0
    for i in range(n):
        cx += c[i] * x[i]
        cc += c[i] * c[i]
    slope = cx / cc
    for i in range(n):
        mean += x[i] - slope * c[i]
    mean /= n
    for i in range(n):
        spread += (x[i] - slope * c[i] - mean) ** 2
    sigma = max(math.sqrt(6.0 * spread / n) / math.pi, 1e-3)
    start = np.array([mean - EULER * sigma, slope, math.log(sigma), 0.0])
    stationary = np.array([mu0, 0.0, math.log(sigma0), xi0])
    f_best = trend.search(trend.GEV, x, c, n, gev.GRID_XI, start, stationary, best)
    if XI_MAX - best[3] <= BOUND_TOLERANCE and best[3] != XI_MAX:  # just short of the top: the top, if as good
        held = best.copy()
        f_held = trend.at_shape(trend.GEV, x, c, n, held, XI_MAX)
        if f_held <= f_best:
            f_best = f_held
            best[:] = held
    # the corner xi = -1: -log L = n log sigma + sum w_i, w_i = 1 - (x_i - mu_i)/sigma >= 0. For a given sigma the
    # least has mu_0 + sigma = the lowest line above the points (c_i, x_i) at mean c = 0, G; then sigma = G - mean x
    # (the polish only creeps up to this corner)
    x_mean = 0.0
    for i in range(n):
        x_mean += x[i]
    top, line_slope = trend.envelope_min(x, c, n)
    gap = top - x_mean / n
    corner = n * math.log(gap) + n if gap > 0.0 else math.inf
    if corner <= f_best:
        f_best = corner
        best[0], best[1], best[2], best[3] = top - gap, line_slope, math.log(gap), XI_MIN
    return f_best, f0, XI_MAX - best[3] <= BOUND_TOLERANCE or best[3] - XI_MIN <= BOUND_TOLERANCE


@numba.njit(cache=True, error_model="numpy")
def _on_a_line(x: np.ndarray, c: np.ndarray, n: int) -> bool:
    """Maxima (scaled to [0, 1]) exactly linear in the covariate (of mean 0): the trend model's constant series,
    whose likelihood grows without bound as the scale goes to 0."""
    mean = cx = cc = 0.0
    for i in range(n):
        mean += x[i]
        cx += c[i] * x[i]
        cc += c[i] * c[i]
    mean /= n
    slope = cx / cc
    for i in range(n):
        if abs(x[i] - mean - slope * c[i]) > LINE_TOLERANCE:
            return False
    return True


@numba.njit(cache=True)
def _fit_all(maxima: np.ndarray, covariate: np.ndarray, count: np.ndarray, out: np.ndarray,
             information: np.ndarray, at_bound: np.ndarray) -> None:
    """out[:, :] = (mu_0, mu_1, sigma, xi, nll, nll_stationary) per row (NaN where not fitted); information: the
    Hessian of -log L in (mu_0, mu_1, sigma, xi), data units; at_bound: the shape on a bound of the region."""
    k = maxima.shape[1]
    x, c, d = np.empty(k), np.empty(k), np.empty(k)
    fs0, ss0 = np.empty(gev.GRID_XI.size), np.empty(gev.GRID_XI.size)
    best = np.empty(4)
    jacobian = np.zeros((4, 4))
    for r in range(maxima.shape[0]):
        n = count[r]
        if n <= 2:
            continue
        low, spread = gev.scale_to_range(maxima[r], n, x)
        c_mean, c_spread = trend.standardize(covariate[r], n, c)
        if not (spread > 0.0 and c_spread > 0.0) or _on_a_line(x, c, n):
            continue
        f, f0, bound = _fit_cell(x, c, n, best, d, fs0, ss0)
        if not best[2] > LOG_SCALE_FLOOR:
            continue  # the scale ran to 0: maxima on a line but for a few, a likelihood without a maximum
        sigma = spread * math.exp(best[2])
        slope = spread * best[1] / c_spread
        out[r, 0] = low + spread * best[0] - slope * c_mean
        out[r, 1] = slope
        out[r, 2] = sigma
        out[r, 3] = best[3]
        out[r, 4] = f + n * math.log(spread)
        out[r, 5] = f0 + n * math.log(spread)
        at_bound[r] = bound
        # J = d(scaled parameters)/d(data parameters): mu_0' = (mu_0 + mu_1 c_mean - low)/spread, ...
        jacobian[0, 0], jacobian[0, 1], jacobian[1, 1] = 1.0 / spread, c_mean / spread, c_spread / spread
        jacobian[2, 2], jacobian[3, 3] = 1.0 / sigma, 1.0
        trend.information(trend.GEV, x, c, n, best, jacobian, information[r])


def fit(maxima: np.ndarray, covariate: np.ndarray, count: np.ndarray) -> Fit:
    """Fit the trend GEV to each row of ``maxima`` (cells, k): its first ``count[i]`` values, with the covariate
    of each in the same place of ``covariate``. Rows with fewer than three maxima, whose covariate values are all
    equal, or whose maxima lie on a line in the covariate (all equal, among others) or all but a few of them do
    (the scale runs to 0: the likelihood has no maximum) stay NaN."""
    maxima = np.ascontiguousarray(maxima, dtype=np.float64)
    covariate = np.ascontiguousarray(np.broadcast_to(covariate, maxima.shape), dtype=np.float64)
    count = np.ascontiguousarray(count, dtype=np.int64)
    cells = maxima.shape[0]
    out = np.full((cells, 6), np.nan)
    information = np.full((cells, 4, 4), np.nan)
    at_bound = np.zeros(cells, bool)
    _fit_all(maxima, covariate, count, out, information, at_bound)
    covariance = intervals.invert(np.where(at_bound[:, None, None], np.nan, information))
    return Fit(*(out[:, j].copy() for j in range(6)), at_bound, covariance)


def negative_log_likelihood(maxima: np.ndarray, covariate: np.ndarray, intercept: float, slope: float,
                            scale: float, shape: float) -> float:
    """-log L of one cell's maxima with their covariate: the plain formula, independent of the kernel."""
    return gev.negative_log_likelihood(maxima, intercept + slope * np.asarray(covariate, dtype=float), scale, shape)


def return_level(result: Fit, value: float, period_blocks: float) -> np.ndarray:
    """The effective level exceeded with probability 1/T in a block whose covariate is ``value``."""
    return gev.return_level(result.location_intercept + result.location_slope * value, result.scale, result.shape,
                            period_blocks)


def normal_bounds(result: Fit, value: float, period_blocks: float, quantile: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The delta-method interval of :func:`return_level` (gradient (1, v, g, sigma g') in PARAMETERS)."""
    cells = result.scale.size
    big_l = -math.log(-math.log1p(-1.0 / period_blocks))
    g, g1 = intervals.level_factors(result.shape, np.full(cells, big_l))
    gradient = np.stack([np.ones(cells), np.full(cells, float(value)), g, result.scale * g1], axis=1)
    return intervals.delta_bounds(return_level(result, value, period_blocks), gradient, result.covariance,
                                  quantile)
