"""``climio eva --plot``: where the cells are drawn and what the axes say, from the file's own coordinates.

A rotated-pole CORDEX file is drawn on its 2-D lat/lon (not on rlat/rlon labelled "latitude"), ICON's cells as
points on their 1-D latitude/longitude, a plain grid on its coordinates with their long_name and units, and a
layout that is no map is refused before the analysis.
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import one_error_line

from climio.errors import ClimioError
from climio.eva.plot import Map
from climio.eva.series import Series, time_rule
from climio.subset.inputs import open_inputs
from climio.subset.options import parse_dim_range

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Batch  # noqa: E402

REAL = os.path.join(os.path.dirname(__file__), "data", "real")


def real(pattern: str) -> list[str]:
    found = sorted(glob.glob(os.path.join(REAL, pattern)))
    assert found, pattern
    return found


def map_of(paths: list[str], var: str, ranges: tuple[str, ...] = ()) -> Map:
    from mpi4py import MPI

    with open_inputs(paths, MPI.COMM_WORLD, time_rule(var, paths[0]), False, label="inputs") as inputs:
        return Map.of(Series(inputs, var, [parse_dim_range(r) for r in ranges], paths[0]))


def test_rotated_pole_is_drawn_on_its_2d_lat_lon() -> None:
    where = map_of(real("pr_NAM-22_*_day_*.nc"), "pr")
    assert (where.kind, where.x, where.y) == ("mesh", "lon", "lat")
    assert (where.xlabel, where.ylabel) == ("longitude (degrees_east)", "latitude (degrees_north)")
    assert where.units == "kg m-2 s-1" and where.period == "2051-01-01 12:00:00 .. 2060-12-31 12:00:00"


def test_icon_cells_are_points() -> None:
    where = map_of(real("tas_Amon_ICON-ESM-LR_*.nc"), "tas")
    assert (where.kind, where.x, where.y) == ("points", "longitude", "latitude")


def test_a_plain_grid_is_labelled_by_its_coordinates(tmp_path: Path) -> None:
    path = tmp_path / "grid.nc"
    with netCDF4.Dataset(path, "w") as ds:
        for name, size in (("time", 40), ("y", 3), ("x", 4)):
            ds.createDimension(name, size)
        ds.createVariable("time", "f8", ("time",)).setncatts({"units": "days since 2000-01-01"})
        ds.createVariable("y", "f8", ("y",)).setncatts({"long_name": "northing", "units": "km"})
        ds.createVariable("pr", "f4", ("time", "y", "x"))[:] = np.ones((40, 3, 4), "f4")
    where = map_of([str(path)], "pr")
    assert (where.kind, where.x, where.y) == ("mesh", None, "y")
    assert (where.xlabel, where.ylabel) == ("x (index)", "northing (km)")


def test_three_cell_dimensions_are_no_map() -> None:
    with pytest.raises(ClimioError, match="--plot draws maps of two cell dimensions.*lev, lat, lon"):
        map_of(real("o3_AERmon_*.nc"), "o3")
    assert map_of(real("o3_AERmon_*.nc"), "o3", ("lev,0",)).x == "lon"


def test_cordex_plot_and_refusal_from_the_command(tmp_path: Path) -> None:
    """Both runs, one after the other, in one 2-rank process (``helpers/eva_batch.py``: one start-up)."""
    png, out = tmp_path / "map.png", tmp_path / "eva.nc"
    batch = Batch(tmp_path.parent / f"{tmp_path.name}-batch", 2, timeout=300)
    batch.add("cordex", "eva", *real("pr_NAM-22_*_day_*.nc"), out, "--plot", png)
    batch.add("o3", "eva", *real("o3_AERmon_*.nc"), tmp_path / "o3.nc", "-v", "o3", "--npy", "12", "--plot",
              tmp_path / "o3.png")
    result = batch["cordex"]
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    refused = batch["o3"]
    one_error_line(refused, "--plot", "-d")
    assert sorted(os.listdir(tmp_path)) == ["eva.nc", "map.png"]
