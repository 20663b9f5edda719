"""``climio bench points``: the series at many stations from many daily files, climio against xarray.

The files are ``climio bench open``'s (one day of a CMIP grid each, every file counting time from its own first
day), written once as netCDF-4 (HDF5, one chunk a day, as netCDF-C makes a record variable's) and once as CDF-5
(contiguous). Two ways take the whole series at ``--stations`` random stations (seeded), interleaved in each
repetition:

* ``climio subset --points`` (in this process, through the command's own entry): each station's nearest cell
  by great-circle distance, every file read for those cells only, a CF timeSeries file written;
* ``xr.open_mfdataset(paths, data_vars="minimal", coords="minimal", compat="override")`` then
  ``.sel(lat=..., lon=..., method="nearest")`` with the stations as a vector (xarray's advice for many files),
  loaded into memory.

xarray's nearest is per axis (nearest latitude, nearest longitude), climio's is on the sphere: they pick the
same cell except near the middle between two latitudes; the series must be equal wherever the cells agree, and
the stations where they do not are counted. The bytes climio asks the library for are its own count; in chunked
files every tool's library reads whole chunks from disk, so climio asks for the box its stations span in each
chunk (one call, not one per station), and in contiguous files only the cells. Medians of ``--reps``; the
files are written before the timed runs.
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
FORMATS = {"netcdf4": "NETCDF4_CLASSIC", "cdf5": "NETCDF3_64BIT_DATA"}


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


def main(comm: MPI.Comm, *, files: int, count: int, shape: tuple[int, ...], formats: list[str], reps: int,
         directory: str, out: str | None) -> None:
    importlib.import_module("xarray")  # imported before any clock
    require_plain_process(comm, "points")
    check_reps(reps)
    if files < 2 or count < 1 or min(shape) < 1:
        raise ClimioError(f"--files {files} --stations {count}: give at least 2 files and 1 station")
    for name in formats:
        if name not in FORMATS:
            raise ClimioError(f"--formats {name}: choose among {', '.join(FORMATS)}")
    lat, lon = stations(count)
    rows: list[dict[str, Any]] = []
    results: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, int]] = {}
    with scratch_directory(comm, "points", directory) as workdir:
        points_file = os.path.join(workdir, "stations.csv")
        with open(points_file, "w") as stream:
            stream.write("name,lat,lon\n" + "".join(f"s{k},{a!r},{o!r}\n" for k, (a, o) in enumerate(zip(lat, lon))))
        paths = {}
        for name in formats:
            print(f"bench points: writing {files} {name} files of {shape[0]} x {shape[1]} x {shape[2]} ...",
                  flush=True)
            os.makedirs(os.path.join(workdir, name))
            paths[name] = write_files(os.path.join(workdir, name), files, shape, FORMATS[name])
        output = os.path.join(workdir, "stations.nc")
        for rep in range(reps):
            for name in formats:
                for way in WAYS:
                    started = time.perf_counter()
                    results[name, way] = _climio(paths[name], points_file, output, comm) if way == WAYS[0] else \
                        _xarray(paths[name], lat, lon)
                    rows.append({"format": name, "way": way, "rep": rep, "files": files, "stations": count,
                                 "seconds": time.perf_counter() - started, "bytes_read": results[name, way][2]})
    report = _report(rows, results, formats, files, count, shape)
    print(report["table"])
    for line in report["notes"]:
        print(line)
    if out is not None:
        save_results(out, "points", report, rows)


def _report(rows: list[dict[str, Any]], results: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, int]],
            formats: list[str], files: int, count: int, shape: tuple[int, ...]) -> dict[str, Any]:
    """Medians per format and way as multiples of climio's; the series compared where both took the same cell."""
    medians = {key: median(group, "seconds") for key, group in grouped(rows, "format", "way").items()}
    selected = files * shape[0] * count * 4
    table_rows, notes, summary = [], [], {}
    for name in formats:
        ours, theirs = results[name, WAYS[0]], results[name, WAYS[1]]
        same = np.all(ours[1] == theirs[1], axis=1)
        if not np.array_equal(ours[0][:, same], theirs[0][:, same]):
            raise ClimioError(f"bench points: climio and xarray read different series from the same cell ({name})")
        read = max(r["bytes_read"] for r in rows if r["way"] == WAYS[0] and r["format"] == name)
        base = medians[name, WAYS[0]]
        for way in WAYS:
            extra = f"{read / selected:.2f}x" if way == WAYS[0] else ""
            table_rows.append((name, way, f"{medians[name, way]:.2f}", f"{medians[name, way] / base:.1f}", extra))
        notes.append(f"{name}: the same cell for {int(same.sum())} of {count} stations, their series equal; "
                     f"climio asked for {read} bytes for {selected} bytes of series ({read / selected:.2f}x); "
                     f"{medians[name, WAYS[1]] / base:.1f}x faster than xarray")
        summary[name] = {"medians_s": {way: medians[name, way] for way in WAYS}, "bytes_read": read,
                         "same_cell": int(same.sum())}
    table = markdown_table([("format", "l"), ("way", "l"), ("seconds", "r"), ("x climio", "r"),
                            ("bytes asked / series", "r")], table_rows)
    notes.append("target: at least 5x faster than xarray, at most 1.3x the bytes of the series")
    return {"files": files, "stations": count, "shape": list(shape), "bytes_selected": selected,
            "formats": summary, "table": table, "notes": notes}
