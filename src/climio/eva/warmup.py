"""Compile eva's kernels ahead of the first analysis (``climio info --compile``, which ``make install`` runs).

numba compiles a kernel the first time it is called with new argument types, and keeps the result in its cache
(one directory per version of climio's sources, :mod:`climio.core.kernels`). Without this step a new
installation's first analysis compiles for up to a minute per method. Each option set below reaches kernels the
others do not; each runs once, through the same :func:`climio.eva.job.run` the command uses, on a small field
in both value types the scan kernels are compiled for (float32, as CMIP stores most fields, and float64), so
every signature the command needs is compiled and cached. The scans read a classic file's values as stored
(big-endian, another signature), so the variants that scan differently run on a CDF-5 file too. Under
``mpiexec`` the ranks share the runs.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from climio.eva.intervals import Request
from climio.eva.job import Options, run

if TYPE_CHECKING:
    from mpi4py import MPI

CI_NORMAL, CI_PROFILE = Request(0.95, "normal"), Request(0.95, "profile")
VARIANTS = (
    Options(),
    Options(ci=CI_NORMAL),
    Options(ci=CI_PROFILE),
    Options(decluster=1, ci=CI_PROFILE),
    Options(covariate="year", ci=CI_NORMAL),
    Options(method="gev"),
    Options(method="gev", ci=CI_NORMAL),
    Options(method="gev", ci=CI_PROFILE),
    Options(method="gev", block="DJF,JJA"),
    Options(method="gev", covariate="year", ci=CI_NORMAL),
)
# The options whose scans of the input differ (the fits after them take native arrays whatever the file).
SCANS = (Options(), Options(decluster=1), Options(covariate="year"), Options(method="gev"),
         Options(method="gev", block="DJF,JJA"))
RUNS = [(fmt, dtype, options) for fmt, variants in (("NETCDF4", VARIANTS), ("NETCDF3_64BIT_DATA", SCANS))
        for dtype in ("f4", "f8") for options in variants]
YEARS, CELLS = 24, 6


def _field(path: str, dtype: str, fmt: str) -> None:
    """Daily precipitation-like values (gamma, with dry days) on a 2 x 3 grid, 24 noleap years."""
    import netCDF4

    rng = np.random.default_rng(7)
    days = 365 * YEARS
    values = rng.gamma(0.6, 4e-5, (days, 2, 3)) * (rng.random((days, 2, 3)) < 0.6)
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        for name, size in (("time", None), ("lat", 2), ("lon", 3)):
            ds.createDimension(name, size)
        time_ = ds.createVariable("time", "f8", ("time",))
        time_.units, time_.calendar = "days since 2000-01-01", "noleap"
        time_[:] = np.arange(days) + 0.5
        ds.createVariable("lat", "f8", ("lat",))[:] = [10.0, 20.0]
        ds.createVariable("lon", "f8", ("lon",))[:] = [0.0, 10.0, 20.0]
        pr = ds.createVariable("pr", dtype, ("time", "lat", "lon"))
        pr.units = "kg m-2 s-1"
        pr[:] = values


def compile_kernels(comm: MPI.Comm) -> tuple[int, float]:
    """Run every variant, each on one rank alone (numba compiles on one core: ranks share the work and the
    cache); (runs, seconds)."""
    from mpi4py import MPI

    started = time.perf_counter()
    mine = RUNS[comm.Get_rank()::comm.Get_size()]
    with tempfile.TemporaryDirectory(prefix="climio-compile-") as directory:
        for fmt, dtype, options in mine:
            source = os.path.join(directory, f"pr_{fmt}_{dtype}.nc")
            if not os.path.exists(source):
                _field(source, dtype, fmt)
            run(source, os.path.join(directory, "out.nc"), MPI.COMM_SELF, replace(options, overwrite=True),
                quiet=True)
    runs = comm.allreduce(len(mine))
    return runs, comm.allreduce(time.perf_counter() - started, op=MPI.MAX)


def main() -> int:
    """``python -m climio.eva.warmup``: ``climio info --compile`` on up to four cores (install and Makefile)."""
    import subprocess
    import sys

    from climio.core.mpi import mpiexec_command

    argv, env = mpiexec_command(max(1, min(4, os.cpu_count() or 1)), [sys.executable, "-m", "climio", "info",
                                                                      "--compile"])
    return subprocess.run(argv, env=env).returncode


if __name__ == "__main__":
    raise SystemExit(main())
