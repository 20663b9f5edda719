r"""Confidence intervals of the GEV return level of block maxima (:func:`return_level_intervals`,
:mod:`climio.eva.intervals`), :math:`z = \mu + \sigma g(\xi)`, :math:`g = (e^{\xi L} - 1)/\xi`,
:math:`L = -\log(-\log(1 - 1/T))`.
``normal``: the delta method with the exact observed information (:func:`information`: the analytic
Hessian of :math:`-\log L` in :math:`(\mu, \sigma, \xi)`, its shape derivatives through the series of
``PHI``/``PSI`` near :math:`\xi y = 0`, so :math:`\xi = 0` is an ordinary point). ``profile``: the levels
whose profile :math:`p(z) = \min_{\sigma, \xi} -\log L(z - \sigma g(\xi), \sigma, \xi)` is within half the
:math:`\chi^2_1` quantile of the maximum, each end solved per cell to a relative 1e-13 (the delta method is
symmetric about a right-skewed estimate and under-covers long periods: the profile is the default). The
inner minimum is Newton's method in :math:`(q, \xi)`, :math:`q` the fitted 10 % quantile, where
:math:`-\log L` at a fixed level is nearly round (in :math:`(\log\sigma, \xi)` its valley is narrow and
curved); by the envelope theorem :math:`p'(z) = \partial(-\log L)/\partial\mu` there, and the end is
Newton's root of the signed root :math:`\sqrt{2(p - \hat p)}` in :math:`\log(z - \hat q)`, nearly
linear even for heavy tails. The inner minimum can have several basins in small samples: at each end
a grid over the shape (pruned by the fit's own profile over :math:`\xi`, a lower bound) looks for a
better one, and the end moves out until none is.

The fit whose estimates these intervals surround is :mod:`climio.eva.gev`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numba
import numpy as np

from climio.eva import gpd, intervals, vecmath
from climio.eva.gev import (BOUND_TOLERANCE, GRID_XI, PARAMETERS, XI_MAX, XI_MIN, XI_ZERO, _grid_profile,
                           return_level, scale_to_range, terms)

# shapes checked at each end (XI_MIN: its closed form; two more next to it, where small samples of bounded tails
# can have a minimum just inside the corner at xi = -1 as well as the corner)
PROFILE_GRID = np.concatenate([[XI_MIN, -0.98, -0.95], GRID_XI])
PROFILE_SPAN = 1e12  # ends searched within this many times (level - its fitted 10 % quantile); beyond: infinite
PROFILE_TOLERANCE = 1e-13  # an end's relative step (scaled units, at least 1) at convergence
PROFILE_RESTARTS = 8  # better basins found by the grid at an end, each moving the end outward
PROFILE_ITERATIONS = 200  # outer steps on the level per end (each at least halves a bracket once it has one)
GUARD_MARGIN = 1.0  # grid minima of other basins within this of the profile are polished before an end is kept
GUARD_SAME = 1e-3  # ... and of the search's own basin, those below the profile by more than this
BOUND_SLACK = 0.01  # the fit's profile at a shape (a lower bound there) is solved to well within this
INNER_ITERATIONS = 60  # Newton steps (and halvings) of one inner search
INNER_DECREMENT = 1e-16  # Newton's decrement, relative to |-log L| + n, at which the inner search stops
INNER_NOISE = 1e-10  # ... and below which a step that does not descend is rounding: the search stops
INNER_MODEL = 1e-11  # ... and below which Newton's last step is taken on its model, not evaluated
INNER_STEP_XI = 0.5  # the largest inner step in the shape ...
INNER_STEP_S = 2.0  # ... and in log(sigma - its least) in the grid's searches
INNER_STEP_Q = 1.0  # ... and in the low quantile q (scaled maxima)
INNER_MARGIN = 0.1  # an inner search that would start at a negative scale starts at this one (scaled maxima)
INNER_GROWTH = 0.025  # ... and one outside the support at 1 + this times 2, 4, 8... the scale
PREDICTOR_XI = 0.3  # the largest change of the shape ...
PREDICTOR_Q = 0.5  # ... and of the low quantile the predictor makes from one level to the next
BELOW_SPAN = 50.0  # a lower end searched to e^-this of the way to the anchor goes on below it, in z
BASE_RATIO = 0.25  # an inner search starts from the optimum outside the interval if that is this much nearer
OUT_TRUST = 1.0  # ... and the profile there is within this of the target (far above it: perhaps another basin)
GROWTH = 10.0  # unbracketed, the search moves out at most this many times as far (in w) ...
GROWTH_LOG = 3.0  # ... and at most this much further in log(z - anchor)
LOW_L = -math.log(-math.log(0.1))  # the inner search's second parameter: the 10 % quantile (L of 1 - 1/T = 0.1)
GRID_STEP = 0.05  # the grid's searches stop on a step below this (their values: only a guide)


@numba.njit(**gpd.DETERMINISTIC)
def _point(x: np.ndarray, n: int, mu: float, sigma: float, xi: float
           ) -> tuple[float, float, float, float, float, float, float, float, float, float]:
    r"""-log L of x[:n] at (mu, sigma, xi), its gradient and its Hessian, exactly:
    (F, F_mu, F_sigma, F_xi, F_mumu, F_musigma, F_muxi, F_sigmasigma, F_sigmaxi, F_xixi); F = inf outside the
    support (or where a term overflows).

    Per maximum, with y = (x - mu)/sigma, u = xi y, w = 1 + u, A = log(w)/xi, t = e^-A, the term is
    log sigma + h, h = log w + A + t, and
    h_y = (1 + xi - t)/w, h_yy = (1 + xi)(t - xi)/w^2, A_xi = y^2 phi(u), A_xixi = -y^3 psi(u),
    h_xi = y/w + A_xi (1 - t), h_xixi = -y^2/w^2 + A_xixi (1 - t) + t A_xi^2,
    h_yxi = (1 - y (1 - t))/w^2 + t A_xi/w; then by y_mu = -1/sigma, y_sigma = -y/sigma:
    F_mu = -sum h_y/sigma, F_sigma = (n - sum y h_y)/sigma, F_mumu = sum h_yy/sigma^2,
    F_musigma = sum (h_y + y h_yy)/sigma^2, F_sigmasigma = (-n + sum (2 y h_y + y^2 h_yy))/sigma^2,
    F_muxi = -sum h_yxi/sigma, F_sigmaxi = -sum y h_yxi/sigma. phi and psi (the xi derivatives of log(w)/xi
    over y^2 and y^3) come from their series near u = 0, so xi = 0 is an ordinary point.
    """
    if abs(xi) < XI_ZERO:
        xi = XI_ZERO
    inverse_s = 1.0 / sigma
    inverse_xi = 1.0 / xi
    sh = sy = syy = shyy = syhyy = syyhyy = sx = sxx = syx = syyx = 0.0
    outside = 0.0
    for i in range(n):
        y, w, h, hy, hyy, hx, hxx, hyx = terms(x[i], mu, inverse_s, xi, inverse_xi)
        sh += h
        sy += hy
        syy += y * hy
        shyy += hyy
        syhyy += y * hyy
        syyhyy += y * y * hyy
        sx += hx
        sxx += hxx
        syx += hyx
        syyx += y * hyx
        outside += 1.0 if w <= 0.0 else 0.0  # (a min over w would keep the loop from vectorizing)
    f = n * math.log(sigma) + sh
    if not (outside == 0.0 and sigma > 0.0 and f < math.inf):
        nan = math.nan
        return math.inf, nan, nan, nan, nan, nan, nan, nan, nan, nan
    s2 = inverse_s * inverse_s
    return (f, -sy * inverse_s, (n - syy) * inverse_s, sx, shyy * s2, (syhyy + sy) * s2, -syx * inverse_s,
            (-n + syyhyy + 2.0 * syy) * s2, -syyx * inverse_s, sxx)


@numba.njit(**gpd.DETERMINISTIC)
def _point_location_scale(x: np.ndarray, n: int, mu: float, sigma: float, xi: float
                          ) -> tuple[float, float, float, float, float, float]:
    """-log L and its derivatives in (mu, sigma) only, as :func:`_point` (the grid's cheaper pass):
    (F, F_mu, F_sigma, F_mumu, F_musigma, F_sigmasigma)."""
    if abs(xi) < XI_ZERO:
        xi = XI_ZERO
    inverse_s = 1.0 / sigma
    inverse_xi = 1.0 / xi
    sh = sy = syy = shyy = syhyy = syyhyy = 0.0
    outside = 0.0
    for i in range(n):
        y = (x[i] - mu) * inverse_s
        w = 1.0 + xi * y
        lg = vecmath.log(w) + (xi * y - (w - 1.0)) / w
        a = lg * inverse_xi
        t = vecmath.exp(-a)
        iw = 1.0 / w
        hy = (1.0 + xi - t) * iw
        hyy = (1.0 + xi) * (t - xi) * iw * iw
        sh += lg + a + t
        sy += hy
        syy += y * hy
        shyy += hyy
        syhyy += y * hyy
        syyhyy += y * y * hyy
        outside += 1.0 if w <= 0.0 else 0.0  # (a min over w would keep the loop from vectorizing)
    f = n * math.log(sigma) + sh
    if not (outside == 0.0 and sigma > 0.0 and f < math.inf):
        return math.inf, math.nan, math.nan, math.nan, math.nan, math.nan
    s2 = inverse_s * inverse_s
    return f, -sy * inverse_s, (n - syy) * inverse_s, shyy * s2, (syhyy + sy) * s2, (-n + syyhyy + 2.0 * syy) * s2


@numba.njit(cache=True)
def _information_all(maxima: np.ndarray, count: np.ndarray, location: np.ndarray, scale: np.ndarray,
                     shape: np.ndarray, out: np.ndarray) -> None:
    for c in range(maxima.shape[0]):
        if count[c] <= 0 or not (scale[c] > 0.0 and math.isfinite(location[c]) and math.isfinite(shape[c])):
            continue
        r = _point(maxima[c], count[c], location[c], scale[c], shape[c])
        if not r[0] < math.inf:
            continue
        _, _, _, _, hmm, hms, hmx, hss, hsx, hxx = r
        out[c, 0, 0], out[c, 0, 1], out[c, 0, 2] = hmm, hms, hmx
        out[c, 1, 0], out[c, 1, 1], out[c, 1, 2] = hms, hss, hsx
        out[c, 2, 0], out[c, 2, 1], out[c, 2, 2] = hmx, hsx, hxx


def information(maxima: np.ndarray, count: np.ndarray, location: np.ndarray, scale: np.ndarray,
                shape: np.ndarray) -> np.ndarray:
    """The observed information of each row's maxima at (location, scale, shape): the exact Hessian of -log L
    in (location, scale, shape), (cells, 3, 3); NaN where there is no estimate or a maximum is outside the
    support."""
    maxima = np.ascontiguousarray(maxima, dtype=np.float64)
    out = np.full((maxima.shape[0], 3, 3), np.nan)
    _information_all(maxima, np.ascontiguousarray(count, dtype=np.int64), np.asarray(location, dtype=np.float64),
                     np.asarray(scale, dtype=np.float64), np.asarray(shape, dtype=np.float64), out)
    return out


@numba.njit(cache=True, error_model="numpy")
def _corner(mean: float, top: float, n: int, z: float, big_l: float) -> tuple[float, float, float, float]:
    """The profile at xi = -1 (maxima scaled, mean and largest given), in closed form: there -log L =
    n log sigma + n e^-L + n (z - mean)/sigma, with sigma >= (top - z) e^L (upper end point at or above the
    largest maximum), least at sigma = max(z - mean, (top - z) e^L). (-log L, log sigma, d/dz, d log sigma/dz)."""
    e = math.exp(-big_l)
    free = z - mean
    edge = (top - z) / e
    if free >= edge:
        return n * math.log(free) + n * e + n, math.log(free), n / free, 1.0 / free
    f = n * math.log(edge) + n * e + n * free / edge
    return f, math.log(edge), n / edge - (n / edge - n * free / (edge * edge)) / e, -1.0 / (e * edge)


@numba.njit(cache=True, error_model="numpy")
def _d(xi: float, big_l: float, low_l: float) -> float:
    """D(xi) = g(xi, L) - g(xi, L_q): sigma = (z - q)/D."""
    return intervals.level_factor(xi, big_l)[0] - intervals.level_factor(xi, low_l)[0]


@numba.njit(cache=True, error_model="numpy")
def _inner(x: np.ndarray, n: int, mean: float, top: float, z: float, big_l: float, low_l: float, q: float,
           xi: float) -> tuple[float, float, float, float, float, float]:
    r"""The profile at level z: min over (q, xi in [XI_MIN, XI_MAX]) of -log L with the return level held at z,
    by Newton's method from (q, xi) (steps capped, the Hessian shifted where it is not positive definite, halved
    until -log L falls; xi held at a bound its gradient pushes against; at xi = XI_MIN the closed form of
    :func:`_corner`). Returns (p, q, xi, dp/dz, dq/dz, dxi/dz): dp/dz = d(-log L)/dmu at the optimum (envelope
    theorem), dq/dz and dxi/dz the optimum's motion (implicit function theorem), the next level's predictor.

    The second parameter is q, the fitted distribution's quantile at L_q = ``low_l`` (its 10 % quantile): with
    both the level and q given, sigma = (z - q)/D(xi), D = g(xi, L) - g(xi, L_q), and mu = z - sigma g(xi, L).
    In (log sigma, xi) the valley of -log L is narrow and curved (correlation 0.9 to 0.999 at the optimum): in
    (q, xi) it is nearly round (|correlation| below 0.3), and Newton's method converges from far further out.
    With v_q, v_xi the derivatives of theta = (mu, sigma, xi) in q and xi, G_q = F'v_q, G_qq = v_q'Hv_q,
    G_qxi = v_q'Hv_xi + F' d2theta/dq dxi, G_xixi = v_xi'Hv_xi + F' d2theta/dxi2, and with e_z = dtheta/dz at
    fixed (q, xi): dp/dz = F'e_z and d(G_q, G_xi)/dz = (v_q'He_z, v_xi'He_z + F' dv_xi/dz).
    """
    xi = min(max(xi, XI_MIN), XI_MAX)
    if not q < z:
        q = z - INNER_MARGIN * _d(xi, big_l, low_l)
    q_ok, xi_ok, f_ok = q, xi, math.inf
    result = (math.inf, q, xi, math.nan, 0.0, 0.0)
    step_q = step_x = decrement = scale = 0.0
    fraction = grow = 1.0
    for _ in range(INNER_ITERATIONS):
        g, g1, g2 = intervals.level_factor(xi, big_l)
        h, h1, h2 = intervals.level_factor(xi, low_l)
        d, d1, d2 = g - h, g1 - h1, g2 - h2
        sigma = (z - q) / d
        if sigma > 0.0:  # mu = z - sigma g = q - sigma h: the second has no cancellation when z is far out
            f, fm, fs, fx, hmm, hms, hmx, hss, hsx, hxx = _point(x, n, q - sigma * h, sigma, xi)
        else:
            f = math.inf
        if not (f < math.inf and f <= f_ok):
            if f_ok == math.inf:
                # a start outside the support (or overflowing): a larger scale brings it inside, but the optimum
                # may be a hair inside the support's edge, so the scale grows slowly at first (5 %, 10 %, 20 %...)
                grow *= 2.0
                q = z - d * (sigma * (1.0 + INNER_GROWTH * grow) if sigma > 0.0 else INNER_MARGIN)
                q_ok = q
                continue
            fraction *= 0.5
            if fraction < (0.25 if decrement <= INNER_NOISE * scale else 1e-12):
                break  # no descent along the step: the last point is the minimum (to rounding, if the step is small)
            q, xi = q_ok + fraction * step_q, min(max(xi_ok + fraction * step_x, XI_MIN), XI_MAX)
            continue
        q_ok, xi_ok, f_ok = q, xi, f
        # theta = (mu, sigma, xi) and its derivatives in q and xi
        sq = -1.0 / d
        sx = -sigma * d1 / d
        mq = g / d
        mx = -g * sx - sigma * g1
        sqx = d1 / (d * d)
        sxx = -sigma * (d2 / d - 2.0 * d1 * d1 / (d * d))
        mqx = -(g * sqx + g1 * sq)
        mxx = -(g * sxx + 2.0 * g1 * sx + sigma * g2)
        gq = fm * mq + fs * sq
        gx = fm * mx + fs * sx + fx
        a_qq = mq * mq * hmm + 2.0 * mq * sq * hms + sq * sq * hss
        a_qx = (mq * mx * hmm + (mq * sx + sq * mx) * hms + sq * sx * hss + mq * hmx + sq * hsx
                + fm * mqx + fs * sqx)
        a_xx = (mx * mx * hmm + 2.0 * mx * sx * hms + sx * sx * hss + 2.0 * (mx * hmx + sx * hsx) + hxx
                + fm * mxx + fs * sxx)
        ez_m, ez_s = 1.0 - g / d, 1.0 / d  # dtheta/dz at fixed (q, xi)
        slope = fm * ez_m + fs * ez_s
        hz_m = ez_m * hmm + ez_s * hms  # (H e_z) by component
        hz_s = ez_m * hms + ez_s * hss
        hz_x = ez_m * hmx + ez_s * hsx
        zq = mq * hz_m + sq * hz_s
        zx = mx * hz_m + sx * hz_s + hz_x - fs * d1 / (d * d) + fm * (g * d1 / (d * d) - g1 / d)
        if xi <= XI_MIN and gx >= 0.0:  # pressed against xi = -1: its closed form is the minimum over sigma
            p, s_c, slope_c, ds_dz = _corner(mean, top, n, z, big_l)
            if p <= f:
                sigma_c = math.exp(s_c)
                return p, z - sigma_c * d, XI_MIN, slope_c, 1.0 - d * sigma_c * ds_dz, 0.0
        fixed = (xi <= XI_MIN and gx >= 0.0) or (xi >= XI_MAX and gx <= 0.0)
        det = a_qq * a_xx - a_qx * a_qx
        if fixed:
            curvature = a_qq if a_qq > 0.0 else abs(gq) + 1.0
            step_q, step_x = -gq / curvature, 0.0
            dq_dz, dx_dz = -zq / curvature, 0.0
        else:
            if a_qq > 0.0 and det > 0.0:
                dq_dz = -(a_xx * zq - a_qx * zx) / det
                dx_dz = -(a_qq * zx - a_qx * zq) / det
            else:  # not convex here: shift the diagonal by more than the lowest eigenvalue's deficit
                dq_dz = dx_dz = 0.0
                half = 0.5 * (a_qq + a_xx)
                lowest = half - math.sqrt(0.25 * (a_qq - a_xx) ** 2 + a_qx * a_qx)
                shift = -lowest + 1e-3 * (abs(a_qq) + abs(a_xx)) + 1e-300
                a_qq += shift
                a_xx += shift
                det = a_qq * a_xx - a_qx * a_qx
            step_q = -(a_xx * gq - a_qx * gx) / det
            step_x = -(a_qq * gx - a_qx * gq) / det
        result = (f, q, xi, slope, dq_dz, dx_dz)
        decrement = -(gq * step_q + gx * step_x)
        scale = abs(f) + n  # -log L's rounding error is a few ulps of this
        if decrement <= INNER_DECREMENT * scale:
            break
        if decrement <= INNER_MODEL * scale and XI_MIN <= xi + step_x <= XI_MAX:
            # Newton's last step, taken on its model (its error is third order in the step, below rounding here):
            # the value falls by half the decrement and the slope moves by its derivatives times the step
            return (f - 0.5 * decrement, q + step_q, xi + step_x, slope + zq * step_q + zx * step_x, dq_dz,
                    dx_dz)
        cap = max(abs(step_q) / INNER_STEP_Q, abs(step_x) / INNER_STEP_XI, 1.0)
        step_q /= cap
        step_x /= cap
        fraction = 1.0
        q, xi = q + step_q, min(max(xi + step_x, XI_MIN), XI_MAX)
    return result


@numba.njit(cache=True, error_model="numpy")
def _best_sigma(x: np.ndarray, n: int, mean: float, top: float, z: float, big_l: float, xi: float, sigma: float
                ) -> float:
    """min over sigma of -log L at level z and shape xi, loosely (a guide for the grid), by Newton's method from
    sigma inside the bracket the slopes give, in u = log(sigma - sigma_0) with sigma_0 the support's edge (0 if
    it has none): there the minimum, often a hair inside the edge, is well scaled (-log L rises like
    (sigma - sigma_0)^(-1/xi) next to it). Returns the least value seen or, once Newton's step is below
    GRID_STEP, the minimum of its model (good to third order in the step)."""
    if xi <= XI_MIN:
        return _corner(mean, top, n, z, big_l)[0]
    g = intervals.level_factor(xi, big_l)[0]
    gap = xi * z if xi > 0.0 else xi * (z - top)
    edge = math.exp(math.log(gap) - xi * big_l) if gap > 0.0 else 0.0
    u = math.log(sigma - edge) if sigma > edge else math.log(edge) - INNER_STEP_S
    lo, hi = -math.inf, math.inf
    best = math.inf
    for _ in range(INNER_ITERATIONS):
        e = math.exp(u)
        sigma = edge + e
        f, fm, fs, hmm, hms, hss = _point_location_scale(x, n, z - sigma * g, sigma, xi)
        if not f < math.inf:  # overflowing (far from the minimum): larger scales
            lo = u
            u = u + INNER_STEP_S if hi == math.inf else 0.5 * (u + hi)
            continue
        best = min(best, f)
        slope = e * (fs - g * fm)
        curvature = e * e * (g * g * hmm - 2.0 * g * hms + hss) + slope
        if slope < 0.0:
            lo = u
        elif slope > 0.0:
            hi = u
        else:
            break
        new = u - slope / curvature if curvature > 0.0 else math.nan
        if abs(new - u) <= GRID_STEP:
            return min(best, f - 0.5 * slope * slope / curvature)
        if not lo < new < hi:
            if lo > -math.inf and hi < math.inf:
                new = 0.5 * (lo + hi)
            else:
                new = u + INNER_STEP_S if slope < 0.0 else u - INNER_STEP_S
        u = new
    return best


@numba.njit(cache=True, error_model="numpy")
def _grid(x: np.ndarray, n: int, mean: float, top: float, z: float, big_l: float, low_l: float, q: float,
          grid: np.ndarray, bound: np.ndarray, ceiling: float, fs: np.ndarray) -> None:
    """fs: the profile's least value over sigma at level z and each grid shape (a guide: see :func:`_best_sigma`),
    each search started at the low quantile q of the inner optimum (which varies little along the valley); where
    the lower bound from the fit's profile is above ``ceiling`` already, that bound."""
    for j in range(grid.size):
        if bound[j] > ceiling:
            fs[j] = bound[j]
        else:
            fs[j] = _best_sigma(x, n, mean, top, z, big_l, grid[j], (z - q) / _d(grid[j], big_l, low_l))


