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

from climio.eva import gev, gpd, intervals, newton

PARAMETERS = ("location_intercept", "location_slope", "scale", "shape")
MOVES = "location"  # the stationary parameter the trend replaces ...
COEFFICIENTS = ("location_intercept", "location_slope")  # ... by these
XI_MIN, XI_MAX = gev.XI_MIN, gev.XI_MAX
GRID_DECREMENT = 1e-6  # a grid point's Newton solve stops on this decrement (relative to |-log L| + n)
POLISH_DECREMENT = 1e-16  # ... and the polish on this one (its last step is then below rounding)
ITERATIONS = 100  # Newton steps of one solve
HALVINGS = 60  # step halvings before a solve stops where it is (a step that does not descend is rounding)
GROWTH = 60  # doublings of the scale that bring an infeasible start inside the support
STEP_LOCATION = 1.0  # the largest Newton step in the location coefficients (scaled maxima) ...
STEP_LOG_SCALE = 2.0  # ... in log sigma ...
STEP_SHAPE = 0.5  # ... and in the shape
BASIN_MARGIN = 1.0  # grid minima within this of the best one are polished too
EULER = 0.5772156649015329  # the Gumbel mean is mu + EULER sigma


@dataclass(frozen=True)
class Fit:
    """Per-cell maximum likelihood estimates (NaN where a cell was not fitted), in the data's units."""

    location_intercept: np.ndarray  # mu_0: the location where the covariate is 0
    location_slope: np.ndarray  # mu_1: the location's change per unit of the covariate
    scale: np.ndarray
    shape: np.ndarray
    nll: np.ndarray  # -log L at the estimate
    nll_stationary: np.ndarray  # -log L of the stationary fit (mu_1 = 0) of the same maxima
    at_bound: np.ndarray  # the shape is at -1 or XI_MAX
    covariance: np.ndarray  # (cells, 4, 4): the inverse observed information in PARAMETERS; NaN at a bound


@numba.njit(**gpd.DETERMINISTIC)
def _derivatives(x: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, g: np.ndarray, h: np.ndarray) -> float:
    r"""-log L of maxima x[:n] with covariate c[:n] at theta = (mu_0, mu_1, log sigma, xi); its gradient into g
    and Hessian into h. inf (g, h untouched) outside the support.

    Per maximum, with y = (x - mu_0 - mu_1 c)/sigma and h, h_y, ... the term's derivatives of
    :func:`climio.eva.gev.terms` (-log L = sum log sigma + h): d/dmu_0 = -h_y/sigma, d/dmu_1 = -c h_y/sigma,
    d/dlog sigma = 1 - y h_y, d/dxi = h_xi; second derivatives: (1, c, c^2) h_yy/sigma^2 in the locations,
    (1, c) (h_y + y h_yy)/sigma for a location and log sigma, y h_y + y^2 h_yy in log sigma, -(1, c) h_yxi/sigma
    for a location and xi, -y h_yxi for log sigma and xi, h_xixi in xi.
    """
    m0, m1, xi = theta[0], theta[1], theta[3]
    if abs(xi) < gev.XI_ZERO:
        xi = gev.XI_ZERO
    inverse_s = math.exp(-theta[2])
    inverse_xi = 1.0 / xi
    sh = s_hy = sc_hy = sy_hy = s_hyy = sc_hyy = scc_hyy = s_a = sc_a = sy_a = 0.0
    s_hyx = sc_hyx = sy_hyx = s_hx = s_hxx = outside = 0.0
    for i in range(n):
        ci = c[i]
        y, w, hv, hy, hyy, hx, hxx, hyx = gev.terms(x[i], m0 + m1 * ci, inverse_s, xi, inverse_xi)
        a = hy + y * hyy
        sh += hv
        s_hy += hy
        sc_hy += ci * hy
        sy_hy += y * hy
        s_hyy += hyy
        sc_hyy += ci * hyy
        scc_hyy += ci * ci * hyy
        s_a += a
        sc_a += ci * a
        sy_a += y * a
        s_hyx += hyx
        sc_hyx += ci * hyx
        sy_hyx += y * hyx
        s_hx += hx
        s_hxx += hxx
        outside += 1.0 if w <= 0.0 else 0.0  # (a min over w would keep the loop from vectorizing)
    f = n * theta[2] + sh
    if not (outside == 0.0 and f < math.inf):
        return math.inf
    i2 = inverse_s * inverse_s
    g[0], g[1], g[2], g[3] = -s_hy * inverse_s, -sc_hy * inverse_s, n - sy_hy, s_hx
    h[0, 0], h[0, 1], h[1, 1] = s_hyy * i2, sc_hyy * i2, scc_hyy * i2
    h[0, 2], h[1, 2], h[2, 2] = s_a * inverse_s, sc_a * inverse_s, sy_a
    h[0, 3], h[1, 3], h[2, 3], h[3, 3] = -s_hyx * inverse_s, -sc_hyx * inverse_s, -sy_hyx, s_hxx
    for i in range(4):
        for j in range(i):
            h[i, j] = h[j, i]
    return f


