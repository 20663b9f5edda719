"""climio subset --region on the shipped files, at 1, 2 and 3 ranks, against references worked out here.

Four regions (tests write them as GeoJSON): a box over the Benelux, one across the dateline (longitudes 170 to
190), a ring with a hole, and the Arctic cap drawn along the pole; the last three on every grid kind (regular,
curvilinear tripolar, GEOS cube, MPAS mesh; ICON's cells across the dateline). Each case runs in one table per
rank count (helpers/climio_batch.py). For each output:

* the cells kept are those whose centre lies in the region by shapely's own test of every input cell (the
  region and its copies 360 degrees east and west; the same cells as regionmask's mask), cropped as a box is:
  on regular and curvilinear grids the rows and columns from the first to the last such cell (around the seam
  on a global grid), on ICON's cells and MPAS's mesh exactly those cells;
* ``--mask``: a cell's data is _FillValue exactly where its centre is outside the region;
* ``--weights``: each cell's fraction inside the region equals an intersection computed here (the cell's outline
  from its bounds as a polygon, intersected with the region and its shifted copies, over the cell's area) to
  1e-9, and ``region_area`` is the fraction times the cell's area on the sphere; a cell whose corners are all
  inside has fraction 1;
* ``--touching`` on the MPAS mesh (a region, and a box): the cells whose outline from their corner nodes
  overlaps, by centre or by a positive intersection computed here;
* CDO's ``maskregion`` masks the same cells of the regular grid for the Benelux box;
* 2 and 3 ranks write the same file as 1.
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
import shapely

from conftest import DATA, leftovers

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
import ncdiff  # noqa: E402
from climio_batch import run_table  # noqa: E402

REAL = DATA / "real"
O3 = REAL / "o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc"  # regular, global, with bounds
EUR = REAL / "tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc"  # rotated pole, no bounds
TOS = DATA / "synthetic" / "tos_tripolar.nc"  # tripolar, vertices_latitude/longitude
ICON = REAL / "tas_Amon_ICON-ESM-LR_historical_r1i1p1f1_gn_185001.nc"
MPAS = DATA / "meshes" / "mesh.QU.1920km.151026.nc"
GEOS = DATA / "synthetic" / "geos_c12.nc4"
RANKS = (None, 2, 3)
R = 6_371_000.0

REGIONS = {
    "Benelux": [[[2.5, 49.4], [7.2, 49.4], [7.2, 53.6], [2.5, 53.6], [2.5, 49.4]]],
    "Dateline": [[[170, -20], [190, -20], [190, 20], [170, 20], [170, -20]]],
    "Ring": [[[-20, 30], [40, 30], [40, 70], [-20, 70], [-20, 30]], [[0, 40], [20, 40], [20, 60], [0, 60], [0, 40]]],
    "Arctic": [[[-180, 66.5], [180, 66.5], [180, 90], [-180, 90], [-180, 66.5]]],
    "MJO": [[[90, -20], [160, -20], [160, 20], [90, 20], [90, -20]]],  # -b 20,-20,160,90 as a polygon
}
CASES = {  # name -> (input, region, options)
    "o3_benelux": (O3, "Benelux", ["--mask", "--weights"]),
    "o3_dateline": (O3, "Dateline", ["--weights"]),
    "o3_ring": (O3, "Ring", ["--mask", "--weights"]),
    "o3_arctic": (O3, "Arctic", ["--touching", "--weights"]),
    "eur_benelux": (EUR, "Benelux", ["--mask"]),
    "tos_ring": (TOS, "Ring", ["--mask", "--weights"]),
    "tos_dateline": (TOS, "Dateline", ["--weights"]),
    "tos_arctic": (TOS, "Arctic", ["--mask"]),
    "geos_arctic": (GEOS, "Arctic", ["--weights"]),
    "geos_dateline": (GEOS, "Dateline", ["--weights"]),
    "geos_ring": (GEOS, "Ring", ["--weights"]),
    "icon_dateline": (ICON, "Dateline", ["--weights"]),
    "mpas_arctic": (MPAS, "Arctic", ["--weights"]),
    "mpas_dateline": (MPAS, "Dateline", ["--weights"]),
    "mpas_ring": (MPAS, "Ring", ["--weights"]),
    "mpas_arctic_touching": (MPAS, "Arctic", ["--touching"]),
    "mpas_box_touching": (MPAS, None, ["--touching", "-b", "20,-20,160,90"]),
}


def _region(name: str) -> Any:
    shape = shapely.Polygon(REGIONS[name][0], REGIONS[name][1:])
    return shapely.union_all([shapely.affinity.translate(shape, dx) for dx in (-360.0, 0.0, 360.0)])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("regions")
    path = base / "regions.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"name": name}, "geometry": {"type": "Polygon", "coordinates": rings}}
        for name, rings in REGIONS.items()]}))
    outputs, results = {}, {}
    for nranks in RANKS:
        folder = base / f"n{nranks or 1}"
        folder.mkdir()
        outputs[nranks] = {case: folder / f"{case}.nc" for case in CASES}
        argv = [["subset", *options, *(["--region", f"{path}:{region}"] if region else []), str(source),
                 str(outputs[nranks][case])] for case, (source, region, options) in CASES.items()]
        results[nranks] = dict(zip(CASES, run_table(argv, nranks, base / f"batch{nranks or 1}", timeout=120)))
    return {"outputs": outputs, "results": results, "geojson": path}


def _read(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        return {name: v[:] for name, v in ds.variables.items()}


def _arc(kept: np.ndarray, size: int) -> np.ndarray:
    """The shortest run of columns around a periodic axis that holds ``kept`` (sorted, unique)."""
    if kept.size == size:
        return kept
    gaps = np.diff(np.append(kept, kept[0] + size))
    start = kept[(int(np.argmax(gaps)) + 1) % kept.size]
    return (start + np.arange(size - int(gaps.max()) + 1)) % size


def _centres_inside(lat: np.ndarray, lon: np.ndarray, region: str) -> np.ndarray:
    return shapely.intersects_xy(_region(region), np.mod(lon + 180.0, 360.0) - 180.0, lat) | \
        shapely.intersects_xy(_region(region), np.mod(lon, 360.0), lat)


def _fractions(lat_c: np.ndarray, lon_c: np.ndarray, region: str) -> np.ndarray:
    """Each cell's part in the region: the outline with longitudes continued around from its first corner."""
    out = np.empty(lat_c.shape[:-1])
    shape = _region(region)
    for index in np.ndindex(out.shape):
        lat, lon = lat_c[index], np.asarray(lon_c[index], dtype=np.float64)
        x = lon[0] + np.concatenate([[0.0], np.cumsum((np.diff(lon) + 180.0) % 360.0 - 180.0)])
        cell = shapely.make_valid(shapely.Polygon(np.stack([x, lat], axis=1)))
        out[index] = shapely.intersection(cell, shape).area / cell.area
    return out