@numba.njit(cache=True, error_model="numpy")
def _end(x: np.ndarray, n: int, mean: float, top: float, big_l: float, low_l: float, z_hat: float, q_hat: float,
         xi_hat: float, p_hat: float, target: float, side: float, first: float, grid: np.ndarray,
         bound: np.ndarray, fs: np.ndarray) -> tuple[float, float, float]:
    """The interval's end on ``side`` (+1 upper, -1 lower) for maxima x scaled to [0, top = 1]: the level z,
    nearest z_hat, where the profile rises to ``target``; (z, q, xi) with the inner optimum there (see
    :func:`_inner`). +-inf when the profile stays below the target out to PROFILE_SPAN times z_hat - q_hat from
    z_hat; NaN if the search fails. ``first``: the normal interval's half-width (the first try is at half of it:
    the profile's lower end is nearer than the normal one, and a try too far out costs more than one too near).

    Newton's method on the signed root r = sqrt(2 (p(z) - p_hat)) to sqrt(2 (target - p_hat)), with dp/dz =
    d(-log L)/dmu at the inner optimum, as a function of w = log(z - q_hat) (q_hat the fitted low quantile of
    :func:`_inner`), in which r is nearly linear on both sides (above, heavy tails make the level grow like
    e^(xi L): in z, r flattens out and Newton's steps fall far short; below, z cannot pass q_hat, where the
    profile is far above any target; should it, the search goes on in z). Steps stay inside the bracket the
    values seen give, widened outwards (at most tenfold in w) until the profile is above the target. Each inner
    search starts from the optimum inside the interval nearest to z (or the one just outside, if much nearer and
    near the target), moved by its derivatives linearly in w, so the search follows one basin out from the
    maximum. At the root a grid over the shape checks that the inner minimum is the global one (polishing every
    grid minimum of another basin that comes near it); an end is returned only where that global minimum is on
    the target: below it, the search goes on outwards."""
    use_log = True
    anchor = q_hat
    w_hat = math.log(z_hat - anchor)
    q_target = math.sqrt(2.0 * (target - p_hat))
    p, q, xi, slope, dq_dz, dx_dz = _inner(x, n, mean, top, z_hat, big_l, low_l, q_hat, xi_hat)
    inside, outside = z_hat, math.nan
    q_in, xi_in, dq_in, dx_in = q, xi, dq_dz, dx_dz  # the optimum at ``inside`` and its motion
    q_out, xi_out, dq_out, dx_out = q, xi, dq_dz, dx_dz  # ... and at ``outside`` (where p - target = f_out)
    f_out = math.inf
    distance = 0.5 * first if 1e-8 < first < PROFILE_SPAN * (z_hat - anchor) else 0.25 * (z_hat - anchor)
    z = z_hat + side * distance
    if not z > anchor:
        z = anchor + 0.5 * (z_hat - anchor)
    on_target = 1e-11 * max(1.0, abs(target))
    for _ in range(PROFILE_RESTARTS):
        converged = False
        for _ in range(PROFILE_ITERATIONS):
            w = math.log(z - anchor) if use_log else z
            # the start: the optimum inside, or at the end outside where that is much nearer (the first is on the
            # path from the maximum; the second may be in another basin, if its inner search was led astray),
            # moved by its derivatives, linearly in w
            near_out = (not math.isnan(outside) and abs(z - outside) < BASE_RATIO * abs(z - inside)
                        and f_out < OUT_TRUST)
            base = outside if near_out else inside
            if near_out:
                q0, xi0, dq0, dx0 = q_out, xi_out, dq_out, dx_out
            else:
                q0, xi0, dq0, dx0 = q_in, xi_in, dq_in, dx_in
            dz = (base - anchor) * math.log((z - anchor) / (base - anchor)) if use_log else z - base
            q_start = q0 + min(max(dq0 * dz, -PREDICTOR_Q), PREDICTOR_Q)
            xi_start = xi0 + min(max(dx0 * dz, -PREDICTOR_XI), PREDICTOR_XI)
            p, q, xi, slope, dq_dz, dx_dz = _inner(x, n, mean, top, z, big_l, low_l, q_start, xi_start)
            f = p - target
            if f >= 0.0:
                outside, f_out = z, f
                q_out, xi_out, dq_out, dx_out = q, xi, dq_dz, dx_dz
            else:
                inside = z
                q_in, xi_in, dq_in, dx_in = q, xi, dq_dz, dx_dz
            r = math.sqrt(2.0 * max(p - p_hat, 0.0))
            jacobian = z - anchor if use_log else 1.0  # dz/dw
            w_new = math.nan
            if side * slope > 0.0:
                w_new = w - (r * (r - q_target) if r > 0.0 else f) / (slope * jacobian)
            new = anchor + math.exp(w_new) if use_log else w_new
            tol = PROFILE_TOLERANCE * max(1.0, abs(z))
            if abs(f) <= on_target and abs(new - z) <= tol:  # on the target, and Newton's next step is below tol
                converged = True
                break
            if math.isnan(outside):
                if abs(z - z_hat) >= PROFILE_SPAN * (z_hat - anchor):  # below the target at the far end: no end
                    return side * math.inf, q, xi
                now = side * (w - w_hat)  # how far out, in w
                ahead = side * (w_new - w_hat)
                if not ahead > now:
                    ahead = 2.0 * now
                ahead = min(ahead, GROWTH * now, now + GROWTH_LOG if use_log else math.inf)
                if use_log and side < 0.0 and ahead > BELOW_SPAN:
                    # still below the target next to the anchor: on in z, below it (never seen in practice)
                    use_log, w_hat, ahead = False, z_hat, 2.0 * (z_hat - z)
                w_new = w_hat + side * ahead
                if use_log:
                    new = min(anchor + math.exp(w_new), z_hat + PROFILE_SPAN * (z_hat - anchor))
                else:
                    new = max(w_new, z_hat - PROFILE_SPAN * (z_hat - anchor))
            else:
                low, high = min(inside, outside), max(inside, outside)
                if high - low <= tol:
                    converged = True
                    break
                if not low < new < high:
                    new = anchor + math.sqrt((low - anchor) * (high - anchor)) if use_log else 0.5 * (low + high)
            z = new
        if not converged:
            return math.nan, math.nan, math.nan
        # the inner minimum at the root must be the global one: a grid over the shape, and a polish of every
        # grid minimum of another basin that comes near (or below) the profile
        _grid(x, n, mean, top, z, big_l, low_l, q, grid, bound, p + GUARD_MARGIN + BOUND_SLACK, fs)
        for j in range(grid.size):
            if not fs[j] < p + GUARD_MARGIN:
                continue
            if (j > 0 and fs[j - 1] < fs[j]) or (j < grid.size - 1 and fs[j + 1] < fs[j]):
                continue  # not a grid minimum
            around = (j == 0 or grid[j - 1] <= xi) and (j == grid.size - 1 or xi <= grid[j + 1])
            if around and fs[j] >= p - GUARD_SAME:
                continue  # the grid's view of the basin the search is in
            p2, q2, xi2, slope2, dq2, dx2 = _inner(x, n, mean, top, z, big_l, low_l, q, grid[j])
            if p2 < p - 1e-9 * max(1.0, abs(p)):
                p, q, xi, slope, dq_dz, dx_dz = p2, q2, xi2, slope2, dq2, dx2
        if abs(p - target) <= 1e3 * on_target:
            return z, q, xi
        # not on the target: a better basin at the root, or the bracket closed on a level whose inner search was
        # wrong. Below the target the root is inside the interval: search on outwards from it
        if p < target:
            inside, outside = z, math.nan
            q_in, xi_in, dq_in, dx_in = q, xi, dq_dz, dx_dz
            if use_log:
                w = math.log(z - anchor)
                z = min(anchor + math.exp(w_hat + 1.5 * (w - w_hat) + side * 1e-8),
                        z_hat + PROFILE_SPAN * (z_hat - anchor))
            else:
                z = z_hat + side * min(1.5 * abs(z - z_hat) + 1e-8, PROFILE_SPAN * (z_hat - anchor))
        else:
            outside, f_out = z, p - target
            q_out, xi_out, dq_out, dx_out = q, xi, dq_dz, dx_dz
            z = anchor + math.sqrt((inside - anchor) * (outside - anchor)) if use_log else 0.5 * (inside + outside)
    return math.nan, math.nan, math.nan


