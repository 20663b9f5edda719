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

import sys

from conftest import DATA, leftovers

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch, Result, run_table  # noqa: E402

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


def ok(result: subprocess.CompletedProcess[str] | Result) -> None:
    assert result.returncode == 0, result.stderr + result.stdout


# ---------------------------------------------------------------------------------------------------------------
# Every climio run of this file: one table per rank count (helpers/climio_batch.py, one launch each; every case
# writes into a directory of its own and is captured as a process of its own). The inputs are made first.
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The generated inputs: a regular grid, another grid and a geodesic grid (climio gen), and the files the
    tests below make from them or write here."""
    d = tmp_path_factory.mktemp("inputs")
    paths = {"regular": d / "pr.nc", "other": d / "other_grid.nc", "geodesic": d / "g3.nc"}
    made = run_table([["gen", "cmip", paths["regular"], "--shape", "20,48,72", "--mode", "cdf5"],
                      ["gen", "cmip", paths["other"], "--shape", "4,24,72"]], None, d / "gen-plain")
    made += run_table([["gen", "geodesic", paths["geodesic"], "--level", "3", "--layers", "3", "--times", "2"]], 2,
                      d / "gen-2")
    for result in made:
        ok(result)
    regular = paths["regular"]
    # a -180..180 grid in radians
    paths["radians"] = d / "rad.nc"
    lat = np.radians(np.arange(-87.5, 90, 5.0))
    lon = np.radians(np.arange(-180, 180, 10.0))
    with netCDF4.Dataset(paths["radians"], "w", format="NETCDF3_64BIT_DATA") as ds:
        ds.createDimension("lat", len(lat))
        ds.createDimension("lon", len(lon))
        ds.createVariable("lat", "f8", ("lat",))[:] = lat
        ds.createVariable("lon", "f8", ("lon",))[:] = lon
        ds["lat"].units, ds["lon"].units = "radians", "radians"
        ds["lat"].standard_name, ds["lon"].standard_name = "latitude", "longitude"
        ds.createVariable("t", "f4", ("lat", "lon"))[:] = np.arange(lat.size * lon.size).reshape(lat.size, lon.size)
    # the regular grid in three parts along time, by ncks
    for name, (lo, hi) in zip("abc", [(0, 6), (7, 7), (8, 19)]):
        paths[f"part-{name}"] = d / f"{name}.nc"
        subprocess.run(["ncks", "-O", "-d", f"time,{lo},{hi}", str(regular), str(paths[f"part-{name}"])], check=True)
    # a copy with pr renamed pr_copy and doubled
    paths["union-other"] = d / "other.nc"
    shutil.copy(regular, paths["union-other"])
    subprocess.run(["ncrename", "-h", "-v", "pr,pr_copy", str(paths["union-other"])], check=True, capture_output=True)
    with netCDF4.Dataset(paths["union-other"], "a") as ds:
        ds["pr_copy"][:] = ds["pr_copy"][:] * 2
    # bad inputs
    paths["plain"] = d / "no_latlon.nc"
    with netCDF4.Dataset(paths["plain"], "w") as ds:
        ds.createDimension("x", 5)
        ds.createVariable("v", "f4", ("x",))[:] = np.arange(5)
    paths["truncated"] = d / "truncated.nc"
    paths["truncated"].write_bytes(regular.read_bytes()[: os.path.getsize(regular) // 2])
    return paths


@pytest.fixture(scope="module")
def regular(inputs: dict[str, Path]) -> Path:
    return inputs["regular"]


@pytest.fixture(scope="module")
def geodesic(inputs: dict[str, Path]) -> Path:
    return inputs["geodesic"]


@pytest.fixture(scope="module")
def bad_inputs(inputs: dict[str, Path]) -> dict[str, Path]:
    return {"other": inputs["other"], "plain": inputs["plain"], "truncated": inputs["truncated"]}


@pytest.fixture(scope="module")
def runs(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Batch:
    """Every climio run of the tests below, by name; ``runs.folder(name)`` is the case's own directory."""
    b = Batch(tmp_path_factory.mktemp("runs"))
    f = b.folder
    regular, geo = str(inputs["regular"]), str(inputs["geodesic"])
    # the plain table runs first: subset-of-a-subset reads its first output at 2 ranks
    b.add("sos-first", ["subset", "-b", "60,-60,180,0", MPAS, f("sos-first") / "a.nc"])
    b.add("sos-second", ["subset", "-b", "30,-30,90,10", f("sos-first") / "a.nc", f("sos-second") / "b.nc"], 2)
    b.add("sos-direct", ["subset", "-b", "30,-30,90,10", MPAS, f("sos-direct") / "c.nc"])
    for k, case in enumerate(REGULAR_CASES):
        for nranks in (1, 3):
            name = f"regular-{k}-n{nranks}"
            b.add(name, ["subset", *case, regular, f(name) / "climio.nc"], nranks)
    b.add("box-dateline", ["subset", "-v", "pr", "-b", "60,30,-150,150", regular, f("box-dateline") / "box.nc"], 2)
    b.add("radians", ["subset", "-X", "160,-170,-10,10", inputs["radians"], f("radians") / "out.nc"])
    for param in MESH_CASES:
        src, _, flag, box_text, _ = param.values
        for nranks in RANKS:
            name = mesh_case(src, flag, box_text, nranks)
            b.add(name, ["subset", flag, box_text, src, f(name) / "out.nc"], nranks)
    for box_text, _ in GEODESIC_BOXES:
        for nranks in RANKS:
            name = f"geodesic-{box_text}-n{nranks}"
            b.add(name, ["subset", "-b", box_text, geo, f(name) / "out.nc"], nranks)
    args = ["-v", "vorticity,wind_normal", "-d", "cells,100,400", "-d", "layers,1,2", "-d", "time,1"]
    for nranks in (2, 3):
        b.add(f"geo-needed-n{nranks}", ["subset", *args, geo, f(f"geo-needed-n{nranks}") / "needed.nc"], nranks)
        b.add(f"geo-whole-n{nranks}", ["subset", "--read", "whole", *args, geo, f(f"geo-whole-n{nranks}") / "whole.nc"],
              nranks)
        b.add(f"mpas-needed-n{nranks}", ["subset", "-b", "60,-10,120,-30", MPAS, f(f"mpas-needed-n{nranks}") / "needed.nc"],
              nranks)
        b.add(f"mpas-whole-n{nranks}", ["subset", "--read", "whole", "-b", "60,-10,120,-30", MPAS,
                                        f(f"mpas-whole-n{nranks}") / "whole.nc"], nranks)
    b.add("mpas-var", ["subset", "-v", "areaCell", "-X", "0,90,0,90", MPAS, f("mpas-var") / "out.nc"], 2)
    selection = ["-v", "pr", "-d", "time,5,12", "-d", "lat,-20.,20."]
    b.add("join-joined", ["subset", *selection, *(inputs[f"part-{n}"] for n in "abc"), f("join-joined") / "joined.nc"],
          3)
    b.add("join-single", ["subset", *selection, regular, f("join-single") / "single.nc"])
    b.add("union", ["subset", "--union", "-d", "lat,0,3", regular, inputs["union-other"], f("union") / "union.nc"], 2)
    for k, (args_, _) in enumerate(BAD):
        b.add(f"bad-{k}", ["subset", *args_, regular, f(f"bad-{k}") / "out.nc"], 2)
    for k in range(N_BAD_INPUTS):
        args_, _ = bad_input_cases(inputs, f(f"badin-{k}"))[k]
        b.add(f"badin-{k}", ["subset", *args_, f(f"badin-{k}") / "out.nc"], 2)
    (f("exist-refused") / "out.nc").write_text("precious")
    b.add("exist-refused", ["subset", "-d", "lat,0,1", regular, f("exist-refused") / "out.nc"])
    (f("exist-overwrite") / "out.nc").write_text("precious")
    b.add("exist-overwrite", ["subset", "-O", "-d", "lat,0,1", regular, f("exist-overwrite") / "out.nc"])
    return b


