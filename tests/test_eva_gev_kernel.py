"""The GEV kernel (``climio.eva.gev``) against independent references.

The central reference is an oracle written here, sharing no code with the kernel: for scaled maxima it
minimises -log L over the scale in closed form at a fixed shape and upper/lower end point, searches the end
point on a fine grid (no unimodality assumed) and polishes, does that for 401 shapes in [-0.99, 3], polishes
the best shape with a bounded 1-D minimisation, and compares with the closed-form xi = -1 boundary value.
Its final value is recomputed from its parameters with ``scipy.stats.genextreme.logpdf``, so it is an
achievable likelihood, never an optimistic one.
"""

from __future__ import annotations

import math
import warnings
from decimal import Decimal, getcontext

import numpy as np
import pytest
from scipy import optimize, stats

from climio.eva import gev

# ---------------------------------------------------------------------------------------------------------
# The oracle.
#
# With z_i = 1 + xi (x_i - mu)/sigma = xi (x_i - b)/sigma, b = mu - sigma/xi the end point (below the
# smallest maximum for xi > 0, above the largest for xi < 0), minimising over sigma is closed form:
#     min_sigma -log L = n + n log(mean u_i^(-1/xi)) + (1 + 1/xi) sum log u_i,   u_i = xi (x_i - b) > 0.
# Writing delta = |b - r| (r = min or max of the maxima), d_i = |x_i - r| and eta = log(|xi| delta):
#     u_i = e^eta e^L_i,  L_i = log1p(|xi| d_i e^-eta),
#     P(xi, eta) = n (1 + eta + log mean exp(-L_i/xi)) + sum L_i + sum L_i/xi,
# smooth through xi -> 0 (L_i/xi -> +-d_i e^-eta, the Gumbel y), with
#     sigma = exp(eta - xi l),  mu = r + e^eta expm1(-xi l)/xi,  l = log mean exp(-L_i/xi).
# So the 2-D problem in (mu, log sigma) at fixed xi is exactly the 1-D problem in eta, which the oracle solves
# by a fine grid (step 0.375 over [-30, 6]) plus a bounded polish of the best grid point's bracket.
# ---------------------------------------------------------------------------------------------------------

ORACLE_XI = np.linspace(-0.99, 3.0, 401)  # no grid point at exactly 0
ORACLE_ETA = np.linspace(-30.0, 6.0, 97)  # eta for maxima scaled to range 1
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def profile_eta(xi, eta, d):
    """P(xi, eta) and l for shapes xi != 0 all on one side of 0; d the distances |x - r| of the scaled maxima
    to the reference end (min for xi > 0, max for xi < 0). xi and eta broadcast; d runs on a new last axis."""
    xi, eta = np.broadcast_arrays(np.asarray(xi, float), np.asarray(eta, float))
    a = np.exp(-eta)[..., None] * d
    big_l = np.log1p(np.abs(xi)[..., None] * a)
    g = big_l * (1.0 / xi)[..., None]
    m = (-g).max(-1)
    log_mean = m + np.log(np.exp(-g - m[..., None]).sum(-1) / d.size)
    return d.size * (1.0 + eta + log_mean) + big_l.sum(-1) + g.sum(-1), log_mean


def profile_eta_grid(xi: np.ndarray, d: np.ndarray, eta: np.ndarray = ORACLE_ETA) -> np.ndarray:
    """:func:`profile_eta`'s P at every (xi, eta) (xi (k,) on one side of 0): the same operations, in place in
    one (k, eta, d) array instead of a fresh one for each."""
    t = np.multiply.outer(np.abs(xi), np.exp(-eta)[:, None] * d)
    np.log1p(t, out=t)  # L
    sum_l = t.sum(-1)
    t *= (1.0 / xi)[:, None, None]  # g
    sum_g = t.sum(-1)
    m = -t.min(-1)  # max(-g)
    np.negative(t, out=t)
    t -= m[..., None]
    np.exp(t, out=t)
    log_mean = m + np.log(t.sum(-1) / d.size)
    return d.size * (1.0 + eta + log_mean) + sum_l + sum_g


