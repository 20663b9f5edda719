r"""The search shared by the trend fits of :mod:`climio.eva.gev_trend` (GEV location linear in a covariate) and
:mod:`climio.eva.gpd_trend` (GPD log scale linear in it): each model's -log L with its exact gradient and
Hessian, Newton's method on them, and the global search over the shape.

Parameters, in the units of the scaled data (a covariate of mean 0), are (mu_0, mu_1, log sigma, xi) for GEV and
(phi_0, phi_1, xi) for GPD: the shape is always the last. :func:`search` profiles -log L over the shape on a grid
(each point Newton's method in the other parameters, from its neighbour's solution), then polishes the stationary
fit and every grid minimum near the best with Newton's method in all of them; the distribution modules add their
starts and the exact corner at shape -1 (:func:`envelope_min`). The model is an integer (``GEV``, ``GPD``) so that
one compiled search serves both and numba can cache it.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from climio.eva import gev, gpd, vecmath

GEV, GPD = 0, 1  # the models
SIZE = np.array([4, 3])  # parameters of each model; the shape is the last
GROWN = np.array([2, 0])  # the parameter that doubling the scale moves (log sigma; phi_0)
CAPS = np.array([[1.0, 1.0, 2.0, 0.5], [2.0, 2.0, 0.5, 0.0]])  # the largest Newton step in each parameter
SHAPE_TOP = np.array([gev.XI_MAX, math.inf])  # the region's top shape (GEV's likelihood has no maximum beyond)
XI_MIN = -1.0
GRID_DECREMENT = 1e-6  # a grid point's Newton solve stops on this decrement (relative to |-log L| + n)
POLISH_DECREMENT = 1e-16  # ... and the polish on this one (its last step is then below rounding)
# The polish stops on that decrement, g'H^-1 g below POLISH_DECREMENT (|-log L| + n), or where no step descends:
# the step it leaves untaken moves the shape (curvature of order n in the scaled units) by about
# sqrt(POLISH_DECREMENT). An estimate within that of a bound of the region is on it to the search's precision.
BOUND_TOLERANCE = math.sqrt(POLISH_DECREMENT)
ITERATIONS = 100  # Newton steps of one solve
HALVINGS = 60  # step halvings before a solve stops where it is (a step that does not descend is rounding)
GROWTH = 60  # doublings of the scale that bring an infeasible start inside the support
BASIN_MARGIN = 1.0  # grid minima within this of the best one are polished too


@numba.njit(**gpd.DETERMINISTIC)
def _gev(x: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, g: np.ndarray, h: np.ndarray) -> float:
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


@numba.njit(**gpd.DETERMINISTIC)
def _gpd(e: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, g: np.ndarray, h: np.ndarray) -> float:
    r"""-log L of excesses e[:n] with covariate c[:n] at theta = (phi_0, phi_1, xi); its gradient into g and its
    Hessian into h. inf (g, h untouched) outside the support.

    Per excess, with s = phi_0 + phi_1 c, a = e e^-s, u = xi a, w = 1 + u, the term is
    s + log w + a L(u), L(u) = log1p(u)/u (so log(w)/xi = a L without cancellation near xi = 0), and
    d/ds = 1 - (1 + xi) a/w, d2/ds2 = (1 + xi) a/w^2, d/dxi = a/w + a^2 phi(u), d2/dxi2 = -a^2/w^2 - a^3 psi(u),
    d2/ds dxi = -a/w + (1 + xi) a^2/w^2, with phi = L' and psi = -L'' (:func:`climio.eva.gev.terms`' series);
    the derivatives in phi_1 weigh those in s by c.
    """
    xi = theta[2]
    if abs(xi) < gev.XI_ZERO:
        xi = gev.XI_ZERO
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
def derivatives(model: int, x: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, g: np.ndarray,
                h: np.ndarray) -> float:
    """-log L of ``model`` at theta, its gradient into g and Hessian into h (inf outside the support)."""
    if model == GEV:
        return _gev(x, c, n, theta, g, h)
    return _gpd(x, c, n, theta, g, h)


@numba.njit(cache=True, error_model="numpy")
def step(h: np.ndarray, g: np.ndarray, k: int, out: np.ndarray, lower: np.ndarray) -> float:
    """Newton's step -H^-1 g in the first k parameters into ``out`` (Cholesky; H's diagonal shifted until
    positive definite where it is not); returns the decrement -g'out."""
    shift = 0.0
    size = 0.0
    for i in range(k):
        size = max(size, abs(h[i, i]))
    for _ in range(80):
        ok = True
        for i in range(k):
            for j in range(i + 1):
                v = h[i, j] + (shift if i == j else 0.0)
                for m in range(j):
                    v -= lower[i, m] * lower[j, m]
                if i == j:
                    if not v > 0.0:
                        ok = False
                        break
                    lower[i, i] = math.sqrt(v)
                else:
                    lower[i, j] = v / lower[j, j]
            if not ok:
                break
        if ok:
            break
        shift = max(2.0 * shift, 1e-6 * size + 1e-300)
    for i in range(k):  # L u = -g, then L' step = u
        v = -g[i]
        for m in range(i):
            v -= lower[i, m] * out[m]
        out[i] = v / lower[i, i]
    for i in range(k - 1, -1, -1):
        v = out[i]
        for m in range(i + 1, k):
            v -= lower[m, i] * out[m]
        out[i] = v / lower[i, i]
    decrement = 0.0
    for i in range(k):
        decrement -= g[i] * out[i]
    return decrement


