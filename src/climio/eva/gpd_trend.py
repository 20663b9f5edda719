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

from climio.eva import gev, gpd, intervals, newton, vecmath

PARAMETERS = ("log_scale_intercept", "log_scale_slope", "shape")
MOVES = "scale"  # the stationary parameter the trend replaces ...
COEFFICIENTS = ("log_scale_intercept", "log_scale_slope")  # ... by these
XI_MIN = gpd.XI_MIN
GRID = gev.GRID_XI  # shapes of the profile's grid
GRID_DECREMENT = 1e-6  # a grid point's Newton solve stops on this decrement (relative to |-log L| + n)
POLISH_DECREMENT = 1e-16  # ... and the polish on this one
ITERATIONS = 100
HALVINGS = 60
GROWTH = 60  # doublings of the scale that bring an infeasible start inside the support
STEP_LOG_SCALE = 2.0  # the largest Newton step in the log-scale coefficients ...
STEP_SHAPE = 0.5  # ... and in the shape
BASIN_MARGIN = 1.0  # grid minima within this of the best one are polished too
XI_ZERO = 1e-100  # shapes closer to 0 are taken as this (the exponential limit to rounding)


@dataclass(frozen=True)
class Fit:
    """Per-cell maximum likelihood estimates (NaN where a cell was not fitted), in the data's units."""

    log_scale_intercept: np.ndarray  # phi_0: log sigma where the covariate is 0
    log_scale_slope: np.ndarray  # phi_1: the change of log sigma per unit of the covariate
    shape: np.ndarray
    nll: np.ndarray
    nll_stationary: np.ndarray  # -log L of the stationary fit of the same excesses
    at_bound: np.ndarray  # the shape is at -1
    covariance: np.ndarray  # (cells, 3, 3): the inverse observed information in PARAMETERS; NaN at the bound


@numba.njit(**gpd.DETERMINISTIC)
def _derivatives(e: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, g: np.ndarray, h: np.ndarray) -> float:
    r"""-log L of excesses e[:n] with covariate c[:n] at theta = (phi_0, phi_1, xi); its gradient into g and its
    Hessian into h. inf (g, h untouched) outside the support.

    Per excess, with s = phi_0 + phi_1 c, a = e e^-s, u = xi a, w = 1 + u, the term is
    s + log w + a L(u), L(u) = log1p(u)/u (so log(w)/xi = a L without cancellation near xi = 0), and
    d/ds = 1 - (1 + xi) a/w, d2/ds2 = (1 + xi) a/w^2, d/dxi = a/w + a^2 phi(u), d2/dxi2 = -a^2/w^2 - a^3 psi(u),
    d2/ds dxi = -a/w + (1 + xi) a^2/w^2, with phi = L' and psi = -L'' (:func:`climio.eva.gev.terms`' series);
    the derivatives in phi_1 weigh those in s by c.
    """
    xi = theta[2]
    if abs(xi) < XI_ZERO:
        xi = XI_ZERO
    total = s_s = sc_s = s_x = s_ss = sc_ss = scc_ss = s_sx = sc_sx = s_xx = outside = 0.0
    for i in range(n):
        ci = c[i]
        s = theta[0] + theta[1] * ci
        a = e[i] * vecmath.exp(-s)
        u = xi * a
        w = 1.0 + u
        lg = vecmath.log(w) + (u - (w - 1.0)) / w  # log1p(u)
        phi, psi = gev._phi_psi_signed(u, w, lg)
        iw = 1.0 / w
        ls = 1.0 - (1.0 + xi) * a * iw
        lss = (1.0 + xi) * a * iw * iw
        lsx = -a * iw + (1.0 + xi) * a * a * iw * iw
        total += s + lg + lg / xi
        s_s += ls
        sc_s += ci * ls
        s_x += a * iw + a * a * phi
        s_ss += lss
        sc_ss += ci * lss
        scc_ss += ci * ci * lss
        s_sx += lsx
        sc_sx += ci * lsx
        s_xx += -a * a * iw * iw - a * a * a * psi
        outside += 1.0 if w <= 0.0 else 0.0  # (a min over w would keep the loop from vectorizing)
    if not (outside == 0.0 and total < math.inf):
        return math.inf
    g[0], g[1], g[2] = s_s, sc_s, s_x
    h[0, 0], h[0, 1], h[1, 1] = s_ss, sc_ss, scc_ss
    h[0, 2], h[1, 2], h[2, 2] = s_sx, sc_sx, s_xx
    h[1, 0], h[2, 0], h[2, 1] = sc_ss, s_sx, sc_sx
    return total


