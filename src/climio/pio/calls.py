"""PIO2's calls on climio, in Python: what ``libpioc`` (``pio.h``) answers in a model's process.

A PIO file is a netCDF file of any shape: dimensions, variables and attributes defined call by call (the
checks of :mod:`climio.model.definition`, as climio's own API), then distributed arrays written and read
through a decomposition given at each call, and undistributed values through ``put_vara``/``get_vara``.

- The storage mode comes from PIO's iotype and the create mode's flags (:func:`storage_of`), the strategy from
  the I/O system's I/O tasks: one task is ``root``; N tasks are climio's ``agg`` with PIO's own tasks (``base``,
  ``base + stride``, ...) as its aggregators, each writing an equal contiguous range of every record, which is
  what PIO's box rearranger gives its I/O tasks. Each decomposition of a file gets its route (the rearranger's
  plan) once.
- Calls run as climio's API runs them (:func:`climio.capi.calls.run`): local checks, one agreement on the first
  rank's error (and on the darray writes held so far), then the collective work; an error returns PIO's code
  on every task (``PIO_BCAST_ERROR`` and ``PIO_RETURN_ERROR`` alike) and its line is said once, or under
  ``PIO_INTERNAL_ERROR`` (PIO's default) the job is aborted with it. ``PIOc_write_darray`` and
  ``PIOc_setframe`` run on each task alone, as in PIO2 (:func:`on_file`'s ``buffered``). A file being written
  is created at ``enddef`` under a temporary name and appears at its path when closed whole, as every output
  of climio.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from climio.capi import calls
from climio.capi.calls import Holding, System, in_system, last_error, run, run_local, system_of
from climio.core import ncio
from climio.core.decomp import Hyperslab
from climio.core.ncio.compression import NONE
from climio.core.ncio.schema import fill_value as default_fill
from climio.errors import ClimioError
from climio.model import piomap
from climio.model.decomposition import GridDecomposition, from_offsets
from climio.model.definition import (EBADID, EINTERNAL, EINVAL, EIO, ENOMEM, ESTATE, GLOBAL, NETCDF_TYPES, UNLIMITED,
                                     CallError, Header, Variable, check_name, out_of_range, xtype_dtype)
from climio.model.route import Route, gather_together
from climio.model.strategy import Strategy

if TYPE_CHECKING:
    from mpi4py import MPI

T = TypeVar("T")

# PIO's numbers (pio.h): iotypes, rearrangers, error handlers, create/open flags
PNETCDF, NETCDF, NETCDF4C, NETCDF4P = 1, 2, 3, 4
REARRANGERS = {1: "box", 2: "subset"}
INTERNAL_ERROR, BCAST_ERROR, RETURN_ERROR = -51, -52, -53
NC_WRITE, NC_NOCLOBBER, NC_64BIT_DATA, NC_CLASSIC_MODEL, NC_64BIT_OFFSET, NC_NETCDF4 = \
    0x1, 0x4, 0x20, 0x100, 0x200, 0x1000
NC_FILL, NC_NOFILL = 0, 0x100
NC_CHAR = 2
NC_CHUNKED, NC_CONTIGUOUS = 0, 1
# netCDF's error codes (PIO returns them), and PIO's own
NOERR = 0
NC_EBADID, NC_EEXIST, NC_EINVAL, NC_EPERM, NC_ENOTINDEFINE, NC_EINDEFINE, NC_EINVALCOORDS = -33, -35, -36, -37, -38, \
    -39, -40
NC_ENAMEINUSE, NC_ENOTATT, NC_EBADTYPE, NC_EBADDIM, NC_EUNLIMPOS, NC_ENOTVAR, NC_ECHAR, NC_EEDGE, NC_ESTRIDE = -42, \
    -43, -45, -46, -47, -49, -56, -57, -58
NC_ERANGE, NC_ENOMEM, NC_EIO, NC_EINTERNAL, NC_ENOTNC4, NC_EBADCHUNK = -60, -61, -68, -92, -111, -127
NC_ENOENT = -2  # netCDF passes errno's ENOENT through
EBADIOTYPE, EVARDIMMISMATCH = -500, -501
# climio's codes (raised by the rules PIO shares with climio's API) as PIO's
PIO_CODE = {EBADID: NC_EBADID, EINVAL: NC_EINVAL, ESTATE: NC_EINDEFINE, EIO: NC_EIO, EINTERNAL: NC_EINTERNAL,
            ENOMEM: NC_ENOMEM}
FORMAT_NUMBERS = {"NETCDF3_CLASSIC": 1, "NETCDF3_64BIT_OFFSET": 2, "NETCDF4": 3, "NETCDF4_CLASSIC": 4,
                  "NETCDF3_64BIT_DATA": 5}
DEFAULT_HANDLER = [INTERNAL_ERROR]  # PIOc_set_iosystem_error_handling(PIO_DEFAULT, ...) sets it


# ------------------------------------------------------------------------------------------------ the tables


@dataclass(eq=False)
class PioDecomp:
    """A decomposition of PIO: the grid decomposition of its map (0-based offsets, -1 for a hole), the type of the
    arrays written through it, the map as given (PIOc_write_nc_decomp writes it back), and the rearranger's
    plans through it (:func:`route`), kept for every file that uses it, as PIO2 keeps its rearranger in the
    decomposition."""

    grid: GridDecomposition
    dtype: np.dtype
    offsets: np.ndarray
    routes: dict[tuple[str, str, bool], Route] = field(default_factory=dict)

    def free(self) -> None:
        for r in self.routes.values():
            r.free()
        self.routes.clear()


@dataclass(eq=False)
class PioSystem(System):
    """An I/O system of PIO: climio's, with PIO's I/O tasks and error handler."""

    iotasks: tuple[int, ...] = (0,)
    method: int = INTERNAL_ERROR
    hints: dict[str, str] = field(default_factory=dict)
    quiet: bool = False  # on climio serve ranks: a failed call's line goes to the model, which says it
    refused_fails: bool = False  # a refused darray write fails nothing more, unless the tasks then hold different ones

    def strategy(self, one_writer: bool) -> str:
        return "root" if one_writer or len(self.iotasks) == 1 else "agg"


BUFFER_BYTES = 2**28  # an I/O task's share of the held darray writes, at most (PIOc_set_buffer_size_limit sets it)


@functools.cache
def _limit_setter() -> Callable[[int], int] | None:
    """libpioc's PIOc_set_buffer_size_limit, where a model linked it into this process (not on climio serve)."""
    import ctypes

    try:
        setter = ctypes.CDLL(None).PIOc_set_buffer_size_limit
    except AttributeError:
        return None
    setter.restype, setter.argtypes = ctypes.c_int64, [ctypes.c_int64]
    return setter


def buffer_limit() -> int:
    """The bytes of held darray writes an I/O task may receive at a flush: the model's PIOc_set_buffer_size_limit
    (a limit of 0 asks without changing it), or :data:`BUFFER_BYTES`."""
    setter = _limit_setter()
    return setter(0) if setter is not None else BUFFER_BYTES


@dataclass(frozen=True)
class Pending:
    """One record of a variable that PIOc_write_darray took, held until the file's writes are flushed (where its
    route is found or built: building one is collective, so not inside a task's own call)."""

    decomp: PioDecomp
    ioid: int
    dtype: np.dtype
    fill: object
    name: str
    frame: int | None
    local: np.ndarray  # this task's elements, copied: the caller may reuse its array at once


