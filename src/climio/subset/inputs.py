"""Many input files seen as one dataset (seed 001 III-B, NcML-style).

``join``: the files are concatenated along one dimension (usually the unlimited
time); every other dimension and every variable without it must agree, and the
grid comes from the first file. ``union``: the files' variables are merged; a
dimension or variable already seen in an earlier file is not read again from a
later one (grid and topology come from the first file that has them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from climio.core import mpi, ncio
from climio.core.decomp import Hyperslab
from climio.core.ncio import Store, Variable
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI


def text_variables(path: str) -> list[str]:
    """Names of character/string variables, which climio does not copy (checked on one rank)."""
    import netCDF4

    with netCDF4.Dataset(path, "r") as dataset:
        return [name for name, v in dataset.variables.items() if v.dtype == str or np.dtype(v.dtype).kind not in "iuf"]


@dataclass
class Inputs:
    """Open input stores and how their dimensions and variables combine."""

    stores: list[Store]
    join: str | None
    dims: dict[str, int]
    unlimited: set[str]
    variables: dict[str, Variable]
    source: dict[str, int]  # variable -> the store that holds it (join variables: all of them)
    attrs: dict[str, object]
    text: list[str]  # text variables left out

    @property
    def comm(self) -> MPI.Comm:
        return self.stores[0].comm

    @property
    def data_model(self) -> str:
        return self.stores[0].data_model

    def close(self) -> None:
        for store in self.stores:
            store.close()

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.dims[d] for d in self.variables[name].dims)

    def read_runs(self, name: str, slabs: list[Hyperslab]) -> list[np.ndarray]:
        """Read hyperslabs (this rank's own list) of a variable, across files when joined (collective)."""
        var = self.variables[name]
        if self.join is None or self.join not in var.dims:
            return self.stores[self.source[name]].read_runs(name, slabs)
        axis = var.dims.index(self.join)
        outs = [np.empty(s.count, var.numpy_dtype) for s in slabs]
        first = 0
        for store in self.stores:
            length = _length(store, self.join)
            parts, places = [], []
            for k, slab in enumerate(slabs):
                lo, hi = max(slab.start[axis], first), min(slab.start[axis] + slab.count[axis], first + length)
                if hi > lo and slab.size:
                    start, count = list(slab.start), list(slab.count)
                    start[axis], count[axis] = lo - first, hi - lo
                    parts.append(Hyperslab(tuple(start), tuple(count)))
                    places.append((k, lo - slab.start[axis], hi - slab.start[axis]))
            for data, (k, lo, hi) in zip(store.read_runs(name, parts), places):
                index = [slice(None)] * len(var.dims)
                index[axis] = slice(lo, hi)
                outs[k][tuple(index)] = data
            first += length
        return outs


def _length(store: Store, dim: str) -> int:
    size = store.schema.dims[dim]
    return store.records if size is None else size


def _where(paths: list[str], k: int) -> str:
    return f"'{paths[k]}'"


def open_inputs(paths: list[str], comm: MPI.Comm, join: str | None, union: bool) -> Inputs:
    """Open every input (collective) and check that they combine as asked."""
    stores: list[Store] = []
    try:
        for path in paths:
            stores.append(ncio.open(path, comm))
        text = sorted({t for path in paths for t in mpi.agree(comm, lambda p=path: text_variables(p))})
        if join is None and not union and len(stores) > 1:
            shared = set.intersection(*[{d for d, n in s.schema.dims.items() if n is None} for s in stores])
            join = next(iter(sorted(shared)), None)
        return _combine(paths, stores, join, text)
    except BaseException:
        for store in stores:
            store.close()
        raise


def _combine(paths: list[str], stores: list[Store], join: str | None, text: list[str]) -> Inputs:
    first = stores[0]
    dims = {d: _length(first, d) for d in first.schema.dims}
    unlimited = {d for d, n in first.schema.dims.items() if n is None}
    variables = {v.name: v for v in first.schema.variables}
    source = dict.fromkeys(variables, 0)
    if join is not None:
        for k, store in enumerate(stores):
            if join not in store.schema.dims:
                raise ClimioError(f"--join {join}: input {_where(paths, k)} has no dimension '{join}'", collective=True)
        dims[join] = sum(_length(s, join) for s in stores)
    for k, store in enumerate(stores[1:], start=1):
        for dim in store.schema.dims:
            if dim == join:
                continue
            length = _length(store, dim)
            if dim in dims and dims[dim] != length:
                raise ClimioError(f"inputs' grids differ: dimension '{dim}' has {dims[dim]} elements in "
                                  f"{_where(paths, 0)} but {length} in {_where(paths, k)}", collective=True)
            dims.setdefault(dim, length)
            if store.schema.dims[dim] is None:
                unlimited.add(dim)
        for var in store.schema.variables:
            known = variables.get(var.name)
            if join is not None and join in var.dims:
                if known is None or known.dims != var.dims or known.numpy_dtype != var.numpy_dtype:
                    raise ClimioError(f"--join {join}: variable '{var.name}' in {_where(paths, k)} does not match "
                                      f"{_where(paths, 0)} (every input needs it with the same dimensions and type)",
                                      collective=True)
            elif known is None:
                variables[var.name] = var
                source[var.name] = k
    if join is not None:
        for name, var in variables.items():
            if join in var.dims:
                missing = [k for k, s in enumerate(stores) if name not in {v.name for v in s.schema.variables}]
                if missing:
                    raise ClimioError(f"--join {join}: variable '{name}' is missing from {_where(paths, missing[0])}",
                                      collective=True)
        _check_same_grid(paths, stores, join)
    return Inputs(stores, join, dims, unlimited, variables, source, dict(first.schema.attrs), text)


def _check_same_grid(paths: list[str], stores: list[Store], join: str) -> None:
    """Joined files must share their coordinates: compare every 1-D coordinate variable with the first file's."""
    first = stores[0]
    for var in first.schema.variables:
        if var.dims != (var.name,) or var.name == join:
            continue
        reference = first.read(var.name)
        for k, store in enumerate(stores[1:], start=1):
            names = {v.name for v in store.schema.variables}
            if var.name in names and not np.array_equal(store.read(var.name), reference,
                                                        equal_nan=reference.dtype.kind == "f"):
                raise ClimioError(f"inputs' grids differ: coordinate '{var.name}' of {_where(paths, k)} is not "
                                  f"the same as in {_where(paths, 0)}; only files on one grid can be joined",
                                  collective=True)
