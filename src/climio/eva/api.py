"""Extreme value fits on in-memory or dask-backed data, for notebooks: peaks over threshold (GPD) and
block maxima (GEV).

    import xarray as xr
    from climio.eva import fit_pot
    ds = xr.open_dataset("pr_day.nc")
    result = fit_pot(ds, var="pr", return_periods=[20, 100])
    result["return_level"].sel(period=100).plot()

    gev = fit_gev(ds, var="pr", block="year", return_periods=[20, 100])

The same statistics as ``climio eva`` (:mod:`climio.eva.pot`, :mod:`climio.eva.block_maxima`), no files,
in one process or, with ``comm=``, shared between the ranks of an ``mpiexec`` job; and the same output: the
result is built by the command's own :class:`~climio.eva.output.Layout` and :func:`~climio.eva.output.schema`
(over the input Dataset as a :class:`~climio.eva.output.Source`), so ``result.to_netcdf(path)`` writes the
command's file.
Dask-backed input stays lazy: the fits run chunk by chunk over the non-time
dimensions when the result is computed.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from xarray.coding.strings import CharacterArrayCoder, EncodedStringCoder
from xarray.conventions import encode_cf_variable

from climio.core import mpi
from climio.core.datavars import data_variables, only_data_variable
from climio.core.decomp import block_range
from climio.core.ncio import Variable
from climio.errors import ClimioError, api_words
from climio.eva import block_maxima, blocks, cf, covariate, decluster, largest, output, pot
from climio.eva.intervals import Request
from climio.eva.methods import METHODS, PER_PERIOD, Method, Settings, TimeAxis
from climio.eva.series import Axis, is_time_coordinate
from climio.eva.timestep import step_days
from climio.core.timeaxis import calendar_of, time_units

if TYPE_CHECKING:
    from mpi4py import MPI


# The keywords of fit_pot and fit_gev by the command's flags, which the checks the two share name (api_words)
WORDS = {**{option.flag: option.name for method in METHODS.values() for option in method.options},
         "--return-period": "return_periods", "--ci": "ci", "--ci-method": "ci_method", "--covariate": "covariate",
         "--covariate-at": "covariate_at"}


class UnitsWarning(UserWarning):
    """The input has no units (no ``units`` attribute, no ``units=``): the results are labelled ``1``."""


class NoFitWarning(UserWarning):
    """Not one cell could be fitted (every status is neither ok nor at a bound of the shape)."""


@api_words(WORDS)
def fit_pot(data: xr.DataArray | xr.Dataset | np.ndarray, dim: str | None = None, *, var: str | None = None,
            axis: int | None = None, tail: float = 0.01, return_periods: float | Iterable[float] = (100.0,),
            npy: float | str | None = None, min_exceed: int = 10, units: str | None = None,
            ci: float | None = None, ci_method: str = "profile", decluster: str | None = None,
            covariate: str | xr.DataArray | None = None, covariate_at: float | Iterable[float] | None = None,
            comm: MPI.Comm | None = None) -> xr.Dataset:
    """Threshold, GPD scale/shape, rate, return levels, -log L and status at every cell of ``data``.

    Parameters
    ----------
    data
        A DataArray; a Dataset (one file's, or several joined by ``xr.open_mfdataset``); or a numpy (or dask)
        array with ``axis=``.
    dim
        The time dimension of xarray input. Default: ``"time"`` when ``data`` has it, otherwise the one
        dimension that CF marks as time (a 1-D coordinate with ``axis: T``, ``standard_name: time``,
        datetime or cftime values, or ``<unit> since <date>`` units); none or several is an error.
    var
        The data variable of a Dataset. Not needed when the Dataset has one data variable: one that is no
        coordinate and that no other variable names as its bounds, grid mapping, cell measure, formula term,
        ancillary variable or coordinate (:func:`climio.core.datavars.data_variables`, the command's rule
        too); with several, the error lists them.
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
    ci, ci_method
        A confidence level (e.g. 0.95): also ``return_level_lower``/``return_level_upper`` (on ``period``)
        and each parameter's standard error (``scale_se``, ...), as ``climio eva --ci LEVEL --ci-method``:
        ``"profile"`` (profile likelihood, default) or ``"normal"`` (delta method); see
        :mod:`climio.eva.intervals`.
    decluster
        ``"runs:R"``: runs declustering as ``climio eva --decluster`` (only each cluster's largest excess is
        fitted, the rate is the clusters'), adding ``n_clusters`` and ``extremal_index``
        (:mod:`climio.eva.decluster`).
    covariate, covariate_at
        The GPD's log scale linear in a covariate (:mod:`climio.eva.gpd_trend`), as in :func:`fit_gev`: the
        calendar year of each value (``"year"``), or a series' annual mean (``"FILE:VAR"`` or a DataArray);
        ``log_scale_intercept`` and ``log_scale_slope`` replace ``scale``. Needs a time coordinate with dates.
    comm
        The ranks that share the fits, for a grid too slow to fit in one process (collective: every rank
        calls with the same data and options). Each rank reads and fits a contiguous block of the cells (in
        the order of the non-time dimensions, as nearly equal as ``climio eva`` splits them) and every rank
        returns the whole result, in memory, the same as one process's bit for bit. A rank that fails makes
        every rank raise one :class:`~climio.errors.IOFault` with its message. Default: this process alone.

    Returns
    -------
    xarray.Dataset
        What ``xr.open_dataset`` gives of the file ``climio eva`` writes from the same input and options (see
        :mod:`climio.eva.output`), and ``to_netcdf`` writes that file back: ``threshold``, ``scale``,
        ``shape``, ``rate``, ``n_exceed``, ``nll``, ``status`` on the non-time dimensions of ``data`` (input
        order) and ``return_level`` on ``("period", *those)``, with CF attributes from
        :func:`climio.eva.cf.result_attributes` (units, and the input's ``standard_name`` and
        ``cell_methods``); the input's coordinates that do not depend on time (2-D lat/lon, scalar
        ``height``...) with their bounds (``lat_bnds``), the grid-mapping variable (``rotated_pole``) that
        the results' ``grid_mapping`` names; a scalar ``time`` coordinate at the middle of the analysed period
        with ``time_bnds`` at its ends, numbers in the input's time units (``xr.decode_cf(result)`` makes them
        dates); the global attributes that identify the data (not ``tracking_id``, ``creation_date``...).
        References to variables that are not there are dropped, never left dangling (a DataArray brings no
        ``lat_bnds`` or ``rotated_pole``: its ``lat`` then names no bounds, its results no grid mapping).
        Variables that ``xr.open_mfdataset`` repeated along time (``rotated_pole``, ``lat_bnds``) come as
        each file has them. ``history`` gets a line for this call; ``period`` is in years
        (:data:`climio.eva.cf.PERIOD_ATTRS`); ``climio_tail``, ``climio_npy``, ``climio_min_exceed`` record
        the options. Written with ``to_netcdf`` (in the input's format, e.g. ``format="NETCDF4_CLASSIC"``),
        it differs from the command's file only in ``history``, ``climio_inputs`` (the command's input
        paths), and what xarray's writer does: a scalar char variable (``rotated_pole``) gets a length-1
        dimension ``string1``, ``season_name`` an ``_Encoding`` attribute, and ``coordinates`` comes last
        among a variable's attributes.

    Missing values are NaN, or equal to the DataArray's ``_FillValue``/``missing_value`` attributes (xarray's
    default decoding has already made them NaN). Dask-backed input stays lazy: time is rechunked into one
    chunk and the fits run chunk by chunk over the other dimensions at ``.compute()``, bit for bit as eager.

    A :class:`NoFitWarning` with the status counts says when no cell could be fitted. For dask input the
    statuses are only known at compute time, so there is no such warning: check ``result["status"]``.
    """
    method = METHODS["pot"]
    run = None if decluster is None else _run_length(decluster)
    settings = {"tail": tail, "npy": npy, "min_exceed": min_exceed, "decluster": run,
                "periods": _periods(return_periods), "covariate_at": _values(covariate_at)}
    method.check(settings)
    if npy == "calendar" and not isinstance(data, (xr.Dataset, xr.DataArray)):
        raise ClimioError("npy='calendar' needs the calendar of a time coordinate, which numpy input has "
                          "not: give npy as a number")
    given = _prepare(data, dim, var, axis, units)
    if npy == "calendar" and given.calendar is None:
        raise ClimioError(f"npy='calendar': '{given.name}' has no time coordinate '{given.time_dim}' with a calendar: "
                          f"give npy as a number")
    time_axis = _time_axis(given)
    npy_value = method.timing(settings, time_axis)
    request = _request(ci, ci_method)
    trend, cov = _trend(method, settings, time_axis, npy_value, request, covariate)
    call = (f"climio.eva.fit_pot({given.name}, tail={tail:g}, return_periods={settings['periods']}, "
            f"npy={npy_value:g}, min_exceed={min_exceed}{_ci_text(request)}"
            f"{'' if run is None else f', decluster={decluster!r}'}"
            f"{'' if cov is None else f', covariate={cov.spec!r}'})")
    out = _fitted(given, method, settings, npy_value, request, trend, cov, call, comm)
    if out["status"].chunks is None:
        hint = f"; a fit needs min_exceed={min_exceed} exceedances: a longer series or a larger tail gives more"
        _warn_if_nothing_fitted(out["status"].values, given.name, method, {pot.TOO_FEW: hint})
    return out


@api_words(WORDS)
def fit_gev(data: xr.DataArray | xr.Dataset, dim: str | None = None, *, var: str | None = None,
            block: str = "year", max_missing: float = 0.1, min_blocks: int = 10,
            return_periods: float | Iterable[float] = (100.0,), units: str | None = None,
            ci: float | None = None, ci_method: str = "profile", covariate: str | xr.DataArray | None = None,
            covariate_at: float | Iterable[float] | None = None, comm: MPI.Comm | None = None) -> xr.Dataset:
    """GEV location, scale, shape of the block maxima, return levels, -log L and status at every cell of ``data``.

    Parameters
    ----------
    data
        A DataArray, or a Dataset (``var=`` when it has several data variables), with a time coordinate:
        decoded (numpy datetime64 or cftime) or numbers with CF ``units`` (and ``calendar``). The blocks come
        from its dates.
    dim, var, units, ci, ci_method, comm
        As in :func:`fit_pot` (the standard errors: ``location_se``, ``scale_se``, ``shape_se``).
    block
        ``"year"`` (default), or a season of each year as consecutive month initials: ``"DJF"`` (December
        counts with the next year's January and February), ``"MAM"``, ``"JJA"``, ``"SON"``, ``"JJAS"``...;
        several with no month in common, ``"DJF,JJA"``, or ``"season"`` for all four: each fitted on its own,
        every result on a leading ``season`` dimension (coordinate ``season_name``).
    max_missing
        A block missing more than this fraction of its time steps (NaN, ``_FillValue``, or steps absent
        from the axis, such as the partial years at its ends) is left out, in [0, 1).
    min_blocks
        Fewest complete blocks for a fit (status ``too_few_blocks`` below), at least 2.
    return_periods
        One return period in years or any sequence of them (each over 1 year): the level exceeded by a
        block's maximum with probability 1/T.
    covariate
        A location linear in a covariate (:mod:`climio.eva.gev_trend`): ``"year"`` (the year each block ends
        in), ``"FILE:VAR"``, or a 1-D DataArray along a time coordinate with dates (its annual means). The
        result then has ``location_intercept`` and ``location_slope`` instead of ``location``, the standard
        errors of the four parameters, ``nll_stationary``, ``trend_p_value``, and effective return levels on
        ``("covariate", "period", ...)``. ``ci`` needs ``ci_method="normal"`` with it; ``min_blocks`` at least 5.
    covariate_at
        The covariate values of the effective return levels (default: the first and the last block's).

    Returns
    -------
    xarray.Dataset
        ``location``, ``scale``, ``shape``, ``n_blocks``, ``nll``, ``status`` on the non-time dimensions of
        ``data`` and ``return_level`` on ``("period", *those)``, the command's file as :func:`fit_pot` gives
        it (CF attributes, coordinates and bounds, grid mapping, the analysed period, global attributes;
        several seasons' names in ``season_name``, as str); ``climio_block``,
        ``climio_max_missing``, ``climio_min_blocks`` record the options. The statistics are
        ``climio eva --method gev``'s (:mod:`climio.eva.block_maxima`), bit for bit.
    """
    method = METHODS["gev"]
    settings = {"block": block, "max_missing": max_missing, "min_blocks": min_blocks,
                "periods": _periods(return_periods), "covariate_at": _values(covariate_at)}
    method.check(settings)
    block = blocks.canonical(block)
    if not isinstance(data, (xr.Dataset, xr.DataArray)):
        raise ClimioError(f"fit_gev needs the dates of a time coordinate to find the blocks: give a DataArray or a "
                          f"Dataset with one, not {type(data).__name__}")
    given = _prepare(data, dim, var, None, units)
    time_axis = _time_axis(given)
    cuts = method.timing(settings, time_axis)
    request = _request(ci, ci_method)
    trend, cov = _trend(method, settings, time_axis, cuts, request, covariate)
    call = (f"climio.eva.fit_gev({given.name}, block={block!r}, max_missing={max_missing:g}, "
            f"min_blocks={min_blocks}, return_periods={settings['periods']}{_ci_text(request)}"
            f"{'' if cov is None else f', covariate={cov.spec!r}'})")
    out = _fitted(given, method, settings, cuts, request, trend, cov, call, comm)
    if out["status"].chunks is None:
        hint = f"; a fit needs min_blocks={min_blocks} blocks missing at most {max_missing:g} of their steps"
        _warn_if_nothing_fitted(out["status"].values, given.name, method, {block_maxima.TOO_FEW: hint})
    return out


def _time_axis(given: _Given) -> TimeAxis:
    """The input's time axis as a method reads it, and how the API's errors name it."""
    name, time_dim = given.name, given.time_dim
    return TimeAxis(given.step, given.calendar or "standard", _time_numbers(given.array, time_dim),
                    f"time coordinate '{time_dim}' of '{name}'", repr(name), "npy",
                    f"'{name}' has no time coordinate '{time_dim}' with dates (datetime64, cftime, or numbers with CF "
                    f"units) and at least two steps: fit_gev needs one to find the blocks",
                    f"covariate: '{name}' has no time coordinate '{time_dim}' with dates, to find each value's year")


def _trend(method: Method, settings: Settings, time_axis: TimeAxis, timing: object, request: Request | None,
           given: str | xr.DataArray | None) -> tuple[covariate.Trend | None, covariate.Covariate | None]:
    """The checked covariate of a fit with a trend (None, None: none given) and what the method fits with it."""
    if given is None:
        return None, None
    method.check_trend(settings, request, settings["covariate_at"])
    cov = _covariate(given)
    return method.trend(cov, timing, settings, time_axis), cov


def _covariate(given: str | xr.DataArray) -> covariate.Covariate:
    """``fit_gev``'s covariate: "year", "FILE:VAR" or a 1-D DataArray along dates."""
    if isinstance(given, str):
        try:
            return covariate.load(given, "covariate")
        except ClimioError as err:
            raise ClimioError(str(err)) from None
    if not isinstance(given, xr.DataArray) or given.ndim != 1:
        raise ClimioError(f"covariate must be 'year', 'FILE:VAR' or a 1-D DataArray along time, not "
                          f"{type(given).__name__}{'' if not isinstance(given, xr.DataArray) else f' of {given.ndim} dims'}")
    numbers = _time_numbers(given, given.dims[0])
    if numbers is None:
        raise ClimioError(f"covariate '{given.name}' has no time coordinate '{given.dims[0]}' with dates")
    import cftime

    years = np.array([d.year for d in cftime.num2date(*numbers)], dtype=np.int64)
    name = str(given.attrs.get("long_name", given.name or "covariate"))
    return covariate.annual_means(f"DataArray {given.name}", f"{name}, annual mean", str(given.attrs.get("units", "1")),
                                  years, np.asarray(given.values, dtype=np.float64), "covariate")


def _values(given: float | Iterable[float] | None) -> tuple[float, ...]:
    if given is None:
        return ()
    return tuple(float(v) for v in np.atleast_1d(np.asarray(given, dtype=np.float64)))


def _request(ci: float | None, ci_method: str) -> Request | None:
    """The checked interval request of ``ci=``/``ci_method=`` (None: no intervals)."""
    if ci is None:
        return None
    if isinstance(ci, bool) or not isinstance(ci, (int, float, np.floating)):
        raise ClimioError(f"ci must be a confidence level inside (0, 1), e.g. 0.95, got {ci!r}")
    request = Request(float(ci), ci_method)
    request.check()
    return request


def _run_length(spec: object) -> int:
    if not isinstance(spec, str):
        raise ClimioError(f"decluster must be 'runs:R' (e.g. 'runs:1'), got {spec!r}")
    return decluster.parse(spec)


def _ci_text(request: Request | None) -> str:
    return "" if request is None else f", ci={request.level:g}, ci_method={request.method!r}"


def _fitted(given: _Given, method: Method, settings: Settings, timing: object, ci: Request | None,
            trend: covariate.Trend | None, cov: covariate.Covariate | None, call: str,
            comm: MPI.Comm | None) -> xr.Dataset:
    """The method's results as a CF Dataset: its analysis over the cells (lazily for dask input; shared
    between the ranks of ``comm``, when it has several); with ``ci`` the intervals and standard errors too; with a
    ``trend`` (of covariate ``cov``), the return levels on ("covariate", "period", ...); with several seasons,
    every result on ("season", ...)."""
    array, time_dim, periods = given.array, given.time_dim, settings["periods"]
    results = method.outputs(ci, settings.get("decluster") is not None, trend is not None)
    fields = list(results)
    seasons = method.seasons(timing)
    per_cell = ["season"] if seasons else []
    leading = [*per_cell, *(["period"] if trend is None else ["covariate", "period"])]
    sizes = {"period": len(periods), **({} if trend is None else {"covariate": len(trend.at)}),
             **({"season": len(seasons)} if seasons else {})}
    described = method.described(given.name, given.attrs, settings, None if cov is None else (cov.long_name, cov.units),
                                 ci)
    options = method.record(settings, timing, None if cov is None else cov.spec, ci)
    cores = [leading if f in PER_PERIOD else per_cell for f in fields]
    fit = partial(_fit_block, method=method, timing=timing, settings=settings, trend=trend, missing=given.missing,
                  fields=results, ci=ci)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if comm is not None and comm.Get_size() > 1:
        stamp = comm.bcast(stamp, root=0)  # one history line on every rank
        cells = [d for d in array.dims if d != time_dim]
        outputs = [xr.DataArray(values, dims=(*cells, *core))
                   for values, core in zip(_fit_shared(array.transpose(*cells, time_dim), fit, comm), cores)]
    else:
        outputs = xr.apply_ufunc(fit, array, input_core_dims=[[time_dim]], output_core_dims=cores,
                                 dask="parallelized", output_dtypes=[np.dtype(results[f]) for f in fields],
                                 dask_gufunc_kwargs={"output_sizes": sizes})
    coordinate = None if trend is None or cov is None else (trend.at, cf.covariate_attributes(cov.long_name,
                                                                                            cov.units))
    schema, values = output.schema(output.Layout(_DatasetSource(given.frame, given.name, time_dim)), results, method,
                                   described, tuple(periods), options, f"{stamp}: {call}", coordinate, seasons)
    computed = dict(zip(fields, outputs))
    raw = xr.Dataset({v.name: xr.Variable(v.dims, computed[v.name].transpose(*v.dims).data if v.name in computed
                                          else values[v.name], dict(v.attrs)) for v in schema.variables},
                     attrs=dict(schema.attrs))
    return _decoded(raw, set(computed), given.frame)


def _decoded(raw: xr.Dataset, results: set[str], like: xr.Dataset) -> xr.Dataset:
    """The command's file ``raw`` as ``xr.open_dataset`` would give it (coordinates, masks, text), its time numbers
    left as stored and ``season_name`` as str; encoded so that ``to_netcdf`` writes ``raw`` back: no
    ``_FillValue`` or ``coordinates`` attribute the command does not write (but xarray's ``_Encoding`` on
    ``season_name``). Grid mappings and bounds are coordinates when they are in ``like`` (opened with
    ``decode_coords="all"``)."""
    everything = any(k in v.encoding for v in like.variables.values() for k in ("grid_mapping", "bounds"))
    decoded = xr.decode_cf(raw, decode_times=False, decode_coords="all" if everything else True)
    for name, variable in decoded.variables.items():
        declared = raw.variables[name].attrs
        if "_FillValue" not in declared:
            variable.encoding["_FillValue"] = None
        if name in decoded.data_vars and "coordinates" not in declared:
            variable.encoding["coordinates"] = None
        if name not in results:
            variable.load()  # small: read now, not on first use
    if "season_name" in decoded.variables:  # names, not bytes: the API's since its first season
        names = decoded.variables["season_name"]
        decoded = decoded.assign_coords(season_name=names.copy(data=np.char.decode(names.values, "utf-8")))
    return decoded


class _DatasetSource:
    """eva.output's :class:`~climio.eva.output.Source` over the Dataset ``frame`` whose variable ``name`` is
    analysed: its variables as ``to_netcdf`` would store them (types, CF attributes and values from xarray's own
    encoder), which is what the command reads from a file."""

    def __init__(self, frame: xr.Dataset, name: str, time_dim: str) -> None:
        self.frame, self.name, self.time_dim = frame, name, time_dim
        self.variables, self.dims = _declared(frame, name)
        self.attrs = dict(frame.attrs)
        self.cells = [Axis(str(d), 0, int(frame.sizes[d])) for d in frame[name].dims if d != time_dim]
        self.scalars: dict[str, int] = {}

    def read(self, name: str) -> np.ndarray:
        return np.asarray(_stored(self.frame.variables[name], name).values)

    def period(self) -> tuple[float, float] | None:
        coord = self.frame.variables.get(self.time_dim)
        if coord is None or coord.dims != (self.time_dim,) or coord.size == 0:
            return None
        first, last = self._stored_times(coord[[0, -1]])
        return float(first), float(last)

    def bounds_rows(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        rows = self._stored_times(self.frame.variables[name][{self.time_dim: [0, -1]}].transpose(self.time_dim, ...))
        return rows[0], rows[1]

    def _stored_times(self, variable: xr.Variable) -> np.ndarray:
        """Times (decoded dates, or numbers as stored) as numbers in the time coordinate's stored units."""
        values = np.asarray(variable.values)
        if values.dtype.kind == "M" or (values.dtype.kind == "O" and values.size and _is_cftime(values.flat[0])):
            attrs = self.variables[self.time_dim].attrs
            variable = xr.Variable(variable.dims, values, encoding={
                "units": attrs["units"], "calendar": attrs.get("calendar", "standard"), "dtype": np.float64})
            values = np.asarray(encode_cf_variable(variable).values)
        return values.astype(np.float64)


def _declared(frame: xr.Dataset, name: str | None = None) -> tuple[dict[str, Variable], dict[str, int | None]]:
    """Each variable of ``frame`` as its file declares it, and the dimensions (text gains its character
    dimension), from one element of each dimension (as cheap for any size): stored types and attributes, the
    file's own time units text (xarray's encoder rewrites ``days since 1950-1-1 00:00``) and ``coordinates``.
    The analysed variable ``name`` names its coordinates even when no file did (xarray writes them so)."""
    first = frame.isel({d: slice(0, 1) for d in frame.dims})
    declared: dict[str, Variable] = {}
    sizes: dict[str, int | None] = {}
    for key, variable in first.variables.items():
        encoded = _stored(variable, str(key))
        stored = variable.encoding
        attrs = {**encoded.attrs, **{k: stored[k] for k in ("units", "calendar") if k in stored and k in encoded.attrs}}
        coordinates = stored.get("coordinates", " ".join(sorted(str(c) for c in frame[key].coords
                                                                if c not in frame[key].dims)) if key == name else "")
        if coordinates:
            attrs["coordinates"] = coordinates
        declared[str(key)] = Variable(str(key), encoded.dtype, tuple(str(d) for d in encoded.dims), attrs)
        sizes.update({str(d): int(n) for d, n in encoded.sizes.items()})
    return declared, {**sizes, **{str(d): int(n) for d, n in frame.sizes.items()}}


def _stored(variable: xr.Variable, name: str) -> xr.Variable:
    """``variable`` as xarray's netCDF writer stores it: dates, masks and packing encoded, text as characters (a
    scalar character, as CORDEX's ``rotated_pole``, kept scalar as files hold it), unicode as netCDF-4 strings;
    no ``_FillValue`` it was not given (the encoder would add NaN to floats)."""
    variable = variable.copy(deep=False)
    variable.encoding = {"_FillValue": None, **variable.encoding}
    encoded = EncodedStringCoder(allows_unicode=True).encode(encode_cf_variable(variable, name=name), name=name)
    if encoded.dtype.kind == "S" and (encoded.dtype.itemsize > 1 or "char_dim_name" in encoded.encoding):
        encoded = CharacterArrayCoder().encode(encoded, name=name)
    if encoded.dtype.kind == "U":
        encoded = xr.Variable(encoded.dims, np.asarray(encoded.values, dtype=object), encoded.attrs)
    return encoded


@dataclass
class _Given:
    """The input to fit, checked: its DataArray (one chunk along time), time dimension, name, result attributes
    (units chosen), missing values, and the Dataset it is analysed in (``frame``: the input Dataset, or one
    holding the DataArray and its coordinates)."""

    array: xr.DataArray
    time_dim: str
    name: str
    attrs: dict[Any, Any]
    missing: list[float]
    frame: xr.Dataset
    step: float | None  # the time coordinate's median step in days
    calendar: str | None


def _prepare(data: xr.DataArray | xr.Dataset | np.ndarray, dim: str | None, var: str | None, axis: int | None,
             units: str | None) -> _Given:
    """The checks and choices fit_pot and fit_gev share."""
    if isinstance(data, xr.Dataset):
        if axis is not None:
            raise ClimioError("axis= is for numpy input: give a Dataset's time dimension with dim=")
        name = _data_variable(data, var)
        time_dim = _time_dim(data[name], dim)
        frame = _unconcatenated(data, name, time_dim)
    elif isinstance(data, xr.DataArray):
        if var is not None:
            raise ClimioError("var= names a variable of a Dataset; data is already a DataArray")
        if axis is not None:
            raise ClimioError("axis= is for numpy input: give a DataArray's time dimension with dim=")
        name = str(data.name) if data.name is not None else "data"
        time_dim = _time_dim(data, dim)
        frame = _unconcatenated(data.to_dataset(name=name, promote_attrs=False), name, time_dim)
    else:
        if dim is not None:
            raise ClimioError(f"dim= names an xarray dimension: give the time axis of {type(data).__name__} "
                              f"input with axis= (got dim={dim!r})")
        if var is not None:
            raise ClimioError("var= names a variable of a Dataset, not of an array")
        name, time_dim = "data", "time"
        frame = _wrap_array(data, axis).to_dataset(name=name)
    array = frame[name]
    step, calendar = _time_step(array, time_dim)

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
                      f"(xr.set_options(keep_attrs=True))", UnitsWarning, stacklevel=3)
        chosen = "1"
    attrs["units"] = chosen
    missing = [float(array.attrs[k]) for k in ("_FillValue", "missing_value") if k in array.attrs]
    if array.chunks is not None and len(array.chunksizes[time_dim]) > 1:
        array = array.chunk({time_dim: -1})  # a cell needs its whole series: one chunk along time
    return _Given(array, time_dim, name, attrs, missing, frame, step, calendar)


def _data_variable(data: xr.Dataset, var: str | None) -> str:
    """``var``, checked, or the Dataset's one data variable (:mod:`climio.core.datavars`: not a coordinate, bounds,
    grid mapping... that another variable names)."""
    declared = {n: (v.dims, v.attrs) for n, v in _declared(data)[0].items()}
    coordinates = [str(c) for c in data.coords]
    if var is None:
        return only_data_variable(declared, "the Dataset", "var=", coordinates)
    if var not in data.data_vars:
        names = ", ".join(repr(n) for n in data_variables(declared, coordinates))
        raise ClimioError(f"the Dataset has no data variable {var!r}; its data variables: {names}")
    return var


def _unconcatenated(frame: xr.Dataset, name: str, time_dim: str) -> xr.Dataset:
    """``frame`` with the variables a multi-file open repeated along time (``open_mfdataset`` concatenates a
    CORDEX ``rotated_pole`` or a ``lat_bnds`` that each file has without time) as each file has them: their first
    step. Which they are, xarray keeps: the shape in the first file (``encoding["original_shape"]``)."""
    repeated = [n for n, v in frame.variables.items() if n != name and v.dims[:1] == (time_dim,)
                and tuple(v.encoding.get("original_shape", v.shape)) == v.shape[1:]]
    out = frame.drop_vars(repeated)
    for n in repeated:
        first = frame.variables[n][{time_dim: 0}]
        out = out.assign_coords({n: first}) if n in frame.coords else out.assign({n: first})
    return out


def _fit_block(block: np.ndarray, *, method: Method, timing: object, settings: Settings,
               trend: covariate.Trend | None, missing: list[float], fields: Mapping[str, str], ci: Request | None
               ) -> tuple[np.ndarray, ...]:
    """The method's analysis of a block of cells (..., time): one array per result field, return levels
    (..., period)."""
    reading = _InMemory(_series(block), missing)
    result = method.analyse(method.scan(reading, timing, settings, trend), timing, settings, ci, trend)
    return _fields(result, fields, block.shape[:-1])


def _fit_shared(array: xr.DataArray, fit: Callable[[np.ndarray], tuple[np.ndarray, ...]],
                comm: MPI.Comm) -> list[np.ndarray]:
    """``fit`` of this rank's block of the cells of ``array`` (cells..., time), then every rank's gathered: the
    whole result on every rank. The cells, flattened in order, are split in contiguous blocks as
    :func:`~climio.core.decomp.block_range` splits them (a rank may have none); a rank reads only the rows of the
    first cell dimension that hold its block. The fit is per cell, so the result is one process's, bit for bit.
    A rank whose read or fit fails stops every rank, before the gather, in one IOFault."""
    shape, length = array.shape[:-1], array.shape[-1]
    rows = array if shape else array.expand_dims("cell")  # a single series is one cell
    inner = math.prod(rows.shape[1:-1])
    counts = [block_range(math.prod(shape), comm.Get_size(), rank)[1] for rank in range(comm.Get_size())]
    start, count = block_range(math.prod(shape), comm.Get_size(), comm.Get_rank())
    first, last = start // inner, -(-(start + count) // inner)
    parts: tuple[np.ndarray, ...] = ()
    failure = ""
    try:
        block = np.asarray(rows[first:last].values).reshape((last - first) * inner, length)
        parts = fit(block[start - first * inner:][:count])
    except Exception as err:  # noqa: BLE001 - any: the other ranks wait at the gather
        failure = f"rank {comm.Get_rank()} could not fit its {count} cell(s) from cell {start}: " \
                  f"{err if isinstance(err, ClimioError) else f'{type(err).__name__}: {err}'}"
    mpi.raise_fault(comm, failure)
    return [_gathered(part, counts, comm).reshape((*shape, *part.shape[1:])) for part in parts]


def _gathered(part: np.ndarray, counts: list[int], comm: MPI.Comm) -> np.ndarray:
    """Every rank's ``part`` (its ``counts[rank]`` cells first) joined along the cells, on every rank."""
    per_cell = math.prod(part.shape[1:])
    whole = np.empty((sum(counts), *part.shape[1:]), part.dtype)
    comm.Allgatherv(np.ascontiguousarray(part), [whole, [n * per_cell for n in counts]])
    return whole


class _InMemory:
    """A block of cells' series (time, cells) as a method's sampler reads them
    (:class:`climio.eva.methods.Reading`): all at once."""

    def __init__(self, series: np.ndarray, missing: list[float]) -> None:
        self.series, self.missing = series, missing
        self.length, self.cells = series.shape
        self.dtype = series.dtype

    def largest(self, k: int, times: bool) -> largest.Scanner:
        return largest.scan(self.series, k, self.missing, times)

    def feed(self, update: Callable[[np.ndarray], None]) -> None:
        update(self.series)


def _series(block: np.ndarray) -> np.ndarray:
    """A block of cells (..., time) as (time, cells): a view of time-first input in its own layout."""
    series = np.moveaxis(block, -1, 0)
    series = series.reshape(series.shape[0], -1)
    return series.astype(np.float64) if series.dtype.kind != "f" else series


def _fields(result: Any, fields: Mapping[str, str], shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    out = []
    for field, dtype in fields.items():
        values = getattr(result, field)  # ([seasons,] [values, periods,] cells): the cells first
        lead = values.shape[:-1]
        values = np.moveaxis(values.reshape((*lead, *shape)), tuple(range(len(lead))), tuple(range(-len(lead), 0)))
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


def _time_numbers(array: xr.DataArray, time_dim: str) -> tuple[np.ndarray, str, str] | None:
    """The time coordinate as numbers, their CF units and calendar (None: no coordinate with dates)."""
    if time_dim not in array.coords or array.coords[time_dim].ndim != 1 or array.coords[time_dim].size == 0:
        return None
    coord = array.coords[time_dim]
    values = np.asarray(coord.values)
    calendar = coord.encoding.get("calendar", coord.attrs.get("calendar"))
    if values.dtype.kind == "M":
        seconds = (values - values[0]) / np.timedelta64(1, "s")
        first = str(np.datetime_as_string(values[0], unit="s")).replace("T", " ")
        return seconds / 86400.0, f"days since {first}", "proleptic_gregorian"
    if values.dtype.kind == "O" and _is_cftime(values[0]):
        import cftime

        calendar = calendar or values[0].calendar
        return np.asarray(cftime.date2num(values, "days since 0001-01-01", calendar)), "days since 0001-01-01", calendar
    units = time_units(coord.attrs)
    if values.dtype.kind in "iuf" and units is not None:
        return values.astype(np.float64), units, calendar_of({"calendar": calendar or "standard"})
    return None


def _warn_if_nothing_fitted(status: np.ndarray, name: str, method: Method, hints: Mapping[int, str]) -> None:
    """A NoFitWarning with the status counts when no cell is ok (or at a bound of the shape)."""
    if status.size == 0:
        return
    counts = np.bincount(status.ravel().astype(np.int64), minlength=len(method.statuses))
    if any(counts[i] for i, meaning in enumerate(method.statuses) if meaning == "ok" or meaning.startswith("shape_")):
        return
    summary = ", ".join(f"{meaning}: {n}" for meaning, n in zip(method.statuses, counts) if n)
    hint = "".join(h for code, h in hints.items() if counts[code])
    warnings.warn(f"no cell of '{name}' could be fitted ({summary}){hint}", NoFitWarning, stacklevel=3)


__all__ = ["NoFitWarning", "UnitsWarning", "fit_gev", "fit_pot"]
