"""A plan's maps of every rank's pieces: a grid of blocks found by arithmetic (what a rank of a job of any size
uses) finds exactly what a list of every rank's pieces finds, and plans built from either are the same."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from climio.bench import scale
from climio.core.rearrange import GridPieces, Layout, ListedPieces, known_moves
from climio.model.counts import block_job, filled_nodes
from climio.model.strategy import Strategy


def listed(shape: tuple[int, ...], cuts: list[tuple[int, ...] | None], strides: list[int]) -> ListedPieces:
    """The grid's boxes, listed rank by rank as allgathered descriptions would list them."""
    parts = [1 if c is None else len(c) - 1 for c in cuts]
    described = {}
    for cell in itertools.product(*(range(p) for p in parts)):
        lo = [0 if c is None else c[k] for c, k in zip(cuts, cell)]
        hi = [n if c is None else c[k + 1] for c, k, n in zip(cuts, cell, shape)]
        described[sum(k * s for k, s in zip(cell, strides))] = ("box", shape, np.array([lo, np.subtract(hi, lo)]))
    return ListedPieces(shape, described)


@pytest.mark.parametrize("seed", range(12))
def test_a_grid_finds_what_a_list_finds(seed: int) -> None:
    """Random grids of 1-3 axes, some whole, some cut with blocks of no width, ranks row-major or spread out
    (a band's first rank); random query boxes: the same pieces, in the same order; the same ranks' boxes."""
    rng = np.random.default_rng(seed)
    for _ in range(25):
        shape = tuple(int(n) for n in rng.integers(1, 9, int(rng.integers(1, 4))))
        cuts: list[tuple[int, ...] | None] = []
        for n in shape:
            inner = np.sort(rng.integers(0, n + 1, int(rng.integers(0, n + 2))))
            cuts.append(None if rng.random() < 0.3 else (0, *inner.tolist(), n))
        parts = [1 if c is None else len(c) - 1 for c in cuts]
        strides = [0 if c is None else int(np.prod(parts[a + 1:])) for a, c in enumerate(cuts)]
        if rng.random() < 0.3:
            strides = [3 * s for s in strides]
        grid, flat = GridPieces(shape, cuts, strides), listed(shape, cuts, strides)
        lo = np.array([[rng.integers(0, n) for n in shape] for _ in range(int(rng.integers(1, 5)))])
        hi = np.array([[rng.integers(a + 1, n + 1) for a, n in zip(row, shape)] for row in lo])
        for got, want in zip(grid.meeting(lo, hi), flat.meeting(lo, hi)):
            assert np.array_equal(got, want), (shape, cuts, strides)
        assert grid.holders == flat.holders
        for rank in range(int(np.dot(parts, strides)) + 3):
            assert all(np.array_equal(a, b) for a, b in zip(grid.pieces_of(rank), flat.pieces_of(rank)))


JOBS = [("CONUS", 12), ("EUS", 6), ("cube", 24), ("cube", 3), ("inm", 8)]


@pytest.mark.parametrize("kind,nranks", JOBS, ids=[f"{k}-{n}" for k, n in JOBS])
def test_plans_from_maps_equal_plans_from_every_ranks_layout(kind: str, nranks: int) -> None:
    """Every strategy that exchanges, on every rank, writing and reading: the plan made from the process
    grid's map and the writers' map (their ranges, or bands of the grid) has the same peers, moves the same
    elements and keeps as many matches as the plan made from every rank's listed layout and every writer's
    listed buffer (whose first-holder search, for pieces that might overlap, finds none); the writers' map
    finds the listed buffers' pieces; the writers' calls and largest buffer are the listed ones'."""
    jobs = [scale.job(kind, nranks), block_job("tiny", (3, 2), 2, 4, 1, 0)]  # tiny: two ranks own nothing
    for job, text in itertools.product(jobs, ["root", "rows", "cols", "agg", "agg:2", "stripe"]):
        if text in ("rows", "cols") and job.share(0).blocks is None:
            continue
        strategy = Strategy.settle(text, "cdf5", filled_nodes(job.nranks, 4), job.share(0), stripe_size=1 << 16)
        everyone = ListedPieces(job.shape, {r: job.share(r).layout(job.levels).description
                                            for r in range(job.nranks)})
        writers = strategy.writers(job.share(0), job.levels, np.dtype("f4"))
        assert writers is not None
        writing = {r: writers.slabs(r) for r in range(job.nranks) if writers.slabs(r)}
        listed = ListedPieces(job.shape, {r: Layout.slabs(job.shape, mine).description for r, mine in writing.items()})
        grid, slabs = job.share(0).piece_map(job.levels), writers.pieces
        assert isinstance(grid, GridPieces) and slabs.holders == listed.holders == len(writing)
        assert sorted(writers.ranks) == sorted(writing)
        assert writers.calls == max(len(m) for m in writing.values())
        assert writers.most == max(sum(p.size for p in m) for m in writing.values())
        sent, received = {"write": 0, "read": 0}, {"write": 0, "read": 0}
        for rank in range(job.nranks):
            layout = job.share(rank).layout(job.levels)
            buffer = Layout.slabs(job.shape, writing.get(rank, []))
            for way, ends, maps, lists in (("write", (layout, buffer), (grid, slabs), (everyone, listed)),
                                           ("read", (buffer, layout), (slabs, grid), (listed, everyone))):
                by_maps = known_moves(*ends, *maps, rank, job.nranks)
                assert by_maps == known_moves(*ends, *lists, rank, job.nranks), (job.label, text, rank)
                assert by_maps.received + by_maps.kept == ends[1].size, (job.label, text, rank, way)  # no holes
                sent[way] += by_maps.sent
                received[way] += by_maps.received
            assert all(np.array_equal(a, b) for a, b in zip(slabs.pieces_of(rank), listed.pieces_of(rank)))
            lo, hi = layout.slab.start, np.add(layout.slab.start, layout.slab.count)
            if layout.slab.size:
                found, want = slabs.meeting(np.array([lo]), np.array([hi])), listed.meeting(np.array([lo]),
                                                                                            np.array([hi]))
                assert all(np.array_equal(found[i], want[i]) for i in (0, 1, 3, 4)), (job.label, text, rank)
        assert sent == received, (job.label, text)  # every element sent once, to the rank that takes it
