r"""Generalized extreme value maximum likelihood for many cells at once (block maxima).

For maxima :math:`x_1..x_n`, location :math:`\mu`, scale :math:`\sigma > 0` and shape :math:`\xi`,
with :math:`z_i = 1 + \xi (x_i - \mu)/\sigma > 0`,

.. math::

    -\log L = n\log\sigma + (1 + 1/\xi)\sum_i \log z_i + \sum_i z_i^{-1/\xi},

and the Gumbel limit :math:`n\log\sigma + \sum y_i + \sum e^{-y_i}`, :math:`y = (x-\mu)/\sigma`, at
:math:`\xi = 0`.

**Two profiles.** Maxima are scaled to ``[0, 1]`` (``x' = (x - min)/range``) and written
relative to a reference point ``r`` (the smallest maximum for :math:`\xi \ge 0`, the largest
for :math:`\xi < 0`): :math:`d_i = x'_i - r`, so that :math:`\xi d_i \ge 0`. With
:math:`z_i = c\,w_i`, :math:`w_i = 1 + \xi\tau d_i \ge 1` and :math:`c = z(r) > 0`, the
location drops out in closed form (:math:`c^{-1/\xi} = n/\sum w_i^{-1/\xi}`), leaving

.. math::

    Q(\tau; \xi) = -n\log\tau + n\log\Big(\frac1n\sum_i w_i^{-1/\xi}\Big) + n
                  + (1 + 1/\xi)\sum_i \log w_i,

one dimension per shape, smooth through :math:`\xi = 0` (there :math:`\log(w)/\xi \to \tau d`),
with :math:`\sigma = 1/(\tau c)` and :math:`\mu = r - \sigma(c - 1)/\xi`. ``Q`` is unimodal in
:math:`s = \log\tau` (convex for Gumbel; checked on many samples in the tests), so a safeguarded
Newton iteration inside a bracket that it widens until the slope changes sign finds the best
:math:`\tau` for any :math:`\xi`.

**The true maximum.** The profile :math:`P(\xi) = \min_\tau Q` is evaluated on a grid of shapes
from -0.9 to 3, each solve started from its neighbour's :math:`\tau` (the profile can have
several local minima in small samples: the grid finds the best basin). Newton's method in
:math:`(\log\tau, \xi)` with exact second derivatives then polishes the best grid point
inside its bracket, every step a descent, to about 1e-18 in the shape; where it cannot (no
positive curvature, a bracket at the ends of the grid) Brent's minimization over the profile
does, to ``XI_TOLERANCE``. The result is never worse than the best grid point.

**Non-regular region.** For :math:`\xi < -1` the likelihood is unbounded; at :math:`\xi = -1`
its supremum is :math:`n\log(\bar D) + n` (:math:`\bar D` the mean distance below the largest
maximum, upper end point at the largest maximum). At the other end, for large shapes (beyond
:math:`n - 1` at the latest) the likelihood of a small sample is unbounded too, as the lower end
point meets the smallest maximum. Fits are restricted to :math:`-1 \le \xi \le` ``XI_MAX`` (3:
no block maxima of climate data have a heavier tail), and an estimate on either boundary is
returned, flagged ``at_bound``, when it beats every interior point. Brent never evaluates its bracket's ends,
so where the profile falls all the way to a bound it stops just short of it: an estimate within
``BOUND_TOLERANCE`` of a bound is flagged too, and the bound itself taken when it is at least as good.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from climio.eva import vecmath
from climio.eva.gpd import VECTOR

PARAMETERS = ("location", "scale", "shape")
XI_MIN = -1.0
GRID_XI = np.array([-0.9, -0.75, -0.6, -0.45, -0.3, -0.15, 0.0, 0.15, 0.3, 0.45, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0])
XI_MAX = 3.0  # the largest shape searched: beyond some shape (below n - 1) the likelihood has no maximum
XI_ZERO = 1e-100  # shapes closer to 0 are taken as this: the Gumbel limit to rounding
XI_TOLERANCE = 1e-10  # Brent's absolute tolerance on the shape
# Brent stops once its bracket is at most 4 tol wide (tol = XI_TOLERANCE + 1e-12 |xi|, |xi| <= XI_MAX) and never
# evaluates its bracket's ends: where the profile falls all the way to a bound of the region, it stops up to 4 tol
# short of it. An estimate this near XI_MIN or XI_MAX is on that bound to the search's precision.
BOUND_TOLERANCE = 4.0 * (XI_TOLERANCE + 1e-12 * XI_MAX)
S_TOLERANCE = 1e-9  # Newton's relative step on log(tau) at convergence (the last step is quadratic: 1e-18)
POLISH_STEP = 1e-9  # Newton's last step in (log tau, xi) at convergence (the next would be ~1e-18)
GRID_TOLERANCE = 1e-3  # ... on the grid, which only chooses the bracket (its value from Newton's model)
S_LIMIT = 80.0  # |log tau| beyond this: the best tau is at the edge (only as xi -> -1)
NEWTON_ITERATIONS = 100
GOLDEN = 0.5 * (3.0 - math.sqrt(5.0))


@dataclass(frozen=True)
class Fit:
    """Per-cell maximum likelihood estimates (NaN where a cell was not fitted)."""

    location: np.ndarray
    scale: np.ndarray
    shape: np.ndarray
    nll: np.ndarray  # negative log-likelihood of the maxima at the estimate
    at_bound: np.ndarray  # the estimate is on a bound of the region, -1 or XI_MAX, to within BOUND_TOLERANCE


@numba.njit(**VECTOR)
def _sums(d: np.ndarray, n: int, xi: float, tau: float) -> tuple[float, float, float, float]:
    """Q, dQ/dtau, d2Q/dtau2 and log(mean w^(-1/xi)) at (tau, xi), for d[:n] with xi d >= 0."""
    if abs(xi) < XI_ZERO:  # Gumbel: log(w)/xi is tau d to rounding here, and the loop has no branch
        xi = XI_ZERO
    inverse = 1.0 / xi
    t = xi * tau
    # the largest -log(w)/xi, at d = -1 (xi < 0) or d = 0 (xi > 0): the sums of exp are taken below it
    top = math.log1p(-t) / -xi if xi < 0.0 else 0.0
    sum_l = sum_a = s0 = s1 = s2 = q1 = q2 = 0.0
    for i in range(n):
        y = t * d[i]
        w = 1.0 + y
        lg = vecmath.log(w) + (y - (w - 1.0)) / w  # log1p(y)
        a = lg * inverse
        q = d[i] / w
        e = vecmath.exp(-a - top)
        sum_l += lg
        sum_a += a
        s0 += e
        s1 += e * q
        s2 += e * q * q
        q1 += q
        q2 += q * q
    log_mean = top + math.log(s0 / n)
    f = -n * math.log(tau) + n * log_mean + n + sum_l + sum_a
    m1, m2 = s1 / s0, s2 / s0
    df = -n / tau - n * m1 + (1.0 + xi) * q1
    d2f = n / (tau * tau) + n * ((1.0 + xi) * m2 - m1 * m1) - xi * (1.0 + xi) * q2
    return f, df, d2f, log_mean


# Taylor coefficients, by power of y, of phi(y) = (y/(1+y) - log1p(y))/y^2 and
# psi(y) = (y^2/(1+y)^2 + 2y/(1+y) - 2 log1p(y))/y^3: the shape derivatives of log(w)/xi without cancellation
SERIES_Y = 0.1  # below this y, phi and psi from their series (0.1**17 is below double precision)
PHI = np.array([(-1) ** (k + 1) * (k + 1) / (k + 2) for k in range(17)])
PSI = np.array([(-1) ** (k + 1) * (k + 1) * (k + 2) / (k + 3) for k in range(17)])


@numba.njit(inline="always", fastmath={"contract"})
def _phi_psi(y: float) -> tuple[float, float]:
    p = s = 0.0
    for k in range(16, -1, -1):
        p = p * y + PHI[k]
        s = s * y + PSI[k]
    if y >= SERIES_Y:
        w = 1.0 + y
        lg = vecmath.log(w) + (y - (w - 1.0)) / w
        r = y / w
        p = (r - lg) / (y * y)
        s = (r * r + 2.0 * (r - lg)) / (y * y * y)
    return p, s


@numba.njit(**VECTOR)
def _derivatives(d: np.ndarray, n: int, xi: float, tau: float) -> tuple[float, float, float, float, float, float]:
    """Q and its first and second derivatives in (s = log tau, xi): Q, Q_s, Q_xi, Q_ss, Q_sxi, Q_xixi."""
    if abs(xi) < XI_ZERO:
        xi = XI_ZERO
    inverse = 1.0 / xi
    t = xi * tau
    top = math.log1p(-t) / -xi if xi < 0.0 else 0.0
    sum_l = sum_a = s0 = sq = sq2 = sb = sqb = sb2 = sc = q1 = q2 = b1 = c1 = 0.0
    for i in range(n):
        y = t * d[i]
        w = 1.0 + y
        lg = vecmath.log(w) + (y - (w - 1.0)) / w
        a = lg * inverse
        q = d[i] / w
        e = vecmath.exp(-a - top)
        phi, psi = _phi_psi(y)
        td = tau * d[i]
        b = td * td * phi  # d(log(w)/xi)/dxi
        c = td * td * td * psi  # -d2(log(w)/xi)/dxi2
        sum_l += lg
        sum_a += a
        s0 += e
        sq += e * q
        sq2 += e * q * q
        sb += e * b
        sqb += e * q * b
        sb2 += e * b * b
        sc += e * c
        q1 += q
        q2 += q * q
        b1 += b
        c1 += c
    f = -n * math.log(tau) + n * (top + math.log(s0 / n)) + n + sum_l + sum_a
    eq, eq2, eb, eqb, eb2, ec = sq / s0, sq2 / s0, sb / s0, sqb / s0, sb2 / s0, sc / s0
    f_t = -n / tau - n * eq + (1.0 + xi) * q1
    f_x = -n * eb + tau * q1 + b1
    f_tt = n / (tau * tau) + n * ((1.0 + xi) * eq2 - eq * eq) - xi * (1.0 + xi) * q2
    f_tx = n * (tau * eq2 + eqb - eq * eb) + q1 - tau * (1.0 + xi) * q2
    f_xx = n * (ec + eb2 - eb * eb) - tau * tau * q2 - c1
    return f, tau * f_t, f_x, tau * tau * f_tt + tau * f_t, tau * f_tx, f_xx


@numba.njit(cache=True, error_model="numpy")
def _best_tau(d: np.ndarray, n: int, xi: float, s: float, tol: float) -> tuple[float, float]:
    """(min over tau of Q, its log tau) at shape xi, from log tau = s: Newton in s = log tau, kept inside
    the bracket the slopes seen so far give (Q is unimodal in s), and walking downhill in growing steps
    where Newton cannot be trusted (no curvature)."""
    lo, hi = -S_LIMIT, S_LIMIT
    walk = 1.0
    for _ in range(NEWTON_ITERATIONS):
        tau = math.exp(s)
        f, df, d2f, _ = _sums(d, n, xi, tau)
        g = df * tau
        h = d2f * tau * tau + g
        if g < 0.0:
            lo = s
        elif g > 0.0:
            hi = s
        else:
            return f, s
        new = s - g / h if h > 0.0 else s + (walk if g < 0.0 else -walk)
        if h <= 0.0:
            walk *= 2.0
        if not lo < new < hi:
            new = 0.5 * (lo + hi)
        if abs(new - s) <= tol * max(1.0, abs(s)) or hi - lo <= tol * max(1.0, abs(s)):
            if h > 0.0 and new == s - g / h:  # the step's quadratic model: its error is third order in it
                return f - 0.5 * g * g / h, new
            return f, s
        s = new
    return f, s


@numba.njit(cache=True, error_model="numpy")
def _profile(x: np.ndarray, d: np.ndarray, n: int, xi: float, s: float, tol: float = S_TOLERANCE
             ) -> tuple[float, float]:
    """P(xi) and its log tau, with d filled from the scaled maxima x for this side of xi = 0."""
    ref = 1.0 if xi < 0.0 else 0.0
    for i in range(n):
        d[i] = x[i] - ref
    return _best_tau(d, n, xi, s, tol)


@numba.njit(cache=True, error_model="numpy")
def _brent(x: np.ndarray, d: np.ndarray, n: int, a: float, b: float, v0: float, fv0: float, s0: float
           ) -> tuple[float, float, float]:
    """Brent's minimization of P on [a, b] from its best known point v0 (value fv0, log tau s0):
    (xi, P, log tau), never worse than the start."""
    xb = w = v = v0
    fx = fw = fv = fv0
    sx = s0
    e = 0.0
    step = 0.0
    for _ in range(200):
        m = 0.5 * (a + b)
        tol = XI_TOLERANCE + 1e-12 * abs(xb)
        if abs(xb - m) <= 2.0 * tol - 0.5 * (b - a):
            break
        parabolic = False
        if abs(e) > tol:
            r = (xb - w) * (fx - fv)
            q = (xb - v) * (fx - fw)
            p = (xb - v) * q - (xb - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            if abs(p) < abs(0.5 * q * e) and q * (a - xb) < p < q * (b - xb):
                e, step = step, p / q
                parabolic = True
                u = xb + step
                if u - a < 2.0 * tol or b - u < 2.0 * tol:
                    step = tol if xb < m else -tol
        if not parabolic:
            e = (b - xb) if xb < m else (a - xb)
            step = GOLDEN * e
        u = xb + (step if abs(step) >= tol else (tol if step > 0 else -tol))
        fu, su = _profile(x, d, n, u, sx)
        if fu <= fx:
            if u < xb:
                b = xb
            else:
                a = xb
            v, fv, w, fw = w, fw, xb, fx
            xb, fx, sx = u, fu, su
        else:
            if u < xb:
                a = u
            else:
                b = u
            if fu <= fw or w == xb:
                v, fv, w, fw = w, fw, u, fu
            elif fu <= fv or v == xb or v == w:
                v, fv = u, fu
    return xb, fx, sx


@numba.njit(cache=True, error_model="numpy")
def _polish(x: np.ndarray, d: np.ndarray, n: int, a: float, b: float, xi: float, s: float
            ) -> tuple[float, float, float, bool]:
    """Newton's method in (log tau, xi) from a grid point, each step halved until Q falls, xi kept in
    [a, b] and stopped at 0 when it would cross it (the reference point changes there): (xi, Q, log tau,
    converged). Not converged (no positive curvature, no descent) leaves the point to Brent."""
    f = math.inf
    for _ in range(NEWTON_ITERATIONS):
        ref = 1.0 if xi < 0.0 else 0.0
        for i in range(n):
            d[i] = x[i] - ref
        f, gs, gx, hss, hsx, hxx = _derivatives(d, n, xi, math.exp(s))
        det = hss * hxx - hsx * hsx
        if not (hss > 0.0 and det > 0.0):
            return xi, f, s, False
        step_s = -(hxx * gs - hsx * gx) / det
        step_x = -(hss * gx - hsx * gs) / det
        fraction = 1.0
        for _ in range(60):
            new_x = min(max(xi + fraction * step_x, a), b)
            if new_x * xi < 0.0:
                new_x = 0.0
            new_s = s + fraction * step_s
            side = 1.0 if new_x < 0.0 else 0.0
            for i in range(n):
                d[i] = x[i] - side
            f_new = _sums(d, n, new_x, math.exp(new_s))[0]
            if f_new <= f:
                break
            fraction *= 0.5
        else:
            return xi, f, s, abs(step_x) <= POLISH_STEP and abs(step_s) <= POLISH_STEP * max(1.0, abs(s))
        done = abs(new_x - xi) <= POLISH_STEP and abs(new_s - s) <= POLISH_STEP * max(1.0, abs(s))
        xi, s, f = new_x, new_s, f_new
        if done:
            return xi, f, s, True
    return xi, f, s, False


@numba.njit(cache=True, error_model="numpy")
def _grid_profile(x: np.ndarray, d: np.ndarray, n: int, grid: np.ndarray, fs: np.ndarray, ss: np.ndarray) -> None:
    """fs, ss: the profile P and its log tau at each grid shape (-inf at XI_MIN, whose closed form the callers
    take). Gumbel's moment estimate sigma = sqrt(6 var)/pi starts the search at xi = 0 (on every grid); each
    further grid point starts from the line through its two neighbours' solutions, outwards in both directions."""
    k = grid.size
    zero = 0
    while grid[zero] < 0.0:
        zero += 1
    mean = 0.0
    for i in range(n):
        mean += x[i]
    mean /= n
    spread = 0.0
    for i in range(n):
        spread += (x[i] - mean) ** 2
    fs[zero], ss[zero] = _profile(x, d, n, grid[zero], math.log(math.pi / math.sqrt(6.0 * spread / n)),
                                  GRID_TOLERANCE)
    for first, last, way in ((zero + 1, k, 1), (zero - 1, -1, -1)):
        for j in range(first, last, way):
            if grid[j] <= XI_MIN:
                fs[j] = -math.inf
                continue
            s = ss[j - way]
            if j - 2 * way != zero - way and 0 <= j - 2 * way < k:
                s += (ss[j - way] - ss[j - 2 * way]) * (grid[j] - grid[j - way]) / (grid[j - way] - grid[j - 2 * way])
            fs[j], ss[j] = _profile(x, d, n, grid[j], s, GRID_TOLERANCE)


