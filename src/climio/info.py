"""``climio info``: library versions, and which storage modes really work here.

A mode "works" when a small file written in it by every rank of the job reads
back exactly: compile-time flags alone do not catch a broken MPI-IO setup. Where
netCDF-C lacks a mode's parallel library, the mode still works on one process.
"""

from __future__ import annotations

import os
import platform
from typing import TYPE_CHECKING

import numpy as np

import climio
from climio.core import mpi, ncio, registry
from climio.core.decomp import Decomposition
from climio.core.ncio import libnetcdf
from climio.core.ncio.compression import available_filters
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI


def versions() -> dict[str, str]:
    import mpi4py
    import netCDF4
    from mpi4py import MPI

    return {
        "climio": climio.__version__,
        "python": platform.python_version(),
        # Open MPI ends its version string with a NUL
        "MPI library": MPI.Get_library_version().replace("\x00", "").splitlines()[0].strip(),
        "MPI standard": "{}.{}".format(*MPI.Get_version()),
        "mpi4py": mpi4py.__version__,
        "netCDF-C": libnetcdf.netcdf_version(),
        "HDF5": str(netCDF4.__hdf5libversion__),
        "PnetCDF": libnetcdf.pnetcdf_version() or "not built in",
        "netCDF4-python": netCDF4.__version__,
        "numpy": np.__version__,
    }


def probe_mode(mode: str, directory: str, comm: MPI.Comm) -> str:
    """Write and read back a small decomposed file in ``mode`` on all ranks; 'works' or the reason not."""
    size, rank = comm.Get_size(), comm.Get_rank()
    decomp = Decomposition.block1d((3, 4 * size, 5), size, axis=1)
    schema = ncio.Schema({"time": None, "y": 4 * size, "x": 5},
                         (ncio.Variable("v", "f4", ("time", "y", "x")),))
    expected = np.arange(3 * 4 * size * 5, dtype="f4").reshape(3, 4 * size, 5)
    owned = decomp.owned(rank)
    path = os.path.join(directory, f"probe-{mode}.nc")
    try:
        with ncio.create(path, schema, mode, comm, overwrite=True) as ds:
            ds.write("v", expected[owned.slices], owned)
        with ncio.open(path, comm) as ds:
            ok = np.array_equal(ds.read("v", owned), expected[owned.slices])
    except (ClimioError, RuntimeError) as err:
        return f"fails: {err}"
    return "works" if mpi.all_true(comm, ok) else "fails: data read back differ"


def probe_compression(directory: str, comm: MPI.Comm) -> str:
    """Write a deflated, quantized record in parallel (hdf5 mode) on all ranks and read it back."""
    size, rank = comm.Get_size(), comm.Get_rank()
    schema = ncio.Schema({"time": None, "y": 4 * size, "x": 5},
                         (ncio.Variable("v", "f4", ("time", "y", "x"), chunks=(1, 4 * size, 5),
                                        compression=ncio.Compression(1, True, ("GranularBR", 3))),))
    expected = np.full((1, 4, 5), 0.5, "f4")  # exact at 3 significant digits
    owned = ncio.Hyperslab((0, 4 * rank, 0), (1, 4, 5))
    path = os.path.join(directory, "probe-compressed.nc")
    try:
        with ncio.create(path, schema, "hdf5", comm, overwrite=True) as ds:
            ds.write("v", expected, owned)
        with ncio.open(path, comm) as ds:
            ok = np.array_equal(ds.read("v", owned), expected)
    except (ClimioError, RuntimeError) as err:
        return f"fails: {err}"
    return "works" if mpi.all_true(comm, ok) else "fails: data read back differ"


def report(comm: MPI.Comm, directory: str | None = None) -> list[str]:
    """Lines of the ``climio info`` report (probing is collective; rank 0 prints them)."""
    lines = [f"{key:<15} {value}" for key, value in versions().items()]
    lines.append(f"{'ranks':<15} {comm.Get_size()}")
    available = ncio.available_modes()
    shared = comm.bcast(registry.scratch_directory("climio-info-", directory) if comm.Get_rank() == 0 else None)
    try:
        lines.append("modes:")
        for name, mode in ncio.MODES.items():
            if name in available:
                status = probe_mode(name, shared, comm)
            elif comm.Get_size() == 1:  # netCDF-C writes every format on one process (ncio.writing_mode)
                status = f"{probe_mode(name, shared, comm)} on one process (no {mode.library_need} for several ranks)"
            else:
                status = f"needs {mode.library_need}, not built in"
            lines.append(f"  {name:<7} {status:<6}  {mode.summary}")
        filters = comm.bcast(available_filters() if comm.Get_rank() == 0 else None)
        lines.append("compression (hdf5 mode): " + ", ".join(f"{name} {'yes' if ok else 'no'}"
                                                          for name, ok in filters.items())
                     + "; quantization BitGroom, GranularBR, BitRound")
        if "hdf5" in available:
            lines.append(f"  parallel deflate + quantize: {probe_compression(shared, comm)}")
    finally:
        comm.Barrier()
        if comm.Get_rank() == 0:
            for f in os.listdir(shared):
                os.unlink(os.path.join(shared, f))
            os.rmdir(shared)
    return lines
