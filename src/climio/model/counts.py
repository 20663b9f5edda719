"""What one record's output step does on each rank of a job of any size, worked out in one process.

A model writing a record through a strategy costs each rank messages, bytes moved, bytes written, requests to
the file and plan memory. None of these depends on the machine: they follow from the decomposition, the
strategy and the rank count, so they are counted here with no MPI, for the cost model
(:mod:`climio.model.costmodel`, which ``auto`` asks) and for ``climio bench scale``:

- each rank's share of the record as flat runs of the record, and each writer's pieces
  (:meth:`Strategy.pieces`, :meth:`Strategy.own_pieces`: the code the real job runs) as flat runs too;
- the messages and bytes of the exchange by one sweep over the sorted runs of every rank and every writer
  (independent of the rearranger's box intersections, which real jobs use: ``tests/mpi`` holds the two equal
  at 1-6 ranks against each route's :meth:`~climio.model.route.Route.counts` that real runs trace);
- the memory and time of a plan on chosen ranks by the rearranger's own planning
  (:func:`~climio.core.rearrange.known_moves`), which every rank runs on everyone's pieces.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from climio.core.decomp import Hyperslab
from climio.core.rearrange import BoxLayout, Layout, known_moves
from climio.model import decomposition as dec
from climio.model.route import runs_of_slab
from climio.model.strategy import Strategy

QUANTITIES = ("messages_sent", "messages_received", "bytes_sent", "bytes_received", "bytes_kept", "bytes_written", "requests",
              "file_runs", "plan_bytes")


@dataclass(frozen=True)
class Job:
    """A record of one field split over ``nranks`` simulated ranks: every rank's share (``shares``, block
    decompositions) or, for a mesh, each cell's owner."""

    label: str
    nranks: int
    grid: tuple[int, ...]
    levels: int | None
    shares: tuple[dec.GridDecomposition, ...] = ()
    owner: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.grid if self.levels is None else (self.levels, *self.grid)

    def share(self, rank: int) -> dec.GridDecomposition:
        """Rank ``rank``'s share (a mesh's made when asked: it is a list of cells)."""
        if self.shares:
            return self.shares[rank]
        assert self.owner is not None
        return dec.cells(self.owner, rank, nranks=self.nranks)

    @cached_property
    def sources(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`source_runs` in file order, ``(first, end, rank, bounds)`` with the sorted distinct ends of
        the runs: worked out once a job, whatever the strategies weighed on it."""
        first, length, rank = self.source_runs()
        order = np.argsort(first, kind="stable")
        first, end, rank = first[order], first[order] + length[order], rank[order]
        return first, end, rank, np.unique(np.concatenate([first, end]))

    @cached_property
    def memory_runs(self) -> np.ndarray:
        """Each rank's runs of its share in its local array: a block's rows (a halo breaks each row off the
        next), a list of points' one run (a mesh rank's cells); worked out once a job."""
        if self.owner is not None:
            return np.ones(self.nranks, np.int64)
        out = np.zeros(self.nranks, np.int64)
        for rank, share in enumerate(self.shares):
            if not isinstance(share, dec.BlockDecomposition):
                out[rank] = int(share.owned > 0)
                continue
            count = (self.levels or 1, *share.box.count)
            out[rank] = math.prod(count[:-1]) if share.halo and share.box.size else \
                (share.layout(self.levels).flat_runs()[0].size if share.box.size else 0)
        return out

    def source_runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every rank's runs of the record: ``(first, length, rank)``."""
        if self.owner is not None:  # cells sorted by owner, then cut where the owner changes or a cell is skipped
            order = np.argsort(self.owner, kind="stable")
            owner = self.owner[order]
            cut = np.flatnonzero((np.diff(owner) != 0) | (np.diff(order) != 1)) + 1
            starts = np.concatenate([[0], cut])
            lengths = np.diff(np.concatenate([starts, [order.size]]))
            first, rank = order[starts], owner[starts]
            if self.levels is not None:
                cells = math.prod(self.grid)
                level = np.repeat(np.arange(self.levels), first.size)
                return (np.tile(first, self.levels) + level * cells, np.tile(lengths, self.levels),
                        np.tile(rank, self.levels))
            return first.astype(np.int64), lengths.astype(np.int64), rank.astype(np.int64)
        runs = [share.layout(self.levels).flat_runs() for share in self.shares]
        return (np.concatenate([r[0] for r in runs]), np.concatenate([r[1] for r in runs]),
                np.concatenate([np.full(r[0].size, k, np.int64) for k, r in enumerate(runs)]))


