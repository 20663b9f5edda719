"""CF time axes: ``<unit> since <date>`` units, calendars, dates in ``-d`` and rebasing joined files.

Every conversion goes through cftime with the coordinate's ``calendar`` attribute
(default ``standard``). A change of units within one calendar is affine: a value
``v`` in ``U1 since R1`` is ``(v * |U1| + (R1 - R0)) / |U0|`` in ``U0 since R0``,
where ``|U|`` is the length of the unit and ``R1 - R0`` the calendar's distance
between the reference dates (both exact, in microseconds, from cftime). This is
what cftime's ``num2date``/``date2num`` round trip computes, without rounding each
value to a microsecond; it is applied as ncrcat does, ``v * slope + intercept`` in
double precision with the slope composed through seconds (see ``Rebase.slope``), so
that the joined values are ncrcat's to the bit.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

import numpy as np

ALIASES = {"gregorian": "standard", "365_day": "noleap", "366_day": "all_leap"}
_SINCE = re.compile(r"^\s*([A-Za-z_]+)\s+since\s+\S", re.IGNORECASE)
_DATE = re.compile(r"^(\d+)-(\d{1,2})-(\d{1,2})"
                   r"(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2}(?:\.\d*)?))?)?(?:\s*(?:Z|UTC))?$")


class TimeUnitsError(ValueError):
    """Units or a date that cftime cannot handle in the given calendar (message ready for the user)."""


def calendar_of(attrs: Mapping[str, object]) -> str:
    """The CF calendar of a variable as its file spells it (lower case; ``standard`` without one): cftime takes
    every CF spelling, and messages name the calendar the user reads in ``ncdump -h``."""
    return str(attrs.get("calendar", "standard")).strip().lower() or "standard"


def canonical_calendar(name: str) -> str:
    """One name per calendar (``365_day`` is ``noleap``, ``gregorian`` ``standard``...), to compare calendars and
    look them up by; messages name them as :func:`calendar_of` gives them."""
    return ALIASES.get(name, name)


def same_calendar(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Whether two variables' ``calendar`` attributes name one calendar however each is spelled."""
    return canonical_calendar(calendar_of(a)) == canonical_calendar(calendar_of(b))


def time_units(attrs: Mapping[str, object]) -> str | None:
    """The variable's ``units`` when they are CF time units (``<unit> since <date>``), else None."""
    units = attrs.get("units")
    if isinstance(units, bytes):
        units = units.decode("utf-8", "replace")
    if isinstance(units, str) and _SINCE.match(units):
        return units.strip()
    return None


def _us(delta: timedelta) -> int:
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


@functools.lru_cache(maxsize=4096)
def _origin(units: str, calendar: str) -> tuple[object, int]:
    """The reference date of ``units`` and the length of one unit in microseconds (kept: joining many files
    asks again for each file's units and the first file's)."""
    import cftime

    try:
        zero, one = cftime.num2date([0, 1], units, calendar, only_use_cftime_datetimes=True)
    except Exception as err:  # noqa: BLE001 - cftime raises several types for units it cannot use
        raise TimeUnitsError(f"units '{units}' in calendar '{calendar}' are not CF time units cftime "
                             f"understands ({str(err).split('.')[0]})") from None
    return zero, _us(one - zero)


