"""Parallel modes (hdf5, cdf2, cdf5): every rank writes and reads its own hyperslab collectively."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.core import trace
from climio.core.collective import matched_pieces, split
from climio.core.decomp import Hyperslab
from climio.core.ncio import libnetcdf
from climio.core.ncio.modes import Mode
from climio.core.ncio.schema import Schema, Variable
from climio.core.ncio.space import Reserver, check_room, extent
from climio.core.ncio.store import Request, Store, define, mpi_info, schema_of
from climio.core.ncio.stored import StoredReader

if TYPE_CHECKING:
    import netCDF4
    from mpi4py import MPI

# PnetCDF (1.12) refuses one request over INT_MAX bytes per process, and HDF5 1.10's
# MPI-IO driver has the same 2 GiB limit: larger hyperslabs go in pieces of 1 GiB.
REQUEST_BYTES = 2**30


class ParallelStore(Store):
    """A file opened by all ranks of ``comm`` through netCDF-C's MPI-IO path (PnetCDF or HDF5)."""

    def __init__(self, dataset: netCDF4.Dataset, *args: Any, hints: Mapping[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._dataset = dataset
        self._hints = hints
        self._own_reader: netCDF4.Dataset | None = None
        self._stored_reader: StoredReader | None = None
        self._reserver: Reserver | None = None  # a classic file being written: disk space before each write

    @classmethod
    def create(cls, path: str, temp_path: str, schema: Schema, mode: Mode, comm: MPI.Comm,
               hints: Mapping[str, str] | None, overwrite: bool) -> ParallelStore:
        import netCDF4

        dataset = netCDF4.Dataset(temp_path, "w", format=mode.nc_format, parallel=True, comm=comm,
                                  info=mpi_info(hints), clobber=True)
        with trace.phase("define"):
            varids = define(dataset._grpid, schema, path, mode, collective=True)
        store = cls(dataset, path, mode, comm, schema, varids=varids, temp_path=temp_path, overwrite=overwrite)
        if mode.nc_format.startswith("NETCDF3"):
            store._reserver = Reserver(temp_path, comm)
        return store

    @classmethod
    def open(cls, path: str, mode: Mode, comm: MPI.Comm, hints: Mapping[str, str] | None) -> ParallelStore:
        import netCDF4

        dataset = netCDF4.Dataset(path, "r", parallel=True, comm=comm, info=mpi_info(hints))
        schema, records, varids = schema_of(dataset)
        for varid in varids.values():
            libnetcdf.var_par_access(dataset._grpid, varid, True, path)
        return cls(dataset, path, mode, comm, schema, varids=varids, records=records, hints=hints)

    def _put_many(self, requests: list[Request]) -> None:
        ncid = self._dataset._grpid
        plans = matched_pieces(self.comm, [r.slab for r in requests], [r.data.itemsize for r in requests],
                               REQUEST_BYTES)
        if self._reserver is not None:
            self._reserve(requests)
        else:
            check_room(self.comm, self.working_path, sum(r.data.nbytes for r in requests), self.path)
        with trace.phase("write", sum(r.data.nbytes for r in requests)):
            for r, plan in zip(requests, plans):
                for offset, piece in plan:
                    data = r.data[offset:offset + piece.count[0]] if piece.count else r.data
                    put = libnetcdf.put_vara if data.flags.c_contiguous else libnetcdf.put_varm
                    put(ncid, r.varid, piece.start, piece.count, data, f"{self.path}: variable '{r.var.name}'")

    def _reserve(self, requests: list[Request]) -> None:
        """The blocks this rank's hyperslabs will fill, before the collective writes (collective)."""
        assert self._reserver is not None
        ranges = []
        for r in requests:
            if r.slab.size:
                shape = self.schema.fixed_shape(r.var, 0)
                ranges.append(extent(self._reserver.offsets[r.var.name], self._reserver.record_size, shape,
                                     self.schema.is_record(r.var), r.data.itemsize, r.slab))
        self._reserver.reserve(ranges, self.path)

    def _convert(self, var: Variable, data: np.ndarray) -> np.ndarray:
        """Classic formats (PnetCDF) take a strided array of the variable's type as it is (put_varm)."""
        if (self.data_model.startswith("NETCDF3") and data.dtype == var.numpy_dtype and data.size
                and all(step > 0 and step % data.itemsize == 0 for step in data.strides)):
            return data
        return super()._convert(var, data)

    def stored_dtype(self, var: Variable) -> np.dtype:
        """Classic files store big-endian values, and MPI-IO can read them as they are (from a file opened
        for reading: a file being written may still have data in the library's buffers)."""
        classic = self.data_model.startswith("NETCDF3") and not self.writable
        return var.numpy_dtype.newbyteorder(">") if classic else var.numpy_dtype

    def _get(self, var: Variable, varid: int, slab: Hyperslab, out: np.ndarray) -> None:
        self._get_every(var, varid, slab, 1, out)

    def _get_every(self, var: Variable, varid: int, sampled: Hyperslab, step: int, out: np.ndarray) -> None:
        """One collective request per piece: strided (``nc_get_vars``) for a step over 1, and straight
        through MPI-IO when ``out`` asks for the file's own byte order."""
        (plan,) = matched_pieces(self.comm, [sampled], [out.itemsize], REQUEST_BYTES)
        stride = (step, *(1,) * (len(sampled.count) - 1))
        where = f"{self.path}: variable '{var.name}'"
        with trace.phase("read", out.nbytes):
            for offset, piece in plan:
                start = (sampled.start[0] + offset * step, *piece.start[1:]) if piece.size and piece.count else piece.start
                part = out[offset:offset + piece.count[0]] if piece.count else out
                if not out.dtype.isnative:
                    self._stored().read(var, Hyperslab(start, piece.count), part, step)
                elif step == 1:
                    libnetcdf.get_vara(self._dataset._grpid, varid, start, piece.count, part, where)
                else:
                    libnetcdf.get_vars(self._dataset._grpid, varid, start, piece.count, stride, part, where)

    def _stored(self) -> StoredReader:
        if self._stored_reader is None:
            shapes = {v.name: self.schema.fixed_shape(v, self.records) for v in self.schema.variables}
            records = {v.name for v in self.schema.variables if self.schema.is_record(v)}
            self._stored_reader = StoredReader(self.path, self.comm, mpi_info(self._hints), records, shapes)
        return self._stored_reader

    def _get_runs(self, var: Variable, varid: int, slabs: list[Hyperslab], outs: list[np.ndarray]) -> None:
        """Independent reads, one per hyperslab: no rank waits for another's count of runs.

        A classic-format file (CDF-1/2/5) is read through this rank's own netCDF-C
        handle: small independent reads cost about a third of going through MPI-IO.
        netCDF-4 files keep the MPI-IO handle in independent mode (HDF5 would refuse
        a second handle on an open file), except where netCDF-C needs every rank in
        the call: a record variable (netCDF-C 4.9 agrees on the unlimited length
        inside the read) or a compressed one; those take the padded collective path.
        """
        where = f"{self.path}: variable '{var.name}'"
        classic = self.data_model.startswith("NETCDF3")
        if not classic and self.schema.is_record(var):
            super()._get_runs(var, varid, slabs, outs)  # netCDF-C joins every rank in a record variable's read
            return
        ncid = self._reader()._grpid if classic else self._dataset._grpid
        if not classic:
            try:
                libnetcdf.var_par_access(ncid, varid, False, where)
            except libnetcdf.NetCDFError:  # a compressed variable: parallel HDF5 reads it collectively only
                super()._get_runs(var, varid, slabs, outs)
                return
        with trace.phase("read", sum(out.nbytes for out in outs)):
            for slab, out in zip(slabs, outs):
                for offset, piece in split(slab, out.itemsize, REQUEST_BYTES) if slab.size else ():
                    libnetcdf.get_vara(ncid, varid, piece.start, piece.count,
                                       out[offset:offset + piece.count[0]] if piece.count else out, where)
        if not classic:
            libnetcdf.var_par_access(ncid, varid, True, where)

    def _reader(self) -> netCDF4.Dataset:
        import netCDF4

        if self._own_reader is None:
            self._own_reader = netCDF4.Dataset(self.path, "r")
        return self._own_reader

    def _close_file(self) -> None:
        with trace.phase("close"):
            if self._own_reader is not None:
                self._own_reader.close()
            if self._stored_reader is not None:
                self._stored_reader.close()
            if self._reserver is not None:
                self._reserver.close()
            self._dataset.close()
