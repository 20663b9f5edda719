"""The file ``climio eva`` writes: the results on the input's grid, and what CF needs to read them.

Copied from the input (cut along the analysed ranges, read whole: they are small):
the coordinate variables of the cell dimensions, the auxiliary coordinates the
variable names in ``coordinates`` (2-D lat/lon of a rotated-pole grid, ICON's 1-D
lat/lon, scalar ``height``, char ``sector``), its ``grid_mapping`` variable, the
coordinates of dimensions ``-d`` cut to one value (now scalar coordinates, as
``plev = 85000``), and every copied variable's ``bounds`` (without the attributes they
inherit from their coordinate, where equal: CF 7.1's advice). Nothing that depends on
time is copied; a scalar time coordinate with bounds says which period was analysed.
References to variables that are not copied (``formula_terms`` with a time-varying
surface pressure) are dropped from the copies' attributes, never left dangling.

The xarray API (:mod:`climio.eva.api`) builds its result from the same :class:`Layout` and :func:`schema`,
over a :class:`Source` of its own: what it returns, written with ``to_netcdf``, is the command's file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from climio.core.datavars import names_in
from climio.core.decomp import Hyperslab
from climio.core.ncio import Schema, Variable
from climio.errors import ClimioError
from climio.eva import cf
from climio.eva.methods import PER_PERIOD, Method
from climio.eva.series import Axis, Series
from climio.core.timeaxis import time_units

REFERENCES = ("bounds", "climatology", "coordinates", "ancillary_variables", "formula_terms", "grid_mapping")
# What bounds inherit from their coordinate (CF 7.1 recommends leaving them out; xarray's writer drops them too).
INHERITED = ("units", "standard_name", "axis", "positive", "calendar", "long_name", "leap_month", "leap_year",
             "month_lengths")
# Global attributes of the input that describe the input file itself, not the analysis.
NOT_CARRIED = ("Conventions", "title", "history", "tracking_id", "creation_date", "frequency", "NCO",
               "history_of_appended_files", "nco_openmp_thread_number", "_NCProperties")


class Source(Protocol):
    """What the output is made from, whoever read it: the command's joined files (:class:`FileSource`) or the
    xarray API's Dataset (:mod:`climio.eva.api`). One :class:`Layout` and one :func:`schema` for both make the
    API's result, written with ``to_netcdf``, the command's file."""

    @property
    def name(self) -> str:
        """The analysed variable."""

    @property
    def time_dim(self) -> str: ...

    @property
    def variables(self) -> Mapping[str, Variable]:
        """Every input variable as a file declares it: stored type, dimensions, CF attributes."""

    @property
    def dims(self) -> Mapping[str, int | None]: ...

    @property
    def attrs(self) -> Mapping[str, object]:
        """The input's global attributes."""

    @property
    def cells(self) -> Sequence[Axis]:
        """The analysed ranges of the variable's cell dimensions, in its order."""

    @property
    def scalars(self) -> Mapping[str, int]:
        """Dimensions cut to one element (``-d DIM,VALUE``) -> its index."""

    def read(self, name: str) -> np.ndarray:
        """A variable whole, as stored (collective)."""

    def period(self) -> tuple[float, float] | None:
        """The first and last analysed value of the time coordinate, in its units; None without one
        (collective)."""

    def bounds_rows(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The rows of time bounds variable ``name`` at the first and the last analysed step (collective)."""


class FileSource:
    """The command's :class:`Source`: the analysed :class:`Series` of its joined inputs."""

    def __init__(self, series: Series) -> None:
        self.series = series
        self.name, self.time_dim, self.scalars = series.name, series.time_dim, series.scalars
        self.variables, self.dims, self.attrs = series.inputs.variables, series.inputs.dims, series.inputs.attrs
        self.cells = [a for a in series.axes[1:] if a.dim is not None]

    def read(self, name: str) -> np.ndarray:
        inputs = self.series.inputs
        if inputs.variables[name].is_text:
            return inputs.read_text(name)
        (data,) = inputs.read_runs(name, [Hyperslab.whole(inputs.shape(name))])
        return data

    def period(self) -> tuple[float, float] | None:
        values = self.series.times()
        return None if values is None or values.size == 0 else (float(values[0]), float(values[-1]))

    def bounds_rows(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        inputs, time = self.series.inputs, self.series.time
        width = inputs.shape(name)[-1]
        return (inputs.read(name, Hyperslab((time.start, 0), (1, width))),
                inputs.read(name, Hyperslab((time.start + time.count - 1, 0), (1, width))))


@dataclass(frozen=True)
class Carried:
    """An input variable copied to the output: which, with what dimensions, cut where."""

    var: Variable  # as declared in the output
    source: str  # the input variable
    index: tuple[slice | int, ...]  # applied to the input variable, whole, in its dimension order


def grid_mappings(value: object) -> list[str]:
    """``grid_mapping = "crs"`` or the extended ``"crs: lat lon crs2: x y"`` (then the names end in ':')."""
    words = str(value).split()
    marked = [w[:-1] for w in words if w.endswith(":")]
    return marked or words


class Layout:
    """What the output declares and copies, from the analysed series (the command's) or any :class:`Source`."""

    def __init__(self, source: Series | Source) -> None:
        self.source: Source = FileSource(source) if isinstance(source, Series) else source
        variables = self.source.variables
        var = variables[self.source.name]
        cell_dims = [a.dim for a in self.source.cells]
        wanted = [d for d in cell_dims if d in variables and variables[d].dims == (d,)]
        wanted += [d for d in self.source.scalars if d in variables and variables[d].dims == (d,)]
        wanted += [n for n in names_in(var.attrs.get("coordinates", "")) if n in variables]
        wanted += [n for n in grid_mappings(var.attrs.get("grid_mapping", "")) if n in variables]
        chosen: list[str] = []
        for name in wanted:
            self._add(name, chosen)
        self.carried = [self._carry(variables[n]) for n in chosen]
        names = {c.var.name for c in self.carried}
        self.carried = self._lean_bounds([self._pruned(c, names) for c in self.carried])
        mapping = var.attrs.get("grid_mapping")
        mappings = grid_mappings(mapping) if mapping is not None else []
        self.grid_mapping = str(mapping) if mappings and all(g in names for g in mappings) else None
        self.coordinates = [c.var.name for c in self.carried
                            if c.var.name not in cell_dims and c.source in wanted and c.source not in mappings]

    def _add(self, name: str, chosen: list[str]) -> None:
        """``name`` and its bounds, unless they vary in time."""
        var = self.source.variables[name]
        if name in chosen or self.source.time_dim in var.dims:
            return
        chosen.append(name)
        for other in names_in(var.attrs.get("bounds", "")):
            if other in self.source.variables:
                self._add(other, chosen)

    def _carry(self, var: Variable) -> Carried:
        ranges = {a.dim: a for a in self.source.cells}
        index: list[slice | int] = []
        dims = []
        for dim in var.dims:
            if dim in self.source.scalars:
                index.append(self.source.scalars[dim])
            elif dim in ranges:
                index.append(slice(ranges[dim].start, ranges[dim].start + ranges[dim].count))
                dims.append(dim)
            else:
                index.append(slice(None))
                dims.append(dim)
        return Carried(Variable(var.name, var.numpy_dtype, tuple(dims), dict(var.attrs)), var.name, tuple(index))

    @staticmethod
    def _pruned(carried: Carried, names: set[str]) -> Carried:
        """Drop references to variables the output does not have."""
        attrs = dict(carried.var.attrs)
        for key in REFERENCES:
            if key in attrs and not all(n in names for n in names_in(attrs[key])):
                del attrs[key]
        var = carried.var
        return Carried(Variable(var.name, var.dtype, var.dims, attrs), carried.source, carried.index)

    @staticmethod
    def _lean_bounds(carried: list[Carried]) -> list[Carried]:
        """Bounds without the attributes they inherit from their coordinate, where they say the same."""
        parents = {str(c.var.attrs["bounds"]): c.var.attrs for c in carried if "bounds" in c.var.attrs}
        out = []
        for c in carried:
            parent = parents.get(c.var.name, {})
            attrs = {k: v for k, v in c.var.attrs.items()
                     if not (k in INHERITED and k in parent and np.array_equal(np.asarray(v), np.asarray(parent[k])))}
            out.append(Carried(Variable(c.var.name, c.var.dtype, c.var.dims, attrs), c.source, c.index))
        return out

    def read(self, carried: Carried) -> np.ndarray:
        """A copied variable's values, cut (collective: every rank reads it, whole)."""
        return np.asarray(self.source.read(carried.source)[carried.index])

    # -- the period ---------------------------------------------------------------------------------------------
    def time_coordinate(self) -> tuple[list[Variable], dict[str, np.ndarray], dict[str, int]]:
        """A scalar time coordinate at the middle of the analysed period, with bounds at its ends (collective);
        nothing when the time dimension has no coordinate with CF time units."""
        source = self.source
        name = source.time_dim
        attrs = dict(source.variables[name].attrs) if name in source.variables else {}
        ends = source.period()
        if ends is None or time_units(attrs) is None:
            return [], {}, {}
        taken = {c.var.name for c in self.carried} | {a.dim for a in source.cells}
        bounds_name = str(attrs.get("bounds", f"{name}_bnds"))
        low, high = ends
        nv = "bnds"
        bvar = source.variables.get(bounds_name)
        if bvar is not None and name in bvar.dims:
            nv = bvar.dims[-1]
            first, last = source.bounds_rows(bounds_name)
            low, high = float(np.min(first)), float(np.max(last))
        if name in taken or bounds_name in taken:
            return [], {}, {}
        keep = ("standard_name", "long_name", "units", "calendar", "axis")
        time_attrs = {k: attrs[k] for k in keep if k in attrs}
        time_attrs["bounds"] = bounds_name
        variables = [Variable(name, "f8", (), time_attrs), Variable(bounds_name, "f8", (nv,), {})]
        data = {name: np.float64((low + high) / 2), bounds_name: np.array([low, high])}
        dims = {nv: 2}
        return variables, data, dims


def global_attributes(attrs: Mapping[str, object], extra: Mapping[str, object], history: str) -> dict[str, object]:
    """The input's identifying global attributes (``source_id``, ``experiment_id``, CORDEX ``driving_model_id``,
    ...), with ``Conventions`` set and ``history`` appended."""
    kept = {k: v for k, v in attrs.items() if k not in NOT_CARRIED}
    old = str(attrs.get("history", ""))
    return {**kept, "Conventions": "CF-1.8", **extra, "history": f"{history}\n{old}".strip()}


def schema(layout: Layout, results: Mapping[str, str], method: Method, attrs: Mapping[str, Mapping[str, object]],
           periods: tuple[float, ...], extra: Mapping[str, object], history: str,
           covariate: tuple[np.ndarray, Mapping[str, object]] | None = None, seasons: Sequence[str] = ()
           ) -> tuple[Schema, dict[str, np.ndarray]]:
    """The output's schema, and the values of its small variables (collective: they are read here): the
    ``results`` (name -> type) with their CF attributes ``attrs``, and ``extra`` global attributes. With
    ``covariate`` (values and attributes), the return levels are on ("covariate", "period", cells): effective
    levels at each value. With several ``seasons``, every result has a leading "season" dimension, named by the
    char coordinate ``season_name``."""
    source = layout.source
    cells = tuple(a.dim for a in source.cells)
    dims: dict[str, int | None] = {a.dim: a.count for a in source.cells}
    values: dict[str, np.ndarray] = {}
    variables: list[Variable] = []
    for carried in layout.carried:
        for dim in carried.var.dims:
            dims.setdefault(dim, source.dims[dim])
        variables.append(carried.var)
        values[carried.var.name] = layout.read(carried)
    time_vars, time_values, time_dims = layout.time_coordinate()
    for dim, n in time_dims.items():
        if dims.setdefault(dim, n) != n:
            raise ClimioError(f"the input's dimension '{dim}' has {dims[dim]} elements: it cannot bound the "
                              f"period's scalar time coordinate", collective=True)
    variables += time_vars
    values.update(time_values)
    dims["period"] = len(periods)
    variables.append(Variable("period", "f8", ("period",), dict(cf.PERIOD_ATTRS)))
    values["period"] = np.asarray(periods, dtype=float)
    leading: tuple[str, ...] = ("period",)
    if covariate is not None:
        dims["covariate"] = len(covariate[0])
        variables.append(Variable("covariate", "f8", ("covariate",), dict(covariate[1])))
        values["covariate"] = np.asarray(covariate[0], dtype=float)
        leading = ("covariate", "period")
    per_cell: tuple[str, ...] = ()
    if seasons:
        dims["season"], dims["season_strlen"] = len(seasons), max(len(n) for n in seasons)
        variables.append(Variable("season_name", "S1", ("season", "season_strlen"), dict(cf.SEASON_ATTRS)))
        values["season_name"] = np.array([list(n.ljust(dims["season_strlen"])) for n in seasons], dtype="S1")
        per_cell = ("season",)
    coordinates = " ".join([*layout.coordinates, *(v.name for v in time_vars if v.dims == ()),
                            *(["season_name"] if seasons else [])])
    for name, dtype in results.items():
        if name in {v.name for v in variables}:
            raise ClimioError(f"the input has a variable '{name}', which is also the name of a result: rename it "
                              f"first (ncrename -v {name},{name}_in)", collective=True)
        extra_attrs: dict[str, object] = {}
        if coordinates:
            extra_attrs["coordinates"] = coordinates
        if layout.grid_mapping:
            extra_attrs["grid_mapping"] = layout.grid_mapping
        fill = {"_FillValue": np.nan} if dtype == "f8" else {}
        out_dims = (*per_cell, *leading, *cells) if name in PER_PERIOD else (*per_cell, *cells)
        variables.append(Variable(name, dtype, out_dims, {**fill, **attrs[name], **extra_attrs}))
    described = {"title": f"{method.title} of {source.name}", "method": method.description}
    used = {d: dims[d] for v in variables for d in v.dims}  # in order of first use, as xarray's writer declares them
    return Schema({**used, **dims}, tuple(variables), global_attributes(source.attrs, {**described, **extra},
                                                                        history)), values
