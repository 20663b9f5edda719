"""The calls of climio's C API and Fortran module, in Python: I/O systems, decompositions and files by id,
netCDF-style definitions turned into a :class:`ModelOutput`, and errors agreed over the ranks.

Every call is collective over its I/O system's communicator, as in PIO2. Each runs in two phases: a local
phase checks the arguments and prepares the work (no communication), the ranks then agree on the first
rank's error, if any (one small ``allreduce``), and only when none has one does the collective phase run. So
a bad id, type or array length on one rank returns the same code on every rank, and no rank is left waiting.
(Darray writes, climio's and PIO's, which PIO2 holds and writes later, run alone on each rank: :func:`run_local`;
the file's next agreed call writes them.)
An error raised by one rank alone *inside* a collective phase cannot be returned (the others may be inside
an MPI call): the job is aborted with its message, as the command line does.

After an error on a file being written, that file is abandoned: its temporary file is removed, nothing is
left at its path (an older file there is untouched), and later calls with its id fail with ``EBADID``
(``closefile`` releases it quietly).

Ids carry their I/O system (``system << 16 | n``, n > 0) so that even a bad file or decomposition id finds the
communicator to agree on; a call that fails to make a file or decomposition returns its system's id with
n = 0, which no call accepts, so closing a file that was never created is an agreed ``EBADID``, not an abort.
"""

from __future__ import annotations

import math
import os
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from climio.core import mpi, ncio, trace
from climio.core.decomp import Decomposition, Hyperslab
from climio.errors import ClimioError
from climio.model.decomposition import BlockDecomposition, GridDecomposition, from_compmap
from climio.model.input import ModelInput
from climio.model.definition import (ABORT_ON_ERROR, CLOBBER, EBADID, EINTERNAL, EINVAL, EIO, ESTATE, GLOBAL,
                                     NOCLOBBER, NOERR, QUANTIZE, RETURN_ERROR, CallError, Definition, Variable,
                                     check_name, code_of, exit_status, layout_of, out_of_range, record_of,
                                     xtype_dtype)
from climio.model.output import ModelOutput, applicable_modes

if TYPE_CHECKING:
    from mpi4py import MPI

T = TypeVar("T")

SHIFT = 16


# ------------------------------------------------------------------------------------------------ the tables


@dataclass(kw_only=True)
class Holding:
    """Distributed writes a rank took alone (``climio_write_darray``, ``PIOc_write_darray``), held until the file's
    next agreed call writes them together: the records, their bytes in the file (the same on every rank), a
    digest of what they are (the same on every rank, unless one refused a write the others took) and this
    rank's last refusal since."""

    pending: list[Any] = field(default_factory=list)
    pending_bytes: int = 0
    pending_digest: int = 0
    refused: str = ""
    refused_code: int = 0

    def hold(self, record: object, words: str, nbytes: int) -> None:
        """Hold ``record``: ``words`` say what it is alike on every rank, ``nbytes`` its bytes in the file."""
        self.pending.append(record)
        self.pending_bytes += nbytes
        self.pending_digest = len(self.pending) << 32 | zlib.crc32(words.encode(), self.pending_digest & 0xFFFFFFFF)

    def release(self) -> list[Any]:
        """The held records, no longer held."""
        pending = self.pending
        self.pending, self.pending_bytes, self.pending_digest, self.refused, self.refused_code = [], 0, 0, "", 0
        return pending


@dataclass(kw_only=True)
class File(Definition, Holding):
    """An open file of an I/O system, with what attached mode keeps of it."""

    system: System
    abandoned: str = ""
    shapes: dict[int | None, tuple[tuple[int, ...], ...]] = field(default_factory=dict)  # local, with/without halo

    def full(self) -> bool:
        """Whether the held records fill the buffer: :data:`HELD_BYTES` a rank on average (the same answer on
        every rank)."""
        return self.pending_bytes >= HELD_BYTES * self.system.comm.Get_size()


