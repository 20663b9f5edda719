"""Confidence intervals of peaks-over-threshold (GPD) return levels, against independent references.

* ``gpd_intervals.information``: against a Richardson-extrapolated central-difference Hessian of the plain
  ``gpd.negative_log_likelihood``, at the fits and at arbitrary points (shapes in (-0.9, 1.5), |xi| < 1e-6, and
  both sides of the kernel's switch to Taylor series);
* the normal (delta-method) interval and the standard errors: from that numerical Hessian, inverted in numpy;
* the profile interval: each end against a slow scipy reference (a dense grid over the shape, polished by a
  bounded search, for the inner minimum; ``brentq`` on the level for the end), and the reference profile at the
  implementation's ends is the maximum's plus half the chi-square(1) quantile;
* coverage (the acceptance check): thousands of cells of daily values from a GPD parent with a known 100-year
  level, through ``pot.analyse``;
* cells that are not fitted give NaN; every fitted cell's interval brackets its return level.

The return level is z = u + sigma g(xi), g(xi) = ((T npy rate)^xi - 1)/xi, with the threshold u and the rate
taken as known.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import level_factor
from scipy import optimize, stats

from climio.eva import gpd, gpd_intervals, intervals, pot

LEVEL = 0.95
Z95 = 1.959963984540054  # the standard normal's 0.975 quantile
HALF_CHI2 = Z95**2 / 2.0  # 1.920729..., half the chi-square(1) 0.95 quantile
NPY = 365.25
PAD = 1e6  # what rows hold past their count: any use of it shows


# -- independent references ---------------------------------------------------------------------------------------
def numerical_hessian(e: np.ndarray, sigma: float, xi: float, rel: float = 0.01) -> np.ndarray:
    """Hessian of ``gpd.negative_log_likelihood`` in (sigma, xi) by central differences at steps h, h/2, h/4,
    Richardson-extrapolated twice (error O(h^6)). The steps are a fraction ``rel`` of the distance over which
    the smallest 1 + xi e/sigma changes by its own size, so that points near the support's end are fine too."""
    q = 1.0 + xi * e / sigma
    assert np.all(q > 0)
    h_xi = rel * min(1.0, float(np.min(sigma * q / e)))
    h_sigma = rel * sigma * min(1.0, float(np.min(sigma * q / (abs(xi) * e + 1e-300))))

    def f(s: float, x: float) -> float:
        return gpd.negative_log_likelihood(e, s, x)

    def differences(hs: float, hx: float) -> np.ndarray:
        f0 = f(sigma, xi)
        d_ss = (f(sigma + hs, xi) - 2 * f0 + f(sigma - hs, xi)) / hs**2
        d_xx = (f(sigma, xi + hx) - 2 * f0 + f(sigma, xi - hx)) / hx**2
        d_sx = (f(sigma + hs, xi + hx) - f(sigma + hs, xi - hx) - f(sigma - hs, xi + hx)
                + f(sigma - hs, xi - hx)) / (4 * hs * hx)
        return np.array([[d_ss, d_sx], [d_sx, d_xx]])

    d = [differences(h_sigma / 2**k, h_xi / 2**k) for k in range(3)]
    r1 = [(4 * d[k + 1] - d[k]) / 3 for k in range(2)]
    return (16 * r1[1] - r1[0]) / 15


def delta_method(e: np.ndarray, u: float, sigma: float, xi: float, big_l: float
                 ) -> tuple[float, float, float, float, float]:
    """(z_hat, lower, upper, se_sigma, se_xi) of the normal interval, from the numerical Hessian."""
    cov = np.linalg.inv(numerical_hessian(e, sigma, xi))
    g, g1 = level_factor(xi, big_l)
    z = u + sigma * g
    grad = np.array([g, sigma * g1])
    half = Z95 * math.sqrt(grad @ cov @ grad)
    return z, z - half, z + half, math.sqrt(cov[0, 0]), math.sqrt(cov[1, 1])


XI_HIGH = 50.0  # the reference's inner search reaches this far up (the implementation's reaches 20)


def nll_at_level(e: np.ndarray, d: float, xi: np.ndarray, big_l: float) -> np.ndarray:
    """-log L at shapes ``xi`` with the level held at d above the threshold (sigma = d/g(xi)), vectorized."""
    xi = np.asarray(xi, dtype=float)
    x = xi * big_l
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(x == 0, big_l, np.expm1(x) / np.where(xi == 0, 1.0, xi))
        sigma = d / g
        a = e[None, :] / sigma[:, None]
        xa = xi[:, None] * a
        inside = xa.min(axis=1) > -1.0  # every 1 + xi e/sigma > 0
        out = e.size * np.log(sigma) + (1.0 + 1.0 / xi) * np.log1p(xa).sum(axis=1)
        if np.any(xi == 0):
            out = np.where(xi == 0, e.size * np.log(sigma) + a.sum(axis=1), out)
    return np.where(inside & (sigma > 0), out, np.inf)


