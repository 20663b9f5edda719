"""climio subset on meshes and layouts beyond the regular grid, checked independently of climio's code.

* UGRID connectivity stored either way round ((n_face, n_max) or transposed (n_max, n_face)), 0/1-based,
  int32/int64, odd or no _FillValue: synthetic meshes written here, FESOM's transposed mesh and the ne30
  cubed-sphere mesh with its data in a second file under another dimension name (real files);
* 1-D auxiliary latitude/longitude (ICON as CMIP6 stores it): equal to ``ncks -X``;
* layouts climio cannot cut by a box (Exodus, HEALPix, ragged arrays, two UGRID meshes): -b/-X refused by
  name in one line, -d and -v still work; on a GEOS cubed-sphere file and a SCRIP grid -d cuts as ncks does,
  and an ESMF mesh's elements are renumbered (their boxes: test_subset_curvilinear.py).

The mesh checks below rebuild what the output must be from the input file and the output's
``*_original_index`` variables alone: every connectivity entry maps back to the input's entry, every kept
face and edge is whole, the kept faces are exactly those whose centre is in the box, and the data are the
input's at the original indices.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import sys

from conftest import DATA, leftovers, one_error_line

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch, Preparers, Result, SubsetRuns  # noqa: E402

REAL = DATA / "real"
FESOM = REAL / "fesom.mesh.diag.nc"
NE30 = REAL / "outCSne30.ug"
NE30_DATA = REAL / "outCSne30_vortex.nc"
ICON = REAL / "tas_Amon_ICON-ESM-LR_historical_r1i1p1f1_gn_185001.nc"
TIMEOUT = 60


def read_all(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: np.asarray(v[...]) for name, v in ds.variables.items()}


def ok(result: subprocess.CompletedProcess[str] | Result) -> None:
    assert result.returncode == 0, result.stderr + result.stdout


def refused(result: subprocess.CompletedProcess[str] | Result, out: Path, *needles: str) -> None:
    """One line ``climio: error: ...`` with every needle, exit status 2, no traceback, no output."""
    assert one_error_line(result, *needles).startswith("climio: error:")  # type: ignore[arg-type]
    assert not out.exists() and not leftovers(str(out.parent))


# ---------------------------------------------------------------------------------------------------------------
# Every climio run of this file goes in one table per rank count (helpers/climio_batch.py: one launch each, every
# case captured as a process of its own, with a timeout of its own). Each test's ``prepare_*`` function makes its
# inputs in a directory of its own and adds its runs, each writing into a directory of its own; the test checks.
# ---------------------------------------------------------------------------------------------------------------

prepare = Preparers()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, meshes: dict[str, Path], points: Path, geos: Path) -> SubsetRuns:
    r = SubsetRuns(Batch(tmp_path_factory.mktemp("runs"), timeout=TIMEOUT))
    for fn in prepare:
        fn(r, meshes=meshes, points=points, geos=geos)
    return r


# ---------------------------------------------------------------------------------------------------------------
# An independent UGRID checker
# ---------------------------------------------------------------------------------------------------------------

def ugrid_layout(path: Path) -> dict:
    """Topology of a UGRID file as the convention reads (written for the tests, not taken from climio)."""
    with netCDF4.Dataset(path) as ds:
        topo = next(v for v in ds.variables.values() if getattr(v, "cf_role", "") == "mesh_topology")
        attrs = {k: topo.getncattr(k) for k in topo.ncattrs()}
        face_nodes = attrs["face_node_connectivity"]
        dim = {"face": attrs.get("face_dimension", ds[face_nodes].dimensions[0]),
               "node": attrs.get("node_dimension", ds[attrs["node_coordinates"].split()[0]].dimensions[0])}
        if "edge_node_connectivity" in attrs:
            dim["edge"] = attrs.get("edge_dimension", ds[attrs["edge_node_connectivity"]].dimensions[0])
        links = {}
        for key, name in attrs.items():
            parts = key.split("_")
            if len(parts) == 3 and parts[2] == "connectivity":
                var = ds[name]
                source = dim[parts[0]]
                links[name] = dict(source=source, target=dim[parts[1]], transposed=var.dimensions[1] == source,
                                   start=int(getattr(var, "start_index", 0)),
                                   fill=int(var._FillValue) if "_FillValue" in var.ncattrs() else None)
        node_coords = attrs["node_coordinates"].split()
        face_coords = attrs.get("face_coordinates", "").split()
        var_dims = {name: v.dimensions for name, v in ds.variables.items()}
    return dict(dim=dim, links=links, face_nodes=face_nodes, node_coords=node_coords, face_coords=face_coords,
                var_dims=var_dims, edge_nodes=attrs.get("edge_node_connectivity"),
                face_edges=attrs.get("face_edge_connectivity"))


def rows_of(values: np.ndarray, transposed: bool) -> np.ndarray:
    return values.T if transposed else values


def face_centres(data: dict[str, np.ndarray], lay: dict) -> tuple[np.ndarray, np.ndarray]:
    """Face centres in degrees: the face coordinates, else the normalised mean of the nodes' unit vectors."""
    names = lay["face_coords"]
    if names:
        lon = next(n for n in names if "lon" in n or "x" in n)
        lat = next(n for n in names if "lat" in n or "y" in n)
        return data[lat].astype(float), data[lon].astype(float)
    info = lay["links"][lay["face_nodes"]]
    rows = rows_of(data[lay["face_nodes"]], info["transposed"]).astype(np.int64)
    none = (rows < info["start"]) | ((rows == info["fill"]) if info["fill"] is not None else False)
    lon_name = next(n for n in lay["node_coords"] if "lon" in n.lower() or n.endswith("_x"))
    lat_name = next(n for n in lay["node_coords"] if "lat" in n.lower() or n.endswith("_y"))
    lat, lon = np.radians(data[lat_name].astype(float)), np.radians(data[lon_name].astype(float))
    index = np.where(none, 0, rows - info["start"])
    x, y, z = (np.where(none, 0.0, c[index]) for c in
               (np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)))
    sx, sy, sz = x.sum(axis=1), y.sum(axis=1), z.sum(axis=1)
    return np.degrees(np.arctan2(sz, np.hypot(sx, sy))), np.degrees(np.arctan2(sy, sx))


