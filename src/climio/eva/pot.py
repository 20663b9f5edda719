"""Peaks over threshold for many cells: thresholds, excesses, rates, status, the GPD fit and return levels.

Per cell (a time series Y with missing values as NaN):

* threshold u: R's default type-7 quantile at 1 - tail of the valid values,
  exactly as ``quantile.default`` computes it (``index = 1 + (n-1) p``,
  ``(1-h) x[lo] + h x[hi]``, no interpolation when ``x[hi] == x[lo]``);
* exceedances Y > u (strict), excesses Y - u, rate = exceedances / valid values;
* with runs declustering (:mod:`climio.eva.decluster`), only each cluster's largest excess, and the rate is
  clusters / valid values; the extremal index is estimated either way;
* the GPD fit of :mod:`climio.eva.gpd` and return levels for each period.

The input is the ``(time, cells)`` array as read from the file, scanned in
memory order, whole or a block of time steps at a time: each cell keeps only
its largest values, the ~1 % tail (:mod:`climio.eva.largest`), so the series
is never sorted, transposed or copied to float64.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

import numba
import numpy as np

from climio.eva import covariate, decluster, distributions, intervals, largest, results
from climio.eva.covariate import Covariate, Trend
from climio.eva.results import Declustered, Estimates, Exceedances, Trended

STATUS_OK = 0
NO_VALID, CONSTANT, NO_EXCEED, TOO_FEW, AT_BOUND, AT_UPPER = 1, 2, 3, 4, 5, 6  # cf.STATUS_MEANINGS
CHUNK_CELLS = 4096  # cells fitted at a time after the scan


@dataclass(kw_only=True)
class Result(Declustered, Exceedances, Estimates):
    """Per-cell results of the GPD fit to the excesses: its scale and shape; with --ci, their standard errors."""

    scale: np.ndarray
    shape: np.ndarray
    scale_se: np.ndarray | None = None
    shape_se: np.ndarray | None = None


@dataclass(kw_only=True)
class TrendResult(Declustered, Exceedances, Trended, Estimates):
    """Per-cell results of the fit whose GPD scale moves with a covariate (:mod:`climio.eva.gpd_trend`): its
    coefficients, shape and their standard errors; return levels (values, periods, cells)."""

    log_scale_intercept: np.ndarray
    log_scale_slope: np.ndarray
    shape: np.ndarray
    log_scale_intercept_se: np.ndarray
    log_scale_slope_se: np.ndarray
    shape_se: np.ndarray


def trend(cov: Covariate, step_years: np.ndarray, at: Sequence[float] | None) -> Trend:
    """The covariate of each time step (from the calendar year of its date) and the values of the effective
    return levels (``at``, or by default the covariate of the first and last years)."""
    step_years = np.asarray(step_years, dtype=np.int64)
    return Trend(cov.of_years(step_years, np.ones(step_years.size, bool)),
                 covariate.at_values(cov, int(step_years.min()), int(step_years.max()), at))


def type7_positions(n_valid: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """0-based order-statistic positions lo, hi and weight h of R's type-7 quantile."""
    index = 1.0 + np.maximum(n_valid - 1, 0) * p
    lo = np.floor(index)
    return lo.astype(np.int64) - 1, np.ceil(index).astype(np.int64) - 1, index - lo


