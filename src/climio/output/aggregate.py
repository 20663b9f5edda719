"""Aggregation to writers that own contiguous ranges of a record (``agg:N`` and ``stripe``).

A record of a (levels, y, x) field is a contiguous run of the file. Each writer
("aggregator") owns some element ranges of it, in C order; every rank sends each
aggregator the elements of its block that fall in that aggregator's ranges, in one
exchange of a :mod:`climio.core.rearrange` plan. An aggregator then holds whole contiguous pieces of the file and
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

from climio.core.decomp import Decomposition, Hyperslab, block_range
from climio.core.rearrange import Layout, Plan

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


class Aggregation:
    """The plan that gives each aggregator its ranges of one record (collective to build and use): a
    :class:`~climio.core.rearrange.Plan` from the ranks' blocks (halo'd or not) to the aggregators' runs of
    the record, so MPI moves rows and partial rows straight into place, with no packing loop in Python."""

    def __init__(self, full: Decomposition, dtype: str | np.dtype, comm: MPI.Comm, ranges: Ranges) -> None:
        from mpi4py import MPI

        self.full, self.comm, self.dtype = full, comm, np.dtype(dtype)
        rank = comm.Get_rank()
        own = [(a, b) for a, b, r in ranges if r == rank]
        self.plan = Plan(comm, Layout.block(full, rank), Layout.runs(full.shape, [(a, b - a) for a, b in own]))
        self.slabs: list[tuple[int, Hyperslab]] = []  # (offset in this rank's buffer, hyperslab of the record)
        at = 0
        for a, b in own:
            for slab in flat_slabs(a, b, full.shape):
                self.slabs.append((at, slab))
                at += slab.size
        self.most_slabs = comm.allreduce(len(self.slabs), op=MPI.MAX)  # every rank makes this many writes
        self._out = np.empty(at, dtype=self.dtype)

    def exchange(self, local: np.ndarray) -> np.ndarray:
        """This rank's block (halo'd local array) in; the elements of this rank's ranges, in file order, out.

        The output buffer is the plan's own and is reused by the next exchange: write it first.
        """
        return self.plan.forward(np.ascontiguousarray(local, dtype=self.dtype), out=self._out)

    def free(self) -> None:
        self.plan.free()
