"""How many collective MPI calls a benchmark's ranks make: ``libclimio_collectives.so`` (``collectives.c``, built
with the C API) preloaded into the ranks counts each one, whoever calls it (climio, PnetCDF, HDF5, netCDF-C).

The driver adds :func:`preload` to the environment of its mpiexec runs; a rank reads its own count with
:func:`calls`. Without the library (no C API built here) the count is None and the tables say "-".
"""

from __future__ import annotations

import ctypes
import os
import sys

LIBRARY = os.path.join(sys.prefix, "lib", "libclimio_collectives.so")


def preload(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the counting library preloaded, when it is built."""
    if not os.path.exists(LIBRARY):
        return env
    return {**env, "LD_PRELOAD": " ".join(p for p in (env.get("LD_PRELOAD", ""), LIBRARY) if p)}


def calls() -> int | None:
    """This process's collective MPI calls so far, or None when the counting library is not preloaded."""
    try:
        count = ctypes.CDLL(None).climio_collective_calls
    except AttributeError:
        return None
    count.restype = ctypes.c_long
    return int(count())
