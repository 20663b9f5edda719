"""The table of storage modes and of the netCDF formats they write: every other module asks it.

A mode of an existing library is one :func:`register` call (or one entry below); a new library is one store
module plus its entries. Facts about a format (its layout, its data model, what one variable may hold) live in
:data:`FORMATS`, so no module tests a format's name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from climio.errors import ClimioError

# netCDF classic formats store each variable (one record of a record variable)
# with a 32-bit size field: 2**32 - 4 bytes is the most a CDF-2 variable can hold,
# and CDF-1's signed 32-bit offsets keep one under 2 GiB.
CDF2_VARIABLE_LIMIT = 2**32 - 4
CDF1_VARIABLE_LIMIT = 2**31 - 4

# Types the CDF-1/CDF-2 and netCDF-4 classic-model formats cannot store (CDF-5 and netCDF-4 store all but
# strings, which only netCDF-4 has): the unsigned and 64-bit integers, and NC_STRING (numpy object).
CDF2_FORBIDDEN_KINDS = {np.dtype(t) for t in ("u2", "u4", "i8", "u8")}


@dataclass(frozen=True)
class Format:
    """What one on-disk netCDF format (netCDF4-python's name for it) can hold, and how climio treats its files."""

    name: str
    classic_layout: bool  # a classic file (CDF-1/2/5): a header, then data at offsets that follow from it
    classic_model: bool  # CDF types only: no 64-bit or unsigned integers but u1 (CDF-5 has them), no strings
    variable_limit: int | None  # the most bytes one variable (one record of a record variable) may hold
    read_mode: str  # the mode that reads a file of this format in parallel
    write_mode: str  # the mode that writes a file in this format (a subset keeps its input's format, as NCO)

    @property
    def hdf5(self) -> bool:
        """netCDF-4: HDF5 storage, whose variables may be chunked and filtered (compressed)."""
        return not self.classic_layout

    @property
    def enhanced(self) -> bool:
        """The netCDF-4 enhanced model: strings, and an unlimited dimension after others (netCDF-C's
        NC_EUNLIMPOS refuses that in the classic model)."""
        return self.hdf5 and not self.classic_model


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("NETCDF3_CLASSIC", True, True, CDF1_VARIABLE_LIMIT, "cdf2", "cdf1"),
        Format("NETCDF3_64BIT_OFFSET", True, True, CDF2_VARIABLE_LIMIT, "cdf2", "cdf2"),
        Format("NETCDF3_64BIT_DATA", True, False, None, "cdf5", "cdf5"),
        Format("NETCDF4", False, False, None, "hdf5", "hdf5"),
        Format("NETCDF4_CLASSIC", False, True, None, "hdf5", "hdf5-classic"),
    )
}

# The mode that reads a file of each on-disk format by default (in parallel), and the one that writes a file in
# the same format as an input (what NCO does: a subset stays in its input's format).
FORMAT_READ_MODE = {f.name: f.read_mode for f in FORMATS.values()}
FORMAT_WRITE_MODE = {f.name: f.write_mode for f in FORMATS.values()}

# The strategies of model output (climio.model.strategy) that write each kind of mode.
EVERY_STRATEGY = ("direct", "root", "rows", "cols", "agg", "stripe", "auto")
ONE_WRITER = ("root", "auto")


@dataclass(frozen=True)
class Mode:
    """One way of writing a file: its netCDF format, and whether all ranks write it."""

    name: str
    nc_format: str
    parallel: bool
    library: str  # the library that writes it: netCDF-C, HDF5 or PnetCDF
    summary: str
    strategies: tuple[str, ...] = ()  # the model output strategies that write this mode (none: model output
    #                                   does not offer it; it keeps an input's format for subset and eva)

    @property
    def format(self) -> Format:
        return FORMATS[self.nc_format]

    @property
    def library_need(self) -> str:
        """The library several ranks need to write this mode's file at once."""
        return "parallel HDF5" if self.library == "HDF5" else self.library

    @property
    def variable_limit(self) -> int | None:
        return self.format.variable_limit

    @property
    def compressible(self) -> bool:
        """Whether variables may be chunked and filtered (deflate, quantization): netCDF-4 formats only."""
        return self.format.hdf5

    @property
    def unlimited_anywhere(self) -> bool:
        """Whether a variable's unlimited dimension may come after others (netCDF-4 only; the classic model
        wants it first, netCDF-C's NC_EUNLIMPOS)."""
        return self.format.enhanced

    def stores(self, dtype: np.dtype) -> bool:
        """Whether this mode's format has the type: classic-model formats lack 64-bit and unsigned integers
        (but ``u1``), and only netCDF-4 has strings."""
        if dtype.kind == "O":
            return self.format.enhanced
        return not (self.format.classic_model and dtype in CDF2_FORBIDDEN_KINDS)


