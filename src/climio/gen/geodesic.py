"""A GCRM-style icosahedral geodesic grid with cell, corner and edge data, written in parallel.

The grid (seed 001, section II-A): the icosahedron, first vertex at the north pole,
recursively bisected R times (each new point the normalised midpoint of its two
parents) on the unit sphere. With n = 2**R there are N = 10 n^2 + 2 cells (12 of
them pentagons), C = 2(N-2) corners (triangle centres) and E = 3(N-2) edges.

Layout (the subsetter and its benchmark rely on it):

- Vertices: north pole, upper ring U_k at latitude atan(1/2) and longitude 72k
  degrees, lower ring L_k at -atan(1/2) and 72k+36 degrees, south pole (k mod 5).
- Panels: the 20 triangles paired into 10 rhombi. Northern panel p = k has origin
  U_k, axis a towards L_k, axis b towards the north pole, far corner U_{k+1}
  (triangles U_k L_k U_{k+1} and U_k U_{k+1} N); southern panel p = 5 + k has
  origin L_k, a towards the south pole, b towards U_{k+1}, far corner L_{k+1}.
  Lattice point (i, j) is origin + i a + j b; b is a turned 120 degrees
  counter-clockwise seen from outside. A panel owns 0 <= i, j < n: its origin
  vertex (a pentagon) and its two sides through the origin; the far sides belong
  to the neighbouring panels, the poles are extra cells.
- Cells: cell(p, i, j) = p n^2 + morton(i, j), morton putting the bits of i in the
  odd and those of j in the even positions (Z-order, (0,0) (0,1) (1,0) (1,1) ...).
  The north pole is cell N-2, the south pole N-1.
- Corners: cell c = (p, i, j) owns triangle 2c   = (i,j) (i+1,j)   (i+1,j+1)
                                  and triangle 2c+1 = (i,j) (i+1,j+1) (i,j+1).
- Edges: cell c owns 3c to (i+1, j) (along a), 3c+1 to (i+1, j+1) (the diagonal)
  and 3c+2 to (i, j+1) (along b). edge_cells = (c, that cell); edge_corners =
  (the triangle left of the step from edge_cells 0 to 1, then the one right of it);
  wind_normal is positive in that direction.
- Cell lists go counter-clockwise seen from outside, starting at the neighbour
  (i+1, j) (the north pole: cell (0, 0, n-1); the south pole: cell (5, n-1, 0)):
  edge m lies between the cell and neighbour m, corner m between neighbours m and
  m+1. A pentagon lists its 5 and repeats the 5th; its corner 4 lies between
  neighbours 4 and 0.

Every value is a function of the element's index alone, computed with the same
elementwise arithmetic whichever rank owns it, so the file does not depend on the
number of ranks. The data fields are analytic: a mid-latitude jet (as in
Jablonowski and Williamson 2006) and a cyclone drifting east.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numba
import numpy as np

from climio.core import collective, ncio, trace
from climio.core.kernels import use_versioned_cache
from climio.core.decomp import Hyperslab, block_range
from climio.gen import cmip
from climio.errors import ClimioError

use_versioned_cache()  # before the kernels below are compiled or loaded

if TYPE_CHECKING:
    from mpi4py import MPI

MAX_LEVEL = 12  # 168 M cells: the 3(N-2) edge indices still fit int32
PANELS = 10
TARGET_WRITE_BYTES = 64 * 2**20  # per rank and collective write of a data variable
CHUNK_BYTES = 4 * 2**20  # netCDF-4 chunks of the data variables (hdf5 mode)

EARTH_RADIUS = 6.371229e6  # m
TOP = 30000.0  # model top, m
SCALE_HEIGHT = 7500.0  # m: pressure and the cyclone decay with height
JET_SPEED = 35.0  # m/s, u = JET_SPEED sin^2(2 lat) at JET_HEIGHT
JET_HEIGHT = 10000.0  # m
SURFACE_PRESSURE = 1.0e5  # Pa
POLAR_DROP = 1500.0  # Pa lower at the poles than at the equator
STORM_LAT, STORM_LON, STORM_DRIFT = math.radians(40.0), math.radians(20.0), math.radians(12.0)  # drift per day
STORM_RADIUS = 0.1  # radians (640 km): e-folding distance of the cyclone
STORM_DEPTH = 2000.0  # Pa
STORM_WIND = 20.0  # m/s, the most the cyclone adds


# -- indexing -----------------------------------------------------------------------------

def _spread(x: np.ndarray) -> np.ndarray:
    """Move bit b of a 16-bit integer to bit 2b."""
    x = np.asarray(x, np.int64) & 0xFFFF
    x = (x | (x << 8)) & 0x00FF00FF
    x = (x | (x << 4)) & 0x0F0F0F0F
    x = (x | (x << 2)) & 0x33333333
    return (x | (x << 1)) & 0x55555555


def _compact(x: np.ndarray) -> np.ndarray:
    """Inverse of ``_spread``: gather the even bits of ``x``."""
    x = np.asarray(x, np.int64) & 0x55555555
    x = (x | (x >> 1)) & 0x33333333
    x = (x | (x >> 2)) & 0x0F0F0F0F
    x = (x | (x >> 4)) & 0x00FF00FF
    return (x | (x >> 8)) & 0xFFFF


def morton(i: np.ndarray | int, j: np.ndarray | int) -> np.ndarray:
    """Z-order position of panel cell (i, j): the bits of i odd, those of j even."""
    return (_spread(i) << 1) | _spread(j)


def unit(v: np.ndarray) -> np.ndarray:
    """``v`` scaled to length 1 along its last axis (elementwise, so the same bits on every rank)."""
    return v / np.sqrt(v[..., 0] ** 2 + v[..., 1] ** 2 + v[..., 2] ** 2)[..., None]


# Transcendental functions of per-element arrays go through scalar libm calls: numpy's SIMD versions
# (SVML on AVX-512) round some elements differently from its scalar fallback, and which elements take
# which path depends on array lengths and addresses, so on the rank count.
@numba.vectorize(["float64(float64, float64)"], cache=True)
def scalar_atan2(y: float, x: float) -> float:
    return math.atan2(y, x)


@numba.vectorize(["float64(float64, float64)"], cache=True)
def scalar_hypot(x: float, y: float) -> float:
    return math.hypot(x, y)


@numba.vectorize(["float64(float64)"], cache=True)
def scalar_exp(x: float) -> float:
    return math.exp(x)


def components(vectors: np.ndarray) -> np.ndarray:
    """x, y and z of (k, 3) vectors as contiguous rows.

    numpy's SIMD transcendental loops fall back to scalar libm, which can round
    differently, when an input's strided span might overlap the output: with
    column views that depends on where the heap put the output, so on the rank count.
    """
    return np.ascontiguousarray(vectors.T)


def lat_lon(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Latitude and longitude in [-pi, pi) of unit vectors, radians."""
    x, y, z = components(points)
    lat = scalar_atan2(z, scalar_hypot(x, y))
    lon = scalar_atan2(y, x)
    lon[lon >= np.pi] -= 2.0 * np.pi
    return lat, lon