@dataclass(eq=False, kw_only=True)
class PioFile(Header, Holding):
    """A file of PIO: its header (defined here, or read from the file), and the store that writes or reads it."""

    system: PioSystem
    mode: str
    one_writer: bool
    overwrite: bool = False
    defining: bool = True
    output: ncio.Store | None = None  # being written (run() abandons it after an error)
    input: ncio.Store | None = None  # opened for reading
    abandoned: str = ""
    records: int = 0
    fill_mode: int = NC_NOFILL  # PIOc_createfile's, as PIO2's (PIOc_set_fill changes it)
    record_fill: bool = True  # records added are filled (netCDF-C); PnetCDF leaves them to the caller
    filled_records: int = 0  # records that took their fill values
    no_fill: set[int] = field(default_factory=set)
    filled: set[int] = field(default_factory=set)  # given a fill value by PIOc_def_var_fill: the one write_darray takes
    unshuffled: set[int] = field(default_factory=set)  # deflated without the shuffle filter
    chunks: dict[int, tuple[int, ...] | None] = field(default_factory=dict)
    frames: dict[int, int] = field(default_factory=dict)
    texts: dict[str, np.ndarray] = field(default_factory=dict)
    def full(self) -> bool:
        """Whether the held writes fill an I/O task's share of the buffer (the same on every task)."""
        return self.pending_bytes >= buffer_limit() * (1 if self.one_writer else len(self.system.iotasks))

    @property
    def store(self) -> ncio.Store:
        if self.defining:
            raise CallError(f"{self.path}: in define mode: call PIOc_enddef first", NC_EINDEFINE)
        return self.output or self.input  # type: ignore[return-value]

    def moved(self, name: str) -> np.dtype:
        """The type a variable's records move in to the I/O tasks: the one the store writes as it is (a classic
        file's byte order)."""
        return self.store.write_order(self.store.schema.variable(name))

    def readable(self) -> ncio.Store:
        """The store to read from: also a file being written (what was written is read back), which then
        counts the records written so far, as every task knows them."""
        store = self.store
        store.records = max(store.records, self.records)
        return store

    def names(self, v: Variable) -> tuple[str, ...]:
        return tuple(self.dims[d][0] for d in v.dimids)

    def has_records(self, v: Variable) -> bool:
        return bool(v.dimids) and self.dims[v.dimids[0]][1] == UNLIMITED

    def shape(self, v: Variable) -> tuple[int, ...]:
        """The variable's shape now (its record dimension as long as the records written or read)."""
        return tuple(self.records if self.dims[d][1] == UNLIMITED else self.dims[d][1] for d in v.dimids)

    def target(self, varid: int) -> tuple[Variable, dict[str, object]]:
        """A variable and its attributes, or the global attributes (``PIO_GLOBAL``)."""
        if varid == GLOBAL:
            return Variable("", np.dtype("f8"), ()), self.attrs
        v = variable_of(self, varid)
        return v, v.attrs


def variable_of(f: PioFile, varid: int) -> Variable:
    if not 0 <= varid < len(f.variables):
        raise CallError(f"{f.path}: no variable id {varid} (it has {len(f.variables)})", NC_ENOTVAR)
    return f.variables[varid]


def pio_system(iosysid: int) -> PioSystem:
    """A system of PIO's calls; any other id cannot be agreed on (its communicator is unknown): the job ends."""
    system = system_of(iosysid, "system")
    if not isinstance(system, PioSystem):
        from mpi4py import MPI

        from climio.core import mpi

        mpi.abort(MPI.COMM_WORLD, f"climio: I/O system {iosysid} was made by climio's API (climio.h), not PIO's: "
                  f"pass PIO's calls an id of PIOc_Init_Intracomm", 2)
    return system  # type: ignore[return-value]


def call(system: System, prepare: Callable[[], Callable[[], T]], name: str, alone: bool = False
         ) -> tuple[int, T | None]:
    """:func:`climio.capi.calls.run` with PIO's codes, agreeing on the system's held writes too; a failed call's
    line is said once, by the first task (but by the I/O servers' systems: each model rank acts on it).
    ``alone``: the call is this task's own (:func:`climio.capi.calls.run_local`)."""
    code, result = run_local(system, prepare, name) if alone else run(system, prepare, None, name)
    if code == NOERR:
        return NOERR, result
    if system.comm.Get_rank() == 0 and not (isinstance(system, PioSystem) and system.quiet):
        sys.stderr.write(f"climio: {last_error()}\n")
        sys.stderr.flush()
    return PIO_CODE.get(code, code), None


def on_file(ncid: int, prepare: Callable[[PioFile], Callable[[], T]],
            buffered: Callable[[PioFile], bool] | None = None) -> tuple[int, T | None]:
    """:func:`call` on file ``ncid``; a bad id is agreed over the system its id names. Every agreed call first
    writes the darray writes the file holds. A ``buffered`` call (PIOc_write_darray, PIOc_setframe) runs on this
    task alone, as in PIO2, while ``buffered(f)`` says its work is local and the held writes do not fill the
    buffer (the same answer on every task that holds the same): no task waits for another.

    A call refused by its checks leaves the file as it was (netCDF's rule, which PIO programs rely on when they
    test their own errors); one that fails in its collective work abandons a file being written, as climio's
    API does: nothing is left at its path, and later calls on it fail."""
    system = system_of(ncid, "file")
    name = prepare.__qualname__.split(".")[0]
    f = system.files.get(ncid)
    if buffered is not None and isinstance(f, PioFile) and not f.abandoned and not f.full() and buffered(f):
        def alone() -> Callable[[], T]:
            assert isinstance(f, PioFile)
            try:
                return prepare(f)
            except CallError as err:
                f.refused = str(err)
                raise
        return call(system, alone, name, alone=True)
    failed: list[PioFile] = []

    def checked() -> Callable[[], T]:
        f = system.files.get(ncid)
        if not isinstance(f, PioFile):
            raise CallError(f"no open file with id {ncid}", NC_EBADID)
        if f.abandoned:
            raise CallError(f"{f.path}: abandoned after an earlier error ({f.abandoned})", NC_EBADID)
        body = prepare(f)

        def work() -> T:
            try:
                flush_writes(f)
                return body()
            except BaseException:
                failed.append(f)
                raise
        return work

    code, result = call(system, checked, name)
    if failed and failed[0].input is None:
        calls.abandon(failed[0], last_error())  # type: ignore[arg-type]
    return code, result


def done(value: T = None) -> Callable[[], T]:  # type: ignore[assignment]
    """A collective phase with nothing left to do but answer."""
    return lambda: value


# ------------------------------------------------------------------------------------------------ I/O systems


def init(comm: MPI.Intracomm, num_iotasks: int, stride: int, base: int, rearr: int,
         model_size: int = 0) -> tuple[int, int]:
    """An I/O system over the model's communicator (used as is) with PIO's I/O tasks.

    ``model_size``: on I/O servers (``comm`` theirs), the size of the model whose calls they run. The arguments
    are checked against the model's ranks as they would be in the model, the servers are the I/O tasks (the
    first ``num_iotasks`` of them), and the system returns every error without saying it: each model rank acts on
    the line by its own error handler."""
    served = model_size > 0
    size = model_size if served else comm.Get_size()
    method = RETURN_ERROR if served else DEFAULT_HANDLER[0]
    system = PioSystem(max(calls.SYSTEMS, default=0) + 1, comm, method=method, abort=method == INTERNAL_ERROR,
                       quiet=served)
    calls.SYSTEMS[system.id] = system

    def prepare() -> Callable[[], None]:
        if num_iotasks < 1 or stride < 1 or not 0 <= base < size:
            raise CallError(f"PIOc_Init_Intracomm: {num_iotasks} I/O tasks every {stride} from task {base}: give at "
                            f"least one task, a stride of at least 1 and a base of 0..{size - 1}", NC_EINVAL)
        if rearr not in REARRANGERS:
            raise CallError(f"PIOc_Init_Intracomm: rearranger {rearr}: use PIO_REARR_BOX (1) or PIO_REARR_SUBSET (2)",
                            NC_EINVAL)
        candidates = range(comm.Get_size()) if served else range(base, size, stride)
        tasks = tuple(candidates)[:num_iotasks]  # PIO too takes fewer when the ranks run out
        return lambda: setattr(system, "iotasks", tasks)

    code, _ = call(system, prepare, name="PIOc_Init_Intracomm")
    return code, system.id


def free_iosystem(iosysid: int) -> int:
    """Close what is still open (files being written are published) and forget the system."""
    system = pio_system(iosysid)

    def body() -> None:
        for f in list(system.files.values()):
            for store in (f.output, f.input):
                if store is not None:
                    store.close(unwritten=True)
        system.files.clear()
        for d in system.decomps.values():
            d.free()
        system.decomps.clear()
        system.spares.clear()
        system.finalized = True
        calls.write_trace(system)

    return call(system, lambda: body, name="PIOc_free_iosystem")[0]


def error_handling(iosysid: int, method: int) -> tuple[int, int]:
    """Set a system's error handler (``PIO_DEFAULT``, -1: that of systems made later); returns the old one."""
    if method not in (INTERNAL_ERROR, BCAST_ERROR, RETURN_ERROR):
        sys.stderr.write(f"climio: PIOc_set_iosystem_error_handling: method {method}: use PIO_INTERNAL_ERROR (-51), "
                         f"PIO_BCAST_ERROR (-52) or PIO_RETURN_ERROR (-53)\n")
        return NC_EINVAL, 0
    if iosysid == -1:
        old, DEFAULT_HANDLER[0] = DEFAULT_HANDLER[0], method
        return NOERR, old
    system = pio_system(iosysid)
    old = system.method
    system.method, system.abort = method, method == INTERNAL_ERROR
    return NOERR, old


def numiotasks(iosysid: int) -> tuple[int, int]:
    return NOERR, len(pio_system(iosysid).iotasks)


