"""What is kept of each dimension: index lists for ordinary dimensions, distributed masks for mesh elements.

A mesh element dimension (seed 001 III-E) is block-distributed: each rank holds
the mask bits of its block. Kept elements get new indices in their original
order by an exclusive scan of the ranks' kept counts; other ranks ask the owners
for new indices (topology renumbering) with one all-to-all. The list of kept
input indices is then packed and spread evenly over the ranks, so that each rank
reads (and writes) an equal share of the subset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from climio.core.decomp import block_range
from climio.subset import distribute

if TYPE_CHECKING:
    from mpi4py import MPI


class Picked:
    """A dimension whose kept input indices (in output order) every rank knows."""

    def __init__(self, dim: str, size: int, indices: np.ndarray | None = None) -> None:
        self.dim = dim
        self.size = size
        self.indices = np.arange(size, dtype=np.int64) if indices is None else np.asarray(indices, dtype=np.int64)

    @property
    def count(self) -> int:
        return len(self.indices)

    @property
    def whole(self) -> bool:
        return self.count == self.size and bool(np.all(self.indices == np.arange(self.size)))

    def share(self, comm: MPI.Comm) -> tuple[int, np.ndarray]:
        """This rank's even block of the output: its first output position and the input indices."""
        start, count = block_range(self.count, comm.Get_size(), comm.Get_rank())
        return start, self.indices[start:start + count]


class Kept:
    """A mesh element dimension: a mask over this rank's block of the input elements."""

    def __init__(self, dim: str, size: int, comm: MPI.Comm) -> None:
        self.dim = dim
        self.size = size
        self.comm = comm
        self.lo, self.nlocal = block_range(size, comm.Get_size(), comm.Get_rank())
        self.mask = np.zeros(self.nlocal, dtype=bool)
        self.offset = 0
        self.count = 0
        self._new: np.ndarray | None = None
        self._share: tuple[int, np.ndarray] | None = None

    def mark(self, indices: np.ndarray) -> None:
        """Keep the given global elements, wherever they live (collective)."""
        self.mask |= distribute.requested(self.comm, indices, self.size)

    def number(self) -> None:
        """Give kept elements their new indices: exclusive scan of the kept counts (collective)."""
        from mpi4py import MPI

        mine = int(self.mask.sum())
        self.offset = int(self.comm.exscan(mine, op=MPI.SUM) or 0)
        self.count = int(self.comm.allreduce(mine, op=MPI.SUM))
        self._new = np.where(self.mask, self.offset + np.cumsum(self.mask) - 1, -1).astype(np.int64)

    def local_kept(self) -> np.ndarray:
        """Global input indices of the kept elements in this rank's block, ascending."""
        return self.lo + np.flatnonzero(self.mask)

    def lookup(self, indices: np.ndarray) -> np.ndarray:
        """New index of each global input index, -1 where the element is not kept (collective)."""
        assert self._new is not None, "number() first"
        new = self._new
        return distribute.ask(self.comm, indices, self.size, new)

    def share(self, comm: MPI.Comm | None = None) -> tuple[int, np.ndarray]:
        """This rank's even block of the output and the input indices it holds (collective, once)."""
        if self._share is None:
            kept = distribute.redistribute(self.comm, self.local_kept(), self.offset, self.count)
            self._share = (block_range(self.count, self.comm.Get_size(), self.comm.Get_rank())[0], kept)
        return self._share


Selection = Picked | Kept
