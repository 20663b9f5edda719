"""Grid families a subset must understand, recognised from a file's metadata.

- **regular**: 1-D latitude and longitude coordinate variables; a box becomes index ranges.
- **points**: 1-D auxiliary latitude and longitude on one dimension with no mesh topology
  (ICON as CMIP6 stores it, point clouds): a box keeps the elements whose coordinates are in
  it, as ``ncks -X`` does; nothing to renumber.
- **geodesic** (GCRM, seed 001 II-A): ``cells``/``corners``/``edges``, ``cell_corners``,
  ``cell_edges``, ``cell_neighbors``, ``edge_corners``; 0-based, -1 = none; radians.
- **mpas**: ``nCells``/``nVertices``/``nEdges``, ``verticesOnCell`` etc.; 1-based,
  0 = none; radians (MPAS writes no units).
- **ugrid**: a variable with ``cf_role = "mesh_topology"`` naming its dimensions and
  ``*_connectivity`` variables; ``start_index`` (default 0); ``_FillValue`` = none. A
  connectivity is ``(element, n_max)`` or transposed ``(n_max, element)``: the orientation is
  read from which of its dimensions is the element dimension of its source (``face_dimension``,
  ``edge_dimension``, ... or the dimension of the element's coordinates), as UXarray does.
  Without ``face_coordinates`` a face's centre is the normalised mean of its nodes' unit
  vectors (UXarray's centroid).

- **curvilinear**: 2-D latitude and longitude over the grid's own index dimensions (CORDEX's rotated pole,
  tripolar and other ocean grids, projections): a box keeps the smallest index rectangle that holds every
  cell whose centre (or, with ``--touching``, any part of its bounds) is in the box. GEOS cubed-sphere native
  files are the same with a leading face dimension (``nf``): the faces that hold kept cells, and one
  rectangle of ``Ydim``/``Xdim`` for all of them. Their 1-D axes (``rlat``/``rlon``, ``j``/``i``) are the grid's
  own, never read as latitude/longitude.

- **esmf**: an ESMF mesh: ``elementConn`` into ``nodeCoords`` (columns: longitude, latitude), 1-based unless
  ``start_index`` says otherwise, -1 = none; cut as the meshes above.
- **scrip** (a kind of **points**): a SCRIP grid, each cell along ``grid_size`` with its own centre and corners,
  no connectivity; ``grid_dims`` follows the cut. On a logically rectangular one (``grid_rank`` = 2) a box keeps
  the index rectangle of its cells, as on a curvilinear grid.

Layouts that climio cannot cut by a box are recognised too (:class:`Unsupported`): SCRIP grids of another
``grid_rank``, ESMF meshes in Cartesian coordinates, Exodus meshes, HEALPix, CF ragged-array discrete sampling
geometries, 3-D and 1-D UGRID meshes, and grids whose 1-D axes are their own rather than latitude/longitude,
with no 2-D latitude/longitude to read instead (a projection's ``projection_x_coordinate`` alone).
``-b``/``-X`` is refused on them by name; ``-v`` and ``-d`` still work.

On a mesh a cell (face) is kept when its centre is inside the box (with ``--touching``, when its outline
from its corner nodes shares some area with it); the ``closure``
connectivities then keep every corner and edge of the kept cells (and, on UGRID, every node of
a kept edge).
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
    axis: int = 0  # position of ``source`` among the variable's dimensions: 1 when stored transposed


@dataclass(frozen=True)
class Mesh:
    """An unstructured mesh: its element dimensions and what ties them together."""

    family: str
    primary: str  # the cell (face) dimension that a box selects from
    elements: tuple[str, ...]  # primary first
    lat: str | None  # cell-centre coordinate variables
    lon: str | None
    radians: bool
    closure: tuple[Connectivity, ...]  # primary -> other elements (then edge -> node): keeps kept cells whole
    connectivity: tuple[Connectivity, ...]  # everything to renumber
    grid_vars: frozenset[str]  # topology and geometry, carried along with any -v
    sides: str | None = None  # MPAS nEdgesOnCell: closure columns per cell
    # the cell -> corner (node) links and the corners' coordinates: the cells' outlines, and their centres on a
    # UGRID mesh without face centres
    corner_links: Connectivity | None = None
    node_lat: str | None = None
    node_lon: str | None = None
    node_radians: bool = False
    columns: bool = False  # lat/lon (and node_lat/node_lon) name one (n, 2) variable, longitude first (ESMF)


@dataclass(frozen=True)
class Regular:
    """A rectilinear grid: 1-D coordinate variables named after their dimensions."""

    lat: str | None
    lon: str | None
    radians: bool = False
    lat_bounds: str | None = None  # CF cell bounds (n, 2), for --touching
    lon_bounds: str | None = None
    family: str = field(default="regular")


@dataclass(frozen=True)
class Points:
    """Elements along one dimension located by 1-D auxiliary latitude/longitude variables, no topology."""

    dim: str
    lat: str
    lon: str
    radians: bool = False
    lat_bounds: str | None = None  # each element's corners (dim, nv), for --touching (SCRIP, CMIP6's ICON)
    lon_bounds: str | None = None
    count: str | None = None  # a variable that holds the number of elements (SCRIP's grid_dims), rewritten
    rectangular: bool = False  # the elements are rows of a logically rectangular grid (``count`` = (nx, ny))
    family: str = field(default="points")


@dataclass(frozen=True)
class Unsupported:
    """A layout climio recognises but cannot cut with a box; -v and -d still work."""

    family: str  # short name for the summary line
    what: str  # "a GEOS cubed-sphere native file (...)", completes "<file> is ..."
    var: str | None  # a variable that shows it (names the input file)
    advice: str  # what to do instead of -b/-X
    linked: tuple[str, ...] = ()  # dimensions that connectivity points into: -d on them is refused


@dataclass(frozen=True)
class Curvilinear:
    """Latitude and longitude given per cell over the grid's own dimensions ``dims`` (``(y, x)``, or
    ``(face, y, x)`` on a cubed sphere); cell corners from CF bounds ``(*dims, nv)`` or, on a GEOS cubed sphere,
    a staggered corner grid one larger in ``y`` and ``x`` (``corner_dims``)."""

    lat: str
    lon: str
    dims: tuple[str, ...]
    lat_bounds: str | None = None
    lon_bounds: str | None = None
    corner_dims: tuple[str, ...] = ()  # a staggered corner grid's dimensions (GEOS YCdim, XCdim)
    radians: bool = False
    family: str = field(default="curvilinear")

    @property
    def grid_vars(self) -> tuple[str, ...]:
        """The geometry that any variable on the grid carries along (``-v``)."""
        return tuple(n for n in (self.lat, self.lon, self.lat_bounds, self.lon_bounds) if n is not None)


Grid = Mesh | Regular | Points | Curvilinear | Unsupported
EARTH_RADIUS_M = 6_371_000.0  # the mean radius: the sphere of the distances and areas climio writes


def has_outlines(grid: Grid | None) -> bool:
    """Whether the grid gives its cells' outlines: CF bounds of its latitude and longitude (a GEOS corner grid),
    or on a mesh a cell -> node connectivity and the nodes' latitude and longitude."""
    if isinstance(grid, Mesh):
        return grid.corner_links is not None and grid.node_lat is not None and grid.node_lon is not None
    return isinstance(grid, (Regular, Curvilinear, Points)) and grid.lat_bounds is not None \
        and grid.lon_bounds is not None


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


