"""The matched-call rule (climio.core.collective) at 1-6 ranks: every rank makes as many calls as the busiest."""

from __future__ import annotations

import numpy as np
from conftest import assert_all
from mpi4py import MPI

from climio.core import collective
from climio.core.decomp import Hyperslab


def test_rounds_cover_each_rank_and_match_in_number(comm: MPI.Comm) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    total = 3 * rank  # rank 0 has nothing: it still makes every round, with count 0
    got = list(collective.rounds(comm, total, 2))
    assert_all(comm, len(got) == -(-3 * (size - 1) // 2), f"rounds {len(got)}")
    covered = [i for first, count in got for i in range(first, first + count)]
    assert_all(comm, covered == list(range(total)), "each item once, in order")
    assert_all(comm, all(count == 0 and first == total for first, count in got[-(-total // 2):]), "padding empty")


def test_matched_pieces_pad_every_variable_to_the_busiest_rank(comm: MPI.Comm) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    slabs = [Hyperslab((0, 0), (rank, 5)), Hyperslab((0,), (0,)), Hyperslab((2, 0), (size - rank, 5))]
    plans = collective.matched_pieces(comm, slabs, [4, 8, 4], 2 * 5 * 4)  # two rows of 5 float32 a piece
    counts = [len(p) for p in plans]
    assert_all(comm, counts == [-(-(size - 1) // 2), 0, -(-size // 2)], f"pieces {counts}")
    for slab, plan in zip(slabs, plans):
        rows = [(piece.start[0], piece.count[0]) for _, piece in plan if piece.size]
        assert_all(comm, sum(n for _, n in rows) == (slab.count[0] if slab.size else 0), "rows covered")
        assert_all(comm, all(not piece.size for _, piece in plan[len(rows):]), "padding empty")


def test_split_is_pure_arithmetic() -> None:
    pieces = list(collective.split(Hyperslab((3, 1), (5, 4)), 8, 70))  # two rows of 4 doubles = 64 bytes a piece
    assert [(o, p.start, p.count) for o, p in pieces] == [(0, (3, 1), (2, 4)), (2, (5, 1), (2, 4)),
                                                         (4, (7, 1), (1, 4))]
    assert list(collective.split(Hyperslab((), ()), 4, 1)) == [(0, Hyperslab((), ()))]
    assert np.sum([p.count[0] for _, p in collective.split(Hyperslab((0,), (7,)), 1, 1)]) == 7
