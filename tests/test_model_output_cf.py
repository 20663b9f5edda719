"""A model's output file is CF: xarray decodes its time, in the default units (seconds since 1970-01-01, standard
calendar) or in the model's own (its start, its calendar); it says ``Conventions = "CF-1.8"`` and has a
``history`` line. Read back with netCDF4 and xarray's decoding, against dates worked out with cftime.

One process (the in-process MPI world of one rank), each file written in the default mode and strategy.
"""

from __future__ import annotations

from pathlib import Path

import cftime
import netCDF4
import numpy as np
import pytest
import xarray as xr

from climio.errors import ClimioError
from climio.model import decomposition as dec
from climio.model.output import Field, ModelOutput

STEPS = (0.0, 3600.0, 7200.0)


def write(path: Path, **options: object) -> None:
    """Three records of a 4x5 field at ``STEPS``, one rank."""
    from mpi4py import MPI

    d = dec.blocks((4, 5), 1, 1, 0)
    with ModelOutput(str(path), d, [Field("ps", dtype="f8", attrs={"units": "Pa"})], MPI.COMM_WORLD, overwrite=True,
                     **options) as out:  # type: ignore[arg-type]
        for step, time in enumerate(STEPS):
            out.write(step, {"ps": np.full(d.local_shape(), 1e5 + step)}, time=time)


def test_default_time_is_cf_seconds_since_1970(tmp_path: Path) -> None:
    path = tmp_path / "out.nc"
    write(path)
    with netCDF4.Dataset(path) as nc:
        assert {k: nc["time"].getncattr(k) for k in nc["time"].ncattrs()} == {
            "standard_name": "time", "long_name": "time", "units": "seconds since 1970-01-01 00:00:00",
            "calendar": "standard", "axis": "T"}
        assert nc.Conventions == "CF-1.8"
        assert nc.history.startswith("climio ") and "ModelOutput" in nc.history and "1 rank" in nc.history
    with xr.open_dataset(path) as ds:  # 'units = "s"' before: xarray left them numbers
        expected = np.array(["1970-01-01T00:00", "1970-01-01T01:00", "1970-01-01T02:00"], dtype="datetime64[ns]")
        assert np.array_equal(ds["time"].values, expected)
        assert ds["ps"].values[:, 0, 0].tolist() == [1e5, 1e5 + 1, 1e5 + 2]


def test_the_models_start_and_calendar(tmp_path: Path) -> None:
    path = tmp_path / "out.nc"
    units = "seconds since 2051-02-28 22:00:00"
    write(path, time_units=units, calendar="noleap", attrs={"title": "a model", "history": "set up by the model"})
    with netCDF4.Dataset(path) as nc:
        assert nc["time"].units == units and nc["time"].calendar == "noleap"
        assert list(nc.ncattrs()) == ["Conventions", "title", "history"]
        assert nc.history.splitlines()[1:] == ["set up by the model"]
    with xr.open_dataset(path, use_cftime=True) as ds:
        assert list(ds["time"].values) == list(cftime.num2date(list(STEPS), units, "noleap"))
        assert [str(t) for t in ds["time"].values] == ["2051-02-28 22:00:00", "2051-02-28 23:00:00",
                                                        "2051-03-01 00:00:00"]  # noleap: no 29 February


def test_time_attributes_as_given_and_errors(tmp_path: Path) -> None:
    """The C API hands over the record variable's own attributes: with units, they are the file's as they are."""
    path = tmp_path / "out.nc"
    write(path, time_attrs={"units": "hours since 2016-07-01 00:00:00", "bounds": "time_bnds"})
    with netCDF4.Dataset(path) as nc:
        assert {k: nc["time"].getncattr(k) for k in nc["time"].ncattrs()} == {
            "units": "hours since 2016-07-01 00:00:00", "bounds": "time_bnds"}
    write(path, time_attrs={"bounds": "time_bnds"})  # no units: CF's, and the bounds
    with netCDF4.Dataset(path) as nc:
        assert nc["time"].units == "seconds since 1970-01-01 00:00:00" and nc["time"].bounds == "time_bnds"
    for options, words in (({"time_units": "s"}, r"time_units 's' with calendar 'standard': not CF time"),
                           ({"calendar": "martian"}, "calendar 'martian': not CF time"),
                           ({"time_units": "days since 2000-01-01", "time_attrs": {"units": "s"}},
                            "give the time units once")):
        with pytest.raises(ClimioError, match=words):
            write(tmp_path / "bad.nc", **options)
        assert not (tmp_path / "bad.nc").exists()
