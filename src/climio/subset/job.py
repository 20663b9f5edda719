"""``climio subset``: cut variables, index ranges and lat/lon boxes out of one or many files.

The steps follow seed 001 (III-E) with MPI collectives in place of Global Arrays:
1. open the inputs as one dataset (join or union) and recognise the grid;
2. turn ``-d`` ranges and the box into a selection per dimension; on a mesh, mark
   the cells whose centre is in the box (each rank its block), keep every corner
   and edge of a kept cell (sent to their owners), and number the kept elements
   by an exclusive scan;
3. spread the kept indices evenly over the ranks; each rank reads only the runs
   of its share (``--read needed``) or, as the baseline, its whole block of every
   variable followed by a pack-and-redistribute (``--read whole``);
4. renumber topology through the owners' index arrays and write every variable
   in parallel to a temporary file that is renamed when complete.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from climio.core import collective, mpi, ncio, progress, trace
from climio.core.decomp import Hyperslab, block_range
from climio.core.datavars import data_variables
from climio.core.ncio import Schema, Store, Variable
from climio.core.ncio.schema import AttrValue, fill_value
from climio.errors import ClimioError
from climio.subset import curvilinear, distribute, reader, regions, stations
from climio.subset.grids import (EARTH_RADIUS_M, Connectivity, Curvilinear, Mesh, Points, Regular, Unsupported, detect,
                                 has_outlines, is_longitude)
from climio.core.inputs import Inputs, open_inputs
from climio.core.ranges import DimRange
from climio.subset.options import Area, Box
from climio.subset.regions import Region
from climio.subset.selection import Kept, Picked, Selection

if TYPE_CHECKING:
    from mpi4py import MPI

PIECE_BYTES = 256 * 2**20  # per rank and variable: larger variables are read and written in pieces
READS = ("needed", "whole")
CF_REFERENCES = ("coordinates", "bounds", "climatology", "cell_measures", "grid_mapping", "ancillary_variables",
                 "formula_terms")


@dataclass(frozen=True)
class Request:
    """Everything ``climio subset`` was asked to do."""

    inputs: list[str]
    output: str
    variables: list[str] | None = None
    ranges: list[DimRange] = field(default_factory=list)
    box: Box | None = None
    join: str | None = None
    union: bool = False
    mode: str | None = None
    read: str = "needed"
    slack: float = 0.1
    overwrite: bool = False
    hints: dict[str, str] | None = None
    history: str = ""
    compress: ncio.Settings | None = None  # NCO's -L / --ppc for the output (netCDF-4)
    touching: bool = False  # a box keeps every cell that overlaps it (by its bounds), not only those centred in it
    mask: bool = False  # data in cells of a box's or region's rectangle outside it become _FillValue
    region: Region | None = None  # --region: the cells of these polygons, cut as a box is
    weights: bool = False  # --weights: each kept cell's fraction inside the region, and its area there
    points: stations.Stations | None = None  # --points: the series at these stations, as a CF timeSeries file
    points_inside: bool = False  # a station's cell is the one that contains it, not the one with the nearest centre
    strict: bool = False  # a station off the grid is an error, not a warning and a filled series


@dataclass(frozen=True)
class Summary:
    path: str
    mode: str
    grid: str
    nranks: int
    variables: int
    dims: dict[str, tuple[int, int]]  # dimension -> (input length, output length)
    bytes_read: int
    bytes_selected: int
    seconds: float
    notes: tuple[str, ...] = ()  # e.g. "ncol matched to nMesh2_face by size"


def subset(request: Request, comm: MPI.Comm) -> Summary:
    """Run one subset (collective over ``comm``)."""
    from mpi4py import MPI

    if request.read not in READS:
        raise ClimioError(f"--read {request.read}: choose one of {', '.join(READS)}", collective=True)
    dims_given = [r.dim for r in request.ranges]
    repeated = sorted({d for d in dims_given if dims_given.count(d) > 1})
    if repeated:
        raise ClimioError(f"-d given twice for '{repeated[0]}': give one range per dimension (NCO multislabs "
                          f"are not supported)", collective=True)
    comm.Barrier()
    started = MPI.Wtime()
    with trace.phase("job"):  # the job's time from a barrier, for benchmarks
        with trace.phase("open"):
            # stations' cells are many small reads, which need no other rank: each reads on its own handle
            inputs = open_inputs(request.inputs, comm, request.join, request.union,
                                 read="independent" if request.points is not None else "parallel")
        if inputs.skipped and request.variables is None and comm.Get_rank() == 0:
            print(f"climio: warning: not copied (climio copies numeric, char and string variables of the root "
                  f"group): {'; '.join(inputs.skipped)}", file=sys.stderr)
        with inputs:
            job = _Job(request, inputs, comm)
            job.select()
            job.write()
        comm.Barrier()
    trace.count("selected", job.bytes_selected() if comm.Get_rank() == 0 else 0)
    nread = int(comm.allreduce(job.bytes_read, op=MPI.SUM))
    return Summary(request.output, job.mode, job.grid.family if job.grid else "none", comm.Get_size(),
                   len(job.names),
                   {d: (inputs.dims[d], s.count) for d, s in job.selections.items() if d in inputs.dims},
                   nread, job.bytes_selected(), MPI.Wtime() - started, tuple(job.notes))


class _Job:
    """One subset in progress: its inputs, grid, variables and per-dimension selections."""

    def __init__(self, request: Request, inputs: Inputs, comm: MPI.Comm) -> None:
        self.request = request
        self.inputs = inputs
        self.comm = comm
        self.grid = detect(inputs.dims, inputs.variables, inputs.attrs)
        self.names = self._choose_variables()
        self.used = list(dict.fromkeys(d for n in self.names for d in inputs.variables[n].dims))
        cuts = {r.dim for r in request.ranges} | ({"box"} if request.box or request.region else set())
        meshed = isinstance(self.grid, Mesh) and set(self.grid.elements) & set(self.used)
        # a mesh is only renumbered when something cuts it: otherwise its variables are copied as they are
        self.mesh = self.grid if meshed and cuts & ({"box"} | set(self.grid.elements)) else None
        self.selections: dict[str, Selection] = {}
        self.inside: curvilinear.Rectangle | None = None  # a box's or region's rectangle, when --mask asks for it
        self.inside_dims: tuple[str, ...] = ()  # and the grid dimensions it spans
        self.masked: set[str] = set()  # the data variables --mask fills outside the box
        self.counts: list[int] | None = None  # a rectangular SCRIP grid's grid_dims after the cut
        self._rows_read: dict[tuple[str, int, bytes], np.ndarray] | None = None  # a mesh's rows, while selecting
        self.schema: Schema | None = None  # the output's, once write() has declared it
        self.located: stations.Located | None = None  # --points: each station's cell
        self.station_dim = "station"  # --points: the output's station dimension, its names' length, and the names
        self.strlen_dim = "name_strlen"  # of the variables that describe the stations (role -> name)
        self.station_names: dict[str, str] = {}
        self.weight_names: dict[str, str] = {}  # --weights: "fraction" and "area" -> the variables' names
        self.cell_dims: tuple[str, ...] = ()  # --points: the dimensions that index the grid's cells
        self.aliases: dict[str, str] = {}  # and the dimensions of data beside a mesh file that are its cells
        self.bytes_read = 0
        compressing = request.compress is not None and request.compress.active
        self.mode = request.mode or ("hdf5" if compressing else  # compression needs netCDF-4
                                     ncio.FORMAT_WRITE_MODE.get(inputs.data_model, "cdf5"))  # NCO keeps the format

    # -- which variables -----------------------------------------------------------------------
    def _choose_variables(self) -> list[str]:
        variables = self.inputs.variables
        if self.request.variables is None:
            return list(variables)
        for name in self.request.variables:
            if name not in variables:
                raise ClimioError(f"-v: no variable '{name}' in {self.request.inputs[0]} (the inputs have: "
                                  f"{', '.join(variables)})", collective=True)
        return self._with_associated(self.request.variables)

    def _with_associated(self, names: list[str]) -> list[str]:
        """``names`` and everything they need (NCO's rule): coordinate variables, the CF references, and on a mesh
        its topology and geometry; in the inputs' order."""
        variables = self.inputs.variables
        chosen = set(names)
        todo = list(chosen)
        while todo:
            var = variables[todo.pop()]
            needed = {d for d in var.dims if d in variables}  # coordinate variables
            for key in CF_REFERENCES:
                needed |= {w for w in str(var.attrs.get(key, "")).split() if not w.endswith(":") and w in variables}
            if isinstance(self.grid, Mesh) and set(var.dims) & set(self.grid.elements):
                needed |= self.grid.grid_vars
            if isinstance(self.grid, Curvilinear) and set(self.grid.dims) <= set(var.dims):
                needed |= set(self.grid.grid_vars)
            for name in needed - chosen:
                chosen.add(name)
                todo.append(name)
        return [n for n in variables if n in chosen]

    # -- what is kept of each dimension ---------------------------------------------------------
    def select(self) -> None:
        ranges = {r.dim: r for r in self.request.ranges}
        for dim in ranges:
            if dim not in self.inputs.dims:
                raise ClimioError(f"-d {ranges[dim].text}: no dimension '{dim}' in the inputs (they have: "
                                  f"{', '.join(self.inputs.dims)})", collective=True)
        box: Area | None = self.request.box if self.request.box is not None else self.request.region
        flag = "--region" if self.request.region is not None else "-b/-X"
        grid = self.grid
        self.notes: list[str] = []
        if self.request.points is not None:
            with trace.phase("select"):
                self._select_points(ranges)
            return
        if box is not None and grid is None:
            raise ClimioError(f"{flag}: no latitude/longitude coordinates recognised in {self.request.inputs[0]}; "
                              f"select with -d instead", collective=True)
        if isinstance(grid, Unsupported):
            self._refuse_unsupported(grid, ranges, box, flag)
        if box is not None and isinstance(grid, Regular) and (grid.lat is None or grid.lon is None):
            have, lacks = ("latitude", "longitude") if grid.lon is None else ("longitude", "latitude")
            name = grid.lat or grid.lon
            raise ClimioError(f"{flag}: {self._file_of(name)} has a {have} '{name}' but no {lacks}, so a "
                              f"latitude/longitude {box.kind[4:]} does not apply; cut with -d {name},MIN.,MAX. "
                              f"instead",
                              collective=True)
        outlined = isinstance(grid, (Regular, Curvilinear, Points)) or (isinstance(grid, Mesh) and has_outlines(grid))
        if self.request.touching and box is not None and not outlined:
            raise ClimioError(f"--touching: {self._file_of(None)} is on a {grid.family if grid else 'unknown'} grid "
                              f"without cell corners, whose cells are chosen by their centre; leave out --touching",
                              collective=True)
        aliases: dict[str, str] = {}
        if isinstance(grid, Mesh):
            aliases = self._match_dims(grid, ranges, box)
            if self.mesh is None and set(aliases) & set(self.used) and (box is not None or set(ranges) & set(aliases)):
                # only data on the mesh (-v psi): the mesh comes along, as with data in the mesh's own file
                self.names = self._with_associated([*self.names, *sorted(grid.grid_vars)])
                self.used = list(dict.fromkeys(d for n in self.names for d in self.inputs.variables[n].dims))
                self.mesh = grid
        mesh_dims = set(self.mesh.elements) | set(aliases) if self.mesh else set()
        with trace.phase("select"):
            if isinstance(grid, Curvilinear) and box is not None and set(grid.dims) & set(self.used):
                self._select_rectangle(grid, ranges, box)
            if isinstance(grid, Regular) and isinstance(box, Region) and {grid.lat, grid.lon} & set(self.used):
                self._select_rectangle(self._plane(grid), ranges, box)
            for dim in self.used:
                if dim in self.selections:
                    continue
                if dim in mesh_dims:
                    continue
                self.selections[dim] = self._picked(dim, ranges.get(dim), box)
            if self.mesh is not None:
                self._select_mesh(self.mesh, ranges, box, aliases)
        if self.request.weights:
            self._check_weights()

    def _select_rectangle(self, grid: Curvilinear, ranges: dict[str, DimRange], box: Area) -> None:
        """The index rectangle of a curvilinear grid (or a regular one seen as such) that holds the box's or
        region's cells; with --mask, which of its cells are outside it."""
        for dim in (*grid.dims, *grid.corner_dims):
            if dim in ranges:
                raise ClimioError(f"-d {ranges[dim].text} and a box both select '{dim}' (a dimension of the "
                                  f"curvilinear grid of {grid.lat}): give one of them", collective=True)
        rows = self._plane_rows if isinstance(self.grid, Regular) else self._read_rows
        rectangle = curvilinear.select(grid, box, self.request.touching, rows, dict(self.inputs.dims),
                                       self.comm, self._file_of(grid.lat), self.request.mask)
        for dim in (*grid.dims, *grid.corner_dims):  # in the grid's order, as the summary line lists them
            if dim in self.used:
                self.selections[dim] = Picked(dim, self.inputs.dims[dim], rectangle.picks[dim])
        if self.request.mask:
            self.inside, self.inside_dims = rectangle, grid.dims
            shapes = {n: (v.dims, v.attrs) for n, v in self.inputs.variables.items()}
            self.masked = {n for n in data_variables(shapes) if n in self.names
                           and set(grid.dims) <= set(self.inputs.variables[n].dims)}

    def _plane(self, grid: Regular) -> Curvilinear:
        """A regular grid seen as a curvilinear one over its two axes (a region is not a product of ranges)."""
        lat, lon = str(grid.lat), str(grid.lon)
        bounded = grid.lat_bounds is not None and grid.lon_bounds is not None
        return Curvilinear(lat, lon, (lat, lon), grid.lat_bounds if bounded else None,
                           grid.lon_bounds if bounded else None, radians=grid.radians)

    def _plane_rows(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Rows of a regular grid's 2-D latitude, longitude or (from the axes' bounds) cell corners, as a
        curvilinear grid's would be read."""
        grid = self.grid
        assert isinstance(grid, Regular) and grid.lat is not None and grid.lon is not None
        nlon = self.inputs.dims[grid.lon]
        if name == grid.lat:
            return np.repeat(self._read_rows(grid.lat, rows)[:, None], nlon, axis=1)
        if name == grid.lon:
            return np.repeat(self._read_rows(grid.lon, np.arange(nlon))[None, :], len(rows), axis=0)
        lat_edges = self._read_rows(str(grid.lat_bounds), rows)  # corners: (south, west) (south, east) ...
        lon_edges = self._read_rows(str(grid.lon_bounds), np.arange(nlon))
        low, high = lat_edges.min(axis=1), lat_edges.max(axis=1)
        if name == grid.lat_bounds:
            return np.broadcast_to(np.stack([low, low, high, high], axis=-1)[:, None, :], (len(rows), nlon, 4))
        west, east = lon_edges[:, 0], lon_edges[:, 1]
        return np.broadcast_to(np.stack([west, east, east, west], axis=-1)[None, :, :], (len(rows), nlon, 4))

    def _file_of(self, var: str | None) -> str:
        """The input file that holds a variable (the first input when unknown)."""
        return self.request.inputs[self.inputs.source.get(var, 0) if var is not None else 0]

    def _refuse_unsupported(self, grid: Unsupported, ranges: dict[str, DimRange], box: Area | None,
                            flag: str) -> None:
        """A layout climio cannot cut by a box: refuse -b/-X (--region) by name, and -d on dimensions others
        index into."""
        where = self._file_of(grid.var)
        if box is not None:
            raise ClimioError(f"{where} is {grid.what}: {flag} is not supported on it; {grid.advice}",
                              collective=True)
        for dim in ranges:
            if dim in grid.linked:
                raise ClimioError(f"-d {ranges[dim].text}: {where} is {grid.what}, whose other variables index "
                                  f"'{dim}': cutting it would break them; cut another dimension or use -v",
                                  collective=True)

    def _match_dims(self, mesh: Mesh, ranges: dict[str, DimRange], box: Area | None,
                    stations_asked: bool = False) -> dict[str, str]:
        """Dimensions of other inputs that are the mesh's elements under another name (data beside a mesh file).

        A dimension matches when exactly one element dimension of the mesh has its length; with several
        candidates the cut is refused (only when the mesh is cut and the dimension is used)."""
        inputs = self.inputs
        if inputs.join is not None or len(inputs.stores) < 2:
            return {}
        home = self._mesh_store(mesh)
        own = set(inputs.stores[home].schema.dims)
        cutting = stations_asked or box is not None or any(d in mesh.elements for d in ranges)
        aliases: dict[str, str] = {}
        for k, store in enumerate(inputs.stores):
            if k == home:
                continue
            for dim, length in store.schema.dims.items():
                if dim in own or dim in aliases or length is None or dim not in self.used or self._is_axis(dim):
                    continue
                candidates = [e for e in mesh.elements if inputs.dims[e] == length]
                if len(candidates) == 1:
                    aliases[dim] = candidates[0]
                    self.notes.append(f"{dim} matched to {candidates[0]} by size")
                elif candidates and cutting:
                    raise ClimioError(
                        f"dimension '{dim}' of {self.request.inputs[k]} has {length} elements, as the mesh's "
                        f"{' and '.join(candidates)} in {self.request.inputs[home]}: climio cannot tell which it "
                        f"is; rename it to one of them (ncrename -d {dim},{candidates[0]}) or leave its variables "
                        f"out with -v", collective=True)
        return aliases

    def _mesh_store(self, mesh: Mesh) -> int:
        """Which input holds the mesh (its first connectivity or centre variable)."""
        marker = mesh.connectivity[0].var if mesh.connectivity else (mesh.lat or mesh.primary)
        return self.inputs.source.get(marker, 0)

    def _mesh_file(self, mesh: Mesh) -> str:
        return self.request.inputs[self._mesh_store(mesh)]

    def _is_axis(self, dim: str) -> bool:
        """A dimension with a time, vertical or lat/lon coordinate variable: never a mesh element."""
        var = self.inputs.variables.get(dim)
        if var is None or var.dims != (dim,):
            return False
        a = var.attrs
        return (str(a.get("axis", "")).upper() in ("T", "Z", "X", "Y") or "positive" in a
                or "since" in str(a.get("units", "")) or a.get("standard_name") == "time")

    def _coordinate(self, dim: str) -> np.ndarray | None:
        var = self.inputs.variables.get(dim)
        if var is None or var.dims != (dim,):
            return None
        (values,) = self.inputs.read_runs(dim, [Hyperslab.whole(self.inputs.shape(dim))])
        self.bytes_read += values.nbytes
        return values

    def _picked(self, dim: str, given: DimRange | None, box: Area | None) -> Picked:
        size = self.inputs.dims[dim]
        grid = self.grid
        boxed = box is not None and ((isinstance(grid, Regular) and dim in (grid.lat, grid.lon))
                                     or (isinstance(grid, Points) and dim == grid.dim))
        if boxed and given is not None:
            raise ClimioError(f"-d {given.text} and a box both select '{dim}': give one of them", collective=True)
        if given is None and not boxed:
            return Picked(dim, size)
        coord = self._coordinate(dim)
        if given is not None:
            var = self.inputs.variables.get(dim)
            attrs = var.attrs if var is not None else {}
            units, calendar = attrs.get("units"), attrs.get("calendar")
            return Picked(dim, size, given.resolve(size, coord, is_longitude(var),
                                                   units=None if units is None else str(units),
                                                   calendar=None if calendar is None else str(calendar)))
        if isinstance(grid, Points) and box is not None:
            return self._picked_points(grid, box)
        assert isinstance(grid, Regular) and isinstance(box, Box) and coord is not None
        degrees = np.degrees(coord) if grid.radians else coord.astype(np.float64)
        inside = box.contains_lat(degrees) if dim == grid.lat else box.contains_lon(degrees)
        if self.request.touching:
            inside |= self._touching_axis(grid, dim, box)
        picked = np.flatnonzero(inside)
        if dim == grid.lon:
            picked = _wrapped(picked, size)
        if picked.size == 0:
            what = f"cell of '{dim}' (by its bounds) overlaps" if self.request.touching else f"'{dim}' value"
            raise ClimioError(f"the box selects nothing: no {what} of {self.request.inputs[0]} lies in "
                              f"{box.description}", collective=True)
        return Picked(dim, size, picked)

    def _touching_axis(self, grid: Regular, dim: str, box: Box) -> np.ndarray:
        """Cells of a regular grid's latitude or longitude axis whose bounds overlap the box's range."""
        bounds = grid.lat_bounds if dim == grid.lat else grid.lon_bounds
        if bounds is None:
            raise curvilinear.no_bounds(self._file_of(dim), f"'{dim}'")
        (edges,) = self.inputs.read_runs(bounds, [Hyperslab.whole(self.inputs.shape(bounds))])
        self.bytes_read += edges.nbytes
        edges = np.degrees(edges) if grid.radians else edges.astype(np.float64)
        low, high = edges.min(axis=1), edges.max(axis=1)
        if dim == grid.lat:
            return box.overlaps_lat(low, high)
        first, second = edges[:, 0], edges[:, 1]  # eastward from the first bound to the second
        return box.overlaps_lon(first, first + np.mod(second - first, 360.0))

    def _picked_points(self, grid: Points, box: Area) -> Picked:
        """Elements whose 1-D auxiliary latitude/longitude lie in the box (inclusive), in input order, as
        ``ncks -X`` keeps them; each rank tests its block and every rank learns the whole list."""
        size = self.inputs.dims[grid.dim]
        if grid.rectangular:
            return self._picked_rows(grid, box)
        lo, n = block_range(size, self.comm.Get_size(), self.comm.Get_rank())
        mine = np.arange(lo, lo + n)
        touching = self.request.touching
        if touching and (grid.lat_bounds is None or grid.lon_bounds is None):
            raise curvilinear.no_bounds(self._file_of(grid.lat), f"{grid.lat}/{grid.lon}")
        names = [grid.lat, grid.lon, *((grid.lat_bounds or "", grid.lon_bounds or "") if touching else ())]
        lat, lon, *corners = (self._read_rows(name, mine).astype(np.float64) for name in names)
        if grid.radians:
            lat, lon, *corners = (np.degrees(values) for values in (lat, lon, *corners))
        with np.errstate(invalid="ignore"):
            inside = box.contains(lat, lon)
            if corners:
                inside |= box.touches(*corners)
            local = mine[inside]
        picked = np.concatenate(self.comm.allgather(local)).astype(np.int64)
        if picked.size == 0:
            how = "overlaps" if touching else "lies in"
            raise ClimioError(f"{box.kind} selects nothing: no {'cell' if touching else 'point'} of '{grid.dim}' in "
                              f"{self._file_of(grid.lat)} ({grid.lat}, {grid.lon}) {how} {box.description}",
                              collective=True)
        return Picked(grid.dim, size, picked)

    def _picked_rows(self, grid: Points, box: Area) -> Picked:
        """On a logically rectangular SCRIP grid, the cells of the index rectangle that holds the box's cells
        (:mod:`climio.subset.curvilinear` on its rows), in row order; ``grid_dims`` becomes the rectangle's."""
        assert grid.count is not None
        size = self.inputs.dims[grid.dim]
        (shape,) = self.inputs.read_runs(grid.count, [Hyperslab.whole(self.inputs.shape(grid.count))])
        nx, ny = (int(v) for v in shape)
        if nx * ny != size:
            raise ClimioError(f"{self._file_of(grid.count)}: {grid.count} = {nx}, {ny} does not give its {size} "
                              f"cells ({grid.dim}); fix {grid.count}, or cut with -d {grid.dim},...", collective=True)

        def rows(name: str, j: np.ndarray) -> np.ndarray:
            values = self._read_rows(name, (j[:, None] * nx + np.arange(nx)[None, :]).ravel())
            return values.reshape(len(j), nx, *values.shape[1:])

        plane = Curvilinear(grid.lat, grid.lon, ("y", "x"), grid.lat_bounds, grid.lon_bounds, radians=grid.radians)
        rectangle = curvilinear.select(plane, box, self.request.touching, rows, {"y": ny, "x": nx}, self.comm,
                                       self._file_of(grid.lat), False)
        y, x = rectangle.picks["y"], rectangle.picks["x"]
        self.counts = [len(x), len(y)]
        return Picked(grid.dim, size, (y[:, None] * nx + x[None, :]).ravel())

    def _select_mesh(self, mesh: Mesh, ranges: dict[str, DimRange], box: Area | None,
                     aliases: dict[str, str] | None = None) -> None:
        self._rows_read = {}
        try:
            self._select_mesh_elements(mesh, ranges, box, aliases)
        finally:
            self._rows_read = None

    def _select_mesh_elements(self, mesh: Mesh, ranges: dict[str, DimRange], box: Area | None,
                              aliases: dict[str, str] | None = None) -> None:
        comm = self.comm
        aliases = aliases or {}
        ranges = dict(ranges)
        for dim, element in aliases.items():  # -d on a matched dimension selects its mesh elements
            if dim in ranges:
                if element in ranges:
                    raise ClimioError(f"-d {ranges[dim].text} and -d {ranges[element].text} both select "
                                      f"'{element}' ('{dim}' is matched to it): give one of them", collective=True)
                ranges[element] = ranges.pop(dim)
        kept = {d: Kept(d, self.inputs.dims[d], comm) for d in mesh.elements}
        primary = kept[mesh.primary]
        for dim in ranges:
            if dim in kept and dim != mesh.primary:
                raise ClimioError(f"-d {ranges[dim].text}: on a {mesh.family} mesh select cells ('{mesh.primary}') "
                                  f"with -b/-X or -d {mesh.primary},...; corners and edges follow them",
                                  collective=True)
        mine = np.arange(primary.lo, primary.lo + primary.nlocal)
        primary.mask[:] = True
        if box is not None:
            lat, lon = self._centres(mesh, mine)
            with np.errstate(invalid="ignore"):
                inside = box.contains(lat, lon)
                if self.request.touching:  # or whose outline, from its corners, shares some area with it
                    inside |= box.touches(*self._corners(mesh, mine))
                primary.mask &= inside
        if mesh.primary in ranges:
            primary.mask &= np.isin(mine, ranges[mesh.primary].resolve(primary.size, None, False))
        primary.number()
        if primary.count == 0:
            where = box.description if box is not None else f"-d {ranges[mesh.primary].text}"
            raise ClimioError(f"{where} selects no cell of the {mesh.family} mesh in {self._mesh_file(mesh)}",
                              collective=True)
        self._check_links(mesh, primary.local_kept())
        reached = {mesh.primary}
        for conn in mesh.closure:  # cells -> corners/edges, then (UGRID) edges -> nodes: kept elements are whole
            kept[conn.target].mark(self._targets(conn, kept[conn.source].local_kept(), mesh))
            reached.add(conn.target)
        for dim in mesh.elements:
            if dim not in reached:
                self._keep_by_links(mesh, kept, dim, reached)
        for dim in mesh.elements:
            if dim != mesh.primary:
                kept[dim].number()
        self.selections.update({d: k for d, k in kept.items() if d in self.used})
        self.selections.update({d: kept[e] for d, e in aliases.items() if d in self.used})

    def _check_links(self, mesh: Mesh, cells: np.ndarray) -> None:
        """Warn (collective; rank 0 prints) when a mesh's cell -> edge table disagrees with its edge -> node and
        cell -> node tables on the kept cells: an edge whose nodes are not its cell's (FESOM's face_edges, stored
        1-based without saying so). The table is still copied and renumbered as stored."""
        from mpi4py import MPI

        def link(source: str, target: str) -> Connectivity | None:
            return next((c for c in mesh.connectivity if (c.source, c.target) == (source, target)), None)

        def ends(c: Connectivity) -> int:  # entries per row: an edge -> node table has two
            return self.inputs.shape(c.var)[1 - c.axis]

        for edges in (c for c in mesh.connectivity if c.source == mesh.primary and c.target != mesh.primary):
            for nodes in (c for c in mesh.connectivity if c.source == edges.target and ends(c) == 2
                          and c.target not in (edges.target, mesh.primary)):
                corners = link(mesh.primary, nodes.target)
                if corners is None:
                    continue
                edge_rows = self._read_links(edges, cells)
                among = None
                if mesh.sides is not None:
                    sides = self._read_rows(mesh.sides, cells)
                    among = np.arange(edge_rows.shape[1])[None, :] < sides[:, None]
                valid, index = self._entries(edges, edge_rows, among)
                edges_used, where = np.unique(index, return_inverse=True)  # each edge once, in order (cells share)
                pairs = self._read_links(nodes, edges_used).astype(np.int64)[where] - nodes.start
                own = self._read_links(corners, cells).astype(np.int64) - corners.start
                rows = np.nonzero(valid)[0]  # the cell of each listed edge, in the order of ``index``
                found = (own[rows][:, :, None] == pairs[:, None, :]).any(axis=1) | (pairs < 0)
                wrong = np.zeros(len(cells), dtype=bool)
                wrong[rows[~found.all(axis=1)]] = True
                bad, total = self.comm.allreduce(np.array([int(wrong.sum()), len(cells)]), op=MPI.SUM)
                if bad and self.comm.Get_rank() == 0:
                    print(f"climio: warning: {self._file_of(edges.var)}: '{edges.var}' disagrees with '{nodes.var}' "
                          f"and '{corners.var}': {bad} of the {total} cells kept list an edge whose nodes are not "
                          f"theirs (is its start_index right?); it is copied and renumbered as stored",
                          file=sys.stderr)

    def _centres(self, mesh: Mesh, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cell-centre latitude and longitude in degrees of the given cells.

        From the mesh's centre variables; on a UGRID mesh without ``face_coordinates``, the centroid of the
        face's nodes: the mean of their unit vectors, normalised (as UXarray computes face centres)."""
        if mesh.lat is not None and mesh.lon is not None:
            lat, lon = self._lat_lon(mesh, mesh.lat, mesh.lon, cells)
            return (np.degrees(lat), np.degrees(lon)) if mesh.radians else (lat, lon)
        conn = mesh.corner_links
        if conn is None or mesh.node_lat is None or mesh.node_lon is None:
            raise ClimioError(f"-b/-X: the {mesh.family} mesh in {self._mesh_file(mesh)} has no cell-centre "
                              f"latitude/longitude variables (nor node latitude/longitude to compute them from)",
                              collective=True)
        links = self._read_links(conn, cells)
        valid, index = self._entries(conn, links)
        nodes, inverse = np.unique(index, return_inverse=True)
        lat, lon = self._lat_lon(mesh, mesh.node_lat, mesh.node_lon, nodes)
        if not mesh.node_radians:
            lat, lon = np.radians(lat), np.radians(lon)
        xyz = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])[:, inverse]
        face = np.nonzero(valid)[0]
        sx, sy, sz = (np.bincount(face, weights=w, minlength=len(cells)) for w in xyz)
        with np.errstate(invalid="ignore", divide="ignore"):
            norm = np.sqrt(sx * sx + sy * sy + sz * sz)
            empty = ~(norm > 0)
            clat = np.degrees(np.arctan2(sz, np.hypot(sx, sy)))
            clon = np.degrees(np.arctan2(sy, sx))
        clat[empty], clon[empty] = np.nan, np.nan
        return clat, clon

    def _lat_lon(self, mesh: Mesh, lat: str, lon: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Latitude and longitude of some elements, from two variables or (ESMF) the columns of one."""
        if mesh.columns:
            both = self._read_rows(lat, rows).astype(np.float64)
            return both[:, 1], both[:, 0]
        return self._read_rows(lat, rows).astype(np.float64), self._read_rows(lon, rows).astype(np.float64)

    def _entries(self, conn: Connectivity, links: np.ndarray,
                 among: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Which entries of connectivity rows name an element (not the convention's "none", not below its
        ``start_index``; ``among`` narrows them further) and those elements' 0-based indices (collective: an
        entry past the target's end is refused on every rank together)."""
        valid = (links != conn.none) & (links >= conn.start)
        if among is not None:
            valid &= among
        index = links[valid].astype(np.int64) - conn.start
        self._check_range(conn, index)
        return valid, index

    def _check_range(self, conn: Connectivity, index: np.ndarray) -> None:
        """Refuse, on every rank together, a connectivity entry past the end of its target dimension."""
        size = self.inputs.dims[conn.target]
        if not mpi.all_true(self.comm, index.size == 0 or int(index.max()) < size):
            raise ClimioError(f"connectivity '{conn.var}' in {self._file_of(conn.var)} has an entry beyond dimension "
                              f"'{conn.target}' ({size} elements, start_index {conn.start}): the file's topology "
                              f"does not fit its dimensions", collective=True)

    def _keep_by_links(self, mesh: Mesh, kept: dict[str, Kept], dim: str, reached: set[str]) -> None:
        """Elements no closure reaches (a UGRID mesh without face_edge_connectivity): keep an edge when a kept
        face uses it, else when all its nodes are kept; with no link at all, keep every element."""
        links = [c for c in mesh.connectivity if c.source == dim and c.target in reached]
        links.sort(key=lambda c: c.target != mesh.primary)
        own = kept[dim]
        if not links:
            own.mask[:] = True
            return
        conn = links[0]
        rows = self._read_links(conn, np.arange(own.lo, own.lo + own.nlocal))
        valid, index = self._entries(conn, rows)
        if conn.target == mesh.primary:
            new = np.full(rows.shape, -1, dtype=np.int64)
            new[valid] = kept[conn.target].lookup(index)
            own.mask[:] = np.any(new >= 0, axis=1)
        else:
            target = kept[conn.target]
            hits = distribute.ask(self.comm, index, target.size, target.mask.astype(np.int8))
            ok = np.ones(rows.shape, dtype=bool)
            ok[valid] = hits > 0
            own.mask[:] = np.all(ok, axis=1) & np.any(valid, axis=1)
        reached.add(dim)

    def _targets(self, conn: Connectivity, cells: np.ndarray, mesh: Mesh) -> np.ndarray:
        """Global indices of the elements that the given cells use through ``conn``."""
        rows = self._read_links(conn, cells)
        among = None
        if mesh.sides is not None and conn.source == mesh.primary:
            sides = self._read_rows(mesh.sides, cells)
            among = np.arange(rows.shape[1])[None, :] < sides[:, None]
        return np.unique(self._entries(conn, rows, among)[1])

    def _read_links(self, conn: Connectivity, rows: np.ndarray) -> np.ndarray:
        """The connectivity rows of the given elements as (elements, n_max), whatever the stored orientation."""
        return self._read_rows(conn.var, rows, conn.axis)

    def _read_rows(self, name: str, rows: np.ndarray, axis: int = 0) -> np.ndarray:
        """Rows along dimension ``axis`` (the first by default) of a variable, every other dimension whole;
        the rows come first in the result (collective). While a mesh is selected, rows that every rank asked for
        before are not read again (a rank alone must not skip the collective read)."""
        rows = np.asarray(rows, dtype=np.int64)
        key = (name, axis, rows.tobytes())
        if self._rows_read is not None and mpi.all_true(self.comm, key in self._rows_read):
            return self._rows_read[key]
        var = self.inputs.variables[name]
        axes = [np.arange(n) for n in self.inputs.shape(name)]
        axes[axis] = rows
        data, nread = reader.read(self.inputs.read_runs, name, axes, var.numpy_dtype, self.request.slack,
                                  self.inputs.shape(name))
        self.bytes_read += nread
        data = np.moveaxis(data, axis, 0) if axis else data
        if self._rows_read is not None:
            self._rows_read[key] = data
        return data

    # -- a region's weights (--weights) -----------------------------------------------------------
    def _weight_dims(self) -> tuple[str, ...]:
        """The dimensions of the grid's cells, which the weights span."""
        grid = self.grid
        if isinstance(grid, Regular):
            return (str(grid.lat), str(grid.lon))
        if isinstance(grid, Curvilinear):
            return grid.dims
        return (grid.dim,) if isinstance(grid, Points) else (grid.primary,) if isinstance(grid, Mesh) else ()

    def _check_weights(self) -> None:
        """--weights needs a region and the cells' outlines; it names the variables it adds."""
        grid, where = self.grid, self._file_of(None)
        if self.request.region is None:
            raise ClimioError("--weights applies to a region: give --region FILE[:NAME]", collective=True)
        if not has_outlines(grid) or not all(d in self.selections for d in self._weight_dims()):
            raise ClimioError(f"--weights: {where} gives its cells no bounds (no CF 'bounds' attribute, no mesh "
                              f"corners), so their part in the region is unknown; leave out --weights",
                              collective=True)
        taken = set(self.inputs.variables)
        self.weight_names = {k: _free_name((f"region_{k}", f"region_{k}_weight"), taken)
                             for k in ("fraction", "area")}

    def _weight_variables(self) -> list[Variable]:
        dims = self._weight_dims()
        return [Variable(self.weight_names["fraction"], "f8", dims, {
                    "long_name": f"fraction of the cell's area inside {self.request.region.description}",
                    "units": "1", "comment": "exact intersection of the cell and the region as polygons in the "
                    "longitude-latitude plane"}),
                Variable(self.weight_names["area"], "f8", dims, {
                    "standard_name": "cell_area", "units": "m2",
                    "long_name": f"area of the cell inside {self.request.region.description}",
                    "comment": f"the cell's area on a sphere of radius {EARTH_RADIUS_M:.0f} m times "
                    f"{self.weight_names['fraction']}: a region's mean is the sum of a field times this, over its "
                    f"sum"})]

    def _write_weights(self, out: Store) -> None:
        """Each rank its block of the output's cells (along their first dimension): fraction and area."""
        grid, region = self.grid, self.request.region
        assert region is not None
        dims = self._weight_dims()
        start, mine = self.selections[dims[0]].share(self.comm)
        rest = [self.selections[d].indices for d in dims[1:]]  # type: ignore[union-attr]
        if isinstance(grid, Regular):
            lat_c, lon_c = (self._plane_rows(str(name), mine)[:, rest[0]]
                            for name in (grid.lat_bounds, grid.lon_bounds))
            scale = np.degrees if grid.radians else np.asarray
            lat_c, lon_c = scale(lat_c.astype(np.float64)), scale(lon_c.astype(np.float64))
            areas = regions.rectangle_areas(np.stack([lat_c[:, 0, 0], lat_c[:, 0, 2]], axis=1),
                                            np.stack([lon_c[0, :, 0], lon_c[0, :, 1]], axis=1)) if mine.size \
                else np.zeros((0, len(rest[0])))
        else:
            if isinstance(grid, Curvilinear):
                lat_c, lon_c = curvilinear.corners(grid, self._read_rows, mine, self._file_of(grid.lat))
                lat_c, lon_c = (c[(slice(None), *np.ix_(*rest))] if rest else c for c in (lat_c, lon_c))
            elif isinstance(grid, Points):
                scale = np.degrees if grid.radians else np.asarray
                lat_c, lon_c = (scale(self._read_rows(str(n), mine).astype(np.float64))
                                for n in (grid.lat_bounds, grid.lon_bounds))
            else:
                assert isinstance(grid, Mesh)
                lat_c, lon_c = self._corners(grid, mine)
            areas = regions.polygon_areas(lat_c, lon_c)
        fractions = region.fractions(lat_c, lon_c)
        at = Hyperslab((start, *(0,) * len(rest)), fractions.shape)
        out.write(self.weight_names["fraction"], fractions, at)
        out.write(self.weight_names["area"], fractions * areas, at)

    # -- stations (--points) -----------------------------------------------------------------------
    def _select_points(self, ranges: dict[str, DimRange]) -> None:
        """Each station's cell, the variables that become series (those on the grid's cells, and those off the
        grid as they are), and the output's station dimension."""
        grid, points = self.grid, self.request.points
        assert points is not None
        if grid is None:
            raise ClimioError(f"--points: no latitude/longitude coordinates recognised in {self._file_of(None)}",
                              collective=True)
        if isinstance(grid, Unsupported):
            raise ClimioError(f"--points: {self._file_of(grid.var)} is {grid.what}, where stations cannot be placed; "
                              f"{grid.advice}", collective=True)
        if isinstance(grid, Regular) and (grid.lat is None or grid.lon is None):
            lacks, name = ("longitude", grid.lat) if grid.lon is None else ("latitude", grid.lon)
            raise ClimioError(f"--points: {self._file_of(name)} has no {lacks} coordinate, so stations cannot be "
                              f"placed on its grid", collective=True)
        self.cell_dims = dims = stations.cell_dims(grid)
        grid_dims = set(dims) | set(grid.elements if isinstance(grid, Mesh) else ()) | \
            set(grid.corner_dims if isinstance(grid, Curvilinear) else ())
        for dim in ranges:
            if dim not in self.inputs.dims:
                continue
            if dim in grid_dims:
                raise ClimioError(f"-d {ranges[dim].text} and --points both select '{dim}': give one of them",
                                  collective=True)
        if isinstance(grid, Mesh):
            self.aliases = {d: e for d, e in self._match_dims(grid, ranges, None, stations_asked=True).items()
                            if e == grid.primary}
            grid_dims |= set(self.aliases)
        geometry = self._geometry(grid)
        self.names = [n for n in self.names if n not in geometry and self._on_cells(n, dims, grid_dims)]
        if not any(self._out_dims(self.inputs.variables[n]) != self.inputs.variables[n].dims for n in self.names):
            chosen = f"of -v {','.join(self.request.variables)} " if self.request.variables else ""
            raise ClimioError(f"--points: no variable {chosen}in {self._file_of(None)} lies on its grid's cells "
                              f"({', '.join(dims)})", collective=True)
        mappings = {str(self.inputs.variables[n].attrs.get("grid_mapping", "")) for n in self.names}
        self.names = [n for n in self.names if n not in mappings]
        self._rows_read = {}
        try:
            self.located = stations.locate(points, grid, dict(self.inputs.dims), self.comm, self._read_rows,
                                           self._centres, self._corners, self.request.points_inside,
                                           self._file_of(grid.lat if not isinstance(grid, Mesh) else grid.lat
                                                         or grid.node_lat))
        finally:
            self._rows_read = None
        self.station_dim = _free_name(("station", "stations", "nstation"), set(self.inputs.dims))
        self.strlen_dim = _free_name(("name_strlen", "station_strlen"), set(self.inputs.dims))
        self.station_names = {role: _free_name((role, f"station_{role}"), set(self.names))
                              for role in ("station_name", "lat", "lon", "cell_lat", "cell_lon", "distance")}
        self.used = list(dict.fromkeys(d for n in self.names for d in self._out_dims(self.inputs.variables[n])))
        for dim in self.used:
            if dim != self.station_dim:
                self.selections[dim] = self._picked(dim, ranges.get(dim), None)
        self.selections[self.station_dim] = Picked(self.station_dim, len(points))
        self._report_off_grid(points)

    def _report_off_grid(self, points: stations.Stations) -> None:
        """Stations off the grid: one warning (rank 0) and their series filled, or with --strict an error."""
        assert self.located is not None
        off = [points.names[k] for k in np.flatnonzero(self.located.off)]
        inside = self.request.points_inside
        self.notes.append(f"{len(points)} station{'s' if len(points) != 1 else ''}, "
                          f"{'the cell holding each' if inside else 'nearest cells'}"
                          + (f", {len(off)} off the grid" if off else ""))
        if not off:
            return
        listed = ", ".join(off[:10]) + (f" and {len(off) - 10} more" if len(off) > 10 else "")
        what = "in no cell of" if inside else "off the grid of"
        if self.request.strict:
            raise ClimioError(f"--points {points.path}: {len(off)} station(s) {what} {self._file_of(None)} "
                              f"({listed}); leave them out, or drop --strict to have their series filled",
                              collective=True)
        if self.comm.Get_rank() == 0:
            print(f"climio: warning: --points {points.path}: {len(off)} station(s) {what} {self._file_of(None)} "
                  f"({listed}): their series are _FillValue", file=sys.stderr)

    def _geometry(self, grid: Regular | Curvilinear | Points | Mesh) -> set[str]:
        """The grid's own coordinates and topology: the output gives each station's cell centre instead."""
        if isinstance(grid, Mesh):
            return set(grid.grid_vars) | {n for n in (grid.lat, grid.lon) if n is not None}
        names = {grid.lat, grid.lon, grid.lat_bounds, grid.lon_bounds}
        if isinstance(grid, Points):
            names.add(grid.count)
        return {n for n in names if n is not None}

    def _on_cells(self, name: str, dims: tuple[str, ...], grid_dims: set[str]) -> bool:
        """Whether a variable goes to the output: it has all the cell dimensions side by side (a series at each
        station), or none of the grid's dimensions (copied); a grid's axis or corners alone are left out."""
        var_dims = tuple(self.aliases.get(d, d) for d in self.inputs.variables[name].dims)
        touched = set(var_dims) & grid_dims
        if not touched:
            return True
        if touched != set(dims):
            return False
        where = sorted(var_dims.index(d) for d in dims)
        if where != list(range(where[0], where[0] + len(dims))):
            raise ClimioError(f"--points: variable '{name}' in {self._file_of(name)} has the grid's dimensions "
                              f"apart {var_dims}; leave it out with -v", collective=True)
        return True

    def _out_dims(self, var: Variable) -> tuple[str, ...]:
        """A variable's dimensions in the output: with --points, its cell dimensions become the station's."""
        cells = [k for k, d in enumerate(var.dims) if self.aliases.get(d, d) in self.cell_dims]
        if not cells:
            return var.dims
        return (*var.dims[:cells[0]], self.station_dim, *var.dims[cells[0] + len(self.cell_dims):])

    def _corners(self, mesh: Mesh, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The corners of the given cells of a mesh in degrees, (cells, n_max), in order around each cell; a
        cell with fewer repeats its last corner."""
        conn = mesh.corner_links
        assert conn is not None and mesh.node_lat is not None and mesh.node_lon is not None
        links = self._read_links(conn, cells)
        among = None
        if mesh.sides is not None and conn.source == mesh.primary:
            sides = self._read_rows(mesh.sides, cells)
            among = np.arange(links.shape[1])[None, :] < sides[:, None]
        valid, index = self._entries(conn, links, among)
        nodes, inverse = np.unique(index, return_inverse=True)
        lat, lon = self._lat_lon(mesh, mesh.node_lat, mesh.node_lon, nodes)
        if mesh.node_radians:
            lat, lon = np.degrees(lat), np.degrees(lon)
        corner_lat, corner_lon = np.full(links.shape, np.nan), np.full(links.shape, np.nan)
        corner_lat[valid], corner_lon[valid] = lat[inverse], lon[inverse]
        last = np.maximum.accumulate(np.where(valid, np.arange(links.shape[1])[None, :], 0), axis=1)
        rows = np.arange(links.shape[0])[:, None]
        return corner_lat[rows, last], corner_lon[rows, last]

    def _cell_chunks(self, var: Variable) -> tuple[int, ...] | None:
        """The variable's storage chunks along its cell dimensions (None: contiguous)."""
        at = self._out_dims(var).index(self.station_dim)
        chunks = self.inputs.chunks(var.name)
        return chunks[at:at + len(self.cell_dims)] if chunks is not None else None

    def _cells(self, var: Variable, numbers: np.ndarray) -> np.ndarray:
        """The given stations' cells as indices along the variable's cell dimensions, in its order: (n, h)."""
        assert self.located is not None
        at = self._out_dims(var).index(self.station_dim)
        dims = var.dims[at:at + len(self.cell_dims)]
        return np.stack([self.located.cells[self.aliases.get(d, d)][numbers] for d in dims], axis=1)

    def _read_bytes(self, var: Variable, axes: list[np.ndarray]) -> int:
        """The bytes a rank reads for its share of a variable: its share itself, or the boxes its stations'
        cells are read in."""
        dims = self._out_dims(var)
        if dims == var.dims:
            return math.prod(len(a) for a in axes) * var.numpy_dtype.itemsize
        at = dims.index(self.station_dim)
        cells = sum(g.size for g in reader.group_cells(self._cells(var, axes[at]), self._cell_chunks(var)))
        return cells * math.prod(len(a) for k, a in enumerate(axes) if k != at) * var.numpy_dtype.itemsize

    def _station_variables(self) -> list[Variable]:
        """Each station's name, place, cell centre and distance, and its cell's indices in the input."""
        assert self.located is not None and self.request.points is not None
        station, located, names = self.station_dim, self.located, self.station_names
        fill = fill_value({}, np.dtype("f8"))
        out = [Variable(names["station_name"], "S1", (station, self.strlen_dim),
                        {"long_name": "station name", "cf_role": "timeseries_id"}),
               Variable(names["lat"], "f8", (station,), {"standard_name": "latitude", "long_name": "station latitude",
                                                         "units": "degrees_north"}),
               Variable(names["lon"], "f8", (station,), {"standard_name": "longitude",
                                                         "long_name": "station longitude", "units": "degrees_east"})]
        how = "the cell that holds the station" if self.request.points_inside else "the cell nearest the station"
        for role, axis, units in (("cell_lat", "latitude", "degrees_north"), ("cell_lon", "longitude", "degrees_east")):
            out.append(Variable(names[role], "f8", (station,), {
                "long_name": f"{axis} of the centre of {how}, whose series this is", "units": units,
                "_FillValue": fill}))
        out.append(Variable(names["distance"], "f8", (station,), {
            "long_name": "great-circle distance from the station to its cell's centre", "units": "m",
            "comment": f"on a sphere of radius {EARTH_RADIUS_M:.0f} m", "_FillValue": fill}))
        for dim in located.cells:
            dtype = "i4" if self.inputs.dims[dim] < 2**31 else "i8"
            out.append(Variable(f"{dim}_original_index", dtype, (station,), {
                "long_name": f"index of the station's cell along '{dim}' in the input", "_FillValue": -1,
                "comment": "0-based; -1: the station is off the grid"}))
        return out

    def _station_data(self) -> dict[str, np.ndarray]:
        assert self.located is not None and self.request.points is not None
        located, points, names = self.located, self.request.points, self.station_names
        values = {names["lat"]: points.lat, names["lon"]: points.lon}
        fill = fill_value({}, np.dtype("f8"))
        for role, data in (("cell_lat", located.lat), ("cell_lon", located.lon), ("distance", located.distance)):
            values[names[role]] = np.where(np.isnan(data), fill, data)
        for dim, cells in located.cells.items():
            values[f"{dim}_original_index"] = cells
        return values

    def _read_stations(self, var: Variable, axes: list[np.ndarray]) -> np.ndarray:
        """A piece of a variable's series at stations: ``axes`` index its output dimensions, the station axis
        holding station numbers; stations off the grid get the fill value."""
        assert self.located is not None and self.schema is not None
        at = self._out_dims(var).index(self.station_dim)
        numbers = axes[at]
        gather = self.inputs.gather if self.inputs.can_gather(var.name) else None
        data, nread = reader.read_cells(self.inputs.read_runs, gather, var.name, [*axes[:at], *axes[at + 1:]], at,
                                        self._cells(var, numbers), self._cell_chunks(var), var.numpy_dtype,
                                        self.request.slack)
        self.bytes_read += nread
        off = self.located.off[numbers]
        if off.any():
            fill = np.asarray(self.schema.variable(var.name).attrs["_FillValue"], dtype=data.dtype)
            data[(slice(None),) * at + (off,)] = fill
        return data

    # -- the output ---------------------------------------------------------------------------
    def bytes_selected(self) -> int:
        assert self.schema is not None, "write() first"
        return sum(self._out_bytes(v) for v in self.schema.variables)

    def _out_bytes(self, var: Variable) -> int:
        assert self.schema is not None
        counts = [self._count(d) if d in self.selections else int(self.schema.dims[d] or 0) for d in var.dims]
        return math.prod(counts) * var.numpy_dtype.itemsize

    def _count(self, dim: str) -> int:
        return self.selections[dim].count

    def _provenance(self) -> list[Variable]:
        out = []
        for dim, sel in self.selections.items():
            name = f"{dim}_original_index"
            if isinstance(sel, Kept) and name not in self.inputs.variables:
                dtype = "i4" if sel.size < 2**31 else "i8"
                out.append(Variable(name, dtype, (dim,), {
                    "long_name": f"index of this element along '{dim}' in the input mesh",
                    "comment": "0-based; written by climio subset so that results can be traced to the input"}))
        return out

    def _schema(self) -> Schema:
        dims: dict[str, int | None] = {d: (None if d in self.inputs.unlimited else self._count(d))
                                       for d in self.used}  # as ncks -a orders them
        variables = [self._output_variable(self.inputs.variables[n]) for n in self.names] + self._provenance()
        attrs = dict(self.inputs.attrs)
        if self.located is not None and self.request.points is not None:
            dims[self.strlen_dim] = max(1, *(len(n.encode()) for n in self.request.points.names))
            variables += self._station_variables()
            attrs["featureType"] = "timeSeries"
        if self.weight_names:
            variables += self._weight_variables()
            attrs["Conventions"] = _with_dsg(str(attrs.get("Conventions", "")))
        history = self.request.history
        if self.masked:
            area = "the region" if self.request.region is not None else "the box"
            outside = f"that do not overlap {area}" if self.request.touching else f"whose centre lies outside {area}"
            history += (": " if history else "") + f"{', '.join(sorted(self.masked))} set to _FillValue in the " \
                f"cells of the index rectangle {outside} (--mask)"
        if history:
            attrs["history"] = history + ("\n" + str(attrs["history"]) if "history" in attrs else "")
        return Schema(dims, tuple(variables), attrs)

    def _output_variable(self, var: Variable) -> Variable:
        conn = self._connectivity(var.name)
        attrs = dict(var.attrs)
        if (conn is not None and self.mesh is not None and self.mesh.family == "ugrid" and "_FillValue" not in var.attrs
                and not (conn.source == self.mesh.primary and conn in self.mesh.closure)):
            attrs["_FillValue"] = conn.none
        if var.name in self.masked and "_FillValue" not in attrs:  # what --mask writes must read as missing
            marker = attrs.get("missing_value", fill_value({}, var.numpy_dtype))
            attrs["_FillValue"] = np.asarray(marker, dtype=var.numpy_dtype).ravel()[0]
        dims = self._out_dims(var)
        if dims != var.dims:
            self._as_series(attrs, var.numpy_dtype)
        if self.weight_names and set(self._weight_dims()) <= set(var.dims) and var.name in self._data_names:
            attrs["cell_measures"] = f"area: {self.weight_names['area']}"
        if not ncio.get_mode(self.mode).compressible:  # a classic output stores no filters
            return Variable(var.name, var.numpy_dtype, dims, attrs)
        if dims != var.dims:  # netCDF-C chooses a series' chunks
            return Variable(var.name, var.numpy_dtype, dims, attrs, None, var.compression)
        chunks = None if var.chunks is None else tuple(  # the input's chunks, no larger than the cut dimensions
            min(c, max(1, n)) if n is not None else c
            for c, n in zip(var.chunks, (None if d in self.inputs.unlimited else self._count(d) for d in var.dims)))
        return Variable(var.name, var.numpy_dtype, var.dims, attrs, chunks, var.compression)

    def _as_series(self, attrs: dict[str, AttrValue], dtype: np.dtype) -> None:
        """A variable's attributes as a series at stations: its coordinates are the stations' (CF's
        timeSeries), no grid mapping; a fill value where some station is off the grid."""
        assert self.located is not None
        kept = set(self.names)
        words = [w for w in str(attrs.get("coordinates", "")).split() if w in kept]
        attrs["coordinates"] = " ".join([*words, *(self.station_names[r] for r in ("lat", "lon", "station_name"))])
        described = [self.station_names[r] for r in ("cell_lat", "cell_lon", "distance")]
        attrs["ancillary_variables"] = " ".join([*described, *(f"{d}_original_index" for d in self.cell_dims)])
        attrs.pop("grid_mapping", None)
        if self.located.off.any() and "_FillValue" not in attrs:
            attrs["_FillValue"] = np.asarray(attrs.get("missing_value", fill_value({}, dtype)), dtype=dtype).ravel()[0]

    @property
    def _data_names(self) -> set[str]:
        """The inputs' data variables (not coordinates, bounds or topology)."""
        return set(data_variables({n: (v.dims, v.attrs) for n, v in self.inputs.variables.items()}))

    def _connectivity(self, name: str) -> Connectivity | None:
        if self.mesh is None:
            return None
        return next((c for c in self.mesh.connectivity if c.var == name), None)

    def write(self) -> None:
        self.schema = schema = self._schema()
        with ncio.create(self.request.output, schema, self.mode, self.comm, overwrite=self.request.overwrite,
                         hints=self.request.hints, compress=self.request.compress,
                         chosen=self.request.mode is not None) as out:
            total = sum(math.prod(self._count(d) for d in self._out_dims(self.inputs.variables[name]))
                        * self.inputs.variables[name].numpy_dtype.itemsize for name in self.names)
            with progress.bar(total, "B", "subset", self.comm.Get_rank() == 0) as bar:
                for name in self.names:
                    self._write_variable(out, self.inputs.variables[name], bar.update)
            for var in self._provenance():
                start, indices = self.selections[var.dims[0]].share(self.comm)
                out.write(var.name, indices, Hyperslab((start,), (len(indices),)))
            if self.weight_names:
                self._write_weights(out)
            if self.located is not None and self.request.points is not None:
                out.write_many([(name, data, None) for name, data in self._station_data().items()])
                names = np.array([list(n.encode()) + [0] * (schema.dims[self.strlen_dim] - len(n.encode()))
                                  for n in self.request.points.names], dtype=np.uint8).view("S1")
                out.write_text(self.station_names["station_name"], names)

    def _write_variable(self, out: Store, var: Variable, done: Callable[[float], object]) -> None:
        """Cut one variable and write it, a piece at a time; ``done`` learns each piece's share of its bytes."""
        dims = self._out_dims(var)
        counts = [self._count(d) for d in dims]
        nbytes = math.prod(counts) * var.numpy_dtype.itemsize
        if var.is_text:
            self._write_text(out, var)
            done(nbytes)
            return
        if not var.dims:
            data = self.inputs.read_runs(var.name, [Hyperslab((), ())] if self.comm.Get_rank() == 0 else [])
            out.write(var.name, data[0] if data else None, None)
            done(nbytes)
            return
        grid = self.grid
        if isinstance(grid, Points) and var.name == grid.count and (self.counts or not grid.rectangular):
            count = np.array(self.counts or [self._count(grid.dim)], dtype=var.numpy_dtype)  # SCRIP's grid_dims
            out.write(var.name, count, None)
            done(nbytes)
            return
        if 0 in counts:
            return
        sels = [self.selections[d] for d in dims]
        kept_axes = [k for k, s in enumerate(sels) if isinstance(s, Kept)]
        if len(kept_axes) > 1:
            raise ClimioError(f"variable '{var.name}' spans two mesh element dimensions {var.dims}: not supported",
                              collective=True)
        size = self.comm.Get_size()
        split = kept_axes[0] if kept_axes else next((k for k, n in enumerate(counts) if n >= size),
                                                    int(np.argmax(counts)))
        first, share = sels[split].share(self.comm)
        whole = self.request.read == "whole" and bool(kept_axes)
        axes = [share if k == split else s.indices for k, s in enumerate(sels)]  # type: ignore[union-attr]
        if whole:
            kept = sels[split]
            assert isinstance(kept, Kept)
            axes[split] = np.arange(kept.lo, kept.lo + kept.nlocal)
        local = max(math.prod(len(a) for a in axes) * var.numpy_dtype.itemsize, self._read_bytes(var, axes))
        pieces = max(1, collective.most(self.comm, math.ceil(local / PIECE_BYTES)))
        if whole and split == 0:
            pieces = 1  # the pack-and-redistribute baseline moves whole blocks of rows
        for k in range(pieces):
            piece_axes, at = list(axes), [0] * len(axes)
            if pieces > 1:
                lo, n = block_range(len(axes[0]), pieces, k)
                piece_axes[0], at[0] = axes[0][lo:lo + n], lo
            at[split] += first
            data = self._read_piece(var, piece_axes, split, whole)
            if var.name in self.masked:
                data = self._outside_filled(var, data, piece_axes)
            conn = self._connectivity(var.name)
            if conn is not None:
                data = self._renumber(data, conn)
            out.write(var.name, data, Hyperslab(tuple(at), data.shape))
            done(nbytes / pieces)

    def _write_text(self, out: Store, var: Variable) -> None:
        """Char and string variables are small: cut whole on every rank, written by rank 0 (collective)."""
        data = self.inputs.read_text(var.name)
        for axis, dim in enumerate(var.dims):
            sel = self.selections[dim]
            kept = isinstance(sel, Kept)
            indices = np.concatenate(self.comm.allgather(sel.share(self.comm)[1])) if kept else sel.indices
            data = np.take(data, indices, axis=axis)
        out.write_text(var.name, data)

    def _read_piece(self, var: Variable, axes: list[np.ndarray], split: int, whole: bool) -> np.ndarray:
        if self._out_dims(var) != var.dims:
            return self._read_stations(var, axes)
        slack = math.inf if whole else self.request.slack
        data, nread = reader.read(self.inputs.read_runs, var.name, axes, var.numpy_dtype, slack,
                                  self.inputs.shape(var.name))
        self.bytes_read += nread
        if not whole:
            return data
        kept = self.selections[var.dims[split]]
        assert isinstance(kept, Kept)
        with trace.phase("redistribute"):
            rows = np.moveaxis(np.take(data, kept.local_kept() - kept.lo, axis=split), split, 0)
            rows = distribute.redistribute(self.comm, rows, kept.offset, kept.count)
        return np.ascontiguousarray(np.moveaxis(rows, 0, split))

    def _outside_filled(self, var: Variable, data: np.ndarray, axes: list[np.ndarray]) -> np.ndarray:
        """A piece of a data variable with its cells outside the box set to its fill value (``--mask``)."""
        assert self.inside is not None and self.inside.inside is not None
        grid_dims = self.inside_dims
        where = [var.dims.index(d) for d in grid_dims]
        positions = []
        for dim, axis in zip(grid_dims, where):  # input index -> position in the rectangle
            lookup = np.full(self.inputs.dims[dim], -1, dtype=np.int64)
            picks = self.inside.picks[dim]
            lookup[picks] = np.arange(picks.size)
            positions.append(lookup[axes[axis]])
        keep = self.inside.inside[np.ix_(*positions)].transpose(np.argsort(np.argsort(where)))
        shape = [1] * data.ndim
        for axis in where:
            shape[axis] = data.shape[axis]
        assert self.schema is not None
        fill = np.asarray(self.schema.variable(var.name).attrs["_FillValue"], dtype=data.dtype)
        return np.where(keep.reshape(shape), data, fill)

    def _renumber(self, data: np.ndarray, conn: Connectivity) -> np.ndarray:
        """Old element indices -> new ones through the owners' index arrays; removed elements -> none."""
        target = self.selections.get(conn.target)
        if not isinstance(target, Kept):
            raise ClimioError(f"connectivity '{conn.var}' points to '{conn.target}', which the output does not have",
                              collective=True)
        values = data.astype(np.int64).ravel()
        valid, index = self._entries(conn, values)
        with trace.phase("renumber"):
            new = target.lookup(index)
        values[valid] = np.where(new >= 0, new + conn.start, conn.none)
        return values.reshape(data.shape).astype(data.dtype)


def _with_dsg(conventions: str) -> str:
    """The ``Conventions`` attribute of a timeSeries file: discrete sampling geometries are CF 1.6 and later."""
    words = conventions.replace(",", " ").split()
    for k, word in enumerate(words):
        version = word[3:].split(".") if word.upper().startswith("CF-") else []
        if len(version) >= 2 and all(v.isdigit() for v in version[:2]):
            if (int(version[0]), int(version[1])) < (1, 6):
                words[k] = "CF-1.6"
            return " ".join(words)
    return " ".join([*words, "CF-1.6"])


def _free_name(choices: tuple[str, ...], taken: set[str]) -> str:
    """The first of ``choices`` not taken, else the last with a number."""
    for name in choices:
        if name not in taken:
            return name
    return next(f"{choices[-1]}{k}" for k in range(2, len(taken) + 3) if f"{choices[-1]}{k}" not in taken)


def _wrapped(picked: np.ndarray, size: int) -> np.ndarray:
    """Longitude indices of a box that crosses the file's seam, in order from the box's west edge."""
    if picked.size in (0, size) or picked[0] != 0 or picked[-1] != size - 1:
        return picked
    gap = int(np.flatnonzero(np.diff(picked) > 1)[0]) + 1 if np.any(np.diff(picked) > 1) else 0
    return np.concatenate([picked[gap:], picked[:gap]])