def test_regions_at_any_rank_count_write_the_same_file(runs: dict[str, Any]) -> None:
    for case in CASES:
        for nranks in RANKS:
            assert runs["results"][nranks][case].returncode == 0, (case, runs["results"][nranks][case].stderr)
        for nranks in RANKS[1:]:
            diffs = ncdiff.diff(runs["outputs"][nranks][case], runs["outputs"][None][case])
            assert not diffs, (case, nranks, diffs)
            assert not leftovers(str(runs["outputs"][nranks][case].parent))


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("o3")])
def test_regions_on_a_regular_grid(runs: dict[str, Any], case: str) -> None:
    source, region, options = CASES[case]
    out = _read(runs["outputs"][None][case])
    with netCDF4.Dataset(source) as ds:
        lat, lon = ds["lat"][:], ds["lon"][:]
        lat_b, lon_b = ds["lat_bnds"][:], ds["lon_bnds"][:]
        o3 = ds["o3"][:]
    lat2, lon2 = np.meshgrid(lat, lon, indexing="ij")
    if "--touching" in options:
        corners_lat = np.stack([lat_b[:, 0], lat_b[:, 0], lat_b[:, 1], lat_b[:, 1]], axis=-1)[:, None, :]
        corners_lon = np.stack([lon_b[:, 0], lon_b[:, 1], lon_b[:, 1], lon_b[:, 0]], axis=-1)[None, :, :]
        inside = _fractions(np.broadcast_to(corners_lat, (*lat2.shape, 4)),
                            np.broadcast_to(corners_lon, (*lat2.shape, 4)), region) > 0
    else:
        inside = _centres_inside(lat2, lon2, region)
    rows = np.flatnonzero(inside.any(axis=1))
    rows = np.arange(rows.min(), rows.max() + 1)
    cols = _arc(np.flatnonzero(inside.any(axis=0)), len(lon))
    np.testing.assert_array_equal(out["lat"], lat[rows])
    np.testing.assert_array_equal(out["lon"], lon[cols])
    values = out["o3"]
    if "--mask" in options:
        keep = inside[np.ix_(rows, cols)]
        np.testing.assert_array_equal(np.ma.getmaskarray(values), np.broadcast_to(~keep, values.shape))
        np.testing.assert_array_equal(values[..., keep], o3[..., rows, :][..., cols][..., keep])
    else:
        np.testing.assert_array_equal(values, o3[..., rows, :][..., cols])
    corners_lat = np.stack([lat_b[rows, 0], lat_b[rows, 0], lat_b[rows, 1], lat_b[rows, 1]], axis=-1)[:, None, :]
    corners_lon = np.stack([lon_b[cols, 0], lon_b[cols, 1], lon_b[cols, 1], lon_b[cols, 0]], axis=-1)[None, :, :]
    shape = (len(rows), len(cols), 4)
    expected = _fractions(np.broadcast_to(corners_lat, shape), np.broadcast_to(corners_lon, shape), region)
    np.testing.assert_allclose(out["region_fraction"], expected, rtol=0, atol=1e-9)
    band = np.abs(np.sin(np.radians(lat_b[rows, 1])) - np.sin(np.radians(lat_b[rows, 0])))
    width = np.radians(np.mod(lon_b[cols, 1] - lon_b[cols, 0], 360.0))
    np.testing.assert_allclose(out["region_area"], expected * R ** 2 * band[:, None] * width[None, :], rtol=1e-9)
    with netCDF4.Dataset(runs["outputs"][None][case]) as ds:
        assert ds["o3"].cell_measures == "area: region_area"
    # an area mean is one weighted sum
    mean = float((out["o3"][0, 0] * out["region_area"]).sum() / out["region_area"][~np.ma.getmaskarray(
        out["o3"][0, 0])].sum())
    assert np.isfinite(mean) and out["o3"][0, 0].min() <= mean <= out["o3"][0, 0].max()


