"""Aggregation to writers that own contiguous ranges of a record (``agg:N`` and ``stripe``).

A record of a (levels, y, x) field is a contiguous run of the file. Each writer
("aggregator") owns some element ranges of it, in C order; every rank sends each
aggregator the elements of its block that fall in that aggregator's ranges, with one
``MPI_Alltoallv``. An aggregator then holds whole contiguous pieces of the file and
writes each as at most a handful of hyperslabs (a partial row, whole rows, whole
levels, ...), so the file system sees few large contiguous requests instead of many
strided ones (seed 002 ch. 7; PIO's I/O tasks).

``agg:N`` gives N aggregators equal row-aligned ranges. ``stripe`` cuts the
record at the file's stripe boundaries and gives stripe ``i`` to aggregator
``i mod stripe_count``, so each aggregator talks to one storage target.
Everything that does not change between steps is computed once per plan.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from climio.core import trace
from climio.core.decomp import Decomposition, Hyperslab, block_range

if TYPE_CHECKING:
    from mpi4py import MPI

Ranges = list[tuple[int, int, int]]  # (first element, end element, aggregator rank), ascending, covering the record


def flat_slabs(first: int, end: int, shape: tuple[int, ...]) -> list[Hyperslab]:
    """The hyperslabs covering C-order elements ``first..end`` of an array of ``shape``, in order."""
    if first >= end:
        return []
    if len(shape) == 1:
        return [Hyperslab((first,), (end - first,))]
    inner = math.prod(shape[1:])
    i0, r0 = divmod(first, inner)
    i1, r1 = divmod(end, inner)

    def within(i: int, lo: int, hi: int) -> list[Hyperslab]:
        return [Hyperslab((i, *s.start), (1, *s.count)) for s in flat_slabs(lo, hi, shape[1:])]

    if i0 == i1:
        return within(i0, r0, r1)
    out = []
    if r0:
        out += within(i0, r0, inner)
        i0 += 1
    if i1 > i0:
        out.append(Hyperslab((i0, *(0,) * (len(shape) - 1)), (i1 - i0, *shape[1:])))
    if r1:
        out += within(i1, 0, r1)
    return out


def aggregator_ranks(comm: MPI.Comm, count: int) -> list[int]:
    """``count`` ranks spread over the nodes: round-robin over nodes, then over each node's ranks."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        node_of = comm.allgather(node.bcast(comm.Get_rank(), root=0))  # a node is named by its first rank
    finally:
        node.Free()
    return _spread(node_of, count)


def _spread(node_of: list[int], count: int) -> list[int]:
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


def even_ranges(shape: tuple[int, ...], aggregators: list[int]) -> Ranges:
    """``agg:N``: equal ranges of whole rows (the last axis), one per aggregator."""
    rows, width = math.prod(shape[:-1]), shape[-1]
    out = []
    for k, rank in enumerate(aggregators):
        start, count = block_range(rows, len(aggregators), k)
        if count:
            out.append((start * width, (start + count) * width, rank))
    return out


def stripe_ranges(offset: int, shape: tuple[int, ...], itemsize: int, stripe_size: int,
                  aggregators: list[int]) -> Ranges:
    """``stripe``: the record (starting at byte ``offset`` of the file) cut at stripe boundaries."""
    nbytes = math.prod(shape) * itemsize
    out: Ranges = []
    stripe = offset // stripe_size
    while stripe * stripe_size < offset + nbytes:
        lo = max(stripe * stripe_size, offset) - offset
        hi = min((stripe + 1) * stripe_size, offset + nbytes) - offset
        rank = aggregators[stripe % len(aggregators)]
        if out and out[-1][2] == rank and out[-1][1] == lo // itemsize:
            out[-1] = (out[-1][0], hi // itemsize, rank)
        else:
            out.append((lo // itemsize, hi // itemsize, rank))
        stripe += 1
    return out


def _block_flat(full: Decomposition, rank: int) -> np.ndarray:
    """C-order flat indices (ascending) of the elements ``rank`` owns."""
    owned = full.owned(rank)
    index = np.zeros((), dtype=np.int64)
    for start, count, length in zip(owned.start, owned.count, full.shape):
        index = index[..., None] * length + np.arange(start, start + count, dtype=np.int64)
    return index.ravel()


class Aggregation:
    """The exchange plan that gives each aggregator its ranges of one record (collective to build and use)."""

    def __init__(self, full: Decomposition, dtype: str | np.dtype, comm: MPI.Comm, ranges: Ranges) -> None:
        self.full, self.comm, self.dtype = full, comm, np.dtype(dtype)
        rank, size = comm.Get_rank(), comm.Get_size()
        starts = np.array([r[0] for r in ranges], dtype=np.int64)
        owners = np.array([r[2] for r in ranges], dtype=np.int64)
        mine = _block_flat(full, rank)
        dest = owners[np.searchsorted(starts, mine, side="right") - 1]
        self._order = np.argsort(dest, kind="stable")
        self._send_counts = np.bincount(dest, minlength=size).astype(np.int64)
        own = [(a, b) for a, b, r in ranges if r == rank]
        self.length = sum(b - a for a, b in own)
        own_starts = np.array([a for a, _ in own], dtype=np.int64)
        own_offsets = np.concatenate([[0], np.cumsum([b - a for a, b in own])]).astype(np.int64)
        recv_counts, positions = np.zeros(size, dtype=np.int64), []
        for source in range(size):
            if not own:
                break
            flat = _block_flat(full, source)
            k = np.searchsorted(own_starts, flat, side="right") - 1
            inside = (k >= 0) & (flat < np.array([b for _, b in own], dtype=np.int64)[np.maximum(k, 0)])
            recv_counts[source] = int(inside.sum())
            positions.append(own_offsets[k[inside]] + flat[inside] - own_starts[k[inside]])
        self._recv_counts = recv_counts
        self._positions = np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
        self.slabs: list[tuple[int, Hyperslab]] = []  # (offset in this rank's buffer, hyperslab of the record)
        for (a, b), offset in zip(own, own_offsets):
            at = int(offset)
            for slab in flat_slabs(a, b, full.shape):
                self.slabs.append((at, slab))
                at += slab.size

    def exchange(self, local: np.ndarray) -> np.ndarray:
        """This rank's block (halo'd local array) in; the elements of this rank's ranges, in file order, out."""
        from mpi4py import MPI

        block = np.ascontiguousarray(self.full.owned_view(self.comm.Get_rank(), local), dtype=self.dtype).ravel()
        send = block[self._order]
        received = np.empty(int(self._recv_counts.sum()), dtype=self.dtype)
        datatype = MPI._typedict[self.dtype.char]
        send_displ = np.concatenate([[0], np.cumsum(self._send_counts)[:-1]])
        recv_displ = np.concatenate([[0], np.cumsum(self._recv_counts)[:-1]])
        with trace.phase("aggregate", send.nbytes):
            self.comm.Alltoallv([send, self._send_counts, send_displ, datatype],
                                [received, self._recv_counts, recv_displ, datatype])
        out = np.empty(self.length, dtype=self.dtype)
        out[self._positions] = received
        return out
