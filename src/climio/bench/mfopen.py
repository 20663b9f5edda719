"""``climio bench open``: many daily files opened as one dataset from xarray, and one cell's series read.

The files are what a daily CMIP archive cut into days looks like: ``--files`` netCDF-4 (classic model) files of
one ``T x NLAT x NLON`` step each, on one grid and a standard calendar, each counting time from its own first day
(``days since`` that day), as CMIP decades each have their own units. Three ways open them all and read one
cell's whole series, interleaved in each repetition:

* ``climio.open_mfdataset(paths)``: joined by the commands' rules (rebased units, calendars, overlaps, gaps);
* ``xr.open_mfdataset(paths, combine="by_coords")`` with xarray's defaults;
* the same with ``data_vars="minimal", coords="minimal", compat="override"``, xarray's advice for many files.

The three series must be equal. The bytes climio reads while opening (before the cell) come from its trace:
coordinates only (each file's time, and its latitudes and longitudes to check that the grids agree), no
``tas``. Medians of ``--reps``; the files are written once, before the timed runs, so every way starts from the
page cache.
"""

from __future__ import annotations

import datetime
import importlib
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.bench.runner import (check_reps, grouped, markdown_table, median, require_plain_process, save_results,
                                 scratch_directory)
from climio.core import trace
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI

FIRST_DAY = datetime.date(2000, 1, 1)
WAYS = ("climio", "xarray", "xarray minimal")


def write_files(directory: str, count: int, shape: tuple[int, ...], file_format: str = "NETCDF4_CLASSIC") -> list[str]:
    """``count`` daily files of ``shape`` (steps, lat, lon), file k starting on day k with its own units, in
    netCDF4-python's ``file_format``."""
    import netCDF4

    steps, nlat, nlon = shape
    lat = np.linspace(-90.0, 90.0, nlat)
    lon = np.arange(nlon) * (360.0 / nlon)
    rng = np.random.default_rng(0)
    paths = []
    for k in range(count):
        day = FIRST_DAY + datetime.timedelta(days=k * steps)
        path = os.path.join(directory, f"tas_day_{day:%Y%m%d}.nc")
        with netCDF4.Dataset(path, "w", format=file_format) as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", nlat)
            ds.createDimension("lon", nlon)
            t = ds.createVariable("time", "f8", ("time",))
            t.setncatts({"units": f"days since {day:%Y-%m-%d} 00:00:00", "calendar": "standard",
                         "standard_name": "time"})
            t[:] = np.arange(steps) + 0.5
            ds.createVariable("lat", "f8", ("lat",)).setncatts({"units": "degrees_north"})
            ds["lat"][:] = lat
            ds.createVariable("lon", "f8", ("lon",)).setncatts({"units": "degrees_east"})
            ds["lon"][:] = lon
            tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"))
            tas.setncatts({"units": "K", "standard_name": "air_temperature"})
            tas[:] = rng.random((steps, nlat, nlon), dtype="f4") * 60.0 + 240.0
        paths.append(path)
    return paths


def _climio(paths: list[str], cell: tuple[int, int]) -> tuple[np.ndarray, int]:
    import climio

    trace.reset()
    with climio.open_mfdataset(paths) as ds:
        opened = int(trace.tracer().totals().get("read", {}).get("bytes", 0))
        return ds["tas"][:, cell[0], cell[1]].values, opened


def _xarray(paths: list[str], cell: tuple[int, int], **options: Any) -> tuple[np.ndarray, int]:
    import xarray as xr

    with xr.open_mfdataset(paths, combine="by_coords", **options) as ds:
        return ds["tas"][:, cell[0], cell[1]].values, 0


def _ways(paths: list[str], cell: tuple[int, int]) -> dict[str, Callable[[], tuple[np.ndarray, int]]]:
    return {"climio": lambda: _climio(paths, cell),
            "xarray": lambda: _xarray(paths, cell),
            "xarray minimal": lambda: _xarray(paths, cell, data_vars="minimal", coords="minimal",
                                              compat="override")}


def main(comm: MPI.Comm, *, files: int, shape: tuple[int, ...], reps: int, directory: str,
         out: str | None) -> None:
    importlib.import_module("climio.xr")  # xarray and climio's engine, imported before any clock
    require_plain_process(comm, "open")
    check_reps(reps)
    if files < 2 or min(shape) < 1:
        raise ClimioError(f"--files {files} --shape {','.join(map(str, shape))}: give at least 2 files of at "
                          f"least one step and one cell")
    cell = (shape[1] // 2, shape[2] // 2)
    rows: list[dict[str, Any]] = []
    with scratch_directory(comm, "open", directory) as workdir:
        print(f"bench open: writing {files} files of {shape[0]} x {shape[1]} x {shape[2]} ...", flush=True)
        paths = write_files(workdir, files, shape)
        series: dict[str, np.ndarray] = {}
        for rep in range(reps):
            for way, run in _ways(paths, cell).items():
                started = time.perf_counter()
                values, opened = run()
                rows.append({"way": way, "rep": rep, "files": files, "seconds": time.perf_counter() - started,
                             "opened_bytes": opened})
                series[way] = values
    if any(not np.array_equal(series["climio"], other) for other in series.values()):
        raise ClimioError("bench open: the three ways read different series for the same cell", collective=True)
    report = _report(rows, files, shape)
    print(report["table"])
    for line in report["notes"]:
        print(line)
    if out is not None:
        save_results(out, "open", report, rows)


def _report(rows: list[dict[str, Any]], files: int, shape: tuple[int, ...]) -> dict[str, Any]:
    """Medians per way, each as a multiple of climio's, and the bytes climio read while opening."""
    medians = {way: median(group, "seconds") for (way,), group in grouped(rows, "way").items()}
    ours = medians["climio"]
    opened = max(r["opened_bytes"] for r in rows if r["way"] == "climio")
    coordinates = files * 8 * (shape[0] + shape[1] + shape[2])  # each file's time, lat and lon, in float64
    table = markdown_table([("way", "l"), ("seconds", "r"), ("x climio", "r")],
                           [(way, f"{medians[way]:.2f}", f"{medians[way] / ours:.1f}") for way in WAYS])
    notes = [f"{files} files; the series is the same by every way; climio read {opened} bytes while opening "
             f"(each file's time, lat and lon: {coordinates} bytes; one step of tas in one file is "
             f"{4 * shape[1] * shape[2]} bytes)",
             f"target: climio at least 10x faster than xarray's defaults ({medians['xarray'] / ours:.1f}x) and "
             f"3x faster than xarray minimal ({medians['xarray minimal'] / ours:.1f}x)"]
    return {"files": files, "shape": list(shape), "medians_s": medians, "opened_bytes": opened,
            "coordinate_bytes": coordinates, "table": table, "notes": notes}