@pytest.mark.parametrize("case", ["eur_benelux", "tos_ring", "tos_dateline", "tos_arctic", "geos_arctic",
                                  "geos_dateline", "geos_ring"])
def test_regions_on_curvilinear_grids(runs: dict[str, Any], case: str) -> None:
    source, region, options = CASES[case]
    out = _read(runs["outputs"][None][case])
    names = {"eur": ("lat", "lon", "tas"), "tos": ("latitude", "longitude", "tos"),
             "geos": ("lats", "lons", "T")}[case.split("_")[0]]
    with netCDF4.Dataset(source) as ds:
        lat, lon, data = (ds[n][:] for n in names)
    inside = _centres_inside(lat, lon, region)
    grid_axes = tuple(range(lat.ndim))
    kept = [np.flatnonzero(inside.any(axis=tuple(a for a in grid_axes if a != axis))) for axis in grid_axes]
    if case.startswith("geos"):  # the faces that hold kept cells, one rectangle of rows and columns for them all
        picks = [kept[0]] + [np.arange(k.min(), k.max() + 1) for k in kept[1:]]
    elif case.startswith("tos"):  # a global ocean grid: its columns close around the seam
        picks = [np.arange(kept[0].min(), kept[0].max() + 1), _arc(kept[1], lat.shape[1])]
    else:
        picks = [np.arange(k.min(), k.max() + 1) for k in kept]
    box = np.ix_(*picks)
    np.testing.assert_array_equal(out[names[0]], lat[box])
    np.testing.assert_array_equal(out[names[1]], lon[box])
    values = out[names[2]]
    if "--mask" in options:
        np.testing.assert_array_equal(np.ma.getmaskarray(values)[0], ~inside[box] | np.ma.getmaskarray(data[0][box]))
    if "--weights" in options:
        with netCDF4.Dataset(source) as ds:
            if case.startswith("geos"):
                c_lat, c_lon = ds["corner_lats"][:], ds["corner_lons"][:]
                c_lat, c_lon = (np.stack([c[:, :-1, :-1], c[:, :-1, 1:], c[:, 1:, 1:], c[:, 1:, :-1]], axis=-1)
                                for c in (c_lat, c_lon))
            else:
                c_lat, c_lon = ds["vertices_latitude"][:], ds["vertices_longitude"][:]
        expected = _fractions(c_lat[box], c_lon[box], region)
        np.testing.assert_allclose(out["region_fraction"], expected, rtol=0, atol=1e-9)
        whole = np.all(_centres_inside(c_lat[box], c_lon[box], region), axis=-1) & (region != "Ring")
        np.testing.assert_allclose(out["region_fraction"][whole], 1.0, rtol=0, atol=1e-12)


