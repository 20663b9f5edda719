"""One Dataset interface over four storage modes; the only place that touches a file library.

    schema = Schema(dims={"time": None, "lat": 192, "lon": 288},
                    variables=[Variable("pr", "f4", ("time", "lat", "lon"), {"units": "kg m-2 s-1"})])
    with ncio.create("pr.nc", schema, mode="cdf5", comm=comm) as ds:
        ds.write("lat", lat)                        # whole variable, from rank 0
        ds.write("pr", block, decomp.owned(rank))   # every rank its own hyperslab, collectively
    with ncio.open("pr.nc", comm=comm) as ds:
        block = ds.read("pr", decomp.owned(rank))   # in parallel (read="root": rank 0 reads, scatters)

Modes: ``serial`` (CDF-2 by rank 0 after a gather), ``hdf5`` and ``hdf5-classic`` (netCDF-4,
collective), ``cdf1``, ``cdf2`` and ``cdf5`` (PnetCDF, collective); see :mod:`climio.core.ncio.modes`,
which also says what one process, or a netCDF-C without parallel libraries, does instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from climio.core import mpi, targets
from climio.core.decomp import Hyperslab
from climio.core.ncio.classic import ClassicLayout, HeaderError
from climio.core.ncio.compression import Compression, Settings
from climio.core.ncio.modes import (FORMAT_READ_MODE, FORMAT_WRITE_MODE, FORMATS, MODES, Mode, available_modes,
                                   get_mode, one_writer_note, writing_mode)
from climio.core.ncio.schema import Schema, Variable, compressed
from climio.core.ncio.space import check_new_file
from climio.core.ncio.store import Store, check_output, check_schema_fits, reserve_output, skipped_of, text_of
from climio.core.targets import PENDING_OUTPUTS, check_input, discard_pending_outputs
from climio.errors import ClimioError

if TYPE_CHECKING:
    import netCDF4
    from mpi4py import MPI

__all__ = ["FORMAT_WRITE_MODE", "MODES", "Compression", "Hyperslab", "Settings", "Mode", "Schema", "Store", "Variable",
           "available_modes",
           "check_output", "create", "discard_pending_outputs",
           "get_mode", "load_library", "open", "writing_mode"]

READ_STRATEGIES = ("parallel", "independent", "root")
TEXT_LIMIT = 256 * 2**20  # char/string variables are read whole on rank 0 and broadcast: labels, not data


def load_library() -> None:
    """Import netCDF4-python now (it loads netCDF-C, HDF5 and PnetCDF: ~0.03 s, like any import).
    ``open`` and ``create`` do it on first use; a job that times itself does it before its clock."""
    import importlib

    importlib.import_module("netCDF4")


# The keywords of the Python API's writers by the commands' flags, which the storage layer's checks name
# (climio.errors.api_words): ds.climio.to_netcdf(overwrite=True, mode=..., deflate=..., ppc=[...]), ModelOutput.
API_WORDS = {"--overwrite (-O)": "overwrite=True", "--overwrite": "overwrite=True", "--mode": "mode",
             "-L": "deflate", "--ppc": "ppc", "--cnk_dmn": "chunk_sizes", "--cmp": "cmp"}


def create(path: str, schema: Schema, mode: str = "cdf5", comm: MPI.Comm | None = None, *,
           overwrite: bool = False, hints: Mapping[str, str] | None = None,
           compress: Settings | None = None, chosen: bool = True, aggregated: bool = False,
           one_writer: bool = False) -> Store:
    """Create ``path`` with ``schema`` in ``mode`` on every rank of ``comm`` (collective); ``compress`` applies
    NCO-style ``-L``/``--ppc`` settings to the schema's variables. ``chosen``: the user named the mode (else the
    job picked it, and rank 0 may write it where its parallel library is missing: :func:`modes.writing_mode`).
    ``aggregated``: the ranks' hyperslabs are large and contiguous already (model output's aggregators), so
    each rank may write its own without MPI-IO's collective aggregation (classic files). ``one_writer``: only
    rank 0 has data to write, so a netCDF-4 file is written by rank 0 alone through serial HDF5, without parallel
    HDF5's collective calls for each variable in which the other ranks would wait."""
    from climio.core.ncio.parallel_ import ParallelStore
    from climio.core.ncio.serial_ import SerialStore

    comm = comm if comm is not None else mpi.world()
    if compress is not None and compress.active:
        schema = compressed(schema, compress)
    how = writing_mode(mode, comm.Get_size(), chosen=chosen)
    check_schema_fits(schema, how, path)
    targets.check_netcdf_suffix(path, how)
    if how.parallel:
        mpi.check_mpi_io_path(path)
    temp_path = mpi.agree(comm, lambda: reserve_output(path, overwrite))
    PENDING_OUTPUTS.add(temp_path)
    note = one_writer_note(path, how, comm.Get_size())
    if note and comm.Get_rank() == 0:
        print(note, file=sys.stderr)
    try:
        check_new_file(comm, temp_path, path)
        if how.parallel and not (one_writer and how.format.hdf5):
            return ParallelStore.create(path, temp_path, schema, how, comm, hints, overwrite, aggregated)
        return SerialStore.create(path, temp_path, schema, how, comm, overwrite)
    except BaseException:
        if comm.Get_rank() == 0:
            discard_pending_outputs()
        raise


