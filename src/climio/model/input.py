"""A model's input file (initial conditions, restarts, forcing): read variables into a decomposition, the mirror
of :class:`~climio.model.output.ModelOutput`.

    d = decomposition.cells(owner, comm.Get_rank(), neighbours=cells_on_cell, layers=2)
    with ModelInput("restart.nc", d, comm, strategy="agg") as restart:
        theta = restart.read("theta", record=0)      # (nVertLevels, owned + ghost cells) on every rank
        area = restart.read("areaCell")              # a fixed variable

Strategies (seed 002 Fig. 5.4: PISM's start-up got its largest win from reading in parallel):

======  ==============================================================================
root    rank 0 reads each record whole through serial netCDF and the rearranger scatters
        it (PISM's old path: the baseline)
direct  every rank reads its own points collectively (PnetCDF / parallel HDF5)
agg:N   N readers read equal contiguous ranges of the record, then one exchange of the
        rearranger hands every rank its points (``agg``: one per node)
auto    agg with AUTO_PER_NODE readers per node (root for a file parallel I/O cannot read)
======  ==============================================================================

Any netCDF file the storage layer opens is read (CDF-1/2/5, netCDF-4, written by climio or not). A variable
is ``([time,] [level,] *grid)`` with the decomposition's grid as its last dimensions; anything else is an error
naming both shapes. With ``cf=True`` (the default) packed values are unpacked (``scale_factor``,
``add_offset``) and ``_FillValue``/``missing_value`` become NaN in floating-point results; ``cf=False`` gives
the stored values. Ghost points of a point decomposition are read like owned ones; the halo of a block
decomposition and local elements that are no grid point keep the fill value (NaN after ``cf``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from climio.core import ncio
from climio.core.decomp import Decomposition
from climio.core.ncio.schema import Variable, fill_value, missing_values
from climio.errors import ClimioError
from climio.model.decomposition import GridDecomposition
from climio.model.output import as_grid
from climio.model.route import Route
from climio.model.strategy import Strategy, parse_strategy

if TYPE_CHECKING:
    from mpi4py import MPI

READ_STRATEGIES = ("root", "direct", "agg", "auto")


class ModelInput:
    """A netCDF file opened on every rank of ``comm`` for reading variables into ``decomp``."""

    def __init__(self, path: str, decomp: GridDecomposition | Decomposition, comm: MPI.Comm, *,
                 strategy: str = "auto", hints: Mapping[str, str] | None = None) -> None:
        name, _ = parse_strategy(strategy)
        if name not in READ_STRATEGIES:
            raise ClimioError(f"read strategy '{strategy}': choose one of root, direct, agg, agg:N, auto",
                              collective=True)
        self.grid, self.comm, self.path = as_grid(decomp, comm), comm, path
        self._store = ncio.open(path, comm, read="root" if name == "root" else "parallel", hints=hints)
        mode = "serial" if name == "root" else self._store.mode.name
        if name == "auto" and mode == "serial":  # a file parallel I/O cannot read
            strategy = "root"
        self.strategy = Strategy.choose(strategy, mode, comm, self.grid, hints=hints)
        self._routes: dict[tuple[int | None, str], Route] = {}

    @property
    def schema(self) -> ncio.Schema:
        """The file's dimensions and variables (text ones too), as climio read its header."""
        return self._store.schema

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(v.name for v in self._store.schema.variables if not v.is_text)

    def levels(self, name: str) -> tuple[int | None, bool]:
        """``(levels or None, whether the variable has records)`` of variable ``name``, after checking that its
        last dimensions are the decomposition's grid."""
        var = self._variable(name)
        shape = self._store.shape(name)
        record = bool(var.dims) and self._store.schema.dims[var.dims[0]] is None
        rest = shape[1:] if record else shape
        grid = self.grid.grid
        if rest[len(rest) - len(grid):] != grid or len(rest) - len(grid) not in (0, 1):
            raise ClimioError(f"{self.path}: variable '{name}' {var.dims} of shape {shape} is not "
                              f"([time,] [level,] *grid) over the decomposition's grid {grid}", collective=True)
        return (rest[0] if len(rest) > len(grid) else None), record

    def read(self, name: str, record: int | None = None, *, out: np.ndarray | None = None,
             cf: bool = True) -> np.ndarray:
        """Variable ``name`` (its time index ``record`` if it has records) into this rank's local array
        (collective). ``out``, if given, is filled in place (C-contiguous, of the local shape)."""
        levels, has_records = self.levels(name)
        records = self._store.records if has_records else 0
        if has_records and (record is None or not 0 <= record < records):
            raise ClimioError(f"{self.path}: variable '{name}' has {records} records: pass record=0..{records - 1}",
                              collective=True)
        if not has_records and record is not None:
            raise ClimioError(f"{self.path}: variable '{name}' has no record dimension: leave record out",
                              collective=True)
        var = self._variable(name)
        stored = var.numpy_dtype
        key = (levels, stored.str)
        if key not in self._routes:
            self._routes[key] = self.strategy.route(self.comm, self.grid, levels, stored, reading=True)
        route = self._routes[key]
        shape = self.grid.local_shape(levels)
        if out is not None and self.comm.allreduce(out.shape != shape):  # every rank raises: none waits
            raise ClimioError(f"{self.path}: variable '{name}': out of shape {out.shape} on rank "
                              f"{self.comm.Get_rank()}, expected {shape}", collective=True)
        in_place = out is not None and not cf and out.dtype == stored and out.flags.c_contiguous
        raw = out if in_place else np.empty(shape, stored)
        if raw.size != route.layout.size or (route.plan is not None and not route.plan.dest_complete):
            raw[...] = fill_value(var.attrs, var.numpy_dtype)  # halos, non-grid elements
        route.read(self._store, name, record if has_records else None)
        route.scatter(raw)
        result = _unpacked(var, raw) if cf else raw
        if out is None or out is result:
            return result
        out[...] = result
        return out

    def _variable(self, name: str) -> Variable:
        try:
            var = self._store.schema.variable(name)
        except (KeyError, ClimioError):
            var = None
        if var is None or var.is_text:
            raise ClimioError(f"{self.path}: no numeric variable '{name}' (it has {', '.join(self.variables)})",
                              collective=True)
        return var

    def close(self) -> None:
        self._store.close()
        for route in self._routes.values():
            route.free()

    def __enter__(self) -> ModelInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unpacked(var: Variable, raw: np.ndarray) -> np.ndarray:
    """CF's view of stored values: fill and missing values as NaN, then scale and offset applied (a float
    variable without packing is converted in place)."""
    attrs = var.attrs
    scale, offset = attrs.get("scale_factor"), attrs.get("add_offset")
    if scale is None and offset is None and raw.dtype.kind != "f":
        return raw
    factors = [np.asarray(v) for v in (scale, offset) if v is not None]
    dtype = np.result_type(*factors) if factors else raw.dtype
    dtype = dtype if dtype.kind == "f" else np.dtype("f8")
    bad = np.zeros(raw.shape, bool)
    for value in (fill_value(var.attrs, var.numpy_dtype), *missing_values(attrs)):
        bad |= raw == np.asarray(value).astype(raw.dtype)
    out = raw if dtype == raw.dtype and not factors else raw.astype(dtype)
    if scale is not None:
        out *= np.asarray(scale).ravel()[0]
    if offset is not None:
        out += np.asarray(offset).ravel()[0]
    out[bad] = np.nan
    return out
