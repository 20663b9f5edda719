"""How a model's horizontal grid is split over its ranks (PIO2's decompositions), for reading and writing.

A :class:`GridDecomposition` is one rank's share of the horizontal grid (the dimensions after time and
levels in the file: ``(y, x)``, MPAS's ``(nCells,)``, a cubed sphere's ``(face, y, x)``) and the shape of
that rank's local arrays. Two kinds cover every model:

- :class:`BlockDecomposition`: each rank holds one box of the grid, in a local array that may carry a halo
  (2-D blocks, land-eliminated blocks, cubed-sphere faces). The rearranger intersects boxes, so nothing is
  ever listed per point.
- :class:`PointDecomposition`: each rank holds any points of the grid, in any order (PIO's ``compmap``):
  unstructured cells (MPAS, ICON), round-robin columns, a decomposition read from a PIO map file. Ghost
  points (the halo of an unstructured mesh) follow the owned ones in the local array; they are read, never
  written.

Grid points no rank owns (land blocks, cells no rank computes) are *holes*: writers fill them with the
variable's ``_FillValue`` and readers skip them. A field with ``levels`` has local arrays
``(levels, *local)``; without, ``local``. The helpers below build the common cases from global facts, so
every rank computes its own share without communication.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from climio.core.decomp import Decomposition, Hyperslab, Tiles, cuts, process_grid
from climio.core.rearrange import BoxLayout, GridPieces, Layout, ListedPieces, PieceMap
from climio.errors import ClimioError


@dataclass(frozen=True, eq=False)
class GridDecomposition(ABC):
    """One rank's share of a horizontal grid of shape ``grid`` split over ``nranks`` ranks."""

    grid: tuple[int, ...]
    nranks: int
    rank: int

    @abstractmethod
    def layout(self, levels: int | None, *, ghosts: bool = False) -> Layout:
        """This rank's elements of one record of a field (``levels`` None: no level axis) as a rearranger
        layout over ``(levels, *grid)``; ``ghosts`` adds the halo points (for reading: several ranks may hold
        one point)."""

    @abstractmethod
    def local_shape(self, levels: int | None = None) -> tuple[int, ...]:
        """Shape of the rank's local array of a field, halo or ghost points included."""

    @property
    @abstractmethod
    def owned(self) -> int:
        """How many grid points this rank owns (writes)."""

    @property
    def blocks(self) -> Decomposition | None:
        """The process grid, when this is a plain 2-D block decomposition (``rows``/``cols`` need one)."""
        return None

    def piece_map(self, levels: int | None) -> PieceMap | None:
        """Every rank's :meth:`layout` of a record, where this rank knows them all (None: only the rank itself
        knows its points): plans to a strategy's pieces are then made without asking the other ranks."""
        return None

    def shape(self, levels: int | None) -> tuple[int, ...]:
        """The global shape of one record of a field."""
        return self.grid if levels is None else (levels, *self.grid)

    def owned_view(self, local: np.ndarray, levels: int | None) -> np.ndarray:
        """The owned points of ``local`` (a view): the array itself, but for a block's halo."""
        return local

    def check_comm_size(self, size: int) -> None:
        check_job_size(self.nranks, size)


def check_job_size(nranks: int, size: int) -> None:
    """A decomposition for ``nranks`` ranks on a job of ``size``: every rank knows both, so each gives the same
    verdict, also before building its share (a rank past the decomposition's last has none to build)."""
    if size != nranks:
        raise ClimioError(f"the decomposition is for {nranks} ranks but the job has {size}; run with "
                          f"mpiexec -n {nranks} or build it for {size} ranks", collective=True)


