"""Parallel modes (hdf5, cdf2, cdf5, ...): every rank writes and reads its own hyperslab collectively.

:func:`store_class` picks the store once, from the mode's format: a classic file (PnetCDF) has a layout fixed
by its header, so disk space is reserved per hyperslab and raw reads go straight through MPI-IO; a netCDF-4
file (parallel HDF5) places its own chunks, so the free space is checked per call instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.core import mpi, trace
from climio.core.collective import matched_pieces, split
from climio.core.decomp import Hyperslab
from climio.core.ncio import libnetcdf
from climio.core.ncio.modes import Mode
from climio.core.ncio.schema import Schema, Variable
from climio.core.ncio.classic import ClassicLayout, set_numrecs
from climio.core.ncio.space import check_room
from climio.core.ncio.store import Request, Store, define, mpi_info, schema_of
from climio.core.ncio.stored import StoredReader, StoredWriter

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

    @classmethod
    def create(cls, path: str, temp_path: str, schema: Schema, mode: Mode, comm: MPI.Comm,
               hints: Mapping[str, str] | None, overwrite: bool, aggregated: bool = False) -> ParallelStore:
        import netCDF4

        dataset = netCDF4.Dataset(temp_path, "w", format=mode.nc_format, parallel=True, comm=comm,
                                  info=mpi_info(hints), clobber=True)
        with trace.phase("define"):
            varids = define(libnetcdf.ncid(dataset), schema, path, mode, collective=True)
        store = store_class(mode)(dataset, path, mode, comm, schema, varids=varids, temp_path=temp_path,
                                  overwrite=overwrite, hints=hints)
        store._created(aggregated)
        return store

    @classmethod
    def open(cls, path: str, mode: Mode, comm: MPI.Comm, hints: Mapping[str, str] | None) -> ParallelStore:
        import netCDF4

        dataset = netCDF4.Dataset(path, "r", parallel=True, comm=comm, info=mpi_info(hints))
        schema, records, varids = schema_of(dataset)
        for varid in varids.values():
            libnetcdf.var_par_access(libnetcdf.ncid(dataset), varid, True, path)
        return store_class(mode)(dataset, path, mode, comm, schema, varids=varids, records=records, hints=hints)

    def _created(self, aggregated: bool) -> None:
        """What a store of this kind prepares once its new file is defined (collective)."""

    def _room(self, requests: list[Request]) -> None:
        """Make sure the file system takes this call's writes before any rank starts them (collective)."""
        check_room(self.comm, self.working_path, sum(r.data.nbytes for r in requests), self.path)

    def _put_many(self, requests: list[Request]) -> None:
        ncid = libnetcdf.ncid(self._dataset)
        plans = matched_pieces(self.comm, [r.slab for r in requests], [r.data.itemsize for r in requests],
                               REQUEST_BYTES)
        self._room(requests)
        with trace.phase("write", sum(r.data.nbytes for r in requests)):
            for r, plan in zip(requests, plans):
                for offset, piece in plan:
                    data = r.data[offset:offset + piece.count[0]] if piece.count else r.data
                    put = libnetcdf.put_vara if data.flags.c_contiguous else libnetcdf.put_varm
                    put(ncid, r.varid, piece.start, piece.count, data, f"{self.path}: variable '{r.var.name}'")

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
                    self._read_stored(var, Hyperslab(start, piece.count), part, step)
                elif step == 1:
                    libnetcdf.get_vara(libnetcdf.ncid(self._dataset), varid, start, piece.count, part, where)
                else:
                    libnetcdf.get_vars(libnetcdf.ncid(self._dataset), varid, start, piece.count, stride, part,
                                       where)

    def _read_stored(self, var: Variable, slab: Hyperslab, out: np.ndarray, step: int) -> None:
        raise NotImplementedError("only a classic file is read in its stored byte order")

    def _read_each(self, ncid: int, var: Variable, varid: int, slabs: list[Hyperslab],
                   outs: list[np.ndarray]) -> None:
        """One independent read per hyperslab through the handle ``ncid``, in pieces the libraries take."""
        where = f"{self.path}: variable '{var.name}'"
        with trace.phase("read", sum(out.nbytes for out in outs)):
            for slab, out in zip(slabs, outs):
                for offset, piece in split(slab, out.itemsize, REQUEST_BYTES) if slab.size else ():
                    libnetcdf.get_vara(ncid, varid, piece.start, piece.count,
                                       out[offset:offset + piece.count[0]] if piece.count else out, where)

    def _close_file(self) -> None:
        with trace.phase("close"):
            self._close_handles()
            if self._dataset is not None:
                self._dataset.close()

    def _close_handles(self) -> None:
        """Close what a store of this kind opened besides the library's handle."""


