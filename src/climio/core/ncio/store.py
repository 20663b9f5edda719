"""The one interface jobs use for a netCDF file on a communicator.

Collective contract (as in PnetCDF): every rank calls ``write``/``write_many``/
``read``/``close`` in the same order with the same variable names; a rank with
nothing to write passes an empty hyperslab (``Hyperslab.empty``) and still
takes part. Writers create the file under a temporary name in the target
directory and rename it when ``close`` completes, so a failed or killed run
never leaves a file that looks finished.
"""

from __future__ import annotations

import mmap
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.core import collective, mpi, readahead, registry, targets, trace
from climio.core.decomp import Hyperslab
from climio.core.ncio import libnetcdf
from climio.core.ncio.classic import ClassicLayout, required_size
from climio.core.ncio.compression import (DEFLATE_FILTER, FILTER_NAMES, FLETCHER32_FILTER, NONE, QUANTIZE_MODES,
                                         SHUFFLE_FILTER, SZIP_EC, SZIP_FILTER, SZIP_NN, Compression)
from climio.core.ncio.modes import FORMATS, Format, Mode
from climio.core.ncio.schema import (NUMERIC_KINDS, AttrValue, NCString, Schema, Variable, attribute_array,
                                    typed_attribute)
from climio.core.targets import PENDING_OUTPUTS
from climio.errors import ClimioError, IOFault

if TYPE_CHECKING:
    from mpi4py import MPI

def _synced(path: str, name: str) -> str:
    """fsync a written file on this rank: "" or the one-line fault (a full disk can first show here)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        return f"{name}: {(err.strerror or str(err)).lower()} (while flushing it to disk); nothing was published"
    return ""


@dataclass(frozen=True)
class Request:
    """One resolved hyperslab transfer: variable, contiguous buffer, where it goes."""

    var: Variable
    varid: int
    data: np.ndarray
    slab: Hyperslab
    given: bool = True  # False: this rank passed no data (its slab is empty, or a scalar's, which has no empty one)


def check_schema_fits(schema: Schema, mode: Mode, path: str) -> None:
    """Refuse, before creating anything, what the mode's format cannot store."""
    limit = mode.variable_limit
    for var in schema.variables:
        if limit is not None and schema.record_bytes(var) > limit:
            per = " per record" if schema.is_record(var) else ""
            raise ClimioError(f"{path}: variable '{var.name}' needs {schema.record_bytes(var) / 2**30:.2f} GiB{per}, "
                              f"over the 4 GiB variable limit of CDF-2 (mode '{mode.name}'): use --mode cdf5 or hdf5",
                              collective=True)
        if schema.is_record(var) and schema.dims[var.dims[0]] is not None and not mode.unlimited_anywhere:
            unlimited = next(d for d in var.dims if schema.dims[d] is None)
            raise ClimioError(f"{path}: variable '{var.name}{var.dims}' has its unlimited dimension '{unlimited}' "
                              f"after others, which the {mode.nc_format} format (mode '{mode.name}') cannot store: "
                              f"use --mode hdf5", collective=True)
        if var.compression.active and not mode.compressible:
            raise ClimioError(f"{path}: variable '{var.name}': compression and quantization need a netCDF-4 file, "
                              f"not {mode.nc_format} (mode '{mode.name}'): use --mode hdf5", collective=True)
        if not mode.stores(var.numpy_dtype):
            kind = "string (NC_STRING)" if var.numpy_dtype.kind == "O" else str(var.numpy_dtype)
            better = "hdf5" if var.numpy_dtype.kind == "O" else "cdf5 or hdf5"
            raise ClimioError(f"{path}: variable '{var.name}' has type {kind}, which the {mode.nc_format} format "
                              f"(mode '{mode.name}') cannot store: use --mode {better}", collective=True)
        for key, value in var.attrs.items():
            _check_attribute(key, typed_attribute(var, key, value), mode, f"{path}: variable '{var.name}'")
    for key, value in schema.attrs.items():
        _check_attribute(key, value, mode, path)


def _check_attribute(key: str, value: AttrValue, mode: Mode, where: str) -> None:
    """Refuse a numeric attribute the mode's format cannot hold exactly (:func:`classic_attribute`)."""
    if not isinstance(value, str) and not _is_string_list(value):
        classic_attribute(attribute_array(value), mode, key, where)


