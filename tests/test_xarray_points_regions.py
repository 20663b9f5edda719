"""``.climio.points`` and ``.climio.region`` on a Dataset from ``climio.open_mfdataset``: what the command writes.

Two CORDEX files joined along time: the series at two stations (given as a mapping, and as a CSV file) equal
``climio subset --points`` over the same files, variable by variable, attribute by attribute; written with
``path=`` the result opens lazily. The regular MPI-ESM file: ``.climio.region(..., weights=True)`` equals
``climio subset --region ... --weights``. Bad keywords are refused in the API's words.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import climio
from climio.errors import ClimioError
from conftest import DATA

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import run_table  # noqa: E402

NAM = sorted((DATA / "real").glob("pr_NAM-22_*.nc"))
O3 = DATA / "real" / "o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc"
EUROPE = DATA / "regions" / "europe.geojson"
STATIONS = {"Carbondale": (37.73, -89.22), "Montreal": (45.50, -73.57)}


def _same(ours: xr.Dataset, theirs: xr.Dataset) -> None:
    assert set(ours.variables) == set(theirs.variables)
    for name in theirs.variables:
        np.testing.assert_array_equal(ours[name].values, theirs[name].values, name)
        assert {k: v for k, v in ours[name].attrs.items()} == {k: v for k, v in theirs[name].attrs.items()}, name
    assert ours.attrs["featureType" if "featureType" in theirs.attrs else "Conventions"] == \
        theirs.attrs["featureType" if "featureType" in theirs.attrs else "Conventions"]


def test_points_and_region_equal_the_command(tmp_path: Path) -> None:
    csv = tmp_path / "two.csv"
    csv.write_text("name,lat,lon\n" + "".join(f"{n},{a},{o}\n" for n, (a, o) in STATIONS.items()))
    points_out, region_out = tmp_path / "cmd_points.nc", tmp_path / "cmd_region.nc"
    done = run_table([["subset", "-v", "pr", "-d", "time,2055-12-01,2056-02-01", "--points", str(csv),
                       *map(str, NAM), str(points_out)],
                      ["subset", "-v", "o3", "--touching", "--weights", "--region", f"{EUROPE}:Benelux", str(O3),
                       str(region_out)]], None, tmp_path / "batch")
    assert [r.returncode for r in done] == [0, 0], [r.stderr for r in done]
    with climio.open_mfdataset([str(p) for p in NAM]) as ds, xr.open_dataset(points_out) as command:
        from_mapping = ds["pr"].climio.points(STATIONS, "time,2055-12-01,2056-02-01")
        from_file = ds["pr"].climio.points(csv, "time,2055-12-01,2056-02-01")
        _same(from_file, command)
        for name in ("pr", "lat", "lon", "distance", "rlat_original_index"):
            np.testing.assert_array_equal(from_mapping[name].values, command[name].values, name)
        lazy = ds["pr"].climio.points(csv, "time,2055-12-01,2056-02-01", path=tmp_path / "lazy.nc")
        assert lazy["pr"].variable._in_memory is False
        np.testing.assert_array_equal(lazy["pr"].values, command["pr"].values)
        lazy.close()
    with climio.open_mfdataset([str(O3)]) as ds, xr.open_dataset(region_out) as command:
        ours = ds["o3"].climio.region(f"{EUROPE}:Benelux", touching=True, weights=True)
        _same(ours, command)
        assert ours["o3"].attrs["cell_measures"] == "area: region_area"


@pytest.mark.parametrize(("call", "words"), [
    (lambda ds: ds.climio.points({"A": (95.0, 0.0)}), "off the globe"),
    (lambda ds: ds.climio.subset(weights=True), "weights= applies to a region"),
    (lambda ds: ds.climio.region(f"{EUROPE}:Benelux", box="1,0,1,0"), "give one of box=, lonlat=, region="),
])
def test_points_and_region_refusals(call, words: str) -> None:
    with climio.open_mfdataset([str(O3)]) as ds, pytest.raises(ClimioError, match=words):
        call(ds)