# ---------------------------------------------------------------------------------------------------------------
# Regular grids: climio subset == ncks for the same -v/-d
# ---------------------------------------------------------------------------------------------------------------

def ncks(tmp: Path, *args: str) -> dict[str, np.ndarray]:
    out = tmp / "ncks.nc"
    subprocess.run(["ncks", "-O", *args, str(out)], check=True, capture_output=True)
    return read_all(out)


_NCKS: dict[int, Path] = {}


def ncks_regular(k: int, regular: Path, folder: Path) -> Path:
    """ncks's output for REGULAR_CASES[k], made once per module."""
    if k not in _NCKS:
        out = folder / f"ncks-{k}.nc"
        subprocess.run(["ncks", "-O", *REGULAR_CASES[k], str(regular), str(out)], check=True, capture_output=True)
        _NCKS[k] = out
    return _NCKS[k]


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
def test_regular_equals_ncks(regular: Path, runs: Batch, case: tuple[str, ...], nranks: int) -> None:
    k = REGULAR_CASES.index(case)
    name = f"regular-{k}-n{nranks}"
    out = runs.folder(name) / "climio.nc"
    ok(runs.result(name))
    reference = ncks_regular(k, regular, runs.folder("ncks"))
    expected = read_all(reference)
    got = read_all(out)
    assert sorted(got) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    assert dims_of(out) == dims_of(reference)


