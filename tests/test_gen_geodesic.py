"""``climio gen geodesic``: a well-formed icosahedral grid in Morton-ordered panels, the same file at any rank count."""

from __future__ import annotations

import functools
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path

import sys

import netCDF4
import numpy as np
import pytest
from conftest import leftovers

from climio.core.decomp import block_range
from climio.gen import geodesic

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch, Result  # noqa: E402

LEVELS = [0, 1, 2, 3]
FILE_LEVEL, FILE_LAYERS, FILE_TIMES = 2, 3, 2


@dataclass(frozen=True)
class Full:
    """Every topology and geometry array of one level, computed in one piece."""

    grid: geodesic.Grid
    neighbors: np.ndarray
    corners: np.ndarray
    edges: np.ndarray
    edge_cells: np.ndarray
    edge_corners: np.ndarray
    centres: np.ndarray
    corner_points: np.ndarray
    edge_points: np.ndarray
    normals: np.ndarray

    def distinct(self, table: np.ndarray) -> list[np.ndarray]:
        """Each cell's list without a pentagon's repeated 6th entry."""
        return [row[:5] if row[5] == row[4] else row for row in table]


@functools.cache
def full(level: int) -> Full:
    grid = geodesic.Grid(level)
    return Full(grid, *grid.cell_topology(0, grid.cells), *grid.edge_topology(0, grid.edges),
                grid.cell_points(0, grid.cells), grid.corner_points(0, grid.corners),
                *grid.edge_geometry(0, grid.edges))


def counts(values: np.ndarray, length: int) -> np.ndarray:
    return np.bincount(values, minlength=length)


def corner_cells(g: Full) -> np.ndarray:
    """(corners, 3): the cells whose lists hold each corner (three each, as tested below)."""
    lists = g.distinct(g.corners)
    owners = np.repeat(np.arange(g.grid.cells), [len(row) for row in lists])
    return owners[np.argsort(np.concatenate(lists), kind="stable")].reshape(-1, 3)


# -- topology -----------------------------------------------------------------------------

@pytest.mark.parametrize("level", LEVELS)
def test_counts_and_euler_characteristic(level: int) -> None:
    g = full(level)
    n_cells = 10 * 4**level + 2
    assert (g.grid.cells, g.grid.corners, g.grid.edges) == (n_cells, 2 * (n_cells - 2), 3 * (n_cells - 2))
    assert g.neighbors.shape == g.corners.shape == g.edges.shape == (n_cells, 6)
    assert g.edge_cells.shape == g.edge_corners.shape == (g.grid.edges, 2)
    assert g.grid.cells - g.grid.edges + g.grid.corners == 2


@pytest.mark.parametrize("level", LEVELS)
def test_twelve_pentagons_at_the_icosahedron_vertices(level: int) -> None:
    g = full(level)
    pentagon = g.neighbors[:, 5] == g.neighbors[:, 4]
    assert pentagon.sum() == 12
    assert np.array_equal(pentagon, g.edges[:, 5] == g.edges[:, 4])
    assert np.array_equal(pentagon, g.corners[:, 5] == g.corners[:, 4])
    n = 2**level
    assert sorted(np.flatnonzero(pentagon)) == [p * n * n for p in range(10)] + [g.grid.cells - 2, g.grid.cells - 1]
    for table in (g.neighbors, g.corners, g.edges):
        sizes = [len(set(row)) for row in table]
        assert all(s == (5 if p else 6) for s, p in zip(sizes, pentagon))
    lat, lon = geodesic.lat_lon(g.centres[pentagon])
    assert lat[-2:].tolist() == [math.pi / 2, -math.pi / 2]  # the poles exactly
    ring = lat[:-2]
    assert np.allclose(np.abs(ring), math.atan(0.5), atol=1e-14)
    steps = lon[:-2] / (math.pi / 5)  # upper ring at even multiples of 36 degrees, lower ring at odd ones
    assert np.allclose(steps, np.round(steps), atol=1e-12)
    assert np.array_equal(np.round(steps).astype(int) % 2 == 0, ring > 0)


@pytest.mark.parametrize("level", LEVELS)
def test_indices_in_range(level: int) -> None:
    g = full(level)
    for table, length in ((g.neighbors, g.grid.cells), (g.corners, g.grid.corners), (g.edges, g.grid.edges),
                          (g.edge_cells, g.grid.cells), (g.edge_corners, g.grid.corners)):
        assert table.min() >= 0 and table.max() < length
    assert not np.any(g.neighbors == np.arange(g.grid.cells)[:, None])
    assert np.all(g.edge_cells[:, 0] != g.edge_cells[:, 1]) and np.all(g.edge_corners[:, 0] != g.edge_corners[:, 1])


