"""Decompositions are pure arithmetic: check them exhaustively on small grids."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from climio.core.decomp import Decomposition, Hyperslab, block_range, process_grid
from climio.errors import ClimioError


@pytest.mark.parametrize("n", range(0, 13))
@pytest.mark.parametrize("parts", range(1, 8))
def test_block_ranges_tile_the_axis(n: int, parts: int) -> None:
    ranges = [block_range(n, parts, i) for i in range(parts)]
    assert ranges[0][0] == 0
    for (s0, c0), (s1, _) in zip(ranges, ranges[1:]):
        assert s0 + c0 == s1
    assert sum(c for _, c in ranges) == n
    counts = [c for _, c in ranges]
    assert max(counts) - min(counts) <= 1
    assert counts == sorted(counts, reverse=True)  # the remainder goes to the first blocks


def test_block_range_values() -> None:
    assert [block_range(10, 3, i) for i in range(3)] == [(0, 4), (4, 3), (7, 3)]


@pytest.mark.parametrize("shape,px,py", [((5, 7), 2, 3), ((4, 9, 11), 3, 2), ((2, 3, 5, 6), 4, 1), ((3, 2, 2), 3, 2)])
def test_block2d_owned_blocks_cover_grid_exactly_once(shape: tuple[int, ...], px: int, py: int) -> None:
    d = Decomposition.block2d(shape, px, py)
    cover = np.zeros(shape, int)
    for rank in range(px * py):
        cover[d.owned(rank).slices] += 1
    assert (cover == 1).all()


def test_block2d_rank_layout_row_major() -> None:
    d = Decomposition.block2d((3, 10, 12), px=3, py=2)
    assert d.coords(4) == (1, 1)  # row 1, column 1
    assert d.rank_of((1, 2)) == 5
    assert d.owned(4) == Hyperslab((0, 5, 4), (3, 5, 4))
    assert d.owned(2) == Hyperslab((0, 0, 8), (3, 5, 4))


def test_block1d_axis_and_file_order() -> None:
    d = Decomposition.block1d((10, 4, 6), 3, axis=0)
    assert [d.owned(r) for r in range(3)] == [Hyperslab((0, 0, 0), (4, 4, 6)), Hyperslab((4, 0, 0), (3, 4, 6)),
                                             Hyperslab((7, 0, 0), (3, 4, 6))]
    d = Decomposition.block1d((10, 4, 6), 4, axis=-1)
    assert d.owned(3) == Hyperslab((0, 0, 5), (10, 4, 1))


def test_more_ranks_than_elements_gives_empty_blocks() -> None:
    d = Decomposition.block1d((2, 5), 4)
    assert [d.owned(r).count[0] for r in range(4)] == [1, 1, 0, 0]
    assert d.owned(3).size == 0


@pytest.mark.parametrize("halo", [0, 1, 2])
def test_halo_local_shape_and_interior(halo: int) -> None:
    shape = (3, 7, 9)
    d = Decomposition.block2d(shape, px=2, py=3, halo=halo)
    glob = np.arange(np.prod(shape)).reshape(shape)
    for rank in range(6):
        owned = d.owned(rank)
        local = np.full(d.local_shape(rank), -1)
        assert local.shape == tuple(c + (2 * halo if i else 0) for i, c in enumerate(owned.count))
        local[d.interior(rank)] = glob[owned.slices]
        view = d.owned_view(rank, local)
        assert np.shares_memory(view, local)  # no copy
        assert np.array_equal(view, glob[owned.slices])
        assert d.owned_view(rank, glob[owned.slices]).shape == owned.count  # halo-less arrays too


def test_wrong_local_shape_is_an_error_naming_both_shapes() -> None:
    d = Decomposition.block2d((4, 6), px=2, py=2, halo=1)
    with pytest.raises(ClimioError, match=r"\(3, 3\).*\(4, 5\) with halo 1 or \(2, 3\)"):
        d.owned_view(0, np.zeros((3, 3)))


def test_process_grid_must_match_comm_size() -> None:
    d = Decomposition.block2d((8, 8), px=2, py=3)
    d.check_comm_size(6)
    with pytest.raises(ClimioError, match="needs 6 ranks but the job has 4"):
        d.check_comm_size(4)


@pytest.mark.parametrize("bad", [dict(axes=(0, 0), parts=(1, 1)), dict(axes=(5,), parts=(2,)),
                                 dict(axes=(0,), parts=(0,)), dict(axes=(0,), parts=(2,), halo=-1)])
def test_invalid_decompositions(bad: dict) -> None:
    with pytest.raises(ClimioError):
        Decomposition(shape=(4, 4), **bad)


@pytest.mark.parametrize("n,ny,nx", [(6, 100, 100), (4, 10, 40), (7, 50, 50), (12, 96, 144)])
def test_process_grid_factors_and_prefers_square_blocks(n: int, ny: int, nx: int) -> None:
    px, py = process_grid(n, ny, nx)
    assert px * py == n
    best = min((abs(np.log((ny / b) / (nx / a))), a) for a, b in
               ((a, n // a) for a in range(1, n + 1) if n % a == 0))
    assert abs(np.log((ny / py) / (nx / px))) == pytest.approx(best[0])


def test_every_rank_of_every_small_grid_round_trips() -> None:
    for py, px in itertools.product(range(1, 5), repeat=2):
        d = Decomposition.block2d((6, 7), px=px, py=py)
        for rank in range(px * py):
            assert d.rank_of(d.coords(rank)) == rank