def nll_at_one_level(e: np.ndarray, d: float, xi: float, big_l: float) -> float:
    """:func:`nll_at_level` at one shape, written for a scalar shape."""
    x = xi * big_l
    sigma = d / (big_l if x == 0 else math.expm1(x) / xi)
    if not sigma > 0:
        return math.inf
    a = e / sigma
    if xi == 0:
        return e.size * math.log(sigma) + float(a.sum())
    xa = xi * a
    if not xa.min() > -1.0:
        return math.inf
    return e.size * math.log(sigma) + (1.0 + 1.0 / xi) * float(np.log1p(xa).sum())


TAIL_GRID = np.geomspace(3.0, XI_HIGH, 60)


def reference_profile(e: np.ndarray, d: float, big_l: float) -> tuple[float, float]:
    """(min over xi >= -1 of -log L with the level d above the threshold, the minimizing shape): the best of a
    dense grid, polished by scipy's bounded search between the grid points either side of it."""
    low = -1.0
    if d < e.max():  # for xi < 0 the support needs sigma > -xi max(e): xi > log(1 - d/max e)/L
        low = max(low, math.log1p(-d / e.max()) / big_l)
    grid = np.unique(np.concatenate([np.linspace(low, 3.0, 400), TAIL_GRID]))
    grid = grid[grid >= low]
    # in blocks whose temporaries (under 128 kB) are reused, not mapped afresh from the system each time
    rows = max(1, 16000 // e.size)
    values = np.concatenate([nll_at_level(e, d, grid[k:k + rows], big_l) for k in range(0, grid.size, rows)])
    j = int(np.argmin(values))
    best, best_xi = float(values[j]), float(grid[j])
    bounds = (grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)])
    polish = optimize.minimize_scalar(lambda xi: nll_at_one_level(e, d, xi, big_l), bounds=bounds,
                                      method="bounded", options={"xatol": 1e-13})
    if polish.fun < best:
        best, best_xi = float(polish.fun), float(polish.x)
    return best, best_xi


SPAN = 30.0  # ends are looked for within exp(+-SPAN) times the level above the threshold; beyond: infinite


def reference_end(e: np.ndarray, d_hat: float, big_l: float, target: float, side: int) -> tuple[float, float]:
    """(the level above the threshold where the reference profile rises to ``target`` on ``side``, the inner
    optimum's shape there): widening steps in log d from d_hat, then brentq on log d; +-inf (and NaN) when the
    profile stays below the target within SPAN."""
    v_hat = math.log(d_hat)

    def rise(v: float) -> float:
        return reference_profile(e, math.exp(v), big_l)[0] - target

    inside, step = v_hat, 0.02
    while True:
        v = v_hat + side * min(step, SPAN)
        if rise(v) >= 0:
            break
        if step >= SPAN:
            return side * math.inf, math.nan
        inside, step = v, step * 2
    root = optimize.brentq(rise, min(inside, v), max(inside, v), xtol=1e-14, rtol=4 * np.finfo(float).eps,
                           maxiter=200)
    return math.exp(root), reference_profile(e, math.exp(root), big_l)[1]


# -- data ---------------------------------------------------------------------------------------------------------
def gpd_sample(rng: np.random.Generator, size: int | tuple[int, ...], sigma: float, xi: float) -> np.ndarray:
    """GPD(sigma, xi) values by inversion: sigma/xi ((1 - U)^-xi - 1) (exact through xi = 0)."""
    log_v = np.log(rng.random(size))  # log of 1 - U, itself uniform
    if xi == 0:
        return -sigma * log_v
    return sigma * np.expm1(-xi * log_v) / xi