class ClassicStore(ParallelStore):
    """A CDF-1/2/5 file through PnetCDF: its header fixes where every value lies. A new file's header is
    PnetCDF's; its data are climio's own (:class:`~climio.core.ncio.stored.StoredWriter`), a whole call in one
    request, and read back the same way while it is being written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._own_reader: netCDF4.Dataset | None = None
        self._stored_reader: StoredReader | None = None
        self._writer: StoredWriter | None = None  # a file being written

    def _created(self, aggregated: bool) -> None:
        """PnetCDF wrote the header at enddef: close it, and write the data through climio's own handles."""
        working = self.working_path
        self._dataset.close()
        self._dataset = None
        self.layout = mpi.agree(self.comm, lambda: ClassicLayout.read(working))
        self._writer = StoredWriter(working, self.comm, mpi_info(self._hints), self.layout, self._shapes(),
                                    independent=aggregated)

    def _shapes(self) -> dict[str, tuple[int, ...]]:
        return {v.name: self.schema.fixed_shape(v, self.records) for v in self.schema.variables}

    def _put_many(self, requests: list[Request]) -> None:
        assert self._writer is not None
        self._writer.write([(r.var, r.slab, r.data) for r in requests if r.given], self.path)
        self.records = max(self.records, self._writer.records)

    def _convert(self, var: Variable, data: np.ndarray) -> np.ndarray:
        """climio's writer takes a strided array of the variable's type as it is, and a C-contiguous one in the
        file's byte order (:meth:`write_order`) is written from where it is."""
        if (data.dtype == var.numpy_dtype and data.size  # an axis of length 1 (a record's) may have any stride
                and all(step > 0 and step % data.itemsize == 0 for step, n in zip(data.strides, data.shape) if n > 1)):
            return data
        if data.dtype == self.write_order(var) and data.flags.c_contiguous:
            return data
        return super()._convert(var, data)

    def write_order(self, var: Variable) -> np.dtype:
        """Classic files store big-endian values: data given so are written without a pass of their own."""
        return var.numpy_dtype.newbyteorder(">")

    def stored_dtype(self, var: Variable) -> np.dtype:
        """Classic files store big-endian values, and MPI-IO can read them as they are (from a file opened
        for reading: a file being written may still have data in the library's buffers)."""
        return var.numpy_dtype if self.writable else var.numpy_dtype.newbyteorder(">")

    def _get_every(self, var: Variable, varid: int, sampled: Hyperslab, step: int, out: np.ndarray) -> None:
        """A file being written is read back as climio wrote it (its header does not count the records yet)."""
        if not self.writable:
            super()._get_every(var, varid, sampled, step, out)
            return
        stored = np.empty(out.shape, var.numpy_dtype.newbyteorder(">"))
        with trace.phase("read", out.nbytes):
            self._read_stored(var, sampled, stored, step)
        out[...] = stored

    def _read_stored(self, var: Variable, slab: Hyperslab, out: np.ndarray, step: int) -> None:
        if self._stored_reader is None:
            assert self.layout is not None
            self._stored_reader = StoredReader(self.working_path, self.comm, mpi_info(self._hints), self.layout,
                                               self._shapes())
        self._stored_reader.read(var, slab, out, step)

    def _get_runs(self, var: Variable, varid: int, slabs: list[Hyperslab], outs: list[np.ndarray]) -> None:
        """Independent reads through this rank's own netCDF-C handle: small independent reads cost about a
        third of going through MPI-IO, and no rank waits for another's count of runs. A file being written is
        read back collectively, as climio wrote it."""
        if self.writable:
            Store._get_runs(self, var, varid, slabs, outs)
            return
        if self._own_reader is None:
            import netCDF4

            self._own_reader = netCDF4.Dataset(self.working_path, "r")
        self._read_each(libnetcdf.ncid(self._own_reader), var, varid, slabs, outs)

    def _close_handles(self) -> None:
        for handle in (self._own_reader, self._stored_reader):
            if handle is not None:
                handle.close()
        if self._writer is not None:
            records = self._writer.close()
            working = self.working_path
            mpi.agree(self.comm, lambda: set_numrecs(working, records))


class HDF5Store(ParallelStore):
    """A netCDF-4 file through parallel HDF5, which places its own chunks."""

    def _get_runs(self, var: Variable, varid: int, slabs: list[Hyperslab], outs: list[np.ndarray]) -> None:
        """Independent reads on the MPI-IO handle (HDF5 refuses a second handle on an open file), except where
        netCDF-C needs every rank in the call: a record variable (netCDF-C 4.9 agrees on the unlimited length
        inside the read) or a compressed one; those take the padded collective path."""
        if self.schema.is_record(var):
            super()._get_runs(var, varid, slabs, outs)
            return
        ncid, where = libnetcdf.ncid(self._dataset), f"{self.path}: variable '{var.name}'"
        try:
            libnetcdf.var_par_access(ncid, varid, False, where)
        except libnetcdf.NetCDFError:  # a compressed variable: parallel HDF5 reads it collectively only
            super()._get_runs(var, varid, slabs, outs)
            return
        self._read_each(ncid, var, varid, slabs, outs)
        libnetcdf.var_par_access(ncid, varid, True, where)


def store_class(mode: Mode) -> type[ParallelStore]:
    """The store that writes and reads ``mode``'s format in parallel."""
    return ClassicStore if mode.format.classic_layout else HDF5Store
