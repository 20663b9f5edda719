"""How many values make a year: the time step of a series and the ``npy`` of return-level arithmetic.

A return period of T years is T x npy values. extRemes assumes daily values
(npy = 365.25) unless told; so does climio, but it checks: a time axis whose step
is not a day (monthly means, 6-hourly values) is refused unless the user gives
``npy``, and the message says what step was found. ``npy="calendar"`` takes the
days of a year of the time axis's own calendar (365 for ``noleap``, 360 for
``360_day``), again only for daily values.
"""

from __future__ import annotations

import numpy as np

from climio.errors import ClimioError
from climio.core.timeaxis import calendar_of, canonical_calendar

DAILY_NPY = 365.25  # extRemes's default
DAYS_PER_YEAR = {"noleap": 365.0, "all_leap": 366.0, "360_day": 360.0, "standard": 365.2425,
                 "proleptic_gregorian": 365.2425, "julian": 365.25}
# Days in one unit of CF time ("<unit> since <date>").
UNIT_DAYS = {"day": 1.0, "days": 1.0, "d": 1.0, "hour": 1 / 24, "hours": 1 / 24, "h": 1 / 24, "hr": 1 / 24,
             "minute": 1 / 1440, "minutes": 1 / 1440, "min": 1 / 1440,
             "second": 1 / 86400, "seconds": 1 / 86400, "s": 1 / 86400, "sec": 1 / 86400}


def step_days(values: np.ndarray, units: str | None, bounds: np.ndarray | None = None) -> float | None:
    """The median step of a time coordinate in days (from its ``bounds``, (n, 2), when it has one value only),
    or None when it cannot be told (one value without bounds, no CF time units)."""
    days = unit_days(units)
    if days is None:
        return None
    if np.size(values) >= 2:
        steps = np.diff(np.asarray(values, dtype=np.float64))
    elif bounds is not None and np.size(bounds) >= 2:
        steps = np.diff(np.asarray(bounds, dtype=np.float64).reshape(-1, 2), axis=1)
    else:
        return None
    return float(np.median(steps)) * days


def unit_days(units: str | None) -> float | None:
    """Days in one unit of CF time units ``<unit> since <date>``; None for other units."""
    if units is None:
        return None
    return UNIT_DAYS.get(units.split(" since ")[0].strip().lower())


def check_npy(npy: float | str | None, option: str = "--npy") -> None:
    """Refuse an npy that is neither a positive number, None nor 'calendar' (before any file is read)."""
    if isinstance(npy, str) and npy != "calendar":
        raise ClimioError(f"{option} takes a number of values per year or 'calendar', got '{npy}'", collective=True)
    if npy is not None and not isinstance(npy, str) and not float(npy) > 0:
        raise ClimioError(f"{option} must be positive, got {npy}", collective=True)


def values_per_year(npy: float | str | None, step: float | None, calendar: str, where: str,
                    option: str = "--npy") -> float:
    """The npy to use: a number as given; otherwise daily values are checked (``step`` in days, None: unknown,
    accepted) and npy is 365.25 (``npy=None``) or the calendar's year (``"calendar"``).

    ``where`` names the time axis in messages (file and variable), ``option`` the way the user gives npy.
    """
    check_npy(npy, option)
    if npy is not None and not isinstance(npy, str):
        return float(npy)
    if step is not None and not 0.9 <= step <= 1.1:
        given = "=" if option.isidentifier() else " "  # npy=12 in Python, --npy 12 on the command line
        raise ClimioError(f"{where} steps by {describe_step(step)}, not daily: give {option} with the number of "
                          f"values per year (e.g. {option}{given}12 for monthly, {option}{given}1460 for 6-hourly)",
                          collective=True)
    if npy is None:
        return DAILY_NPY
    name = canonical_calendar(calendar_of({"calendar": calendar}))
    if name not in DAYS_PER_YEAR:
        raise ClimioError(f"{where}: calendar '{calendar}' is unknown: give {option} as a number", collective=True)
    return DAYS_PER_YEAR[name]


def describe_step(days: float) -> str:
    """A time step for people: '30.4 days (monthly)', '0.25 days (6-hourly)'."""
    for name, low, high in (("monthly", 27.5, 31.5), ("yearly", 359, 367), ("6-hourly", 0.24, 0.26),
                            ("3-hourly", 0.12, 0.13), ("hourly", 0.041, 0.043), ("pentad", 4.9, 5.1)):
        if low <= days <= high:
            return f"{days:g} days ({name})"
    return f"{days:g} days"