def padded(samples: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Rows holding each sample first, then PAD; and the counts."""
    k = max(s.size for s in samples)
    excess = np.full((len(samples), k), PAD)
    for i, s in enumerate(samples):
        excess[i, :s.size] = s
    return excess, np.array([s.size for s in samples])


def test_sampler_is_scipys_genpareto() -> None:
    """The inversion used to simulate is scipy's genpareto (same quantiles, a good KS fit)."""
    rng = np.random.default_rng(0)
    for xi in (0.1, -0.3, 0.0):
        x = gpd_sample(rng, 20000, 5.0, xi)
        assert stats.kstest(x, stats.genpareto(c=xi, scale=5.0).cdf).pvalue > 1e-3
    p = np.linspace(0.01, 0.99, 9)
    u = 1.0 - p
    assert np.allclose(5.0 * np.expm1(-0.1 * np.log(u)) / 0.1, stats.genpareto(c=0.1, scale=5.0).ppf(p), rtol=1e-12)


# -- 1. the observed information ----------------------------------------------------------------------------------
def information_cases() -> list[tuple[np.ndarray, float, float]]:
    """(excesses, sigma, xi) to evaluate at: ~50 cells, at their fits and at arbitrary points."""
    rng = np.random.default_rng(11)
    cases = []
    # shapes over (-0.9, 1.5), evaluated at a scale that keeps the smallest 1 + xi e/sigma above ~0.2
    for xi in np.concatenate([np.linspace(-0.9, 1.5, 17), [-0.05, 0.03]]):
        n = int(rng.integers(20, 300))
        sigma0 = float(np.exp(rng.uniform(np.log(0.01), np.log(500.0))))
        e = gpd_sample(rng, n, sigma0, float(np.clip(xi, -0.45, 1.0)))
        sigma = max(sigma0, -xi * e.max() / 0.8) * float(rng.uniform(1.0, 1.3))
        cases.append((e, sigma, float(xi)))
    # |xi| < 1e-6, exactly 0, and either side of the kernel's switch to series (|xi max(e)/sigma| = 0.02)
    for xi in (0.0, 1e-12, -1e-12, 3e-9, -7e-8, 4e-7, -9.9e-7, 9.9e-7):
        e = gpd_sample(rng, int(rng.integers(20, 300)), 2.0, 0.0)
        cases.append((e, float(e.mean()), xi))
    for t in (0.0199, 0.0201, -0.0199, -0.0201, 0.02, -0.02):
        e = gpd_sample(rng, int(rng.integers(20, 300)), 3.0, 0.1)
        sigma = float(e.mean())
        cases.append((e, sigma, t * sigma / e.max()))
    # at the maximum-likelihood fits
    for xi in (-0.4, -0.2, -0.05, 0.0, 0.02, 0.1, 0.25, 0.5, 0.8, 1.2, 1.5, 0.3, -0.3, 0.15, 0.05):
        e = gpd_sample(rng, int(rng.integers(20, 300)), float(rng.uniform(0.5, 20)), xi)
        fit = gpd.fit(e[None, :], np.array([e.size]))
        if not fit.at_bound[0]:
            cases.append((e, float(fit.scale[0]), float(fit.shape[0])))
    return cases


def test_information_is_the_hessian_of_the_negative_log_likelihood() -> None:
    cases = information_cases()
    assert len(cases) >= 45
    excess, count = padded([e for e, _, _ in cases])
    sigma = np.array([s for _, s, _ in cases])
    xi = np.array([x for _, _, x in cases])
    got = gpd_intervals.information(excess, count, sigma, xi)
    assert got.shape == (len(cases), 2, 2)
    for c, (e, s, x) in enumerate(cases):
        want = numerical_hessian(e, s, x)
        scale = np.sqrt(np.abs(np.outer(np.diag(want), np.diag(want))))  # off-diagonals relative to the diagonal
        err = np.abs(got[c] - want) / (np.abs(want) + scale)
        assert np.all(err < 1e-6), (c, s, x, e.size, got[c], want)
        assert got[c, 0, 1] == got[c, 1, 0]


def test_information_is_nan_without_an_estimate() -> None:
    e = gpd_sample(np.random.default_rng(3), 50, 1.0, 0.1)
    excess, count = padded([e, e[:0] + 1.0, e])
    count[1] = 0
    got = gpd_intervals.information(excess, count, np.array([1.0, np.nan, np.nan]), np.array([0.1, np.nan, 0.1]))
    assert np.all(np.isfinite(got[0])) and np.all(np.isnan(got[1])) and np.all(np.isnan(got[2]))


# -- 2. the normal interval and the standard errors ---------------------------------------------------------------
def fitted_cells(seed: int, cells: int, n_range: tuple[int, int], xi_range: tuple[float, float]
                 ) -> tuple[list[np.ndarray], np.ndarray, object, np.ndarray, np.ndarray]:
    """Samples, thresholds, their GPD fits, rates (n over 10..40 years of daily values) and the sizes."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(cells):
        n = int(rng.integers(*n_range, endpoint=True))
        samples.append(gpd_sample(rng, n, float(np.exp(rng.uniform(np.log(0.3), np.log(30.0)))),
                                  float(rng.uniform(*xi_range))))
    excess, count = padded(samples)
    fit = gpd.fit(excess, count)
    threshold = rng.uniform(-50.0, 300.0, cells)
    rate = count / (rng.uniform(10.0, 40.0, cells) * NPY)
    return samples, threshold, fit, rate, count


def test_normal_interval_and_standard_errors_are_the_delta_methods() -> None:
    samples, u, fit, rate, count = fitted_cells(21, 40, (20, 300), (-0.4, 0.9))
    assert not fit.at_bound.any()
    excess, _ = padded(samples)
    periods = (10.0, 100.0, 1000.0)
    got = gpd_intervals.return_level_intervals(excess, count, u, fit.scale, fit.shape, fit.nll, rate, periods, NPY,
                                     intervals.Request(LEVEL, "normal"))
    assert got.lower.shape == got.upper.shape == (len(periods), len(samples))
    assert set(got.standard_errors) == {"scale", "shape"}
    for c, e in enumerate(samples):
        for k, period in enumerate(periods):
            big_l = math.log(period * NPY * rate[c])
            z, lower, upper, se_sigma, se_xi = delta_method(e, u[c], fit.scale[c], fit.shape[c], big_l)
            assert z == pytest.approx(gpd.return_level(u[c], fit.scale[c], fit.shape[c], rate[c], period, NPY),
                                      rel=1e-12)
            # the half-widths to 1e-7 relative (the reference Hessian's error is ~1e-9)
            assert got.upper[k, c] - z == pytest.approx(upper - z, rel=1e-7), (c, period)
            assert z - got.lower[k, c] == pytest.approx(z - lower, rel=1e-7), (c, period)
        assert got.standard_errors["scale"][c] == pytest.approx(se_sigma, rel=1e-7), c
        assert got.standard_errors["shape"][c] == pytest.approx(se_xi, rel=1e-7), c


def test_normal_interval_other_levels() -> None:
    """The level enters through its normal quantile: 0.9 and 0.99 half-widths scale the 0.95 one."""
    samples, u, fit, rate, count = fitted_cells(22, 10, (30, 120), (-0.2, 0.5))
    excess, _ = padded(samples)
    half = {}
    for level in (0.9, 0.95, 0.99):
        got = gpd_intervals.return_level_intervals(excess, count, u, fit.scale, fit.shape, fit.nll, rate, (50.0,), NPY,
                                         intervals.Request(level, "normal"))
        half[level] = got.upper - got.lower
    for level in (0.9, 0.99):
        ratio = stats.norm.ppf(0.5 + level / 2) / Z95
        np.testing.assert_allclose(half[level], half[0.95] * ratio, rtol=1e-12)


# -- 3. the profile interval --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def profile_cells() -> tuple[list[np.ndarray], np.ndarray, object, np.ndarray, tuple[float, ...], object]:
    """~30 cells of 20..200 excesses and their profile intervals for three periods."""
    samples, u, fit, rate, count = fitted_cells(31, 30, (20, 200), (-0.35, 0.8))
    assert not fit.at_bound.any()
    excess, _ = padded(samples)
    periods = (5.0, 100.0, 1000.0)
    got = gpd_intervals.return_level_intervals(excess, count, u, fit.scale, fit.shape, fit.nll, rate, periods, NPY,
                                     intervals.Request(LEVEL, "profile"))
    return samples, u, fit, rate, periods, got


def test_reference_profile_finds_the_maximum_and_crosses_the_target() -> None:
    """The reference itself: its profile at the fitted level is the fit's -log L (the grid and the polish
    find the maximum likelihood), and at its ends it is the maximum's plus half the chi-square quantile."""
    samples, u, fit, rate, count = fitted_cells(41, 6, (20, 200), (-0.3, 0.6))
    for c, e in enumerate(samples):
        big_l = math.log(100.0 * NPY * rate[c])
        d_hat = fit.scale[c] * level_factor(fit.shape[c], big_l)[0]
        p_hat, xi_hat = reference_profile(e, d_hat, big_l)
        assert p_hat == pytest.approx(fit.nll[c], rel=1e-12, abs=1e-10)
        assert xi_hat == pytest.approx(fit.shape[c], abs=1e-6)
        for side in (-1, 1):
            d, _ = reference_end(e, d_hat, big_l, p_hat + HALF_CHI2, side)
            assert (d - d_hat) * side > 0
            assert reference_profile(e, d, big_l)[0] - p_hat == pytest.approx(HALF_CHI2, abs=1e-10)
            # and the profile is below the target just inside, above it just outside
            for inward, sign in ((1e-6, -1), (-1e-6, 1)):
                p = reference_profile(e, d * math.exp(-side * inward), big_l)[0]
                assert sign * (p - p_hat - HALF_CHI2) > 0


