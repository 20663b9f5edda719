"""Parallel modes (hdf5, cdf2, cdf5): every rank writes and reads its own hyperslab collectively."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.core import trace
from climio.core.decomp import Hyperslab
from climio.core.ncio import libnetcdf
from climio.core.ncio.modes import Mode
from climio.core.ncio.schema import Schema, Variable
from climio.core.ncio.store import Request, Store, define, mpi_info, schema_of

if TYPE_CHECKING:
    import netCDF4
    from mpi4py import MPI


class ParallelStore(Store):
    """A file opened by all ranks of ``comm`` through netCDF-C's MPI-IO path (PnetCDF or HDF5)."""

    def __init__(self, dataset: netCDF4.Dataset, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._dataset = dataset

    @classmethod
    def create(cls, path: str, temp_path: str, schema: Schema, mode: Mode, comm: MPI.Comm,
               hints: Mapping[str, str] | None, overwrite: bool) -> ParallelStore:
        import netCDF4

        dataset = netCDF4.Dataset(temp_path, "w", format=mode.nc_format, parallel=True, comm=comm,
                                  info=mpi_info(hints), clobber=True)
        with trace.phase("define"):
            varids = define(dataset._grpid, schema, path, collective=True, chunked=mode.nc_format == "NETCDF4")
        return cls(dataset, path, mode, comm, schema, varids=varids, temp_path=temp_path, overwrite=overwrite)

    @classmethod
    def open(cls, path: str, mode: Mode, comm: MPI.Comm, hints: Mapping[str, str] | None) -> ParallelStore:
        import netCDF4

        dataset = netCDF4.Dataset(path, "r", parallel=True, comm=comm, info=mpi_info(hints))
        schema, records, varids = schema_of(dataset)
        for varid in varids.values():
            libnetcdf.var_par_access(dataset._grpid, varid, True, path)
        return cls(dataset, path, mode, comm, schema, varids=varids, records=records)

    def _put_many(self, requests: list[Request]) -> None:
        # netCDF-C offers no batched (iput/wait_all) call: one collective call per variable.
        ncid = self._dataset._grpid
        with trace.phase("write", sum(r.data.nbytes for r in requests)):
            for r in requests:
                libnetcdf.put_vara(ncid, r.varid, r.slab.start, r.slab.count, r.data,
                                   f"{self.path}: variable '{r.var.name}'")

    def _get(self, var: Variable, varid: int, slab: Hyperslab, out: np.ndarray) -> None:
        with trace.phase("read", out.nbytes):
            libnetcdf.get_vara(self._dataset._grpid, varid, slab.start, slab.count, out,
                               f"{self.path}: variable '{var.name}'")

    def _close_file(self) -> None:
        with trace.phase("close"):
            self._dataset.close()