@numba.njit(cache=True)
def _profile_all(maxima: np.ndarray, count: np.ndarray, location: np.ndarray, scale: np.ndarray, shape: np.ndarray,
                 nll: np.ndarray, big_l: np.ndarray, half_chi2: float, first: np.ndarray, grid: np.ndarray,
                 lower: np.ndarray, upper: np.ndarray, optima: np.ndarray) -> None:
    """Each fitted cell's interval ends (periods, cells), and the inner optimum (mu, sigma, xi) at each
    (2, 3, periods, cells); ``first`` (periods, cells): the normal approximation's half-width."""
    x = np.empty(maxima.shape[1])
    d = np.empty(maxima.shape[1])
    fs = np.empty(grid.size)
    ss = np.empty(grid.size)
    bound = np.empty(grid.size)
    for c in range(maxima.shape[0]):
        n = count[c]
        if n <= 0 or not (scale[c] > 0.0 and math.isfinite(location[c]) and math.isfinite(nll[c])
                          and shape[c] - XI_MIN > BOUND_TOLERANCE and shape[c] <= XI_MAX):
            continue
        low, spread = scale_to_range(maxima[c], n, x)
        if not spread > 0.0:
            continue
        mean = 0.0
        for i in range(n):
            mean += x[i]
        mean /= n
        sigma, xi = scale[c] / spread, shape[c]
        mu = (location[c] - low) / spread
        p_hat = nll[c] - n * math.log(spread)
        _grid_profile(x, d, n, grid, bound, ss)  # the fit's profile: a lower bound of the level's
        for k in range(big_l.size):
            if not math.isfinite(big_l[k]):
                continue
            low_l = min(LOW_L, big_l[k] - 1.0)
            z_hat = mu + sigma * intervals.level_factor(xi, big_l[k])[0]
            q_hat = mu + sigma * intervals.level_factor(xi, low_l)[0]
            step = first[k, c] / spread
            for side, out in ((-1.0, lower), (1.0, upper)):
                z, q, xi_end = _end(x, n, mean, 1.0, big_l[k], low_l, z_hat, q_hat, xi, p_hat, p_hat + half_chi2,
                                    side, step, grid, bound, fs)
                out[k, c] = low + spread * z
                if not math.isfinite(z):
                    continue
                j = 0 if side < 0.0 else 1
                sigma_end = (z - q) / _d(xi_end, big_l[k], low_l)
                optima[j, 0, k, c] = low + spread * (q - sigma_end * intervals.level_factor(xi_end, low_l)[0])
                optima[j, 1, k, c] = spread * sigma_end
                optima[j, 2, k, c] = xi_end


