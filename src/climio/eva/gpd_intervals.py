r"""Confidence intervals of the GPD return level of peaks over threshold (:func:`return_level_intervals`,
:mod:`climio.eva.intervals`): ``normal``, the delta method with the exact observed information
(:func:`information`); ``profile``, the levels whose profile likelihood is within half the :math:`\chi^2_1`
quantile of the maximum, each end solved per cell (the threshold and the rate taken as known).

The fit whose estimates these intervals surround is :mod:`climio.eva.gpd`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from climio.eva import intervals
from climio.eva.gpd import (NEWTON_ITERATIONS, PARAMETERS, SERIES_T, VECTOR, XI_MIN, _g_series, _one_plus_te,
                           _scale_to_peak, _sum_log, _sum_series, return_level)

PROFILE_XI_HIGH = 20.0  # the profile's inner search over the shape: [-1, this]
PROFILE_GRID = 48  # shapes checked at each end of an interval, so that the inner minimum is the global one
PROFILE_V_SPAN = 30.0  # ends searched within exp(+-this) times the level above the threshold; beyond: infinite
PROFILE_TOLERANCE = 1e-13  # the end's log(level above the threshold), at convergence


@numba.njit(**VECTOR)
def _ratio_sums(e: np.ndarray, n: int, t: float, w: float) -> tuple[float, float, float]:
    """sum r, sum r/q and sum r^2 with q = 1 + t e and r = e/q."""
    s1 = s2 = s3 = 0.0
    for i in range(n):
        q = _one_plus_te(e[i], t, w)
        r = e[i] / q
        s1 += r
        s2 += r / q
        s3 += r * r
    return s1, s2, s3


@numba.njit(cache=True, error_model="numpy")
def _series_derivatives(e: np.ndarray, n: int, sigma: float, xi: float) -> tuple[float, float, float, float]:
    """sum(x lambda + a lambda), sum a^2 lambda', sum a^3 lambda'' and sum a^2/q^2 (a = e/sigma, x = xi a,
    q = 1 + x, lambda(x) = log1p(x)/x) from lambda's Taylor series: every |x| below SERIES_T."""
    total = d_x = d_xx = s3 = 0.0
    for i in range(n):
        a = e[i] / sigma
        x = xi * a
        lam, lam1, lam2 = _g_series(x)
        aq = a / (1.0 + x)
        total += (x + a) * lam
        d_x += a * a * lam1
        d_xx += a * a * a * lam2
        s3 += aq * aq
    return total, d_x, d_xx, s3


@numba.njit(cache=True, error_model="numpy")
def _derivatives(e: np.ndarray, n: int, sigma: float, xi: float) -> tuple[float, float, float, float, float, float]:
    r"""-log L of excesses scaled to max(e) <= 1 and its first and second derivatives in (sigma, xi), exactly.

    With a = e/sigma, q = 1 + xi a, S = sum log q, S1 = sum a/q, S2 = sum a/q^2, S3 = sum a^2/q^2:
    -log L = n log sigma + (1 + 1/xi) S; d/dsigma = (n - (1+xi) S1)/sigma; d/dxi = -S/xi^2 + (1 + 1/xi) S1;
    d2/dsigma2 = (-n + (1+xi)(S1 + S2))/sigma^2; d2/dsigma dxi = (-S1 + (1+xi) S3)/sigma;
    d2/dxi2 = 2 S/xi^3 - 2 S1/xi^2 - (1 + 1/xi) S3. Where t = xi/sigma is small (|t| < SERIES_T) the xi
    terms cancel, and are taken from the Taylor series of lambda(x) = log1p(x)/x instead (S = x lambda,
    S/xi = a lambda, d/dxi = sum(a/q + a^2 lambda'), d2/dxi2 = sum(-a^2/q^2 + a^3 lambda'')). Infinite -log L
    outside the support (1 + t max e <= 0).
    """
    t = xi / sigma
    if not (sigma > 0.0 and t > -1.0):
        return math.inf, math.nan, math.nan, math.nan, math.nan, math.nan
    w = 1.0 + t
    s1, s2, s3 = _ratio_sums(e, n, t, w)
    s1, s2, s3 = s1 / sigma, s2 / sigma, s3 / (sigma * sigma)
    if abs(t) < SERIES_T:
        total, d_x, d_xx, _ = _series_derivatives(e, n, sigma, xi)
        nll = n * math.log(sigma) + total
        d_x += s1
        d_xx -= s3
    else:
        s = _sum_log(e, n, t, w)
        nll = n * math.log(sigma) + (1.0 + 1.0 / xi) * s
        d_x = -s / (xi * xi) + (1.0 + 1.0 / xi) * s1
        d_xx = 2.0 * s / (xi * xi * xi) - 2.0 * s1 / (xi * xi) - (1.0 + 1.0 / xi) * s3
    d_s = (n - (1.0 + xi) * s1) / sigma
    d_ss = (-n + (1.0 + xi) * (s1 + s2)) / (sigma * sigma)
    d_sx = (-s1 + (1.0 + xi) * s3) / sigma
    return nll, d_s, d_x, d_ss, d_sx, d_xx


