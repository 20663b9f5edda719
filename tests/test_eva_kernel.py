"""The GPD kernel and the peaks-over-threshold layer, against independent references."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats

from climio.eva import cf, gpd, pot


def nll_and_gradient(params: np.ndarray, e: np.ndarray) -> tuple[float, np.ndarray]:
    """-log L in (log sigma, xi) with its gradient, written out independently of the kernel."""
    log_sigma, xi = params
    sigma = np.exp(log_sigma)
    z = 1.0 + xi * e / sigma
    if np.any(z <= 0) or xi == 0:
        return np.inf, np.zeros(2)
    log_z = np.log1p(xi * e / sigma)
    value = e.size * log_sigma + (1.0 + 1.0 / xi) * log_z.sum()
    d_log_sigma = e.size - (1.0 + 1.0 / xi) * (xi * e / sigma / z).sum()
    d_xi = -log_z.sum() / xi**2 + (1.0 + 1.0 / xi) * (e / sigma / z).sum()
    return value, np.array([d_log_sigma, d_xi])


def reference_fit(e: np.ndarray, starts: list[tuple[float, float]]) -> optimize.OptimizeResult:
    """Tightly converged BFGS from several starts; the best result."""
    best = None
    for start in starts:
        r = optimize.minimize(nll_and_gradient, np.array(start), args=(e,), jac=True, method="BFGS",
                              options={"gtol": 1e-11, "maxiter": 10000})
        if best is None or r.fun < best.fun:
            best = r
    return best


@pytest.fixture(scope="module")
def samples() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2024)
    cells, k = 300, 1000  # the shape MLE's O(1/n) bias is small against its sampling error at n = 1000
    xi = rng.uniform(-0.45, 0.9, cells)
    sigma = rng.uniform(0.3, 8.0, cells)
    e = stats.genpareto.rvs(xi[:, None], scale=sigma[:, None], size=(cells, k), random_state=rng)
    return e, xi, sigma


def test_recovers_known_parameters_within_sampling_error(samples) -> None:
    e, xi, sigma = samples
    fit = gpd.fit(e, np.full(len(e), e.shape[1]))
    # asymptotic sd of the shape MLE: (1 + xi) / sqrt(n)
    z = (fit.shape - xi) / ((1 + xi) / np.sqrt(e.shape[1]))
    assert abs(z.mean()) < 0.3 and 0.7 < z.std() < 1.4
    assert np.mean(np.abs(z) > 3.5) < 0.01
    assert np.median(np.abs(np.log(fit.scale / sigma))) < 0.1


def test_is_the_true_maximum_against_an_independent_optimiser(samples) -> None:
    e, _, _ = samples
    count = np.full(len(e), e.shape[1])
    fit = gpd.fit(e, count)
    for i in range(0, len(e), 3):
        own = gpd.negative_log_likelihood(e[i], fit.scale[i], fit.shape[i])
        assert fit.nll[i] == pytest.approx(own, rel=1e-12)
        ref = reference_fit(e[i], [(np.log(fit.scale[i]) + 0.05, fit.shape[i] - 0.05),
                                   (np.log(e[i].mean()), 0.1), (np.log(e[i].mean()), 0.5),
                                   (np.log(e[i].max()), -0.4)])
        assert own <= ref.fun + 1e-9 * abs(ref.fun), i  # never worse
        assert np.exp(ref.x[0]) == pytest.approx(fit.scale[i], rel=1e-6)
        assert ref.x[1] == pytest.approx(fit.shape[i], rel=1e-6, abs=1e-7)


def test_exponential_limit_is_smooth() -> None:
    rng = np.random.default_rng(5)
    e = rng.exponential(2.0, size=(1, 4000))
    fit = gpd.fit(e, np.array([4000]))
    assert abs(fit.shape[0]) < 0.05
    # near xi = 0 the likelihood equals the exponential one continuously
    for xi in (1e-9, -1e-9):
        assert gpd.negative_log_likelihood(e[0], 2.0, xi) == pytest.approx(
            gpd.negative_log_likelihood(e[0], 2.0, 0.0), rel=1e-9)


def test_bounded_tail_keeps_every_excess_inside_the_support() -> None:
    rng = np.random.default_rng(7)
    e = stats.genpareto.rvs(-0.3, scale=1.0, size=(20, 200), random_state=rng)
    fit = gpd.fit(e, np.full(20, 200))
    assert np.all(fit.shape < 0)
    assert np.all(e.max(axis=1) < -fit.scale / fit.shape)  # every excess below -sigma/xi


def test_non_regular_region_stops_at_shape_minus_one() -> None:
    # Excesses piled up against an upper end point: the likelihood grows without bound as xi -> -inf,
    # so the fit sits on the documented boundary xi = -1, sigma = max excess.
    e = np.array([[1.0, 0.999, 0.998, 0.997, 0.996, 0.995, 0.994, 0.993, 0.5, 0.2, 0.999, 0.998]])
    fit = gpd.fit(e, np.array([e.shape[1]]))
    assert fit.at_bound[0] and fit.shape[0] == -1.0 and fit.scale[0] == pytest.approx(1.0)
    assert fit.nll[0] == pytest.approx(e.shape[1] * np.log(1.0))


def test_padding_and_empty_rows() -> None:
    rng = np.random.default_rng(9)
    e = rng.exponential(1.0, size=(3, 50))
    padded = np.zeros((4, 60))
    padded[0, :50], padded[2, :30] = e[0], e[1, :30]
    fit = gpd.fit(padded, np.array([50, 0, 30, 0]))
    alone = gpd.fit(e[:1], np.array([50]))
    assert fit.shape[0] == alone.shape[0] and fit.scale[0] == alone.scale[0]
    assert np.isnan(fit.shape[1]) and np.isnan(fit.scale[3])


def test_return_level_formula_and_its_limit() -> None:
    u, s, rate = np.array([10.0]), np.array([2.0]), np.array([0.01])
    m = 100 * 365.25 * 0.01
    assert gpd.return_level(u, s, np.array([0.2]), rate, 100, 365.25)[0] == pytest.approx(10 + 2 / 0.2 * (m**0.2 - 1))
    assert gpd.return_level(u, s, np.array([0.0]), rate, 100, 365.25)[0] == pytest.approx(10 + 2 * np.log(m))
    near = gpd.return_level(u, s, np.array([1e-13]), rate, 100, 365.25)[0]
    assert near == pytest.approx(10 + 2 * np.log(m), rel=1e-12)


def series(*columns: list[float]) -> np.ndarray:
    """(time, cells) float32 from columns of equal length."""
    return np.array(columns, dtype=np.float32).T.copy()


@pytest.mark.parametrize("values,p,expected", [
    (list(range(1, 11)), 0.99, 9.91),            # R: quantile(1:10, 0.99) = 9.91
    ([1, 1, 1, 2], 0.5, 1.0),                    # ties: x[lo] == x[hi], no interpolation
    ([0, 0, 0, 0, 7, 7, 9], 0.75, 7.0),
    ([5, 5, 5, 5, 5, 9], 0.9, 7.0),              # index 5.5: (1 - .5) 5 + .5 9
    ([2.5, 2.5, 2.5, 1.0, 3.0, 2.5], 0.5, 2.5),
])
def test_threshold_is_r_type_7(values: list[float], p: float, expected: float) -> None:
    result = pot.analyse(series(values), tail=1 - p, periods=[], npy=365.25, min_exceed=1)
    assert result.threshold[0] == pytest.approx(expected, rel=1e-15)


def test_threshold_matches_numpy_linear_on_long_series() -> None:
    rng = np.random.default_rng(3)
    data = np.round(rng.gamma(0.5, 4.0, size=(3000, 40)), 1).astype(np.float32)  # many ties
    result = pot.analyse(data.copy(), tail=0.01, periods=[], npy=365.25, min_exceed=1)
    assert np.allclose(result.threshold, np.quantile(data.astype(float), 0.99, axis=0), rtol=1e-14, atol=0)
    assert np.array_equal(result.n_exceed, (data > result.threshold).sum(axis=0))  # strict exceedances


def test_missing_values_are_left_out() -> None:
    values = [3.0, 1.0, 2.0, 5.0, 4.0]
    with_gaps = [3.0, np.nan, 1.0, 1e20, 2.0, -999.0, 5.0, 4.0]
    a = pot.analyse(series(values), tail=0.25, periods=[], npy=365.25, min_exceed=1)
    b = pot.analyse(series(with_gaps), tail=0.25, periods=[], npy=365.25, min_exceed=1, missing=[1e20, -999.0])
    assert a.threshold[0] == b.threshold[0] == 4.0 and a.rate[0] == b.rate[0] == 0.2


def test_status_codes_for_every_edge_case() -> None:
    n = 400
    rng = np.random.default_rng(1)
    good = rng.gamma(0.7, 3.0, n)
    cols = [good, np.full(n, np.nan), np.full(n, 2.0), np.r_[np.zeros(n - 1), 1.0], good]
    cols[3] = np.r_[np.zeros(n - 2), 1.0, 1.0]  # threshold 0 -> 2 exceedances: too few
    cols[4] = np.r_[np.zeros(n - 1), 0.0]  # constant zero
    data = series(*cols)
    r = pot.analyse(data, tail=0.01, periods=[10, 100], npy=365.25, min_exceed=3)
    names = [cf.STATUS_MEANINGS[s] for s in r.status]
    assert names == ["ok", "no_valid_data", "constant_series", "too_few_exceedances", "constant_series"]
    assert np.isfinite(r.shape[0]) and np.all(np.isfinite(r.return_level[:, 0]))
    assert np.all(np.isnan(r.shape[1:])) and np.all(np.isnan(r.return_level[:, 1:]))
    # no exceedances at all: the top values all tie with the threshold
    tied = series(np.r_[np.arange(n - 10), np.full(10, 1000.0)])
    assert cf.STATUS_MEANINGS[pot.analyse(tied, tail=0.01, periods=[], npy=365.25, min_exceed=1).status[0]] \
        == "no_exceedances"


def cells_of_real_looking_data() -> list[np.ndarray]:
    """Excess series of cells from the generated CMIP field and from real CanESM2 output."""
    import netCDF4
    from conftest import DATA

    from climio.gen import cmip

    out = []
    pr = cmip.field(11, 0, 5000, cmip.climatology(6, 8))  # (days, cells)
    real = DATA / "cmip" / "tiny_daily_pr.nc"
    with netCDF4.Dataset(real) as ds:
        canesm = ds["pr"][:].filled(np.nan).reshape(ds["pr"].shape[0], -1)
    for data in (pr, canesm):
        result = pot.analyse(data.astype(np.float32), tail=0.01, periods=[], npy=365.25, min_exceed=10)
        for c in range(data.shape[1]):
            y = data[:, c].astype(float)
            out.append(y[y > result.threshold[c]] - result.threshold[c])
    return out


def test_real_looking_cells_are_the_true_maximum() -> None:
    excesses = cells_of_real_looking_data()
    fit = gpd.fit(np.array([np.pad(e, (0, 600 - e.size)) for e in excesses]), np.array([e.size for e in excesses]))
    for i, e in enumerate(excesses):
        own = gpd.negative_log_likelihood(e, fit.scale[i], fit.shape[i])
        ref = reference_fit(e, [(np.log(fit.scale[i]) + 0.05, fit.shape[i] - 0.05), (np.log(e.mean()), 0.1),
                                (np.log(e.mean()), -0.3), (np.log(e.mean()), 0.6)])
        assert own <= ref.fun + 1e-9 * abs(ref.fun), i
        assert np.exp(ref.x[0]) == pytest.approx(fit.scale[i], rel=1e-6)
        assert ref.x[1] == pytest.approx(fit.shape[i], rel=1e-6, abs=1e-7)
