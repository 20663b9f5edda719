"""A lat/lon box on a curvilinear grid: the smallest index rectangle that holds every cell in the box.

A cell is in the box when its centre is (inclusive, as on every other grid) or, with ``--touching``, when its
bounds share some area with the box (:meth:`Box.touches`). Each rank tests a block of the grid's first
dimension (rows; faces on a cubed sphere); the ranks then agree on which indices of each dimension hold a kept
cell. The rectangle spans them: from the first to the last kept row and column, or, along a grid that closes
on itself east-west (a global ocean grid), the shortest arc of columns around the seam; on a cubed sphere the
faces that hold kept cells and one rectangle of rows and columns for all of them (its staggered corner grid one
larger). Cells of the rectangle outside the box are the ``inside`` mask's False entries, for ``--mask``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from climio.core.decomp import block_range
from climio.errors import ClimioError
from climio.subset.grids import Curvilinear
from climio.subset.options import Area

if TYPE_CHECKING:
    from mpi4py import MPI

ReadRows = Callable[[str, np.ndarray], np.ndarray]  # (variable, indices of its first dimension) -> its rows


@dataclass(frozen=True)
class Rectangle:
    """The kept indices of each grid dimension (and staggered corner dimension), in output order, and which
    cells of the rectangle are in the box (grid dimensions' order; None unless asked for)."""

    picks: dict[str, np.ndarray]
    inside: np.ndarray | None


def select(grid: Curvilinear, box: Area, touching: bool, read_rows: ReadRows, sizes: dict[str, int],
           comm: MPI.Comm, where: str, want_inside: bool) -> Rectangle:
    """The rectangle of ``grid`` that ``box`` selects (collective). ``where`` names the file in errors."""
    from mpi4py import MPI

    first = sizes[grid.dims[0]]
    lo, n = block_range(first, comm.Get_size(), comm.Get_rank())
    rows = np.arange(lo, lo + n, dtype=np.int64)
    lat, lon = _degrees(grid, read_rows(grid.lat, rows)), _degrees(grid, read_rows(grid.lon, rows))
    with np.errstate(invalid="ignore"):
        inside = box.contains(lat, lon)
        if touching:
            inside |= box.touches(*corners(grid, read_rows, rows, where))
    kept_rows = np.concatenate(comm.allgather(rows[inside.reshape(n, inside[0].size if n else 0).any(axis=1)]))
    if kept_rows.size == 0:
        how = "has any part in" if touching else "has its centre in"
        raise ClimioError(f"{box.kind} selects nothing: no cell of {where} ({grid.lat}, {grid.lon}) {how} "
                          f"{box.description}", collective=True)
    picks: dict[str, np.ndarray] = {}
    for axis, dim in enumerate(grid.dims[1:], start=1):
        others = tuple(a for a in range(inside.ndim) if a != axis)
        local = inside.any(axis=others).astype(np.uint8) if n else np.zeros(sizes[dim], dtype=np.uint8)
        kept = np.empty_like(local)
        comm.Allreduce(local, kept, op=MPI.MAX)
        picks[dim] = np.flatnonzero(kept)
    if len(grid.dims) == 2:
        y, x = grid.dims
        picks[y] = np.arange(kept_rows.min(), kept_rows.max() + 1)
        closed = _closes_east_west(lat, lon, comm)
        picks[x] = _arc(picks[x], sizes[x]) if closed else np.arange(picks[x].min(), picks[x].max() + 1)
    else:  # faces: those that hold kept cells; rows and columns: one rectangle for all of them
        picks[grid.dims[0]] = np.unique(kept_rows)
        for dim in grid.dims[1:]:
            picks[dim] = np.arange(picks[dim].min(), picks[dim].max() + 1)
        for corner, dim in zip(grid.corner_dims, grid.dims[1:]):
            picks[corner] = np.arange(picks[dim][0], picks[dim][-1] + 2)
    if not want_inside:
        return Rectangle(picks, None)
    mine = picks[grid.dims[0]]
    mine = mine[(mine >= lo) & (mine < lo + n)] - lo
    piece = inside[np.ix_(mine, *(picks[d] for d in grid.dims[1:]))]
    return Rectangle(picks, np.concatenate(comm.allgather(piece), axis=0))


def no_bounds(where: str, what: str) -> ClimioError:
    """The refusal of ``--touching`` where a file gives its cells no bounds."""
    return ClimioError(f"--touching: {where} gives no cell bounds for {what} (no 'bounds' attribute naming corner "
                       f"variables); select by cell centre (leave out --touching)", collective=True)


def _degrees(grid: Curvilinear, values: np.ndarray) -> np.ndarray:
    values = values.astype(np.float64)
    return np.degrees(values) if grid.radians else values


def corners(grid: Curvilinear, read_rows: ReadRows, rows: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Each cell's corners, ``(*block, nv)``: CF bounds as stored, or from a staggered corner grid."""
    if grid.lat_bounds is None or grid.lon_bounds is None:
        raise no_bounds(where, f"{grid.lat}/{grid.lon}")
    lat, lon = (_degrees(grid, read_rows(name, rows)) for name in (grid.lat_bounds, grid.lon_bounds))
    if not grid.corner_dims:
        return lat, lon

    def around(c: np.ndarray) -> np.ndarray:  # cell (j, i) has corners (j, i), (j, i+1), (j+1, i+1), (j+1, i)
        return np.stack([c[:, :-1, :-1], c[:, :-1, 1:], c[:, 1:, 1:], c[:, 1:, :-1]], axis=-1)

    return around(lat), around(lon)


def _closes_east_west(lat: np.ndarray, lon: np.ndarray, comm: MPI.Comm) -> bool:
    """Whether the grid's last column is next to its first along most rows, as on a global ocean grid (the
    distance between them at most 1.5 times that between the first two columns; collective)."""
    def apart(a: int, b: int) -> np.ndarray:
        la, lb = np.radians(lat[:, a]), np.radians(lat[:, b])
        dl = np.radians(lon[:, a] - lon[:, b])
        cos = np.sin(la) * np.sin(lb) + np.cos(la) * np.cos(lb) * np.cos(dl)
        return np.arccos(np.clip(cos, -1.0, 1.0))

    votes = [0, 0]
    if lat.shape[0] and lat.shape[1] > 2:
        seam, step = apart(0, -1), apart(0, 1)
        with np.errstate(invalid="ignore"):
            known = np.isfinite(seam) & np.isfinite(step)
            votes = [int(np.count_nonzero(known & (seam <= 1.5 * step))), int(np.count_nonzero(known))]
    closing, known = comm.allreduce(np.array(votes))
    return bool(known) and 2 * closing > known


def _arc(kept: np.ndarray, size: int) -> np.ndarray:
    """The shortest run of a periodic dimension's indices, possibly across its seam, that covers ``kept``
    (sorted): everything but the longest gap between kept indices."""
    if kept.size == size:
        return kept
    gaps = np.diff(np.append(kept, kept[0] + size))
    widest = int(np.argmax(gaps))
    start, end = kept[(widest + 1) % kept.size], kept[widest]
    return (start + np.arange((end - start) % size + 1)) % size