def in_box(lat: np.ndarray, lon: np.ndarray, north: float, south: float, east: float, west: float,
           margin: float = 1e-6) -> np.ndarray:
    """Centres in the box; asserts that none lies within ``margin`` of an edge (no rounding ties)."""
    width = (east - west) % 360 or 360
    east_of_west = np.mod(lon - west, 360)
    for distance in (lat - south, lat - north, east_of_west, east_of_west - width):
        assert not np.any(np.abs(distance) < margin), "a centre lies on the box edge: choose another box"
    return (lat >= south) & (lat <= north) & (east_of_west <= width)


def used(rows: np.ndarray, info: dict, which: np.ndarray) -> set[int]:
    chosen = rows[which].astype(np.int64).ravel()
    valid = chosen >= info["start"]
    if info["fill"] is not None:
        valid &= chosen != info["fill"]
    return set((chosen[valid] - info["start"]).tolist())


def check_ugrid(src: Path, out: Path, box: tuple[float, float, float, float] | None,
                extra: dict[Path, dict[str, str]] | None = None) -> dict[str, np.ndarray]:
    """Verify a UGRID subset against its input; ``box`` = (north, south, east, west); returns kept indices."""
    lay = ugrid_layout(src)
    din, dout = read_all(src), read_all(out)
    dims = lay["dim"]
    kept = {kind: dout[f"{d}_original_index"].astype(np.int64) for kind, d in dims.items()}
    for indices in kept.values():
        assert np.all(np.diff(indices) > 0), "kept elements keep their input order"
    nface = din[lay["face_nodes"]].shape[0 if not lay["links"][lay["face_nodes"]]["transposed"] else 1]
    faces = np.zeros(nface, dtype=bool)
    faces[kept["face"]] = True
    if box is not None:
        lat, lon = face_centres(din, lay)
        np.testing.assert_array_equal(np.flatnonzero(faces), np.flatnonzero(in_box(lat, lon, *box)))
    # closure: nodes of kept faces and of kept edges; edges of kept faces (face_edges, else edge_faces)
    fn = lay["links"][lay["face_nodes"]]
    nodes = used(rows_of(din[lay["face_nodes"]], fn["transposed"]), fn, faces)
    if "edge" in dims:
        if lay["face_edges"]:
            fe = lay["links"][lay["face_edges"]]
            edges = used(rows_of(din[lay["face_edges"]], fe["transposed"]), fe, faces)
        else:  # edges used by a kept face
            ef_name = next(n for n, i in lay["links"].items() if i["source"] == dims["edge"]
                           and i["target"] == dims["face"])
            ef = lay["links"][ef_name]
            rows = rows_of(din[ef_name], ef["transposed"]).astype(np.int64)
            valid = (rows >= ef["start"]) & ((rows != ef["fill"]) if ef["fill"] is not None else True)
            hit = np.where(valid, faces[np.where(valid, rows - ef["start"], 0)], False)
            edges = set(np.flatnonzero(hit.any(axis=1)).tolist())
        assert set(kept["edge"].tolist()) == edges
        en = lay["links"][lay["edge_nodes"]]
        edge_mask = np.zeros(din[lay["edge_nodes"]].shape[1 if en["transposed"] else 0], dtype=bool)
        edge_mask[kept["edge"]] = True
        nodes |= used(rows_of(din[lay["edge_nodes"]], en["transposed"]), en, edge_mask)
    assert set(kept["node"].tolist()) == nodes
    # every connectivity: same orientation, each entry = the input's entry renumbered (or none if removed)
    with netCDF4.Dataset(src) as ds:
        sizes = {d: len(ds.dimensions[d]) for d in dims.values()}
    new = {}
    for kind, d in dims.items():
        table = np.full(sizes[d], -1, dtype=np.int64)
        table[kept[kind]] = np.arange(kept[kind].size)
        new[d] = table
    for name, info in lay["links"].items():
        assert lay["var_dims"][name] == read_dims(out, name), name
        rin, rout = rows_of(din[name], info["transposed"]), rows_of(dout[name], info["transposed"])
        assert rout.dtype == rin.dtype, name
        src_kind = next(k for k, d in dims.items() if d == info["source"])
        expect = rin[kept[src_kind]].astype(np.int64)
        none_in = expect < info["start"]
        if info["fill"] is not None:
            none_in |= expect == info["fill"]
        out_fill = info["fill"] if info["fill"] is not None else read_fill(out, name)
        table = new[info["target"]]
        target = np.where(none_in, 0, expect - info["start"])
        assert np.all(target < table.size), f"{name}: the input points past '{info['target']}'"
        mapped = table[target]
        want = np.where(none_in | (mapped < 0), out_fill if out_fill is not None else -1, mapped + info["start"])
        np.testing.assert_array_equal(rout.astype(np.int64), want, err_msg=name)
    # whole faces and edges: no node entry of a kept face or edge was lost
    for name in filter(None, (lay["face_nodes"], lay["edge_nodes"])):
        info = lay["links"][name]
        src_kind = next(k for k, d in dims.items() if d == info["source"])
        before = rows_of(din[name], info["transposed"])[kept[src_kind]]
        after = rows_of(dout[name], info["transposed"])
        lost = (before != (info["fill"] if info["fill"] is not None else -1)) & (before >= info["start"])
        fill = info["fill"] if info["fill"] is not None else read_fill(out, name)
        assert not np.any(lost & (after == fill)), f"{name}: a kept element lost a node"
    # every other variable: cut along its element dimension(s), values unchanged
    where = {d: kept[k] for k, d in dims.items()}
    for path, alias in (extra or {}).items():
        with netCDF4.Dataset(path) as ds:
            for name, var in ds.variables.items():
                value = np.asarray(var[...].filled() if np.ma.isMaskedArray(var[...]) else var[...])
                for axis, d in enumerate(var.dimensions):
                    if d in alias:
                        value = np.take(value, kept[alias[d]], axis=axis)
                np.testing.assert_array_equal(dout[name], value, err_msg=name)
    for name, value in din.items():
        if name in lay["links"]:
            continue
        for axis, d in enumerate(lay["var_dims"][name]):
            if d in where:
                value = np.take(value, where[d], axis=axis)
        np.testing.assert_array_equal(dout[name], value, err_msg=name)
    return kept