@pytest.mark.parametrize("level", LEVELS)
def test_neighbours_are_symmetric(level: int) -> None:
    g = full(level)
    pairs = {(int(a), int(b)) for a, row in enumerate(g.neighbors) for b in row}
    assert all((b, a) in pairs for a, b in pairs)


@pytest.mark.parametrize("level", LEVELS)
def test_every_corner_in_three_cells_and_every_edge_in_two(level: int) -> None:
    g = full(level)
    corner_lists, edge_lists = g.distinct(g.corners), g.distinct(g.edges)
    assert np.all(counts(np.concatenate(corner_lists), g.grid.corners) == 3)
    assert np.all(counts(np.concatenate(edge_lists), g.grid.edges) == 2)
    holders: dict[int, set[int]] = {}
    for cell, row in enumerate(edge_lists):
        for edge in row:
            holders.setdefault(int(edge), set()).add(cell)
    assert all(holders[e] == set(g.edge_cells[e].tolist()) for e in range(g.grid.edges))


@pytest.mark.parametrize("level", LEVELS)
def test_lists_go_round_each_cell_consistently(level: int) -> None:
    g = full(level)
    for cell, (nbrs, corners, edges) in enumerate(zip(*map(g.distinct, (g.neighbors, g.corners, g.edges)))):
        k = len(nbrs)
        for m in range(k):
            # edge m joins the cell and neighbour m; corner m is shared by edges m and m+1, so by neighbours m, m+1
            assert set(g.edge_cells[edges[m]].tolist()) == {cell, nbrs[m]}
            assert corners[m] in g.edge_corners[edges[m]] and corners[m] in g.edge_corners[edges[(m + 1) % k]]
            assert corners[m] in g.corners[nbrs[m]] and corners[m] in g.corners[nbrs[(m + 1) % k]]
            # counter-clockwise seen from outside: a positive triple product
            assert np.linalg.det(g.centres[[cell, nbrs[m], nbrs[(m + 1) % k]]]) > 0


@pytest.mark.parametrize("level", LEVELS)
def test_edge_corners_are_corners_of_both_edge_cells(level: int) -> None:
    g = full(level)
    for (a, b), (left, right) in zip(g.edge_cells, g.edge_corners):
        assert {left, right} <= set(g.corners[a].tolist()) & set(g.corners[b].tolist())
        step = g.centres[b] - g.centres[a]  # the left corner lies to the left of the step from a to b
        assert np.dot(np.cross(step, g.corner_points[left] - g.centres[a]), g.centres[a]) > 0
        assert np.dot(np.cross(step, g.corner_points[right] - g.centres[a]), g.centres[a]) < 0


# -- geometry -----------------------------------------------------------------------------

@pytest.mark.parametrize("level", LEVELS)
def test_geometry(level: int) -> None:
    g = full(level)
    for points in (g.centres, g.corner_points, g.edge_points, g.normals):
        assert np.allclose(np.linalg.norm(points, axis=1), 1.0, atol=1e-15)
    centroid = g.centres[corner_cells(g)].sum(axis=1)
    assert np.allclose(g.corner_points, centroid / np.linalg.norm(centroid, axis=1)[:, None], rtol=0, atol=1e-14)
    midpoint = g.centres[g.edge_cells].sum(axis=1)
    assert np.allclose(g.edge_points, midpoint / np.linalg.norm(midpoint, axis=1)[:, None], rtol=0, atol=1e-14)
    for points in (g.centres, g.corner_points, g.edge_points):
        lat, lon = geodesic.lat_lon(points)
        assert lat.min() >= -math.pi / 2 and lat.max() <= math.pi / 2 and lon.min() >= -math.pi and lon.max() < math.pi
        back = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=1)
        assert np.allclose(back, points, rtol=0, atol=1e-14)


def test_shared_panel_sides_and_corners_have_the_same_points() -> None:
    """Every panel's lattice, far sides included, lands exactly on the cells it names."""
    g = full(3)
    for p in range(10):
        assert np.array_equal(g.grid.lattice_points(p), g.centres[g.grid.lattice_cells(p)])


