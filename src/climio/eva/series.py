"""The series ``climio eva`` analyses: one variable of one or many files, seen as ``(time, cells...)``.

* **Many files** are joined along time by :mod:`climio.core.inputs` (the
  same code as ``climio subset --join``): time rebased to the first file's units,
  calendars must agree, records in time order; a gap of more than one time step
  between two files is an error unless allowed.
* **Time** is the variable's dimension whose coordinate CF marks as time
  (``axis = "T"``, ``standard_name = "time"`` or units ``<unit> since <date>``),
  wherever it is in the variable; else its one unlimited dimension.
* **Cells** are the variable's other dimensions, in file order. ``-d`` cuts any of
  them (and time) to a contiguous range, as NCO reads it; ``-d DIM,VALUE`` (MIN
  alone) picks one element, and the dimension becomes a scalar coordinate of the
  output. A variable with no dimension besides time is one cell.

Reads take a hyperslab of the logical ``(time, cells...)`` array and return it in
that order: on the common ``(time, y, x)`` layout straight from the file, on any
other a copy with time moved first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from climio.core.datavars import only_data_variable
from climio.core.decomp import Hyperslab
from climio.core.ncio import Store, Variable
from climio.errors import ClimioError
from climio.core.inputs import Inputs
from climio.core.ranges import DimRange
from climio.core.timeaxis import calendar_of, describe, time_units


@dataclass(frozen=True)
class Axis:
    """One axis of the logical array: a dimension of the variable (None: the one cell of a time series) and the
    contiguous range of it that is analysed."""

    dim: str | None
    start: int
    count: int


def is_time_coordinate(attrs: dict[str, object]) -> bool:
    """CF's marks of a time coordinate (section 4.4)."""
    return (attrs.get("axis") == "T" or attrs.get("standard_name") == "time"
            or time_units(attrs) is not None)


def time_dimension(schema_dims: dict[str, int | None], variables: dict[str, Variable], name: str,
                   where: str) -> str:
    """The time dimension of variable ``name``: the one whose coordinate CF marks as time, else its one unlimited
    dimension."""
    var = variables[name]
    marked = [d for d in var.dims if d in variables and variables[d].dims == (d,)
              and is_time_coordinate(dict(variables[d].attrs))]
    if len(marked) > 1:
        raise ClimioError(f"{where}: variable '{name}({', '.join(var.dims)})' has more than one time dimension ({', '.join(marked)})"
                          f"; cut all but one to a single value with -d", collective=True)
    if marked:
        return marked[0]
    unlimited = [d for d in var.dims if schema_dims.get(d, 0) is None]
    if len(unlimited) == 1:
        return unlimited[0]
    raise ClimioError(f"{where}: variable '{name}({', '.join(var.dims)})' has no time dimension: none of its dimensions has a "
                      f"coordinate with axis 'T', standard_name 'time' or units '<unit> since <date>'",
                      collective=True)


def analysed(variables: Mapping[str, Variable], name: str | None, where: str) -> str:
    """The variable to analyse: ``name``, or the one data variable among ``variables`` (as CDO and NCO take it:
    :func:`climio.core.datavars.only_data_variable`; text variables are never data here)."""
    if name is not None:
        return name
    numeric = {n: (v.dims, v.attrs) for n, v in variables.items() if not v.is_text}
    return only_data_variable(numeric, where, "--var (-v)")


def time_rule(name: str | None, where: str):  # type: ignore[no-untyped-def]
    """The join rule for :func:`climio.core.inputs.open_inputs`: the variable's time dimension in the first
    input (the variable must be there; None: its one data variable)."""
    def rule(store: Store) -> str:
        variables = {v.name: v for v in store.schema.variables}
        found = analysed(variables, name, where)
        if found not in variables:
            numeric = [v.name for v in store.schema.variables if not v.is_text]
            raise ClimioError(f"{where}: no variable '{found}' (--var); it has {', '.join(numeric)}", collective=True)
        if variables[found].is_text:
            raise ClimioError(f"{where}: variable '{found}' is text, not numbers", collective=True)
        return time_dimension(dict(store.schema.dims), variables, found, where)
    return rule


