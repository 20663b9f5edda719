r"""Runs declustering of threshold exceedances, and the extremal index, for many cells at once.

Daily exceedances come in clusters (a storm lasts several days); fitting every exceedance as if
independent overstates the information in the sample, and so understates the intervals. Two tools of
Coles (2001, section 5.3) and R extRemes:

* **runs declustering** (``decluster(x, threshold, method = "runs", r = R)``): exceedances belong to one
  cluster until at least ``R`` consecutive time steps are not above the threshold; only each cluster's
  largest excess enters the GPD fit, and the rate in the return level is the clusters' rate
  (clusters per valid value, :math:`\theta\zeta_u` in Coles' notation). Missing time steps count as not above
  the threshold (they cannot extend a cluster);
* **the extremal index** :math:`\theta` by Ferro and Segers' (2003) intervals estimator (extRemes
  ``extremalindex(method = "intervals")``), from the :math:`N` exceedance times' gaps :math:`T_i`:

  .. math::

      \hat\theta = \min\Big(1, \frac{2(\sum T_i)^2}{(N-1)\sum T_i^2}\Big) \text{ if } \max T_i \le 2,
      \quad\text{else}\quad \min\Big(1, \frac{2(\sum (T_i-1))^2}{(N-1)\sum (T_i-1)(T_i-2)}\Big),

  NaN with fewer than two exceedances. It estimates the reciprocal of the mean cluster size in the limit,
  independently of the run length chosen for declustering.
"""

from __future__ import annotations

import numba
import numpy as np

from climio.errors import ClimioError


def parse(spec: str) -> int:
    """``runs:R`` -> R (a positive run length); a one-line error naming ``--decluster`` otherwise."""
    kind, _, length = spec.partition(":")
    if kind == "runs" and length.isdigit() and int(length) >= 1:
        return int(length)
    raise ClimioError(f"--decluster '{spec}': give runs:R with a run length R of at least 1 time step (e.g. "
                      f"runs:1 joins exceedances on consecutive days, runs:3 bridges gaps of up to 2)",
                      collective=True)


@numba.njit(cache=True)
def _cell(times: np.ndarray, excess: np.ndarray, n: int, run: int, maxima: np.ndarray, when: np.ndarray
          ) -> tuple[int, float]:
    """One cell's ``n`` exceedances (any order): the clusters' largest excesses and their time steps (into
    ``maxima`` and ``when``, in time order), their count and the intervals estimator."""
    order = np.argsort(times[:n])
    clusters = 0
    top = -np.inf
    top_time = -1
    sum1 = sum2 = sum1m = sum12 = 0.0
    widest = 0
    for q in range(n):
        i = order[q]
        if q > 0:
            gap = times[i] - times[order[q - 1]]
            widest = max(widest, gap)
            sum1 += gap
            sum2 += gap * gap
            sum1m += gap - 1.0
            sum12 += (gap - 1.0) * (gap - 2.0)
            if gap - 1 >= run:  # at least ``run`` steps not above the threshold: a new cluster
                maxima[clusters], when[clusters] = top, top_time
                clusters += 1
                top = -np.inf
        if excess[i] > top:
            top, top_time = excess[i], times[i]
    if n > 0:
        maxima[clusters], when[clusters] = top, top_time
        clusters += 1
    if n < 2:
        theta = np.nan
    elif widest <= 2:
        theta = min(1.0, 2.0 * sum1 * sum1 / ((n - 1) * sum2))
    else:
        theta = min(1.0, 2.0 * sum1m * sum1m / ((n - 1) * sum12)) if sum12 > 0 else 1.0
    return clusters, theta


@numba.njit(cache=True)
def _clusters(times: np.ndarray, excess: np.ndarray, count: np.ndarray, run: int, maxima: np.ndarray,
              when: np.ndarray, n_clusters: np.ndarray, theta: np.ndarray) -> None:
    """:func:`_cell` for every row's first ``count`` exceedances."""
    for c in range(times.shape[0]):
        n_clusters[c], theta[c] = _cell(times[c], excess[c], count[c], run, maxima[c], when[c])


@numba.njit(cache=True)
def _exceedances(values: np.ndarray, times: np.ndarray, kept: int, u: float, excess: np.ndarray,
                 when: np.ndarray) -> int:
    """A cell's kept values above its threshold u: their excesses (float64) and time steps; their count."""
    n = 0
    for i in range(kept):
        v = np.float64(values[i])
        if v > u:
            when[n] = times[i]
            excess[n] = v - u
            n += 1
    return n


@numba.njit(cache=True)
def _timed(values: np.ndarray, times: np.ndarray, kept: np.ndarray, threshold: np.ndarray, excess: np.ndarray,
           when: np.ndarray, count: np.ndarray) -> None:
    for c in range(values.shape[0]):
        count[c] = _exceedances(values[c], times[c], kept[c], threshold[c], excess[c], when[c])


def timed_exceedances(values: np.ndarray, times: np.ndarray, kept: np.ndarray, threshold: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exceedances among each cell's kept largest values over its ``threshold``: (excesses, their time
    steps, their count per cell), in the scanner's order."""
    cells, width = values.shape
    excess, when = np.empty((cells, width)), np.zeros((cells, width), np.int64)
    count = np.zeros(cells, np.int64)
    _timed(values, times, kept, np.asarray(threshold, dtype=np.float64), excess, when, count)
    return excess, when, count


@numba.njit(cache=True)
def _of_largest(values: np.ndarray, times: np.ndarray, kept: np.ndarray, threshold: np.ndarray, run: int,
                maxima: np.ndarray, maxima_when: np.ndarray, n_clusters: np.ndarray, theta: np.ndarray) -> None:
    """:func:`_cell` for each cell's kept values above its threshold (excesses in float64)."""
    when = np.empty(values.shape[1], np.int64)
    excess = np.empty(values.shape[1])
    for c in range(values.shape[0]):
        n = _exceedances(values[c], times[c], kept[c], threshold[c], excess, when)
        n_clusters[c], theta[c] = _cell(when, excess, n, run, maxima[c], maxima_when[c])


def of_largest(values: np.ndarray, times: np.ndarray, kept: np.ndarray, threshold: np.ndarray, run: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`clusters` of the exceedances among each cell's kept largest values (``largest.Scanner``'s
    ``values``, ``times``, ``kept``) over its ``threshold`` (NaN: none): (cluster maxima, their time steps,
    n_clusters, the extremal index)."""
    cells, width = values.shape
    maxima = np.empty((cells, width))
    when = np.zeros((cells, width), np.int64)
    n_clusters = np.zeros(cells, np.int64)
    theta = np.full(cells, np.nan)
    _of_largest(values, times, kept, np.asarray(threshold, dtype=np.float64), run, maxima, when, n_clusters, theta)
    return maxima, when, n_clusters, theta


def clusters(times: np.ndarray, excess: np.ndarray, count: np.ndarray, run: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs declustering of each row's first ``count[i]`` exceedances (time steps ``times``, excesses
    ``excess``, any order): (cluster maxima (cells, k) first ``n_clusters`` per row, n_clusters, the
    extremal index)."""
    cells = times.shape[0]
    maxima = np.full(excess.shape, np.nan)
    when = np.zeros(excess.shape, np.int64)
    n_clusters = np.zeros(cells, np.int64)
    theta = np.full(cells, np.nan)
    _clusters(np.ascontiguousarray(times, dtype=np.int64), np.ascontiguousarray(excess, dtype=np.float64),
              np.ascontiguousarray(count, dtype=np.int64), run, maxima, when, n_clusters, theta)
    return maxima, n_clusters, theta
