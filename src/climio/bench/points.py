"""``climio bench points``: the series at many stations from many daily files, climio against xarray.

The files are ``climio bench open``'s (one day of a CMIP grid each, every file counting time from its own first
day). Two ways take the whole series at ``--stations`` random stations (seeded), interleaved in each repetition:

* ``climio subset --points`` (in this process, through the command's own entry): each station's nearest cell
  by great-circle distance, every file read for those cells only, a CF timeSeries file written;
* ``xr.open_mfdataset(paths, data_vars="minimal", coords="minimal", compat="override")`` then
  ``.sel(lat=..., lon=..., method="nearest")`` with the stations as a vector (xarray's advice for many files),
  loaded into memory.

xarray's nearest is per axis (nearest latitude, nearest longitude), climio's is on the sphere: they pick the
same cell except near the middle between two latitudes; the series must be equal wherever the cells agree, and
the stations where they do not are counted. The bytes climio read are its own count (the trace), against the
bytes of the series selected. Medians of ``--reps``; the files are written once, before the timed runs.
"""

from __future__ import annotations

import importlib
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.bench.mfopen import write_files
from climio.bench.runner import (check_reps, grouped, markdown_table, median, require_plain_process, save_results,
                                 scratch_directory)
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI

WAYS = ("climio subset --points", "xarray sel nearest")


def stations(count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` stations spread over the globe (uniform on the sphere, seeded)."""
    rng = np.random.default_rng(1)
    return np.degrees(np.arcsin(rng.uniform(-1, 1, count))), rng.uniform(-180.0, 180.0, count)


def _climio(paths: list[str], points_file: str, output: str, comm: MPI.Comm) -> tuple[np.ndarray, np.ndarray, int]:
    import netCDF4

    from climio.subset.job import Request, subset
    from climio.subset.stations import read_stations

    summary = subset(Request(inputs=paths, output=output, variables=["tas"], points=read_stations(points_file),
                             overwrite=True), comm)
    with netCDF4.Dataset(output) as ds:
        cells = np.stack([ds["lat_original_index"][:], ds["lon_original_index"][:]], axis=1)
        return ds["tas"][:].filled(np.nan), cells, summary.bytes_read


def _xarray(paths: list[str], lat: np.ndarray, lon: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    import xarray as xr

    with xr.open_mfdataset(paths, combine="by_coords", data_vars="minimal", coords="minimal",
                           compat="override") as ds:
        east = np.mod(lon, 360.0)
        picked = ds["tas"].sel(lat=xr.DataArray(lat, dims="station"), lon=xr.DataArray(east, dims="station"),
                               method="nearest")
        values = picked.values
        cells = np.stack([np.searchsorted(ds["lat"].values, picked["lat"].values),
                          np.searchsorted(ds["lon"].values, picked["lon"].values)], axis=1)
        return values, cells, 0


def main(comm: MPI.Comm, *, files: int, count: int, shape: tuple[int, ...], reps: int, directory: str,
         out: str | None) -> None:
    importlib.import_module("xarray")  # imported before any clock
    require_plain_process(comm, "points")
    check_reps(reps)
    if files < 2 or count < 1 or min(shape) < 1:
        raise ClimioError(f"--files {files} --stations {count}: give at least 2 files and 1 station")
    lat, lon = stations(count)
    rows: list[dict[str, Any]] = []
    with scratch_directory(comm, "points", directory) as workdir:
        print(f"bench points: writing {files} files of {shape[0]} x {shape[1]} x {shape[2]} ...", flush=True)
        paths = write_files(workdir, files, shape)
        points_file = os.path.join(workdir, "stations.csv")
        with open(points_file, "w") as stream:
            stream.write("name,lat,lon\n" + "".join(f"s{k},{a!r},{o!r}\n" for k, (a, o) in enumerate(zip(lat, lon))))
        output = os.path.join(workdir, "stations.nc")
        results: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}
        for rep in range(reps):
            for way in WAYS:
                started = time.perf_counter()
                results[way] = _climio(paths, points_file, output, comm) if way == WAYS[0] else \
                    _xarray(paths, lat, lon)
                rows.append({"way": way, "rep": rep, "files": files, "stations": count,
                             "seconds": time.perf_counter() - started, "bytes_read": results[way][2]})
    report = _report(rows, results, files, count, shape)
    print(report["table"])
    for line in report["notes"]:
        print(line)
    if out is not None:
        save_results(out, "points", report, rows)


def _report(rows: list[dict[str, Any]], results: dict[str, tuple[np.ndarray, np.ndarray, int]], files: int,
            count: int, shape: tuple[int, ...]) -> dict[str, Any]:
    """Medians per way as multiples of climio's; the series compared where both ways took the same cell."""
    ours, theirs = results[WAYS[0]], results[WAYS[1]]
    same = np.all(ours[1] == theirs[1], axis=1)
    if not np.array_equal(ours[0][:, same], theirs[0][:, same]):
        raise ClimioError("bench points: climio and xarray read different series from the same cell")
    medians = {way: median(group, "seconds") for (way,), group in grouped(rows, "way").items()}
    selected = files * shape[0] * count * 4
    read = max(r["bytes_read"] for r in rows if r["way"] == WAYS[0])
    table = markdown_table([("way", "l"), ("seconds", "r"), ("x climio", "r")],
                           [(way, f"{medians[way]:.2f}", f"{medians[way] / medians[WAYS[0]]:.1f}") for way in WAYS])
    notes = [f"{files} files, {count} stations; the same cell for {int(same.sum())} stations, their series equal "
             f"(xarray's nearest is per axis, climio's on the sphere); climio read {read} bytes for {selected} "
             f"bytes of series ({read / selected:.2f}x, the grid's coordinates included)",
             f"target: climio at least 5x faster ({medians[WAYS[1]] / medians[WAYS[0]]:.1f}x), at most 1.3x the "
             f"bytes ({read / selected:.2f}x)"]
    return {"files": files, "stations": count, "shape": list(shape), "medians_s": medians, "bytes_read": read,
            "bytes_selected": selected, "same_cell": int(same.sum()), "table": table, "notes": notes}
