"""One rearranger for every exchange between two layouts of a global array (PIO2's decompositions and rearrangers).

A :class:`Layout` says which elements of a global C-order array one rank holds and where they sit in
its local array: an owned block of a :class:`~climio.core.decomp.Decomposition` (with or without its
halo), one hyperslab, a list of flat runs, or a list of flat offsets (PIO's compmap). A :class:`Plan`
is built once, collectively, from every rank's source and destination layouts; it then moves data of
any dtype, with any trailing "level" dimensions, source to destination (:meth:`Plan.forward`) or back
(:meth:`Plan.backward`), in one ``MPI_Alltoallw`` whose committed datatypes describe both local arrays
in place: no packing in Python, no copy of the data beyond what MPI makes.

How the matches are found:

- only box-like layouts (block, box, runs) on every rank: a box is one hyperslab, a run is cut into at
  most ``2 ndim - 1`` hyperslabs ("pieces", each contiguous in the local buffer). Every rank intersects
  its own pieces with the other side's pieces that meet them, found in a :class:`PieceMap` of every
  rank's pieces: worked out by arithmetic where the pieces follow from a few numbers
  (:class:`GridPieces`: a process grid's blocks; :class:`RangePieces`: writers' flat ranges, found by
  their span), so that a rank looks only at the ranks it exchanges with, whatever the job's size; else
  a list of every rank's (allgathered descriptions, boxes given one by one: :class:`ListedPieces`).
  Each intersection is a ``Create_subarray`` of the local array (halo included when present) on both
  sides, so nothing is ever enumerated per element: the transpose of a 700 M-element field costs a
  handful of box intersections;
- an offsets layout anywhere: no rank can know the others' offsets, so every rank routes its runs
  ``(flat start, length, local position)`` (a box sends its rows, offsets their consecutive stretches)
  to a directory rank that owns that part of the flat index space (block-distributed). The directory
  matches destinations with sources and sends each match back to both ends, which order the matches
  of a pair by destination position (so both agree) and describe them with ``Create_hindexed``.

A destination element that no source holds is a hole: the exchange leaves it as the caller put it. A
destination element held by several ranks (replication) receives the same value on each; backward,
each source element takes its value from one of them, the lowest rank (then the lowest local
position), because MPI forbids receiving into one location twice. Two sources holding one element is
an error, found (on every rank) while the plan is built.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from climio.core import trace
from climio.core.decomp import Decomposition, Hyperslab, block_range
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI

_EMPTY = np.zeros(0, dtype=np.int64)

Description = tuple[str, tuple[int, ...], np.ndarray]  # what other ranks learn of a layout: kind, shape, numbers


# ----------------------------------------------------------------------------------------------- layouts


@dataclass(frozen=True, eq=False)
class Layout(ABC):
    """Which elements of a global array of ``shape`` (C order) this rank holds, and in which local order.

    Build one with :meth:`block`, :meth:`box`, :meth:`runs`, :meth:`offsets` or :meth:`from_compmap`.
    """

    shape: tuple[int, ...]

    @staticmethod
    def block(decomp: Decomposition, rank: int) -> BoxLayout:
        """Rank ``rank``'s owned block; its local array may carry the decomposition's halo or not."""
        owned = decomp.owned(rank)
        halo = decomp.local_shape(rank) if decomp.halo else None
        interior = tuple(s.start or 0 for s in decomp.interior(rank)) if decomp.halo else None
        return BoxLayout(decomp.shape, owned, halo, interior)

    @staticmethod
    def box(shape: Sequence[int], slab: Hyperslab) -> BoxLayout:
        """One hyperslab (possibly empty), held as a C-order local array of its own shape."""
        return BoxLayout(tuple(int(n) for n in shape), slab)

    @staticmethod
    def runs(shape: Sequence[int], runs: Sequence[tuple[int, int]] | np.ndarray) -> RunsLayout:
        """Flat runs ``(start, length)`` of the global array, concatenated in the listed order."""
        return RunsLayout(tuple(int(n) for n in shape), np.asarray(runs, dtype=np.int64).reshape(-1, 2))

    @staticmethod
    def slabs(shape: Sequence[int], slabs: Sequence[Hyperslab]) -> Layout:
        """Non-empty hyperslabs one after the other in a 1-D local array (a writer's buffer): one is a box, several
        are their runs in turn."""
        shape = tuple(int(n) for n in shape)
        if len(slabs) == 1:
            return Layout.box(shape, slabs[0])
        runs = [np.stack(Layout.box(shape, s).flat_runs()[:2], axis=1) for s in slabs]
        return Layout.runs(shape, np.concatenate(runs) if runs else np.zeros((0, 2), np.int64))

    @staticmethod
    def offsets(shape: Sequence[int], offsets: Sequence[int] | np.ndarray) -> OffsetsLayout:
        """The elements at these 0-based flat offsets, in this (any) order; -1 marks a hole."""
        return OffsetsLayout(tuple(int(n) for n in shape), np.asarray(offsets, dtype=np.int64).ravel())

    @staticmethod
    def from_compmap(shape: Sequence[int], compmap: Sequence[int] | np.ndarray) -> OffsetsLayout:
        """PIO's compmap: 1-based flat offsets, 0 for a hole."""
        return Layout.offsets(shape, np.asarray(compmap, dtype=np.int64).ravel() - 1)

    @property
    @abstractmethod
    def local_shape(self) -> tuple[int, ...]:
        """Shape of the local array without halo (and without the plan's trailing dimensions)."""

    @property
    def size(self) -> int:
        return math.prod(self.local_shape)

    def accepts(self, local_shape: tuple[int, ...]) -> bool:
        """Whether a local array of this shape (trailing dimensions left out) holds this layout."""
        return local_shape == self.local_shape

    @abstractmethod
    def flat_runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(global start, length, local position)`` of every non-empty run held, local positions in
        the order of the array without halo."""

    @property
    def description(self) -> Description:
        """What every rank learns of this layout when a plan is built: a few numbers, or for offsets just the
        kind. Listed for every rank (:class:`ListedPieces`), box-like ones give a :class:`Plan` its ``known``
        maps."""
        return self._describe()

    @abstractmethod
    def _describe(self) -> Description:
        """What the other ranks need to know of this layout (allgathered): a few numbers, or just the kind."""

    @abstractmethod
    def _problem(self) -> str:
        """Why this layout does not fit its global shape, or ''."""

    def flat_offsets(self) -> np.ndarray:
        """The global flat offset of each local element (in the order of the array without halo), -1 where the
        element is none of the global array's."""
        first, length, pos = self.flat_runs()
        out = np.full(self.size, -1, dtype=np.int64)
        out[np.repeat(pos, length) + _ramp(length)] = np.repeat(first, length) + _ramp(length)
        return out

    def _container(self, count: np.ndarray, local_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The array a piece of ``count`` sits in, in a local array of ``local_shape``, and its start there."""
        return count, np.zeros_like(count)

    def _local_runs(self, pos: np.ndarray, length: np.ndarray,
                    local_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Runs at positions of the array without halo, moved to an array of ``local_shape``."""
        return pos, length


@dataclass(frozen=True, eq=False)
class BoxLayout(Layout):
    """One hyperslab; ``halo_shape``/``interior`` describe an optional larger local array around it."""

    slab: Hyperslab
    halo_shape: tuple[int, ...] | None = None
    interior: tuple[int, ...] | None = None

    @property
    def local_shape(self) -> tuple[int, ...]:
        return tuple(self.slab.count)

    def accepts(self, local_shape: tuple[int, ...]) -> bool:
        return local_shape in (self.local_shape, self.halo_shape)

    def _with_halo(self, local_shape: tuple[int, ...]) -> bool:
        return self.halo_shape is not None and local_shape == self.halo_shape != self.local_shape

    def flat_runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        start, count, shape = self.slab.start, self.slab.count, self.shape
        if self.slab.size == 0:
            return _EMPTY, _EMPTY, _EMPTY
        axis = len(shape) - 1  # axes after ``axis`` are whole: the run along ``axis`` goes on through them
        while axis > 0 and count[axis] == shape[axis]:
            axis -= 1
        inner = math.prod(shape[axis + 1:])
        outer = np.zeros((), dtype=np.int64)
        for s, c, n in zip(start[:axis], count[:axis], shape[:axis]):
            outer = outer[..., None] * n + np.arange(s, s + c, dtype=np.int64)
        outer = outer.ravel()
        length = count[axis] * inner
        first = outer * (shape[axis] * inner) + start[axis] * inner
        return first, np.full(outer.size, length, dtype=np.int64), np.arange(outer.size, dtype=np.int64) * length

    def _describe(self) -> Description:
        return ("box", self.shape, np.array([self.slab.start, self.slab.count], dtype=np.int64).reshape(2, -1))

    def _problem(self) -> str:
        start, count = self.slab.start, self.slab.count
        if len(start) != len(self.shape) or len(count) != len(self.shape):
            return f"hyperslab {start}+{count} does not have the {len(self.shape)} dimensions of {self.shape}"
        if any(s < 0 or c < 0 or (c and s + c > n) for s, c, n in zip(start, count, self.shape)):
            return f"hyperslab start {start} count {count} lies outside {self.shape}"
        return ""

    def _container(self, count: np.ndarray, local_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        if self._with_halo(local_shape):
            return np.array(local_shape, dtype=np.int64), np.array(self.interior, dtype=np.int64)
        return super()._container(count, local_shape)

    def _local_runs(self, pos: np.ndarray, length: np.ndarray,
                    local_shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        if not self._with_halo(local_shape) or pos.size == 0:
            return pos, length
        count = self.slab.count
        width = count[-1]  # split at the rows of the block: a halo separates them in the local array
        first, last = pos // width, (pos + length - 1) // width
        rows = last - first + 1
        run = np.repeat(np.arange(pos.size), rows)
        row = first[run] + _ramp(rows)
        lo = np.maximum(pos[run], row * width)
        hi = np.minimum(pos[run] + length[run], (row + 1) * width)
        index = np.unravel_index(lo, count)
        moved = np.ravel_multi_index(tuple(i + h for i, h in zip(index, self.interior)), local_shape)
        moved, size, _ = _merge_runs(moved.astype(np.int64), hi - lo)
        return moved, size


@dataclass(frozen=True, eq=False)
class RunsLayout(Layout):
    """Flat runs ``(start, length)`` (an ``(n, 2)`` array), concatenated in order in a 1-D local array."""

    table: np.ndarray

    @property
    def local_shape(self) -> tuple[int, ...]:
        return (int(self.table[:, 1].sum()),)

    def flat_runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        first, length = self.table[:, 0], self.table[:, 1]
        pos = np.cumsum(length) - length
        keep = length > 0
        return first[keep], length[keep], pos[keep]

    def _describe(self) -> Description:
        return ("runs", self.shape, self.table)

    def _problem(self) -> str:
        first, length = self.table[:, 0], self.table[:, 1]
        bad = (first < 0) | (length < 0) | (first + length > math.prod(self.shape))
        if bad.any():
            k = int(np.argmax(bad))
            return f"run ({first[k]}, {length[k]}) lies outside the {math.prod(self.shape)} elements of {self.shape}"
        return ""


@dataclass(frozen=True, eq=False)
class OffsetsLayout(Layout):
    """Elements at flat offsets (any order, -1 for a hole), in a 1-D local array."""

    table: np.ndarray

    @property
    def local_shape(self) -> tuple[int, ...]:
        return (self.table.size,)

    def flat_runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos = np.flatnonzero(self.table >= 0).astype(np.int64)
        first = self.table[pos]
        pos, length, (first,) = _merge_runs(pos, np.ones_like(pos), first - pos)
        return first + pos, length, pos

    def _describe(self) -> Description:
        return ("offsets", self.shape, _EMPTY)

    def _problem(self) -> str:
        bad = (self.table < -1) | (self.table >= math.prod(self.shape))
        if bad.any():
            k = int(np.argmax(bad))
            return f"offset {self.table[k]} at position {k} lies outside the {math.prod(self.shape)} elements of " \
                   f"{self.shape}"
        return ""


# ------------------------------------------------------------------------------------ small arithmetic


def _ramp(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., counts[0]-1, 0, 1, ..., counts[1]-1, ...: the index inside each group of an np.repeat."""
    total = int(counts.sum())
    return np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)


def _merge_runs(pos: np.ndarray, length: np.ndarray,
                *keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Consecutive runs that continue one another (and agree on every key) as one: fewer datatype blocks."""
    if pos.size == 0:
        return pos, length, list(keys)
    goes_on = pos[1:] == pos[:-1] + length[:-1]
    for key in keys:
        goes_on &= key[1:] == key[:-1]
    first = np.flatnonzero(np.concatenate([[True], ~goes_on]))
    return pos[first], np.add.reduceat(length, first), [key[first] for key in keys]


def flat_boxes(first: int, end: int, shape: tuple[int, ...]) -> list[Hyperslab]:
    """Flat (C-order) elements ``first..end`` of an array of ``shape`` as at most ``2 ndim - 1`` hyperslabs, in
    order, the largest possible (a partial row, whole rows, whole planes, ..., then down again): each is
    contiguous in the flat order, so its elements lie together in a buffer of runs, and each is one request
    to a file."""
    ndim = len(shape)
    stride = [math.prod(shape[d + 1:]) for d in range(ndim)]
    boxes: list[Hyperslab] = []

    def take(pos: int, axis: int, steps: int) -> int:
        start = tuple(int(i) for i in np.unravel_index(pos, shape))
        boxes.append(Hyperslab(start, (1,) * axis + (steps,) + tuple(shape[axis + 1:])))
        return pos + steps * stride[axis]

    pos, axis = first, ndim - 1
    while axis > 0 and pos < end:  # up: whole rows, then whole planes, ... until aligned with axis 0
        room = -pos % stride[axis - 1]
        steps = min(room, end - pos) // stride[axis]
        if steps:
            pos = take(pos, axis, steps)
        if pos % stride[axis - 1]:
            break  # the run ends before the next boundary: finish with finer boxes
        axis -= 1
    for axis in range(axis, ndim):  # down: the largest boxes first
        steps = (end - pos) // stride[axis]
        if steps:
            pos = take(pos, axis, steps)
    return boxes


def flat_box_counts(first: np.ndarray, end: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """How many hyperslabs :func:`flat_boxes` cuts each range ``first..end`` into (vectorized)."""
    first, end = np.asarray(first, np.int64), np.asarray(end, np.int64)
    if len(shape) == 1:
        return (end > first).astype(np.int64)
    inner, rest = math.prod(shape[1:]), tuple(shape[1:])
    i0, r0 = np.divmod(first, inner)
    i1, r1 = np.divmod(end, inner)
    same, none = i0 == i1, np.zeros_like(first)
    apart = ~same & (end > first)
    head, tail = apart & (r0 > 0), apart & (r1 > 0)
    return (flat_box_counts(np.where(same, r0, 0), np.where(same, r1, 0), rest)  # within one slab of axis 0
            + flat_box_counts(np.where(head, r0, 0), np.where(head, inner, 0), rest)  # a partial first one
            + (apart & (i1 > i0 + (r0 > 0))).astype(np.int64)  # whole ones
            + flat_box_counts(none, np.where(tail, r1, 0), rest))  # a partial last one


def _pieces(description: Description) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(start, count, local offset)`` of the non-empty pieces of a box-like layout: the box itself, or the
    boxes of each run."""
    kind, shape, numbers = description
    starts: list[Sequence[int]] = []
    counts: list[Sequence[int]] = []
    offsets: list[int] = []
    if kind == "box":
        if numbers[1].all():
            starts, counts, offsets = [numbers[0]], [numbers[1]], [0]
    else:
        at = 0
        for first, length in numbers:
            for box in flat_boxes(int(first), int(first + length), shape):
                starts.append(box.start)
                counts.append(box.count)
                offsets.append(at)
                at += box.size
    ndim = len(shape)
    return (np.array(starts, dtype=np.int64).reshape(-1, ndim), np.array(counts, dtype=np.int64).reshape(-1, ndim),
            np.array(offsets, dtype=np.int64))


def _intersect(a_lo: np.ndarray, a_hi: np.ndarray, b_lo: np.ndarray,
               b_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every non-empty intersection of a box of ``a`` with a box of ``b``: ``(i, j, lo, hi)`` in (i, j) order."""
    lo = np.maximum(a_lo[:, None, :], b_lo[None, :, :])
    hi = np.minimum(a_hi[:, None, :], b_hi[None, :, :])
    i, j = np.nonzero(np.all(hi > lo, axis=2))
    return i, j, lo[i, j], hi[i, j]


def _subtract(lo: np.ndarray, hi: np.ndarray, cut_lo: np.ndarray,
              cut_hi: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Box ``lo..hi`` less box ``cut_lo..cut_hi``, as at most ``2 ndim`` disjoint boxes."""
    inner_lo, inner_hi = np.maximum(lo, cut_lo), np.minimum(hi, cut_hi)
    if np.any(inner_hi <= inner_lo):
        return [(lo, hi)]
    out = []
    lo, hi = lo.copy(), hi.copy()
    for axis in range(lo.size):
        if lo[axis] < inner_lo[axis]:
            below = hi.copy()
            below[axis] = inner_lo[axis]
            out.append((lo.copy(), below))
        if inner_hi[axis] < hi[axis]:
            above = lo.copy()
            above[axis] = inner_hi[axis]
            out.append((above, hi.copy()))
        lo[axis], hi[axis] = inner_lo[axis], inner_hi[axis]
    return out


def _first_holders(dests: PieceMap, rank: np.ndarray, index: np.ndarray, lo: np.ndarray, hi: np.ndarray
                   ) -> tuple[tuple[np.ndarray, ...], bool]:
    """Each destination piece ``(rank, index, lo, hi)`` less the pieces before it (lower rank, or the same rank
    and a lower index: ``dests`` numbers pieces by their index, as maps whose pieces may overlap do): backward,
    an element held by several destinations is sent by the first only, as MPI may not receive into one place
    twice. Returns rows ``(piece, lo, hi, region index)``, ``piece`` a row of the pieces given, and whether any
    piece lost something."""
    query, other, other_index, other_lo, other_hi = dests.meeting(lo, hi)
    earlier = (other < rank[query]) | ((other == rank[query]) & (other_index < index[query]))
    query, other_lo, other_hi = query[earlier], other_lo[earlier], other_hi[earlier]
    bounds = np.searchsorted(query, np.arange(len(lo) + 1))
    rows: list[tuple[int, np.ndarray, np.ndarray, int]] = []
    for piece in range(len(lo)):
        regions = [(lo[piece], hi[piece])]
        for k in range(bounds[piece], bounds[piece + 1]):
            regions = [r for a, b in regions for r in _subtract(a, b, other_lo[k], other_hi[k])]
        rows += [(piece, a, b, k) for k, (a, b) in enumerate(regions)]
    ndim = lo.shape[1]
    return ((np.array([r[0] for r in rows], dtype=np.int64),
             np.array([r[1] for r in rows], dtype=np.int64).reshape(-1, ndim),
             np.array([r[2] for r in rows], dtype=np.int64).reshape(-1, ndim),
             np.array([r[3] for r in rows], dtype=np.int64)), bool(earlier.any()))


def _first_cover(lo: np.ndarray, hi: np.ndarray, *priority: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals ``lo..hi`` that may overlap, cut into ``(interval, lo, hi)`` pieces that cover each point once,
    by the interval of lowest ``priority`` (keys compared in order)."""
    bounds = np.unique(np.concatenate([lo, hi]))
    first, last = np.searchsorted(bounds, lo), np.searchsorted(bounds, hi)
    which = np.repeat(np.arange(lo.size), last - first)
    segment = first[which] + _ramp(last - first)
    order = np.lexsort(tuple(p[which] for p in reversed(priority)) + (segment,))
    which, segment = which[order], segment[order]
    keep = np.ones(segment.size, dtype=bool)
    keep[1:] = segment[1:] != segment[:-1]
    which, segment = which[keep], segment[keep]
    return which, bounds[segment], bounds[segment + 1]


# -------------------------------------------------------------------------------------------- piece maps


Found = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # (query, rank, piece, lo, hi)


class PieceMap(ABC):
    """Every rank's box-like pieces of one global array, found by region: all that a plan between box-like
    layouts needs to know of the other ranks. A piece is named by its rank and a number that orders that
    rank's pieces as its local array holds them: their index there (a map of :attr:`disjoint` pieces may give
    any number that grows with it, as the two ends of an exchange need only agree on the order of its
    boxes)."""

    @abstractmethod
    def meeting(self, lo: np.ndarray, hi: np.ndarray) -> Found:
        """Every piece of any rank that meets a query box (rows of ``lo``, ``hi``, half-open): ``(query, rank,
        piece, piece's lo, piece's hi)``, ordered by query, then rank, then piece."""

    @abstractmethod
    def pieces_of(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """Rank ``rank``'s pieces' low and high corners, in its order."""

    @property
    @abstractmethod
    def holders(self) -> int:
        """How many ranks hold a piece."""

    @property
    @abstractmethod
    def disjoint(self) -> bool:
        """Whether no two pieces share an element (else backward, the first holder of each sends it)."""


class ListedPieces(PieceMap):
    """The pieces of listed ranks' descriptions (gathered from every rank, or boxes given one by one), searched
    whole: time and memory grow with the pieces listed."""

    def __init__(self, shape: tuple[int, ...], described: dict[int, Description], *, disjoint: bool = False) -> None:
        """``disjoint``: the caller knows that no two pieces overlap (boxes checked when they were given)."""
        self._disjoint = disjoint
        boxes = {r: d for r, d in described.items() if d[0] == "box"}
        parts = {r: _pieces(d) for r, d in described.items() if d[0] != "box" and len(d[2])}  # runs, not none
        ndim = len(shape)
        stacked = np.array([d[2] for d in boxes.values()], dtype=np.int64).reshape(len(boxes), 2, ndim)
        keep = stacked[:, 1].all(axis=1)
        box_ranks = np.fromiter(boxes, dtype=np.int64, count=len(boxes))[keep]
        ranks = np.concatenate([box_ranks, *(np.full(len(p[2]), r, np.int64) for r, p in parts.items())])
        index = np.concatenate([np.zeros(box_ranks.size, np.int64), *(np.arange(len(p[2])) for p in parts.values())])
        lo = np.concatenate([stacked[keep, 0], *(p[0] for p in parts.values())]).reshape(-1, ndim)
        count = np.concatenate([stacked[keep, 1], *(p[1] for p in parts.values())]).reshape(-1, ndim)
        order = np.lexsort((index, ranks))
        self.rank, self.index = ranks[order].astype(np.int64), index[order].astype(np.int64)
        self.lo, self.hi = lo[order], lo[order] + count[order]

    def meeting(self, lo: np.ndarray, hi: np.ndarray) -> Found:
        i, j, _, _ = _intersect(lo, hi, self.lo, self.hi)
        return i, self.rank[j], self.index[j], self.lo[j], self.hi[j]

    def pieces_of(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = np.searchsorted(self.rank, [rank, rank + 1])
        return self.lo[a:b], self.hi[a:b]

    @property
    def holders(self) -> int:
        return int(np.unique(self.rank).size)

    @property
    def disjoint(self) -> bool:
        return self._disjoint


class GridPieces(PieceMap):
    """One box a rank on a grid of cuts (a process grid's blocks, a cubed sphere's, bands of them): along
    axis ``a`` the cells lie between consecutive ``cuts[a]`` (None: the axis whole), and the box in cell
    ``c`` is rank ``sum(c[a] * strides[a])``'s. Found by arithmetic: a rank looks only at the cells its
    boxes reach, whatever the job's size."""

    def __init__(self, shape: tuple[int, ...], cuts: Sequence[Sequence[int] | None], strides: Sequence[int]) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.cuts = [np.array([0, n], np.int64) if c is None else np.asarray(c, np.int64)
                     for c, n in zip(cuts, self.shape)]
        self.strides = np.array([0 if c is None else s for c, s in zip(cuts, strides)], dtype=np.int64)

    def meeting(self, lo: np.ndarray, hi: np.ndarray) -> Found:
        # along each axis, the cells from the one holding a query's low corner to the last before its high one
        first = np.stack([np.searchsorted(c, lo[:, a], side="right") - 1 for a, c in enumerate(self.cuts)], axis=1)
        many = np.stack([np.searchsorted(c, hi[:, a], side="left") for a, c in enumerate(self.cuts)], axis=1) - first
        total = np.prod(many, axis=1)
        query = np.repeat(np.arange(len(lo), dtype=np.int64), total)
        at = _ramp(total)  # each query's cells in row-major order of its own block of them
        cell = np.empty((at.size, len(self.cuts)), np.int64)
        for a in reversed(range(len(self.cuts))):
            at, cell[:, a] = np.divmod(at, many[query, a])
            cell[:, a] += first[query, a]
        box_lo = np.stack([c[cell[:, a]] for a, c in enumerate(self.cuts)], axis=1).reshape(-1, len(self.cuts))
        box_hi = np.stack([c[cell[:, a] + 1] for a, c in enumerate(self.cuts)], axis=1).reshape(-1, len(self.cuts))
        keep = np.all(box_hi > box_lo, axis=1)  # cells of no width hold nothing
        rank = cell[keep] @ self.strides
        order = np.lexsort((rank, query[keep]))
        return (query[keep][order], rank[order], np.zeros(order.size, np.int64), box_lo[keep][order],
                box_hi[keep][order])

    def _cell(self, rank: int) -> np.ndarray | None:
        """Rank ``rank``'s cell, if it has one."""
        parts = np.array([c.size - 1 for c in self.cuts], np.int64)
        step = np.maximum(self.strides, 1)
        cell = np.where(self.strides > 0, rank // step % parts, 0)
        return cell if int((cell * self.strides).sum()) == rank else None

    def pieces_of(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        cell = self._cell(rank)
        ndim = len(self.shape)
        if cell is None:
            return np.zeros((0, ndim), np.int64), np.zeros((0, ndim), np.int64)
        lo = np.array([c[k] for c, k in zip(self.cuts, cell)], np.int64)
        hi = np.array([c[k + 1] for c, k in zip(self.cuts, cell)], np.int64)
        keep = bool(np.all(hi > lo))
        return lo[None, :][:int(keep)], hi[None, :][:int(keep)]

    @property
    def holders(self) -> int:
        return math.prod(int(np.count_nonzero(np.diff(c) > 0)) for c in self.cuts)

    @property
    def disjoint(self) -> bool:
        return True


class RangePieces(PieceMap):
    """Writers' flat ranges of the array (``first..end``, ascending and disjoint, each held by ``rank``), a
    writer's in turn in its buffer, each cut by :func:`flat_boxes` into the hyperslabs that are its pieces
    (``agg``'s ranges, ``stripe``'s stripes, ``root``'s record). A rank finds the ranges its own pieces reach
    by their flat span and cuts only those, however many there are in all."""

    KEY = 1 << 32  # a piece's number: its range's place among its writer's, then its place in the range

    def __init__(self, shape: tuple[int, ...], first: np.ndarray, end: np.ndarray, rank: np.ndarray) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.first, self.end = np.asarray(first, np.int64), np.asarray(end, np.int64)
        self.rank = np.asarray(rank, np.int64)
        by_rank = np.argsort(self.rank, kind="stable")
        self._ranks, starts, counts = np.unique(self.rank[by_rank], return_index=True, return_counts=True)
        self._by_rank, self._starts, self._counts = by_rank, starts, counts
        self.place = np.empty(self.rank.size, np.int64)  # each range's place among its writer's
        self.place[by_rank] = np.arange(self.rank.size) - np.repeat(starts, counts)
        self._cut: dict[int, tuple[list[Hyperslab], np.ndarray, np.ndarray]] = {}

    def _boxes(self, k: int) -> tuple[list[Hyperslab], np.ndarray, np.ndarray]:
        """Range ``k``'s hyperslabs, and their low and high corners."""
        if k not in self._cut:
            boxes = flat_boxes(int(self.first[k]), int(self.end[k]), self.shape)
            lo = np.array([b.start for b in boxes], np.int64).reshape(-1, len(self.shape))
            self._cut[k] = (boxes, lo, lo + np.array([b.count for b in boxes], np.int64).reshape(-1, len(self.shape)))
        return self._cut[k]

    @property
    def ranks(self) -> np.ndarray:
        """The ranks that hold ranges, ascending."""
        return self._ranks

    def ranges_of(self, rank: int) -> np.ndarray:
        """Rank ``rank``'s ranges, in its order."""
        at = int(np.searchsorted(self._ranks, rank))
        if at == self._ranks.size or self._ranks[at] != rank:
            return _EMPTY
        return self._by_rank[self._starts[at]:self._starts[at] + self._counts[at]]

    def slabs_of(self, rank: int) -> list[Hyperslab]:
        """Rank ``rank``'s hyperslabs, in its buffer's order."""
        return [b for k in self.ranges_of(rank) for b in self._boxes(int(k))[0]]

    def meeting(self, lo: np.ndarray, hi: np.ndarray) -> Found:
        found: list[tuple[np.ndarray, ...]] = []
        for q in range(len(lo)):
            first, length, _ = Layout.box(self.shape, Hyperslab(tuple(lo[q]), tuple(hi[q] - lo[q]))).flat_runs()
            a = np.searchsorted(self.end, first, side="right")  # the ranges each of the query's runs reaches
            many = np.maximum(np.searchsorted(self.first, first + length, side="left") - a, 0)
            for k in np.unique(np.repeat(a, many) + _ramp(many)).tolist():
                _, p_lo, p_hi = self._boxes(k)
                meet = np.flatnonzero(np.all(np.minimum(p_hi, hi[q]) > np.maximum(p_lo, lo[q]), axis=1))
                found.append((np.full(meet.size, q, np.int64), np.full(meet.size, self.rank[k], np.int64),
                              self.place[k] * self.KEY + meet, p_lo[meet], p_hi[meet]))
        ndim = len(self.shape)
        if not found:
            return _EMPTY, _EMPTY, _EMPTY, np.zeros((0, ndim), np.int64), np.zeros((0, ndim), np.int64)
        query, rank, number, p_lo, p_hi = (np.concatenate([f[i] for f in found]) for i in range(5))
        order = np.lexsort((number, rank, query))
        return query[order], rank[order], number[order], p_lo[order].reshape(-1, ndim), p_hi[order].reshape(-1, ndim)

    def pieces_of(self, rank: int) -> tuple[np.ndarray, np.ndarray]:
        ndim = len(self.shape)
        boxes = [self._boxes(int(k)) for k in self.ranges_of(rank)]
        if not boxes:
            return np.zeros((0, ndim), np.int64), np.zeros((0, ndim), np.int64)
        return np.concatenate([b[1] for b in boxes]), np.concatenate([b[2] for b in boxes])

    @property
    def holders(self) -> int:
        return int(self._ranks.size)

    @property
    def disjoint(self) -> bool:
        return True


# ------------------------------------------------------------------------------------------- datatypes


Entry = tuple[np.ndarray, ...]  # one peer's share: (piece, lo, hi) boxes or (position, length) runs


def element_type(dtype: np.dtype) -> MPI.Datatype:
    """A new MPI datatype for one element of ``dtype``; bytes are moved as they are, never converted, so a
    non-native byte order travels as the native type of that kind and size."""
    from mpi4py import MPI
    from mpi4py.util import dtlib

    if dtype.hasobject:
        raise ClimioError(f"cannot move {dtype} values (Python objects) between ranks")
    try:
        datatype = dtlib.from_numpy_dtype(dtype.newbyteorder("=") if not dtype.isnative else dtype)
    except ValueError:
        datatype = None
    if datatype is not None and datatype.extent == dtype.itemsize and datatype.size == dtype.itemsize:
        return datatype
    if datatype is not None:
        datatype.Free()
    return MPI.BYTE.Create_contiguous(dtype.itemsize)


class _Side(ABC):
    """What this rank sends to (or receives from) every peer in one direction: one MPI datatype per peer, made
    on first use for each dtype and local array shape, kept until :meth:`free`."""

    def __init__(self, layout: Layout, trailing: tuple[int, ...], nranks: int, peers: dict[int, Entry],
                 elements: int) -> None:
        self.layout, self.trailing, self.peers = layout, trailing, peers
        counts = np.zeros(nranks, np.int64)
        counts[list(peers)] = 1
        self.counts = counts.tolist()  # MPI_Alltoallw's: one a rank
        self.elements = elements  # how many elements of the local array take part
        self._types: dict[tuple[np.dtype, tuple[int, ...]], list[MPI.Datatype]] = {}

    @property
    def complete(self) -> bool:
        """Whether every element of the local array takes part (a receiving side then has no holes)."""
        return self.elements == self.layout.size

    def types(self, base: MPI.Datatype, dtype: np.dtype, local_shape: tuple[int, ...]) -> list[MPI.Datatype]:
        from mpi4py import MPI

        key = (dtype, local_shape)
        if key not in self._types:
            made = [MPI.BYTE] * len(self.counts)
            for rank, entry in self.peers.items():
                made[rank] = self._peer_type(base, dtype, entry, local_shape)
            self._types[key] = made
        return self._types[key]

    @abstractmethod
    def _peer_type(self, base: MPI.Datatype, dtype: np.dtype, entry: Entry,
                   local_shape: tuple[int, ...]) -> MPI.Datatype:
        """The committed datatype of what goes to or comes from one peer."""

    @abstractmethod
    def elements_of(self, entry: Entry) -> int:
        """How many elements of the global array (without the trailing dimensions) one peer's share holds."""

    @property
    def nbytes(self) -> int:
        """The memory this side keeps for its peers' shares (what a plan costs a rank to hold)."""
        return sum(a.nbytes for entry in self.peers.values() for a in entry)

    def free(self) -> None:
        for made in self._types.values():
            for rank in self.peers:
                made[rank].Free()
        self._types.clear()


class _BoxSide(_Side):
    """Peers' shares as boxes: ``(piece, lo, hi)`` rows, ``piece`` a row of ``pieces`` (start, count, offset)."""

    def __init__(self, layout: Layout, trailing: tuple[int, ...], nranks: int, peers: dict[int, Entry],
                 elements: int, pieces: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        super().__init__(layout, trailing, nranks, peers, elements)
        self.pieces = pieces

    def _peer_type(self, base: MPI.Datatype, dtype: np.dtype, entry: Entry,
                   local_shape: tuple[int, ...]) -> MPI.Datatype:
        from mpi4py import MPI

        piece, lo, hi = entry
        starts, counts, offsets = self.pieces
        extent = dtype.itemsize * math.prod(self.trailing)
        zeros = (0,) * len(self.trailing)
        boxes, displacements = [], []
        for k, box_lo, box_hi in zip(piece, lo, hi):
            container, at = self.layout._container(counts[k], local_shape)
            boxes.append(base.Create_subarray([int(n) for n in container] + list(self.trailing),
                                              [int(n) for n in box_hi - box_lo] + list(self.trailing),
                                              [int(n) for n in at + box_lo - starts[k]] + list(zeros)))
            displacements.append(int(offsets[k]) * extent)
        if len(boxes) == 1 and displacements[0] == 0:
            return boxes[0].Commit()
        combined = MPI.Datatype.Create_struct([1] * len(boxes), displacements, boxes).Commit()
        for box in boxes:
            box.Free()
        return combined


    def elements_of(self, entry: Entry) -> int:
        _, lo, hi = entry
        return int(np.prod(hi - lo, axis=1).sum())

    @property
    def nbytes(self) -> int:
        return super().nbytes + sum(a.nbytes for a in self.pieces)

    def views(self, array: np.ndarray, local_shape: tuple[int, ...]) -> list[list[np.ndarray]]:
        """Per peer (in rank order), views of ``array`` holding its boxes, in the pair's order."""
        starts, counts, offsets = self.pieces
        flat = array.reshape(-1, *self.trailing)
        out: list[list[np.ndarray]] = [[] for _ in self.counts]
        for rank, (piece, lo, hi) in self.peers.items():
            for k, box_lo, box_hi in zip(piece, lo, hi):
                container, at = self.layout._container(counts[k], local_shape)
                size = math.prod(int(n) for n in container)
                region = flat[offsets[k]:offsets[k] + size].reshape(*(int(n) for n in container), *self.trailing)
                first = at + box_lo - starts[k]
                out[rank].append(region[tuple(slice(int(a), int(a + n)) for a, n in zip(first, box_hi - box_lo))])
        return out


class _RunSide(_Side):
    """Peers' shares as runs ``(position, length)`` of the local array without halo, in the pair's order."""

    def elements_of(self, entry: Entry) -> int:
        return int(entry[1].sum())

    def _peer_type(self, base: MPI.Datatype, dtype: np.dtype, entry: Entry,
                   local_shape: tuple[int, ...]) -> MPI.Datatype:
        pos, length = self.layout._local_runs(*entry, local_shape)
        per_element = math.prod(self.trailing)
        element = base.Create_contiguous(per_element) if per_element != 1 else base
        displacements = pos * (dtype.itemsize * per_element)
        try:
            if np.all(length == length[0]):
                return element.Create_hindexed_block(int(length[0]), displacements).Commit()
            return element.Create_hindexed(length, displacements).Commit()
        finally:
            if element is not base:
                element.Free()


# --------------------------------------------------------------------------------------------- planning


def route(comm: MPI.Comm, rows: np.ndarray, to: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Send each int64 row to rank ``to`` (collective): the rows received, grouped by sender in rank order and
    in the sender's order within a group, and the rank each came from.

    The one-shot exchange behind plans (and behind requests whose answer is needed once, where a plan's
    datatypes would cost more than they save: subset's lookups of mesh elements by their owners)."""
    from mpi4py import MPI

    size = comm.Get_size()
    order = np.argsort(to, kind="stable")
    rows = np.ascontiguousarray(rows[order], dtype=np.int64)
    counts = np.bincount(to, minlength=size).astype(np.int64)
    received = np.empty(size, dtype=np.int64)
    comm.Alltoall(counts, received)
    out = np.empty((int(received.sum()), rows.shape[1]), dtype=np.int64)
    row = MPI.INT64_T.Create_contiguous(rows.shape[1]).Commit()
    try:
        comm.Alltoallv([rows, counts, np.cumsum(counts) - counts, row],
                       [out, received, np.cumsum(received) - received, row])
    finally:
        row.Free()
    return out, np.repeat(np.arange(size, dtype=np.int64), received)


def _raise_any(comm: MPI.Comm, problem: str) -> None:
    """Every rank raises the first rank's problem, if any rank has one (collective)."""
    problems = [p for p in comm.allgather(problem) if p]
    if problems:
        raise ClimioError(problems[0], collective=True)


def _element(shape: tuple[int, ...], offset: int) -> str:
    return str(tuple(int(i) for i in np.unravel_index(offset, shape)))


def _box_sides(source: Layout, dest: Layout, trailing: tuple[int, ...], sources: PieceMap, dests: PieceMap,
               rank: int, size: int) -> tuple[_Side, ...]:
    """Forward and backward sides on ``rank`` (of ``size``) of a plan between box-like layouts: its own pieces
    met with the other side's pieces that the maps find (no communication)."""
    mine_s, mine_d = _pieces(source.description), _pieces(dest.description)
    s_lo, s_hi = mine_s[0], mine_s[0] + mine_s[1]

    def side(layout: Layout, pieces: tuple[np.ndarray, np.ndarray, np.ndarray], peer: np.ndarray,
             keys: tuple[np.ndarray, ...], piece: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> _BoxSide:
        """Matches grouped by peer, in the order of ``keys`` (the same on both ends of each pair)."""
        order = np.lexsort(tuple(reversed(keys)) + (peer,))
        peer, piece, lo, hi = peer[order], piece[order], lo[order], hi[order]
        ranks, first = np.unique(peer, return_index=True)
        ends = [*first[1:], peer.size]
        peers = {int(r): (piece[a:b], lo[a:b], hi[a:b]) for r, a, b in zip(ranks, first, ends)}
        elements = int(np.prod(hi - lo, axis=1).sum()) if len(lo) else 0
        return _BoxSide(layout, trailing, size, peers, elements, pieces)

    def sides(t_rank: np.ndarray, t_index: np.ndarray, t_lo: np.ndarray, t_hi: np.ndarray,
              region: np.ndarray) -> tuple[_Side, _Side]:
        """Source and destination sides of the matches of this rank's source pieces with the destination boxes
        ``(rank, piece, lo, hi, region)`` (whole pieces or the regions of their first holders), and of its own
        boxes among them with the source pieces of every rank."""
        si, ti, lo, hi = _intersect(s_lo, s_hi, t_lo, t_hi)
        sending = side(source, mine_s, t_rank[ti], (si, t_index[ti], region[ti]), si, lo, hi)
        mine_t = np.flatnonzero(t_rank == rank)
        ti, f_rank, f_index, f_lo, f_hi = sources.meeting(t_lo[mine_t], t_hi[mine_t])
        ti = mine_t[ti]
        receiving = side(dest, mine_d, f_rank, (f_index, t_index[ti], region[ti]), t_index[ti],
                         np.maximum(t_lo[ti], f_lo), np.minimum(t_hi[ti], f_hi))
        return sending, receiving

    # the destination pieces this rank receives into or sends from backward: its own and those its sources meet
    _, met_rank, met_index, met_lo, met_hi = dests.meeting(s_lo, s_hi)
    _, once = np.unique(np.stack([met_rank, met_index], axis=1), axis=0, return_index=True)  # met by several
    met_rank, met_index, met_lo, met_hi = met_rank[once], met_index[once], met_lo[once], met_hi[once]
    other = met_rank != rank  # its own pieces come from its own layout, numbered as it holds them
    own = len(mine_d[2])
    targets = (np.concatenate([np.full(own, rank, np.int64), met_rank[other]]),
               np.concatenate([np.arange(own, dtype=np.int64), met_index[other]]),
               np.concatenate([mine_d[0], met_lo[other]]), np.concatenate([mine_d[0] + mine_d[1], met_hi[other]]))
    forward = sides(*targets, np.zeros(len(targets[0]), np.int64))
    if dests.disjoint:
        return (*forward, *forward)
    (piece, lo, hi, region), overlapped = _first_holders(dests, *targets)
    backward = sides(targets[0][piece], targets[1][piece], lo, hi, region) if overlapped else forward
    return (*forward, *backward)


def known_moves(source: Layout, dest: Layout, sources: PieceMap, dests: PieceMap, rank: int, size: int,
                trailing: tuple[int, ...] = ()) -> Moves:
    """The :meth:`Plan.moves` on ``rank`` (of ``size``) of the plan that :class:`Plan` builds from the
    maps of every rank's source and destination pieces (``source`` and ``dest`` are that rank's
    layouts), worked out without MPI: what a job of any size would hold and move (``climio bench scale``)."""
    sides = _box_sides(source, dest, trailing, sources, dests, rank, size)
    return _moves(sides[:2], sides[2:], trailing, rank)


def _moves(forward: tuple[_Side, ...], backward: tuple[_Side, ...], trailing: tuple[int, ...], rank: int) -> Moves:
    send, receive = forward
    per = math.prod(trailing)

    def others(side: _Side) -> tuple[int, int]:
        peers = [r for r in side.peers if r != rank]
        return len(peers), per * sum(side.elements_of(side.peers[r]) for r in peers)

    senders, received = others(receive)
    receivers, sent = others(send)
    kept = per * send.elements_of(send.peers[rank]) if rank in send.peers else 0
    distinct = {id(side): side for side in (*forward, *backward)}
    return Moves(receivers, senders, sent, received, kept, sum(side.nbytes for side in distinct.values()))


@dataclass(frozen=True)
class Moves:
    """One rank's share of one forward move of a plan, in elements of the global array (trailing dimensions
    included): the ranks it sends to and hears from (messages), the elements it sends and receives, those it
    copies to itself, and the bytes the plan keeps on it (the matches its datatypes are made from)."""

    receivers: int
    senders: int
    sent: int
    received: int
    kept: int
    plan_bytes: int


class Plan:
    """How the elements of a source layout reach a destination layout (collective to build and to use).

    Every rank passes its own layouts, of one global ``shape``; ``trailing`` are extra contiguous dimensions
    of every element (levels), so local arrays are ``(*local_shape, *trailing)``. Free the committed
    datatypes with :meth:`free` or by using the plan as a context manager.
    """

    def __init__(self, comm: MPI.Comm, source: Layout, dest: Layout, *, trailing: tuple[int, ...] = (),
                 known: tuple[PieceMap, PieceMap] | None = None) -> None:
        """``known``: maps of every rank's source and destination pieces (box-like), where the caller can make
        them without asking the other ranks (a process grid's blocks, a strategy's writers): the plan is then
        built without any communication, and without the checks that need it."""
        self.comm, self.source, self.dest = comm, source, dest
        self.trailing = tuple(int(n) for n in trailing)
        self._bases: dict[np.dtype, MPI.Datatype] = {}
        if known is not None:
            sides = _box_sides(source, dest, self.trailing, *known, comm.Get_rank(), comm.Get_size())
            self._forward, self._backward = sides[:2], sides[2:]
            return
        problem = source._problem() or dest._problem()
        if source.shape != dest.shape:
            problem = f"source layout of shape {source.shape} and destination of shape {dest.shape} differ"
        if not source.shape:
            problem = "a layout needs a global array of one dimension at least"
        if any(n < 0 for n in self.trailing):
            problem = f"trailing dimensions {self.trailing} must not be negative"
        described = comm.allgather((source._describe(), dest._describe(), self.trailing, problem))
        if not problem and any(d[0][1] != source.shape or d[2] != self.trailing for d in described):
            problem = "ranks pass layouts of different global shapes or trailing dimensions"
        _raise_any(comm, problem)
        if any(d[0][0] == "offsets" or d[1][0] == "offsets" for d in described):
            sides = self._by_directory()
        else:
            sides = self._by_boxes([d[0] for d in described], [d[1] for d in described])
        self._forward, self._backward = sides[:2], sides[2:]

    @property
    def dest_complete(self) -> bool:
        """Whether forward fills every element of this rank's destination (else holes keep what ``out`` held)."""
        return self._forward[1].complete

    @property
    def source_complete(self) -> bool:
        """Whether backward fills every element of this rank's source."""
        return self._backward[0].complete

    # -- box-like layouts everywhere: intersections of allgathered pieces

    def _by_boxes(self, sources: list[Description], dests: list[Description]) -> tuple[_Side, ...]:
        """The sides of box-like layouts on every rank, from every rank's descriptions, once no two sources are
        found to overlap (collective)."""
        rank, shape = self.comm.Get_rank(), self.source.shape
        everyone = ListedPieces(shape, dict(enumerate(sources)))
        mine = _pieces(self.source.description)
        query, other, index, lo, hi = everyone.meeting(mine[0], mine[0] + mine[1])
        clash = (other != rank) | (index != query)
        problem = ""
        if clash.any():
            k = int(np.argmax(clash))
            first = np.maximum(mine[0][query[k]], lo[k])
            offset = int(np.ravel_multi_index(tuple(first), shape))
            problem = f"element {_element(shape, offset)} of {shape} is held by source ranks {rank} and {other[k]}"
        _raise_any(self.comm, problem)
        return _box_sides(self.source, self.dest, self.trailing, everyone, ListedPieces(shape, dict(enumerate(dests))),
                          rank, self.comm.Get_size())

    def moves(self) -> Moves:
        """This rank's share of one forward move, and the memory the plan keeps on it (no communication)."""
        return _moves(self._forward, self._backward, self.trailing, self.comm.Get_rank())

    # -- offsets somewhere: match at directory ranks that own blocks of the flat index space

    def _by_directory(self) -> tuple[_Side, ...]:
        comm, shape = self.comm, self.source.shape
        size = comm.Get_size()
        total = math.prod(shape)
        bounds = np.array([block_range(total, size, r)[0] for r in range(size)] + [total], dtype=np.int64)

        def cut(side: int, first: np.ndarray, length: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            """Runs cut at the directory blocks: rows ``(side, first, length, position)`` and their directory."""
            lo = np.searchsorted(bounds, first, side="right") - 1
            hi = np.searchsorted(bounds, first + length - 1, side="right") - 1
            run = np.repeat(np.arange(first.size), hi - lo + 1)
            owner = lo[run] + _ramp(hi - lo + 1)
            a = np.maximum(first[run], bounds[owner])
            b = np.minimum(first[run] + length[run], bounds[owner + 1])
            keep = b > a  # an empty directory block between two others holds nothing
            rows = np.stack([np.full(run.size, side), a, b - a, pos[run] + a - first[run]], axis=1)
            return rows[keep], owner[keep]

        s_rows, s_to = cut(0, *self.source.flat_runs())
        d_rows, d_to = cut(1, *self.dest.flat_runs())
        rows, sender = route(comm, np.concatenate([s_rows, d_rows]), np.concatenate([s_to, d_to]))

        is_source = rows[:, 0] == 0
        order = np.flatnonzero(is_source)[np.argsort(rows[is_source, 1], kind="stable")]
        s_first, s_length, s_pos, s_rank = rows[order, 1], rows[order, 2], rows[order, 3], sender[order]
        s_end = s_first + s_length
        clash = np.flatnonzero(s_first[1:] < s_end[:-1])
        problem = ""
        if clash.size:
            k = int(clash[0])
            problem = (f"element {_element(shape, int(s_first[k + 1]))} of {shape} is held by source ranks "
                       f"{s_rank[k]} and {s_rank[k + 1]}")
        order = np.flatnonzero(~is_source)[np.argsort(rows[~is_source, 1], kind="stable")]  # sorted: fast lookups
        d_first, d_length, d_pos, d_rank = rows[order, 1], rows[order, 2], rows[order, 3], sender[order]
        reach = np.maximum.accumulate(d_first + d_length)  # how far the destinations so far go
        replicated = bool(np.any(d_first[1:] < reach[:-1]))
        verdicts = comm.allgather((problem, replicated))
        problems = [p for p, _ in verdicts if p]
        if problems:
            raise ClimioError(problems[0], collective=True)
        replicated = any(r for _, r in verdicts)

        # each destination run against the (disjoint, sorted) source runs that overlap it
        lo = np.searchsorted(s_end, d_first, side="right")
        hi = np.searchsorted(s_first, d_first + d_length, side="left")
        many = np.maximum(hi - lo, 0)
        di = np.repeat(np.arange(d_first.size), many)
        si = lo[di] + _ramp(many)
        a = np.maximum(d_first[di], s_first[si])
        b = np.minimum(d_first[di] + d_length[di], s_end[si])
        match = np.stack([s_rank[si], d_rank[di], s_pos[si] + a - s_first[si], d_pos[di] + a - d_first[di], b - a],
                         axis=1)
        kinds = [match]
        if replicated:
            # an element's position on its destination rank is (match position - match start) + element
            which, c, e = _first_cover(a, b, match[:, 1], match[:, 3] - a)
            shift = c - a[which]
            kinds.append(np.stack([match[which, 0], match[which, 1], match[which, 2] + shift,
                                   match[which, 3] + shift, e - c], axis=1))
        back_rows, back_to = [], []
        for k, found in enumerate(kinds):  # kind 2k goes to the source end, 2k + 1 to the destination end
            for end, peer in ((0, 1), (1, 0)):
                back_rows.append(np.column_stack([np.full(len(found), 2 * k + end), found[:, peer], found[:, 2:]]))
                back_to.append(found[:, end])
        got, _ = route(comm, np.concatenate(back_rows).reshape(-1, 5), np.concatenate(back_to))

        def side(kind: int) -> _RunSide:
            """The runs of one kind of match, grouped by peer, in destination order, merged where they go on."""
            found = got[got[:, 0] == kind]
            peer, src_pos, dst_pos, length = found[:, 1], found[:, 2], found[:, 3], found[:, 4]
            order = np.lexsort((dst_pos, peer))
            pos = (src_pos if kind % 2 == 0 else dst_pos)[order]
            pos, length, (peer,) = _merge_runs(pos, length[order], peer[order])
            bounds = np.searchsorted(peer, np.arange(size + 1))
            peers = {r: (pos[x:y], length[x:y]) for r, (x, y) in enumerate(zip(bounds[:-1], bounds[1:])) if y > x}
            return _RunSide(self.source if kind % 2 == 0 else self.dest, self.trailing, size, peers,
                            int(length.sum()))

        forward = (side(0), side(1))
        backward = (side(2), side(3)) if replicated else forward
        return (*forward, *backward)

    # -- moving data

    def forward(self, src_local: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Source-layout array in, destination-layout array out (``out``'s holes are left as they are;
        a new ``out`` has zeros there)."""
        return self.forward_many([src_local], None if out is None else [out])[0]

    def backward(self, dest_local: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Destination-layout array in, source-layout array out: the same matches the other way."""
        return self.backward_many([dest_local], None if out is None else [out])[0]

    def forward_many(self, arrays: Sequence[np.ndarray],
                     outs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """Several variables of the source layout (one trailing shape, any dtypes) in one exchange."""
        send, receive = self._forward
        return self._exchange(send, receive, arrays, outs)

    def backward_many(self, arrays: Sequence[np.ndarray],
                      outs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """Several variables of the destination layout back to the source layout in one exchange."""
        receive, send = self._backward
        return self._exchange(send, receive, arrays, outs)

    def _local(self, layout: Layout, array: np.ndarray, what: str) -> tuple[int, ...]:
        """The local shape (trailing left out) of ``array``, checked against ``layout``."""
        keep = array.ndim - len(self.trailing)
        local, trailing = array.shape[:max(keep, 0)], array.shape[max(keep, 0):]
        if keep < 0 or trailing != self.trailing or not layout.accepts(local):
            raise ClimioError(f"{what} of shape {array.shape} on rank {self.comm.Get_rank()} does not match its "
                              f"layout: expected {(*layout.local_shape, *self.trailing)}")
        return local

    def _base_of(self, dtype: np.dtype) -> MPI.Datatype:
        if dtype not in self._bases:
            base = element_type(dtype)
            self._bases[dtype] = base if base.is_predefined else base.Commit()  # sent as it is by packed exchanges
        return self._bases[dtype]

    def _exchange(self, send: _Side, receive: _Side, arrays: Sequence[np.ndarray],
                  outs: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        if not arrays:
            return []
        move = self._move(send, receive, arrays, outs)
        if move.nbytes_per_element == 0:  # nothing to move (every rank agrees)
            return move.outs
        if len(move.arrays) == 1 and (isinstance(send, _BoxSide) or isinstance(receive, _BoxSide)):
            self._exchange_in_place(send, receive, move.arrays[0], move.outs[0], move.shapes[0], move.out_shapes[0],
                                    move.nbytes)
            return move.outs
        _alltoallw(self.comm, [move])
        return move.outs

    def _move(self, send: _Side, receive: _Side, arrays: Sequence[np.ndarray], outs: Sequence[np.ndarray] | None
              ) -> _Move:
        """One direction's exchange of ``arrays`` into ``outs`` (made where not given), checked."""
        arrays = [np.ascontiguousarray(a) for a in arrays]
        if outs is None:
            make = np.empty if receive.complete else np.zeros
            outs = [make((*receive.layout.local_shape, *self.trailing), dtype=a.dtype) for a in arrays]
        if len(outs) != len(arrays):
            raise ClimioError(f"{len(arrays)} arrays but {len(outs)} output arrays")
        shapes = [self._local(send.layout, a, "array") for a in arrays]
        out_shapes = [self._local(receive.layout, o, "output array") for o in outs]
        for a, o in zip(arrays, outs):
            if o.dtype != a.dtype or not o.flags.c_contiguous or not o.flags.writeable:
                raise ClimioError(f"output array must be a writeable C-contiguous {a.dtype} array, "
                                  f"got {'' if o.flags.c_contiguous else 'non-contiguous '}{o.dtype}")
        return _Move(self, send, receive, arrays, list(outs), shapes, out_shapes)

    def _exchange_in_place(self, send: _Side, receive: _Side, array: np.ndarray, out: np.ndarray,
                           shape: tuple[int, ...], out_shape: tuple[int, ...], nbytes: int) -> None:
        """One array, with a box side whose boxes lie back to back in peer order in its local array (the
        transpose's receive side: every peer's time block of this rank's cells, one after the other): that
        side moves plain runs of elements straight into (or out of) the array. Open MPI's datatype engine
        walks a large receiving subarray at a fraction of memory speed (eva's transpose of a 2.8 GB field:
        3.5 s against 0.9 s), and packing into a buffer costs as much again in memory traffic."""
        base = self._base_of(array.dtype)

        def plan_side(side: _Side, local: np.ndarray, local_shape: tuple[int, ...]):  # type: ignore[no-untyped-def]
            """(counts, byte displacements, types) of one side: plain runs when its boxes allow, else datatypes."""
            if isinstance(side, _BoxSide):
                views = side.views(local, local_shape)
                address, at, in_place = local.__array_interface__["data"][0], 0, True
                for v in (v for vs in views for v in vs):
                    in_place &= v.flags.c_contiguous and v.__array_interface__["data"][0] == address + at
                    at += v.nbytes
                counts = [sum(v.size for v in vs) for vs in views]
                displs = [int(d) for d in np.cumsum([0, *counts[:-1]]) * local.itemsize]
                if in_place and max(displs, default=0) < 2**31 and max(counts, default=0) < 2**31:
                    return counts, displs, [base] * len(counts)  # Alltoallw's counts and byte offsets are ints
            return side.counts, [0] * len(side.counts), side.types(base, local.dtype, local_shape)

        s_counts, s_displs, s_types = plan_side(send, array, shape)
        r_counts, r_displs, r_types = plan_side(receive, out, out_shape)
        with trace.phase("rearrange", nbytes):  # Alltoallw on every rank, whichever way its sides went
            self.comm.Alltoallw([array, s_counts, s_displs, s_types], [out, r_counts, r_displs, r_types])

    def free(self) -> None:
        """Free every committed datatype (the plan can still be used: they are made again on demand)."""
        for side in {id(s): s for s in (*self._forward, *self._backward)}.values():
            side.free()
        for base in self._bases.values():
            if not base.is_predefined:
                base.Free()
        self._bases.clear()

    def __enter__(self) -> Plan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


def forward_together(moves: Sequence[tuple[Plan, Sequence[np.ndarray], Sequence[np.ndarray]]]) -> None:
    """Several plans' forward exchanges on one communicator (each ``(plan, arrays, outs)``, as
    :meth:`Plan.forward_many`) in one ``MPI_Alltoallw`` (collective: every rank passes its plans in the same
    order): records that move by different plans (a stripe's phase differs by field) cost one exchange."""
    prepared = [plan._move(*plan._forward, arrays, outs) for plan, arrays, outs in moves if arrays]
    prepared = [m for m in prepared if m.nbytes_per_element]  # a plan with nothing to move has it so on every rank
    if prepared:
        _alltoallw(prepared[0].plan.comm, prepared)


@dataclass
class _Move:
    """One plan's arrays checked for one direction's exchange."""

    plan: Plan
    send: _Side
    receive: _Side
    arrays: list[np.ndarray]
    outs: list[np.ndarray]
    shapes: list[tuple[int, ...]]
    out_shapes: list[tuple[int, ...]]

    @property
    def nbytes_per_element(self) -> int:
        return math.prod(self.plan.trailing) * sum(a.itemsize for a in self.arrays)

    @property
    def nbytes(self) -> int:
        return self.send.elements * self.nbytes_per_element


def _alltoallw(comm: MPI.Comm, moves: Sequence[_Move]) -> None:
    """The moves' arrays in one ``MPI_Alltoallw``, each array by its plan's datatype for each peer."""
    arrays, outs, send_types, receive_types, send_counts, receive_counts = [], [], [], [], [], []
    for m in moves:
        arrays += m.arrays
        outs += m.outs
        send_types += [m.send.types(m.plan._base_of(a.dtype), a.dtype, s) for a, s in zip(m.arrays, m.shapes)]
        receive_types += [m.receive.types(m.plan._base_of(o.dtype), o.dtype, s) for o, s in zip(m.outs, m.out_shapes)]
        send_counts += [m.send.counts] * len(m.arrays)
        receive_counts += [m.receive.counts] * len(m.outs)
    zeros = [0] * comm.Get_size()
    with _joined(arrays, send_types, send_counts) as (send_buffer, sent, send_made), \
            _joined(outs, receive_types, receive_counts) as (receive_buffer, received, receive_made), \
            trace.phase("rearrange", sum(m.nbytes for m in moves)):
        comm.Alltoallw([send_buffer, sent, zeros, send_made], [receive_buffer, received, zeros, receive_made])


@contextmanager
def _joined(arrays: Sequence[np.ndarray], types: list[list[MPI.Datatype]], counts: list[list[int]]
            ) -> Iterator[tuple[object, list[int], list[MPI.Datatype]]]:
    """One buffer, and per peer one count and one datatype, for several arrays (``counts[k][peer]``: 1 where
    array ``k`` has elements for that peer): the array, its counts and types when there is one, else
    ``MPI.BOTTOM`` with, per peer, a struct of the arrays' types at their absolute addresses (freed on exit)."""
    from mpi4py import MPI

    if len(arrays) == 1:
        yield arrays[0], counts[0], types[0]
        return
    addresses = [MPI.Get_address(a) for a in arrays]
    made: list[MPI.Datatype] = []
    per_peer: list[int] = []
    for peer in range(len(counts[0])):
        taking = [k for k in range(len(arrays)) if counts[k][peer]]
        made.append(MPI.Datatype.Create_struct([1] * len(taking), [addresses[k] for k in taking],
                                               [types[k][peer] for k in taking]).Commit() if taking else MPI.BYTE)
        per_peer.append(int(bool(taking)))
    try:
        yield MPI.BOTTOM, per_peer, made
    finally:
        for datatype, count in zip(made, per_peer):
            if count:
                datatype.Free()
