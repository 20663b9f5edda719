"""Curvilinear grids for the subset tests, made without climio's code.

* ``cordex_with_bounds``: the real EUR-11 file with CF cell bounds added: each cell's corners are the midpoints
  between its rotated-pole coordinates, taken to true latitude/longitude by cartopy's ``RotatedPole`` (which
  gives the file's own 2-D lat/lon to 1e-6 degrees).
* ``tripolar``: a global ocean grid in the manner of ORCA and MOM's tripolar grids: regular latitude/longitude
  south of 60 N, beyond it a cap of ellipses and their radii in the polar stereographic plane that folds onto a
  line between two grid poles over land (80 E and 100 W); its columns close east-west at 20 E. The geographic
  pole lies inside the cap, inside one cell. CMIP6's layout: ``tos(time, j, i)``, index coordinates ``j``/``i``,
  ``latitude``/``longitude`` with ``vertices_latitude``/``vertices_longitude`` as bounds.
* ``cubed_sphere``: a GEOS cubed-sphere native file (c``n``: ``nf`` = 6 faces of ``Ydim`` x ``Xdim`` cells of
  the equiangular gnomonic cube, ``lons``/``lats`` at centres, ``corner_lons``/``corner_lats`` on the
  ``YCdim`` x ``XCdim`` corner grid), as GEOS writes it, with ``T(time, lev, nf, Ydim, Xdim)``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import netCDF4
import numpy as np


def cordex_with_bounds(source: Path, path: Path) -> Path:
    import cartopy.crs as ccrs

    shutil.copy(source, path)
    with netCDF4.Dataset(path, "a") as ds:
        pole = ds["rotated_pole"]
        rotated = ccrs.RotatedPole(pole_longitude=float(pole.grid_north_pole_longitude),
                                   pole_latitude=float(pole.grid_north_pole_latitude))
        edges = [_edges(np.asarray(ds[name][:], dtype=np.float64)) for name in ("rlon", "rlat")]
        x, y = np.meshgrid(*edges)
        corners = ccrs.PlateCarree().transform_points(rotated, x, y)
        ds.createDimension("nv", 4)
        for name, k in (("lon", 0), ("lat", 1)):
            c = corners[..., k]
            bounds = np.stack([c[:-1, :-1], c[:-1, 1:], c[1:, 1:], c[1:, :-1]], axis=-1)
            var = ds.createVariable(f"{name}_vertices", "f8", ("rlat", "rlon", "nv"))
            var[:] = bounds
            ds[name].bounds = f"{name}_vertices"
    return path


def _edges(centres: np.ndarray) -> np.ndarray:
    middle = (centres[1:] + centres[:-1]) / 2
    return np.concatenate([[2 * centres[0] - middle[0]], middle, [2 * centres[-1] - middle[-1]]])


JOIN = 60.0  # degrees north where the cap begins
SEAM = 20.0  # the grid's first column's western edge, degrees east
POLES = 80.0  # the grid poles' longitude (and that + 180)


def _cap(mu: np.ndarray, lam: np.ndarray, mu_join: float) -> tuple[np.ndarray, np.ndarray]:
    """Latitude/longitude of cap points: ``mu`` from ``mu_join`` (the 60 N circle) down to 0 (the fold), ``lam``
    the column's angle from the grid pole's meridian (radians)."""
    rho = 2 * np.tan(np.radians(90.0 - JOIN) / 2)
    x = rho * np.cosh(mu) / np.cosh(mu_join) * np.cos(lam)
    y = rho * np.sinh(mu) / np.sinh(mu_join) * np.sin(lam) + 0.25 * rho * (1 - mu / mu_join)  # pole off the fold
    lat = 90.0 - 2 * np.degrees(np.arctan(np.hypot(x, y) / 2))
    lon = np.degrees(np.arctan2(y, x)) + POLES
    return lat, lon


def _tripolar_points(j: np.ndarray, i: np.ndarray, nx: int, south_rows: int, cap_rows: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Points at (possibly half-integer) row ``j`` and column ``i`` positions: rows up to ``south_rows`` on the
    regular part (from 78 S to 60 N), beyond it on the cap."""
    dlat = (JOIN + 78.0) / south_rows
    lam = np.radians(360.0 * (i + 0.5) / nx + SEAM - POLES)
    lat = -78.0 + (j + 0.5) * dlat
    lon = SEAM + 360.0 * (i + 0.5) / nx
    mu_join = 1.2
    in_cap = j + 0.5 > south_rows
    mu = mu_join * (1 - (j + 0.5 - south_rows) / cap_rows)
    cap_lat, cap_lon = _cap(np.clip(mu, 0.0, mu_join), lam, mu_join)
    lat = np.where(in_cap, cap_lat, lat)
    lon = np.where(in_cap, cap_lon, lon)
    return lat, np.mod(lon, 360.0)