def _radians(var: Variable | None) -> bool:
    return "rad" in _units(var)


# A grid's own axes, never latitude/longitude, however their units or names read (CF standard names).
NOMINAL_STANDARD_NAMES = ("grid_latitude", "grid_longitude", "projection_x_coordinate", "projection_y_coordinate")
# CF's spellings of latitude's and longitude's units, lower-cased ("degrees" alone is a rotated grid's).
GEOGRAPHIC_UNITS = frozenset(("degrees_north", "degree_north", "degree_n", "degrees_n", "degreen", "degreesn",
                              "degrees_east", "degree_east", "degree_e", "degrees_e", "degreee", "degreese"))


def _nominal_axes(variables: Mapping[str, Variable], coords: list[Variable]) -> dict[str, str]:
    """1-D axes that a box must not read as latitude/longitude, each with the attribute that says so: their
    standard name or units say they are a grid's own, or a variable's ``coordinates`` names the true 2-D
    latitude/longitude over them (a tripolar ocean grid's nominal ``rlat`` may be in degrees_north, yet its rows
    bend away from any latitude). In the file's order."""
    why: dict[str, str] = {}
    for var in coords:
        standard, units = str(var.attrs.get("standard_name", "")), _units(var)
        if standard in NOMINAL_STANDARD_NAMES:
            why[var.name] = f"{var.name}:standard_name = {standard}"
        elif (is_latitude(var) or is_longitude(var)) and units and units not in GEOGRAPHIC_UNITS and "rad" not in units:
            why[var.name] = f"{var.name}:units = {var.attrs['units']}"
    axes = {var.name for var in coords}
    for var in variables.values():
        for name in str(var.attrs.get("coordinates", "")).split():
            aux = variables.get(name)
            if aux is None or len(aux.dims) < 2 or not (is_latitude(aux) or is_longitude(aux)):
                continue
            for dim in set(aux.dims) & axes:
                why.setdefault(dim, f"{var.name}:coordinates names the 2-D {aux.name}({','.join(aux.dims)})")
    return {var.name: why[var.name] for var in coords if var.name in why}