def test_regions_on_icon_and_mpas(runs: dict[str, Any]) -> None:
    icon = _read(runs["outputs"][None]["icon_dateline"])
    with netCDF4.Dataset(ICON) as ds:
        lat, lon = ds["latitude"][:], ds["longitude"][:]
        b_lat, b_lon = ds["latitude_bnds"][:], ds["longitude_bnds"][:]
    kept = np.flatnonzero(_centres_inside(lat, lon, "Dateline"))
    np.testing.assert_array_equal(icon["latitude"], lat[kept])
    np.testing.assert_allclose(icon["region_fraction"], _fractions(b_lat[kept], b_lon[kept], "Dateline"),
                               rtol=0, atol=1e-9)
    with netCDF4.Dataset(MPAS) as ds:
        lat, lon = np.degrees(ds["latCell"][:]), np.degrees(ds["lonCell"][:])
        vertices, sides = ds["verticesOnCell"][:], ds["nEdgesOnCell"][:]
        v_lat, v_lon = np.degrees(ds["latVertex"][:]), np.degrees(ds["lonVertex"][:])
    for region in ("Arctic", "Dateline", "Ring"):
        mpas = _read(runs["outputs"][None][f"mpas_{region.lower()}"])
        kept = np.flatnonzero(_centres_inside(lat, lon, region))
        np.testing.assert_array_equal(mpas["nCells_original_index"], kept)
        for k, cell in enumerate(kept):
            corners = vertices[cell, :sides[cell]] - 1
            if abs(lat[cell]) > 89:  # the cell around the pole: inside the cap, whole
                assert mpas["region_fraction"][k] == pytest.approx(1.0, abs=1e-12)
            else:
                expected = _fractions(v_lat[corners][None], v_lon[corners][None], region)[0]
                assert mpas["region_fraction"][k] == pytest.approx(expected, abs=1e-9), (region, cell)


@pytest.mark.parametrize("case", ["mpas_arctic_touching", "mpas_box_touching"])
def test_touching_on_a_mesh_keeps_every_cell_that_overlaps(runs: dict[str, Any], case: str) -> None:
    """With --touching a mesh keeps the cells whose outline (from verticesOnCell) shares area with the region or
    box: by centre, or by a positive intersection computed here; the pole's cell is in the cap by its centre."""
    out = _read(runs["outputs"][None][case])
    with netCDF4.Dataset(MPAS) as ds:
        lat, lon = np.degrees(ds["latCell"][:]), np.degrees(ds["lonCell"][:])
        vertices, sides = ds["verticesOnCell"][:], ds["nEdgesOnCell"][:]
        v_lat, v_lon = np.degrees(ds["latVertex"][:]), np.degrees(ds["lonVertex"][:])
    region = "Arctic" if case == "mpas_arctic_touching" else "MJO"
    kept = []
    for cell in range(len(lat)):
        corners = vertices[cell, :sides[cell]] - 1
        overlap = abs(lat[cell]) < 89 and _fractions(v_lat[corners][None], v_lon[corners][None], region)[0] > 0
        if overlap or _centres_inside(lat[cell:cell + 1], lon[cell:cell + 1], region)[0]:
            kept.append(cell)
    np.testing.assert_array_equal(out["nCells_original_index"], kept)
    by_centre = _read(runs["outputs"][None]["mpas_arctic"])["nCells_original_index"]
    if case == "mpas_arctic_touching":
        assert set(by_centre) < set(kept)


@pytest.mark.parametrize("case", ["o3_benelux", "o3_dateline", "o3_ring", "eur_benelux", "tos_ring"])
def test_cells_in_a_region_are_regionmasks(runs: dict[str, Any], case: str) -> None:
    """regionmask's mask (cell centres in the region) of every input cell is the one the tests here check
    against; with --mask, the output keeps exactly regionmask's cells (where the input has data)."""
    import regionmask

    source, region, options = CASES[case]
    polygon = shapely.Polygon(REGIONS[region][0], REGIONS[region][1:])
    names = {"o3": ("lat", "lon", "o3"), "eur": ("lat", "lon", "tas"), "tos": ("latitude", "longitude", "tos")}
    lat_name, lon_name, var = names[case.split("_")[0]]
    with netCDF4.Dataset(source) as ds:
        lat, lon, data = ds[lat_name][:], ds[lon_name][:], ds[var][:]
    theirs = np.isfinite(regionmask.Regions([polygon]).mask(lon, lat).values)
    lat2, lon2 = np.meshgrid(lat, lon, indexing="ij") if lat.ndim == 1 else (lat, lon)
    np.testing.assert_array_equal(_centres_inside(lat2, lon2, region), theirs)
    assert theirs.sum() > 0
    if "--mask" in options:
        first = ~np.ma.getmaskarray(data).reshape(-1, *data.shape[-2:])[0]
        out = _read(runs["outputs"][None][case])[var]
        assert (~np.ma.getmaskarray(out).reshape(-1, *out.shape[-2:])[0]).sum() == (theirs & first).sum()


