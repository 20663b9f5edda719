"""A file's schema (dimensions, variables, attributes), declared whole before any data.

Declaring everything first lets the file leave define mode exactly once: adding
a variable after data has been written makes netCDF classic/PnetCDF move all
record data to grow the header (seed 002, ch. 6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from climio.core.ncio.compression import NONE, Compression, Settings
from climio.errors import ClimioError

class NCString(str):
    """A netCDF-4 string (NC_STRING) attribute, as opposed to a text (NC_CHAR) one: kept so in netCDF-4 outputs."""


AttrValue = str | int | float | np.ndarray | np.generic | list[float] | list[int] | list[str]

# Attributes that CF requires to have the variable's own type.
TYPED_LIKE_VARIABLE = ("_FillValue", "missing_value", "valid_min", "valid_max", "valid_range",
                       "actual_range", "flag_values", "flag_masks")

NUMERIC_KINDS = "iuf"
# Text: netCDF's NC_CHAR as numpy ``S1`` (one byte per element, strings along the last dimension) and
# netCDF-4's NC_STRING as numpy ``object`` (one Python str per element). Text is read and written whole.
TEXT_TYPES = (np.dtype("S1"), np.dtype("O"))
# netCDF-C filters and quantizes fixed-size types only: it refuses any filter on a variable-length one (NC_STRING,
# numpy ``object``) with NC_EFILTER, though some writers stored them deflated.
UNFILTERABLE_KINDS = "O"


def name_problem(name: str) -> str | None:
    """What netCDF-C would refuse in a dimension, variable or attribute name (its NC_check_name rules), or None:
    empty, '/', an ASCII control character, trailing white space, or a first character that is ASCII but neither
    a letter, a digit nor '_'."""
    if not name:
        return "it is empty"
    first = name[0]
    if first.isascii() and not (first.isalnum() or first == "_"):
        return f"it starts with {first!r}"
    bad = next((c for c in name if c == "/" or ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        return f"it holds {bad!r}"
    if name != name.rstrip():
        return "it ends in white space"
    return None


@dataclass(frozen=True)
class Variable:
    """One variable: name, numpy dtype, dimension names in file order, CF attributes.

    ``chunks`` (chunk sizes) and ``compression`` apply to netCDF-4 files (modes ``hdf5``, ``hdf5-classic``), and
    so does ``fill``: values never written read as the fill value (HDF5 fills them). Classic files are made without
    fill values: a writer that wants them there writes them.
    """

    name: str
    dtype: str | np.dtype
    dims: tuple[str, ...]
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)
    chunks: tuple[int, ...] | None = None
    compression: Compression = NONE
    fill: bool = False

    def __post_init__(self) -> None:
        # Whatever asked for it (an input's own filters, -L, --ppc, --cmp), a type netCDF-C cannot filter is stored
        # unfiltered, as NCO writes it.
        if self.numpy_dtype.kind in UNFILTERABLE_KINDS:
            object.__setattr__(self, "compression", NONE)

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(self.dtype).newbyteorder("=")

    @property
    def is_text(self) -> bool:
        """A char (``S1``) or string (``object``) variable: moved whole through rank 0, never by hyperslab."""
        return self.numpy_dtype in TEXT_TYPES


@dataclass(frozen=True)
class Schema:
    """Dimensions (``None`` = unlimited record dimension), variables, global attributes."""

    dims: Mapping[str, int | None]
    variables: tuple[Variable, ...]
    attrs: Mapping[str, AttrValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", tuple(self.variables))
        self.validate()

    def validate(self) -> None:
        """Check names, dimension references and dtypes; every rank runs it identically."""
        unlimited = [d for d, n in self.dims.items() if n is None]
        if len(unlimited) > 1:
            raise ClimioError(f"at most one unlimited dimension is portable to all modes, got {unlimited}",
                              collective=True)
        for name, length in self.dims.items():
            if length is not None and length < 0:
                raise ClimioError(f"dimension '{name}' has negative length {length}", collective=True)
        for kind, name in [("dimension", d) for d in self.dims] + [("variable", v.name) for v in self.variables]:
            problem = name_problem(name)
            if problem is not None:
                raise ClimioError(f"{kind} name {name!r} cannot be written to netCDF ({problem}): rename it "
                                  f"(ncrename) or leave it out with -v", collective=True)
        seen: set[str] = set()
        for var in self.variables:
            if var.name in seen:
                raise ClimioError(f"variable '{var.name}' is declared twice", collective=True)
            seen.add(var.name)
            for dim in var.dims:
                if dim not in self.dims:
                    raise ClimioError(f"variable '{var.name}' uses undeclared dimension '{dim}'", collective=True)
            if var.numpy_dtype.kind not in NUMERIC_KINDS and not var.is_text:
                raise ClimioError(f"variable '{var.name}' has type {var.numpy_dtype}; climio stores numeric, "
                                  "char (S1) and string (object) types", collective=True)
            if var.compression.active:
                var.compression.check(var.name, var.numpy_dtype)
            if var.chunks is not None and len(var.chunks) != len(var.dims):
                raise ClimioError(f"variable '{var.name}': chunks {var.chunks} need one size per dimension",
                                  collective=True)

    def variable(self, name: str) -> Variable:
        for var in self.variables:
            if var.name == name:
                return var
        raise ClimioError(f"no variable '{name}' in this file (has: {', '.join(v.name for v in self.variables)})")

    def is_record(self, var: Variable) -> bool:
        """Whether the variable has the unlimited dimension (first in classic formats, anywhere in netCDF-4)."""
        return any(self.dims[d] is None for d in var.dims)

    def record_bytes(self, var: Variable) -> int:
        """Bytes of one record of a record variable, or of the whole fixed-size variable."""
        dims = [d for d in var.dims if self.dims[d] is not None]
        return math.prod(int(self.dims[d] or 0) for d in dims) * var.numpy_dtype.itemsize

    def fixed_shape(self, var: Variable, records: int = 0) -> tuple[int, ...]:
        """The variable's shape with ``records`` records along an unlimited dimension."""
        return tuple(records if self.dims[d] is None else int(self.dims[d] or 0) for d in var.dims)