@numba.njit(cache=True)
def _negated(values: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """-values, +inf past each cell's kept ones: sorted ascending, the rows are the values largest first
    (numpy's vectorized sort is fast on this shape, a sorted run of +inf at the end)."""
    out = np.empty_like(values)
    for c in range(values.shape[0]):
        for i in range(values.shape[1]):
            out[c, i] = -values[c, i] if i < kept[c] else np.inf
    return out


@numba.njit(cache=True)
def _exceedances(negated: np.ndarray, n_valid: np.ndarray, lo: np.ndarray, hi: np.ndarray, h: np.ndarray,
                 threshold: np.ndarray, peak: np.ndarray, n_exceed: np.ndarray, excess: np.ndarray) -> None:
    """Per cell, from its values largest first (``-negated``): the type-7 threshold, the largest value,
    and the excesses over the threshold, largest first, in float64."""
    capacity = excess.shape[1]
    for c in range(negated.shape[0]):
        n = n_valid[c]
        if n == 0:
            threshold[c] = peak[c] = np.nan
            n_exceed[c] = 0
            continue
        x_lo = -np.float64(negated[c, max(0, min(n - 1 - lo[c], capacity - 1))])
        x_hi = -np.float64(negated[c, max(0, min(n - 1 - hi[c], capacity - 1))])
        u = (1.0 - h[c]) * x_lo + h[c] * x_hi if x_hi != x_lo else x_lo
        count = 0
        while count < capacity and -np.float64(negated[c, count]) > u:
            excess[c, count] = -np.float64(negated[c, count]) - u
            count += 1
        threshold[c], peak[c], n_exceed[c] = u, -np.float64(negated[c, 0]), count


def tail_capacity(length: int, tail: float) -> int:
    """How many of the largest values a cell needs at most: from position lo to the end."""
    lo, _, _ = type7_positions(np.array([length]), 1.0 - tail)
    return max(1, length - int(lo[0]))


def analyse(series: np.ndarray, *, tail: float, periods: Sequence[float], npy: float, min_exceed: int,
            missing: Sequence[float] = (), progress: Callable[[int], None] | None = None,
            ci: intervals.Request | None = None, run: int | None = None, trend: Trend | None = None,
            distribution: str = "gpd") -> Result | TrendResult:
    """Everything for the cells in the columns of ``series`` (time, cells), read in place, never copied.

    Values that are NaN or equal to one of ``missing`` (``_FillValue``, ``missing_value``) are left out.
    One pass over whole rows finds every cell's largest values (rows of a slab are contiguous; a
    column chunk of them is not, and cost twice as much); the rest runs in chunks of ``CHUNK_CELLS``
    cells to bound the float64 temporaries, calling ``progress(cells_done)`` after each.
    """
    scanner = largest.scan(series, tail_capacity(series.shape[0], tail), missing,
                           times=run is not None or trend is not None)
    return from_scanner(scanner, tail=tail, periods=periods, npy=npy, min_exceed=min_exceed, progress=progress,
                        ci=ci, run=run, trend=trend, distribution=distribution)


def from_scanner(scanner: largest.Scanner, *, tail: float, periods: Sequence[float], npy: float, min_exceed: int,
                 progress: Callable[[int], None] | None = None, ci: intervals.Request | None = None,
                 run: int | None = None, trend: Trend | None = None, distribution: str = "gpd"
                 ) -> Result | TrendResult:
    """Everything from a scanner that has seen every time step (its k from :func:`tail_capacity`), the excesses
    fitted by ``distribution`` (:mod:`climio.eva.distributions`); with ``ci``,
    the return levels' confidence intervals and the parameters' standard errors too; with ``run``, the fit of
    the runs-declustered clusters' maxima; with ``trend``, the fit whose scale moves with a covariate (for
    either, the scanner must have kept the times)."""
    cells = scanner.values.shape[0]
    parts = []
    for c0 in range(0, max(cells, 1), CHUNK_CELLS):
        chunk = slice(c0, min(cells, c0 + CHUNK_CELLS))
        times = None if run is None and trend is None else scanner.times[chunk]  # type: ignore[index]
        parts.append(_from_largest(scanner.values[chunk], kept=scanner.kept[chunk], n_valid=scanner.n_valid[chunk],
                                   low=scanner.low[chunk], capacity=scanner.k, tail=tail, periods=periods, npy=npy,
                                   min_exceed=min_exceed, ci=ci, times=times, run=run, trend=trend,
                                   distribution=distribution))
        if progress is not None:
            progress(chunk.stop - chunk.start)
    return results.concatenate(parts, Result if trend is None else TrendResult)  # type: ignore[return-value]


def _from_largest(values: np.ndarray, *, kept: np.ndarray, n_valid: np.ndarray, low: np.ndarray, capacity: int,
                  tail: float, periods: Sequence[float], npy: float, min_exceed: int,
                  ci: intervals.Request | None, times: np.ndarray | None, run: int | None,
                  trend: Trend | None, distribution: str) -> Result | TrendResult:
    """Thresholds, exceedances, status, fits and return levels from each cell's largest values (and, to
    decluster or fit a trend, their time steps)."""
    cells = values.shape[0]
    lo, hi, h = type7_positions(n_valid, 1.0 - tail)
    threshold, peak = np.empty(cells), np.empty(cells)
    n_exceed = np.empty(cells, np.int64)
    excess = np.empty((cells, max(capacity, 1)))
    negated = _negated(values, kept)
    negated.sort(axis=1)
    _exceedances(negated, n_valid, lo, hi, h, threshold, peak, n_exceed, excess)
    sample, count, when = excess, n_exceed, None  # what the GPD is fitted to, and when
    if times is not None and run is not None:
        sample, when, count, theta = decluster.of_largest(values, times, kept, threshold, run)
    elif times is not None:
        sample, when, count = decluster.timed_exceedances(values, times, kept, threshold)
    has = n_valid > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(has, count / np.maximum(n_valid, 1), np.nan)
    status = np.full(cells, STATUS_OK, np.int8)
    status[count < min_exceed] = TOO_FEW
    status[n_exceed == 0] = NO_EXCEED
    status[has & (n_exceed == 0) & (low == peak)] = CONSTANT  # smallest valid value is the largest
    status[~has] = NO_VALID
    fitted = status == STATUS_OK
    family = distributions.get(distribution)
    if trend is not None and when is not None:
        result = _fit_trend(family.with_trend(), sample, when, count, trend, threshold, rate, n_exceed, status, fitted,
                            periods, npy, ci)
        if run is not None:
            result.n_clusters, result.extremal_index = count.astype(np.int32), theta
        return result
    result = family.fit.fit(sample[fitted], count[fitted])
    scale, shape, nll = (np.full(cells, np.nan) for _ in range(3))
    scale[fitted], shape[fitted], nll[fitted] = result.scale, result.shape, result.nll
    bounded = np.flatnonzero(fitted)[result.at_bound]
    status[bounded] = np.where(shape[bounded] < 0, AT_BOUND, AT_UPPER)  # xi = -1, or the top of the search
    levels = np.stack([family.fit.return_level(threshold, scale, shape, rate, period, npy)
                       for period in periods]) if len(periods) else np.empty((0, cells))
    result = Result(threshold=threshold, scale=scale, shape=shape, rate=rate, n_exceed=n_exceed.astype(np.int32),
                    nll=nll, status=status, return_level=levels)
    if ci is not None:
        ends = family.intervals.return_level_intervals(sample[fitted], count[fitted], threshold[fitted],
                                                       scale[fitted], shape[fitted], nll[fitted], rate[fitted],
                                                       tuple(periods), npy, ci)
        results.attach(result, ends, fitted)
    if run is not None:
        result.n_clusters, result.extremal_index = count.astype(np.int32), theta
    return result


def _fit_trend(trended: ModuleType, sample: np.ndarray, when: np.ndarray, count: np.ndarray, trend: Trend,
               threshold: np.ndarray, rate: np.ndarray, n_exceed: np.ndarray, status: np.ndarray, fitted: np.ndarray,
               periods: Sequence[float], npy: float, ci: intervals.Request | None) -> TrendResult:
    """The fit with a trend ``trended`` (the distribution's), its log scale linear in the covariate at each
    excess's time step; effective return levels (values, periods, cells) and, with ``ci`` (normal), their
    delta-method intervals."""
    cells = status.size
    fit = trended.fit(sample[fitted], trend.values[when[fitted]], count[fitted])
    full = {name: np.full(cells, np.nan) for name in ("log_scale_intercept", "log_scale_slope", "shape", "nll",
                                                       "nll_stationary")}
    for name, values in full.items():
        values[fitted] = getattr(fit, name)
    covariance = np.full((cells, 3, 3), np.nan)
    covariance[fitted] = fit.covariance
    status[np.flatnonzero(fitted)[fit.at_bound]] = AT_BOUND
    status[np.flatnonzero(fitted)[np.isnan(fit.nll)]] = CONSTANT  # one covariate value for all its excesses
    whole = trended.Fit(**full, at_bound=np.zeros(cells, bool), covariance=covariance)
    levels = np.full((trend.at.size, len(periods), cells), np.nan)
    lower, upper = np.full(levels.shape, np.nan), np.full(levels.shape, np.nan)
    for i, value in enumerate(trend.at):
        for k, period in enumerate(periods):
            levels[i, k] = trended.return_level(whole, float(value), threshold, rate, period, npy)
            if ci is not None:
                lower[i, k], upper[i, k] = trended.normal_bounds(whole, float(value), threshold, rate, period, npy,
                                                                 ci.normal_quantile)
    se = intervals.standard_errors(covariance, trended.PARAMETERS)
    return TrendResult(threshold=threshold, **full, rate=rate, n_exceed=n_exceed.astype(np.int32),
                       trend_p_value=covariate.p_value(full["nll_stationary"], full["nll"]), status=status,
                       return_level=levels, **{f"{p}_se": se[p] for p in trended.PARAMETERS},
                       return_level_lower=lower if ci is not None else None,
                       return_level_upper=upper if ci is not None else None)
