"""The distributions eva fits, behind one interface: one registry entry each, naming its modules.

A distribution's fit module (:mod:`climio.eva.gpd`, :mod:`climio.eva.gev`) provides

* ``PARAMETERS``: the names of its parameters, in the order its functions take them;
* ``fit(samples, count)``: maximum likelihood for many cells at once, row ``i`` of ``samples`` holding its
  ``count[i]`` values first; the result has one array per parameter (same names), ``nll`` (-log L at the
  estimate) and ``at_bound`` (the estimate sits on the boundary of the regular region, shape -1);
* ``negative_log_likelihood(sample, *parameters)``: the plain formula for one cell, for checks;
* ``return_level(...)``: the level for a return period, from the parameters (and, for a threshold excess
  distribution, the threshold and the rate of exceedance).

Its interval module (:mod:`climio.eva.gpd_intervals`, :mod:`climio.eva.gev_intervals`) provides
``return_level_intervals(...)`` (:class:`climio.eva.intervals.Intervals`: normal or profile-likelihood ends and
the parameters' standard errors); its trend module, if any (:mod:`climio.eva.gpd_trend`,
:mod:`climio.eva.gev_trend`), the fit whose ``MOVES`` parameter is linear in a covariate: ``PARAMETERS``,
``COEFFICIENTS``, ``fit``, ``return_level`` and ``normal_bounds``.

A method of analysis (:mod:`climio.eva.methods`) names its distribution and asks the registry for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from climio.errors import ClimioError
from climio.eva import gev, gev_intervals, gev_trend, gpd, gpd_intervals, gpd_trend


@dataclass(frozen=True)
class Distribution:
    """One distribution's modules: its fit, its confidence intervals and its fit with a trend (None: none)."""

    name: str
    fit: ModuleType
    intervals: ModuleType
    trend: ModuleType | None = None

    def parameters(self, trend: bool = False) -> tuple[str, ...]:
        """The fitted parameters' names, of the fit with a trend when ``trend``."""
        return self.with_trend().PARAMETERS if trend else self.fit.PARAMETERS

    def with_trend(self) -> ModuleType:
        """The fit with a trend, or an error naming the distribution that has none."""
        if self.trend is None:
            raise ClimioError(f"--covariate: no fit with a trend for the {self.name.upper()}", collective=True)
        return self.trend


DISTRIBUTIONS = {d.name: d for d in (Distribution("gpd", gpd, gpd_intervals, gpd_trend),
                                     Distribution("gev", gev, gev_intervals, gev_trend))}


def get(name: str) -> Distribution:
    """The distribution ``name``."""
    if name not in DISTRIBUTIONS:
        raise ClimioError(f"distribution '{name}': choose one of {', '.join(DISTRIBUTIONS)}")
    return DISTRIBUTIONS[name]
