"""climio subset --points on the shipped real files, at 1, 2 and 3 ranks, against references worked out here.

Every case runs in one table per rank count (helpers/climio_batch.py: one MPI start-up each). For each output:

* the stations' cells equal an independent brute-force search: the haversine distance from every station to
  every cell centre of the input (a regular grid's centres as the full lat x lon product), the least taken
  with ties (within 1e-9) to the lowest flat index, and a station off the grid exactly where the case says;
* every series equals the input's values at that cell (netCDF4 reads, files joined along time by
  concatenation), the fill value off the grid; the requested and cell coordinates and the distance match;
* CDO's ``remapnn`` gives the same series for the regular, rotated-pole and ICON files;
* ``--points-inside`` on ICON's triangles: the cell holding each station is the lowest index of those whose
  great-circle outline contains it (triple products, over every cell);
* 2 and 3 ranks write the same file as 1 (data, attributes), and the output is a CF timeSeries file that
  cfchecks finds no new problem in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest

from conftest import DATA, leftovers

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
import ncdiff  # noqa: E402
from cfcheck import introduced  # noqa: E402
from climio_batch import run_table  # noqa: E402

REAL = DATA / "real"
CESM = REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
EUR = REAL / "tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc"
NAM = sorted(REAL.glob("pr_NAM-22_*.nc"))
ECEARTH = sorted(REAL.glob("tas_Amon_EC-EARTH_*.nc"))  # three classic (CDF-1) files joined: cells gathered
ICON = REAL / "tas_Amon_ICON-ESM-LR_historical_r1i1p1f1_gn_185001.nc"
MPAS = DATA / "meshes" / "mesh.QU.1920km.151026.nc"
GEOS = DATA / "synthetic" / "geos_c12.nc4"
NE30 = [REAL / "outCSne30.ug", REAL / "outCSne30_vortex.nc"]  # a UGRID mesh, and data on its faces beside it
RANKS = (None, 2, 3)
R = 6_371_000.0
TIE = 1e-9

WORLD = [("Oslo", 59.91, 10.75), ("Cape Town", -33.92, 18.42), ("Honolulu", 21.31, -157.86),
         ("South Pole", -90.0, 0.0), ("Dateline", 0.0, 180.0), ("Quito", -0.18, -78.47)]
EUROPE = [("Amsterdam", 52.37, 4.90), ("De Bilt", 52.10, 5.18), ("Madrid", 40.42, -3.70),
          ("Far away", -40.0, 100.0)]


def _csv(path: Path, stations: list[tuple[str, float, float]]) -> Path:
    path.write_text("name,lat,lon\n" + "".join(f"{n},{a},{o}\n" for n, a, o in stations))
    return path


def _geojson(path: Path, stations: list[tuple[str, float, float]]) -> Path:
    features = [{"type": "Feature", "properties": {"name": n}, "geometry": {"type": "Point", "coordinates": [o, a]}}
                for n, a, o in stations]
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    return path


def _corner_of(path: Path) -> tuple[float, float]:
    """The centre of a regional grid's first cell: a station on the domain's edge."""
    with netCDF4.Dataset(path) as ds:
        return float(ds["lat"][0, 0]), float(ds["lon"][0, 0])


def _nam_centre(row: int, col: int) -> tuple[float, float]:
    with netCDF4.Dataset(NAM[0]) as ds:
        return float(ds["lat"][row, col]), float(ds["lon"][row, col])


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("points")
    edge = _corner_of(EUR)
    europe = [*EUROPE, ("Edge", *edge)]
    nam = [("A", *_nam_centre(0, 0)), ("B", *_nam_centre(2, 3)), ("C", *_nam_centre(1, 2))]
    files = {"world": _csv(base / "world.csv", WORLD), "world_json": _geojson(base / "world.geojson", WORLD),
             "europe": _csv(base / "europe.csv", europe), "nam": _csv(base / "nam.csv", nam)}
    cases = {  # name -> (inputs, points file, options, the stations the case expects off the grid)
        "cesm": ([CESM], "world", [], {"Oslo", "Honolulu", "Quito"}),
        "eur": ([EUR], "europe", [], {"Far away"}),
        "nam": (NAM, "nam", ["-d", "time,100,2999"], set()),
        "ecearth": (ECEARTH, "world", [], {"Oslo"}),
        "icon": ([ICON], "world_json", [], set()),
        "icon_inside": ([ICON], "world", ["--points-inside"], set()),
        "mpas": ([MPAS], "world", ["-v", "areaCell,meshDensity"], set()),
        "geos": ([GEOS], "world", [], set()),
        "ne30": (NE30, "world", [], set()),
        "eur_again": ([EUR], "eur_output", [], {"Far away"}),  # the stations of an earlier output, read back
    }
    table, outputs = [], {}
    for nranks in RANKS:
        out = base / f"n{nranks or 1}"
        out.mkdir()
        outputs[nranks] = {name: out / f"{name}.nc" for name in cases}
    return {"base": base, "files": files, "cases": cases, "outputs": outputs, "table": table}


@pytest.fixture(scope="module")
def runs(setup: dict[str, Any]) -> dict[Any, dict[str, Any]]:
    results = {}
    for nranks in RANKS:
        files = {**setup["files"], "eur_output": setup["outputs"][nranks]["eur"]}
        argv = [["subset", "-O", "--points", str(files[points]), *options, *map(str, inputs),
                 str(setup["outputs"][nranks][name])]
                for name, (inputs, points, options, _) in setup["cases"].items()]
        done = run_table(argv, nranks, setup["base"] / f"batch{nranks or 1}", timeout=120)
        results[nranks] = dict(zip(setup["cases"], done))
    return results


def _stations(path: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    if path.suffix == ".nc":
        with netCDF4.Dataset(path) as ds:
            return list(netCDF4.chartostring(ds["station_name"][:])), ds["lat"][:], ds["lon"][:]
    text = path.read_text()
    if path.suffix == ".geojson":
        features = json.loads(text)["features"]
        return ([f["properties"]["name"] for f in features],
                np.array([f["geometry"]["coordinates"][1] for f in features]),
                np.array([f["geometry"]["coordinates"][0] for f in features]))
    rows = [line.split(",") for line in text.splitlines()[1:]]
    return [r[0] for r in rows], np.array([float(r[1]) for r in rows]), np.array([float(r[2]) for r in rows])


def _haversine(lat1: np.ndarray, lon1: np.ndarray, lat2: np.ndarray, lon2: np.ndarray) -> np.ndarray:
    p1, p2 = np.radians(lat1), np.radians(lat2)
    h = np.sin((p2 - p1) / 2) ** 2 + np.cos(p1) * np.cos(p2) * np.sin(np.radians(lon2 - lon1) / 2) ** 2
    return 2 * R * np.arcsin(np.sqrt(np.clip(h, 0, 1)))


def _centres(path: Path) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """Every cell centre of the input in degrees, flattened in the grid's index order, and the grid's shape."""
    with netCDF4.Dataset(path) as ds:
        if "Mesh2_face_nodes" in ds.variables:  # UGRID faces without centres: the mean of their nodes' vectors
            nodes = ds["Mesh2_face_nodes"][:]
            x, y = np.radians(ds["Mesh2_node_x"][:]), np.radians(ds["Mesh2_node_y"][:])
            xyz = np.stack([np.cos(y) * np.cos(x), np.cos(y) * np.sin(x), np.sin(y)], axis=-1)[nodes].sum(axis=1)
            return (np.degrees(np.arctan2(xyz[:, 2], np.hypot(xyz[:, 0], xyz[:, 1]))),
                    np.degrees(np.arctan2(xyz[:, 1], xyz[:, 0])), (len(nodes),))
        if "latCell" in ds.variables:
            return np.degrees(ds["latCell"][:]), np.degrees(ds["lonCell"][:]), (ds.dimensions["nCells"].size,)
        if "lats" in ds.variables:
            lat, lon = ds["lats"][:], ds["lons"][:]
            return lat.ravel(), lon.ravel(), lat.shape
        if "latitude" in ds.variables:
            return ds["latitude"][:], ds["longitude"][:], ds["latitude"].shape
        lat, lon = ds["lat"][:], ds["lon"][:]
        if lat.ndim == 1:
            lat, lon = np.meshgrid(lat, lon, indexing="ij")
        return np.asarray(lat).ravel(), np.asarray(lon).ravel(), lat.shape


def _nearest(path: Path, lat: np.ndarray, lon: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    clat, clon, _ = _centres(path)
    d = _haversine(lat[:, None], lon[:, None], np.asarray(clat)[None, :], np.asarray(clon)[None, :])
    best = d.min(axis=1, keepdims=True)
    return np.argmax(d <= best * (1 + TIE) + 1e-300, axis=1), best[:, 0]


def _series(inputs: list[Path], var: str, flat: int, shape: tuple[int, ...]) -> np.ndarray:
    """A cell's series from the inputs joined along their first (time) dimension."""
    parts = []
    for path in inputs:
        with netCDF4.Dataset(path) as ds:
            ds.set_auto_mask(False)
            v = ds[var]
            index = np.unravel_index(flat, shape)
            parts.append(v[(Ellipsis, *index)] if v.ndim > len(shape) else np.asarray(v[index])[None])
    return np.concatenate(parts, axis=0)


