"""``.climio`` on xarray Datasets and DataArrays: climio's fits and writer where the data already are.

    import climio.xr  # registers .climio
    result = ds["pr"].climio.fit_pot(return_periods=[20, 100])
    ds.climio.to_netcdf("out.nc", mode="cdf5", deflate=1)

The fits are :mod:`climio.eva.api`'s; ``to_netcdf`` encodes the Dataset as xarray's own ``to_netcdf`` does
(xarray's CF encoders: dates, masks, packing, ``coordinates``, a NaN ``_FillValue`` for floats) and writes it
through :func:`climio.core.ncio.create`, in any of climio's storage modes and with NCO's compression options.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from xarray.coding.strings import CharacterArrayCoder, EncodedStringCoder
from xarray.conventions import cf_encoder, encode_dataset_coordinates

from climio.core import mpi, ncio, registry
from climio.core.decomp import Hyperslab
from climio.core.ncio.compression import NONE, Compression, settings
from climio.errors import ClimioError, api_words
from climio.eva import api

if TYPE_CHECKING:
    from mpi4py import MPI

    from climio.subset.stations import Stations

# subset's keywords by the command's flags, which the checks it shares with the command name (api_words)
SUBSET_WORDS = {**ncio.API_WORDS, "-v": "variables", "-d": "range", "-b": "box", "-X": "lonlat",
                "--touching": "touching=True", "--mask": "mask=True", "--points-inside": "inside=True",
                "--strict": "strict=True", "--weights": "weights=True", "--points": "stations",
                "--region": "region"}


class _Climio:
    """What both accessors offer: the object itself is the data to fit or write."""

    def __init__(self, obj: xr.Dataset | xr.DataArray) -> None:
        self._obj = obj

    def fit_pot(self, dim: str | None = None, *, comm: MPI.Comm | None = None, **options: Any) -> xr.Dataset:
        """Peaks over threshold at every cell: :func:`climio.eva.api.fit_pot` on this object; with ``comm`` the
        ranks share the cells and each returns the whole result (collective)."""
        return api.fit_pot(self._obj, dim, comm=comm, **options)

    def fit_gev(self, dim: str | None = None, *, comm: MPI.Comm | None = None, **options: Any) -> xr.Dataset:
        """Block maxima at every cell: :func:`climio.eva.api.fit_gev` on this object; with ``comm`` the ranks
        share the cells and each returns the whole result (collective)."""
        return api.fit_gev(self._obj, dim, comm=comm, **options)

    @api_words(SUBSET_WORDS)
    def subset(self, *ranges: str, variables: Iterable[str] | None = None, box: str | None = None,
               lonlat: str | None = None, path: str | os.PathLike[str] | None = None, mode: str | None = None,
               comm: MPI.Comm | None = None, overwrite: bool = False, deflate: int | None = None,
               ppc: Iterable[str] | None = None, touching: bool = False, mask: bool = False,
               region: str | None = None, weights: bool = False, stations: Stations | None = None,
               inside: bool = False, strict: bool = False) -> xr.Dataset:
        """Cut the files this object was opened from as ``climio subset`` cuts them (collective over ``comm``).

        ``ranges`` are ``-d`` ranges (``"time,2005-06-01,2005-08-31"``, ``"lat,0.,90."``), ``variables`` is
        ``-v`` (default: a DataArray's own name; for a Dataset every variable of the files, as the command),
        ``box`` is ``-b NORTH,SOUTH,EAST,WEST`` and ``lonlat``
        ``-X LONMIN,LONMAX,LATMIN,LATMAX``; on a mesh, the cells in the box with their corners and edges,
        renumbered; on a curvilinear grid, the index rectangle that holds its cells (``touching`` and ``mask`` as
        the command's ``--touching``, ``--mask``). ``region`` is ``--region FILE[:NAME]`` (with ``weights``,
        ``touching`` and ``mask`` as the command's); ``stations`` the series at stations (:meth:`points`). The
        files are the object's sources (``engine="climio"``, :func:`climio.open_mfdataset`, or any
        engine that opened one file), read from disk whatever was changed in memory since. With ``path`` the cut
        is written there (``mode``, ``deflate``, ``ppc`` as the command's ``--mode``, ``-L``, ``--ppc``) and
        opened lazily; without it, the cut is loaded into memory and no file is left."""
        import shutil

        from climio.core.ranges import parse_dim_range
        from climio.subset.job import Request
        from climio.subset.job import subset as cut
        from climio.subset.options import parse_box

        from climio.subset.regions import read_region

        if sum(x is not None for x in (box, lonlat, region, stations)) > 1:
            raise ClimioError("subset: give one of box=, lonlat=, region= and stations")
        if (touching or mask) and box is None and lonlat is None and region is None:
            raise ClimioError(f"subset: {'touching' if touching else 'mask'}= applies to a box or a region: give "
                              f"box=, lonlat= or region=")
        if weights and region is None:
            raise ClimioError("subset: weights= applies to a region: give region=")
        sources, join = _sources(self._obj)
        names = [str(v) for v in variables] if variables is not None else \
            None if isinstance(self._obj, xr.Dataset) else [str(self._obj.name)]
        comm = comm if comm is not None else mpi.world()
        folder = None if path is not None else mpi.agree(comm, lambda: registry.scratch_directory("climio-subset-"))
        target = os.fspath(path) if path is not None else os.path.join(str(folder), "subset.nc")
        given = [*([f"-v {','.join(names)}"] if names else []), *(f"-d {r}" for r in ranges),
                 *([f"-b {box}"] if box else []), *([f"-X {lonlat}"] if lonlat else []),
                 *(["--touching"] if touching else []), *(["--mask"] if mask else []),
                 *([f"--region {region}"] if region else []), *(["--weights"] if weights else []),
                 *([f"--points {stations.path}"] if stations is not None else []),
                 *(["--points-inside"] if inside else []), *(["--strict"] if strict else [])]
        request = Request(inputs=sources, output=target, variables=names,
                          ranges=[parse_dim_range(text) for text in ranges],
                          box=parse_box(box, "-b") if box else parse_box(lonlat, "-X") if lonlat else None,
                          join=join, mode=mode, overwrite=overwrite,
                          history=" ".join(["climio (xarray) subset", *given]),
                          compress=settings(deflate, list(ppc) if ppc else None, None), touching=touching, mask=mask,
                          region=read_region(region) if region else None, weights=weights, points=stations,
                          points_inside=inside, strict=strict)
        try:
            cut(request, comm)
            if folder is None:
                return xr.open_dataset(target, engine="climio")
            loaded, failure = None, ""
            try:
                with xr.open_dataset(target, engine="climio") as opened:
                    loaded = opened.load()
            except (OSError, ClimioError) as err:  # this rank cannot see rank 0's temporary folder, say
                failure = f"subset: cannot read the cut back from {target} on rank {comm.Get_rank()}: {err}; " \
                          f"give path= on a file system every rank sees"
            mpi.raise_fault(comm, failure)  # every rank has read it (or all stop) before rank 0 removes it
            return loaded
        finally:
            if folder is not None and comm.Get_rank() == 0:
                shutil.rmtree(folder, ignore_errors=True)

    def points(self, stations: str | os.PathLike[str] | Mapping[str, tuple[float, float]], *ranges: str,
               **options: Any) -> xr.Dataset:
        """The series at stations, as ``climio subset --points`` writes them (a CF timeSeries Dataset): each
        station's nearest cell, or with ``inside=True`` the one that holds it (``strict=True``: a station off
        the grid is an error). ``stations`` is a points file (CSV, GeoJSON, netCDF) or a mapping from names to
        (latitude, longitude) in degrees; ``ranges`` and ``options`` as :meth:`subset`'s (``path=`` writes the
        file and opens it lazily)."""
        from climio.subset.stations import make_stations, read_stations

        if isinstance(stations, Mapping):
            names = [str(n) for n in stations]
            given = make_stations("(a mapping)", names, [float(stations[n][0]) for n in stations],
                                  [float(stations[n][1]) for n in stations])
        else:
            given = read_stations(os.fspath(stations))
        return self.subset(*ranges, stations=given, **options)

    def region(self, region: str, *ranges: str, **options: Any) -> xr.Dataset:
        """The cells of a region, as ``climio subset --region`` cuts them: ``region`` is ``FILE[:NAME]`` (or
        ``FILE:KEY=VALUE``); ``touching=``, ``mask=``, ``weights=`` and the rest as :meth:`subset`'s."""
        return self.subset(*ranges, region=region, **options)

    @api_words(ncio.API_WORDS)
    def to_netcdf(self, path: str | os.PathLike[str], mode: str = "hdf5", comm: MPI.Comm | None = None, *,
                  at: Mapping[str, int] | None = None, overwrite: bool = False, deflate: int | None = None,
                  ppc: Iterable[str] | None = None, chunk_sizes: Iterable[str] | None = None,
                  cmp: str | None = None) -> None:
        """Write through climio's storage layer in storage ``mode`` (``hdf5``, ``hdf5-classic``, ``cdf1``,
        ``cdf2``, ``cdf5``, ``serial``) on every rank of ``comm`` (default: the job's; collective).

        Without ``at`` every rank holds the whole Dataset and rank 0 writes it. With ``at`` each rank holds its
        own piece, starting at ``at[dim]`` along each dimension it is split on (the same names on every rank;
        a rank holding nothing gives a piece of length 0 there), and every rank writes its piece; variables
        on no split dimension are rank 0's. ``deflate``, ``ppc``, ``chunk_sizes`` and ``cmp`` are NCO's
        ``-L``, ``--ppc`` (``["default=3"]``), ``--cnk_dmn`` and ``--cmp``."""
        dataset = self._obj if isinstance(self._obj, xr.Dataset) else _as_dataset(self._obj)
        comm = comm if comm is not None else mpi.world()
        schema, values = _encoded(dataset, ncio.get_mode(mode).compressible)
        slabs: dict[str, Hyperslab] = {}
        if at is not None:
            schema, slabs = _pieces(schema, values, {str(d): int(n) for d, n in at.items()}, comm)
        compress = settings(deflate, list(ppc) if ppc else None, None, list(chunk_sizes) if chunk_sizes else None,
                            cmp)
        with ncio.create(os.fspath(path), schema, mode, comm, overwrite=overwrite, compress=compress) as store:
            for var in schema.variables:
                if var.is_text:
                    store.write_text(var.name, values[var.name])
            store.write_many((var.name, None if var.name in slabs and not slabs[var.name].size else values[var.name],
                              slabs.get(var.name)) for var in schema.variables if not var.is_text)


