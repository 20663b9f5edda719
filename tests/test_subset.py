"""climio subset against independent references: ncks on regular grids, a plain serial mesh subsetter here.

The serial reference below is written from the issue's rules, not from climio's
code: keep cells whose centre is in the box, every corner/vertex and edge they
use, original order, renumber, none where an entry points to a removed element.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from conftest import DATA, climio, leftovers

MESHES = DATA / "meshes"
MPAS = MESHES / "mesh.QU.1920km.151026.nc"
UGRID = MESHES / "gradient_grid_subset.nc"
RANKS = (1, 2, 3, 4)


def read_all(path: str | Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: np.asarray(v[...]) for name, v in ds.variables.items()}


def dims_of(path: str | Path) -> dict[str, int]:
    with netCDF4.Dataset(path) as ds:
        return {name: len(d) for name, d in ds.dimensions.items()}


def ok(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr + result.stdout


# ---------------------------------------------------------------------------------------------------------------
# Regular grids: climio subset == ncks for the same -v/-d
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def regular(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("regular") / "pr.nc"
    ok(climio("gen", "cmip", str(path), "--shape", "20,48,72", "--mode", "cdf5"))
    return path


def ncks(tmp: Path, *args: str) -> dict[str, np.ndarray]:
    out = tmp / "ncks.nc"
    subprocess.run(["ncks", "-O", *args, str(out)], check=True, capture_output=True)
    return read_all(out)


REGULAR_CASES = [
    ("-v", "pr", "-d", "lat,-20.,20.", "-d", "lon,90.,160."),
    ("-v", "pr", "-d", "lon,340.,50.", "-d", "time,2,15,3"),  # wrapped longitude values, index stride
    ("-v", "pr", "-d", "lon,60,5", "-d", "lat,10,30,2"),  # wrapped longitude indices
    ("-v", "pr", "-d", "time,-3,", "-d", "lat,,5"),  # negative index, open ends
    ("-v", "pr", "-d", "lat,-30."),  # one value: the nearest latitude
    ("-v", "lat_bnds,time", "-d", "lat,44.,89."),
    ("-d", "lon,0,71,5",),  # every variable
]


@pytest.mark.parametrize("case", REGULAR_CASES, ids=[" ".join(c) for c in REGULAR_CASES])
@pytest.mark.parametrize("nranks", (1, 3))
def test_regular_equals_ncks(regular: Path, tmp_path: Path, case: tuple[str, ...], nranks: int) -> None:
    out = tmp_path / "climio.nc"
    ok(climio("subset", *case, str(regular), str(out), nranks=nranks))
    expected = ncks(tmp_path, *case, str(regular))
    got = read_all(out)
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    assert dims_of(out) == dims_of(tmp_path / "ncks.nc")


def test_regular_box_crossing_the_dateline(regular: Path, tmp_path: Path) -> None:
    """-b on a 0..360 grid across the dateline equals ncks -d lon wrapping the same values."""
    out = tmp_path / "box.nc"
    ok(climio("subset", "-v", "pr", "-b", "60,30,-150,150", str(regular), str(out), nranks=2))
    expected = ncks(tmp_path, "-v", "pr", "-d", "lat,30.,60.", "-d", "lon,150.,210.", str(regular))
    got = read_all(out)
    for name in ("pr", "lat", "lon"):
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def test_regular_box_in_radians(tmp_path: Path) -> None:
    """A box is in degrees whatever the file's units; a -180..180 grid in radians crossing the seam."""
    src = tmp_path / "rad.nc"
    lat = np.radians(np.arange(-87.5, 90, 5.0))
    lon = np.radians(np.arange(-180, 180, 10.0))
    with netCDF4.Dataset(src, "w", format="NETCDF3_64BIT_DATA") as ds:
        ds.createDimension("lat", len(lat))
        ds.createDimension("lon", len(lon))
        ds.createVariable("lat", "f8", ("lat",))[:] = lat
        ds.createVariable("lon", "f8", ("lon",))[:] = lon
        ds["lat"].units, ds["lon"].units = "radians", "radians"
        ds["lat"].standard_name, ds["lon"].standard_name = "latitude", "longitude"
        ds.createVariable("t", "f4", ("lat", "lon"))[:] = np.arange(lat.size * lon.size).reshape(lat.size, lon.size)
    out = tmp_path / "out.nc"
    ok(climio("subset", "-X", "160,-170,-10,10", str(src), str(out)))
    got = read_all(out)
    lon_deg = np.round(np.degrees(got["lon"]))
    np.testing.assert_array_equal(lon_deg, [160, 170, -180, -170])
    np.testing.assert_array_equal(np.round(np.degrees(got["lat"]), 1), [-7.5, -2.5, 2.5, 7.5])
    full = read_all(src)["t"]
    np.testing.assert_array_equal(got["t"], full[16:20][:, [34, 35, 0, 1]])