def iotask(iosysid: int) -> tuple[int, int, bool]:
    """This task's rank among the system's I/O tasks (-1: none), and whether the system is active."""
    system = calls.SYSTEMS.get(iosysid)
    if not isinstance(system, PioSystem):
        return NC_EBADID, -1, False
    rank = system.comm.Get_rank()
    return NOERR, system.iotasks.index(rank) if rank in system.iotasks else -1, not system.finalized


def deletefile(iosysid: int, path: str) -> int:
    """Remove a file (the first task removes it; every task returns the same code)."""
    system = pio_system(iosysid)

    def prepare() -> Callable[[], None]:
        if not os.path.isfile(path):
            raise CallError(f"{path}: PIOc_deletefile: no such file", NC_ENOENT)

        def body() -> None:
            fault = ""
            if system.comm.Get_rank() == 0:
                try:
                    os.unlink(path)
                except OSError as err:
                    fault = f"{path}: PIOc_deletefile: {(err.strerror or str(err)).lower()}"
            fault = system.comm.bcast(fault, root=0)
            if fault:
                raise CallError(fault, NC_EIO)
        return body

    return call(system, prepare, name="PIOc_deletefile")[0]


def set_hint(iosysid: int, hint: str, value: str) -> int:
    """An MPI-IO hint for the files this system creates or opens from now on."""
    system = pio_system(iosysid)

    def prepare() -> Callable[[], None]:
        if not hint:
            raise CallError("PIOc_set_hint: give the hint's name", NC_EINVAL)
        return lambda: system.hints.__setitem__(hint, value)

    return call(system, prepare, name="PIOc_set_hint")[0]


def iotype_available(iotype: int) -> bool:
    try:
        mode, _ = storage_of(iotype, 0, "")
    except CallError:
        return False
    return mode in ncio.available_modes() or mode == "serial"


# ------------------------------------------------------------------------------------------------ decompositions


def init_decomp(iosysid: int, pio_type: int, grid: list[int], offsets: np.ndarray, has_io_blocks: bool,
                rearr: int, task_of: Callable[[int], int] | None = None) -> tuple[int, int]:
    """A decomposition from each local element's 0-based offset into the grid (C order), -1 for a hole.
    ``task_of``: the model's task that gave local element k, for messages (the I/O servers' local elements are
    their clients'); by default this task."""
    system = pio_system(iosysid)

    def prepare() -> Callable[[], int]:
        dtype = xtype_dtype(pio_type, "PIOc_InitDecomp", NETCDF_TYPES, "PIO")
        if not grid or min(grid) < 1:
            raise CallError(f"PIOc_InitDecomp: global dimensions {tuple(grid)} must be positive", NC_EINVAL)
        if has_io_blocks:
            raise CallError("PIOc_InitDecomp: iostart/iocount are not taken: climio places the I/O tasks' blocks "
                            "itself (pass NULL)", NC_EINVAL)
        if rearr not in REARRANGERS:
            raise CallError(f"PIOc_InitDecomp: rearranger {rearr}: use PIO_REARR_BOX (1) or PIO_REARR_SUBSET (2)",
                            NC_EINVAL)
        size = math.prod(grid)
        bad = np.flatnonzero((offsets < -1) | (offsets >= size))
        if bad.size:
            task = task_of(int(bad[0])) if task_of is not None else system.comm.Get_rank()
            raise CallError(f"PIOc_InitDecomp: map entry {int(offsets[bad[0]])} (0-based) on task {task} is "
                            f"outside the {size} elements of the global array {tuple(grid)}", NC_EINVAL)
        decomp = PioDecomp(from_offsets(grid, offsets, system.comm.Get_size(), system.comm.Get_rank()), dtype,
                           offsets.copy())

        def body() -> int:
            # The plans of both strategies (the I/O tasks', one writer's) both ways now, as PIO2 sets up its
            # rearranger here rather than in a file's first write or read.
            for one_writer in (False, True) if system.strategy(False) != "root" else (False,):
                for reading in (False, True):
                    route(system, decomp, one_writer, dtype, None if reading else default_fill({}, dtype), reading)
            return system.add(system.decomps, decomp)
        return body

    code, ioid = call(system, prepare, name="PIOc_InitDecomp")
    return code, ioid or system.no_id


def init_decomp_blocks(iosysid: int, pio_type: int, grid: list[int], start: list[int],
                       count: list[int]) -> tuple[int, int]:
    """PIOc_InitDecomp_bc: each task's block (0-based start and count, C order)."""
    return init_decomp(iosysid, pio_type, grid, block_offsets(grid, start, count), False, 1)


def block_offsets(grid: list[int], start: list[int], count: list[int]) -> np.ndarray:
    """The 0-based offsets of a block's points (start and count, C order); a block outside the grid gives an entry
    that :func:`init_decomp` refuses."""
    if len(start) != len(grid) or len(count) != len(grid) or any(
            s < 0 or c < 0 or s + c > g for s, c, g in zip(start, count, grid)):
        return np.array([-2], np.int64)  # refused by init_decomp, on every task alike
    index = np.indices(count).reshape(len(grid), -1) + np.array(start, np.int64)[:, None]
    return np.ravel_multi_index(tuple(index), grid).astype(np.int64) if index.size else np.zeros(0, np.int64)


def freedecomp(iosysid: int, ioid: int) -> int:
    system = pio_system(iosysid)

    def prepare() -> Callable[[], None]:
        decomp_of(system, ioid)

        def body() -> None:
            for f in list(system.files.values()):  # writes that hold the decomposition's routes go first
                if isinstance(f, PioFile) and f.pending:
                    flush_writes(f)
            system.decomps.pop(ioid).free()
        return body

    return call(system, prepare, name="PIOc_freedecomp")[0]


def decomp_of(system: System, ioid: int) -> PioDecomp:
    found = system.decomps.get(ioid)
    if not isinstance(found, PioDecomp):
        raise CallError(f"no decomposition with id {ioid} in I/O system {system.id}", NC_EBADID)
    return found


def local_size(ioid: int) -> tuple[int, int]:
    system = system_of(ioid, "decomposition")
    found = system.decomps.get(ioid)
    return (NOERR, len(found.offsets)) if isinstance(found, PioDecomp) else (NC_EBADID, 0)


def write_nc_decomp(iosysid: int, path: str, cmode: int, ioid: int, title: str, history: str,
                    task_maps: Callable[[PioDecomp], list[np.ndarray] | None] | None = None) -> int:
    """The decomposition as PIO's netCDF decomposition file: every task's map as given, holes included (the
    first task writes it). ``task_maps`` (collective): every model task's map, in task order, on the first task
    (None elsewhere); by default each task's own, gathered."""
    system = pio_system(iosysid)

    def prepare() -> Callable[[], None]:
        d = decomp_of(system, ioid)

        def body() -> None:
            maps = task_maps(d) if task_maps is not None else system.comm.gather(d.offsets, root=0)
            fault = ""
            if system.comm.Get_rank() == 0:
                try:
                    piomap.write_map_netcdf(path, piomap.from_offsets(d.grid.grid, maps), title=title,
                                            history=history, file_format=decomp_format(cmode))
                except ClimioError as err:
                    fault = str(err)
            fault = system.comm.bcast(fault, root=0)
            if fault:
                raise CallError(fault, NC_EIO)
        return body

    return call(system, prepare, name="PIOc_write_nc_decomp")[0]


def decomp_format(cmode: int) -> str:
    """The format of a decomposition file of create mode ``cmode``, as PIO makes it."""
    if cmode & NC_NETCDF4:
        return "NETCDF4_CLASSIC" if cmode & NC_CLASSIC_MODEL else "NETCDF4"
    return "NETCDF3_64BIT_DATA" if cmode & NC_64BIT_DATA else \
        "NETCDF3_64BIT_OFFSET" if cmode & NC_64BIT_OFFSET else "NETCDF3_CLASSIC"


def read_nc_decomp(iosysid: int, path: str, pio_type: int) -> tuple[int, int, str, str, int]:
    """A decomposition from PIO's netCDF (or text) decomposition file, whose tasks must be this system's."""
    system = pio_system(iosysid)
    code, m = decomp_file(iosysid, path, system.comm.Get_size())
    if m is None:
        return code, system.no_id, "", "", 0
    code, ioid = init_decomp(iosysid, pio_type, list(m.dims), m.offsets(system.comm.Get_rank()), False, 1)
    return code, ioid, m.title, m.history, 0


def decomp_file(iosysid: int, path: str, ntasks: int) -> tuple[int, piomap.PioMap | None]:
    """PIO's netCDF (or text) decomposition file, which must hold a map for each of the model's ``ntasks`` tasks
    (PIOc_read_nc_decomp's reading)."""
    system = pio_system(iosysid)

    def prepare() -> Callable[[], piomap.PioMap]:
        m = piomap.read_map(path)
        if m.ntasks != ntasks:
            raise CallError(f"{path}: a decomposition of {m.ntasks} tasks, not this system's {ntasks}: read it with "
                            f"as many tasks as wrote it", NC_EINVAL)
        return done(m)

    return call(system, prepare, name="PIOc_read_nc_decomp")


