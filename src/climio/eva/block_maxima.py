"""Block maxima for many cells: each block's largest valid value, the complete blocks, the GEV fit and
return levels.

Per cell (a time series with missing values as NaN, ``_FillValue`` or ``missing_value``):

* the maximum and the count of valid values of every block (:mod:`climio.eva.blocks`: years or a season
  of each year), taken while the series streams past, in the file's (time, cells) order;
* a block counts only when it misses at most ``max_missing`` of its time steps (so the partial years at
  the ends of a series, or a year with a month of gaps, do not enter the fit as if whole);
* the GEV fit of :mod:`climio.eva.gev` to the complete blocks' maxima, and the return level of each
  period (``T`` years is ``T * blocks per year`` blocks: one block per year here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

import numba
import numpy as np

from climio.errors import ClimioError
from climio.eva import covariate, distributions, intervals, results
from climio.eva.blocks import Blocks
from climio.eva.covariate import Covariate, Trend
from climio.eva.distributions import Distribution
from climio.eva.results import Estimates, Trended
from climio.eva.rows import kernel_rows, missing_slots, missing_value, native

STATUS_OK, NO_VALID, CONSTANT, TOO_FEW, AT_BOUND, AT_UPPER = range(6)  # cf.BLOCK_STATUS_MEANINGS
CHUNK_CELLS = 4096  # cells fitted at a time
TREND_MIN_BLOCKS = 5  # fewest complete blocks for a fit with a trend (four parameters)


@dataclass(kw_only=True)
class Result(Estimates):
    """Per-cell results of the GEV fit to the complete blocks' maxima (their count, the sample size of the fit):
    location, scale and shape; with --ci, their standard errors."""

    location: np.ndarray
    scale: np.ndarray
    shape: np.ndarray
    n_blocks: np.ndarray
    location_se: np.ndarray | None = None
    scale_se: np.ndarray | None = None
    shape_se: np.ndarray | None = None


def trend(cov: Covariate, cuts: Blocks, max_missing: float, at: Sequence[float] | None, where: str) -> Trend:
    """The covariate of each block (a block that cannot be complete, with fewer time steps in the series than
    ``max_missing`` allows, needs none) and the values of the effective return levels (``at``, or by default the
    covariate of the first and last block that can be complete)."""
    present = np.bincount(cuts.index[cuts.index >= 0], minlength=cuts.count)
    needed = present >= np.ceil((1.0 - max_missing) * cuts.expected - 1e-9)
    if not needed.any():
        raise ClimioError(f"{where}: no {cuts.name} block of the analysed period is complete enough to fit (at most "
                          f"{max_missing:g} of its time steps missing)", collective=True)
    needed_years = cuts.years[needed]
    return Trend(cov.of_years(cuts.years, needed), covariate.at_values(cov, needed_years.min(), needed_years.max(),
                                                                       at))


@dataclass(kw_only=True)
class TrendResult(Trended, Estimates):
    """Per-cell results of the fit whose GEV location moves with a covariate (:mod:`climio.eva.gev_trend`): its
    coefficients, scale, shape and their standard errors, and the complete blocks; return levels (values,
    periods, cells)."""

    location_intercept: np.ndarray
    location_slope: np.ndarray
    scale: np.ndarray
    shape: np.ndarray
    n_blocks: np.ndarray
    location_intercept_se: np.ndarray
    location_slope_se: np.ndarray
    scale_se: np.ndarray
    shape_se: np.ndarray


@numba.njit(cache=True, error_model="numpy")
def _update(rows: np.ndarray, index: np.ndarray, missing: np.ndarray, scratch: np.ndarray, maxima: np.ndarray,
            counts: np.ndarray) -> None:
    """Fold time steps (rows, in either byte order: see ``rows.native``; ``scratch`` a row of the values'
    type) into their blocks' maxima and valid counts; ``index`` gives each row's block (-1: in none)."""
    m0, m1, m2, m3 = missing[0], missing[1], missing[2], missing[3]
    for t in range(rows.shape[0]):
        b = index[t]
        if b < 0:
            continue
        row = native(rows[t], scratch)
        top, n = maxima[b], counts[b]
        for c in range(rows.shape[1]):  # vectorized
            v = row[c]
            valid = not missing_value(v, m0, m1, m2, m3)
            n[c] += 1 if valid else 0
            top[c] = max(top[c], v) if valid else top[c]


class Scanner:
    """Every cell's block maxima and valid counts, fed the time steps in order, any number at a time."""

    def __init__(self, blocks: Blocks, cells: int, dtype: np.dtype, missing: Sequence[float] = ()) -> None:
        dtype = np.dtype(dtype).newbyteorder("=")
        self.blocks = blocks
        self.slots = missing_slots(missing, dtype)
        self.scratch = np.empty(cells, dtype)
        self.maxima = np.full((blocks.count, cells), -np.inf)
        self.counts = np.zeros((blocks.count, cells), np.int32)
        self.seen = 0

    def update(self, rows: np.ndarray) -> None:
        """The next time steps, (steps, cells), in either byte order."""
        index = self.blocks.index[self.seen:self.seen + rows.shape[0]]
        _update(kernel_rows(rows), index, self.slots, self.scratch, self.maxima, self.counts)
        self.seen += rows.shape[0]


