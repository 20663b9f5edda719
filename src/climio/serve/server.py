"""``climio serve``: I/O server ranks that receive model ranks' output and write it through :class:`ModelOutput`.

Model rank ``r`` talks to server ``r % S`` only. Every model rank sends every message (the API is collective
over the model, as PIO's), so a server takes one message from each of its clients in turn (a *round*); the
servers check that their rounds agree, then act on them together over their own communicator. A server's
local array of a field is its clients' pieces side by side, in client order, so its decomposition is the
concatenation of their compmaps, and :class:`ModelOutput` writes the file with any strategy and mode.

A failure the servers agree on (an unwritable path, a full disk, a definition the mode refuses) abandons the
file (nothing is published, an older file stays) and is sent to each client as one line; later messages
about that file are dropped. A failure on one server alone cannot be agreed on and aborts the job, as the
command line does: nothing ever waits forever.

Reads (OPEN, INQ_VARID, READ) are synchronous: the client waits, so each gets exactly one answer on every
client, never dropped, the servers' agreed error included. A file opened for reading is read with
:class:`ModelInput` over the same concatenated decomposition, and each client gets its piece of the record.

A model that calls PIO's API sends each call as a message of kind PIO, which :mod:`climio.serve.pio_server` runs
as the same call of :mod:`climio.pio.calls` over the servers' communicator.
"""

from __future__ import annotations

import dataclasses
import math
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from climio.core import collectives, mpi, ncio, trace, waiting
from climio.core.ncio.schema import fill_value
from climio.errors import ClimioError
from climio.model import definition as rules
from climio.model.decomposition import GridDecomposition, from_compmap
from climio.model.input import READ_STRATEGIES, ModelInput
from climio.model.output import Field, ModelOutput, applicable_modes
from climio.model.strategy import parse_strategy
from climio.serve import connect
from climio.serve import protocol as wire
from climio.serve.pio_server import PioCalls
from climio.serve.protocol import Kind, Message, Op

if TYPE_CHECKING:
    from mpi4py import MPI

T = TypeVar("T")


@dataclass
class Accumulator:
    """One field's online reduction on this server: float64 running values over ``count`` steps."""

    op: Op
    count: int
    values: np.ndarray | None = None
    seen: int = 0  # steps of the current period
    next: int = 0  # the frame expected next

    def add(self, frame: int, local: np.ndarray, name: str) -> np.ndarray | None:
        """Take step ``frame``; at the period's last step, the reduced record (else None)."""
        if frame != self.next:
            raise rules.CallError(f"{name} is reduced over {self.count} steps: its records come in order, "
                                  f"got frame {frame} where {self.next} was next")
        self.next += 1
        x = local.astype(np.float64)  # a copy: the first step starts the sums exactly as numpy's reduce does
        if self.seen == 0 or self.op == Op.INSTANT:
            self.values = x
        elif self.op in (Op.MEAN, Op.SUM):
            self.values += x
        else:
            (np.minimum if self.op == Op.MIN else np.maximum)(self.values, x, out=self.values)
        self.seen += 1
        if self.seen < self.count:
            return None
        self.seen = 0
        return self.values / self.count if self.op == Op.MEAN else self.values


@dataclass
class ServedFile:
    """A file the servers define and write for the model, or one they read for it (``input``)."""

    definition: rules.Definition
    pieces: tuple[int, ...]  # grid points per client, in client order
    codecs: dict[int, str] = field(default_factory=dict)
    reduce: dict[int, tuple[Op, int]] = field(default_factory=dict)
    output: ModelOutput | None = None
    reductions: dict[str, Accumulator] = field(default_factory=dict)
    every: int = 0  # steps per record of a reduced file (0: every step is a record)
    period_start: float = 0.0
    input: ModelInput | None = None