def remove_stale_temporaries(path: str) -> None:
    """Temporary outputs for ``path`` left by killed jobs (:data:`targets.TEMPORARY`): those of a process of this
    host that no longer runs are removed; others (another host's, or a running job's) are left alone, and another
    host's are named, since climio cannot tell whether that job still runs."""
    directory, name = os.path.split(os.path.abspath(path))
    for entry in os.listdir(directory):
        owner = targets.temporary_owner(entry)
        if owner is None or owner[0] != name:
            continue
        stale = os.path.join(directory, entry)
        if owner[1] != targets.host():
            print(f"climio: warning: {stale} was left by a job on host {owner[1]}: remove it if that job "
                  f"has ended", file=sys.stderr)
        elif not registry.running(owner[2]):
            try:
                os.unlink(stale)
                print(f"climio: warning: removed {stale}, left by a job that ended before finishing",
                      file=sys.stderr)
            except OSError:
                pass


def check_output(path: str, overwrite: bool, inputs: Iterable[str] = ()) -> None:
    """On one rank, before any work: the one rule for written paths (:func:`climio.core.targets.check`)."""
    targets.check([targets.Target(path)], inputs, overwrite)


def reserve_output(path: str, overwrite: bool) -> str:
    """On one rank: check the output can be written and reserve a temporary name beside it."""
    check_output(path, overwrite)
    directory = os.path.dirname(os.path.abspath(path))
    remove_stale_temporaries(path)
    temp = targets.temporary_name(path)
    PENDING_OUTPUTS.add(temp)  # before it exists: a stop signal from here on removes it
    try:
        fd = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except OSError as err:
        PENDING_OUTPUTS.discard(temp)
        raise ClimioError(f"output directory '{directory}' is not writable (for '{path}'): "
                          f"{err.strerror}; choose another output path") from err
    os.close(fd)
    return temp


def define(ncid: int, schema: Schema, path: str, mode: Mode, *, collective: bool) -> dict[str, int]:
    """Declare the whole schema, then leave define mode once. Returns varids by name.

    A netCDF-4 file (HDF5 storage, classic model or not) gets its chunk sizes; one of the full netCDF-4 model
    keeps string (NC_STRING) attributes as strings, other formats get them as text, and classic-model formats get
    integer attributes of types they lack in one they have (:func:`classic_attribute`)."""
    libnetcdf.set_nofill(ncid, path)
    dimids = {name: libnetcdf.def_dim(ncid, name, length, path) for name, length in schema.dims.items()}
    varids: dict[str, int] = {}
    for var in schema.variables:
        where = f"{path}: variable '{var.name}'"
        varid = libnetcdf.def_var(ncid, var.name, var.numpy_dtype, [dimids[d] for d in var.dims], where)
        if var.fill and mode.format.hdf5:
            libnetcdf.fill_var(ncid, varid, where)
        if mode.compressible and var.chunks is not None:
            libnetcdf.def_var_chunking(ncid, varid, tuple(var.chunks), where)
        _compress(ncid, varid, var, where)
        for key, value in var.attrs.items():
            _put_attribute(ncid, varid, key, typed_attribute(var, key, value), mode, where)
        varids[var.name] = varid
    for key, value in schema.attrs.items():
        _put_attribute(ncid, libnetcdf.NC_GLOBAL, key, value, mode, path)
    libnetcdf.enddef(ncid, path)
    if collective:
        for var in schema.variables:
            libnetcdf.var_par_access(ncid, varids[var.name], True, path)
    return varids


