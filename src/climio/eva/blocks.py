"""Blocks of a time axis for block maxima: years, or seasons of each year, in the axis's own calendar.

A block is a calendar year (``year``) or the months of a season in each year
(``DJF``, ``MAM``, ``JJA``, ``SON``, or any run of month initials such as ``JJAS``).
Several seasons that share no month (``DJF,JJA``, or ``season`` for all four) are
fitted each on its own, in one pass over the data: their blocks are listed season
by season, each block knowing its season.
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
    """The block of each time step (-1: in none), and per block its year, full length in time steps and season
    (an index into ``seasons``)."""

    index: np.ndarray  # (time,) int64
    years: np.ndarray  # (blocks,) the year each block ends in
    expected: np.ndarray  # (blocks,) time steps of a block with nothing missing
    name: str  # "year", "DJF", "DJF,JJA", ...
    season: np.ndarray  # (blocks,) int64, listed season by season
    seasons: tuple[str, ...]  # ("year",), ("DJF",), ("DJF", "JJA")...

    @property
    def count(self) -> int:
        return int(self.years.size)

    def of_season(self, s: int) -> slice:
        """The blocks of season ``s`` (consecutive)."""
        at = np.flatnonzero(self.season == s)
        return slice(int(at[0]), int(at[-1]) + 1) if at.size else slice(0, 0)


def seasons_of(spec: str) -> tuple[str, ...]:
    """The seasons of a ``--block`` value: ``year``, one season, ``season`` (all four) or a comma list of seasons
    that share no month."""
    if spec.lower() == "year":
        return ("year",)
    names = SEASONS if spec.lower() == "season" else tuple(n.upper() for n in spec.split(","))
    seen: dict[int, str] = {}
    for name in names:
        for month in months_of(name):
            if month in seen:
                raise ClimioError(f"--block '{spec}': seasons {seen[month]} and {name} share month "
                                  f"{MONTH_INITIALS[month - 1]} ({month}): give seasons with no month in common",
                                  collective=True)
            seen[month] = name
    return names


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
    raise ClimioError(f"--block '{spec}': give 'year', a season as consecutive month initials "
                      f"({', '.join(SEASONS)}, JJAS, ...), several as DJF,JJA, or 'season' for all four",
                      collective=True)


def canonical(spec: str) -> str:
    """A ``--block`` value as its seasons say it: ``year``, ``DJF``, ``DJF,MAM,JJA,SON``..."""
    return ",".join(seasons_of(spec))


def of_axis(times: np.ndarray, units: str, calendar: str, step_days: float, spec: str) -> Blocks:
    """The blocks of a time coordinate (values in ``units`` of ``calendar``, median step in days), for every
    season of ``spec`` (:func:`seasons_of`)."""
    import cftime

    seasons = seasons_of(spec)
    dates = cftime.num2date(np.asarray(times, dtype=np.float64), units, calendar)
    year = np.array([d.year for d in dates], dtype=np.int64)
    month = np.array([d.month for d in dates], dtype=np.int64)
    index = np.full(times.size, -1, np.int64)
    years, expected, season = [], [], []
    for s, name in enumerate(seasons):
        one = _season(year, month, calendar, step_days, name)
        index[one.index >= 0] = one.index[one.index >= 0] + sum(y.size for y in years)
        years.append(one.years)
        expected.append(one.expected)
        season.append(np.full(one.years.size, s, np.int64))
    return Blocks(index, np.concatenate(years), np.concatenate(expected), ",".join(seasons), np.concatenate(season),
                  seasons)


def _season(year: np.ndarray, month: np.ndarray, calendar: str, step_days: float, spec: str) -> Blocks:
    """The blocks of one season (or the year) of dates given as their year and month."""
    import cftime

    months = months_of(spec)
    crosses = months[0] > months[-1]  # DJF, NDJF: the months before January belong to the next year's block
    end_year = year + ((month >= months[0]) & crosses).astype(np.int64)
    inside = np.isin(month, months)
    years = np.unique(end_year[inside])
    index = np.full(year.size, -1, np.int64)
    index[inside] = np.searchsorted(years, end_year[inside])
    first_year = [y - 1 if crosses else y for y in years]
    last_month = months[-1]
    starts = [cftime.datetime(y, months[0], 1, calendar=calendar) for y in first_year]
    ends = [cftime.datetime(y + 1, 1, 1, calendar=calendar) if last_month == 12
            else cftime.datetime(y, last_month + 1, 1, calendar=calendar) for y in years]
    span = np.asarray(cftime.date2num(ends, "days since 1-1-1", calendar)) - \
        np.asarray(cftime.date2num(starts, "days since 1-1-1", calendar))
    expected = np.rint(span / step_days).astype(np.int64)
    return Blocks(index, years.astype(np.int64), expected, spec, np.zeros(years.size, np.int64), (spec,))
