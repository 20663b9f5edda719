"""A record of a field between the ranks' decomposition and the pieces of the file that its I/O ranks
write or read: one :class:`Route` per strategy, built once, used every step, both ways.

A :class:`Route` is PIO's I/O descriptor: a :mod:`climio.core.rearrange` plan from every rank's share of
the record (its decomposition's layout) to the pieces of the record each I/O rank writes (or reads),
listed as hyperslabs in the order they sit in that rank's buffer. Writing moves the data forward into the
buffer and writes the pieces; reading reads the pieces into the buffer and moves the data backward. The
strategies differ only in the pieces:

- ``direct``: each rank's own points (its box; or its offsets sorted into runs);
- ``root``: the whole record on rank 0;
- ``rows``/``cols``: a band of whole process-grid rows (columns) on each band's first rank;
- ``agg:N``: N aggregators own equal row-aligned ranges of the record, each a contiguous piece of the file
  written as at most a handful of hyperslabs (a partial row, whole rows, whole levels, ...), so the file
  system sees few large requests (seed 002 ch. 7; PIO's I/O tasks);
- ``stripe``: the record cut at the file's stripe boundaries, stripe ``i`` to aggregator ``i mod count``.

Every strategy but ``direct`` names its writers and their pieces by a few numbers (:class:`Writers`: flat
ranges, or bands of the process grid) that every rank works out alike, so on blocks a route is built with no
communication and each rank looks only at the writers its block reaches.

Grid points that no rank owns (holes) keep the fill value the buffer starts with: the plan never touches
them. Where the writers' pieces are the owners' own points (``direct``), the holes are written as pieces of
fill of their own, shared out evenly.
"""

from __future__ import annotations

import copy
import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from climio.core import collective, trace
from climio.core.decomp import Decomposition, Hyperslab, block_range, cuts
from climio.core.ncio.store import Store
from climio.core.rearrange import (BoxLayout, GridPieces, Layout, Moves, PieceMap, Plan, RangePieces, flat_box_counts,
                                   flat_boxes, forward_together)
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI

_TOKENS = itertools.count()
Ranges = tuple[np.ndarray, np.ndarray, np.ndarray]  # (first element, end element, writer), ascending, covering a record