def read_dims(path: Path, name: str) -> tuple[str, ...]:
    with netCDF4.Dataset(path) as ds:
        return ds[name].dimensions


def read_fill(path: Path, name: str) -> int | None:
    with netCDF4.Dataset(path) as ds:
        return int(ds[name]._FillValue) if "_FillValue" in ds[name].ncattrs() else None


def same_data(a: Path, b: Path) -> None:
    """Two outputs hold the same dimensions, variables, types and bytes of data."""
    with netCDF4.Dataset(a) as x, netCDF4.Dataset(b) as y:
        assert {k: len(v) for k, v in x.dimensions.items()} == {k: len(v) for k, v in y.dimensions.items()}
        assert sorted(x.variables) == sorted(y.variables)
    da, db = read_all(a), read_all(b)
    for name in da:
        assert da[name].dtype == db[name].dtype and da[name].tobytes() == db[name].tobytes(), name


# ---------------------------------------------------------------------------------------------------------------
# Synthetic UGRID meshes: quads and triangles on a band of the sphere, wrapping in longitude
# ---------------------------------------------------------------------------------------------------------------

def build_mesh(nlon: int, nlat: int, nsplit: int) -> dict[str, np.ndarray]:
    """Nodes on a lon/lat lattice; quads between them, the first ``nsplit`` cut into two triangles."""
    lons = np.arange(nlon) * 360.0 / nlon
    lats = np.linspace(-60.0, 60.0, nlat)
    node_lon, node_lat = np.tile(lons, nlat), np.repeat(lats, nlon)
    faces: list[list[int]] = []
    split = 0
    for j in range(nlat - 1):
        for k in range(nlon):
            a, b = j * nlon + k, j * nlon + (k + 1) % nlon
            c, d = b + nlon, a + nlon
            if split < nsplit:
                faces += [[a, b, c], [a, c, d]]
                split += 1
            else:
                faces.append([a, b, c, d])
    edge_id: dict[tuple[int, int], int] = {}
    face_edges = []
    for f in faces:
        ids = []
        for p, q in zip(f, f[1:] + f[:1]):
            ids.append(edge_id.setdefault((min(p, q), max(p, q)), len(edge_id)))
        face_edges.append(ids)
    edge_faces: list[list[int]] = [[] for _ in edge_id]
    for fi, ids in enumerate(face_edges):
        for e in ids:
            edge_faces[e].append(fi)
    face_faces = [[g for e in ids for g in edge_faces[e] if g != fi] for fi, ids in enumerate(face_edges)]

    def pad(rows: list[list[int]], width: int) -> np.ndarray:
        return np.array([r + [-1] * (width - len(r)) for r in rows], dtype=np.int64)

    return dict(node_lon=node_lon, node_lat=node_lat, face_nodes=pad(faces, 4), face_edges=pad(face_edges, 4),
                face_faces=pad(face_faces, 4), edge_nodes=np.array(sorted(edge_id, key=edge_id.get)),
                edge_faces=pad(edge_faces, 2))