def test_neighbour_distances_are_even() -> None:
    g = full(3)
    cosines = np.einsum("ck,cmk->cm", g.centres, g.centres[g.neighbors])
    distances = np.arccos(np.clip(cosines, -1.0, 1.0))
    assert distances.max() / distances.min() < 1.3


# -- layout -------------------------------------------------------------------------------

def interleave(i: int, j: int) -> int:
    """Bits of i at odd positions, bits of j at even ones, one bit at a time."""
    code = 0
    for bit in range(16):
        code |= ((j >> bit) & 1) << (2 * bit) | ((i >> bit) & 1) << (2 * bit + 1)
    return code


def test_morton_order() -> None:
    g = full(2)
    n = 4
    for p in range(10):
        for i in range(n):
            for j in range(n):
                c = p * n * n + interleave(i, j)
                assert int(g.grid.cell(p, i, j)) == c and g.grid.lattice_cells(p)[i, j] == c
                # lists start at neighbour (i+1, j); neighbour 2 is (i, j+1); edges and corners owned as documented
                assert i + 1 == n or g.neighbors[c, 0] == p * n * n + interleave(i + 1, j)
                assert j + 1 == n or g.neighbors[c, 2] == p * n * n + interleave(i, j + 1)
                assert np.array_equal(g.edge_cells[3 * c:3 * c + 3, 0], [c, c, c])
                assert g.edges[c, 0] == 3 * c and g.edges[c, 1] == 3 * c + 1 and g.edges[c, 2] == 3 * c + 2
                assert g.corners[c, 0] == 2 * c and g.corners[c, 1] == 2 * c + 1
    assert [int(g.grid.cell(0, i, j)) for i in range(2) for j in range(2)] == [0, 1, 2, 3]
    north, south = g.grid.cells - 2, g.grid.cells - 1
    assert g.centres[north].tolist() == [0.0, 0.0, 1.0] and g.centres[south].tolist() == [0.0, 0.0, -1.0]


def test_any_block_is_the_same_as_the_whole() -> None:
    """What a rank computes for its block does not depend on where the block starts."""
    g = full(3)
    grid = geodesic.Grid(3)
    for lo, hi in ((0, 1), (5, 77), (300, 642), (641, 642)):
        parts = grid.cell_topology(lo, hi)
        for part, whole in zip(parts, (g.neighbors, g.corners, g.edges)):
            assert np.array_equal(part, whole[lo:hi])
        assert np.array_equal(grid.cell_points(lo, hi), g.centres[lo:hi])
    for lo, hi in ((0, 2), (7, 1000), (1279, 1280)):
        assert np.array_equal(grid.corner_points(lo, hi), g.corner_points[lo:hi])
    for lo, hi in ((0, 1), (5, 1001), (1900, 1920)):
        cells, corners = grid.edge_topology(lo, hi)
        assert np.array_equal(cells, g.edge_cells[lo:hi]) and np.array_equal(corners, g.edge_corners[lo:hi])
        points, normals = grid.edge_geometry(lo, hi)
        assert np.array_equal(points, g.edge_points[lo:hi]) and np.array_equal(normals, g.normals[lo:hi])


# -- data ---------------------------------------------------------------------------------

def test_circulation_round_each_triangle_matches_the_vorticity() -> None:
    """wind_normal along the triangle's sides (cell centre to centre) sums to vorticity x area."""
    g = full(5)
    days, z = np.array([1.0]), np.array([8000.0])
    wind = geodesic.wind_normal(g.edge_points, g.normals, days, z)[0, :, 0].astype(float)
    vort = geodesic.vorticity(g.corner_points, days, z)[0, :, 0].astype(float)
    a, b = g.centres[g.edge_cells[:, 0]], g.centres[g.edge_cells[:, 1]]
    flux = wind * np.arccos(np.clip(np.einsum("ek,ek->e", a, b), -1, 1)) * geodesic.EARTH_RADIUS
    circulation = np.zeros(g.grid.corners)
    np.add.at(circulation, g.edge_corners[:, 0], flux)  # a -> b runs counter-clockwise round the left corner
    np.add.at(circulation, g.edge_corners[:, 1], -flux)
    p, q, r = (g.centres[corner_cells(g)[:, k]] for k in range(3))
    excess = 2 * np.arctan2(np.abs(np.einsum("tk,tk->t", p, np.cross(q, r))),
                            1 + np.einsum("tk,tk->t", p, q) + np.einsum("tk,tk->t", q, r) + np.einsum("tk,tk->t", r, p))
    estimate = circulation / (excess * geodesic.EARTH_RADIUS**2)
    assert np.sqrt(np.mean((estimate - vort) ** 2) / np.mean(vort**2)) < 0.1


