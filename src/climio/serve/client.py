"""A Python model's side of the I/O servers: send output to ``climio serve`` instead of writing it.

    servers = client.connect()                           # the model's ranks: every world rank but the servers'
    comm = servers.comm
    with client.ServedOutput("out.nc", d, [Field("T", levels=35)], servers, mode="cdf5", strategy="agg") as out:
        for step in range(nsteps):
            out.write(step, {"T": T_local}, time=step * 3600.0)   # returns once T_local may be reused
    servers.finalize()

:class:`ServedOutput` takes :class:`~climio.model.output.ModelOutput`'s arguments and methods, and the servers
write the same file. Each call copies the data into a bounded buffer and sends it without waiting for the
servers; when the buffer is full, the call waits for the oldest sends (back-pressure). A failure on the
servers arrives as one line, the same on every model rank, raised at the rank's next call on that file and at
the latest at its close or at :meth:`Servers.finalize`. Every wait for the servers ends after ``timeout``
seconds with an error naming them.

:class:`ServedInput` reads a restart through the servers (``read`` waits for the data):

    with client.ServedInput("restart.nc", d, servers) as restart:
        theta = restart.read("theta", 0)                 # this rank's local array, halo as ModelInput fills it
"""

from __future__ import annotations

import atexit
import math
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from climio.core import ncio, settings
from climio.core.ncio.schema import fill_value
from climio.core.decomp import Decomposition, Hyperslab
from climio.errors import ClimioError, IOFault
from climio.model import definition as rules
from climio.model.decomposition import BlockDecomposition, GridDecomposition, PointDecomposition
from climio.model.output import Field, ModelOutput, as_grid, time_attributes
from climio.serve import connect as connecting
from climio.serve import protocol as wire
from climio.serve.protocol import Kind

if TYPE_CHECKING:
    from mpi4py import MPI

EIO = -4  # the C API's code of a machine fault


@dataclass(frozen=True)
class ServedField(Field):
    """A :class:`Field` the servers may reduce over time: ``reduce=("mean", 24)`` writes one record per 24 steps,
    their mean in float64 cast to the field's type (also ``min``, ``max``, ``sum``, and ``instant``: every 24th
    step), with CF ``cell_methods`` and time bounds. Every recorded field of a file is then reduced over as
    many steps."""

    reduce: tuple[str, int] | None = None


@dataclass
class InFlight:
    """Sends not yet complete, and the copies they read from."""

    requests: list[MPI.Request]
    buffers: list[np.ndarray]
    nbytes: int


