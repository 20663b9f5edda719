"""The GEV fit with a location linear in a covariate (``climio.eva.gev_trend``), against references written here.

The model: block maximum i ~ GEV(mu0 + mu1 c_i, sigma, xi), xi > 0 the heavy tail; samples by inversion of the
GEV's distribution function (no scipy sampler). Checked:

* the maximum (173 cells of 20 to 60 annual maxima: covariates in calendar years, far from 0, and standardized
  noisy GMST-like series; true shapes -0.4 to 0.6 with Gumbel and 3e-7; slopes zero and not; five cells built so
  that the estimate's shape is within 1e-6 of 0; a few whose supremum is the xi = -1 corner): an independent
  search (a profile over a grid of shapes, then the minimum in all parameters from the three best, each by Newton's
  method on central differences in standardized parameters, ``helpers/eva_reference.py``; plus the corner's closed
  form through scipy's ``linprog``) never finds a -log L lower by 1e-9 relative, and where it reaches the module's
  value the parameters agree to 1e-5 (standardized); the -log L returned is the plain formula's at the returned
  parameters (1e-9; at the corner, its limit there); the stationary -log L is ``gev.fit``'s, never below the trend
  fit's, and not beaten by the same search with the slope held at 0;
* the estimate is a regular minimum: Newton's step from Richardson-extrapolated central differences of the plain
  -log L is below 1e-6 (and 1e-4 of each standard error), the numerical Hessian positive definite;
* the covariance is the inverse of that numerical Hessian, compared in standardized parameters through the
  exact Jacobian (standard errors of the location at the mean covariate, the slope, sigma and xi to 1e-4
  relative, every entry to 1e-4 of the product of the two standard errors), and in data units the same way;
* effective return levels from their formula (and the Gumbel limit), the delta-method interval from a
  gradient (1, v, g, sigma g') with g' by central differences;
* recovery of a known trend (mean slope within 3 standard errors of the truth, coverage of slope +-1.96 SE in
  0.90-0.98), the likelihood-ratio test's size without a trend;
* rows not fitted (fewer than three maxima, all equal, a covariate constant over the counted values) are NaN;
  rows at a bound of the shape (xi = -1 or 3, found by a seeded search) are flagged, NaN covariance, their -log L
  the corner's closed form or the formula's; padding is never read; a 1-D covariate broadcasts;
* invariances: a shifted covariate moves only the intercept (-log L to 1e-9); scaled maxima scale the location
  and scale parameters and add n log(factor) to -log L (1e-9).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize

from climio.eva import gev, gev_trend

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
import eva_reference  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scipy's searches meet inf - inf outside support

PAD = 1e6  # what rows hold past their count: any use of it shows
Z975 = 1.959963984540054  # the standard normal's 0.975 quantile
EULER = 0.5772156649015329


# -- independent references ---------------------------------------------------------------------------------------
def gev_draw(rng: np.random.Generator, location: np.ndarray, scale: float, xi: float) -> np.ndarray:
    """GEV(location, scale, xi) by inversion: location + scale ((-log U)^-xi - 1)/xi (Gumbel at xi = 0)."""
    e = -np.log(rng.uniform(size=np.shape(location)))
    if xi == 0.0:
        return location - scale * np.log(e)
    return location + scale * np.expm1(-xi * np.log(e)) / xi


def plain_nll(x: np.ndarray, location: np.ndarray, scale: float, xi: float) -> float:
    """-log L = n log sigma + (1 + 1/xi) sum log z + sum z^(-1/xi), z = 1 + xi (x - location)/sigma > 0
    (log z by log1p, so that log(z)/xi is accurate for tiny xi); Gumbel n log sigma + sum y + sum e^-y at xi = 0;
    inf outside the support."""
    if not scale > 0.0:
        return math.inf
    y = (x - location) / scale
    if xi == 0.0:
        return x.size * math.log(scale) + float(y.sum() + np.exp(-y).sum())
    t = xi * y
    if not t.min() > -1.0:
        return math.inf
    log_z = np.log1p(t)
    return x.size * math.log(scale) + (1.0 + 1.0 / xi) * float(log_z.sum()) + float(np.exp(-log_z / xi).sum())


def corner(x: np.ndarray, c: np.ndarray, trend: bool = True) -> tuple[float, np.ndarray]:
    """The infimum of -log L at xi = -1 and its (mu0, mu1, sigma, -1). There -log L = n log sigma + sum (1 - y_i),
    y_i = (x_i - mu0 - mu1 c_i)/sigma <= 1: for a given sigma the least has the location line as low as it can
    go at the mean covariate, touching the points from above (a linear programme: min t, t >= x_i - b (c_i - cbar));
    then sigma = G - mean x, G that line at cbar, and -log L = n log(G - mean x) + n."""
    n, cbar = x.size, c.mean()
    if trend:
        a_ub = np.stack([-np.ones(n), -(c - cbar)], axis=1)  # -t - b (c_i - cbar) <= -x_i
        lp = optimize.linprog([1.0, 0.0], A_ub=a_ub, b_ub=-x, bounds=[(None, None), (None, None)], method="highs")
        assert lp.status == 0
        top, slope = max(lp.x[0], float(np.max(x - lp.x[1] * (c - cbar)))), lp.x[1]
    else:
        top, slope = float(x.max()), 0.0
    gap = top - x.mean()
    if not gap > 0.0:  # every point on one line: no corner
        return math.inf, np.full(4, np.nan)
    return n * math.log(gap) + n, np.array([top - gap - slope * cbar, slope, gap, -1.0])


class Reference:
    """One cell in standardized parameters t = (a, b, log s, xi): maxima u = (x - mean x)/sd x, covariate
    v = (c - mean c)/sd c, location a + b v and scale s in units of sd x. In these the four parameters are of one
    size and nearly uncorrelated, whatever the covariate's offset."""

    def __init__(self, x: np.ndarray, c: np.ndarray) -> None:
        self.x, self.c, self.n = x, c, x.size
        self.xm, self.xs, self.cm, self.cs = x.mean(), x.std(), c.mean(), c.std()
        self.u, self.v = (x - self.xm) / self.xs, (c - self.cm) / self.cs
        self.offset = self.n * math.log(self.xs)  # -log L of the data = that of u + n log(sd x)

    def nll(self, t: np.ndarray) -> float:
        """-log L of the data (unconstrained in xi)."""
        return plain_nll(self.u, t[0] + t[1] * self.v, math.exp(t[2]), t[3]) + self.offset

    def to_t(self, p: np.ndarray) -> np.ndarray:
        mu0, mu1, sigma, xi = p
        return np.array([(mu0 + mu1 * self.cm - self.xm) / self.xs, mu1 * self.cs / self.xs,
                         math.log(sigma / self.xs), xi])

    def to_p(self, t: np.ndarray) -> np.ndarray:
        mu1 = t[1] * self.xs / self.cs
        return np.array([self.xm + self.xs * t[0] - mu1 * self.cm, mu1, self.xs * math.exp(t[2]), t[3]])

    def jacobian(self, p: np.ndarray) -> np.ndarray:
        """d t / d (mu0, mu1, sigma, xi), exact."""
        return np.array([[1 / self.xs, self.cm / self.xs, 0, 0], [0, self.cs / self.xs, 0, 0],
                         [0, 0, 1 / p[2], 0], [0, 0, 0, 1]])

    def nll_many(self, t: np.ndarray) -> np.ndarray:
        """:meth:`nll` at each row of t (K, 4), vectorised (the same formula; inf outside the support)."""
        s, xi = np.exp(t[:, 2]), t[:, 3]
        y = (self.u[None, :] - (t[:, :1] + t[:, 1:2] * self.v[None, :])) / s[:, None]
        gumbel = xi == 0.0
        safe = np.where(gumbel, 1.0, xi)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            z = xi[:, None] * y
            log_z = np.log1p(z)
            out = self.n * np.log(s) + (1.0 + 1.0 / safe) * log_z.sum(1) + np.exp(-log_z / safe[:, None]).sum(1)
            out = np.where(z.min(1) > -1.0, out, np.inf)
            if gumbel.any():
                out = np.where(gumbel, self.n * np.log(s) + (y + np.exp(-y)).sum(1), out)
        return np.where(np.isnan(out), np.inf, out) + self.offset

    def room(self, t: np.ndarray) -> np.ndarray:
        """:func:`steps`' room at each row of t (K, 4), capped at 1: the change of each parameter that moves
        some z = 1 + xi y by its own size."""
        s, xi = np.exp(t[:, 2:3]), t[:, 3:]
        y = (self.u[None, :] - t[:, :1] - t[:, 1:2] * self.v[None, :]) / s
        z = 1.0 + xi * y
        with np.errstate(divide="ignore", invalid="ignore"):
            rooms = [s * z / np.abs(xi), s * z / np.abs(xi) / np.abs(self.v), z / np.abs(xi * y), z / np.abs(y)]
        return np.stack([np.fmin(1.0, np.fmin.reduce(r, axis=1)) for r in rooms], 1)

    def best(self, trend: bool = True) -> tuple[float, np.ndarray]:
        """The least -log L found over -1 <= xi <= 3 (slope 0 where not ``trend``), and its (mu0, mu1, sigma, xi):
        a profile over a grid of shapes (the minimum in the other parameters at each, by Newton's method on
        central differences), then the minimum in all of them from the three best grid points (the same, within
        the bounds of the shape; ``eva_reference.newton_minimize``); the corner at xi = -1."""
        free = [0, 1, 2, 3] if trend else [0, 2, 3]

        def full(q: np.ndarray, xi: float | None = None) -> np.ndarray:
            t = np.zeros(4)
            t[free[:len(q)]] = q
            if xi is not None:
                t[3] = xi
            return t

        def rows(q: np.ndarray) -> np.ndarray:  # (K, free) -> (K, 4)
            t = np.zeros((q.shape[0], 4))
            t[:, free] = q
            return t

        def f(q: np.ndarray) -> np.ndarray:
            return self.nll_many(rows(q))

        def caps(varied: int):  # the longest differences: 1e-2 of the room
            return lambda q: 1e-2 * self.room(rows(q))[:, free][:, :varied]

        b0 = float(np.mean(self.u * self.v)) if trend else 0.0  # least squares: u and v have mean 0, sd 1
        rest = self.u - b0 * self.v
        s0 = math.sqrt(6.0) * rest.std() / math.pi  # Gumbel's moments
        a0 = rest.mean() - EULER * s0
        starts = []
        for xi in (-0.75, -0.4, 0.0, 0.3, 0.6, 1.0, 1.6, 2.5):
            q0 = np.array([a0, b0, math.log(s0)] if trend else [a0, math.log(s0)])
            while not math.isfinite(self.nll(full(q0, xi))):
                q0[-1] += math.log(2.0)  # a larger scale reaches every point
            starts.append(np.append(q0, xi))
        profile, values = eva_reference.newton_minimize(f, np.array(starts), caps(len(free) - 1), held=1)
        three = profile[np.argsort(values)[:3]]
        lower, upper = np.full(len(free), -np.inf), np.full(len(free), np.inf)
        lower[-1], upper[-1] = -1.0, 3.0
        points, _ = eva_reference.newton_minimize(f, three, caps(len(free)), lower=lower, upper=upper)
        found = [(self.nll(full(q)), self.to_p(full(q))) for q in points]
        value, p = min(found, key=lambda r: r[0])
        edge, p_edge = corner(self.x, self.c, trend)
        return (edge, p_edge) if edge < value else (value, p)