def fill_value(attrs: Mapping[str, Any], dtype: np.dtype) -> Any:
    """A variable's ``_FillValue``, else netCDF's default fill for its type (what readers mask)."""
    import netCDF4

    if "_FillValue" in attrs:
        return np.asarray(attrs["_FillValue"]).ravel()[0]
    dtype = np.dtype(dtype)
    return netCDF4.default_fillvals.get(f"{dtype.kind}{dtype.itemsize}", 0)


def missing_values(attrs: Mapping[str, Any]) -> list[float]:
    """A variable's ``_FillValue`` and ``missing_value`` values (CF's markers of no data), as floats."""
    out: list[float] = []
    for key in ("_FillValue", "missing_value"):
        value = attrs.get(key)
        if value is not None and not isinstance(value, (str, bytes)):
            out.extend(float(x) for x in np.atleast_1d(np.asarray(value, dtype=np.float64)).ravel())
    return out


def typed_attribute(var: Variable, name: str, value: AttrValue) -> AttrValue:
    """Give CF attributes that take the variable's type (``_FillValue`` etc.) that type when the value has none
    of its own (Python numbers); a typed value keeps its type (a file's double ``missing_value`` on a float
    variable stays double), except ``_FillValue``, which netCDF requires of the variable's type."""
    if name not in TYPED_LIKE_VARIABLE or isinstance(value, str) or var.is_text:
        return value
    typed = isinstance(value, (np.ndarray, np.generic))
    return value if typed and name != "_FillValue" else np.asarray(value, dtype=var.numpy_dtype)


def attribute_array(value: Any) -> np.ndarray:
    """A non-string attribute as a 1-d numpy array of a netCDF-storable type."""
    array = np.atleast_1d(np.asarray(value))
    if array.dtype == np.bool_:
        array = array.astype(np.int8)
    python_ints = type(value) is int or (isinstance(value, list) and all(type(v) is int for v in value))
    if python_ints and np.all((array >= -2**31) & (array < 2**31)):
        array = array.astype(np.int32)  # Python ints: int32 is storable in every mode; numpy types stay as given
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))


def compressed(schema: Schema, settings: Settings) -> Schema:
    """``schema`` with every numeric variable of at least one dimension compressed as ``settings`` say (NCO's
    ``-L`` and ``--ppc``). ``--ppc default`` leaves coordinates, bounds and auxiliary coordinates exact; a
    variable ``--ppc`` names that is missing or not floating point is an error."""
    unknown = [d for d in settings.chunk_sizes if d not in schema.dims]
    if unknown:
        raise ClimioError(f"--cnk_dmn names dimension(s) {', '.join(unknown)}, which the output does not have",
                          collective=True)
    named = [v for v in settings.ppc if v != "default"]
    missing = [v for v in named if v not in {var.name for var in schema.variables}]
    if missing:
        raise ClimioError(f"--ppc names variable(s) {', '.join(missing)}, which the output does not have",
                          collective=True)
    referenced = {name for var in schema.variables for key in ("bounds", "climatology", "coordinates")
                  for name in str(var.attrs.get(key, "")).split()}  # bounds and auxiliary coordinates
    variables = []
    for var in schema.variables:
        if var.is_text or not var.dims:
            if var.name in settings.ppc:  # text: refused in the quantization's own words, not passed over
                Compression(quantize=settings.ppc[var.name]).check(var.name, var.numpy_dtype)
            variables.append(var)
            continue
        coordinate = var.dims == (var.name,) or var.name in referenced
        variables.append(replace(var, compression=settings.for_variable(var.name, var.numpy_dtype, coordinate,
                                                                        var.compression),
                                 chunks=_chunks(schema, var, settings.chunk_sizes)))
    return Schema(schema.dims, tuple(variables), schema.attrs)


def _chunks(schema: Schema, var: Variable, sizes: Mapping[str, int]) -> tuple[int, ...] | None:
    """``var``'s chunks with ``--cnk_dmn`` sizes along the dimensions they name (at most the dimension's length);
    its other dimensions keep their chunk sizes, else a record (1) along an unlimited one and the whole length
    along a fixed one."""
    if not any(d in sizes for d in var.dims):
        return var.chunks
    out = []
    for k, dim in enumerate(var.dims):
        length = schema.dims[dim]
        if dim in sizes:
            out.append(min(sizes[dim], length) if length else sizes[dim])
        else:
            out.append(var.chunks[k] if var.chunks is not None else (length or 1))
    return tuple(out)
