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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from climio.core.decomp import Hyperslab
from climio.core.ncio.modes import EVERY_STRATEGY, MODES
from climio.core.rearrange import BoxLayout, Description, Layout
from climio.errors import ClimioError
from climio.model.decomposition import BlockDecomposition, GridDecomposition, PointDecomposition
from climio.model.route import Route, even_ranges, flat_slabs, hole_runs, node_of, runs_of, spread, stripe_ranges

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
              *, fill: object = None, reading: bool = False, offset: int = 0, unit: int | None = None,
              layouts: list[Description] | None = None) -> Route:
        """The route of one record of a field with ``levels`` (collective). ``offset``: the record's byte offset
        in the file (``stripe`` cuts at the stripe boundaries after it); ``unit``: the elements of one chunk of a
        compressed variable, which ``agg`` hands out whole. Reading, the layout takes in the ghost points, which
        are filled from the file like owned ones. ``layouts``: every rank's layout description
        (:func:`~climio.core.rearrange.descriptions`) for ``agg`` and ``stripe``, whose pieces every rank works
        out alike: the route is then built without communication (box-like layouts only)."""
        rank = comm.Get_rank()
        owned = decomposition.layout(levels)
        holes = None
        known: tuple[list[Description], list[list[Hyperslab]]] | None = None
        everyone = self.pieces(decomposition, levels, dtype, comm.Get_size(), offset=offset, unit=unit)
        if everyone is None:
            pieces = self.own_pieces(decomposition, levels)
            if self.name == "direct" and not reading:
                holes = hole_runs(comm, owned)
        else:
            pieces = everyone[rank]
            if self.name != "root" and layouts is not None and all(d[0] != "offsets" for d in layouts):
                known = (layouts, everyone)
        layout = decomposition.layout(levels, ghosts=True) if reading else owned
        return Route(comm, layout, pieces, dtype, reading=reading, fill=fill, holes=holes, known=known)

    def pieces(self, decomposition: GridDecomposition, levels: int | None, dtype: str | np.dtype, size: int, *,
               offset: int = 0, unit: int | None = None) -> list[list[Hyperslab]] | None:
        """Every rank's pieces of one record, where they depend on the record alone (``root``, ``agg``,
        ``stripe``: every rank works out everyone's alike); None where each rank's follow its own share
        (:meth:`own_pieces`)."""
        shape = decomposition.shape(levels)
        if self.name == "root":
            return [[Hyperslab.whole(shape)]] + [[] for _ in range(size - 1)]
        if self.name == "agg":
            ranges = even_ranges(shape, list(self.aggregators), unit)
        elif self.name == "stripe":
            assert self.stripe_size is not None
            ranges = stripe_ranges(offset, shape, np.dtype(dtype).itemsize, self.stripe_size, list(self.aggregators))
        else:
            return None
        everyone: list[list[Hyperslab]] = [[] for _ in range(size)]
        for a, b, r in ranges:
            everyone[r] += flat_slabs(a, b, shape)
        return everyone

    def own_pieces(self, decomposition: GridDecomposition, levels: int | None) -> list[Hyperslab]:
        """``direct``, ``rows``, ``cols``: the pieces this rank writes, from its own share."""
        if self.name in ("rows", "cols"):
            return self._band(decomposition, levels)
        owned = decomposition.layout(levels)  # direct: each rank its owned points (reading, the others' bring
        if isinstance(owned, BoxLayout):      # it its ghosts)
            return [owned.slab]
        shape = decomposition.shape(levels)
        points = _points(owned)
        box = _box_of(points, shape)
        return [box] if box is not None else [s for a, n in runs_of(points) for s in flat_slabs(int(a), int(a + n), shape)]

    def _band(self, decomposition: GridDecomposition, levels: int | None) -> list[Hyperslab]:
        """``rows`` (``cols``): the band of whole process-grid rows (columns) that this rank writes, if it is the
        first rank of its row (column)."""
        process = decomposition.blocks
        assert isinstance(decomposition, BlockDecomposition) and process is not None
        row, col = process.coords(decomposition.rank)
        along_rows = self.name == "rows"
        if (col if along_rows else row) != 0:
            return []
        box = decomposition.box
        start, count = list(box.start), list(box.count)
        axis = 1 if along_rows else 0  # the band spans the whole grid along this axis
        start[axis], count[axis] = 0, decomposition.grid[axis]
        lead = ((0,), (levels,)) if levels is not None else ((), ())
        return [Hyperslab((*lead[0], *start), (*lead[1], *count))]

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