@numba.njit(cache=True, error_model="numpy")
def _newton(e: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, free_shape: bool, tolerance: float,
            g: np.ndarray, h: np.ndarray, step: np.ndarray, lower: np.ndarray, trial: np.ndarray) -> float:
    """Minimise -log L from theta (moved in place) by Newton's method in (phi_0, phi_1) and, if ``free_shape``,
    the shape (kept at or above -1; held there while the gradient pushes it below). A start outside the support
    moves inside by doubling the scale. Stops on a decrement below ``tolerance`` times |-log L| + n, or when no
    step along Newton's direction descends. Returns -log L (inf: no feasible start)."""
    f = _derivatives(e, c, n, theta, g, h)
    for _ in range(GROWTH):
        if f < math.inf:
            break
        theta[0] += math.log(2.0)
        f = _derivatives(e, c, n, theta, g, h)
    if not f < math.inf:
        return math.inf
    for _ in range(ITERATIONS):
        k = 3 if free_shape and not (theta[2] <= XI_MIN and g[2] > 0.0) else 2
        decrement = newton.step(h, g, k, step, lower)
        if not decrement > tolerance * (abs(f) + n):
            break
        cap = max(abs(step[0]) / STEP_LOG_SCALE, abs(step[1]) / STEP_LOG_SCALE, 1.0)
        if k == 3:
            cap = max(cap, abs(step[2]) / STEP_SHAPE)
        fraction = 1.0 / cap
        accepted = False
        for _ in range(HALVINGS):
            for j in range(3):
                trial[j] = theta[j] + fraction * step[j] if j < k else theta[j]
            trial[2] = max(trial[2], XI_MIN)
            f_new = _derivatives(e, c, n, trial, g, h)  # g, h: at the trial point once it is accepted
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
def _fit_cell(e: np.ndarray, c: np.ndarray, n: int, fs: np.ndarray, thetas: np.ndarray, theta: np.ndarray,
              best: np.ndarray, g: np.ndarray, h: np.ndarray, step: np.ndarray, lower: np.ndarray,
              trial: np.ndarray, grid_s: np.ndarray, fs0: np.ndarray) -> tuple[float, float]:
    """The fit of excesses e[:n] scaled to a largest of 1 with covariate c[:n] of mean 0 (``best``: (phi_0,
    phi_1, xi) in those units); returns (-log L, the stationary fit's -log L)."""
    sigma0, xi0, f0, _ = gpd._fit_cell(e, n, grid_s, fs0)
    f0 *= n  # gpd's kernel gives -log L per excess
    mean = 0.0
    for i in range(n):
        mean += e[i]
    mean /= n
    k = GRID.size
    zero = 0
    while GRID[zero] < 0.0:
        zero += 1
    for first, last, way in ((zero, k, 1), (zero - 1, -1, -1)):
        for j in range(first, last, way):
            if j == zero:
                theta[0], theta[1] = math.log(mean), 0.0  # the exponential's estimate
            else:
                theta[:] = thetas[j - way]
            theta[2] = GRID[j]
            fs[j] = _newton(e, c, n, theta, False, GRID_DECREMENT, g, h, step, lower, trial)
            thetas[j] = theta
    best[0], best[1], best[2] = math.log(sigma0), 0.0, xi0
    f_best = _newton(e, c, n, best, True, POLISH_DECREMENT, g, h, step, lower, trial)
    low = math.inf
    for j in range(k):
        low = min(low, fs[j])
    for j in range(k):
        if not fs[j] <= low + BASIN_MARGIN or (j > 0 and fs[j - 1] < fs[j]) or (j < k - 1 and fs[j + 1] < fs[j]):
            continue
        theta[:] = thetas[j]
        f = _newton(e, c, n, theta, True, POLISH_DECREMENT, g, h, step, lower, trial)
        if f < f_best:
            f_best = f
            best[:] = theta
    # the corner xi = -1: uniform excesses on [0, sigma_i], -log L = sum log sigma_i with every log sigma_i at or
    # above log e_i: the lowest line above the points (log e_i, c_i) (the polish only creeps up to it)
    logs = np.empty(n)
    for i in range(n):
        logs[i] = math.log(e[i])
    top, slope = newton.envelope_min(logs, c, n)
    corner = 0.0
    for i in range(n):
        corner += top + slope * c[i]
    if corner <= f_best:
        f_best = corner
        best[0], best[1], best[2] = top, slope, XI_MIN
    return f_best, f0


