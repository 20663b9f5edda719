"""Many input files seen as one dataset (NcML-style aggregation).

``join``: the files are concatenated along one dimension (usually the unlimited
time); every other dimension and every variable without it must agree, and the
grid comes from the first file. ``union``: the files' variables are merged; a
dimension or variable already seen in an earlier file is not read again from a
later one (grid and topology come from the first file that has them).

Joining along a coordinate with CF time units (``<unit> since <date>``) works as
``ncrcat``: every file's values of the coordinate and of its ``bounds`` and
``climatology`` variables are rebased to the first file's units (cftime, in the
coordinate's calendar, which must be the same in every file), the files are taken in
the order of their first times (as cdo mergetime does), and the joined axis must be
strictly increasing: overlaps are errors. A union cannot merge
records: a variable on a record (unlimited) dimension in more than one input, or a
record coordinate that differs between inputs, is an error that points to
``--join``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

import numpy as np

from climio.core import ncio
from climio.core.decomp import Hyperslab
from climio.core.ncio import Store, Variable
from climio.core.ncio.schema import missing_values
from climio.errors import ClimioError
from climio.core.timeaxis import Rebase, TimeUnitsError, calendar_of, describe, rebase, same_calendar, time_units

if TYPE_CHECKING:
    from mpi4py import MPI


@dataclass
class Inputs:
    """Open input stores and how their dimensions and variables combine."""

    paths: list[str]  # in the order joined (by time, when joined along a time coordinate)
    stores: list[Store]
    join: str | None
    dims: dict[str, int]
    unlimited: set[str]
    variables: dict[str, Variable]
    source: dict[str, int]  # variable -> the store that holds it (join variables: all of them)
    attrs: dict[str, object]
    skipped: list[str]  # what climio leaves out of the inputs (variables of other types, groups), for a warning
    rebase: dict[str, list[Rebase]] = field(default_factory=dict)  # joined time variable -> per input, to 1st units

    @property
    def comm(self) -> MPI.Comm:
        return self.stores[0].comm

    @property
    def data_model(self) -> str:
        return self.stores[0].data_model

    def __enter__(self) -> Inputs:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        """Close every input, collectively only when all ranks are here together (see ``Store.__exit__``)."""
        _leave(self.stores, kind, err, tb)

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.dims[d] for d in self.variables[name].dims)

    def chunks(self, name: str) -> tuple[int, ...] | None:
        """The chunks a variable is stored in (its first file's; None: contiguous), to plan small reads by."""
        return self.stores[self.source[name]].chunking.get(name)

    def _holding(self, name: str) -> list[Store]:
        """The inputs that hold a variable: every one where it is joined, else its own."""
        var = self.variables[name]
        joined = self.join is not None and self.join in var.dims and len(self.stores) > 1
        return list(self.stores) if joined else [self.stores[self.source[name]]]

    def can_gather(self, name: str) -> bool:
        """Whether :meth:`gather` reads a variable: every file that holds it can (``Store.can_gather``), and its
        values need no rebasing."""
        return name not in self.rebase and all(store.can_gather(name) for store in self._holding(name))

    def gather(self, name: str, index: tuple[np.ndarray, ...]) -> np.ndarray:
        """Scattered elements of a variable across the joined files (``Store.gather``: one index array per
        dimension, broadcast together), where :meth:`can_gather` (local)."""
        stores = self._holding(name)
        if len(stores) == 1:
            return stores[0].gather(name, index)
        var = self.variables[name]
        axis = var.dims.index(str(self.join))
        shape = np.broadcast_shapes(*(np.shape(i) for i in index))
        flat = [np.broadcast_to(np.asarray(i, dtype=np.int64), shape).ravel() for i in index]
        starts = np.cumsum([0, *(_length(store, str(self.join)) for store in stores)])
        owner = np.searchsorted(starts, flat[axis], side="right") - 1
        order = np.argsort(owner, kind="stable")
        bounds = np.searchsorted(owner[order], np.arange(len(stores) + 1))
        out = np.empty(order.size, dtype=var.numpy_dtype)
        for k, store in enumerate(stores):
            chosen = order[bounds[k]:bounds[k + 1]]
            if chosen.size:
                out[chosen] = store.gather(name, tuple(f[chosen] - (starts[k] if d == axis else 0)
                                                       for d, f in enumerate(flat)))
        return out.reshape(shape)

    def read_text(self, name: str) -> np.ndarray:
        """A char or string variable, whole; joined along the join dimension when it has it (no communication)."""
        var = self.variables[name]
        if self.join is None or self.join not in var.dims:
            return self.stores[self.source[name]].read_text(name)
        return np.concatenate([store.read_text(name) for store in self.stores], axis=var.dims.index(self.join))

    def read(self, name: str, slab: Hyperslab, *, as_stored: bool = False) -> np.ndarray:
        """One hyperslab of a variable, across files when joined: one collective read per input file, with
        an empty hyperslab where this rank needs nothing from a file. ``as_stored`` as in ``Store.read``
        (the files' own byte order when they all share it)."""
        return self._joined(name, slab, lambda store, part: store.read(name, part, as_stored=as_stored), 1,
                            as_stored)

    def read_every(self, name: str, slab: Hyperslab, step: int, *, as_stored: bool = False) -> np.ndarray:
        """Every ``step``-th index along the first axis of ``slab`` (the join axis, when joined) from its start,
        across files (collective): ``Store.read_every`` on each input."""
        return self._joined(name, slab, lambda store, part: store.read_every(name, part, step, as_stored=as_stored),
                            step, as_stored)

    def prefetch(self, name: str, slab: Hyperslab) -> None:
        """Start reading the bytes that hold ``slab`` ahead of its :meth:`read` (``Store.prefetch`` on each
        file it spans; local, returns at once)."""
        for store, part, _ in self._parts(name, slab, 1):
            store.prefetch(name, part)

    def _parts(self, name: str, slab: Hyperslab, step: int) -> Iterator[tuple[Store, Hyperslab, int]]:
        """Each input's share of ``slab`` (every ``step``-th index along the join axis): the store, its
        hyperslab in that file (empty where this rank needs nothing of it) and where it goes along the axis."""
        var = self.variables[name]
        if self.join is None or self.join not in var.dims or len(self.stores) == 1:
            yield self.stores[self.source[name]], slab, 0
            return
        axis = var.dims.index(self.join)
        if step > 1 and axis:
            raise ValueError(f"read_every: '{name}' is joined along axis {axis}, not its first")
        first, start = 0, slab.start[axis]
        for store in self.stores:
            length = _length(store, self.join)
            lo = max(start, first)
            lo += -(lo - start) % step  # the next index on the step grid
            hi = min(start + slab.count[axis], first + length)
            part_start, part_count = list(slab.start), list(slab.count)
            if hi > lo and slab.size:
                part_start[axis], part_count[axis] = lo - first, hi - lo
            else:
                part_start, part_count = [0] * len(slab.count), [0] * len(slab.count)
            yield store, Hyperslab(tuple(part_start), tuple(part_count)), (lo - start) // step
            first += length

    def _joined(self, name: str, slab: Hyperslab, get: Callable[[Store, Hyperslab], np.ndarray], step: int,
                as_stored: bool) -> np.ndarray:
        var = self.variables[name]
        if self.join is None or self.join not in var.dims or len(self.stores) == 1:
            return get(self.stores[self.source[name]], slab)  # one file: its values are the values, no copy
        axis = var.dims.index(self.join)
        dtypes = {s.stored_dtype(var) if as_stored else var.numpy_dtype for s in self.stores}
        count = list(slab.count)
        count[axis] = -(-slab.count[axis] // step)
        pieces: list[tuple[int, np.ndarray]] = []
        for n, (store, part, at) in enumerate(self._parts(name, slab, step)):
            data = get(store, part)
            if data.size:
                pieces.append((at, self.rebase[name][n].apply(data) if name in self.rebase else data))
        if len(pieces) == 1 and list(pieces[0][1].shape) == count:
            return pieces[0][1]  # all from one file: no copy
        out = np.empty(count, dtypes.pop() if len(dtypes) == 1 else var.numpy_dtype)
        for at, data in pieces:
            index = [slice(None)] * len(count)
            index[axis] = slice(at, at + data.shape[axis])
            out[tuple(index)] = data
        return out

    def gaps(self, step: float) -> list[tuple[int, int, float, float]]:
        """Where the joined coordinate jumps by more than 1.5 ``step`` from one input to the next (a missing
        file): ``(earlier input, later input, its last value, the next one's first)``, in the first input's
        units. Every rank reads the coordinate's ends (small), so every rank finds the same."""
        if self.join is None or self.join not in self.variables or len(self.stores) < 2:
            return []
        ends = []
        for n, store in enumerate(self.stores):
            values = store.read(self.join)
            if self.join in self.rebase:
                values = self.rebase[self.join][n].apply(values)
            ends.append((n, float(values[0]), float(values[-1])) if values.size else None)
        present = [e for e in ends if e is not None]
        return [(a[0], b[0], a[2], b[1]) for a, b in zip(present, present[1:]) if b[1] - a[2] > 1.5 * step]

    def read_runs(self, name: str, slabs: list[Hyperslab]) -> list[np.ndarray]:
        """Read hyperslabs (this rank's own list) of a variable, across files when joined (collective)."""
        var = self.variables[name]
        if self.join is None or self.join not in var.dims:
            return self.stores[self.source[name]].read_runs(name, slabs)
        axis = var.dims.index(self.join)
        outs = [np.empty(s.count, var.numpy_dtype) for s in slabs]
        rebases = self.rebase.get(name)
        first = 0
        for n, store in enumerate(self.stores):
            length = _length(store, self.join)
            parts, places = [], []
            for k, slab in enumerate(slabs):
                lo, hi = max(slab.start[axis], first), min(slab.start[axis] + slab.count[axis], first + length)
                if hi > lo and slab.size:
                    start, count = list(slab.start), list(slab.count)
                    start[axis], count[axis] = lo - first, hi - lo
                    parts.append(Hyperslab(tuple(start), tuple(count)))
                    places.append((k, lo - slab.start[axis], hi - slab.start[axis]))
            for data, (k, lo, hi) in zip(store.read_runs(name, parts), places):
                if rebases is not None:
                    data = rebases[n].apply(data)
                index = [slice(None)] * len(var.dims)
                index[axis] = slice(lo, hi)
                outs[k][tuple(index)] = data
            first += length
        return outs


def _length(store: Store, dim: str) -> int:
    size = store.schema.dims[dim]
    return store.records if size is None else size


def _where(paths: list[str], k: int) -> str:
    return f"'{paths[k]}'"


def open_inputs(paths: list[str], comm: MPI.Comm, join: str | Callable[[Store], str] | None, union: bool, *,
                read: str = "parallel", label: str | None = None) -> Inputs:
    """Open every input (collective) and check that they combine as asked.

    ``join`` is a dimension name, or a rule that finds it in the first input (``climio eva``: the time
    dimension of the analysed variable); ``label`` starts the messages about joining (``--join DIM``
    by default); ``read`` is ``ncio.open``'s.
    """
    stores: list[Store] = []
    try:
        for path in paths:
            stores.append(ncio.open(path, comm, read=read))
        skipped = [f"{path}: {what}" for path, store in zip(paths, stores) for what in store.skipped]
        if callable(join):
            join = join(stores[0])
        if join is None and not union and len(stores) > 1:
            shared = set.intersection(*[{d for d, n in s.schema.dims.items() if n is None} for s in stores])
            join = next(iter(sorted(shared)), None)
        if join is not None and len(stores) > 1:
            paths, stores = _in_time_order(paths, stores, join)
        return _combine(paths, stores, join, skipped, label or f"--join {join}")
    except BaseException:
        _leave(stores, *sys.exc_info())
        raise


def _in_time_order(paths: list[str], stores: list[Store], join: str) -> tuple[list[str], list[Store]]:
    """Inputs joined along a CF time coordinate, sorted by their first time (as cdo mergetime and xarray's
    open_mfdataset do), with one note on rank 0 when that changed their order. Inputs whose times cannot be
    compared (no CF units, other calendars, an empty file) keep the order given, for the join's own checks to
    name the problem; overlaps and gaps are not mended here."""
    firsts = []
    for store in stores:
        names = {v.name for v in store.schema.variables}
        if join not in names or store.schema.variable(join).dims != (join,) or not _length(store, join):
            return paths, stores
        attrs = store.schema.variable(join).attrs
        units = time_units(attrs)
        if units is None or not same_calendar(attrs, stores[0].schema.variable(join).attrs):
            return paths, stores
        try:
            to_first = rebase(units, str(time_units(stores[0].schema.variable(join).attrs)), calendar_of(attrs),
                              tuple(missing_values(attrs)))  # type: ignore[arg-type]
        except TimeUnitsError:
            return paths, stores
        firsts.append(float(to_first.apply(store.read(join)[:1])[0]))  # whole, as the checks that follow read it
    order = sorted(range(len(stores)), key=lambda k: firsts[k])
    if order == list(range(len(stores))):
        return paths, stores
    if stores[0].comm.Get_rank() == 0:
        print(f"climio: note: inputs given out of time order; joined as {', '.join(paths[k] for k in order)}",
              file=sys.stderr)
    return [paths[k] for k in order], [stores[k] for k in order]


def _leave(stores: list[Store], kind: type[BaseException] | None, err: BaseException | None,
           tb: TracebackType | None) -> None:
    """A failing rank must not enter a collective close while the others wait elsewhere (they would never
    meet): each store closes collectively on success or a collective error, and only locally otherwise."""
    for store in stores:
        store.__exit__(kind, err, tb)


def _combine(paths: list[str], stores: list[Store], join: str | None, skipped: list[str], label: str) -> Inputs:
    first = stores[0]
    if join is None:
        _check_union(paths, stores)
    dims = {d: _length(first, d) for d in first.schema.dims}
    unlimited = {d for d, n in first.schema.dims.items() if n is None}
    variables = {v.name: v for v in first.schema.variables}
    source = dict.fromkeys(variables, 0)
    if join is not None:
        for k, store in enumerate(stores):
            if join not in store.schema.dims:
                raise ClimioError(f"{label}: input {_where(paths, k)} has no dimension '{join}'", collective=True)
        dims[join] = sum(_length(s, join) for s in stores)
    for k, store in enumerate(stores[1:], start=1):
        for dim in store.schema.dims:
            if dim == join:
                continue
            length = _length(store, dim)
            if dim in dims and dims[dim] != length:
                raise ClimioError(f"inputs' grids differ: dimension '{dim}' has {dims[dim]} elements in "
                                  f"{_where(paths, 0)} but {length} in {_where(paths, k)}", collective=True)
            dims.setdefault(dim, length)
            if store.schema.dims[dim] is None:
                unlimited.add(dim)
        for var in store.schema.variables:
            known = variables.get(var.name)
            if join is not None and join in var.dims:
                if known is None or known.dims != var.dims or known.numpy_dtype != var.numpy_dtype:
                    raise ClimioError(f"{label}: variable '{var.name}' in {_where(paths, k)} does not match "
                                      f"{_where(paths, 0)} (every input needs it with the same dimensions and type)",
                                      collective=True)
            elif known is None:
                variables[var.name] = var
                source[var.name] = k
    if join is not None:
        for name, var in variables.items():
            if join in var.dims:
                missing = [k for k, s in enumerate(stores) if name not in {v.name for v in s.schema.variables}]
                if missing:
                    raise ClimioError(f"{label}: variable '{name}' is missing from {_where(paths, missing[0])}",
                                      collective=True)
        _check_same_grid(paths, stores, join)
    rebases = _time_axis(paths, stores, join, variables, label) if join is not None and len(stores) > 1 else {}
    return Inputs(paths, stores, join, dims, unlimited, variables, source, dict(first.schema.attrs), skipped,
                  rebases)


def _check_same_grid(paths: list[str], stores: list[Store], join: str) -> None:
    """Joined files must share their coordinates: compare every 1-D coordinate variable with the first file's."""
    first = stores[0]
    for var in first.schema.variables:
        if var.dims != (var.name,) or var.name == join:
            continue
        reference = first.read(var.name)
        for k, store in enumerate(stores[1:], start=1):
            names = {v.name for v in store.schema.variables}
            if var.name in names and not np.array_equal(store.read(var.name), reference,
                                                        equal_nan=reference.dtype.kind == "f"):
                raise ClimioError(f"inputs' grids differ: coordinate '{var.name}' of {_where(paths, k)} is not "
                                  f"the same as in {_where(paths, 0)}; only files on one grid can be joined",
                                  collective=True)


# -- time axes of joined inputs, record dimensions under union ------------------------------------------------

def _companions(attrs: Mapping[str, object], names: Iterable[str]) -> list[str]:
    """Variables named by a coordinate's ``bounds`` and ``climatology`` attributes that are among ``names``."""
    names = set(names)
    found = [w for key in ("bounds", "climatology") for w in str(attrs.get(key, "")).split() if w in names]
    return list(dict.fromkeys(found))


def _time_axis(paths: list[str], stores: list[Store], join: str, variables: dict[str, Variable],
               option: str) -> dict[str, list[Rebase]]:
    """Rebase the joined time coordinate (and its bounds) to the first input's units; check the joined axis.

    Every rank reads the (small) coordinate of every input and runs the same checks, so errors are
    collective.
    """
    coord = variables.get(join)
    if coord is None or coord.dims != (join,):
        return {}
    attrs = [s.schema.variable(join).attrs for s in stores]
    units = [time_units(a) for a in attrs]
    if units[0] is None:
        later = next((k for k, u in enumerate(units) if u is not None), None)
        if later is not None:
            raise ClimioError(f"{option}: '{join}' has time units '{units[later]}' in {_where(paths, later)} but "
                              f"none in {_where(paths, 0)}; give every input CF time units ('<unit> since <date>')",
                              collective=True)
        return {}
    calendars = [calendar_of(a) for a in attrs]
    for k in range(1, len(stores)):
        if units[k] is None:
            raise ClimioError(f"{option}: '{join}' in {_where(paths, k)} has no CF time units ('<unit> since "
                              f"<date>') but '{units[0]}' in {_where(paths, 0)}, so it cannot be rebased",
                              collective=True)
        if not same_calendar(attrs[k], attrs[0]):
            raise ClimioError(f"{option}: calendars differ: '{join}' is on calendar '{calendars[0]}' in "
                              f"{_where(paths, 0)} but '{calendars[k]}' in {_where(paths, k)}; files on different "
                              f"calendars cannot be joined", collective=True)
    calendar = calendars[0]
    joined = [n for n, v in variables.items() if join in v.dims]
    rebases: dict[str, list[Rebase]] = {}
    for name in [join] + [n for n in _companions(coord.attrs, joined) if n != join]:
        target = units[0] if name == join else (time_units(variables[name].attrs) or units[0])
        per = []
        for k, store in enumerate(stores):
            own = store.schema.variable(name).attrs
            source = units[k] if name == join else (time_units(own) or units[k])
            try:
                per.append(rebase(source, target, calendar, tuple(missing_values(own))))  # type: ignore[arg-type]
            except TimeUnitsError as err:
                raise ClimioError(f"{option}: cannot rebase '{name}' of {_where(paths, k)}: {err}",
                                  collective=True) from None
        if all(r.identity for r in per):
            continue
        _check_exact(paths, stores, name, variables[name], per, option, target)
        rebases[name] = per
    _check_increasing(paths, stores, join, rebases.get(join), units[0], calendar, option)
    return rebases


def _check_exact(paths: list[str], stores: list[Store], name: str, var: Variable, per: list[Rebase],
                 option: str, target: str) -> None:
    """An integer time variable must take whole values in the first input's units."""
    if var.numpy_dtype.kind not in "iu":
        return
    for k, (store, how) in enumerate(zip(stores, per)):
        if how.identity:
            continue
        data = store.read(name).ravel()
        bad = np.flatnonzero(how.inexact(data))
        if bad.size:
            value = data[bad[0]]
            new = how.values(data[bad[0]:bad[0] + 1])[0]
            raise ClimioError(f"{option}: '{name}' is of integer type {var.numpy_dtype} and its value {value} in "
                              f"{_where(paths, k)} is {new:.12g} in the first input's units '{target}', which it "
                              f"cannot hold; make it floating point first (ncap2 -s '{name}=double({name})')",
                              collective=True)


def _check_increasing(paths: list[str], stores: list[Store], join: str, per: list[Rebase] | None, units: str,
                      calendar: str, option: str) -> None:
    """After joining (records in file order), the time coordinate must be strictly increasing."""
    def when(value: float) -> str:
        return f"{describe(value, units, calendar)} ({value:g})"

    previous: tuple[int, float] | None = None
    for k, store in enumerate(stores):
        values = store.read(join)
        if per is not None:
            values = per[k].apply(values)
        values = values.astype(np.float64)
        if values.size == 0:
            continue
        bad = np.flatnonzero(~(np.diff(values) > 0))
        if bad.size:
            i = int(bad[0])
            raise ClimioError(f"{option}: '{join}' is not strictly increasing inside {_where(paths, k)}: record "
                              f"{i} is {when(values[i])}, record {i + 1} is {when(values[i + 1])}", collective=True)
        if previous is not None and not values[0] > previous[1]:
            raise ClimioError(f"{option}: {_where(paths, k)} overlaps or comes before {_where(paths, previous[0])}: "
                              f"its first '{join}' is {when(values[0])}, but {_where(paths, previous[0])} ends at "
                              f"{when(previous[1])}; give the inputs in time order without repeated records",
                              collective=True)
        previous = (k, float(values[-1]))


def _join_hint(dim: str) -> str:
    return (f"give --join {dim} to concatenate them (every input then needs dimension '{dim}'), or join those "
            f"files first with ncrcat")


def _record_axis(store: Store, records: set[str]) -> dict[str, str]:
    """Record coordinate variables of a store and their bounds/climatology: name -> record dimension."""
    names = {v.name for v in store.schema.variables}
    axis: dict[str, str] = {}
    for dim in records:
        if dim in names and store.schema.variable(dim).dims == (dim,):
            axis[dim] = dim
            for name in _companions(store.schema.variable(dim).attrs, names):
                axis.setdefault(name, dim)
    return axis


def _same_values(first: Store, other: Store, name: str, coord_first: str, coord_other: str) -> bool:
    """Whether a record coordinate (or its bounds) holds the same times in two inputs (rebased when needed)."""
    a, b = first.read(name).astype(np.float64), other.read(name).astype(np.float64)
    if a.shape != b.shape:
        return False
    attrs_a, attrs_b = first.schema.variable(coord_first).attrs, other.schema.variable(coord_other).attrs
    units_a = time_units(first.schema.variable(name).attrs) or time_units(attrs_a)
    units_b = time_units(other.schema.variable(name).attrs) or time_units(attrs_b)
    if units_a is not None and units_b is not None and units_a != units_b:
        if not same_calendar(attrs_a, attrs_b):
            return False
        try:
            b = rebase(units_b, units_a, calendar_of(attrs_a), tuple(missing_values(other.schema.variable(name).attrs))).values(b)
        except TimeUnitsError:
            return False
    return bool(np.array_equal(a, b, equal_nan=True))


def _describes_records(var: Variable, records: set[str]) -> bool:
    """A variable that labels the records rather than holding a field: 1-D on the record dimension (CESM's
    ``date``, ``datesec``), or text per record (``date_written(time, chars)``). Identical copies lose nothing."""
    if not var.dims or var.dims[0] not in records:
        return False
    return len(var.dims) == 1 or (bool(getattr(var, "is_text", False)) and len(var.dims) == 2)


def _same_raw(first: Store, other: Store, name: str) -> bool:
    def whole(store: Store) -> np.ndarray:
        text = getattr(store.schema.variable(name), "is_text", False)
        return np.asarray(store.read_text(name) if text else store.read(name))  # type: ignore[attr-defined]

    a, b = whole(first), whole(other)
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def _check_union(paths: list[str], stores: list[Store]) -> None:
    """A union keeps one copy of each variable, so inputs must not split a record dimension between them."""
    if len(stores) < 2:
        return
    records = [{d for d, n in s.schema.dims.items() if n is None} for s in stores]
    first_with: dict[str, int] = {}
    for k, store in enumerate(stores):
        for dim in store.schema.dims:
            j = first_with.setdefault(dim, k)
            if j != k and dim in records[j] | records[k] and _length(stores[j], dim) != _length(store, dim):
                raise ClimioError(f"--union: record dimension '{dim}' has {_length(stores[j], dim)} records in "
                                  f"{_where(paths, j)} but {_length(store, dim)} in {_where(paths, k)}, and a union "
                                  f"cannot merge records: {_join_hint(dim)}", collective=True)
    seen: dict[str, int] = {}
    axes = [_record_axis(s, r) for s, r in zip(stores, records)]
    for k, store in enumerate(stores):
        for var in store.schema.variables:
            j = seen.setdefault(var.name, k)
            if j == k:
                continue
            earlier = stores[j].schema.variable(var.name)
            on_record = [d for d in earlier.dims + var.dims if d in records[j] | records[k]]
            if not on_record:
                continue
            dim = on_record[0]
            if var.name in axes[j] and var.name in axes[k]:
                same = _same_values(stores[j], store, var.name, axes[j][var.name], axes[k][var.name])
            elif _describes_records(earlier, records[j]) and _describes_records(var, records[k]):
                same = _same_raw(stores[j], store, var.name)
            else:
                same = None
            if same is False:
                raise ClimioError(f"--union: record {'coordinate' if var.name in axes[j] else 'variable'} "
                                  f"'{var.name}' differs between {_where(paths, j)} and {_where(paths, k)}, and a "
                                  f"union keeps only the first: {_join_hint(dim)}", collective=True)
            if same:
                continue
            raise ClimioError(f"--union: variable '{var.name}' (on record dimension '{dim}') is in both "
                              f"{_where(paths, j)} and {_where(paths, k)}, and a union keeps only the first copy: "
                              f"{_join_hint(dim)}", collective=True)
