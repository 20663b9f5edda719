"""``.climio`` on xarray Datasets and DataArrays: climio's fits and writer where the data already are.

    import climio.xr  # registers .climio
    result = ds["pr"].climio.fit_pot(return_periods=[20, 100])
    ds.climio.to_netcdf("out.nc", mode="cdf5", deflate=1)

The fits are :mod:`climio.eva.api`'s; ``to_netcdf`` encodes the Dataset as xarray's own ``to_netcdf`` does
(xarray's CF encoders: dates, masks, packing, ``coordinates``, a NaN ``_FillValue`` for floats) and writes it
through :func:`climio.core.ncio.create`, in any of climio's storage modes and with NCO's compression options.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from xarray.coding.strings import CharacterArrayCoder, EncodedStringCoder
from xarray.conventions import cf_encoder, encode_dataset_coordinates

from climio.core import ncio
from climio.core.ncio.compression import settings
from climio.errors import ClimioError
from climio.eva import api

if TYPE_CHECKING:
    from mpi4py import MPI


class _Fits:
    """The fits, shared by both accessors: the object itself is the data to fit."""

    def __init__(self, obj: xr.Dataset | xr.DataArray) -> None:
        self._obj = obj

    def fit_pot(self, dim: str | None = None, **options: Any) -> xr.Dataset:
        """Peaks over threshold at every cell: :func:`climio.eva.api.fit_pot` on this object."""
        return api.fit_pot(self._obj, dim, **options)

    def fit_gev(self, dim: str | None = None, **options: Any) -> xr.Dataset:
        """Block maxima at every cell: :func:`climio.eva.api.fit_gev` on this object."""
        return api.fit_gev(self._obj, dim, **options)

    def to_netcdf(self, path: str | os.PathLike[str], mode: str = "hdf5", comm: MPI.Comm | None = None, *,
                  overwrite: bool = False, deflate: int | None = None, ppc: Iterable[str] | None = None,
                  chunk_sizes: Iterable[str] | None = None, cmp: str | None = None) -> None:
        """Write through climio's storage layer in storage ``mode`` (``hdf5``, ``hdf5-classic``, ``cdf1``,
        ``cdf2``, ``cdf5``, ``serial``), on ``comm`` (default: every rank of the job, rank 0 writing what each
        holds whole); ``deflate``, ``ppc``, ``chunk_sizes`` and ``cmp`` are NCO's ``-L``, ``--ppc``,
        ``--cnk_dmn`` and ``--cmp`` (``ppc=["default=3"]``)."""
        dataset = self._obj if isinstance(self._obj, xr.Dataset) else _as_dataset(self._obj)
        schema, values = _encoded(dataset)
        compress = settings(deflate, list(ppc) if ppc else None, None, list(chunk_sizes) if chunk_sizes else None, cmp)
        with ncio.create(os.fspath(path), schema, mode, comm, overwrite=overwrite, compress=compress) as store:
            for var in schema.variables:
                if var.is_text:
                    store.write_text(var.name, values[var.name])
            store.write_many((var.name, values[var.name], None) for var in schema.variables if not var.is_text)


@xr.register_dataset_accessor("climio")
class DatasetAccessor(_Fits):
    """``ds.climio``: ``fit_pot``/``fit_gev`` (give ``var=`` when the Dataset has several data variables) and
    ``to_netcdf``."""


@xr.register_dataarray_accessor("climio")
class DataArrayAccessor(_Fits):
    """``da.climio``: ``fit_pot``/``fit_gev`` along its time dimension, and ``to_netcdf`` of the named array
    with its coordinates."""


def _as_dataset(array: xr.DataArray) -> xr.Dataset:
    if array.name is None:
        raise ClimioError("to_netcdf: the DataArray has no name, and a file needs one: set it with "
                          "da.rename('NAME') first")
    return array.to_dataset()


def _encoded(dataset: xr.Dataset) -> tuple[ncio.Schema, dict[str, np.ndarray]]:
    """The schema and values that xarray's netCDF writer would store: its CF encoders, then text as netCDF
    characters (bytes) or strings (unicode)."""
    variables, attrs = cf_encoder(*encode_dataset_coordinates(dataset))
    unlimited = set(dataset.encoding.get("unlimited_dims", ()))
    dims: dict[str, int | None] = {}
    declared, values = [], {}
    for name, variable in variables.items():
        name = str(name)
        variable = EncodedStringCoder(allows_unicode=True).encode(variable, name=name)
        if variable.dtype.kind == "S":
            variable = CharacterArrayCoder().encode(variable, name=name)
        data = np.asarray(variable.values)
        if data.dtype.kind == "U":
            data = data.astype(object)
        dims.update({str(d): None if d in unlimited else int(n) for d, n in variable.sizes.items()})
        declared.append(ncio.Variable(name, data.dtype, tuple(str(d) for d in variable.dims), dict(variable.attrs)))
        values[name] = data
    return ncio.Schema(dims, tuple(declared), dict(attrs)), values
