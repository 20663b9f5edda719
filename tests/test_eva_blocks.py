"""Blocks of a time axis (``climio.eva.blocks``) against a reference written here from cftime dates.

The reference shares no logic with ``of_axis``: a block is the set of (year, month) pairs it is made of
(DJF 1951 = December 1950, January and February 1951), each time step's block is looked up from its date,
and a block's full length is the number of steps a gap-free series of the same step puts in it (counted,
not computed from spans).
"""

from __future__ import annotations

import datetime
import functools
from collections import Counter

import cftime
import numpy as np
import pytest

from climio.errors import ClimioError
from climio.eva import blocks


def season_months(spec: str) -> list[int]:
    """The months of a block name, written out here (not via months_of)."""
    table = {"year": list(range(1, 13)), "DJF": [12, 1, 2], "MAM": [3, 4, 5], "JJA": [6, 7, 8],
             "SON": [9, 10, 11], "JJAS": [6, 7, 8, 9], "NDJF": [11, 12, 1, 2]}
    return table[spec]


def block_of_month(spec: str, years: range) -> dict[tuple[int, int], int]:
    """(year, month) -> the year of the block it belongs to; a season that wraps past December belongs to the
    year of its January."""
    months = season_months(spec)
    wraps = 1 in months and 12 in months and months != list(range(1, 13))
    table = {}
    for y in years:
        for m in months:
            # the months before the wrap (November, December) are in the previous calendar year
            before_wrap = wraps and months.index(m) < months.index(1)
            table[(y - 1 if before_wrap else y, m)] = y
    return table


def dates_from(start: cftime.datetime, steps: int, step_hours: int) -> list[cftime.datetime]:
    """``steps`` dates from ``start``, ``step_hours`` apart, by calendar arithmetic."""
    step = datetime.timedelta(hours=step_hours)
    out, d = [], start
    for _ in range(steps):
        out.append(d)
        d = d + step
    return out


@functools.cache
def gap_free_months(first: int, last: int, hour: int, step_hours: int, calendar: str) -> Counter:
    """(year, month) -> the steps of a gap-free series at ``hour`` o'clock, ``step_hours`` apart, from 1 January
    ``first`` to 1 January ``last`` in that month, stepped by calendar arithmetic (walked once for every block
    name that counts from it)."""
    begin = cftime.datetime(first, 1, 1, hour, calendar=calendar)
    end = cftime.datetime(last, 1, 1, calendar=calendar)
    months, d, step = Counter(), begin, datetime.timedelta(hours=step_hours)
    while d < end:
        months[(d.year, d.month)] += 1
        d = d + step
    return months


