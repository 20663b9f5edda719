"""The covariate of a non-stationary fit (``--covariate year`` or ``--covariate FILE:VAR``): one value per block.

* ``year``: the calendar year each block ends in (DJF 1951 is 1951), so the location's slope is per year;
* ``FILE:VAR``: a 1-D series along a CF time coordinate (global mean temperature, a climate index), averaged
  over each calendar year in its own calendar; a block takes the mean of the year it ends in. A year the
  series does not cover is refused, naming the years, rather than filled in.

The values at which the effective return levels are given (``--covariate-at``) default to the covariate of the
first and of the last year with a block.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from climio.core import targets
from climio.errors import ClimioError


@dataclass(frozen=True)
class Trend:
    """What a fit with a trend needs: the covariate of each block (GEV) or each time step (POT), and the values
    at which the effective return levels are given."""

    values: np.ndarray
    at: np.ndarray


@dataclass(frozen=True)
class Covariate:
    """What the covariate is, and its value in each calendar year it covers."""

    spec: str  # as given: "year" or "FILE:VAR"
    long_name: str
    units: str
    years: np.ndarray  # calendar years covered (sorted), empty for "year" (every year is its own value)
    values: np.ndarray  # the covariate's mean over each of those years

    def of_years(self, years: np.ndarray, needed: np.ndarray | None = None, option: str = "--covariate"
                 ) -> np.ndarray:
        """The covariate of blocks ending in ``years``: NaN for a year it does not cover where that block is not
        ``needed`` (it cannot be complete), refused where it is."""
        years = np.asarray(years, dtype=np.int64)
        if self.spec == "year":
            return years.astype(np.float64)
        at = np.minimum(np.searchsorted(self.years, years), self.years.size - 1)
        found = self.years[at] == years
        if needed is not None and not (found | ~needed).all():
            missing = years[~found & needed]
            listed = ", ".join(str(y) for y in missing[:5]) + (", ..." if missing.size > 5 else "")
            raise ClimioError(f"{option} {self.spec}: the series does not cover the years {listed} of the blocks: "
                              f"give one that does, or cut the input's time range (-d time,...)", collective=True)
        return np.where(found, self.values[at], np.nan)


def parse(spec: str, option: str = "--covariate") -> tuple[str, str] | None:
    """(file, variable) of ``FILE:VAR``; None for ``year``."""
    if spec == "year":
        return None
    path, _, var = spec.rpartition(":")
    if not path or not var:
        raise ClimioError(f"{option} '{spec}': give 'year' or FILE:VAR, a 1-D series along time in a netCDF file "
                          f"(e.g. gmst.nc:tas)", collective=True)
    return path, var


def load(spec: str, option: str = "--covariate") -> Covariate:
    """The covariate of ``spec`` (every rank reads the small series itself)."""
    source = parse(spec, option)
    if source is None:
        return Covariate("year", "calendar year", "year", np.empty(0, np.int64), np.empty(0))
    path, var = source
    targets.check_input(path, f"{option} {spec}: file", collective=True)
    import cftime
    import netCDF4

    try:
        with netCDF4.Dataset(path) as ds:
            if var not in ds.variables:
                raise ClimioError(f"{option} {spec}: '{path}' has no variable '{var}' (it has "
                                  f"{', '.join(list(ds.variables)[:8])})", collective=True)
            variable = ds.variables[var]
            if len(variable.dimensions) != 1:
                raise ClimioError(f"{option} {spec}: '{var}' has dimensions {variable.dimensions}: give a 1-D series "
                                  f"along time (average it over the others first, e.g. with ncwa)", collective=True)
            dim = variable.dimensions[0]
            time = ds.variables.get(dim)
            units = getattr(time, "units", "") if time is not None else ""
            if time is None or " since " not in str(units):
                raise ClimioError(f"{option} {spec}: '{var}' is along '{dim}', which has no coordinate with CF time "
                                  f"units ('days since ...')", collective=True)
            calendar = str(getattr(time, "calendar", "standard"))
            if variable.dtype.kind not in "iuf":
                raise ClimioError(f"{option} {spec}: '{var}' is not numeric ({variable.dtype})", collective=True)
            values = np.ma.filled(np.ma.asarray(variable[...], dtype=np.float64), np.nan)
            try:
                dates = cftime.num2date(np.asarray(time[...], dtype=np.float64), str(units), calendar)
            except ValueError as err:
                raise ClimioError(f"{option} {spec}: the time coordinate '{dim}' (units '{units}', calendar "
                                  f"'{calendar}') cannot be read as dates: {err}", collective=True) from None
            attrs = {k: variable.getncattr(k) for k in variable.ncattrs()}
    except OSError as err:
        raise ClimioError(f"{option} {spec}: cannot read '{path}': {err}", collective=True) from None
    name = str(attrs.get("long_name", attrs.get("standard_name", var)))
    return annual_means(spec, f"{name} ({var} in {os.path.basename(path)}), annual mean",
                        str(attrs.get("units", "1")) or "1", np.array([d.year for d in dates], dtype=np.int64),
                        values, option)


def annual_means(spec: str, long_name: str, units: str, year: np.ndarray, values: np.ndarray,
                 option: str = "--covariate") -> Covariate:
    """The covariate of a series with the calendar ``year`` of each value: its mean over each year (NaN skipped)."""
    values = np.asarray(values, dtype=np.float64)
    valid = np.isfinite(values)
    years = np.unique(year[valid])
    if years.size < 2:
        raise ClimioError(f"{option} {spec}: the series has valid values in fewer than two years", collective=True)
    sums = np.zeros(years.size)
    counts = np.zeros(years.size)
    np.add.at(sums, np.searchsorted(years, year[valid]), values[valid])
    np.add.at(counts, np.searchsorted(years, year[valid]), 1.0)
    return Covariate(spec, long_name, units, years, sums / counts)


def at_values(covariate: Covariate, first: int, last: int, given: Sequence[float] | None) -> np.ndarray:
    """The covariate values of the effective return levels: ``given``, or those of the first and last blocks'
    years."""
    if given:
        return np.asarray(given, dtype=np.float64)
    return np.unique(covariate.of_years(np.asarray([first, last])))


def p_value(nll_stationary: np.ndarray, nll: np.ndarray) -> np.ndarray:
    """The likelihood-ratio test of the trend (one more parameter than the stationary fit):
    P(chi2_1 > 2 (nll_stationary - nll)) = erfc(sqrt(nll_stationary - nll)); NaN where either is."""
    with np.errstate(invalid="ignore"):
        deviance = np.maximum(2.0 * (np.asarray(nll_stationary) - np.asarray(nll)), 0.0)
    return _erfc(np.sqrt(deviance / 2.0)).astype(np.float64)


_erfc = np.frompyfunc(math.erfc, 1, 1)