def test_regions_mask_equals_cdo_maskregion(runs: dict[str, Any], tmp_path: Path) -> None:
    """CDO's maskregion keeps the cells whose centre is in the polygon: the same cells as --mask."""
    polygon = tmp_path / "benelux.txt"
    polygon.write_text("".join(f"{x} {y}\n" for x, y in REGIONS["Benelux"][0]))
    masked = tmp_path / "cdo.nc"
    subprocess.run(["cdo", "-s", f"-maskregion,{polygon}", "-selname,o3", str(O3), str(masked)], check=True,
                   timeout=60, capture_output=True)
    out = _read(runs["outputs"][None]["o3_benelux"])
    with netCDF4.Dataset(masked) as ds:
        cdo = ds["o3"][:]
        lat, lon = ds["lat"][:], ds["lon"][:]
    rows, cols = np.flatnonzero(np.isin(lat, out["lat"])), np.flatnonzero(np.isin(lon, out["lon"]))
    theirs = cdo[..., rows, :][..., cols]
    np.testing.assert_array_equal(np.ma.getmaskarray(out["o3"]), np.ma.getmaskarray(theirs))
    assert (~np.ma.getmaskarray(cdo)).sum() == (~np.ma.getmaskarray(out["o3"])).sum()  # nothing kept elsewhere


def test_a_shapefile_gives_what_its_geojson_gives(runs: dict[str, Any], tmp_path: Path) -> None:
    """The Ring (a polygon with a hole) written as a shapefile by pyshp: the same cut, mask and weights."""
    import shapefile

    with shapefile.Writer(str(tmp_path / "ring")) as writer:
        writer.field("NAME", "C")
        writer.poly([ring if k == 0 else ring[::-1] for k, ring in enumerate(REGIONS["Ring"])])
        writer.record("Ring")
    out = tmp_path / "ring.nc"
    (result,) = run_table([["subset", "--mask", "--weights", "--region", f"{tmp_path / 'ring.shp'}:Ring", str(O3),
                            str(out)]], None, tmp_path / "batch")
    assert result.returncode == 0, result.stderr
    ours, theirs = _read(out), _read(runs["outputs"][None]["o3_ring"])
    assert ours.keys() == theirs.keys()
    for name in ours:
        np.testing.assert_array_equal(np.ma.getmaskarray(ours[name]), np.ma.getmaskarray(theirs[name]), name)
        np.testing.assert_array_equal(ours[name], theirs[name], name)


REFUSALS = {
    "weights_without_bounds": (["--weights", "--region", "{g}:Benelux", str(EUR)], "gives its cells no bounds"),
    "no_such_name": (["--region", "{g}:Atlantis", str(O3)], "no feature of"),
    "nothing_inside": (["--region", "{g}:Benelux", str(REAL / "tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc")],
                       "selects nothing"),
    "weights_alone": (["--weights", str(O3)], "--weights applies to a region"),
    "region_and_box": (["--region", "{g}:Benelux", "-b", "1,0,1,0", str(O3)], "not allowed with argument"),
}


def test_region_refusals_are_one_line_and_leave_nothing(runs: dict[str, Any], tmp_path: Path) -> None:
    argv = [["subset", *(a.format(g=runs["geojson"]) for a in options), str(tmp_path / f"{name}.nc")]
            for name, (options, _) in REFUSALS.items()]
    for (name, (_, words)), result in zip(REFUSALS.items(), run_table(argv, None, tmp_path / "batch")):
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2, (name, result.stderr)
        assert len(lines) == 1 and lines[0].startswith("climio: error: ") and words in lines[0], (name, lines)
        assert not (tmp_path / f"{name}.nc").exists()
    assert not leftovers(str(tmp_path))
