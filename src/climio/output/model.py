"""A model's output file: describe the decomposition and fields once, then write each output step.

    out = ModelOutput("out.nc", decomp, [Field("T", levels=35), Field("ps")], comm,
                      mode="cdf5", strategy="rows", gather="gatherv")
    for step in range(nsteps):
        out.write(step, {"T": T_local, "ps": ps_local}, time=step * 3600.0)
    out.close()

``decomp`` is a 2-D block decomposition of the horizontal (y, x) grid (halos
allowed: local arrays may carry them). Write strategies (seed 003 Fig. 1):

=========  ==============================================================================
direct     every rank writes its own block collectively (plain PnetCDF / parallel HDF5)
root       blocks are gathered to rank 0 (``gather=`` any :mod:`gather` strategy), which
           writes the whole field; the only strategy for ``serial`` mode (CMAQ's I/O)
rows       ranks of each process-grid row send their blocks to the row's first rank (one
           rearranger exchange), and these aggregators write whole rows of blocks collectively
           (pnetCDFcr)
cols       the same along process-grid columns (pnetCDFcc)
agg:N      N aggregators spread over the nodes, each owning an equal contiguous range of
           every record; one Alltoallv brings them their elements (``agg``: one per node)
stripe     one aggregator per storage target: the record is cut at the file's stripe
           boundaries and stripe i goes to aggregator i mod stripe_count (seed 002 ch. 7);
           ``striping_factor``/``striping_unit`` hints are set to match (CDF-2/CDF-5 only)
auto       root for ``serial``; otherwise agg with AUTO_PER_NODE aggregators per node (as
           many ranks as there are, if fewer; the rule and the benchmark behind it:
           docs/output.md)
=========  ==============================================================================

Every strategy writes the same bytes: the tests compare them element by element.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from climio.core import mpi, ncio
from climio.core.decomp import Decomposition, Hyperslab
from climio.core.rearrange import Layout, Plan
from climio.core.ncio.classic import variable_offsets
from climio.errors import ClimioError
from climio.output.aggregate import Aggregation, aggregator_ranks, even_ranges, stripe_ranges
from climio.output.gather import Gatherer

if TYPE_CHECKING:
    from mpi4py import MPI

Route = tuple[Gatherer | Aggregation | Plan | None, Hyperslab, Decomposition]  # who gathers, what this rank writes, layout
STRATEGIES = ("direct", "root", "rows", "cols", "agg", "stripe", "auto")
DEFAULT_STRIPE_SIZE = 1 << 20
AUTO_PER_NODE = 2  # EUS at 4 ranks on one 2-core node: agg:2 5.3 s, agg:1 8.0 s (docs/output.md)


def parse_strategy(text: str) -> tuple[str, int | None]:
    """'rows' -> ('rows', None); 'agg:4' -> ('agg', 4); 'agg' -> ('agg', None: one per node)."""
    name, colon, count = text.partition(":")
    if name not in STRATEGIES or (colon and name != "agg"):
        raise ClimioError(f"unknown write strategy '{text}': choose one of {', '.join(STRATEGIES)} (agg:N for N "
                          f"aggregators)", collective=True)
    if colon and (not count.isdigit() or int(count) < 1):
        raise ClimioError(f"write strategy '{text}': N in agg:N must be a positive integer", collective=True)
    return name, int(count) if colon else None


@dataclass(frozen=True)
class Field:
    """An output variable: 2-D (y, x) when ``levels`` is None, else 3-D (level, y, x); one record per step."""

    name: str
    levels: int | None = None
    dtype: str = "f4"
    attrs: Mapping[str, object] = field(default_factory=dict)


def applicable_modes(strategy: str) -> tuple[str, ...]:
    name, _ = parse_strategy(strategy)
    if name in ("root", "auto"):
        return ("serial", "hdf5", "cdf2", "cdf5")
    return ("cdf2", "cdf5") if name == "stripe" else ("hdf5", "cdf2", "cdf5")


def node_count(comm: MPI.Comm) -> int:
    """Number of shared-memory nodes the ranks of ``comm`` run on."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return int(comm.allreduce(1 if node.Get_rank() == 0 else 0, op=MPI.SUM))
    finally:
        node.Free()