@numba.njit(cache=True, error_model="numpy")
def _fit_cell(x: np.ndarray, d: np.ndarray, n: int, grid: np.ndarray, fs: np.ndarray, ss: np.ndarray
              ) -> tuple[float, float, float, float, bool]:
    """(location, scale, shape, -log L, at_bound) for maxima x[:n] scaled to [0, 1] (fs, ss: grid scratch)."""
    k = grid.size
    _grid_profile(x, d, n, grid, fs, ss)
    best = 0
    for j in range(k):
        if fs[j] < fs[best]:
            best = j
    xis = grid
    a = xis[best - 1] if best > 0 else XI_MIN
    b = xis[best + 1] if best < k - 1 else xis[best]
    converged = False
    if 0 < best < k - 1:
        xi, f, s, converged = _polish(x, d, n, a, b, xis[best], ss[best])
    if not converged:
        xi, f, s = _brent(x, d, n, a, b, xis[best], fs[best], ss[best])
    if not f <= fs[best]:
        xi, f, s = xis[best], fs[best], ss[best]
    at_bound = XI_MAX - xi <= BOUND_TOLERANCE or xi - XI_MIN <= BOUND_TOLERANCE
    if XI_MAX - xi <= BOUND_TOLERANCE:  # still falling at the top of the region: the top itself, if as good
        f_top, s_top = _profile(x, d, n, XI_MAX, s)
        if f_top <= f or xi == XI_MAX:  # (at XI_MAX already: its value to full precision, not the grid's)
            xi, f, s = XI_MAX, f_top, s_top
    mean_gap = 0.0
    for i in range(n):
        mean_gap += 1.0 - x[i]
    mean_gap /= n
    bound = n * math.log(mean_gap) + n  # the xi = -1 supremum: upper end point at the largest maximum
    if not f < bound:
        return 1.0 - mean_gap, mean_gap, XI_MIN, bound, True
    ref = 1.0 if xi < 0.0 else 0.0
    for i in range(n):
        d[i] = x[i] - ref
    tau = math.exp(s)
    log_mean = _sums(d, n, xi, tau)[3]
    c = math.exp(xi * log_mean)
    sigma = 1.0 / (tau * c)
    h = xi * log_mean
    ratio = math.expm1(h) / h if h != 0.0 else 1.0  # (c - 1)/xi = log_mean * expm1(h)/h
    return ref - sigma * log_mean * ratio, sigma, xi, f, at_bound