# ------------------------------------------------------------------------------------------------ files


def storage_of(iotype: int, cmode: int, path: str) -> tuple[str, bool]:
    """climio's storage mode for PIO's iotype and create mode, and whether one task writes it: where a library
    writes alone (serial netCDF-C, serial HDF5). A classic file's data are climio's own writes, which every I/O
    task makes to its own bytes, so PIO_IOTYPE_NETCDF's CDF-1 and CDF-5 files are written as PNETCDF's are."""
    if iotype == PNETCDF:
        return ("cdf5" if cmode & NC_64BIT_DATA else "cdf2" if cmode & NC_64BIT_OFFSET else "cdf1"), False
    if iotype == NETCDF and not cmode & NC_NETCDF4:
        mode = "cdf5" if cmode & NC_64BIT_DATA else "serial" if cmode & NC_64BIT_OFFSET else "cdf1"
        return mode, mode == "serial"
    if iotype in (NETCDF, NETCDF4C, NETCDF4P):
        return ("hdf5-classic" if cmode & NC_CLASSIC_MODEL else "hdf5"), iotype != NETCDF4P
    raise CallError(f"{path}: iotype {iotype}: climio writes PIO_IOTYPE_PNETCDF (1), NETCDF (2), NETCDF4C (3) or "
                    f"NETCDF4P (4)", EBADIOTYPE)


def createfile(iosysid: int, iotype: int, path: str, cmode: int) -> tuple[int, int]:
    """A new file in define mode; it is created at ``enddef`` and appears at ``path`` when closed whole."""
    system = pio_system(iosysid)

    def prepare() -> Callable[[], int]:
        mode, one_writer = storage_of(iotype, cmode, path)
        if mode not in ncio.available_modes() and mode != "serial":
            raise CallError(f"{path}: this climio's netCDF-C cannot write mode {mode} (iotype {iotype})", EBADIOTYPE)
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            raise CallError(f"{path}: cannot write in directory {parent} (missing or not writable)", NC_EIO)
        if cmode & NC_NOCLOBBER and os.path.exists(path):
            raise CallError(f"{path} exists: remove it or create with PIO_CLOBBER", NC_EEXIST)
        f = PioFile(path, system=system, mode=mode, one_writer=one_writer, overwrite=not cmode & NC_NOCLOBBER,
                    record_fill=iotype != PNETCDF)
        return lambda: system.add(system.files, f)

    code, ncid = call(system, prepare, name="PIOc_createfile")
    return code, ncid or system.no_id


def openfile(iosysid: int, iotype: int, path: str, mode: int) -> tuple[int, int]:
    """An existing file, for reading its header and data."""
    system = pio_system(iosysid)

    def prepare() -> Callable[[], int]:
        _, one_writer = storage_of(iotype, 0, path)
        if mode & NC_WRITE:
            raise CallError(f"{path}: opened with PIO_WRITE: climio writes new files only (create it again, or open "
                            f"with PIO_NOWRITE to read)", NC_EPERM)

        def body() -> int:
            store = ncio.open(path, system.comm, read="root" if one_writer else "parallel",
                              hints=system.hints or None)
            schema = store.schema
            dims = [(name, UNLIMITED if length is None else length) for name, length in schema.dims.items()]
            index = {name: k for k, (name, _) in enumerate(dims)}
            variables = [Variable(v.name, v.numpy_dtype, tuple(index[d] for d in v.dims), dict(v.attrs))
                         for v in schema.variables]
            f = PioFile(path, system=system, mode=store.mode.name, one_writer=one_writer, defining=False,
                        input=store, records=store.records, dims=dims, variables=variables, attrs=dict(schema.attrs),
                        chunks=chunkings(path, system.comm) if store.format.hdf5 else {})
            return system.add(system.files, f)
        return body

    code, ncid = call(system, prepare, name="PIOc_openfile")
    return code, ncid or system.no_id


def chunkings(path: str, comm: MPI.Intracomm) -> dict[int, tuple[int, ...]]:
    """The chunk sizes of a netCDF-4 file's chunked variables, by variable id (read by the first task)."""
    found: dict[int, tuple[int, ...]] = {}
    if comm.Get_rank() == 0:
        import netCDF4

        with netCDF4.Dataset(path) as ds:
            for k, var in enumerate(ds.variables.values()):
                if isinstance(var.chunking(), list):
                    found[k] = tuple(var.chunking())
    return comm.bcast(found, root=0)


def closefile(ncid: int) -> int:
    """Close a file: one being written is published at its path (one abandoned earlier is just released)."""
    system = system_of(ncid, "file")
    f = system.files.get(ncid)
    if isinstance(f, PioFile) and f.abandoned:
        system.files.pop(ncid)
        return NOERR

    def prepare(f: PioFile) -> Callable[[], None]:
        def body() -> None:
            system.files.pop(ncid)
            if f.defining:
                raise CallError(f"{f.path}: closed in define mode: call PIOc_enddef first; nothing was written",
                                NC_EINDEFINE)
            if f.output is not None:
                write_fills(f)  # records that only char variables added
                for k, v in enumerate(f.variables):  # char variables go whole: with their fill values
                    if v.dtype.kind == "S" and fills(f, k) and (f.record_fill or not f.has_records(v)):
                        f.store.write_text(v.name, text_array(f, v))
            f.store.close(unwritten=True)  # PIO's files hold what the model wrote (no fill values)
        return body

    return on_file(ncid, prepare)[0]


def sync(ncid: int) -> int:
    """Every write is in the file's library when its call returns; the file appears at its path when closed."""
    def prepare(f: PioFile) -> Callable[[], None]:
        f.store  # in data mode
        return done()

    return on_file(ncid, prepare)[0]


def enddef(ncid: int) -> int:
    """Create the file (under a temporary name) with what was defined."""
    def prepare(f: PioFile) -> Callable[[], None]:
        defining(f, "PIOc_enddef")
        dims = {name: None if length == UNLIMITED else length for name, length in f.dims}
        variables = []
        for k, v in enumerate(f.variables):
            compression = (ncio.Compression(v.deflate, k not in f.unshuffled, v.quantize) if v.deflate or v.quantize
                           else NONE)
            variables.append(ncio.Variable(v.name, v.dtype, f.names(v), dict(v.attrs), f.chunks.get(k), compression,
                                           fills(f, k)))
        schema = ncio.Schema(dims, tuple(variables), dict(f.attrs))

        def body() -> None:
            f.output = ncio.create(f.path, schema, f.mode, f.system.comm, overwrite=f.overwrite,
                                   hints=f.system.hints or None, aggregated=True,  # the I/O tasks' ranges
                                   one_writer=f.system.strategy(f.one_writer) == "root")
            f.defining = False
            write_fills(f, fixed=True)
        return body

    return on_file(ncid, prepare)[0]


def redef(ncid: int) -> int:
    def prepare(f: PioFile) -> Callable[[], None]:
        raise CallError(f"{f.path}: PIOc_redef: climio defines a file once, before its data: define everything "
                        f"before PIOc_enddef", NC_EPERM if f.input is not None else NC_EINVAL)

    return on_file(ncid, prepare)[0]


def defining(f: PioFile, call_name: str) -> None:
    if not f.defining:
        raise CallError(f"{f.path}: {call_name} after PIOc_enddef (or on a file opened for reading)",
                        NC_ENOTINDEFINE)


def set_fill(ncid: int, fill_mode: int) -> tuple[int, int]:
    """The file's fill mode (values never written read as the fill value or as whatever the disk held)."""
    old: list[int] = []

    def prepare(f: PioFile) -> Callable[[], None]:
        if fill_mode not in (NC_FILL, NC_NOFILL):
            raise CallError(f"{f.path}: fill mode {fill_mode}: use PIO_FILL (0) or PIO_NOFILL (256)", NC_EINVAL)
        old.append(f.fill_mode)
        return lambda: setattr(f, "fill_mode", fill_mode)

    code, _ = on_file(ncid, prepare)
    return code, old[0] if old else 0


def file_is_open(ncid: int) -> bool:
    system = calls.SYSTEMS.get(ncid >> calls.SHIFT)
    f = system.files.get(ncid) if system is not None else None
    return isinstance(f, PioFile) and not f.abandoned


# ------------------------------------------------------------------------------------------------ inquiry