MODES: dict[str, Mode] = {}


def register(mode: Mode) -> Mode:
    """Add ``mode`` to the table every command, store and API reads its modes from; returns it."""
    if mode.nc_format not in FORMATS:
        raise ValueError(f"mode '{mode.name}': unknown netCDF format '{mode.nc_format}' (one of {', '.join(FORMATS)})")
    MODES[mode.name] = mode
    return mode


for _mode in (
    Mode("serial", "NETCDF3_64BIT_OFFSET", False, "netCDF-C",
         "classic 64-bit offset (CDF-2) written by rank 0 after gathering (the baseline)", ONE_WRITER),
    Mode("hdf5", "NETCDF4", True, "HDF5", "netCDF-4/HDF5 written collectively by all ranks",
         tuple(s for s in EVERY_STRATEGY if s != "stripe")),
    Mode("cdf2", "NETCDF3_64BIT_OFFSET", True, "PnetCDF", "CDF-2 (64-bit offset) via PnetCDF, collective",
         EVERY_STRATEGY),
    Mode("cdf5", "NETCDF3_64BIT_DATA", True, "PnetCDF",
         "CDF-5 (64-bit data, variables over 4 GiB) via PnetCDF, collective", EVERY_STRATEGY),
    Mode("cdf1", "NETCDF3_CLASSIC", True, "PnetCDF", "CDF-1 (classic, variables under 2 GiB) via PnetCDF, "
         "collective: keeps a CDF-1 input's format"),
    Mode("hdf5-classic", "NETCDF4_CLASSIC", True, "HDF5", "netCDF-4 classic model (HDF5 storage, CDF types) "
         "written collectively: keeps a classic-model input's format"),
):
    register(_mode)


def output_modes() -> tuple[str, ...]:
    """The modes model output writes (and its benchmarks compare), in the table's order."""
    return tuple(name for name, mode in MODES.items() if mode.strategies)


def available_modes() -> list[str]:
    """Modes all ranks of a job can write at once here: those of netCDF-C itself (``serial``), then those whose
    parallel library (parallel HDF5, PnetCDF) was compiled into the netCDF binding. On one process every mode
    works, whatever was."""
    import netCDF4

    built = {"netCDF-C": True, "HDF5": bool(netCDF4.__has_parallel4_support__),
             "PnetCDF": bool(netCDF4.__has_pnetcdf_support__)}
    return [name for library in built if built[library] for name, mode in MODES.items() if mode.library == library]


def get_mode(name: str) -> Mode:
    """The named mode, or a one-line error listing them."""
    if name not in MODES:
        raise ClimioError(f"unknown mode '{name}' (--mode): choose one of {', '.join(MODES)}", collective=True)
    return MODES[name]


def writing_mode(name: str, ranks: int, *, chosen: bool = True) -> Mode:
    """How ``ranks`` ranks write a file in mode ``name`` here.

    A collective mode needs its parallel library only when several ranks write one file at once: on one process
    netCDF-C writes every format itself (PyPI's netCDF4 wheels have HDF5 but neither PnetCDF nor parallel HDF5).
    With several ranks and no such library, a mode the user ``chosen`` is refused, naming what to install; a
    format the job picked itself (an input's, or a default) is written by rank 0 after gathering, as ``serial``
    writes, and :func:`one_writer_note` says so."""
    mode = get_mode(name)
    if not mode.parallel or name in available_modes():
        return mode
    if ranks > 1 and chosen:
        raise ClimioError(f"mode '{name}' (--mode) needs {mode.library_need} for {ranks} ranks to write one file, "
                          f"and this netCDF4-python was built without it: run on one process, choose --mode serial "
                          f"(rank 0 writes after gathering), or install netCDF4-python over a netCDF-C built with "
                          f"{mode.library_need} (docs/install.md)", collective=True)
    return replace(mode, parallel=False)


def one_writer_note(path: str, mode: Mode, ranks: int) -> str:
    """What a job says when rank 0 writes ``path`` for lack of ``mode``'s parallel library; "" when it need not."""
    if ranks == 1 or mode.parallel or mode.name == "serial":
        return ""
    return (f"climio: note: rank 0 writes {path} ({mode.nc_format}) after gathering: this netCDF4-python has no "
            f"{mode.library_need} for all {ranks} ranks to write it at once (climio info)")
