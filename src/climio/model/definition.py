"""The rules of a netCDF-style file definition made call by call (climio's C API, PIO's): error codes, the
constants the calls take, names, types, dimensions and variables, the sort of a definition into decomposed
fields and undistributed variables, frames and value ranges.

One home for every side that checks such calls: the C API's Python side (``capi/calls.py``, attached mode),
the I/O servers (``serve/server.py``) and their wire (``serve/protocol.py``). The C client checks in C only
what a model rank must refuse before anything is sent (``capi/served.c`` names the rule each check mirrors).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from climio.core import ncio
from climio.errors import ClimioError, IOFault
from climio.model.decomposition import GridDecomposition
from climio.model.input import ModelInput
from climio.model.output import Field, ModelOutput

# The C API's error codes (climio.h) and the exit status each stands for under CLIMIO_ABORT_ON_ERROR
NOERR, EBADID, EINVAL, ESTATE, EIO, EINTERNAL, ENOMEM = 0, -1, -2, -3, -4, -5, -6
EXIT_STATUS = {EBADID: 2, EINVAL: 2, ESTATE: 2, EIO: 1, EINTERNAL: 1, ENOMEM: 1}
# netCDF's codes (PIO's API returns them) that are faults of the machine or of climio, not of the caller's input
NETCDF_FAULTS = {-61, -68, -92, -101, -103, -104, -105}  # NC_ENOMEM, EIO, EINTERNAL, EHDFERR, ECANTWRITE, ...

UNLIMITED = 0  # a dimension's length: the record dimension
GLOBAL = -1  # the variable id of a global attribute
NOFRAME = -1  # the frame of a variable without records
RETURN_ERROR, ABORT_ON_ERROR = 0, 1  # what a call does on an error: return its code, or end the job
CLOBBER, NOCLOBBER = 0, 1
CHAR = 2  # NC_CHAR: a text attribute
# netCDF's type numbers: NC_BYTE, NC_SHORT, NC_INT, NC_FLOAT, NC_DOUBLE, NC_INT64
TYPES = {1: np.dtype("i1"), 3: np.dtype("i2"), 4: np.dtype("i4"), 5: np.dtype("f4"), 6: np.dtype("f8"),
         10: np.dtype("i8")}
# and the others of the classic and CDF-5 models, which PIO's API takes too: NC_CHAR, NC_UBYTE, NC_USHORT, NC_UINT,
# NC_UINT64
NETCDF_TYPES = {**TYPES, 2: np.dtype("S1"), 7: np.dtype("u1"), 8: np.dtype("u2"), 9: np.dtype("u4"),
                11: np.dtype("u8")}
TYPE_NAMES = {1: "BYTE", 2: "CHAR", 3: "SHORT", 4: "INT", 5: "FLOAT", 6: "DOUBLE", 7: "UBYTE", 8: "USHORT",
              9: "UINT", 10: "INT64", 11: "UINT64"}
QUANTIZE = {1: "BitGroom", 2: "GranularBR", 3: "BitRound"}  # netCDF's NC_QUANTIZE_* numbers


class CallError(ClimioError):
    """An error of one call, with its C API code."""

    def __init__(self, message: str, code: int = EINVAL) -> None:
        super().__init__(message, collective=True)
        self.code = code


def code_of(err: BaseException) -> int:
    """The C API code of an error raised while serving a call."""
    if isinstance(err, CallError):
        return err.code
    if isinstance(err, IOFault):
        return EIO
    return EINVAL if isinstance(err, ClimioError) else EINTERNAL


def exit_status(code: int) -> int:
    """The exit status of a job that an error of ``code`` (climio's or netCDF's) ends: 2 for the caller's input,
    1 for a fault of the machine or of climio."""
    return EXIT_STATUS.get(code, 1 if code in NETCDF_FAULTS else 2)


def xtype_dtype(xtype: int, what: str, types: Mapping[int, np.dtype] = TYPES, api: str = "CLIMIO") -> np.dtype:
    """The numpy type of netCDF type number ``xtype``, one of ``types`` (those of the API named ``api``)."""
    if xtype not in types:
        known = ", ".join(f"{TYPE_NAMES[x]} ({x})" for x in sorted(types))
        raise CallError(f"{what}: type {xtype} is none of {api}_{known}")
    return types[xtype]


def xtype_of(dtype: np.dtype | str, what: str) -> int:
    """netCDF's number of a numpy type."""
    found = [x for x, t in TYPES.items() if t == np.dtype(dtype)]
    if not found:
        raise ClimioError(f"{what}: type {np.dtype(dtype).name} has no netCDF number here: use int8, int16, "
                          f"int32, int64, float32 or float64", collective=True)
    return found[0]