@dataclass(frozen=True)
class Rebase:
    """``v -> v * slope + offset / divisor`` in float64, leaving fill values and NaN as they are.

    ``scale`` is the length of the source unit, ``divisor`` that of the target unit and ``offset`` the
    distance from the target's reference date to the source's, all in microseconds (exact integers).
    """

    scale: int
    offset: int
    divisor: int
    fills: tuple[float, ...] = ()

    @property
    def slope(self) -> float:
        """Target units per source unit as UDUNITS composes it (and so ncrcat): seconds per source unit
        times the reciprocal of seconds per target unit, each rounded to double."""
        return (self.scale / 1e6) * (1.0 / (self.divisor / 1e6))

    @property
    def identity(self) -> bool:
        return self.scale == self.divisor and self.offset == 0

    def values(self, data: np.ndarray) -> np.ndarray:
        """The rebased values in float64 (not yet cast back to the variable's type)."""
        x = np.asarray(data, dtype=np.float64)
        if self.scale == self.divisor:
            y = x + self.offset / self.divisor
        else:
            y = x * self.slope + self.offset / self.divisor
        keep = self.untouched(data)
        if keep.any():
            y = np.where(keep, x, y)
        return y

    def untouched(self, data: np.ndarray) -> np.ndarray:
        """Fill values and NaN: not times, not rebased."""
        x = np.asarray(data)
        keep = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, dtype=bool)
        for fill in self.fills:
            keep |= x == fill
        return keep

    def _exact(self, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Integer data: quotient and remainder of ``(v * scale + offset) / divisor`` in Python integers."""
        numerator = np.asarray(data).astype(object) * self.scale + self.offset
        return numerator // self.divisor, numerator % self.divisor

    def apply(self, data: np.ndarray) -> np.ndarray:
        """Rebased values in ``data``'s type (integers exactly: that they can be is checked when the inputs
        are opened)."""
        if self.identity:
            return data
        if data.dtype.kind in "iu":
            quotient, _ = self._exact(data)
            return np.where(self.untouched(data), data, quotient).astype(data.dtype)
        return self.values(data).astype(data.dtype)

    def inexact(self, data: np.ndarray) -> np.ndarray:
        """Mask of values whose rebased value is not a whole number or does not fit ``data``'s integer type."""
        if self.identity or data.dtype.kind not in "iu":
            return np.zeros(np.shape(data), dtype=bool)
        quotient, remainder = self._exact(data)
        info = np.iinfo(data.dtype)
        bad = (remainder != 0) | (quotient < int(info.min)) | (quotient > int(info.max))
        return np.asarray(bad, dtype=bool) & ~self.untouched(data)


def rebase(from_units: str, to_units: str, calendar: str, fills: tuple[float, ...] = ()) -> Rebase:
    """How values in ``from_units`` become values in ``to_units`` (same calendar)."""
    if from_units == to_units:
        return Rebase(1, 0, 1, fills)
    origin, unit = _origin(from_units, calendar)
    target, target_unit = _origin(to_units, calendar)
    return Rebase(unit, _us(origin - target), target_unit, fills)  # type: ignore[operator]


@dataclass(frozen=True)
class Date:
    """A calendar date given in ``-d`` (``YYYY-MM-DD[{T| }HH:MM[:SS[.s]]]``), not yet tied to a calendar."""

    text: str
    year: int
    month: int
    day: int
    hour: int = 0
    minute: int = 0
    second: float = 0.0

    def __str__(self) -> str:
        return self.text

    def value(self, units: str, calendar: str) -> float:
        """This date as a number in ``units`` of ``calendar`` (cftime)."""
        import cftime

        _origin(units, calendar)  # clear message for units cftime cannot use
        whole = int(self.second)
        micro = int(round((self.second - whole) * 1e6))
        try:
            date = cftime.datetime(self.year, self.month, self.day, self.hour, self.minute, whole, micro,
                                   calendar=calendar)
        except ValueError:
            raise TimeUnitsError(f"'{self.text}' is not a date of the '{calendar}' calendar") from None
        return float(cftime.date2num(date, units, calendar))


def parse_date(text: str) -> Date | None:
    """A ``-d`` limit that is a date, or None when it does not look like one."""
    match = _DATE.match(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute = (int(g) if g else 0 for g in match.groups()[:5])
    second = float(match.group(6)) if match.group(6) else 0.0
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and second < 61):
        raise TimeUnitsError(f"'{text}' is not a valid date (YYYY-MM-DD[ HH:MM[:SS]])")
    return Date(text.strip(), year, month, day, hour, minute, second)


def describe(value: float, units: str | None, calendar: str) -> str:
    """A time value as a date (for messages); the plain number when it cannot be converted."""
    if units is None or not np.isfinite(value):
        return f"{value:g}"
    import cftime

    try:
        return str(cftime.num2date(value, units, calendar, only_use_cftime_datetimes=True))
    except Exception:  # noqa: BLE001 - only for a message: fall back to the number
        return f"{value:g}"