def write_ugrid(path: Path, transposed: bool, start: int, dtype: str, fill: int | None, face_coords: bool,
                nlon: int = 12, nlat: int = 5, nsplit: int = 5, face_edges: bool = True) -> Path:
    m = build_mesh(nlon, nlat, nsplit)
    nface, nnode, nedge = len(m["face_nodes"]), len(m["node_lon"]), len(m["edge_nodes"])
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        for name, size in (("time", None), ("n_node", nnode), ("n_face", nface), ("n_edge", nedge),
                           ("n_max", 4), ("two", 2), ("layer", 3)):
            ds.createDimension(name, size)
        topo = ds.createVariable("mesh", "i4")
        topo.setncatts(dict(cf_role="mesh_topology", topology_dimension=2, node_coordinates="node_lon node_lat",
                            face_node_connectivity="face_nodes", face_edge_connectivity="face_edges",
                            face_face_connectivity="face_faces", edge_node_connectivity="edge_nodes",
                            edge_face_connectivity="edge_faces", face_dimension="n_face", edge_dimension="n_edge"))
        if not face_edges:
            topo.delncattr("face_edge_connectivity")
        for name, dims, value in (("face_nodes", ("n_face", "n_max"), m["face_nodes"]),
                                  ("face_edges", ("n_face", "n_max"), m["face_edges"]),
                                  ("face_faces", ("n_face", "n_max"), m["face_faces"]),
                                  ("edge_nodes", ("n_edge", "two"), m["edge_nodes"]),
                                  ("edge_faces", ("n_edge", "two"), m["edge_faces"])):
            if name == "face_edges" and not face_edges:
                continue
            value = np.where(value < 0, fill if fill is not None else -1, value + start)
            if fill is None:
                assert name in ("face_faces", "edge_faces") or not np.any(value < 0), "no fill: no short rows"
            if transposed:
                dims, value = dims[::-1], value.T
            var = ds.createVariable(name, dtype, dims, fill_value=fill if fill is not None else False)
            var.start_index = np.array(start, dtype=dtype)
            var[:] = value
        for name, value, units in (("node_lon", m["node_lon"], "degrees_east"),
                                   ("node_lat", m["node_lat"], "degrees_north")):
            ds.createVariable(name, "f8", ("n_node",))[:] = value
            ds[name].units = units
        if face_coords:
            lay_data = {"node_lon": m["node_lon"], "node_lat": m["node_lat"],
                        "face_nodes": np.where(m["face_nodes"] < 0, -1, m["face_nodes"])}
            lay = {"face_coords": [], "face_nodes": "face_nodes", "node_coords": ["node_lon", "node_lat"],
                   "links": {"face_nodes": dict(transposed=False, start=0, fill=-1)}}
            lat, lon = face_centres(lay_data, lay)
            ds.createVariable("face_lon", "f8", ("n_face",))[:] = lon
            ds.createVariable("face_lat", "f8", ("n_face",))[:] = lat
            ds["face_lon"].units, ds["face_lat"].units = "degrees_east", "degrees_north"
            topo.face_coordinates = "face_lon face_lat"
        rng = np.random.default_rng(7)
        ds.createVariable("time", "f8", ("time",))[:] = [0.0, 1.0]
        temp = ds.createVariable("temp", "f4", ("time", "n_face"))
        temp[:] = rng.normal(size=(2, nface)).astype("f4")
        temp.mesh, temp.location = "mesh", "face"
        ds.createVariable("depth", "f4", ("n_node",))[:] = rng.normal(size=nnode)
        flux_dims = ("layer", "n_edge") if transposed else ("n_edge", "layer")
        ds.createVariable("flux", "f8", flux_dims)[:] = rng.normal(size=[3 if d == "layer" else nedge
                                                                         for d in flux_dims])
    return path


UGRID_VARIANTS = {
    "rows-0based-int32": dict(transposed=False, start=0, dtype="i4", fill=-1, face_coords=True),
    "transposed-1based-int64-fill999": dict(transposed=True, start=1, dtype="i8", fill=999, face_coords=False),
    "rows-1based-int64-fill-7-no-face-edges": dict(transposed=False, start=1, dtype="i8", fill=-7, face_coords=False,
                                                   face_edges=False),
    "transposed-0based-int32-nofill": dict(transposed=True, start=0, dtype="i4", fill=None, face_coords=True),
}


@pytest.fixture(scope="module")
def meshes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("ugrid")
    paths = {}
    for name, kw in UGRID_VARIANTS.items():
        nsplit = 0 if kw["fill"] is None else 5
        paths[name] = write_ugrid(tmp / f"{name}.nc", nsplit=nsplit, **kw)
    return paths


SYNTHETIC_BOX = ("40,-20,100,-20", (40.0, -20.0, 100.0, -20.0))  # -b N,S,E,W


VARIANT_RANKS = {"rows-0based-int32": (1,), "transposed-1based-int64-fill999": (1, 3),
                 "rows-1based-int64-fill-7-no-face-edges": (2,), "transposed-0based-int32-nofill": (3,)}


@prepare
def prepare_synthetic_ugrid(r: SubsetRuns, meshes: dict[str, Path], **_: Path) -> None:
    for variant in UGRID_VARIANTS:
        for nranks in VARIANT_RANKS[variant]:
            r.subset(f"{variant}-{nranks}", "-b", SYNTHETIC_BOX[0], meshes[variant],
                     nranks=nranks if nranks > 1 else None, out=f"out{nranks}.nc")


@pytest.mark.parametrize("variant", list(UGRID_VARIANTS))
def test_synthetic_ugrid_either_orientation(meshes: dict[str, Path], runs: SubsetRuns, variant: str) -> None:
    src = meshes[variant]
    outs = []
    for nranks in VARIANT_RANKS[variant]:
        outs.append(runs.out(f"{variant}-{nranks}", f"out{nranks}.nc"))
        ok(runs.result(f"{variant}-{nranks}"))  # subset -b BOX src out (plainly for 1 rank)
        kept = check_ugrid(src, outs[-1], SYNTHETIC_BOX[1])
        assert 0 < kept["face"].size < read_all(src)["temp"].shape[1]
    if len(outs) == 2:
        same_data(*outs)
    with netCDF4.Dataset(outs[0]) as ds:  # the input's orientation, start index and fill value are kept
        kw = UGRID_VARIANTS[variant]
        assert ds["face_nodes"].dimensions == (("n_max", "n_face") if kw["transposed"] else ("n_face", "n_max"))
        assert ds["face_nodes"].dtype == np.dtype(kw["dtype"]) and int(ds["face_nodes"].start_index) == kw["start"]