def detect(dims: Mapping[str, int], variables: Mapping[str, Variable], attrs: Mapping[str, object]) -> Grid | None:
    """The grid of a file, or None when it has no recognisable one."""
    for finder in (_ugrid, _mpas, _geodesic, _unsupported, _regular, _points, _curvilinear):
        grid = finder(dims, variables, attrs)
        if grid is not None:
            return grid
    return None


def _regular(dims: Mapping[str, int], variables: Mapping[str, Variable],
             attrs: Mapping[str, object]) -> Regular | Curvilinear | Unsupported | None:
    """1-D latitude and longitude coordinate variables; a grid whose only such axes are nominal is refused."""
    coords = [v for name, v in variables.items() if v.dims == (name,)]
    nominal = _nominal_axes(variables, coords)
    lat = next((v.name for v in coords if is_latitude(v) and v.name not in nominal), None)
    lon = next((v.name for v in coords if is_longitude(v) and v.name not in nominal), None)
    if nominal and (lat is None or lon is None):
        curvilinear = _curvilinear(dims, variables, attrs)
        if curvilinear is not None:  # the grid's true latitude/longitude are 2-D
            return curvilinear
        axes = list(nominal)
        return Unsupported("curvilinear", f"a grid whose axes {', '.join(axes)} are not latitude/longitude "
                           f"({'; '.join(dict.fromkeys(nominal.values()))})", axes[0],
                           " ".join(f"-d {axis},MIN,MAX" for axis in axes) + " cuts the grid's own axes")
    if lat is None and lon is None:
        return None
    return Regular(lat, lon, radians=_radians(variables.get(lat or lon or "")),
                   lat_bounds=_bounds(variables, lat), lon_bounds=_bounds(variables, lon))


def _bounds(variables: Mapping[str, Variable], name: str | None) -> str | None:
    """The cell bounds of coordinate ``name``: its CF ``bounds`` variable, on its dimensions and one more
    (``nv``: 2 for a 1-D axis, the corners of a 2-D grid's cells); None when it has none."""
    var = variables.get(name or "")
    if var is None:
        return None
    found = variables.get(str(var.attrs.get("bounds", "")))
    if found is None or found.dims[:-1] != var.dims or len(found.dims) != len(var.dims) + 1:
        return None
    return found.name


def _points(dims: Mapping[str, int], variables: Mapping[str, Variable],
            attrs: Mapping[str, object]) -> Points | Unsupported | None:
    """1-D auxiliary latitude and longitude (not coordinate variables) on one shared dimension."""
    aux = [v for name, v in variables.items() if len(v.dims) == 1 and v.dims != (name,)]
    lats = {v.dims[0]: v.name for v in reversed(aux) if is_latitude(v)}
    lons = {v.dims[0]: v.name for v in reversed(aux) if is_longitude(v)}
    if not lats or not lons:
        return None
    shared = [d for d in lats if d in lons]
    if len(shared) == 1:
        dim = shared[0]
        lat_bounds, lon_bounds = _bounds(variables, lats[dim]), _bounds(variables, lons[dim])
        if lat_bounds is None or lon_bounds is None:
            lat_bounds = lon_bounds = None
        return Points(dim, lats[dim], lons[dim], radians=_radians(variables[lats[dim]]), lat_bounds=lat_bounds,
                      lon_bounds=lon_bounds)
    found = ", ".join(f"{name}({d})" for d, name in sorted({**lats, **lons}.items()))
    if shared:
        what = f"a file with latitude/longitude on several dimensions ({found})"
    else:
        what = f"a file whose 1-D latitude and longitude lie on different dimensions ({found})"
    var = next(iter(lats.values()))
    return Unsupported("points", what, var, "cut each dimension with -d DIM,MIN,MAX instead")


