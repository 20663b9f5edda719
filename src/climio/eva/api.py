"""Peaks-over-threshold GPD fits on in-memory or dask-backed data, for notebooks.

    import xarray as xr
    from climio.eva import fit_pot
    ds = xr.open_dataset("pr_day.nc")
    result = fit_pot(ds, var="pr", return_periods=[20, 100])
    result["return_level"].sel(period=100).plot()

The same statistics as ``climio eva`` (:mod:`climio.eva.pot`), one process, no files.
Dask-backed input stays lazy: the fits run chunk by chunk over the non-time
dimensions when the result is computed.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from climio.errors import ClimioError
from climio.eva import cf, pot
from climio.eva.output import grid_mappings, global_attributes
from climio.eva.series import is_time_coordinate
from climio.eva.timestep import step_days, values_per_year
from climio.subset.timeaxis import time_units

METHOD = ("threshold: R type-7 quantile; GPD maximum likelihood with shape >= -1 "
          "(profile likelihood, global search); return level u + s/k((T npy rate)^k - 1)")


class UnitsWarning(UserWarning):
    """The input has no units (no ``units`` attribute, no ``units=``): the results are labelled ``1``."""


class NoFitWarning(UserWarning):
    """Not one cell could be fitted (every status is neither ok nor shape_at_lower_bound)."""


def fit_pot(data: xr.DataArray | xr.Dataset | np.ndarray, dim: str | None = None, *, var: str | None = None,
            axis: int | None = None, tail: float = 0.01, return_periods: float | Iterable[float] = (100.0,),
            npy: float | str | None = None, min_exceed: int = 10, units: str | None = None) -> xr.Dataset:
    """Threshold, GPD scale/shape, rate, return levels, -log L and status at every cell of ``data``.

    Parameters
    ----------
    data
        A DataArray; a Dataset with ``var=``; or a numpy (or dask) array with ``axis=``.
    dim
        The time dimension of xarray input. Default: ``"time"`` when ``data`` has it, otherwise the one
        dimension that CF marks as time (a 1-D coordinate with ``axis: T``, ``standard_name: time``,
        datetime or cftime values, or ``<unit> since <date>`` units); none or several is an error.
    var
        The data variable of a Dataset: required for a Dataset (the error lists its data variables).
    axis
        The time axis of numpy input (required: no axis is assumed). Not for xarray input.
    tail
        Fraction of values above the threshold (the threshold is the ``1 - tail`` quantile), inside (0, 0.5).
    return_periods
        One return period in years or any sequence of them (each over 1 year).
    npy
        Values per year in the return-level arithmetic. ``None`` (default): 365.25, for daily values;
        ``"calendar"``: the days of a year of the time coordinate's calendar (365 for ``noleap``, 360 for
        ``360_day``...), again for daily values. In both cases a time coordinate whose median step is not
        a day (monthly means, 6-hourly values) is refused, with the step found, unless ``npy`` is given as a
        number (``npy=12`` for monthly values). The step is read from the time coordinate whether decoded
        (numpy datetime64 or cftime) or raw numbers with CF ``units``; a time dimension without a coordinate
        cannot be checked. numpy input has no time coordinate: ``None`` is 365.25 unchecked and
        ``"calendar"`` is an error.
    min_exceed
        Fewest exceedances for a fit (status ``too_few_exceedances`` below).
    units
        Units of ``data``; wins over its ``units`` attribute. With neither, a :class:`UnitsWarning` says the
        results are unitless (``1``): note that arithmetic such as ``pr * 86400`` drops xarray attributes
        unless ``xr.set_options(keep_attrs=True)``.

    Returns
    -------
    xarray.Dataset
        ``threshold``, ``scale``, ``shape``, ``rate``, ``n_exceed``, ``nll``, ``status`` on the non-time
        dimensions of ``data`` (input order) and ``return_level`` on ``("period", *those)``, with CF
        attributes from :func:`climio.eva.cf.result_attributes` (units, and the input's ``standard_name``
        and ``cell_methods``). The input's coordinates that do not depend on time are kept (2-D lat/lon,
        scalar ``height``...); every result variable carries the input's ``grid_mapping`` (as in the
        command's file), and from a Dataset the grid-mapping variable itself (``rotated_pole``) and the
        global attributes that identify the data (those ``climio eva`` carries: not ``tracking_id``,
        ``creation_date``...) come along. ``history`` gets a line for this call; ``period`` is in years
        (:data:`climio.eva.cf.PERIOD_ATTRS`); ``climio_tail``, ``climio_npy``, ``climio_min_exceed`` record
        the options.

    Missing values are NaN, or equal to the DataArray's ``_FillValue``/``missing_value`` attributes (xarray's
    default decoding has already made them NaN). Dask-backed input stays lazy: time is rechunked into one
    chunk and the fits run chunk by chunk over the other dimensions at ``.compute()``, bit for bit as eager.

    A :class:`NoFitWarning` with the status counts says when no cell could be fitted. For dask input the
    statuses are only known at compute time, so there is no such warning: check ``result["status"]``.
    """
    if not 0.0 < tail < 0.5:
        raise ClimioError(f"tail must be inside (0, 0.5), got {tail}")
    periods = _periods(return_periods)
    source_attrs: Mapping[Any, Any] = {}
    grid_mapping_vars: dict[Hashable, xr.Variable] = {}
    if isinstance(data, xr.Dataset):
        if axis is not None:
            raise ClimioError("axis= is for numpy input: give a Dataset's time dimension with dim=")
        names = ", ".join(repr(str(v)) for v in data.data_vars)
        if var is None:
            raise ClimioError(f"a Dataset needs var= to name the variable to fit, one of: {names}")
        if var not in data.data_vars:
            raise ClimioError(f"the Dataset has no data variable {var!r}; its data variables: {names}")
        source_attrs, array = data.attrs, data[var]
        for name in _grid_mapping_names(array):
            if name in data.variables and name not in array.coords:
                grid_mapping_vars[name] = data[name].variable.copy(deep=False)
        time_dim = _time_dim(array, dim)
        step, calendar = _time_step(array, time_dim)
    elif isinstance(data, xr.DataArray):
        if var is not None:
            raise ClimioError("var= names a variable of a Dataset; data is already a DataArray")
        if axis is not None:
            raise ClimioError("axis= is for numpy input: give a DataArray's time dimension with dim=")
        array, time_dim = data, _time_dim(data, dim)
        step, calendar = _time_step(array, time_dim)
    else:
        if dim is not None:
            raise ClimioError(f"dim= names an xarray dimension: give the time axis of {type(data).__name__} "
                              f"input with axis= (got dim={dim!r})")
        if var is not None:
            raise ClimioError("var= names a variable of a Dataset, not of an array")
        array, time_dim = _wrap_array(data, axis), "time"
        if npy == "calendar":
            raise ClimioError("npy='calendar' needs the calendar of a time coordinate, which numpy input has "
                              "not: give npy as a number")
        step, calendar = None, None

    name = str(array.name) if array.name is not None else "data"
    where = f"time coordinate '{time_dim}' of '{name}'"
    if npy == "calendar" and calendar is None:
        raise ClimioError(f"npy='calendar': '{name}' has no time coordinate '{time_dim}' with a calendar: "
                          f"give npy as a number")
    npy_value = values_per_year(npy, step, calendar or "standard", where, option="npy")
    if "period" in array.dims:
        raise ClimioError(f"'{name}' has a dimension 'period', which the result uses for return periods")
    for packed in ("scale_factor", "add_offset"):
        if packed in array.attrs:
            raise ClimioError(f"'{name}' has a {packed} attribute: its values are packed; open the file with "
                              f"xarray's default decoding (mask_and_scale=True)")

    attrs = dict(array.attrs)
    attrs.pop("units", None)
    chosen = units if units is not None else array.attrs.get("units")
    if chosen is None or not str(chosen).strip():
        warnings.warn(f"'{name}' has no units (no units attribute, no units=): return levels, thresholds and "
                      f"scales are labelled unitless ('1'); give units=, or keep attributes through arithmetic "
                      f"(xr.set_options(keep_attrs=True))", UnitsWarning, stacklevel=2)
        chosen = "1"
    attrs["units"] = chosen
    missing = [float(array.attrs[k]) for k in ("_FillValue", "missing_value") if k in array.attrs]
    if array.chunks is not None and len(array.chunksizes[time_dim]) > 1:
        array = array.chunk({time_dim: -1})  # a cell needs its whole series: one chunk along time

    fields = list(cf.RESULT_TYPES)
    outputs = xr.apply_ufunc(
        _fit_block, array, input_core_dims=[[time_dim]],
        output_core_dims=[["period"] if f == "return_level" else [] for f in fields],
        kwargs={"tail": tail, "periods": periods, "npy": npy_value, "min_exceed": min_exceed, "missing": missing},
        dask="parallelized", output_dtypes=[np.dtype(cf.RESULT_TYPES[f]) for f in fields],
        dask_gufunc_kwargs={"output_sizes": {"period": len(periods)}})
    others = [d for d in array.dims if d != time_dim]
    described = cf.result_attributes(name, attrs, tail)
    grid_mapping = array.attrs.get("grid_mapping", array.encoding.get("grid_mapping"))
    out = xr.Dataset()
    for field, result in zip(fields, outputs):
        result.attrs = dict(described[field])
        if grid_mapping is not None:  # every result is on the input's grid, as in the command's file
            result.attrs["grid_mapping"] = grid_mapping
        out[field] = result.transpose("period", *others) if field == "return_level" else result
    out = out.assign_coords(period=("period", np.asarray(periods, dtype=np.float64), dict(cf.PERIOD_ATTRS)))
    for key, variable in grid_mapping_vars.items():
        if key not in out.variables:
            out[key] = variable
    call = (f"climio.eva.fit_pot({name}, tail={tail:g}, return_periods={[float(p) for p in periods]}, "
            f"npy={npy_value:g}, min_exceed={min_exceed})")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    # The input's identifying global attributes (institution, model, experiment...), as the command carries them.
    out.attrs = global_attributes(source_attrs, {
        "title": f"peaks-over-threshold GPD fits of {name}", "method": METHOD, "climio_tail": tail,
        "climio_npy": npy_value, "climio_min_exceed": min_exceed}, f"{stamp}: {call}")
    if out["status"].chunks is None:
        _warn_if_nothing_fitted(out["status"].values, name, min_exceed)
    return out


def _fit_block(block: np.ndarray, *, tail: float, periods: list[float], npy: float, min_exceed: int,
               missing: list[float]) -> tuple[np.ndarray, ...]:
    """pot.analyse on a block of cells (..., time): one array per result field, return levels (..., period)."""
    shape = block.shape[:-1]
    series = np.moveaxis(block, -1, 0)  # back to (time, ...): a view of time-first input in its own layout
    series = series.reshape(series.shape[0], -1)
    if series.dtype.kind != "f":
        series = series.astype(np.float64)
    result = pot.analyse(series, tail=tail, periods=periods, npy=npy, min_exceed=min_exceed, missing=missing)
    out = []
    for field, dtype in cf.RESULT_TYPES.items():
        values = getattr(result, field)
        if field == "return_level":
            values = np.moveaxis(values.reshape(len(periods), *shape), 0, -1)
        else:
            values = values.reshape(shape)
        out.append(values.astype(dtype, copy=False))
    return tuple(out)


def _periods(return_periods: float | Iterable[float]) -> list[float]:
    """Return periods as a list of floats, from a number or any sequence (list, tuple, array, range...)."""
    given = return_periods
    if isinstance(given, xr.DataArray):
        given = given.values
    if np.ndim(given) == 0 and isinstance(given, Iterable) and not isinstance(given, (str, bytes)):
        given = list(given)  # a generator or a set
    try:
        values = np.atleast_1d(np.asarray(given, dtype=np.float64))
    except (TypeError, ValueError):
        raise ClimioError(f"return periods must be numbers of years, got {return_periods!r}") from None
    if values.ndim != 1 or values.size == 0 or not np.all(values > 1.0):
        raise ClimioError(f"return periods must be over 1 year, got {values.tolist()}")
    if len(set(values.tolist())) != values.size:
        raise ClimioError(f"return periods must be different, got {values.tolist()}")
    return values.tolist()


def _wrap_array(data: Any, axis: int | None) -> xr.DataArray:
    """numpy (or dask) input as a DataArray with dims dim_0, dim_1... for the other axes and 'time'."""
    if not (type(data).__module__.split(".")[0] == "dask" and hasattr(data, "chunks")):
        data = np.asarray(data)
    ndim = data.ndim
    if axis is None:
        raise ClimioError(f"numpy input needs axis= to say which of its {ndim} axes is time")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ClimioError(f"axis must be one of the {ndim} axes of the array, got {axis!r}")
    axis = int(axis) % ndim
    others = iter(range(ndim - 1))
    return xr.DataArray(data, dims=["time" if i == axis else f"dim_{next(others)}" for i in range(ndim)])


def _is_time(coord: xr.DataArray) -> bool:
    """CF's signs that a 1-D coordinate is time: axis T, standard_name time, dates, or '<unit> since' units."""
    if is_time_coordinate(dict(coord.attrs)) or coord.dtype.kind == "M":
        return True
    return coord.dtype.kind == "O" and coord.size > 0 and _is_cftime(np.asarray(coord.data[:1])[0])


