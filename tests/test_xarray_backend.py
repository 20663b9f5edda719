"""climio from xarray: the ``climio`` engine gives what ``engine="netcdf4"`` gives on every shipped file,
``climio.open_mfdataset`` gives what ``climio subset`` joins, refusals are one-line ClimioErrors, and the
``.climio`` accessor fits as ``fit_pot`` and writes what xarray's own ``to_netcdf`` writes."""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from conftest import DATA, run
from conftest import climio as run_climio

import climio as climio_pkg
import climio.xr  # noqa: F401 (registers .climio)
from climio.core.decomp import Hyperslab
from climio.errors import ClimioError
from climio.eva import fit_pot
from climio.core.inputs import Inputs

HELPERS = Path(__file__).resolve().parent / "helpers"
FILES = sorted([*(DATA / "real").glob("*.nc"), *(DATA / "real").glob("*.ug"), *(DATA / "cmip").glob("*.nc")])
NAM = sorted((DATA / "real").glob("pr_NAM-22_*.nc"))
EC_EARTH = sorted((DATA / "real").glob("tas_Amon_EC-EARTH_*.nc"))
ENCODINGS = ("dtype", "_FillValue", "missing_value", "units", "calendar", "scale_factor", "add_offset")


def _open(path: Path | str, **kwargs: object) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xr.SerializationWarning)  # CESM2's two fill values, in both engines
        return xr.open_dataset(path, **kwargs)  # type: ignore[arg-type]


def _same(value: object, other: object) -> bool:
    a, b = np.asarray(value), np.asarray(other)
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f" and b.dtype.kind == "f"))


def assert_same_dataset(got: xr.Dataset, want: xr.Dataset, *, history: bool = True) -> None:
    """Values (NaN equal NaN), dimensions, attributes and the encodings that decide what a file holds."""
    assert set(got.variables) == set(want.variables)
    assert dict(got.sizes) == dict(want.sizes)
    skip = set() if history else {"history"}
    assert set(got.attrs) == set(want.attrs)
    for key in set(want.attrs) - skip:
        assert _same(got.attrs[key], want.attrs[key]), key
    for name, variable in want.variables.items():
        mine = got.variables[name]
        assert mine.dims == variable.dims and mine.dtype == variable.dtype, name
        assert mine.equals(variable), name
        assert set(mine.attrs) == set(variable.attrs), name
        assert all(_same(mine.attrs[k], variable.attrs[k]) for k in variable.attrs), name
        for key in ENCODINGS:
            assert _same(mine.encoding.get(key), variable.encoding.get(key)), (name, key)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_engine_reads_what_netcdf4_reads(path: Path) -> None:
    want = _open(path, engine="netcdf4")
    lazy = _open(path, engine="climio")
    assert not any(v._in_memory for v in lazy.data_vars.values() if v.ndim), "read at open"
    assert_same_dataset(lazy, want)
    chunked = _open(path, engine="climio", chunks={})
    assert all(v.chunks is not None for v in chunked.data_vars.values() if v.ndim)
    assert_same_dataset(chunked, want)
    assert lazy.encoding["unlimited_dims"] == want.encoding["unlimited_dims"]


