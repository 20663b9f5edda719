"""``climio eva --points`` and ``--region``: the fits at the stations' cells or the region's cells only, equal to
``climio eva`` on what ``climio subset --points`` / ``--region --mask`` writes, the stations' names carried into
the output; at 1 and 2 ranks; the scratch cut removed; a misplaced ``--points-inside`` refused in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import netCDF4
import numpy as np

from conftest import DATA, leftovers

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import run_table  # noqa: E402

CESM = DATA / "real" / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
STATIONS = "name,lat,lon\nCape Town,-33.92,18.42\nSouth Pole,-90,0\nPacific,3.5,127.0\nOslo,59.91,10.75\n"
REGION = {"type": "Feature", "properties": {"name": "Maritime"},
          "geometry": {"type": "Polygon", "coordinates": [[[120, 0], [130, 0], [130, 10], [120, 10], [120, 0]]]}}


def _values(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: v[:] for name, v in ds.variables.items()}


def test_eva_at_stations_and_in_a_region(tmp_path: Path) -> None:
    stations, region = tmp_path / "stations.csv", tmp_path / "region.geojson"
    stations.write_text(STATIONS)
    region.write_text(json.dumps(REGION))
    cases = {
        "cut_points": ["subset", "--points", str(stations), str(CESM), str(tmp_path / "cut_points.nc")],
        "two_step_points": ["eva", str(tmp_path / "cut_points.nc"), str(tmp_path / "two_step_points.nc")],
        "cut_region": ["subset", "--mask", "--region", f"{region}:Maritime", str(CESM),
                       str(tmp_path / "cut_region.nc")],
        "two_step_region": ["eva", "-v", "tas", str(tmp_path / "cut_region.nc"), str(tmp_path / "two_step_region.nc")],
    }
    for ranks in (None, 2):
        tag = ranks or 1
        cases[f"points{tag}"] = ["eva", "--points", str(stations), str(CESM), str(tmp_path / f"points{tag}.nc")]
        cases[f"region{tag}"] = ["eva", "--region", f"{region}:Maritime", str(CESM), str(tmp_path / f"region{tag}.nc")]
    plain = {k: v for k, v in cases.items() if not k.endswith("2")}
    done = dict(zip(plain, run_table(list(plain.values()), None, tmp_path / "batch1")))
    done |= dict(zip(["points2", "region2"], run_table([cases["points2"], cases["region2"]], 2, tmp_path / "batch2")))
    for name, result in done.items():
        assert result.returncode == 0, (name, result.stderr)
    for kind in ("points", "region"):
        reference = _values(tmp_path / f"two_step_{kind}.nc")
        for tag in (1, 2):
            ours = _values(tmp_path / f"{kind}{tag}.nc")
            assert ours.keys() == reference.keys()
            for name in reference:
                np.testing.assert_array_equal(ours[name], reference[name], f"{kind}{tag}: {name}")
    names = netCDF4.chartostring(_values(tmp_path / "points1.nc")["station_name"])
    assert list(names) == ["Cape Town", "South Pole", "Pacific", "Oslo"]
    scale = _values(tmp_path / "points1.nc")["scale"]
    assert np.isnan(scale[3]) and np.all(np.isfinite(scale[:3]))  # Oslo is off this cut-down grid: no fit
    assert "1 station(s) off the grid" in done["points1"].stderr
    region_scale = _values(tmp_path / "region1.nc")["scale"]
    assert np.isfinite(region_scale).sum() == 1  # the one cell centred in the region
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("climio-")] and not leftovers(str(tmp_path))


def test_eva_points_inside_needs_points(tmp_path: Path) -> None:
    (result,) = run_table([["eva", "--points-inside", str(CESM), str(tmp_path / "out.nc")]], None, tmp_path / "b")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["climio: error: --points-inside applies to stations: give --points "
                                                  "FILE"]
    assert not (tmp_path / "out.nc").exists()
