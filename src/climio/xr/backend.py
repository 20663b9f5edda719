"""climio as an xarray backend: ``xr.open_dataset(path, engine="climio")`` and :func:`open_mfdataset`.

Both read through :class:`climio.core.inputs.Inputs`, the object ``climio subset`` and ``climio eva`` read
their inputs with, so a file joined here is joined by the commands' rules (time rebased to the first file's
units, calendars checked, inputs sorted by time, overlaps refused). Values are read lazily, one
``Store.read`` per hyperslab xarray asks for; CF decoding is xarray's own, as for its netCDF engines, so
the Dataset is the one ``engine="netcdf4"`` gives.

A lazily opened Dataset pickles (dask's process and distributed schedulers pickle the arrays it reads): not its
open files but how to open them again (:class:`Recipe`), which a process that unpickles it does on its first
read, once for all the arrays it holds of those files (:class:`InputFiles`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.backends.common import AbstractDataStore
from xarray.backends.netCDF4_ import NETCDF4_PYTHON_LOCK
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing
from xarray.core.utils import FrozenDict

from climio.core import mpi
from climio.core.decomp import Hyperslab
from climio.core.ncio import Variable
from climio.errors import ClimioError
from climio.eva import timestep
from climio.core.inputs import Inputs, open_inputs
from climio.core.timeaxis import calendar_of, describe, time_units

if TYPE_CHECKING:
    from mpi4py import MPI

# netCDF-C and HDF5 are not thread-safe: dask's threads take turns through the netcdf4 engine's own lock (one
# lock object, so its parts are always taken in one order, whichever engine reads).
LOCK = NETCDF4_PYTHON_LOCK


def self_comm() -> MPI.Comm:
    """One process's own communicator: xarray reads lazily, whenever each process wants, so its reads must
    never be collective with other ranks (``mpi.world`` first sets up a process started without mpiexec)."""
    mpi.world()
    from mpi4py import MPI

    return MPI.COMM_SELF


@dataclass(frozen=True)
class Recipe:
    """How inputs were opened, all another process needs to open them again alike: the files in the order
    joined, the dimension joined along, and the open's checks (``label`` names it in their messages)."""

    paths: tuple[str, ...]
    join: str | None
    label: str
    allow_gaps: bool = False


def _open_checked(recipe: Recipe, comm: MPI.Comm) -> Inputs:
    """The inputs of ``recipe``, opened for independent reads and checked: no several files without a dimension
    to join along, no missing time steps between them unless ``allow_gaps``."""
    inputs = open_inputs(list(recipe.paths), comm, recipe.join, False, read="independent", label=recipe.label)
    try:
        if len(recipe.paths) > 1 and inputs.join is None:
            raise ClimioError(f"{recipe.label}: the files share no record dimension; give dim= to say which to join "
                              f"along")
        if not recipe.allow_gaps:
            _refuse_gaps(inputs, recipe.label)
    except BaseException:
        inputs.__exit__(None, None, None)
        raise
    return inputs


# Inputs opened again by a process that unpickled arrays of them, one per recipe, shared by all those arrays.
# Read, filled and emptied under LOCK only (netCDF-C opens files too).
_REOPENED: dict[Recipe, Inputs] = {}


class InputFiles:
    """The inputs of one open Dataset: in the process that opened them, those; pickled, only their recipe, and a
    process that unpickles them opens them on first use (``self_comm``: its reads are its own), once per process
    and recipe whatever the number of arrays or unpickled copies, as xarray's ``CachingFileManager`` does."""

    def __init__(self, recipe: Recipe, inputs: Inputs | None = None) -> None:
        self.recipe, self._inputs = recipe, inputs

    def acquire(self) -> Inputs:
        """The open inputs (called under LOCK where the files may have to be opened again)."""
        if self._inputs is not None:
            return self._inputs
        if self.recipe not in _REOPENED:
            _REOPENED[self.recipe] = _open_checked(self.recipe, self_comm())
        return _REOPENED[self.recipe]

    def close(self) -> None:
        """Close the files: this process's open (a later read of an unpickled copy opens them again)."""
        with LOCK:
            inputs = self._inputs if self._inputs is not None else _REOPENED.pop(self.recipe, None)
            if inputs is not None:
                inputs.__exit__(None, None, None)

    def __reduce__(self) -> tuple[type[InputFiles], tuple[Recipe]]:
        return InputFiles, (self.recipe,)


KEPT_BYTES = 2**20