@numba.njit(inline="always")
def scale_to_range(maxima: np.ndarray, n: int, x: np.ndarray) -> tuple[float, float]:
    """x[:n] = maxima[:n] scaled to [0, 1] (the kernels' units; untouched when they are all equal); (the least
    maximum, their range)."""
    low = high = maxima[0]
    for i in range(n):
        low = min(low, maxima[i])
        high = max(high, maxima[i])
    spread = high - low
    if spread > 0.0:
        for i in range(n):
            x[i] = (maxima[i] - low) / spread
    return low, spread


@numba.njit(cache=True)
def _fit_all(maxima: np.ndarray, count: np.ndarray, grid: np.ndarray, location: np.ndarray, scale: np.ndarray,
             shape: np.ndarray, nll: np.ndarray, at_bound: np.ndarray) -> None:
    x = np.empty(maxima.shape[1])
    d = np.empty(maxima.shape[1])
    fs = np.empty(grid.size)
    ss = np.empty(grid.size)
    for c in range(maxima.shape[0]):
        n = count[c]
        if n <= 0:
            continue
        low, spread = scale_to_range(maxima[c], n, x)
        if not spread > 0.0:
            continue
        mu, sigma, xi, f, bound = _fit_cell(x, d, n, grid, fs, ss)
        location[c] = low + spread * mu
        scale[c] = spread * sigma
        shape[c] = xi
        nll[c] = f + n * math.log(spread)
        at_bound[c] = bound


