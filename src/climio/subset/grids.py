"""Grid families a subset must understand, recognised from a file's metadata.

- **regular**: 1-D latitude and longitude coordinate variables; a box becomes index ranges.
- **geodesic** (GCRM, seed 001 II-A): ``cells``/``corners``/``edges``, ``cell_corners``,
  ``cell_edges``, ``cell_neighbors``, ``edge_corners``; 0-based, -1 = none; radians.
- **mpas**: ``nCells``/``nVertices``/``nEdges``, ``verticesOnCell`` etc.; 1-based,
  0 = none; radians (MPAS writes no units).
- **ugrid**: a variable with ``cf_role = "mesh_topology"`` naming its dimensions and
  ``*_connectivity`` variables; ``start_index`` (default 0); ``_FillValue`` = none.

On a mesh a cell (face) is kept when its centre is inside the box; the
``closure`` connectivities then keep every corner and edge of the kept cells.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from climio.core.ncio import Variable
from climio.errors import ClimioError


@dataclass(frozen=True)
class Connectivity:
    """A topology variable: rows on element dimension ``source``, entries index ``target``."""

    var: str
    source: str
    target: str
    start: int  # index of the first element (0 or 1)
    none: int  # the value meaning "no element" in this convention


@dataclass(frozen=True)
class Mesh:
    """An unstructured mesh: its element dimensions and what ties them together."""

    family: str
    primary: str  # the cell (face) dimension that a box selects from
    elements: tuple[str, ...]  # primary first
    lat: str | None  # cell-centre coordinate variables
    lon: str | None
    radians: bool
    closure: tuple[Connectivity, ...]  # primary -> other elements: keeps kept cells whole
    connectivity: tuple[Connectivity, ...]  # everything to renumber
    grid_vars: frozenset[str]  # topology and geometry, carried along with any -v
    sides: str | None = None  # MPAS nEdgesOnCell: closure columns per cell


@dataclass(frozen=True)
class Regular:
    """A rectilinear grid: 1-D coordinate variables named after their dimensions."""

    lat: str | None
    lon: str | None
    radians: bool = False
    family: str = field(default="regular")


Grid = Mesh | Regular


def _units(var: Variable | None) -> str:
    return str(var.attrs.get("units", "")).lower() if var is not None else ""


def is_longitude(var: Variable | None) -> bool:
    if var is None:
        return False
    units = _units(var)
    return (var.attrs.get("standard_name") == "longitude" or units.startswith("degrees_e") or units == "degree_east"
            or var.name.lower() in ("lon", "longitude", "nav_lon"))


def is_latitude(var: Variable | None) -> bool:
    if var is None:
        return False
    units = _units(var)
    return (var.attrs.get("standard_name") == "latitude" or units.startswith("degrees_n") or units == "degree_north"
            or var.name.lower() in ("lat", "latitude", "nav_lat"))


def detect(dims: Mapping[str, int], variables: Mapping[str, Variable], attrs: Mapping[str, object]) -> Grid | None:
    """The grid of a file, or None when it has no recognisable one."""
    for finder in (_ugrid, _mpas, _geodesic, _regular):
        grid = finder(dims, variables, attrs)
        if grid is not None:
            return grid
    return None


def _regular(dims: Mapping[str, int], variables: Mapping[str, Variable], attrs: Mapping[str, object]) -> Regular | None:
    coords = [v for name, v in variables.items() if v.dims == (name,)]
    lat = next((v.name for v in coords if is_latitude(v)), None)
    lon = next((v.name for v in coords if is_longitude(v)), None)
    if lat is None and lon is None:
        return None
    return Regular(lat, lon, radians="rad" in _units(variables.get(lat or lon or "")))


def _mesh_vars(variables: Mapping[str, Variable], connectivity: tuple[Connectivity, ...],
               extra: tuple[str, ...]) -> frozenset[str]:
    return frozenset([c.var for c in connectivity] + [v for v in extra if v in variables])


def _geodesic(dims: Mapping[str, int], variables: Mapping[str, Variable],
              attrs: Mapping[str, object]) -> Mesh | None:
    if attrs.get("grid") != "geodesic" and "cell_corners" not in variables:
        return None
    table = [("cell_neighbors", "cells", "cells"), ("cell_corners", "cells", "corners"),
             ("cell_edges", "cells", "edges"), ("edge_corners", "edges", "corners"), ("edge_cells", "edges", "cells")]
    conn = tuple(Connectivity(name, src, dst, 0, -1) for name, src, dst in table
                 if name in variables and variables[name].dims[:1] == (src,))
    closure = tuple(c for c in conn if c.var in ("cell_corners", "cell_edges"))
    elements = tuple(d for d in ("cells", "corners", "edges") if d in dims)
    lat, lon = ("grid_center_lat", "grid_center_lon")
    geometry = tuple(f"grid_{kind}_{axis}" for kind in ("center", "corner", "edge") for axis in ("lat", "lon"))
    return Mesh("geodesic", "cells", elements, lat if lat in variables else None, lon if lon in variables else None,
                "rad" in _units(variables.get(lat)) or not _units(variables.get(lat)), closure, conn,
                _mesh_vars(variables, conn, geometry))


MPAS_CONNECTIVITY = (("cellsOnCell", "nCells", "nCells"), ("edgesOnCell", "nCells", "nEdges"),
                     ("verticesOnCell", "nCells", "nVertices"), ("edgesOnEdge", "nEdges", "nEdges"),
                     ("cellsOnEdge", "nEdges", "nCells"), ("verticesOnEdge", "nEdges", "nVertices"),
                     ("cellsOnVertex", "nVertices", "nCells"), ("edgesOnVertex", "nVertices", "nEdges"))


def _mpas(dims: Mapping[str, int], variables: Mapping[str, Variable], attrs: Mapping[str, object]) -> Mesh | None:
    if "nCells" not in dims or not ({"verticesOnCell", "cellsOnCell", "edgesOnCell"} & set(variables)):
        return None
    conn = tuple(Connectivity(name, src, dst, 1, 0) for name, src, dst in MPAS_CONNECTIVITY
                 if name in variables and variables[name].dims[:1] == (src,) and dst in dims)
    closure = tuple(c for c in conn if c.var in ("verticesOnCell", "edgesOnCell"))
    elements = tuple(d for d in ("nCells", "nVertices", "nEdges") if d in dims)
    geometry = tuple(f"{axis}{kind}" for kind in ("Cell", "Vertex", "Edge") for axis in ("lat", "lon", "x", "y", "z"))
    geometry += ("indexToCellID", "indexToVertexID", "indexToEdgeID", "nEdgesOnCell", "nEdgesOnEdge")
    units = _units(variables.get("latCell"))
    return Mesh("mpas", "nCells", elements, "latCell" if "latCell" in variables else None,
                "lonCell" if "lonCell" in variables else None, "deg" not in units, closure, conn,
                _mesh_vars(variables, conn, geometry), sides="nEdgesOnCell" if "nEdgesOnCell" in variables else None)


UGRID_KINDS = ("face", "edge", "node")


def _ugrid(dims: Mapping[str, int], variables: Mapping[str, Variable], attrs: Mapping[str, object]) -> Mesh | None:
    topology = next((v for v in variables.values() if v.attrs.get("cf_role") == "mesh_topology"), None)
    if topology is None:
        return None
    a = topology.attrs
    where = f"UGRID mesh '{topology.name}'"

    def named(key: str) -> list[str]:
        names = str(a.get(key, "")).split()
        for name in names:
            if name not in variables:
                raise ClimioError(f"{where}: attribute {key} names variable '{name}', which is not in the file",
                                  collective=True)
        return names

    face_nodes = named("face_node_connectivity")
    if not face_nodes:
        raise ClimioError(f"{where} has no face_node_connectivity: climio subsets 2-D UGRID meshes",
                          collective=True)
    element_dim = {"face": str(a.get("face_dimension", variables[face_nodes[0]].dims[0]))}
    node_coords = named("node_coordinates")
    if node_coords:
        element_dim["node"] = variables[node_coords[0]].dims[0]
    edge_nodes = named("edge_node_connectivity")
    if "edge_dimension" in a or edge_nodes:
        element_dim["edge"] = str(a.get("edge_dimension", variables[edge_nodes[0]].dims[0] if edge_nodes else ""))
    conn = []
    for key in a:
        parts = key.split("_")
        if len(parts) != 3 or parts[2] != "connectivity" or parts[0] not in element_dim or parts[1] not in element_dim:
            continue
        for name in named(key):
            var = variables[name]
            if var.dims[:1] != (element_dim[parts[0]],):
                continue  # a transposed (dimension-swapped) connectivity: not handled, left out of renumbering
            fill = var.attrs.get("_FillValue")
            conn.append(Connectivity(name, element_dim[parts[0]], element_dim[parts[1]],
                                     int(var.attrs.get("start_index", 0)), int(fill) if fill is not None else -1))
    if "node" not in element_dim:
        raise ClimioError(f"{where} has no node_coordinates", collective=True)
    closure = [c for c in conn if c.source == element_dim["face"] and c.target != element_dim["face"]]
    coords = named("face_coordinates")
    lat = next((n for n in coords if is_latitude(variables[n]) or "lat" in n.lower()), None)
    lon = next((n for n in coords if is_longitude(variables[n]) or "lon" in n.lower()), None)
    geometry = tuple(n for key in ("node_coordinates", "face_coordinates", "edge_coordinates") for n in named(key))
    elements = tuple(element_dim[k] for k in UGRID_KINDS if k in element_dim)
    return Mesh("ugrid", element_dim["face"], elements, lat, lon, "rad" in _units(variables.get(lat or "")),
                tuple(closure), tuple(conn), _mesh_vars(variables, tuple(conn), geometry + (topology.name,)))