@prepare
def prepare_synthetic_ugrid_index_range(r: SubsetRuns, meshes: dict[str, Path], **_: Path) -> None:
    r.subset("index-range", "-d", "n_face,3,20", meshes["transposed-1based-int64-fill999"], nranks=2)


def test_synthetic_ugrid_index_range(meshes: dict[str, Path], runs: SubsetRuns) -> None:
    src = meshes["transposed-1based-int64-fill999"]
    out = runs.out("index-range")
    ok(runs.result("index-range"))  # subset -d n_face,3,20 src out at 2 ranks
    kept = check_ugrid(src, out, None)
    np.testing.assert_array_equal(kept["face"], np.arange(3, 21))


@prepare
def prepare_ambiguous_dimension(r: SubsetRuns, **_: Path) -> None:
    tmp_path = r.folder("ambiguous")
    mesh = write_ugrid(tmp_path / "mesh.nc", transposed=False, start=0, dtype="i4", fill=-1, face_coords=True,
                       nlon=12, nlat=4, nsplit=12)
    data = tmp_path / "data.nc"
    with netCDF4.Dataset(data, "w") as ds:
        ds.createDimension("ncol", 48)
        ds.createVariable("psi", "f8", ("ncol",))[:] = np.arange(48.0)
    r.subset("ambiguous", "-b", SYNTHETIC_BOX[0], mesh, data, nranks=2)


def test_data_file_on_mesh_ambiguous_dimension_is_refused(runs: SubsetRuns) -> None:
    """12 x 4 nodes = 48, 36 quads with 12 split = 48 faces: a 48-element data dimension could be either."""
    refused(runs.result("ambiguous"), runs.out("ambiguous"),  # subset -b BOX mesh data out at 2 ranks
            "'ncol'", "n_face", "n_node", "ncrename")


@prepare
def prepare_connectivity_past(r: SubsetRuns, **_: Path) -> None:
    src = write_ugrid(r.folder("past") / "corrupt.nc", transposed=True, start=1, dtype="i8", fill=999,
                      face_coords=True)
    with netCDF4.Dataset(src, "a") as ds:
        ds["face_nodes"][0, :] = 500  # the first node of every face: past n_node (60)
    r.subset("past", "-b", SYNTHETIC_BOX[0], src, nranks=2)


def test_connectivity_past_its_dimension_is_refused(runs: SubsetRuns) -> None:
    refused(runs.result("past"), runs.out("past"),  # subset -b BOX corrupt.nc out at 2 ranks
            "face_nodes", "beyond dimension 'n_node'", "start_index 1")


@prepare
def prepare_corrupt_link(r: SubsetRuns, **_: Path) -> None:
    src = write_ugrid(r.folder("corrupt-link") / "corrupt.nc", transposed=False, start=0, dtype="i4", fill=-1,
                      face_coords=True)
    with netCDF4.Dataset(src, "a") as ds:
        ds["face_faces"][:, 0] = 10_000
    r.subset("corrupt-link", "-b", SYNTHETIC_BOX[0], src, nranks=3)


def test_corrupt_link_read_only_for_the_output_is_refused_once(runs: SubsetRuns) -> None:
    """face_faces is not read while selecting, only renumbered on output: still one line from all ranks."""
    refused(runs.result("corrupt-link"), runs.out("corrupt-link"),  # subset -b BOX corrupt.nc out at 3 ranks
            "face_faces", "beyond dimension 'n_face'")


# ---------------------------------------------------------------------------------------------------------------
# Real meshes
# ---------------------------------------------------------------------------------------------------------------

FESOM_BOX = ("20,-20,160,90", (20.0, -20.0, 160.0, 90.0))


@prepare
def prepare_fesom(r: SubsetRuns, **_: Path) -> None:
    for name, nranks in (("one.nc", None), ("three.nc", 3)):
        r.subset(f"fesom-{name}", "-b", FESOM_BOX[0], FESOM, nranks=nranks, out=name)


def test_fesom_transposed_mesh(runs: SubsetRuns) -> None:
    """FESOM stores its connectivity (n3, elem) and has no face centres: centroids of the nodes."""
    outs = [runs.out("fesom-one.nc", "one.nc"), runs.out("fesom-three.nc", "three.nc")]
    for out, nranks in zip(outs, (None, 3)):
        ok(runs.result(f"fesom-{out.name}"))  # subset -b BOX FESOM out, plainly and at 3 ranks
        kept = check_ugrid(FESOM, out, FESOM_BOX[1])
        assert kept["face"].size > 100
    with netCDF4.Dataset(outs[0]) as ds:
        assert ds["face_nodes"].dimensions == ("n3", "elem") and int(ds["face_nodes"].start_index) == 1
        assert ds["gradient_sca_x"].dimensions == ("n3", "elem")
    same_data(*outs)