def _read(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        out = {name: v[:] for name, v in ds.variables.items()}
        out["__names__"] = netCDF4.chartostring(ds["station_name"][:])
        out["__attrs__"] = ds.__dict__
        return out


DATA_VAR = {"cesm": "tas", "eur": "tas", "nam": "pr", "ecearth": "tas", "icon": "tas", "icon_inside": "tas",
            "mpas": "areaCell", "geos": "T", "ne30": "psi", "eur_again": "tas"}
ALL = list(DATA_VAR)


@pytest.mark.parametrize("case", [c for c in ALL if c != "icon_inside"])
def test_points_are_the_nearest_cells_series(setup: dict[str, Any], runs: dict[Any, dict[str, Any]],
                                             case: str) -> None:
    inputs, points, options, off_expected = setup["cases"][case]
    result = runs[None][case]
    assert result.returncode == 0, result.stderr
    out = _read(setup["outputs"][None][case])
    names, lat, lon = _stations({**setup["files"], "eur_output": setup["outputs"][None]["eur"]}[points])
    assert list(out["__names__"]) == names
    assert out["__attrs__"]["featureType"] == "timeSeries"
    np.testing.assert_array_equal(out["lat"], lat)
    np.testing.assert_array_equal(out["lon"], lon)
    flat, distance = _nearest(inputs[0], lat, lon)
    _, _, shape = _centres(inputs[0])
    data_inputs = inputs[1:] if case == "ne30" else inputs
    index_vars = [n for n in out if n.endswith("_original_index")]
    got = np.ravel_multi_index(tuple(np.where(out[n] < 0, 0, out[n]) for n in index_vars), shape)
    off = out[index_vars[0]] < 0
    assert {names[k] for k in np.flatnonzero(off)} == off_expected
    if off_expected:
        assert f"{len(off_expected)} station(s) off the grid" in result.stderr
    np.testing.assert_array_equal(got[~off], flat[~off])
    np.testing.assert_allclose(out["distance"][~off], distance[~off], rtol=1e-9)
    clat, clon, _ = _centres(inputs[0])
    np.testing.assert_allclose(out["cell_lat"][~off], np.asarray(clat)[flat[~off]], rtol=0, atol=1e-9)
    var = DATA_VAR[case]
    values = out[var]
    fill = netCDF4.Dataset(setup["outputs"][None][case])[var]._FillValue if off.any() else None
    times = slice(100, 3000) if case == "nam" else slice(None)
    for k in range(len(names)):
        column = values[..., k]
        if off[k]:
            assert np.all(column == fill)
            continue
        expected = _series(data_inputs, var, int(flat[k]), shape)[times]
        np.testing.assert_array_equal(column, expected)


@pytest.mark.parametrize("case", ALL)
def test_points_at_any_rank_count_write_the_same_file(setup: dict[str, Any], runs: dict[Any, dict[str, Any]],
                                                      case: str) -> None:
    for nranks in RANKS[1:]:
        result = runs[nranks][case]
        assert result.returncode == 0, result.stderr
        diffs = ncdiff.diff(setup["outputs"][nranks][case], setup["outputs"][None][case])
        assert not diffs, f"{nranks} ranks: {diffs}"
        assert not leftovers(str(setup["outputs"][nranks][case].parent))


@pytest.mark.parametrize("case", ["cesm", "eur", "icon"])
def test_points_equal_cdo_remapnn(setup: dict[str, Any], runs: dict[Any, dict[str, Any]], case: str) -> None:
    inputs, points, _, _ = setup["cases"][case]
    out = _read(setup["outputs"][None][case])
    names, lat, lon = _stations(setup["files"][points])
    off = out[[n for n in out if n.endswith("_original_index")][0]] < 0
    checked = 0
    for k in np.flatnonzero(~off)[:3]:
        done = subprocess.run(["cdo", "-s", "-outputf,%.9g,1", f"-remapnn,lon={lon[k]}_lat={lat[k]}",
                               str(inputs[0])], capture_output=True, text=True, timeout=60, check=True)
        cdo = np.array([float(v) for v in done.stdout.split()], dtype=np.float32)
        np.testing.assert_array_equal(out[DATA_VAR[case]][..., k].ravel(), cdo, err_msg=names[k])
        checked += 1
    assert checked == 3


def test_points_inside_is_the_cell_that_holds_each_station(setup: dict[str, Any],
                                                            runs: dict[Any, dict[str, Any]]) -> None:
    """ICON's triangles have great-circle edges: a cell holds a station when the station is on the inner side
    of each edge's plane (triple products of unit vectors), checked here over every cell."""
    assert runs[None]["icon_inside"].returncode == 0, runs[None]["icon_inside"].stderr
    out = _read(setup["outputs"][None]["icon_inside"])
    names, lat, lon = _stations(setup["files"]["world"])
    with netCDF4.Dataset(ICON) as ds:
        blat, blon = np.radians(ds["latitude_bnds"][:]), np.radians(ds["longitude_bnds"][:])
    corners = np.stack([np.cos(blat) * np.cos(blon), np.cos(blat) * np.sin(blon), np.sin(blat)], axis=-1)
    orientation = np.sign(np.einsum("ck,ck->c", np.cross(corners[:, 0], corners[:, 1]), corners[:, 2]))
    for k in range(len(names)):
        p = np.array([np.cos(np.radians(lat[k])) * np.cos(np.radians(lon[k])),
                      np.cos(np.radians(lat[k])) * np.sin(np.radians(lon[k])), np.sin(np.radians(lat[k]))])
        sides = np.stack([np.cross(corners[:, v], corners[:, (v + 1) % 3]) @ p for v in range(3)], axis=1)
        holding = np.flatnonzero(np.all(sides * orientation[:, None] >= -1e-15, axis=1))
        assert holding.size, names[k]
        assert out["i_original_index"][k] == holding.min(), names[k]


def test_points_output_is_cf(setup: dict[str, Any], runs: dict[Any, dict[str, Any]]) -> None:
    for case, source in (("eur", EUR), ("cesm", CESM)):
        assert runs[None][case].returncode == 0
        found = introduced(setup["outputs"][None][case], [source])
        assert [m for m in found if "(2.6.1)" not in m] == []  # 2.6.1: the file's CF version is not 1.8


ERRORS = {  # options -> what the one line must say
    "strict": (["--strict"], "EUR", "europe", "1 station(s) off the grid of"),
    "inside_without_bounds": (["--points-inside"], "EUR", "europe", "has no cell bounds for lat/lon"),
    "cut_cells_twice": (["-d", "rlat,0,3"], "EUR", "europe", "-d rlat,0,3 and --points both select 'rlat'"),
    "no_lat_column": ([], "EUR", "bad", "the first line must name the columns"),
    "twice": ([], "EUR", "twice", "station name 'X' is given twice"),
    "missing": ([], "EUR", "missing", "no such file"),
    "inside_alone": (["--points-inside"], "EUR", None, "--points-inside applies to stations"),
}


def test_points_refusals_are_one_line_and_leave_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("name,y,x\nA,1,2\n")
    twice = _csv(tmp_path / "twice.csv", [("X", 1.0, 2.0), ("X", 3.0, 4.0)])
    files = {"europe": _csv(tmp_path / "europe.csv", EUROPE), "bad": bad, "twice": twice,
             "missing": tmp_path / "nowhere.csv"}
    argv = []
    for name, (options, _, points, _) in ERRORS.items():
        where = ["--points", str(files[points])] if points else []
        argv.append(["subset", *where, *options, str(EUR), str(tmp_path / f"{name}.nc")])
    for (name, (_, _, _, words)), result in zip(ERRORS.items(), run_table(argv, None, tmp_path / "batch")):
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2, (name, result.stderr)
        assert len(lines) == 1 and lines[0].startswith("climio: error: ") and words in lines[0], (name, lines)
        assert not (tmp_path / f"{name}.nc").exists()
    assert not leftovers(str(tmp_path))
