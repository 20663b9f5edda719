"""The methods of ``climio eva``: what each one outputs, and how its output describes itself.

* ``pot``: peaks over a per-cell quantile threshold, GPD fit to the excesses (:mod:`climio.eva.pot`);
* ``gev``: maxima of blocks of the time axis (years or a season), GEV fit (:mod:`climio.eva.block_maxima`).

Both produce per-cell parameters, return levels for the requested periods (in years), ``nll`` and
``status``, in the same CF form; the job, the output file and the plot take this table, not the method's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from climio.eva import cf


@dataclass(frozen=True)
class Method:
    name: str
    distribution: str  # the name in climio.eva.distributions
    title: str  # the output's title says "<title> of <var>"
    description: str  # the output's global 'method' attribute
    results: Mapping[str, str]  # result variable -> netCDF type; return_level has the period dimension
    statuses: tuple[str, ...]  # the status variable's flag meanings, by value


METHODS = {
    "pot": Method("pot", "gpd", "peaks-over-threshold GPD fits",
                  "threshold: R type-7 quantile; GPD maximum likelihood with shape >= -1 (profile likelihood, "
                  "global search); return level u + s/k((T npy rate)^k - 1)", cf.RESULT_TYPES, cf.STATUS_MEANINGS),
    "gev": Method("gev", "gev", "block-maxima GEV fits",
                  "block maxima of the complete blocks; GEV maximum likelihood with shape >= -1 (profile "
                  "likelihood over the shape, global search); return level m + s/k((-log(1-1/T))^-k - 1)",
                  cf.BLOCK_RESULT_TYPES, cf.BLOCK_STATUS_MEANINGS),
}