@numba.njit(cache=True, error_model="numpy")
def newton(model: int, x: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, free_shape: bool, tolerance: float,
           g: np.ndarray, h: np.ndarray, out: np.ndarray, lower: np.ndarray, trial: np.ndarray) -> float:
    """Minimise -log L from theta (moved in place) by Newton's method in every parameter but the shape and, if
    ``free_shape``, the shape (kept in the region; held at a bound its gradient pushes against). A start outside
    the support moves inside by doubling the scale. Stops on a decrement below ``tolerance`` times |-log L| + n,
    or when no step along Newton's direction descends. Returns -log L (inf: no feasible start)."""
    size, last, top = SIZE[model], SIZE[model] - 1, SHAPE_TOP[model]
    f = derivatives(model, x, c, n, theta, g, h)
    for _ in range(GROWTH):
        if f < math.inf:
            break
        theta[GROWN[model]] += math.log(2.0)
        f = derivatives(model, x, c, n, theta, g, h)
    if not f < math.inf:
        return math.inf
    for _ in range(ITERATIONS):
        held = not free_shape or (theta[last] <= XI_MIN and g[last] > 0.0) or (theta[last] >= top and g[last] < 0.0)
        k = last if held else size
        decrement = step(h, g, k, out, lower)
        if not decrement > tolerance * (abs(f) + n):
            break
        cap = 1.0
        for j in range(k):
            cap = max(cap, abs(out[j]) / CAPS[model, j])
        fraction = 1.0 / cap
        accepted = False
        for _ in range(HALVINGS):
            for j in range(size):
                trial[j] = theta[j] + fraction * out[j] if j < k else theta[j]
            trial[last] = min(max(trial[last], XI_MIN), top)
            f_new = derivatives(model, x, c, n, trial, g, h)  # g, h: at the trial point once it is accepted
            if f_new <= f:
                accepted = True
                break
            fraction *= 0.5
        if not accepted:
            break
        theta[:size] = trial[:size]
        f = f_new
    return f


@numba.njit(cache=True, error_model="numpy")
def at_shape(model: int, x: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, xi: float) -> float:
    """The least -log L of ``model`` with the shape held at ``xi``, by the polish from theta (moved in place, its
    shape set to xi): a bound's own value where the polish stopped just short of it."""
    size = SIZE[model]
    g, out, trial = np.empty(size), np.empty(size), np.empty(size)
    h, lower = np.empty((size, size)), np.empty((size, size))
    theta[size - 1] = xi
    return newton(model, x, c, n, theta, False, POLISH_DECREMENT, g, h, out, lower, trial)


