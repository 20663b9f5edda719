r"""Generalized Pareto maximum likelihood for many cells at once.

For excesses :math:`e_1..e_n > 0`, scale :math:`\sigma > 0` and shape :math:`\xi`,

.. math::

    -\log L(\sigma, \xi) = n \log\sigma + (1 + 1/\xi) \sum_i \log(1 + \xi e_i/\sigma),
    \qquad 1 + \xi e_i/\sigma > 0,

with the exponential limit :math:`n\log\sigma + \sum e_i/\sigma` as :math:`\xi \to 0`.

**Profile likelihood** (Grimshaw 1993). With :math:`\theta = \xi/\sigma` the best
shape for a given :math:`\theta` is :math:`\xi(\theta) = \frac1n\sum\log(1+\theta e_i)`,
so the search is one-dimensional: :math:`-\log L/n = \log\sigma(\theta) + \xi(\theta) + 1`,
:math:`\sigma(\theta) = \xi(\theta)/\theta`. Excesses are scaled by the cell's largest,
:math:`t = \theta\max e \in (-1, \infty)`, and the search runs in :math:`s = \log(1+t)`,
so that shapes near -1 (``t`` near -1) keep full precision:
:math:`1 + t e = (1-e) + e\,e^s`. Near :math:`t = 0` (the exponential limit)
:math:`\sigma = \frac1n\sum e\,g(te)`, :math:`g(x) = \log(1+x)/x`, is taken from
its Taylor series, so :math:`\xi \to 0` is an ordinary point.

**The true maximum.** The profile is evaluated on a grid of ``s`` covering shapes
from -1 to beyond 3 for any sample size; the lowest grid point brackets the
global minimum, and a safeguarded Newton iteration (bisection whenever a step
leaves the bracket or the curvature is not positive), started at the vertex of
the parabola through the three grid points around the best, polishes it to
machine precision (about 4 iterations). The result is never worse than the best
grid point.

**Non-regular region.** For :math:`\xi < -1` the likelihood is unbounded
(:math:`\sigma \to -\xi\max e`), so fits are restricted to :math:`\xi \ge -1`.
On that boundary the best scale is :math:`\max e` (a uniform density), with
:math:`-\log L = n\log\max e`; it is returned, flagged ``at_bound``, when it beats
every interior point. The search in ``s`` ends ``S_REACH`` beyond the grid: the profile can
still fall there only where several excesses are below about :math:`e^{-36}` of the largest
(values a rounding error above the threshold), and an estimate on that end, not a maximum,
is flagged ``at_bound`` too (the end itself taken when it is at least as good).

The kernel is compiled with numba, one cell at a time with no temporaries (the
numpy formulation spent ~90 ns per excess and grid point in temporaries). Its
sums over the excesses are vectorized loops around :func:`climio.eva.vecmath.log`:
libm's scalar log made them cost ~1.1 ns per excess and grid point, now ~0.5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from climio.eva import vecmath

PARAMETERS = ("scale", "shape")  # the excesses' distribution: the threshold is the method's
XI_MIN = -1.0
SERIES_T = 0.02  # |t| below this: sigma and its derivatives from the Taylor series of g
SERIES_TERMS = 14  # 0.02**14 is far below double precision
# Taylor coefficients of g(x) = log1p(x)/x = sum (-1)^k x^k/(k+1), of g' and of g'', by power of x
G_SERIES = np.array([[(-1) ** (k + d) * math.prod(range(k + 1, k + 1 + d)) / (k + 1 + d) for k in range(SERIES_TERMS)]
                     for d in range(3)])
NEWTON_ITERATIONS = 80
NEWTON_STEP = 1e-10  # relative step below which Newton has converged
GRID_S = np.concatenate([np.linspace(-36.0, -1.0, 15), np.linspace(-0.6, 0.6, 5), np.linspace(1.0, 16.0, 11)])
S_REACH = 20.0  # the search goes this far in s beyond the grid's ends
# Newton bisects where its step leaves the bracket and stops on a relative step of NEWTON_STEP: where the profile
# falls all the way to the top of the search (s = GRID_S[-1] + S_REACH) it stops up to one such step short of it.
# An estimate within twice that (relative to s; to |xi| = 1 at xi = -1) of an end is on it to the search's precision.
BOUND_TOLERANCE = 2.0 * NEWTON_STEP


@dataclass(frozen=True)
class Fit:
    """Per-cell maximum likelihood estimates (NaN where a cell had no excesses)."""

    scale: np.ndarray
    shape: np.ndarray
    nll: np.ndarray  # negative log-likelihood of the excesses at the estimate
    at_bound: np.ndarray  # the estimate is on xi = -1 or the top of the search in s, to within BOUND_TOLERANCE


# The sums over excesses are the whole cost of a fit: let LLVM vectorize them (reassociated sums, fused
# multiply-adds, no Python division checks) around the vectorizable log. Each cell's result depends only on
# its own excesses, so it is the same whichever rank fits it.
VECTOR = {"cache": True, "error_model": "numpy", "fastmath": {"reassoc", "contract"}}
# ... but no fused multiply-adds where a search starts from the sums: whether LLVM fuses can depend on how a
# function was compiled (in the process, or loaded from numba's cache: measured on the GEV profile and the
# trend fits), and a search turns a last-bit difference into a different stopping point, so a cell would not
# come out bit for bit the same on every rank.
DETERMINISTIC = {"cache": True, "error_model": "numpy", "fastmath": {"reassoc"}}


@numba.njit(inline="always", error_model="numpy")
def _g_series(x: float) -> tuple[float, float, float]:
    """g(x) = log1p(x)/x and its first two derivatives, by Taylor series (|x| small)."""
    g = g1 = g2 = 0.0
    for k in range(SERIES_TERMS - 1, -1, -1):
        g = g * x + G_SERIES[0, k]
        g1 = g1 * x + G_SERIES[1, k]
        g2 = g2 * x + G_SERIES[2, k]
    return g, g1, g2


LOW_W = 0.6  # below this w = 1 + t (s below about -0.5), 1 + t e is formed as (1 - e) + e w


@numba.njit(inline="always")
def _one_plus_te(e: float, t: float, w: float) -> float:
    """1 + t e, accurately also for t near -1."""
    return (1.0 - e) + e * w if w < LOW_W else 1.0 + e * t


@numba.njit(**VECTOR)
def _sum_log(e: np.ndarray, n: int, t: float, w: float) -> float:
    """sum log(1 + t e_i): from (1 - e) + e w when t is near -1 (w = 1 + t), else as log1p(t e)."""
    total = 0.0
    if w < LOW_W:
        for i in range(n):
            total += vecmath.log(_one_plus_te(e[i], t, w))
    else:  # log1p(y) = log(u) + (y - (u - 1)) / u with u = 1 + y rounded
        for i in range(n):
            y = e[i] * t
            u = 1.0 + y
            total += vecmath.log(u) + (y - (u - 1.0)) / u
    return total


@numba.njit(**VECTOR)
def _sum_ratios(e: np.ndarray, n: int, t: float, w: float) -> tuple[float, float]:
    """sum r_i and sum r_i^2 with r = e / (1 + t e)."""
    first = second = 0.0
    for i in range(n):
        r = e[i] / _one_plus_te(e[i], t, w)
        first += r
        second += r * r
    return first, second


@numba.njit(**VECTOR)
def _sum_series(e: np.ndarray, n: int, t: float) -> tuple[float, float, float]:
    """sum e g(t e), sum e^2 g'(t e), sum e^3 g''(t e)."""
    a = b = c = 0.0
    for i in range(n):
        g, g1, g2 = _g_series(t * e[i])
        a += e[i] * g
        b += e[i] * e[i] * g1
        c += e[i] * e[i] * e[i] * g2
    return a, b, c