@numba.njit(cache=True, error_model="numpy")
def _nll(e: np.ndarray, n: int, sigma: float, xi: float) -> float:
    """-log L alone (as :func:`_derivatives` computes it), for the profile's grid."""
    t = xi / sigma
    if not (sigma > 0.0 and t > -1.0):
        return math.inf
    if abs(t) < SERIES_T:  # S = t sum e lambda(t e)
        a = _sum_series(e, n, t)[0]
        return n * math.log(sigma) + t * a + a / sigma
    return n * math.log(sigma) + (1.0 + 1.0 / xi) * _sum_log(e, n, t, 1.0 + t)


@numba.njit(cache=True)
def _information_all(excess: np.ndarray, count: np.ndarray, scale: np.ndarray, shape: np.ndarray,
                     out: np.ndarray) -> None:
    scaled = np.empty(excess.shape[1])
    for c in range(excess.shape[0]):
        if count[c] <= 0 or not (scale[c] > 0.0 and math.isfinite(shape[c])):
            continue
        n = count[c]
        peak = _scale_to_peak(excess[c], n, scaled)
        _, _, _, d_ss, d_sx, d_xx = _derivatives(scaled, n, scale[c] / peak, shape[c])
        out[c, 0, 0], out[c, 0, 1], out[c, 1, 0], out[c, 1, 1] = d_ss / peak ** 2, d_sx / peak, d_sx / peak, d_xx