def fit(maxima: np.ndarray, count: np.ndarray) -> Fit:
    """Fit a GEV to each row of ``maxima`` (cells, k): its first ``count[i]`` values. Rows whose values are
    all equal (no spread) stay NaN."""
    maxima = np.ascontiguousarray(maxima, dtype=np.float64)
    count = np.ascontiguousarray(count, dtype=np.int64)
    cells = maxima.shape[0]
    out = Fit(*(np.full(cells, np.nan) for _ in range(4)), np.zeros(cells, bool))
    _fit_all(maxima, count, GRID_XI, out.location, out.scale, out.shape, out.nll, out.at_bound)
    return out


def negative_log_likelihood(maxima: np.ndarray, location: float, scale: float, shape: float) -> float:
    """-log L of one cell's maxima: the plain formula, independent of the kernel (for checks)."""
    x = np.asarray(maxima, dtype=float)
    if scale <= 0:
        return math.inf
    y = (x - location) / scale
    if shape == 0.0:
        return x.size * math.log(scale) + y.sum() + np.exp(-y).sum()
    z = shape * y
    if np.any(z <= -1.0):
        return math.inf
    log_z = np.log1p(z)  # log(1 + xi y): accurate for shapes near 0, as is log_z / xi
    return x.size * math.log(scale) + log_z.sum() + (log_z / shape).sum() + np.exp(-log_z / shape).sum()