def tripolar(path: Path, nx: int = 72, south_rows: int = 28, cap_rows: int = 8) -> Path:
    ny = south_rows + cap_rows
    j, i = np.meshgrid(np.arange(ny, dtype=np.float64), np.arange(nx, dtype=np.float64), indexing="ij")
    lat, lon = _tripolar_points(j, i, nx, south_rows, cap_rows)
    corner = [_tripolar_points(j + dj, i + di, nx, south_rows, cap_rows)
              for dj, di in ((-0.5, -0.5), (-0.5, 0.5), (0.5, 0.5), (0.5, -0.5))]
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.Conventions = "CF-1.7 CMIP-6.2"
        ds.grid = "synthetic tripolar ocean grid (regular south of 60 N, a folded cap with grid poles at 80 E, 100 W)"
        for name, size in (("time", None), ("j", ny), ("i", nx), ("vertices", 4), ("bnds", 2)):
            ds.createDimension(name, size)
        for name in ("j", "i"):
            var = ds.createVariable(name, "i4", (name,))
            var[:] = np.arange(ds.dimensions[name].size)
            var.units, var.long_name = "1", f"cell index along {'second' if name == 'j' else 'first'} dimension"
        time = ds.createVariable("time", "f8", ("time",))
        time.units, time.calendar, time.standard_name = "days since 1850-01-01", "noleap", "time"
        time[:] = [15.5, 45.0]
        for name, values, units, standard in (("latitude", lat, "degrees_north", "latitude"),
                                              ("longitude", lon, "degrees_east", "longitude")):
            var = ds.createVariable(name, "f8", ("j", "i"))
            var.standard_name, var.units, var.bounds = standard, units, f"vertices_{name}"
            var[:] = values
            bounds = ds.createVariable(f"vertices_{name}", "f8", ("j", "i", "vertices"))
            bounds.units = units
            bounds[:] = np.stack([c[0 if name == "latitude" else 1] for c in corner], axis=-1)
        area = ds.createVariable("areacello", "f4", ("j", "i"))
        area.standard_name, area.units = "cell_area", "m2"
        area[:] = np.cos(np.radians(lat)).astype("f4") * 1e10
        tos = ds.createVariable("tos", "f4", ("time", "j", "i"), fill_value=np.float32(1e20))
        tos.standard_name, tos.units = "sea_surface_temperature", "degC"
        tos.coordinates, tos.cell_measures = "latitude longitude", "area: areacello"
        tos[:] = np.stack([lat + 0.001 * lon, lat - 0.001 * lon]).astype("f4")
    return path


def _cube_points(face: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Latitude/longitude of equiangular coordinates ``a``, ``b`` (radians, -pi/4..pi/4) on a cube face."""
    x, y = np.tan(a), np.tan(b)
    one = np.ones_like(x)
    xyz = {0: (one, x, y), 1: (-x, one, y), 2: (-y, x, one), 3: (-one, -x, y), 4: (x, -one, y), 5: (y, x, -one)}[face]
    cx, cy, cz = xyz
    return np.degrees(np.arctan2(cz, np.hypot(cx, cy))), np.mod(np.degrees(np.arctan2(cy, cx)), 360.0)


def cubed_sphere(path: Path, n: int = 12) -> Path:
    centres = (np.arange(n) + 0.5) / n * (np.pi / 2) - np.pi / 4
    edges = np.arange(n + 1) / n * (np.pi / 2) - np.pi / 4
    lats, lons = np.empty((6, n, n)), np.empty((6, n, n))
    clats, clons = np.empty((6, n + 1, n + 1)), np.empty((6, n + 1, n + 1))
    for f in range(6):
        b, a = np.meshgrid(centres, centres, indexing="ij")
        lats[f], lons[f] = _cube_points(f, a, b)
        b, a = np.meshgrid(edges, edges, indexing="ij")
        clats[f], clons[f] = _cube_points(f, a, b)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.grid_type = "gnomonic cubed-sphere (equiangular), GEOS native layout"
        for name, size in (("time", None), ("lev", 2), ("nf", 6), ("Ydim", n), ("Xdim", n), ("YCdim", n + 1),
                           ("XCdim", n + 1)):
            ds.createDimension(name, size)
        ds.createVariable("nf", "i4", ("nf",))[:] = np.arange(1, 7)
        for name, units in (("Xdim", "degrees_east"), ("Ydim", "degrees_north")):
            var = ds.createVariable(name, "f8", (name,))
            var[:] = np.linspace(-45, 45, n) + (0 if name == "Ydim" else 100)
            var.units, var.long_name = units, f"Fake {name[0]} coordinate for GrADS compatibility"
        ds.createVariable("lev", "f8", ("lev",))[:] = [1.0, 2.0]
        time = ds.createVariable("time", "f8", ("time",))
        time.units = "minutes since 2000-01-01 00:00:00"
        time[:] = [0.0]
        for name, values, dims, units in (("lons", lons, ("nf", "Ydim", "Xdim"), "degrees_east"),
                                          ("lats", lats, ("nf", "Ydim", "Xdim"), "degrees_north"),
                                          ("corner_lons", clons, ("nf", "YCdim", "XCdim"), "degrees_east"),
                                          ("corner_lats", clats, ("nf", "YCdim", "XCdim"), "degrees_north")):
            var = ds.createVariable(name, "f8", dims)
            var.units = units
            var[:] = values
        t = ds.createVariable("T", "f4", ("time", "lev", "nf", "Ydim", "Xdim"), fill_value=np.float32(1e15))
        t.units, t.coordinates = "K", "lons lats"
        t[:] = np.stack([250 + lats / 3, 260 + lons / 10]).astype("f4")[None]
    return path


if __name__ == "__main__":  # the shipped copies: python tests/helpers/curvilinear_files.py tests/data/synthetic
    import sys

    folder = Path(sys.argv[1])
    tripolar(folder / "tos_tripolar.nc")
    cubed_sphere(folder / "geos_c12.nc4")