@dataclass(frozen=True, eq=False)
class BlockDecomposition(GridDecomposition):
    """Rank ``r`` holds ``boxes[r]`` (possibly empty), with ``halo`` ghost cells on each side along ``halo_axes``
    of its local array (also at the domain edges, as model arrays have them)."""

    boxes: Sequence[Hyperslab] = ()
    halo: int = 0
    halo_axes: tuple[int, ...] = ()
    process: Decomposition | None = None

    def __post_init__(self) -> None:
        if len(self.boxes) != self.nranks or not 0 <= self.rank < self.nranks:
            raise ClimioError(f"a block decomposition of {self.nranks} ranks needs one box per rank, got "
                              f"{len(self.boxes)} (rank {self.rank})")
        if self.halo < 0:
            raise ClimioError(f"halo width must be >= 0, got {self.halo}")
        if not isinstance(self.boxes, Tiles):  # every rank checks the same boxes: every rank raises alike
            clash = _overlapping(self.boxes)
            if clash is not None:
                a, b = clash
                raise ClimioError(f"the boxes of ranks {a} ({self.boxes[a].start} + {self.boxes[a].count}) and {b} "
                                  f"({self.boxes[b].start} + {self.boxes[b].count}) overlap: each grid point needs "
                                  f"one owner", collective=True)

    @property
    def box(self) -> Hyperslab:
        return self.boxes[self.rank]

    @property
    def owned(self) -> int:
        return self.box.size

    @property
    def blocks(self) -> Decomposition | None:
        return self.process

    def piece_map(self, levels: int | None) -> PieceMap:
        """A grid of blocks found by arithmetic; boxes given one by one, listed."""
        lead = () if levels is None else (levels,)
        shape = (*lead, *self.grid)
        if isinstance(self.boxes, Tiles):
            return GridPieces(shape, (None,) * len(lead) + self.boxes.cuts, (0,) * len(lead) + self.boxes.strides)
        zero = (0,) * len(lead)
        return ListedPieces(shape, {r: ("box", shape, np.array([(*zero, *b.start), (*lead, *b.count)], np.int64))
                                    for r, b in enumerate(self.boxes)}, disjoint=True)  # checked when made

    def local_shape(self, levels: int | None = None) -> tuple[int, ...]:
        shape = [c + (2 * self.halo if a in self.halo_axes else 0) for a, c in enumerate(self.box.count)]
        return tuple(shape) if levels is None else (levels, *shape)

    def interior(self, levels: int | None = None) -> tuple[slice, ...]:
        """Index of the owned box inside the local array."""
        index = tuple(slice(self.halo, self.halo + c) if a in self.halo_axes else slice(None)
                      for a, c in enumerate(self.box.count))
        return index if levels is None else (slice(None), *index)

    def layout(self, levels: int | None, *, ghosts: bool = False) -> BoxLayout:
        extra = () if levels is None else (levels,)
        zero = () if levels is None else (0,)
        slab = Hyperslab((*zero, *self.box.start), (*extra, *self.box.count))
        if not self.halo:
            return Layout.box(self.shape(levels), slab)
        interior = tuple(self.halo if a in self.halo_axes else 0 for a in range(len(self.grid)))
        return BoxLayout(self.shape(levels), slab, self.local_shape(levels), (*zero, *interior))

    def owned_view(self, local: np.ndarray, levels: int | None) -> np.ndarray:
        """The owned box of ``local`` (a view); ``local`` may carry the halo or not."""
        if self.halo and local.shape == self.local_shape(levels):
            return local[self.interior(levels)]
        return local


@dataclass(frozen=True, eq=False)
class PointDecomposition(GridDecomposition):
    """The rank holds the grid points at flat C-order ``offsets`` (-1: a local element that is no grid point),
    then the ``ghost_offsets`` (its halo), in that order in its local arrays."""

    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    ghost_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __post_init__(self) -> None:
        size = math.prod(self.grid)
        for name in ("offsets", "ghost_offsets"):
            values = np.asarray(getattr(self, name), dtype=np.int64).ravel()
            bad = values[(values < -1) | (values >= size)]
            if bad.size:
                raise ClimioError(f"decomposition offset {int(bad[0])} on rank {self.rank} lies outside the grid "
                                  f"{self.grid} ({size} points; 0-based, -1 for none)")
            object.__setattr__(self, name, values)

    @property
    def owned(self) -> int:
        return int(np.count_nonzero(self.offsets >= 0))

    def local_shape(self, levels: int | None = None) -> tuple[int, ...]:
        n = (self.offsets.size + self.ghost_offsets.size,)
        return n if levels is None else (levels, *n)

    def layout(self, levels: int | None, *, ghosts: bool = False) -> Layout:
        tail = self.ghost_offsets if ghosts else np.full(self.ghost_offsets.size, -1, np.int64)
        flat = np.concatenate([self.offsets, tail])
        if levels is not None:
            points = math.prod(self.grid)
            flat = np.where(flat >= 0, np.arange(levels, dtype=np.int64)[:, None] * points + flat, -1)
        return Layout.offsets(self.shape(levels), flat)


