"""Blocks of a time axis for block maxima: years, or one season of each year, in the axis's own calendar.

A block is a calendar year (``year``) or the months of a season in each year
(``DJF``, ``MAM``, ``JJA``, ``SON``, or any run of month initials such as ``JJAS``).
A season that crosses the new year belongs to the year it ends in: DJF 1951 is
December 1950 to February 1951 (the convention of ETCCDI and xclim). Dates come
from the time coordinate's values, units and calendar (cftime), so ``noleap``,
``360_day`` and ``julian`` years have their own lengths. Each block also says how
many time steps it holds when nothing is missing (its span over the series's step),
which is what a cell's count of valid values is held against: the partial years at
either end of a series, and years with gaps, are dropped rather than fitted as if whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from climio.errors import ClimioError

MONTH_INITIALS = "JFMAMJJASOND"
SEASONS = ("DJF", "MAM", "JJA", "SON")


@dataclass(frozen=True)
class Blocks:
    """The block of each time step (-1: in none), and per block its year and full length in time steps."""

    index: np.ndarray  # (time,) int64
    years: np.ndarray  # (blocks,) the year each block ends in
    expected: np.ndarray  # (blocks,) time steps of a block with nothing missing
    name: str  # "year", "DJF", ...

    @property
    def count(self) -> int:
        return int(self.years.size)


def months_of(spec: str) -> tuple[int, ...]:
    """The months (1-12) of a block name: all for ``year``; a season's initials found in the circular year."""
    if spec == "year":
        return tuple(range(1, 13))
    letters = spec.upper()
    if 1 <= len(letters) < 12:
        doubled = MONTH_INITIALS * 2
        at = doubled.find(letters)
        if at >= 0:
            return tuple((at + i) % 12 + 1 for i in range(len(letters)))
    raise ClimioError(f"--block '{spec}': give 'year' or a season as consecutive month initials "
                      f"({', '.join(SEASONS)}, JJAS, ...)", collective=True)


def of_axis(times: np.ndarray, units: str, calendar: str, step_days: float, spec: str) -> Blocks:
    """The blocks of a time coordinate (values in ``units`` of ``calendar``, median step in days)."""
    import cftime

    months = months_of(spec)
    dates = cftime.num2date(np.asarray(times, dtype=np.float64), units, calendar)
    year = np.array([d.year for d in dates], dtype=np.int64)
    month = np.array([d.month for d in dates], dtype=np.int64)
    crosses = months[0] > months[-1]  # DJF, NDJF: the months before January belong to the next year's block
    end_year = year + ((month >= months[0]) & crosses).astype(np.int64)
    inside = np.isin(month, months)
    years = np.unique(end_year[inside])
    index = np.full(times.size, -1, np.int64)
    index[inside] = np.searchsorted(years, end_year[inside])
    first_year = [y - 1 if crosses else y for y in years]
    last_month = months[-1]
    starts = [cftime.datetime(y, months[0], 1, calendar=calendar) for y in first_year]
    ends = [cftime.datetime(y + 1, 1, 1, calendar=calendar) if last_month == 12
            else cftime.datetime(y, last_month + 1, 1, calendar=calendar) for y in years]
    span = np.asarray(cftime.date2num(ends, "days since 1-1-1", calendar)) - \
        np.asarray(cftime.date2num(starts, "days since 1-1-1", calendar))
    expected = np.rint(span / step_days).astype(np.int64)
    return Blocks(index, years.astype(np.int64), expected, spec)