NE30_BOX = ("20,-20,160,90", (20.0, -20.0, 160.0, 90.0))


@prepare
def prepare_ne30(r: SubsetRuns, **_: Path) -> None:
    r.subset("ne30", "-b", NE30_BOX[0], NE30, NE30_DATA, nranks=2)
    r.subset("ne30-psi", "-v", "psi", "-b", NE30_BOX[0], NE30_DATA, NE30, nranks=3, out="psi.nc")


def test_ne30_data_in_second_file_is_cut_with_the_mesh(runs: SubsetRuns) -> None:
    out = runs.out("ne30")
    result = runs.result("ne30")  # subset -b BOX NE30 NE30_DATA out at 2 ranks
    ok(result)
    assert "ncol matched to nMesh2_face by size" in result.stdout
    check_ugrid(NE30, out, NE30_BOX[1], extra={NE30_DATA: {"ncol": "face"}})
    with netCDF4.Dataset(out) as ds:
        assert ds["psi"].dimensions == ("ncol",) and len(ds.dimensions["ncol"]) == len(ds.dimensions["nMesh2_face"])
    # the data file first, and only psi: still cut along the mesh's faces, and the mesh comes along with it
    single = runs.out("ne30-psi", "psi.nc")
    ok(runs.result("ne30-psi"))  # subset -v psi -b BOX NE30_DATA NE30 psi.nc at 3 ranks
    check_ugrid(NE30, single, NE30_BOX[1], extra={NE30_DATA: {"ncol": "face"}})
    got = read_all(single)
    np.testing.assert_array_equal(got["psi"], read_all(NE30_DATA)["psi"][got["ncol_original_index"]])
    np.testing.assert_array_equal(got["ncol_original_index"], read_all(out)["nMesh2_face_original_index"])


# ---------------------------------------------------------------------------------------------------------------
# 1-D auxiliary coordinates: ncks -X
# ---------------------------------------------------------------------------------------------------------------

def ncks_box(tmp: Path, box: str, src: Path) -> dict[str, np.ndarray]:
    out = tmp / "ncks.nc"
    subprocess.run(["ncks", "-O", "-X", box, str(src), str(out)], check=True, capture_output=True)
    return read_all(out)