def inquire(ncid: int, ask: Callable[[PioFile], T]) -> tuple[int, T | None]:
    """A question about a file's header: local, but agreed like every call (a bad id fails on every task)."""
    def prepare(f: PioFile) -> Callable[[], T]:
        return done(ask(f))

    prepare.__qualname__ = ask.__qualname__
    return on_file(ncid, prepare)


def inq_numbers(f: PioFile) -> tuple[int, int, int, int, int]:
    """PIOc_inq's answer: the counts of dimensions, variables and global attributes, the record dimension's id (-1:
    none) and the file's format number."""
    unlimited = [k for k, (_, n) in enumerate(f.dims) if n == UNLIMITED]
    return len(f.dims), len(f.variables), len(f.attrs), unlimited[0] if unlimited else -1, format_of(f)


def format_of(f: PioFile) -> int:
    store = f.output or f.input
    name = store.data_model if store is not None and getattr(store, "data_model", None) else \
        ncio.get_mode(f.mode).nc_format
    return FORMAT_NUMBERS.get(name, 0)


def dim_of(f: PioFile, dimid: int) -> tuple[str, int]:
    if not 0 <= dimid < len(f.dims):
        raise CallError(f"{f.path}: no dimension id {dimid} (it has {len(f.dims)})", NC_EBADDIM)
    name, length = f.dims[dimid]
    return name, f.records if length == UNLIMITED else length


def dimid_of(f: PioFile, name: str) -> int:
    found = [k for k, (n, _) in enumerate(f.dims) if n == name]
    if not found:
        raise CallError(f"{f.path}: no dimension '{name}'", NC_EBADDIM)
    return found[0]


def varid_of(f: PioFile, name: str) -> int:
    found = [k for k, v in enumerate(f.variables) if v.name == name]
    if not found:
        raise CallError(f"{f.path}: no variable '{name}'", NC_ENOTVAR)
    return found[0]


def xtype_number(dtype: np.dtype) -> int:
    return next(x for x, t in NETCDF_TYPES.items() if t == dtype)


def attribute(f: PioFile, varid: int, name: str) -> tuple[np.ndarray, int, int]:
    """An attribute's values (text as bytes), its netCDF type and its number among its variable's attributes."""
    v, attrs = f.target(varid)
    if name not in attrs:
        where = "no global attribute" if varid == GLOBAL else f"variable '{v.name}' has no attribute"
        raise CallError(f"{f.path}: {where} '{name}'", NC_ENOTATT)
    value = attrs[name]
    if isinstance(value, str):
        data = np.frombuffer(value.encode(), "S1")
        return data, NC_CHAR, list(attrs).index(name)
    data = np.atleast_1d(np.asarray(value))
    if data.dtype.kind in "SUO" or data.dtype.newbyteorder("=") not in NETCDF_TYPES.values():
        raise CallError(f"{f.path}: attribute '{name}' is of a type PIO's calls do not read here ({data.dtype})",
                        NC_EBADTYPE)
    data = data.astype(data.dtype.newbyteorder("="))
    return data, xtype_number(data.dtype), list(attrs).index(name)


def attname(f: PioFile, varid: int, attnum: int) -> str:
    _, attrs = f.target(varid)
    if not 0 <= attnum < len(attrs):
        raise CallError(f"{f.path}: no attribute number {attnum} (there are {len(attrs)})", NC_ENOTATT)
    return list(attrs)[attnum]


def chunking(f: PioFile, varid: int) -> tuple[int, tuple[int, ...]]:
    """A variable's storage (NC_CHUNKED or NC_CONTIGUOUS) and chunk sizes."""
    variable_of(f, varid)
    chunks = f.chunks.get(varid)
    return (NC_CHUNKED, chunks) if chunks else (NC_CONTIGUOUS, ())


def deflation(f: PioFile, varid: int) -> tuple[int, int, int]:
    """PIOc_inq_var_deflate's answer: the shuffle filter and deflation (0 or 1 each), and the deflate level."""
    v = variable_of(f, varid)
    return int(bool(v.deflate) and varid not in f.unshuffled), int(bool(v.deflate)), v.deflate


def memory_type(own: np.dtype, memtype: int) -> np.dtype | None:
    """The type of a caller's memory: netCDF's type ``memtype``, or for 0 ``own`` (the variable's, attribute's or
    decomposition's type); None for a type PIO's calls do not have."""
    return own if memtype == 0 else NETCDF_TYPES.get(memtype)


def split_fills(values: np.ndarray | None, nvars: int) -> list[np.ndarray | None]:
    """write_darray_multi's fill values (one per variable, one after the other, or None: none given), as
    :func:`write_darray` takes them."""
    return [None] * nvars if values is None else [values[k:k + 1] for k in range(nvars)]


def var_fill(f: PioFile, varid: int) -> tuple[bool, np.ndarray]:
    """Whether the variable is left unfilled, and its fill value (its _FillValue, or netCDF's default)."""
    v = variable_of(f, varid)
    return not fills(f, varid), np.asarray(default_fill(v.attrs, v.dtype), v.dtype).reshape(1)


def fills(f: PioFile, varid: int) -> bool:
    """Whether values of the variable never written read as its fill value: PIOc_def_var_fill said so, or did
    not speak and the file's fill mode (PIOc_set_fill) is NC_FILL."""
    return varid in f.filled or (varid not in f.no_fill and f.fill_mode == NC_FILL)


def write_fills(f: PioFile, fixed: bool = False) -> None:
    """Write the fill values that a classic file's library would have written (collective), each task an equal
    share of each variable: with ``fixed``, the fixed-size variables (at enddef); else the records added since the
    last call, where records are filled (not through PnetCDF, which fills none). netCDF-4 files have HDF5 fill."""
    store = f.store
    first = f.filled_records
    if store.format.hdf5 or (not fixed and (not f.record_fill or f.records <= first)):
        return
    comm = f.system.comm
    rank, size = comm.Get_rank(), comm.Get_size()
    items: list[tuple[str, np.ndarray | None, Hyperslab | None]] = []
    for k, v in enumerate(f.variables):
        if v.dtype.kind == "S" or not fills(f, k) or f.has_records(v) == fixed:
            continue
        value = var_fill(f, k)[1][0]
        if not v.dimids:
            items.append((v.name, np.asarray(value, v.dtype), None))
            continue
        shape = f.shape(v)
        lo, hi = (0, shape[0]) if fixed else (first, f.records)
        start, stop = lo + (hi - lo) * rank // size, lo + (hi - lo) * (rank + 1) // size
        count = (stop - start, *shape[1:])
        items.append((v.name, np.full(count, value, v.dtype), Hyperslab((start, *[0] * (len(shape) - 1)), count)))
    if not fixed:
        f.filled_records = f.records
    if items:
        store.write_many(items)


# ------------------------------------------------------------------------------------------------ definitions


def def_dim(ncid: int, name: str, length: int) -> tuple[int, int]:
    def prepare(f: PioFile) -> Callable[[], int]:
        defining(f, "PIOc_def_dim")
        try:
            f.check_dim(name, length)
        except CallError as err:
            raise CallError(str(err), NC_ENAMEINUSE if "already" in str(err) else NC_EINVAL) from None
        return lambda: f.dims.append((name, length)) or len(f.dims) - 1

    code, dimid = on_file(ncid, prepare)
    return code, dimid if dimid is not None else -1


def def_var(ncid: int, name: str, xtype: int, dimids: list[int]) -> tuple[int, int]:
    def prepare(f: PioFile) -> Callable[[], int]:
        defining(f, "PIOc_def_var")
        try:
            v = f.check_var(name, xtype, tuple(dimids), NETCDF_TYPES, "PIO")
        except CallError as err:
            text = str(err)
            raise CallError(text, NC_ENAMEINUSE if "already" in text else NC_EBADTYPE if "type" in text else
                            NC_EBADDIM if "dimension" in text else NC_EINVAL) from None
        unlimited = [k for k, d in enumerate(dimids) if f.dims[d][1] == UNLIMITED]
        if unlimited and unlimited != [0] and not ncio.modes.FORMATS[ncio.get_mode(f.mode).nc_format].enhanced:
            raise CallError(f"{f.path}: variable '{name}': the record dimension comes first in mode {f.mode}",
                            NC_EUNLIMPOS)
        return lambda: f.variables.append(v) or len(f.variables) - 1

    code, varid = on_file(ncid, prepare)
    return code, varid if varid is not None else -1


RENAME_DIM, RENAME_VAR, RENAME_ATT = 0, 1, 2  # libpioc.c's


