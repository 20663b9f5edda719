"""libclimio_collectives.so, loaded at ``import climio``: the collective MPI calls a library makes inside its own
calls (parallel HDF5 through netCDF4-python here) reach it, so their waits can yield the core, and are counted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from climio.core import collectives

WRITE = """
import sys
import climio
from climio.core import collectives
import netCDF4
from mpi4py import MPI
before = collectives.calls()
with netCDF4.Dataset(sys.argv[1], "w", parallel=True, comm=MPI.COMM_WORLD, info=MPI.Info()) as ds:
    ds.createDimension("x", 4)
    v = ds.createVariable("v", "f4", ("x",))
    v.set_collective(True)
    v[:] = [1.0, 2.0, 3.0, 4.0]
print(before, collectives.calls())
"""


@pytest.mark.skipif(not os.path.exists(collectives.LIBRARY), reason="the C API (and the library) is not built")
@pytest.mark.parametrize("wait", ["", "spin"])
def test_hdf5s_own_collective_calls_go_through_climios_library(tmp_path: Path, wait: str) -> None:
    env = {**os.environ, "CLIMIO_MPI_WAIT": wait}
    env.pop("LD_PRELOAD", None)
    result = subprocess.run([sys.executable, "-c", WRITE, str(tmp_path / "v.nc")], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    before, after = (int(n) for n in result.stdout.split())
    assert before == 0 and after >= 10, result.stdout  # HDF5's agreements on create, define, write and close
