"""The four storage modes of seed 002 (PISM), and which of them this machine can run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from climio.errors import ClimioError

# netCDF classic formats store each variable (one record of a record variable)
# with a 32-bit size field: 2**32 - 4 bytes is the most a CDF-2 variable can hold.
CDF2_VARIABLE_LIMIT = 2**32 - 4

# Types the CDF-1/CDF-2 formats cannot store (CDF-5 and netCDF-4 can).
CDF2_FORBIDDEN_KINDS = {np.dtype(t) for t in ("u2", "u4", "i8", "u8")}


@dataclass(frozen=True)
class Mode:
    """One way of writing a file: its netCDF format, and whether all ranks write it."""

    name: str
    nc_format: str
    parallel: bool
    library: str
    summary: str

    @property
    def variable_limit(self) -> int | None:
        return CDF2_VARIABLE_LIMIT if self.nc_format == "NETCDF3_64BIT_OFFSET" else None


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode("serial", "NETCDF3_64BIT_OFFSET", False, "netCDF-C",
             "classic 64-bit offset (CDF-2) written by rank 0 after gathering (the baseline)"),
        Mode("hdf5", "NETCDF4", True, "HDF5", "netCDF-4/HDF5 written collectively by all ranks"),
        Mode("cdf2", "NETCDF3_64BIT_OFFSET", True, "PnetCDF", "CDF-2 (64-bit offset) via PnetCDF, collective"),
        Mode("cdf5", "NETCDF3_64BIT_DATA", True, "PnetCDF",
             "CDF-5 (64-bit data, variables over 4 GiB) via PnetCDF, collective"),
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


def available_modes() -> list[str]:
    """Modes whose library support was compiled into the netCDF binding here."""
    import netCDF4

    out = ["serial"]
    if netCDF4.__has_parallel4_support__:
        out.append("hdf5")
    if netCDF4.__has_pnetcdf_support__:
        out += ["cdf2", "cdf5"]
    return out


def get_mode(name: str) -> Mode:
    """The named mode, or a one-line error listing the ones that work here."""
    if name not in MODES:
        raise ClimioError(f"unknown mode '{name}' (--mode): choose one of {', '.join(MODES)}", collective=True)
    if name not in available_modes():
        raise ClimioError(f"mode '{name}' (--mode) is not available: this netCDF library was built without "
                          f"{MODES[name].library}; available here: {', '.join(available_modes())}",
                          collective=True)
    return MODES[name]
