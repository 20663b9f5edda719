"""Peaks-over-threshold GPD fits on in-memory data, for notebooks.

    import xarray as xr
    from climio.eva import fit_pot
    ds = xr.open_dataset("pr_day.nc")
    result = fit_pot(ds["pr"], dim="time", return_periods=[20, 100])
    result["return_level"].sel(period=100).plot()

The same statistics as ``climio eva`` (:mod:`climio.eva.pot`), one process, no files.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from climio.errors import ClimioError
from climio.eva import cf, pot


def fit_pot(data: xr.DataArray | np.ndarray, dim: str | int = "time", *, tail: float = 0.01,
            return_periods: Sequence[float] = (100.0,), npy: float = 365.25, min_exceed: int = 10) -> xr.Dataset:
    """Threshold, GPD scale/shape, rate, return levels, -log L and status at every cell of ``data``.

    ``data`` is a DataArray with a ``dim`` dimension, or a numpy array whose axis
    ``dim`` (an int; "time" means axis 0) is time. Missing values are NaN, or the
    DataArray's ``_FillValue``/``missing_value`` attributes. The result has the
    other dimensions (and their coordinates) of ``data``; ``return_level`` also
    has ``period``.
    """
    if not 0.0 < tail < 0.5:
        raise ClimioError(f"tail must be inside (0, 0.5), got {tail}")
    if not return_periods or any(not p > 1.0 for p in return_periods):
        raise ClimioError(f"return periods must be over 1 year, got {list(return_periods)}")
    if isinstance(data, xr.DataArray):
        if not isinstance(dim, str) or dim not in data.dims:
            raise ClimioError(f"DataArray '{data.name}' has no dimension {dim!r} (dims: {data.dims})")
        data = data.transpose(dim, ...)
        values, others = data.values, data.isel({dim: 0}, drop=True)
        missing = [float(data.attrs[k]) for k in ("_FillValue", "missing_value") if k in data.attrs]
        name, units = str(data.name or "data"), str(data.attrs.get("units", "1"))
    else:
        axis = 0 if dim == "time" else dim
        if not isinstance(axis, int) or not -np.ndim(data) <= axis < np.ndim(data):
            raise ClimioError(f"dim must be a time axis of the {np.ndim(data)}-d array, got {dim!r}")
        values = np.moveaxis(np.asarray(data), axis, 0)
        others = xr.DataArray(np.empty(values.shape[1:]), dims=[f"dim_{i}" for i in range(values.ndim - 1)])
        missing, name, units = [], "data", "1"
    if values.dtype.kind != "f":
        values = values.astype(np.float64)
    series = values.reshape(values.shape[0], -1)  # a view when time is the slowest axis in memory
    result = pot.analyse(series, tail=tail, periods=list(return_periods), npy=npy, min_exceed=min_exceed,
                         missing=missing)
    attrs = cf.result_attributes(name, {"units": units}, tail)
    shape, dims = others.shape, others.dims
    out = xr.Dataset(coords={**others.coords, "period": ("period", np.asarray(return_periods, dtype=float),
                                                         {"units": "years"})})
    for field in pot.RESULT_TYPES:
        array = getattr(result, field)
        if field == "return_level":
            out[field] = (("period", *dims), array.reshape(len(return_periods), *shape), attrs[field])
        else:
            out[field] = (dims, array.reshape(shape), attrs[field])
    out.attrs.update({"climio_tail": tail, "climio_npy": npy, "climio_min_exceed": min_exceed})
    return out
