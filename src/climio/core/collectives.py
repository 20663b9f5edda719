"""``libclimio_collectives.so`` (``collectives.c``, built with the C API): the collective MPI calls of climio's
processes, each counted, and the small blocking ones waited for without holding the core.

:func:`load` puts it ahead of the MPI library in this process's symbol lookup, at ``import climio`` (before
netCDF4 or mpi4py load MPI), so that the agreements parallel HDF5, PnetCDF and netCDF-C make inside their calls
yield the core while they wait (CMAQ CA through parallel HDF5 beside one busy process: 10-15x slower with MPI's
own waits, under 2x with these). ``CLIMIO_MPI_WAIT=spin`` keeps MPI's own waits. ``climio bench`` preloads it
into its ranks (:func:`preload`), so that a model program linked with MPI counts its calls too (:func:`calls`).
Without the library (no C API built) nothing changes and the count is None.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Callable

LIBRARY = os.path.join(sys.prefix, "lib", "libclimio_collectives.so")


def load() -> None:
    """Load the library for the whole process (its MPI names before the MPI library's), if it is built."""
    if os.path.exists(LIBRARY):
        ctypes.CDLL(LIBRARY, mode=ctypes.RTLD_GLOBAL)


def preload(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the library preloaded, when it is built."""
    if not os.path.exists(LIBRARY):
        return env
    return {**env, "LD_PRELOAD": " ".join(p for p in (env.get("LD_PRELOAD", ""), LIBRARY) if p)}


def calls() -> int | None:
    """This process's collective MPI calls so far, or None when the library is not loaded ahead of MPI."""
    count = _counter()
    return None if count is None else int(count())


@functools.cache
def _counter() -> Callable[[], int] | None:
    try:
        count = ctypes.CDLL(None).climio_collective_calls
    except AttributeError:
        return None
    count.restype = ctypes.c_long
    return count  # type: ignore[no-any-return]
