"""An ocean model with land elimination: blocks that hold no ocean point get no rank; their points are
written as _FillValue and read back as fill (NaN with CF on).

    python -c "from examples.ocean_land import ranks_needed; print(ranks_needed())"   # how many ranks
    mpiexec -n 6 python examples/ocean_land.py OUTDIR

The process grid is 3x3 over a (y, x) = (60, 90) basin; the land-only blocks of the 9 are dropped, so the
job runs on the others, each with a halo of 2.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from mpi4py import MPI

from climio.model import decomposition
from climio.model.input import ModelInput
from climio.model.output import Field, ModelOutput

NY, NX, PX, PY, NLEV = 60, 90, 3, 3, 5


def ocean() -> np.ndarray:
    """A basin: a continent in the east and a cap in the north, ocean elsewhere."""
    y, x = np.mgrid[0:NY, 0:NX]
    return ~((x >= 60) & (y < 40) | (y < 20) & (x >= 30))


def ranks_needed() -> int:
    return decomposition.land_block_count(ocean(), PX, PY)


def main(outdir: str) -> None:
    comm = MPI.COMM_WORLD
    d = decomposition.land_blocks(ocean(), PX, PY, comm.Get_rank(), halo=2)  # refuses a wrong rank count
    temp = np.full(d.local_shape(NLEV), np.nan, "f4")  # (levels, y + 4, x + 4): halo'd
    box = d.box
    y, x = np.mgrid[box.start[0]:box.start[0] + box.count[0], box.start[1]:box.start[1] + box.count[1]]
    temp[d.interior(NLEV)] = 15.0 - np.arange(NLEV)[:, None, None] + 0.01 * y
    path = os.path.join(outdir, "ocean.nc")
    with ModelOutput(path, d, [Field("temp", levels=NLEV, attrs={"units": "degC"})], comm, mode="hdf5",
                     strategy="agg", dims=("y", "x")) as out:
        out.write(0, {"temp": temp}, time=0.0)
    with ModelInput(path, d, comm, strategy="direct") as back:
        again = back.read("temp", record=0)  # halo NaN, interior exactly what was written
    assert np.array_equal(again[d.interior(NLEV)], temp[d.interior(NLEV)])
    if comm.Get_rank() == 0:
        print(f"wrote {path} on {comm.Get_size()} ranks ({PX * PY - comm.Get_size()} land blocks eliminated)")


if __name__ == "__main__":
    main(sys.argv[1])