# ---------------------------------------------------------------------------------------------------------------
# Meshes: a serial reference subsetter
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Convention:
    primary: str
    lat: str
    lon: str
    radians: bool
    closure: tuple[tuple[str, str], ...]  # (connectivity, element dimension it points to), from cells
    links: tuple[tuple[str, str], ...]  # every connectivity: (variable, dimension it points to)
    base: int
    none: dict[str, int]  # per connectivity; missing = the file's _FillValue
    sides: str | None = None


MPAS_CONVENTION = Convention(
    "nCells", "latCell", "lonCell", True, (("verticesOnCell", "nVertices"), ("edgesOnCell", "nEdges")),
    (("cellsOnCell", "nCells"), ("edgesOnCell", "nEdges"), ("verticesOnCell", "nVertices"),
     ("edgesOnEdge", "nEdges"), ("cellsOnEdge", "nCells"), ("verticesOnEdge", "nVertices"),
     ("cellsOnVertex", "nCells"), ("edgesOnVertex", "nEdges")), 1, {}, sides="nEdgesOnCell")
UGRID_CONVENTION = Convention(
    "n_face", "face_lat", "face_lon", False, (("face_node_connectivity", "n_node"), ("face_edge_connectivity", "n_edge")),
    (("face_node_connectivity", "n_node"), ("face_edge_connectivity", "n_edge"),
     ("edge_node_connectivity", "n_node"), ("edge_face_connectivity", "n_face"),
     ("node_edge_connectivity", "n_edge")), 0, {})
GEODESIC_CONVENTION = Convention(
    "cells", "grid_center_lat", "grid_center_lon", True, (("cell_corners", "corners"), ("cell_edges", "edges")),
    (("cell_neighbors", "cells"), ("cell_corners", "corners"), ("cell_edges", "edges"),
     ("edge_corners", "corners"), ("edge_cells", "cells")), 0, {})


def none_of(path: Path, conv: Convention, name: str) -> int:
    with netCDF4.Dataset(path) as ds:
        fill = getattr(ds[name], "_FillValue", None)
    if conv.base == 1:
        return 0
    return int(fill) if fill is not None else -1


