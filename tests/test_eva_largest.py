"""Each cell's largest valid values, exact whatever the sample that sets the bar."""

from __future__ import annotations

import numpy as np
import pytest

from climio.eva import largest


def _reference(series: np.ndarray, k: int, missing: list[float]) -> list[np.ndarray]:
    out = []
    for column in series.T:
        valid = column[~(np.isnan(column) | np.isin(column, missing))]
        out.append(np.sort(valid)[::-1][:k])
    return out


def check_scanner(scanner: largest.Scanner, series: np.ndarray, k: int, missing: list[float]) -> None:
    """Exactly each column's k largest valid values, its count of valid values and its smallest valid value."""
    for c, expected in enumerate(_reference(series, k, missing)):
        valid = series[:, c][~(np.isnan(series[:, c]) | np.isin(series[:, c], missing))]
        assert scanner.n_valid[c] == valid.size
        assert scanner.low[c] == (valid.min() if valid.size else np.inf)
        assert scanner.kept[c] >= expected.size
        got = np.sort(scanner.values[c, :scanner.kept[c]])[::-1][:k]
        np.testing.assert_array_equal(got, expected)


def _check(series: np.ndarray, k: int, missing: list[float]) -> None:
    check_scanner(largest.scan(series, k, missing), series, k, missing)


@pytest.mark.parametrize("order", ["=", "S"])  # S: the other byte order, as a classic file stores it here
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_on_gamma_like_series_with_dry_days_and_missing_values(dtype: type, order: str) -> None:
    rng = np.random.default_rng(3)
    series = rng.gamma(0.6, 4.0, (5000, 37)).astype(dtype)
    series[rng.random(series.shape) < 0.5] = 0.0
    series[rng.random(series.shape) < 0.02] = np.nan
    series[rng.random(series.shape) < 0.01] = 1e20
    series[:, 5] = np.nan  # no valid value
    series[:, 6] = 2.5  # constant
    series[:4900, 7] = 1e20  # fewer valid values than k
    _check(series.astype(series.dtype.newbyteorder(order)), 51, [1e20])


def test_exact_when_the_sample_puts_the_bar_too_high() -> None:
    # every sampled time step (0, 8, 16, ...) holds the largest values: the bar from the sample is far
    # above the cell's k-th largest, so step 3 must rescan these cells
    length, cells = 4000, 9
    series = np.tile(np.linspace(0.0, 1.0, length)[:, None], (1, cells))
    series[::largest.SAMPLE_STRIDE] += 10.0
    _check(series, 600, [])


def test_ties_increasing_series_and_infinities() -> None:
    length = 3000
    series = np.stack([np.arange(length, dtype=float), np.repeat(np.arange(30.0), 100),
                       np.where(np.arange(length) % 7 == 0, np.inf, 1.0),
                       np.full(length, -np.inf), np.arange(length, 0, -1, dtype=float)], axis=1)
    _check(series, 40, [])


def test_short_series_and_k_larger_than_the_series() -> None:
    rng = np.random.default_rng(4)
    _check(rng.normal(size=(5, 3)), 2, [])
    _check(rng.normal(size=(5, 3)), 9, [])


def test_too_many_missing_values_is_refused() -> None:
    with pytest.raises(ValueError, match="missing values"):
        largest.scan(np.zeros((10, 2)), 3, [1.0, 2.0, 3.0, 4.0, 5.0])


def test_a_long_series_takes_the_sample_of_a_sample() -> None:
    # 40000 steps: the bar comes from 5000 sampled steps whose own bar comes from 625 of them
    rng = np.random.default_rng(5)
    series = rng.gamma(0.6, 4.0, (40000, 11)).astype(np.float32)
    series[rng.random(series.shape) < 0.6] = 0.0
    _check(series, 400, [])
    _check(series.astype(series.dtype.newbyteorder("S")), 400, [])