def information(excess: np.ndarray, count: np.ndarray, scale: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """The observed information of each row's excesses at (scale, shape): the exact Hessian of -log L in
    (scale, shape), (cells, 2, 2); NaN where there is no estimate."""
    excess = np.ascontiguousarray(excess, dtype=np.float64)
    out = np.full((excess.shape[0], 2, 2), np.nan)
    _information_all(excess, np.ascontiguousarray(count, dtype=np.int64), np.asarray(scale, dtype=np.float64),
                     np.asarray(shape, dtype=np.float64), out)
    return out


@numba.njit(cache=True, error_model="numpy")
def _inner(e: np.ndarray, n: int, d: float, big_l: float, xi: float, lo: float) -> tuple[float, float, float]:
    """min over the shape of -log L with the level held at d above the threshold (sigma = d / g(xi)), by
    safeguarded Newton from ``xi`` inside [lo, PROFILE_XI_HIGH]: (-log L, the shape, d(-log L)/dd there)."""
    hi = PROFILE_XI_HIGH
    # with e scaled to max 1, the support needs sigma > -xi, i.e. xi > log1p(-d)/L when d < 1: there -log L is
    # infinite, so the search starts well inside (next to it Newton's steps are tiny but far from the minimum)
    edge = math.log1p(-d) / big_l if d < 1.0 else -math.inf
    at_lo = edge <= lo
    if not at_lo:
        lo = edge
        if not xi > lo + 1e-6 * max(1.0, abs(lo)):
            xi = lo + 0.5 * min(1.0, hi - lo)
    xi = min(max(xi, lo), hi)
    for _ in range(NEWTON_ITERATIONS):
        g, g1, g2 = intervals.level_factor(xi, big_l)
        sigma = d / g
        nll, d_s, d_x, d_ss, d_sx, d_xx = _derivatives(e, n, sigma, xi)
        if not math.isfinite(nll):  # outside the support: the minimum is above
            lo = xi
            xi = 0.5 * (lo + hi) if hi - lo > 1e-12 else hi
            continue
        s1 = -sigma * g1 / g
        s2 = sigma * (2.0 * g1 * g1 / (g * g) - g2 / g)
        f1 = d_s * s1 + d_x
        f2 = d_ss * s1 * s1 + 2.0 * d_sx * s1 + d_xx + d_s * s2
        if f1 > 0.0:
            hi = xi
            if at_lo and xi == lo:  # rising from the xi = -1 boundary: the minimum is on it
                return nll, xi, d_s / g
        elif f1 < 0.0:
            lo = xi
        else:
            return nll, xi, d_s / g
        step = xi - f1 / f2 if f2 > 0.0 else math.nan
        newton = lo < step < hi
        new = step if newton else 0.5 * (lo + hi)
        # converged: Newton's predicted decrease f1^2/f2 is at rounding level (a small step alone is not
        # enough: next to the support's edge the steps are tiny), or the bracket is closed
        if (newton and f1 * f1 <= 1e-22 * f2 * max(1.0, abs(nll))) or hi - lo <= 1e-14 * max(1.0, abs(xi)):
            xi = new
            break
        xi = new
    g = intervals.level_factor(xi, big_l)[0]
    nll, d_s, _, _, _, _ = _derivatives(e, n, d / g, xi)
    return nll, xi, d_s / g


@numba.njit(cache=True, error_model="numpy")
def _grid_best(e: np.ndarray, n: int, d: float, big_l: float) -> tuple[float, float]:
    """The best of ``PROFILE_GRID`` shapes over [-1, PROFILE_XI_HIGH] (denser near 0) at level d: (-log L, shape)."""
    best, best_xi = math.inf, 0.0
    for j in range(PROFILE_GRID):
        u = -1.0 + 2.0 * j / (PROFILE_GRID - 1)  # in [-1, 1], mapped to xi in [-1, 20] by xi = u (1 + 19 u^2)_+
        xi = u if u <= 0.0 else u * (1.0 + (PROFILE_XI_HIGH - 1.0) * u * u)
        g = intervals.level_factor(xi, big_l)[0]
        nll = _nll(e, n, d / g, xi)
        if nll < best:
            best, best_xi = nll, xi
    return best, best_xi


@numba.njit(cache=True, error_model="numpy")
def _end(e: np.ndarray, n: int, v_hat: float, xi_hat: float, big_l: float, target: float, side: float,
         first_step: float) -> float:
    """log d of the interval's end on ``side`` (+1 upper, -1 lower): where the profile -log L, as a function of
    v = log d (d: the level above the threshold), rises to ``target``; +-inf when it stays below within
    PROFILE_V_SPAN. ``first_step``: the first try's distance from v_hat (the normal approximation's)."""
    xi = xi_hat
    inside, outside = v_hat, math.nan  # bracket: profile below target at ``inside``, above at ``outside``
    step = first_step if 1e-6 < first_step < 1.0 else 0.05
    v = v_hat + side * step
    for _ in range(8):  # the inner minimum found by Newton from the last shape must be the global one
        while math.isnan(outside):
            p, xi, slope = _inner(e, n, math.exp(v), big_l, xi, XI_MIN)
            if p >= target:
                outside = v
            elif step >= PROFILE_V_SPAN:  # below the target at the far end of the search: no end
                return side * math.inf
            else:
                inside = v
                step = min(step * 1.5, PROFILE_V_SPAN)
                v = v_hat + side * step
        v = outside
        for _ in range(NEWTON_ITERATIONS):
            d = math.exp(v)
            p, xi, slope = _inner(e, n, d, big_l, xi, XI_MIN)
            f = p - target
            if f >= 0.0:
                outside = v
            else:
                inside = v
            newton = v - f / (slope * d) if slope * d != 0.0 else math.nan
            low, high = min(inside, outside), max(inside, outside)
            new = newton if low < newton < high else 0.5 * (low + high)
            # converged: on the target to rounding and a last step below the tolerance, or the bracket closed
            if ((abs(f) <= 1e-11 * max(1.0, abs(target)) and abs(new - v) <= PROFILE_TOLERANCE * max(1.0, abs(v)))
                    or high - low <= PROFILE_TOLERANCE * max(1.0, abs(v))):
                v = new
                break
            v = new
        d = math.exp(v)
        p, xi, _ = _inner(e, n, d, big_l, xi, XI_MIN)
        best, best_xi = _grid_best(e, n, d, big_l)
        if not best < p - 1e-9 * max(1.0, abs(p)):
            return v
        p, xi, _ = _inner(e, n, d, big_l, best_xi, XI_MIN)  # a better basin: the end is farther out
        inside, outside = v, math.nan
        step = abs(v - v_hat)
        v = v_hat + side * step * 1.5 if step > 0 else v + side * 0.05
        step = abs(v - v_hat)
    return v


@numba.njit(cache=True)
def _profile_all(excess: np.ndarray, count: np.ndarray, scale: np.ndarray, shape: np.ndarray,
                 log_m: np.ndarray, half_chi2: float, first_step: np.ndarray, lower: np.ndarray,
                 upper: np.ndarray) -> None:
    """Ends of the level above the threshold, (periods, cells), for each fitted cell with log_m > 0;
    ``first_step`` (periods, cells): the normal approximation's half-width in the log of that level."""
    scaled = np.empty(excess.shape[1])
    for c in range(excess.shape[0]):
        n = count[c]
        if n <= 0 or not (scale[c] > 0.0 and shape[c] > XI_MIN):
            continue
        peak = _scale_to_peak(excess[c], n, scaled)
        sigma, xi = scale[c] / peak, shape[c]
        nll_hat = _derivatives(scaled, n, sigma, xi)[0]
        for k in range(log_m.shape[0]):
            big_l = log_m[k, c]
            if not big_l > 0.0:
                continue
            v_hat = math.log(sigma * intervals.level_factor(xi, big_l)[0])
            target = nll_hat + half_chi2
            step = first_step[k, c]
            lower[k, c] = peak * math.exp(_end(scaled, n, v_hat, xi, big_l, target, -1.0, step))
            upper[k, c] = peak * math.exp(_end(scaled, n, v_hat, xi, big_l, target, 1.0, step))


def return_level_intervals(excess: np.ndarray, count: np.ndarray, threshold: np.ndarray, scale: np.ndarray,
                           shape: np.ndarray, nll: np.ndarray, rate: np.ndarray, periods: tuple[float, ...],
                           npy: float, request: intervals.Request) -> intervals.Intervals:
    """Confidence intervals of each row's return levels (``request.method``: normal or profile; the threshold and
    the rate are taken as known) and the standard errors of scale and shape. Rows without an estimate, on the
    shape's boundary (no regular maximum) or with a period shorter than the mean time between exceedances
    give NaN; a profile end that does not exist is infinite."""
    excess = np.ascontiguousarray(excess, dtype=np.float64)
    count = np.ascontiguousarray(count, dtype=np.int64)
    scale, shape = np.asarray(scale, dtype=np.float64), np.asarray(shape, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_m = np.log(np.multiply.outer(np.asarray(periods, dtype=float) * npy, rate))
    regular = np.isfinite(scale) & (shape > XI_MIN)
    covariance = intervals.invert(np.where(regular[:, None, None], information(excess, count, scale, shape), np.nan))
    levels = np.stack([return_level(threshold, scale, shape, rate, period, npy) for period in periods]) \
        if len(periods) else np.empty((0, scale.size))
    lower, upper = np.full(levels.shape, np.nan), np.full(levels.shape, np.nan)
    for k in range(len(periods)):  # the delta method: the normal interval, and the profile's first tries
        g, g1 = intervals.level_factors(shape, np.where(log_m[k] > 0.0, log_m[k], np.nan))
        gradient = np.stack([g, scale * g1], axis=1)  # dz/dsigma, dz/dxi
        lower[k], upper[k] = intervals.delta_bounds(levels[k], gradient, covariance, request.normal_quantile)
    if request.method == "profile":
        with np.errstate(invalid="ignore", divide="ignore"):
            first_step = np.nan_to_num((upper - levels) / (levels - threshold), nan=0.0)
        above_low, above_high = np.full(levels.shape, np.nan), np.full(levels.shape, np.nan)
        _profile_all(excess, count, np.where(regular, scale, np.nan), shape, np.ascontiguousarray(log_m),
                     request.half_chi2, np.ascontiguousarray(first_step), above_low, above_high)
        lower, upper = threshold + above_low, threshold + above_high
    return intervals.Intervals(lower, upper, intervals.standard_errors(covariance, PARAMETERS))