@numba.njit(cache=True, error_model="numpy")
def _newton(x: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, free_shape: bool, tolerance: float,
            g: np.ndarray, h: np.ndarray, step: np.ndarray, lower: np.ndarray, trial: np.ndarray) -> float:
    """Minimise -log L from theta (moved in place) by Newton's method, in the locations and log sigma and, if
    ``free_shape``, the shape (kept in [XI_MIN, XI_MAX]; held where the gradient pushes it out of them). A start
    outside the support moves inside by doubling sigma. Stops on a decrement below ``tolerance`` times
    |-log L| + n, or when no step along Newton's direction descends. Returns -log L (inf: no feasible start)."""
    f = _derivatives(x, c, n, theta, g, h)
    for _ in range(GROWTH):
        if f < math.inf:
            break
        theta[2] += math.log(2.0)
        f = _derivatives(x, c, n, theta, g, h)
    if not f < math.inf:
        return math.inf
    for _ in range(ITERATIONS):
        k = 4 if free_shape and not ((theta[3] <= XI_MIN and g[3] > 0.0) or (theta[3] >= XI_MAX and g[3] < 0.0)) \
            else 3
        decrement = newton.step(h, g, k, step, lower)
        if not decrement > tolerance * (abs(f) + n):
            break
        cap = max(abs(step[0]) / STEP_LOCATION, abs(step[1]) / STEP_LOCATION, abs(step[2]) / STEP_LOG_SCALE, 1.0)
        if k == 4:
            cap = max(cap, abs(step[3]) / STEP_SHAPE)
        fraction = 1.0 / cap
        accepted = False
        for _ in range(HALVINGS):
            for j in range(4):
                trial[j] = theta[j] + fraction * step[j] if j < k else theta[j]
            trial[3] = min(max(trial[3], XI_MIN), XI_MAX)
            f_new = _derivatives(x, c, n, trial, g, h)  # g, h: at the trial point once it is accepted
            if f_new <= f:
                accepted = True
                break
            fraction *= 0.5
        if not accepted:
            break
        theta[:] = trial
        f = f_new
    return f


@numba.njit(cache=True, error_model="numpy")
def _fit_cell(x: np.ndarray, c: np.ndarray, n: int, grid: np.ndarray, fs: np.ndarray, thetas: np.ndarray,
              theta: np.ndarray, best: np.ndarray, g: np.ndarray, h: np.ndarray, step: np.ndarray,
              lower: np.ndarray, trial: np.ndarray, d: np.ndarray, fs0: np.ndarray, ss0: np.ndarray
              ) -> tuple[float, float]:
    """The fit of maxima x[:n] scaled to [0, 1] with covariate c[:n] of mean 0 (``best``: (mu_0, mu_1,
    log sigma, xi) in those units); returns (-log L, the stationary fit's -log L)."""
    mu0, sigma0, xi0, f0, _ = gev._fit_cell(x, d, n, gev.GRID_XI, fs0, ss0)
    # the grid: from a Gumbel start at xi = 0 (the least-squares slope, the moments of what it leaves), outwards
    cx = cc = 0.0
    for i in range(n):
        cx += c[i] * x[i]
        cc += c[i] * c[i]
    slope = cx / cc
    mean = spread = 0.0
    for i in range(n):
        mean += x[i] - slope * c[i]
    mean /= n
    for i in range(n):
        spread += (x[i] - slope * c[i] - mean) ** 2
    sigma = max(math.sqrt(6.0 * spread / n) / math.pi, 1e-3)
    k = grid.size
    zero = 0
    while grid[zero] < 0.0:
        zero += 1
    for first, last, way in ((zero, k, 1), (zero - 1, -1, -1)):
        for j in range(first, last, way):
            if j == zero:
                theta[0], theta[1], theta[2] = mean - EULER * sigma, slope, math.log(sigma)
            else:
                theta[:] = thetas[j - way]
            theta[3] = grid[j]
            fs[j] = _newton(x, c, n, theta, False, GRID_DECREMENT, g, h, step, lower, trial)
            thetas[j] = theta
    # polish the stationary fit and every grid minimum near the best
    best[0], best[1], best[2], best[3] = mu0, 0.0, math.log(sigma0), xi0
    f_best = _newton(x, c, n, best, True, POLISH_DECREMENT, g, h, step, lower, trial)
    low = math.inf
    for j in range(k):
        low = min(low, fs[j])
    for j in range(k):
        if not fs[j] <= low + BASIN_MARGIN or (j > 0 and fs[j - 1] < fs[j]) or (j < k - 1 and fs[j + 1] < fs[j]):
            continue
        theta[:] = thetas[j]
        f = _newton(x, c, n, theta, True, POLISH_DECREMENT, g, h, step, lower, trial)
        if f < f_best:
            f_best = f
            best[:] = theta
    # the corner xi = -1: -log L = n log sigma + sum w_i, w_i = 1 - (x_i - mu_i)/sigma >= 0. For a given sigma the
    # least has mu_0 + sigma = the lowest line above the points (c_i, x_i) at mean c = 0, G; then sigma = G - mean x
    # (the polish only creeps up to this corner)
    x_mean = 0.0
    for i in range(n):
        x_mean += x[i]
    top, slope = newton.envelope_min(x, c, n)
    gap = top - x_mean / n
    corner = n * math.log(gap) + n if gap > 0.0 else math.inf
    if corner <= f_best:
        f_best = corner
        best[0], best[1], best[2], best[3] = top - gap, slope, math.log(gap), XI_MIN
    return f_best, f0