def profile_eta_at(xi: float, eta: float, d: np.ndarray) -> tuple[float, float]:
    """:func:`profile_eta` at one (xi, eta), written for scalars."""
    big_l = np.log1p(abs(xi) * (math.exp(-eta) * d))
    g = big_l * (1.0 / xi)
    m = -float(g.min())
    log_mean = m + math.log(float(np.exp(-g - m).sum()) / d.size)
    return d.size * (1.0 + eta + log_mean) + float(big_l.sum()) + float(g.sum()), log_mean


def oracle_best_eta(xi: float, d_low: np.ndarray, d_high: np.ndarray) -> tuple[float, float]:
    """(min over eta of P, its eta) at one shape: the eta grid, then Brent on the best grid point's bracket."""
    xi = xi if xi != 0.0 else 1e-300
    d = d_low if xi > 0 else d_high
    p = profile_eta_grid(np.array([xi]), d)[0]
    j = int(np.argmin(p))
    lo, hi = ORACLE_ETA[max(j - 1, 0)], ORACLE_ETA[min(j + 1, ORACLE_ETA.size - 1)]
    r = optimize.minimize_scalar(lambda e: profile_eta_at(xi, e, d)[0], bounds=(lo, hi), method="bounded",
                                 options={"xatol": 1e-10})
    return (float(r.fun), float(r.x)) if r.fun <= p[j] else (float(p[j]), float(ORACLE_ETA[j]))


def oracle_grid_profile(d_low: np.ndarray, d_high: np.ndarray) -> np.ndarray:
    """P at every ORACLE_XI: the full (xi, eta) grid, then golden section (25 steps, all shapes at once) on each
    shape's best eta bracket."""
    out = np.empty(ORACLE_XI.size)
    for side, d in ((ORACLE_XI < 0, d_high), (ORACLE_XI > 0, d_low)):
        xi = ORACLE_XI[side]
        p = profile_eta_grid(xi, d)
        j = p.argmin(1)
        a = ORACLE_ETA[np.maximum(j - 1, 0)]
        b = ORACLE_ETA[np.minimum(j + 1, ORACLE_ETA.size - 1)]
        c, e = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
        fc, fe = profile_eta(xi, c, d)[0], profile_eta(xi, e, d)[0]
        for _ in range(25):
            left = fc < fe
            a, b = np.where(left, a, c), np.where(left, e, b)
            new = np.where(left, b - GOLDEN * (b - a), a + GOLDEN * (b - a))
            fn = profile_eta(xi, new, d)[0]
            c, e, fc, fe = (np.where(left, new, e), np.where(left, c, new),
                            np.where(left, fn, fe), np.where(left, fc, fn))
        out[side] = np.minimum(np.minimum(fc, fe), p.min(1))
    return out


def oracle(x: np.ndarray) -> dict:
    """The independent maximum likelihood fit of one cell's maxima: best interior point over xi in [-0.99, 3]
    (value recomputed with scipy's logpdf), the xi = -1 boundary value, and how many local minima the
    shape profile has on the grid."""
    x = np.asarray(x, float)
    n = x.size
    lo, hi = x.min(), x.max()
    span = hi - lo
    d_low, d_high = (x - lo) / span, (hi - x) / span
    prof = oracle_grid_profile(d_low, d_high)
    k = int(np.argmin(prof))
    seen: dict[float, tuple[float, float]] = {}  # each shape's inner minimum, computed once

    def best_eta(s: float) -> tuple[float, float]:
        if s not in seen:
            seen[s] = oracle_best_eta(s, d_low, d_high)
        return seen[s]

    r = optimize.minimize_scalar(lambda s: best_eta(s)[0],
                                 bounds=(ORACLE_XI[max(k - 1, 0)], ORACLE_XI[min(k + 1, ORACLE_XI.size - 1)]),
                                 method="bounded", options={"xatol": 1e-9})
    xi = float(r.x)
    f, eta = best_eta(xi)
    if not f <= prof[k]:
        xi = float(ORACLE_XI[k])
        f, eta = best_eta(xi)
    log_mean = float(profile_eta(xi, eta, d_low if xi > 0 else d_high)[1])
    sigma = math.exp(eta - xi * log_mean)
    mu = (0.0 if xi > 0 else 1.0) + math.exp(eta) * math.expm1(-xi * log_mean) / xi
    loc, scale = lo + span * mu, span * sigma
    inner = (prof[1:-1] < prof[:-2]) & (prof[1:-1] < prof[2:])
    minima = int(inner.sum() + (prof[0] < prof[1]) + (prof[-1] < prof[-2]))
    return {"value": float(-stats.genextreme.logpdf(x, -xi, loc, scale).sum()),
            "profile": f + n * math.log(span), "xi": xi, "loc": loc, "scale": scale, "minima": minima,
            "bound": boundary_nll(x)}


