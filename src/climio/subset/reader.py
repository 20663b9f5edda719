"""Turn lists of wanted indices into as few reads as possible without reading much more than needed.

Along each axis the wanted input indices (in output order) are cut into increasing
runs; the smallest gaps between runs are then bridged while the elements read in
excess stay within ``slack`` (a fraction of the elements wanted): one larger read
is cheaper than two small ones, but a gap is read and thrown away. The reads of a
variable are the product of its axes' runs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from climio.core.decomp import Hyperslab

MAX_READS = 20000  # per variable piece and rank: beyond this, inner axes are read whole
PAGE_BYTES = 4096  # gaps this small are read through: the file system reads whole pages


@dataclass(frozen=True)
class Run:
    """One read along one axis: input ``start``/``count``, and which of its elements go to output ``at..``."""

    start: int
    count: int
    at: int
    pick: np.ndarray | None  # positions within the read; None = all of them, in order

    @property
    def size(self) -> int:
        return self.count if self.pick is None else len(self.pick)


def runs(indices: np.ndarray, slack: float, element_bytes: int = 0) -> list[Run]:
    """Group ``indices`` (output order) into reads, bridging gaps within the ``slack`` budget; a gap of at most
    ``PAGE_BYTES`` (``element_bytes`` per skipped index) is always bridged: the disk reads that page anyway, and
    one read instead of two saves a call (every 3rd index of a 1-D variable: one read, not thousands)."""
    if indices.size == 0:
        return []
    step = np.diff(indices)
    breaks = np.flatnonzero(step <= 0)  # not increasing: a new read must start
    gaps = np.flatnonzero(step > 1)
    small = gaps[(step[gaps] - 1) * element_bytes <= PAGE_BYTES] if element_bytes else gaps[:0]
    gaps = np.setdiff1d(gaps, small)
    if math.isinf(slack):
        bridged = gaps
    else:
        budget = slack * indices.size
        order = np.argsort(step[gaps] - 1, kind="stable")
        affordable = np.searchsorted(np.cumsum(step[gaps][order] - 1), budget, side="right")
        bridged = gaps[order[:affordable]]
    cuts = np.union1d(breaks, np.setdiff1d(gaps, bridged)) + 1
    out = []
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [indices.size]])):
        part = indices[lo:hi]
        start, count = int(part[0]), int(part[-1] - part[0] + 1)
        pick = None if count == hi - lo else (part - start).astype(np.intp)
        out.append(Run(start, count, int(lo), pick))
    return out


def plan(axes: list[np.ndarray], slack: float, element_bytes: list[int] | None = None) -> list[list[Run]]:
    """Runs per axis; inner axes are merged whole when the product of runs would be too many reads.
    ``element_bytes[k]``: the bytes in the file between indices k and k + 1 along axis k."""
    element_bytes = element_bytes or [0] * len(axes)
    per_axis = [runs(a, slack, n) for a, n in zip(axes, element_bytes)]
    for k in sorted(range(len(axes)), key=lambda k: -len(per_axis[k])):
        if math.prod(len(r) for r in per_axis) <= MAX_READS:
            break
        per_axis[k] = runs(axes[k], math.inf)
    return per_axis


ReadRuns = Callable[[str, list[Hyperslab]], list[np.ndarray]]


def _reads(axes: list[np.ndarray], dtype: np.dtype, slack: float,
           shape: tuple[int, ...] | None) -> list[tuple[Run, ...]]:
    """The reads (one run per axis each) that cover the outer product ``axes`` selects."""
    if any(len(a) == 0 for a in axes):
        return []
    spans = [math.prod(shape[k + 1:]) * np.dtype(dtype).itemsize for k in range(len(axes))] if shape else None
    return list(itertools.product(*plan(axes, slack, spans)))


def _slab(combo: tuple[Run, ...]) -> Hyperslab:
    return Hyperslab(tuple(r.start for r in combo), tuple(r.count for r in combo))


def _place(out: np.ndarray, combo: tuple[Run, ...], data: np.ndarray) -> None:
    """Put one read's wanted elements where they belong in ``out``."""
    for axis, r in enumerate(combo):
        if r.pick is not None:
            data = np.take(data, r.pick, axis=axis)
    out[tuple(slice(r.at, r.at + r.size) for r in combo)] = data


def read(read_runs: ReadRuns, name: str, axes: list[np.ndarray], dtype: np.dtype, slack: float,
         shape: tuple[int, ...] | None = None) -> tuple[np.ndarray, int]:
    """Read the elements ``axes`` select (outer product) into one array; also return the bytes read.

    ``read_runs(name, slabs)`` is the collective multi-hyperslab read of the store
    (every rank calls it once, with its own list, possibly empty); ``shape``, the
    variable's in the file, lets gaps within a page be bridged.
    """
    out = np.empty(tuple(len(a) for a in axes), dtype=dtype)
    combos = _reads(axes, dtype, slack, shape)
    slabs = [_slab(combo) for combo in combos]
    nbytes = sum(s.size for s in slabs) * np.dtype(dtype).itemsize
    if len(combos) == 1 and all(r.pick is None for r in combos[0]):
        return read_runs(name, slabs)[0], nbytes  # one read of exactly what is wanted: no copy
    for combo, data in zip(combos, read_runs(name, slabs)):
        _place(out, combo, data)
    return out, nbytes