def analyse(scanner: Scanner, *, periods: Sequence[float], max_missing: float, min_blocks: int,
            blocks_per_year: float = 1.0, progress: Callable[[int], None] | None = None,
            ci: intervals.Request | None = None, trend: Trend | None = None, distribution: str = "gev"
            ) -> Result | TrendResult:
    """Complete blocks, statuses, fits of ``distribution`` (:mod:`climio.eva.distributions`) and return levels
    (with ``ci``, their confidence intervals and the parameters' standard errors; with ``trend``, the fit of a
    location linear in a covariate and its effective return levels) of the cells a scanner has seen, in chunks
    of ``CHUNK_CELLS`` cells, calling ``progress(cells_done)`` after each. With several seasons, every result
    has a leading season axis."""
    cells = scanner.maxima.shape[1]
    cuts = scanner.blocks
    kind = Result if trend is None else TrendResult
    family = distributions.get(distribution)
    parts = []
    for c0 in range(0, max(cells, 1), CHUNK_CELLS):
        chunk = slice(c0, min(cells, c0 + CHUNK_CELLS))
        seasons = []
        for s in range(len(cuts.seasons)):  # each season fitted on its own blocks
            rows = cuts.of_season(s)
            sample = _complete(scanner.maxima[rows, chunk], scanner.counts[rows, chunk], cuts.expected[rows],
                               max_missing, min_blocks)
            seasons.append(_analyse(family, sample, periods, blocks_per_year, ci) if trend is None else
                           _analyse_trend(family.with_trend(), sample, Trend(trend.values[rows], trend.at), periods,
                                          blocks_per_year, ci))
        parts.append(seasons[0] if len(seasons) == 1 else results.stack(seasons, kind))
        if progress is not None:
            progress(chunk.stop - chunk.start)
    return results.concatenate(parts, kind)  # type: ignore[return-value]


@dataclass(frozen=True)
class _Sample:
    """Each cell's complete blocks' maxima first, in time order (cells, blocks), which blocks they are, how many,
    and the statuses that need no fit."""

    packed: np.ndarray
    order: np.ndarray  # packed[c, i] is block order[c, i]
    n_blocks: np.ndarray
    status: np.ndarray

    @property
    def fitted(self) -> np.ndarray:
        return self.status == STATUS_OK


def _complete(maxima: np.ndarray, counts: np.ndarray, expected: np.ndarray, max_missing: float, min_blocks: int
              ) -> _Sample:
    cells = counts.shape[1]
    complete = counts >= np.ceil((1.0 - max_missing) * expected[:, None] - 1e-9)
    n_blocks = complete.sum(axis=0)
    order = np.argsort(~complete.T, axis=1, kind="stable")  # each cell's complete blocks first, in time order
    packed = np.take_along_axis(np.where(complete, maxima, np.nan).T, order, axis=1)
    with np.errstate(invalid="ignore"):
        spread = np.nanmax(packed, axis=1, initial=-np.inf) - np.nanmin(packed, axis=1, initial=np.inf)
    status = np.full(cells, STATUS_OK, np.int8)
    status[(n_blocks > 0) & ~(spread > 0)] = CONSTANT
    status[n_blocks < min_blocks] = TOO_FEW
    status[counts.sum(axis=0) == 0] = NO_VALID
    return _Sample(packed, order, n_blocks, status)