def icosahedron() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """North pole, upper ring (5, 3), lower ring (5, 3), south pole."""
    ring_lat = math.atan(0.5)
    lon = 2.0 * np.pi * np.arange(5) / 5.0
    rings = [np.stack([math.cos(ring_lat) * np.cos(lons), math.cos(ring_lat) * np.sin(lons), np.full(5, z)], axis=1)
             for lons, z in ((lon, math.sin(ring_lat)), (lon + np.pi / 5.0, -math.sin(ring_lat)))]
    return np.array([0.0, 0.0, 1.0]), rings[0], rings[1], np.array([0.0, 0.0, -1.0])


def refine(points: np.ndarray) -> np.ndarray:
    """One bisection of a panel lattice (m+1, m+1, 3) -> (2m+1, 2m+1, 3): new points at edge midpoints.

    A shared panel side gets the same bits from both panels: its midpoints use only
    the side's own points, and a + b == b + a exactly.
    """
    m = points.shape[0] - 1
    out = np.empty((2 * m + 1, 2 * m + 1, 3))
    out[::2, ::2] = points
    out[1::2, ::2] = unit(points[:-1] + points[1:])
    out[::2, 1::2] = unit(points[:, :-1] + points[:, 1:])
    out[1::2, 1::2] = unit(points[:-1, :-1] + points[1:, 1:])
    return out