def boundary_nll(x: np.ndarray) -> float:
    """The xi = -1 supremum n log(mean(max - x)) + n."""
    return x.size * math.log(np.mean(x.max() - x)) + x.size


def plain_nll(x: np.ndarray, location: float, scale: float, shape: float, at_bound: bool) -> float:
    """-log L at an estimate by the plain formula; at the xi = -1 boundary (where z = 0 at the largest maximum
    and gev.negative_log_likelihood answers inf) the limit n log sigma + sum (max - x)/sigma. (An estimate at
    the upper bound of the shape, XI_MAX, is an ordinary point of the likelihood.)"""
    if at_bound and shape == gev.XI_MIN:
        return x.size * math.log(scale) + np.sum(x.max() - x) / scale
    return gev.negative_log_likelihood(x, location, scale, shape)


def gev_cells(rng: np.random.Generator, n: np.ndarray, width: int) -> np.ndarray:
    """Rows of GEV maxima with random shape in [-0.9, 1.2], location in [-50, 50], log-uniform scale."""
    cells = n.size
    xi = rng.uniform(-0.9, 1.2, cells)
    loc = rng.uniform(-50.0, 50.0, cells)
    scale = np.exp(rng.uniform(math.log(0.05), math.log(30.0), cells))
    return stats.genextreme.rvs(-xi[:, None], loc=loc[:, None], scale=scale[:, None], size=(cells, width),
                                random_state=rng)


# ---------------------------------------------------------------------------------------------------------


def test_global_maximum_against_profile_oracle() -> None:
    """The fit is the global maximum: on 150 cells (n 8..60, a third with n <= 15, where the shape profile
    has several local minima and competes with the xi = -1 boundary) climio's nll, recomputed by the plain
    formula and equal to fit.nll, is never above the oracle's by more than 1e-6; and wherever climio's shape
    lies in the oracle's range the oracle does not beat it either (so the oracle is tight, not just an
    upper bound)."""
    rng = np.random.default_rng(20240601)
    n = np.concatenate([rng.integers(8, 16, 50), rng.integers(8, 61, 100)])
    x = gev_cells(rng, n, 60)
    fit = gev.fit(x, n)
    problems = []
    multimodal = 0
    for i in range(n.size):
        y = x[i, : n[i]]
        o = oracle(y)
        # the oracle's closed-form profile is what scipy's logpdf gives at its parameters
        assert o["value"] == pytest.approx(o["profile"], rel=1e-9, abs=1e-9), i
        multimodal += o["minima"] >= 2
        best = min(o["value"], o["bound"])
        own = plain_nll(y, fit.location[i], fit.scale[i], fit.shape[i], fit.at_bound[i])
        if not abs(own - fit.nll[i]) <= 1e-9 * max(1.0, abs(own)):
            problems.append(f"cell {i} (n={n[i]}): fit.nll {fit.nll[i]!r} but the plain formula at its parameters "
                            f"(shape {fit.shape[i]!r}, scale {fit.scale[i]!r}) gives {own!r}")
            continue
        if not own <= best + 1e-6:
            problems.append(f"cell {i} (n={n[i]}): climio nll {own!r} (shape {fit.shape[i]!r}) above the oracle "
                            f"{best!r} (shape {o['xi']!r}, boundary {o['bound']!r})")
        in_range = fit.at_bound[i] or ORACLE_XI[0] <= fit.shape[i] <= ORACLE_XI[-1]
        if in_range and not best <= own + 1e-6:
            problems.append(f"cell {i}: oracle {best!r} above climio {own!r} at shape {fit.shape[i]!r} in its range")
    assert not problems, "\n".join(problems)
    assert multimodal >= 5, f"only {multimodal} cells with a multimodal shape profile: the check lacks teeth"
    assert 0 < fit.at_bound.sum() < n.size


