"""The methods of ``climio eva``: what each one outputs, and how its output describes itself.

* ``pot``: peaks over a per-cell quantile threshold, GPD fit to the excesses (:mod:`climio.eva.pot`);
* ``gev``: maxima of blocks of the time axis (years or a season), GEV fit (:mod:`climio.eva.block_maxima`).

Both produce per-cell parameters, return levels for the requested periods (in years), ``nll`` and
``status``, in the same CF form; the job, the output file and the plot take this table, not the method's name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np

from climio.eva import cf, distributions, gev_trend, gpd_trend
from climio.eva.intervals import Intervals, Request

PER_PERIOD = ("return_level", "return_level_lower", "return_level_upper")  # results with the period dimension


@dataclass(frozen=True)
class Method:
    name: str
    distribution: str  # the name in climio.eva.distributions
    title: str  # the output's title says "<title> of <var>"
    said: str  # the command's summary line says "wrote OUT: <said> of <var> ..."
    description: str  # the output's global 'method' attribute
    results: Mapping[str, str]  # result variable -> netCDF type; those in PER_PERIOD have the period dimension
    statuses: tuple[str, ...]  # the status variable's flag meanings, by value

    def outputs(self, ci: Request | None, declustered: bool = False, trend: bool = False) -> dict[str, str]:
        """The result variables and their types; with ``--ci`` the interval ends and standard errors too, with
        ``--decluster`` the clusters' count and the extremal index; with ``--covariate`` (a trend: the GEV
        location, the GPD log scale) the intercept and slope of the parameter that moves in its place, the
        stationary fit's -log L, the likelihood-ratio test's p-value and the standard errors (always)."""
        out = dict(self.results)
        parameters = distributions.get(self.distribution).PARAMETERS
        if trend:
            module = TRENDS[self.distribution]
            parameters = module.PARAMETERS
            out = {}
            for name, dtype in self.results.items():  # the parameter that moves becomes its two coefficients
                out.update({p: "f8" for p in module.COEFFICIENTS} if name == module.MOVES else {name: dtype})
            out.update({"nll_stationary": "f8", "trend_p_value": "f8", **{f"{p}_se": "f8" for p in parameters}})
        if declustered:
            out.update({"n_clusters": "i4", "extremal_index": "f8"})
        if ci is not None:
            out.update({"return_level_lower": "f8", "return_level_upper": "f8",
                        **{f"{p}_se": "f8" for p in parameters}})
        return out


TRENDS = {"gev": gev_trend, "gpd": gpd_trend}  # each distribution's fit with a trend

METHODS = {
    "pot": Method("pot", "gpd", "peaks-over-threshold GPD fits", "GPD fits",
                  "threshold: R type-7 quantile; GPD maximum likelihood with shape >= -1 (profile likelihood, "
                  "global search); return level u + s/k((T npy rate)^k - 1)", cf.RESULT_TYPES, cf.STATUS_MEANINGS),
    "gev": Method("gev", "gev", "block-maxima GEV fits", "GEV fits of block maxima",
                  "block maxima of the complete blocks; GEV maximum likelihood with shape >= -1 (profile "
                  "likelihood over the shape, global search); return level m + s/k((-log(1-1/T))^-k - 1)",
                  cf.BLOCK_RESULT_TYPES, cf.BLOCK_STATUS_MEANINGS),
}


def concatenate(parts: Sequence[object], kind: type) -> object:
    """One result of dataclass ``kind`` from the results of consecutive chunks of cells (fields that are None,
    such as the intervals when none were asked for, stay None)."""
    return kind(*(None if getattr(parts[0], f.name) is None
                  else np.concatenate([getattr(p, f.name) for p in parts], axis=-1) for f in fields(kind)))


def stack(parts: Sequence[object], kind: type) -> object:
    """One result of dataclass ``kind`` from the results of several seasons, each field gaining a leading season
    axis (fields that are None stay None)."""
    return kind(*(None if getattr(parts[0], f.name) is None
                  else np.stack([getattr(p, f.name) for p in parts]) for f in fields(kind)))


def attach(result: object, ends: Intervals, fitted: np.ndarray) -> None:
    """Put the intervals and standard errors computed for the ``fitted`` cells into ``result`` (NaN for the
    others): ``return_level_lower``/``_upper`` and ``<parameter>_se``."""
    levels = result.return_level  # type: ignore[attr-defined]
    for name, values in [("return_level_lower", ends.lower), ("return_level_upper", ends.upper),
                         *((f"{p}_se", se) for p, se in ends.standard_errors.items())]:
        full = np.full(levels.shape if values.ndim == 2 else levels.shape[-1:], np.nan)
        full[..., fitted] = values
        setattr(result, name, full)