def return_level(location: np.ndarray, scale: np.ndarray, shape: np.ndarray, period_blocks: float) -> np.ndarray:
    """The level exceeded on average once every ``period_blocks`` blocks: mu + sigma ((-log(1-1/T))^-xi - 1)/xi,
    as mu + sigma L expm1(xi L)/(xi L) with L = -log(-log(1 - 1/T))."""
    big_l = -math.log(-math.log1p(-1.0 / period_blocks))
    with np.errstate(invalid="ignore"):
        x = shape * big_l
        h = np.where(np.abs(x) < 1e-12, 1.0 + x / 2.0, np.expm1(x) / np.where(x == 0, 1.0, x))
        return location + scale * big_l * h


# -- one maximum's terms of -log L and their derivatives: the observed information (climio.eva.gev_intervals) and
# the fits with a trend (climio.eva.gev_trend, climio.eva.trend) take them
@numba.njit(inline="always", fastmath={"contract"})
def _phi_psi_signed(u: float, w: float, lg: float) -> tuple[float, float]:
    """phi(u) and psi(u) (see PHI, PSI) for any u > -1 (w = 1 + u, lg = log1p(u)): the series inside
    |u| < SERIES_Y, the closed forms outside (where their cancellation costs at most a digit)."""
    p = s = 0.0
    for k in range(16, -1, -1):
        p = p * u + PHI[k]
        s = s * u + PSI[k]
    if abs(u) >= SERIES_Y:
        r = u / w
        p = (r - lg) / (u * u)
        s = (r * r + 2.0 * (r - lg)) / (u * u * u)
    return p, s


@numba.njit(inline="always", fastmath={"contract"})
def terms(x: float, mu: float, inverse_s: float, xi: float, inverse_xi: float
          ) -> tuple[float, float, float, float, float, float, float, float]:
    """One maximum x's term of -log L less log sigma, h = log w + A + t, and its derivatives (see :func:`_point`):
    (y, w, h, h_y, h_yy, h_xi, h_xixi, h_yxi); xi nonzero (see XI_ZERO), inverse_xi = 1/xi."""
    y = (x - mu) * inverse_s
    u = xi * y
    w = 1.0 + u
    lg = vecmath.log(w) + (u - (w - 1.0)) / w  # log1p(u)
    a = lg * inverse_xi
    t = vecmath.exp(-a)
    phi, psi = _phi_psi_signed(u, w, lg)
    iw = 1.0 / w
    ax = y * y * phi
    axx = -y * y * y * psi
    return (y, w, lg + a + t, (1.0 + xi - t) * iw, (1.0 + xi) * (t - xi) * iw * iw, y * iw + ax * (1.0 - t),
            -y * y * iw * iw + axx * (1.0 - t) + t * ax * ax, (1.0 - y * (1.0 - t)) * iw * iw + t * ax * iw)
