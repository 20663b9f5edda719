"""The four storage modes of seed 002 (PISM), and which of them this machine can run."""

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
CLASSIC_MODEL_FORMATS = ("NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF4_CLASSIC")


@dataclass(frozen=True)
class Mode:
    """One way of writing a file: its netCDF format, and whether all ranks write it."""

    name: str
    nc_format: str
    parallel: bool
    library: str
    summary: str

    @property
    def library_need(self) -> str:
        """The library several ranks need to write this mode's file at once."""
        return "parallel HDF5" if self.library == "HDF5" else self.library

    @property
    def variable_limit(self) -> int | None:
        return {"NETCDF3_64BIT_OFFSET": CDF2_VARIABLE_LIMIT, "NETCDF3_CLASSIC": CDF1_VARIABLE_LIMIT}.get(self.nc_format)

    @property
    def unlimited_anywhere(self) -> bool:
        """Whether a variable's unlimited dimension may come after others (netCDF-4 only; the classic model
        wants it first, netCDF-C's NC_EUNLIMPOS)."""
        return self.nc_format == "NETCDF4"

    def stores(self, dtype: np.dtype) -> bool:
        """Whether this mode's format has the type: classic-model formats lack 64-bit and unsigned integers
        (but ``u1``), and only netCDF-4 has strings."""
        if dtype.kind == "O":
            return self.nc_format == "NETCDF4"
        return not (self.nc_format in CLASSIC_MODEL_FORMATS and dtype in CDF2_FORBIDDEN_KINDS)


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode("serial", "NETCDF3_64BIT_OFFSET", False, "netCDF-C",
             "classic 64-bit offset (CDF-2) written by rank 0 after gathering (the baseline)"),
        Mode("hdf5", "NETCDF4", True, "HDF5", "netCDF-4/HDF5 written collectively by all ranks"),
        Mode("cdf2", "NETCDF3_64BIT_OFFSET", True, "PnetCDF", "CDF-2 (64-bit offset) via PnetCDF, collective"),
        Mode("cdf5", "NETCDF3_64BIT_DATA", True, "PnetCDF",
             "CDF-5 (64-bit data, variables over 4 GiB) via PnetCDF, collective"),
        Mode("cdf1", "NETCDF3_CLASSIC", True, "PnetCDF", "CDF-1 (classic, variables under 2 GiB) via PnetCDF, "
             "collective: keeps a CDF-1 input's format"),
        Mode("hdf5-classic", "NETCDF4_CLASSIC", True, "HDF5", "netCDF-4 classic model (HDF5 storage, CDF types) "
             "written collectively: keeps a classic-model input's format"),
    )
}

# The mode a file of each on-disk format is read with by default (in parallel).
FORMAT_READ_MODE = {
    "NETCDF3_CLASSIC": "cdf2",
    "NETCDF3_64BIT_OFFSET": "cdf2",
    "NETCDF3_64BIT_DATA": "cdf5",
    "NETCDF4": "hdf5",
    "NETCDF4_CLASSIC": "hdf5",
}


# The mode that writes a file in the same format as an input (what NCO does): a subset stays in its input's format.
FORMAT_WRITE_MODE = {
    "NETCDF3_CLASSIC": "cdf1",
    "NETCDF3_64BIT_OFFSET": "cdf2",
    "NETCDF3_64BIT_DATA": "cdf5",
    "NETCDF4": "hdf5",
    "NETCDF4_CLASSIC": "hdf5-classic",
}


def available_modes() -> list[str]:
    """Modes all ranks of a job can write at once here: ``serial`` and those whose parallel library (PnetCDF,
    parallel HDF5) was compiled into the netCDF binding. On one process every mode works, whatever was."""
    import netCDF4

    out = ["serial"]
    if netCDF4.__has_parallel4_support__:
        out += ["hdf5", "hdf5-classic"]
    if netCDF4.__has_pnetcdf_support__:
        out += ["cdf2", "cdf5", "cdf1"]
    return out


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