@numba.njit(cache=True, error_model="numpy")
def _profile(s: float, e: np.ndarray, n: int, derivatives: bool) -> tuple[float, float, float, float, float]:
    """Profile f = -log L/n at s = log(1+t), with xi, sigma (scaled), df/ds and d2f/ds2."""
    w = math.exp(s)
    t = math.expm1(s)
    xi = _sum_log(e, n, t, w) / n
    series = abs(t) < SERIES_T
    if series:
        sig, dsig, d2sig = _sum_series(e, n, t)
        sig, dsig, d2sig = sig / n, dsig / n, d2sig / n
    else:
        sig = xi / t
    f = math.log(sig) + xi + 1.0 if sig > 0 else math.inf
    if not derivatives:
        return f, xi, sig, 0.0, 0.0
    dxi, d2xi = _sum_ratios(e, n, t, w)
    dxi, d2xi = dxi / n, -d2xi / n
    if series:
        df = dsig / sig + dxi
        d2f = d2sig / sig - (dsig / sig) ** 2 + d2xi
    else:
        df = dxi / xi - 1.0 / t + dxi
        d2f = d2xi / xi - (dxi / xi) ** 2 + 1.0 / (t * t) + d2xi
    # chain rule to s: dt/ds = w
    return f, xi, sig, df * w, d2f * w * w + df * w


@numba.njit(cache=True, error_model="numpy")
def _start(grid: np.ndarray, fs: np.ndarray, j: int, lo: float, hi: float) -> float:
    """Newton's first point: the vertex of the parabola through grid points j-1, j, j+1 if it lies between."""
    if not (0 < j < grid.size - 1 and fs[j - 1] < math.inf and fs[j + 1] < math.inf):
        return grid[j]
    a, b, c = grid[j - 1], grid[j], grid[j + 1]
    num = (b - a) ** 2 * (fs[j] - fs[j + 1]) - (b - c) ** 2 * (fs[j] - fs[j - 1])
    den = (b - a) * (fs[j] - fs[j + 1]) - (b - c) * (fs[j] - fs[j - 1])
    vertex = b - 0.5 * num / den if den != 0.0 else b
    return vertex if lo < vertex < hi else b


