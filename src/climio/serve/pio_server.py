"""The I/O servers' side of PIO's calls (docs/serve-protocol.md, "PIO's calls"): a model that calls PIO2's API
sends each call as one message of kind PIO, and the servers run the same call of :mod:`climio.pio.calls` over
their own communicator, the servers being the I/O tasks, then answer each model rank.

A server's share of a distributed array is its clients' pieces side by side, in client order, as for climio's
own calls: its decomposition is their maps concatenated, and it keeps each client's map length to cut what it
reads into the clients' pieces. Ids (I/O systems, decompositions, files) are the servers' own and go back to
the model as they are: every server makes the same calls in the same order and the calls agree on their errors,
so every server numbers them alike.

The servers' systems return every error without saying it: the line goes to each model rank in the answer, and
the rank acts on it by its own error handler. The calls of a model's step (``write_darray``, ``setframe``) get
no answer; an error of one abandons its file (nothing of it is published) and is kept to answer the file's next
call that waits, instead of running it (``closefile`` releases the file).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from climio.capi.calls import SHIFT, SYSTEMS, abandon, last_error
from climio.errors import ClimioError
from climio.model import definition as rules
from climio.pio import calls
from climio.serve import protocol as wire
from climio.serve.protocol import Message

if TYPE_CHECKING:
    from climio.serve.server import Server

T = TypeVar("T")

NO_ANSWER = ("write_darray", "setframe")  # a model's step: the model does not wait for them
ADVANCE = -1  # setframe's frame for PIOc_advanceframe
BOX = 1  # PIO_REARR_BOX, the rearranger of the decompositions made from blocks and files (as attached mode's)
INT64 = np.dtype("i8")


@dataclass(frozen=True)
class Out:
    """What a call answers one model rank: int64 out-values, out-strings and out-data (the spec table's last
    column)."""

    values: Sequence[int] = ()
    strings: Sequence[str] = ()
    data: np.ndarray | None = None


NOTHING = Out()
Answer = Out | list[Out]  # the same for every client, or one per client


@dataclass
class Call:
    """One PIO call as a server's clients sent it. Its arguments are the same on every model rank but a rank's
    own (array lengths, blocks, data), so the first client's arguments stand for all. The round agreed on the count of
    integer arguments and on the strings, so a call they do not fit fails alike on every server; a client's data
    differ, so reading them (:meth:`values`) belongs inside a call's checks, which the servers agree on."""

    name: str
    ident: int
    memtype: int
    messages: list[Message]
    clients: range

    @classmethod
    def of(cls, messages: list[Message], clients: range) -> Call:
        first = messages[0]
        return cls(first.names[0] if first.names else "", first.id, first.arg(1), messages, clients)

    def ints(self, start: int, count: int, client: int = 0) -> list[int]:
        """``count`` integer arguments from ``start``, as a client sent them (the first's by default)."""
        given = self.messages[client].data[0]
        if count < 0 or start + count > given.size:
            raise self.mismatch(f"came with {given.size} integer argument(s), too few for its arguments")
        return given[start:start + count].tolist()

    def integer(self, k: int, client: int = 0) -> int:
        """Integer argument ``k``."""
        return self.ints(k, 1, client)[0]

    @property
    def count(self) -> int:
        """How many integer arguments came."""
        return self.messages[0].data[0].size

    def text(self, k: int) -> str:
        """The call's string argument ``k``."""
        names = self.messages[0].names
        if k + 1 >= len(names):
            raise self.mismatch(f"came with {len(names) - 1} string argument(s), too few for its arguments")
        return names[k + 1]

    def values(self, client: int, dtype: np.dtype, count: int) -> np.ndarray:
        """The first ``count`` values of ``dtype`` of a client's data (a view)."""
        raw = self.messages[client].data[1]
        if raw.size < count * dtype.itemsize:
            raise self.mismatch(f"came from model rank {self.clients[client]} with {raw.size} bytes of data, not "
                                f"{count} values of {dtype.name}")
        return raw[:count * dtype.itemsize].view(dtype)

    def mismatch(self, what: str) -> rules.CallError:
        """The error of a message that is not what the call takes: client and servers speak different versions."""
        return rules.CallError(f"climio serve: PIO's call '{self.name}' {what}: the model's climio is another version "
                               f"than the servers'", calls.NC_EINVAL)

    def memory(self) -> Callable[[np.dtype, int], np.ndarray | None]:
        """The first client's data as a call views its caller's memory: ``(own type, count) -> array`` in the
        call's memory type (0: the call's own type), None for a type PIO's calls do not have."""
        def view(own: np.dtype, count: int) -> np.ndarray | None:
            dtype = calls.memory_type(own, self.memtype)
            return None if dtype is None else self.values(0, dtype, count)
        return view