def _curvilinear(dims: Mapping[str, int], variables: Mapping[str, Variable],
                 attrs: Mapping[str, object]) -> Curvilinear | None:
    """2-D latitude/longitude over the same dimensions; the pair a data variable's ``coordinates`` names first."""
    bounds = {str(v.attrs.get(k, "")) for v in variables.values() for k in ("bounds", "climatology")}
    grid = [v for v in variables.values() if len(v.dims) == 2 and v.name not in bounds]
    named = [variables[n] for v in variables.values() for n in str(v.attrs.get("coordinates", "")).split()
             if n in variables and len(variables[n].dims) == 2]
    for candidates in (named, grid):
        lat = next((v for v in candidates if is_latitude(v)), None)
        lon = next((v for v in candidates if is_longitude(v) and lat is not None and v.dims == lat.dims), None)
        if lat is not None and lon is not None:
            break
    else:
        return None
    lat_bounds, lon_bounds = _bounds(variables, lat.name), _bounds(variables, lon.name)
    if lat_bounds is None or lon_bounds is None or variables[lat_bounds].dims != variables[lon_bounds].dims:
        lat_bounds = lon_bounds = None
    return Curvilinear(lat.name, lon.name, lat.dims, lat_bounds, lon_bounds, radians=_radians(lat))


def _unsupported(dims: Mapping[str, int], variables: Mapping[str, Variable],
                 attrs: Mapping[str, object]) -> Curvilinear | Unsupported | None:
    """Layouts that must never be read as a regular grid or point set (a cubed sphere's 1-D ``Xdim``/``Ydim``
    may look like one)."""
    def some(*names: str) -> str | None:
        return next((n for n in names if n in variables), None)

    def index_cut(*names: str) -> str:
        return "cut with " + ",".join(f"-d {d},..." for d in names if d in dims) + " instead"

    geos_axes = ("nf", "Ydim", "Xdim")
    cube = next((v for v in variables.values() if v.dims == geos_axes), None)
    if all(d in dims for d in geos_axes) and (cube is not None or dims["nf"] == 6):
        lats, lons = (variables.get(n) for n in ("lats", "lons"))
        if lats is not None and lons is not None and lats.dims == lons.dims == geos_axes:
            corners = ("corner_lats", "corner_lons")
            staggered = all(n in variables and variables[n].dims == ("nf", "YCdim", "XCdim") for n in corners) \
                and (dims.get("YCdim"), dims.get("XCdim")) == (dims["Ydim"] + 1, dims["Xdim"] + 1)
            return Curvilinear("lats", "lons", geos_axes, *(corners if staggered else (None, None)),
                               corner_dims=("YCdim", "XCdim") if staggered else (), radians=_radians(lats),
                               family="geos-cubed-sphere")
        return Unsupported("geos-cubed-sphere", "a GEOS cubed-sphere native file (dimensions nf, Ydim, Xdim) "
                           "without lats/lons(nf, Ydim, Xdim)", cube.name if cube is not None else some("Xdim", "Ydim"),
                           index_cut(*geos_axes))
    if "grid_size" in dims and ({"grid_center_lat", "grid_corner_lat"} & set(variables)):
        return _scrip(dims, variables) or Unsupported(
            "scrip", f"a SCRIP grid file of grid_rank {dims.get('grid_rank')} (climio boxes grid_rank 1 and 2, with "
            f"grid_center_lat/lon on grid_size)", some("grid_center_lat", "grid_corner_lat"), index_cut("grid_size"))
    if {"nodeCoords", "elementConn"} <= set(variables):
        node_dim = variables["nodeCoords"].dims[0]
        return _esmf(dims, variables) or Unsupported(
            "esmf-mesh", "an ESMF unstructured mesh file in Cartesian coordinates (nodeCoords not in degrees or "
            "radians)", "nodeCoords", "use -v, or -d on its element dimension (elements are not renumbered)",
            (node_dim,))
    connects = [name for name in variables if name.startswith("connect") and name[7:].isdigit()]
    if "num_nodes" in dims and (connects or "coordx" in variables):
        return Unsupported("exodus", "an Exodus II mesh (num_nodes, connect1...)", (connects or ["coordx"])[0],
                           "use -v, or -d on an element-block dimension (nodes are not renumbered)", ("num_nodes",))
    healpix = next((v for v in variables.values()
                    if str(v.attrs.get("grid_mapping_name", "")).lower() == "healpix"), None)
    if healpix is not None:
        return Unsupported("healpix", f"a HEALPix grid (grid mapping '{healpix.name}')", healpix.name,
                           "cut the cell dimension with -d instead")
    ragged = next((v for v in variables.values()
                   if "sample_dimension" in v.attrs or "instance_dimension" in v.attrs), None)
    if ragged is not None:
        feature = attrs.get("featureType", "?")
        key = "sample_dimension" if "sample_dimension" in ragged.attrs else "instance_dimension"
        linked = (str(ragged.attrs[key]),) + (ragged.dims if key == "sample_dimension" else ())
        return Unsupported("dsg", f"a CF ragged-array discrete sampling geometry (featureType = {feature}, "
                           f"{ragged.name}:{key})", ragged.name,
                           "cutting its elements would break the ragged-array counts; use -v",
                           tuple(d for d in linked if d in dims))
    return None