@numba.njit(cache=True)
def _fit_all(maxima: np.ndarray, covariate: np.ndarray, count: np.ndarray, grid: np.ndarray, out: np.ndarray,
             information: np.ndarray) -> None:
    """out[:, :] = (mu_0, mu_1, sigma, xi, nll, nll_stationary) per row (NaN where not fitted); information: the
    Hessian of -log L in (mu_0, mu_1, sigma, xi), data units."""
    k = maxima.shape[1]
    x, c, d = np.empty(k), np.empty(k), np.empty(k)
    fs, fs0, ss0 = np.empty(grid.size), np.empty(gev.GRID_XI.size), np.empty(gev.GRID_XI.size)
    thetas = np.empty((grid.size, 4))
    theta, best, g, step, trial = np.empty(4), np.empty(4), np.empty(4), np.empty(4), np.empty(4)
    h, lower = np.empty((4, 4)), np.empty((4, 4))
    jacobian = np.zeros((4, 4))
    for r in range(maxima.shape[0]):
        n = count[r]
        if n <= 2:
            continue
        low = high = maxima[r, 0]
        c_mean = 0.0
        for i in range(n):
            low = min(low, maxima[r, i])
            high = max(high, maxima[r, i])
            c_mean += covariate[r, i]
        c_mean /= n
        c_spread = 0.0
        for i in range(n):
            c_spread += (covariate[r, i] - c_mean) ** 2
        c_spread = math.sqrt(c_spread / n)
        spread = high - low
        if not (spread > 0.0 and c_spread > 0.0):
            continue
        for i in range(n):
            x[i] = (maxima[r, i] - low) / spread
            c[i] = (covariate[r, i] - c_mean) / c_spread
        f, f0 = _fit_cell(x, c, n, grid, fs, thetas, theta, best, g, h, step, lower, trial, d, fs0, ss0)
        sigma = spread * math.exp(best[2])
        slope = spread * best[1] / c_spread
        out[r, 0] = low + spread * best[0] - slope * c_mean
        out[r, 1] = slope
        out[r, 2] = sigma
        out[r, 3] = best[3]
        out[r, 4] = f + n * math.log(spread)
        out[r, 5] = f0 + n * math.log(spread)
        # the information in data units: H = J' H_scaled J, J = d(scaled parameters)/d(data parameters)
        if not _derivatives(x, c, n, best, g, h) < math.inf:
            continue
        jacobian[0, 0] = 1.0 / spread
        jacobian[0, 1] = c_mean / spread
        jacobian[1, 1] = c_spread / spread
        jacobian[2, 2] = 1.0 / sigma
        jacobian[3, 3] = 1.0
        for i in range(4):
            for j in range(4):
                v = 0.0
                for a in range(4):
                    for b in range(4):
                        v += jacobian[a, i] * h[a, b] * jacobian[b, j]
                information[r, i, j] = v


def fit(maxima: np.ndarray, covariate: np.ndarray, count: np.ndarray) -> Fit:
    """Fit the trend GEV to each row of ``maxima`` (cells, k): its first ``count[i]`` values, with the covariate
    of each in the same place of ``covariate``. Rows with fewer than three maxima, or whose maxima or covariate
    values are all equal, stay NaN."""
    maxima = np.ascontiguousarray(maxima, dtype=np.float64)
    covariate = np.ascontiguousarray(np.broadcast_to(covariate, maxima.shape), dtype=np.float64)
    count = np.ascontiguousarray(count, dtype=np.int64)
    cells = maxima.shape[0]
    out = np.full((cells, 6), np.nan)
    information = np.full((cells, 4, 4), np.nan)
    _fit_all(maxima, covariate, count, gev.GRID_XI, out, information)
    shape = out[:, 3]
    with np.errstate(invalid="ignore"):
        at_bound = (shape <= XI_MIN) | (shape >= XI_MAX)
    covariance = intervals.invert(np.where(at_bound[:, None, None], np.nan, information))
    return Fit(*(out[:, j].copy() for j in range(6)), at_bound, covariance)


def negative_log_likelihood(maxima: np.ndarray, covariate: np.ndarray, intercept: float, slope: float,
                            scale: float, shape: float) -> float:
    """-log L of one cell's maxima with their covariate: the plain formula, independent of the kernel."""
    x = np.asarray(maxima, dtype=float)
    location = intercept + slope * np.asarray(covariate, dtype=float)
    if scale <= 0:
        return math.inf
    y = (x - location) / scale
    if shape == 0.0:
        return x.size * math.log(scale) + y.sum() + np.exp(-y).sum()
    z = shape * y
    if np.any(z <= -1.0):
        return math.inf
    log_z = np.log1p(z)
    return x.size * math.log(scale) + log_z.sum() + (log_z / shape).sum() + np.exp(-log_z / shape).sum()


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