def test_fields_look_like_a_jet_and_a_cyclone() -> None:
    g = full(4)
    days, layers, interfaces = np.array([0.0, 1.0]), *geodesic.heights(5)
    assert np.allclose(interfaces[[0, -1]], [0.0, geodesic.TOP]) and np.all(np.diff(layers) > 0)
    p = geodesic.pressure(g.centres, days, layers)
    assert p.shape == (2, g.grid.cells, 5) and p.dtype == np.float32
    assert np.all(np.diff(p, axis=2) < 0)  # pressure falls with height
    lat, lon = geodesic.lat_lon(g.centres)
    for t, day in enumerate(days):  # the surface low drifts east along 40N
        low = np.argmin(p[t, :, 0])
        assert abs(math.degrees(lat[low]) - 40) < 5
        assert abs(math.degrees(lon[low]) - (20 + 12 * day)) < 5
    vort = geodesic.vorticity(g.corner_points, days, layers)
    assert vort[0].max() > 0 and vort.shape == (2, g.grid.corners, 5)


# -- the written file ---------------------------------------------------------------------

VARIABLES = ("time", "layers", "interfaces", "cell_neighbors", "cell_corners", "cell_edges", "edge_cells",
             "edge_corners", "grid_center_lat", "grid_center_lon", "grid_corner_lat", "grid_corner_lon",
             "grid_edge_lat", "grid_edge_lon", "pressure", "vorticity", "wind_normal")


@functools.cache
def expected(level: int) -> dict[str, np.ndarray]:
    """The file's variables computed in this process, in one piece."""
    g = full(level)
    days = 0.25 * np.arange(FILE_TIMES)
    layers, interfaces = geodesic.heights(FILE_LAYERS)
    out = {"time": days, "layers": layers, "interfaces": interfaces, "cell_neighbors": g.neighbors,
           "cell_corners": g.corners, "cell_edges": g.edges, "edge_cells": g.edge_cells,
           "edge_corners": g.edge_corners,
           "pressure": geodesic.pressure(g.centres, days, layers),
           "vorticity": geodesic.vorticity(g.corner_points, days, layers),
           "wind_normal": geodesic.wind_normal(g.edge_points, g.normals, days, layers)}
    for name, points in (("center", g.centres), ("corner", g.corner_points), ("edge", g.edge_points)):
        out[f"grid_{name}_lat"], out[f"grid_{name}_lon"] = geodesic.lat_lon(points)
    return out


# Every climio run of this file goes in one table per rank count (helpers/climio_batch.py: one launch each, every
# case captured as a process of its own), each writing into a directory of its own.
WRITTEN = [(1, "cdf5"), (2, "cdf5"), (3, "cdf5"), (2, "hdf5"), (3, "hdf5"), (2, "cdf2"), (2, "serial")]
BAD_ARGUMENTS = [(("--level", "-1"), "--level"), (("--level", "13"), "--level"), (("--layers", "0"), "--layers"),
                 (("--times", "0"), "--times")]


def gen_argv(out: Path, mode: str, level: int = FILE_LEVEL) -> list[str]:
    return ["gen", "geodesic", str(out), "--level", str(level), "--layers", str(FILE_LAYERS), "--times",
            str(FILE_TIMES), "--mode", mode]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    b = Batch(tmp_path_factory.mktemp("runs"))
    b.add("one-rank", gen_argv(b.folder("one-rank") / "geo-cdf5-1.nc", "cdf5"), 1)
    for nranks, mode in WRITTEN:
        b.add(f"written-{nranks}-{mode}", gen_argv(b.folder(f"written-{nranks}-{mode}") / f"geo-{mode}-{nranks}.nc",
                                                   mode), nranks)
    b.add("level0-13", gen_argv(b.folder("level0-13") / "geo-cdf5-13.nc", "cdf5", level=0), 13)
    for nranks in (None, 2):
        for k, (args, _) in enumerate(BAD_ARGUMENTS):
            level = () if args[0] == "--level" else ("--level", "1")
            name = f"bad-{k}-{nranks}"
            b.add(name, ["gen", "geodesic", b.folder(name) / "geo.nc", *level, *args], nranks)
    return b