@dataclass(frozen=True)
class CellGroup:
    """Cells read together: the outer product ``axes`` along the grid's dimensions covers them; ``members`` are
    their positions in the list of cells asked for, ``place`` each one's flat position in that product."""

    axes: tuple[np.ndarray, ...]
    members: np.ndarray
    place: np.ndarray

    @property
    def size(self) -> int:
        return math.prod(len(a) for a in self.axes)


def group_cells(cells: np.ndarray, chunks: tuple[int, ...] | None) -> list[CellGroup]:
    """How to read single cells of a grid (``cells``: (n, h) indices along its h dimensions; rows with a
    negative index are left out).

    In contiguous storage, cells that share all but their last index (a latitude row) are read together, their
    last indices as runs. In chunked storage the library reads whole chunks whatever is asked of them, so the
    cells of one chunk (``chunks``: its sizes along the grid's dimensions) are read as their bounding box: one
    call in place of one per cell, for the same bytes from disk."""
    valid = np.flatnonzero(np.all(cells >= 0, axis=1))
    if valid.size == 0:
        return []
    h = cells.shape[1]
    keys = cells[valid] // np.asarray(chunks, dtype=np.int64) if chunks is not None else cells[valid, :-1]
    _, which = np.unique(keys, axis=0, return_inverse=True)
    which = np.asarray(which).ravel()
    groups = []
    for g in range(int(which.max()) + 1):
        members = valid[which == g]
        mine = cells[members]
        if chunks is not None:
            low = mine.min(axis=0)
            axes = tuple(np.arange(low[d], mine[:, d].max() + 1, dtype=np.int64) for d in range(h))
            place = np.ravel_multi_index(tuple((mine - low).T), tuple(len(a) for a in axes))
        else:
            last, place = np.unique(mine[:, -1], return_inverse=True)
            axes = (*(np.array([i], dtype=np.int64) for i in mine[0, :-1]), last.astype(np.int64))
        groups.append(CellGroup(axes, members, np.asarray(place).ravel()))
    return groups


GATHER_ELEMENTS = 2**22  # elements gathered at once, at most: each costs its offset (8 bytes) besides itself
Gather = Callable[[str, tuple[np.ndarray, ...]], np.ndarray]


def read_cells(read_runs: ReadRuns, gather: Gather | None, name: str, axes: list[np.ndarray], at: int,
               cells: np.ndarray, chunks: tuple[int, ...] | None, dtype: np.dtype,
               slack: float) -> tuple[np.ndarray, int]:
    """Read single cells of a grid, each with the outer product ``axes`` of the variable's other dimensions:
    the series at stations.

    The grid's dimensions sit together at position ``at`` of the variable; ``cells`` (n, h) are the cells' indices
    along them, those with a negative index left out: their places in the result (``(*axes[:at] lengths, n,
    *axes[at:] lengths)``) are left for the caller to fill. ``gather``, given where the file reads scattered
    elements (a classic file), takes them one by one, no more than :data:`GATHER_ELEMENTS` at once; otherwise
    the cells are read in the groups :func:`group_cells` makes of them (``chunks``: the storage's along the
    grid's dimensions), the other axes as runs within ``slack``. Either way ``read_runs`` is called once
    (collective)."""
    before, after = [len(a) for a in axes[:at]], [len(a) for a in axes[at:]]
    n, h = cells.shape
    out = np.empty((*before, n, *after), dtype=dtype)
    valid = np.flatnonzero(np.all(cells >= 0, axis=1))
    if gather is None or not valid.size or valid.size * math.prod(before + after) > GATHER_ELEMENTS:
        return _read_groups(read_runs, name, axes, at, group_cells(cells, chunks), out, dtype, slack)
    ndim = len(before) + 1 + len(after)

    def spread(values: np.ndarray, axis: int) -> np.ndarray:
        return values.reshape([-1 if k == axis else 1 for k in range(ndim)])

    index = (*(spread(a, k) for k, a in enumerate(axes[:at])), *(spread(cells[valid, d], at) for d in range(h)),
             *(spread(a, at + 1 + k) for k, a in enumerate(axes[at:])))
    got = gather(name, index)
    read_runs(name, [])
    out[(slice(None),) * at + (valid,)] = got
    return out, got.nbytes


def _read_groups(read_runs: ReadRuns, name: str, axes: list[np.ndarray], at: int, groups: list[CellGroup],
                 out: np.ndarray, dtype: np.dtype, slack: float) -> tuple[np.ndarray, int]:
    """:func:`read_cells` by hyperslabs: each group's outer product with the other axes."""
    before, after = [len(a) for a in axes[:at]], [len(a) for a in axes[at:]]
    if out.size == 0 or not groups:
        read_runs(name, [])
        return out, 0
    combos: list[tuple[int, tuple[Run, ...]]] = []
    for g, group in enumerate(groups):
        combos.extend((g, combo) for combo in _reads([*axes[:at], *group.axes, *axes[at:]], dtype, slack, None))
    slabs = [_slab(combo) for _, combo in combos]
    parts = [np.empty((*before, *(len(a) for a in group.axes), *after), dtype=dtype) for group in groups]
    for (g, combo), data in zip(combos, read_runs(name, slabs)):
        _place(parts[g], combo, data)
    where = (slice(None),) * at
    for group, part in zip(groups, parts):
        flat = part.reshape(*before, group.size, *after)
        out[(*where, group.members)] = np.take(flat, group.place, axis=at)
    return out, sum(s.size for s in slabs) * np.dtype(dtype).itemsize