def steps(ref: Reference, t: np.ndarray, rel: float) -> np.ndarray:
    """Finite-difference steps in t: ``rel`` of one, or of the change of each parameter that moves some
    z = 1 + xi y by its own size (so a point near the support's end is fine)."""
    s, xi = math.exp(t[2]), t[3]
    y = (ref.u - t[0] - t[1] * ref.v) / s
    z = 1.0 + xi * y
    assert z.min() > 0.0
    room = [s * z / max(abs(xi), 1e-300), s * z / max(abs(xi), 1e-300) / np.maximum(np.abs(ref.v), 1e-300),
            z / np.maximum(np.abs(xi * y), 1e-300), z / np.maximum(np.abs(y), 1e-300)]
    return rel * np.array([min(1.0, float(np.min(r))) for r in room])


def richardson(f, t0: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradient and Hessian of f at t0 by central differences at steps h, h/2, h/4, each Richardson-extrapolated
    twice (error O(h^6)). f is vectorised ((K, size) points -> (K,) values): every point of the three stencils
    in one call."""
    size = t0.size
    eye = np.eye(size)
    pairs = [(i, j) for i in range(size) for j in range(i)]
    points = []
    for m in range(3):
        step = eye * (h / 2**m)[:, None]  # row i: the step along parameter i
        points += [t0] + [t0 + step[i] for i in range(size)] + [t0 - step[i] for i in range(size)]
        for i, j in pairs:
            points += [t0 + step[i] + step[j], t0 + step[i] - step[j], t0 - step[i] + step[j],
                       t0 - step[i] - step[j]]
    values = f(np.array(points)).reshape(3, -1)

    def differences(m: int) -> tuple[np.ndarray, np.ndarray]:
        step = h / 2**m
        v = values[m]
        f0, fp, fm = v[0], v[1:size + 1], v[size + 1:2 * size + 1]
        g = (fp - fm) / (2 * step)
        hess = np.diag((fp - 2 * f0 + fm) / step**2)
        for k, (i, j) in enumerate(pairs):
            a, b, c, d = v[2 * size + 1 + 4 * k:2 * size + 5 + 4 * k]
            hess[i, j] = hess[j, i] = (a - b - c + d) / (4 * step[i] * step[j])
        return g, hess

    d = [differences(m) for m in range(3)]
    out = []
    for k in (0, 1):  # k = 0 the gradient, 1 the Hessian
        r = [(4 * d[m + 1][k] - d[m][k]) / 3 for m in range(2)]
        out.append((16 * r[1] - r[0]) / 15)
    return out[0], out[1]


def level_factor(xi: float, big_l: float) -> float:
    """g(xi) = ((-log(1 - 1/T))^-xi - 1)/xi = (e^(xi L) - 1)/xi, L = -log(-log(1 - 1/T)); L at xi = 0."""
    return big_l if xi == 0.0 else math.expm1(xi * big_l) / xi


# -- the cells ----------------------------------------------------------------------------------------------------
def padded(rows: list[tuple[np.ndarray, np.ndarray]], width: int | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(maxima, covariate, count) with rows padded by PAD."""
    width = width or max(x.size for x, _ in rows)
    maxima, covariate = np.full((len(rows), width), PAD), np.full((len(rows), width), PAD)
    for r, (x, c) in enumerate(rows):
        maxima[r, :x.size], covariate[r, :c.size] = x, c
    return maxima, covariate, np.array([x.size for x, _ in rows])


def gmst_like(rng: np.random.Generator, n: int) -> np.ndarray:
    """A standardized warming series with an 11-year wiggle and noise (mean 0, sd 1 over 61 years), first n."""
    years = np.arange(61.0)
    g = 0.015 * years + 0.1 * np.sin(2 * math.pi * years / 11) + rng.normal(0.0, 0.1, years.size)
    return ((g - g.mean()) / g.std())[:n]


def near_gumbel_rows(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Samples whose estimated shape is within 1e-6 of 0: the largest maximum moved (by bisection, with the fit
    itself as the oracle of the sign: a longer tail, a larger shape) until the estimate's shape changes sign."""
    base = []
    for j in range(6):
        n = (30, 50)[j % 2]
        c = np.arange(1960.0, 1960.0 + n) if j < 3 else gmst_like(rng, n)
        base.append((gev_draw(rng, 10.0 + (0.04 if j < 3 else 1.0) * (c - c.mean()), 2.0, 0.0), c))
    maxima, covariate, count = padded(base)
    top = np.argmax(np.where(maxima == PAD, -np.inf, maxima), axis=1)
    lo, hi = np.full(len(base), 0.5), np.full(len(base), 30.0)  # the largest maximum at median + a * scale

    def shapes(a: np.ndarray) -> np.ndarray:
        m = maxima.copy()
        for r, (x, _) in enumerate(base):
            m[r, top[r]] = np.median(x) + a[r] * 2.0
        return gev_trend.fit(m, covariate, count).shape, m

    low_shape, high_shape = shapes(lo)[0], shapes(hi)[0]
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        s = shapes(mid)[0]
        below = s < 0.0
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    s, m = shapes(0.5 * (lo + hi))
    keep = (low_shape < 0) & (high_shape > 0) & (np.abs(s) < 1e-6)
    assert keep.sum() >= 4, s
    return [(m[r, :count[r]], covariate[r, :count[r]]) for r in np.flatnonzero(keep)]


@pytest.fixture(scope="module")
def cells() -> tuple[np.ndarray, np.ndarray, np.ndarray, gev_trend.Fit]:
    """Annual maxima, location 30 at the covariate's start, sigma 5: four lengths x seven shapes (with Gumbel and
    3e-7) x three slopes x two kinds of covariate (calendar years from 1950 to 1990 on; a standardized GMST-like
    series), and the near-Gumbel estimates; rows padded to 60."""
    rng = np.random.default_rng(20240611)
    rows = []
    for kind in ("years", "gmst"):
        for n in (20, 30, 45, 60):
            for xi in (-0.4, -0.2, 0.0, 3e-7, 0.2, 0.4, 0.6):
                for slope in ((0.0, 0.05, -0.08) if kind == "years" else (0.0, 2.0, -1.0)):
                    if kind == "years":
                        start = 1950.0 + 10 * rng.integers(0, 5) if n < 60 else 1950.0
                        c = np.arange(start, start + n)
                    else:
                        c = gmst_like(rng, n)
                    rows.append((gev_draw(rng, 30.0 + slope * (c - c[0]), 5.0, xi), c))
    rows += near_gumbel_rows(rng)
    maxima, covariate, count = padded(rows, 60)
    return maxima, covariate, count, gev_trend.fit(maxima, covariate, count)


def params(fit: gev_trend.Fit, r: int) -> np.ndarray:
    return np.array([fit.location_intercept[r], fit.location_slope[r], fit.scale[r], fit.shape[r]])


def row(maxima: np.ndarray, covariate: np.ndarray, count: np.ndarray, r: int) -> tuple[np.ndarray, np.ndarray]:
    return maxima[r, :count[r]], covariate[r, :count[r]]


# -- 1. the maximum -----------------------------------------------------------------------------------------------
def test_plain_formula() -> None:
    """``negative_log_likelihood`` is the formula (here at points of every kind, tiny shapes, outside support)."""
    rng = np.random.default_rng(1)
    c = np.arange(1980.0, 2010.0)
    x = gev_draw(rng, 20.0 + 0.1 * (c - 1980), 3.0, 0.2)
    for mu0, mu1, sigma, xi in [(-178.0, 0.1, 3.0, 0.2), (20.0, 0.0, 2.0, -0.3), (-178.0, 0.1, 3.0, 0.0),
                                (-178.0, 0.1, 3.0, 1e-9), (-178.0, 0.1, 3.0, -1e-9), (-100.0, 0.06, 4.0, 1.5)]:
        want = plain_nll(x, mu0 + mu1 * c, sigma, xi)
        assert gev_trend.negative_log_likelihood(x, c, mu0, mu1, sigma, xi) == pytest.approx(want, rel=1e-12)
    # tiny shapes approach the Gumbel limit continuously
    gumbel = plain_nll(x, -178.0 + 0.1 * c, 3.0, 0.0)
    assert gev_trend.negative_log_likelihood(x, c, -178.0, 0.1, 3.0, 1e-9) == pytest.approx(gumbel, rel=1e-7)
    # outside the support: a point below the lower end (xi > 0), above the upper end (xi < 0)
    assert gev_trend.negative_log_likelihood(x, c, -178.0 + 50.0, 0.1, 3.0, 0.5) == math.inf
    assert gev_trend.negative_log_likelihood(x, c, -178.0 - 50.0, 0.1, 3.0, -0.5) == math.inf


def test_fit_is_the_maximum_of_the_likelihood(cells) -> None:
    maxima, covariate, count, fit = cells
    cells_n = count.size
    assert cells_n >= 170
    for name in ("location_intercept", "location_slope", "scale", "shape", "nll", "nll_stationary"):
        assert np.isfinite(getattr(fit, name)).all(), name
    # a few samples of 20 or 30 from the shortest tails have their supremum at the corner xi = -1
    with np.errstate(invalid="ignore"):
        assert np.array_equal(fit.at_bound, fit.shape == -1.0)
    assert 1 <= fit.at_bound.sum() <= 8
    assert np.isnan(fit.covariance[fit.at_bound]).all() and np.isfinite(fit.covariance[~fit.at_bound]).all()
    # the stationary fit is gev.fit's, and nested in the trend model
    np.testing.assert_allclose(fit.nll_stationary, gev.fit(maxima, count).nll, rtol=1e-12)
    assert np.all(fit.nll <= fit.nll_stationary + 1e-9)
    near_zero = 0
    agreed = 0
    for r in range(cells_n):
        x, c = row(maxima, covariate, count, r)
        p = params(fit, r)
        near_zero += abs(p[3]) < 1e-6
        # the value returned is the likelihood at the parameters returned (at the corner, its limit there)
        if fit.at_bound[r]:
            y = (x - p[0] - p[1] * c) / p[2]
            assert y.max() <= 1.0 + 1e-10, r
            assert fit.nll[r] == pytest.approx(x.size * math.log(p[2]) + (1.0 - y).sum(), rel=1e-10), r
        else:
            assert fit.nll[r] == pytest.approx(plain_nll(x, p[0] + p[1] * c, p[2], p[3]), rel=1e-9), r
            assert fit.nll[r] == pytest.approx(gev_trend.negative_log_likelihood(x, c, *p), rel=1e-9), r
        ref = Reference(x, c)
        value, q = ref.best()
        gap = (fit.nll[r] - value) / abs(fit.nll[r])
        assert gap <= 1e-9, (r, fit.nll[r], value, p, q)
        if gap >= -1e-7:  # the search reached the same maximum: the same parameters (standardized units)
            agreed += 1
            np.testing.assert_allclose(ref.to_t(p), ref.to_t(q), rtol=0, atol=1e-5, err_msg=str(r))
    assert near_zero >= 4
    assert agreed >= 0.95 * cells_n, agreed  # the reference is a real check: it finds the maximum nearly always
    # the stationary -log L is not beaten by the same search with the slope held at 0
    for r in range(0, cells_n, 6):
        x, c = row(maxima, covariate, count, r)
        value, q = Reference(x, c).best(trend=False)
        assert fit.nll_stationary[r] <= value + 1e-9 * abs(value), (r, fit.nll_stationary[r], value)
        assert q[1] == 0.0


def test_the_estimate_is_a_regular_minimum(cells) -> None:
    """Newton's step from numerical derivatives of the plain -log L (standardized parameters) is below 1e-6 in
    each (about 1e-5 of the smallest standard error, 0.05 there), and below 1e-4 of each one's standard error;
    the numerical Hessian is positive definite."""
    maxima, covariate, count, fit = cells
    for r in np.flatnonzero(~fit.at_bound):
        x, c = row(maxima, covariate, count, r)
        ref = Reference(x, c)
        t = ref.to_t(params(fit, r))
        g, _ = richardson(ref.nll_many, t, steps(ref, t, 1e-3))
        _, hess = richardson(ref.nll_many, t, steps(ref, t, 1e-2))
        assert np.linalg.eigvalsh(hess)[0] > 0, r
        newton = np.linalg.solve(hess, g)
        assert np.abs(newton).max() < 1e-6, (r, newton, g)
        assert np.all(np.abs(newton) < 1e-4 * np.sqrt(np.diag(np.linalg.inv(hess)))), (r, newton)


# -- 2. the covariance --------------------------------------------------------------------------------------------
def test_covariance_is_the_inverse_observed_information(cells) -> None:
    """J Cov J' (J the exact Jacobian into standardized parameters) against the inverse numerical Hessian there:
    every entry within 1e-4 of the product of the two standard errors, the standard errors (of the location at
    the mean covariate, the slope, sigma and xi) to 1e-4 relative. Shapes near -1 have a likelihood that ends
    close to the estimate: their steps are kept inside it."""
    maxima, covariate, count, fit = cells
    for r in np.flatnonzero(~fit.at_bound):
        x, c = row(maxima, covariate, count, r)
        ref = Reference(x, c)
        p = params(fit, r)
        t = ref.to_t(p)
        _, hess = richardson(ref.nll_many, t, steps(ref, t, 1e-2))
        want = np.linalg.inv(hess)
        jac = ref.jacobian(p)
        got = jac @ fit.covariance[r] @ jac.T
        se = np.sqrt(np.diag(want))
        np.testing.assert_allclose(np.sqrt(np.diag(got)), se, rtol=1e-4, err_msg=str(r))
        np.testing.assert_allclose(got / np.outer(se, se), want / np.outer(se, se), rtol=0, atol=1e-4,
                                   err_msg=str(r))
        # the data-unit matrix itself (in calendar years mu0 and mu1 are correlated to 1 - 1e-6): the reference
        # mapped back, J^-1 want J^-T, entry by entry on the scale of its standard errors
        np.testing.assert_allclose(fit.covariance[r], fit.covariance[r].T, rtol=1e-10, atol=0)
        back = np.linalg.solve(jac, np.linalg.solve(jac, want).T).T
        se_back = np.sqrt(np.diag(back))
        np.testing.assert_allclose(fit.covariance[r] / np.outer(se_back, se_back),
                                   back / np.outer(se_back, se_back), rtol=0, atol=2e-4, err_msg=str(r))


# -- 3. effective return levels -----------------------------------------------------------------------------------
def test_effective_return_levels_and_normal_bounds(cells) -> None:
    _, _, _, fit = cells
    rows = np.arange(0, fit.nll.size, 3)
    sub = gev_trend.Fit(*(getattr(fit, f)[rows] for f in ("location_intercept", "location_slope", "scale", "shape",
                                                           "nll", "nll_stationary", "at_bound", "covariance")))
    # and shapes exactly 0 and at the edges of the series (with the covariance of a real cell)
    special = [0.0, 1e-12, -1e-7, 1e-4, -0.35, 2.0]
    k = len(special)
    extra = gev_trend.Fit(np.full(k, -120.0), np.full(k, 0.075), np.full(k, 4.0), np.array(special), np.zeros(k),
                          np.zeros(k), np.zeros(k, bool), np.repeat(fit.covariance[:1], k, axis=0))
    for case in (sub, extra):
        for value, period in ((1955.0, 100.0), (2100.0, 20.0), (0.5, 2.0), (-1.0, 1000.0)):
            big_l = -math.log(-math.log(1.0 - 1.0 / period))
            y = -math.log(1.0 - 1.0 / period)
            z = gev_trend.return_level(case, value, period)
            lower, upper = gev_trend.normal_bounds(case, value, period, Z975)
            for r in range(case.scale.size):
                mu0, mu1, sigma, xi = params(case, r)
                if xi == 0.0:
                    want = mu0 + mu1 * value - sigma * math.log(y)
                elif abs(xi) > 1e-3:
                    want = mu0 + mu1 * value + sigma * (y ** -xi - 1.0) / xi
                else:  # the same, without the cancellation of y^-xi - 1
                    want = mu0 + mu1 * value + sigma * math.expm1(-xi * math.log(y)) / xi
                assert z[r] == pytest.approx(want, rel=1e-10, abs=1e-10 * sigma), (r, xi)
                h = 1e-5
                g1 = (level_factor(xi + h, big_l) - level_factor(xi - h, big_l)) / (2 * h)
                grad = np.array([1.0, value, level_factor(xi, big_l), sigma * g1])
                half = Z975 * math.sqrt(grad @ case.covariance[r] @ grad)
                assert upper[r] - z[r] == pytest.approx(half, rel=1e-6), (r, xi)
                assert z[r] - lower[r] == pytest.approx(half, rel=1e-6), (r, xi)
    # the Gumbel limit is continuous through 0
    a, b = (gev_trend.return_level(extra, 2000.0, 100.0)[i] for i in (0, 1))
    assert a == pytest.approx(b, rel=1e-12)


# -- 4. recovery ----------------------------------------------------------------------------------------------------
def test_a_known_trend_is_recovered() -> None:
    """500 cells of 60 annual maxima (1951-2010, a 1-D covariate broadcast), mu1 = 0.05/year, sigma 5, xi 0.1:
    the mean slope is the truth within 3 standard errors of the mean, its +-1.96 SE interval covers the truth in
    90-98 % of cells and the SE matches the slopes' spread."""
    rng = np.random.default_rng(77)
    years = np.arange(1951.0, 2011.0)
    maxima = np.stack([gev_draw(rng, 25.0 + 0.05 * (years - 1951.0), 5.0, 0.1) for _ in range(500)])
    fit = gev_trend.fit(maxima, years, np.full(500, 60))
    assert not fit.at_bound.any() and np.isfinite(fit.covariance).all()
    slopes, se = fit.location_slope, np.sqrt(fit.covariance[:, 1, 1])
    assert abs(slopes.mean() - 0.05) < 3 * slopes.std() / math.sqrt(500), slopes.mean()
    coverage = np.mean(np.abs(slopes - 0.05) <= Z975 * se)
    assert 0.90 <= coverage <= 0.98, coverage
    assert 0.8 < np.median(se) / slopes.std() < 1.2
    assert abs(np.median(fit.scale) - 5.0) < 0.3 and abs(np.median(fit.shape) - 0.1) < 0.08
    # the intercept is the location at year 0: at the centre of the data it is the truth
    centre = fit.location_intercept + fit.location_slope * years.mean()
    assert abs(centre.mean() - (25.0 + 0.05 * (years.mean() - 1951.0))) < 3 * centre.std() / math.sqrt(500)


def test_likelihood_ratio_test_size_without_a_trend() -> None:
    """No trend: 2 (nll_stationary - nll) exceeds chi-square(1)'s 95 % quantile in about 5 % of 500 cells."""
    rng = np.random.default_rng(78)
    years = np.arange(1951.0, 2011.0)
    maxima = gev_draw(rng, np.full((500, 60), 25.0), 5.0, 0.1)
    fit = gev_trend.fit(maxima, years, np.full(500, 60))
    statistic = 2 * (fit.nll_stationary - fit.nll)
    assert statistic.min() >= -2e-9
    assert 0.02 <= np.mean(statistic > Z975**2) <= 0.10


# -- 5. rows not fitted, bounds, padding, broadcasting -------------------------------------------------------------
def close(got: np.ndarray, want: np.ndarray, atol: np.ndarray) -> None:
    """|got - want| <= atol elementwise (atol an array)."""
    bad = ~(np.abs(got - want) <= atol)
    assert not bad.any(), (np.flatnonzero(bad), got[bad], want[bad])


def all_nan(fit: gev_trend.Fit, rows) -> bool:
    return all(np.isnan(getattr(fit, f)[rows]).all() for f in ("location_intercept", "location_slope", "scale",
                                                                 "shape", "nll", "nll_stationary", "covariance"))


def test_rows_not_fitted() -> None:
    rng = np.random.default_rng(4)
    years = np.arange(1990.0, 2000.0)
    good = gev_draw(rng, 10.0 + 0.1 * (years - 1990), 1.0, 0.1)
    rows = [
        (good, years),  # fitted
        (good[:3], years[:3]),  # three maxima, four parameters: the scale runs to 0 (no maximum): not
        (good[:2], years[:2]),  # two: not
        (good[:1], years[:1]),  # one: not
        (np.array([]), np.array([])),  # none: not
        (np.full(10, 4.25), years),  # all equal: not
        (good, np.full(10, 2000.0)),  # a constant covariate: not
        (good[:5], np.array([2000.0, 2000.0, 2000.0, 2000.0, 2000.0])),  # constant over the counted values
        (3.0 + 0.5 * (years - 1990), years),  # exactly on a line in the covariate: not
        (3.0 + 0.5 * (years - 1990) + np.r_[np.zeros(9), 1e-3], years),  # on it but for one: the scale runs to 0
    ]
    maxima, covariate, count = padded(rows, 12)
    covariate[7, 5:] = np.arange(2001.0, 2008.0)  # ... however the padding varies
    maxima[5, 10:] = [1.0, 2.0]
    fit = gev_trend.fit(maxima, covariate, count)
    assert np.isfinite(fit.nll[0]) and np.isfinite(fit.covariance[0]).all()
    assert all_nan(fit, slice(1, None))
    assert not fit.at_bound[1:].any()
    empty = gev_trend.fit(np.empty((0, 4)), np.empty(4), np.empty(0, int))
    assert empty.nll.shape == (0,) and empty.covariance.shape == (0, 4, 4) and empty.at_bound.shape == (0,)


def test_padding_is_never_read_and_a_1d_covariate_broadcasts(cells) -> None:
    maxima, covariate, count, fit = cells
    rows = np.arange(0, count.size, 7)
    junk = np.where(maxima[rows] == PAD, -PAD, maxima[rows])
    junk_c = np.where(covariate[rows] == PAD, 17.0, covariate[rows])
    again = gev_trend.fit(junk, junk_c, count[rows])
    for f in ("location_intercept", "location_slope", "scale", "shape", "nll", "nll_stationary", "covariance"):
        np.testing.assert_array_equal(getattr(again, f), getattr(fit, f)[rows], err_msg=f)
    # one 1-D covariate for every row is the same as it repeated
    years = np.arange(1950.0, 1990.0)
    rng = np.random.default_rng(6)
    m = gev_draw(rng, np.broadcast_to(12.0 + 0.03 * (years - 1950), (8, 40)), 2.0, 0.2)
    one, tiled = gev_trend.fit(m, years, np.full(8, 40)), gev_trend.fit(m, np.tile(years, (8, 1)), np.full(8, 40))
    for f in ("location_intercept", "location_slope", "scale", "shape", "nll", "covariance"):
        np.testing.assert_array_equal(getattr(one, f), getattr(tiled, f), err_msg=f)


def test_rows_at_a_bound_of_the_shape() -> None:
    """Few maxima of a bounded parent (uniform), few of a very heavy tail: estimates at xi = -1 (the corner,
    whose closed form the linear programme gives) and xi = 3 (the region's top), flagged, with NaN covariance;
    no search here finds a lower -log L."""
    rng = np.random.default_rng(5)
    years = np.arange(2001.0, 2011.0)
    found_low, found_high = [], []
    for _ in range(20):
        x = rng.uniform(size=(40, 10)) + 0.02 * (years - 2001)
        heavy = gev_draw(rng, np.broadcast_to(0.05 * (years - 2001), (40, 10)), 1.0, 2.0)
        maxima = np.concatenate([x, heavy])
        fit = gev_trend.fit(maxima, years, np.full(80, 10))
        with np.errstate(invalid="ignore"):
            assert np.array_equal(fit.at_bound, (fit.shape == -1.0) | (fit.shape == 3.0))
        assert np.isnan(fit.covariance[fit.at_bound]).all()
        assert np.isfinite(fit.covariance[~fit.at_bound]).all()
        for r in np.flatnonzero(fit.shape == -1.0):
            found_low.append((maxima[r], params(fit, r), fit.nll[r]))
        for r in np.flatnonzero(fit.shape == 3.0):
            found_high.append((maxima[r], params(fit, r), fit.nll[r]))
        if len(found_low) >= 4 and len(found_high) >= 4:
            break
    assert len(found_low) >= 4 and len(found_high) >= 4
    for x, p, nll in found_low[:4]:
        value, q = corner(x, years)
        y = (x - p[0] - p[1] * years) / p[2]
        assert y.max() <= 1.0 + 1e-10  # inside the support (its upper end at the highest point)
        assert nll == pytest.approx(x.size * math.log(p[2]) + (1.0 - y).sum(), rel=1e-10)
        assert nll == pytest.approx(value, rel=1e-10)
        np.testing.assert_allclose(p[1:3], q[1:3], rtol=1e-6)
        assert nll <= Reference(x, years).best()[0] + 1e-9 * abs(nll)
    for x, p, nll in found_high[:4]:
        assert nll == pytest.approx(plain_nll(x, p[0] + p[1] * years, p[2], p[3]), rel=1e-9)
        assert nll <= Reference(x, years).best()[0] + 1e-9 * abs(nll)


# -- 6. invariances -----------------------------------------------------------------------------------------------
def test_invariances(cells) -> None:
    maxima, covariate, count, fit = cells
    rows = np.arange(0, count.size, 4)
    base = gev_trend.Fit(*(getattr(fit, f)[rows] for f in ("location_intercept", "location_slope", "scale", "shape",
                                                           "nll", "nll_stationary", "at_bound", "covariance")))
    pad = maxima[rows] == PAD
    sigma = base.scale
    for shift in (-1950.0, 1000.0, 0.3):
        moved = gev_trend.fit(maxima[rows], np.where(pad, PAD, covariate[rows] + shift), count[rows])
        np.testing.assert_allclose(moved.nll, base.nll, rtol=1e-9)
        np.testing.assert_allclose(moved.nll_stationary, base.nll_stationary, rtol=1e-12)
        close(moved.location_slope, base.location_slope, 1e-6 * sigma)
        close(moved.location_intercept, base.location_intercept - base.location_slope * shift,
              1e-6 * sigma * (1 + np.abs(covariate[rows, 0] + shift)))
        np.testing.assert_allclose(moved.scale, sigma, rtol=1e-6)
        np.testing.assert_allclose(moved.shape, base.shape, rtol=0, atol=1e-6)
    for factor in (10.0, 0.01):
        scaled = gev_trend.fit(np.where(pad, PAD, maxima[rows] * factor), covariate[rows], count[rows])
        np.testing.assert_allclose(scaled.nll, base.nll + count[rows] * math.log(factor), rtol=1e-9)
        np.testing.assert_allclose(scaled.nll_stationary, base.nll_stationary + count[rows] * math.log(factor),
                                   rtol=1e-9)
        np.testing.assert_allclose(scaled.scale, factor * sigma, rtol=1e-6)
        close(scaled.location_slope, factor * base.location_slope, 1e-6 * factor * sigma)
        close(scaled.location_intercept + scaled.location_slope * covariate[rows, 0],
              factor * (base.location_intercept + base.location_slope * covariate[rows, 0]), 1e-6 * factor * sigma)
        np.testing.assert_allclose(scaled.shape, base.shape, rtol=0, atol=1e-6)