@xr.register_dataset_accessor("climio")
class DatasetAccessor(_Climio):
    """``ds.climio``: ``fit_pot``/``fit_gev`` (give ``var=`` when the Dataset has several data variables) and
    ``to_netcdf``."""


@xr.register_dataarray_accessor("climio")
class DataArrayAccessor(_Climio):
    """``da.climio``: ``fit_pot``/``fit_gev`` along its time dimension, and ``to_netcdf`` of the named array
    with its coordinates."""


def _sources(obj: xr.Dataset | xr.DataArray) -> tuple[list[str], str | None]:
    """The files an object was opened from, and the dimension they were joined along."""
    encoding = obj.encoding
    sources = encoding.get("climio_sources") or ([encoding["source"]] if "source" in encoding else [])
    if not sources:
        raise ClimioError("subset: this object was not opened from files (it has no 'source' encoding); open it "
                          "with xr.open_dataset(path, engine='climio') or climio.open_mfdataset, or cut it with "
                          "xarray's sel and isel")
    return [os.fspath(s) for s in sources], encoding.get("climio_join")


def _as_dataset(array: xr.DataArray) -> xr.Dataset:
    if array.name is None:
        raise ClimioError("to_netcdf: the DataArray has no name, and a file needs one: set it with "
                          "da.rename('NAME') first")
    return array.to_dataset()