def _is_cftime(value: object) -> bool:
    import cftime

    return isinstance(value, cftime.datetime)


def _time_dim(array: xr.DataArray, dim: str | None) -> str:
    if dim is not None:
        if not isinstance(dim, str) or dim not in array.dims:
            raise ClimioError(f"'{array.name}' has no dimension {dim!r} (dims: {array.dims})")
        return dim
    if "time" in array.dims:
        return "time"
    found = sorted({str(c.dims[0]) for c in array.coords.values() if c.ndim == 1 and _is_time(c)})
    if len(found) == 1:
        return found[0]
    if not found:
        raise ClimioError(f"'{array.name}' has no 'time' dimension and no coordinate that CF marks as time "
                          f"(dims: {array.dims}): give dim=")
    raise ClimioError(f"'{array.name}' has several time-like dimensions {found}: give dim=")


def _time_step(array: xr.DataArray, time_dim: str) -> tuple[float | None, str | None]:
    """The median step of the time coordinate in days (None: no coordinate or no CF units) and its calendar."""
    if time_dim not in array.coords or array.coords[time_dim].ndim != 1:
        return None, None
    coord = array.coords[time_dim]
    values = np.asarray(coord.values)
    calendar = coord.encoding.get("calendar", coord.attrs.get("calendar"))
    if values.dtype.kind == "M":
        days = (values - values[0]) / np.timedelta64(1, "D") if values.size else values
        return step_days(days, "days since the first"), calendar or "proleptic_gregorian"
    if values.dtype.kind == "O" and values.size and _is_cftime(values[0]):
        days = np.array([(v - values[0]).total_seconds() for v in values]) / 86400.0
        return step_days(days, "days since the first"), calendar or getattr(values[0], "calendar", None)
    if values.dtype.kind in "iuf" and time_units(coord.attrs) is not None:
        return step_days(values, time_units(coord.attrs)), calendar or "standard"  # CF's default calendar
    return None, calendar


def _grid_mapping_names(array: xr.DataArray) -> list[str]:
    """The grid-mapping variables named by ``grid_mapping``: ``crs`` or CF's ``crs: x y crs2: lat lon``."""
    text = array.attrs.get("grid_mapping", array.encoding.get("grid_mapping"))
    return grid_mappings(text) if text else []


def _warn_if_nothing_fitted(status: np.ndarray, name: str, min_exceed: int) -> None:
    if status.size == 0:
        return
    counts = np.bincount(status.ravel().astype(np.int64), minlength=len(cf.STATUS_MEANINGS))
    if counts[pot.STATUS_OK] + counts[pot.AT_BOUND] > 0:
        return
    summary = ", ".join(f"{meaning}: {n}" for meaning, n in zip(cf.STATUS_MEANINGS, counts) if n)
    hint = (f"; a fit needs min_exceed={min_exceed} exceedances: a longer series or a larger tail gives more"
            if counts[pot.TOO_FEW] else "")
    warnings.warn(f"no cell of '{name}' could be fitted ({summary}){hint}", NoFitWarning, stacklevel=3)


__all__ = ["NoFitWarning", "UnitsWarning", "fit_pot"]
