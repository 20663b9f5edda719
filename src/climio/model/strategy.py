"""The I/O strategies of model output and input (seed 003 Fig. 1, seed 002 ch. 7, PIO's I/O tasks): which ranks
touch the file, and which pieces of each record they write or read.

=========  ==============================================================================
direct     every rank its own points, collectively (plain PnetCDF / parallel HDF5)
root       rank 0 the whole record (CMAQ's I/O; PISM's old read-and-scatter); the only
           strategy for ``serial`` mode
rows       the first rank of each process-grid row a band of whole rows (pnetCDFcr); plain
           2-D block decompositions only
cols       the same along process-grid columns (pnetCDFcc)
agg:N      N aggregators spread over the nodes, each an equal contiguous range of every
           record (``agg``: one per node)
stripe     one aggregator per storage target: the record cut at the file's stripe
           boundaries, stripe i to aggregator i mod stripe_count (CDF-2/CDF-5 only)
auto       writing, the cost model's fastest (:func:`climio.model.costmodel.auto`, which ModelOutput
           asks); reading, or with no records to price: root for ``serial``, otherwise agg with
           AUTO_PER_NODE aggregators per node
=========  ==============================================================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from climio.core.decomp import Hyperslab
from climio.core.ncio.modes import EVERY_STRATEGY, MODES
from climio.core.rearrange import BoxLayout, Layout, PieceMap, flat_boxes
from climio.errors import ClimioError
from climio.model.decomposition import GridDecomposition, PointDecomposition
from climio.model.route import (BandWriters, RangeWriters, Route, Writers, even_ranges, hole_runs, node_of, runs_of,
                                spread, stripe_ranges)

if TYPE_CHECKING:
    from mpi4py import MPI

STRATEGIES = EVERY_STRATEGY
DEFAULT_STRIPE_SIZE = 1 << 20
KEPT_STRIPE_ROUTES = 8  # stripe routes a file keeps beyond one a field: a phase seen again soon is not rebuilt
AUTO_PER_NODE = 2  # EUS at 4 ranks on one 2-core node: agg:2 5.3 s, agg:1 8.0 s (docs/output.md)


def parse_strategy(text: str) -> tuple[str, int | None]:
    """'rows' -> ('rows', None); 'agg:4' -> ('agg', 4); 'agg' -> ('agg', None: one per node)."""
    name, colon, count = text.partition(":")
    if name not in STRATEGIES or (colon and name != "agg"):
        raise ClimioError(f"unknown I/O strategy '{text}': choose one of {', '.join(STRATEGIES)} (agg:N for N "
                          f"aggregators)", collective=True)
    if colon and (not count.isdigit() or int(count) < 1):
        raise ClimioError(f"I/O strategy '{text}': N in agg:N must be a positive integer", collective=True)
    return name, int(count) if colon else None


def applicable_modes(strategy: str) -> tuple[str, ...]:
    """The modes ``strategy`` writes (the mode table says which strategies each mode takes)."""
    name, _ = parse_strategy(strategy)
    return tuple(mode for mode, facts in MODES.items() if name in facts.strategies)


@dataclass(frozen=True)
class Strategy:
    """A strategy resolved for one job: its name, its aggregators and stripes, and the hints it sets."""

    name: str
    aggregators: tuple[int, ...] = ()
    stripe_size: int | None = None
    hints: tuple[tuple[str, str], ...] = ()

    @classmethod
    def choose(cls, text: str, mode: str, comm: MPI.Comm, decomposition: GridDecomposition, *,
               hints: Mapping[str, str] | None = None, stripe_count: int | None = None,
               stripe_size: int | None = None) -> Strategy:
        """Check ``text`` against the mode and the decomposition, and settle ``auto``, ``agg`` and ``stripe``
        (collective: aggregators are spread over the nodes)."""
        return cls.settle(text, mode, node_of(comm), decomposition, hints=hints, stripe_count=stripe_count,
                          stripe_size=stripe_size)

    @classmethod
    def settle(cls, text: str, mode: str, nodes: list[int], decomposition: GridDecomposition, *,
               hints: Mapping[str, str] | None = None, stripe_count: int | None = None,
               stripe_size: int | None = None) -> Strategy:
        """:meth:`choose` for a job whose ranks run on ``nodes`` (each rank's node, named by its first rank): no
        communication, so that a job of any size can be worked out in one process (``climio bench scale``)."""
        name, aggregators = parse_strategy(text)
        if mode not in applicable_modes(text):
            raise ClimioError(f"I/O strategy '{text}' does not apply to mode '{mode}': it works with "
                              f"{', '.join(applicable_modes(text))}", collective=True)
        if name in ("rows", "cols") and decomposition.blocks is None:
            given = ("the ranks that write hold lists of points (a PIO map, mesh cells, round-robin columns; I/O "
                     "servers always do, whatever the model's decomposition)"
                     if isinstance(decomposition, PointDecomposition) else
                     "these blocks are not climio's split of one (land-eliminated blocks, cubed-sphere faces, boxes "
                     "given one by one)")
            whole = "rows" if name == "rows" else "columns"
            raise ClimioError(f"I/O strategy '{name}' writes whole {whole} of a process grid of blocks, but {given}: "
                              f"use agg, root or direct", collective=True)
        size, node_count = len(nodes), len(set(nodes))
        if name == "auto":
            name, aggregators = ("root", None) if mode == "serial" else ("agg", min(size, AUTO_PER_NODE * node_count))
        merged = dict(hints or {})
        if name == "stripe":
            stripe_count = stripe_count or int(merged.get("striping_factor", 0)) or min(4, size)
            stripe_size = stripe_size or int(merged.get("striping_unit", 0)) or DEFAULT_STRIPE_SIZE
            if not 1 <= stripe_count <= size or stripe_size < 8 or stripe_size % 8:
                raise ClimioError(f"stripe: stripe count {stripe_count} must be 1..{size} (the ranks) and stripe "
                                  f"size {stripe_size} a positive multiple of 8 bytes", collective=True)
            merged.setdefault("striping_factor", str(stripe_count))
            merged.setdefault("striping_unit", str(stripe_size))
            aggregators = stripe_count
        if name == "agg":
            aggregators = aggregators or node_count
            if aggregators > size:
                raise ClimioError(f"agg:{aggregators}: more aggregators than the {size} ranks", collective=True)
        picked = tuple(spread(nodes, aggregators)) if aggregators else ()
        return cls(name, picked, stripe_size if name == "stripe" else None, tuple(merged.items()))

    def route(self, comm: MPI.Comm, decomposition: GridDecomposition, levels: int | None, dtype: str | np.dtype,
              *, fill: object = None, reading: bool = False, offset: int = 0, unit: int | None = None) -> Route:
        """The route of one record of a field with ``levels`` (collective). ``offset``: the record's byte offset
        in the file (``stripe`` cuts at the stripe boundaries after it); ``unit``: the elements of one chunk of a
        compressed variable, which ``agg`` hands out whole. Reading, the layout takes in the ghost points, which
        are filled from the file like owned ones. Where every rank knows every rank's share (blocks) and the
        writers' pieces follow from the record, the route is built without communication."""
        owned = decomposition.layout(levels)
        holes = None
        known: tuple[PieceMap, Writers] | None = None
        writers = self.writers(decomposition, levels, dtype, offset=offset, unit=unit)
        if writers is None:
            pieces = self.own_pieces(decomposition, levels)
            if not reading:
                holes = hole_runs(comm, owned)
        else:
            pieces = writers.slabs(comm.Get_rank())
            layouts = decomposition.piece_map(levels)
            if layouts is not None:
                known = (layouts, writers)
        layout = decomposition.layout(levels, ghosts=True) if reading else owned
        return Route(comm, layout, pieces, dtype, reading=reading, fill=fill, holes=holes, known=known)

    def writers(self, decomposition: GridDecomposition, levels: int | None, dtype: str | np.dtype, *,
                offset: int = 0, unit: int | None = None) -> Writers | None:
        """The ranks that write one record and what each writes, where they follow from the record and the
        process grid (every strategy but ``direct``: every rank works out every writer's alike); None for
        ``direct``, whose ranks write their own points (:meth:`own_pieces`)."""
        shape = decomposition.shape(levels)
        if self.name in ("rows", "cols"):
            assert decomposition.blocks is not None
            return BandWriters(shape, decomposition.blocks, self.name == "rows")
        if self.name == "root":
            total = np.array([math.prod(shape)], np.int64)
            return RangeWriters(shape, (np.zeros(1, np.int64), total, np.zeros(1, np.int64)))
        if self.name == "agg":
            return RangeWriters(shape, even_ranges(shape, list(self.aggregators), unit))
        if self.name == "stripe":
            assert self.stripe_size is not None
            return RangeWriters(shape, stripe_ranges(offset, shape, np.dtype(dtype).itemsize, self.stripe_size,
                                                     list(self.aggregators)))
        return None

    def own_pieces(self, decomposition: GridDecomposition, levels: int | None) -> list[Hyperslab]:
        """``direct``: the pieces this rank writes, its owned points (reading, the others' bring it its ghosts)."""
        owned = decomposition.layout(levels)
        if isinstance(owned, BoxLayout):
            return [owned.slab]
        shape = decomposition.shape(levels)
        points = _points(owned)
        box = _box_of(points, shape)
        return [box] if box is not None else [s for a, n in runs_of(points) for s in flat_boxes(int(a), int(a + n), shape)]

    def stripe_key(self, offset: int) -> int:
        """Records whose offsets agree modulo a round of stripes share one route."""
        assert self.stripe_size is not None
        return offset % (self.stripe_size * len(self.aggregators))


def _points(layout: Layout) -> np.ndarray:
    """The sorted flat offsets of the global array that ``layout`` holds."""
    offsets = layout.flat_offsets()
    return np.sort(offsets[offsets >= 0])


def _box_of(points: np.ndarray, shape: tuple[int, ...]) -> Hyperslab | None:
    """The hyperslab that sorted distinct ``points`` fill exactly, if they do (a block listed point by point, as
    PIO maps list them): one request instead of one per run."""
    if not points.size:
        return None
    index = np.unravel_index(points, shape)
    lo = np.array([int(i.min()) for i in index])
    hi = np.array([int(i.max()) for i in index])
    count = hi - lo + 1
    if int(np.prod(count)) != points.size:
        return None
    return Hyperslab(tuple(int(v) for v in lo), tuple(int(v) for v in count))