def _compress(ncid: int, varid: int, var: Variable, where: str) -> None:
    """Declare a netCDF-4 variable's quantization and filter pipeline: shuffle, deflate, then the other
    filters in order (``check_schema_fits`` refused other formats); a filter this build lacks is refused.
    szip is left out of the variables HDF5 cannot szip (too few values per row), which keep the rest."""
    compression = var.compression
    if compression.quantize is not None:
        algorithm, keep = compression.quantize
        libnetcdf.def_var_quantize(ncid, varid, QUANTIZE_MODES[algorithm], keep, where)
    for ident in [DEFLATE_FILTER] * bool(compression.deflate) + [i for i, _ in compression.filters]:
        if ident != FLETCHER32_FILTER and not libnetcdf.filter_available(ncid, ident):
            name = FILTER_NAMES.get(ident, f"HDF5 filter {ident}")
            raise ClimioError(f"{where}: this netCDF-C/HDF5 cannot apply {name} (filter id {ident}): install its "
                              f"HDF5 plugin and set HDF5_PLUGIN_PATH, or choose another codec (climio info "
                              f"lists them)", collective=True)
    if compression.deflate or (compression.shuffle and compression.filters):
        libnetcdf.def_var_deflate(ncid, varid, compression.shuffle, compression.deflate, where)
    for ident, params in compression.filters:
        if ident == FLETCHER32_FILTER:
            libnetcdf.def_var_fletcher32(ncid, varid, where)
        elif ident == SZIP_FILTER:
            try:  # HDF5's szip refuses rows shorter than its pixels per block (short 1-D coordinates)
                libnetcdf.def_var_szip(ncid, varid, *params, where)
            except libnetcdf.NetCDFError as error:
                if error.status != libnetcdf.NC_EINVAL:
                    raise
        else:
            libnetcdf.def_var_filter(ncid, varid, ident, params, where)


def _put_attribute(ncid: int, varid: int, key: str, value: AttrValue, mode: Mode, where: str) -> None:
    strings = [value] if isinstance(value, NCString) else value if _is_string_list(value) else None
    if strings is not None and mode.format.enhanced:
        libnetcdf.put_att_strings(ncid, varid, key, [str(v) for v in strings], where)
    elif strings is not None or isinstance(value, str):
        libnetcdf.put_att(ncid, varid, key, "\n".join(strings) if strings is not None else value, where)
    else:
        libnetcdf.put_att(ncid, varid, key, classic_attribute(attribute_array(value), mode, key, where), where)


def classic_attribute(values: np.ndarray, mode: Mode, key: str, where: str) -> np.ndarray:
    """``values`` in a type ``mode``'s format has: a classic-model file lacks the 64-bit and unsigned integers
    (CMIP6's ``forcing_index = 1LL``), so they go as 32-bit integers, or as doubles where one holds them exactly
    (what ``ncks -3`` does when it fits); other values are refused rather than changed."""
    if mode.stores(values.dtype):
        return values
    ints = [int(v) for v in values.tolist()]  # only integer types are missing (strings go as text)
    if all(-2**31 <= v < 2**31 for v in ints):
        return np.array(ints, "i4")
    if all(int(float(v)) == v for v in ints):
        return np.array(ints, "f8")
    raise ClimioError(f"{where}: attribute '{key}' holds {values.dtype} values {values.tolist()[:4]} that the "
                      f"{mode.nc_format} format (mode '{mode.name}') cannot store exactly: use --mode cdf5 or hdf5",
                      collective=True)


def _is_string_list(value: object) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, str) for v in value)


def _attributes(ncid: int, varid: int, names: list[str], get: Any) -> dict[str, AttrValue]:
    """Attribute values as netCDF4-python gives them, with NC_STRING ones marked (it gives them as plain str)."""
    out: dict[str, AttrValue] = {}
    for key in names:
        value = get(key)
        if isinstance(value, str) and libnetcdf.att_type(ncid, varid, key) == libnetcdf.NC_STRING:
            value = NCString(value)
        out[key] = value
    return out


def variable_dtype(v: Any) -> np.dtype | None:
    """The numpy type climio gives a netCDF4-python variable: numeric, ``S1`` (char), ``object`` (string), or
    None for the types climio does not copy (compound, variable-length, opaque, enum)."""
    from netCDF4 import EnumType

    if v.dtype == str:
        return np.dtype("O")
    if isinstance(v.datatype, EnumType) or not isinstance(v.dtype, np.dtype):
        return None
    dtype = np.dtype(v.dtype)
    return dtype if dtype.kind in NUMERIC_KINDS or dtype == np.dtype("S1") else None