def block_job(label: str, grid: tuple[int, ...], levels: int | None, px: int, py: int, halo: int) -> Job:
    """A ``px x py`` process grid over ``grid`` (y, x), every rank's share made from one list of blocks."""
    first = dec.blocks(grid, px, py, 0, halo=halo)
    return Job(label, px * py, grid, levels, tuple(replace(first, rank=r) for r in range(px * py)))


def writers(job: Job, strategy: Strategy, itemsize: int) -> list[list[Hyperslab]]:
    """Every rank's pieces of the record under ``strategy``, as the real job works them out."""
    some = strategy.writers(job.share(0), job.levels, np.dtype(f"f{itemsize}"))
    if some is not None:
        return [some.slabs(r) for r in range(job.nranks)]
    if strategy.name == "direct" and job.owner is not None:  # a mesh rank's own cells, run by run
        first, length, rank = job.source_runs()
        order = np.lexsort((first, rank))
        bounds = np.searchsorted(rank[order], np.arange(job.nranks + 1))
        return [[Hyperslab((a,), (n,)) for a, n in zip(first[order[i:j]].tolist(), length[order[i:j]].tolist())]
                for i, j in zip(bounds[:-1], bounds[1:])]
    return [strategy.own_pieces(job.share(r), job.levels) for r in range(job.nranks)]


def step_counts(job: Job, strategy: Strategy, itemsize: int = 4) -> dict[str, np.ndarray]:
    """Each rank's :meth:`~climio.model.route.Route.counts` for one record (``plan_bytes`` left at 0: see
    :func:`plan_cost`), from one sweep over every rank's and every writer's runs; and ``bytes_landed``, the
    bytes each writer's records take in climio's buffers (none where every rank writes its own block)."""
    return tally(job, writers(job, strategy, itemsize), itemsize)[0]


def tally(job: Job, pieces: list[list[Hyperslab]], itemsize: int
          ) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`step_counts` of the writers' ``pieces`` (:func:`writers`), and their runs (:func:`written`)."""
    size = job.nranks
    out, runs = written(job.shape, pieces, itemsize)
    out["memory_runs"] = job.memory_runs
    out["bytes_landed"] = np.zeros(size, np.int64)
    if not needs_plan(job, pieces):
        return out, runs
    out.update(exchange(job.sources, runs, size, itemsize))
    out["bytes_landed"] = out["bytes_written"]
    return out, runs


def written(shape: tuple[int, ...], pieces: list[list[Hyperslab]], itemsize: int
            ) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """What each writer of ``pieces`` (one list a rank) writes of a record: its requests, bytes and runs in the
    file, every other count 0; and the writers' runs ``(first, end, rank)`` in element offsets, in the order of
    rank then file."""
    size = len(pieces)
    out = {q: np.zeros(size, np.int64) for q in QUANTITIES}
    d_runs = [(piece_runs(shape, p), r) for r, mine in enumerate(pieces) for p in mine if p.size]
    d_first = np.concatenate([d[:, 0] for d, _ in d_runs]) if d_runs else np.zeros(0, np.int64)
    d_length = np.concatenate([d[:, 1] for d, _ in d_runs]) if d_runs else np.zeros(0, np.int64)
    d_rank = np.concatenate([np.full(len(d), r, np.int64) for d, r in d_runs]) if d_runs else np.zeros(0, np.int64)
    out["requests"] = np.bincount([r for _, r in d_runs], minlength=size)
    out["bytes_written"] = np.bincount(d_rank, weights=d_length, minlength=size).astype(np.int64) * itemsize
    order = np.lexsort((d_first, d_rank))  # a writer's runs in file order: a new one where the last does not go on
    first, end, rank = d_first[order], d_first[order] + d_length[order], d_rank[order]
    new_run = np.ones(first.size, bool)
    new_run[1:] = (rank[1:] != rank[:-1]) | (first[1:] != end[:-1])
    out["file_runs"] = np.bincount(rank[new_run], minlength=size)
    return out, (first, end, rank)


