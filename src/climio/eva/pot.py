"""Peaks over threshold for many cells: thresholds, excesses, rates, status, the GPD fit and return levels.

Per cell (a time series Y with missing values as NaN):

* threshold u: R's default type-7 quantile at 1 - tail of the valid values,
  exactly as ``quantile.default`` computes it (``index = 1 + (n-1) p``,
  ``(1-h) x[lo] + h x[hi]``, no interpolation when ``x[hi] == x[lo]``);
* exceedances Y > u (strict), excesses Y - u, rate = exceedances / valid values;
* the GPD fit of :mod:`climio.eva.gpd` and return levels for each period.

The input is the ``(time, cells)`` array as read from the file, scanned once in
memory order: each cell keeps only its largest values (the ~1 % tail) in a
small heap, so the series is never sorted, transposed or copied to float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np

from climio.eva import gpd

STATUS_OK = 0
STATUS_MEANINGS = ("ok", "no_valid_data", "constant_series", "no_exceedances", "too_few_exceedances",
                   "shape_at_lower_bound")
NO_VALID, CONSTANT, NO_EXCEED, TOO_FEW, AT_BOUND = 1, 2, 3, 4, 5


def result_attributes(var: str, units: str, tail: float) -> dict[str, dict[str, object]]:
    """CF attributes of each result variable, for the netCDF output and the xarray API alike."""
    return {
        "threshold": {"long_name": f"{1 - tail:g} quantile (R type 7) of {var}", "units": units},
        "scale": {"long_name": "GPD scale of the excesses", "units": units},
        "shape": {"long_name": "GPD shape of the excesses", "units": "1"},
        "rate": {"long_name": "exceedances per valid value", "units": "1"},
        "n_exceed": {"long_name": "number of exceedances"},
        "return_level": {"long_name": f"return level of {var}", "units": units},
        "nll": {"long_name": "negative log-likelihood of the excesses"},
        "status": {"long_name": "fit status", "flag_values": np.arange(len(STATUS_MEANINGS), dtype="i1"),
                   "flag_meanings": " ".join(STATUS_MEANINGS)},
    }


RESULT_TYPES = {"threshold": "f8", "scale": "f8", "shape": "f8", "rate": "f8", "n_exceed": "i4",
                "return_level": "f8", "nll": "f8", "status": "i1"}


@dataclass
class Result:
    """Per-cell results; fit results are NaN unless status is ok or shape_at_lower_bound."""

    threshold: np.ndarray
    scale: np.ndarray
    shape: np.ndarray
    rate: np.ndarray
    n_exceed: np.ndarray
    nll: np.ndarray
    status: np.ndarray
    return_level: np.ndarray  # (periods, cells)


def type7_positions(n_valid: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """0-based order-statistic positions lo, hi and weight h of R's type-7 quantile."""
    index = 1.0 + np.maximum(n_valid - 1, 0) * p
    lo = np.floor(index)
    return lo.astype(np.int64) - 1, np.ceil(index).astype(np.int64) - 1, index - lo


def tail_capacity(length: int, tail: float) -> int:
    """How many of the largest values a cell needs at most: from position lo to the end."""
    lo, _, _ = type7_positions(np.array([length]), 1.0 - tail)
    return max(1, length - int(lo[0]))


@numba.njit(cache=True)
def _scan(series: np.ndarray, missing: np.ndarray, top: np.ndarray, size: np.ndarray, n_valid: np.ndarray,
          lowest: np.ndarray, highest: np.ndarray) -> None:
    """One pass over (time, cells) in memory order: per cell, count valid values, track min/max and keep
    the ``top.shape[1]`` largest in a min-heap (``top[c, 0]`` is the smallest kept)."""
    capacity = top.shape[1]
    for t in range(series.shape[0]):
        for c in range(series.shape[1]):
            v = series[t, c]
            if v != v:
                continue
            skip = False
            for m in range(missing.size):
                skip |= v == missing[m]
            if skip:
                continue
            n_valid[c] += 1
            if v < lowest[c]:
                lowest[c] = v
            if v > highest[c]:
                highest[c] = v
            k = size[c]  # top[c, :] is a min-heap; index it directly (a row view per value costs ~10 ns)
            if k < capacity:  # push and sift up
                i = k
                size[c] = k + 1
                while i > 0 and top[c, (i - 1) // 2] > v:
                    top[c, i] = top[c, (i - 1) // 2]
                    i = (i - 1) // 2
                top[c, i] = v
            elif v > top[c, 0]:  # replace the smallest kept value and sift down
                i = 0
                while True:
                    child = 2 * i + 1
                    if child >= capacity:
                        break
                    if child + 1 < capacity and top[c, child + 1] < top[c, child]:
                        child += 1
                    if top[c, child] >= v:
                        break
                    top[c, i] = top[c, child]
                    i = child
                top[c, i] = v


def analyse(series: np.ndarray, *, tail: float, periods: Sequence[float], npy: float, min_exceed: int,
            missing: Sequence[float] = ()) -> Result:
    """Everything for the cells in the columns of ``series`` (time, cells), read in place, never copied.

    Values that are NaN or equal to one of ``missing`` (``_FillValue``, ``missing_value``) are left out.
    """
    length, cells = series.shape
    capacity = tail_capacity(length, tail)
    top = np.full((cells, capacity), -np.inf, dtype=series.dtype)  # unused slots sort last
    size = np.zeros(cells, np.int64)
    n_valid = np.zeros(cells, np.int64)
    lowest = np.full(cells, np.inf, dtype=series.dtype)
    highest = np.full(cells, -np.inf, dtype=series.dtype)
    _scan(series, np.asarray(missing, dtype=series.dtype), top, size, n_valid, lowest, highest)
    descending = -np.sort(-top.astype(float), axis=1)  # largest first, unused slots (-inf) last
    lo, hi, h = type7_positions(n_valid, 1.0 - tail)
    row = np.arange(cells)
    has = n_valid > 0
    x_lo = np.where(has, descending[row, np.clip(n_valid - 1 - lo, 0, capacity - 1)], np.nan)
    x_hi = np.where(has, descending[row, np.clip(n_valid - 1 - hi, 0, capacity - 1)], np.nan)
    threshold = np.where(x_hi != x_lo, (1.0 - h) * x_lo + h * x_hi, x_lo)
    with np.errstate(invalid="ignore"):
        exceeds = descending > threshold[:, None]
    n_exceed = exceeds.sum(axis=1)
    excess = np.where(exceeds, descending - threshold[:, None], 0.0)  # already largest first
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(has, n_exceed / np.maximum(n_valid, 1), np.nan)
    status = np.full(cells, STATUS_OK, np.int8)
    status[n_exceed < min_exceed] = TOO_FEW
    status[n_exceed == 0] = NO_EXCEED
    status[has & (lowest == highest)] = CONSTANT
    status[~has] = NO_VALID
    fitted = status == STATUS_OK
    result = gpd.fit(excess[fitted], n_exceed[fitted])
    scale, shape, nll = (np.full(cells, np.nan) for _ in range(3))
    scale[fitted], shape[fitted], nll[fitted] = result.scale, result.shape, result.nll
    status[np.flatnonzero(fitted)[result.at_bound]] = AT_BOUND
    levels = np.stack([gpd.return_level(threshold, scale, shape, rate, period, npy) for period in periods]) \
        if len(periods) else np.empty((0, cells))
    return Result(threshold, scale, shape, rate, n_exceed.astype(np.int32), nll, status, levels)