def test_outer_indexing_one_read_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps, lists, integers and reversed slices, mixed on one variable, as netCDF4's engine gives them, each
    selection in one read."""
    path = DATA / "cmip" / "pr.sresa2.miub_echo_g.run1.atm.da.nc"
    want, got = _open(path, engine="netcdf4"), _open(path, engine="climio")
    name = next(n for n, v in want.data_vars.items() if v.ndim == 3)
    dims = want[name].dims
    reads: list[Hyperslab] = []
    read = Inputs.read
    monkeypatch.setattr(Inputs, "read", lambda self, var, slab, **kw: reads.append(slab) or read(self, var, slab, **kw))
    for key in [{dims[0]: slice(3, 400, 7), dims[1]: [5, 0, 2], dims[2]: 1},
                {dims[0]: [0, 9, 4], dims[1]: slice(None, None, -2), dims[2]: [3, 3, 1]},
                {dims[0]: slice(10, 10)}, {dims[0]: -1}]:
        reads.clear()
        assert got[name].isel(key).equals(want[name].isel(key)), key
        assert len(reads) == 1, key
    assert reads[0].count == (1, *want[name].shape[1:])
    chunks = _open(path, engine="climio", chunks={dims[0]: 1000})[name]
    assert chunks.data.npartitions > 1
    assert chunks.isel({dims[0]: slice(500, 2500, 3)}).equals(want[name].isel({dims[0]: slice(500, 2500, 3)}))


@pytest.mark.timeout(120)
def test_engines_share_one_lock_under_dask_threads() -> None:
    """Reads through climio and netcdf4 interleaved on dask's threads take netCDF-C's locks in one order (taken
    in opposite orders, they deadlocked about one run in six)."""
    import dask

    with dask.config.set(scheduler="threads", num_workers=4):
        mine = climio_pkg.open_mfdataset(NAM, chunks={"time": 50})["pr"]
        theirs = xr.open_mfdataset(NAM, engine="netcdf4", chunks={"time": 50})["pr"]
        for _ in range(5):
            assert float(abs(mine - theirs).max()) == 0.0


@pytest.mark.parametrize("files", [NAM, EC_EARTH], ids=["NAM-22", "EC-EARTH"])
def test_open_mfdataset_joins_as_subset(files: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "joined.nc"
    done = run_climio("subset", *map(str, files), str(out))
    assert done.returncode == 0, done.stderr
    want = _open(out)
    got = climio_pkg.open_mfdataset(list(reversed(files)))  # sorted by time, as the command sorts them
    assert not any(v._in_memory for v in got.data_vars.values() if v.ndim), "read at open"
    assert_same_dataset(got, want, history=False)
    pattern = str(files[0].parent / (files[0].name[:20] + "*"))
    assert_same_dataset(climio_pkg.open_mfdataset(pattern, chunks={"time": 100}), want, history=False)


def test_open_mfdataset_refusals(tmp_path: Path) -> None:
    def refused(paths: list[Path] | str, *needles: str, **kwargs: object) -> None:
        with pytest.raises(ClimioError) as err:
            climio_pkg.open_mfdataset(paths, **kwargs)
        message = str(err.value)
        assert "\n" not in message and all(n in message for n in needles), message

    refused([EC_EARTH[0], EC_EARTH[1], EC_EARTH[1]], "overlaps", EC_EARTH[1].name)
    refused([EC_EARTH[0], EC_EARTH[2]], "time step(s) missing", EC_EARTH[0].name, "allow_gaps=True")
    gapped = climio_pkg.open_mfdataset([EC_EARTH[0], EC_EARTH[2]], allow_gaps=True)
    assert gapped.sizes["time"] == 240
    other = tmp_path / EC_EARTH[1].name
    shutil.copy(EC_EARTH[1], other)
    with netCDF4.Dataset(other, "a") as ds:
        ds["time"].calendar = "noleap"
    refused([EC_EARTH[0], other], "calendars differ", other.name)
    refused(str(tmp_path / "none*.nc"), "no file matches")


def test_accessor_fit_equals_fit_pot() -> None:
    """On lazy, dask-chunked input from the engine, as ``fit_pot`` on the loaded values."""
    ds = _open(DATA / "cmip" / "tiny_daily_pr.nc", engine="climio", chunks={"lat": 1})
    loaded = _open(DATA / "cmip" / "tiny_daily_pr.nc").load()
    options = {"tail": 0.02, "return_periods": [10, 50]}
    for got, want in [(ds["pr"].climio.fit_pot(**options), fit_pot(loaded["pr"], **options)),
                      (ds.climio.fit_pot(var="pr", **options), fit_pot(loaded, var="pr", **options))]:
        got, want = got.compute(), want
        assert got.attrs.pop("history").split(": ", 1)[1] == want.attrs.pop("history").split(": ", 1)[1]
        xr.testing.assert_identical(got, want)


WRITTEN = [DATA / "real" / name for name in ("tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc",
                                             "o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc",
                                             "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc")]


@pytest.mark.parametrize("path", [*WRITTEN, NAM[0]], ids=lambda p: p.name[:12])
def test_to_netcdf_writes_what_xarray_writes(path: Path, tmp_path: Path) -> None:
    ds = _open(path, engine="climio")
    ds.to_netcdf(tmp_path / "xarray.nc")
    ds.climio.to_netcdf(tmp_path / "climio.nc")
    with netCDF4.Dataset(tmp_path / "climio.nc") as got, netCDF4.Dataset(tmp_path / "xarray.nc") as want:
        assert got.data_model == want.data_model
        assert {k: len(d) for k, d in got.dimensions.items()} == {k: len(d) for k, d in want.dimensions.items()}
        assert [d for d in got.dimensions.values() if d.isunlimited()] != [] or \
            not any(d.isunlimited() for d in want.dimensions.values())
        assert got.__dict__.keys() == want.__dict__.keys()
        assert all(_same(got.getncattr(k), want.getncattr(k)) for k in want.ncattrs())
        assert got.variables.keys() == want.variables.keys()
        for name, variable in want.variables.items():
            mine = got[name]
            assert (mine.dtype, mine.dimensions) == (variable.dtype, variable.dimensions), name
            assert mine.ncattrs() == variable.ncattrs() or set(mine.ncattrs()) == set(variable.ncattrs()), name
            assert all(_same(mine.getncattr(k), variable.getncattr(k)) for k in variable.ncattrs()), name
            assert _same(np.ma.filled(mine[...], 0), np.ma.filled(variable[...], 0)), name
            assert (mine.chunking(), mine.filters()) == (variable.chunking(), variable.filters()), name
    xr.testing.assert_identical(_open(tmp_path / "climio.nc"), _open(tmp_path / "xarray.nc"))


def test_to_netcdf_modes_compression_and_errors(tmp_path: Path) -> None:
    ds = _open(EC_EARTH[0], engine="climio")
    ds.climio.to_netcdf(tmp_path / "packed.nc", deflate=1)
    with netCDF4.Dataset(tmp_path / "packed.nc") as out:
        assert out["tas"].filters()["zlib"]
    ds["tas"].climio.to_netcdf(tmp_path / "tas.nc", mode="cdf5")
    with netCDF4.Dataset(tmp_path / "tas.nc") as out:
        assert out.data_model == "NETCDF3_64BIT_DATA"
    xr.testing.assert_identical(_open(tmp_path / "tas.nc")["tas"], ds["tas"].load())
    with pytest.raises(ClimioError, match="exists"):
        ds.climio.to_netcdf(tmp_path / "tas.nc")
    with pytest.raises(ClimioError, match="no name"):
        xr.DataArray(np.zeros(3)).climio.to_netcdf(tmp_path / "anon.nc")


MESH = DATA / "meshes" / "mesh.QU.1920km.151026.nc"
SUBSETS = {"join": (["-d", "lat,0.,30.", "-d", "time,1855-01-01,1872-12-31"], EC_EARTH),
           "mesh": (["-b", "40,-20,100,-20"], [MESH]),
           "tripolar": (["-b", "30,-10,-170,170", "--touching", "--mask"],
                        [DATA / "synthetic" / "tos_tripolar.nc"])}


@pytest.fixture(scope="module")
def command_cuts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``climio subset`` of each case, once (the command writes the same file at any rank count)."""
    out = {}
    for case, (cuts, files) in SUBSETS.items():
        out[case] = tmp_path_factory.mktemp(case) / "command.nc"
        done = run_climio("subset", *cuts, *map(str, files), str(out[case]))
        assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder of this test's calls in this process, apart from any other run's on the machine."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.parametrize("nranks", [1, 2])
