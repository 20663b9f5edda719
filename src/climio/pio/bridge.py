"""The C entry points that ``libpioc`` calls (``pio_python.h``): each converts its C arguments to Python values,
calls :mod:`climio.pio.calls` and writes the out-arguments back. Arrays are viewed in place, never copied on
the way in. Bound by the embedded interpreter of ``libclimio_py.so`` (:mod:`climio.capi.build`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from climio.pio import calls


def attach(ffi: Any) -> None:
    """Define every ``climiopy_pio_*`` function on ``ffi``."""

    def given(pointer: Any) -> bool:
        return pointer != ffi.NULL

    def text(pointer: Any) -> str:
        return ffi.string(pointer).decode("utf-8", "replace") if given(pointer) else ""

    def put(pointer: Any, value: object) -> None:
        if given(pointer):
            pointer[0] = value

    def put_text(pointer: Any, value: str) -> None:
        if given(pointer):
            data = value.encode()
            ffi.memmove(pointer, data + b"\0", len(data) + 1)

    def numbers(pointer: Any, count: int, dtype: np.dtype | str) -> np.ndarray:
        dtype = np.dtype(dtype)
        if count <= 0 or not given(pointer):
            return np.empty(0, dtype)
        return np.frombuffer(ffi.buffer(ffi.cast("char *", pointer), count * dtype.itemsize), dtype)

    def ints(pointer: Any, count: int) -> list[int] | None:
        return numbers(pointer, count, "i8").tolist() if given(pointer) else None

    def memory(pointer: Any, memtype: int) -> Any:
        """What a call gets to view the caller's memory: ``(own type, count) -> array``, of ``memtype`` (0: the
        variable's or decomposition's own type); None for a type PIO does not have."""
        def view(own: np.dtype, count: int) -> np.ndarray | None:
            dtype = calls.memory_type(own, memtype)
            return None if dtype is None else numbers(pointer, count, dtype)
        return view

    def internal(kind: type, value: BaseException, tb: Any) -> int:
        from mpi4py import MPI

        from climio.core import mpi

        mpi.abort(MPI.COMM_WORLD, f"climio internal error in PIO's C API: {kind.__name__}: {value}", 1)
        return calls.NC_EINTERNAL

    def extern(function: Any) -> Any:
        return ffi.def_extern(name=f"climiopy_pio_{function.__name__}", onerror=internal)(function)

    @extern
    def init(fcomm: int, num_iotasks: int, stride: int, base: int, rearr: int, server_first: int, server_count: int,
             iosysid: Any) -> int:
        """An I/O system in this process (server_first, server_count: the servers' side of the call, unused here:
        libpioc binds the servers' calls instead when the launch has them)."""
        from mpi4py import MPI

        code, iosysid[0] = calls.init(MPI.Intracomm.f2py(fcomm), num_iotasks, stride, base, rearr)
        return code

    @extern
    def free_iosystem(iosysid: int) -> int:
        return calls.free_iosystem(iosysid)

    @extern
    def error_handling(iosysid: int, method: int, old_method: Any) -> int:
        code, old = calls.error_handling(iosysid, method)
        put(old_method, old)
        return code

    @extern
    def numiotasks(iosysid: int, count: Any) -> int:
        code, n = calls.numiotasks(iosysid)
        put(count, n)
        return code

    @extern
    def iotask(iosysid: int, iorank: Any, active: Any) -> int:
        code, task, live = calls.iotask(iosysid)
        put(iorank, task)
        put(active, int(live))
        return code

    @extern
    def deletefile(iosysid: int, path: Any) -> int:
        return calls.deletefile(iosysid, text(path))

    @extern
    def set_hint(iosysid: int, hint: Any, value: Any) -> int:
        return calls.set_hint(iosysid, text(hint), text(value))

    @extern
    def iotype_available(iotype: int) -> int:
        return int(calls.iotype_available(iotype))

    @extern
    def init_decomp(iosysid: int, pio_type: int, ndims: int, gdimlen: Any, maplen: int, compmap: Any, base: int,
                    rearr: int, has_io_blocks: int, ioid: Any) -> int:
        offsets = numbers(compmap, maplen, "i8") - base  # 0-based; a hole is -1 either way
        grid = numbers(gdimlen, ndims, "i4").tolist()
        code, ioid[0] = calls.init_decomp(iosysid, pio_type, grid, offsets, bool(has_io_blocks), rearr)
        return code

    @extern
    def init_decomp_blocks(iosysid: int, pio_type: int, ndims: int, gdimlen: Any, start: Any, count: Any,
                           ioid: Any) -> int:
        grid = numbers(gdimlen, ndims, "i4").tolist()
        code, ioid[0] = calls.init_decomp_blocks(iosysid, pio_type, grid, ints(start, ndims) or [],
                                                 ints(count, ndims) or [])
        return code

    @extern
    def freedecomp(iosysid: int, ioid: int) -> int:
        return calls.freedecomp(iosysid, ioid)

    @extern
    def local_size(ioid: int, size: Any) -> int:
        code, n = calls.local_size(ioid)
        put(size, n)
        return code

    @extern
    def write_nc_decomp(iosysid: int, path: Any, cmode: int, ioid: int, title: Any, history: Any,
                        fortran_order: int) -> int:
        return calls.write_nc_decomp(iosysid, text(path), cmode, ioid, text(title), text(history))

    @extern
    def read_nc_decomp(iosysid: int, path: Any, ioid: Any, fcomm: int, pio_type: int, title: Any, history: Any,
                       fortran_order: Any) -> int:
        code, ioid[0], title_text, history_text, order = calls.read_nc_decomp(iosysid, text(path), pio_type)
        put_text(title, title_text)
        put_text(history, history_text)
        put(fortran_order, order)
        return code

    @extern
    def createfile(iosysid: int, ncid: Any, iotype: int, path: Any, mode: int) -> int:
        code, ncid[0] = calls.createfile(iosysid, iotype, text(path), mode)
        return code

    @extern
    def openfile(iosysid: int, ncid: Any, iotype: Any, path: Any, mode: int, retry: int) -> int:
        code, ncid[0] = calls.openfile(iosysid, iotype[0] if given(iotype) else calls.PNETCDF, text(path), mode)
        return code

    @extern
    def closefile(ncid: int) -> int:
        return calls.closefile(ncid)

    @extern
    def sync(ncid: int) -> int:
        return calls.sync(ncid)

    @extern
    def enddef(ncid: int) -> int:
        return calls.enddef(ncid)

    @extern
    def redef(ncid: int) -> int:
        return calls.redef(ncid)

    @extern
    def set_fill(ncid: int, fill_mode: int, old_mode: Any) -> int:
        code, old = calls.set_fill(ncid, fill_mode)
        put(old_mode, old)
        return code

    @extern
    def file_is_open(ncid: int) -> int:
        return int(calls.file_is_open(ncid))

    @extern
    def inq(ncid: int, ndims: Any, nvars: Any, natts: Any, unlimdim: Any, format_: Any) -> int:
        code, answer = calls.inquire(ncid, calls.inq_numbers)
        if answer is not None:
            for pointer, value in zip((ndims, nvars, natts, unlimdim, format_), answer):
                put(pointer, value)
        return code

    @extern
    def inq_dim(ncid: int, dimid: int, name: Any, length: Any) -> int:
        code, answer = calls.inquire(ncid, lambda f: calls.dim_of(f, dimid))
        if answer is not None:
            put_text(name, answer[0])
            put(length, answer[1])
        return code

    @extern
    def inq_dimid(ncid: int, name: Any, dimid: Any) -> int:
        code, answer = calls.inquire(ncid, lambda f: calls.dimid_of(f, text(name)))
        if answer is not None:
            put(dimid, answer)
        return code

    @extern
    def inq_var(ncid: int, varid: int, name: Any, xtype: Any, ndims: Any, dimids: Any, natts: Any) -> int:
        code, v = calls.inquire(ncid, lambda f: calls.variable_of(f, varid))
        if v is not None:
            put_text(name, v.name)
            put(xtype, calls.xtype_number(v.dtype))
            put(ndims, len(v.dimids))
            if given(dimids):
                for k, d in enumerate(v.dimids):
                    dimids[k] = d
            put(natts, len(v.attrs))
        return code

    @extern
    def inq_varid(ncid: int, name: Any, varid: Any) -> int:
        code, answer = calls.inquire(ncid, lambda f: calls.varid_of(f, text(name)))
        if answer is not None:
            put(varid, answer)
        return code

    @extern
    def inq_var_fill(ncid: int, varid: int, no_fill: Any, fill: Any) -> int:
        code, answer = calls.inquire(ncid, lambda f: calls.var_fill(f, varid))
        if answer is not None:
            put(no_fill, int(answer[0]))
            if given(fill):
                numbers(fill, 1, answer[1].dtype)[:] = answer[1]
        return code

    @extern
    def inq_var_deflate(ncid: int, varid: int, shuffle: Any, deflate: Any, level: Any) -> int:
        code, answer = calls.inquire(ncid, lambda f: calls.deflation(f, varid))
        if answer is not None:
            for pointer, value in zip((shuffle, deflate, level), answer):
                put(pointer, value)
        return code

    @extern
    def inq_var_chunking(ncid: int, varid: int, storage: Any, chunks: Any) -> int:
        code, answer = calls.inquire(ncid, lambda f: calls.chunking(f, varid))
        if answer is not None:
            put(storage, answer[0])
            if given(chunks) and answer[1]:
                numbers(chunks, len(answer[1]), "i8")[:] = answer[1]
        return code

    @extern
    def inq_att(ncid: int, varid: int, name: Any, xtype: Any, length: Any, attid: Any) -> int:
        code, answer = calls.inquire(ncid, lambda f: calls.attribute(f, varid, text(name)))
        if answer is not None:
            put(xtype, answer[1])
            put(length, answer[0].size)
            put(attid, answer[2])
        return code

    @extern
    def inq_attname(ncid: int, varid: int, attnum: int, name: Any) -> int:
        code, answer = calls.inquire(ncid, lambda f: calls.attname(f, varid, attnum))
        if answer is not None:
            put_text(name, answer)
        return code

    @extern
    def rename(ncid: int, what: int, ident: int, name: Any, newname: Any) -> int:
        return calls.rename(ncid, what, ident, text(name), text(newname) if given(newname) else None)

    @extern
    def def_dim(ncid: int, name: Any, length: int, dimid: Any) -> int:
        code, dimid[0] = calls.def_dim(ncid, text(name), length)
        return code

    @extern
    def def_var(ncid: int, name: Any, xtype: int, ndims: int, dimids: Any, varid: Any) -> int:
        code, varid[0] = calls.def_var(ncid, text(name), xtype, numbers(dimids, ndims, "i4").tolist())
        return code

    @extern
    def def_var_fill(ncid: int, varid: int, no_fill: int, fill: Any) -> int:
        value = (lambda dtype: numbers(fill, 1, dtype).copy()) if given(fill) else None
        return calls.def_var_fill(ncid, varid, no_fill, value)

    @extern
    def def_var_deflate(ncid: int, varid: int, shuffle: int, deflate: int, level: int) -> int:
        return calls.def_var_deflate(ncid, varid, shuffle, deflate, level)

    @extern
    def def_var_chunking(ncid: int, varid: int, storage: int, chunks: Any) -> int:
        return calls.def_var_chunking(ncid, varid, storage, ints(chunks, 1024))

    @extern
    def def_var_quantize(ncid: int, varid: int, quantize_mode: int, nsd: int) -> int:
        return calls.def_var_quantize(ncid, varid, quantize_mode, nsd)

    @extern
    def put_att(ncid: int, varid: int, name: Any, xtype: int, length: int, memtype: int, values: Any) -> int:
        return calls.put_att(ncid, varid, text(name), xtype, length, memory(values, memtype))

    @extern
    def get_att(ncid: int, varid: int, name: Any, memtype: int, values: Any) -> int:
        code, answer = calls.get_att(ncid, varid, text(name), memtype)
        if answer is not None and given(values):
            numbers(values, answer.size, answer.dtype)[...] = answer
        return code

    @extern
    def vars(ncid: int, varid: int, write: int, start: Any, count: Any, stride: Any, memtype: int,
             buffer: Any) -> int:
        code, ndims = calls.inquire(ncid, lambda f: len(calls.variable_of(f, varid).dimids))
        if ndims is None:
            return code
        starts = ints(start, ndims) if ndims else ([] if given(start) else None)
        counts = ints(count, ndims) if ndims else ([] if given(count) else None)
        strides = ints(stride, ndims) if ndims else None
        act = calls.put_vars if write else calls.get_vars
        return act(ncid, varid, starts, counts, strides, memory(buffer, memtype))

    @extern
    def setframe(ncid: int, varid: int, frame: int) -> int:
        return calls.setframe(ncid, varid, frame)

    @extern
    def advanceframe(ncid: int, varid: int) -> int:
        return calls.setframe(ncid, varid, None)

    @extern
    def write_darray(ncid: int, nvars: int, varids: Any, ioid: int, arraylen: int, array: Any, frames: Any,
                     fills: Any, memtype: int, own_type: int) -> int:
        def fill_values(dtype: np.dtype) -> list[np.ndarray | None]:
            return calls.split_fills(numbers(fills, nvars, dtype).copy() if given(fills) else None, nvars)
        ids = numbers(varids, nvars, "i4").tolist() if given(varids) else []
        frame_list = numbers(frames, nvars, "i4").tolist() if given(frames) else None
        length = arraylen if arraylen >= 0 else local_length(ioid)
        return calls.write_darray(ncid, ids, ioid, length, memory(array, memtype), frame_list, fill_values,
                                  bool(own_type))

    @extern
    def read_darray(ncid: int, varid: int, ioid: int, arraylen: int, array: Any, frame: int, memtype: int,
                    own_type: int) -> int:
        length = arraylen if arraylen >= 0 else local_length(ioid)
        return calls.read_darray(ncid, varid, ioid, length, memory(array, memtype), None if frame < 0 else frame,
                                 bool(own_type))

    @extern
    def serve(fworld: int, fio_comm: int) -> int:
        """PIO's async I/O tasks: climio's server loop over their communicator until the model frees its I/O
        system. An error of the servers goes to the model's tasks, or, with nobody to tell, ends the job, as under
        ``climio serve``."""
        from mpi4py import MPI

        from climio.core import settings
        from climio.core.targets import discard_pending_outputs
        from climio.errors import ClimioError, IOFault
        from climio.serve import connect, server

        world, comm = MPI.Intracomm.f2py(fworld), MPI.Intracomm.f2py(fio_comm)
        try:
            settings.check_all()  # before the hello, whose answer carries the refusal
            server.serve(comm, world)
        except ClimioError as err:
            discard_pending_outputs()
            fault = isinstance(err, IOFault)
            connect.report(comm, err, 1 if fault else 2, world)
            return calls.NC_EIO if fault else calls.NC_EINVAL
        return calls.NOERR

    def local_length(ioid: int) -> int:
        """A decomposition's local length (0 for a bad id, which the call then refuses on every task)."""
        return calls.local_size(ioid)[1]
