"""``climio subset -b/-X`` on curvilinear grids, checked without climio's code.

The grids: CORDEX EUR-11 and NAM-22 (real files, rotated pole), EUR-11 with cell bounds computed by cartopy,
a tripolar ocean grid and a GEOS cubed-sphere file (tests/data/synthetic, made by
tests/helpers/curvilinear_files.py). For each cut this file
works out on its own which cells are in the box (centres; with ``--touching`` shapely's intersection of each
cell's polygon with the box) and the smallest index rectangle that holds them (across the seam of a grid that
closes east-west; per face on the cube), then checks that the output is exactly that rectangle of the input,
that ``--mask`` filled exactly the rectangle's cells outside the box, that 1, 2, 3 (and 4, a rank with no rows)
ranks write the same file, and that CDO's ``sellonlatbox`` cuts the same rectangle of the CORDEX files.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import shapely

from conftest import DATA, leftovers, one_error_line

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch, Preparers, SubsetRuns  # noqa: E402
import curvilinear_files  # noqa: E402
import mesh_layouts  # noqa: E402

REAL = DATA / "real"
EUR = REAL / "tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc"
NAM = sorted(REAL.glob("pr_NAM-22_*.nc"))
SYNTHETIC = DATA / "synthetic"
RANKS = (None, 2, 3)  # None: one plain process

# case -> (input, data variable, grid dimensions, its lat/lon (and bounds) names, options, rank counts)
CASES = {
    "eur": ("eur", "tas", ("rlat", "rlon"), ("-X", "0,10,40,50", "--mask"), RANKS),
    "eur-touching": ("eur-bounds", "tas", ("rlat", "rlon"), ("-X", "-5,5,50,55", "--touching", "--mask"), RANKS),
    "nam": ("nam", "pr", ("rlat", "rlon"), ("-X", "-80,-70,40,60", "--mask"), (*RANKS, 4)),
    "tripolar-seam": ("tripolar", "tos", ("j", "i"), ("-X", "10,30,-10,10", "--mask"), RANKS),
    "tripolar-dateline": ("tripolar", "tos", ("j", "i"), ("-X", "170,-170,-10,30", "--touching", "--mask"), RANKS),
    "tripolar-pole": ("tripolar", "tos", ("j", "i"), ("-b", "90,80,180,-180", "--mask"), RANKS),
    "cube": ("cube", "T", ("nf", "Ydim", "Xdim"), ("-X", "0,60,30,60", "--mask"), RANKS),
    "cube-pole": ("cube", "T", ("nf", "Ydim", "Xdim"), ("-b", "90,75,180,-180", "--touching", "--mask"), RANKS),
    "cube-dateline": ("cube", "T", ("nf", "Ydim", "Xdim"), ("-X", "170,-170,-20,20", "--touching"), RANKS),
}
# name -> (arguments, expected words of the one-line refusal)
REFUSED = {
    "nothing": ((EUR, "-X", "170,-170,40,50"), ("the box selects nothing", "no cell of", "(lat, lon)")),
    "no-bounds": ((EUR, "-X", "0,10,40,50", "--touching"), ("--touching:", "gives no cell bounds for lat/lon")),
    "mask-without-box": ((EUR, "--mask"), ("--mask applies to a box",)),
    "box-and-range": ((EUR, "-X", "0,10,40,50", "-d", "rlat,0,5"), ("-d rlat,0,5 and a box both select 'rlat'",)),
    "touching-nothing": ((REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc", "-X",
                          "100,200,10,20", "--touching"), ("no cell of 'lat' (by its bounds) overlaps",)),
}
GEOMETRY = {"eur": ("lat", "lon", None), "eur-bounds": ("lat", "lon", ("lat_vertices", "lon_vertices")),
            "nam": ("lat", "lon", None),
            "tripolar": ("latitude", "longitude", ("vertices_latitude", "vertices_longitude")),
            "cube": ("lats", "lons", ("corner_lats", "corner_lons"))}

prepare = Preparers()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    folder = tmp_path_factory.mktemp("grids")
    bounded = curvilinear_files.cordex_with_bounds(EUR, folder / "eur.nc")
    return {"eur": [EUR], "nam": NAM, "eur-bounds": [bounded],
            "scrip-rows": [mesh_layouts.scrip_rectangular(bounded, folder / "eur_scrip.nc")],
            "tripolar": [SYNTHETIC / "tos_tripolar.nc"], "cube": [SYNTHETIC / "geos_c12.nc4"],
            "esmf": [SYNTHETIC / "mpas_qu1920_esmf.nc"], "scrip": [SYNTHETIC / "mpas_qu1920_scrip.nc"]}


MAKERS = {"tos_tripolar.nc": curvilinear_files.tripolar, "geos_c12.nc4": curvilinear_files.cubed_sphere,
          "mpas_qu1920_esmf.nc": mesh_layouts.esmf, "mpas_qu1920_scrip.nc": mesh_layouts.scrip}


@pytest.mark.parametrize("name", MAKERS)
def test_the_shipped_grids_are_the_script_s(name: str, tmp_path: Path) -> None:
    made = MAKERS[name](tmp_path / name)
    with netCDF4.Dataset(made) as ds:
        names = list(ds.variables)
    want, got = read([made], names), read([SYNTHETIC / name], names)
    assert want.keys() == got.keys()
    for n in names:  # the script's trigonometry may differ in the last bit on another CPU (SIMD paths)
        if np.issubdtype(want[n].dtype, np.floating):
            np.testing.assert_allclose(got[n], want[n], rtol=1e-12, atol=1e-12, err_msg=n)
        else:
            np.testing.assert_array_equal(got[n], want[n], err_msg=n)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, inputs: dict[str, list[Path]]) -> SubsetRuns:
    r = SubsetRuns(Batch(tmp_path_factory.mktemp("runs"), timeout=60))
    for case, (source, _, _, options, ranks) in CASES.items():
        for n in ranks:
            r.subset(f"{case}-{n or 1}", *inputs[source], *options, nranks=n)
    for name, (box, _) in REGULAR_TOUCHING.items():
        r.subset(f"regular-{name}", CESM2, "-v", "tas", "-X", box, "--touching", nranks=2 if name == "seam" else None)
    for name, (source, options) in MESH_CASES.items():
        for n in RANKS:
            r.subset(f"{name}-{n or 1}", *inputs[source], *options, nranks=n)
    r.subset("fesom", REAL / "fesom.mesh.diag.nc", "-X", "0,30,-60,-40", nranks=2)
    r.subset("mpas", DATA / "meshes" / "mesh.QU.1920km.151026.nc", "-X", "170,-100,-40,40", nranks=2)
    for case, (source, box) in CDO_CASES.items():
        r.subset(f"{case}-plain", *inputs[source], "-X", box)
    for name, (args, _) in REFUSED.items():
        r.subset(f"refused-{name}", *args, nranks=2 if name == "nothing" else None)
    return r


def read(paths: list[Path], names: list[str]) -> dict[str, np.ndarray]:
    """Variables of the input (joined along time when there are several files) or of an output, unmasked."""
    with netCDF4.MFDataset([str(p) for p in paths]) if len(paths) > 1 else netCDF4.Dataset(paths[0]) as ds:
        ds.set_auto_mask(False)
        return {n: np.asarray(ds[n][...]) for n in names if n in ds.variables}


def winding(lon: np.ndarray) -> np.ndarray:
    """How far in longitude a walk around each cell's corners (..., nv) turns: 0 or +-360 (around a pole)."""
    return (np.mod(np.diff(lon, axis=-1, append=lon[..., :1]) + 180.0, 360.0) - 180.0).sum(axis=-1)