def equal_files(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype, name
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


ICON_BOX = "350.,5.,-2.,2."  # across the file's 0/360 seam: 28 cells


@prepare
def prepare_icon(r: SubsetRuns, **_: Path) -> None:
    for nranks in (None, 3):
        r.subset(f"icon-{nranks}", "-X", ICON_BOX, ICON, nranks=nranks)


@pytest.mark.parametrize("nranks", (None, 3))
def test_icon_points_equal_ncks(tmp_path: Path, runs: SubsetRuns, nranks: int | None) -> None:
    box = ICON_BOX
    out = runs.out(f"icon-{nranks}")
    ok(runs.result(f"icon-{nranks}"))  # subset -X BOX ICON out
    want = ncks_box(tmp_path, box, ICON)
    assert want["tas"].shape == (1, 28)
    equal_files(read_all(out), want)


@pytest.fixture(scope="module")
def points(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ICON-like file: tas(time, ncells) with 1-D lat/lon in [-180, 180) and vertex bounds."""
    path = tmp_path_factory.mktemp("points") / "points.nc"
    rng = np.random.default_rng(3)
    n = 500
    lat, lon = rng.uniform(-80, 80, n).round(3), rng.uniform(-180, 180, n).round(3)
    lat[:3], lon[:3] = [10.0, -10.0, 0.0], [170.0, -170.0, 180.0]  # on the box's edges: inclusive
    with netCDF4.Dataset(path, "w", format="NETCDF4_CLASSIC") as ds:
        ds.createDimension("time", None)
        ds.createDimension("ncells", n)
        ds.createDimension("nv", 3)
        ds.createVariable("time", "f8", ("time",))[:] = [0.0, 31.0]
        for name, value, std in (("clat", lat, "latitude"), ("clon", lon, "longitude")):
            var = ds.createVariable(name, "f8", ("ncells",))
            var[:] = value
            var.standard_name, var.units = std, f"degrees_{'north' if std == 'latitude' else 'east'}"
            var.bounds = f"{name}_bnds"
            ds.createVariable(f"{name}_bnds", "f8", ("ncells", "nv"))[:] = value[:, None] + [-0.5, 0.0, 0.5]
        tas = ds.createVariable("tas", "f4", ("time", "ncells"), fill_value=np.float32(1e20))
        tas[:] = rng.normal(280, 10, (2, n)).astype("f4")
        tas.coordinates = "clat clon"
    return path


@prepare
def prepare_points(r: SubsetRuns, points: Path, **_: Path) -> None:
    r.subset("points", "-X", "-20.,20.,-10.,10.", points, nranks=2)
    # the second run replaces an existing output (-O)
    (r.batch.folder("points-dateline") / "out.nc").write_bytes(b"an older output, replaced with -O\n")
    r.subset("points-dateline", "-O", "-X", "170.,-170.,-10.,10.", points, nranks=2)


def test_points_edges_and_dateline(points: Path, runs: SubsetRuns, tmp_path: Path) -> None:
    """Edges are inclusive; a box across the file's -180/180 seam keeps the cells on both sides in input order.

    ncks -X 170.,-170.,... on longitudes in [-180, 180) keeps every cell (NCO wraps boxes across the origin
    of the longitude coordinate only), so that box is compared with ncks's two-box multislab, as a set."""
    out = runs.out("points")
    ok(runs.result("points"))  # subset -X -20.,20.,-10.,10. points out at 2 ranks
    equal_files(read_all(out), ncks_box(tmp_path, "-20.,20.,-10.,10.", points))
    out = runs.out("points-dateline")
    ok(runs.result("points-dateline"))  # subset -O -X 170.,-170.,-10.,10. points out at 2 ranks (out existed)
    got, src = read_all(out), read_all(points)
    lat, lon = src["clat"], src["clon"]
    keep = np.flatnonzero((lat >= -10) & (lat <= 10) & ((lon >= 170) | (lon <= -170)))
    assert {0, 1, 2} <= set(keep.tolist()) and 5 < keep.size < 50
    np.testing.assert_array_equal(got["clon"], lon[keep])
    np.testing.assert_array_equal(got["tas"], src["tas"][:, keep])
    np.testing.assert_array_equal(got["clat_bnds"], src["clat_bnds"][keep])
    multislab = tmp_path / "ncks2.nc"
    subprocess.run(["ncks", "-O", "-X", "170.,180.,-10.,10.", "-X", "-180.,-170.,-10.,10.", str(points),
                    str(multislab)], check=True, capture_output=True)
    want = read_all(multislab)
    assert sorted(zip(want["clon"], want["clat"])) == sorted(zip(got["clon"], got["clat"]))


# ---------------------------------------------------------------------------------------------------------------
# Layouts climio cannot cut by a box: refused by name; -d and -v still work
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def geos() -> Path:
    """A GEOS cubed-sphere native file: nf=6 faces of Ydim x Xdim, 3-D lons/lats, fake 1-D Xdim/Ydim."""
    return DATA / "synthetic" / "geos_c12.nc4"


GEOS_CUT = ("-d", "nf,1,2", "-d", "Xdim,2,5", "-d", "Ydim,3,9,2")


@prepare
def prepare_geos(r: SubsetRuns, geos: Path, **_: Path) -> None:
    r.subset("geos-cut", *GEOS_CUT, geos, nranks=2)


def test_geos_cubed_sphere_index_cut_equals_ncks(geos: Path, runs: SubsetRuns, tmp_path: Path) -> None:
    args = GEOS_CUT
    out = runs.out("geos-cut")
    ok(runs.result("geos-cut"))  # subset ARGS geos out at 2 ranks
    want = tmp_path / "ncks.nc"
    subprocess.run(["ncks", "-O", *args, str(geos), str(want)], check=True, capture_output=True)
    equal_files(read_all(out), read_all(want))


def write_layout(path: Path, kind: str) -> Path:
    if kind == "ugrid-two-meshes":  # a 2-D mesh and a 1-D network sharing its nodes
        write_ugrid(path, transposed=False, start=0, dtype="i4", fill=-1, face_coords=True)
        with netCDF4.Dataset(path, "a") as ds:
            net = ds.createVariable("network", "i4")
            net.setncatts(dict(cf_role="mesh_topology", topology_dimension=1, node_coordinates="node_lon node_lat",
                               edge_node_connectivity="edge_nodes"))
        return path
    with netCDF4.Dataset(path, "w") as ds:
        if kind == "scrip":
            ds.createDimension("grid_size", 8)
            ds.createDimension("grid_corners", 4)
            ds.createDimension("grid_rank", 2)
            ds.createVariable("grid_dims", "i4", ("grid_rank",))[:] = [4, 2]
            for name in ("grid_center_lat", "grid_center_lon"):
                var = ds.createVariable(name, "f8", ("grid_size",))
                var[:] = np.arange(8.0) * 10
                var.units = "degrees"
            for name in ("grid_corner_lat", "grid_corner_lon"):
                ds.createVariable(name, "f8", ("grid_size", "grid_corners"))[:] = np.zeros((8, 4))
            ds.createVariable("grid_imask", "i4", ("grid_size",))[:] = np.ones(8)
        elif kind == "esmf":
            for name, size in (("nodeCount", 4), ("elementCount", 2), ("maxNodePElement", 3), ("coordDim", 2)):
                ds.createDimension(name, size)
            ds.createVariable("nodeCoords", "f8", ("nodeCount", "coordDim"))[:] = [[0, 0], [1, 0], [1, 1], [0, 1]]
            ds["nodeCoords"].units = "degrees"
            conn = ds.createVariable("elementConn", "i4", ("elementCount", "maxNodePElement"))
            conn[:] = [[1, 2, 3], [1, 3, 4]]
            ds.createVariable("numElementConn", "i1", ("elementCount",))[:] = [3, 3]
            ds.createVariable("centerCoords", "f8", ("elementCount", "coordDim"))[:] = [[0.7, 0.3], [0.3, 0.7]]
        elif kind == "exodus":
            for name, size in (("num_nodes", 4), ("num_elem", 2), ("num_el_in_blk1", 2), ("num_nod_per_el1", 3)):
                ds.createDimension(name, size)
            ds.createVariable("coordx", "f8", ("num_nodes",))[:] = [0, 1, 1, 0]
            ds.createVariable("coordy", "f8", ("num_nodes",))[:] = [0, 0, 1, 1]
            ds.createVariable("connect1", "i4", ("num_el_in_blk1", "num_nod_per_el1"))[:] = [[1, 2, 3], [1, 3, 4]]
        elif kind == "healpix":
            ds.createDimension("cell", 12)
            crs = ds.createVariable("crs", "i4")
            crs.grid_mapping_name, crs.refinement_level, crs.indexing_scheme = "healpix", 0, "nested"
            ds.createVariable("cell", "i8", ("cell",))[:] = np.arange(12)
            var = ds.createVariable("tas", "f4", ("cell",))
            var[:] = np.arange(12)
            var.grid_mapping = "crs"
        elif kind == "dsg":  # contiguous ragged array of two stations' time series
            ds.featureType = "timeSeries"
            ds.createDimension("station", 2)
            ds.createDimension("obs", 5)
            size = ds.createVariable("row_size", "i4", ("station",))
            size[:] = [3, 2]
            size.sample_dimension = "obs"
            for name, value, std in (("lat", [10.0, 50.0], "latitude"), ("lon", [5.0, 60.0], "longitude")):
                ds.createVariable(name, "f8", ("station",))[:] = value
                ds[name].standard_name = std
            ds.createVariable("tas", "f4", ("obs",))[:] = np.arange(5)
    return path


LAYOUTS = [("exodus", "Exodus II mesh", "-v"), ("healpix", "HEALPix grid", "-d"),
           ("dsg", "ragged-array discrete sampling geometry", "-v"),
           ("ugrid-two-meshes", "2 UGRID meshes ('mesh', 'network')", "split the file")]


@prepare
def prepare_esmf_and_scrip(r: SubsetRuns, **_: Path) -> None:
    esmf, scrip = (write_layout(r.folder(kind) / f"{kind}.nc", kind) for kind in ("esmf", "scrip"))
    r.subset("esmf-cells", "-d", "elementCount,1", esmf, nranks=2)
    r.subset("esmf-nodes", "-d", "nodeCount,0,1", esmf)
    r.subset("scrip-cut", "-d", "grid_size,2,5", scrip, nranks=2)
    r.subset("scrip-box", "-X", "0,35,0,45", scrip)


def test_esmf_elements_are_cut_and_nodes_renumbered(runs: SubsetRuns) -> None:
    """-d on the elements keeps their nodes and renumbers elementConn (1-based by default); -d on the nodes
    would leave elements without them, and is refused."""
    ok(runs.result("esmf-cells"))  # subset -d elementCount,1 esmf.nc out at 2 ranks
    got = read_all(runs.out("esmf-cells"))
    np.testing.assert_array_equal(got["elementConn"], [[1, 2, 3]])  # nodes 1, 3, 4 of the input, now 1, 2, 3
    np.testing.assert_array_equal(got["nodeCoords"], [[0, 0], [1, 1], [0, 1]])
    np.testing.assert_array_equal(got["centerCoords"], [[0.3, 0.7]])
    refused(runs.result("esmf-nodes"), runs.out("esmf-nodes"), "-d nodeCount,0,1",
            "on a esmf mesh select cells ('elementCount')")


def test_scrip_index_cut_and_box(runs: SubsetRuns) -> None:
    """A 4 x 2 SCRIP grid (grid_rank 2) whose cell k is centred at k * 10 degrees north and east: -d cuts
    grid_size as ncks does (grid_dims as it was); a box keeps the rectangle of the cells centred in it, here
    cells 0-3, the first row (cell 4, at 40 E, is east of it), and grid_dims says 4 x 1."""
    ok(runs.result("scrip-cut"))  # subset -d grid_size,2,5 scrip.nc out at 2 ranks
    got = read_all(runs.out("scrip-cut"))
    np.testing.assert_array_equal(got["grid_center_lat"], np.arange(2.0, 6.0) * 10)
    np.testing.assert_array_equal(got["grid_dims"], [4, 2])
    ok(runs.result("scrip-box"))  # subset -X 0,35,0,45 scrip.nc out
    got = read_all(runs.out("scrip-box"))
    np.testing.assert_array_equal(got["grid_center_lat"], np.arange(4.0) * 10)
    np.testing.assert_array_equal(got["grid_dims"], [4, 1])


@prepare
def prepare_other_layouts(r: SubsetRuns, **_: Path) -> None:
    for kind, _, _ in LAYOUTS:
        src = write_layout(r.folder(kind) / f"{kind}.nc", kind)
        r.subset(f"{kind}-box", "-X", "0,90,0,45", src)
        if kind == "ugrid-two-meshes":
            r.subset(f"{kind}-cut", "-d", "n_face,0,5", src)
            r.subset(f"{kind}-v", "-v", "depth", src)


@pytest.mark.parametrize("kind,what,advice", LAYOUTS, ids=[k for k, _, _ in LAYOUTS])
def test_other_layouts_refuse_boxes(runs: SubsetRuns, kind: str, what: str, advice: str) -> None:
    src = runs.folder(kind) / f"{kind}.nc"
    refused(runs.result(f"{kind}-box"), runs.out(f"{kind}-box"),  # subset -X 0,90,0,45 src out, plainly
            str(src), what, "-b/-X is not supported", advice)
    if kind == "ugrid-two-meshes":  # no renumbering: -d on a mesh dimension is refused, -v works
        refused(runs.result(f"{kind}-cut"), runs.out(f"{kind}-cut"), "-d n_face,0,5", "cut another")
        ok(runs.result(f"{kind}-v"))  # subset -v depth src out, plainly
        np.testing.assert_array_equal(read_all(runs.out(f"{kind}-v"))["depth"], read_all(src)["depth"])