def profile_mismatches(samples: list[np.ndarray], u: np.ndarray, scale: np.ndarray, shape: np.ndarray,
                       rate: np.ndarray, periods: tuple[float, ...], got: intervals.Intervals,
                       half_chi2: float = HALF_CHI2) -> tuple[int, list[str]]:
    """(ends checked, a line for each end that is not the reference's): each end to 1e-7 relative (in the level
    above the threshold) and the reference profile at the implementation's end on the target to 1e-8."""
    checked, bad = 0, []
    for c, e in enumerate(samples):
        target = gpd.negative_log_likelihood(e, scale[c], shape[c]) + half_chi2
        for k, period in enumerate(periods):
            big_l = math.log(period * NPY * rate[c])
            if big_l <= 0:
                assert np.isnan(got.lower[k, c]) and np.isnan(got.upper[k, c]), (c, period)
                continue
            d_hat = scale[c] * level_factor(shape[c], big_l)[0]
            for side, ends in ((-1, got.lower), (1, got.upper)):
                d, xi_end = reference_end(e, d_hat, big_l, target, side)
                assert math.isinf(d) or xi_end < 15.0  # far from either search's upper reach: the same end
                have = ends[k, c] - u[c]
                p = reference_profile(e, have, big_l)[0] if np.isfinite(have) else math.nan
                ok = have == d if math.isinf(d) else abs(have / d - 1) <= 1e-7 and abs(p - target) <= 1e-8
                if not ok:
                    bad.append(f"cell {c} (n {e.size}, xi_hat {shape[c]:.4f}, max e {e.max():.6g}) T {period:g} "
                               f"{'upper' if side > 0 else 'lower'}: level above u {have:.10g}, reference {d:.10g} "
                               f"(inner xi {xi_end:.4f}); reference profile at it - target {p - target:.3g}")
                checked += 1
    return checked, bad


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_profile_ends_are_the_references(profile_cells) -> None:
    samples, u, fit, rate, periods, got = profile_cells
    assert got.lower.shape == (len(periods), len(samples))
    checked, bad = profile_mismatches(samples, u, fit.scale, fit.shape, rate, periods, got)
    assert checked >= 150
    assert not bad, "\n".join(bad)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_profile_ends_negative_shapes() -> None:
    """Bounded tails (xi_hat in about (-0.7, -0.3), temperature-like): the lower end of the level often falls
    below the largest excess, where the support (sigma > -xi max e) bounds the inner search over the shape."""
    samples, u, fit, rate, count = fitted_cells(32, 24, (20, 200), (-0.8, -0.3))
    keep = np.flatnonzero(~fit.at_bound)
    samples = [samples[c] for c in keep]
    u, scale, shape, rate, count = u[keep], fit.scale[keep], fit.shape[keep], rate[keep], count[keep]
    excess, _ = padded(samples)
    periods = (5.0, 100.0)
    got = gpd_intervals.return_level_intervals(excess, count, u, scale, shape, fit.nll[keep], rate, periods, NPY,
                                     intervals.Request(LEVEL, "profile"))
    checked, bad = profile_mismatches(samples, u, scale, shape, rate, periods, got)
    assert checked >= 80
    assert not bad, f"{len(bad)} of {checked} ends:\n" + "\n".join(bad)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_profile_ends_temperature_like_parent_through_analyse() -> None:
    """300 cells of 40 years of daily values from a GPD(5, -0.3) parent through ``pot.analyse``: at every end the
    reference profile of the cell's own excesses is the maximum's plus half the chi-square quantile."""
    rng = np.random.default_rng(8)
    series = gpd_sample(rng, (round(40 * NPY), 300), 5.0, -0.3)
    result = pot.analyse(series, tail=0.01, periods=(100.0,), npy=NPY, min_exceed=10,
                         ci=intervals.Request(LEVEL, "profile"))
    lower, upper, _ = ends_of(result)
    bad = []
    for c in range(series.shape[1]):
        if result.status[c] != pot.STATUS_OK:
            continue
        u = result.threshold[c]
        e = series[:, c][series[:, c] > u] - u
        big_l = math.log(100.0 * NPY * result.rate[c])
        target = gpd.negative_log_likelihood(e, result.scale[c], result.shape[c]) + HALF_CHI2
        for name, end in (("lower", lower[0, c]), ("upper", upper[0, c])):
            p = reference_profile(e, end - u, big_l)[0]
            if not abs(p - target) <= 1e-8:
                bad.append(f"cell {c} (xi_hat {result.shape[c]:.4f}) {name} {end:.10g}: profile - target "
                           f"{p - target:.3g}")
    assert not bad, f"{len(bad)} of {2 * series.shape[1]} ends:\n" + "\n".join(bad)