class Servers:
    """A model's connection to its I/O servers (:func:`connect`); model rank ``r`` talks to server ``r % S``."""

    def __init__(self, comm: MPI.Intracomm, inter: MPI.Intercomm, servers: range, buffer_bytes: int,
                 timeout: float) -> None:
        self.comm, self.inter, self.world_ranks = comm, inter, servers
        self.server = comm.Get_rank() % inter.Get_remote_size()
        self.limit, self.timeout = buffer_bytes, timeout
        self.inflight: deque[InFlight] = deque()
        self.peak_bytes = 0  # the most the buffer held at once: for sizing buffer_bytes
        self.replies: dict[int, tuple[int, str]] = {}
        self.system_error = ""
        self.decomps: dict[int, tuple[GridDecomposition, int]] = {}  # id(object): the object (kept alive), its id
        self.count = 0
        self.finalized = False
        self._reply = np.zeros(wire.REPLY_LEN, np.int64)
        self._reply_request: MPI.Request | None = inter.Irecv(wire.buffer(self._reply), source=self.server,
                                                              tag=wire.TAG_REPLY)
        atexit.register(self._at_exit)

    @property
    def name(self) -> str:
        first, last = self.world_ranks.start, self.world_ranks.stop - 1
        return f"I/O servers (world ranks {first}-{last})" if last > first else f"I/O server (world rank {first})"

    # -- sending

    def send(self, kind: Kind, ident: int, args: Sequence[int] = (), names: Sequence[str] = (),
             data: Sequence[np.ndarray] = ()) -> None:
        """Send one message without waiting for the server; its data are copied first, so the caller may reuse
        them at once. Waits for the oldest sends while the buffer would overflow."""
        if self.finalized:
            raise ClimioError(f"{self.name}: the connection was finalized", collective=True)
        from mpi4py import MPI

        header, text = wire.encode(kind, ident, args, names)
        arrays = [np.asarray(d) for d in data]
        nbytes = header.nbytes + len(text) + sum(a.nbytes for a in arrays)
        self.progress()
        while self.inflight and sum(f.nbytes for f in self.inflight) + nbytes > self.limit:
            oldest = self.inflight[0]
            self.wait(lambda: self._complete(oldest), "the data sent before (the client buffer is full)")
            self.progress()
        packet = wire.pack(header, text, arrays)  # the copy the send reads: one message per packet
        request = self.inter.Isend([packet, MPI.BYTE], dest=self.server, tag=wire.TAG_PACKET)
        self.inflight.append(InFlight([request], [packet], nbytes))
        self.peak_bytes = max(self.peak_bytes, sum(f.nbytes for f in self.inflight))

    def _complete(self, sent: InFlight) -> bool:
        from mpi4py import MPI

        return bool(MPI.Request.Testall(sent.requests))

    def progress(self) -> None:
        """Let go of completed sends and take the replies that arrived."""
        while self.inflight and self._complete(self.inflight[0]):
            self.inflight.popleft()
        while self._reply_request is not None and self._reply_request.Test():
            ident, code, size = (int(v) for v in self._reply[1:])
            text = np.zeros(size, np.uint8)
            if size:
                self.inter.Recv(wire.buffer(text), source=self.server, tag=wire.TAG_REPLY_TEXT)
            message = text.tobytes().decode()
            if ident == wire.SYSTEM and code:
                self.system_error = message
            self.replies[ident] = (code, message)
            if ident == wire.SYSTEM:
                self._reply_request = None  # the last reply: nothing more comes
                return
            self._reply_request = self.inter.Irecv(wire.buffer(self._reply), source=self.server, tag=wire.TAG_REPLY)

    def wait(self, done: Callable[[], bool], what: str) -> None:
        """Poll until ``done`` (a bounded wait: MPI's own waits cannot time out)."""
        deadline = time.monotonic() + self.timeout
        pause = 1e-4
        while not done():
            if time.monotonic() > deadline:
                raise IOFault(f"{self.name} did not take {what} within {self.timeout:g} s: check that climio serve "
                              f"runs (its errors are on its stderr), or give connect() a longer timeout")
            time.sleep(pause)
            pause = min(2 * pause, 0.01)
            self.progress()

    def ask(self, kind: Kind, ident: int, args: Sequence[int], names: Sequence[str], what: str,
            data: np.dtype | None = None) -> tuple[int, np.ndarray | None]:
        """Send a synchronous message (OPEN, INQ_VARID, READ) and wait for its answer: its value and, for a READ
        (``data``: the memory type), the data; the servers' error is raised, the same on every model rank."""
        self.send(kind, ident, args, names)
        header = np.zeros(wire.ANSWER_LEN, np.int64)
        request = self.inter.Irecv(wire.buffer(header), source=self.server, tag=wire.TAG_ANSWER)
        try:
            self.wait(lambda: bool(request.Test()) or bool(self.system_error), what)
        finally:
            if not request.Test():  # the servers ended (or the wait timed out): nothing will come
                request.Cancel()
                request.Wait()
        if self.system_error:
            raise ClimioError(self.system_error, collective=True)
        ok, value, code, size = (int(v) for v in header)
        text = np.zeros(size, np.uint8)
        if size:
            self.inter.Recv(wire.buffer(text), source=self.server, tag=wire.TAG_ANSWER_TEXT)
        if ok != wire.Reply.OK:
            raise (IOFault if code == EIO else ClimioError)(text.tobytes().decode(), collective=True)
        if data is None:
            return value, None
        values = np.empty(value, data)
        request = self.inter.Irecv(wire.buffer(values), source=self.server, tag=wire.TAG_ANSWER_DATA)
        self.wait(lambda: bool(request.Test()), what)
        return value, values

    def reply(self, ident: int, what: str) -> tuple[int, str]:
        """Wait for the servers' final word on file ``ident`` (or the connection: SYSTEM)."""
        self.wait(lambda: ident in self.replies or bool(self.system_error), what)
        return self.replies.pop(ident, None) or (-1, self.system_error)

    def check(self) -> None:
        self.progress()
        if self.system_error:
            raise ClimioError(self.system_error, collective=True)

    # -- what ServedOutput sends once

    def new_file(self) -> int:
        self.count += 1
        return self.count

    def decomposition(self, grid: GridDecomposition) -> int:
        """The id of ``grid`` on the servers; its compmap is sent the first time."""
        known = self.decomps.get(id(grid))
        if known is not None:
            return known[1]
        ident = self.new_file()
        self.decomps[id(grid)] = (grid, ident)
        compmap = compmap_of(grid)
        self.send(Kind.DECOMP, ident, [len(grid.grid), compmap.size], (),
                  [np.array(grid.grid, np.int64), compmap])
        return ident

    # -- the end

    def finalize(self) -> None:
        """Close what the servers still hold (publishing it) and end the connection (collective over the model).
        Raises the servers' error, if they had one."""
        if self.finalized:
            return
        self.check()
        self.send(Kind.FINALIZE, 0)
        code, message = self.reply(wire.SYSTEM, "the finalize")
        self.wait(lambda: all(self._complete(f) for f in self.inflight), "the last data")
        self.finalized = True
        self.inflight.clear()
        self.inter.Free()
        failures = [text for ident, (c, text) in sorted(self.replies.items()) if c]
        if code or failures:
            raise ClimioError(message if code else failures[0], collective=True)

    def _at_exit(self) -> None:
        """A model that ends without finalizing still lets the servers (and MPI_Finalize) end."""
        from mpi4py import MPI

        if not self.finalized and not self.system_error and not MPI.Is_finalized():
            try:
                self.finalize()
            except ClimioError as err:
                sys.stderr.write(f"climio: error: {err}\n")


