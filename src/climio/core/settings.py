"""The ``CLIMIO_*`` environment variables that tune a run, each read and checked here and nowhere else.

The C client (``capi/served.c``, ``setting``) reads the same variables by the same rule, so that a model's ranks
and ``climio serve`` never take one value two ways: a value is a plain decimal number (``600``, ``2.5``,
``1e3``; an integer where the setting counts things) within the setting's bounds; unset or empty means the
default; anything else (``0`` where it must be positive, ``-1``, ``abc``, ``inf``, ``10s``) is refused in one
line naming the variable and what it takes.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from climio.errors import ClimioError

# What the C client's setting() accepts too: no blanks, no hexadecimal, no inf or nan, no digit separators.
DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class Setting:
    """One environment variable: what it sets (with its unit), its default and the values it takes."""

    name: str
    meaning: str
    default: float
    low: float  # the smallest value allowed (exclusive where low_open)
    high: float
    low_open: bool = False
    integer: bool = False
    unset: str = ""  # what leaving it unset means, where that is no number

    def allowed(self) -> str:
        """The values it takes, in words."""
        kind = "a whole number" if self.integer else "a number"
        low = f"greater than {self.low:g}" if self.low_open else f"from {self.low:g}"
        return f"{kind} {low}" + (f" to {self.high:g}" if math.isfinite(self.high) else "")

    def read(self, environ: Mapping[str, str] = os.environ) -> float:
        """Its value in ``environ``: the default when unset or empty; a :class:`ClimioError` naming it when bad."""
        given = environ.get(self.name, "")
        if given == "":
            return self.default
        if (INTEGER if self.integer else DECIMAL).fullmatch(given):
            value = float(given)
            if math.isfinite(value) and (value > self.low if self.low_open else value >= self.low) \
                    and value <= self.high:
                return value
        unset = self.unset or f"default {self.default:g}"
        raise ClimioError(f"{self.name}={given}: give {self.meaning}, {self.allowed()} ({unset})", collective=True)


SERVE_TIMEOUT = Setting("CLIMIO_SERVE_TIMEOUT", "the seconds a model and its I/O servers wait for each other",
                        600.0, 0.0, math.inf, low_open=True)
SERVE_BUFFER_MB = Setting("CLIMIO_SERVE_BUFFER_MB", "the MiB of each model rank's buffer for the I/O servers",
                          32.0, 1.0, 65536.0, integer=True)
SETTINGS = (SERVE_TIMEOUT, SERVE_BUFFER_MB)


def servers(world_size: int) -> Setting:
    """``CLIMIO_SERVERS``: how many of a launch's last ranks are I/O servers (for launchers without app contexts,
    such as ``srun --multi-prog``); its bounds depend on the launch."""
    return Setting("CLIMIO_SERVERS", f"the number of I/O server ranks, the last of this launch of {world_size}",
                   0.0, 0.0, world_size - 1.0, integer=True, unset="unset: the last application of the launch")


def check_all(environ: Mapping[str, str] = os.environ) -> None:
    """Refuse the first bad setting (a server checks them all before it answers its model)."""
    for setting in SETTINGS:
        setting.read(environ)