def _encoded(dataset: xr.Dataset, netcdf4: bool) -> tuple[ncio.Schema, dict[str, np.ndarray]]:
    """The schema and values that xarray's netCDF writer would store: its CF encoders, then text as netCDF
    characters (bytes) or strings (unicode); in a netCDF-4 file, each variable's chunks and deflate as its
    encoding gives them (those read from a file, unless its shape changed since)."""
    variables, attrs = cf_encoder(*encode_dataset_coordinates(dataset))
    unlimited = set(dataset.encoding.get("unlimited_dims", ()))
    dims: dict[str, int | None] = {}
    declared, values = [], {}
    for name, variable in variables.items():
        name = str(name)
        variable = EncodedStringCoder(allows_unicode=True).encode(variable, name=name)
        if variable.dtype.kind == "S":
            variable = CharacterArrayCoder().encode(variable, name=name)
        data = np.asarray(variable.values)
        if data.dtype.kind == "U":
            data = data.astype(object)
        dims.update({str(d): None if d in unlimited else int(n) for d, n in variable.sizes.items()})
        storage = _storage(variable) if netcdf4 and data.dtype.kind != "O" else (None, NONE)
        declared.append(ncio.Variable(name, data.dtype, tuple(str(d) for d in variable.dims), dict(variable.attrs),
                                      *storage))
        values[name] = data
    return ncio.Schema(dims, tuple(declared), dict(attrs)), values