class ClimioArray(BackendArray):
    """One variable of the inputs, read on demand: each request is one hyperslab read (the box around xarray's
    outer indexer), then cut to the steps and lists that xarray asked for. Pickled, it is its files' recipe,
    name, shape and type."""

    lock = LOCK  # a class attribute: an unpickled array takes the LOCK of the process it is in, not a copy

    def __init__(self, files: InputFiles, name: str) -> None:
        self.files, self.name = files, name
        inputs = files.acquire()
        self.shape = inputs.shape(name)
        self.dtype = inputs.variables[name].numpy_dtype
        # a small 1-D variable (a coordinate: xarray decodes and indexes it several times) is read whole, once
        self._keep = len(self.shape) == 1 and self.shape[0] * self.dtype.itemsize <= KEPT_BYTES
        self._whole: np.ndarray | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_whole": None}  # a kept variable is read again where it is unpickled

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.OUTER, self._read)

    def _read(self, key: tuple[Any, ...]) -> np.ndarray:
        start, count, local, drop = [], [], [], []
        for axis, (index, size) in enumerate(zip(key, self.shape)):
            if isinstance(index, slice):
                first, stop, step = index.indices(size)
                n = len(range(first, stop, step))
                start.append(first if n else 0)
                count.append((n - 1) * step + 1 if n else 0)
                local.append(slice(None, None, step))
            elif isinstance(index, (int, np.integer)):
                start.append(int(index))
                count.append(1)
                local.append(slice(None))
                drop.append(axis)
            else:  # a 1-D integer array (outer indexing): read from its smallest to its largest index
                index = np.asarray(index)
                low = int(index.min()) if index.size else 0
                start.append(low)
                count.append(int(index.max()) - low + 1 if index.size else 0)
                local.append(index - low)
        slab = Hyperslab(tuple(start), tuple(count))
        if self._keep:
            if self._whole is None:
                with self.lock:
                    self._whole = self.files.acquire().read(self.name, Hyperslab.whole(self.shape))
            data = self._whole[start[0]:start[0] + count[0]].copy()
        else:
            with self.lock:  # a scalar through read_runs, as climio subset reads it (Store.read wants an axis)
                inputs = self.files.acquire()
                data = inputs.read(self.name, slab) if self.shape else inputs.read_runs(self.name, [slab])[0]
        data = data[tuple(k if isinstance(k, slice) else slice(None) for k in local)]
        for axis, k in enumerate(local):
            if not isinstance(k, slice):
                data = np.take(data, k, axis=axis)  # one axis at a time: outer, not vectorized, indexing
        return data.reshape([n for axis, n in enumerate(data.shape) if axis not in drop]) if drop else data


class ClimioDataStore(AbstractDataStore):
    """The inputs as xarray's raw (undecoded) variables, dimensions and attributes. Pickled (a Dataset keeps its
    store's ``close``), it is its files' recipe."""

    def __init__(self, files: InputFiles) -> None:
        self.files = files
        # every file read and the dimension they are joined along, on the Dataset and each variable: what
        # .climio.subset cuts again from disk
        self._sources = {"climio_sources": files.recipe.paths, "climio_join": files.recipe.join}

    @property
    def inputs(self) -> Inputs:
        return self.files.acquire()

    def open_store_variable(self, name: str, var: Variable) -> xr.Variable:
        if var.is_text:
            data: Any = self.inputs.read_text(name)
        else:
            data = indexing.LazilyIndexedArray(ClimioArray(self.files, name))
        encoding: dict[str, Any] = {"source": self.inputs.paths[self.inputs.source[name]],
                                    "original_shape": self.inputs.shape(name), **self._sources}
        if self.inputs.stores[0].format.hdf5:  # climio keeps chunks of filtered variables only
            level, chunked = var.compression.deflate, var.chunks is not None
            encoding.update(zlib=level > 0, complevel=level, shuffle=chunked and var.compression.shuffle,
                            contiguous=not chunked, chunksizes=var.chunks)
        return xr.Variable(var.dims, data, dict(var.attrs), encoding)

    def get_variables(self) -> FrozenDict:
        return FrozenDict((name, self.open_store_variable(name, var)) for name, var in self.inputs.variables.items())

    def get_attrs(self) -> FrozenDict:
        return FrozenDict(self.inputs.attrs)

    def get_dimensions(self) -> FrozenDict:
        return FrozenDict(self.inputs.dims)

    def get_encoding(self) -> dict[str, Any]:
        return {"unlimited_dims": set(self.inputs.unlimited), "source": self.inputs.paths[0], **self._sources}

    def close(self) -> None:
        self.files.close()


