"""Thin calls into netCDF-C, on the very library netCDF4-python loaded.

Why not only netCDF4-python: (1) its slice assignment skips the C call when a
rank's slice is empty, so a rank that owns nothing never joins the collective
write and the job hangs; (2) for classic files it leaves and re-enters define
mode around every definition, where PnetCDF should leave define mode once;
(3) ``nc_get_vara`` into a preallocated array avoids masked-array copies. Files
are still created, opened and closed by netCDF4-python, which owns the MPI
communicator handling; this module only takes the ``ncid`` it returns.
"""

from __future__ import annotations

import ctypes
import functools
import os

from typing import Any

import numpy as np

from climio.errors import ClimioError

NC_GLOBAL = -1
NC_UNLIMITED = 0
NC_NOFILL = 0x100
NC_INDEPENDENT = 0
NC_COLLECTIVE = 1
NC_STRING = 12
NC_CHUNKED = 0

NC_TYPES = {
    np.dtype("i1"): 1, np.dtype("i2"): 3, np.dtype("i4"): 4, np.dtype("f4"): 5, np.dtype("f8"): 6,
    np.dtype("u1"): 7, np.dtype("u2"): 8, np.dtype("u4"): 9, np.dtype("i8"): 10, np.dtype("u8"): 11,
}
# Variable types beyond attributes' numeric ones: NC_CHAR and NC_STRING (see schema.TEXT_TYPES).
NC_VAR_TYPES = {**NC_TYPES, np.dtype("S1"): 2, np.dtype("O"): 12}

_size_t = ctypes.c_size_t


NC_EINVAL = -36


class NetCDFError(RuntimeError):
    """A netCDF-C call failed; the message names the call, file and variable, ``status`` is netCDF's code."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@functools.cache
def _loaded_library(prefix: str) -> ctypes.CDLL:
    """The shared library named ``prefix*`` that this process already loaded."""
    import importlib

    importlib.import_module("netCDF4")  # loads libnetcdf and, through it, libpnetcdf

    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if os.path.basename(path).startswith(prefix) and ".so" in path:
                return ctypes.CDLL(path)
    raise ClimioError(f"cannot find {prefix} loaded by netCDF4-python; reinstall with make install")


@functools.cache
def lib() -> ctypes.CDLL:
    """netCDF-C, with the return types of its string functions declared (once)."""
    nc = _loaded_library("libnetcdf")
    nc.nc_strerror.restype = ctypes.c_char_p
    nc.nc_inq_libvers.restype = ctypes.c_char_p
    return nc


def check(status: int, call: str, where: str) -> None:
    """Raise NetCDFError for a non-zero netCDF status: the one choke point for C errors."""
    if status != 0:
        message = lib().nc_strerror(status).decode(errors="replace")
        raise NetCDFError(f"{where}: {call} failed: {message} (status {status})", status)


def netcdf_version() -> str:
    return lib().nc_inq_libvers().decode().split()[0]


def pnetcdf_version() -> str | None:
    """PnetCDF's version, or None when netCDF-C was built without it."""
    try:
        pnc = _loaded_library("libpnetcdf")
    except ClimioError:
        return None
    pnc.ncmpi_inq_libvers.restype = ctypes.c_char_p
    return pnc.ncmpi_inq_libvers().decode().split()[0]


def ncid(dataset: Any) -> int:
    """The netCDF-C id of a netCDF4-python Dataset or group: the one place climio reads the binding's private
    handle, to make the calls it does not offer (collective empty requests, one nc_enddef, no masked copies)."""
    return int(dataset._grpid)


def varid(variable: Any) -> int:
    """The netCDF-C id of a netCDF4-python Variable."""
    return int(variable._varid)


def _sizes(values: tuple[int, ...]) -> ctypes.Array:
    return (_size_t * max(len(values), 1))(*values)


def set_nofill(ncid: int, where: str) -> None:
    old = ctypes.c_int()
    check(lib().nc_set_fill(ncid, NC_NOFILL, ctypes.byref(old)), "nc_set_fill", where)


def fill_var(ncid: int, varid: int, where: str) -> None:
    """Values of the variable never written read as its fill value (netCDF-4: HDF5's fill; in a file made
    without fill values)."""
    check(lib().nc_def_var_fill(ncid, varid, 0, None), "nc_def_var_fill", where)


