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
rows       ranks of each process-grid row send their blocks to the row's first rank, and
           these aggregators write whole rows of blocks collectively (pnetCDFcr)
cols       the same along process-grid columns (pnetCDFcc)
=========  ==============================================================================

Every strategy writes the same bytes: the tests compare them element by element.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from climio.core import ncio
from climio.core.decomp import Decomposition, Hyperslab
from climio.errors import ClimioError
from climio.output.gather import Gatherer

if TYPE_CHECKING:
    from mpi4py import MPI

STRATEGIES = ("direct", "root", "rows", "cols")


@dataclass(frozen=True)
class Field:
    """An output variable: 2-D (y, x) when ``levels`` is None, else 3-D (level, y, x); one record per step."""

    name: str
    levels: int | None = None
    dtype: str = "f4"
    attrs: Mapping[str, object] = field(default_factory=dict)


def applicable_modes(strategy: str) -> tuple[str, ...]:
    return ("serial", "hdf5", "cdf2", "cdf5") if strategy == "root" else ("hdf5", "cdf2", "cdf5")


class ModelOutput:
    """One netCDF file of time records of decomposed fields, written with one strategy."""

    def __init__(self, path: str, decomp: Decomposition, fields: Sequence[Field], comm: MPI.Comm, *,
                 mode: str = "cdf5", strategy: str = "direct", gather: str = "gatherv",
                 hints: Mapping[str, str] | None = None, overwrite: bool = False,
                 attrs: Mapping[str, object] | None = None) -> None:
        if strategy not in STRATEGIES:
            raise ClimioError(f"unknown write strategy '{strategy}': choose one of {', '.join(STRATEGIES)}",
                              collective=True)
        if mode not in applicable_modes(strategy):
            raise ClimioError(f"write strategy '{strategy}' does not apply to mode '{mode}': it works with "
                              f"{', '.join(applicable_modes(strategy))}", collective=True)
        if len(decomp.shape) != 2 or decomp.axes != (0, 1):
            raise ClimioError(f"ModelOutput needs a 2-D block decomposition of the (y, x) grid, got shape "
                              f"{decomp.shape} split along {decomp.axes}", collective=True)
        decomp.check_comm_size(comm.Get_size())
        self.decomp, self.comm, self.strategy = decomp, comm, strategy
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
        self._groups: list[MPI.Comm] = []
        self._plans = {f.name: self._plan(f, gather) for f in fields}
        self._store = ncio.create(path, schema, mode, comm, overwrite=overwrite, hints=hints)

    def _plan(self, f: Field, gather: str) -> tuple[Gatherer | None, Hyperslab, Decomposition]:
        """Who gathers what for field ``f``, the hyperslab this rank writes, and the field's decomposition."""
        shape = (f.levels, *self.decomp.shape) if f.levels else self.decomp.shape
        px, py = self.decomp.parts[1], self.decomp.parts[0]
        halo = self.decomp.halo
        full = Decomposition.block2d(shape, px, py, halo=halo)
        if self.strategy == "direct":
            return None, full.owned(self.rank), full
        if self.strategy == "root":
            gatherer = Gatherer(full, f.dtype, self.comm, gather)
            return gatherer, Hyperslab.whole(shape) if self.rank == 0 else Hyperslab.empty(len(shape)), full
        row, col = self.decomp.coords(self.rank)
        along_rows = self.strategy == "rows"
        group = self.comm.Split(color=row if along_rows else col, key=col if along_rows else row)
        self._groups.append(group)
        band = full.owned(self.rank)
        y_axis, x_axis = len(shape) - 2, len(shape) - 1
        start, count = list(band.start), list(band.count)
        axis = x_axis if along_rows else y_axis  # the band spans the whole grid along this axis
        start[axis], count[axis] = 0, shape[axis]
        band_shape = tuple(count)
        sub = Decomposition.block2d(band_shape, px if along_rows else 1, 1 if along_rows else py, halo=halo)
        gatherer = Gatherer(sub, f.dtype, group, gather)
        mine = Hyperslab(tuple(start), band_shape) if group.Get_rank() == 0 else Hyperslab.empty(len(shape))
        return gatherer, mine, full

    def write(self, step: int, fields: Mapping[str, np.ndarray], time: float) -> None:
        """Write record ``step`` of every field from this rank's local arrays (collective)."""
        missing = set(self.fields) - set(fields)
        if missing:
            raise ClimioError(f"output step {step}: no data for field(s) {', '.join(sorted(missing))}")
        items: list[tuple[str, np.ndarray | None, Hyperslab | None]] = [
            ("time", np.array([time]) if self.rank == 0 else None, Hyperslab((step,), (1 if self.rank == 0 else 0,)))]
        for name, f in self.fields.items():
            gatherer, slab, full = self._plans[name]
            local = np.asarray(fields[name])
            if gatherer is None:
                data = full.owned_view(self.rank, local)
            else:
                data = gatherer.gather(local.astype(f.dtype, copy=False))
            records = 1 if slab.size else 0  # a rank with nothing to write still joins the collective call
            data = data[None] if records else np.empty((0, *slab.count), f.dtype)
            items.append((name, data, Hyperslab((step, *slab.start), (records, *slab.count))))
        self._store.write_many(items)

    def close(self) -> None:
        self._store.close()
        for gatherer, _, _ in self._plans.values():
            if gatherer is not None:
                gatherer.free()
        for group in self._groups:
            group.Free()

    def __enter__(self) -> ModelOutput:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: object) -> None:
        if err is None:
            self.close()
        else:
            self._store.__exit__(kind, err, None)
