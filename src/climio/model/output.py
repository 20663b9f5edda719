"""A model's output file: describe the decomposition and fields once, then write each output step.

    d = decomposition.blocks((ny, nx), px, py, comm.Get_rank(), halo=2)   # or any GridDecomposition
    out = ModelOutput("out.nc", d, [Field("T", levels=35), Field("ps")], comm, mode="cdf5", strategy="agg",
                      time_units="seconds since 2016-07-01 00:00:00", calendar="noleap")
    for step in range(nsteps):
        out.write(step, {"T": T_local, "ps": ps_local}, time=step * 3600.0)
    out.close()

The file is CF: its time coordinate has CF time units (``seconds since 1970-01-01 00:00:00`` and the
``standard`` calendar unless the model gives its own, such as its start date), ``Conventions = "CF-1.8"``
and a ``history`` line that says climio wrote it and how.

The decomposition is any :class:`~climio.model.decomposition.GridDecomposition` (blocks with halos,
land-eliminated blocks, unstructured cells, round-robin columns, a PIO map), or a 2-D block
:class:`~climio.core.decomp.Decomposition`. The strategies are :mod:`climio.model.strategy`'s; the records
move to the writers through the rearranger, or for ``root`` with a plain block decomposition and ``gather=``
with one of :mod:`gather`'s strategies (seed 004). Points that no rank owns are written as the field's
``_FillValue`` (netCDF's default for its type unless ``attrs`` set one; the attribute is then written).

Every strategy writes the same bytes: the tests compare them element by element.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from climio import __version__
from climio.core import mpi, ncio
from climio.core.decomp import Decomposition, Hyperslab
from climio.core.ncio.compression import parse_cmp
from climio.core.ncio.schema import fill_value as schema_fill_value
from climio.errors import ClimioError, api_words
from climio.model import costmodel
from climio.model.decomposition import GridDecomposition, from_blocks
from climio.model.gather import Gatherer
from climio.model.route import Pool, Route, gather_together
from climio.model.strategy import KEPT_STRIPE_ROUTES, STRATEGIES, Strategy, applicable_modes, parse_strategy

if TYPE_CHECKING:
    from mpi4py import MPI

__all__ = ["STRATEGIES", "Field", "ModelOutput", "applicable_modes", "parse_strategy", "as_grid", "fill_value"]

TIME_UNITS = "seconds since 1970-01-01 00:00:00"  # the time coordinate's units when the model gives none
CALENDAR = "standard"
CONVENTIONS = "CF-1.8"  # as every file climio writes
STEP_BUFFER_BYTES = 2**29  # a writer's records of one output step held at once (more fields: several batches)
Record = tuple[int | None, str, np.ndarray]  # (step or None, field name, this rank's local array)


@dataclass(frozen=True)
class Field:
    """A model variable: one value per grid point when ``levels`` is None, else ``levels`` of them (levels
    first: ``(level, *grid)``); one record per step. ``deflate`` (level 1-9, with shuffle) and ``quantize``
    (``("GranularBR", 3)``: algorithm and significant digits, or bits for BitRound) or ``codecs`` (any filter
chain, as NCO's ``--cmp``) need mode ``hdf5``; a
    compressed field is stored in chunks of a record, one per writer (:func:`chunk_shape`)."""

    name: str
    levels: int | None = None
    dtype: str = "f4"
    attrs: Mapping[str, object] = field(default_factory=dict)
    deflate: int = 0
    quantize: tuple[str, int] | None = None
    codecs: str | None = None  # NCO's --cmp chain instead of deflate/quantize, e.g. "gbr,3|shf|bz2,5"
    level_dim: str | None = None  # the level dimension's name in the file (default lev<levels>)
    records: bool = True  # False: one value per point for the whole run (cell areas, masks), written once

    @property
    def level_name(self) -> str | None:
        return None if self.levels is None else (self.level_dim or f"lev{self.levels}")

    @property
    def compression(self) -> ncio.Compression:
        if self.codecs is not None:
            if self.deflate or self.quantize:
                raise ClimioError(f"field '{self.name}': give codecs or deflate/quantize, not both",
                                  collective=True)
            return parse_cmp(self.codecs)
        return ncio.Compression(self.deflate, True, self.quantize)


def as_grid(decomp: GridDecomposition | Decomposition, comm: MPI.Comm) -> GridDecomposition:
    """A grid decomposition, from a block :class:`Decomposition` if need be, checked against ``comm``."""
    grid = from_blocks(decomp, comm.Get_rank()) if isinstance(decomp, Decomposition) else decomp
    if isinstance(decomp, Decomposition):
        decomp.check_comm_size(comm.Get_size())
    grid.check_comm_size(comm.Get_size())
    return grid


def chunk_shape(shape: tuple[int, ...], levels: int | None, writers: int) -> tuple[int, ...]:
    """A compressed field's chunks: a record (with the time axis) cut along the levels into one piece per
    writer, contiguous in the file's order, so that each of ``writers`` aggregators compresses a chunk of its
    own in the same collective call (HDF5 hands a chunk that several ranks write to one of them)."""
    if levels is None:
        return (1, *shape)
    return (1, -(-levels // max(1, writers)), *shape[1:])


def time_attributes(units: str | None, calendar: str | None, attrs: Mapping[str, object] | None
                    ) -> dict[str, object]:
    """The time coordinate's attributes: ``attrs`` as given when they hold ``units`` (the C API passes the record
    variable's own), else CF's with ``units`` (default :data:`TIME_UNITS`) and ``calendar`` (default
    :data:`CALENDAR`), checked by cftime, then ``attrs``."""
    given = dict(attrs or {})
    if "units" in given:
        if units is not None or calendar is not None:
            raise ClimioError(f"time_units/calendar and time_attrs' units '{given['units']}': give the time units "
                              f"once", collective=True)
        return given
    import cftime

    out = {"standard_name": "time", "long_name": "time", "units": units or TIME_UNITS,
           "calendar": calendar or CALENDAR, "axis": "T", **given}
    try:
        cftime.num2date(0.0, str(out["units"]), str(out["calendar"]))
    except (ValueError, TypeError) as err:
        raise ClimioError(f"time_units '{out['units']}' with calendar '{out['calendar']}': not CF time ({err}); give "
                          f"'<seconds|minutes|hours|days> since <date>' and a CF calendar, e.g. '{TIME_UNITS}' and "
                          f"'{CALENDAR}'", collective=True) from None
    return out


def global_attributes(attrs: Mapping[str, object] | None, strategy: str, mode: str, nranks: int
                      ) -> dict[str, object]:
    """The file's global attributes: ``Conventions`` (unless the model's ``attrs`` set it), the model's, and a
    ``history`` line on top of any it gave. The line says how the file was written, not when: a C and a
    Python writer of the same fields write the same file (tests/test_capi.py compares them)."""
    given = dict(attrs or {})
    line = f"climio {__version__} ModelOutput: strategy {strategy}, mode {mode}, {nranks} rank(s)"
    old = str(given.pop("history", ""))
    return {"Conventions": CONVENTIONS, **given, "history": f"{line}\n{old}".strip()}


def record_requests(records: list[Record], pieces: list[list[tuple[np.ndarray, Hyperslab]]]
                    ) -> list[tuple[str, np.ndarray, Hyperslab]]:
    """Write requests from each record's ``(data, hyperslab)`` pieces: at its step, or whole (step None)."""
    return [(name, data, slab) if step is None else (name, data[None], Hyperslab((step, *slab.start), (1, *slab.count)))
            for (step, name, _), field_pieces in zip(records, pieces) for data, slab in field_pieces]