def check_name(text: str, what: str) -> str:
    """A dimension's, variable's or attribute's name, as netCDF takes it."""
    if not text or len(text) > 256 or "/" in text or text != text.strip():
        raise CallError(f"{what} name '{text}': give 1 to 256 characters, no '/' and no edge spaces")
    return text


@dataclass
class Variable:
    name: str
    dtype: np.dtype
    dimids: tuple[int, ...]
    attrs: dict[str, object] = field(default_factory=dict)
    deflate: int = 0
    quantize: tuple[str, int] | None = None


@dataclass
class Header:
    """The dimensions, variables and attributes that a file's calls define, with the checks every API shares
    (climio's and PIO's)."""

    path: str
    dims: list[tuple[str, int]] = field(default_factory=list, kw_only=True)
    variables: list[Variable] = field(default_factory=list, kw_only=True)
    attrs: dict[str, object] = field(default_factory=dict, kw_only=True)

    def variable(self, varid: int) -> Variable:
        if not 0 <= varid < len(self.variables):
            raise CallError(f"{self.path}: no variable id {varid} (it has {len(self.variables)}: 0.."
                            f"{len(self.variables) - 1})", EBADID)
        return self.variables[varid]

    def check_dim(self, name: str, length: int) -> None:
        """A new dimension: a name of its own, a length >= 0, one record dimension at most."""
        check_name(name, f"{self.path}: dimension")
        if any(n == name for n, _ in self.dims):
            raise CallError(f"{self.path}: dimension '{name}' is already defined")
        if length < 0 or (length == UNLIMITED and any(n == UNLIMITED for _, n in self.dims)):
            raise CallError(f"{self.path}: dimension '{name}': length {length} (one CLIMIO_UNLIMITED at most)")

    def check_var(self, name: str, xtype: int, dimids: tuple[int, ...], types: Mapping[int, np.dtype] = TYPES,
                  api: str = "CLIMIO") -> Variable:
        """A new variable: a name of its own, one of the API's types, defined dimensions."""
        check_name(name, f"{self.path}: variable")
        if any(v.name == name for v in self.variables):
            raise CallError(f"{self.path}: variable '{name}' is already defined")
        dtype = xtype_dtype(xtype, f"{self.path}: variable '{name}'", types, api)
        bad = [d for d in dimids if not 0 <= d < len(self.dims)]
        if bad:
            raise CallError(f"{self.path}: variable '{name}': no dimension id {bad[0]} (0..{len(self.dims) - 1})",
                            EBADID)
        return Variable(name, dtype, tuple(dimids))


@dataclass
class Definition(Header):
    """A file of climio's API as its calls define it: being defined (``output`` None), written (``output``) or
    read (``input``)."""

    decomp: GridDecomposition | None = None
    mode: str = ""
    strategy: str = ""
    overwrite: bool = False
    output: ModelOutput | None = None
    input: ModelInput | None = None

    @property
    def defining(self) -> bool:
        return self.input is None and self.output is None