def _storage(variable: xr.Variable) -> tuple[tuple[int, ...] | None, Compression]:
    """Chunk sizes and deflate from a variable's encoding, as xarray's netCDF4 writer takes them (netCDF4-python's
    default level 4 when ``zlib`` names none), none once its shape differs from the file's it came from."""
    encoding = variable.encoding
    if tuple(encoding.get("original_shape", variable.shape)) != variable.shape:
        return None, NONE
    chunks = encoding.get("chunksizes")
    level = int(encoding.get("complevel", 4)) if encoding.get("zlib") else 0
    return (tuple(int(c) for c in chunks) if chunks and not encoding.get("contiguous") else None,
            Compression(level, bool(encoding.get("shuffle", False)) and level > 0))


def _pieces(schema: ncio.Schema, values: Mapping[str, np.ndarray], at: dict[str, int],
            comm: MPI.Comm) -> tuple[ncio.Schema, dict[str, Hyperslab]]:
    """The whole file's schema (rank 0's, on the dimensions' total lengths) and this rank's hyperslab of each
    variable on a split dimension, after checking that every rank holds the same variables (collective)."""
    sizes = {d: n for v in schema.variables for d, n in zip(v.dims, values[v.name].shape)}
    shape = {v.name: (str(v.numpy_dtype), v.dims) for v in schema.variables}
    pieces = comm.allgather((at, {d: sizes[d] for d in at if d in sizes}, shape))
    for rank, (other_at, other_sizes, other_shape) in enumerate(pieces):
        if set(other_at) != set(at) or set(other_sizes) != set(at) or other_shape != pieces[0][2]:
            raise ClimioError(f"to_netcdf: rank {rank} holds other dimensions or variables than rank 0 (at="
                              f"{other_at}, variables {sorted(other_shape)}): every rank must give a piece of the "
                              f"same Dataset, split along the same dimensions, each named by a variable",
                              collective=True)
    total = {d: max(other_at[d] + other_sizes[d] for other_at, other_sizes, _ in pieces) for d in at}
    first = comm.bcast(schema if comm.Get_rank() == 0 else None, root=0)
    text = [v.name for v in first.variables if v.is_text and set(v.dims) & set(at)]
    if text:
        raise ClimioError(f"to_netcdf: text variable '{text[0]}' is split along {sorted(at)}; text is written "
                          f"whole from rank 0, so give every rank all of it", collective=True)
    slabs = {}
    for var in first.variables:
        if set(var.dims) & set(at):
            count = values[var.name].shape
            slabs[var.name] = Hyperslab(tuple(at.get(d, 0) for d in var.dims), count) if all(count) else \
                Hyperslab.empty(len(var.dims))
    dims = {d: (None if n is None else total.get(d, n)) for d, n in first.dims.items()}
    return ncio.Schema(dims, first.variables, first.attrs), slabs
