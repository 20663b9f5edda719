"""Under mpiexec: every rank writes its piece of a file's Dataset with ``.climio.to_netcdf(at=...)``
(tests/test_xarray_backend.py). Ranks past the dimension's length hold nothing.

    python xr_write_pieces.py IN OUT MODE DIM[,DIM2]
"""

from __future__ import annotations

import sys

import xarray as xr

import climio.xr  # noqa: F401 (registers .climio)
from climio.core import mpi
from climio.core.decomp import Decomposition


def main(source: str, out: str, mode: str, dims: str) -> None:
    comm = mpi.world()
    dataset = xr.open_dataset(source, engine="climio")
    split = dims.split(",")
    shape = tuple(dataset.sizes[d] for d in split)
    piece = Decomposition.block1d(shape, comm.Get_size()).owned(comm.Get_rank()) if len(split) == 1 else \
        Decomposition.block2d(shape, *_grid(comm.Get_size())).owned(comm.Get_rank())
    mine = dataset.isel({d: slice(s, s + c) if c else slice(0, 0) for d, s, c in zip(split, piece.start, piece.count)})
    mine.climio.to_netcdf(out, mode=mode, comm=comm, at={d: s if c else 0 for d, s, c in
                                                         zip(split, piece.start, piece.count)})


def _grid(n: int) -> tuple[int, int]:
    return (n, 1) if n < 4 else (2, n // 2)


if __name__ == "__main__":
    main(*sys.argv[1:])