def _scrip(dims: Mapping[str, int], variables: Mapping[str, Variable]) -> Points | None:
    """A SCRIP grid: cells along ``grid_size``, each with its own centre and corners (no connectivity);
    ``grid_dims`` holds their number (``grid_rank`` = 1, unstructured) or the shape (nx, ny) of the logically
    rectangular grid whose rows they are, ``i`` fastest (``grid_rank`` = 2); None otherwise."""
    centre = ("grid_center_lat", "grid_center_lon")
    rank = dims.get("grid_rank")
    if rank not in (1, 2) or not all(n in variables and variables[n].dims == ("grid_size",) for n in centre) \
            or (rank == 2 and "grid_dims" not in variables):
        return None
    corners = ("grid_corner_lat", "grid_corner_lon")
    cornered = all(n in variables and variables[n].dims[:1] == ("grid_size",) for n in corners)
    return Points("grid_size", *centre, radians=_radians(variables["grid_center_lat"]),
                  lat_bounds=corners[0] if cornered else None, lon_bounds=corners[1] if cornered else None,
                  count="grid_dims" if "grid_dims" in variables else None, rectangular=rank == 2, family="scrip")


ESMF_GEOMETRY = ("nodeCoords", "centerCoords", "numElementConn", "elementArea", "elementMask", "nodeMask")