class Series:
    """Variable ``name`` of ``inputs`` (joined along its time dimension), cut by ``ranges``, as (time, cells...)."""

    def __init__(self, inputs: Inputs, name: str | None, ranges: list[DimRange], where: str) -> None:
        self.inputs, self.where = inputs, where
        name = analysed(inputs.variables, name, where)
        self.var = inputs.variables[name]
        self.time_dim = inputs.join or time_dimension(inputs.dims, inputs.variables, name, where)
        given = {r.dim: r for r in ranges}
        for dim, r in given.items():
            if dim not in self.var.dims:
                raise ClimioError(f"-d {r.text}: variable '{name}({', '.join(self.var.dims)})' has no dimension '{dim}'",
                                  collective=True)
        self.scalars: dict[str, int] = {}  # dimension cut to one element by -d DIM,VALUE -> its index
        ranged: dict[str, tuple[int, int]] = {}
        for dim in self.var.dims:
            start, count, single = self._pick(dim, given.get(dim))
            if single and dim == self.time_dim:
                raise ClimioError(f"-d {given[dim].text}: picks one time step; give a range of '{dim}' "
                                  f"(-d {dim},MIN,MAX)", collective=True)
            if single:
                self.scalars[dim] = start
            else:
                ranged[dim] = (start, count)
        self.time = Axis(self.time_dim, *ranged[self.time_dim])
        cells = [Axis(d, *ranged[d]) for d in self.var.dims if d in ranged and d != self.time_dim]
        self.axes = [self.time, *(cells or [Axis(None, 0, 1)])]

    # -- what is analysed ---------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.var.name

    @property
    def shape(self) -> tuple[int, ...]:
        """The logical array's: (time steps, cells along each cell axis)."""
        return tuple(a.count for a in self.axes)

    @property
    def cell_dims(self) -> tuple[str, ...]:
        """The output's dimensions (the variable's cell dimensions, in file order; none for one series)."""
        return tuple(a.dim for a in self.axes[1:] if a.dim is not None)

    @property
    def time_first(self) -> bool:
        """Whether time is the variable's slowest dimension (after dimensions cut to one element): reads of
        blocks of time steps are then contiguous in the file, and come in (time, cells) order as they are."""
        return [d for d in self.var.dims if d not in self.scalars][0] == self.time_dim

    def coordinate(self, dim: str) -> np.ndarray | None:
        """The (1-D) coordinate variable of a dimension, whole, rebased when joined; None if there is none."""
        var = self.inputs.variables.get(dim)
        if var is None or var.dims != (dim,) or var.is_text:
            return None
        return self.inputs.read(dim, Hyperslab((0,), (self.inputs.dims[dim],)))

    def times(self) -> np.ndarray | None:
        """The analysed steps' time coordinate values (in the first input's units)."""
        values = self.coordinate(self.time_dim)
        return None if values is None else values[self.time.start:self.time.start + self.time.count]

    def time_bounds(self) -> np.ndarray | None:
        """The analysed steps' time bounds, (steps, 2), when the time coordinate has them (collective)."""
        name = str(self.time_attrs.get("bounds", ""))
        var = self.inputs.variables.get(name)
        if var is None or var.dims[:1] != (self.time_dim,) or len(var.dims) != 2:
            return None
        return self.inputs.read(name, Hyperslab((self.time.start, 0), (self.time.count, self.inputs.dims[var.dims[1]])))

    @property
    def time_attrs(self) -> dict[str, object]:
        var = self.inputs.variables.get(self.time_dim)
        return dict(var.attrs) if var is not None else {}

    def period(self) -> str:
        """The analysed span for people: 'first .. last' dates (or values)."""
        values = self.times()
        if values is None or values.size == 0:
            return f"{self.time.count} steps"
        units, calendar = time_units(self.time_attrs), calendar_of(self.time_attrs)
        return f"{describe(float(values[0]), units, calendar)} .. {describe(float(values[-1]), units, calendar)}"

    # -- reading ------------------------------------------------------------------------------------------------
    def file_slab(self, slab: Hyperslab) -> Hyperslab:
        """The variable's hyperslab that holds a hyperslab of the logical array."""
        at = {a.dim: (a.start + s, c) for a, s, c in zip(self.axes, slab.start, slab.count) if a.dim is not None}
        at.update({d: (i, 1) for d, i in self.scalars.items()})
        if not slab.size:
            return Hyperslab((0,) * len(self.var.dims), (0,) * len(self.var.dims))
        return Hyperslab(tuple(at[d][0] for d in self.var.dims), tuple(at[d][1] for d in self.var.dims))

    def _logical(self, data: np.ndarray, count: tuple[int, ...]) -> np.ndarray:
        kept = [d for d in self.var.dims if d not in self.scalars]
        data = data.reshape([data.shape[self.var.dims.index(d)] for d in kept])
        data = np.moveaxis(data, kept.index(self.time_dim), 0)
        return np.ascontiguousarray(data).reshape(count)

    def read(self, slab: Hyperslab, *, as_stored: bool = False) -> np.ndarray:
        """A hyperslab of the logical array, in its (time, cells...) order (collective)."""
        data = self.inputs.read(self.name, self.file_slab(slab), as_stored=as_stored)
        return self._logical(data, slab.count) if slab.size else np.empty(slab.count, data.dtype)

    def prefetch(self, slab: Hyperslab) -> None:
        """Start reading a hyperslab of the logical array ahead of its :meth:`read` (local, returns at once)."""
        if slab.size:
            self.inputs.prefetch(self.name, self.file_slab(slab))

    def read_every(self, slab: Hyperslab, step: int, *, as_stored: bool = False) -> np.ndarray | None:
        """Every ``step``-th time step of a hyperslab, in one strided read per file (collective); None when time
        is not the variable's first dimension (the strided read would be one small piece per cell, and stores
        stride along the first dimension only)."""
        if self.var.dims[0] != self.time_dim:
            return None
        data = self.inputs.read_every(self.name, self.file_slab(slab), step, as_stored=as_stored)
        count = (-(-slab.count[0] // step), *slab.count[1:])
        return self._logical(data, count) if slab.size else np.empty(count, data.dtype)

    # -- choosing -----------------------------------------------------------------------------------------------
    def _pick(self, dim: str, given: DimRange | None) -> tuple[int, int, bool]:
        """``(start, count, single)`` of a dimension: all of it, or the contiguous range ``-d`` gives."""
        size = self.inputs.dims[dim]
        if given is None:
            return 0, size, False
        var = self.inputs.variables.get(dim)
        attrs = dict(var.attrs) if var is not None else {}
        longitude = attrs.get("standard_name") == "longitude" or str(attrs.get("units", "")).startswith("degree_east")
        coord = self.coordinate(dim) if given.by_value else None
        picked = given.resolve(size, coord, longitude, time_units(attrs), str(attrs.get("calendar", "standard")))
        if picked.size > 1 and not np.all(np.diff(picked) == 1):
            raise ClimioError(f"-d {given.text}: eva takes one contiguous range of '{dim}' (no stride, no "
                              f"wrapped longitudes); cut the input with climio subset first", collective=True)
        return int(picked[0]), int(picked.size), given.single

    def cells(self) -> int:
        return math.prod(self.shape[1:])
