"""The C entry points of ``libclimio``: each converts its C arguments (ids, strings, pointers to the model's
arrays) to Python values, calls :mod:`climio.capi.calls` and writes the out-arguments back.

Imported by the embedded interpreter on the library's first call (:mod:`climio.capi.build` bakes the
import into the library); :func:`attach` binds the functions to cffi's ``ffi``. Arrays are viewed in place
(``ffi.buffer``), never copied on the way in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from climio.capi import calls
from climio.model import definition as rules


def attach(ffi: Any) -> None:
    """Define every ``extern "Python"`` function of the library's API on ``ffi``."""

    def text(pointer: Any) -> str:
        return ffi.string(pointer).decode("utf-8", "replace")

    def numbers(pointer: Any, count: int, dtype: np.dtype) -> np.ndarray:
        if count <= 0:
            return np.empty(0, dtype)
        return np.frombuffer(ffi.buffer(pointer, count * dtype.itemsize), dtype)

    def memory(memtype: int, count: int, pointer: Any) -> np.ndarray | None:
        """The model's array in place; None for a type climio does not know (the call refuses it)."""
        return numbers(pointer, count, rules.TYPES[memtype]) if memtype in rules.TYPES else None

    def internal(kind: type, value: BaseException, tb: Any) -> int:
        from mpi4py import MPI

        from climio.core import mpi

        mpi.abort(MPI.COMM_WORLD, f"climio internal error in the C API: {kind.__name__}: {value}", 1)
        return rules.EINTERNAL

    def extern(function: Any) -> Any:
        name = function.__name__.replace("climio_", "climiopy_", 1)  # libclimio.so's climio_* call it
        return ffi.def_extern(name=name, onerror=internal)(function)

    @extern
    def climio_init_intracomm_f(fcomm: int, iosysid: Any) -> int:
        from mpi4py import MPI

        code, iosysid[0] = calls.init_intracomm(MPI.Intracomm.f2py(fcomm))
        return code

    @extern
    def climio_set_error_handling(iosysid: int, method: int) -> int:
        return calls.set_error_handling(iosysid, method)

    @extern
    def climio_finalize(iosysid: int) -> int:
        return calls.finalize(iosysid)

    @extern
    def climio_init_decomp_blocks(iosysid: int, ndims: int, gdimlen: Any, start: Any, count: Any, halo: int,
                                  ioid: Any) -> int:
        long = np.dtype("i8")
        shape = [numbers(p, ndims, long).tolist() for p in (gdimlen, start, count)]
        code, ioid[0] = calls.init_decomp_blocks(iosysid, *shape, halo)
        return code

    @extern
    def climio_init_decomp(iosysid: int, ndims: int, gdimlen: Any, maplen: int, compmap: Any, ioid: Any) -> int:
        long = np.dtype("i8")
        code, ioid[0] = calls.init_decomp(iosysid, numbers(gdimlen, ndims, long).tolist(),
                                          numbers(compmap, maplen, long))
        return code

    @extern
    def climio_free_decomp(iosysid: int, ioid: int) -> int:
        return calls.free_decomp(iosysid, ioid)

    @extern
    def climio_createfile(iosysid: int, ioid: int, ncid: Any, mode: Any, strategy: Any, path: Any,
                          flags: int) -> int:
        code, ncid[0] = calls.createfile(iosysid, ioid, text(mode), text(strategy), text(path), flags)
        return code

    @extern
    def climio_openfile(iosysid: int, ioid: int, ncid: Any, strategy: Any, path: Any) -> int:
        code, ncid[0] = calls.openfile(iosysid, ioid, text(strategy), text(path))
        return code

    @extern
    def climio_def_dim(ncid: int, name: Any, length: int, dimid: Any) -> int:
        code, dimid[0] = calls.def_dim(ncid, text(name), length)
        return code

    @extern
    def climio_def_var(ncid: int, name: Any, xtype: int, ndims: int, dimids: Any, varid: Any) -> int:
        code, varid[0] = calls.def_var(ncid, text(name), xtype, numbers(dimids, ndims, np.dtype("i4")).tolist())
        return code

    @extern
    def climio_def_var_deflate(ncid: int, varid: int, shuffle: int, deflate: int, level: int) -> int:
        return calls.def_var_deflate(ncid, varid, shuffle, deflate, level)

    @extern
    def climio_def_var_reduce(ncid: int, varid: int, op: int, steps: int) -> int:
        return calls.def_var_reduce(ncid, varid, op, steps)

    @extern
    def climio_def_var_quantize(ncid: int, varid: int, quantize_mode: int, nsd: int) -> int:
        return calls.def_var_quantize(ncid, varid, quantize_mode, nsd)

    @extern
    def climio_put_att_text(ncid: int, varid: int, name: Any, value: Any) -> int:
        return calls.put_att(ncid, varid, text(name), text(value))

    @extern
    def climio_put_att_double(ncid: int, varid: int, name: Any, xtype: int, length: int, values: Any) -> int:
        data = numbers(values, length, np.dtype("f8"))
        return calls.put_att(ncid, varid, text(name), data, xtype)

    @extern
    def climio_enddef(ncid: int) -> int:
        return calls.enddef(ncid)

    @extern
    def climio_inq_varid(ncid: int, name: Any, varid: Any) -> int:
        code, varid[0] = calls.inq_varid(ncid, text(name))
        return code

    @extern
    def climio_put_time(ncid: int, frame: int, time: float) -> int:
        return calls.put_time(ncid, frame, time)

    @extern
    def climio_write_darray(ncid: int, varid: int, frame: int, memtype: int, arraylen: int, array: Any) -> int:
        return calls.write_darray(ncid, varid, frame, memtype, memory(memtype, arraylen, array))

    @extern
    def climio_put_var(ncid: int, varid: int, frame: int, memtype: int, length: int, values: Any) -> int:
        return calls.put_var(ncid, varid, frame, memtype, memory(memtype, length, values))

    @extern
    def climio_read_darray(ncid: int, varid: int, frame: int, memtype: int, arraylen: int, array: Any) -> int:
        return calls.read_darray(ncid, varid, frame, memtype, memory(memtype, arraylen, array))

    @extern
    def climio_closefile(ncid: int) -> int:
        return calls.closefile(ncid)

    @extern
    def climio_errmsg(buffer: Any, length: int) -> int:
        message = calls.last_error().encode()[:max(0, length - 1)].decode("utf-8", "ignore").encode()  # whole chars
        if length > 0:
            ffi.memmove(buffer, message + b"\0", len(message) + 1)
        return len(message)