def _esmf(dims: Mapping[str, int], variables: Mapping[str, Variable]) -> Mesh | None:
    """An ESMF unstructured mesh (ESMFMESH): ``elementConn(elementCount, maxNodePElement)`` into ``nodeCoords
    (nodeCount, coordDim)``, 1-based unless ``start_index`` says otherwise, -1 for "none"; coordinates in
    (longitude, latitude) columns, in degrees or radians; None in Cartesian coordinates."""
    nodes, conn_var = variables["nodeCoords"], variables["elementConn"]
    units = _units(nodes)
    if not ("deg" in units or "rad" in units) or len(conn_var.dims) != 2:
        return None
    fill = conn_var.attrs.get("_FillValue")
    conn = Connectivity("elementConn", conn_var.dims[0], nodes.dims[0], int(conn_var.attrs.get("start_index", 1)),
                        int(fill) if fill is not None else -1)
    centre = "centerCoords" if "centerCoords" in variables else None
    return Mesh("esmf", conn.source, (conn.source, conn.target), centre, centre,
                "rad" in _units(variables.get(centre or "")), (conn,), (conn,),
                _mesh_vars(variables, (conn,), ESMF_GEOMETRY),
                sides="numElementConn" if "numElementConn" in variables else None,
                corner_links=conn, node_lat="nodeCoords", node_lon="nodeCoords",
                node_radians="rad" in units, columns=True)


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
    corners = next((c for c in conn if c.var == "cell_corners"), None)
    corner_lat, corner_lon = ("grid_corner_lat", "grid_corner_lon") if corners is not None and \
        {"grid_corner_lat", "grid_corner_lon"} <= set(variables) else (None, None)
    corner_units = _units(variables.get(corner_lat or ""))
    return Mesh("geodesic", "cells", elements, lat if lat in variables else None, lon if lon in variables else None,
                "rad" in _units(variables.get(lat)) or not _units(variables.get(lat)), closure, conn,
                _mesh_vars(variables, conn, geometry), corner_links=corners if corner_lat else None,
                node_lat=corner_lat, node_lon=corner_lon, node_radians="rad" in corner_units or not corner_units)


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
    corners = next((c for c in conn if c.var == "verticesOnCell"), None)
    cornered = corners is not None and {"latVertex", "lonVertex"} <= set(variables)
    return Mesh("mpas", "nCells", elements, "latCell" if "latCell" in variables else None,
                "lonCell" if "lonCell" in variables else None, "deg" not in units, closure, conn,
                _mesh_vars(variables, conn, geometry), sides="nEdgesOnCell" if "nEdgesOnCell" in variables else None,
                corner_links=corners if cornered else None, node_lat="latVertex" if cornered else None,
                node_lon="lonVertex" if cornered else None,
                node_radians="deg" not in _units(variables.get("latVertex")))


UGRID_KINDS = ("face", "edge", "node", "boundary")