def connect(comm: MPI.Intracomm | None = None, *, buffer_bytes: int | None = None,
            timeout: float | None = None) -> Servers:
    """Connect the model's ranks (``comm``, collective over it only; default: every world rank but the servers,
    :func:`~climio.serve.connect.model_communicator`) to the I/O servers of this launch. ``buffer_bytes`` per
    model rank holds data sent but not yet taken by the servers (default ``CLIMIO_SERVE_BUFFER_MB``, 32 MiB);
    ``timeout`` bounds every wait for them (default ``CLIMIO_SERVE_TIMEOUT``, 600 s)."""
    comm = connecting.model_communicator() if comm is None else comm
    inter, servers = connecting.connect(comm)  # refuses bad settings on every model rank, servers told
    if buffer_bytes is None:
        buffer_bytes = int(settings.SERVE_BUFFER_MB.read()) << 20
    return Servers(comm, inter, servers, buffer_bytes, connecting.timeout() if timeout is None else timeout)


def box_offsets(grid: tuple[int, ...], box: Hyperslab) -> np.ndarray:
    """The C-order flat offsets of a box's points, in the box's C order."""
    strides = np.cumprod((*grid[1:], 1)[::-1])[::-1]
    flat = np.zeros(box.count, np.int64)
    for axis, (start, count, stride) in enumerate(zip(box.start, box.count, strides)):
        shape = [1] * len(grid)
        shape[axis] = count
        flat += ((start + np.arange(count, dtype=np.int64)) * stride).reshape(shape)
    return flat.ravel()


def compmap_of(grid: GridDecomposition) -> np.ndarray:
    """This rank's PIO compmap (1-based, 0 for a local element that is no grid point), halo and ghosts left out."""
    if isinstance(grid, BlockDecomposition):
        return box_offsets(grid.grid, grid.box) + 1
    if isinstance(grid, PointDecomposition):
        return np.where(grid.offsets >= 0, grid.offsets + 1, 0)
    raise ClimioError(f"served output takes block and point decompositions, not {type(grid).__name__}",
                      collective=True)


