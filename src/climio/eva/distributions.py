"""The distributions eva fits, behind one interface: one module per distribution, one registry entry each.

A distribution module (:mod:`climio.eva.gpd`, :mod:`climio.eva.gev`) provides

* ``PARAMETERS``: the names of its parameters, in the order its functions take them;
* ``fit(samples, count)``: maximum likelihood for many cells at once, row ``i`` of ``samples`` holding its
  ``count[i]`` values first; the result has one array per parameter (same names), ``nll`` (-log L at the
  estimate) and ``at_bound`` (the estimate sits on the boundary of the regular region, shape -1);
* ``negative_log_likelihood(sample, *parameters)``: the plain formula for one cell, for checks;
* ``return_level(...)``: the level for a return period, from the parameters (and, for a threshold excess
  distribution, the threshold and the rate of exceedance).

A method of analysis (:mod:`climio.eva.pot`: peaks over threshold, :mod:`climio.eva.block_maxima`) chooses
its samples and asks the registry for its distribution by name.
"""

from __future__ import annotations

from types import ModuleType

from climio.errors import ClimioError
from climio.eva import gev, gpd

DISTRIBUTIONS: dict[str, ModuleType] = {"gpd": gpd, "gev": gev}


def get(name: str) -> ModuleType:
    """The module of distribution ``name``."""
    if name not in DISTRIBUTIONS:
        raise ClimioError(f"distribution '{name}': choose one of {', '.join(DISTRIBUTIONS)}")
    return DISTRIBUTIONS[name]