class ModelOutput:
    """One netCDF file of time records of decomposed fields, written with one strategy."""

    def __init__(self, path: str, decomp: Decomposition, fields: Sequence[Field], comm: MPI.Comm, *,
                 mode: str = "cdf5", strategy: str = "direct", gather: str = "gatherv",
                 hints: Mapping[str, str] | None = None, overwrite: bool = False,
                 attrs: Mapping[str, object] | None = None, stripe_count: int | None = None,
                 stripe_size: int | None = None) -> None:
        name, aggregators = parse_strategy(strategy)
        if mode not in applicable_modes(strategy):
            raise ClimioError(f"write strategy '{strategy}' does not apply to mode '{mode}': it works with "
                              f"{', '.join(applicable_modes(strategy))}", collective=True)
        if len(decomp.shape) != 2 or decomp.axes != (0, 1):
            raise ClimioError(f"ModelOutput needs a 2-D block decomposition of the (y, x) grid, got shape "
                              f"{decomp.shape} split along {decomp.axes}", collective=True)
        decomp.check_comm_size(comm.Get_size())
        if name == "auto":
            name, aggregators = ("root", None) if mode == "serial" else \
                ("agg", min(comm.Get_size(), AUTO_PER_NODE * node_count(comm)))
        hints = dict(hints or {})
        if name == "stripe":
            stripe_count = stripe_count or int(hints.get("striping_factor", 0)) or min(4, comm.Get_size())
            stripe_size = stripe_size or int(hints.get("striping_unit", 0)) or DEFAULT_STRIPE_SIZE
            if not 1 <= stripe_count <= comm.Get_size() or stripe_size < 8 or stripe_size % 8:
                raise ClimioError(f"stripe: stripe count {stripe_count} must be 1..{comm.Get_size()} (the ranks) "
                                  f"and stripe size {stripe_size} a positive multiple of 8 bytes", collective=True)
            hints.setdefault("striping_factor", str(stripe_count))
            hints.setdefault("striping_unit", str(stripe_size))
            aggregators = stripe_count
        if name == "agg":
            aggregators = aggregators or node_count(comm)
            if aggregators > comm.Get_size():
                raise ClimioError(f"agg:{aggregators}: more aggregators than the {comm.Get_size()} ranks",
                                  collective=True)
        self.decomp, self.comm, self.strategy = decomp, comm, name
        self.stripe_size = stripe_size
        self.aggregators = aggregator_ranks(comm, aggregators) if aggregators else []
        self.fields = {f.name: f for f in fields}
        self.rank = comm.Get_rank()
        ny, nx = decomp.shape
        levels = sorted({f.levels for f in fields if f.levels is not None})
        dims: dict[str, int | None] = {"time": None, **{f"lev{n}": n for n in levels}, "y": ny, "x": nx}
        variables = [ncio.Variable("time", "f8", ("time",), {"long_name": "time", "units": "s"})]
        for f in fields:
            var_dims = ("time", f"lev{f.levels}", "y", "x") if f.levels else ("time", "y", "x")
            variables.append(ncio.Variable(f.name, f.dtype, var_dims, dict(f.attrs)))
        schema = ncio.Schema(dims, tuple(variables), dict(attrs or {}))
        shared: dict[tuple[int | None, str], Route] = {}  # fields of one shape and type share one plan
        self._plans: dict[str, Route] = {}
        for f in fields:
            key = (f.levels, np.dtype(f.dtype).str)
            if key not in shared:
                shared[key] = self._plan(f, gather)
            self._plans[f.name] = shared[key]
        self._store = ncio.create(path, schema, mode, comm, overwrite=overwrite, hints=hints)
        self._stripe_plans: dict[tuple[tuple[int, ...], str, int], Aggregation] = {}
        if name == "stripe":
            working = self._store.working_path
            self._offsets, self._record_size = mpi.agree(comm, lambda: variable_offsets(working))

    def _plan(self, f: Field, gather: str) -> Route:
        """Who gathers what for field ``f``, the hyperslab this rank writes, and the field's decomposition."""
        shape = (f.levels, *self.decomp.shape) if f.levels else self.decomp.shape
        px, py = self.decomp.parts[1], self.decomp.parts[0]
        full = Decomposition.block2d(shape, px, py, halo=self.decomp.halo)
        if self.strategy == "agg":
            return Aggregation(full, f.dtype, self.comm, even_ranges(shape, self.aggregators)), Hyperslab.empty(0), full
        if self.strategy in ("direct", "stripe"):
            return None, full.owned(self.rank), full
        if self.strategy == "root":
            gatherer = Gatherer(full, f.dtype, self.comm, gather)
            return gatherer, Hyperslab.whole(shape) if self.rank == 0 else Hyperslab.empty(len(shape)), full
        row, col = self.decomp.coords(self.rank)
        along_rows = self.strategy == "rows"
        band = full.owned(self.rank)
        start, count = list(band.start), list(band.count)
        axis = len(shape) - 1 if along_rows else len(shape) - 2  # the band spans the whole grid along this axis
        start[axis], count[axis] = 0, shape[axis]
        leader = (col if along_rows else row) == 0  # the first rank of its process-grid row (column) writes it
        mine = Hyperslab(tuple(start), tuple(count)) if leader else Hyperslab.empty(len(shape))
        return Plan(self.comm, Layout.block(full, self.rank), Layout.box(shape, mine)), mine, full

    def write(self, step: int, fields: Mapping[str, np.ndarray], time: float) -> None:
        """Write record ``step`` of every field from this rank's local arrays (collective).

        One field at a time: gathered or aggregated, then written, so that a writer
        holds one field's record rather than the whole step's.
        """
        missing = set(self.fields) - set(fields)
        if missing:
            raise ClimioError(f"output step {step}: no data for field(s) {', '.join(sorted(missing))}")
        mine = 1 if self.rank == 0 else 0
        self._store.write_many([("time", np.array([time]) if mine else None, Hyperslab((step,), (mine,)))])
        for name, f in self.fields.items():
            self._store.write_many([(name, data, slab) for data, slab in
                                    self._pieces(name, f, step, np.asarray(fields[name]))])

    def _pieces(self, name: str, f: Field, step: int, local: np.ndarray) -> list[tuple[np.ndarray, Hyperslab]]:
        """This rank's (data, record hyperslab) pieces of field ``name`` at ``step``."""
        plan, slab, full = self._plans[name]
        if self.strategy == "stripe":
            plan = self._stripe_plan(name, f, step, full)
        if isinstance(plan, Aggregation):  # aggregators write several pieces, the others none: pad
            mine = plan.exchange(local)
            ndim = len(full.shape)
            empty = (np.empty((0,) * (ndim + 1), f.dtype), Hyperslab((step,) + (0,) * ndim, (0,) * (ndim + 1)))
            return [(mine[at:at + s.size].reshape((1, *s.count)), Hyperslab((step, *s.start), (1, *s.count)))
                    for at, s in plan.slabs] + [empty] * (plan.most_slabs - len(plan.slabs))
        if plan is None:
            data = full.owned_view(self.rank, local)
        elif isinstance(plan, Plan):
            data = plan.forward(np.ascontiguousarray(local, dtype=f.dtype))
        else:
            data = plan.gather(local.astype(f.dtype, copy=False))
        records = 1 if slab.size else 0  # a rank with nothing to write still joins the collective call
        data = data[None] if records else np.empty((0, *slab.count), f.dtype)
        return [(data, Hyperslab((step, *slab.start), (records, *slab.count)))]

    def _stripe_plan(self, name: str, f: Field, step: int, full: Decomposition) -> Aggregation:
        """The exchange for this record's position in the file; records of one shape at the same stripe phase
        share one."""
        assert self.stripe_size is not None
        offset = self._offsets[name] + step * self._record_size
        key = (full.shape, np.dtype(f.dtype).str, offset % (self.stripe_size * len(self.aggregators)))
        if key not in self._stripe_plans:
            ranges = stripe_ranges(offset, full.shape, np.dtype(f.dtype).itemsize, self.stripe_size, self.aggregators)
            self._stripe_plans[key] = Aggregation(full, f.dtype, self.comm, ranges)
        return self._stripe_plans[key]

    def close(self) -> None:
        self._store.close()
        plans = {id(p): p for p, _, _ in self._plans.values()}  # fields share plans: free each once
        for plan in list(plans.values()) + list(self._stripe_plans.values()):
            if plan is not None:
                plan.free()

    def __enter__(self) -> ModelOutput:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: object) -> None:
        if err is None:
            self.close()
        else:
            self._store.__exit__(kind, err, None)
