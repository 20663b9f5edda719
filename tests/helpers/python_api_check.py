"""climio's Python API in whatever environment runs this (tests/test_pip_env.py): ``fit_pot`` on an xarray
Dataset, written to PREFIXpot.nc by rank 0; ``ModelOutput`` in each of MODES with every strategy that applies,
each file read back with ``ModelInput`` and compared with what was written. Prints "MODE STRATEGY ok" per file.

    python python_api_check.py PREFIX SERIES.nc MODE[,MODE...]
"""
import sys
import numpy as np
import xarray as xr
from mpi4py import MPI
from climio.eva import fit_pot
from climio.model import decomposition as dec
from climio.model.output import Field, ModelOutput, applicable_modes
from climio.model.input import ModelInput

comm = MPI.COMM_WORLD
prefix, series, modes = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
res = fit_pot(xr.open_dataset(series), var="pr", return_periods=[20, 100])
if comm.rank == 0:
    res.to_netcdf(prefix + "pot.nc")
ny, nx = 6, 8
d = dec.blocks((ny, nx), comm.size, 1, comm.rank)
local = np.random.default_rng(comm.rank).random(d.local_shape())
for mode in modes:
    for strategy in ("root", "direct", "agg"):
        if mode not in applicable_modes(strategy):
            continue
        path = f"{prefix}model-{mode}-{strategy}.nc"
        with ModelOutput(path, d, [Field("t", dtype="f8")], comm, mode=mode, strategy=strategy, overwrite=True) as out:
            out.write(0, {"t": local}, time=0.0)
        inp = ModelInput(path, d, comm)
        assert np.array_equal(inp.read("t", 0), local), (mode, strategy)
        inp.close()
        if comm.rank == 0:
            print(mode, strategy, "ok")