def test_never_worse_than_scipy_genextreme_fit() -> None:
    """On 200 cells, the nll at scipy.stats.genextreme.fit's estimate is never below climio's (beyond 1e-9),
    wherever scipy's shape is in climio's domain xi >= -1 (scipy may return xi < -1, where the likelihood is
    unbounded; those are counted and skipped). How often scipy stops short is reported."""
    rng = np.random.default_rng(77)
    n = rng.integers(8, 61, 200)
    x = gev_cells(rng, n, 60)
    fit = gev.fit(x, n)
    short = outside = 0
    worse = []
    gaps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n.size):
            y = x[i, : n[i]]
            c, loc, scale = stats.genextreme.fit(y)
            if -c < -1.0:
                outside += 1
                continue
            theirs = gev.negative_log_likelihood(y, loc, scale, -c)
            own = plain_nll(y, fit.location[i], fit.scale[i], fit.shape[i], fit.at_bound[i])
            if not theirs >= own - 1e-9 * max(1.0, abs(own)):
                worse.append(f"cell {i} (n={n[i]}): scipy {theirs!r} at shape {-c!r}, climio {own!r} at "
                             f"shape {fit.shape[i]!r}")
            if theirs > own + 1e-6:
                short += 1
                gaps.append(theirs - own)
    compared = n.size - outside
    report = (f"scipy stopped short (nll > climio's + 1e-6) on {short} of {compared} cells"
              f" (largest gap {max(gaps, default=0.0):.3g}); {outside} of {n.size} scipy fits had xi < -1")
    assert not worse, report + "\n" + "\n".join(worse)
    print(report)


def test_affine_equivariance() -> None:
    """Fitting a x + b gives location a mu + b, scale a sigma, the same shape, nll + n log a, and the same
    at_bound. The nll is checked to 1e-9 relative; the parameters to 1e-6, because near its maximum the
    likelihood is flat: a shape 1e-7 away changes the nll by ~1e-13, which is rounding, so no value-based
    optimiser can place the parameters closer (the kernel's own mapped-back parameters are therefore also
    required to give the original nll to 1e-12)."""
    rng = np.random.default_rng(5)
    n = rng.integers(10, 61, 40)
    x = gev_cells(rng, n, 60)
    base = gev.fit(x, n)
    for a, b in ((3.7, -250.0), (1e-3, 7.0), (123.456, 1e4)):
        moved = gev.fit(a * x + b, n)
        assert np.array_equal(moved.at_bound, base.at_bound)
        assert moved.nll == pytest.approx(base.nll + n * math.log(a), rel=1e-9, abs=1e-9)
        assert np.all(np.abs(moved.location - (a * base.location + b)) <= 1e-6 * a * base.scale)
        assert moved.scale == pytest.approx(a * base.scale, rel=1e-6)
        assert moved.shape == pytest.approx(base.shape, rel=0, abs=1e-6)
        for i in range(n.size):
            y = x[i, : n[i]]
            back = plain_nll(y, (moved.location[i] - b) / a, moved.scale[i] / a, moved.shape[i], moved.at_bound[i])
            assert back == pytest.approx(base.nll[i], rel=1e-12, abs=1e-11), (a, b, i)


def test_power_of_two_scaling_is_exact() -> None:
    """Scaling by a power of two changes no rounding anywhere in the kernel's [0, 1] rescaling, so location,
    scale and shape scale bit for bit (and nll shifts by n log 2^k to rounding)."""
    rng = np.random.default_rng(6)
    n = rng.integers(8, 61, 30)
    x = gev_cells(rng, n, 60)
    base = gev.fit(x, n)
    for a in (2.0**-7, 32.0):
        moved = gev.fit(a * x, n)
        assert np.array_equal(moved.location, a * base.location)
        assert np.array_equal(moved.scale, a * base.scale)
        assert np.array_equal(moved.shape, base.shape)
        assert moved.nll == pytest.approx(base.nll + n * math.log(a), rel=1e-13, abs=1e-12)