@dataclass
class Layout:
    """A file's definitions sorted for :class:`ModelOutput`."""

    record: str
    time_attrs: dict[str, object] | None = None
    fields: list[Field] = field(default_factory=list)
    variables: list[ncio.Variable] = field(default_factory=list)
    grid_names: tuple[str, ...] | None = None


def layout_of(f: Definition) -> Layout:
    """Sort the variables: the record coordinate (the record dimension's own variable), decomposed fields (their
    last dimensions have the lengths of the decomposition's grid; before them at most one level dimension, and
    the record dimension first or not at all) and undistributed variables (everything else: coordinates,
    bounds)."""
    records = [n for n, length in f.dims if length == UNLIMITED]
    if not records:
        raise CallError(f"{f.path}: define the record dimension (length CLIMIO_UNLIMITED): climio writes records")
    layout = Layout(records[0])
    grid = f.decomp.grid
    for v in f.variables:
        names = tuple(f.dims[d][0] for d in v.dimids)
        lengths = tuple(f.dims[d][1] for d in v.dimids)
        if names == (layout.record,) and v.name == layout.record:
            if v.dtype != np.dtype("f8"):
                raise CallError(f"{f.path}: the record coordinate '{v.name}' is CLIMIO_DOUBLE")
            layout.time_attrs = v.attrs
            continue
        has_records = bool(names) and names[0] == layout.record
        inner, inner_lengths = names[has_records:], lengths[has_records:]
        if layout.record in inner:
            raise CallError(f"{f.path}: variable '{v.name}' {names}: the record dimension comes first")
        if len(inner) < len(grid) or inner_lengths[len(inner) - len(grid):] != grid or len(inner) > len(grid) + 1:
            if v.deflate or v.quantize:
                raise CallError(f"{f.path}: variable '{v.name}' is not decomposed: climio compresses decomposed "
                                f"fields only")
            layout.variables.append(ncio.Variable(v.name, v.dtype, names, dict(v.attrs)))
            continue
        grid_names = inner[len(inner) - len(grid):]
        if layout.grid_names not in (None, grid_names):
            raise CallError(f"{f.path}: variable '{v.name}' names the grid {grid_names}, others "
                            f"{layout.grid_names}: use one set of grid dimensions")
        layout.grid_names = grid_names
        level = len(inner) > len(grid)
        layout.fields.append(Field(v.name, inner_lengths[0] if level else None, v.dtype.str, dict(v.attrs),
                                   v.deflate, v.quantize, level_dim=inner[0] if level else None,
                                   records=has_records))
    if layout.grid_names is None:
        raise CallError(f"{f.path}: no variable has the decomposition's grid {grid} as its last dimensions")
    return layout


def record_of(f: Definition, v: Variable, frame: int, records: bool) -> int | None:
    """The record of ``frame`` (None for NOFRAME), checked against whether the variable has records."""
    if records and frame < 0:
        raise CallError(f"{f.path}: variable '{v.name}': frame {frame} must be >= 0 (0-based from C, 1-based from "
                        f"Fortran)")
    if not records and frame != NOFRAME:
        raise CallError(f"{f.path}: variable '{v.name}' has no record dimension: pass CLIMIO_NOFRAME, not {frame}")
    return frame if records else None


def out_of_range(values: np.ndarray, target: np.dtype) -> str:
    """Why ``values`` cannot be converted to ``target`` without altering them, or ''."""
    if values.dtype == target:
        return ""
    if values.dtype.kind == "f" and target.kind != "f":
        return f"write or read it through an integer array, not {values.dtype.name} (climio does not round)"
    if np.can_cast(values.dtype, target) or not values.size:
        return ""
    info = np.iinfo(target) if target.kind in "iu" else np.finfo(target)
    finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
    if finite.size and (finite.min() < info.min or finite.max() > info.max):
        return (f"values from {finite.min()} to {finite.max()} do not fit in {target.name} ({info.min} to {info.max})")
    return ""
