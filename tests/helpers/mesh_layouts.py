"""The real MPAS quasi-uniform 1920 km mesh (tests/data/meshes/mesh.QU.1920km.151026.nc: 162 cells, 12
pentagons and 150 hexagons) written again in the layouts of other tools, with netCDF4-python alone (no climio
code); the shipped copies in tests/data/synthetic are these (``python tests/helpers/mesh_layouts.py
tests/data/synthetic`` writes them again):

* ``esmf``: an ESMF unstructured mesh (ESMFMESH): ``nodeCoords(nodeCount, coordDim)`` (longitude, latitude in
  degrees: MPAS's vertices), ``elementConn(elementCount, maxNodePElement)`` 1-based with ``start_index`` = 1 and
  -1 for the unused sixth entry of a pentagon, ``numElementConn``, ``centerCoords`` (MPAS's cell centres),
  ``elementArea``, and a data variable ``psi(elementCount)``.
* ``scrip_rectangular``: a curvilinear file with corner bounds (the CORDEX EUR-11 grid with cartopy's corners)
  as a logically rectangular SCRIP grid, made by the tests.
* ``scrip``: an unstructured SCRIP grid (``grid_rank`` = 1): ``grid_center_lat/lon(grid_size)``,
  ``grid_corner_lat/lon(grid_size, grid_corners)`` (a pentagon's last corner repeated, as SCRIP pads),
  ``grid_imask``, ``grid_dims``, ``grid_area``.
"""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np

QU = Path(__file__).resolve().parent.parent / "data" / "meshes" / "mesh.QU.1920km.151026.nc"


def mpas() -> dict[str, np.ndarray]:
    """The mesh's cells in degrees: centres, the 0-based vertex table (-1 = none), sides, areas; vertices."""
    with netCDF4.Dataset(QU) as ds:
        ds.set_auto_mask(False)
        get = {n: np.asarray(ds[n][:]) for n in ("latCell", "lonCell", "latVertex", "lonVertex", "verticesOnCell",
                                                  "nEdgesOnCell", "areaCell")}
    sides = get["nEdgesOnCell"].astype(np.int64)
    table = get["verticesOnCell"].astype(np.int64) - 1
    table[np.arange(table.shape[1])[None, :] >= sides[:, None]] = -1
    return {"lat": np.degrees(get["latCell"]), "lon": np.degrees(get["lonCell"]), "table": table, "sides": sides,
            "area": get["areaCell"], "vlat": np.degrees(get["latVertex"]), "vlon": np.degrees(get["lonVertex"])}


def esmf(path: Path) -> Path:
    m = mpas()
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.gridType = "unstructured mesh"
        ds.source = "MPAS quasi-uniform 1920 km mesh (mesh.QU.1920km.151026.nc) in the ESMF mesh layout"
        for name, size in (("nodeCount", len(m["vlat"])), ("elementCount", len(m["lat"])),
                           ("maxNodePElement", m["table"].shape[1]), ("coordDim", 2)):
            ds.createDimension(name, size)
        nodes = ds.createVariable("nodeCoords", "f8", ("nodeCount", "coordDim"))
        nodes.units = "degrees"
        nodes[:] = np.stack([m["vlon"], m["vlat"]], axis=1)
        conn = ds.createVariable("elementConn", "i4", ("elementCount", "maxNodePElement"), fill_value=np.int32(-1))
        conn.long_name, conn.start_index = "Node Indices that define the element connectivity", np.int32(1)
        conn[:] = np.where(m["table"] >= 0, m["table"] + 1, -1)
        ds.createVariable("numElementConn", "i1", ("elementCount",))[:] = m["sides"]
        centres = ds.createVariable("centerCoords", "f8", ("elementCount", "coordDim"))
        centres.units = "degrees"
        centres[:] = np.stack([m["lon"], m["lat"]], axis=1)
        ds.createVariable("elementArea", "f8", ("elementCount",))[:] = m["area"]
        psi = ds.createVariable("psi", "f4", ("elementCount",))
        psi.long_name = "a smooth field on the cells"
        psi[:] = (np.sin(np.radians(m["lat"])) * np.cos(np.radians(m["lon"]))).astype("f4")
    return path


def scrip(path: Path) -> Path:
    m = mpas()
    table = m["table"]
    padded = np.where(table >= 0, table, table[np.arange(len(table)), m["sides"] - 1][:, None])
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.title = "MPAS quasi-uniform 1920 km mesh (mesh.QU.1920km.151026.nc) as an unstructured SCRIP grid"
        for name, size in (("grid_size", len(table)), ("grid_corners", table.shape[1]), ("grid_rank", 1)):
            ds.createDimension(name, size)
        ds.createVariable("grid_dims", "i4", ("grid_rank",))[:] = [len(table)]
        for name, values in (("grid_center_lat", m["lat"]), ("grid_center_lon", m["lon"]),
                             ("grid_corner_lat", m["vlat"][padded]), ("grid_corner_lon", m["vlon"][padded])):
            var = ds.createVariable(name, "f8", ("grid_size",) if "center" in name else ("grid_size", "grid_corners"))
            var.units = "degrees"
            var[:] = values
        ds.createVariable("grid_imask", "i4", ("grid_size",))[:] = np.ones(len(table), np.int32)
        area = ds.createVariable("grid_area", "f8", ("grid_size",))
        area.units = "radians^2"
        area[:] = m["area"]
    return path


def scrip_rectangular(source: Path, path: Path) -> Path:
    """A logically rectangular SCRIP grid (``grid_rank`` = 2) of a curvilinear file with 2-D ``lat``/``lon`` and
    their corner bounds ``lat_vertices``/``lon_vertices`` (rows of ``grid_dims`` = (nx, ny), ``i`` fastest)."""
    with netCDF4.Dataset(source) as ds:
        ds.set_auto_mask(False)
        lat, lon = np.asarray(ds["lat"][:]), np.asarray(ds["lon"][:])
        vlat, vlon = np.asarray(ds["lat_vertices"][:]), np.asarray(ds["lon_vertices"][:])
    ny, nx = lat.shape
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.title = f"{source.name} as a logically rectangular SCRIP grid"
        for name, size in (("grid_size", nx * ny), ("grid_corners", vlat.shape[-1]), ("grid_rank", 2)):
            ds.createDimension(name, size)
        ds.createVariable("grid_dims", "i4", ("grid_rank",))[:] = [nx, ny]
        for name, values in (("grid_center_lat", lat), ("grid_center_lon", lon), ("grid_corner_lat", vlat),
                             ("grid_corner_lon", vlon)):
            var = ds.createVariable(name, "f8", ("grid_size",) if "center" in name else ("grid_size", "grid_corners"))
            var.units = "degrees"
            var[:] = values.reshape(nx * ny, *values.shape[2:])
        ds.createVariable("grid_imask", "i4", ("grid_size",))[:] = np.ones(nx * ny, np.int32)
    return path


if __name__ == "__main__":
    import sys

    esmf(Path(sys.argv[1]) / "mpas_qu1920_esmf.nc")
    scrip(Path(sys.argv[1]) / "mpas_qu1920_scrip.nc")
