"""What every method's per-cell results share, defined once: the fit's -log L, status and return levels with
their interval ends (:class:`Estimates`), a peaks-over-threshold sample (:class:`Exceedances`), its clusters
(:class:`Declustered`) and a trend's test (:class:`Trended`). Each parameter set's result
(:mod:`climio.eva.pot`, :mod:`climio.eva.block_maxima`) adds only its parameters and their standard errors;
the helpers here join and fill any of them by field name.

Fit results are NaN unless the status is ok or shape_at_lower_bound/_upper_bound; the cells are the last axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TypeVar

import numpy as np

from climio.eva.intervals import Intervals

R = TypeVar("R")


@dataclass(kw_only=True)
class Estimates:
    """The fit's -log L and status, and its return levels: (periods, cells), with a trend (covariate values,
    periods, cells); with --ci, each level's interval ends, shaped as the levels."""

    nll: np.ndarray
    status: np.ndarray
    return_level: np.ndarray
    return_level_lower: np.ndarray | None = None
    return_level_upper: np.ndarray | None = None


@dataclass(kw_only=True)
class Exceedances:
    """A peaks-over-threshold sample: the threshold, the values over it per valid value, their count."""

    threshold: np.ndarray
    rate: np.ndarray  # with --decluster, clusters per valid value
    n_exceed: np.ndarray


@dataclass(kw_only=True)
class Declustered:
    """With --decluster: the clusters fitted, and Ferro and Segers' extremal index of the exceedances (the
    fit is of each cluster's largest excess)."""

    n_clusters: np.ndarray | None = None
    extremal_index: np.ndarray | None = None


@dataclass(kw_only=True)
class Trended:
    """A fit with a trend's test: the stationary fit's -log L and the likelihood-ratio test's p-value of the slope,
    P(chi2_1 > 2 (nll_stationary - nll))."""

    nll_stationary: np.ndarray
    trend_p_value: np.ndarray


def concatenate(parts: Sequence[R], kind: type[R]) -> R:
    """One result of dataclass ``kind`` from the results of consecutive chunks of cells (fields that are None,
    such as the intervals when none were asked for, stay None)."""
    return kind(**{f.name: None if getattr(parts[0], f.name) is None
                   else np.concatenate([getattr(p, f.name) for p in parts], axis=-1) for f in fields(kind)})


def stack(parts: Sequence[R], kind: type[R]) -> R:
    """One result of dataclass ``kind`` from the results of several seasons, each field gaining a leading season
    axis (fields that are None stay None)."""
    return kind(**{f.name: None if getattr(parts[0], f.name) is None
                   else np.stack([getattr(p, f.name) for p in parts]) for f in fields(kind)})


def attach(result: Estimates, ends: Intervals, fitted: np.ndarray) -> None:
    """Put the intervals and standard errors computed for the ``fitted`` cells into ``result`` (NaN for the
    others): ``return_level_lower``/``_upper`` and ``<parameter>_se``."""
    levels = result.return_level
    for name, values in [("return_level_lower", ends.lower), ("return_level_upper", ends.upper),
                         *((f"{p}_se", se) for p, se in ends.standard_errors.items())]:
        full = np.full(levels.shape if values.ndim == 2 else levels.shape[-1:], np.nan)
        full[..., fitted] = values
        setattr(result, name, full)