class ServedOutput:
    """:class:`~climio.model.output.ModelOutput`'s file, written by the I/O servers: the same arguments (but
    ``servers`` for the communicator, and no ``gather``, ``hints`` or striping, which the servers choose) and
    the same methods, which return without waiting for the servers. A variable of ``variables`` must not span
    the grid (make it a ``Field(records=False)``)."""

    def __init__(self, path: str, decomp: GridDecomposition | Decomposition, fields: Sequence[Field],
                 servers: Servers, *, mode: str = "cdf5", strategy: str = "direct", overwrite: bool = False,
                 attrs: Mapping[str, object] | None = None, dims: Sequence[str] | None = None,
                 time_name: str = "time", time_units: str | None = None, calendar: str | None = None,
                 time_attrs: Mapping[str, object] | None = None, variables: Sequence[ncio.Variable] = (),
                 extra_dims: Mapping[str, int] | None = None) -> None:
        servers.check()
        self.servers, self.path, self.time_name = servers, path, time_name
        self.grid = as_grid(decomp, servers.comm)
        self.fields = {f.name: f for f in fields}
        self.variables = {v.name: v for v in variables}
        self.error, self.error_code, self.reported, self.closed = "", 0, False, False
        # ModelOutput's default names of the grid's dimensions (the method reads only .grid)
        names = tuple(dims) if dims is not None else ModelOutput._grid_dims(self)  # type: ignore[arg-type]
        if len(names) != len(self.grid.grid):
            raise ClimioError(f"dims {names} do not name the {len(self.grid.grid)} dimensions of the grid "
                              f"{self.grid.grid}", collective=True)
        self.dims: dict[str, int] = {}
        self.varids: dict[str, int] = {}
        decomp_id = servers.decomposition(self.grid)
        self.id = servers.new_file()
        servers.send(Kind.CREATE, self.id, [decomp_id, rules.CLOBBER if overwrite else rules.NOCLOBBER],
                     [path, mode, strategy])
        try:
            self._define(fields, names, time_units, calendar, time_attrs, variables, attrs, extra_dims)
        except ClimioError:  # the same on every rank (the same arguments): the servers drop the file
            self.closed = True
            servers.send(Kind.CLOSE, self.id, [1])
            raise

    def _define(self, fields: Sequence[Field], names: tuple[str, ...], time_units: str | None,
                calendar: str | None, time_attrs: Mapping[str, object] | None, variables: Sequence[ncio.Variable],
                attrs: Mapping[str, object] | None, extra_dims: Mapping[str, int] | None) -> None:
        """Send the file's dimensions, variables and attributes, as ModelOutput lays them out, then ENDDEF."""
        servers, time_name = self.servers, self.time_name
        self._dim(time_name, rules.UNLIMITED)
        for f in sorted((f for f in fields if f.levels is not None), key=lambda f: f.levels):
            self._dim(f.level_name, f.levels, f"field '{f.name}': level dimension")
        for name, length in (*zip(names, self.grid.grid), *(extra_dims or {}).items()):
            self._dim(name, length)
        self._var(time_name, "f8", (time_name,), time_attributes(time_units, calendar, time_attrs))
        for f in fields:
            varid = self._var(f.name, f.dtype, ((time_name,) if f.records else ()) + ((f.level_name,) if f.levels
                                                                                    else ()) + names, f.attrs)
            if f.deflate or f.quantize or f.codecs:
                quantize = [k for k, v in rules.QUANTIZE.items() if f.quantize and v == f.quantize[0]]
                servers.send(Kind.DEF_COMPRESS, self.id, [varid, f.deflate, quantize[0] if quantize else 0,
                                                          f.quantize[1] if f.quantize else 0],
                             [f.codecs] if f.codecs else [])
            spec = getattr(f, "reduce", None)
            if spec is not None:
                op, count = wire.parse_reduce(spec, f"field '{f.name}'")
                servers.send(Kind.DEF_REDUCE, self.id, [varid, op, count])
        for v in variables:
            lengths = tuple(self.dims.get(d, -1) for d in v.dims)
            if len(lengths) >= len(self.grid.grid) and lengths[len(lengths) - len(self.grid.grid):] == self.grid.grid:
                raise ClimioError(f"variable '{v.name}' {v.dims} spans the grid: the servers take it for a decomposed "
                                  f"field; make it a Field(records=False) and write it with write_field",
                                  collective=True)
            self._var(v.name, str(np.dtype(v.dtype)), v.dims, v.attrs)
        for name, value in (attrs or {}).items():
            self._att(rules.GLOBAL, name, value)
        servers.send(Kind.ENDDEF, self.id)

    def _dim(self, name: str, length: int, what: str = "dimension") -> None:
        if name in self.dims:
            if self.dims[name] != length:
                raise ClimioError(f"{what} '{name}' of length {length} is already {self.dims[name]} long",
                                  collective=True)
            return
        self.dims[name] = length
        self.servers.send(Kind.DEF_DIM, self.id, [length], [name])

    def _var(self, name: str, dtype: str, dims: Sequence[str], attrs: Mapping[str, object]) -> int:
        unknown = [d for d in dims if d not in self.dims]
        if unknown:
            raise ClimioError(f"variable '{name}': dimension '{unknown[0]}' is neither the grid's, a level's nor in "
                              f"extra_dims", collective=True)
        varid = self.varids[name] = len(self.varids)
        ids = np.array([list(self.dims).index(d) for d in dims], np.int64)
        self.servers.send(Kind.DEF_VAR, self.id, [rules.xtype_of(dtype, f"variable '{name}'"), ids.size], [name],
                          [ids])
        for key, value in attrs.items():
            self._att(varid, key, value)
        return varid

    def _att(self, varid: int, name: str, value: object) -> None:
        if isinstance(value, str):
            self.servers.send(Kind.PUT_ATT, self.id, [varid, rules.CHAR, len(value.encode())],
                              [name, value])
            return
        values = np.asarray(value).ravel()
        self.servers.send(Kind.PUT_ATT, self.id, [varid, rules.xtype_of(values.dtype, f"attribute '{name}'"),
                                                   values.size], [name], [values])

    # -- writing

    def _check(self) -> None:
        """Raise the servers' error on this file (again, once it was raised: the file is abandoned)."""
        self.servers.check()
        if not self.error and self.servers.replies.get(self.id, (0, ""))[0]:
            self.error_code, self.error = self.servers.replies.pop(self.id)
        if self.error:
            raise self._failure()
        if self.closed:
            raise ClimioError(f"{self.path}: the served output was closed", collective=True)

    def _failure(self) -> ClimioError:
        self.reported = True
        return (IOFault if self.error_code == EIO else ClimioError)(self.error, collective=True)

    def write(self, step: int, fields: Mapping[str, np.ndarray], time: float) -> None:
        """Send record ``step`` of every recorded field and its time (as :meth:`ModelOutput.write`)."""
        recorded = [name for name, f in self.fields.items() if f.records]
        missing, fixed = set(recorded) - set(fields), set(fields) - set(recorded)
        if missing or fixed:
            raise ClimioError(f"output step {step}: no data for field(s) {', '.join(sorted(missing))}" if missing else
                              f"output step {step}: field(s) {', '.join(sorted(fixed))} have no records: write them "
                              f"once with write_field(None, name, local)", collective=True)
        self.write_time(step, time)
        for name in recorded:
            self.write_field(step, name, fields[name])

    def write_time(self, step: int, time: float) -> None:
        """Send record ``step``'s time (model rank 0's is written)."""
        self._check()
        self.servers.send(Kind.PUT_TIME, self.id, [step], (), [np.array([time], np.float64)])

    def write_field(self, step: int | None, name: str, local: np.ndarray) -> None:
        """Send record ``step`` of one field (None: a field without records) from this rank's local array (with
        its halo or without), halo and ghosts stripped."""
        self._check()
        if name not in self.fields:
            raise ClimioError(f"no field '{name}' in this output (it has {', '.join(self.fields)})", collective=True)
        f = self.fields[name]
        if (step is None) == f.records:
            raise ClimioError(f"field '{name}' " + ("has records: give the step" if step is None else
                                                   "has no records: write it with step None"), collective=True)
        local = np.asarray(local)
        owned = self._owned(local, f.levels)
        self.servers.send(Kind.WRITE, self.id, [self.varids[name], rules.NOFRAME if step is None else step,
                                                rules.xtype_of(owned.dtype, f"field '{name}'"), owned.size], (),
                          [owned])

    def _owned(self, local: np.ndarray, levels: int | None) -> np.ndarray:
        """The owned points of a local array (as is when its shape is not the decomposition's: the servers then
        name the mismatch on every rank)."""
        if isinstance(self.grid, BlockDecomposition):
            return self.grid.owned_view(local, levels)
        if isinstance(self.grid, PointDecomposition) and local.shape == self.grid.local_shape(levels):
            return local[..., :self.grid.offsets.size]
        return local

    def write_variable(self, name: str, data: np.ndarray | None, step: int | None = None) -> None:
        """Send one of ``variables`` from model rank 0's ``data`` (others may pass None), whole or record ``step``."""
        self._check()
        if name not in self.variables:
            raise ClimioError(f"no undistributed variable '{name}' in this output (it has "
                              f"{', '.join(self.variables) or 'none'})", collective=True)
        dims = self.variables[name].dims
        if (bool(dims) and dims[0] == self.time_name) != (step is not None):
            raise ClimioError(f"variable '{name}' " + ("has no records: leave the step out" if step is not None else
                                                      "has records: give the step"), collective=True)
        values = np.asarray(data) if self.servers.comm.Get_rank() == 0 else np.zeros(0)
        self.servers.send(Kind.PUT_VAR, self.id, [self.varids[name], rules.NOFRAME if step is None else step,
                                                  rules.xtype_of(values.dtype, f"variable '{name}'"), values.size],
                          (), [values])

    def close(self) -> None:
        """Wait until the servers have published the file; raise their error if they failed (unless raised
        already)."""
        if self.closed:
            return
        self.closed = True
        if not self.error:
            self.servers.send(Kind.CLOSE, self.id, [0])
            code, message = self.servers.reply(self.id, f"the close of {self.path}")
            if code:
                self.error_code, self.error = code, message
        if self.error and not self.reported:
            raise self._failure()

    def __enter__(self) -> ServedOutput:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: object) -> None:
        if err is None:
            self.close()
        elif not self.closed:  # the model failed: the servers discard the file (or dropped it already)
            self.closed = True
            if not self.error:
                self.servers.send(Kind.CLOSE, self.id, [1])