def def_dim(ncid: int, name: str, length: int | None, where: str) -> int:
    dimid = ctypes.c_int()
    size = NC_UNLIMITED if length is None else length
    check(lib().nc_def_dim(ncid, name.encode(), _size_t(size), ctypes.byref(dimid)), "nc_def_dim", where)
    return dimid.value


def def_var(ncid: int, name: str, dtype: np.dtype, dimids: list[int], where: str) -> int:
    varid = ctypes.c_int()
    ids = (ctypes.c_int * max(len(dimids), 1))(*dimids)
    check(lib().nc_def_var(ncid, name.encode(), NC_VAR_TYPES[dtype], len(dimids), ids, ctypes.byref(varid)),
          "nc_def_var", where)
    return varid.value


def def_var_chunking(ncid: int, varid: int, chunks: tuple[int, ...], where: str) -> None:
    check(lib().nc_def_var_chunking(ncid, varid, NC_CHUNKED, _sizes(chunks)), "nc_def_var_chunking", where)


def set_var_chunk_cache(ncid: int, varid: int, nbytes: int, where: str) -> None:
    """A netCDF-4 variable's chunk cache: ``nbytes`` (0: every chunk goes to the file when written)."""
    check(lib().nc_set_var_chunk_cache(ncid, varid, _size_t(nbytes), _size_t(0), ctypes.c_float(0.75)),
          "nc_set_var_chunk_cache", where)


def def_var_deflate(ncid: int, varid: int, shuffle: bool, level: int, where: str) -> None:
    check(lib().nc_def_var_deflate(ncid, varid, int(shuffle), int(level > 0), level), "nc_def_var_deflate", where)


def def_var_quantize(ncid: int, varid: int, mode: int, keep: int, where: str) -> None:
    check(lib().nc_def_var_quantize(ncid, varid, mode, keep), "nc_def_var_quantize", where)


def def_var_fletcher32(ncid: int, varid: int, where: str) -> None:
    check(lib().nc_def_var_fletcher32(ncid, varid, 1), "nc_def_var_fletcher32", where)


def def_var_szip(ncid: int, varid: int, options_mask: int, pixels_per_block: int, where: str) -> None:
    check(lib().nc_def_var_szip(ncid, varid, options_mask, pixels_per_block), "nc_def_var_szip", where)


def def_var_filter(ncid: int, varid: int, filter_id: int, params: tuple[int, ...], where: str) -> None:
    """Add HDF5 filter ``filter_id`` with its unsigned-int parameters to the variable's pipeline."""
    values = (ctypes.c_uint * max(len(params), 1))(*params)
    check(lib().nc_def_var_filter(ncid, varid, ctypes.c_uint(filter_id), _size_t(len(params)), values),
          "nc_def_var_filter", where)


def var_filters(ncid: int, varid: int) -> list[tuple[int, tuple[int, ...]]]:
    """A netCDF-4 variable's HDF5 filter pipeline in order: (filter id, parameters) per filter."""
    count = _size_t()
    check(lib().nc_inq_var_filter_ids(ncid, varid, ctypes.byref(count), None), "nc_inq_var_filter_ids", "")
    ids = (ctypes.c_uint * max(count.value, 1))()
    check(lib().nc_inq_var_filter_ids(ncid, varid, ctypes.byref(count), ids), "nc_inq_var_filter_ids", "")
    out = []
    for ident in ids[:count.value]:
        nparams = _size_t()
        check(lib().nc_inq_var_filter_info(ncid, varid, ctypes.c_uint(ident), ctypes.byref(nparams), None),
              "nc_inq_var_filter_info", "")
        params = (ctypes.c_uint * max(nparams.value, 1))()
        check(lib().nc_inq_var_filter_info(ncid, varid, ctypes.c_uint(ident), ctypes.byref(nparams), params),
              "nc_inq_var_filter_info", "")
        out.append((int(ident), tuple(int(p) for p in params[:nparams.value])))
    return out


def filter_available(ncid: int, filter_id: int) -> bool:
    """Whether the netCDF-C build can apply HDF5 filter ``filter_id`` (deflate 1, szip 4, bzip2 307, zstd
    32015, ...) to a variable of the open netCDF-4 file ``ncid``."""
    return lib().nc_inq_filter_avail(ncid, ctypes.c_uint(filter_id)) == 0


