"""How subset turns wanted indices into reads (climio.subset.reader): fewer calls, the same values."""

from __future__ import annotations

import numpy as np

from climio.core.decomp import Hyperslab
from climio.subset import reader


def test_gaps_within_a_page_are_read_through() -> None:
    every_third = np.arange(1000, 5000, 3)
    (one,) = reader.runs(every_third, 0.1, element_bytes=4)  # 8 bytes skipped per gap: one read
    assert (one.start, one.count) == (1000, 4000) and np.array_equal(one.start + one.pick, every_third)
    apart = reader.runs(every_third, 0.1, element_bytes=4096)  # two pages per gap: only the slack budget bridges
    assert len(apart) > 1000
    assert len(reader.runs(np.array([5, 6, 7, 3, 4]), 0.1, element_bytes=4)) == 2  # not increasing: a new read


def test_read_gives_the_selected_values_whatever_the_runs() -> None:
    field = np.arange(6 * 50 * 7, dtype="f4").reshape(6, 50, 7)
    calls: list[int] = []

    def read_runs(name: str, slabs: list[Hyperslab]) -> list[np.ndarray]:
        calls.append(len(slabs))
        return [field[s.slices].copy() for s in slabs]

    axes = [np.array([4, 1]), np.concatenate([np.arange(0, 50, 3), [49, 2]]), np.array([6, 0, 3])]
    want = field[np.ix_(*axes)]
    for shape in (None, field.shape):
        got, nbytes = reader.read(read_runs, "v", axes, field.dtype, 0.1, shape)
        assert np.array_equal(got, want) and nbytes >= want.nbytes
    assert calls[1] < calls[0]  # knowing the file's shape, gaps within a page are read through