def schema_of(dataset: Any) -> tuple[Schema, int, dict[str, int]]:
    """Schema, record count and varids of a file opened with netCDF4-python (variables climio cannot copy
    are left out: ``skipped_of`` names them)."""
    dims = {name: (None if d.isunlimited() else len(d)) for name, d in dataset.dimensions.items()}
    records = max([len(d) for d in dataset.dimensions.values() if d.isunlimited()], default=0)
    variables, varids = [], {}
    for name, v in dataset.variables.items():
        dtype = variable_dtype(v)
        if dtype is None:
            continue
        attrs = _attributes(libnetcdf.ncid(dataset), libnetcdf.varid(v), v.ncattrs(), v.getncattr)
        variables.append(Variable(name, dtype, tuple(v.dimensions), attrs, *_storage(v)))
        varids[name] = libnetcdf.varid(v)
    attrs = _attributes(libnetcdf.ncid(dataset), libnetcdf.NC_GLOBAL, dataset.ncattrs(), dataset.getncattr)
    return Schema(dims, tuple(variables), attrs), records, varids


def _storage(v: Any) -> tuple[tuple[int, ...] | None, Compression]:
    """A netCDF-4 variable's chunk sizes and filter pipeline (what ``ncks`` keeps when it copies the
    variable); its quantization is already in its values, and its ``_Quantize...`` attribute travels with
    the others."""
    if not FORMATS[v.group().data_model].hdf5:
        return None, NONE
    pipeline = libnetcdf.var_filters(libnetcdf.ncid(v.group()), libnetcdf.varid(v))
    chunking = v.chunking() if pipeline else "contiguous"
    chunks = tuple(int(c) for c in chunking) if isinstance(chunking, list) else None
    level = next((params[0] for ident, params in pipeline if ident == DEFLATE_FILTER), 0)
    others = tuple((ident, (params[0] & (SZIP_NN | SZIP_EC), params[1]) if ident == SZIP_FILTER else params)
                   for ident, params in pipeline if ident not in (DEFLATE_FILTER, SHUFFLE_FILTER))
    return chunks, Compression(level, any(ident == SHUFFLE_FILTER for ident, _ in pipeline), None, others)


def skipped_of(dataset: Any) -> list[str]:
    """What of a file climio leaves out, for warnings: variables of other types, and groups."""
    out = [f"variable '{name}' ({type(v.datatype).__name__})" for name, v in dataset.variables.items()
           if variable_dtype(v) is None]
    return out + [f"group '{name}'" for name in dataset.groups]


def text_of(dataset: Any) -> dict[str, np.ndarray]:
    """Every char and string variable of a file, whole (they are small: names, labels, grid-mapping scalars)."""
    dataset.set_auto_chartostring(False)
    dataset.set_auto_mask(False)
    out = {}
    for name, v in dataset.variables.items():
        dtype = variable_dtype(v)
        if dtype is not None and dtype.kind in "SO":
            out[name] = np.asarray(v[...], dtype=dtype).reshape(v.shape)
    return out


def mpi_info(hints: Mapping[str, str] | None) -> MPI.Info:
    """MPI-IO hints (striping_factor, cb_nodes, romio_cb_write, nc_header_align_size, ...) as MPI.Info."""
    from mpi4py import MPI

    if not hints:
        return MPI.INFO_NULL
    info = MPI.Info.Create()
    for key, value in hints.items():
        info.Set(str(key), str(value))
    return info