def _dataset(recipe: Recipe, comm: MPI.Comm, **decode: Any) -> xr.Dataset:
    """The inputs of ``recipe`` decoded by xarray's own store entry point (the CF rules of its netCDF engines);
    the recipe kept is the open's own (files in joined order, the dimension found)."""
    inputs = _open_checked(recipe, comm)
    store = ClimioDataStore(InputFiles(replace(recipe, paths=tuple(inputs.paths), join=inputs.join), inputs))
    try:
        return StoreBackendEntrypoint().open_dataset(store, **decode)
    except BaseException:
        store.close()
        raise


class ClimioBackendEntrypoint(BackendEntrypoint):
    """``xr.open_dataset(path, engine="climio")``: a netCDF file read lazily through climio's storage layer."""

    description = "Open netCDF files (classic, CDF-5, netCDF-4) through climio's storage layer"
    url = "docs/xarray.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "mask_and_scale", "decode_times",
                               "concat_characters", "decode_coords", "use_cftime", "decode_timedelta", "comm")

    def open_dataset(self, filename_or_obj: str | os.PathLike[str], *,
                     drop_variables: str | Iterable[str] | None = None, mask_and_scale: bool = True,
                     decode_times: bool = True, concat_characters: bool = True, decode_coords: bool | str = True,
                     use_cftime: bool | None = None, decode_timedelta: bool | None = None,
                     comm: MPI.Comm | None = None) -> xr.Dataset:
        """``comm``: the communicator of the reads (default: this process alone)."""
        return _dataset(Recipe((os.fspath(filename_or_obj),), None, "open_dataset"), comm or self_comm(),
                        drop_variables=drop_variables, mask_and_scale=mask_and_scale, decode_times=decode_times,
                        concat_characters=concat_characters, decode_coords=decode_coords, use_cftime=use_cftime,
                        decode_timedelta=decode_timedelta)

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        return isinstance(filename_or_obj, (str, os.PathLike)) and \
            os.path.splitext(os.fspath(filename_or_obj))[1] in (".nc", ".nc4", ".cdf")


def open_mfdataset(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], dim: str | None = None, *,
                   allow_gaps: bool = False, chunks: Any = None, comm: MPI.Comm | None = None,
                   **decode: Any) -> xr.Dataset:
    """Many files joined along time as ``climio subset`` and ``climio eva`` join them, lazily.

    ``paths``: a glob pattern or a list of files; ``dim``: the joined dimension (default: the record dimension
    the files share). Times are rebased to the earliest file's units, calendars must agree, the files are
    taken in time order, and overlapping files are refused; so are missing time steps between files unless
    ``allow_gaps``. ``chunks`` as in ``xr.open_dataset`` (dask); ``decode`` takes its CF decoding options.
    """
    import glob

    if isinstance(paths, (str, os.PathLike)):
        pattern = os.fspath(paths)
        files = sorted(glob.glob(pattern))
        if not files:
            raise ClimioError(f"open_mfdataset: no file matches '{pattern}'; check the path or pattern")
    else:
        files = [os.fspath(p) for p in paths]
        if not files:
            raise ClimioError("open_mfdataset: no paths given; pass a list of files or a glob pattern")
    label = f"open_mfdataset(dim={dim!r})" if dim else "open_mfdataset"
    dataset = _dataset(Recipe(tuple(files), dim, label, allow_gaps), comm or self_comm(), **decode)
    return dataset if chunks is None else dataset.chunk(chunks)


def _refuse_gaps(inputs: Inputs, label: str) -> None:
    """Missing time steps between consecutive files (``Inputs.gaps``, eva's rule) are an error."""
    join = inputs.join
    if join is None or join not in inputs.variables or len(inputs.stores) < 2:
        return
    attrs = inputs.variables[join].attrs
    units = time_units(attrs)
    step = timestep.step_days(inputs.read(join, Hyperslab.whole(inputs.shape(join))), units)
    days = timestep.unit_days(units)
    if step is None or days is None or not step > 0:
        return
    for a, b, last, first in inputs.gaps(step / days):
        missing = round((first - last) * days / step) - 1
        raise ClimioError(f"{label}: '{inputs.paths[a]}' ends at {describe(last, str(units), calendar_of(attrs))} "
                          f"and '{inputs.paths[b]}' starts at {describe(first, str(units), calendar_of(attrs))}: "
                          f"{missing} time step(s) missing between them; give the missing file, or "
                          f"allow_gaps=True to join them anyway")