def rename(ncid: int, what: int, ident: int, name: str, newname: str | None) -> int:
    """Rename a dimension, a variable or an attribute (in define mode), or delete the attribute (no new name)."""
    def prepare(f: PioFile) -> Callable[[], None]:
        call_name = ("PIOc_rename_dim", "PIOc_rename_var", "PIOc_del_att" if newname is None else
                     "PIOc_rename_att")[what]
        defining(f, call_name)
        if newname is not None:
            check_name(newname, f"{f.path}: {call_name}: new")
        if what == RENAME_DIM:
            dim_of(f, ident)  # it exists
            if any(n == newname for n, _ in f.dims):
                raise CallError(f"{f.path}: dimension '{newname}' is already defined", NC_ENAMEINUSE)
            return lambda: f.dims.__setitem__(ident, (str(newname), f.dims[ident][1]))
        if what == RENAME_VAR:
            v = variable_of(f, ident)
            if any(w.name == newname for w in f.variables):
                raise CallError(f"{f.path}: variable '{newname}' is already defined", NC_ENAMEINUSE)
            return lambda: setattr(v, "name", newname)
        _, attrs = f.target(ident)
        attribute(f, ident, name)  # it exists
        if newname is not None and newname in attrs:
            raise CallError(f"{f.path}: attribute '{newname}' is already defined", NC_ENAMEINUSE)

        def body() -> None:
            items = [(newname if k == name else k, value) for k, value in attrs.items() if newname or k != name]
            attrs.clear()
            attrs.update(items)
        return body

    return on_file(ncid, prepare)[0]


def def_var_fill(ncid: int, varid: int, no_fill: int, fill: Callable[[np.dtype], np.ndarray] | None) -> int:
    """Fill a variable with ``fill`` (its ``_FillValue``), or leave it unfilled."""
    def prepare(f: PioFile) -> Callable[[], None]:
        defining(f, "PIOc_def_var_fill")
        v = variable_of(f, varid)
        value = fill(v.dtype) if fill is not None and not no_fill else None

        def body() -> None:
            (f.no_fill.add if no_fill else f.no_fill.discard)(varid)
            (f.filled.discard if no_fill else f.filled.add)(varid)
            if value is not None:
                v.attrs["_FillValue"] = value.reshape(1)
        return body

    return on_file(ncid, prepare)[0]


def compressible(f: PioFile, what: str) -> None:
    if not ncio.get_mode(f.mode).compressible:
        raise CallError(f"{f.path}: {what} needs a netCDF-4 file (PIO_IOTYPE_NETCDF4C or NETCDF4P), not mode "
                        f"{f.mode}", NC_ENOTNC4)


def def_var_deflate(ncid: int, varid: int, shuffle: int, deflate: int, level: int) -> int:
    def prepare(f: PioFile) -> Callable[[], None]:
        defining(f, "PIOc_def_var_deflate")
        v = variable_of(f, varid)
        compressible(f, f"variable '{v.name}': compression")
        if deflate and not 1 <= level <= 9:
            raise CallError(f"{f.path}: variable '{v.name}': deflate level {level} is not 1..9", NC_EINVAL)
        def body() -> None:
            v.deflate = level if deflate else 0
            (f.unshuffled.discard if shuffle else f.unshuffled.add)(varid)
        return body

    return on_file(ncid, prepare)[0]


def def_var_chunking(ncid: int, varid: int, storage: int, chunks: list[int] | None) -> int:
    def prepare(f: PioFile) -> Callable[[], None]:
        defining(f, "PIOc_def_var_chunking")
        v = variable_of(f, varid)
        compressible(f, f"variable '{v.name}': chunking")
        if storage not in (NC_CHUNKED, NC_CONTIGUOUS):
            raise CallError(f"{f.path}: variable '{v.name}': storage {storage}: use PIO_CHUNKED (0) or "
                            f"PIO_CONTIGUOUS (1)", NC_EINVAL)
        shape = [length for _, length in (f.dims[d] for d in v.dimids)]
        given = tuple(chunks or ())[:len(shape)]
        if storage == NC_CHUNKED and (len(given) != len(shape) or any(
                c < 1 or (n != UNLIMITED and c > n) for c, n in zip(given, shape))):
            raise CallError(f"{f.path}: variable '{v.name}': chunk sizes {given} do not fit its dimensions "
                            f"{tuple(shape)}", NC_EBADCHUNK)
        return lambda: f.chunks.__setitem__(varid, given if storage == NC_CHUNKED else None)

    return on_file(ncid, prepare)[0]


def def_var_quantize(ncid: int, varid: int, quantize_mode: int, nsd: int) -> int:
    from climio.model.definition import QUANTIZE

    def prepare(f: PioFile) -> Callable[[], None]:
        defining(f, "PIOc_def_var_quantize")
        v = variable_of(f, varid)
        compressible(f, f"variable '{v.name}': quantization")
        if quantize_mode not in (0, *QUANTIZE) or (quantize_mode and (nsd < 1 or v.dtype.kind != "f")):
            raise CallError(f"{f.path}: variable '{v.name}': quantize mode {quantize_mode} (1 BitGroom, 2 GranularBR, "
                            f"3 BitRound) with {nsd} digits/bits needs a float variable", NC_EINVAL)
        return lambda: setattr(v, "quantize", (QUANTIZE[quantize_mode], nsd) if quantize_mode else None)

    return on_file(ncid, prepare)[0]


def put_att(ncid: int, varid: int, name: str, xtype: int, length: int,
            memory: Callable[[np.dtype, int], np.ndarray | None]) -> int:
    """An attribute of netCDF type ``xtype`` from ``length`` values in memory (text: bytes), given in the type
    ``memory`` views them in (by default the attribute's)."""
    def prepare(f: PioFile) -> Callable[[], None]:
        defining(f, "PIOc_put_att")
        v, attrs = f.target(varid)
        check_name(name, f"{f.path}: attribute")
        where = f"{f.path}: attribute '{name}'"
        values = memory(NETCDF_TYPES.get(xtype, np.dtype("u1")), length)
        if values is None:
            raise CallError(f"{where}: a memory type PIO's calls do not have", NC_EBADTYPE)
        if xtype == NC_CHAR:
            if values.dtype.kind != "S":
                raise CallError(f"{where}: text attributes take text (PIOc_put_att_text)", NC_ECHAR)
            stored: object = values.tobytes().decode("utf-8", "replace")
        else:
            dtype = xtype_dtype(xtype, where, NETCDF_TYPES, "PIO")
            if values.dtype.kind == "S":
                raise CallError(f"{where}: numbers of type {xtype} from text", NC_ECHAR)
            if name == "_FillValue" and (varid == GLOBAL or dtype != v.dtype):
                raise CallError(f"{where}: must be of its variable's type", NC_EBADTYPE)
            problem = out_of_range(values, dtype) if values.dtype.kind != "f" or dtype.kind == "f" else ""
            if problem:
                raise CallError(f"{where}: {problem}", NC_ERANGE)
            stored = values.astype(dtype)
        return lambda: attrs.__setitem__(name, stored)

    return on_file(ncid, prepare)[0]


def get_att(ncid: int, varid: int, name: str, memtype: int) -> tuple[int, np.ndarray | None]:
    """An attribute's values in the caller's memory type (0: the attribute's own), refused where they do not fit."""
    def prepare(f: PioFile) -> Callable[[], np.ndarray]:
        data, _, _ = attribute(f, varid, name)
        where = f"{f.path}: attribute '{name}'"
        dtype = memory_type(data.dtype, memtype)
        if dtype is None:
            raise CallError(f"{where}: a memory type PIO's calls do not have", NC_EBADTYPE)
        return done(converted(data, dtype, where))

    return on_file(ncid, prepare)


# ------------------------------------------------------------------------------------------------ data


def selection(f: PioFile, v: Variable, start: list[int] | None, count: list[int] | None,
              stride: list[int] | None, writing: bool) -> Hyperslab:
    """The hyperslab of a put/get_var(1,a,s) call: whole (no start), one element (no count) or start and count."""
    shape = f.shape(v)
    if start is None:
        return Hyperslab.whole(shape)
    counts = [1] * len(shape) if count is None else count
    if stride is not None and any(s != 1 for s in stride):
        raise CallError(f"{f.path}: variable '{v.name}': stride {tuple(stride)}: climio reads and writes contiguous "
                        f"hyperslabs (stride 1)", NC_ESTRIDE)
    for axis, (s, c) in enumerate(zip(start, counts)):
        limit = math.inf if writing and f.has_records(v) and axis == 0 else shape[axis]
        if s < 0 or (s >= limit and not (c == 0 and s == limit)):
            raise CallError(f"{f.path}: variable '{v.name}': start {tuple(start)} is outside its shape {shape}",
                            NC_EINVALCOORDS)
        if c < 0 or s + c > limit:
            raise CallError(f"{f.path}: variable '{v.name}': start {tuple(start)} + count {tuple(counts)} runs past "
                            f"its shape {shape}", NC_EEDGE)
    return Hyperslab(tuple(start), tuple(counts))