class Store(ABC):
    """An open netCDF file on a communicator, for writing (created) or reading (opened)."""

    def __init__(self, path: str, mode: Mode, comm: MPI.Comm, schema: Schema, *,
                 varids: dict[str, int], records: int = 0, temp_path: str | None = None,
                 overwrite: bool = False) -> None:
        self.path = path
        self.mode = mode
        self.comm = comm
        self.schema = schema
        self.records = records
        self._varids = varids
        self._temp_path = temp_path
        self._overwrite = overwrite
        self._closed = False
        self.data_model = mode.nc_format  # an opened file's own format (NETCDF4, NETCDF3_64BIT_DATA, ...)
        self.layout: ClassicLayout | None = None  # a classic file's layout: an opened file's, a parallel writer's
        self.text: dict[str, np.ndarray] = {}  # a reader's char/string variables, whole; a writer's, to write at close
        self.skipped: list[str] = []  # what of an opened file climio leaves out (other types, groups)
        self.chunking: dict[str, tuple[int, ...]] = {}  # an opened file's chunked variables: the chunks read in

    # -- what subclasses provide -------------------------------------------------
    @abstractmethod
    def _put_many(self, requests: list[Request]) -> None:
        """Write the resolved requests (collective)."""

    @abstractmethod
    def _get(self, var: Variable, varid: int, slab: Hyperslab, out: np.ndarray) -> None:
        """Read ``slab`` of ``var`` into ``out`` (collective)."""

    @abstractmethod
    def _close_file(self) -> None:
        """Close the library handle(s) (collective)."""

    # -- the interface -------------------------------------------------------------
    @property
    def working_path(self) -> str:
        """Where the data are being written: the temporary file of a writer, the file itself of a reader."""
        return self._temp_path or self.path

    @property
    def writable(self) -> bool:
        return self._temp_path is not None

    def write(self, name: str, data: np.ndarray | None, slab: Hyperslab | None = None) -> None:
        """Write ``data`` to ``slab`` of variable ``name`` (collective).

        ``slab=None`` writes the variable whole from rank 0 (coordinates and
        other small variables); the other ranks' ``data`` is ignored and may be None.
        """
        self.write_many([(name, data, slab)])

    def write_many(self, items: Iterable[tuple[str, np.ndarray | None, Hyperslab | None]]) -> None:
        """Write several variables of one output step with as few collective calls as possible."""
        self._check_open("write")
        if not self.writable:
            raise ClimioError(f"{self.path} was opened for reading: cannot write")
        self._put_many([self._resolve(name, data, slab) for name, data, slab in items])

    def read_text(self, name: str) -> np.ndarray:
        """A char (``S1``) or string (``object``) variable of an opened file, whole (any rank, no communication:
        text is read on rank 0 when the file is opened and broadcast)."""
        self._check_open("read")
        if name not in self.text:
            raise ClimioError(f"{self.path}: variable '{name}' is not a text variable: read it with read()")
        return self.text[name]

    def write_text(self, name: str, data: np.ndarray | None) -> None:
        """Give rank 0's value of a char or string variable, whole; it is written when the file is closed, by
        rank 0 alone (text is small, and parallel HDF5 cannot write strings). Other ranks may pass None."""
        self._check_open("write")
        var = self.schema.variable(name)
        if not var.is_text:
            raise ClimioError(f"{self.path}: variable '{name}' is {var.numpy_dtype}, not text: write it with write()")
        if self.comm.Get_rank() == 0:
            fixed = [self.schema.dims[d] for d in var.dims]  # None: a record dimension, any length
            shape = np.shape(data) if data is not None else None
            if shape is None or len(shape) != len(fixed) or any(f not in (None, n) for f, n in zip(fixed, shape)):
                raise ClimioError(f"{self.path}: variable '{name}': text of shape {shape} does not fit {var.dims}")
            self.text[name] = np.asarray(data, dtype=var.numpy_dtype)

    def can_gather(self, name: str) -> bool:
        """Whether :meth:`gather` reads ``name``: climio knows where its bytes lie (a classic file)."""
        return self.layout is not None and name in self.layout.begins

    def gather(self, name: str, index: tuple[np.ndarray, ...]) -> np.ndarray:
        """Scattered elements of ``name`` (where :meth:`can_gather`): ``index`` holds one integer array per
        dimension, broadcast together to the result's shape. Read from the file's own bytes, mapped into
        memory: no library call per element. Local: no other rank takes part."""
        assert self.layout is not None, "a classic file only"
        self._check_open("read")
        var = self._numeric(name)
        shape = self.schema.fixed_shape(var, self.records)
        itemsize = var.numpy_dtype.itemsize
        offsets = np.asarray(self.layout.begins[name], dtype=np.int64)
        for axis, (where, length, stride) in enumerate(zip(index, shape, self.layout.strides(name, shape, itemsize))):
            where = np.asarray(where, dtype=np.int64)
            if where.size and (where.min() < 0 or where.max() >= length):
                raise ClimioError(f"{self.path}: variable '{name}': index {int(where.max())} along axis {axis} is "
                                  f"outside its {length} elements")
            offsets = offsets + where * stride
        stored = var.numpy_dtype.newbyteorder(">")
        out = np.empty(offsets.shape, dtype=var.numpy_dtype)
        with trace.phase("read", out.nbytes), open(self.working_path, "rb") as f, \
                mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            for residue in np.unique(offsets % itemsize):  # one view of the file per alignment of the elements
                view = np.frombuffer(mapped, dtype=stored, count=(len(mapped) - residue) // itemsize,
                                     offset=int(residue))
                chosen = offsets % itemsize == residue
                out[chosen] = view[(offsets[chosen] - residue) // itemsize]
                del view  # the map closes only once no array looks into it
        return out

    def read(self, name: str, slab: Hyperslab | None = None, *, as_stored: bool = False) -> np.ndarray:
        """Read ``slab`` of variable ``name`` (whole variable if None) on this rank (collective).

        ``as_stored=True`` asks for the values in the file's own byte order, where the
        store can skip the library's conversion (classic files through MPI-IO: big-endian);
        the returned dtype says which order it is (``out.dtype.isnative``).
        """
        self._check_open("read")
        var = self._numeric(name)
        shape = self.schema.fixed_shape(var, self.records)
        slab = Hyperslab.whole(shape) if slab is None else slab
        self._check_bounds(var, slab, shape, reading=True)
        out = np.empty(slab.count, dtype=self.stored_dtype(var) if as_stored else var.numpy_dtype)
        self._get(var, self._varids[name], slab, out)
        return out

    def prefetch(self, name: str, slab: Hyperslab) -> None:
        """Ask the kernel to start reading the bytes of the file that hold ``slab`` of ``name``
        (``posix_fadvise(WILLNEED)``, from :mod:`climio.core.readahead`'s thread) and return at once, so that
        the disk reads the next block while this one is used. Local, not collective. Classic files only,
        whose layout is arithmetic; on netCDF-4 files, whose chunks HDF5 places, it does nothing."""
        span = self.byte_span(name, slab)
        if span is not None:
            readahead.advise(self.path, span[0], span[1] - span[0])

    def byte_span(self, name: str, slab: Hyperslab) -> tuple[int, int] | None:
        """The bytes ``[lo, hi)`` of a classic file from the first to the last element of ``slab`` (other
        variables' records between them included); None for an empty slab, a writer or a netCDF-4 file."""
        if not slab.size or self.writable or self.layout is None:
            return None
        var = self._numeric(name)
        return self.layout.span(name, self.schema.fixed_shape(var, self.records), var.numpy_dtype.itemsize, slab)

    @property
    def format(self) -> Format:
        """What the file's own format can hold (its layout, its data model)."""
        return FORMATS[self.data_model]

    def read_every(self, name: str, slab: Hyperslab, step: int, *, as_stored: bool = False) -> np.ndarray:
        """Every ``step``-th index along the first axis of ``slab``, from its start (collective).

        A sample of time steps in one strided request (netCDF's ``stride``), where a
        request per step would pay the library's per-call cost on each.
        """
        self._check_open("read")
        var = self._numeric(name)
        self._check_bounds(var, slab, self.schema.fixed_shape(var, self.records), reading=True)
        if step < 1 or not slab.count:
            raise ValueError(f"read_every needs a step of at least 1 along a first axis, got {step}")
        sampled = Hyperslab(slab.start, (-(-slab.count[0] // step), *slab.count[1:]))
        out = np.empty(sampled.count, dtype=self.stored_dtype(var) if as_stored else var.numpy_dtype)
        self._get_every(var, self._varids[name], sampled, step, out)
        return out

    def stored_dtype(self, var: Variable) -> np.dtype:
        """The dtype ``read(..., as_stored=True)`` returns: the machine's order unless a store reads the file's."""
        return var.numpy_dtype

    def _get_every(self, var: Variable, varid: int, sampled: Hyperslab, step: int, out: np.ndarray) -> None:
        """Read ``sampled.count[0]`` indices ``step`` apart into ``out`` (collective): one run per index here;
        stores whose library reads strided hyperslabs do better."""
        first, rest = sampled.start[0], sampled.count[1:]
        n = sampled.count[0] if sampled.size else 0
        runs = [Hyperslab((first + i * step, *sampled.start[1:]), (1, *rest)) for i in range(n)]
        self._get_runs(var, varid, runs, [out[i:i + 1] for i in range(n)])

    def read_runs(self, name: str, slabs: list[Hyperslab],
                  outs: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """Read any number of hyperslabs of ``name`` on this rank, a different number on each (collective).

        Subsetting reads the runs of selected elements: ranks need different
        counts of requests, and a rank with nothing selected passes none.
        ``outs``: C-contiguous arrays of the variable's type, one per hyperslab, to read into.
        """
        self._check_open("read")
        var = self._numeric(name)
        shape = self.schema.fixed_shape(var, self.records)
        for slab in slabs:
            self._check_bounds(var, slab, shape, reading=True)
        if outs is None:
            outs = [np.empty(slab.count, dtype=var.numpy_dtype) for slab in slabs]
        elif any(o.shape != tuple(s.count) or o.dtype != var.numpy_dtype or not o.flags.c_contiguous
                 for o, s in zip(outs, slabs)) or len(outs) != len(slabs):
            raise ValueError(f"read_runs: outs must be C-contiguous {var.numpy_dtype} arrays of the hyperslabs' shapes")
        self._get_runs(var, self._varids[name], slabs, outs)
        return outs

    def _get_runs(self, var: Variable, varid: int, slabs: list[Hyperslab], outs: list[np.ndarray]) -> None:
        """One collective read per hyperslab, padded with empty ones to the largest count on any rank."""
        calls = collective.most(self.comm, len(slabs))
        empty = Hyperslab.empty(len(var.dims))
        for k in range(calls):
            slab, out = (slabs[k], outs[k]) if k < len(slabs) else (empty, np.empty(empty.count, var.numpy_dtype))
            self._get(var, varid, slab, out)

    def shape(self, name: str) -> tuple[int, ...]:
        return self.schema.fixed_shape(self.schema.variable(name), self.records)

    def close(self, *, unwritten: bool = False) -> None:
        """Finish the file (collective); a writer's temporary file is renamed into place. ``unwritten``: the
        writer may have left parts of its variables unwritten (PIO's files, made without fill values), so a
        classic file shorter than its header says is extended to its length, as netCDF-C and PnetCDF do, rather
        than refused as a lost write."""
        if self._closed:
            return
        self._closed = True
        self._close_file()
        if self._temp_path is not None:
            mpi.agree(self.comm, self._write_text)
            with trace.phase("sync"):
                failure = _synced(self._temp_path, self.path)  # each rank: its node's pages of the file on disk
            mpi.raise_fault(self.comm, failure)
            mpi.agree(self.comm, lambda: self._publish(unwritten))

    def discard(self) -> None:
        """Give up a file being written: remove the temporary file (no collective calls).

        Any rank may be the one that failed, so whichever rank calls this removes it.
        """
        self._closed = True
        if self._temp_path is not None:
            try:
                os.unlink(self._temp_path)
            except OSError:
                pass
            PENDING_OUTPUTS.discard(self._temp_path)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        if err is None:
            self.close()
            return
        if isinstance(err, ClimioError) and err.collective and not self._closed:
            try:
                self._closed = True
                self._close_file()  # every rank raised the same error: closing is safe
            finally:
                self.discard()
        else:
            self.discard()  # other ranks may be inside a collective call: touch nothing shared

    # -- helpers -------------------------------------------------------------------
    def _write_text(self) -> None:
        """On rank 0, after every rank closed the file and before it is flushed: the text variables, through a
        serial handle."""
        import netCDF4

        assert self._temp_path is not None
        if not self.text:
            return
        try:
            with netCDF4.Dataset(self._temp_path, "a") as dataset:
                dataset.set_fill_off()  # a record it adds stays as the writer left it (its own fills, or none)
                dataset.set_auto_chartostring(False)
                for name, data in self.text.items():
                    if data.size:
                        dataset.variables[name][...] = data
        except (OSError, RuntimeError) as err:
            os.unlink(self._temp_path)
            raise IOFault(f"{self.path}: cannot write its text variables: {err}; nothing was published") from err

    def _publish(self, unwritten: bool = False) -> None:
        """Check the file is whole (a classic file is as long as its header says; with ``unwritten``, make it so),
        then rename it into place and make the rename durable (fsync of the directory)."""
        assert self._temp_path is not None
        if os.path.exists(self.path) and not self._overwrite:
            os.unlink(self._temp_path)
            raise ClimioError(f"output '{self.path}' appeared while writing: pass --overwrite to replace it")
        needed, actual = required_size(self._temp_path), os.path.getsize(self._temp_path)
        if needed is not None and actual < needed and unwritten:
            os.truncate(self._temp_path, needed)  # the unwritten tail reads as zeros
        elif needed is not None and actual < needed:
            os.unlink(self._temp_path)
            raise IOFault(f"{self.path}: the written file has {actual} of the {needed} bytes its header needs "
                          f"(a write was lost); nothing was published")
        os.replace(self._temp_path, self.path)
        targets.published(self.path)
        PENDING_OUTPUTS.discard(self._temp_path)
        directory = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)

    def _numeric(self, name: str) -> Variable:
        var = self.schema.variable(name)
        if var.is_text:
            raise ClimioError(f"{self.path}: variable '{name}' is text ({var.numpy_dtype}): use read_text/write_text")
        return var

    def _check_open(self, action: str) -> None:
        if self._closed:
            raise ClimioError(f"{self.path} is closed: cannot {action} after close")

    def _check_bounds(self, var: Variable, slab: Hyperslab, shape: tuple[int, ...], reading: bool) -> None:
        rank = self.comm.Get_rank()
        if len(slab.start) != len(var.dims) or len(slab.count) != len(var.dims):
            raise ClimioError(f"{self.path}: variable '{var.name}' has {len(var.dims)} dimensions {var.dims}, "
                              f"hyperslab on rank {rank} has {len(slab.start)}")
        for dim, start, count, length in zip(var.dims, slab.start, slab.count, shape):
            unlimited = self.schema.dims[dim] is None
            if start < 0 or count < 0 or (count and (reading or not unlimited) and start + count > length):
                raise ClimioError(f"{self.path}: variable '{var.name}': hyperslab start {slab.start} count "
                                  f"{slab.count} on rank {rank} goes outside dimension '{dim}' of length {length}")

    def _resolve(self, name: str, data: np.ndarray | None, slab: Hyperslab | None) -> Request:
        var = self._numeric(name)
        if slab is None and not var.dims:  # a scalar has no empty hyperslab: every rank writes rank 0's value
            data = self.comm.bcast(None if data is None else np.asarray(data), root=0)
            if data is None:
                raise ClimioError(f"{self.path}: no data given for variable '{name}' on rank 0", collective=True)
            slab = Hyperslab((), ())
        if slab is None:  # whole variable, from rank 0 only
            if self.comm.Get_rank() != 0 or data is None:
                if self.comm.Get_rank() == 0:
                    raise ClimioError(f"{self.path}: no data given for variable '{name}' on rank 0")
                return Request(var, self._varids[name], np.empty((0,) * len(var.dims), var.numpy_dtype),
                               Hyperslab.empty(len(var.dims)))
            slab = Hyperslab.whole(np.shape(data))
        given = data is not None
        if data is None:
            data = np.empty(slab.count, var.numpy_dtype)
        if np.ma.isMaskedArray(data):
            data = data.filled(var.attrs.get("_FillValue", 0))
        if tuple(np.shape(data)) != tuple(slab.count):
            raise ClimioError(f"{self.path}: variable '{name}': data of shape {np.shape(data)} on rank "
                              f"{self.comm.Get_rank()} does not match hyperslab count {slab.count}")
        self._check_bounds(var, slab, self.schema.fixed_shape(var, 0), reading=False)
        return Request(var, self._varids[name], self._convert(var, np.asarray(data)), slab, given)

    def write_order(self, var: Variable) -> np.dtype:
        """The type in which this store takes ``var``'s values without converting them (the variable's own; a
        classic file's writer takes its byte order too): a writer that moves the data anyway (the rearranger)
        can hand them over so."""
        return var.numpy_dtype

    def _convert(self, var: Variable, data: np.ndarray) -> np.ndarray:
        """A C-contiguous buffer of the variable's type; refuse conversions that would alter values."""
        target = var.numpy_dtype
        if data.dtype != target and target.kind in "iu" and data.size:
            if data.dtype.kind == "f" or (not np.can_cast(data.dtype, target)
                                          and (data.min() < np.iinfo(target).min or data.max() > np.iinfo(target).max)):
                raise ClimioError(f"{self.path}: variable '{var.name}' is {target}: data of type {data.dtype} "
                                  f"would be altered; convert it explicitly first")
        return np.ascontiguousarray(data, dtype=target)
