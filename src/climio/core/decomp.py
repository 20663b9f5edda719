"""Who owns which hyperslab: block decompositions of a global grid, with halos.

Pure arithmetic, no MPI calls, so it can be tested exhaustively. A decomposition
splits some axes of a global array (in the file's dimension order) into blocks;
ranks are numbered row-major over the split axes, the last one fastest, so for a
2-D ``py x px`` process grid over ``(..., y, x)`` rank ``r`` sits at row
``r // px`` and column ``r % px``. Uneven sizes give the first ``n % parts``
blocks one extra element.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from climio.errors import ClimioError


@dataclass(frozen=True)
class Hyperslab:
    """A box of a variable: ``start`` and ``count`` per dimension, in file order."""

    start: tuple[int, ...]
    count: tuple[int, ...]

    @property
    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(s, s + c) for s, c in zip(self.start, self.count))

    @property
    def size(self) -> int:
        return math.prod(self.count)

    @classmethod
    def whole(cls, shape: tuple[int, ...]) -> Hyperslab:
        return cls(tuple(0 for _ in shape), tuple(shape))

    @classmethod
    def empty(cls, ndim: int) -> Hyperslab:
        return cls((0,) * ndim, (0,) * ndim)


def block_range(n: int, parts: int, index: int) -> tuple[int, int]:
    """``(start, count)`` of block ``index`` when ``n`` elements are split into ``parts``."""
    base, extra = divmod(n, parts)
    start = index * base + min(index, extra)
    return start, base + (1 if index < extra else 0)


def cuts(n: int, parts: int) -> tuple[int, ...]:
    """Where ``n`` elements split into ``parts`` blocks start, and ``n``: block ``k`` is ``cuts[k]..cuts[k + 1]``."""
    return tuple(block_range(n, parts, k)[0] for k in range(parts)) + (n,)


@dataclass(frozen=True)
class Tiles(Sequence[Hyperslab]):
    """Boxes of a grid of cuts, one a rank: along axis ``a`` the blocks lie between consecutive ``cuts[a]``
    (None: the axis whole), and rank ``r`` holds the block at ``r``'s row-major place among them (a process
    grid's blocks, a cubed sphere's). Worked out when asked: a job of any size keeps a few numbers a process
    row, not a box a rank."""

    shape: tuple[int, ...]
    cuts: tuple[tuple[int, ...] | None, ...]

    @property
    def parts(self) -> tuple[int, ...]:
        return tuple(1 if c is None else len(c) - 1 for c in self.cuts)

    @property
    def strides(self) -> tuple[int, ...]:
        """How far apart the ranks of neighbouring blocks along each axis are (0 where the axis is whole)."""
        parts = self.parts
        return tuple(0 if c is None else math.prod(parts[a + 1:]) for a, c in enumerate(self.cuts))

    def __len__(self) -> int:
        return math.prod(self.parts)

    def __getitem__(self, rank: int) -> Hyperslab:  # type: ignore[override]
        if not -len(self) <= rank < len(self):
            raise IndexError(f"rank {rank} outside {len(self)} blocks")
        cell = np.unravel_index(rank % len(self), self.parts)
        start = tuple(0 if c is None else c[k] for c, k in zip(self.cuts, cell))
        end = tuple(n if c is None else c[k + 1] for c, k, n in zip(self.cuts, cell, self.shape))
        return Hyperslab(tuple(int(a) for a in start), tuple(int(b - a) for a, b in zip(start, end)))


def process_grid(nranks: int, ny: int, nx: int) -> tuple[int, int]:
    """A ``(px, py)`` grid of ``nranks`` whose blocks are as square as possible."""
    best: tuple[float, int, int] | None = None
    for py in range(1, nranks + 1):
        if nranks % py:
            continue
        px = nranks // py
        aspect = abs(math.log((ny / py) / (nx / px))) if ny and nx else 0.0
        if best is None or aspect < best[0]:
            best = (aspect, px, py)
    assert best is not None
    return best[1], best[2]


@dataclass(frozen=True)
class Decomposition:
    """Block decomposition of ``shape`` over ``parts[i]`` blocks along ``axes[i]``.

    ``halo`` ghost cells surround each local block along every split axis (also
    at the domain edges, as model arrays usually have them). Axes not split are
    owned whole by every rank.
    """

    shape: tuple[int, ...]
    axes: tuple[int, ...]
    parts: tuple[int, ...]
    halo: int = 0

    def __post_init__(self) -> None:
        ndim = len(self.shape)
        axes = tuple(a % ndim if -ndim <= a < ndim else a for a in self.axes)
        if any(not 0 <= a < ndim for a in axes) or len(set(axes)) != len(axes):
            raise ClimioError(f"decomposition axes {self.axes} do not fit a {ndim}-d array")
        if len(axes) != len(self.parts) or any(p < 1 for p in self.parts):
            raise ClimioError(f"decomposition needs one positive block count per axis, got {self.parts}")
        if self.halo < 0:
            raise ClimioError(f"halo width must be >= 0, got {self.halo}")
        object.__setattr__(self, "axes", axes)
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))

    @classmethod
    def block1d(cls, shape: tuple[int, ...], nprocs: int, axis: int = 0, halo: int = 0) -> Decomposition:
        """Split one axis (by default the first, e.g. time or rows) into ``nprocs`` blocks."""
        return cls(tuple(shape), (axis,), (nprocs,), halo)

    @classmethod
    def block2d(cls, shape: tuple[int, ...], px: int, py: int,
                y_axis: int = -2, x_axis: int = -1, halo: int = 0) -> Decomposition:
        """A ``px x py`` process grid over the ``(y, x)`` axes (``px`` columns along x)."""
        return cls(tuple(shape), (y_axis, x_axis), (py, px), halo)

    @property
    def nranks(self) -> int:
        return math.prod(self.parts)

    def check_comm_size(self, size: int) -> None:
        if size != self.nranks:
            grid = " x ".join(str(p) for p in reversed(self.parts))
            raise ClimioError(f"process grid {grid} needs {self.nranks} ranks but the job has {size}; "
                              f"run with mpiexec -n {self.nranks} or choose a grid of {size} ranks",
                              collective=True)

    def coords(self, rank: int) -> tuple[int, ...]:
        """The block index along each split axis (row-major, last axis fastest)."""
        if not 0 <= rank < self.nranks:
            raise ClimioError(f"rank {rank} outside a decomposition of {self.nranks} ranks")
        return tuple(int(c) for c in np.unravel_index(rank, self.parts))

    def rank_of(self, coords: tuple[int, ...]) -> int:
        return int(np.ravel_multi_index(coords, self.parts))

    def owned(self, rank: int) -> Hyperslab:
        """Rank ``rank``'s owned block (no halo) as start/count in file dimension order."""
        start, count = [0] * len(self.shape), list(self.shape)
        for axis, parts, index in zip(self.axes, self.parts, self.coords(rank)):
            start[axis], count[axis] = block_range(self.shape[axis], parts, index)
        return Hyperslab(tuple(start), tuple(count))

    def local_shape(self, rank: int, with_halo: bool = True) -> tuple[int, ...]:
        """Shape of the rank's local array: owned block plus ``halo`` on both sides of split axes."""
        shape = list(self.owned(rank).count)
        if with_halo:
            for axis in self.axes:
                shape[axis] += 2 * self.halo
        return tuple(shape)

    def interior(self, rank: int) -> tuple[slice, ...]:
        """Index of the owned block inside the rank's halo'd local array."""
        count = self.owned(rank).count
        index = [slice(None)] * len(self.shape)
        for axis in self.axes:
            index[axis] = slice(self.halo, self.halo + count[axis])
        return tuple(index)

    def owned_view(self, rank: int, local: np.ndarray) -> np.ndarray:
        """The owned part of ``local`` (a view, no copy), after checking its shape.

        ``local`` may carry the halo or not; any other shape is an error naming both.
        """
        with_halo, without = self.local_shape(rank, True), self.local_shape(rank, False)
        if local.shape == with_halo:
            return local[self.interior(rank)]
        if local.shape == without:
            return local
        raise ClimioError(f"local array of shape {local.shape} on rank {rank} does not match its block: "
                          f"expected {with_halo} with halo {self.halo} or {without} without")