def reference(dates: list[cftime.datetime], spec: str, step_hours: int, calendar: str
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(block year of each step or -1, the block years in order, each block's gap-free step count)."""
    first, last = dates[0].year, dates[-1].year
    table = block_of_month(spec, range(first - 1, last + 3))
    keys = [table.get((d.year, d.month), -1) for d in dates]
    years = sorted({k for k in keys if k >= 0})
    # count the steps of a gap-free series at the same time of day that covers every block fully
    full: Counter = Counter()
    for month, steps in gap_free_months(first - 2, last + 2, dates[0].hour, step_hours, calendar).items():
        full[table.get(month, -1)] += steps
    return np.array(keys), np.array(years), np.array([full[y] for y in years])


CASES = [
    # calendar, start (y, m, d, h), steps, step hours, units
    ("standard", (1950, 7, 15, 12), 4400, 24, "days since 1949-12-01 06:00:00"),
    ("noleap", (1950, 7, 15, 12), 4400, 24, "days since 1949-12-01 06:00:00"),
    ("360_day", (1950, 7, 15, 12), 4400, 24, "days since 1949-12-01 06:00:00"),
    ("julian", (1898, 3, 10, 0), 2000, 24, "hours since 1900-03-01 06:00:00"),
    ("proleptic_gregorian", (1898, 3, 10, 0), 2000, 24, "hours since 1900-03-01 06:00:00"),
    ("standard", (1951, 10, 2, 0), 4 * 1500, 6, "hours since 1950-06-15 03:00:00"),
    ("noleap", (1951, 10, 2, 0), 4 * 1500, 6, "days since 1950-06-15 03:00:00"),
    ("360_day", (1951, 10, 2, 0), 4 * 1500, 6, "hours since 1950-06-15 03:00:00"),
    ("julian", (1899, 11, 20, 0), 4 * 900, 6, "days since 1900-03-01 06:00:00"),
    ("proleptic_gregorian", (1899, 11, 20, 0), 4 * 900, 6, "hours since 1900-03-01 06:00:00"),
]
SPECS = ("year", "DJF", "MAM", "JJA", "SON", "JJAS", "NDJF")


@pytest.mark.parametrize("calendar, start, steps, step_hours, units", CASES)
def test_every_step_and_block_length_match_the_reference(calendar: str, start: tuple[int, int, int, int],
                                                         steps: int, step_hours: int, units: str) -> None:
    """Each step's block, the block years and their gap-free lengths equal the reference, for every block name,
    in five calendars, daily and 6-hourly, units of days or hours since a reference that is not midnight of
    1 January; a series that starts and ends mid-year keeps the full length of its partial end blocks."""
    dates = dates_from(cftime.datetime(*start, calendar=calendar), steps, step_hours)
    times = np.asarray(cftime.date2num(dates, units, calendar), dtype=np.float64)
    for spec in SPECS:
        keys, years, expected = reference(dates, spec, step_hours, calendar)
        got = blocks.of_axis(times, units, calendar, step_hours / 24.0, spec)
        assert got.name == spec and got.count == years.size
        assert got.years.tolist() == years.tolist(), spec
        assert got.expected.tolist() == expected.tolist(), spec
        want_index = np.where(keys >= 0, np.searchsorted(years, keys), -1)
        assert got.index.dtype == np.int64 and got.index.tolist() == want_index.tolist(), spec
        per_day = 24 // step_hours
        assert np.all(expected % per_day == 0)
        # the first and last blocks are partial (the series starts and ends mid-year): fewer steps than expected
        counts = np.bincount(got.index[got.index >= 0], minlength=got.count)
        if spec == "year":
            assert counts[0] < expected[0] and counts[-1] < expected[-1]
            assert np.array_equal(counts[1:-1], expected[1:-1])


YEAR_DAYS = {  # calendar -> {year: days}, known by heart
    "standard": {1951: 365, 1952: 366, 1953: 365, 1956: 366, 1900: 365, 2000: 366},
    "proleptic_gregorian": {1900: 365, 1952: 366, 2000: 366},
    "julian": {1900: 366, 1901: 365, 1952: 366},
    "noleap": {1952: 365, 2000: 365},
    "360_day": {1952: 360, 1953: 360},
}


@pytest.mark.parametrize("calendar", sorted(YEAR_DAYS))
@pytest.mark.parametrize("step_hours", [24, 6])
def test_known_lengths_of_years_and_djf(calendar: str, step_hours: int) -> None:
    """Literal year and DJF lengths: leap years have 366 days in standard, julian (1900 too) and
    proleptic_gregorian (not 1900); DJF 1952 = Dec 1951 + Jan/Feb 1952; 6-hourly blocks are 4x the days."""
    per_day = 24 // step_hours
    for year, days in YEAR_DAYS[calendar].items():
        start = cftime.datetime(year, 1, 1, calendar=calendar)
        stop = cftime.datetime(year + 1, 1, 1, calendar=calendar)
        units = "days since 1850-06-10 12:00:00"
        times = np.arange(cftime.date2num(start, units, calendar), cftime.date2num(stop, units, calendar),
                          step_hours / 24.0)
        got = blocks.of_axis(times, units, calendar, step_hours / 24.0, "year")
        assert got.years.tolist() == [year] and got.expected.tolist() == [days * per_day]
        assert np.all(got.index == 0) and got.index.size == days * per_day
        djf = blocks.of_axis(times, units, calendar, step_hours / 24.0, "DJF")
        feb = 30 if calendar == "360_day" else 29 if days == 366 else 28
        dec = 30 if calendar == "360_day" else 31
        # January and February of `year` open DJF `year`; its December opens DJF `year + 1`
        assert djf.years.tolist() == [year, year + 1]
        assert djf.expected[0] == (dec + (30 if calendar == "360_day" else 31) + feb) * per_day
        assert np.count_nonzero(djf.index == 0) == ((30 if calendar == "360_day" else 31) + feb) * per_day
        assert np.count_nonzero(djf.index == 1) == dec * per_day
        assert np.count_nonzero(djf.index == -1) == (days - dec - feb - (30 if calendar == "360_day" else 31)) \
            * per_day


def test_djf_crossing_the_new_year_belongs_to_january() -> None:
    """DJF 1951 is December 1950 plus January and February 1951, in a series from 1 Dec 1950 to 28 Feb 1951."""
    units, calendar = "days since 1950-01-01", "standard"
    times = np.arange(334.5, 334.0 + 31 + 31 + 28, 1.0)  # 1950-12-01T12 .. 1951-02-28T12
    got = blocks.of_axis(times, units, calendar, 1.0, "DJF")
    assert got.years.tolist() == [1951] and got.expected.tolist() == [90]
    assert np.all(got.index == 0) and times.size == 90


@pytest.mark.parametrize("spec, months", [
    ("year", tuple(range(1, 13))), ("DJF", (12, 1, 2)), ("MAM", (3, 4, 5)), ("JJA", (6, 7, 8)),
    ("SON", (9, 10, 11)), ("JJAS", (6, 7, 8, 9)), ("NDJF", (11, 12, 1, 2)), ("jjas", (6, 7, 8, 9)),
])
def test_months_of_block_names(spec: str, months: tuple[int, ...]) -> None:
    """Block names give their months: all for year, the run of initials in the circular year for a season."""
    assert blocks.months_of(spec) == months


@pytest.mark.parametrize("spec", ["XYZ", "JFMAMJJASONDJ", "", "DFJ"])
def test_bad_block_names_are_refused_naming_the_option(spec: str) -> None:
    """Names that are no run of consecutive month initials raise a collective ClimioError naming --block."""
    with pytest.raises(ClimioError, match="--block") as err:
        blocks.months_of(spec)
    assert err.value.collective
    assert f"'{spec}'" in str(err.value)