def put_att(ncid: int, varid: int, name: str, value: str | np.ndarray, where: str) -> None:
    """Write one attribute: text for str or an array of chars (a char variable's _FillValue, as its bytes), else a
    1-d array of its numeric type."""
    if isinstance(value, str) or value.dtype.kind == "S":
        raw = value.encode() if isinstance(value, str) else value.tobytes()
        check(lib().nc_put_att_text(ncid, varid, name.encode(), _size_t(len(raw)), raw), "nc_put_att_text", where)
        return
    if value.dtype not in NC_TYPES:
        raise ClimioError(f"{where}: attribute '{name}' has type {value.dtype}, which netCDF cannot store")
    check(lib().nc_put_att(ncid, varid, name.encode(), NC_TYPES[value.dtype], _size_t(value.size),
                           value.ctypes.data_as(ctypes.c_void_p)), "nc_put_att", where)


def put_att_strings(ncid: int, varid: int, name: str, values: list[str], where: str) -> None:
    """Write a netCDF-4 string (NC_STRING) attribute of one or more strings."""
    array = (ctypes.c_char_p * len(values))(*(v.encode() for v in values))
    check(lib().nc_put_att_string(ncid, varid, name.encode(), _size_t(len(values)), array), "nc_put_att_string",
          where)


def att_type(ncid: int, varid: int, name: str) -> int:
    """An attribute's netCDF type (NC_CHAR 2, NC_STRING 12, ...), or 0 if it cannot be asked."""
    xtype = ctypes.c_int()
    return xtype.value if lib().nc_inq_atttype(ncid, varid, name.encode(), ctypes.byref(xtype)) == 0 else 0


def var_par_access(ncid: int, varid: int, collective: bool, where: str) -> None:
    mode = NC_COLLECTIVE if collective else NC_INDEPENDENT
    check(lib().nc_var_par_access(ncid, varid, mode), "nc_var_par_access", where)


def enddef(ncid: int, where: str) -> None:
    check(lib().nc_enddef(ncid), "nc_enddef", where)


def put_vara(ncid: int, varid: int, start: tuple[int, ...], count: tuple[int, ...],
             data: np.ndarray, where: str) -> None:
    """Write a hyperslab from a C-contiguous array of the variable's type (count may be 0)."""
    check(lib().nc_put_vara(ncid, varid, _sizes(start), _sizes(count), data.ctypes.data_as(ctypes.c_void_p)),
          "nc_put_vara", where)


def put_varm(ncid: int, varid: int, start: tuple[int, ...], count: tuple[int, ...],
             data: np.ndarray, where: str) -> None:
    """Write a hyperslab from a strided array (e.g. a block inside its halo) without copying it first.

    The array's strides become netCDF's ``imap``; PnetCDF turns it into an MPI datatype
    and packs while it byte-swaps, the copy it makes anyway.
    """
    imap = (ctypes.c_ssize_t * max(data.ndim, 1))(*(step // data.itemsize for step in data.strides))
    check(lib().nc_put_varm(ncid, varid, _sizes(start), _sizes(count), None, imap,
                            data.ctypes.data_as(ctypes.c_void_p)), "nc_put_varm", where)


def get_vars(ncid: int, varid: int, start: tuple[int, ...], count: tuple[int, ...], stride: tuple[int, ...],
             out: np.ndarray, where: str) -> None:
    """Read every ``stride``-th element from ``start``, ``count`` of them per dimension, into a C-contiguous array."""
    strides = (ctypes.c_ssize_t * max(len(stride), 1))(*stride)
    check(lib().nc_get_vars(ncid, varid, _sizes(start), _sizes(count), strides,
                            out.ctypes.data_as(ctypes.c_void_p)), "nc_get_vars", where)


def get_vara(ncid: int, varid: int, start: tuple[int, ...], count: tuple[int, ...],
             out: np.ndarray, where: str) -> None:
    """Read a hyperslab into a preallocated C-contiguous array (count may be 0)."""
    check(lib().nc_get_vara(ncid, varid, _sizes(start), _sizes(count), out.ctypes.data_as(ctypes.c_void_p)),
          "nc_get_vara", where)