def _analyse(family: Distribution, sample: _Sample, periods: Sequence[float], blocks_per_year: float,
             ci: intervals.Request | None) -> Result:
    packed, n_blocks, status, fitted = sample.packed, sample.n_blocks, sample.status.copy(), sample.fitted
    cells = status.size
    fit = family.fit.fit(packed[fitted], n_blocks[fitted])
    location, scale, shape, nll = (np.full(cells, np.nan) for _ in range(4))
    location[fitted], scale[fitted], shape[fitted], nll[fitted] = fit.location, fit.scale, fit.shape, fit.nll
    bounded = np.flatnonzero(fitted)[fit.at_bound]
    status[bounded] = np.where(shape[bounded] < 0, AT_BOUND, AT_UPPER)
    levels = np.stack([family.fit.return_level(location, scale, shape, period * blocks_per_year)
                       for period in periods]) if len(periods) else np.empty((0, cells))
    result = Result(location=location, scale=scale, shape=shape, n_blocks=n_blocks.astype(np.int32), nll=nll,
                    status=status, return_level=levels)
    if ci is not None:
        ends = family.intervals.return_level_intervals(packed[fitted], n_blocks[fitted], location[fitted],
                                                       scale[fitted], shape[fitted], nll[fitted],
                                                       [p * blocks_per_year for p in periods], ci)
        results.attach(result, ends, fitted)
    return result


def _analyse_trend(trended: ModuleType, sample: _Sample, trend: Trend, periods: Sequence[float],
                   blocks_per_year: float, ci: intervals.Request | None) -> TrendResult:
    """The fit with a trend ``trended`` (the distribution's) of each cell's complete blocks, with their covariate
    values; the effective return levels (values, periods, cells) and, with ``ci`` (normal), their delta-method
    intervals."""
    packed, n_blocks, status, fitted = sample.packed, sample.n_blocks, sample.status.copy(), sample.fitted
    cells = status.size
    block_covariate = trend.values[sample.order]
    fit = trended.fit(packed[fitted], block_covariate[fitted], n_blocks[fitted])
    full = {name: np.full(cells, np.nan) for name in ("location_intercept", "location_slope", "scale", "shape", "nll",
                                                       "nll_stationary")}
    for name, values in full.items():
        values[fitted] = getattr(fit, name)
    covariance = np.full((cells, 4, 4), np.nan)
    covariance[fitted] = fit.covariance
    bounded = np.flatnonzero(fitted)[fit.at_bound]
    status[bounded] = np.where(full["shape"][bounded] < 0, AT_BOUND, AT_UPPER)
    status[np.flatnonzero(fitted)[np.isnan(fit.nll)]] = CONSTANT  # one covariate value for all its blocks
    whole = trended.Fit(**full, at_bound=np.zeros(cells, bool), covariance=covariance)
    p_value = covariate.p_value(full["nll_stationary"], full["nll"])
    levels = np.full((trend.at.size, len(periods), cells), np.nan)
    lower, upper = np.full(levels.shape, np.nan), np.full(levels.shape, np.nan)
    for i, value in enumerate(trend.at):
        for k, period in enumerate(periods):
            levels[i, k] = trended.return_level(whole, float(value), period * blocks_per_year)
            if ci is not None:
                lower[i, k], upper[i, k] = trended.normal_bounds(whole, float(value), period * blocks_per_year,
                                                                 ci.normal_quantile)
    se = intervals.standard_errors(covariance, trended.PARAMETERS)
    return TrendResult(**full, n_blocks=n_blocks.astype(np.int32), trend_p_value=p_value, status=status,
                       return_level=levels, **{f"{p}_se": se[p] for p in trended.PARAMETERS},
                       return_level_lower=lower if ci is not None else None,
                       return_level_upper=upper if ci is not None else None)

