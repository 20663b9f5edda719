"""Parallel reads without a parallel library: every rank opens the file through its own serial netCDF-C handle
and reads its own hyperslabs, with no MPI-IO and no communication.

This is how climio reads where netCDF-C has neither PnetCDF nor parallel HDF5 (the netCDF4 wheels on PyPI):
ranks still read their parts at once, as the many independent readers of a file system do; only writing needs
a parallel library (or rank 0, :mod:`climio.core.ncio.serial_`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from climio.core import mpi, trace
from climio.core.collective import split
from climio.core.decomp import Hyperslab
from climio.core.ncio import libnetcdf
from climio.core.ncio.modes import Mode
from climio.core.ncio.schema import Variable
from climio.core.ncio.store import Request, Store, schema_of
from climio.errors import IOFault

if TYPE_CHECKING:
    import netCDF4
    from mpi4py import MPI

# One netCDF-C request at most (as the parallel stores): larger hyperslabs go in pieces.
REQUEST_BYTES = 2**30
KEPT_BYTES = 2**20


class IndependentStore(Store):
    """A file opened for reading by every rank on its own."""

    def __init__(self, dataset: netCDF4.Dataset, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._dataset = dataset
        self._kept: dict[str, np.ndarray] = {}  # small 1-D variables read whole: coordinates, asked for again

    @classmethod
    def open(cls, path: str, mode: Mode, comm: MPI.Comm, opened: netCDF4.Dataset | None = None) -> IndependentStore:
        """``opened``: this process's handle on the file already (a communicator of one process)."""
        import netCDF4

        if opened is not None:
            schema, records, varids = schema_of(opened)
            return cls(opened, path, mode, comm, schema, varids=varids, records=records)
        described = None
        if comm.Get_rank() == 0:
            dataset = netCDF4.Dataset(path, "r")
            described = schema_of(dataset)
        schema, records, varids = comm.bcast(described, root=0)
        failure = ""
        if comm.Get_rank() != 0:
            try:
                dataset = netCDF4.Dataset(path, "r")
            except OSError as err:  # rank 0 opened it: another node cannot see it the same way
                failure = f"{path}: rank {comm.Get_rank()} cannot open it ({err.strerror or err})"
        mpi.raise_fault(comm, failure)
        return cls(dataset, path, mode, comm, schema, varids=varids, records=records)

    def _put_many(self, requests: list[Request]) -> None:
        raise IOFault(f"{self.path} was opened for reading: cannot write")

    def _get(self, var: Variable, varid: int, slab: Hyperslab, out: np.ndarray) -> None:
        """A small 1-D variable read whole is kept (joining many files reads each file's time coordinate to
        order them, to check them and to find gaps; no other rank takes part, so keeping changes no call)."""
        if len(var.dims) != 1 or out.nbytes > KEPT_BYTES or slab.start != (0,) or \
                slab.count != self.schema.fixed_shape(var, self.records):
            self._get_every(var, varid, slab, 1, out)
            return
        if var.name not in self._kept:
            self._get_every(var, varid, slab, 1, out)
            self._kept[var.name] = out.copy()
        out[...] = self._kept[var.name]

    def _get_every(self, var: Variable, varid: int, sampled: Hyperslab, step: int, out: np.ndarray) -> None:
        """This rank's part, strided (``nc_get_vars``) for a step over 1; no other rank takes part."""
        if not sampled.size:
            return
        stride = (step, *(1,) * (len(sampled.count) - 1))
        where = f"{self.path}: variable '{var.name}'"
        with trace.phase("read", out.nbytes):
            for offset, piece in split(sampled, out.itemsize, REQUEST_BYTES):
                start = (sampled.start[0] + offset * step, *piece.start[1:]) if piece.count else piece.start
                part = out[offset:offset + piece.count[0]] if piece.count else out
                if step == 1:
                    libnetcdf.get_vara(libnetcdf.ncid(self._dataset), varid, start, piece.count, part, where)
                else:
                    libnetcdf.get_vars(libnetcdf.ncid(self._dataset), varid, start, piece.count, stride, part, where)

    def _get_runs(self, var: Variable, varid: int, slabs: list[Hyperslab], outs: list[np.ndarray]) -> None:
        """Each hyperslab as it comes: independent reads need no padding to another rank's count."""
        for slab, out in zip(slabs, outs):
            self._get_every(var, varid, slab, 1, out)

    def _close_file(self) -> None:
        with trace.phase("close"):
            self._dataset.close()