def test_padding_and_neighbours_do_not_change_a_fit() -> None:
    """A cell fitted inside a wide array, with garbage (NaN, inf, huge) beyond its count and arbitrary
    neighbours in any order, gives bit for bit what it gives fitted alone in an array of exactly its width."""
    rng = np.random.default_rng(8)
    n = rng.integers(8, 61, 24)
    x = gev_cells(rng, n, 60)
    wide = np.full((n.size, 97), np.nan)
    wide[:, :60] = x
    junk = np.array([np.nan, np.inf, -np.inf, 1e300, -1e300, 0.0])
    for i in range(n.size):
        wide[i, n[i]:] = junk[rng.integers(0, junk.size, 97 - n[i])]
    order = rng.permutation(n.size)
    together = gev.fit(np.asfortranarray(wide[order]), n[order])
    for pos, i in enumerate(order):
        alone = gev.fit(x[i : i + 1, : n[i]].copy(), n[i : i + 1])
        for field in ("location", "scale", "shape", "nll", "at_bound"):
            assert np.array_equal(getattr(together, field)[pos], getattr(alone, field)[0]), (i, field)


def test_constant_rows_and_empty_cells_stay_nan() -> None:
    """Rows without spread (all equal, a single value) and count 0 give NaN estimates, not at_bound, and do not
    disturb their neighbours."""
    rng = np.random.default_rng(9)
    x = gev_cells(rng, np.full(6, 30), 30)
    x[1] = 4.25
    x[3, :5] = -2.0
    count = np.array([30, 30, 0, 5, 1, 30])
    fit = gev.fit(x, count)
    for i in (1, 2, 3, 4):
        assert np.isnan([fit.location[i], fit.scale[i], fit.shape[i], fit.nll[i]]).all(), i
        assert not fit.at_bound[i]
    for i in (0, 5):
        alone = gev.fit(x[i : i + 1], count[i : i + 1])
        assert fit.shape[i] == alone.shape[0] and fit.nll[i] == alone.nll[0]


def test_bounded_parent_gives_the_closed_form_boundary_fit() -> None:
    """Block maxima of uniforms (a GEV with xi = -1 in the limit) often fit best on the xi = -1 boundary. There
    the fit must be exactly the closed form (shape -1, scale mean(max - x), location max - scale, nll
    n log scale + n); that value must be the limit of interior likelihoods (checked at xi = -1 + 1e-9), and the
    oracle must find no interior point better. Interior fits of the same parent must beat the boundary."""
    rng = np.random.default_rng(10)
    n = rng.integers(10, 61, 100)
    x = rng.uniform(size=(100, 60, 30)).max(-1) * 7.0 - 3.0
    fit = gev.fit(x, n)
    assert 20 < fit.at_bound.sum() < 100
    checked = 0
    for i in range(n.size):
        y = x[i, : n[i]]
        bound = boundary_nll(y)
        if not fit.at_bound[i]:
            assert fit.shape[i] > -1.0 and fit.nll[i] < bound, i
            continue
        gap = np.mean(y.max() - y)
        assert fit.shape[i] == -1.0
        assert fit.scale[i] == pytest.approx(gap, rel=1e-12)
        assert fit.location[i] == pytest.approx(y.max() - gap, rel=1e-12, abs=1e-12)
        assert fit.nll[i] == pytest.approx(bound, rel=1e-12, abs=1e-12)
        eps = 1e-9
        inside = gev.negative_log_likelihood(y, y.max() + eps * gap - gap / (1.0 - eps), gap, -1.0 + eps)
        assert inside == pytest.approx(bound, abs=1e-6), i
        if checked < 8:
            o = oracle(y)
            assert o["value"] >= bound - 1e-9, (i, o)
            checked += 1