@numba.njit(cache=True, error_model="numpy")
def _fit_cell(e: np.ndarray, n: int, grid: np.ndarray, fs: np.ndarray) -> tuple[float, float, float, bool]:
    """(scale, shape, -log L/n, at_bound) for excesses e[:n] scaled so that max(e) == 1 (fs: grid scratch)."""
    best_j = -1
    best_f = math.inf
    for j in range(grid.size):
        f, xi, _, _, _ = _profile(grid[j], e, n, False)
        fs[j] = f if xi >= XI_MIN else math.inf
        if fs[j] < best_f:
            best_f = f
            best_j = j
    if best_j < 0:
        return 1.0, XI_MIN, 0.0, True
    top = grid[-1] + S_REACH
    lo = grid[best_j - 1] if best_j > 0 else grid[0] - S_REACH
    hi = grid[best_j + 1] if best_j < grid.size - 1 else top
    s = _start(grid, fs, best_j, lo, hi)
    for _ in range(NEWTON_ITERATIONS):
        _, _, _, df, d2f = _profile(s, e, n, True)
        if df < 0:
            lo = s
        elif df > 0:
            hi = s
        else:
            break
        step = s - df / d2f if d2f > 0 else math.nan
        new = step if lo < step < hi else 0.5 * (lo + hi)
        converged = abs(new - s) <= NEWTON_STEP * max(1.0, abs(s))  # quadratic: new is exact to rounding
        s = new
        if converged:
            break
    f, xi, sig, _, _ = _profile(s, e, n, False)
    if not (xi >= XI_MIN and f <= best_f):
        s = grid[best_j]
        f, xi, sig, _, _ = _profile(s, e, n, False)
    on_top = top - s <= BOUND_TOLERANCE * top
    if on_top:  # still falling at the top of the search: the top itself, if as good
        f_top, xi_top, sig_top, _, _ = _profile(top, e, n, False)
        if f_top <= f:
            f, xi, sig = f_top, xi_top, sig_top
    if not f < 0.0:  # the xi = -1 boundary (sigma = max e, f = 0) is better
        return 1.0, XI_MIN, 0.0, True
    return sig, xi, f, on_top or xi - XI_MIN <= BOUND_TOLERANCE


@numba.njit(inline="always")
def _scale_to_peak(excess: np.ndarray, n: int, scaled: np.ndarray) -> float:
    """scaled[:n] = excess[:n] / max(excess[:n]) (the kernels work on excesses scaled to max 1); the max."""
    peak = 0.0
    for i in range(n):
        peak = max(peak, excess[i])
    for i in range(n):
        scaled[i] = excess[i] / peak
    return peak


@numba.njit(cache=True)
def _fit_all(excess: np.ndarray, count: np.ndarray, grid: np.ndarray,
             scale: np.ndarray, shape: np.ndarray, nll: np.ndarray, at_bound: np.ndarray) -> None:
    scaled = np.empty(excess.shape[1])
    fs = np.empty(grid.size)
    for c in range(excess.shape[0]):
        n = count[c]
        if n <= 0:
            continue
        peak = _scale_to_peak(excess[c], n, scaled)
        sig, xi, f, bound = _fit_cell(scaled, n, grid, fs)
        scale[c] = sig * peak
        shape[c] = xi
        nll[c] = n * (f + math.log(peak))
        at_bound[c] = bound


def fit(excess: np.ndarray, count: np.ndarray) -> Fit:
    """Fit a GPD to each row of ``excess`` (cells, k): its first ``count[i]`` values are the excesses."""
    excess = np.ascontiguousarray(excess, dtype=np.float64)
    count = np.ascontiguousarray(count, dtype=np.int64)
    cells = excess.shape[0]
    out = Fit(np.full(cells, np.nan), np.full(cells, np.nan), np.full(cells, np.nan), np.zeros(cells, bool))
    _fit_all(excess, count, GRID_S, out.scale, out.shape, out.nll, out.at_bound)
    return out


def negative_log_likelihood(excess: np.ndarray, scale: float, shape: float) -> float:
    """-log L of one cell's excesses: the plain formula, independent of the kernel (for checks)."""
    e = np.asarray(excess, dtype=float)
    if scale <= 0:
        return math.inf
    z = 1.0 + shape * e / scale
    if np.any(z <= 0):
        return math.inf
    if shape == 0.0:
        return e.size * math.log(scale) + e.sum() / scale
    return e.size * math.log(scale) + (1.0 + 1.0 / shape) * np.log1p(shape * e / scale).sum()


def return_level(threshold: np.ndarray, scale: np.ndarray, shape: np.ndarray, rate: np.ndarray,
                 period_years: float, npy: float | np.ndarray) -> np.ndarray:
    """u + sigma/xi ((T npy rate)^xi - 1), as u + sigma L expm1(xi L)/(xi L) with L = log(T npy rate)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # rate 0 (no exceedances): NaN results anyway
        log_m = np.log(period_years * np.asarray(npy, dtype=float) * rate)
        x = shape * log_m
        h = np.where(np.abs(x) < 1e-12, 1.0 + x / 2.0, np.expm1(x) / np.where(x == 0, 1.0, x))
        return threshold + scale * log_m * h