def fill_value(f: Field) -> object:
    """The field's ``_FillValue``, or netCDF's default fill for its type."""
    return schema_fill_value(f.attrs, np.dtype(f.dtype))


# The arguments of ModelOutput and Field by the commands' flags, which the storage layer's checks name (api_words)
WORDS = {**ncio.API_WORDS, "--ppc": "quantize", "--cmp": "codecs"}


class ModelOutput:
    """One netCDF file of time records of decomposed fields, written with one strategy.

    ``time_units`` and ``calendar`` are those of the times given to :meth:`write` (default ``seconds since
    1970-01-01 00:00:00`` and ``standard``; a model passes its start, e.g. ``seconds since 2016-07-01
    00:00:00``, and its calendar); ``time_attrs`` adds attributes to the time coordinate (``bounds``), or
    gives all of them when it holds ``units`` (then without ``time_units``/``calendar``: the C API passes the
    record variable's own). ``attrs`` are global attributes; ``Conventions = "CF-1.8"`` and a ``history``
    line are added."""

    @api_words(WORDS)
    def __init__(self, path: str, decomp: GridDecomposition | Decomposition, fields: Sequence[Field],
                 comm: MPI.Comm, *, mode: str = "cdf5", strategy: str = "direct", gather: str | None = None,
                 hints: Mapping[str, str] | None = None, overwrite: bool = False,
                 attrs: Mapping[str, object] | None = None, stripe_count: int | None = None,
                 stripe_size: int | None = None, dims: Sequence[str] | None = None, time_name: str = "time",
                 time_units: str | None = None, calendar: str | None = None,
                 time_attrs: Mapping[str, object] | None = None, variables: Sequence[ncio.Variable] = (),
                 extra_dims: Mapping[str, int] | None = None) -> None:
        self.grid, self.comm, self.rank = as_grid(decomp, comm), comm, comm.Get_rank()
        stepped = [f for f in fields if f.records] or list(fields)
        if strategy == "auto" and stepped and mode in applicable_modes("auto"):  # the cost model's fastest
            strategy = costmodel.auto(comm, self.grid, mode, [(f.levels, np.dtype(f.dtype)) for f in stepped])
        self.strategy = Strategy.choose(strategy, mode, comm, self.grid, hints=hints, stripe_count=stripe_count,
                                        stripe_size=stripe_size)
        if gather is not None and (self.strategy.name != "root" or self.grid.blocks is None):
            raise ClimioError(f"gather='{gather}' applies to the root strategy with a plain 2-D block "
                              f"decomposition only", collective=True)
        self.fields = {f.name: f for f in fields}
        total = comm.allreduce(self.grid.owned)
        holes = total < int(np.prod(self.grid.grid))
        names = tuple(dims) if dims is not None else self._grid_dims()
        if len(names) != len(self.grid.grid):
            raise ClimioError(f"dims {tuple(names)} do not name the {len(self.grid.grid)} dimensions of the grid "
                              f"{self.grid.grid}", collective=True)
        self.time_name = time_name
        dims: dict[str, int | None] = {time_name: None}
        for f in sorted((f for f in fields if f.levels is not None), key=lambda f: f.levels):
            if dims.setdefault(f.level_name, f.levels) != f.levels:
                raise ClimioError(f"field '{f.name}': level dimension '{f.level_name}' has {dims[f.level_name]} "
                                  f"levels in another field, not {f.levels}", collective=True)
        dims.update(zip(names, self.grid.grid))
        for name, length in (extra_dims or {}).items():
            if dims.setdefault(name, length) != length:
                raise ClimioError(f"dimension '{name}' of length {length} is already {dims[name]} long",
                                  collective=True)
        schema_variables = [ncio.Variable(time_name, "f8", (time_name,),
                                          time_attributes(time_units, calendar, time_attrs))]
        for f in fields:
            var_attrs = dict(f.attrs)
            if holes:
                var_attrs["_FillValue"] = np.array(fill_value(f), dtype=f.dtype)
            var_dims = ((time_name,) if f.records else ()) + ((f.level_name,) if f.levels else ()) + names
            chunks = self._chunks(f) if f.compression.active else None
            schema_variables.append(ncio.Variable(f.name, f.dtype, var_dims, var_attrs, chunks, f.compression))
        self.variables = {v.name: v for v in variables}
        unknown = [d for v in variables for d in v.dims if d not in dims]
        if unknown:
            raise ClimioError(f"variable dimension '{unknown[0]}' is neither the grid's, a level's nor in extra_dims",
                              collective=True)
        schema = ncio.Schema(dims, (*schema_variables, *variables),
                             global_attributes(attrs, self.strategy.name, mode, comm.Get_size()))
        self._store = ncio.create(path, schema, mode, comm, overwrite=overwrite, hints=dict(self.strategy.hints),
                                  aggregated=self.strategy.name != "direct", one_writer=self.strategy.name == "root")
        shared: dict[tuple[int | None, str], Route | Gatherer] = {}  # fields of one shape and type share one
        self._routes: dict[str, Route | Gatherer] = {}
        self._stripe_routes: OrderedDict[tuple[int | None, str, int], Route] = OrderedDict()  # least recent first
        self._stripe_pool = Pool()
        try:
            if self.strategy.name != "stripe":
                for f in fields:
                    key = (f.levels, np.dtype(f.dtype).str)
                    if key not in shared:
                        shared[key] = self._route(f, gather)
                    self._routes[f.name] = shared[key]
        except BaseException as err:
            self._store.__exit__(type(err), err, None)  # nothing is left of the file
            raise

    def _grid_dims(self) -> tuple[str, ...]:
        """The file's default names of the grid's dimensions (``dims=`` names them): (cell,), (y, x), (face, y,
        x), else dim0, dim1, ..."""
        known = {1: ("cell",), 2: ("y", "x"), 3: ("face", "y", "x")}
        return known.get(len(self.grid.grid), tuple(f"dim{k}" for k in range(len(self.grid.grid))))

    def _chunks(self, f: Field) -> tuple[int, ...]:
        """A compressed field's chunk shape: one piece of the record per aggregator (``agg``), else the record."""
        writers = len(self.strategy.aggregators) if self.strategy.name == "agg" else 1
        chunks = chunk_shape(self.grid.shape(f.levels), f.levels, writers)
        return chunks if f.records else chunks[1:]

    def _route(self, f: Field, gather: str | None) -> Route | Gatherer:
        """How field ``f``'s records reach the file (collective)."""
        if gather is not None:  # seed 004's gathers
            shape = self.grid.shape(f.levels)
            blocks = self.grid.blocks
            full = Decomposition.block2d(shape, blocks.parts[1], blocks.parts[0], halo=blocks.halo)
            return Gatherer(full, f.dtype, self.comm, gather)
        unit = math.prod(self._chunks(f)) if f.compression.active else None
        return self.strategy.route(self.comm, self.grid, f.levels, self._moved(f), fill=fill_value(f), unit=unit)

    def _moved(self, f: Field) -> np.dtype:
        """The type field ``f``'s records move in: the one the file takes as it is (a classic file's byte order:
        each rank swaps its own values, and the writers write what they receive)."""
        return self._store.write_order(self._store.schema.variable(f.name))

    def write(self, step: int, fields: Mapping[str, np.ndarray], time: float) -> None:
        """Write record ``step`` of every field from this rank's local arrays, at ``time`` (in the time units)
        (collective).

        The whole step at once, as PIO buffers darray writes and flushes them together: one agreement on the
        arrays, then the fields that share a route move to the writers in one exchange and are written in one
        call, in batches that keep a writer's buffers under :data:`STEP_BUFFER_BYTES`.
        """
        recorded = [name for name, f in self.fields.items() if f.records]  # in order: the same on every rank
        missing, fixed = set(recorded) - set(fields), set(fields) - set(recorded)
        if missing or fixed:
            raise ClimioError(f"output step {step}: no data for field(s) {', '.join(sorted(missing))}" if missing else
                              f"output step {step}: field(s) {', '.join(sorted(fixed))} have no records: write them "
                              f"once with write_field(None, name, local)")
        arrays = {name: np.asarray(fields[name]) for name in recorded}
        self._check_shapes(arrays.items())
        self._write_records([(step, name, arrays[name]) for name in recorded], [self._time_request(step, time)])

    def write_records(self, records: Sequence[tuple[int | None, str, np.ndarray]]) -> None:
        """Several records at once, each ``(step, field name, this rank's local array)`` (step None for a field
        without records), such as the writes a model held since its last call: one check of the arrays, then as
        few exchanges and write calls as the routes' buffers allow (collective: every rank passes the same steps
        and fields, in the same order; arrays are read in place)."""
        for step, name, _ in records:
            problem = self._record_problem(step, name)
            if problem:
                raise ClimioError(problem, collective=True)
        records = [(step, name, np.asarray(local)) for step, name, local in records]
        self._check_shapes([(name, local) for _, name, local in records])
        self._write_records(records, [])

    def check_record(self, step: int | None, name: str, local: np.ndarray) -> None:
        """Raise if ``local`` cannot be record ``step`` of field ``name`` on this rank (no communication): what
        :meth:`write_records` checks, for a caller that holds records to write them later."""
        problem = self._record_problem(step, name) or self._shape_problem([(name, np.asarray(local))])
        if problem:
            raise ClimioError(problem)

    def moved_copy(self, name: str, local: np.ndarray, into: Callable[[tuple[int, ...], np.dtype], np.ndarray]
                   ) -> np.ndarray:
        """A copy of this rank's owned points of field ``name`` (the halo left out) as its records move to the
        writers (a classic file's byte order), made in one pass into ``into(shape, dtype)``: a caller that holds
        records to write them later copies them so, and the write makes no pass of its own over them."""
        f = self.fields[name]
        owned = self.grid.owned_view(local, f.levels)
        copy = into(owned.shape, self._moved(f))
        np.copyto(copy, owned, casting="unsafe")  # the values were checked to fit (the C API's rule)
        return copy

    def _record_problem(self, step: int | None, name: str) -> str:
        if name not in self.fields:
            return f"no field '{name}' in this output (it has {', '.join(self.fields)})"
        if (step is None) == self.fields[name].records:
            return f"field '{name}' " + ("has records: give the step" if step is None else
                                         "has no records: write it with step None")
        return ""

    def _write_records(self, records: list[Record], pending: list[tuple[str, np.ndarray | None, Hyperslab]]
                       ) -> None:
        """Move checked records to the writers and write them with ``pending`` requests: the records of
        different routes in one exchange, until a route's buffers are needed again."""
        group: list[tuple[Route, list[Record]]] = []  # batches of different routes: moved in one exchange
        held = 0  # the bytes the group's records take on the fullest writer
        for route, members in self._batches(records):
            if isinstance(route, Gatherer):
                pieces = self._many_pieces(route, [self.fields[name] for _, name, _ in members],
                                           [local for _, _, local in members])
                pending += record_requests(members, pieces)
                continue
            more = route.buffer_bytes * len(members)
            # its buffers are taken, or the group would outgrow a step's buffers: move and write what is held first
            if any(r is route for r, _ in group) or (group and held + more > STEP_BUFFER_BYTES):
                self._store.write_many(pending + self._gathered(group))
                pending, group, held = [], [], 0
            group.append((route, members))
            held += more
        self._store.write_many(pending + self._gathered(group))
        while len(self._stripe_routes) > len(self.fields) + KEPT_STRIPE_ROUTES:  # the least recent, now unused
            self._stripe_routes.popitem(last=False)[1].free()

    def _gathered(self, group: list[tuple[Route, list[Record]]]) -> list[tuple[str, np.ndarray, Hyperslab]]:
        """The write requests of the grouped records, moved to the writers in one exchange."""
        moved = gather_together([(route, [local for _, _, local in members]) for route, members in group])
        return [request for (_, members), pieces in zip(group, moved) for request in record_requests(members, pieces)]

    def _batches(self, records: list[Record]) -> list[tuple[Route | Gatherer, list[Record]]]:
        """The records grouped by the route they take (in order of first use), cut into batches of as many
        records as :data:`STEP_BUFFER_BYTES` holds on the fullest writer. (``stripe`` cuts each record at the
        stripe boundaries after its own offset in the file: records share a route only at the same phase.)"""
        groups: dict[int, tuple[Route | Gatherer, list[Record]]] = {}
        for record in records:
            step, name, _ = record
            route = self._stripe_route(name, self.fields[name], step or 0) if self.strategy.name == "stripe" \
                else self._routes[name]
            groups.setdefault(id(route), (route, []))[1].append(record)
        out = []
        for route, members in groups.values():
            per = max(1, STEP_BUFFER_BYTES // max(1, route.buffer_bytes)) if isinstance(route, Route) else 1
            out += [(route, members[k:k + per]) for k in range(0, len(members), per)]
        return out

    def _time_request(self, step: int, time: float) -> tuple[str, np.ndarray | None, Hyperslab]:
        mine = 1 if self.rank == 0 else 0
        return self.time_name, np.array([time]) if mine else None, Hyperslab((step,), (mine,))

    def write_time(self, step: int, time: float) -> None:
        """Set record ``step``'s time coordinate (collective; rank 0's value is written)."""
        self._store.write_many([self._time_request(step, time)])

    def write_field(self, step: int | None, name: str, local: np.ndarray) -> None:
        """Write record ``step`` of one field (``None`` for a field without records) from this rank's local array
        (collective; read in place)."""
        self.write_records([(step, name, local)])

    def write_variable(self, name: str, data: np.ndarray | None, step: int | None = None) -> None:
        """Write one of ``variables`` (not decomposed: coordinates, bounds, level values) from rank 0's ``data``
        (collective; other ranks may pass None): whole, or record ``step`` of a variable over the record dimension
        (``time_bnds``)."""
        if name not in self.variables:
            raise ClimioError(f"no undistributed variable '{name}' in this output (it has "
                              f"{', '.join(self.variables) or 'none'})", collective=True)
        var_dims = self.variables[name].dims
        recorded = bool(var_dims) and var_dims[0] == self.time_name
        if recorded != (step is not None):
            raise ClimioError(f"variable '{name}' " + ("has records: give the step" if recorded else
                                                      "has no records: leave the step out"), collective=True)
        shape = tuple(self._store.schema.dims[d] for d in var_dims[1 if recorded else 0:])
        mine = self.rank == 0
        problem = "" if not mine or np.shape(data) == shape else \
            f"variable '{name}': data of shape {np.shape(data)}, expected {shape}"
        problem = self.comm.bcast(problem)
        if problem:
            raise ClimioError(problem, collective=True)
        slab = Hyperslab.whole(shape) if mine else Hyperslab.empty(len(shape))
        values = np.asarray(data) if mine else None
        if recorded:
            slab = Hyperslab((step, *slab.start), (1 if mine else 0, *slab.count))
            values = values[None] if mine else None
        self._store.write_many([(name, values, slab)])

    def _check_shapes(self, arrays: Iterable[tuple[str, np.ndarray]]) -> None:
        """Raise on every rank if one rank's local array does not fit the decomposition (no rank waits)."""
        problem = self._shape_problem(arrays)
        if not mpi.all_true(self.comm, not problem):
            raise ClimioError(next(p for p in self.comm.allgather(problem) if p), collective=True)

    def _shape_problem(self, arrays: Iterable[tuple[str, np.ndarray]]) -> str:
        """Why one of this rank's local arrays does not fit the decomposition, or ''."""
        for name, array in arrays:
            f = self.fields[name]
            expected = self.grid.local_shape(f.levels)
            plain = self.grid.layout(f.levels).local_shape
            if array.shape not in (expected, plain):
                return (f"field '{name}': local array of shape {array.shape} on rank {self.rank} does not "
                        f"match its decomposition: expected {expected}"
                        + (f" (or {plain} without halo)" if plain != expected else ""))
        return ""

    def _many_pieces(self, route: Route | Gatherer, fields: list[Field], locals_: list[np.ndarray]
                     ) -> list[list[tuple[np.ndarray, Hyperslab]]]:
        """This rank's (data, record hyperslab) pieces of several fields that share ``route`` (collective)."""
        if isinstance(route, Route):
            return route.gather_many(locals_)
        out = []
        for f, local in zip(fields, locals_):
            whole = route.gather(local.astype(f.dtype, copy=False))
            shape = self.grid.shape(f.levels)
            out.append([(whole, Hyperslab.whole(shape))] if self.rank == 0 else
                       [(np.empty((0,) * len(shape), f.dtype), Hyperslab.empty(len(shape)))])
        return out

    def _stripe_route(self, name: str, f: Field, step: int) -> Route:
        """The route for this record's position in the file; records of one shape at the same stripe phase
        share one. Each rank works out every rank's stripes, so on blocks a new one is built without communication;
        the routes of the last step or so are kept (after each write)."""
        layout = self._store.layout  # a classic file's: stripe applies to CDF-2 and CDF-5
        assert layout is not None
        offset = layout.begins[name] + (step * layout.record_size if f.records else 0)
        key = (f.levels, np.dtype(f.dtype).str, self.strategy.stripe_key(offset))
        if key in self._stripe_routes:
            self._stripe_routes.move_to_end(key)
            return self._stripe_routes[key]
        route = self.strategy.route(self.comm, self.grid, f.levels, self._moved(f), fill=fill_value(f), offset=offset)
        route.share(self._stripe_pool)  # a new phase makes no arrays of its own
        self._stripe_routes[key] = route
        return route

    def close(self) -> None:
        self._store.close()
        routes = {id(r): r for r in (*self._routes.values(), *self._stripe_routes.values())}  # shared: free once
        for route in routes.values():
            route.free()

    def __enter__(self) -> ModelOutput:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: object) -> None:
        if err is None:
            self.close()
        else:
            self._store.__exit__(kind, err, None)