def reference_subset(path: Path, conv: Convention, north: float, south: float, west: float,
                     east: float) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Expected output variables and the kept input indices per element dimension, computed serially."""
    data = read_all(path)
    with netCDF4.Dataset(path) as ds:
        var_dims = {name: v.dimensions for name, v in ds.variables.items()}
        sizes = {name: len(d) for name, d in ds.dimensions.items()}
    lat, lon = data[conv.lat].astype(float), data[conv.lon].astype(float)
    if conv.radians:
        lat, lon = np.degrees(lat), np.degrees(lon)
    width = (east - west) % 360
    cells = [c for c in range(sizes[conv.primary])
             if south <= lat[c] <= north and (lon[c] - west) % 360 <= width]
    kept = {conv.primary: cells}
    for name, target in conv.closure:
        none = none_of(path, conv, name)
        found = set()
        for c in cells:
            row = data[name][c]
            n = int(data[conv.sides][c]) if conv.sides else len(row)
            found |= {int(v) - conv.base for v in row[:n] if v != none and v >= conv.base}
        kept[target] = sorted(found)
    new = {d: {old: k for k, old in enumerate(idx)} for d, idx in kept.items()}
    expected = {}
    for name, value in data.items():
        dims = var_dims[name]
        element = [k for k, d in enumerate(dims) if d in kept]
        if element:
            value = np.take(value, kept[dims[element[0]]], axis=element[0])
        link = dict(conv.links).get(name)
        if link is not None:
            none = none_of(path, conv, name)
            mapped = [none if v == none or v < conv.base or int(v) - conv.base not in new[link]
                      else new[link][int(v) - conv.base] + conv.base for v in value.ravel()]
            value = np.array(mapped, dtype=value.dtype).reshape(value.shape)
        expected[name] = value
    return expected, {d: np.array(k) for d, k in kept.items()}


def check_mesh(src: Path, out: Path, conv: Convention, box: tuple[float, float, float, float]) -> None:
    expected, kept = reference_subset(src, conv, *box)
    got = read_all(out)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    for dim, indices in kept.items():  # provenance
        np.testing.assert_array_equal(got[f"{dim}_original_index"], indices, err_msg=dim)
    sizes = dims_of(out)
    for name, target in conv.links:  # valid mesh: every index in range or none
        if name not in got:
            continue
        none = none_of(out, conv, name)
        values = got[name][got[name] != none]
        assert values.min() >= conv.base and values.max() < sizes[target] + conv.base, name
    for name, _ in conv.closure:  # whole cells: no closure entry of a kept cell became none
        rows = got[name]
        sides = got[conv.sides] if conv.sides else None
        original = expected[name]
        for c in range(rows.shape[0]):
            n = int(sides[c]) if sides is not None else rows.shape[1]
            assert np.array_equal(rows[c, :n] == none_of(out, conv, name),
                                  original[c, :n] == none_of(src, conv, name)), (name, c)


MESH_CASES = [
    pytest.param(MPAS, MPAS_CONVENTION, "-b", "40,-40,-100,170", (40, -40, 170, -100), id="mpas-dateline"),
    pytest.param(MPAS, MPAS_CONVENTION, "-X", "0,90,0,90", (90, 0, 0, 90), id="mpas-quadrant"),
    pytest.param(UGRID, UGRID_CONVENTION, "-X", "44,46,-1,1", (1, -1, 44, 46), id="ugrid"),
]


@pytest.mark.parametrize("src,conv,flag,box_text,box", MESH_CASES)
@pytest.mark.parametrize("nranks", RANKS)
def test_mesh_subset_matches_serial_reference(tmp_path: Path, src: Path, conv: Convention, flag: str,
                                              box_text: str, box: tuple[float, float, float, float],
                                              nranks: int) -> None:
    out = tmp_path / "out.nc"
    ok(climio("subset", flag, box_text, str(src), str(out), nranks=nranks))
    check_mesh(src, out, conv, box)


@pytest.fixture(scope="module")
def geodesic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("geodesic") / "g3.nc"
    ok(climio("gen", "geodesic", str(path), "--level", "3", "--layers", "3", "--times", "2", nranks=2))
    return path


GEODESIC_BOXES = [("20,-20,160,90", (20, -20, 90, 160)), ("60,10,-150,150", (60, 10, 150, -150))]


@pytest.mark.parametrize("box_text,box", GEODESIC_BOXES, ids=["mjo", "dateline"])
@pytest.mark.parametrize("nranks", RANKS)
def test_geodesic_subset_matches_serial_reference(geodesic: Path, tmp_path: Path, box_text: str,
                                                  box: tuple[float, float, float, float], nranks: int) -> None:
    out = tmp_path / "out.nc"
    ok(climio("subset", "-b", box_text, str(geodesic), str(out), nranks=nranks))
    check_mesh(geodesic, out, GEODESIC_CONVENTION, box)
    got = read_all(out)
    assert got["pressure"].shape[0] == 2 and got["pressure"].shape[2] == 3


@pytest.mark.parametrize("nranks", (2, 3))
def test_geodesic_whole_read_and_index_range(geodesic: Path, tmp_path: Path, nranks: int) -> None:
    """--read whole gives the same file; -d on cells keeps an index range of cells, whole."""
    a, b = tmp_path / "needed.nc", tmp_path / "whole.nc"
    args = ("-v", "vorticity,wind_normal", "-d", "cells,100,400", "-d", "layers,1,2", "-d", "time,1")
    ok(climio("subset", *args, str(geodesic), str(a), nranks=nranks))
    ok(climio("subset", "--read", "whole", *args, str(geodesic), str(b), nranks=nranks))
    got, want = read_all(b), read_all(a)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    src = read_all(geodesic)
    np.testing.assert_array_equal(want["cells_original_index"], np.arange(100, 401))
    corners = want["corners_original_index"]
    assert set(corners) == set(np.unique(src["cell_corners"][100:401]))
    np.testing.assert_array_equal(want["vorticity"], src["vorticity"][1:2][:, corners][:, :, 1:3])
    assert "pressure" not in want


@pytest.mark.parametrize("nranks", (2, 3))
def test_whole_read_equals_needed_read(tmp_path: Path, nranks: int) -> None:
    a, b = tmp_path / "needed.nc", tmp_path / "whole.nc"
    ok(climio("subset", "-b", "60,-10,120,-30", str(MPAS), str(a), nranks=nranks))
    ok(climio("subset", "--read", "whole", "-b", "60,-10,120,-30", str(MPAS), str(b), nranks=nranks))
    got, want = read_all(b), read_all(a)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_mesh_variable_selection_carries_topology(tmp_path: Path) -> None:
    out = tmp_path / "out.nc"
    ok(climio("subset", "-v", "areaCell", "-X", "0,90,0,90", str(MPAS), str(out), nranks=2))
    got = read_all(out)
    assert {"areaCell", "verticesOnCell", "latCell", "lonVertex", "nCells_original_index"} <= set(got)
    assert "meshDensity" not in got and "dvEdge" not in got


def test_subset_of_a_subset_traces_to_the_original(tmp_path: Path) -> None:
    first, second = tmp_path / "a.nc", tmp_path / "b.nc"
    ok(climio("subset", "-b", "60,-60,180,0", str(MPAS), str(first)))
    ok(climio("subset", "-b", "30,-30,90,10", str(first), str(second), nranks=2))
    direct = tmp_path / "c.nc"
    ok(climio("subset", "-b", "30,-30,90,10", str(MPAS), str(direct)))
    got, want = read_all(second), read_all(direct)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


# ---------------------------------------------------------------------------------------------------------------
# Many inputs
# ---------------------------------------------------------------------------------------------------------------

def test_join_along_time_equals_subset_of_one_file(regular: Path, tmp_path: Path) -> None:
    parts = [tmp_path / "a.nc", tmp_path / "b.nc", tmp_path / "c.nc"]
    for part, (lo, hi) in zip(parts, [(0, 6), (7, 7), (8, 19)]):
        subprocess.run(["ncks", "-O", "-d", f"time,{lo},{hi}", str(regular), str(part)], check=True)
    joined, single = tmp_path / "joined.nc", tmp_path / "single.nc"
    selection = ("-v", "pr", "-d", "time,5,12", "-d", "lat,-20.,20.")
    ok(climio("subset", *selection, *map(str, parts), str(joined), nranks=3))
    ok(climio("subset", *selection, str(regular), str(single)))
    got, want = read_all(joined), read_all(single)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_union_merges_variables(regular: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.nc"
    shutil.copy(regular, other)
    subprocess.run(["ncrename", "-h", "-v", "pr,pr_copy", str(other)], check=True, capture_output=True)
    with netCDF4.Dataset(other, "a") as ds:
        ds["pr_copy"][:] = ds["pr_copy"][:] * 2
    out = tmp_path / "union.nc"
    ok(climio("subset", "--union", "-d", "lat,0,3", str(regular), str(other), str(out), nranks=2))
    got, src = read_all(out), read_all(regular)
    np.testing.assert_array_equal(got["pr"], src["pr"][:, :4])
    np.testing.assert_array_equal(got["pr_copy"], src["pr"][:, :4] * np.float32(2))


# ---------------------------------------------------------------------------------------------------------------
# Bad input: one line, exit 2, no output
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bad_inputs(regular: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("bad")
    other = tmp / "other_grid.nc"
    ok(climio("gen", "cmip", str(other), "--shape", "4,24,72"))
    plain = tmp / "no_latlon.nc"
    with netCDF4.Dataset(plain, "w") as ds:
        ds.createDimension("x", 5)
        ds.createVariable("v", "f4", ("x",))[:] = np.arange(5)
    truncated = tmp / "truncated.nc"
    truncated.write_bytes(regular.read_bytes()[: os.path.getsize(regular) // 2])
    return {"other": other, "plain": plain, "truncated": truncated}


BAD = [
    (("-v", "nope"), "no variable 'nope'"),
    (("-d", "depth,0,1"), "no dimension 'depth'"),
    (("-d", "lat,0,500"), "outside dimension 'lat'"),
    (("-d", "lat,0,20."), "mixes an index and a coordinate value"),
    (("-d", "lat,30.,-30."), "only a longitude range may wrap"),
    (("-d", "lat,91.,95."), "selects nothing"),
    (("-d", "lat,0,3", "-d", "lat,5,6"), "-d given twice"),
    (("-d", "lat,1,2,0"), "STRIDE"),
    (("-b", "-10,10,20,30"), "is south of south"),
    (("-b", "95,0,20,30"), "outside -90..90"),
    (("-b", "1.0,0.5,20,30"), "the box selects nothing"),
    (("-X", "20,20,0,10"), "no width"),
    (("--read", "all"), "invalid choice"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_selection(regular: Path, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    out = tmp_path / "out.nc"
    result = climio("subset", *args, str(regular), str(out), nranks=2)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("climio: error:")]
    assert len(lines) == 1, result.stderr
    assert not out.exists() and not leftovers(str(tmp_path))


def test_bad_inputs(regular: Path, bad_inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out.nc"
    cases = [
        (("--join", "time", str(regular), str(bad_inputs["other"])), "inputs' grids differ"),
        (("-b", "10,-10,0,20", str(bad_inputs["plain"])), "no latitude/longitude"),
        ((str(bad_inputs["truncated"]),), "truncated"),
        ((str(tmp_path / "missing.nc"),), "does not exist"),
        (("-b", "1,0.9,0,0.1", str(MPAS)), "selects no cell"),
        (("-d", "nVertices,0,5", str(MPAS)), "select cells ('nCells')"),
    ]
    for args, message in cases:
        result = climio("subset", *args, str(out), nranks=2)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)
        assert sum(line.startswith("climio: error:") for line in result.stderr.splitlines()) == 1, result.stderr
        assert not out.exists() and not leftovers(str(tmp_path))


def test_existing_output_needs_overwrite(regular: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.nc"
    out.write_text("precious")
    result = climio("subset", "-d", "lat,0,1", str(regular), str(out))
    assert result.returncode == 2 and "--overwrite" in result.stderr
    assert out.read_text() == "precious"
    ok(climio("subset", "-O", "-d", "lat,0,1", str(regular), str(out)))
    assert dims_of(out)["lat"] == 2
