"""The matched-call rule of collective I/O, in one place.

PnetCDF, parallel HDF5 and netCDF-C (for a netCDF-4 record variable, even in
independent mode) make every rank of a file's communicator take part in each
read or write call. So every rank makes the same number of calls per variable,
in the same order, whatever its share: a rank with less to move (or nothing)
pads with empty hyperslabs. A rank that skips a call leaves the others waiting
forever. Every loop of collective calls in climio takes its count from here:

- :func:`most`/:func:`most_each`: the largest count over the ranks (one allreduce);
- :func:`rounds`: a rank's items in rounds of ``per_round``, as many rounds as the busiest rank;
- :func:`matched_pieces`: hyperslabs split under a byte limit, padded to the busiest rank's pieces.

:func:`split` is the pure arithmetic beneath (no communication).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from climio.core import waiting
from climio.core.decomp import Hyperslab

if TYPE_CHECKING:
    from mpi4py import MPI


def most_each(comm: MPI.Comm, counts: Sequence[int]) -> list[int]:
    """The largest of each count over the ranks (collective; every rank passes as many counts)."""
    from mpi4py import MPI

    values = np.asarray(counts, dtype=np.int64)
    if comm.Get_size() > 1 and values.size:
        values = values.copy()
        waiting.wait(comm.Iallreduce(MPI.IN_PLACE, values, op=MPI.MAX))
    return [int(v) for v in values]


def most(comm: MPI.Comm, count: int) -> int:
    """The largest ``count`` over the ranks (collective): how many calls every rank makes."""
    return most_each(comm, [count])[0]


def rounds(comm: MPI.Comm, total: int, per_round: int) -> Iterator[tuple[int, int]]:
    """``(first, count)`` of this rank's ``total`` items, ``per_round`` at a time, for as many rounds as the
    busiest rank needs (collective once, at the start); past this rank's end ``count`` is 0 and ``first`` is
    ``total``."""
    per_round = max(1, per_round)
    for k in range(most(comm, math.ceil(total / per_round))):
        first = min(k * per_round, total)
        yield first, min(per_round, total - first)


def split(slab: Hyperslab, itemsize: int, max_bytes: int) -> Iterator[tuple[int, Hyperslab]]:
    """``slab`` along its first axis in ``(offset, piece)`` of at most ``max_bytes`` (one row at least); an
    empty or 0-d slab is one piece of itself."""
    if not slab.count:
        yield 0, slab
        return
    row_bytes = math.prod(slab.count[1:]) * itemsize
    rows = max(1, max_bytes // max(row_bytes, 1))
    for offset in range(0, slab.count[0], rows):
        k = min(rows, slab.count[0] - offset)
        yield offset, Hyperslab((slab.start[0] + offset, *slab.start[1:]), (k, *slab.count[1:]))


def matched_pieces(comm: MPI.Comm, slabs: Sequence[Hyperslab], itemsizes: Sequence[int],
                   max_bytes: int) -> list[list[tuple[int, Hyperslab]]]:
    """Each of this rank's hyperslabs (one per variable, the same variables on every rank) split under
    ``max_bytes``, then padded with empty hyperslabs to the number of pieces of the rank with the most of it
    (one allreduce for all of them)."""
    plans = [list(split(s, n, max_bytes)) if s.size else [] for s, n in zip(slabs, itemsizes)]
    for plan, slab, n in zip(plans, slabs, most_each(comm, [len(p) for p in plans])):
        plan += [(0, Hyperslab.empty(len(slab.start)))] * (n - len(plan))
    return plans