def test_regular_box_crossing_the_dateline(regular: Path, runs: Batch, tmp_path: Path) -> None:
    """-b on a 0..360 grid across the dateline equals ncks -d lon wrapping the same values."""
    out = runs.folder("box-dateline") / "box.nc"
    ok(runs.result("box-dateline"))
    expected = ncks(tmp_path, "-v", "pr", "-d", "lat,30.,60.", "-d", "lon,150.,210.", str(regular))
    got = read_all(out)
    for name in ("pr", "lat", "lon"):
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)


def test_regular_box_in_radians(inputs: dict[str, Path], runs: Batch) -> None:
    """A box is in degrees whatever the file's units; a -180..180 grid in radians crossing the seam."""
    src = inputs["radians"]
    out = runs.folder("radians") / "out.nc"
    ok(runs.result("radians"))
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


_REFERENCES: dict[tuple[str, int, tuple[float, ...]], tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = {}


def cached_reference(path: Path, conv: Convention, box: tuple[float, float, float, float]) -> tuple[
        dict[str, np.ndarray], dict[str, np.ndarray]]:
    """reference_subset, worked out once per module for each input and box (the rank counts share it)."""
    key = (str(path), id(conv), tuple(box))
    if key not in _REFERENCES:
        _REFERENCES[key] = reference_subset(path, conv, *box)
    expected, kept = _REFERENCES[key]
    return {n: v.copy() for n, v in expected.items()}, {d: k.copy() for d, k in kept.items()}


def check_mesh(src: Path, out: Path, conv: Convention, box: tuple[float, float, float, float]) -> None:
    expected, kept = cached_reference(src, conv, box)
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
        none_out, none_src = none_of(out, conv, name), none_of(src, conv, name)  # read once, not per cell
        for c in range(rows.shape[0]):
            n = int(sides[c]) if sides is not None else rows.shape[1]
            assert np.array_equal(rows[c, :n] == none_out, original[c, :n] == none_src), (name, c)


def mesh_case(src: Path, flag: str, box_text: str, nranks: int) -> str:
    return f"mesh-{src.stem}{flag}{box_text}-n{nranks}"


MESH_CASES = [
    pytest.param(MPAS, MPAS_CONVENTION, "-b", "40,-40,-100,170", (40, -40, 170, -100), id="mpas-dateline"),
    pytest.param(MPAS, MPAS_CONVENTION, "-X", "0,90,0,90", (90, 0, 0, 90), id="mpas-quadrant"),
    pytest.param(UGRID, UGRID_CONVENTION, "-X", "44,46,-1,1", (1, -1, 44, 46), id="ugrid"),
]


@pytest.mark.parametrize("src,conv,flag,box_text,box", MESH_CASES)
@pytest.mark.parametrize("nranks", RANKS)
def test_mesh_subset_matches_serial_reference(runs: Batch, src: Path, conv: Convention, flag: str,
                                              box_text: str, box: tuple[float, float, float, float],
                                              nranks: int) -> None:
    name = mesh_case(src, flag, box_text, nranks)
    out = runs.folder(name) / "out.nc"
    ok(runs.result(name))
    check_mesh(src, out, conv, box)


GEODESIC_BOXES = [("20,-20,160,90", (20, -20, 90, 160)), ("60,10,-150,150", (60, 10, 150, -150))]


@pytest.mark.parametrize("box_text,box", GEODESIC_BOXES, ids=["mjo", "dateline"])
@pytest.mark.parametrize("nranks", RANKS)
def test_geodesic_subset_matches_serial_reference(geodesic: Path, runs: Batch, box_text: str,
                                                  box: tuple[float, float, float, float], nranks: int) -> None:
    name = f"geodesic-{box_text}-n{nranks}"
    out = runs.folder(name) / "out.nc"
    ok(runs.result(name))
    check_mesh(geodesic, out, GEODESIC_CONVENTION, box)
    got = read_all(out)
    assert got["pressure"].shape[0] == 2 and got["pressure"].shape[2] == 3


@pytest.mark.parametrize("nranks", (2, 3))
def test_geodesic_whole_read_and_index_range(geodesic: Path, runs: Batch, nranks: int) -> None:
    """--read whole gives the same file; -d on cells keeps an index range of cells, whole."""
    a, b = runs.folder(f"geo-needed-n{nranks}") / "needed.nc", runs.folder(f"geo-whole-n{nranks}") / "whole.nc"
    # args: -v vorticity,wind_normal -d cells,100,400 -d layers,1,2 -d time,1 (the second with --read whole)
    ok(runs.result(f"geo-needed-n{nranks}"))
    ok(runs.result(f"geo-whole-n{nranks}"))
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
def test_whole_read_equals_needed_read(runs: Batch, nranks: int) -> None:
    a, b = runs.folder(f"mpas-needed-n{nranks}") / "needed.nc", runs.folder(f"mpas-whole-n{nranks}") / "whole.nc"
    ok(runs.result(f"mpas-needed-n{nranks}"))  # -b 60,-10,120,-30
    ok(runs.result(f"mpas-whole-n{nranks}"))  # --read whole -b 60,-10,120,-30
    got, want = read_all(b), read_all(a)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_mesh_variable_selection_carries_topology(runs: Batch) -> None:
    out = runs.folder("mpas-var") / "out.nc"
    ok(runs.result("mpas-var"))  # -v areaCell -X 0,90,0,90 at 2 ranks
    got = read_all(out)
    assert {"areaCell", "verticesOnCell", "latCell", "lonVertex", "nCells_original_index"} <= set(got)
    assert "meshDensity" not in got and "dvEdge" not in got


def test_subset_of_a_subset_traces_to_the_original(runs: Batch) -> None:
    second, direct = runs.folder("sos-second") / "b.nc", runs.folder("sos-direct") / "c.nc"
    ok(runs.result("sos-first"))  # -b 60,-60,180,0 of MPAS, plainly
    ok(runs.result("sos-second"))  # -b 30,-30,90,10 of that, at 2 ranks
    ok(runs.result("sos-direct"))  # -b 30,-30,90,10 of MPAS, plainly
    got, want = read_all(second), read_all(direct)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


# ---------------------------------------------------------------------------------------------------------------
# Many inputs
# ---------------------------------------------------------------------------------------------------------------

def test_join_along_time_equals_subset_of_one_file(runs: Batch) -> None:
    # the parts: ncks -d time,0,6 / 7,7 / 8,19 of the regular grid (made with the inputs)
    joined, single = runs.folder("join-joined") / "joined.nc", runs.folder("join-single") / "single.nc"
    # -v pr -d time,5,12 -d lat,-20.,20. of the three parts at 3 ranks, of the whole file plainly
    ok(runs.result("join-joined"))
    ok(runs.result("join-single"))
    got, want = read_all(joined), read_all(single)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_union_merges_variables(regular: Path, runs: Batch) -> None:
    # the other input: a copy of the regular grid with pr renamed pr_copy (ncrename) and doubled (made with the inputs)
    out = runs.folder("union") / "union.nc"
    ok(runs.result("union"))  # --union -d lat,0,3 at 2 ranks
    got, src = read_all(out), read_all(regular)
    np.testing.assert_array_equal(got["pr"], src["pr"][:, :4])
    np.testing.assert_array_equal(got["pr_copy"], src["pr"][:, :4] * np.float32(2))


# ---------------------------------------------------------------------------------------------------------------
# Bad input: one line, exit 2, no output
# ---------------------------------------------------------------------------------------------------------------

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
def test_bad_selection(runs: Batch, args: tuple[str, ...], message: str) -> None:
    name = f"bad-{BAD.index((args, message))}"
    tmp_path = runs.folder(name)
    out = tmp_path / "out.nc"
    result = runs.result(name)  # subset ARGS regular out.nc at 2 ranks
    assert result.args[1:1 + len(args)] == list(args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("climio: error:")]
    assert len(lines) == 1, result.stderr
    assert not out.exists() and not leftovers(str(tmp_path))


N_BAD_INPUTS = 6


def bad_input_cases(inputs: dict[str, Path], folder: Path) -> list[tuple[tuple[str, ...], str]]:
    cases = [
        (("--join", "time", str(inputs["regular"]), str(inputs["other"])), "inputs' grids differ"),
        (("-b", "10,-10,0,20", str(inputs["plain"])), "no latitude/longitude"),
        ((str(inputs["truncated"]),), "truncated"),
        ((str(folder / "missing.nc"),), "does not exist"),
        (("-b", "1,0.9,0,0.1", str(MPAS)), "selects no cell"),
        (("-d", "nVertices,0,5", str(MPAS)), "select cells ('nCells')"),
    ]
    assert len(cases) == N_BAD_INPUTS
    return cases


def test_bad_inputs(inputs: dict[str, Path], runs: Batch) -> None:
    for k in range(N_BAD_INPUTS):  # each at 2 ranks, writing into a directory of its own
        tmp_path = runs.folder(f"badin-{k}")
        out = tmp_path / "out.nc"
        args, message = bad_input_cases(inputs, tmp_path)[k]
        result = runs.result(f"badin-{k}")
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)
        assert sum(line.startswith("climio: error:") for line in result.stderr.splitlines()) == 1, result.stderr
        assert not out.exists() and not leftovers(str(tmp_path))


def test_existing_output_needs_overwrite(runs: Batch) -> None:
    out = runs.folder("exist-refused") / "out.nc"  # held "precious" before the run
    result = runs.result("exist-refused")  # subset -d lat,0,1 regular out.nc, plainly
    assert result.returncode == 2 and "--overwrite" in result.stderr
    assert out.read_text() == "precious"
    out = runs.folder("exist-overwrite") / "out.nc"  # held "precious" too
    ok(runs.result("exist-overwrite"))  # the same with -O
    assert dims_of(out)["lat"] == 2