def touching(box: tuple[float, float, float, float], vlat: np.ndarray, vlon: np.ndarray) -> np.ndarray:
    """Cells whose polygon shares some area with the box (shapely, in the lon/lat plane, the box repeated
    every 360 degrees); a corner at a pole becomes the pole between its neighbours' longitudes; a cell around a
    pole reaches it at every longitude."""
    west, east, south, north = box
    width = (east - west) % 360.0 or 360.0
    shape = vlat.shape[:-1]
    vlat, vlon = vlat.reshape(-1, vlat.shape[-1]), vlon.reshape(-1, vlon.shape[-1])
    at_pole = np.abs(vlat) >= 90.0 - 1e-9
    if at_pole.any():  # each corner twice; a pole's two at its neighbours' longitudes
        vlon = np.stack([np.where(at_pole, np.roll(vlon, 1, axis=1), vlon),
                         np.where(at_pole, np.roll(vlon, -1, axis=1), vlon)], axis=-1).reshape(len(vlon), -1)
        vlat = np.repeat(vlat, 2, axis=1)
    lons = vlon[:, :1] + np.mod(vlon - vlon[:, :1] + 180.0, 360.0) - 180.0  # within 180 of the first corner
    around = np.abs(winding(vlon)) > 180.0
    north_cap = vlat.mean(axis=1) > 0
    low = np.where(around & ~north_cap, -90.0, vlat.min(axis=1))
    high = np.where(around & north_cap, 90.0, vlat.max(axis=1))
    hit = (low < north) & (high > south)
    polygons = shapely.polygons(np.stack([lons, vlat], axis=-1)[~around])
    area = np.zeros(len(polygons))
    for k in (-1, 0, 1, 2):
        area += shapely.area(shapely.intersection(polygons, shapely.box(west + k * 360.0, south,
                                                                         west + width + k * 360.0, north)))
    hit[~around] = area > 0
    return hit.reshape(shape)


