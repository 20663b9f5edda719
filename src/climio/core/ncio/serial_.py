"""The serial baseline: rank 0 alone opens the file; blocks travel to it (writes) or from it (reads).

Blocks are sent piece by piece along their first axis (at most ``MESSAGE_BYTES``
each), and rank 0 writes each piece where it belongs as it arrives, so rank 0
never holds more than one piece of another rank's data: the baseline stays
honest (gather + one writer) without needing memory for the whole field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from climio.core import mpi, trace
from climio.core.collective import split
from climio.core.decomp import Hyperslab
from climio.core.ncio import libnetcdf
from climio.core.ncio.classic import ClassicLayout
from climio.core.ncio.modes import Mode
from climio.core.ncio.schema import Schema, Variable
from climio.core.ncio.store import Request, Store, define, schema_of

if TYPE_CHECKING:
    import netCDF4
    from mpi4py import MPI

MESSAGE_BYTES = 64 * 2**20
_META, _DATA = 11, 12


class SerialStore(Store):
    """A file held by rank 0 alone; the other ranks only send or receive blocks. Mode ``serial`` writes CDF-2 so;
    any other mode's format is written so where its parallel library is missing (:func:`modes.writing_mode`)."""

    def __init__(self, dataset: netCDF4.Dataset | None, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._dataset = dataset

    @classmethod
    def create(cls, path: str, temp_path: str, schema: Schema, mode: Mode, comm: MPI.Comm,
               overwrite: bool) -> SerialStore:
        import netCDF4

        dataset = None

        def define_on_root() -> tuple[dict[str, int], ClassicLayout | None]:  # its refusals (a filter this build
            nonlocal dataset  # lacks) reach every rank; a classic file's layout too (stripe alignment)
            dataset = netCDF4.Dataset(temp_path, "w", format=mode.nc_format, clobber=True)
            with trace.phase("define"):
                varids = define(libnetcdf.ncid(dataset), schema, path, mode, collective=False)
            if not mode.format.classic_layout:
                for name, varid in varids.items():  # chunks straight to the file: none kept to write at close
                    libnetcdf.set_var_chunk_cache(libnetcdf.ncid(dataset), varid, 0, f"{path}: variable '{name}'")
                return varids, None
            dataset.sync()
            return varids, ClassicLayout.read(temp_path)

        varids, layout = mpi.agree(comm, define_on_root)
        store = cls(dataset, path, mode, comm, schema, varids=varids, temp_path=temp_path, overwrite=overwrite)
        store.layout = layout
        return store

    @classmethod
    def open(cls, path: str, mode: Mode, comm: MPI.Comm) -> SerialStore:
        import netCDF4

        dataset, described = None, None
        if comm.Get_rank() == 0:
            dataset = netCDF4.Dataset(path, "r")
            described = schema_of(dataset)
        schema, records, varids = comm.bcast(described, root=0)
        return cls(dataset, path, mode, comm, schema, varids=varids, records=records)

    def _put_many(self, requests: list[Request]) -> None:
        comm = self.comm
        todo = [r for r in requests if r.slab.size and r.given]
        if comm.Get_rank() != 0:
            with trace.phase("gather", sum(r.data.nbytes for r in todo)):
                comm.send([(r.var.name, r.slab) for r in todo], dest=0, tag=_META)
                for r in todo:
                    for offset, piece in split(r.slab, r.data.itemsize, MESSAGE_BYTES):
                        comm.Send(r.data[offset:offset + piece.count[0]] if piece.count else r.data,
                                  dest=0, tag=_DATA)
            return
        for r in todo:
            self._put_local(r.var, r.varid, r.slab, r.data)
        for source in range(1, comm.Get_size()):
            for name, slab in comm.recv(source=source, tag=_META):
                var = self.schema.variable(name)
                for _, piece in split(slab, var.numpy_dtype.itemsize, MESSAGE_BYTES):
                    buffer = np.empty(piece.count, var.numpy_dtype)
                    with trace.phase("gather", buffer.nbytes):
                        comm.Recv(buffer, source=source, tag=_DATA)
                    self._put_local(var, self._varids[name], piece, buffer)

    def _put_local(self, var: Variable, varid: int, slab: Hyperslab, data: np.ndarray) -> None:
        assert self._dataset is not None
        with trace.phase("write", data.nbytes):
            libnetcdf.put_vara(libnetcdf.ncid(self._dataset), varid, slab.start, slab.count, data,
                               f"{self.path}: variable '{var.name}'")

    def _get(self, var: Variable, varid: int, slab: Hyperslab, out: np.ndarray) -> None:
        comm = self.comm
        slabs = comm.gather(slab, root=0)
        if comm.Get_rank() != 0:
            if slab.size:
                with trace.phase("scatter", out.nbytes):
                    for offset, piece in split(slab, out.itemsize, MESSAGE_BYTES):
                        comm.Recv(out[offset:offset + piece.count[0]] if piece.count else out, source=0, tag=_DATA)
            return
        assert self._dataset is not None and slabs is not None
        where = f"{self.path}: variable '{var.name}'"
        with trace.phase("read", out.nbytes):
            libnetcdf.get_vara(libnetcdf.ncid(self._dataset), varid, slab.start, slab.count, out, where)
        for target, wanted in enumerate(slabs[1:], start=1):
            if not wanted.size:
                continue
            for _, piece in split(wanted, out.itemsize, MESSAGE_BYTES):
                buffer = np.empty(piece.count, var.numpy_dtype)
                with trace.phase("read", buffer.nbytes):
                    libnetcdf.get_vara(libnetcdf.ncid(self._dataset), varid, piece.start, piece.count, buffer, where)
                with trace.phase("scatter", buffer.nbytes):
                    comm.Send(buffer, dest=target, tag=_DATA)

    def _close_file(self) -> None:
        if self._dataset is not None:
            with trace.phase("close"):
                self._dataset.close()