@pytest.mark.parametrize("case", sorted(SUBSETS))
def test_accessor_subset_equals_the_command(case: str, nranks: int, command_cuts: dict[str, Path],
                                            tmp_path: Path, scratch: Path) -> None:
    """``.climio.subset`` cuts what ``climio subset`` cuts: decades joined along time with dates and a latitude
    range, an MPAS mesh cut by a box (cells, corners, edges renumbered), and a tripolar grid's rectangle of the
    cells touching a box across the dateline, the others masked, at 1 and 2 ranks."""
    cuts, files = SUBSETS[case]
    with _open(command_cuts[case], engine="climio") as want:
        if nranks == 1:  # in this process, into memory: no file is left
            with climio_pkg.open_mfdataset(files) as dataset:
                ranges = [cuts[k + 1] for k in range(0, len(cuts), 2) if cuts[k] == "-d"]
                box = next((cuts[k + 1] for k in range(0, len(cuts), 2) if cuts[k] == "-b"), None)
                got = dataset.climio.subset(*ranges, box=box, touching="--touching" in cuts, mask="--mask" in cuts)
            assert_same_dataset(got, want, history=False)
            assert not list(scratch.glob("climio-subset-*"))  # its temporary file is gone
            assert got.attrs["history"].startswith(f"climio (xarray) subset {' '.join(cuts[:2])}")
        else:
            out = tmp_path / "accessor.nc"
            done = run([sys.executable, str(HELPERS / "xr_subset.py"), str(out), *cuts, *map(str, files)],
                       nranks=nranks, timeout=120)
            assert done.returncode == 0, done.stderr
            with _open(out, engine="climio") as got:
                assert_same_dataset(got, want, history=False)
            assert sorted(p.name for p in tmp_path.iterdir()) == ["accessor.nc", "scratch"]