@numba.njit(cache=True, error_model="numpy")
def search(model: int, x: np.ndarray, c: np.ndarray, n: int, grid: np.ndarray, start: np.ndarray,
           stationary: np.ndarray, best: np.ndarray) -> float:
    """The least -log L of ``model`` found from the profile over the shapes of ``grid`` (its solve at shape 0
    started at ``start``, the others at their neighbour's solution) and from the ``stationary`` fit; the
    parameters into ``best``."""
    size, last, k = SIZE[model], SIZE[model] - 1, grid.size
    fs, thetas = np.empty(k), np.empty((k, size))
    theta, g, out, trial = np.empty(size), np.empty(size), np.empty(size), np.empty(size)
    h, lower = np.empty((size, size)), np.empty((size, size))
    zero = 0
    while grid[zero] < 0.0:
        zero += 1
    for first, stop, way in ((zero, k, 1), (zero - 1, -1, -1)):
        for j in range(first, stop, way):
            if j == zero:
                theta[:] = start[:size]
            else:
                theta[:] = thetas[j - way]
            theta[last] = grid[j]
            fs[j] = newton(model, x, c, n, theta, False, GRID_DECREMENT, g, h, out, lower, trial)
            thetas[j] = theta
    best[:size] = stationary[:size]
    f_best = newton(model, x, c, n, best, True, POLISH_DECREMENT, g, h, out, lower, trial)
    low = math.inf
    for j in range(k):
        low = min(low, fs[j])
    for j in range(k):
        if not fs[j] <= low + BASIN_MARGIN or (j > 0 and fs[j - 1] < fs[j]) or (j < k - 1 and fs[j + 1] < fs[j]):
            continue
        theta[:] = thetas[j]
        f = newton(model, x, c, n, theta, True, POLISH_DECREMENT, g, h, out, lower, trial)
        if f < f_best:
            f_best = f
            best[:size] = theta
    return f_best


@numba.njit(cache=True, error_model="numpy")
def information(model: int, x: np.ndarray, c: np.ndarray, n: int, theta: np.ndarray, jacobian: np.ndarray,
                out: np.ndarray) -> None:
    """The observed information at theta in the data's parameters, J' H J with J = d(scaled)/d(data) (``out``
    untouched outside the support)."""
    size = SIZE[model]
    g, h = np.empty(size), np.empty((size, size))
    if not derivatives(model, x, c, n, theta, g, h) < math.inf:
        return
    for i in range(size):
        for j in range(size):
            v = 0.0
            for a in range(size):
                for b in range(size):
                    v += jacobian[a, i] * h[a, b] * jacobian[b, j]
            out[i, j] = v


@numba.njit(cache=True, error_model="numpy")
def standardize(covariate: np.ndarray, n: int, out: np.ndarray) -> tuple[float, float]:
    """out[:n] = the covariate[:n] less its mean, over its standard deviation (left alone when that is 0): the
    fits' scaled covariate, in which the intercept and the slope are nearly uncorrelated; (mean, deviation)."""
    mean = 0.0
    for i in range(n):
        mean += covariate[i]
    mean /= n
    spread = 0.0
    for i in range(n):
        spread += (covariate[i] - mean) ** 2
    spread = math.sqrt(spread / n)
    if spread > 0.0:
        for i in range(n):
            out[i] = (covariate[i] - mean) / spread
    return mean, spread


@numba.njit(cache=True, error_model="numpy")
def envelope_min(level: np.ndarray, c: np.ndarray, n: int) -> tuple[float, float]:
    """min over b of max_i (level_i - b c_i) and its b, for c[:n] of mean 0 (not all 0): the lowest line in
    (level, c) lying above every point, at the shape -1 corner of the trend fits' likelihoods. By bisection on
    the sign of the convex envelope's right derivative, -c of its active line (the smallest c among ties),
    inside the bracket every crossing of two lines lies in."""
    low_level, high_level, smallest = math.inf, -math.inf, math.inf
    for i in range(n):
        low_level, high_level = min(low_level, level[i]), max(high_level, level[i])
        if c[i] != 0.0:
            smallest = min(smallest, abs(c[i]))
    reach = (high_level - low_level) / smallest + 1.0
    lo, hi = -reach, reach
    b = 0.0
    for _ in range(400):
        b = 0.5 * (lo + hi)
        top, slope_c = -math.inf, 0.0
        for i in range(n):
            v = level[i] - b * c[i]
            if v > top or (v == top and c[i] < slope_c):
                top, slope_c = v, c[i]
        if slope_c > 0.0:  # the envelope falls to the right
            lo = b
        elif slope_c < 0.0:
            hi = b
        else:
            break
        if not lo < 0.5 * (lo + hi) < hi:
            break
    top = -math.inf
    for i in range(n):
        top = max(top, level[i] - b * c[i])
    return top, b