def _ugrid(dims: Mapping[str, int], variables: Mapping[str, Variable],
           attrs: Mapping[str, object]) -> Mesh | Unsupported | None:
    topologies = [v for v in variables.values() if v.attrs.get("cf_role") == "mesh_topology"]
    if not topologies:
        return None
    topology = topologies[0]
    a = topology.attrs
    where = f"UGRID mesh '{topology.name}'"
    # for layouts climio cannot renumber: -d is refused on every dimension of the topology's variables
    linked = tuple(dict.fromkeys(d for t in topologies for key, value in t.attrs.items()
                                 if key.endswith(("_connectivity", "_coordinates"))
                                 for name in str(value).split() if name in variables for d in variables[name].dims))

    def unsupported(what: str, advice: str = "use -v, or -d on a dimension no connectivity points into"
                    ) -> Unsupported:
        return Unsupported("ugrid", what, topology.name, advice, linked)

    if len(topologies) > 1:
        names = ", ".join(f"'{t.name}'" for t in topologies)
        return unsupported(f"a file with {len(topologies)} UGRID meshes ({names})",
                           "split the file per mesh (ncks -v), then cut each")
    if "volume_node_connectivity" in a or str(a.get("topology_dimension", "2")).strip() == "3":
        return unsupported(f"a 3-D UGRID mesh ('{topology.name}', volumes)")
    if "face_node_connectivity" not in a:
        return unsupported(f"a UGRID mesh without faces ('{topology.name}' has no face_node_connectivity)")

    def named(key: str) -> list[str]:
        names = str(a.get(key, "")).split()
        for name in names:
            if name not in variables:
                raise ClimioError(f"{where}: attribute {key} names variable '{name}', which is not in the file",
                                  collective=True)
        return names

    def first_dim(key: str) -> str | None:
        """The dimension of the first (1-D) variable an attribute names, e.g. node_coordinates."""
        names = named(key)
        return variables[names[0]].dims[0] if names and len(variables[names[0]].dims) == 1 else None

    def declared(kind: str) -> str | None:
        name = a.get(f"{kind}_dimension")
        if name is None:
            return None
        if str(name) not in dims:
            raise ClimioError(f"{where}: {kind}_dimension '{name}' is not a dimension of the file", collective=True)
        return str(name)

    face_nodes = named("face_node_connectivity")[0]
    fn_dims = variables[face_nodes].dims
    if len(fn_dims) != 2:
        raise ClimioError(f"{where}: face_node_connectivity '{face_nodes}' has dimensions {fn_dims}; UGRID needs "
                          f"two (faces and nodes per face)", collective=True)
    face_dim = declared("face") or first_dim("face_coordinates")
    if face_dim is None:
        if dims[fn_dims[0]] < dims[fn_dims[1]]:
            raise ClimioError(f"{where}: face_node_connectivity '{face_nodes}{fn_dims}' has fewer rows than columns "
                              f"and the mesh has no face_dimension attribute: is it transposed? Add "
                              f"face_dimension to '{topology.name}'", collective=True)
        face_dim = fn_dims[0]
    element_dim = {"face": face_dim}
    node_dim = declared("node") or first_dim("node_coordinates")
    if node_dim is None:
        return unsupported(f"a UGRID mesh without node coordinates ('{topology.name}')")
    element_dim["node"] = node_dim
    edge_nodes = named("edge_node_connectivity")
    edge_dim = declared("edge") or first_dim("edge_coordinates")
    if edge_dim is None and edge_nodes:
        en_dims = variables[edge_nodes[0]].dims
        edge_dim = en_dims[1] if len(en_dims) == 2 and dims[en_dims[0]] == 2 and dims[en_dims[1]] != 2 else en_dims[0]
    if edge_dim is not None:
        element_dim["edge"] = edge_dim
    boundary_nodes = named("boundary_node_connectivity")
    if boundary_nodes:
        bn_dims = variables[boundary_nodes[0]].dims
        element_dim["boundary"] = declared("boundary") or (
            bn_dims[1] if len(bn_dims) == 2 and dims[bn_dims[0]] == 2 and dims[bn_dims[1]] != 2 else bn_dims[0])
    conn = []
    for key in a:
        parts = key.split("_")
        if len(parts) != 3 or parts[2] != "connectivity":
            continue
        if parts[0] not in element_dim or parts[1] not in element_dim:
            missing = parts[0] if parts[0] not in element_dim else parts[1]
            return unsupported(f"a UGRID mesh whose {key} links {missing}s, which have no dimension in "
                               f"'{topology.name}' (no {missing}_dimension or {missing} coordinates)",
                               f"add {missing}_dimension to '{topology.name}', or use -v")
        source, target = element_dim[parts[0]], element_dim[parts[1]]
        for name in named(key):
            var = variables[name]
            if var.numpy_dtype.kind not in "iu":
                return unsupported(f"a UGRID mesh whose {key} '{name}' is stored as {var.numpy_dtype} (not integers)")
            if len(var.dims) == 2 and var.dims[0] == source:
                axis = 0
            elif len(var.dims) == 2 and var.dims[1] == source:
                axis = 1
            else:
                raise ClimioError(f"{where}: {key} '{name}{var.dims}' is not on the {parts[0]} dimension "
                                  f"'{source}' (neither (n_{parts[0]}, n_max) nor transposed)", collective=True)
            fill = var.attrs.get("_FillValue")
            conn.append(Connectivity(name, source, target, int(var.attrs.get("start_index", 0)),
                                     int(fill) if fill is not None else -1, axis))
    closure = [c for c in conn if c.source == face_dim and c.target not in (face_dim,)]
    if "edge" in element_dim and any(c.target == edge_dim for c in closure):
        closure += [c for c in conn if c.source == edge_dim and c.target == node_dim]
    coords = named("face_coordinates")
    lat = next((n for n in coords if is_latitude(variables[n]) or "lat" in n.lower()), None)
    lon = next((n for n in coords if is_longitude(variables[n]) or "lon" in n.lower()), None)
    node_coords = named("node_coordinates")
    node_lat = next((n for n in node_coords if is_latitude(variables[n]) or "lat" in n.lower()), None)
    node_lon = next((n for n in node_coords if is_longitude(variables[n]) or "lon" in n.lower()), None)
    corner_links = next((c for c in conn if c.source == face_dim and c.target == node_dim), None)
    geometry = tuple(n for key in ("node_coordinates", "face_coordinates", "edge_coordinates") for n in named(key))
    elements = tuple(element_dim[k] for k in UGRID_KINDS if k in element_dim)
    return Mesh("ugrid", face_dim, elements, lat, lon, _radians(variables.get(lat or "")),
                tuple(closure), tuple(conn), _mesh_vars(variables, tuple(conn), geometry + (topology.name,)),
                corner_links=corner_links,
                node_lat=node_lat, node_lon=node_lon, node_radians=_radians(variables.get(node_lat or "")))