def node_of(comm: MPI.Comm) -> list[int]:
    """The node of every rank of ``comm``, named by its first rank (collective)."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return comm.allgather(node.bcast(comm.Get_rank(), root=0))
    finally:
        node.Free()


def spread(node_of: list[int], count: int) -> list[int]:
    """Pick ``count`` ranks taking one per node in turn (ranks listed by node)."""
    by_node: dict[int, list[int]] = {}
    for rank, node in enumerate(node_of):
        by_node.setdefault(node, []).append(rank)
    queues = list(by_node.values())
    picked: list[int] = []
    depth = 0
    while len(picked) < count:
        for ranks in queues:
            if depth < len(ranks) and len(picked) < count:
                picked.append(ranks[depth])
        depth += 1
    return sorted(picked)


BALANCE_UNITS = 8  # whole slabs per aggregator at least: a writer holds at most 1/8 more than another


def even_ranges(shape: tuple[int, ...], aggregators: list[int], unit: int | None = None) -> Ranges:
    """``agg:N``: equal ranges of whole units, one per aggregator. A unit is given (a compressed variable's
    chunk, so that each aggregator compresses whole chunks of its own), or it is the largest slab of trailing
    axes of which every aggregator still gets :data:`BALANCE_UNITS` or more: each range is then one hyperslab (a
    level's plane, say), one request to the file instead of a partial slab at each end (parallel HDF5's writers
    made about half the collective calls for CMAQ CA)."""
    total = math.prod(shape)
    if unit is None:
        unit = shape[-1] if len(shape) > 1 else 1  # a 1-D record (a mesh's cells) is cut anywhere
        for k in range(1, len(shape)):
            if math.prod(shape[:k]) >= BALANCE_UNITS * len(aggregators):
                unit = math.prod(shape[k:])
                break
    units = -(-total // unit) if total else 0
    blocks = [(block_range(units, len(aggregators), k), rank) for k, rank in enumerate(aggregators)]
    kept = [(start * unit, min((start + count) * unit, total), rank) for (start, count), rank in blocks if count]
    return tuple(np.array([r[i] for r in kept], np.int64) for i in range(3))  # type: ignore[return-value]


def stripe_ranges(offset: int, shape: tuple[int, ...], itemsize: int, stripe_size: int,
                  aggregators: list[int]) -> Ranges:
    """``stripe``: the record (starting at byte ``offset`` of the file) cut at stripe boundaries, stripe ``i`` of
    the file to aggregator ``i mod count``; consecutive stripes of one aggregator (a count of one) as one range."""
    nbytes = math.prod(shape) * itemsize
    if not nbytes:
        return _EMPTY_RANGES
    stripe = np.arange(offset // stripe_size, (offset + nbytes - 1) // stripe_size + 1, dtype=np.int64)
    first = (np.maximum(stripe * stripe_size, offset) - offset) // itemsize
    rank = np.asarray(aggregators, np.int64)[stripe % len(aggregators)]
    new = np.ones(stripe.size, bool)
    new[1:] = rank[1:] != rank[:-1]
    first, rank = first[new], rank[new]
    return first, np.append(first[1:], nbytes // itemsize), rank


_EMPTY_RANGES: Ranges = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))


class Writers(ABC):
    """The ranks that write a record and the hyperslabs each writes, where every rank works them out alike
    (every strategy but ``direct``): as many writers as the strategy picks, whatever the job's size, found
    through :attr:`pieces` rather than listed."""

    pieces: PieceMap  # every writer's buffer, for the plans
    calls: int  # the most hyperslabs a writer writes
    most: int  # the most elements a writer holds

    @abstractmethod
    def slabs(self, rank: int) -> list[Hyperslab]:
        """Rank ``rank``'s hyperslabs of the record, in its buffer's order (none if it writes nothing)."""

    @property
    @abstractmethod
    def ranks(self) -> Sequence[int]:
        """The writing ranks."""


class RangeWriters(Writers):
    """Writers of flat ranges of the record (``root``, ``agg``, ``stripe``)."""

    def __init__(self, shape: tuple[int, ...], ranges: Ranges) -> None:
        first, end, rank = ranges
        keep = end > first
        first, end, rank = first[keep], end[keep], rank[keep]
        self.pieces = self.by_range = RangePieces(shape, first, end, rank)
        _, which = np.unique(rank, return_inverse=True)
        self.calls = int(np.bincount(which, weights=flat_box_counts(first, end, shape)).max()) if rank.size else 0
        self.most = int(np.bincount(which, weights=end - first).max()) if rank.size else 0

    def slabs(self, rank: int) -> list[Hyperslab]:
        return self.by_range.slabs_of(rank)

    @property
    def ranks(self) -> Sequence[int]:
        return self.by_range.ranks


class BandWriters(Writers):
    """``rows`` (``cols``): each process-grid row's (column's) band of whole grid rows (columns), written by the
    row's (column's) first rank."""

    def __init__(self, shape: tuple[int, ...], process: Decomposition, along_rows: bool) -> None:
        (py, px), (ny, nx), lead = process.parts, shape[-2:], len(shape) - 2
        axis, parts, stride = (0, py, px) if along_rows else (1, px, 1)
        cut = cuts(shape[-2 + axis], parts)
        self.pieces = GridPieces(shape, (None,) * lead + ((cut, None) if along_rows else (None, cut)),
                                 (0,) * lead + ((stride, 0) if along_rows else (0, stride)))
        self._bands = {}
        for k in range(parts):
            a, b = cut[k], cut[k + 1]
            box = Hyperslab((a, 0), (b - a, nx)) if along_rows else Hyperslab((0, a), (ny, b - a))
            if box.size:
                self._bands[k * stride] = [Hyperslab((0,) * lead + box.start, tuple(shape[:lead]) + box.count)]
        self.calls = int(bool(self._bands))
        self.most = max((b[0].size for b in self._bands.values()), default=0)

    def slabs(self, rank: int) -> list[Hyperslab]:
        return self._bands.get(rank, [])

    @property
    def ranks(self) -> Sequence[int]:
        return list(self._bands)


def runs_of(offsets: np.ndarray) -> np.ndarray:
    """Sorted distinct flat offsets as ``(start, length)`` runs of consecutive ones."""
    if not offsets.size:
        return np.zeros((0, 2), dtype=np.int64)
    breaks = np.flatnonzero(np.diff(offsets) != 1) + 1
    starts = offsets[np.concatenate([[0], breaks])]
    lengths = np.diff(np.concatenate([[0], breaks, [offsets.size]]))
    return np.stack([starts, lengths], axis=1)


def held(layout: Layout) -> int:
    """How many elements of the global array ``layout`` holds."""
    return int(layout.flat_runs()[1].sum())


def hole_runs(comm: MPI.Comm, source: Layout) -> np.ndarray:
    """The runs of the global array that no rank's ``source`` holds, in this rank's even share of it
    (collective; one exchange of a marker byte)."""
    from mpi4py import MPI

    total = math.prod(source.shape)
    if comm.allreduce(held(source), op=MPI.SUM) == total:
        return np.zeros((0, 2), dtype=np.int64)
    start, count = block_range(total, comm.Get_size(), comm.Get_rank())
    with Plan(comm, source, Layout.runs(source.shape, [(start, count)])) as plan:
        marks = plan.forward(np.ones(source.local_shape, np.uint8), out=np.zeros(count, np.uint8))
    return runs_of(start + np.flatnonzero(marks == 0))


class Route:
    """The pieces of one record that this rank writes or reads, and the plan that moves the data between the
    ranks' decomposition (``layout``) and those pieces (collective to build and use).

    ``pieces`` are this rank's hyperslabs of the record, in buffer order. Writing, ``fill`` is the value of
    points no rank owns, and ``holes`` runs of them this rank writes itself (``direct``). Reading, the layout
    may hold a point on several ranks (ghosts): each gets the value. ``known``: a map of every rank's layout
    (box-like) and the :class:`Writers`, where every rank works them out alike: the route is then built without
    communication.
    """

    def __init__(self, comm: MPI.Comm, layout: Layout, pieces: list[Hyperslab], dtype: str | np.dtype, *,
                 reading: bool = False, fill: object = None, holes: np.ndarray | None = None,
                 known: tuple[PieceMap, Writers] | None = None) -> None:
        from mpi4py import MPI

        self.dtype, self.layout = np.dtype(dtype), layout
        shape = layout.shape
        pieces = [p for p in pieces if p.size]
        self.slabs: list[tuple[int, Hyperslab]] = []  # (offset in this rank's buffer, hyperslab of the record)
        at = 0
        for piece in pieces:
            self.slabs.append((at, piece))
            at += piece.size
        own_box = isinstance(layout, BoxLayout) and pieces == ([layout.slab] if layout.slab.size else [])
        if known is not None:  # every rank's layout and every writer's pieces known here: whether each is its own
            layouts, writers = known
            own_box = layouts.holders == writers.pieces.holders and all(_is_own(layouts, r, writers.slabs(r))
                                                                        for r in writers.ranks)
        self.plan: Plan | None = None
        if not (own_box if known is not None else comm.allreduce(own_box, op=MPI.LAND)):  # unless all take their box
            buffer = Layout.slabs(shape, pieces)
            pairs = None
            if known is not None:  # every rank's layout and every writer's buffer, found without asking
                pairs = (known[1].pieces, known[0]) if reading else (known[0], known[1].pieces)
            with trace.phase("plan"):
                self.plan = Plan(comm, buffer, layout, known=pairs) if reading else \
                    Plan(comm, layout, buffer, known=pairs)
        self._block: np.ndarray | None = None  # a halo'd block's contiguous landing place (reading)
        self._buffer_shape = buffer.local_shape if self.plan is not None else (at,)
        self._fill_value, self._reading = fill if fill is not None else 0, reading
        self.pool = Pool()  # records being written and their packed local arrays: made once, then reused
        self._token = next(_TOKENS)  # names this route in a shared pool
        self.buffer = self._fresh(math.prod(self._buffer_shape)) if reading else np.empty(0, self.dtype)
        self._shaped = self.buffer.reshape(self._buffer_shape) if reading else self.buffer
        self.fill_slabs = [s for a, n in (holes if holes is not None else ()) for s in flat_boxes(a, a + n, shape)]
        self.fill = np.full(max((s.size for s in self.fill_slabs), default=0), fill if fill is not None else 0,
                            dtype=self.dtype)
        trace.tracer().tally("route:read" if reading else "route", self.counts())
        # every rank makes as many calls; every rank batches as many records as the fullest buffer allows
        if known is None:
            self.calls, self.buffer_bytes = collective.most_each(comm, [len(self.slabs) + len(self.fill_slabs),
                                                                        at * self.dtype.itemsize])
        else:
            assert holes is None, "a route built without communication has no holes of its own to write"
            self.calls, self.buffer_bytes = known[1].calls, known[1].most * self.dtype.itemsize

    def counts(self) -> dict[str, int]:
        """What one record costs this rank (no communication): the messages and bytes it sends and receives
        (to and from other ranks), the bytes it copies to itself, the bytes it writes (or reads), its requests to
        the file and the contiguous runs of the record they cover, and the memory its plan keeps."""
        return route_counts(self.plan.moves() if self.plan is not None else None, [s for _, s in self.slabs],
                            self.layout.shape, self.dtype.itemsize)

    def retyped(self, dtype: np.dtype) -> Route:
        """This route for values of another type of the same size (a classic file's byte order): the same plan
        and pieces, buffers of its own (no communication)."""
        assert np.dtype(dtype).itemsize == self.dtype.itemsize
        other = copy.copy(self)
        other.dtype, other._block, other.pool, other._token = np.dtype(dtype), None, Pool(), next(_TOKENS)
        if self._reading:
            other.buffer = other._fresh(self.buffer.size)
            other._shaped = other.buffer.reshape(other._buffer_shape)
        other.fill = self.fill.astype(other.dtype)
        return other

    def share(self, pool: Pool) -> None:
        """Take the arrays of records from ``pool``, which other routes of the same output take theirs from:
        ``stripe``'s routes, one per phase, then make no arrays of their own."""
        self.pool = pool

    def _fresh(self, size: int) -> np.ndarray:
        """A new array of ``size`` elements, its pages touched now rather than inside a step."""
        made = np.empty(size, dtype=self.dtype)
        if made.size:
            made[::max(1, 4096 // self.dtype.itemsize)] = 0
        return made

    def _receiving(self) -> np.ndarray:
        """The next record's buffer from the pool, with the fill where the plan never writes (filled again
        where another route used it last)."""
        size = math.prod(self._buffer_shape)
        made, fresh, slot = self.pool.take("in", (size,), self.dtype, self._fresh)
        holes = self.plan is not None and not self.plan.dest_complete
        if holes and (fresh or self.pool.user.get(slot) != self._token):
            made[...] = self._fill_value
        self.pool.user[slot] = self._token
        return made

    def gather(self, local: np.ndarray) -> list[tuple[np.ndarray, Hyperslab]]:
        """This rank's local array in; the ``(data, hyperslab)`` pieces it writes out, padded with empty pieces to
        the busiest rank's count (the buffer is reused by the next call: write the pieces first)."""
        return self.gather_many([local])[0]

    def gather_many(self, locals_: list[np.ndarray]) -> list[list[tuple[np.ndarray, Hyperslab]]]:
        """:meth:`gather` for several fields' records in one exchange (every rank passes as many); each record
        lands in a buffer of its own, reused by the next call."""
        return gather_together([(self, locals_)])[0]

    def _tail(self) -> list[tuple[np.ndarray, Hyperslab]]:
        """The pieces after this rank's own: the holes it fills, then empty ones up to the busiest rank's count."""
        ndim = len(self.layout.shape)
        empty = (np.empty((0,) * ndim, self.dtype), Hyperslab.empty(ndim))
        tail = [(self.fill[:s.size].reshape(s.count), s) for s in self.fill_slabs]
        return tail + [empty] * (self.calls - len(self.slabs) - len(tail))

    def _sending(self, local: np.ndarray) -> np.ndarray:
        """A record's local array as the exchange sends it: itself, or converted into a buffer of the route's
        type from the pool (a classic file's byte order: each rank swaps its own values, so the writers
        write what they receive as it is)."""
        if local.dtype == self.dtype and local.flags.c_contiguous:
            return local
        packed = self.pool.take("out", local.shape, self.dtype, self._fresh)[0]  # every element sent is packed
        source, target = local, packed
        if isinstance(self.layout, BoxLayout):  # a halo'd block: its owned box only (the halo is never sent)
            source, target = _interior(self.layout, local), _interior(self.layout, packed)
        with trace.phase("pack", source.size * self.dtype.itemsize):
            np.copyto(target, source, casting="unsafe")
        return packed

    def scatter(self, local: np.ndarray) -> np.ndarray:
        """The pieces this rank read into :attr:`buffer` (:meth:`read`) out to every rank's local array ``local``
        (collective); points not in the file's pieces, such as halos, keep what ``local`` held."""
        target = self._inner(local)
        if self.plan is not None:
            self.plan.forward(self._shaped, out=self._flat(target))
        elif self.slabs:
            target[...] = self.buffer.reshape(target.shape)
        if target is not local:
            _interior(self.layout, local)[...] = target
        return local

    def _inner(self, local: np.ndarray) -> np.ndarray:
        """Where the exchange delivers: ``local`` itself, or for a halo'd block a contiguous array of the block
        (copied into place after: MPI's datatype engine walks a halo'd subarray at a fraction of memory
        speed)."""
        if not isinstance(self.layout, BoxLayout) or local.shape == self.layout.local_shape:
            return local
        if self._block is None or self._block.dtype != local.dtype:
            self._block = np.empty(self.layout.local_shape, local.dtype)
        return self._block

    def _flat(self, local: np.ndarray) -> np.ndarray:
        """A point layout's local array ``(levels, points)`` as the rearranger's flat one (a view)."""
        if isinstance(self.layout, BoxLayout):
            return local
        if local.size != self.layout.size:
            raise ClimioError(f"local array of shape {local.shape} does not match its decomposition: expected "
                              f"{self.layout.size} elements")
        return local.reshape(self.layout.local_shape)

    def read(self, store: Store, name: str, record: int | None) -> None:
        """Read this rank's pieces of variable ``name`` (at time index ``record``, None for a fixed variable)
        from ``store`` into :attr:`buffer` (collective)."""
        lead = () if record is None else ((record,), (1,))
        slabs = [Hyperslab((*lead[0], *s.start), (*lead[1], *s.count)) if lead else s for _, s in self.slabs]
        outs = [self.buffer[at:at + s.size].reshape(slab.count) for (at, s), slab in zip(self.slabs, slabs)]
        store.read_runs(name, slabs, outs)

    def free(self) -> None:
        if self.plan is not None:
            self.plan.free()


class Pool:
    """Arrays that records land in (``"in"``) or are packed into (``"out"``), made on first use and reused by
    later calls. Each call of an exchange :meth:`start` s over: its records then take arrays of their own, in
    turn. An array that lands records is as large as the largest asked for (a view of it is handed out), so the
    routes of ``stripe``'s phases, whose writers' shares differ a little, share them."""

    def __init__(self) -> None:
        self._arrays: dict[tuple[object, ...], list[np.ndarray]] = {}
        self._taken: dict[tuple[object, ...], int] = {}
        self.user: dict[tuple[object, ...], int] = {}  # an array's slot -> the route whose holes it holds the fill of

    def start(self) -> None:
        self._taken.clear()

    def take(self, role: str, shape: tuple[int, ...], dtype: np.dtype, make: Callable[[int], np.ndarray]
             ) -> tuple[np.ndarray, bool, tuple[object, ...]]:
        """The next array of ``shape`` for ``role`` in this call, whether it was made now, and its slot."""
        key = (role, dtype) if role == "in" else (role, dtype, shape)
        arrays = self._arrays.setdefault(key, [])
        k = self._taken.get(key, 0)
        self._taken[key] = k + 1
        size = math.prod(shape)
        fresh = k == len(arrays) or arrays[k].size < size
        if k == len(arrays):
            arrays.append(make(size))
        elif fresh:
            arrays[k] = make(size)
        return arrays[k][:size].reshape(shape), fresh, (*key, k)


def route_counts(moves: Moves | None, pieces: list[Hyperslab], shape: tuple[int, ...], itemsize: int
                 ) -> dict[str, int]:
    """:meth:`Route.counts` from a plan's :class:`~climio.core.rearrange.Moves` (None: no exchange) and the
    rank's pieces of a record of ``shape``."""
    runs = [runs_of_slab(shape, p) for p in pieces if p.size]
    first = np.concatenate([r[:, 0] for r in runs]) if runs else np.zeros(0, np.int64)
    end = first + (np.concatenate([r[:, 1] for r in runs]) if runs else 0)
    order = np.argsort(first, kind="stable")
    first, end = first[order], end[order]
    file_runs = int(first.size - np.count_nonzero(first[1:] == end[:-1])) if first.size else 0
    m = moves or Moves(0, 0, 0, 0, 0, 0)
    return {"messages_sent": m.receivers, "messages_received": m.senders, "bytes_sent": m.sent * itemsize,
            "bytes_received": m.received * itemsize, "bytes_kept": m.kept * itemsize,
            "bytes_written": int((end - first).sum()) * itemsize, "requests": len(runs), "file_runs": file_runs,
            "plan_bytes": m.plan_bytes}


def gather_together(batches: list[tuple[Route, list[np.ndarray]]]) -> list[list[list[tuple[np.ndarray, Hyperslab]]]]:
    """:meth:`Route.gather_many` for the records of several routes in one exchange (every rank passes as many
    routes and records, in the same order): fields whose records take different routes (``stripe``'s phases,
    fields of two shapes) still cost one exchange a step. Each route's records land in its own buffers."""
    out, moves = [], []
    for pool in {id(route.pool): route.pool for route, _ in batches}.values():
        pool.start()
    for route, locals_ in batches:
        tail = route._tail()
        if route.plan is None:
            out.append([[*((_interior(route.layout, local), s) for _, s in route.slabs), *tail] for local in locals_])
            continue
        buffers = [route._receiving() for _ in locals_]
        moves.append((route.plan, [route._flat(route._sending(local)) for local in locals_],
                      [b.reshape(route._buffer_shape) for b in buffers]))
        out.append([[*((b[at:at + s.size].reshape(s.count), s) for at, s in route.slabs), *tail] for b in buffers])
    if len(moves) == 1:
        moves[0][0].forward_many(moves[0][1], moves[0][2])
    elif moves:
        forward_together(moves)
    return out


def _is_own(layouts: PieceMap, rank: int, pieces: list[Hyperslab]) -> bool:
    """Whether ``pieces`` are ``rank``'s own box of ``layouts`` and nothing else."""
    lo, hi = layouts.pieces_of(rank)
    return len(pieces) == 1 and len(lo) == 1 and tuple(lo[0]) == pieces[0].start and \
        tuple(hi[0] - lo[0]) == pieces[0].count


def runs_of_slab(shape: tuple[int, ...], slab: Hyperslab) -> np.ndarray:
    """The flat ``(start, length)`` runs of a hyperslab, in C order."""
    first, length, _ = Layout.box(shape, slab).flat_runs()
    return np.stack([first, length], axis=1)


def _interior(source: Layout, local: np.ndarray) -> np.ndarray:
    """The owned box of a box layout's local array (a view), halo or not."""
    assert isinstance(source, BoxLayout)
    if source.halo_shape is not None and local.shape == source.halo_shape != source.local_shape:
        assert source.interior is not None
        return local[tuple(slice(i, i + c) for i, c in zip(source.interior, source.slab.count))]
    if local.shape != source.local_shape:
        raise ClimioError(f"local array of shape {local.shape} does not match its block: expected "
                          f"{source.halo_shape or source.local_shape} (or {source.local_shape} without halo)")
    return local