@dataclass
class Reading:
    """The memory a read fills, made when the call asks for it: zeros of the call's memory type (0: the call's
    own)."""

    memtype: int
    array: np.ndarray | None = None

    def __call__(self, own: np.dtype, count: int) -> np.ndarray | None:
        dtype = calls.memory_type(own, self.memtype)
        self.array = None if dtype is None else np.zeros(count, dtype)
        return self.array


def ok(code: int, value: T | None) -> T:
    """``value``, which a call of climio.pio.calls gives with ``code``: set unless the call failed, whose error (the
    call's line) is raised instead."""
    if code:
        raise rules.CallError(last_error(), code)
    return value  # type: ignore[return-value]


Handler = Callable[["PioCalls", Call], Answer]
HANDLERS: dict[str, tuple[Handler, str]] = {}


def handles(on: str, *names: str) -> Callable[[Handler], Handler]:
    """Make a method the servers' side of PIO's calls ``names``, whose id is an I/O system's (``on`` "system"), a
    file's ("file") or none ("")."""
    def register(method: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = (method, on)
        return method
    return register


class PioCalls:
    """A server's side of PIO's calls: what it keeps beside climio.pio.calls' own tables."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.maplens: dict[int, list[int]] = {}  # a decomposition's map length per client, in client order
        self.kept: dict[int, tuple[int, str]] = {}  # per file, the first error of a call that got no answer
        self.called_apart = ""  # in this round, a call name of some model rank that is not rank 0's

    # -- rounds and answers

    def serve(self, messages: list[Message]) -> None:
        """Run one round's call and answer each client, or keep the error of a call that gets no answer."""
        self.called_apart = ""
        if self.server.names_differ:
            self.first_ranks_names(messages)
        call = Call.of(messages, self.server.clients)
        waits = call.name not in NO_ANSWER
        kept = self.kept.pop(call.ident, None) if waits else None
        answer: Answer = NOTHING
        try:
            if kept is not None and call.name != "closefile":
                raise rules.CallError(kept[1], kept[0])
            self.server.refusal(messages)
            if self.called_apart:
                raise rules.CallError(f"PIO: the model's ranks made different calls ({call.name} on model rank 0, "
                                      f"{self.called_apart} on another): every rank makes the same calls",
                                      calls.NC_EINVAL)
            answer = self.run(call)
            failure = kept
        except ClimioError as err:
            if not err.collective:
                raise  # one server alone: the command line aborts the job
            code = rules.code_of(err)
            failure = kept or (calls.PIO_CODE.get(code, code), str(err))
        if not waits:
            if failure is not None:
                self.kept.setdefault(call.ident, failure)
                self.give_up(call.ident, failure[1])
        elif failure is not None:
            self.answer(*failure)
        else:
            self.answer(0, "", answer)

    def first_ranks_names(self, messages: list[Message]) -> None:
        """Give every message of the round model rank 0's strings (a path, a name), as PIO2's async mode reads a
        call's arguments on the first computational task; a call name that differs from rank 0's is kept in
        called_apart, a refusal of the call."""
        names = self.server.comm.bcast(messages[0].names if self.server.comm.Get_rank() == 0 else None)
        apart = next((m.names[0] for m in messages if m.names[:1] != names[:1]), "")
        self.called_apart = next((a for a in self.server.comm.allgather(apart) if a), "")  # agreed
        for m in messages:
            m.names = names

    def give_up(self, ncid: int, line: str) -> None:
        """Abandon a file being written whose write failed while nobody waited (collective, as the error is agreed):
        the model learns of it at its next call, and nothing of the file is published."""
        system = SYSTEMS.get(ncid >> SHIFT)
        f = system.files.get(ncid) if isinstance(system, calls.PioSystem) else None
        if isinstance(f, calls.PioFile) and f.input is None and not f.abandoned:
            abandon(f, line)

    def run(self, call: Call) -> Answer:
        """The call's handler, once its id is known to be of one of the servers' I/O systems (climio.pio.calls ends
        the job on an id of none, which model ranks could not agree on; the servers can)."""
        found = HANDLERS.get(call.name)
        if found is None:
            raise call.mismatch("is none the servers know")
        handler, on = found
        if on == "system" and not isinstance(SYSTEMS.get(call.ident), calls.PioSystem):
            raise rules.CallError(f"no I/O system with id {call.ident}: pass an id of PIOc_Init_Intracomm",
                                  calls.NC_EBADID)
        if on == "file" and not isinstance(SYSTEMS.get(call.ident >> SHIFT), calls.PioSystem):
            raise rules.CallError(f"no open file with id {call.ident}", calls.NC_EBADID)
        return handler(self, call)

    def answer(self, code: int, line: str, answer: Answer = NOTHING) -> None:
        """Each client's answer: ``[status, 0, code, bytes of the line]``, the line, and on success its payload."""
        header = np.array([rules.exit_status(code) if code else 0, 0, code, len(line.encode())], np.int64)
        for k, client in enumerate(self.server.clients):
            out = answer[k] if isinstance(answer, list) else answer
            payload = None if code else wire.pio_answer(out.values, out.strings, out.data)
            self.server.send_answer(client, header, line, payload)

    def ask(self, call: Call, question: Callable[[calls.PioFile], T]) -> T:
        """A question about the call's file (climio.pio.calls.inquire)."""
        code, answer = calls.inquire(call.ident, question)
        return ok(code, answer)

    # -- I/O systems

    @handles("", "init")
    def init(self, call: Call) -> Answer:
        num_iotasks, stride, base, rearr = call.ints(0, 4)
        code, iosysid = calls.init(self.server.comm, num_iotasks, stride, base, rearr,
                                   model_size=self.server.model_size)
        return ok(code, Out([iosysid]))

    @handles("system", "free_iosystem")
    def free_iosystem(self, call: Call) -> Answer:
        code, line = self.free(call.ident)
        if code:
            raise rules.CallError(line, code)
        return NOTHING

    def free(self, iosysid: int) -> tuple[int, str]:
        """Free an I/O system (its files being written are published) and forget what this side kept of it. The
        first error kept for one of its files, else the freeing's own (code 0: none)."""
        code = calls.free_iosystem(iosysid)
        failure = (code, last_error() if code else "")
        for ioid in [ioid for ioid in self.maplens if ioid >> SHIFT == iosysid]:
            del self.maplens[ioid]
        kept = [self.kept.pop(ncid) for ncid in list(self.kept) if ncid >> SHIFT == iosysid]
        return kept[0] if kept else failure

    def finalize(self, publish: bool = True) -> tuple[int, str]:
        """FINALIZE: free every PIO system still open, its files being written published, or discarded when the
        model ended without freeing it (its MPI_Finalize came first). The first failure as a reply gives it
        (climio's code: EIO for a fault, else EINVAL), or (0, "")."""
        failures = []
        for system in list(SYSTEMS.values()):
            if isinstance(system, calls.PioSystem) and not system.finalized:
                for ncid in [] if publish else list(system.files):
                    self.give_up(ncid, "the model ended without closing it")
                failures.append(self.free(system.id))
        code, line = next((f for f in failures if f[0]), (0, ""))
        if code:
            return rules.EIO if rules.exit_status(code) == 1 else rules.EINVAL, line
        return 0, ""

    @handles("system", "numiotasks")
    def numiotasks(self, call: Call) -> Answer:
        code, count = calls.numiotasks(call.ident)
        return ok(code, Out([count]))

    @handles("system", "deletefile")
    def deletefile(self, call: Call) -> Answer:
        return ok(calls.deletefile(call.ident, call.text(0)), NOTHING)

    @handles("system", "set_hint")
    def set_hint(self, call: Call) -> Answer:
        return ok(calls.set_hint(call.ident, call.text(0), call.text(1)), NOTHING)

    @handles("", "iotype_available")
    def iotype_available(self, call: Call) -> Answer:
        return Out([int(calls.iotype_available(call.integer(0)))])

    # -- decompositions

    def decomposition(self, call: Call, pio_type: int, grid: list[int], maps: list[np.ndarray],
                      has_io_blocks: bool = False, rearr: int = BOX) -> int:
        """A decomposition of the clients' maps side by side (0-based offsets, -1 a hole); its ioid."""
        ends = np.cumsum([m.size for m in maps])

        def task_of(k: int) -> int:
            return self.server.clients[int(np.searchsorted(ends, k, side="right"))]
        code, ioid = calls.init_decomp(call.ident, pio_type, grid, np.concatenate(maps), has_io_blocks, rearr,
                                       task_of)
        ok(code, None)
        self.maplens[ioid] = [m.size for m in maps]
        return ioid

    @handles("system", "init_decomp")
    def init_decomp(self, call: Call) -> Answer:
        pio_type, ndims, base, rearr, has_io_blocks = call.ints(0, 5)
        grid = call.ints(5, ndims)
        compmaps = self.server.agreed(lambda: [call.values(k, INT64, m.data[1].size // INT64.itemsize)
                                               for k, m in enumerate(call.messages)])
        maps = [compmap - base for compmap in compmaps]  # 0-based; a hole is -1 either way
        return Out([self.decomposition(call, pio_type, grid, maps, bool(has_io_blocks), rearr)])

    @handles("system", "init_decomp_blocks")
    def init_decomp_blocks(self, call: Call) -> Answer:
        pio_type, ndims = call.ints(0, 2)
        grid = call.ints(2, ndims)
        maps = [calls.block_offsets(grid, call.ints(2 + ndims, ndims, k), call.ints(2 + 2 * ndims, ndims, k))
                for k in range(len(call.messages))]
        ioid = self.decomposition(call, pio_type, grid, maps)
        return [Out([ioid, m.size]) for m in maps]

    @handles("system", "freedecomp")
    def freedecomp(self, call: Call) -> Answer:
        ioid = call.integer(0)
        ok(calls.freedecomp(call.ident, ioid), None)
        del self.maplens[ioid]
        return NOTHING

    @handles("system", "write_nc_decomp")
    def write_nc_decomp(self, call: Call) -> Answer:
        cmode, ioid = call.ints(0, 2)  # the third, fortran_order, changes nothing: the file holds C order
        return ok(calls.write_nc_decomp(call.ident, call.text(0), cmode, ioid, call.text(1), call.text(2),
                                        lambda d: self.model_maps(d, ioid)), NOTHING)

    def model_maps(self, d: calls.PioDecomp, ioid: int) -> list[np.ndarray] | None:
        """Every model rank's map of a decomposition, in rank order, on the first server (None elsewhere):
        collective, as attached mode gathers every task's."""
        pieces = np.split(d.offsets, np.cumsum(self.maplens[ioid])[:-1])
        gathered = self.server.comm.gather(list(zip(self.server.clients, pieces)), root=0)
        if gathered is None:
            return None
        return [offsets for _, offsets in sorted(chain.from_iterable(gathered), key=lambda piece: piece[0])]

    @handles("system", "read_nc_decomp")
    def read_nc_decomp(self, call: Call) -> Answer:
        code, found = calls.decomp_file(call.ident, call.text(0), self.server.model_size)
        m = ok(code, found)
        maps = [m.offsets(client) for client in self.server.clients]
        ioid = self.decomposition(call, call.integer(0), list(m.dims), maps)
        return [Out([ioid, 0, mine.size], [m.title, m.history], mine) for mine in maps]

    # -- files

    @handles("system", "createfile")
    def createfile(self, call: Call) -> Answer:
        iotype, mode = call.ints(0, 2)
        code, ncid = calls.createfile(call.ident, iotype, call.text(0), mode)
        return ok(code, Out([ncid]))

    @handles("system", "openfile")
    def openfile(self, call: Call) -> Answer:
        iotype, mode = call.ints(0, 2)  # the third, retry, changes nothing: climio opens each iotype's files alike
        iotype = iotype if iotype >= 0 else calls.PNETCDF  # -1: none given
        code, ncid = calls.openfile(call.ident, iotype, call.text(0), mode)
        return ok(code, Out([ncid, iotype]))

    @handles("file", "closefile", "sync", "enddef", "redef")
    def file_call(self, call: Call) -> Answer:
        act = {"closefile": calls.closefile, "sync": calls.sync, "enddef": calls.enddef, "redef": calls.redef}
        return ok(act[call.name](call.ident), NOTHING)

    @handles("file", "set_fill")
    def set_fill(self, call: Call) -> Answer:
        code, old = calls.set_fill(call.ident, call.integer(0))
        return ok(code, Out([old]))

    @handles("", "file_is_open")
    def file_is_open(self, call: Call) -> Answer:
        return Out([int(calls.file_is_open(call.ident))])

    # -- inquiry

    @handles("file", "inq")
    def inq(self, call: Call) -> Answer:
        return Out(self.ask(call, calls.inq_numbers))

    @handles("file", "inq_dim")
    def inq_dim(self, call: Call) -> Answer:
        dimid = call.integer(0)
        name, length = self.ask(call, lambda f: calls.dim_of(f, dimid))
        return Out([length], [name])

    @handles("file", "inq_dimid")
    def inq_dimid(self, call: Call) -> Answer:
        name = call.text(0)
        return Out([self.ask(call, lambda f: calls.dimid_of(f, name))])

    @handles("file", "inq_varid")
    def inq_varid(self, call: Call) -> Answer:
        name = call.text(0)
        return Out([self.ask(call, lambda f: calls.varid_of(f, name))])

    @handles("file", "inq_var")
    def inq_var(self, call: Call) -> Answer:
        """Its type, dimensions and attributes, and its shape now (a model rank sizes its buffers by them)."""
        varid = call.integer(0)

        def described(f: calls.PioFile) -> tuple[calls.Variable, tuple[int, ...]]:
            v = calls.variable_of(f, varid)
            return v, f.shape(v)
        v, shape = self.ask(call, described)
        return Out([calls.xtype_number(v.dtype), len(v.dimids), len(v.attrs), *v.dimids, *shape], [v.name])

    @handles("file", "inq_var_fill")
    def inq_var_fill(self, call: Call) -> Answer:
        varid = call.integer(0)
        no_fill, fill, given = self.ask(call, lambda f: (*calls.var_fill(f, varid), varid in f.filled))
        return Out([int(no_fill), int(given)], data=fill)  # given: write_darray's fill values are checked

    @handles("file", "inq_var_deflate")
    def inq_var_deflate(self, call: Call) -> Answer:
        varid = call.integer(0)
        return Out(self.ask(call, lambda f: calls.deflation(f, varid)))

    @handles("file", "inq_var_chunking")
    def inq_var_chunking(self, call: Call) -> Answer:
        varid = call.integer(0)
        storage, chunks = self.ask(call, lambda f: calls.chunking(f, varid))
        return Out([storage, *chunks])

    @handles("file", "inq_att")
    def inq_att(self, call: Call) -> Answer:
        varid, name = call.integer(0), call.text(0)
        data, xtype, attid = self.ask(call, lambda f: calls.attribute(f, varid, name))
        return Out([xtype, data.size, attid])

    @handles("file", "inq_attname")
    def inq_attname(self, call: Call) -> Answer:
        varid, attnum = call.ints(0, 2)
        return Out(strings=[self.ask(call, lambda f: calls.attname(f, varid, attnum))])

    # -- definitions

    @handles("file", "rename")
    def rename(self, call: Call) -> Answer:
        what, ident, has_newname = call.ints(0, 3)
        newname = call.text(1) if has_newname else None  # None: delete the attribute
        return ok(calls.rename(call.ident, what, ident, call.text(0), newname), NOTHING)

    @handles("file", "def_dim")
    def def_dim(self, call: Call) -> Answer:
        code, dimid = calls.def_dim(call.ident, call.text(0), call.integer(0))
        return ok(code, Out([dimid]))

    @handles("file", "def_var")
    def def_var(self, call: Call) -> Answer:
        xtype, ndims = call.ints(0, 2)
        code, varid = calls.def_var(call.ident, call.text(0), xtype, call.ints(2, ndims))
        return ok(code, Out([varid]))

    @handles("file", "def_var_fill")
    def def_var_fill(self, call: Call) -> Answer:
        varid, no_fill, has_fill = call.ints(0, 3)
        fill = (lambda dtype: call.values(0, dtype, 1).copy()) if has_fill else None
        return ok(calls.def_var_fill(call.ident, varid, no_fill, fill), NOTHING)

    @handles("file", "def_var_deflate")
    def def_var_deflate(self, call: Call) -> Answer:
        varid, shuffle, deflate, level = call.ints(0, 4)
        return ok(calls.def_var_deflate(call.ident, varid, shuffle, deflate, level), NOTHING)

    @handles("file", "def_var_chunking")
    def def_var_chunking(self, call: Call) -> Answer:
        varid, storage, has_chunks = call.ints(0, 3)
        chunks = call.ints(3, call.count - 3) if has_chunks else None
        return ok(calls.def_var_chunking(call.ident, varid, storage, chunks), NOTHING)

    @handles("file", "def_var_quantize")
    def def_var_quantize(self, call: Call) -> Answer:
        varid, mode, nsd = call.ints(0, 3)
        return ok(calls.def_var_quantize(call.ident, varid, mode, nsd), NOTHING)

    @handles("file", "put_att")
    def put_att(self, call: Call) -> Answer:
        varid, xtype, length = call.ints(0, 3)
        return ok(calls.put_att(call.ident, varid, call.text(0), xtype, length, call.memory()), NOTHING)

    @handles("file", "get_att")
    def get_att(self, call: Call) -> Answer:
        code, values = calls.get_att(call.ident, call.integer(0), call.text(0), call.memtype)
        return ok(code, Out(data=values))

    # -- data

    @handles("file", "vars")
    def vars(self, call: Call) -> Answer:
        """Undistributed values: written from the first model rank's (as attached mode writes the first task's;
        each server checks its first client's), read for every model rank."""
        varid, write, *given = call.ints(0, 5)
        ndims = self.ask(call, lambda f: len(calls.variable_of(f, varid).dimids))
        slab: list[list[int] | None] = []
        at = 5
        for has in given:  # start, count, stride: ndims each, when given
            slab.append(call.ints(at, ndims) if has else None)
            at += ndims if has else 0
        start, count, stride = slab
        if write:
            return ok(calls.put_vars(call.ident, varid, start, count, stride, call.memory()), NOTHING)
        reading = Reading(call.memtype)
        ok(calls.get_vars(call.ident, varid, start, count, stride, reading), None)
        return Out(data=reading.array)

    @handles("file", "setframe")
    def setframe(self, call: Call) -> Answer:
        varid, frame = call.ints(0, 2)
        return ok(calls.setframe(call.ident, varid, None if frame == ADVANCE else frame), NOTHING)

    def check_lengths(self, call: Call, arraylens: list[int], maplens: list[int]) -> None:
        """Refuse a client's distributed array shorter than its map, as attached mode refuses a task's."""
        for client, arraylen, maplen in zip(self.server.clients, arraylens, maplens):
            if arraylen < maplen:
                path = SYSTEMS[call.ident >> SHIFT].files[call.ident].path
                raise calls.short_array(path, arraylen, client, maplen)

    @handles("file", "write_darray")
    def write_darray(self, call: Call) -> Answer:
        """Each client's first map-length values of each array, side by side; the fill values of the first."""
        nvars, ioid, _, own_type, has_frames, has_fills = call.ints(0, 6)
        nvars = max(nvars, 0)  # none: refused by the call
        varids = call.ints(6, nvars)
        frames = call.ints(6 + nvars, nvars) if has_frames else None
        maplens = self.maplens.get(ioid, [])  # none: an ioid the call refuses
        arraylens = [call.integer(2, k) for k in range(len(call.messages))]

        def memory(own: np.dtype, count: int) -> np.ndarray | None:
            dtype = calls.memory_type(own, call.memtype)
            if dtype is None:
                return None
            self.check_lengths(call, arraylens, maplens)
            pieces = [call.values(k, dtype, nvars * arraylen).reshape(nvars, arraylen)[:, :maplen]
                      for k, (arraylen, maplen) in enumerate(zip(arraylens, maplens))]
            return np.concatenate(pieces, axis=1).reshape(-1)

        def fills(dtype: np.dtype) -> list[np.ndarray | None]:
            arrays = nvars * arraylens[0]
            given = call.values(0, dtype, arrays + nvars)[arrays:].copy() if has_fills else None
            return calls.split_fills(given, nvars)

        return ok(calls.write_darray(call.ident, varids, ioid, sum(maplens), memory, frames, fills, bool(own_type)),
                  NOTHING)

    @handles("file", "read_darray")
    def read_darray(self, call: Call) -> Answer:
        """One record into the servers' concatenated array; each client gets its piece."""
        varid, ioid, _, frame, own_type = call.ints(0, 5)
        maplens = self.maplens.get(ioid, [])  # none: an ioid the call refuses
        arraylens = [call.integer(2, k) for k in range(len(call.messages))]
        reading = Reading(call.memtype)

        def memory(own: np.dtype, count: int) -> np.ndarray | None:
            self.check_lengths(call, arraylens, maplens)
            return reading(own, count)
        ok(calls.read_darray(call.ident, varid, ioid, sum(maplens), memory, None if frame < 0 else frame,
                             bool(own_type)), None)
        ends = np.cumsum([0, *maplens])
        return [Out(data=reading.array[lo:hi]) for lo, hi in zip(ends[:-1], ends[1:])]  # type: ignore[index]