def _classic_layout(path: str) -> ClassicLayout | None:
    """A classic file's layout (None for others), refusing a header that is invalid or claims more bytes than the
    file has."""
    actual = os.path.getsize(path)
    try:
        layout = ClassicLayout.read(path)
    except EOFError:
        raise ClimioError(f"input file '{path}' is truncated or corrupt: its header runs past the end of its "
                          f"{actual} bytes; copy or regenerate it") from None
    except HeaderError as err:
        raise ClimioError(f"input file '{path}' has an invalid netCDF classic header ({err}): "
                          "check it with ncdump -h, or copy it again") from err
    except OSError as err:
        raise ClimioError(f"input file '{path}' cannot be read: {err.strerror}") from err
    if layout is not None and actual < layout.required_size():
        needs = f"counts {layout.numrecs} records, which need" if layout.records else "needs"
        raise ClimioError(f"input file '{path}' is truncated or corrupt: its header {needs} {layout.required_size()} "
                          f"bytes but the file has {actual}; copy or regenerate it")
    return layout


Inspected = tuple[str, ClassicLayout | None, dict[str, np.ndarray], list[str], dict[str, tuple[int, ...]]]


def _inspect(path: str, keep: list[netCDF4.Dataset] | None = None) -> Inspected:
    """On one rank: check ``path`` is a readable netCDF file; return its format, its classic layout, its text
    variables (whole), what climio leaves out of it, and the chunks of its chunked variables. ``keep``: where
    to leave the file's handle open, for a store of this process alone to read through (else it is closed)."""
    import netCDF4

    check_input(path)
    layout = _classic_layout(path)  # before netCDF-C reads it: a corrupt header can crash or balloon the library
    try:
        dataset = netCDF4.Dataset(path, "r")
    except OSError as err:
        raise ClimioError(f"input file '{path}' is not a readable netCDF file ({err.strerror or err}): "
                          "check it is complete (ncdump -h)") from err
    try:
        data_model = str(dataset.data_model)
        text, skipped = text_of(dataset), skipped_of(dataset)
        chunking = {name: tuple(int(c) for c in chunks) for name, v in dataset.variables.items()
                    if isinstance(chunks := v.chunking(), list)} if FORMATS[data_model].hdf5 else {}
        text_bytes = sum(v.nbytes for v in text.values())
        if text_bytes > TEXT_LIMIT:
            raise ClimioError(f"input file '{path}': its char/string variables hold {text_bytes / 2**20:.0f} MiB, "
                              f"over the {TEXT_LIMIT // 2**20} MiB climio moves whole through one rank; select "
                              f"with -v")
    except BaseException:
        dataset.close()
        raise
    if keep is None:
        dataset.close()
    else:
        keep.append(dataset)
    return data_model, layout, text, skipped, chunking


def open(path: str, comm: MPI.Comm | None = None, *, read: str = "parallel",
         hints: Mapping[str, str] | None = None) -> Store:
    """Open ``path`` for reading on every rank of ``comm`` (collective).

    ``read="parallel"`` (default) has every rank read its own hyperslabs through
    PnetCDF or parallel HDF5, whatever wrote the file, or, where netCDF-C has neither,
    through its own serial handle (independent reads); ``read="independent"`` reads
    through each rank's own serial handle always (on one process, the one that checked
    the file: one open per file, for opening many files at once); ``read="root"`` is
    the baseline where rank 0 reads and sends each rank its part.
    """
    from climio.core.ncio.independent_ import IndependentStore
    from climio.core.ncio.parallel_ import ParallelStore
    from climio.core.ncio.serial_ import SerialStore

    if read not in READ_STRATEGIES:
        raise ClimioError(f"unknown read strategy '{read}': choose one of {', '.join(READ_STRATEGIES)}",
                          collective=True)
    comm = comm if comm is not None else mpi.world()
    kept: list[netCDF4.Dataset] = []
    alone = read == "independent" and comm.Get_size() == 1
    data_model, layout, text, skipped, chunking = _inspect(path, kept) if alone else \
        mpi.agree(comm, lambda: _inspect(path))
    mode = MODES[FORMAT_READ_MODE[data_model]]
    if read == "root":
        store: Store = SerialStore.open(path, MODES["serial"], comm)
    elif read == "independent" or mode.name not in available_modes():
        store = IndependentStore.open(path, mode, comm, kept[0] if kept else None)
    else:
        mpi.check_mpi_io_path(path)
        store = ParallelStore.open(path, mode, comm, hints)
    store.data_model, store.layout, store.text, store.skipped = data_model, layout, text, skipped
    store.chunking = chunking
    return store