class Grid:
    """Index arithmetic of the level-R grid; each panel's lattice is built once, when first needed."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.n = 2**level
        self.panel_cells = PANELS * self.n**2
        self.cells = self.panel_cells + 2
        self.corners = 2 * self.panel_cells
        self.edges = 3 * self.panel_cells
        self.north, self.south = self.panel_cells, self.panel_cells + 1
        self._ids: dict[int, np.ndarray] = {}
        self._edge_ids: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._points: dict[int, np.ndarray] = {}

    def cell(self, p: np.ndarray | int, i: np.ndarray | int, j: np.ndarray | int) -> np.ndarray:
        """Index of panel cell (p, i, j)."""
        return p * self.n**2 + morton(i, j)

    def lattice_cells(self, p: int) -> np.ndarray:
        """Cell index of each point (i, j), 0 <= i, j <= n, of panel p, its far sides included."""
        if p not in self._ids:
            n, k, r = self.n, p % 5, np.arange(self.n)
            ids = np.empty((n + 1, n + 1), np.int64)
            ids[:n, :n] = self.cell(p, r[:, None], r[None, :])
            if p < 5:  # side L_k U_{k+1} is southern panel k's side i = 0; side N U_{k+1} is panel k+1's i = 0
                ids[n, :n] = self.cell(5 + k, 0, r)
                ids[1:, n] = self.cell((k + 1) % 5, 0, n - 1 - r)
                ids[0, n] = self.north
            else:  # side S L_{k+1} is southern panel k+1's j = 0; side U_{k+1} L_{k+1} is northern k+1's j = 0
                ids[n, 1:] = self.cell(5 + (k + 1) % 5, n - 1 - r, 0)
                ids[n, 0] = self.south
                ids[:n, n] = self.cell((k + 1) % 5, r, 0)
            self._ids[p] = ids
        return self._ids[p]

    def lattice_edges(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """Edge indices of panel p's lattice: (i,j)-(i+1,j) as (n, n+1) and (i,j)-(i,j+1) as (n+1, n)."""
        if p not in self._edge_ids:
            n, k, r = self.n, p % 5, np.arange(self.n)
            own = 3 * self.lattice_cells(p)[:n, :n]
            along_a, along_b = np.empty((n, n + 1), np.int64), np.empty((n + 1, n), np.int64)
            along_a[:, :n], along_b[:n, :] = own, own + 2
            if p < 5:
                along_a[:, n] = 3 * self.cell((k + 1) % 5, 0, n - 1 - r) + 2
                along_b[n, :] = 3 * self.cell(5 + k, 0, r) + 2
            else:
                along_a[:, n] = 3 * self.cell((k + 1) % 5, r, 0)
                along_b[n, :] = 3 * self.cell(5 + (k + 1) % 5, n - 1 - r, 0)
            self._edge_ids[p] = along_a, along_b
        return self._edge_ids[p]

    def lattice_points(self, p: int) -> np.ndarray:
        """Unit vectors (n+1, n+1, 3) of panel p's lattice, by recursive bisection of its rhombus."""
        if p not in self._points:
            north, upper, lower, south = icosahedron()
            k, k1 = p % 5, (p + 1) % 5
            if p < 5:
                origin, a_end, b_end, far = upper[k], lower[k], north, upper[k1]
            else:
                origin, a_end, b_end, far = lower[k], south, upper[k1], lower[k1]
            points = np.array([[origin, b_end], [a_end, far]])
            for _ in range(self.level):
                points = refine(points)
            self._points[p] = points
        return self._points[p]

    def by_panel(self, anchors: np.ndarray) -> Iterator[tuple[int, slice, np.ndarray, np.ndarray]]:
        """Split sorted cell indices into runs per panel: (panel, run, i, j); the poles are left out."""
        per = self.n**2
        bounds = np.searchsorted(anchors, np.arange(PANELS + 1) * per)
        for p in range(PANELS):
            if bounds[p] < bounds[p + 1]:
                run = slice(int(bounds[p]), int(bounds[p + 1]))
                m = anchors[run] - p * per
                yield p, run, _compact(m >> 1), _compact(m)

    # -- topology --------------------------------------------------------------------------

    def wedges(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """The triangles round each cell in [lo, hi), in no particular order.

        Returns ``table`` (4, hi-lo, 6): per triangle the neighbour where it starts
        and where it ends going counter-clockwise, the edge to the start neighbour
        and the triangle's index (-1 pads a pentagon), and the triangle count per cell.
        Building them from every panel's triangles needs no special case at panel
        sides, pentagons or poles.
        """
        parts = []
        for p in range(PANELS):
            ids, (along_a, along_b) = self.lattice_cells(p), self.lattice_edges(p)
            o = ids[:-1, :-1]
            diagonal = 3 * o + 1
            lower = (2 * o, (o, ids[1:, :-1], ids[1:, 1:]), (along_a[:, :-1], along_b[1:], diagonal))
            upper = (2 * o + 1, (o, ids[1:, 1:], ids[:-1, 1:]), (diagonal, along_a[:, 1:], along_b[:-1]))
            for tri, corners, sides in (lower, upper):
                for m in range(3):  # the wedge at corner m runs from corner m+1 to m+2 along side m
                    centre = corners[m]
                    keep = (centre >= lo) & (centre < hi)
                    parts.append(np.stack([centre[keep], corners[(m + 1) % 3][keep], corners[(m + 2) % 3][keep],
                                           sides[m][keep], tri[keep]]))
        found = np.concatenate(parts, axis=1)
        found = found[:, np.argsort(found[0])]
        count = np.bincount(found[0] - lo, minlength=hi - lo)
        slot = np.arange(found.shape[1]) - np.repeat(np.cumsum(count) - count, count)
        table = np.full((4, hi - lo, 6), -1, np.int64)
        table[:, found[0] - lo, slot] = found[1:]
        return table, count

    def first_neighbours(self, cells: np.ndarray) -> np.ndarray:
        """Where each cell's lists start: the neighbour (i+1, j), or a fixed one for the poles."""
        out = np.empty_like(cells)
        for p, run, i, j in self.by_panel(cells):
            out[run] = self.lattice_cells(p)[i + 1, j]
        out[cells == self.north] = self.cell(0, 0, self.n - 1)
        out[cells == self.south] = self.cell(5, self.n - 1, 0)
        return out

    def cell_topology(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """cell_neighbors, cell_corners and cell_edges (hi-lo, 6) of cells [lo, hi), int32 as in the file."""
        (start, end, edge, tri), count = self.wedges(lo, hi)
        rows = np.arange(hi - lo)
        out = np.empty((3, hi - lo, 6), np.int64)
        current = self.first_neighbours(np.arange(lo, hi, dtype=np.int64))
        for m in range(6):
            slot = np.argmax(start == current[:, None], axis=1)
            out[0, :, m], out[1, :, m], out[2, :, m] = current, tri[rows, slot], edge[rows, slot]
            current = end[rows, slot]
        pentagon = count == 5
        out[:, pentagon, 5] = out[:, pentagon, 4]
        neighbours, corners, edges = out.astype(np.int32)
        return neighbours, corners, edges

    def edge_ends(self, e0: int, e1: int) -> tuple[np.ndarray, list[tuple[int, slice, tuple[np.ndarray, ...]]]]:
        """Owning cell of edges [e0, e1), and per panel run the lattice (i, j, i2, j2) of both ends."""
        edges = np.arange(e0, e1, dtype=np.int64)
        anchors, k = edges // 3, edges % 3
        runs = [(p, run, (i, j, i + (k[run] < 2), j + (k[run] > 0))) for p, run, i, j in self.by_panel(anchors)]
        return anchors, runs

    def edge_topology(self, e0: int, e1: int) -> tuple[np.ndarray, np.ndarray]:
        """edge_cells and edge_corners (e1-e0, 2) of edges [e0, e1), int32 as in the file."""
        anchors, runs = self.edge_ends(e0, e1)
        cells = np.empty((e1 - e0, 2), np.int64)
        cells[:, 0] = anchors
        for p, run, (_, _, i2, j2) in runs:
            cells[run, 1] = self.lattice_cells(p)[i2, j2]
        lo, hi = (int(anchors[0]), int(anchors[-1]) + 1) if e1 > e0 else (0, 0)
        (start, end, _, tri), _ = self.wedges(lo, hi)
        rows, other = anchors - lo, cells[:, 1:]
        corners = np.stack([tri[rows, np.argmax(start[rows] == other, axis=1)],
                            tri[rows, np.argmax(end[rows] == other, axis=1)]], axis=1)
        return cells.astype(np.int32), corners.astype(np.int32)

    # -- geometry --------------------------------------------------------------------------

    def cell_points(self, lo: int, hi: int) -> np.ndarray:
        """Centres (hi-lo, 3) of cells [lo, hi)."""
        cells = np.arange(lo, hi, dtype=np.int64)
        out = np.empty((hi - lo, 3))
        for p, run, i, j in self.by_panel(cells):
            out[run] = self.lattice_points(p)[i, j]
        out[cells == self.north] = (0.0, 0.0, 1.0)
        out[cells == self.south] = (0.0, 0.0, -1.0)
        return out

    def corner_points(self, t0: int, t1: int) -> np.ndarray:
        """Corners (t1-t0, 3) of triangles [t0, t1): the normalised sum of their three cell centres."""
        triangles = np.arange(t0, t1, dtype=np.int64)
        upper = triangles % 2
        out = np.empty((t1 - t0, 3))
        for p, run, i, j in self.by_panel(triangles // 2):
            points, k = self.lattice_points(p), upper[run]
            out[run] = unit(points[i, j] + points[i + 1, j + k] + points[i + 1 - k, j + 1])
        return out

    def edge_geometry(self, e0: int, e1: int) -> tuple[np.ndarray, np.ndarray]:
        """Midpoints (e1-e0, 3) of edges [e0, e1), and unit normals from edge_cells 0 towards 1."""
        _, runs = self.edge_ends(e0, e1)
        points, normals = np.empty((e1 - e0, 3)), np.empty((e1 - e0, 3))
        for p, run, (i, j, i2, j2) in runs:
            lattice = self.lattice_points(p)
            first, second = lattice[i, j], lattice[i2, j2]
            points[run], normals[run] = unit(first + second), unit(second - first)
        return points, normals


# -- data ---------------------------------------------------------------------------------

def heights(nlayers: int) -> tuple[np.ndarray, np.ndarray]:
    """Heights of layer midpoints and of the nlayers+1 interfaces, m, evenly spaced up to TOP."""
    interfaces = TOP * np.arange(nlayers + 1) / nlayers
    return 0.5 * (interfaces[:-1] + interfaces[1:]), interfaces


def jet_profile(z: np.ndarray) -> np.ndarray:
    return z / JET_HEIGHT * np.exp(1.0 - z / JET_HEIGHT)


def storm_centre(days: np.ndarray) -> np.ndarray:
    """Unit vectors (times, 3) of the cyclone's centre, drifting east along STORM_LAT."""
    lon = STORM_LON + STORM_DRIFT * days
    return np.stack([math.cos(STORM_LAT) * np.cos(lon), math.cos(STORM_LAT) * np.sin(lon),
                     np.full(days.shape, math.sin(STORM_LAT))], axis=1)


def dots(centres: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """(times, points) dot products, summed elementwise: a BLAS product could round differently by block size."""
    return (centres[:, None, 0] * vectors[:, 0] + centres[:, None, 1] * vectors[:, 1]
            + centres[:, None, 2] * vectors[:, 2])


def storm(points: np.ndarray, days: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cosine of the distance to the cyclone's centre and its shape exp(-(r/R)^2), each (times, points)."""
    mu = dots(storm_centre(days), points)
    return mu, scalar_exp((mu - 1.0) / (0.5 * STORM_RADIUS**2))  # 1 - mu = r^2/2 near the centre


def storm_swirl(shape: np.ndarray) -> np.ndarray:
    """Angular speed factor: the wind is STORM_WIND * this * (centre x point), at most STORM_WIND."""
    return STORM_WIND * math.sqrt(2.0 * math.e) / STORM_RADIUS * shape


def layered(jet: np.ndarray, jet_z: np.ndarray, cyclone: np.ndarray, cyclone_z: np.ndarray) -> np.ndarray:
    """float32 (times, points, layers) = jet (points) x jet_z + cyclone (times, points) x cyclone_z.

    Separable in height, so the bulk of the work is two float32 passes per value.
    """
    out = np.multiply.outer(cyclone.astype(np.float32), cyclone_z.astype(np.float32))
    out += np.multiply.outer(jet.astype(np.float32), jet_z.astype(np.float32))
    return out


def pressure(points: np.ndarray, days: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Pa at cell centres: surface pressure lower at the poles and in the cyclone, decaying with height."""
    _, shape = storm(points, days)
    surface = SURFACE_PRESSURE - POLAR_DROP * components(points)[2] ** 2 - STORM_DEPTH * shape
    return np.multiply.outer(surface.astype(np.float32), np.exp(-z / SCALE_HEIGHT).astype(np.float32))


def vorticity(points: np.ndarray, days: np.ndarray, z: np.ndarray) -> np.ndarray:
    """s-1 at corners: the exact relative vorticity of the jet and of the cyclone."""
    x, y, s = components(points)
    c = scalar_hypot(x, y)
    jet = -4.0 * JET_SPEED / EARTH_RADIUS * s * c * (2.0 - 5.0 * s**2)  # of u = U sin^2(2 lat)
    mu, shape = storm(points, days)
    # A wind w(mu) (centre x point) has vorticity (2 mu w - (1 - mu^2) w') / a.
    cyclone = storm_swirl(shape) / EARTH_RADIUS * (2.0 * mu - (1.0 - mu**2) / (0.5 * STORM_RADIUS**2))
    return layered(jet, jet_profile(z), cyclone, np.exp(-z / SCALE_HEIGHT))


def wind_normal(points: np.ndarray, normals: np.ndarray, days: np.ndarray, z: np.ndarray) -> np.ndarray:
    """m s-1 at edges: the jet's and the cyclone's wind across the edge, along ``normals``."""
    (x, y, s), (nx, ny, _) = components(points), components(normals)
    jet = 4.0 * JET_SPEED * s**2 * scalar_hypot(x, y) * (ny * x - nx * y)  # U sin^2(2 lat) east = 4U s^2 c (z x p)
    across = dots(storm_centre(days), np.cross(points, normals))  # n . (centre x p) = centre . (p x n)
    _, shape = storm(points, days)
    return layered(jet, jet_profile(z), storm_swirl(shape) * across, np.exp(-z / SCALE_HEIGHT))


# -- the file -----------------------------------------------------------------------------

def radians(name: str, what: str) -> dict[str, str]:
    return {"standard_name": name, "long_name": what, "units": "radians"}


def topology(what: str) -> dict[str, str | np.int32]:
    return {"long_name": what, "start_index": np.int32(0)}


def schema(grid: Grid, nlayers: int, history: str) -> ncio.Schema:
    def per_chunk(count: int) -> tuple[int, int, int]:
        return 1, max(1, min(count, CHUNK_BYTES // (4 * nlayers))), nlayers

    ccw = "counter-clockwise seen from outside the sphere; pentagons repeat the 5th"
    return ncio.Schema(
        dims={"time": None, "cells": grid.cells, "corners": grid.corners, "edges": grid.edges,
              "layers": nlayers, "interfaces": nlayers + 1, "neighbors": 6, "cellcorners": 6, "celledges": 6,
              "edgecorners": 2, "edgecells": 2},
        variables=(
            ncio.Variable("time", "f8", ("time",), {
                "standard_name": "time", "long_name": "time", "units": "days since 2000-01-01 00:00:00",
                "calendar": "standard", "axis": "T"}),
            ncio.Variable("layers", "f8", ("layers",), {
                "standard_name": "height", "long_name": "height of layer midpoints", "units": "m",
                "positive": "up", "axis": "Z"}),
            ncio.Variable("interfaces", "f8", ("interfaces",), {
                "standard_name": "height", "long_name": "height of layer interfaces", "units": "m",
                "positive": "up"}),
            ncio.Variable("cell_neighbors", "i4", ("cells", "neighbors"),
                          topology(f"cells sharing an edge with the cell, {ccw}")),
            ncio.Variable("cell_corners", "i4", ("cells", "cellcorners"),
                          topology(f"corners of the cell, corner m between neighbours m and m+1, {ccw}")),
            ncio.Variable("cell_edges", "i4", ("cells", "celledges"),
                          topology(f"edges of the cell, edge m shared with neighbour m, {ccw}")),
            ncio.Variable("edge_corners", "i4", ("edges", "edgecorners"),
                          topology("corners at the ends of the edge: left, then right of edge_cells 0 to 1")),
            ncio.Variable("edge_cells", "i4", ("edges", "edgecells"), topology("the two cells sharing the edge")),
            ncio.Variable("grid_center_lat", "f8", ("cells",), radians("latitude", "latitude of cell centres")),
            ncio.Variable("grid_center_lon", "f8", ("cells",), radians("longitude", "longitude of cell centres")),
            ncio.Variable("grid_corner_lat", "f8", ("corners",), radians("latitude", "latitude of cell corners")),
            ncio.Variable("grid_corner_lon", "f8", ("corners",), radians("longitude", "longitude of cell corners")),
            ncio.Variable("grid_edge_lat", "f8", ("edges",), radians("latitude", "latitude of edge midpoints")),
            ncio.Variable("grid_edge_lon", "f8", ("edges",), radians("longitude", "longitude of edge midpoints")),
            ncio.Variable("pressure", "f4", ("time", "cells", "layers"), {
                "standard_name": "air_pressure", "long_name": "pressure", "units": "Pa",
                "coordinates": "grid_center_lat grid_center_lon"}, chunks=per_chunk(grid.cells)),
            ncio.Variable("vorticity", "f4", ("time", "corners", "layers"), {
                "standard_name": "atmosphere_relative_vorticity", "long_name": "relative vorticity",
                "units": "s-1", "coordinates": "grid_corner_lat grid_corner_lon"}, chunks=per_chunk(grid.corners)),
            ncio.Variable("wind_normal", "f4", ("time", "edges", "layers"), {
                "long_name": "wind component normal to the edge, positive from edge_cells 0 towards 1",
                "units": "m s-1", "coordinates": "grid_edge_lat grid_edge_lon"}, chunks=per_chunk(grid.edges)),
        ),
        attrs={"Conventions": "CF-1.8", "title": f"climio synthetic geodesic grid, level {grid.level}",
               "source": "climio gen geodesic: bisected icosahedron, Morton-ordered panels; analytic jet and cyclone",
               "grid": "geodesic", "level": np.int32(grid.level), "history": history},
    )


def pieces(ntime: int, count: int, most: int, per_write: int) -> Iterator[tuple[int, int, int, int]]:
    """(first time, times, first element, elements) of each write of a rank's ``count`` elements.

    The number of pieces depends only on ``most`` (the largest block over ranks,
    :func:`climio.core.collective.most`), so every rank makes the same collective
    calls; a rank past its end gets 0 elements.
    """
    span = max(1, min(most, per_write))
    times = max(1, per_write // max(most, 1))
    for t in range(0, ntime, times):
        for e in range(0, max(most, 1), span):
            yield t, min(times, ntime - t), e, max(0, min(span, count - e))


def rows(start: int, count: int, width: int | None = None) -> Hyperslab:
    """Rows [start, start+count) of a 1-d variable, or of a 2-d one ``width`` wide."""
    return Hyperslab((start,), (count,)) if width is None else Hyperslab((start, 0), (count, width))


@dataclass(frozen=True)
class Summary(cmip.Summary):
    """What was written (``nbytes`` counts the values of every variable) and the grid's sizes."""

    cells: int
    corners: int
    edges: int


def check(level: int, layers: int, times: int) -> None:
    """Refuse bad options before anything is created; every rank decides the same."""
    if not 0 <= level <= MAX_LEVEL:
        raise ClimioError(f"--level must be between 0 and {MAX_LEVEL}, got {level}", collective=True)
    if layers < 1:
        raise ClimioError(f"--layers must be at least 1, got {layers}", collective=True)
    if times < 1:
        raise ClimioError(f"--times must be at least 1, got {times}", collective=True)


def write(path: str, level: int, layers: int = 25, times: int = 4, mode: str | None = None,
          comm: MPI.Comm | None = None,
          *, overwrite: bool = False, hints: dict[str, str] | None = None, history: str = "",
          compress: ncio.Settings | None = None) -> Summary:
    """Generate and write the grid and its data; every element dimension is split in blocks over ranks (collective).
    ``mode``: the storage mode, by default cdf5 (hdf5 when compressing)."""
    from mpi4py import MPI

    comm = comm if comm is not None else MPI.COMM_WORLD
    check(level, layers, times)
    grid = Grid(level)
    rank, size = comm.Get_rank(), comm.Get_size()
    z, z_interfaces = heights(layers)
    days = 0.25 * np.arange(times)
    spec = schema(grid, layers, history)
    nbytes = sum(math.prod(spec.fixed_shape(v, times)) * v.numpy_dtype.itemsize for v in spec.variables)
    (c0, nc), (t0, nt), (e0, ne) = (block_range(n, size, rank) for n in (grid.cells, grid.corners, grid.edges))
    comm.Barrier()
    started = MPI.Wtime()
    chosen, mode = mode is not None, mode or cmip.default_mode(compress)
    with ncio.create(path, spec, mode, comm, overwrite=overwrite, hints=hints, compress=compress,
                     chosen=chosen) as ds:
        ds.write_many([("time", days, None), ("layers", z, None), ("interfaces", z_interfaces, None)])
        with trace.phase("work"):
            neighbours, corners, edges = grid.cell_topology(c0, c0 + nc)
            centres = grid.cell_points(c0, c0 + nc)
            lat, lon = lat_lon(centres)
        ds.write_many([("cell_neighbors", neighbours, rows(c0, nc, 6)), ("cell_corners", corners, rows(c0, nc, 6)),
                       ("cell_edges", edges, rows(c0, nc, 6)), ("grid_center_lat", lat, rows(c0, nc)),
                       ("grid_center_lon", lon, rows(c0, nc))])
        del neighbours, corners, edges
        with trace.phase("work"):
            corner_points = grid.corner_points(t0, t0 + nt)
            lat, lon = lat_lon(corner_points)
        ds.write_many([("grid_corner_lat", lat, rows(t0, nt)), ("grid_corner_lon", lon, rows(t0, nt))])
        with trace.phase("work"):
            edge_cells, edge_corners = grid.edge_topology(e0, e0 + ne)
            edge_points, normals = grid.edge_geometry(e0, e0 + ne)
            lat, lon = lat_lon(edge_points)
        ds.write_many([("edge_cells", edge_cells, rows(e0, ne, 2)), ("edge_corners", edge_corners, rows(e0, ne, 2)),
                       ("grid_edge_lat", lat, rows(e0, ne)), ("grid_edge_lon", lon, rows(e0, ne))])
        del edge_cells, edge_corners, lat, lon
        fields = (
            ("pressure", c0, nc, lambda a, b, d: pressure(centres[a:b], d, z)),
            ("vorticity", t0, nt, lambda a, b, d: vorticity(corner_points[a:b], d, z)),
            ("wind_normal", e0, ne, lambda a, b, d: wind_normal(edge_points[a:b], normals[a:b], d, z)),
        )
        per_write = TARGET_WRITE_BYTES // (4 * layers)
        for name, start, count, values in fields:
            for t, k, e, m in pieces(times, count, collective.most(comm, count), per_write):
                if not m:
                    ds.write(name, np.empty((0, 0, 0), np.float32), Hyperslab.empty(3))
                    continue
                with trace.phase("work"):
                    block = values(e, e + m, days[t:t + k])
                ds.write(name, block, Hyperslab((t, start + e, 0), (k, m, layers)))
    comm.Barrier()
    return Summary(path, mode, size, nbytes, MPI.Wtime() - started, grid.cells, grid.corners, grid.edges)