def converted(values: np.ndarray, target: np.dtype, where: str) -> np.ndarray:
    """Values in another type, refused (NC_ERANGE) where they do not fit; text only as text (NC_ECHAR)."""
    if (values.dtype.kind == "S") != (target.kind == "S"):
        raise CallError(f"{where}: text and numbers do not convert into each other", NC_ECHAR)
    if values.dtype == target:
        return values
    problem = out_of_range(values, target) if values.dtype.kind != "f" or target.kind == "f" else ""
    if values.dtype.kind == "f" and target.kind in "iu":  # netCDF rounds toward zero; refuse what does not fit
        info = np.iinfo(target)
        finite = values[np.isfinite(values)]
        if finite.size != values.size or (finite.size and (finite.min() < info.min or finite.max() > info.max)):
            problem = f"values do not fit in {target.name}"
    if problem:
        raise CallError(f"{where}: {problem}", NC_ERANGE)
    return values.astype(target)


def text_array(f: PioFile, v: Variable, records: int = 0) -> np.ndarray:
    """The whole of a char variable as written so far (its record dimension grown to ``records``): char
    variables go to the file whole, from the first task, when it is closed."""
    shape = f.shape(v)
    if f.has_records(v):
        shape = (max(shape[0], records), *shape[1:])
    old = f.texts.get(v.name)
    if old is None or old.shape != shape:
        varid = f.variables.index(v)
        new = np.full(shape, var_fill(f, varid)[1][0] if fills(f, varid) else b"", "S1")
        if old is not None:
            new[:old.shape[0]] = old
        f.texts[v.name] = new
    return f.texts[v.name]


def whole_text(f: PioFile, v: Variable, store: ncio.Store) -> np.ndarray:
    """A char variable whole, on every task (collective): as read at open, or as written so far (the first task
    holds it: char variables go to the file whole, from the first task, when it is closed)."""
    if f.input is not None:
        return store.read_text(v.name)
    comm = f.system.comm
    return comm.bcast(text_array(f, v) if comm.Get_rank() == 0 else None, root=0)


def undistributed(f: PioFile, varid: int, start: list[int] | None, count: list[int] | None,
                  stride: list[int] | None, memory: Callable[[np.dtype, int], np.ndarray | None],
                  writing: bool) -> tuple[Variable, Hyperslab, str, np.ndarray]:
    """The variable, hyperslab, name (for messages) and caller's memory of a put/get_var(1,a,s) call."""
    v = variable_of(f, varid)
    slab = selection(f, v, start, count, stride, writing)
    where = f"{f.path}: variable '{v.name}'"
    given = memory(v.dtype, slab.size)
    if given is None:
        raise CallError(f"{where}: a memory type PIO's calls do not have", NC_EBADTYPE)
    return v, slab, where, given


def put_vars(ncid: int, varid: int, start: list[int] | None, count: list[int] | None, stride: list[int] | None,
             memory: Callable[[np.dtype, int], np.ndarray | None]) -> int:
    """Undistributed values: every task passes the same; the first task writes them."""
    def prepare(f: PioFile) -> Callable[[], None]:
        store = f.store
        if f.output is None:
            raise CallError(f"{f.path}: opened for reading: cannot write", NC_EPERM)
        v, slab, where, given = undistributed(f, varid, start, count, stride, memory, True)
        values = converted(given, v.dtype, where).reshape(slab.count)
        first = f.system.comm.Get_rank() == 0

        def body() -> None:
            if v.dtype.kind == "S":
                records = slab.start[0] + slab.count[0] if f.has_records(v) and slab.count else 0
                text = text_array(f, v, records)
                text[slab.slices] = values
                store.write_text(v.name, text)
                if f.has_records(v) and slab.count:
                    f.records = max(f.records, records)
                return
            if f.has_records(v) and slab.count:
                f.records = max(f.records, slab.start[0] + slab.count[0])
                write_fills(f)  # the records this write adds, before it
            mine = slab if first else Hyperslab.empty(len(slab.count))
            store.write_many([(v.name, values if first else None, mine)])
        return body

    return on_file(ncid, prepare)[0]


def get_vars(ncid: int, varid: int, start: list[int] | None, count: list[int] | None, stride: list[int] | None,
             memory: Callable[[np.dtype, int], np.ndarray | None]) -> int:
    """Undistributed values, read by every task."""
    def prepare(f: PioFile) -> Callable[[], None]:
        store = f.readable()
        v, slab, where, out = undistributed(f, varid, start, count, stride, memory, False)
        if (v.dtype.kind == "S") != (out.dtype.kind == "S"):
            raise CallError(f"{where}: text and numbers do not convert into each other", NC_ECHAR)

        def body() -> None:
            values = whole_text(f, v, store)[slab.slices] if v.dtype.kind == "S" else store.read(v.name, slab)
            problems = [p for p in f.system.comm.allgather(
                "" if out.dtype.kind == "S" else _range_problem(values, out.dtype)) if p]
            if problems:
                raise CallError(f"{where} read into {out.dtype.name}: {problems[0]}", NC_ERANGE)
            out[...] = values.reshape(-1)
        return body

    return on_file(ncid, prepare)[0]


def _range_problem(values: np.ndarray, target: np.dtype) -> str:
    try:
        converted(values, target, "")
    except CallError as err:
        return str(err).removeprefix(": ")
    return ""


def setframe(ncid: int, varid: int, frame: int | None) -> int:
    """The record that the variable's next distributed write or read is (None: the next one)."""
    def prepare(f: PioFile) -> Callable[[], None]:
        variable_of(f, varid)
        value = f.frames.get(varid, 0) + 1 if frame is None else frame
        if value < 0:
            raise CallError(f"{f.path}: frame {value} must be >= 0", NC_EINVAL)
        return lambda: f.frames.__setitem__(varid, value)

    return on_file(ncid, prepare, buffered=lambda f: True)[0]  # held writes took their frames when called


def route(system: PioSystem, d: PioDecomp, one_writer: bool, dtype: np.dtype, fill: object,
          reading: bool) -> Route:
    """The rearranger's plan between decomposition ``d`` and the I/O tasks' pieces (one task's, for a file of one
    writer), built once per decomposition, strategy, type and fill (collective)."""
    name = system.strategy(one_writer)
    key = (name, f"{dtype.str}:{fill!r}", reading)
    native = (name, f"{dtype.newbyteorder('=').str}:{fill!r}", reading)
    if key not in d.routes and native in d.routes:  # a classic file's byte order: the native route's plan
        d.routes[key] = d.routes[native].retyped(dtype)
    elif key not in d.routes:
        strategy = Strategy(name, () if name == "root" else system.iotasks, None, ())
        d.routes[key] = strategy.route(system.comm, d.grid, None, dtype, fill=fill, reading=reading)
    return d.routes[key]


def darray_target(f: PioFile, varid: int, d: PioDecomp) -> tuple[Variable, int | None]:
    """A variable written or read through decomposition ``d``, and how many frames its first dimension holds when
    a call is one of them (None: the decomposition covers the whole variable). Its dimensions after the first are
    the decomposition's (the first, record or not, indexed by the variable's frame, as PIO2 does), or all of them
    are (a record dimension as long as the decomposition's first: PIO's decompositions over the records,
    pioperf's ``unlimdimindof``)."""
    v = variable_of(f, varid)
    lengths = tuple(f.dims[k][1] for k in v.dimids)
    grid = d.grid.grid
    if len(lengths) == len(grid) + 1 and lengths[1:] == grid:
        frames: int | None = math.inf if f.has_records(v) else lengths[0]  # type: ignore[assignment]
    elif len(lengths) == len(grid) and all(n == g or (k == 0 and f.has_records(v))
                                           for k, (n, g) in enumerate(zip(lengths, grid))):
        frames = None
    else:
        raise CallError(f"{f.path}: variable '{v.name}' {f.names(v)} does not have the decomposition's dimensions "
                        f"{grid}, nor those after a first dimension of frames", NC_EINVAL)
    return v, frames


def short_array(path: str, arraylen: int, task: int, maplen: int) -> CallError:
    """The error of a distributed array shorter than its task's map."""
    return CallError(f"{path}: array of {arraylen} elements on task {task}, but the decomposition gives it {maplen}",
                     NC_EINVAL)