def _overlapping(boxes: Sequence[Hyperslab]) -> tuple[int, int] | None:
    """The first two ranks whose (non-empty) boxes share a point, if any: a sweep along the first axis, so that
    each box is tested against those that start within it (a process row's, for blocks), not against all."""
    ranks = np.array([r for r, b in enumerate(boxes) if b.size], dtype=np.int64)
    if ranks.size < 2:
        return None
    lo = np.array([boxes[r].start for r in ranks], dtype=np.int64)
    hi = lo + np.array([boxes[r].count for r in ranks], dtype=np.int64)
    order = np.lexsort((ranks, lo[:, 0]))
    ranks, lo, hi = ranks[order], lo[order], hi[order]
    later = np.searchsorted(lo[:, 0], hi[:, 0], side="left") - np.arange(1, ranks.size + 1)  # start before its end
    later = np.maximum(later, 0)
    i = np.repeat(np.arange(ranks.size), later)
    j = i + 1 + (np.arange(i.size) - np.repeat(np.cumsum(later) - later, later))
    meet = np.all(np.minimum(hi[i], hi[j]) > np.maximum(lo[i], lo[j]), axis=1)
    if not meet.any():
        return None
    pairs = np.sort(np.stack([ranks[i[meet]], ranks[j[meet]]], axis=1), axis=1)
    first = np.lexsort((pairs[:, 1], pairs[:, 0]))[0]
    return int(pairs[first, 0]), int(pairs[first, 1])


# ------------------------------------------------------------------------------------------------- helpers


def blocks(grid: Sequence[int], px: int, py: int, rank: int, *, halo: int = 0) -> BlockDecomposition:
    """A ``px x py`` process grid over a ``(y, x)`` grid (``px`` columns along x), ranks row-major."""
    process = Decomposition.block2d(tuple(grid), px, py, halo=halo)
    boxes = Tiles(process.shape, (cuts(process.shape[0], py), cuts(process.shape[1], px)))
    return BlockDecomposition(tuple(grid), process.nranks, rank, boxes, halo, (0, 1), process)


def from_blocks(process: Decomposition, rank: int) -> BlockDecomposition:
    """The grid decomposition of a 2-D :class:`~climio.core.decomp.Decomposition` (what ``ModelOutput`` took
    before any decomposition could be described)."""
    if len(process.shape) != 2 or process.axes != (0, 1):
        raise ClimioError(f"a model grid decomposition needs a 2-D block decomposition of the (y, x) grid, got shape "
                          f"{process.shape} split along {process.axes}", collective=True)
    return blocks(process.shape, process.parts[1], process.parts[0], rank, halo=process.halo)


def land_blocks(ocean: np.ndarray, px: int, py: int, rank: int, *, halo: int = 0) -> BlockDecomposition:
    """Blocks of a ``px x py`` grid over the ``(y, x)`` mask ``ocean``, with the blocks that hold no ocean point
    dropped (ocean models' land elimination): the remaining blocks go to ranks in row-major order, so the job
    needs as many ranks as there are such blocks (:func:`land_block_count`). Dropped blocks are holes."""
    ocean = np.asarray(ocean, dtype=bool)
    if ocean.ndim != 2:
        raise ClimioError(f"land elimination needs a 2-D (y, x) ocean mask, got shape {ocean.shape}")
    process = Decomposition.block2d(ocean.shape, px, py)
    kept = tuple(box for box in (process.owned(r) for r in range(process.nranks)) if ocean[box.slices].any())
    if not kept:
        raise ClimioError("land elimination: the ocean mask has no ocean point")
    if not 0 <= rank < len(kept):
        raise ClimioError(f"land elimination leaves {len(kept)} ocean blocks of the {px}x{py} grid; rank {rank} "
                          f"has none: run with {len(kept)} ranks", collective=True)
    return BlockDecomposition(ocean.shape, len(kept), rank, kept, halo, (0, 1))


def land_block_count(ocean: np.ndarray, px: int, py: int) -> int:
    """How many blocks of a ``px x py`` grid hold an ocean point: the ranks :func:`land_blocks` needs."""
    process = Decomposition.block2d(np.shape(ocean), px, py)
    return sum(bool(np.asarray(ocean)[process.owned(r).slices].any()) for r in range(process.nranks))