@numba.njit(cache=True)
def _fit_all(excess: np.ndarray, covariate: np.ndarray, count: np.ndarray, grid_s: np.ndarray, out: np.ndarray,
             information: np.ndarray) -> None:
    """out[:, :] = (phi_0, phi_1, xi, nll, nll_stationary) per row (NaN where not fitted); information: the
    Hessian of -log L in (phi_0, phi_1, xi), data units."""
    width = excess.shape[1]
    e, c = np.empty(width), np.empty(width)
    fs, fs0 = np.empty(GRID.size), np.empty(grid_s.size)
    thetas = np.empty((GRID.size, 3))
    theta, best, g, step, trial = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    h, lower = np.empty((3, 3)), np.empty((3, 3))
    jacobian = np.zeros((3, 3))
    for r in range(excess.shape[0]):
        n = count[r]
        if n <= 2:
            continue
        c_mean = 0.0
        for i in range(n):
            c_mean += covariate[r, i]
        c_mean /= n
        c_spread = 0.0
        for i in range(n):
            c_spread += (covariate[r, i] - c_mean) ** 2
        c_spread = math.sqrt(c_spread / n)
        if not c_spread > 0.0:
            continue
        peak = gpd._scale_to_peak(excess[r], n, e)
        for i in range(n):
            c[i] = (covariate[r, i] - c_mean) / c_spread
        f, f0 = _fit_cell(e, c, n, fs, thetas, theta, best, g, h, step, lower, trial, grid_s, fs0)
        slope = best[1] / c_spread
        out[r, 0] = best[0] - slope * c_mean + math.log(peak)
        out[r, 1] = slope
        out[r, 2] = best[2]
        out[r, 3] = f + n * math.log(peak)
        out[r, 4] = f0 + n * math.log(peak)
        if not _derivatives(e, c, n, best, g, h) < math.inf:
            continue
        # H = J' H_scaled J, J = d(scaled parameters)/d(data parameters): phi_0' = phi_0 + phi_1 c_mean - log peak
        jacobian[0, 0], jacobian[0, 1], jacobian[1, 1], jacobian[2, 2] = 1.0, c_mean, c_spread, 1.0
        for i in range(3):
            for j in range(3):
                v = 0.0
                for a in range(3):
                    for b in range(3):
                        v += jacobian[a, i] * h[a, b] * jacobian[b, j]
                information[r, i, j] = v


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
    _fit_all(excess, covariate, count, gpd.GRID_S, out, information)
    with np.errstate(invalid="ignore"):
        at_bound = out[:, 2] <= XI_MIN
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
