"""Confidence intervals of block-maxima (GEV) return levels, against independent references.

* ``gev_intervals.information``: against a Richardson-extrapolated central-difference Hessian of the plain
  ``gev.negative_log_likelihood`` in (location, scale, shape), at fits and at arbitrary points (shapes from -0.8
  to 2.5, |xi| < 1e-6 and exactly 0);
* the normal (delta-method) interval and the standard errors: from that numerical Hessian, inverted in numpy;
  the interval is the return level -/+ 1.959964 standard errors of it;
* the profile interval: each end against a slow reference (the inner minimum over scale and shape from a grid
  over both, polished by Newton's method on central differences (``helpers/eva_reference.py``) from the best point
  of every basin of the grid, and the xi = -1 edge in closed form; the end by widening steps, then scipy's
  ``brentq`` on the level; on every end, the reference profile below the target on the way out and crossing it at
  the end), and at each end the plain -log L at the inner optimum the implementation returns is the maximum's
  plus half the chi-square(1) quantile;
* coverage (the acceptance check): thousands of cells of 40 annual maxima from a known GEV, 100-year level;
* cells at a bound of the shape, not fitted, or without a positive definite information.

The return level is z = mu + sigma g(xi), g(xi) = (exp(xi L) - 1)/xi, L = -log(-log(1 - 1/T)).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import level_factor
from scipy import optimize, stats

from climio.eva import gev, gev_intervals, intervals

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
import eva_reference  # noqa: E402

LEVEL = 0.95
Z95 = 1.959963984540054  # the standard normal's 0.975 quantile
HALF_CHI2 = Z95**2 / 2.0  # 1.920729..., half the chi-square(1) 0.95 quantile
PAD = 1e6  # what rows hold past their count: any use of it shows


# -- independent references ---------------------------------------------------------------------------------------
def big_l_of(period: float) -> float:
    return -math.log(-math.log1p(-1.0 / period))


def numerical_hessian(x: np.ndarray, mu: float, sigma: float, xi: float, rel: float = 0.01) -> np.ndarray:
    """Hessian of ``gev.negative_log_likelihood`` in (mu, sigma, xi) by central differences at steps h, h/2, h/4,
    Richardson-extrapolated twice (error O(h^6)). Each step is a fraction ``rel`` of the change of that parameter
    that changes some w = 1 + xi (x - mu)/sigma by its own size (so points near the support's end are fine)."""
    y = (x - mu) / sigma
    w = 1.0 + xi * y
    assert np.all(w > 0)
    h = rel * np.array([sigma * min(1.0, 1.0 / max(float(np.max(np.abs(xi / w))), 1e-300)),
                        sigma * min(1.0, 1.0 / max(float(np.max(np.abs((w - 1.0) / w))), 1e-300)),
                        min(1.0, 1.0 / max(float(np.max(np.abs(y / w))), 1e-300))])
    p0 = np.array([mu, sigma, xi])

    def f(p: np.ndarray) -> float:
        return gev.negative_log_likelihood(x, *p)

    def differences(step: np.ndarray) -> np.ndarray:
        out = np.empty((3, 3))
        f0 = f(p0)
        for i in range(3):
            ei = np.eye(3)[i] * step[i]
            out[i, i] = (f(p0 + ei) - 2 * f0 + f(p0 - ei)) / step[i] ** 2
            for j in range(i):
                ej = np.eye(3)[j] * step[j]
                out[i, j] = out[j, i] = (f(p0 + ei + ej) - f(p0 + ei - ej) - f(p0 - ei + ej)
                                         + f(p0 - ei - ej)) / (4 * step[i] * step[j])
        return out

    d = [differences(h / 2**k) for k in range(3)]
    r1 = [(4 * d[k + 1] - d[k]) / 3 for k in range(2)]
    return (16 * r1[1] - r1[0]) / 15


def delta_method(x: np.ndarray, mu: float, sigma: float, xi: float, big_l: float
                 ) -> tuple[float, float, np.ndarray]:
    """(z_hat, its standard error, the parameters' standard errors) from the numerical Hessian."""
    cov = np.linalg.inv(numerical_hessian(x, mu, sigma, xi))
    g, g1 = level_factor(xi, big_l)
    grad = np.array([1.0, g, sigma * g1])
    return mu + sigma * g, math.sqrt(grad @ cov @ grad), np.sqrt(np.diag(cov))


def nll_at_level(x: np.ndarray, z: float, big_l: float, xi: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """-log L with the level held at z (mu = z - sigma g(xi)), vectorized over xi and sigma (same shape); inf
    outside the support. With y = (x - mu)/sigma = (x - z)/sigma + g, xi y = expm1(xi L) + (xi/sigma) (x - z):
    one product and one sum per maximum before the logarithm."""
    xi, sigma = np.broadcast_arrays(np.asarray(xi, float), np.asarray(sigma, float))
    tiny = np.abs(xi) < 1e-12
    safe = np.where(tiny, 1.0, xi)
    d = x - z
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.expm1(xi * big_l)[..., None] + (xi / sigma)[..., None] * d
        log_w = np.log1p(t)
        a = log_w / safe[..., None]
        out = x.size * np.log(sigma) + (log_w + a + np.exp(-a)).sum(-1)
        if tiny.any():
            y = d / sigma[..., None] + big_l
            out = np.where(tiny, x.size * np.log(sigma) + (y + np.exp(-y)).sum(-1), out)
        ok = (t.min(-1) > -1.0) & (sigma > 0)
    out = np.where(ok & np.isfinite(out), out, np.inf)
    return out


REF_XI = -1.0 + (np.arange(120) + 0.5) * 4.0 / 120  # [-0.983, 2.983]: no point at 0
REF_V = np.linspace(-30.0, 4.0, 52)


def reference_profile(x: np.ndarray, z: float, big_l: float, sigma_ref: float) -> tuple[float, float, float]:
    """(min over sigma > 0, -1 <= xi <= 3 of -log L with the level held at z, its sigma and xi): a grid over xi and
    v, sigma = sigma_0(xi) + sigma_ref e^v (sigma_0 the support's edge at that xi, if any), then from the best grid
    point of every basin of the grid's profile over xi within 1 of the best, Newton's method on central
    differences in (log sigma, xi) (all basins at once: ``eva_reference.newton_minimize``); and the xi = -1 edge
    of the region, in closed form."""
    top, bottom = float(x.max()), float(x.min())

    def edge(xi: np.ndarray) -> np.ndarray:  # the least sigma of the support: e^(xi L) + xi (x - z)/sigma > 0
        reach = np.maximum(xi * (z - bottom), xi * (z - top))
        return np.maximum(reach, 0.0) * np.exp(-xi * big_l)

    xi = REF_XI[:, None] + 0 * REF_V
    sigma = edge(xi) + sigma_ref * np.exp(REF_V)[None, :]
    # in blocks of shapes whose temporaries (under 128 kB) are reused, not mapped afresh from the system each time
    rows = max(1, 16000 // (REF_V.size * x.size))
    values = np.concatenate([nll_at_level(x, z, big_l, xi[k:k + rows], sigma[k:k + rows])
                             for k in range(0, REF_XI.size, rows)])
    best_v = values.argmin(1)
    profile = values[np.arange(REF_XI.size), best_v]
    least = profile.min()
    minima = [j for j in range(REF_XI.size) if profile[j] < least + 1.0
              and (j == 0 or profile[j] <= profile[j - 1]) and (j == REF_XI.size - 1 or profile[j] <= profile[j + 1])]

    def objective(p: np.ndarray) -> np.ndarray:  # p: (log sigma, xi) on each row
        return nll_at_level(x, z, big_l, p[:, 1], np.exp(p[:, 0]))

    def steps(p: np.ndarray) -> np.ndarray:
        """The longest differences: 1e-2 of the change of each parameter that changes some
        w = e^(xi L) + xi (x - z)/sigma by its own size (so that points near the support's end are fine)."""
        a = (x - z)[None, :] * np.exp(-p[:, :1])
        grow = np.exp(p[:, 1:] * big_l)
        w = grow + p[:, 1:] * a
        return 1e-2 * np.stack([np.minimum(1.0, np.min(w / np.maximum(np.abs(p[:, 1:] * a), 1e-300), 1)),
                                np.minimum(1.0, np.min(w / np.maximum(np.abs(big_l * grow + a), 1e-300), 1))], 1)

    best = (math.inf, math.nan, math.nan)
    if minima:
        starts = np.array([[math.log(float(edge(REF_XI[j])) + sigma_ref * math.exp(REF_V[best_v[j]])), REF_XI[j]]
                           for j in minima])
        points, values = eva_reference.newton_minimize(objective, starts, steps, lower=[-np.inf, -1.0],
                                                       upper=[np.inf, 3.0])
        j = int(np.argmin(values))
        best = (float(values[j]), math.exp(points[j, 0]), float(points[j, 1]))
    # xi = -1, the region's edge (a limit of interior points): there -log L = n log sigma + sum (b - x)/sigma, the
    # upper end point b = z + sigma e^-L at or above the largest maximum: n log sigma + S/sigma + n e^-L with
    # S = sum (z - x), least at sigma = S/n, or at the least sigma of the support, (top - z) e^L, if that is larger
    e = math.exp(-big_l)
    sigma = max(float(np.sum(z - x)) / x.size, max(top - z, 0.0) / e)
    if sigma > 0:
        b = max(z + sigma * e, top)  # (rounding at the edge)
        value = x.size * math.log(sigma) + float(np.sum(b - x)) / sigma
        if value < best[0]:
            best = (value, sigma, -1.0)
    return best


def reference_end(x: np.ndarray, z_hat: float, big_l: float, target: float, side: int, sigma_ref: float
                  ) -> tuple[float, float]:
    """(the level where the reference profile rises to ``target`` on ``side``, the inner optimum's shape there):
    steps of sigma_ref/4 doubling outwards from z_hat, then brentq on z (to 1e-11 relative)."""
    def rise(z: float) -> float:
        return reference_profile(x, z, big_l, sigma_ref)[0] - target

    inside, step = z_hat, 0.25 * sigma_ref
    while True:
        z = z_hat + side * step
        if rise(z) >= 0:
            break
        assert step < 1e6 * sigma_ref, "no end within 1e6 scales"
        inside, step = z, step * 2
    root = optimize.brentq(rise, min(inside, z), max(inside, z), xtol=1e-11 * abs(z_hat), maxiter=200)
    return root, reference_profile(x, root, big_l, sigma_ref)[2]


def crossing(x: np.ndarray, z_hat: float, big_l: float, target: float, side: int, sigma_ref: float, end: float
             ) -> list[str]:
    """What is wrong with ``end`` as the reference profile's first crossing of ``target`` out from z_hat: below the
    target at 30, 60 and 90 % of the way and 1e-7 (relative) inside the end, above it 1e-7 outside, on it (1e-8) at
    the end. The cheaper check, where the full search (:func:`reference_end`) is too slow to run on every end."""
    def rise(z: float) -> float:
        return reference_profile(x, z, big_l, sigma_ref)[0] - target

    wrong = []
    for f in (0.3, 0.6, 0.9):
        if not rise(z_hat + f * (end - z_hat)) < 0:
            wrong.append(f"the reference profile is above the target {f:.0%} of the way")
    delta = 1e-7 * abs(end)
    if not rise(end - side * delta) < 0 < rise(end + side * delta):
        wrong.append("the reference profile does not cross the target within 1e-7 of the end")
    at = rise(end)
    if not abs(at) <= 1e-8:
        wrong.append(f"the reference profile at the end - target {at:.3g}")
    return wrong


# -- data ---------------------------------------------------------------------------------------------------------
def gev_sample(rng: np.random.Generator, n: int, mu: float, sigma: float, xi: float) -> np.ndarray:
    """n GEV(mu, sigma, xi) maxima (scipy's genextreme, whose c is -xi)."""
    return stats.genextreme.rvs(-xi, loc=mu, scale=sigma, size=n, random_state=rng)


def padded(samples: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding each sample first, then PAD; and the counts."""
    k = max(s.size for s in samples)
    maxima = np.full((len(samples), k), PAD)
    for i, s in enumerate(samples):
        maxima[i, :s.size] = s
    return maxima, np.array([s.size for s in samples])


def fitted_cells(seed: int, cells: int, n_range: tuple[int, int], xi_range: tuple[float, float]
                 ) -> tuple[list[np.ndarray], gev.Fit]:
    """Samples of n_range maxima from GEVs with random location, scale and shape, and their fits (none at a bound)."""
    rng = np.random.default_rng(seed)
    samples = []
    while len(samples) < cells:
        n = int(rng.integers(*n_range, endpoint=True))
        sigma = float(np.exp(rng.uniform(math.log(0.3), math.log(30.0))))
        x = gev_sample(rng, n, float(rng.uniform(-50.0, 300.0)), sigma, float(rng.uniform(*xi_range)))
        if not gev.fit(x[None, :], np.array([n])).at_bound[0]:
            samples.append(x)
    maxima, count = padded(samples)
    return samples, gev.fit(maxima, count)


def test_sampler_is_the_gev_with_shape_xi() -> None:
    """scipy's genextreme(c = -xi) is the GEV of gev.return_level: its 1 - 1/T quantile is the T-block level."""
    for xi in (0.1, -0.3, 0.0):
        q = stats.genextreme.ppf(0.99, -xi, loc=30.0, scale=8.0)
        assert q == pytest.approx(gev.return_level(np.array(30.0), np.array(8.0), np.array(xi), 100.0), rel=1e-12)


# -- 1. the observed information ----------------------------------------------------------------------------------
def information_cases() -> list[tuple[np.ndarray, float, float, float]]:
    """(maxima, mu, sigma, xi) to evaluate at: ~55 cells, at fits and at arbitrary points."""
    rng = np.random.default_rng(11)
    cases = []
    # arbitrary points over shapes from -0.8 to 2.5, at a location and scale that keep the smallest w above ~0.2
    for xi in np.concatenate([np.linspace(-0.8, 2.5, 16), [-0.05, 0.03]]):
        n = int(rng.integers(15, 80))
        x = gev_sample(rng, n, float(rng.uniform(-20, 200)), float(np.exp(rng.uniform(math.log(0.05), math.log(50)))),
                       float(np.clip(xi, -0.4, 1.0)))
        mu = float(np.median(x))
        sigma = float(np.std(x)) * float(rng.uniform(0.6, 1.2))
        y = (x - mu) / sigma
        reach = float(np.max(-xi * y))  # need 1 + xi y > 0.2
        if reach > 0.8:
            sigma *= reach / 0.8
        cases.append((x, mu, sigma, float(xi)))
    # |xi| < 1e-6 and exactly 0 (the kernel's series for the shape derivatives)
    for xi in (0.0, 1e-12, -1e-12, 3e-9, -7e-8, 4e-7, -9.9e-7, 9.9e-7, 1e-300):
        x = gev_sample(rng, int(rng.integers(15, 80)), 10.0, 3.0, 0.0)
        cases.append((x, float(np.median(x)), float(np.std(x)), xi))
    # either side of the kernel's switch to series (|xi y| = 0.1) at the largest |y|
    for u in (0.0999, 0.1001, -0.0999, -0.1001):
        x = gev_sample(rng, 40, 0.0, 1.0, 0.1)
        mu, sigma = float(np.median(x)), float(np.std(x))
        y = (x - mu) / sigma
        cases.append((x, mu, sigma, u / float(np.max(np.abs(y)))))
    # at the maximum-likelihood fits
    for xi in (-0.6, -0.4, -0.2, -0.05, 0.0, 0.02, 0.1, 0.25, 0.5, 0.8, 1.2, 0.3, -0.3, 0.15, 0.05, 0.4, -0.1, 0.6):
        x = gev_sample(rng, int(rng.integers(20, 120)), float(rng.uniform(-50, 300)), float(rng.uniform(0.5, 20)), xi)
        fit = gev.fit(x[None, :], np.array([x.size]))
        if not fit.at_bound[0]:
            cases.append((x, float(fit.location[0]), float(fit.scale[0]), float(fit.shape[0])))
    return cases


def test_information_is_the_hessian_of_the_negative_log_likelihood() -> None:
    cases = information_cases()
    assert len(cases) >= 45
    maxima, count = padded([x for x, *_ in cases])
    mu, sigma, xi = (np.array([c[k] for c in cases]) for k in (1, 2, 3))
    got = gev_intervals.information(maxima, count, mu, sigma, xi)
    assert got.shape == (len(cases), 3, 3)
    bad = []
    for c, (x, m, s, k) in enumerate(cases):
        want = numerical_hessian(x, m, s, k)
        scale = np.sqrt(np.abs(np.outer(np.diag(want), np.diag(want))))  # off-diagonals relative to the diagonal
        err = np.abs(got[c] - want) / (np.abs(want) + scale)
        if not np.all(err < 1e-6):
            bad.append(f"case {c} (n {x.size}, xi {k:.3g}): max relative error {err.max():.3g}\n{got[c]}\n{want}")
        assert np.array_equal(got[c], got[c].T)
    assert not bad, "\n".join(bad)


def test_information_is_nan_without_an_estimate() -> None:
    x = gev_sample(np.random.default_rng(3), 30, 0.0, 1.0, 0.1)
    maxima, count = padded([x, x, x])
    count[1] = 0
    got = gev_intervals.information(maxima, count, np.array([0.0, 0.0, np.nan]), np.array([1.0, 1.0, 1.0]),
                          np.array([0.1, 0.1, 0.1]))
    assert np.all(np.isfinite(got[0])) and np.all(np.isnan(got[1])) and np.all(np.isnan(got[2]))


# -- 2. the normal interval and the standard errors ---------------------------------------------------------------
def test_normal_interval_and_standard_errors_are_the_delta_methods() -> None:
    samples, fit = fitted_cells(21, 40, (20, 120), (-0.4, 0.6))
    maxima, count = padded(samples)
    periods = (10.0, 100.0, 1000.0)
    got = gev_intervals.return_level_intervals(maxima, count, fit.location, fit.scale, fit.shape, fit.nll, periods,
                                     intervals.Request(LEVEL, "normal"))
    assert got.lower.shape == got.upper.shape == (len(periods), len(samples))
    assert set(got.standard_errors) == {"location", "scale", "shape"}
    for c, x in enumerate(samples):
        for k, period in enumerate(periods):
            z, se_z, se = delta_method(x, fit.location[c], fit.scale[c], fit.shape[c], big_l_of(period))
            level = gev.return_level(fit.location[c], fit.scale[c], fit.shape[c], period)
            assert z == pytest.approx(level, rel=1e-12)
            # symmetric about the return level, half-width 1.959964 standard errors of it (the reference Hessian's
            # error is ~1e-9)
            half = level - got.lower[k, c]
            assert got.upper[k, c] - level == pytest.approx(half, rel=1e-12, abs=1e-12 * abs(level))
            assert got.upper[k, c] - level == pytest.approx(Z95 * se_z, rel=1e-7), (c, period)
        for j, name in enumerate(gev.PARAMETERS):
            assert got.standard_errors[name][c] == pytest.approx(se[j], rel=1e-7), (c, name)


def test_normal_interval_other_levels() -> None:
    """The level enters through its normal quantile: 0.9 and 0.99 half-widths scale the 0.95 one."""
    samples, fit = fitted_cells(22, 10, (30, 80), (-0.2, 0.4))
    maxima, count = padded(samples)
    half = {}
    for level in (0.9, 0.95, 0.99):
        got = gev_intervals.return_level_intervals(maxima, count, fit.location, fit.scale, fit.shape, fit.nll, (50.0,),
                                         intervals.Request(level, "normal"))
        half[level] = got.upper - got.lower
    for level in (0.9, 0.99):
        np.testing.assert_allclose(half[level], half[0.95] * stats.norm.ppf(0.5 + level / 2) / Z95, rtol=1e-12)


# -- 3. the profile interval --------------------------------------------------------------------------------------
def test_reference_profile_finds_the_maximum() -> None:
    """The reference itself: its profile at the fitted level is the fit's -log L, at the fitted shape."""
    samples, fit = fitted_cells(41, 6, (20, 60), (-0.3, 0.5))
    for c, x in enumerate(samples):
        big_l = big_l_of(100.0)
        z_hat = float(gev.return_level(fit.location[c], fit.scale[c], fit.shape[c], 100.0))
        p, sigma, xi = reference_profile(x, z_hat, big_l, float(fit.scale[c]))
        assert p == pytest.approx(fit.nll[c], rel=1e-12, abs=1e-10)
        assert xi == pytest.approx(fit.shape[c], abs=1e-5)
        assert sigma == pytest.approx(fit.scale[c], rel=1e-5)


@pytest.fixture(scope="module")
def profile_cells() -> tuple[list[np.ndarray], gev.Fit, tuple[float, ...], tuple[np.ndarray, ...]]:
    """~30 cells of 20..60 maxima, shapes from -0.4 to 0.6, and their profile ends (with the inner optima)."""
    samples, fit = fitted_cells(31, 30, (20, 60), (-0.4, 0.6))
    maxima, count = padded(samples)
    periods = (100.0,)
    got = gev_intervals.profile_ends(maxima, count, fit.location, fit.scale, fit.shape, fit.nll, periods, HALF_CHI2)
    return samples, fit, periods, got


def profile_mismatches(samples: list[np.ndarray], fit: gev.Fit, periods: tuple[float, ...],
                       ends: tuple[np.ndarray, ...], full: int, half_chi2: float = HALF_CHI2
                       ) -> tuple[int, list[str]]:
    """(ends checked, a line for each end that is not the reference's). Every end: the plain -log L at the inner
    optimum returned with it on the target to 1e-8, and the reference's :func:`crossing` checks; the ends of the
    first ``full`` cells also against the full reference search, to 1e-9 relative."""
    lower, upper, optima = ends
    checked, bad = 0, []
    for c, x in enumerate(samples):
        target = gev.negative_log_likelihood(x, fit.location[c], fit.scale[c], fit.shape[c]) + half_chi2
        for k, period in enumerate(periods):
            big_l = big_l_of(period)
            z_hat = float(gev.return_level(fit.location[c], fit.scale[c], fit.shape[c], period))
            for side, name, got in ((-1, "lower", lower), (1, "upper", upper)):
                have = float(got[k, c])
                where = f"cell {c} (n {x.size}, xi_hat {fit.shape[c]:.4f}) T {period:g} {name} {have:.12g}: "
                checked += 1
                if not (have - z_hat) * side > 0:
                    bad.append(where + f"on the wrong side of the level {z_hat:.12g}")
                    continue
                mu_e, sigma_e, xi_e = optima[0 if side < 0 else 1, :, k, c]
                assert mu_e + sigma_e * level_factor(xi_e, big_l)[0] == pytest.approx(have, rel=1e-12)
                own = gev.negative_log_likelihood(x, mu_e, sigma_e, xi_e) - target
                wrong = []
                if not abs(own) <= 1e-8:
                    wrong.append(f"-log L at its inner optimum (xi {xi_e:.4f}) - target {own:.3g}")
                wrong += crossing(x, z_hat, big_l, target, side, float(fit.scale[c]), have)
                if c < full:
                    want, xi_ref = reference_end(x, z_hat, big_l, target, side, float(fit.scale[c]))
                    if not abs(have / want - 1) <= 1e-9:
                        wrong.append(f"the reference's end is {want:.12g} (its inner xi {xi_ref:.4f}, ours "
                                     f"{xi_e:.4f})")
                if wrong:
                    bad.append(where + "; ".join(wrong))
    return checked, bad


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_profile_ends_are_the_references(profile_cells) -> None:
    samples, fit, periods, got = profile_cells
    assert got[0].shape == (len(periods), len(samples))
    checked, bad = profile_mismatches(samples, fit, periods, got, full=6)
    assert checked >= 60
    assert not bad, f"{len(bad)} of {checked} ends:\n" + "\n".join(bad)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_profile_ends_other_periods_and_level() -> None:
    """Short and long periods (5 and 1000 blocks) and the 0.8 level, on cells of both signs of shape."""
    samples, fit = fitted_cells(32, 6, (20, 60), (-0.4, 0.5))
    maxima, count = padded(samples)
    periods = (5.0, 1000.0)
    half = stats.chi2.ppf(0.8, 1) / 2
    got = gev_intervals.profile_ends(maxima, count, fit.location, fit.scale, fit.shape, fit.nll, periods, half)
    checked, bad = profile_mismatches(samples, fit, periods, got, full=2, half_chi2=half)
    assert checked == 24
    assert not bad, f"{len(bad)} of {checked} ends:\n" + "\n".join(bad)


def test_profile_is_what_return_level_intervals_gives(profile_cells) -> None:
    """return_level_intervals(profile) gives the same ends, brackets the level, and its standard errors are the
    normal method's."""
    samples, fit, periods, (lower, upper, _) = profile_cells
    maxima, count = padded(samples)
    args = (maxima, count, fit.location, fit.scale, fit.shape, fit.nll, periods)
    profile = gev_intervals.return_level_intervals(*args, intervals.Request(LEVEL, "profile"))
    normal = gev_intervals.return_level_intervals(*args, intervals.Request(LEVEL, "normal"))
    np.testing.assert_allclose(profile.lower, lower, rtol=1e-12)
    np.testing.assert_allclose(profile.upper, upper, rtol=1e-12)
    z = np.stack([gev.return_level(fit.location, fit.scale, fit.shape, p) for p in periods])
    assert np.all(profile.lower < z) and np.all(z < profile.upper)
    # a right-skewed level: the profile reaches farther up than the normal interval in most cells
    assert np.mean(profile.upper > normal.upper) > 0.7
    for name in gev.PARAMETERS:
        np.testing.assert_array_equal(normal.standard_errors[name], profile.standard_errors[name])


CORNER = np.array([
    11.2120913764046, 10.738422839934183, 11.100315503586835, 11.372720003045671, 9.861714213133562,
    11.160311252449532, 10.837461874663704, 10.186457989015958, 11.07871787268195, 11.35604339806299,
    9.05502405765946, 10.834926726010723, 11.009679725205663, 10.76819576407665, 11.30013824981908,
    11.251821540485222, 11.215622766922793, 10.381056388327627, 11.023018252576804, 10.426964310564175,
    9.850218225661292, 9.666924410973152, 11.426521828929639, 10.053302516518155, 8.91711114686113,
    11.04201551910316, 10.849838275515113, 11.084244478866967, 9.673534378577124, 10.854171958964042,
    10.039677695166377, 11.358883877255154, 9.089154569130864, 11.02709380802344, 9.793365178441684,
    10.316188716789902, 10.310884656546259, 11.24690783598688, 10.833343360337068, 10.36484180013873,
    11.159465581967211, 9.632507482271587, 11.022435017379127, 9.921235671482789, 11.151364454536326,
    11.160426598080482, 10.37404043316231, 11.319804382465009, 11.142672489505086, 10.712174424474759,
    10.413515975696695, 10.36806307823954, 11.109448033190073, 10.351344291408905, 10.103750319161362,
    9.69758008753008, 10.834383321559592])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_profile_end_in_another_basin() -> None:
    """A bounded tail (shape -0.81, 57 maxima), 10-block level: at the upper end the inner minimum is at the xi = -1
    edge of the region, while the search's own basin (shape -0.97) reaches the target nearer. Only the grid's check
    at the end finds the edge: the end is the reference's (which covers the edge), the -log L at the inner optimum
    (xi = -1: n log sigma + sum (mu + sigma - x)/sigma) is on the target."""
    maxima, count = CORNER[None, :], np.array([CORNER.size])
    fit = gev.fit(maxima, count)
    assert not fit.at_bound[0] and fit.shape[0] == pytest.approx(-0.8141, abs=1e-4)
    lower, upper, optima = gev_intervals.profile_ends(maxima, count, fit.location, fit.scale, fit.shape, fit.nll, (10.0,),
                                            HALF_CHI2)
    big_l = big_l_of(10.0)
    target = fit.nll[0] + HALF_CHI2
    z_hat = float(gev.return_level(fit.location, fit.scale, fit.shape, 10.0)[0])
    mu, sigma, xi = optima[1, :, 0, 0]
    assert xi == -1.0
    assert mu + sigma >= CORNER.max()  # the upper end point at or above the largest maximum
    assert CORNER.size * math.log(sigma) + np.sum(mu + sigma - CORNER) / sigma - target == pytest.approx(0, abs=1e-8)
    for end, side in ((lower[0, 0], -1), (upper[0, 0], 1)):
        wrong = crossing(CORNER, z_hat, big_l, target, side, float(fit.scale[0]), end)
        assert not wrong, (side, wrong)


# Heavy tail, few maxima: the level of a very long period is barely bounded by the data
FAR = np.array([3.63238374e+01, -1.73062756e-01, -1.36730841e-01, 7.74167770e+00, 8.66586194e-01, 3.29436263e-01,
                2.89283453e+00, -7.13354406e-01, 1.88546762e+00, 1.74518273e-02])


def witness_below(x: np.ndarray, z: float, big_l: float, target: float, mu0: float, xi0: float) -> float:
    """The least -log L - target found at level z (Nelder-Mead over (mu, xi), sigma = (z - mu)/g(xi), from several
    shapes): below 0, a point of level z inside the interval, so the profile there is below the target. (mu and
    xi are O(1) however far out z is: no cancellation.)"""
    def objective(p: np.ndarray) -> float:
        mu, xi = p
        if not -1.0 <= xi <= 3.0:
            return math.inf
        return gev.negative_log_likelihood(x, mu, (z - mu) / level_factor(xi, big_l)[0], xi) - target

    options = {"xatol": 1e-10, "fatol": 1e-12}
    return min(optimize.minimize(objective, [mu0, s], method="Nelder-Mead", options=options).fun
               for s in (xi0, 1.5, 2.0, 2.5, 2.95))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_profile_upper_end_far_out_or_infinite() -> None:
    """An upper end exists when the profile reaches the target within PROFILE_SPAN times (level - fitted 10 %
    quantile) above the level, else it is +inf. Ten maxima with shape 1.04: for 1e6 blocks the end is finite, about
    1.6e9 such distances out (the -log L at its inner optimum on the target, a point of level 1e9 distances out
    inside the interval); for 1e9 blocks it is infinite (points 1e6, 1e9 and 1e12 distances out inside). The lower
    ends are finite and on the target."""
    maxima, count = FAR[None, :], np.array([FAR.size])
    fit = gev.fit(maxima, count)
    assert not fit.at_bound[0] and fit.shape[0] > 1
    target = fit.nll[0] + HALF_CHI2
    for period, finite in ((1e6, True), (1e9, False)):
        lower, upper, optima = gev_intervals.profile_ends(maxima, count, fit.location, fit.scale, fit.shape, fit.nll, (period,),
                                                HALF_CHI2)
        big_l = big_l_of(period)
        z_hat = float(gev.return_level(fit.location, fit.scale, fit.shape, period)[0])
        q_hat = float(fit.location[0] + fit.scale[0] * level_factor(fit.shape[0], min(gev_intervals.LOW_L, big_l - 1))[0])
        assert np.isfinite(lower[0, 0]) and lower[0, 0] < z_hat
        assert gev.negative_log_likelihood(FAR, *optima[0, :, 0, 0]) - target == pytest.approx(0, abs=1e-8)
        assert np.isfinite(upper[0, 0]) == finite, (period, upper[0, 0])
        if finite:
            assert gev.negative_log_likelihood(FAR, *optima[1, :, 0, 0]) - target == pytest.approx(0, abs=1e-8)
            assert 1e9 < (upper[0, 0] - z_hat) / (z_hat - q_hat) < gev_intervals.PROFILE_SPAN
        for k in ((9,) if finite else (6, 9, 12)):
            z = z_hat + 10.0**k * (z_hat - q_hat)
            assert witness_below(FAR, z, big_l, target, float(fit.location[0]), float(fit.shape[0])) < 0, (period, k)


# -- 4. coverage: the acceptance check ----------------------------------------------------------------------------
MU0, SIGMA0, XI0 = 30.0, 8.0, 0.1
TRUE_100 = MU0 + SIGMA0 * ((-math.log(0.99)) ** -XI0 - 1) / XI0  # the parent's 0.99 quantile


def test_coverage_of_the_true_100_year_level() -> None:
    """3000 cells of 40 annual maxima from GEV(30, 8, 0.1), fitted by gev.fit: the 95 % profile intervals cover
    the parent's 100-year level in [0.93, 0.97] of the cells (binomial sd 0.004). The normal interval, symmetric
    about a right-skewed estimate, under-covers: reported, checked loosely (all its misses are above it)."""
    assert stats.genextreme.ppf(0.99, -XI0, loc=MU0, scale=SIGMA0) == pytest.approx(TRUE_100, rel=1e-12)
    rng = np.random.default_rng(2024)
    cells, n = 3000, 40
    maxima = stats.genextreme.rvs(-XI0, loc=MU0, scale=SIGMA0, size=(cells, n), random_state=rng)
    count = np.full(cells, n)
    fit = gev.fit(maxima, count)
    assert not fit.at_bound.any()
    out = {}
    for method in ("profile", "normal"):
        got = gev_intervals.return_level_intervals(maxima, count, fit.location, fit.scale, fit.shape, fit.nll, (100.0,),
                                         intervals.Request(LEVEL, method))
        lower, upper = got.lower[0], got.upper[0]
        z = gev.return_level(fit.location, fit.scale, fit.shape, 100.0)
        assert np.all(lower < z) and np.all(z < upper)
        out[method] = float(np.mean((lower <= TRUE_100) & (TRUE_100 <= upper)))
        out[f"{method}: true level above the interval"] = float(np.mean(upper < TRUE_100))
        out[f"{method}: true level below the interval"] = float(np.mean(lower > TRUE_100))
    print(f"\ncoverage of the 100-year level, 40 maxima: {out}")
    assert 0.93 <= out["profile"] <= 0.97
    assert 0.8 <= out["normal"] <= 0.95
    assert out["normal: true level below the interval"] < 0.005


# -- 5. bounds, missing estimates ---------------------------------------------------------------------------------
def test_cells_at_a_bound_without_an_estimate_or_information() -> None:
    """At xi = -1 (no regular maximum) both methods give NaN; at xi = 3 (the region's top) the normal interval and
    standard errors are NaN and the profile is the constrained one (its ends on the target); rows not fitted
    give NaN; and a row whose information is not positive definite gets no normal interval but a profile."""
    rng = np.random.default_rng(5)
    lower_bound = upper_bound = None
    for _ in range(2000):
        if lower_bound is None:
            x = rng.uniform(size=(40, 20)).max(-1)
            if gev.fit(x[None, :], np.array([40])).shape[0] == gev.XI_MIN:
                lower_bound = x
        if upper_bound is None:
            x = gev_sample(rng, 8, 0.0, 1.0, 2.0)
            if gev.fit(x[None, :], np.array([8])).shape[0] == gev.XI_MAX:
                upper_bound = x
        if lower_bound is not None and upper_bound is not None:
            break
    assert lower_bound is not None and upper_bound is not None
    regular = gev_sample(rng, 30, 5.0, 2.0, 0.1)
    maxima, count = padded([lower_bound, upper_bound, regular, regular])
    fit = gev.fit(maxima, count)
    assert list(fit.at_bound) == [True, True, False, False]
    location = fit.location.copy()
    location[3] = np.nan  # not fitted
    args = (maxima, count, location, fit.scale, fit.shape, fit.nll, (100.0,))
    normal = gev_intervals.return_level_intervals(*args, intervals.Request(LEVEL, "normal"))
    profile = gev_intervals.return_level_intervals(*args, intervals.Request(LEVEL, "profile"))
    for got in (normal, profile):
        assert np.isnan(got.lower[0, [0, 3]]).all() and np.isnan(got.upper[0, [0, 3]]).all()
        for se in got.standard_errors.values():
            assert np.isnan(se[[0, 1, 3]]).all() and se[2] > 0
    assert np.isnan(normal.lower[0, 1]) and np.isnan(normal.upper[0, 1])
    assert np.isfinite(normal.lower[0, 2]) and np.isfinite(normal.upper[0, 2])
    z = gev.return_level(fit.location, fit.scale, fit.shape, 100.0)
    lower, upper, optima = gev_intervals.profile_ends(*args, HALF_CHI2)
    for c in (1, 2):
        assert lower[0, c] < z[c] < upper[0, c], c
        for side in (0, 1):
            own = gev.negative_log_likelihood(maxima[c, :count[c]], *optima[side, :, 0, c])
            assert own - fit.nll[c] == pytest.approx(HALF_CHI2, abs=1e-8), (c, side)
            assert optima[side, 2, 0, c] <= gev.XI_MAX
    # information not positive definite: a location far from the estimate, the profile from the true estimate
    shifted = fit.location.copy()
    shifted[2] += 5.0 * fit.scale[2]
    info = gev_intervals.information(maxima[2:3], count[2:3], shifted[2:3], fit.scale[2:3], fit.shape[2:3])
    if np.linalg.eigvalsh(info[0])[0] <= 0:
        got = gev_intervals.return_level_intervals(maxima[2:3], count[2:3], shifted[2:3], fit.scale[2:3], fit.shape[2:3],
                                         fit.nll[2:3], (100.0,), intervals.Request(LEVEL, "normal"))
        assert np.isnan(got.lower).all() and np.isnan(got.standard_errors["scale"]).all()


def test_empty_and_periods() -> None:
    """No cells, no periods, and a period of one block (no level) are handled."""
    empty = gev_intervals.return_level_intervals(np.empty((0, 5)), np.empty(0, int), *(np.empty(0) for _ in range(4)),
                                       (10.0, 100.0), intervals.Request(LEVEL, "profile"))
    assert empty.lower.shape == (2, 0) and empty.standard_errors["shape"].shape == (0,)
    x = gev_sample(np.random.default_rng(9), 30, 5.0, 2.0, 0.1)
    fit = gev.fit(x[None, :], np.array([30]))
    args = (x[None, :], np.array([30]), fit.location, fit.scale, fit.shape, fit.nll)
    none = gev_intervals.return_level_intervals(*args, (), intervals.Request(LEVEL, "profile"))
    assert none.lower.shape == (0, 1) and none.standard_errors["location"][0] > 0
    one = gev_intervals.return_level_intervals(*args, (1.0, 100.0), intervals.Request(LEVEL, "profile"))
    assert np.isnan(one.lower[0, 0]) and np.isfinite(one.lower[1, 0])