@dataclass
class System:
    """An I/O system: a communicator, an error policy, and the decompositions and files opened on it."""

    id: int
    comm: MPI.Comm
    abort: bool = False
    decomps: dict[int, GridDecomposition] = field(default_factory=dict)
    files: dict[int, File] = field(default_factory=dict)
    count: int = 0
    finalized: bool = False  # kept, so that a call after climio_finalize is an agreed EBADID
    # A rank that refused a held write returned its code at that call; the next agreed call returns it on every
    # rank and abandons the file, as an error does (climio's rule). PIO's: nothing, unless the tasks then hold
    # different writes (PIO_EINVAL on every task).
    refused_fails: bool = True
    spares: list[np.ndarray] = field(default_factory=list)  # copies of held writes already written, to reuse

    def spare(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An array for a held copy: a spare one of this type and size (touched already: no page faults in the
        model's next step), or a new one."""
        for k, spare in enumerate(self.spares):
            if spare.dtype == dtype and spare.size == math.prod(shape):
                return self.spares.pop(k).reshape(shape)
        return np.empty(shape, dtype)

    def add(self, table: dict[int, T], item: T) -> int:
        """Keep ``item`` (a decomposition or a file) under a new id of this system."""
        self.count += 1
        if self.count >= 1 << SHIFT:
            raise CallError(f"I/O system {self.id}: more than {(1 << SHIFT) - 1} decompositions and files")
        table[self.id << SHIFT | self.count] = item
        return self.id << SHIFT | self.count

    @property
    def no_id(self) -> int:
        """What a call that fails to make a decomposition or file returns: an id of this system that no call
        accepts."""
        return self.id << SHIFT


SYSTEMS: dict[int, System] = {}
LAST_ERROR = [""]
HELD_BYTES = 2**27  # held records' bytes in the file a rank, on average, before an agreed call writes them
#                     (PIO2's default buffer)


def in_system(ident: int) -> int:
    """A file's or decomposition's number within its I/O system: the same on every rank, where the systems' own
    numbers may differ (ranks of several systems number them apart)."""
    return ident & ((1 << SHIFT) - 1)


def system_of(handle: int, kind: str) -> System:
    """The I/O system of an id; an id of no system cannot be agreed on, so the job is aborted."""
    system = SYSTEMS.get(handle if kind == "system" else handle >> SHIFT)
    if system is None:
        from mpi4py import MPI

        mpi.abort(MPI.COMM_WORLD, f"climio: no I/O system holds {kind} id {handle} on rank "
                  f"{MPI.COMM_WORLD.Get_rank()}: the ranks cannot agree on the error, so the job is aborted", 2)
    return system  # type: ignore[return-value]


def file_of(ncid: int) -> File:
    f = system_of(ncid, "file").files.get(ncid)
    if f is None:
        raise CallError(f"no open file with id {ncid}", EBADID)
    if f.abandoned:
        raise CallError(f"{f.path}: abandoned after an earlier error ({f.abandoned})", EBADID)
    return f


# ------------------------------------------------------------------------------------------------ running


@dataclass(frozen=True)
class Held:
    """Work a rank took without agreeing (held darray writes), which must be the same on every rank when it is
    carried out: a ``digest`` of it, what it is in words, what every rank does when the digests differ
    (``diverged``, given the agreed message), this rank's refusal of such work since, if any, and what every rank
    does when a refusal fails the call (``given_up``: the files refused on any rank are abandoned)."""

    digest: int
    description: str
    diverged: Callable[[str], None]
    refusal: tuple[int, str] | None = None
    given_up: Callable[[str], None] = lambda message: None


def held_of(system: System) -> Held:
    """The distributed writes that the system's files hold, for the agreement of its next call."""
    files = [(ncid, f) for ncid, f in sorted(system.files.items()) if isinstance(f, Holding)]
    digest = 0
    for ncid, f in files:
        if f.pending_digest or f.refused:
            digest = zlib.crc32(f"{in_system(ncid)}:{f.pending_digest}:{bool(f.refused)};".encode(), digest)
    held = sum(len(f.pending) for _, f in files)
    refuser = next((f for _, f in files if f.refused), None)
    refused = refuser.refused if refuser is not None else ""
    words = f"holds {held} darray write(s)" + (f" after refusing one ({refused})" if refused else "")

    def diverged(message: str) -> None:  # on every rank: drop what any rank holds, and the files it was for
        told = system.comm.allgather({in_system(ncid): (f.pending_digest, bool(f.refused)) for ncid, f in files})
        own = {in_system(ncid): ncid for ncid, _ in files}
        for n in sorted({n for held in told for n in held}):
            f = system.files.get(own.get(n, -1))
            if isinstance(f, Holding) and len({held.get(n, (0, False)) for held in told}) > 1:
                f.release()
                if f.input is None and not f.abandoned:  # type: ignore[attr-defined]
                    abandon(f, message)  # type: ignore[arg-type]

    def given_up(message: str) -> None:  # on every rank: the files that any rank refused a held write of
        told = system.comm.allgather([in_system(ncid) for ncid, f in files if f.refused])
        refused = {n for numbers in told for n in numbers}
        for ncid, f in files:
            if in_system(ncid) in refused:
                f.release()
                if f.input is None and not f.abandoned:  # type: ignore[attr-defined]
                    abandon(f, message)  # type: ignore[arg-type]

    return Held(digest, words, diverged, (refuser.refused_code, refused) if refuser is not None else None, given_up)


def run(system: System, prepare: Callable[[], Callable[[], T]], file: File | None = None,
        name: str = "", held: Held | None = None) -> tuple[int, T | None]:
    """One call: ``prepare`` (local) returns the collective phase; the ranks agree on errors between the two,
    and, in the same agreement, on the work the system's files hold (``held``, by default :func:`held_of`: a
    rank that refused a call of :func:`run_local` the others took makes every rank fail here, with that rank's
    words).

    Returns ``(code, result)``. On an error the message is kept for :func:`last_error`, a file being written is
    abandoned, and with ``ABORT_ON_ERROR`` the job ends. The collective phase is traced as ``capi:<call>``, so
    that what a call costs beyond its work can be measured in the same run (``climio bench model --driver
    fortran``).
    """
    body: Callable[[], T] | None = None
    held = held if held is not None else held_of(system)
    try:
        if system.finalized:
            raise CallError(f"I/O system {system.id} was finalized", EBADID)
        body = prepare()
        problem: tuple[int, str, bool] | None = None
    except ClimioError as err:
        problem = (code_of(err), str(err), False)
    if system.refused_fails and held.refusal is not None:  # older than this call's own problem
        problem = (*held.refusal, True)
    first = problem if system.comm.Get_size() == 1 or problem is not None else None
    if system.comm.Get_size() > 1:
        fine, same = mpi.agree_state(system.comm, problem is None, held.digest)
        if not fine:  # the first rank's, on all
            first = next(r for r in system.comm.allgather(problem) if r is not None)
        elif not same:
            told = system.comm.allgather(held.description)
            odd = next((k for k, d in enumerate(told) if d != told[0]), 1)
            first = (EINVAL, f"the tasks hold different work: task 0 {told[0]}, task {odd} {told[odd]}; none "
                             f"of it was done", False)
            held.diverged(first[1])
    if first is not None and first[2]:  # a refused held write: its file (and what any rank holds of it) goes
        held.given_up(first[1])
        file = None
    if first is None and body is not None:
        try:
            with trace.phase(f"capi:{name or prepare.__qualname__.split('.')[0]}"):
                return NOERR, body()
        except ClimioError as err:
            if not err.collective:
                _abort_alone(system, str(err), code_of(err))
            first = (code_of(err), str(err), False)
        except Exception as err:  # a bug: one rank only, perhaps
            _abort_alone(system, f"climio internal error: {type(err).__name__}: {err}", EINTERNAL)
    code, message = first[:2]  # type: ignore[index]
    LAST_ERROR[0] = message
    if file is not None and file.input is None:
        abandon(file, message)
    if system.abort:
        from climio.core.targets import discard_pending_outputs

        discard_pending_outputs()
        if system.comm.Get_rank() == 0:
            sys.stderr.write(f"climio: {message}\n")
            sys.stderr.flush()
        system.comm.Barrier()  # the message is out before any rank ends the job
        system.comm.Abort(exit_status(code))
    return code, None


def run_local(system: System, prepare: Callable[[], Callable[[], T]], name: str) -> tuple[int, T | None]:
    """A call whose work is this rank's alone (PIO's darray writes, held until a flush): no agreement. An error
    is this rank's: its code returns here, or with ``ABORT_ON_ERROR`` the job ends with its line. A rank that
    refused what the others took is caught at the next agreement on the held work (:class:`Held`)."""
    try:
        if system.finalized:
            raise CallError(f"I/O system {system.id} was finalized", EBADID)
        work = prepare()
        with trace.phase(f"capi:{name}"):
            return NOERR, work()
    except ClimioError as err:
        code, message = code_of(err), str(err)
    LAST_ERROR[0] = message
    if system.abort:
        from climio.core.targets import discard_pending_outputs

        discard_pending_outputs()
        mpi.abort(system.comm, f"climio: {message}", exit_status(code))
    return code, None


def _abort_alone(system: System, message: str, code: int) -> None:
    mpi.abort(system.comm, f"climio: {message} (rank {system.comm.Get_rank()} alone, inside a collective "
              f"call: the job is aborted)", exit_status(code))


def abandon(f: File, message: str) -> None:
    """Give up a file being written after an agreed error: every rank is here, so closing is collective."""
    f.abandoned = message
    if f.output is not None:
        out, f.output = f.output, None
        err = CallError(message)
        out.__exit__(CallError, err, None)


def on_file(ncid: int, prepare: Callable[[File], Callable[[], T]], held: bool = False) -> tuple[int, T | None]:
    """:func:`run` for a call on file ``ncid``; a bad id is agreed over the system its id names. Every such call
    first writes the records the file holds. A ``held`` call (``climio_write_darray``) runs on this rank alone
    while the file's held records leave room (the same answer on every rank that holds the same): no rank waits
    for another, and its record is written by the file's next agreed call."""
    system = system_of(ncid, "file")
    name = prepare.__qualname__.split(".")[0]
    f = system.files.get(ncid)
    if held and f is not None and not f.abandoned and f.output is not None and not f.full():
        def alone() -> Callable[[], T]:
            assert f is not None
            try:
                return prepare(f)
            except ClimioError as err:
                f.refused, f.refused_code = str(err), code_of(err)
                raise
        return run_local(system, alone, name)

    def checked() -> Callable[[], T]:
        f = file_of(ncid)
        body = prepare(f)

        def work() -> T:
            write_held(f)
            return body()
        return work

    return run(system, checked, system.files.get(ncid), name)


def write_held(f: File) -> None:
    """Write the records the file holds (collective: every rank holds the same, as the agreement checked)."""
    pending = f.release()
    if pending and f.output is not None:
        f.output.write_records(pending)
    f.system.spares += [local for _, _, local in pending]  # the next writes' copies go there


def last_error() -> str:
    return LAST_ERROR[0]


# ------------------------------------------------------------------------------------------------ checks


def _defining(f: File, call: str) -> None:
    if not f.defining:
        raise CallError(f"{f.path}: {call} after climio_enddef (or on a file opened for reading)", ESTATE)


# ------------------------------------------------------------------------------------------------ the calls


def init_intracomm(comm: MPI.Comm) -> tuple[int, int]:
    """A new I/O system over ``comm`` (the model's communicator, used as is: climio never duplicates or frees it,
    nor calls MPI_Init or MPI_Finalize)."""
    system = System(max(SYSTEMS, default=0) + 1, comm)
    SYSTEMS[system.id] = system
    code, _ = run(system, lambda: lambda: None)
    return code, system.id


def set_error_handling(iosysid: int, method: int) -> int:
    system = system_of(iosysid, "system")

    def prepare() -> Callable[[], None]:
        if method not in (RETURN_ERROR, ABORT_ON_ERROR):
            raise CallError(f"error handling {method}: use CLIMIO_RETURN_ERROR (0) or CLIMIO_ABORT_ON_ERROR (1)")
        return lambda: setattr(system, "abort", method == ABORT_ON_ERROR)

    return run(system, prepare)[0]


def finalize(iosysid: int) -> int:
    """Close what is still open on the system (files being written are published) and forget it; with
    ``CLIMIO_TRACE=FILE`` in the environment, write the trace of every call (as ``climio --trace``)."""
    system = system_of(iosysid, "system")

    def body() -> None:
        for ncid in list(system.files):
            f = system.files.pop(ncid)
            write_held(f)
            for handle in (f.output, f.input):
                if handle is not None:
                    handle.close()
        system.decomps.clear()
        system.spares.clear()
        system.finalized = True
        write_trace(system)

    return run(system, lambda: body)[0]


def write_trace(system: System) -> None:
    """With ``CLIMIO_TRACE=FILE`` in the environment, write the trace of every call (as ``climio --trace``): at a
    system's end (collective)."""
    if os.environ.get("CLIMIO_TRACE"):
        trace.tracer().write(os.environ["CLIMIO_TRACE"], system.comm)


def init_decomp_blocks(iosysid: int, grid: list[int], start: list[int], count: list[int],
                       halo: int) -> tuple[int, int]:
    """Each rank's box of the grid (0-based, C order), with ``halo`` ghost cells on each side of its local array
    along the last two grid axes (the only one for a 1-D grid)."""
    system = system_of(iosysid, "system")

    def prepare() -> Callable[[], int]:
        ndims = len(grid)
        if ndims < 1 or len(start) != ndims or len(count) != ndims or min(grid) < 1:
            raise CallError(f"climio_init_decomp_blocks: a grid of {ndims} dimensions {tuple(grid)} needs as many "
                            f"positive lengths, starts and counts")
        bad = [a for a in range(ndims) if count[a] < 0 or start[a] < 0 or start[a] + count[a] > grid[a]]
        if bad:
            raise CallError(f"climio_init_decomp_blocks: box start {tuple(start)} count {tuple(count)} on rank "
                            f"{system.comm.Get_rank()} lies outside the grid {tuple(grid)} (0-based, C order)")
        if halo < 0:
            raise CallError(f"climio_init_decomp_blocks: halo {halo} must be >= 0")
        mine = Hyperslab(tuple(start), tuple(count))

        def body() -> int:
            boxes = tuple(system.comm.allgather(mine))
            axes = tuple(range(max(0, ndims - 2), ndims))
            return system.add(system.decomps, BlockDecomposition(tuple(grid), len(boxes), system.comm.Get_rank(),
                                                                 boxes, halo, axes,
                                                                 process_grid_of(tuple(grid), boxes, halo)))
        return body

    code, ioid = run(system, prepare)
    return code, ioid or system.no_id


def process_grid_of(grid: tuple[int, ...], boxes: tuple[Hyperslab, ...], halo: int) -> Decomposition | None:
    """The px x py process grid whose blocks (climio's split, ranks row-major) are exactly ``boxes``, if there is
    one: it lets the ``rows``/``cols`` strategies and seed 004's gathers serve a decomposition given box by box."""
    if len(grid) != 2:
        return None
    for py in range(1, len(boxes) + 1):
        if len(boxes) % py == 0:
            process = Decomposition.block2d(grid, len(boxes) // py, py, halo=halo)
            if all(process.owned(r) == box for r, box in enumerate(boxes)):
                return process
    return None


def init_decomp(iosysid: int, grid: list[int], compmap: np.ndarray) -> tuple[int, int]:
    """PIO's decomposition: each local element's 1-based offset into the C-order grid, 0 for a hole."""
    system = system_of(iosysid, "system")

    def prepare() -> Callable[[], int]:
        if not grid or min(grid) < 1:
            raise CallError(f"climio_init_decomp: grid {tuple(grid)} needs positive lengths")
        size = math.prod(grid)
        bad = compmap[(compmap < 0) | (compmap > size)]
        if bad.size:
            raise CallError(f"climio_init_decomp: compmap entry {int(bad[0])} on rank {system.comm.Get_rank()} is "
                            f"outside 1..{size} (0 for a hole)")
        d = from_compmap(grid, compmap, system.comm.Get_size(), system.comm.Get_rank())

        return lambda: system.add(system.decomps, d)

    code, ioid = run(system, prepare)
    return code, ioid or system.no_id


def free_decomp(iosysid: int, ioid: int) -> int:
    system = system_of(iosysid, "system")

    def prepare() -> Callable[[], None]:
        _decomp(system, ioid)
        return lambda: system.decomps.pop(ioid) and None

    return run(system, prepare)[0]


def _decomp(system: System, ioid: int) -> GridDecomposition:
    if ioid not in system.decomps:
        raise CallError(f"no decomposition with id {ioid} in I/O system {system.id}", EBADID)
    return system.decomps[ioid]


def createfile(iosysid: int, ioid: int, mode: str, strategy: str, path: str, flags: int) -> tuple[int, int]:
    """A new file for ``path`` in define mode; it is created at ``enddef`` and appears at ``path`` only when
    closed whole."""
    system = system_of(iosysid, "system")

    def prepare() -> Callable[[], int]:
        d = _decomp(system, ioid)
        if mode not in ncio.MODES:
            raise CallError(f"{path}: mode '{mode}': choose one of {', '.join(ncio.MODES)}")
        if flags not in (CLOBBER, NOCLOBBER):
            raise CallError(f"{path}: flags {flags}: use CLIMIO_CLOBBER (0) or CLIMIO_NOCLOBBER (1)")
        if mode not in applicable_modes(strategy):  # an unknown strategy raises here too
            raise CallError(f"{path}: strategy '{strategy}' does not apply to mode '{mode}': it works with "
                            f"{', '.join(applicable_modes(strategy))}")
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            raise CallError(f"{path}: cannot write in directory {parent} (missing or not writable)", EIO)
        if flags == NOCLOBBER and os.path.exists(path):
            raise CallError(f"{path} exists: remove it or create with CLIMIO_CLOBBER")
        f = File(path=path, decomp=d, mode=mode, strategy=strategy, overwrite=flags == CLOBBER, system=system)
        return lambda: system.add(system.files, f)

    code, ncid = run(system, prepare)
    return code, ncid or system.no_id


def def_dim(ncid: int, name: str, length: int) -> tuple[int, int]:
    def prepare(f: File) -> Callable[[], int]:
        _defining(f, "climio_def_dim")
        f.check_dim(name, length)
        return lambda: f.dims.append((name, length)) or len(f.dims) - 1

    code, dimid = on_file(ncid, prepare)
    return code, dimid or 0


def def_var(ncid: int, name: str, xtype: int, dimids: list[int]) -> tuple[int, int]:
    def prepare(f: File) -> Callable[[], int]:
        _defining(f, "climio_def_var")
        v = f.check_var(name, xtype, tuple(dimids))
        return lambda: f.variables.append(v) or len(f.variables) - 1

    code, varid = on_file(ncid, prepare)
    return code, varid if varid is not None else 0


def _check_compressible(f: File, v: Variable, what: str) -> None:
    """Filters need a netCDF-4 file (the mode table says which modes write one)."""
    if not ncio.get_mode(f.mode).compressible:
        raise CallError(f"{f.path}: variable '{v.name}': {what} needs mode hdf5, not '{f.mode}'")


def def_var_deflate(ncid: int, varid: int, shuffle: int, deflate: int, level: int) -> int:
    def prepare(f: File) -> Callable[[], None]:
        _defining(f, "climio_def_var_deflate")
        v = f.variable(varid)
        _check_compressible(f, v, "compression")
        if deflate and not 1 <= level <= 9:
            raise CallError(f"{f.path}: variable '{v.name}': deflate level {level} is not 1..9")
        if deflate and not shuffle:
            raise CallError(f"{f.path}: variable '{v.name}': climio deflates with the shuffle filter: pass "
                            f"shuffle 1")
        return lambda: setattr(v, "deflate", level if deflate else 0)

    return on_file(ncid, prepare)[0]




def def_var_quantize(ncid: int, varid: int, quantize_mode: int, nsd: int) -> int:
    def prepare(f: File) -> Callable[[], None]:
        _defining(f, "climio_def_var_quantize")
        v = f.variable(varid)
        _check_compressible(f, v, "quantization")
        if quantize_mode not in QUANTIZE or nsd < 1 or v.dtype.kind != "f":
            raise CallError(f"{f.path}: variable '{v.name}': quantize mode {quantize_mode} (1 BitGroom, "
                            f"2 GranularBR, 3 BitRound) with {nsd} digits/bits needs a float variable")
        return lambda: setattr(v, "quantize", (QUANTIZE[quantize_mode], nsd))

    return on_file(ncid, prepare)[0]


def def_var_reduce(ncid: int, varid: int, op: int, steps: int) -> int:
    """Refused: online reductions run on the I/O servers, which accumulate every step while the model goes on."""

    def prepare(f: File) -> Callable[[], None]:
        _defining(f, "climio_def_var_reduce")
        v = f.variable(varid)
        raise CallError(f"{f.path}: variable '{v.name}': online reductions run on the I/O servers: launch the model "
                        f"beside climio serve (mpiexec -n M MODEL : -n S climio serve), or write every step")

    return on_file(ncid, prepare)[0]


def put_att(ncid: int, varid: int, name: str, value: str | np.ndarray, xtype: int | None = None) -> int:
    """A text attribute (``value`` a str) or numbers stored as netCDF type ``xtype``."""

    def prepare(f: File) -> Callable[[], None]:
        _defining(f, "climio_put_att")
        target = f.attrs if varid == GLOBAL else f.variable(varid).attrs
        check_name(name, f"{f.path}: attribute")
        stored = value if xtype is None else np.asarray(value).astype(
            xtype_dtype(xtype, f"{f.path}: attribute '{name}'"))
        return lambda: target.__setitem__(name, stored)

    return on_file(ncid, prepare)[0]


def enddef(ncid: int) -> int:
    """Create the file (it appears at its path when closed whole)."""

    def prepare(f: File) -> Callable[[], None]:
        _defining(f, "climio_enddef")
        layout = layout_of(f)
        extra = {name: length for name, length in f.dims if name != layout.record}

        def body() -> None:
            f.output = ModelOutput(f.path, f.decomp, layout.fields, f.system.comm, mode=f.mode,
                                   strategy=f.strategy, overwrite=f.overwrite, attrs=f.attrs,
                                   dims=layout.grid_names, time_name=layout.record, time_attrs=layout.time_attrs,
                                   variables=layout.variables, extra_dims=extra)
        return body

    return on_file(ncid, prepare)[0]


def put_time(ncid: int, frame: int, time: float) -> int:
    def prepare(f: File) -> Callable[[], None]:
        out = _writing(f, "climio_put_time")
        if frame < 0:
            raise CallError(f"{f.path}: frame {frame} must be >= 0 (0-based from C, 1-based from Fortran)")
        return lambda: out.write_time(frame, time)

    return on_file(ncid, prepare)[0]


def _writing(f: File, call: str) -> ModelOutput:
    if f.output is None:
        raise CallError(f"{f.path}: {call} before climio_enddef (or on a file opened for reading)", ESTATE)
    return f.output


def _local(f: File, levels: int | None, memory: np.ndarray) -> np.ndarray:
    """The caller's flat array as the decomposition's local shape (with the halo or without), else as is."""
    if levels not in f.shapes:
        f.shapes[levels] = (f.decomp.local_shape(levels), f.decomp.layout(levels).local_shape)
    for shape in f.shapes[levels]:
        if math.prod(shape) == memory.size:
            return memory.reshape(shape)
    return memory


def _memory(f: File, memtype: int, memory: np.ndarray | None) -> np.ndarray:
    if memory is None:
        raise CallError(f"{f.path}: memory type {memtype} is none of CLIMIO_BYTE (1), SHORT (3), INT (4), "
                        f"FLOAT (5), DOUBLE (6), INT64 (10)")
    return memory


def write_darray(ncid: int, varid: int, frame: int, memtype: int, given: np.ndarray | None) -> int:
    """Record ``frame`` of a decomposed variable (``NOFRAME`` for one without records) from this rank's local
    array, checked and copied on this rank alone (the caller may reuse it at once), and written with the file's
    other held records by its next agreed call, as PIO2 holds darray writes."""

    def prepare(f: File) -> Callable[[], None]:
        out = _writing(f, "climio_write_darray")
        v = f.variable(varid)
        memory = _memory(f, memtype, given)
        target = out.fields.get(v.name)
        if target is None:
            raise CallError(f"{f.path}: '{v.name}' is not decomposed: write it with "
                            + ("climio_put_time" if v.name == out.time_name else "climio_put_var"))
        step = record_of(f, v, frame, target.records)
        _convertible(f, v, memory)
        local = _local(f, target.levels, memory)
        out.check_record(step, v.name, local)
        nbytes = math.prod(out.grid.shape(target.levels)) * np.dtype(target.dtype).itemsize
        return lambda: f.hold((step, v.name, out.moved_copy(v.name, local, f.system.spare)), f"{v.name}:{step};",
                              nbytes)

    return on_file(ncid, prepare, held=True)[0]


def put_var(ncid: int, varid: int, frame: int, memtype: int, given: np.ndarray | None) -> int:
    """An undistributed variable whole (or its record ``frame``), from rank 0's values."""

    def prepare(f: File) -> Callable[[], None]:
        out = _writing(f, "climio_put_var")
        v = f.variable(varid)
        memory = _memory(f, memtype, given)
        if v.name not in out.variables:
            raise CallError(f"{f.path}: '{v.name}' is " + ("the record coordinate: set it with climio_put_time"
                                                           if v.name == out.time_name else
                                                           "decomposed: write it with climio_write_darray"))
        dims = out.variables[v.name].dims
        step = record_of(f, v, frame, bool(dims) and dims[0] == out.time_name)
        _convertible(f, v, memory)
        shape = tuple(dict(f.dims)[name] for name in dims[step is not None:])
        values = memory.reshape(shape) if memory.size == math.prod(shape) else memory
        return lambda: out.write_variable(v.name, values.astype(v.dtype, copy=False), step)

    return on_file(ncid, prepare)[0]


def _convertible(f: File, v: Variable, memory: np.ndarray) -> None:
    """Refuse values the variable's type cannot hold, as netCDF's NC_ERANGE: floats into integers (climio does not
    round), integers beyond the type's range, doubles beyond float's."""
    problem = out_of_range(memory, v.dtype)
    if problem:
        raise CallError(f"{f.path}: variable '{v.name}' is {v.dtype.name}: {problem}")


def openfile(iosysid: int, ioid: int, strategy: str, path: str) -> tuple[int, int]:
    """``path`` opened for reading into decomposition ``ioid``."""
    system = system_of(iosysid, "system")

    def prepare() -> Callable[[], int]:
        d = _decomp(system, ioid)

        def body() -> int:
            reader = ModelInput(path, d, system.comm, strategy=strategy)
            names = [v.name for v in reader.schema.variables]
            return system.add(system.files, File(path=path, decomp=d, system=system, strategy=strategy, input=reader,
                                                  variables=[Variable(n, np.dtype("f8"), ()) for n in names]))
        return body

    code, ncid = run(system, prepare)
    return code, ncid or system.no_id


def inq_varid(ncid: int, name: str) -> tuple[int, int]:
    def prepare(f: File) -> Callable[[], int]:
        found = [i for i, v in enumerate(f.variables) if v.name == name]
        if not found:
            raise CallError(f"{f.path}: no variable '{name}'", EBADID)
        return lambda: found[0]

    code, varid = on_file(ncid, prepare)
    return code, varid if varid is not None else 0


def read_darray(ncid: int, varid: int, frame: int, memtype: int, given: np.ndarray | None) -> int:
    """Record ``frame`` (-1: a variable without records) of a variable into this rank's local array, as stored
    (no unpacking; fill values stay), converted to the array's type."""

    def prepare(f: File) -> Callable[[], None]:
        if f.input is None:
            raise CallError(f"{f.path}: climio_read_darray on a file opened for writing", ESTATE)
        reader = f.input
        v = f.variable(varid)
        memory = _memory(f, memtype, given)
        levels, records = reader.levels(v.name)
        stored = reader.schema.variable(v.name).numpy_dtype
        if memory.dtype.kind != "f" and stored.kind == "f":
            raise CallError(f"{f.path}: variable '{v.name}' is {stored.name}: read it into a float array, not "
                            f"{memory.dtype.name} (climio does not round)")
        shape = f.decomp.local_shape(levels)
        if memory.size != math.prod(shape):
            raise CallError(f"{f.path}: variable '{v.name}': local array of {memory.size} elements on rank "
                            f"{f.system.comm.Get_rank()}, expected {math.prod(shape)} {shape}")
        local = memory.reshape(shape)
        record = record_of(f, v, frame, records)

        def body() -> None:
            if np.can_cast(stored, memory.dtype):
                reader.read(v.name, record, out=local, cf=False)
                return
            values = reader.read(v.name, record, cf=False)  # narrower memory: every value checked first
            problems = [p for p in f.system.comm.allgather(out_of_range(values, memory.dtype)) if p]
            if problems:
                raise CallError(f"{f.path}: variable '{v.name}' read into {memory.dtype.name}: {problems[0]}")
            local[...] = values
        return body

    return on_file(ncid, prepare)[0]


def closefile(ncid: int) -> int:
    """Close a file: one being written is published at its path (a file abandoned earlier is just released)."""
    system = system_of(ncid, "file")
    f = system.files.get(ncid)
    if f is not None and f.abandoned:
        system.files.pop(ncid)
        return NOERR

    def prepare(f: File) -> Callable[[], None]:
        def body() -> None:
            system.files.pop(ncid)
            if f.defining:
                raise CallError(f"{f.path}: closed before climio_enddef: nothing was written", ESTATE)
            (f.output or f.input).close()  # type: ignore[union-attr]
        return body

    code = on_file(ncid, prepare)[0]
    f = system.files.get(ncid)
    if f is not None and f.abandoned:  # by this call (a write it held was refused): released all the same
        system.files.pop(ncid)
    return code