def exchange(sources: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], runs: tuple[np.ndarray, ...],
             size: int, itemsize: int) -> dict[str, np.ndarray]:
    """The messages and bytes that bring the ``sources`` (``(first, end, rank, bounds)``: runs sorted by first,
    and the sorted distinct ends of them all, as :attr:`Job.sources`) to the writers' ``runs`` (``(first, end,
    rank)``, each writer's in file order): sent, received, and kept where a rank writes its own."""
    s_first, s_end, s_rank, s_bounds = sources
    first, end, rank = runs
    # the writers' runs are in file order already: both sorted, a stable sort merges them
    merged = np.sort(np.concatenate([s_bounds, np.unique(np.concatenate([first, end]))]), kind="stable")
    bounds = merged[np.concatenate([[True], merged[1:] != merged[:-1]])]
    lo, length = bounds[:-1], np.diff(bounds)

    def holder(first: np.ndarray, end: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """The rank whose run (sorted by ``first``) holds each segment, -1 for none."""
        k = np.searchsorted(first, lo, side="right") - 1
        inside = (k >= 0) & (lo < end[np.maximum(k, 0)])
        return np.where(inside, rank[np.maximum(k, 0)], -1)

    by_first = np.argsort(first, kind="stable")  # a writer's runs in file order; across writers, sorted here
    sender, receiver = holder(s_first, s_end, s_rank), holder(first[by_first], end[by_first], rank[by_first])
    moved = (sender >= 0) & (receiver >= 0)
    pair, amount = np.unique(sender[moved] * size + receiver[moved], return_inverse=True)
    weight = np.bincount(amount, weights=length[moved]).astype(np.int64) * itemsize
    source, dest = pair // size, pair % size
    other = source != dest
    return {"messages_sent": np.bincount(source[other], minlength=size),
            "messages_received": np.bincount(dest[other], minlength=size),
            "bytes_sent": np.bincount(source[other], weights=weight[other], minlength=size).astype(np.int64),
            "bytes_received": np.bincount(dest[other], weights=weight[other], minlength=size).astype(np.int64),
            "bytes_kept": np.bincount(source[~other], weights=weight[~other], minlength=size).astype(np.int64)}


def piece_runs(shape: tuple[int, ...], piece: Hyperslab) -> np.ndarray:
    """A piece's flat ``(start, length)`` runs in the record."""
    if len(shape) == 1:
        return np.array([[piece.start[0], piece.count[0]]], np.int64)
    return runs_of_slab(shape, piece)


def needs_plan(job: Job, pieces: list[list[Hyperslab]]) -> bool:
    """Whether the route exchanges anything: not where every rank writes its own block (as :class:`Route`
    decides)."""
    if job.owner is not None:
        return True
    for share, mine in zip(job.shares, pieces):
        layout = share.layout(job.levels)
        if not isinstance(layout, BoxLayout) or [p for p in mine if p.size] != ([layout.slab] if layout.slab.size else []):
            return True
    return False


def plan_cost(job: Job, strategy: Strategy, ranks: Sequence[int], itemsize: int = 4) -> dict[int, tuple[int, float]]:
    """The bytes a plan keeps and the seconds it takes to build on each of ``ranks``, by the rearranger's own
    planning from the maps of every rank's layout and every writer's pieces (box-like layouts: block
    decompositions), each rank making its maps as a real one does."""
    pieces = writers(job, strategy, itemsize)
    if job.owner is not None or not needs_plan(job, pieces):
        return {}
    dtype = np.dtype(f"f{itemsize}")
    out = {}
    for rank in ranks:
        share = job.share(rank)
        start = time.perf_counter()
        some = strategy.writers(share, job.levels, dtype)
        layouts = share.piece_map(job.levels)
        assert some is not None and layouts is not None, "direct on blocks exchanges nothing"
        moves = known_moves(share.layout(job.levels), Layout.slabs(job.shape, some.slabs(rank)), layouts,
                            some.pieces, rank, job.nranks)
        out[rank] = (moves.plan_bytes, time.perf_counter() - start)
    return out


def filled_nodes(nranks: int, per_node: int) -> list[int]:
    """Each rank's node (named by its first rank) when the ranks fill nodes of ``per_node`` in turn."""
    return [r // per_node * per_node for r in range(nranks)]
