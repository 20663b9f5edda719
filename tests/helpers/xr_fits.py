"""Under mpiexec: ``.climio.fit_pot`` and ``fit_gev`` with ``comm=`` on files joined by ``climio.open_mfdataset``,
each result written by rank 0 to OUT/pot.nc and OUT/gev.nc in FORMAT (tests/test_xarray_parallel_fits.py compares
them with the command's files). On the way it checks, printing a line for each on rank 0: every rank returns the
same Dataset; it is one process's, bit for bit; a rank with no cell (one cell, or one series, over several
ranks) takes part; a rank whose fit fails stops every rank in one IOFault.

    python xr_fits.py OUT FORMAT IN [IN ...]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import xarray as xr

import climio
import climio.xr  # noqa: F401 (registers .climio)
from climio.core import mpi
from climio.errors import IOFault
from climio.eva import api

POT = {"tail": 0.02, "return_periods": [5, 20]}
GEV = {"return_periods": [5, 20]}


def same(got: xr.Dataset, want: xr.Dataset) -> None:
    """Identical but for the time of day in ``history``."""
    strip = [ds.assign_attrs(history=ds.attrs["history"].split(": ", 1)[1]) for ds in (got, want)]
    xr.testing.assert_identical(*strip)


def main() -> None:
    out, form, files = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    comm = mpi.world()
    rank = comm.Get_rank()

    def say(text: str) -> None:
        if rank == 0:
            print(text, flush=True)

    with climio.open_mfdataset(files) as ds:
        pot = ds.climio.fit_pot(comm=comm, **POT)
        gev = ds.climio.fit_gev(comm=comm, **GEV)
        corner = ds.isel(rlat=[0], rlon=[0])
        alone = corner.climio.fit_pot(comm=comm, **POT)  # one cell: rank 1 fits nothing
        results: Any = comm.gather((pot, gev, alone), root=0)
        if rank == 0:
            for other in results[1:]:
                for got, want in zip(other, results[0]):
                    xr.testing.assert_identical(got, want)
        say(f"the same on all {comm.Get_size()} ranks")
        if rank == 0:
            same(pot, ds.climio.fit_pot(**POT))
            same(gev, ds.climio.fit_gev(**GEV))
        same(alone, corner.climio.fit_pot(**POT))
        series = ds["pr"].isel(rlat=0, rlon=0)  # no cell dimension: one series, one cell
        same(series.climio.fit_pot(comm=comm, **POT), series.climio.fit_pot(**POT))
        say("one process's result")

        fit_block = api._fit_block
        if rank == 1:
            def failing(block: Any, **kwargs: Any) -> Any:
                raise RuntimeError("injected")
            api._fit_block = failing
        try:
            corner.climio.fit_gev(comm=comm, **GEV)
            raise AssertionError("a rank failed and the others went on")
        except IOFault as err:
            assert str(err) == "rank 1 could not fit its 0 cell(s) from cell 1: RuntimeError: injected", err
        api._fit_block = fit_block
        say("a failure on rank 1 stops every rank")

        if rank == 0:
            pot.to_netcdf(out / "pot.nc", format=form)
            gev.to_netcdf(out / "gev.nc", format=form)


if __name__ == "__main__":
    main()
