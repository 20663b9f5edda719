"""NCO's ``-d DIM,MIN[,MAX[,STRIDE]]`` ranges, which ``climio subset`` and ``climio eva`` both take.

A number with a decimal point (or an exponent) is a coordinate value, an integer a 0-based index (negative counts
from the end); both limits inclusive; ``MIN`` alone picks one index or the nearest value; an empty ``MIN`` or
``MAX`` leaves that side open; ``MIN > MAX`` on a longitude wraps across the seam (everything outside
``[MAX, MIN]``, in the order east of ``MIN`` first). A limit written as a date (``YYYY-MM-DD[{T| }HH:MM[:SS]]``)
is a coordinate value on a dimension whose coordinate has CF time units, converted with cftime in the
coordinate's calendar.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from climio.core.timeaxis import Date, TimeUnitsError, calendar_of, describe, parse_date, time_units
from climio.errors import ClimioError

Limit = float | int | Date | None


@dataclass(frozen=True)
class DimRange:
    """One ``-d`` option, parsed but not yet applied to a file."""

    text: str
    dim: str
    low: Limit
    high: Limit
    stride: int
    by_value: bool
    single: bool  # MIN alone, no comma: one index or the nearest value

    @property
    def dates(self) -> list[Date]:
        return [limit for limit in (self.low, self.high) if isinstance(limit, Date)]

    def resolve(self, size: int, coord: np.ndarray | None, longitude: bool, units: str | None = None,
                calendar: str | None = None) -> np.ndarray:
        """The selected indices of a dimension of ``size`` elements, in output order.

        ``units`` and ``calendar`` are the coordinate variable's attributes; they turn dates into
        coordinate values (``units`` must then be CF time units, ``<unit> since <date>``).
        """
        cal = calendar_of({} if calendar is None else {"calendar": calendar})
        since = None if units is None else time_units({"units": units})
        low, high = self.low, self.high
        if self.dates:
            if since is None:
                raise ClimioError(f"-d {self.text}: '{self.dates[0]}' is a date, but dimension '{self.dim}' has no "
                                  f"coordinate with CF time units ('<unit> since <date>'"
                                  f"{'' if units is None else f'; its units are {units!r}'}); give indices or "
                                  f"coordinate values", collective=True)
            try:
                low, high = (lim.value(since, cal) if isinstance(lim, Date) else lim for lim in (low, high))
            except TimeUnitsError as err:
                raise ClimioError(f"-d {self.text}: {err}", collective=True) from None
        if self.by_value:
            picked = self._values(coord, longitude, low, high)  # type: ignore[arg-type]
        else:
            picked = self._indices(size, longitude)
        picked = picked[::self.stride]
        if picked.size == 0:
            raise ClimioError(f"-d {self.text}: selects nothing from dimension '{self.dim}' "
                              f"(coordinate range {_span(coord, since, cal)}); check the limits", collective=True)
        return picked.astype(np.int64)

    def _indices(self, size: int, longitude: bool) -> np.ndarray:
        def index(value: Limit, default: int) -> int:
            if value is None:
                return default
            assert not isinstance(value, Date)
            position = int(value) + size if int(value) < 0 else int(value)
            if not 0 <= position < size:
                raise ClimioError(f"-d {self.text}: index {value} is outside dimension '{self.dim}' "
                                  f"(0..{size - 1})", collective=True)
            return position

        low = index(self.low, 0)
        high = low if self.single else index(self.high, size - 1)
        if low <= high:
            return np.arange(low, high + 1)
        if not longitude:
            raise ClimioError(f"-d {self.text}: MIN {self.low} is after MAX {self.high}; only a longitude "
                              f"range may wrap", collective=True)
        return np.concatenate([np.arange(low, size), np.arange(0, high + 1)])

    def _values(self, coord: np.ndarray | None, longitude: bool, low_limit: float | int | None,
                high_limit: float | int | None) -> np.ndarray:
        if coord is None:
            raise ClimioError(f"-d {self.text}: dimension '{self.dim}' has no coordinate variable; "
                              f"give 0-based indices (integers without a decimal point)", collective=True)
        coord = np.asarray(coord, dtype=np.float64)  # NCO compares in double precision
        if self.single:
            return np.array([int(np.argmin(np.abs(coord - float(low_limit))))])  # type: ignore[arg-type]
        low = -math.inf if low_limit is None else float(low_limit)
        high = math.inf if high_limit is None else float(high_limit)
        if low <= high:
            return np.flatnonzero((coord >= low) & (coord <= high))
        if not longitude:
            raise ClimioError(f"-d {self.text}: MIN {self.low} is {'after' if self.dates else 'greater than'} MAX "
                              f"{self.high}; only a longitude range may wrap", collective=True)
        return np.concatenate([np.flatnonzero(coord >= low), np.flatnonzero(coord <= high)])


def _span(coord: np.ndarray | None, units: str | None = None, calendar: str = "standard") -> str:
    if coord is None or coord.size == 0:
        return "none"
    low, high = float(np.min(coord)), float(np.max(coord))
    return f"{describe(low, units, calendar)}..{describe(high, units, calendar)}"


def _number(text: str, option: str) -> tuple[float | int, bool]:
    """A limit and whether it is a coordinate value (decimal point or exponent) rather than an index."""
    try:
        if any(c in text for c in ".eE"):
            return float(text), True
        return int(text), False
    except ValueError:
        raise ClimioError(f"{option}: '{text}' is not a number or a date (YYYY-MM-DD[ HH:MM[:SS]])",
                          collective=True) from None


def _limit(text: str, option: str) -> tuple[Limit, bool]:
    """A ``-d`` limit: a date (a coordinate value on a time axis), else a number (see ``_number``).

    Dates are recognised first: ``1850-01-01`` would otherwise not be a number, and a negative
    index (``-3``) never looks like ``Y-M-D``.
    """
    try:
        date = parse_date(text)
    except TimeUnitsError as err:
        raise ClimioError(f"{option}: {err}", collective=True) from None
    if date is not None:
        return date, True
    return _number(text, option)


def parse_dim_range(text: str) -> DimRange:
    """Parse ``DIM,MIN[,MAX[,STRIDE]]`` (NCO's ``-d``)."""
    option = f"-d {text}"
    parts = text.split(",")
    if len(parts) < 2 or len(parts) > 4 or not parts[0]:
        raise ClimioError(f"{option}: expected DIM,MIN[,MAX[,STRIDE]]", collective=True)
    dim, limits = parts[0], parts[1:3]
    parsed = [(None, None) if not p.strip() else _limit(p.strip(), option) for p in limits]
    kinds = {kind for _, kind in parsed if kind is not None}
    if len(kinds) > 1:
        if any(isinstance(value, Date) for value, _ in parsed):
            raise ClimioError(f"{option}: mixes an index and a date (a coordinate value); give both limits as "
                              f"dates or values, or both as indices", collective=True)
        raise ClimioError(f"{option}: mixes an index and a coordinate value; write both limits with a decimal "
                          f"point (values) or both without (indices)", collective=True)
    stride = 1
    if len(parts) == 4 and parts[3].strip():
        value, is_value = _number(parts[3].strip(), option)
        if is_value or int(value) < 1:
            raise ClimioError(f"{option}: STRIDE must be a positive integer", collective=True)
        stride = int(value)
    low = parsed[0][0]
    high = parsed[1][0] if len(parsed) > 1 else None
    single = len(parts) == 2
    if single and low is None:
        raise ClimioError(f"{option}: give MIN", collective=True)
    return DimRange(text, dim, low, high, stride, by_value=kinds == {True}, single=single)