def write_darray(ncid: int, varids: list[int], ioid: int, arraylen: int,
                 memory: Callable[[np.dtype, int], np.ndarray | None], frames: list[int] | None,
                 fills: Callable[[np.dtype], list[np.ndarray | None]], own_type: bool = False) -> int:
    """One record of each variable from this task's elements (``arraylen`` each, in the decomposition's type, or
    with ``own_type`` the variable's: PIOc_put_vard)."""
    def prepare(f: PioFile) -> Callable[[], None]:
        if f.defining:
            raise CallError(f"{f.path}: PIOc_write_darray in define mode: call PIOc_enddef first", NC_EINDEFINE)
        store = f.output
        if store is None:
            raise CallError(f"{f.path}: opened for reading: cannot write", NC_EPERM)
        if not varids:
            raise CallError(f"{f.path}: PIOc_write_darray_multi: no variables (varids NULL or nvars < 1)", NC_EINVAL)
        d = decomp_of(f.system, ioid)
        n = len(d.offsets)
        if arraylen < n:
            raise short_array(f.path, arraylen, f.system.comm.Get_rank(), n)
        own = variable_of(f, varids[0]).dtype if own_type else d.dtype
        given = memory(own, arraylen * len(varids))
        if given is None:
            raise CallError(f"{f.path}: a memory type PIO's calls do not have", NC_EBADTYPE)
        array = given.reshape(len(varids), arraylen)
        given_fills = fills(array.dtype)
        work = []
        for k, varid in enumerate(varids):
            v, frames_of = darray_target(f, varid, d)
            if k and f.names(v) != f.names(variable_of(f, varids[0])):
                raise CallError(f"{f.path}: PIOc_write_darray_multi: variables '{variable_of(f, varids[0]).name}' and "
                                f"'{v.name}' have different dimensions", EVARDIMMISMATCH)
            frame = None if frames_of is None else frames[k] if frames is not None else f.frames.get(varid, 0)
            if frame is not None and not 0 <= frame < frames_of:
                raise CallError(f"{f.path}: variable '{v.name}': frame {frame} is not 0.."
                                f"{frames_of - 1 if frames_of != math.inf else ''} (PIOc_setframe)", NC_EINVALCOORDS)
            local = converted(array[k, :n], v.dtype, f"{f.path}: variable '{v.name}'")
            fill = given_fills[k]
            no_fill, own_fill = var_fill(f, varid)
            if fill is not None and varid in f.filled:  # PIO2's rule: a variable given a fill value takes only
                # that one, whose bytes may come in the variable's type through an array of another of its size
                same = (fill.tobytes() == own_fill.tobytes() if fill.dtype.itemsize == v.dtype.itemsize else
                        converted(fill, v.dtype, f"{f.path}: variable '{v.name}': fill value").tobytes()
                        == own_fill.tobytes())
                if not same:
                    raise CallError(f"{f.path}: variable '{v.name}': PIOc_write_darray's fill value {fill[0]!r} is "
                                    f"not the variable's ({own_fill[0]!r}): pass NULL or its fill value", NC_EINVAL)
                fill = None
            fill_value = (converted(fill, v.dtype, f"{f.path}: variable '{v.name}': fill value")[0]
                          if fill is not None else default_fill(v.attrs, v.dtype))
            work.append((v, frame, local, fill_value))

        def body() -> None:
            for v, frame, local, fill_value in work:
                if v.dtype.kind == "S":  # an agreed call (text_free): every task is here
                    flush_writes(f)
                    write_text_darray(f, v, frame, d, local, fill_value)
                    continue
                copy = f.system.spare(local.shape, f.moved(v.name))
                np.copyto(copy, local, casting="unsafe")  # one pass into the order the flush moves (checked above)
                f.hold(Pending(d, ioid, v.dtype, fill_value, v.name, frame, copy),
                       f"{v.name}:{frame}:{in_system(ioid)}:{v.dtype.str};", math.prod(d.grid.grid) * v.dtype.itemsize)
                if f.has_records(v):  # the decomposition holds the records, or the frame is one
                    f.records = max(f.records, d.grid.grid[0] if frame is None else frame + 1)
        return body

    def text_free(f: PioFile) -> bool:
        """Whether the call is this task's alone: no char variable (those are gathered at once)."""
        return all(not (0 <= varid < len(f.variables)) or f.variables[varid].dtype.kind != "S" for varid in varids)

    return on_file(ncid, prepare, buffered=text_free)[0]


def flush_writes(f: PioFile) -> None:
    """Write the darray writes file ``f`` holds (collective): the records move to the I/O tasks in one exchange,
    whatever their decompositions, and all of them are written in one call, as PIO2 flushes its buffer."""
    if not f.pending:
        f.refused = ""
        return
    groups: dict[int, tuple[Route, list[Pending]]] = {}
    pending = f.release()
    for p in pending:  # in the same order on every task: routes are built alike
        found = route(f.system, p.decomp, f.one_writer, f.moved(p.name),
                      p.fill, False)
        groups.setdefault(id(found), (found, []))[1].append(p)
    items: list[tuple[str, np.ndarray, Hyperslab]] = []
    moved = gather_together([(shared, [p.local for p in members]) for shared, members in groups.values()])
    for (_, members), gathered in zip(groups.values(), moved):
        for p, pieces in zip(members, gathered):
            items += [(p.name, data, slab) if p.frame is None else
                      (p.name, data[None], Hyperslab((p.frame, *slab.start), (1, *slab.count)))
                      for data, slab in pieces]
    write_fills(f)  # the records these writes add, before them
    f.store.write_many(items)
    f.system.spares += [p.local for p in pending]  # the next writes' copies go there


def write_text_darray(f: PioFile, v: Variable, frame: int | None, d: PioDecomp, local: np.ndarray,
                      fill: object) -> None:
    """A char variable's record from every task's elements (``fill`` where no task has one): gathered to the first
    task, which gives the file the whole variable (char variables are written whole, when the file is closed)."""
    comm = f.system.comm
    given = comm.gather((d.offsets, local), root=0)
    records = frame + 1 if frame is not None and f.has_records(v) else 0
    if comm.Get_rank() == 0:
        text = text_array(f, v, records)
        flat = (text[frame] if frame is not None else text).reshape(-1)
        owned = np.zeros(flat.size, bool)
        for offsets, values in given:
            points = offsets >= 0
            flat[offsets[points]] = values[points]
            owned[offsets[points]] = True
        flat[~owned] = fill
        f.store.write_text(v.name, text)
    if records:
        f.records = max(f.records, records)


def read_darray(ncid: int, varid: int, ioid: int, arraylen: int,
                memory: Callable[[np.dtype, int], np.ndarray | None], frame: int | None = None,
                own_type: bool = False) -> int:
    """One record (``frame``, else the variable's frame) of a variable into this task's elements (in the
    decomposition's type, or with ``own_type`` the variable's); those that are no point (holes) keep what the
    caller's array held, as in PIO2."""
    def prepare(f: PioFile) -> Callable[[], None]:
        if f.defining:
            raise CallError(f"{f.path}: PIOc_read_darray in define mode: call PIOc_enddef first", NC_EINDEFINE)
        store = f.readable()
        d = decomp_of(f.system, ioid)
        n = len(d.offsets)
        if arraylen < n:
            raise short_array(f.path, arraylen, f.system.comm.Get_rank(), n)
        v, frames_of = darray_target(f, varid, d)
        record = None if frames_of is None else f.frames.get(varid, 0) if frame is None else frame
        held = f.records if f.has_records(v) else frames_of
        if record is not None and not 0 <= record < held:  # type: ignore[operator]
            raise CallError(f"{f.path}: variable '{v.name}' has {held} frames, not frame {record} (PIOc_setframe)",
                            NC_EINVALCOORDS)
        given = memory(v.dtype if own_type else d.dtype, arraylen)
        if given is None:
            raise CallError(f"{f.path}: a memory type PIO's calls do not have", NC_EBADTYPE)
        out = given[:n]
        points = d.offsets >= 0
        holes = not points.all()
        where = f"{f.path}: variable '{v.name}'"

        # every element a point, of the variable's type: the exchange delivers into the caller's array itself
        in_place = not holes and out.dtype == v.dtype and out.flags.c_contiguous and v.dtype.kind != "S"

        def body() -> None:
            raw = out if in_place else np.full(n, default_fill(v.attrs, v.dtype), v.dtype)
            if v.dtype.kind == "S":
                whole = whole_text(f, v, store)
                flat = (whole[record] if record is not None else whole).reshape(-1)
                raw[points] = flat[d.offsets[points]]
            else:
                r = route(f.system, d, f.one_writer, v.dtype, None, True)
                r.read(store, v.name, record)
                r.scatter(raw)
            if not np.can_cast(v.dtype, out.dtype):  # a narrower type: every value is checked first
                problems = [p for p in f.system.comm.allgather(_range_problem(raw[points], out.dtype)) if p]
                if problems:
                    raise CallError(f"{where} read into {out.dtype.name}: {problems[0]}", NC_ERANGE)
            if holes:
                out[points] = raw[points]
            elif not in_place:
                out[...] = raw
        return body

    return on_file(ncid, prepare)[0]