def round_robin(grid: Sequence[int], nranks: int, rank: int) -> PointDecomposition:
    """Columns dealt out in turn: rank ``r`` owns flat points ``r, r + nranks, ...`` (load balance over a
    day-night or land-sea contrast)."""
    points = math.prod(grid)
    return PointDecomposition(tuple(grid), nranks, rank, np.arange(rank, points, nranks, dtype=np.int64))


def cells(owner: np.ndarray, rank: int, *, nranks: int | None = None, neighbours: np.ndarray | None = None,
          layers: int = 0) -> PointDecomposition:
    """An unstructured mesh's cells by owner (MPAS's ``graph.info.part.N``, ICON's partition): rank ``rank``
    owns the cells with ``owner == rank``, in the mesh's cell order. With ``neighbours`` (0-based
    ``cellsOnCell``, -1 padding) the ``layers`` rings of cells around them are its ghost cells, ring by ring,
    each in cell order."""
    owner = np.asarray(owner, dtype=np.int64).ravel()
    nranks = int(owner.max()) + 1 if nranks is None and owner.size else (nranks or 1)
    if owner.size and (owner.min() < 0 or owner.max() >= nranks):
        raise ClimioError(f"cell owners must be 0..{nranks - 1}, got {int(owner.min())}..{int(owner.max())}")
    mine = np.flatnonzero(owner == rank)
    ghosts: list[np.ndarray] = []
    if layers and neighbours is not None:
        table = np.asarray(neighbours, dtype=np.int64)
        known = np.zeros(owner.size, dtype=bool)
        known[mine] = True
        ring = mine
        for _ in range(layers):
            around = table[ring].ravel()
            around = np.unique(around[around >= 0])
            ring = around[~known[around]]
            known[ring] = True
            ghosts.append(ring)
    extra = np.concatenate(ghosts) if ghosts else np.zeros(0, np.int64)
    return PointDecomposition((owner.size,), nranks, rank, mine, extra)


def read_partition(path: str) -> np.ndarray:
    """A METIS partition file (MPAS's ``graph.info.part.N``): one owner rank per line, per cell."""
    try:
        owner = np.loadtxt(path, dtype=np.int64, ndmin=1)
    except (OSError, ValueError) as err:
        raise ClimioError(f"{path}: not a partition file (one integer rank per line): {err}") from err
    if owner.ndim != 1 or (owner.size and owner.min() < 0):
        raise ClimioError(f"{path}: a partition file holds one non-negative rank per line")
    return owner


def cubed_sphere(n: int, nranks: int, rank: int, *, halo: int = 0) -> BlockDecomposition:
    """A cubed sphere's ``(6, n, n)`` grid: with ``nranks`` dividing 6, each rank holds ``6 / nranks`` whole
    faces; with ``nranks = 6 k``, each face is split over ``k`` ranks in blocks as square as possible (FV3's
    layout), faces in turn. The halo surrounds each rank's faces along y and x."""
    if nranks < 1 or (6 % nranks and nranks % 6):
        raise ClimioError(f"a cubed sphere splits over a divisor or a multiple of 6 ranks, not {nranks}",
                          collective=True)
    grid = (6, n, n)
    if nranks <= 6:  # whole faces
        boxes = Tiles(grid, (cuts(6, nranks), None, None))
    else:  # each face's blocks, faces in turn
        fx, fy = process_grid(nranks // 6, n, n)
        boxes = Tiles(grid, (cuts(6, 6), cuts(n, fy), cuts(n, fx)))
    return BlockDecomposition(grid, nranks, rank, boxes, halo, (1, 2))


def from_offsets(grid: Sequence[int], offsets: Sequence[int] | np.ndarray, nranks: int, rank: int, *,
                 ghosts: Sequence[int] | np.ndarray = ()) -> PointDecomposition:
    """Each rank's own 0-based flat offsets into the grid (-1: a local element that is no grid point)."""
    return PointDecomposition(tuple(int(g) for g in grid), nranks, rank, np.asarray(offsets, np.int64),
                              np.asarray(ghosts, np.int64))


def from_compmap(grid: Sequence[int], compmap: Sequence[int] | np.ndarray, nranks: int,
                 rank: int) -> PointDecomposition:
    """PIO's ``compmap``: 1-based flat offsets into the grid, 0 for a hole."""
    return from_offsets(grid, np.asarray(compmap, np.int64) - 1, nranks, rank)