def test_accessor_subset_that_cannot_read_its_cut_back_stops_every_rank(monkeypatch: pytest.MonkeyPatch,
                                                                       scratch: Path) -> None:
    """A rank that cannot open the temporary cut (another node's /tmp) ends the call on every rank in one
    IOFault, instead of leaving the others waiting, and the temporary folder is removed."""
    from climio.errors import IOFault

    with climio_pkg.open_mfdataset(EC_EARTH) as dataset:
        opened = xr.open_dataset

        def unreadable(path: object, **kwargs: object) -> xr.Dataset:
            if "climio-subset-" in str(path):
                raise FileNotFoundError(2, "No such file or directory", str(path))
            return opened(path, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(xr, "open_dataset", unreadable)
        with pytest.raises(IOFault, match=r"cannot read the cut back .* on rank 0: .*give path= on a file system"):
            dataset.climio.subset("lat,0.,30.")
    assert not list(scratch.glob("climio-subset-*"))


def test_accessor_subset_refuses_data_from_no_file() -> None:
    made = xr.Dataset({"t": (("x",), np.arange(3.0))}, coords={"x": [0.0, 1.0, 2.0]})
    with pytest.raises(ClimioError, match="not opened from files.*engine='climio'.*sel and isel"):
        made.climio.subset("x,0.,1.")


def test_a_command_run_from_a_session_leaves_its_files_readable(tmp_path: Path) -> None:
    """A notebook that runs a climio command between its own reads: the child makes its own Open MPI session
    directory instead of removing the notebook's (whose next open would fail to make its shared file pointer)."""
    code = ("import subprocess, sys, xarray as xr, climio.xr\n"
            f"xr.open_dataset({str(EC_EARTH[0])!r}, engine='climio').load().close()\n"
            f"done = subprocess.run([sys.executable, '-m', 'climio', 'subset', '-v', 'tas', {str(EC_EARTH[0])!r}, "
            f"{str(tmp_path / 'cut.nc')!r}])\n"
            f"print(float(xr.open_dataset({str(tmp_path / 'cut.nc')!r}, engine='climio')['tas'].load().mean()))\n")
    done = run([sys.executable, "-c", code], cwd=str(tmp_path))
    assert done.returncode == 0 and float(done.stdout.split()[-1]) > 200, done.stderr
    assert "Error" not in done.stderr and "sharedfp" not in done.stderr, done.stderr


def test_import_climio_stays_light() -> None:
    import subprocess
    import sys

    code = "import sys, climio; assert 'xarray' not in sys.modules; assert callable(climio.open_mfdataset); " \
           "assert 'xarray' in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).returncode == 0


@pytest.mark.parametrize("nranks, mode, dims", [(1, "hdf5", "lat"), (2, "cdf5", "lat,lon"), (3, "cdf5", "time"),
                                                (4, "hdf5", "lat")])
def test_to_netcdf_pieces_under_mpi(nranks: int, mode: str, dims: str, tmp_path: Path) -> None:
    """Each rank writes the piece it holds (at 4 ranks on 2 latitudes, two ranks hold nothing): the file is the
    one xarray writes from the whole Dataset."""
    out = tmp_path / "pieces.nc"
    done = run([sys.executable, str(HELPERS / "xr_write_pieces.py"), str(EC_EARTH[0]), str(out), mode, dims],
               nranks=nranks, timeout=120)
    assert done.returncode == 0, done.stderr
    whole = _open(EC_EARTH[0], engine="climio")
    whole.to_netcdf(tmp_path / "xarray.nc")
    xr.testing.assert_identical(_open(out), _open(tmp_path / "xarray.nc"))
    with netCDF4.Dataset(out) as got:
        assert [d for d, dim in got.dimensions.items() if dim.isunlimited()] == ["time"]
