"""An MPAS-like model on an unstructured mesh: read its restart into a cell decomposition with ghost cells,
step, and write history files.

    mpiexec -n 3 python examples/mpas_like.py OUTDIR

The mesh is a ring of cells with a chord per cell (each cell has 3 neighbours), partitioned as METIS would
be asked to (here: contiguous arcs); each rank computes its own cells and keeps two rings of ghost cells.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from mpi4py import MPI

from climio.model import decomposition
from climio.model.input import ModelInput
from climio.model.output import Field, ModelOutput

NCELLS, NLEV = 2562, 10


def mesh() -> tuple[np.ndarray, np.ndarray]:
    """cellsOnCell (0-based, -1 padding) and an owner rank per cell (the graph.info.part.N file's content)."""
    i = np.arange(NCELLS)
    cells_on_cell = np.stack([(i - 1) % NCELLS, (i + 1) % NCELLS, (i + NCELLS // 2) % NCELLS,
                              np.full(NCELLS, -1)], axis=1)
    owner = i * MPI.COMM_WORLD.Get_size() // NCELLS
    return cells_on_cell, owner


def main(outdir: str) -> None:
    comm = MPI.COMM_WORLD
    cells_on_cell, owner = mesh()
    # owned cells in mesh order, then two rings of ghost cells: local arrays are (levels, owned + ghosts)
    d = decomposition.cells(owner, comm.Get_rank(), nranks=comm.Get_size(), neighbours=cells_on_cell, layers=2)
    fields = [Field("theta", levels=NLEV, attrs={"units": "K"}), Field("surface_pressure", attrs={"units": "Pa"})]

    restart = os.path.join(outdir, "restart.nc")
    if not os.path.exists(restart):  # the initial state, as a previous run would have left it
        with ModelOutput(restart, d, fields, comm, mode="cdf5", strategy="agg", dims=("nCells",)) as out:
            cells = d.offsets
            theta0 = 280.0 + np.arange(NLEV)[:, None] + 0.001 * cells[None, :]
            out.write(0, {"theta": np.pad(theta0, ((0, 0), (0, d.ghost_offsets.size))).astype("f4"),
                          "surface_pressure": np.pad(1e5 + cells, (0, d.ghost_offsets.size)).astype("f4")},
                      time=0.0)

    with ModelInput(restart, d, comm, strategy="agg") as state:  # ghosts are filled from the file too
        theta = state.read("theta", record=0)
        ps = state.read("surface_pressure", record=0)

    with ModelOutput(os.path.join(outdir, "history.nc"), d, fields, comm, mode="cdf5", strategy="auto",
                     dims=("nCells",)) as history:
        for step in range(3):
            theta += 0.5  # the model's physics, on owned and ghost cells alike
            history.write(step, {"theta": theta, "surface_pressure": ps}, time=600.0 * (step + 1))
    if comm.Get_rank() == 0:
        print(f"wrote {outdir}/history.nc: {NCELLS} cells x {NLEV} levels x 3 steps on {comm.Get_size()} ranks")


if __name__ == "__main__":
    main(sys.argv[1])