# Heavy tails and few excesses: the upper end is far out, or does not exist within exp(SPAN) times the level
FAR_UPPER = np.array([2.0594487424300696e+03, 7.6187483301649511e-02, 9.2423041028241180e+00, 6.6451137166451755e+00,
                      9.6409510008420951e-01, 1.1426802584318295e+01, 2.6046384512006929e-02])  # end at exp(22.8)
NO_UPPER = np.array([3.4089787326013777e+01, 1.8585351440778755e+00, 1.1943369386512059e+00, 3.0797365958285094e-01,
                     8.4597019762809166e-04, 7.8410784190151386e+00, 4.2635287610875270e+02])


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("sample", [NO_UPPER, FAR_UPPER], ids=["no-upper-end", "upper-end-at-exp22.8"])
def test_profile_upper_end_far_out_or_infinite(sample: np.ndarray) -> None:
    """An end exists exactly when the profile reaches the target within the searched span (exp(30) times the
    level above the threshold); one at exp(22.8) times it is finite."""
    excess, count = padded([sample])
    fit = gpd.fit(excess, count)
    assert not fit.at_bound[0] and fit.shape[0] > 2
    u, rate = np.array([0.0]), count / (20 * NPY)
    got = gpd_intervals.return_level_intervals(excess, count, u, fit.scale, fit.shape, fit.nll, rate, (100.0,), NPY,
                                     intervals.Request(LEVEL, "profile"))
    checked, bad = profile_mismatches([sample], u, fit.scale, fit.shape, rate, (100.0,), got)
    assert checked == 2
    assert not bad, "\n".join(bad)


