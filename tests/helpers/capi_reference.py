"""The fields of examples/write_fields.c and examples/cmaq_mockup.F90 written through the Python API
(ModelOutput), with the same decomposition, strategy and mode, for tests/test_capi.py to compare.

    mpiexec -n N python capi_reference.py write_fields OUT MODE STRATEGY NSTEPS
    mpiexec -n N python capi_reference.py cmaq OUT NXxNYxNLAYxNSPEC PXxPY STRATEGY MODE STEPS
"""

from __future__ import annotations

import sys

import numpy as np
from mpi4py import MPI

from climio.bench.model import local_species
from climio.core import ncio
from climio.model import decomposition as dec
from climio.model.output import Field, ModelOutput


def write_fields(path: str, mode: str, strategy: str, nsteps: int) -> None:
    """As write_fields.c: a 24x36 grid on MPI_Dims_create's process grid (rows along y), halo 2."""
    ny, nx, nlev, halo = 24, 36, 4, 2
    comm = MPI.COMM_WORLD
    rows, cols = MPI.Compute_dims(comm.Get_size(), 2)
    d = dec.blocks((ny, nx), cols, rows, comm.Get_rank(), halo=halo)
    mine = d.box
    y = np.arange(mine.start[0], mine.start[0] + mine.count[0])[:, None]
    x = np.arange(mine.start[1], mine.start[1] + mine.count[1])[None, :]
    fields = [Field("T", levels=nlev, dtype="f4", attrs={"units": "K"}, level_dim="lev"),
              Field("ps", dtype="f8", attrs={"valid_range": np.array([0.0, 1e6])}),
              Field("area", dtype="f8", attrs={"units": "m2"}, records=False)]
    variables = [ncio.Variable("lat", "f8", ("y",), {"units": "degrees_north"}),
                 ncio.Variable("lon", "f8", ("x",), {"units": "degrees_east"}),
                 ncio.Variable("lev", "i4", ("lev",)), ncio.Variable("time_bnds", "f8", ("time", "nv"))]
    with ModelOutput(path, d, fields, comm, mode=mode, strategy=strategy, overwrite=True, dims=("y", "x"),
                     attrs={"title": "climio C API example"}, variables=variables, extra_dims={"nv": 2},
                     time_attrs={"units": "hours since 2016-07-01 00:00:00", "bounds": "time_bnds"}) as out:
        out.write_variable("lat", -90.0 + 180.0 * (np.arange(ny) + 0.5) / ny)
        out.write_variable("lon", 360.0 * np.arange(nx) / nx)
        out.write_variable("lev", 1000 - 250 * np.arange(nlev, dtype="i4"))
        area = np.full(d.local_shape(), -999.0)
        area[d.interior()] = 1e6 + y * nx + x
        out.write_field(None, "area", area)
        for step in range(nsteps):
            out.write_variable("time_bnds", np.array([3.0 * step - 1.5, 3.0 * step + 1.5]), step=step)
            t = np.full(d.local_shape(nlev), -999.0, np.float32)
            ps = np.full(d.local_shape(), -999.0)
            base = step * 1e4 + (y * nx + x)
            t[d.interior(nlev)] = (base[None] + 1e3 * np.arange(nlev)[:, None, None]).astype(np.float32)
            ps[d.interior()] = base + 0.5
            out.write(step, {"T": t, "ps": ps}, time=3.0 * step)


def cmaq(path: str, domain: str, grid: str, strategy: str, mode: str, steps: int) -> None:
    """As cmaq_mockup.F90: climio.bench.model's species values on a px x py grid with a halo of 2."""
    nx, ny, nlay, nspec = (int(n) for n in domain.split("x"))
    px, py = (int(n) for n in grid.split("x"))
    comm = MPI.COMM_WORLD
    d = dec.blocks((ny, nx), px, py, comm.Get_rank(), halo=2)
    conc = local_species(d, nlay, nspec)
    fields = [Field(f"SPEC{s:03d}", levels=nlay, attrs={"units": "ppmV"}, level_dim="LAY") for s in range(nspec)]
    with ModelOutput(path, d, fields, comm, mode=mode, strategy=strategy, overwrite=True, dims=("ROW", "COL"),
                     attrs={"title": "CMAQ mock-up (Python)"}, time_attrs={"units": "s"}) as out:
        for step in range(steps):
            out.write(step, {f.name: conc[s] for s, f in enumerate(fields)}, time=3600.0 * step)


if __name__ == "__main__":
    what, *args = sys.argv[1:]
    if what == "write_fields":
        write_fields(args[0], args[1], args[2], int(args[3]))
    else:
        cmaq(args[0], args[1], args[2], args[3], args[4], int(args[5]))