def test_gumbel_neighbourhood_matches_gumbel_fit() -> None:
    """Near xi = 0 the fit is smooth and equals the Gumbel fit. With G Gumbel, (exp(lam G) - 1)/lam is GEV(lam);
    lam is root-found so that climio's shape is 0 to within 1e-6. There scipy.stats.gumbel_r.fit gives the
    same location and scale (1e-6 relative: the gap is O(shape)), climio's nll is not above the Gumbel one and
    not below it by more than 1e-8; and the shape moves monotonically with lam through 0."""
    rng = np.random.default_rng(12)
    g = stats.gumbel_r.rvs(size=300, random_state=rng)
    count = np.array([g.size])

    def sample(lam: float) -> np.ndarray:
        return 5.0 + 2.0 * (g if lam == 0.0 else np.expm1(lam * g) / lam)

    def shape(lam: float) -> float:
        return float(gev.fit(sample(lam)[None], count).shape[0])

    lam = optimize.brentq(shape, -0.3, 0.3, xtol=1e-13)
    y = sample(lam)
    fit = gev.fit(y[None], count)
    assert abs(fit.shape[0]) <= 1e-6
    loc, scale = stats.gumbel_r.fit(y)
    assert fit.location[0] == pytest.approx(loc, rel=1e-6)
    assert fit.scale[0] == pytest.approx(scale, rel=1e-6)
    gumbel = gev.negative_log_likelihood(y, loc, scale, 0.0)
    own = gev.negative_log_likelihood(y, fit.location[0], fit.scale[0], fit.shape[0])
    assert own == pytest.approx(fit.nll[0], rel=1e-12)
    assert gumbel - 1e-8 <= own <= gumbel + 1e-9
    shapes = [shape(lam + j * 1e-5) for j in range(-3, 4)]
    assert np.all(np.diff(shapes) > 0), shapes
    assert shapes[2] < 0.0 < shapes[4]


def test_return_level_matches_formula_and_scipy() -> None:
    """return_level equals mu + sigma ((-log(1 - 1/T))^-xi - 1)/xi (Gumbel: mu - sigma log(-log(1 - 1/T)))
    evaluated with 50-digit decimals, and scipy's genextreme.isf(1/T, -xi, mu, sigma), to 1e-10 relative
    (relative to |mu| + sigma |h|, the size of the terms summed), including xi = 0 and xi = +-1e-13."""
    getcontext().prec = 50
    shapes = [-1.0, -0.5, -1e-7, -1e-13, 0.0, 1e-13, 1e-7, 0.3, 1.5]
    params = [(mu, s, xi) for mu in (10.0, -250.0) for s in (0.5, 4.0) for xi in shapes]
    mu, sigma, xi = (np.array(v) for v in zip(*params))
    for period in (1.5, 2.0, 10.0, 100.0, 1e4):
        got = gev.return_level(mu, sigma, xi, period)
        y = -(Decimal(1) - Decimal(1) / Decimal(period)).ln()
        for j, (m, s, k) in enumerate(params):
            h = -y.ln() if k == 0.0 else ((-Decimal(k) * y.ln()).exp() - 1) / Decimal(k)
            ref = float(Decimal(m) + Decimal(s) * h)
            size = abs(m) + s * abs(float(h))
            assert abs(got[j] - ref) <= 1e-10 * size, (m, s, k, period, got[j], ref)
            assert abs(got[j] - stats.genextreme.isf(1.0 / period, -k, m, s)) <= 1e-10 * size, (m, s, k, period)


def test_estimate_is_a_stationary_local_minimum() -> None:
    """The docstring's unimodality of Q in log tau, seen through the public fit: at every interior estimate
    the plain nll (central differences in (mu/sigma, log sigma, xi)) has a positive definite Hessian and a
    gradient so small that a Newton step would gain less than 1e-9 (|gradient| <= 1e-5 n besides). A fit
    stuck on the wrong side of a non-unimodal profile would not be stationary in all three directions."""
    rng = np.random.default_rng(13)
    n = rng.integers(15, 61, 60)
    x = gev_cells(rng, n, 60)
    fit = gev.fit(x, n)
    interior = 0
    for i in range(n.size):
        if fit.at_bound[i]:
            continue
        interior += 1
        y, s = x[i, : n[i]], fit.scale[i]

        def f(u: np.ndarray) -> float:
            return gev.negative_log_likelihood(y, u[0] * s, math.exp(u[1]), u[2])

        u0 = np.array([fit.location[i] / s, math.log(s), fit.shape[i]])
        eye = np.eye(3)
        h = 1e-6
        grad = np.array([(f(u0 + h * e) - f(u0 - h * e)) / (2 * h) for e in eye])
        k = 1e-3
        hess = np.array([[(f(u0 + k * (a + b)) - f(u0 + k * (a - b)) - f(u0 - k * (a - b)) + f(u0 - k * (a + b)))
                          / (4 * k * k) for b in eye] for a in eye])
        assert np.linalg.eigvalsh(hess).min() > 0.0, (i, hess)
        gain = 0.5 * grad @ np.linalg.solve(hess, grad)
        assert gain < 1e-9 and np.abs(grad).max() <= 1e-5 * n[i], (i, grad, gain)
    assert interior > 30