def test_profile_interval_is_asymmetric_and_contains_the_normal_centre(profile_cells) -> None:
    """A right-skewed level: the profile reaches farther up than down in most cells."""
    samples, u, fit, rate, periods, got = profile_cells
    z = np.stack([gpd.return_level(u, fit.scale, fit.shape, rate, p, NPY) for p in periods])
    ok = np.isfinite(z)
    assert np.all(got.lower[ok] < z[ok]) and np.all(z[ok] < got.upper[ok])
    assert np.mean((got.upper - z)[ok] > (z - got.lower)[ok]) > 0.8


def test_profile_level_enters_through_the_chi_square_quantile() -> None:
    """At 0.8 the reference ends use half the chi-square(1) 0.8 quantile."""
    samples, u, fit, rate, count = fitted_cells(51, 4, (40, 150), (-0.2, 0.4))
    excess, _ = padded(samples)
    got = gpd_intervals.return_level_intervals(excess, count, u, fit.scale, fit.shape, fit.nll, rate, (100.0,), NPY,
                                     intervals.Request(0.8, "profile"))
    half = stats.chi2.ppf(0.8, 1) / 2
    for c, e in enumerate(samples):
        big_l = math.log(100.0 * NPY * rate[c])
        d_hat = fit.scale[c] * level_factor(fit.shape[c], big_l)[0]
        for side, ends in ((-1, got.lower), (1, got.upper)):
            d, _ = reference_end(e, d_hat, big_l, fit.nll[c] + half, side)
            assert ends[0, c] - u[c] == pytest.approx(d, rel=1e-7), (c, side)


def test_profile_standard_errors_are_the_normals() -> None:
    """The standard errors do not depend on the interval's method."""
    samples, u, fit, rate, count = fitted_cells(61, 12, (20, 200), (-0.3, 0.8))
    excess, _ = padded(samples)
    args = (excess, count, u, fit.scale, fit.shape, fit.nll, rate, (100.0,), NPY)
    normal = gpd_intervals.return_level_intervals(*args, intervals.Request(LEVEL, "normal"))
    profile = gpd_intervals.return_level_intervals(*args, intervals.Request(LEVEL, "profile"))
    for name in ("scale", "shape"):
        np.testing.assert_array_equal(normal.standard_errors[name], profile.standard_errors[name])