def generate(runs: Batch, name: str, nranks: int, mode: str, level: int = FILE_LEVEL) -> tuple[
        Path, dict[str, np.ndarray]]:
    """Check run ``name`` (gen geodesic geo-MODE-NRANKS.nc --level LEVEL ... at nranks) and read its file."""
    directory = runs.folder(name)
    out = directory / f"geo-{mode}-{nranks}.nc"
    result: Result = runs.result(name)
    assert result.args == gen_argv(out, mode, level)
    assert result.returncode == 0, result.stderr
    g = full(level).grid
    assert f"wrote {out}: geodesic level {level} ({g.cells} cells, {g.corners} corners, {g.edges} edges)" \
        in result.stdout
    assert leftovers(str(directory)) == []
    with netCDF4.Dataset(out) as ds:
        ds.set_auto_mask(False)
        assert ds.grid == "geodesic" and ds.level == level and ds.Conventions == "CF-1.8"
        assert "gen geodesic" in ds.history
        assert ds["grid_edge_lat"].units == "radians" and ds["grid_center_lon"].standard_name == "longitude"
        assert ds["time"].units == "days since 2000-01-01 00:00:00" and ds["pressure"].units == "Pa"
        return out, {name: ds[name][:] for name in VARIABLES}


def assert_same(values: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> None:
    for name in VARIABLES:
        assert values[name].dtype == reference[name].dtype, name
        assert np.array_equal(values[name], reference[name]), name


@pytest.fixture(scope="module")
def one_rank(runs: Batch) -> dict[str, np.ndarray]:
    return generate(runs, "one-rank", 1, "cdf5")[1]


@pytest.mark.parametrize("nranks,mode", WRITTEN)
def test_written_file_is_the_same_at_every_rank_count(runs: Batch, one_rank: dict[str, np.ndarray],
                                                      nranks: int, mode: str) -> None:
    out, values = generate(runs, f"written-{nranks}-{mode}", nranks, mode)
    assert_same(values, one_rank)
    assert_same(values, expected(FILE_LEVEL))
    for name in ("cell_neighbors", "edge_cells"):
        assert values[name].dtype == np.int32
    header = subprocess.run(["ncdump", "-h", str(out)], capture_output=True, text=True, check=True).stdout
    for line in ("time = UNLIMITED ; // (2 currently)", "cells = 162 ;", "corners = 320 ;", "edges = 480 ;",
                 "layers = 3 ;", "interfaces = 4 ;", "neighbors = 6 ;", "cellcorners = 6 ;", "celledges = 6 ;",
                 "edgecorners = 2 ;", "edgecells = 2 ;", "float pressure(time, cells, layers) ;",
                 "float vorticity(time, corners, layers) ;", "float wind_normal(time, edges, layers) ;",
                 "int cell_neighbors(cells, neighbors) ;", ':grid = "geodesic" ;'):
        assert line in header, line


def test_more_ranks_than_cells(runs: Batch) -> None:
    """Level 0 on 13 ranks: one rank owns no cell, several own a single element."""
    assert_same(generate(runs, "level0-13", 13, "cdf5", level=0)[1], expected(0))


@pytest.mark.parametrize("ntime,total,per_write", [(1, 17, 5), (3, 17, 5), (7, 100, 1), (7, 10, 33), (2, 5, 1000)])
def test_write_pieces_cover_each_block_once_in_the_same_number_of_calls(ntime: int, total: int,
                                                                          per_write: int) -> None:
    for nranks in range(1, 5):
        most = block_range(total, nranks, 0)[1]
        plans = [list(geodesic.pieces(ntime, block_range(total, nranks, r)[1], most, per_write))
                 for r in range(nranks)]
        assert len({len(plan) for plan in plans}) == 1
        for r, plan in enumerate(plans):
            covered = np.zeros((ntime, block_range(total, nranks, r)[1]), int)
            for t, k, e, m in plan:
                assert k * m <= per_write and k >= 1
                covered[t:t + k, e:e + m] += 1
            assert np.all(covered == 1)


@pytest.mark.parametrize("args,needle", BAD_ARGUMENTS)
@pytest.mark.parametrize("nranks", [None, 2])
def test_bad_arguments(runs: Batch, args: tuple[str, str], needle: str, nranks: int | None) -> None:
    name = f"bad-{BAD_ARGUMENTS.index((args, needle))}-{nranks}"
    tmp_path = runs.folder(name)
    out = tmp_path / "geo.nc"
    result = runs.result(name)  # gen geodesic out [--level 1] ARGS
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("climio: error:")]
    assert len(errors) == 1 and needle in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists() and leftovers(str(tmp_path)) == []