class Server:
    """One server rank: its clients, the servers' communicator and what the model defined."""

    def __init__(self, comm: MPI.Intracomm, inter: MPI.Intercomm, model_size: int) -> None:
        self.comm, self.inter = comm, inter
        self.clients = range(comm.Get_rank(), model_size, comm.Get_size())
        self.model_size = model_size
        self.decomps: dict[int, tuple[GridDecomposition, tuple[int, ...]] | str] = {}
        self.files: dict[int, ServedFile] = {}
        self.failed: set[int] = set()
        self.queues: dict[int, deque[Message]] = {c: deque() for c in self.clients}  # messages of packets taken
        self.names_differ = False  # in the last round, between some model ranks
        self.refused = False  # the last round's call, by some model rank
        self.batch = 1  # the last round's call and the same calls queued after it on every server: taken together
        self.pio: PioCalls | None = None  # PIO's calls, from the first on

    # -- the wire

    def receive(self, client: int) -> Message:
        """The next message of ``client`` about a file that has not failed (those are dropped, but for the
        synchronous kinds: their client waits for an answer). PIO's calls are never dropped: their ids are not
        climio's files."""
        queue = self.queues[client]
        while True:
            if not queue:
                self.wait_for_packet(client)
            message = queue.popleft()
            if message.kind in (Kind.DECOMP, Kind.FINALIZE, Kind.PIO, *wire.SYNC) or message.id not in self.failed:
                return message

    def take_packet(self, client: int, status: MPI.Status) -> None:
        """Receive the packet whose probe gave ``status`` into its client's queue; a client that dies while it
        sends leaves the receive unfinished forever, so it is polled, for half the timeout at most."""
        from mpi4py import MPI

        packet = np.empty(status.Get_count(MPI.BYTE), np.uint8)
        request = self.inter.Irecv([packet, MPI.BYTE], source=client, tag=wire.TAG_PACKET)
        if not connect.within_timeout(request.Test, connect.timeout() / 2):
            raise ClimioError(f"climio serve: model rank {client} stopped in the middle of a message of "
                              f"{packet.size} bytes: it died or hangs; nothing was published")
        self.queues[client].extend(wire.unpack(packet))

    def take_arrived(self) -> None:
        """Take every packet that has arrived from any client, without waiting: queued messages can be taken
        together."""
        from mpi4py import MPI

        status = MPI.Status()
        for client in self.clients:
            while self.inter.Iprobe(source=client, tag=wire.TAG_PACKET, status=status):
                self.take_packet(client, status)

    def wait_for_packet(self, client: int) -> None:
        """Poll until ``client``'s next packet is in its queue, taking the other clients' packets meanwhile. A
        blocking probe would keep this rank from a stop signal and spin its core; polling sleeps between
        probes (at most 10 ms), and lets a server name a model rank that stopped sending while another of its
        clients is already at a later call: that rank died or hangs, and the job ends with its number."""
        from mpi4py import MPI

        status, pause, deadline = MPI.Status(), 1e-5, None
        while True:
            if self.inter.Iprobe(source=client, tag=wire.TAG_PACKET, status=status):
                self.take_packet(client, status)
                return
            others = [c for c in self.clients if c != client]
            for other in others:
                if self.inter.Iprobe(source=other, tag=wire.TAG_PACKET, status=status):
                    self.take_packet(other, status)
                    pause = 1e-5
            ahead = [c for c in others if self.queues[c]]
            if ahead and deadline is None:  # half the timeout: before the rank that went on gives up on us
                deadline = time.monotonic() + connect.timeout() / 2
            elif ahead and time.monotonic() > deadline:
                raise ClimioError(f"climio serve: model rank {client} sent nothing for {connect.timeout() / 2:g} s "
                                  f"(half of CLIMIO_SERVE_TIMEOUT) while model rank {ahead[0]} went on: model rank "
                                  f"{client} died or hangs; nothing was published")
            time.sleep(pause)
            pause = min(2 * pause, 1e-2)

    def reply(self, ident: int, code: int, text: str = "") -> None:
        """OK (code 0) or an error, to each client of this server."""
        header = np.array([wire.Reply.ERROR if code else wire.Reply.OK, ident, code, len(text.encode())], np.int64)
        for client in self.clients:
            self.inter.Send(wire.buffer(header), dest=client, tag=wire.TAG_REPLY)
            if text:
                self.inter.Send(wire.buffer(np.frombuffer(text.encode(), np.uint8)), dest=client,
                                tag=wire.TAG_REPLY_TEXT)

    def answer(self, code: int, text: str = "", values: list[int] | None = None,
               data: list[np.ndarray] | None = None, fills: list[int] | None = None) -> None:
        """A synchronous answer to each client: OK (code 0) with its value (and, for READ, its data, and in the
        code's word the fill value for its halo) or an error."""
        for k, client in enumerate(self.clients):
            header = np.array([wire.Reply.ERROR if code else wire.Reply.OK, values[k] if values else 0,
                               fills[k] if fills else code, len(text.encode())], np.int64)
            self.send_answer(client, header, text, data[k] if data is not None and not code else None)

    def send_answer(self, client: int, header: np.ndarray, text: str, data: np.ndarray | None) -> None:
        """One synchronous answer to ``client``: its header, its text (when the header counts some) and its data."""
        self.inter.Send(wire.buffer(header), dest=client, tag=wire.TAG_ANSWER)
        if text:
            self.inter.Send(wire.buffer(np.frombuffer(text.encode(), np.uint8)), dest=client, tag=wire.TAG_ANSWER_TEXT)
        if data is not None:
            self.inter.Send(wire.buffer(data), dest=client, tag=wire.TAG_ANSWER_DATA)

    def round(self) -> list[Message]:
        """One message from each client; the clients and the servers must be at the same call."""
        with trace.phase("serve:receive"):
            messages = [self.receive(c) for c in self.clients]
        # kind, id, a, b: a frame too (DECOMP's b is each rank's own map length); a refused call: kind and id
        keys = {(int(m.kind), m.id) + ((0, 0) if m.refused else (m.arg(0), 0) if m.kind == Kind.DECOMP
                                       else (m.arg(0), m.arg(1))) for m in messages}
        texts = [zlib.crc32("\0".join(m.names).encode()) for m in messages if not m.refused]  # names, paths, values
        refused = int(any(m.refused for m in messages))
        queued = self.batchable(messages)
        most = np.iinfo(np.int64).max  # none: the other end of the range, which any key replaces
        low = np.array([*min(keys, default=(most,) * 4), min(texts, default=most), refused, queued], np.int64)
        high = np.array([*max(keys, default=(-most,) * 4), max(texts, default=-most), refused, queued], np.int64)
        if self.comm.Get_size() > 1:  # one agreement: the lows' minimum as the maximum of their negatives
            from mpi4py import MPI

            both = np.concatenate([-low, high])
            waiting.wait(self.comm.Iallreduce(MPI.IN_PLACE, wire.buffer(both), op=MPI.MAX))
            low, high = -both[:low.size], both[low.size:]
        self.refused, self.batch = bool(high[5]), int(low[6])
        if (low[:2] != high[:2]).any() or (not self.refused and (low[2:4] != high[2:4]).any()):  # every server
            self.give_up(f"climio serve: the model's ranks made different calls (kind, id, arguments "
                         f"{low[:4].tolist()} and {high[:4].tolist()}): every rank must make the same calls in the "
                         f"same order")
        self.names_differ = bool(low[4] != high[4]) and low[4] <= high[4]
        return messages

    def batchable(self, messages: list[Message]) -> int:
        """How many of this round's calls and the same calls queued after them every client has (at least 1):
        writes of one file being written, refused by no client, without reductions (held in order)."""
        head = messages[0]
        f = self.files.get(head.id)
        if head.kind != Kind.WRITE or f is None or f.output is None or f.reductions or \
                any(m.refused or m.names for m in messages):
            return 1
        self.take_arrived()
        same = [next((k for k, m in enumerate(self.queues[c]) if m.kind != Kind.WRITE or m.id != head.id or
                      m.refused or m.names), len(self.queues[c])) for c in self.clients]
        return 1 + min(same, default=0)

    def refusal(self, messages: list[Message]) -> None:
        """A call some model rank refused itself (a bad variable id, memory type or frame of its own): the first
        refusing rank's code and message, on every client (agreed over the servers)."""
        if not self.refused:
            return

        def check() -> None:
            for m in messages:
                if m.refused:
                    raise rules.CallError(m.names[0] if m.names else "a model rank refused the call", m.arg(0))
        self.agreed(check)

    def same_names(self, messages: list[Message]) -> None:
        """Refuse a call whose names (a path, a variable's name, an attribute's value) differ between model ranks:
        the servers would otherwise act on one rank's silently. Agreed: the file fails on every rank."""
        if not self.names_differ:
            return

        def check() -> None:
            for client, m in zip(self.clients, messages):
                if m.names != messages[0].names:
                    raise rules.CallError(f"{messages[0].kind.name}: model rank {self.clients[0]} passed "
                                          f"{', '.join(messages[0].names)} and model rank {client} "
                                          f"{', '.join(m.names)}: every rank passes the same")
            raise rules.CallError(f"{messages[0].kind.name}: the model's ranks passed different names (model rank "
                                  f"{self.clients[0]}: {', '.join(messages[0].names)}): every rank passes the same")
        self.agreed(check)

    def give_up(self, message: str) -> None:
        """End the servers (collective): every model rank gets ``message`` at its next call, the command line
        removes the files not yet published and exits with status 2."""
        self.reply(wire.SYSTEM, rules.EINVAL, message)
        raise connect.Told(message, collective=True)

    # -- the loop

    def serve(self) -> None:
        """Act on rounds until every client has finalized."""
        while True:
            messages = self.round()
            kind, ident = messages[0].kind, messages[0].id
            if kind == Kind.PUT_TIME:  # a step begins: the collective calls so far, for `climio bench`
                trace.tracer().count("serve:step", collectives.calls() or 0)
            if kind == Kind.FINALIZE:  # a: 1 when the model's MPI_Finalize came first: its open files are discarded
                publish = messages[0].arg(0) != 1
                for number in list(self.files):
                    self.act(number, lambda f, _: self.close(f, publish=publish), messages)
                code, line = self.pio.finalize(publish) if self.pio is not None else (0, "")
                self.reply(wire.SYSTEM, code, line)
                return
            if kind == Kind.DECOMP:
                self.decomposition(messages)
                continue
            if kind == Kind.PIO:
                self.pio = self.pio or PioCalls(self)
                self.pio.serve(messages)
                continue
            if kind in wire.SYNC:
                self.synchronous(messages)
                continue
            if kind == Kind.WRITE and self.batch > 1:
                self.act(ident, self.write_batch, messages)
                continue
            handler: Callable[[ServedFile, list[Message]], None] = getattr(self, kind.name.lower())
            self.act(ident, handler, messages)

    def act(self, ident: int, handler: Callable[[ServedFile, list[Message]], None], messages: list[Message]) -> None:
        """Run a handler on file ``ident``; an agreed error abandons the file and goes to every client."""
        try:
            self.refusal(messages)
            self.same_names(messages)
            if messages[0].kind == Kind.CREATE:
                self.create(ident, messages)
            elif ident not in self.files:
                raise rules.CallError(f"no open file with id {ident}", rules.EBADID)
            elif self.files[ident].input is not None and messages[0].kind not in (Kind.CLOSE, Kind.FINALIZE):
                raise rules.CallError(f"{self.files[ident].definition.path}: {messages[0].kind.name} on a file "
                                      f"opened for reading", rules.ESTATE)
            else:
                handler(self.files[ident], messages)
        except ClimioError as err:
            if not err.collective:
                raise  # one server alone: the command line aborts the job
            self.failed.add(ident)
            served = self.files.pop(ident, None)
            if served is not None and served.output is not None:
                served.output.__exit__(type(err), err, None)
            if served is not None and served.input is not None:
                served.input.close()
            self.reply(ident, rules.code_of(err), str(err))

    def agreed(self, work: Callable[[], T]) -> T:
        """``work`` (no communication) on every server; the first server's error, if any, on all of them."""
        problem: tuple[int, str] | None = None
        result = None
        try:
            result = work()
        except ClimioError as err:
            problem = (rules.code_of(err), str(err))
        if self.comm.Get_size() > 1 and not mpi.all_true(self.comm, problem is None):
            problem = next(p for p in self.comm.allgather(problem) if p is not None)
        if problem is not None:
            raise rules.CallError(problem[1], problem[0])
        return result  # type: ignore[return-value]

    # -- the messages

    def decomposition(self, messages: list[Message]) -> None:
        """Each client's compmap, side by side: this server's share of the grid (kept as an error to report at
        the create that uses it)."""
        mine = {tuple(int(g) for g in m.data[0]) for m in messages}
        grids = set().union(*self.comm.allgather(mine))  # every model rank's, through its server

        def build() -> tuple[GridDecomposition, tuple[int, ...]]:
            if len(grids) != 1 or not all(g > 0 for g in next(iter(grids))):
                raise ClimioError(f"decomposition {messages[0].id}: the model ranks gave the grids {sorted(grids)}: "
                                  f"give one grid of positive lengths")
            grid = next(iter(grids))
            maps = [m.data[1] for m in messages]
            bad = [(c, int(m[(m < 0) | (m > math.prod(grid))][0])) for c, m in zip(self.clients, maps)
                   if ((m < 0) | (m > math.prod(grid))).any()]
            if bad:
                raise ClimioError(f"decomposition {messages[0].id}: compmap entry {bad[0][1]} of model rank "
                                  f"{bad[0][0]} is outside 1..{math.prod(grid)} (0 for a hole)")
            compmap = np.concatenate(maps) if maps else np.zeros(0, np.int64)
            return (from_compmap(grid, compmap, self.comm.Get_size(), self.comm.Get_rank()),
                    tuple(m.size for m in maps))
        try:
            self.decomps[messages[0].id] = self.agreed(build)
        except ClimioError as err:
            self.decomps[messages[0].id] = str(err)

    def create(self, ident: int, messages: list[Message]) -> None:
        m = messages[0]

        def check() -> ServedFile:
            path, mode, strategy = m.names
            found = self.decomps.get(m.arg(0), f"no decomposition with id {m.arg(0)}")
            if isinstance(found, str):
                raise rules.CallError(f"{path}: {found}", rules.EBADID)
            if mode not in ncio.MODES:
                raise ClimioError(f"{path}: mode '{mode}': choose one of {', '.join(ncio.MODES)}")
            if mode not in applicable_modes(strategy):
                raise ClimioError(f"{path}: strategy '{strategy}' does not apply to mode '{mode}': it works with "
                                  f"{', '.join(applicable_modes(strategy))}")
            return ServedFile(rules.Definition(path, found[0], mode, strategy, m.arg(1) == rules.CLOBBER),
                              found[1])
        self.files[ident] = self.agreed(check)

    def def_dim(self, f: ServedFile, messages: list[Message]) -> None:
        d, m = f.definition, messages[0]
        self.agreed(lambda: self.defining(f, "DEF_DIM") and d.check_dim(m.names[0], m.arg(0)))
        d.dims.append((m.names[0], m.arg(0)))

    def def_var(self, f: ServedFile, messages: list[Message]) -> None:
        d, m = f.definition, messages[0]
        dimids = tuple(int(i) for i in m.data[0])
        d.variables.append(self.agreed(lambda: self.defining(f, "DEF_VAR")
                                       and d.check_var(m.names[0], m.arg(0), dimids)))

    def put_att(self, f: ServedFile, messages: list[Message]) -> None:
        d, m = f.definition, messages[0]

        def check() -> dict[str, object]:
            self.defining(f, "PUT_ATT")
            rules.check_name(m.names[0], f"{d.path}: attribute")
            return d.attrs if m.arg(0) == rules.GLOBAL else d.variable(m.arg(0)).attrs
        target = self.agreed(check)
        target[m.names[0]] = m.names[1] if m.arg(1) == rules.CHAR else m.data[0]

    def def_compress(self, f: ServedFile, messages: list[Message]) -> None:
        d, m = f.definition, messages[0]
        v = self.agreed(lambda: self.defining(f, "DEF_COMPRESS") and d.variable(m.arg(0)))
        v.deflate, v.quantize = m.arg(1), (rules.QUANTIZE[m.arg(2)], m.arg(3)) if m.arg(2) else None
        if m.names:
            f.codecs[m.arg(0)] = m.names[0]

    def def_reduce(self, f: ServedFile, messages: list[Message]) -> None:
        d, m = f.definition, messages[0]
        self.agreed(lambda: self.defining(f, "DEF_REDUCE") and d.variable(m.arg(0)))
        f.reduce[m.arg(0)] = (Op(m.arg(1)), m.arg(2))

    def defining(self, f: ServedFile, what: str) -> bool:
        if f.output is not None:
            raise rules.CallError(f"{f.definition.path}: {what} after enddef", rules.ESTATE)
        return True

    def enddef(self, f: ServedFile, messages: list[Message]) -> None:
        """Sort the definitions as ``climio_enddef`` does and create the file (collective)."""
        d = f.definition
        layout, fields, times = self.agreed(lambda: self.layout(f))
        extra = {name: length for name, length in d.dims if name != layout.record}
        if f.every:
            extra.setdefault("nv", 2)
        old = str(d.attrs.get("history", ""))
        attrs = {**d.attrs, "history": f"climio serve: sent by {self.model_size} model rank(s)\n{old}".strip()}
        f.output = ModelOutput(d.path, d.decomp, fields, self.comm, mode=d.mode, strategy=d.strategy,
                               overwrite=d.overwrite, attrs=attrs, dims=layout.grid_names, time_name=layout.record,
                               time_attrs=times, variables=layout.variables, extra_dims=extra)

    def layout(self, f: ServedFile) -> tuple[rules.Layout, list[Field], dict[str, object] | None]:
        """The fields with their codecs and reductions, and the time coordinate's attributes: a reduced file's
        time gets CF bounds (``<time>_bnds``) and each reduced field its ``cell_methods``."""
        d = f.definition
        self.defining(f, "ENDDEF")
        layout = rules.layout_of(d)
        names = {d.variables[varid].name: spec for varid, spec in f.reduce.items()}
        codecs = {d.variables[varid].name: chain for varid, chain in f.codecs.items()}
        counts = {count for _, count in names.values()}
        recorded = [fl.name for fl in layout.fields if fl.records]
        if names and (len(counts) > 1 or set(recorded) - set(names)):
            given = ", ".join(f"{n} " + (f"{names[n][0].name.lower()} over {names[n][1]}" if n in names else "none")
                              for n in recorded)
            raise ClimioError(f"{d.path}: a file with reduced fields needs a reduction over the same number of steps "
                              f"for every field with records (instant for samples), got {given}")
        fields = []
        for fl in layout.fields:
            if fl.name in codecs:
                fl = dataclasses.replace(fl, codecs=codecs[fl.name], deflate=0, quantize=None)
            if fl.name in names:
                op, count = names[fl.name]
                method = f"time: {op.cell_method}"
                old = str(fl.attrs.get("cell_methods", ""))
                fl = dataclasses.replace(fl, attrs={**fl.attrs, "cell_methods": f"{old} {method}".strip()})
                f.reductions[fl.name] = Accumulator(op, count)
            fields.append(fl)
        times = layout.time_attrs
        if names:
            f.every = counts.pop()
            bounds = f"{layout.record}_bnds"
            if any(v.name == bounds for v in d.variables):
                raise ClimioError(f"{d.path}: define no '{bounds}': the servers write the time bounds of a file with "
                                  f"reduced fields")
            times = {**(times or {}), "bounds": bounds}
            layout.variables.append(ncio.Variable(bounds, "f8", (layout.record, "nv")))
        return layout, fields, times

    def writing(self, f: ServedFile, what: str) -> ModelOutput:
        if f.output is None:
            raise rules.CallError(f"{f.definition.path}: {what} before enddef", rules.ESTATE)
        return f.output

    def write(self, f: ServedFile, messages: list[Message]) -> None:
        """One record of a field: the clients' pieces side by side, written or reduced."""
        d, m = f.definition, messages[0]
        name, local = self.agreed(lambda: self.record(f, messages))
        frame = m.arg(1)
        step = None if frame == rules.NOFRAME else frame
        if name not in f.reductions or step is None:
            f.output.write_field(step, name, local)  # type: ignore[union-attr]
            return
        with trace.phase("serve:reduce"):
            reduced = self.agreed(lambda: f.reductions[name].add(frame, local, f"{d.path}: field '{name}'"))
        if reduced is not None:
            f.output.write_field(frame // f.every, name,  # type: ignore[union-attr]
                                 reduced.astype(f.output.fields[name].dtype))  # type: ignore[union-attr]

    def write_batch(self, f: ServedFile, messages: list[Message]) -> None:
        """This round's write and the next ``batch - 1`` of every client (queued already): their calls agreed
        and their checks in one allreduce, then all of them written together (one exchange, one write)."""
        rounds = [messages, *([self.queues[c].popleft() for c in self.clients] for _ in range(self.batch - 1))]
        keys = [zlib.crc32(repr([(int(r[k].kind), r[k].id, r[k].arg(0), r[k].arg(1)) for r in rounds[1:]]).encode())
                for k in range(len(self.clients))]
        records: list[tuple[int | None, str, np.ndarray]] = []
        problem: tuple[int, int, str] | None = None
        for index, round_ in enumerate(rounds):
            try:
                name, local = self.record(f, round_)
            except ClimioError as err:
                problem = (index, rules.code_of(err), str(err))
                break
            frame = round_[0].arg(1)
            records.append((None if frame == rules.NOFRAME else frame, name, local))
        most = np.iinfo(np.int64).max
        agreed = np.array([-min(keys, default=most), max(keys, default=-most),
                           -(problem[0] if problem else len(rounds))], np.int64)
        if self.comm.Get_size() > 1:  # one agreement: the calls the same, and the first round any server refused
            from mpi4py import MPI

            waiting.wait(self.comm.Iallreduce(MPI.IN_PLACE, wire.buffer(agreed), op=MPI.MAX))
        if -agreed[0] != agreed[1]:
            self.give_up(f"climio serve: the model's ranks made different calls in writes {self.batch} at a time: "
                         f"every rank must make the same calls in the same order")
        first = -int(agreed[2])
        if first < len(rounds):  # that round's error, from the first server that met it
            mine = problem if problem is not None and problem[0] == first else None
            told = self.comm.allgather(mine) if self.comm.Get_size() > 1 else [mine]
            _, code, text = next(t for t in told if t is not None)
            raise rules.CallError(text, code)
        f.output.write_records(records)  # type: ignore[union-attr]

    def record(self, f: ServedFile, messages: list[Message]) -> tuple[str, np.ndarray]:
        """A WRITE round's field and this server's local array of it: its clients' pieces side by side (checked
        here alone)."""
        d, m = f.definition, messages[0]
        out = self.writing(f, "WRITE")
        name = d.variable(m.arg(0)).name
        if name not in out.fields:
            raise ClimioError(f"{d.path}: '{name}' is not decomposed: write it with put_var")
        levels = out.fields[name].levels
        rows = 1 if levels is None else levels
        pieces = []
        for client, piece, points in zip(self.clients, messages, f.pieces):
            values = piece.data[0]
            if values.size != rows * points:
                raise ClimioError(f"{d.path}: field '{name}': local array of {values.size} elements on model "
                                  f"rank {client}, expected {rows * points} ({rows} level(s) x {points} points, "
                                  f"without halo)")
            pieces.append(values.reshape(rows, points))
        dtype = np.result_type(*(p.dtype for p in pieces)) if pieces else np.dtype(out.fields[name].dtype)
        local = np.concatenate(pieces, axis=1) if pieces else np.zeros((rows, 0), dtype)
        return name, local if levels is not None else local[0]

    def put_time(self, f: ServedFile, messages: list[Message]) -> None:
        """A record's time (model rank 0's); a reduced file's records get the middle of their steps' times and
        the first and last as bounds."""
        m = messages[0]
        out = self.agreed(lambda: self.writing(f, "PUT_TIME"))
        frame, value = m.arg(0), float(m.data[0][0])
        if not f.every:
            out.write_time(frame, value)
            return
        if frame % f.every == 0:
            f.period_start = value
        if frame % f.every == f.every - 1:
            record = frame // f.every
            out.write_time(record, (f.period_start + value) / 2)
            bounds = np.array([f.period_start, value]) if self.comm.Get_rank() == 0 else None
            out.write_variable(f"{out.time_name}_bnds", bounds, step=record)

    def put_var(self, f: ServedFile, messages: list[Message]) -> None:
        """An undistributed variable from model rank 0 (server 0's first client)."""
        d, m = f.definition, messages[0]

        def check() -> tuple[str, np.ndarray | None, int | None]:
            out = self.writing(f, "PUT_VAR")
            v = d.variable(m.arg(0))
            if v.name not in out.variables:
                raise ClimioError(f"{d.path}: '{v.name}' is not an undistributed variable: write it with "
                                  + ("put_time" if v.name == out.time_name else "write"))
            dims = out.variables[v.name].dims
            step = None if m.arg(1) == rules.NOFRAME else m.arg(1)
            shape = tuple(dict(d.dims)[n] for n in dims[step is not None:])
            values = m.data[0]
            values = values.reshape(shape) if values.size == math.prod(shape) else values
            return v.name, values.astype(v.dtype, copy=False) if self.comm.Get_rank() == 0 else None, step
        name, values, step = self.agreed(check)
        f.output.write_variable(name, values, step)  # type: ignore[union-attr]

    def close(self, f: ServedFile, messages: list[Message] | None = None, *, publish: bool | None = None) -> None:
        """Publish the file (or discard it, as the model asked), then tell every client."""
        ident = next(k for k, v in self.files.items() if v is f)
        publish = (messages[0].arg(0) == 0) if publish is None else publish
        if f.input is not None:
            f.input.close()
        elif publish:
            self.agreed(lambda: self.writing(f, "CLOSE")).close()
        elif f.output is not None:
            err = rules.CallError(f"{f.definition.path}: discarded by the model")
            f.output.__exit__(rules.CallError, err, None)
        self.files.pop(ident)
        self.reply(ident, 0)

    # -- the synchronous messages: reads

    def synchronous(self, messages: list[Message]) -> None:
        """OPEN, INQ_VARID or READ: one answer to each client, OK or the servers' agreed error. A failed OPEN keeps
        nothing; a failed READ leaves its file open (as in attached mode, reads abandon no file)."""
        m = messages[0]
        values: list[int] = [0] * len(self.clients)
        data: list[np.ndarray] | None = None
        fills: list[int] | None = None
        try:
            self.refusal(messages)
            self.same_names(messages)
            if m.kind == Kind.OPEN:
                self.open(m.id, messages)
            elif m.id not in self.files:
                raise rules.CallError(f"no open file with id {m.id}", rules.EBADID)
            elif m.kind == Kind.INQ_VARID:
                values = [self.inq_varid(self.files[m.id], messages)] * len(self.clients)
            else:
                data, fills = self.read(self.files[m.id], messages)
                values = [piece.size for piece in data]
        except ClimioError as err:
            if not err.collective:
                raise  # one server alone: the command line aborts the job
            self.answer(rules.code_of(err), str(err))
            return
        self.answer(0, values=values, data=data, fills=fills)

    def open(self, ident: int, messages: list[Message]) -> None:
        """Open a file for reading over this server's share of the decomposition (collective)."""
        m = messages[0]

        def check() -> tuple[str, str, GridDecomposition, tuple[int, ...]]:
            if len(m.names) != 2:
                raise rules.CallError(f"OPEN of file id {ident}: give its text as two names, path and strategy")
            path, strategy = m.names
            if ident in self.files or ident in self.failed:
                raise rules.CallError(f"{path}: file id {ident} is in use: give OPEN a new id")
            found = self.decomps.get(m.arg(0), f"no decomposition with id {m.arg(0)}")
            if isinstance(found, str):
                raise rules.CallError(f"{path}: {found}", rules.EBADID)
            if parse_strategy(strategy)[0] not in READ_STRATEGIES:  # before the file is opened
                raise rules.CallError(f"{path}: read strategy '{strategy}': choose one of root, direct, agg, agg:N, "
                                      f"auto")
            return path, strategy, *found
        path, strategy, grid, pieces = self.agreed(check)
        reader = ModelInput(path, grid, self.comm, strategy=strategy)  # its errors are the same on every server
        names = [v.name for v in reader.schema.variables]  # numbered as calls.openfile numbers them
        opened = rules.Definition(path, grid, strategy=strategy, input=reader,
                                  variables=[rules.Variable(n, np.dtype("f8"), ()) for n in names])
        self.files[ident] = ServedFile(opened, pieces, input=reader)

    def inq_varid(self, f: ServedFile, messages: list[Message]) -> int:
        name = messages[0].names[0] if messages[0].names else ""
        found = [i for i, v in enumerate(f.definition.variables) if v.name == name]
        if not found:
            raise rules.CallError(f"{f.definition.path}: no variable '{name}'", rules.EBADID)
        return found[0]

    def read(self, f: ServedFile, messages: list[Message]) -> tuple[list[np.ndarray], list[int]]:
        """One record of a variable, split into the clients' pieces (levels x map length each, in their types), and
        for each client whose array has a halo, the variable's fill value in its type (as the first bytes of an
        int64), which the client puts in the halo as an attached read does (else 0)."""
        d, m = f.definition, messages[0]

        def check() -> tuple[str, int | None, list[tuple[np.dtype, bool]], np.ndarray]:
            if f.input is None:
                raise rules.CallError(f"{d.path}: READ on a file opened for writing", rules.ESTATE)
            v = d.variable(m.arg(0))
            levels, records = f.input.levels(v.name)
            stored = f.input.schema.variable(v.name).numpy_dtype
            step = rules.record_of(d, v, m.arg(1), records)
            rows = 1 if levels is None else levels
            memtypes = []
            for client, piece, points in zip(self.clients, messages, f.pieces):
                memory = rules.xtype_dtype(piece.arg(2), f"{d.path}: variable '{v.name}': memory of model rank {client}")
                if memory.kind != "f" and stored.kind == "f":
                    raise rules.CallError(f"{d.path}: variable '{v.name}' is {stored.name}: read it into a float "
                                          f"array, not {memory.name} (climio does not round)")
                count, halo = piece.arg(3), piece.arg(4)
                if count not in (rows * points, rows * halo):
                    raise rules.CallError(
                        f"{d.path}: variable '{v.name}': local array of {count} elements on model rank {client}, "
                        f"expected {rows * points} ({rows} level(s) x {points} points)"
                        + (f" or {rows * halo} (with the halo: {halo} points per level)" if halo != points else ""))
                memtypes.append((memory, count != rows * points))
            return v.name, step, memtypes, np.asarray(fill_value(f.input.schema.variable(v.name).attrs, stored), stored)
        name, step, memtypes, fill = self.agreed(check)
        with trace.phase("serve:read"):
            values = f.input.read(name, step, cf=False)  # type: ignore[union-attr]  # errors: the same on all servers
        local = values if values.ndim == 2 else values[None]  # levels x this server's points (perhaps none)
        bounds = np.cumsum((0, *f.pieces))

        def convert() -> tuple[list[np.ndarray], list[int]]:
            pieces, fills = [], []
            for client, lo, hi, (memory, halo) in zip(self.clients, bounds[:-1], bounds[1:], memtypes):
                piece = local[:, lo:hi]
                problem = rules.out_of_range(piece, memory)
                if problem:
                    raise rules.CallError(f"{d.path}: variable '{name}' read into {memory.name} on model rank "
                                          f"{client}: {problem}")
                pieces.append(np.ascontiguousarray(piece, memory).ravel())
                with np.errstate(all="ignore"):  # a fill the type cannot hold is cast as ServedInput casts it
                    fills.append(int(np.frombuffer(fill.astype(memory).tobytes().ljust(8, b"\0"), np.int64)[0])
                                 if halo else 0)
            return pieces, fills
        return self.agreed(convert)


def serve(comm: MPI.Intracomm, world: MPI.Intracomm | None = None) -> None:
    """Be an I/O server until the model finalizes (collective over the servers' communicator); the model says
    hello on ``world`` (COMM_WORLD, or the communicator of PIO's async init)."""
    inter, model_size = connect.accept(comm, world)
    server = Server(comm, inter, model_size)
    if comm.Get_size() > model_size:
        server.give_up(f"climio serve: {comm.Get_size()} servers for {model_size} model rank(s): start at most as "
                       f"many servers as model ranks")
    server.serve()
    inter.Free()
