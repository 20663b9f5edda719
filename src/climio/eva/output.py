"""The file ``climio eva`` writes: the results on the input's grid, and what CF needs to read them.

Copied from the input (cut along the analysed ranges, read whole: they are small):
the coordinate variables of the cell dimensions, the auxiliary coordinates the
variable names in ``coordinates`` (2-D lat/lon of a rotated-pole grid, ICON's 1-D
lat/lon, scalar ``height``, char ``sector``), its ``grid_mapping`` variable, the
coordinates of dimensions ``-d`` cut to one value (now scalar coordinates, as
``plev = 85000``), and every copied variable's ``bounds``. Nothing that depends on
time is copied; a scalar time coordinate with bounds says which period was analysed.
References to variables that are not copied (``formula_terms`` with a time-varying
surface pressure) are dropped from the copies' attributes, never left dangling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from climio.core.decomp import Hyperslab
from climio.core.ncio import Schema, Variable
from climio.errors import ClimioError
from climio.eva import cf
from climio.eva.methods import PER_PERIOD, Method
from climio.eva.series import Series
from climio.subset.timeaxis import time_units

REFERENCES = ("bounds", "climatology", "coordinates", "ancillary_variables", "formula_terms", "grid_mapping")
# Global attributes of the input that describe the input file itself, not the analysis.
NOT_CARRIED = ("Conventions", "title", "history", "tracking_id", "creation_date", "frequency", "NCO",
               "history_of_appended_files", "nco_openmp_thread_number", "_NCProperties")


@dataclass(frozen=True)
class Carried:
    """An input variable copied to the output: which, with what dimensions, cut where."""

    var: Variable  # as declared in the output
    source: str  # the input variable
    index: tuple[slice | int, ...]  # applied to the input variable, whole, in its dimension order


def _names(value: object) -> list[str]:
    """Variable names in a CF reference attribute: 'a b' or 'key: a key2: b' (formula_terms, grid_mapping's
    extended form), the names being the words that do not end in ':'."""
    return [w for w in str(value).split() if not w.endswith(":")]


def grid_mappings(value: object) -> list[str]:
    """``grid_mapping = "crs"`` or the extended ``"crs: lat lon crs2: x y"`` (then the names end in ':')."""
    words = str(value).split()
    marked = [w[:-1] for w in words if w.endswith(":")]
    return marked or words


class Layout:
    """What the output declares and copies, from the analysed series."""

    def __init__(self, series: Series) -> None:
        self.series = series
        variables = series.inputs.variables
        time = series.time_dim
        wanted = [d for d in series.cell_dims if d in variables and variables[d].dims == (d,)]
        wanted += [d for d in series.scalars if d in variables and variables[d].dims == (d,)]
        wanted += [n for n in _names(series.var.attrs.get("coordinates", "")) if n in variables]
        wanted += [n for n in grid_mappings(series.var.attrs.get("grid_mapping", "")) if n in variables]
        chosen: list[str] = []
        for name in wanted:
            self._add(name, chosen, time)
        self.carried = [self._carry(variables[n]) for n in chosen]
        names = {c.var.name for c in self.carried}
        self.carried = [self._pruned(c, names) for c in self.carried]
        mapping = series.var.attrs.get("grid_mapping")
        mappings = grid_mappings(mapping) if mapping is not None else []
        self.grid_mapping = str(mapping) if mappings and all(g in names for g in mappings) else None
        self.coordinates = [c.var.name for c in self.carried
                            if c.var.name not in series.cell_dims and c.source in wanted and c.source not in mappings]

    def _add(self, name: str, chosen: list[str], time: str) -> None:
        """``name`` and its bounds, unless they vary in time."""
        var = self.series.inputs.variables[name]
        if name in chosen or time in var.dims:
            return
        chosen.append(name)
        for other in _names(var.attrs.get("bounds", "")):
            if other in self.series.inputs.variables:
                self._add(other, chosen, time)

    def _carry(self, var: Variable) -> Carried:
        ranges = {a.dim: a for a in self.series.axes[1:] if a.dim is not None}
        index: list[slice | int] = []
        dims = []
        for dim in var.dims:
            if dim in self.series.scalars:
                index.append(self.series.scalars[dim])
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
            if key in attrs and not all(n in names for n in _names(attrs[key])):
                del attrs[key]
        var = carried.var
        return Carried(Variable(var.name, var.dtype, var.dims, attrs), carried.source, carried.index)

    def read(self, carried: Carried) -> np.ndarray:
        """A copied variable's values, cut (collective: every rank reads it, whole)."""
        inputs = self.series.inputs
        var = inputs.variables[carried.source]
        if var.is_text:
            data = inputs.read_text(var.name)
        else:
            (data,) = inputs.read_runs(var.name, [Hyperslab.whole(inputs.shape(var.name))])
        return np.asarray(data[carried.index])

    # -- the period ---------------------------------------------------------------------------------------------
    def time_coordinate(self) -> tuple[list[Variable], dict[str, np.ndarray], dict[str, int]]:
        """A scalar time coordinate at the middle of the analysed period, with bounds at its ends (collective);
        nothing when the time dimension has no coordinate with CF time units."""
        series = self.series
        attrs = series.time_attrs
        values = series.times()
        if values is None or values.size == 0 or time_units(attrs) is None:
            return [], {}, {}
        taken = {c.var.name for c in self.carried} | set(series.cell_dims)
        name = series.time_dim
        bounds_name = str(attrs.get("bounds", f"{name}_bnds"))
        low, high = float(values[0]), float(values[-1])
        nv = "bnds"
        if bounds_name in series.inputs.variables and series.time_dim in series.inputs.variables[bounds_name].dims:
            bvar = series.inputs.variables[bounds_name]
            nv = bvar.dims[-1]
            first = series.inputs.read(bounds_name, Hyperslab((series.time.start, 0), (1, 2)))
            last = series.inputs.read(bounds_name, Hyperslab((series.time.start + series.time.count - 1, 0), (1, 2)))
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
    series = layout.series
    inputs = series.inputs
    cells = series.cell_dims
    dims: dict[str, int | None] = {a.dim: a.count for a in series.axes[1:] if a.dim is not None}
    values: dict[str, np.ndarray] = {}
    variables: list[Variable] = []
    for carried in layout.carried:
        for dim in carried.var.dims:
            dims.setdefault(dim, inputs.dims[dim])
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
    described = {"title": f"{method.title} of {series.name}", "method": method.description}
    return Schema(dims, tuple(variables), global_attributes(inputs.attrs, {**described, **extra}, history)), values