# -- 4. coverage: the acceptance check ----------------------------------------------------------------------------
SIGMA0, XI0 = 5.0, 0.1
TRUE_100 = SIGMA0 / XI0 * ((100 * NPY) ** XI0 - 1)  # the parent's 1 - 1/(100 * 365.25) quantile


def simulated_series(years: int, cells: int, seed: int) -> np.ndarray:
    """(time, cells) float32 daily values, iid GPD(SIGMA0, XI0), generated a block of cells at a time."""
    rng = np.random.default_rng(seed)
    out = np.empty((round(years * NPY), cells), np.float32)
    for c0 in range(0, cells, 500):
        c1 = min(cells, c0 + 500)
        out[:, c0:c1] = gpd_sample(rng, (out.shape[0], c1 - c0), SIGMA0, XI0)
    return out


def ends_of(result: pot.Result) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(lower, upper, standard errors) of an analysis with ``ci``, as the results carry them into the output."""
    return result.return_level_lower, result.return_level_upper, {"scale": result.scale_se, "shape": result.shape_se}


def coverage(years: int, cells: int, seed: int) -> dict[str, float]:
    series = simulated_series(years, cells, seed)
    assert stats.genpareto(c=XI0, scale=SIGMA0).ppf(1 - 1 / (100 * NPY)) == pytest.approx(TRUE_100, rel=1e-12)
    out = {}
    for method in ("profile", "normal"):
        result = pot.analyse(series, tail=0.01, periods=(100.0,), npy=NPY, min_exceed=10,
                             ci=intervals.Request(LEVEL, method))
        assert np.all(result.status == pot.STATUS_OK)
        lower, upper, se = ends_of(result)
        z = result.return_level[0]
        assert np.all(lower[0] < z) and np.all(z < upper[0])
        assert np.all(se["scale"] > 0) and np.all(se["shape"] > 0)
        out[method] = float(np.mean((lower[0] <= TRUE_100) & (TRUE_100 <= upper[0])))
        out[f"{method} misses below"] = float(np.mean(upper[0] < TRUE_100))
        out[f"{method} misses above"] = float(np.mean(lower[0] > TRUE_100))
    out["exceedances"] = float(result.n_exceed.mean())
    return out


def test_profile_coverage_of_the_true_100_year_level_40_years() -> None:
    """4000 cells of 40 years of daily values (about 147 exceedances each at tail 0.01): the 95% profile
    intervals cover the parent's 100-year level in [0.93, 0.97] of the cells (the binomial sd is 0.0034; the
    threshold's and the rate's own uncertainty, not in the interval, costs about a point). The normal
    interval, symmetric about a right-skewed estimate, under-covers: reported, checked loosely."""
    got = coverage(40, 4000, 2024)
    print(f"\n40 years: {got}")
    assert got["exceedances"] == pytest.approx(147, abs=1)
    assert 0.93 <= got["profile"] <= 0.97
    assert got["normal"] > 0.85
    assert got["normal misses above"] < 0.01  # its misses are the level above the upper end


def test_profile_coverage_20_years() -> None:
    """Half the record (about 73 exceedances): still close to nominal for the profile."""
    got = coverage(20, 4000, 2025)
    print(f"\n20 years: {got}")
    assert got["exceedances"] == pytest.approx(74, abs=1)
    assert 0.92 <= got["profile"] <= 0.97
    assert got["normal"] > 0.8


# -- 5. statuses and the analysis's plumbing ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def mixed_series() -> np.ndarray:
    """20 years of daily values on cells of every status: ok cells first, then the others."""
    rng = np.random.default_rng(77)
    n = round(20 * NPY)
    ok = np.stack([gpd_sample(rng, n, s, x) for s, x in
                   [(5.0, 0.1), (1.0, -0.3), (20.0, 0.4), (0.5, 0.0), (3.0, 0.8), (2.0, -0.1)]], axis=1)
    all_nan = np.full((n, 1), np.nan)
    constant = np.full((n, 1), 7.5)
    too_few = np.full((n, 1), 1.0)
    too_few[rng.choice(n, 5, replace=False), 0] = rng.uniform(2.0, 3.0, 5)  # u = 1: 5 exceedances
    no_exceed = rng.uniform(0.0, 1.0, (n, 1))
    no_exceed[rng.choice(n, 200, replace=False), 0] = 2.0  # the top 1% tied: nothing strictly above u
    mostly_nan = gpd_sample(rng, (n, 1), 5.0, 0.1)
    mostly_nan[: n - 300] = np.nan  # 300 valid values: 3 exceedances
    # excesses of a uniform parent: shape -1, the likelihood unbounded beyond it; some cells end on the bound
    uniform = rng.uniform(0.0, 1.0, (n, 40))
    return np.concatenate([ok, all_nan, constant, too_few, no_exceed, mostly_nan, uniform], axis=1)


@pytest.mark.parametrize("method", ["profile", "normal"])
def test_cells_not_ok_give_nan_and_ok_cells_are_bracketed(mixed_series: np.ndarray, method: str) -> None:
    periods = (10.0, 100.0)
    result = pot.analyse(mixed_series, tail=0.01, periods=periods, npy=NPY, min_exceed=10,
                         ci=intervals.Request(LEVEL, method))
    status = result.status
    assert list(status[:6]) == [pot.STATUS_OK] * 6
    assert list(status[6:11]) == [pot.NO_VALID, pot.CONSTANT, pot.TOO_FEW, pot.NO_EXCEED, pot.TOO_FEW]
    assert np.any(status[11:] == pot.AT_BOUND), "no cell at the shape's bound: pick another seed"
    lower, upper, se = ends_of(result)
    assert lower.shape == upper.shape == (len(periods), mixed_series.shape[1])
    ok = status == pot.STATUS_OK
    for values in (lower, upper):
        assert np.all(np.isnan(values[:, ~ok]))
    for name in ("scale", "shape"):
        assert se[name].shape == ok.shape
        assert np.all(np.isnan(se[name][~ok])) and np.all(se[name][ok] > 0)
    z = result.return_level
    assert np.all(lower[:, ok] < z[:, ok]) and np.all(z[:, ok] < upper[:, ok])
    if method == "profile":  # the level above the threshold stays positive (the normal interval may not)
        assert np.all(lower[:, ok] > result.threshold[ok])


def test_analyse_without_ci_has_no_intervals(mixed_series: np.ndarray) -> None:
    result = pot.analyse(mixed_series[:, :6], tail=0.01, periods=(100.0,), npy=NPY, min_exceed=10)
    assert getattr(result, "intervals", None) is None
    assert getattr(result, "return_level_lower", None) is None


@pytest.mark.parametrize("method", ["profile", "normal"])
def test_analyse_intervals_are_those_of_its_own_excesses(mixed_series: np.ndarray, method: str) -> None:
    """The analysis passes each cell's excesses over its type-7 threshold, its rate and its fit on: its
    intervals are those computed from the series directly (numpy's quantile, values strictly above)."""
    series = mixed_series[:, :6].astype(np.float64)
    periods = (10.0, 100.0)
    request = intervals.Request(LEVEL, method)
    result = pot.analyse(series, tail=0.01, periods=periods, npy=NPY, min_exceed=10, ci=request)
    u = np.quantile(series, 0.99, axis=0)
    np.testing.assert_allclose(result.threshold, u, rtol=1e-14)
    samples = [np.sort(series[:, c][series[:, c] > result.threshold[c]] - result.threshold[c])[::-1]
               for c in range(series.shape[1])]
    excess, count = padded(samples)
    rate = count / series.shape[0]
    np.testing.assert_array_equal(result.rate, rate)
    fit = gpd.fit(excess, count)
    want = gpd_intervals.return_level_intervals(excess, count, result.threshold, fit.scale, fit.shape, fit.nll, rate, periods,
                                      NPY, request)
    lower, upper, se = ends_of(result)
    np.testing.assert_allclose(lower, want.lower, rtol=1e-12)
    np.testing.assert_allclose(upper, want.upper, rtol=1e-12)
    for name in ("scale", "shape"):
        np.testing.assert_allclose(se[name], want.standard_errors[name], rtol=1e-12)


def test_period_shorter_than_the_time_between_exceedances_gives_nan() -> None:
    """T npy rate <= 1: the 'level' is not above the threshold (L <= 0), no interval (the docstring's rule)."""
    samples, u, fit, rate, count = fitted_cells(71, 3, (30, 60), (0.0, 0.3))
    excess, _ = padded(samples)
    short = 0.5 / (NPY * rate.max())  # T npy rate = 0.5 at most
    for method in ("normal", "profile"):
        got = gpd_intervals.return_level_intervals(excess, count, u, fit.scale, fit.shape, fit.nll, rate, (short, 100.0),
                                         NPY, intervals.Request(LEVEL, method))
        assert np.all(np.isnan(got.lower[0])) and np.all(np.isnan(got.upper[0]))
        assert np.all(np.isfinite(got.lower[1])) and np.all(np.isfinite(got.upper[1]))