def _big_l(period_blocks: Sequence[float]) -> np.ndarray:
    """L = -log(-log(1 - 1/T)) per period (NaN where T <= 1 block)."""
    periods = np.asarray(period_blocks, dtype=np.float64).reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        big_l = -np.log(-np.log1p(-1.0 / periods))
    return np.where(periods > 1.0, big_l, np.nan)


def _normal(maxima: np.ndarray, count: np.ndarray, location: np.ndarray, scale: np.ndarray, shape: np.ndarray,
            period_blocks: Sequence[float], quantile: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The delta method: (levels, lower, upper), (periods, cells), and the covariance (cells, 3, 3); NaN for rows
    without an estimate, at a bound of the shape, or whose information is not positive definite."""
    cells = maxima.shape[0]
    big_l = _big_l(period_blocks)
    with np.errstate(invalid="ignore"):
        regular = (np.isfinite(location) & (scale > 0.0) & (shape - XI_MIN > BOUND_TOLERANCE)
                   & (XI_MAX - shape > BOUND_TOLERANCE))
    covariance = intervals.invert(np.where(regular[:, None, None], information(maxima, count, location, scale, shape),
                                           np.nan))
    levels = np.full((big_l.size, cells), np.nan)
    lower, upper = np.full(levels.shape, np.nan), np.full(levels.shape, np.nan)
    for k in range(big_l.size):
        if not np.isfinite(big_l[k]):
            continue
        levels[k] = return_level(location, scale, shape, float(period_blocks[k]))
        g, g1 = intervals.level_factors(shape, np.full(cells, big_l[k]))
        gradient = np.stack([np.ones(cells), g, scale * g1], axis=1)  # dz/dmu, dz/dsigma, dz/dxi
        lower[k], upper[k] = intervals.delta_bounds(levels[k], gradient, covariance, quantile)
    return levels, lower, upper, covariance


def profile_ends(maxima: np.ndarray, count: np.ndarray, location: np.ndarray, scale: np.ndarray, shape: np.ndarray,
                 nll: np.ndarray, period_blocks: Sequence[float], half_chi2: float,
                 first: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The profile-likelihood interval of each return level (see :func:`return_level_intervals`): (lower, upper),
    (periods, cells), and the inner optimum (location, scale, shape) at each end, (2, 3, periods, cells) (lower
    end first). ``first``: the distance of each search's first try from the level (by default the normal
    interval's half-width at the same level; where that is not finite, half the scale). NaN for rows without an
    estimate or at xi = -1."""
    maxima = np.ascontiguousarray(maxima, dtype=np.float64)
    count = np.ascontiguousarray(count, dtype=np.int64)
    location, scale, shape, nll = (np.ascontiguousarray(a, dtype=np.float64) for a in (location, scale, shape, nll))
    cells = maxima.shape[0]
    big_l = _big_l(period_blocks)
    lower, upper = np.full((big_l.size, cells), np.nan), np.full((big_l.size, cells), np.nan)
    optima = np.full((2, 3, big_l.size, cells), np.nan)
    if first is None:
        levels, _, high, _ = _normal(maxima, count, location, scale, shape, period_blocks,
                                     math.sqrt(2.0 * half_chi2))
        first = high - levels
    with np.errstate(invalid="ignore"):
        first = np.where(np.asarray(first) > 0.0, first, 0.5 * scale)
    first = np.ascontiguousarray(np.nan_to_num(np.broadcast_to(first, lower.shape), nan=0.0, posinf=0.0))
    _profile_all(maxima, count, location, scale, shape, nll, big_l, float(half_chi2), first, PROFILE_GRID, lower,
                 upper, optima)
    return lower, upper, optima


def return_level_intervals(maxima: np.ndarray, count: np.ndarray, location: np.ndarray, scale: np.ndarray,
                           shape: np.ndarray, nll: np.ndarray, period_blocks: Sequence[float],
                           request: intervals.Request) -> intervals.Intervals:
    """Confidence intervals of each row's return levels for periods of ``period_blocks`` blocks
    (``request.method``: normal or profile), (periods, cells), and the standard errors of location, scale and
    shape from the inverse observed information (whichever the method).

    Rows as for :func:`fit`, with its estimates. ``normal``: NaN for rows without an estimate, at a bound of the
    shape (-1 or XI_MAX, to within BOUND_TOLERANCE) or whose information is not positive definite. ``profile``:
    NaN for rows without an estimate or at xi = -1 (no regular maximum); computed at xi = XI_MAX (the maximum over
    the region, shapes held to it), and where the information is not positive definite. An end the profile does
    not reach within PROFILE_SPAN ranges of the maxima from the level is +inf (upper) or -inf (lower): the data do
    not bound the level there. Periods of at most one block have no level: NaN.
    """
    maxima = np.ascontiguousarray(maxima, dtype=np.float64)
    count = np.ascontiguousarray(count, dtype=np.int64)
    location, scale, shape, nll = (np.ascontiguousarray(a, dtype=np.float64) for a in (location, scale, shape, nll))
    levels, lower, upper, covariance = _normal(maxima, count, location, scale, shape, period_blocks,
                                               request.normal_quantile)
    if request.method == "profile":  # its first tries at the normal interval's half-width
        lower, upper, _ = profile_ends(maxima, count, location, scale, shape, nll, period_blocks, request.half_chi2,
                                       upper - levels)
    return intervals.Intervals(lower, upper, intervals.standard_errors(covariance, PARAMETERS))