def inside_box(box: tuple[float, float, float, float], lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    west, east, south, north = box
    width = (east - west) % 360.0 or 360.0
    return (lat >= south) & (lat <= north) & (np.mod(lon - west, 360.0) <= width)


def shortest_cover(kept: np.ndarray, size: int, closed: bool) -> np.ndarray:
    """The shortest run of indices holding every kept one; around the end when the dimension is ``closed``."""
    if not closed:
        return np.arange(kept.min(), kept.max() + 1)
    best = None
    for start in kept:
        run = (start + np.arange(size)) % size
        length = max(int(np.flatnonzero(run == k)[0]) for k in kept) + 1
        if best is None or length < len(best):
            best = run[:length]
    return best


def box_of(options: tuple[str, ...]) -> tuple[float, float, float, float]:
    """(west, east, south, north) of -X or -b."""
    if "-X" in options:
        return tuple(float(v) for v in options[options.index("-X") + 1].split(","))  # type: ignore[return-value]
    north, south, east, west = (float(v) for v in options[options.index("-b") + 1].split(","))
    return west, east, south, north


def expected(case: str, inputs: dict[str, list[Path]]) -> tuple[list[np.ndarray], np.ndarray]:
    """The rectangle's indices per grid dimension and which of its cells are in the box."""
    source, _, dims, options, _ = CASES[case]
    lat_name, lon_name, bounds = GEOMETRY[source]
    names = [lat_name, lon_name, *(bounds or ())]
    data = read(inputs[source][:1], names)
    box = box_of(options)
    kept = inside_box(box, data[lat_name], data[lon_name])
    if "--touching" in options:
        assert bounds is not None
        vlat, vlon = data[bounds[0]], data[bounds[1]]
        if source == "cube":  # corners from the staggered corner grid
            vlat, vlon = ([c[:, :-1, :-1], c[:, :-1, 1:], c[:, 1:, 1:], c[:, 1:, :-1]] for c in (vlat, vlon))
            vlat, vlon = np.stack(vlat, axis=-1), np.stack(vlon, axis=-1)
        kept |= touching(box, vlat, vlon)
    assert kept.any()
    if len(dims) == 3:
        faces = np.flatnonzero(kept.any(axis=(1, 2)))
        rows = np.flatnonzero(kept[faces].any(axis=(0, 2)))
        cols = np.flatnonzero(kept[faces].any(axis=(0, 1)))
        picks = [faces, np.arange(rows.min(), rows.max() + 1), np.arange(cols.min(), cols.max() + 1)]
    else:
        rows, cols = np.flatnonzero(kept.any(axis=1)), np.flatnonzero(kept.any(axis=0))
        picks = [np.arange(rows.min(), rows.max() + 1), shortest_cover(cols, kept.shape[1], source == "tripolar")]
    assert not kept.sum() - kept[np.ix_(*picks)].sum(), "the rectangle holds every kept cell"
    return picks, kept[np.ix_(*picks)]


CORNERS = {"Ydim": "YCdim", "Xdim": "XCdim"}  # the cube's corner grid: one more row and column than its cells


def cut(values: np.ndarray, dims: tuple[str, ...], var_dims: tuple[str, ...], picks: list[np.ndarray]) -> np.ndarray:
    corners = [(CORNERS[d], np.arange(p[0], p[-1] + 2)) for d, p in zip(dims, picks) if d in CORNERS]
    for dim, p in [*zip(dims, picks), *corners]:
        if dim in var_dims:
            values = np.take(values, p, axis=var_dims.index(dim))
    return values


@pytest.mark.parametrize("case", CASES)
def test_the_box_keeps_the_rectangle_of_its_cells(case: str, runs: SubsetRuns, inputs: dict[str, list[Path]]) -> None:
    source, var, dims, options, ranks = CASES[case]
    results = {n or 1: runs.result(f"{case}-{n or 1}") for n in ranks}
    for n, result in results.items():
        assert result.returncode == 0, f"{n} ranks: {result.stderr}"
    picks, inside = expected(case, inputs)
    with netCDF4.Dataset(inputs[source][0]) as ds:
        names = list(ds.variables)
        var_dims = {n: ds[n].dimensions for n in names}
    want = read(inputs[source], names)
    got = read([runs.out(f"{case}-1")], names + [var])
    for name in names:
        if name in ("time", "time_bnds") or "time" in var_dims[name] and name != var:
            continue
        values = cut(want[name], dims, var_dims[name], picks)
        if name == var and "--mask" in options:
            shape = [1] * values.ndim
            for d in dims:
                shape[var_dims[var].index(d)] = len(picks[dims.index(d)])
            keep = inside.reshape(shape)
            with netCDF4.Dataset(runs.out(f"{case}-1")) as ds:
                marker = ds[var].getncattr("_FillValue")
            np.testing.assert_array_equal(got[var] != marker, np.broadcast_to(keep, values.shape), err_msg=case)
            values = np.where(keep, values, marker)
        np.testing.assert_array_equal(got[name], values, err_msg=f"{case}: {name}")
    for n in results:
        if n != 1:
            assert_same_file(runs.out(f"{case}-1"), runs.out(f"{case}-{n}"))
    if "--mask" in options:
        with netCDF4.Dataset(runs.out(f"{case}-1")) as ds:
            outside = "that do not overlap the box" if "--touching" in options else "whose centre lies outside the box"
            assert f"{var} set to _FillValue in the cells of the index rectangle {outside} (--mask)" in ds.history


def assert_same_file(a: Path, b: Path) -> None:
    with netCDF4.Dataset(a) as one, netCDF4.Dataset(b) as other:
        one.set_auto_mask(False)
        other.set_auto_mask(False)
        assert {k: v for k, v in one.dimensions.items()}.keys() == other.dimensions.keys()
        assert [one.getncattr(k) for k in one.ncattrs() if k != "history"] == \
               [other.getncattr(k) for k in other.ncattrs() if k != "history"]
        for name, var in one.variables.items():
            np.testing.assert_array_equal(var[...], other[name][...], err_msg=f"{b}: {name}")
            assert {k: var.getncattr(k) for k in var.ncattrs()} == \
                   {k: other[name].getncattr(k) for k in other[name].ncattrs()}


# CESM2's thinned grid: lat -90, 4.24 (bounds -90..-89.53, 3.77..4.71), lon 0, 125, 250 (bounds +-0.625)
CESM2 = REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
# name -> (the -X box, the (lat, lon) indices kept): boxes that hold no centre, only parts of cells
REGULAR_TOUCHING = {"corner": ("125.5,130,-89.7,-89.6", ([0], [1])), "seam": ("359.8,0.1,3.8,4", ([1], [0]))}


@pytest.mark.parametrize("name", REGULAR_TOUCHING)
def test_touching_on_a_regular_grid_keeps_cells_by_their_bounds(name: str, runs: SubsetRuns) -> None:
    result = runs.result(f"regular-{name}")
    assert result.returncode == 0, result.stderr
    rows, cols = REGULAR_TOUCHING[name][1]
    want = read([CESM2], ["tas", "lat_bnds", "lon_bnds"])
    got = read([runs.out(f"regular-{name}")], ["tas", "lat_bnds", "lon_bnds"])
    np.testing.assert_array_equal(got["tas"], want["tas"][:, rows][:, :, cols])
    np.testing.assert_array_equal(got["lat_bnds"], want["lat_bnds"][rows])
    np.testing.assert_array_equal(got["lon_bnds"], want["lon_bnds"][cols])


# The real MPAS QU 1920 km mesh as an ESMF mesh and an unstructured SCRIP grid (tests/helpers/mesh_layouts.py);
# a Pacific box across the dateline
MJO = ("-X", "170,-100,-40,40")
MESH_CASES = {"esmf": ("esmf", MJO), "scrip": ("scrip", MJO), "scrip-touching": ("scrip", (*MJO, "--touching")),
              "scrip-rows": ("scrip-rows", CASES["eur-touching"][3][:-1])}


@pytest.mark.parametrize("case", ["esmf"])
def test_esmf_mesh_keeps_whole_cells_renumbered(case: str, runs: SubsetRuns, inputs: dict[str, list[Path]]) -> None:
    """The faces centred in the box, each with all its nodes, elementConn renumbered to the kept nodes
    (1-based, -1 kept), nothing else; every variable the input's at the original indices; 1-3 ranks alike."""
    for n in RANKS:
        assert runs.result(f"{case}-{n or 1}").returncode == 0, runs.result(f"{case}-{n or 1}").stderr
    names = ["nodeCoords", "elementConn", "numElementConn", "centerCoords", "elementArea", "psi"]
    src = read(inputs["esmf"], names)
    out = runs.out(f"{case}-1")
    got = read([out], names + ["elementCount_original_index", "nodeCount_original_index"])
    faces, nodes = got["elementCount_original_index"], got["nodeCount_original_index"]
    centre = src["centerCoords"]
    want_faces = np.flatnonzero(inside_box(box_of(MJO), centre[:, 1], centre[:, 0]))
    np.testing.assert_array_equal(faces, want_faces)
    used = src["elementConn"][faces]
    np.testing.assert_array_equal(nodes, np.unique(used[used >= 1] - 1))
    conn = got["elementConn"]
    np.testing.assert_array_equal(np.where(conn >= 1, nodes[np.maximum(conn, 1) - 1] + 1, conn), used)
    for name in ("numElementConn", "centerCoords", "elementArea", "psi"):
        np.testing.assert_array_equal(got[name], src[name][faces], err_msg=name)
    np.testing.assert_array_equal(got["nodeCoords"], src["nodeCoords"][nodes])
    for n in RANKS[1:]:
        assert_same_file(out, runs.out(f"{case}-{n}"))


def test_a_rectangular_scrip_grid_keeps_the_curvilinear_rectangle(runs: SubsetRuns,
                                                                  inputs: dict[str, list[Path]]) -> None:
    """EUR-11 with cartopy's corners as a SCRIP grid of grid_rank 2: --touching keeps the cells of the rectangle
    the curvilinear file gives (worked out by this file's own check), row by row; grid_dims is its (nx, ny)."""
    picks, _ = expected("eur-touching", inputs)
    want = read(inputs["eur-bounds"], ["lat", "lon", "lat_vertices", "lon_vertices"])
    for n in RANKS:
        result = runs.result(f"scrip-rows-{n or 1}")
        assert result.returncode == 0, result.stderr
        got = read([runs.out(f"scrip-rows-{n or 1}")], ["grid_center_lat", "grid_center_lon", "grid_corner_lat",
                                                        "grid_corner_lon", "grid_dims"])
        rect = np.ix_(*picks)
        np.testing.assert_array_equal(got["grid_center_lat"], want["lat"][rect].ravel())
        np.testing.assert_array_equal(got["grid_center_lon"], want["lon"][rect].ravel())
        np.testing.assert_array_equal(got["grid_corner_lat"], want["lat_vertices"][rect].reshape(-1, 4))
        assert got["grid_dims"].tolist() == [len(picks[1]), len(picks[0])]


@pytest.mark.parametrize("case", ["scrip", "scrip-touching"])
def test_scrip_grid_keeps_whole_cells(case: str, runs: SubsetRuns, inputs: dict[str, list[Path]]) -> None:
    """The cells centred in the box (with --touching: whose corners' polygon overlaps it, by shapely), each
    with its corners, in input order; grid_dims says how many; 1-3 ranks alike."""
    for n in RANKS:
        assert runs.result(f"{case}-{n or 1}").returncode == 0, runs.result(f"{case}-{n or 1}").stderr
    names = ["grid_center_lat", "grid_center_lon", "grid_corner_lat", "grid_corner_lon", "grid_imask", "grid_dims"]
    src = read(inputs["scrip"], names)
    out = runs.out(f"{case}-1")
    got = read([out], names)
    kept = inside_box(box_of(MJO), src["grid_center_lat"], src["grid_center_lon"])
    if case.endswith("touching"):
        kept |= touching(box_of(MJO), src["grid_corner_lat"], src["grid_corner_lon"])
    rows = np.flatnonzero(kept)
    for name in names[:-1]:
        np.testing.assert_array_equal(got[name], src[name][rows], err_msg=name)
    assert got["grid_dims"].tolist() == [rows.size]
    for n in RANKS[1:]:
        assert_same_file(out, runs.out(f"{case}-{n}"))


def test_a_mesh_whose_tables_disagree_is_named_in_a_warning(runs: SubsetRuns) -> None:
    """FESOM's face_edges (1-based, with no start_index) list edges whose nodes are not their face's: one
    warning names the table; MPAS's consistent tables give none."""
    fesom, mpas = runs.result("fesom"), runs.result("mpas")
    assert fesom.returncode == 0 and mpas.returncode == 0, fesom.stderr + mpas.stderr
    warnings = [line for line in fesom.stderr.splitlines() if line.startswith("climio: warning:")]
    assert warnings == [f"climio: warning: {REAL / 'fesom.mesh.diag.nc'}: 'face_edges' disagrees with 'edge_nodes' "
                        f"and 'face_nodes': 43 of the 43 cells kept list an edge whose nodes are not theirs (is its "
                        f"start_index right?); it is copied and renumbered as stored"], fesom.stderr
    assert "warning" not in mpas.stderr


# case -> (input, -X box as CDO takes it: east above west); the tripolar boxes cross the dateline and the
# grid's own seam at 20 E (the pole, where CDO keeps every column and climio the shortest arc, is left out)
CDO_CASES = {"eur": ("eur", "0,10,40,50"), "nam": ("nam", "-80,-70,40,60"),
             "tripolar-seam": ("tripolar", "10,30,-10,10"), "tripolar-dateline": ("tripolar", "170,190,-10,30")}


@pytest.mark.parametrize("case", CDO_CASES)
def test_cdo_sellonlatbox_cuts_the_same_rectangle(case: str, runs: SubsetRuns, inputs: dict[str, list[Path]],
                                                  tmp_path: Path) -> None:
    """CDO crops a curvilinear grid to the index rectangle of the cells centred in the box, as climio does
    without --mask."""
    result = runs.result(f"{case}-plain")
    assert result.returncode == 0, result.stderr
    source, box = CDO_CASES[case]
    sources = inputs[source]
    joined = sources[0]
    if len(sources) > 1:
        joined = tmp_path / "joined.nc"
        subprocess.run(["cdo", "-s", "mergetime", *map(str, sources), str(joined)], check=True, capture_output=True)
    want = tmp_path / "cdo.nc"
    subprocess.run(["cdo", "-s", f"sellonlatbox,{box}", str(joined), str(want)], check=True, capture_output=True)
    var, dims = CASES[case][1], CASES[case][2]
    lat, lon = GEOMETRY[source][:2]
    names = [var, lat, lon, *dims]
    got, cdo = read([runs.out(f"{case}-plain")], names), read([want], names)
    for name in names:
        np.testing.assert_array_equal(got[name], cdo[name], err_msg=name)


@pytest.mark.parametrize("name", REFUSED)
def test_refusals(name: str, runs: SubsetRuns) -> None:
    result = runs.result(f"refused-{name}")
    assert one_error_line(result, *REFUSED[name][1]).startswith("climio: error:")
    out = runs.out(f"refused-{name}")
    assert not out.exists() and not leftovers(str(out.parent))