def test_profile_is_unimodal_in_log_tau() -> None:
    """The docstring's claim itself, on the oracle's independent profile: at fixed shape, P is unimodal in
    eta (= -log tau) for GEV samples of every kind (n 5..80, xi -1..2) and shapes over (-1, 6): along a fine eta
    grid its slope changes sign at most once, from falling to rising."""
    rng = np.random.default_rng(14)
    eta = np.linspace(-40.0, 8.0, 801)
    shapes = np.concatenate([np.linspace(-0.999, -0.001, 20), np.linspace(0.001, 6.0, 20)])
    for c in range(40):
        n = int(rng.integers(5, 81))
        y = stats.genextreme.rvs(-rng.uniform(-1.0, 2.0), size=n, random_state=rng)
        d_low = (y - y.min()) / np.ptp(y)
        for side, d in ((shapes < 0, 1.0 - d_low), (shapes > 0, d_low)):
            p = profile_eta_grid(shapes[side], d, eta)
            slope = np.diff(p, axis=1)
            for r in range(p.shape[0]):
                sign = np.sign(slope[r][np.abs(slope[r]) > 1e-9 * np.abs(p[r]).max()])
                changes = np.flatnonzero(np.diff(sign) != 0)
                assert changes.size == 0 or (changes.size == 1 and sign[changes[0]] < 0), (c, shapes[side][r])


# Two samples of n = 9 on which the profile still falls at xi = 3 (the kernel stops there: XI_MAX).
# For xi > n - 1 the likelihood is unbounded: with the lower end point -> the smallest maximum and
# sigma -> 0, -log L ~ (1 - (n - 1)/xi) log(sigma) -> -inf, so no maximum exists there.
SMALL_SAMPLES = [
    # an ordinary draw from GEV(xi = 0.45)
    np.array([-0.6147317652498642, -0.5343907532414021, -0.6054058383659413, -0.7206751423645665,
              -0.2146821200099273, -0.7381584953282251, -0.7508995746200585, -0.7502189229050005,
              -0.3451859446714199]),
    # a draw from GEV(xi = 1.1) with one very large maximum
    np.array([-10.65369135970539, -10.43229153521272, -10.003379622328021, -10.661789485753657,
              -10.453750678243132, -10.618798555382549, 274.6577782671504, -10.59114113769046,
              -10.660550526829976]),
]


@pytest.mark.parametrize("case", range(len(SMALL_SAMPLES)))
def test_small_samples_stay_out_of_the_unbounded_region(case: int) -> None:
    """For xi > n - 1 the GEV likelihood has no maximum (shown here with the oracle's exact profile: it falls
    without bound as eta -> -inf), so a fit there cannot be the global maximum it claims; and whatever the fit
    returns, its parameters must reproduce its nll by the plain formula."""
    y = SMALL_SAMPLES[case]
    n = y.size
    d_low = (y - y.min()) / np.ptp(y)
    xi = n + 1.0
    values = [float(profile_eta(xi, e, d_low)[0]) for e in (-50.0, -100.0, -200.0, -400.0)]
    assert np.all(np.diff(values) < -10.0), values  # the premise: unbounded beyond n - 1
    fit = gev.fit(y[None], np.array([n]))
    own = gev.negative_log_likelihood(y, fit.location[0], fit.scale[0], fit.shape[0])
    assert own == pytest.approx(fit.nll[0], rel=1e-9), (fit, own)
    assert fit.shape[0] < n - 1, fit