@dataclass(frozen=True)
class Described:
    """What a model rank needs of a variable to shape its local array: the file's header, read by model rank 0."""

    levels: int | None
    dtype: np.dtype
    fill: object


class ServedInput:
    """:class:`~climio.model.input.ModelInput`'s reads, done by the I/O servers (collective over the model): the
    servers open ``path`` with ``strategy`` and send each rank its own points of a record, as stored (no
    unpacking, as ``climio_read_darray``). A block decomposition's halo, a point decomposition's ghosts (which
    ModelInput reads: exchange them as after a step) and local elements that are no grid point keep the
    variable's fill value. A failed read leaves the file open; the servers' errors are the same on every model
    rank."""

    def __init__(self, path: str, decomp: GridDecomposition | Decomposition, servers: Servers,
                 strategy: str = "auto") -> None:
        servers.check()
        self.servers, self.path, self.closed = servers, path, False
        self.grid = as_grid(decomp, servers.comm)
        decomp_id = servers.decomposition(self.grid)
        self.map_length = compmap_of(self.grid).size
        self.id = servers.new_file()
        servers.ask(Kind.OPEN, self.id, [decomp_id], [path, strategy], f"the open of {path}")
        self.varids: dict[str, int] = {}
        try:
            self.described = self._describe()
        except ClimioError:
            self.close()
            raise

    def _describe(self) -> dict[str, Described]:
        """Each numeric variable's levels, type and fill value, from the header (model rank 0 reads it)."""
        comm = self.servers.comm
        described: dict[str, Described] | str = {}
        if comm.Get_rank() == 0:
            from mpi4py import MPI

            try:
                store = ncio.open(self.path, MPI.COMM_SELF, read="root")
                try:
                    schema, grid = store.schema, self.grid.grid
                    for v in (v for v in schema.variables if not v.is_text):
                        shape = store.shape(v.name)
                        rest = shape[1:] if v.dims and schema.dims[v.dims[0]] is None else shape
                        levels = rest[0] if len(rest) == len(grid) + 1 else None
                        described[v.name] = Described(levels, v.numpy_dtype,  # type: ignore[index]
                                                      fill_value(v.attrs, v.numpy_dtype))
                finally:
                    store.close()
            except Exception as err:  # noqa: BLE001 - any: the other ranks wait at the broadcast
                described = f"{self.path}: {err}"
        described = comm.bcast(described, root=0)
        if isinstance(described, str):
            raise ClimioError(described, collective=True)
        return described

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(self.described)

    def _varid(self, name: str) -> int:
        if name not in self.varids:
            self.varids[name] = self.servers.ask(Kind.INQ_VARID, self.id, [], [name],
                                                 f"the look-up of '{name}' in {self.path}")[0]
        return self.varids[name]

    def read(self, name: str, step: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Variable ``name`` (its record ``step`` if it has records) into this rank's local array, with its halo
        (or into ``out``, filled in place: the local shape with the halo or without, of a type that holds the
        values; climio does not round floats into integers). Without ``out``, in the variable's own type."""
        if self.closed:
            raise ClimioError(f"{self.path}: the served input was closed", collective=True)
        self.servers.check()
        varid = self._varid(name)
        about = self.described.get(name, Described(None, np.dtype("f8"), np.nan))
        if out is None:
            known = about.dtype in rules.TYPES.values()
            out = np.empty(self.grid.local_shape(about.levels), about.dtype if known else np.dtype("f8"))
        local = out if out.flags.c_contiguous else np.empty(out.shape, out.dtype)
        memtype = rules.xtype_of(local.dtype, f"{self.path}: variable '{name}': out")
        halo = math.prod(self.grid.local_shape())
        _, values = self.servers.ask(Kind.READ, self.id, [varid, rules.NOFRAME if step is None else step, memtype,
                                                         local.size, halo], (),
                                     f"the read of '{name}' from {self.path}", local.dtype)
        assert values is not None
        if values.size == local.size:
            local.reshape(-1)[...] = values
            return self._copied(local, out)
        rows = local.size // halo  # the servers took local.size as rows x halo
        with np.errstate(all="ignore"):  # the halo or ghosts, not sent: the fill value
            local[...] = np.asarray(about.fill).astype(local.dtype)
        if isinstance(self.grid, BlockDecomposition):
            grid = self.grid
            local.reshape(rows, *grid.local_shape())[(slice(None), *grid.interior())] = \
                values.reshape(rows, *grid.box.count)
        else:
            local.reshape(rows, halo)[:, :self.map_length] = values.reshape(rows, self.map_length)
        return self._copied(local, out)

    @staticmethod
    def _copied(local: np.ndarray, out: np.ndarray) -> np.ndarray:
        if local is not out:
            out[...] = local
        return out

    def close(self) -> None:
        """Let the servers close the file (collective); raise their error, if any."""
        if self.closed:
            return
        self.closed = True
        self.servers.send(Kind.CLOSE, self.id, [0])
        code, message = self.servers.reply(self.id, f"the close of {self.path}")
        if code:
            raise (IOFault if code == EIO else ClimioError)(message, collective=True)

    def __enter__(self) -> ServedInput:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: object) -> None:
        if err is None:
            self.close()
            return
        try:
            self.close()
        except ClimioError:
            pass  # the model's own error goes on
