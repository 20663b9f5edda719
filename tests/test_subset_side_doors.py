"""Side doors of ``climio subset`` that gave a wrong result or none at all.

* A box on a grid's own (nominal) 1-D axes: a rotated pole's ``rlat``/``rlon``, a tripolar ocean grid's nominal
  axes in degrees_north whose rows bend away from any latitude, a projection's ``x``/``y``. Read as latitude and
  longitude they keep the wrong cells. Where the file gives the true 2-D latitude/longitude, the box selects by
  them (the rectangle of the cells centred in it); where it does not, the box is refused with one line naming
  the file and the axes, and pointing to ``-d`` on them.
* NC_STRING variables stored deflated (the C3S atlas files' ``gcm_institution``, ...): netCDF-C applies no
  filter to a variable-length type, so they are written unfiltered, as ``ncks`` writes them, whatever the input
  had or ``-L`` asks.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from climio.core.ncio import Variable
from climio.subset.grids import Curvilinear, Unsupported, detect
from conftest import DATA, leftovers, run

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from run_table import run_table  # noqa: E402

CORDEX = DATA / "real" / "tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc"


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


# -- a box on nominal axes ---------------------------------------------------------------------------------------

def axis(name: str, **attrs: str) -> Variable:
    return Variable(name, "f8", (name,), attrs)


def true_latlon(y: str, x: str) -> list[Variable]:
    return [Variable("lat", "f8", (y, x), {"standard_name": "latitude", "units": "degrees_north"}),
            Variable("lon", "f8", (y, x), {"standard_name": "longitude", "units": "degrees_east"})]


def field(y: str, x: str, coordinates: str | None = "lat lon") -> Variable:
    return Variable("zos", "f4", ("time", y, x), {"coordinates": coordinates} if coordinates else {})


# layout -> (variables, axes, why): every one was read as a regular grid, or refused without naming its axes
NOMINAL = {
    "rotated-pole": ([axis("rlat", standard_name="grid_latitude", units="degrees"),
                      axis("rlon", standard_name="grid_longitude", units="degrees"),
                      *true_latlon("rlat", "rlon"), field("rlat", "rlon")],
                     ("rlat", "rlon"), "rlat:standard_name = grid_latitude; rlon:standard_name = grid_longitude"),
    "tripolar-degrees-north": ([axis("rlat", standard_name="grid_latitude", units="degrees_north"),
                                axis("rlon", standard_name="grid_longitude", units="degrees_east"),
                                *true_latlon("rlat", "rlon"), field("rlat", "rlon")],
                               ("rlat", "rlon"),
                               "rlat:standard_name = grid_latitude; rlon:standard_name = grid_longitude"),
    "2-D-lat-lon-in-coordinates": ([axis("nlat", units="degrees_north"), axis("nlon", units="degrees_east"),
                                    *true_latlon("nlat", "nlon"), field("nlat", "nlon")],
                                   ("nlat", "nlon"), "zos:coordinates names the 2-D lat(nlat,nlon)"),
    "units-degrees": ([axis("lat", units="degrees"), axis("lon", units="degrees"), field("lat", "lon", None)],
                      ("lat", "lon"), "lat:units = degrees; lon:units = degrees"),
    "projection-km": ([axis("y", standard_name="projection_y_coordinate", units="km"),
                       axis("x", standard_name="projection_x_coordinate", units="km"), field("y", "x", None)],
                      ("y", "x"),
                      "y:standard_name = projection_y_coordinate; x:standard_name = projection_x_coordinate"),
}


@pytest.mark.parametrize("layout", NOMINAL)
def test_nominal_axes_are_never_latitude_longitude(layout: str) -> None:
    """With true 2-D latitude/longitude beside them the grid is curvilinear on them; without, refused."""
    variables, axes, why = NOMINAL[layout]
    dims = {d: 4 for v in variables for d in v.dims}
    grid = detect(dims, {v.name: v for v in variables}, {})
    if any(v.name == "lat" and len(v.dims) == 2 for v in variables):
        assert grid == Curvilinear("lat", "lon", axes)
        return
    assert grid == Unsupported(
        "curvilinear", f"a grid whose axes {', '.join(axes)} are not latitude/longitude ({why})", axes[0],
        f"-d {axes[0]},MIN,MAX -d {axes[1]},MIN,MAX cuts the grid's own axes")


def write_tripolar(path: Path, units: tuple[str, str]) -> Path:
    """A tripolar-like ocean file: nominal rlat/rlon, true 2-D lat/lon named in zos:coordinates; its last row
    of nominal latitude 80 bends down to 65 N at the edges (the row a box north of 70 N must not keep whole)."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.Conventions = "CF-1.6"
        ds.createDimension("time", None)
        ds.createDimension("rlat", 4)
        ds.createDimension("rlon", 5)
        for name, values, standard, unit in (("rlat", [-80.0, -20.0, 40.0, 80.0], "grid_latitude", units[0]),
                                             ("rlon", [-160.0, -80.0, 0.0, 80.0, 160.0], "grid_longitude", units[1])):
            var = ds.createVariable(name, "f8", (name,))
            var.standard_name, var.units = standard, unit
            var[:] = values
        lat = ds.createVariable("lat", "f8", ("rlat", "rlon"))
        lat.standard_name, lat.units = "latitude", "degrees_north"
        lat[:] = [[-78.0] * 5, [-20.0] * 5, [30.0, 40.0, 50.0, 40.0, 30.0], [65.0, 75.0, 85.0, 75.0, 65.0]]
        lon = ds.createVariable("lon", "f8", ("rlat", "rlon"))
        lon.standard_name, lon.units = "longitude", "degrees_east"
        lon[:] = np.tile([-160.0, -80.0, 0.0, 80.0, 160.0], (4, 1))
        time = ds.createVariable("time", "f8", ("time",))
        time.units = "days since 2000-01-01"
        time[:] = [15.5, 45.0]
        zos = ds.createVariable("zos", "f4", ("time", "rlat", "rlon"))
        zos.units, zos.coordinates = "m", "lat lon"
        zos[:] = np.arange(40, dtype="f4").reshape(2, 4, 5)
    return path


# case -> (the tripolar-like file's units of rlat/rlon, or None for the real CORDEX file; the box; ranks)
BOXES = {"tripolar-degrees": (("degrees", "degrees"), ("-b", "90,70,180,-180"), 1),
         "tripolar-degrees-north": (("degrees_north", "degrees_east"), ("-X", "-180,180,70,90"), 2),  # was cut
         "cordex": (None, ("-b", "90,70,180,-180"), 1)}


Boxed = tuple[Path, Path, str, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def boxed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Boxed]:
    """Every case of BOXES run: those on 1 rank in one process, those on 2 ranks in one mpiexec
    (helpers/run_table.py); per case its folder, input, the input's md5 before the runs, and the result."""
    cases = {}
    for case, (units, args, nranks) in BOXES.items():
        folder = tmp_path_factory.mktemp(case)
        source = CORDEX if units is None else write_tripolar(folder / "zos.nc", units)
        cases[case] = (folder, source, md5(source), ["subset", *args, str(source), str(folder / "out.nc")], nranks)
    results = {}
    for nranks in sorted({c[-1] for c in cases.values()}):
        names = [case for case, c in cases.items() if c[-1] == nranks]
        done = run_table(run, [cases[case][3] for case in names], tmp_path_factory.mktemp("table"), nranks)
        results.update(zip(names, done))
    return {case: (folder, source, before, results[case]) for case, (folder, source, before, _, _) in cases.items()}


@pytest.mark.parametrize("case", BOXES)
def test_box_on_nominal_axes_selects_by_true_latitude(case: str, boxed: dict[str, Boxed]) -> None:
    """A box north of 70 N keeps the rows and columns of the cells whose true latitude is north of 70 (on the
    tripolar-like file, the middle three of its last row, which bends down to 65 N at its ends), never the
    rows whose nominal latitude is."""
    folder, source, before, result = boxed[case]
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(source) as ds:
        lat = np.asarray(ds["lat"][:])
        var = "zos" if "zos" in ds.variables else "tas"
        data = np.asarray(ds[var][:])
    rows, cols = np.flatnonzero((lat >= 70).any(axis=1)), np.flatnonzero((lat >= 70).any(axis=0))
    assert rows.size and (case == "cordex" or (rows.tolist(), cols.tolist()) == ([3], [1, 2, 3]))
    with netCDF4.Dataset(folder / "out.nc") as ds:
        np.testing.assert_array_equal(ds[var][:], data[:, rows.min():rows.max() + 1, cols.min():cols.max() + 1])
    assert md5(source) == before and leftovers(str(folder)) == []


# -- deflated NC_STRING variables -------------------------------------------------------------------------------

def hdf5_libraries() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    """The HDF5 library and its high-level one that netCDF4-python links (the same build writes the file;
    another test of this process may have loaded a second HDF5 beside it, whose ids do not mix with these)."""
    maps = {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines() if ".so" in line}
    extension = next(p for p in sorted(maps) if Path(p).name.startswith("_netCDF4."))  # netCDF4-python's own
    linked = subprocess.run(["ldd", extension], capture_output=True, text=True, check=True).stdout
    main = re.search(r"=> (\S*/libhdf5(_[a-z]+)?\.so[.\d]*) ", linked)
    assert main, linked
    flavour = Path(main.group(1)).name.split(".so")[0]
    high = next(p for p in sorted(maps) if re.fullmatch(rf"{flavour}_hl\.so[.\d]*", Path(p).name))
    return ctypes.CDLL(main.group(1)), ctypes.CDLL(high)


def add_deflated_strings(path: Path, dim: str, strings: dict[str, list[str]]) -> None:
    """Add deflated NC_STRING variables over netCDF dimension ``dim`` through HDF5 itself: netCDF-C refuses any
    filter on a variable-length type, but HDF5 stores one, as the writers of the C3S atlas files did."""
    h5, hl = hdf5_libraries()
    hid, hsize = ctypes.c_int64, ctypes.c_uint64
    for name, args in (("H5Fopen", [ctypes.c_char_p, ctypes.c_uint, hid]), ("H5Dopen2", [hid, ctypes.c_char_p, hid]),
                       ("H5Tcopy", [hid]), ("H5Screate_simple", [ctypes.c_int, ctypes.POINTER(hsize), ctypes.c_void_p]),
                       ("H5Pcreate", [hid]), ("H5Dcreate2", [hid, ctypes.c_char_p, hid, hid, hid, hid, hid])):
        getattr(h5, name).argtypes, getattr(h5, name).restype = args, hid
    h5.H5Tset_size.argtypes = [hid, ctypes.c_size_t]
    h5.H5Tset_cset.argtypes = [hid, ctypes.c_int]
    h5.H5Pset_chunk.argtypes = [hid, ctypes.c_int, ctypes.POINTER(hsize)]
    h5.H5Pset_deflate.argtypes = [hid, ctypes.c_uint]
    h5.H5Dwrite.argtypes = [hid, hid, hid, hid, hid, ctypes.c_void_p]
    hl.H5DSattach_scale.argtypes = [hid, hid, ctypes.c_uint]
    for name in ("H5Dclose", "H5Pclose", "H5Sclose", "H5Tclose", "H5Fclose"):
        getattr(h5, name).argtypes = [hid]
    assert h5.H5open() >= 0
    f = h5.H5Fopen(str(path).encode(), 1, 0)  # H5F_ACC_RDWR, H5P_DEFAULT
    scale = h5.H5Dopen2(f, dim.encode(), 0)  # the dimension's own (scale) dataset
    text = h5.H5Tcopy(hid.in_dll(h5, "H5T_C_S1_g").value)
    assert f >= 0 and scale >= 0 and h5.H5Tset_size(text, ctypes.c_size_t(-1).value) >= 0  # H5T_VARIABLE
    assert h5.H5Tset_cset(text, 1) >= 0  # UTF-8, as netCDF-C writes NC_STRING
    for name, values in strings.items():
        shape = (hsize * 1)(len(values))
        space = h5.H5Screate_simple(1, shape, None)
        plist = h5.H5Pcreate(hid.in_dll(h5, "H5P_CLS_DATASET_CREATE_ID_g").value)
        assert h5.H5Pset_chunk(plist, 1, shape) >= 0 and h5.H5Pset_deflate(plist, 1) >= 0
        data = h5.H5Dcreate2(f, name.encode(), text, space, 0, plist, 0)
        assert data >= 0, name
        assert h5.H5Dwrite(data, text, 0, 0, 0, (ctypes.c_char_p * len(values))(*(v.encode() for v in values))) >= 0
        assert hl.H5DSattach_scale(data, scale, 0) >= 0
        for close, handle in ((h5.H5Dclose, data), (h5.H5Pclose, plist), (h5.H5Sclose, space)):
            assert close(handle) >= 0
    for close, handle in ((h5.H5Tclose, text), (h5.H5Dclose, scale), (h5.H5Fclose, f)):
        assert close(handle) >= 0


STRINGS = {"gcm_institution": ["MPI-M", "NCAR", "Météo-France"], "gcm_model": ["MPI-ESM-LR", "CESM2", "CNRM-CM6-1"]}
PR = (np.arange(24, dtype="f4").reshape(2, 3, 4) / 7).astype("f4")


@pytest.fixture(scope="module")
def atlas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A C3S-atlas-like netCDF-4 file: deflated pr whose ``coordinates`` names deflated NC_STRING variables."""
    path = tmp_path_factory.mktemp("atlas") / "pr_atlas.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.Conventions = "CF-1.9"  # NCO follows `coordinates` only in files that say so
        for name, size in (("time", None), ("lat", 3), ("lon", 4), ("member", 3)):
            ds.createDimension(name, size)
        for name, units, values in (("lat", "degrees_north", [-10.0, 0.0, 10.0]),
                                    ("lon", "degrees_east", [0.0, 90.0, 180.0, 270.0])):
            ds.createVariable(name, "f8", (name,))[:] = values
            ds[name].units = units
        time = ds.createVariable("time", "f8", ("time",))
        time.units = "days since 1970-01-01"
        time[:] = [15.5, 45.0]
        pr = ds.createVariable("pr", "f4", ("time", "lat", "lon"), zlib=True, complevel=4, shuffle=True)
        pr.units, pr.coordinates = "kg m-2 s-1", "gcm_institution gcm_model"
        pr[:] = PR
    add_deflated_strings(path, "member", STRINGS)
    with netCDF4.Dataset(path) as ds:  # the layout that broke: deflated strings netCDF-C reads back
        assert [ds[n].filters()["zlib"] for n in STRINGS] == [True, True]
        assert {n: list(ds[n][:]) for n in STRINGS} == STRINGS
    return path


@pytest.fixture(scope="module")
def ncks_out(atlas: Path) -> Path:
    out = atlas.parent / "ncks.nc"
    before = md5(atlas)
    subprocess.run(["ncks", "-O", "-v", "pr", str(atlas), str(out)], check=True, capture_output=True)
    assert md5(atlas) == before
    return out


def contents(path: Path) -> tuple[dict[str, list[str]], np.ndarray, dict[str, dict[str, object]]]:
    """The strings, pr's values and every variable's filters."""
    with netCDF4.Dataset(path) as ds:
        return ({n: list(ds[n][:]) for n in STRINGS}, np.asarray(ds["pr"][:]),
                {n: ds[n].filters() for n in (*STRINGS, "pr")})


DEFLATED = [(("-v", "pr"), 4), (("-L", "0"), 0), (("-L", "1"), 1), (("--mode", "hdf5"), 4)]


@pytest.fixture(scope="module")
def subsets(atlas: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    """``climio subset ARGS atlas OUT`` for every case of DEFLATED: on 1 rank in one process, on 2 ranks in one
    mpiexec (helpers/run_table.py); the atlas' md5 before them, and per (args, nranks) the output's folder and the
    result."""
    before = md5(atlas)
    runs = {}
    for nranks in (1, 2):
        folders = {args: tmp_path_factory.mktemp("subset") for args, _ in DEFLATED}
        done = run_table(run, [["subset", *args, str(atlas), str(folders[args] / "out.nc")] for args, _ in DEFLATED],
                         tmp_path_factory.mktemp("table"), nranks)
        runs.update({(args, nranks): (folders[args], result) for (args, _), result in zip(DEFLATED, done)})
    return before, runs


@pytest.mark.parametrize("nranks", [1, 2])
@pytest.mark.parametrize("args, level", DEFLATED)
def test_deflated_strings_are_copied_unfiltered(args: tuple[str, ...], level: int, nranks: int, atlas: Path,
                                                ncks_out: Path, subsets: tuple[str, dict]) -> None:
    before, runs = subsets
    folder, result = runs[(args, nranks)]
    out = folder / "out.nc"
    assert result.returncode == 0, result.stderr
    assert md5(atlas) == before and leftovers(str(folder)) == []
    strings, pr, filters = contents(out)
    assert strings == STRINGS
    assert pr.dtype == np.float32 and np.array_equal(pr, PR)
    assert [(filters[n]["zlib"], filters[n]["shuffle"]) for n in STRINGS] == [(False, False)] * 2
    assert (filters["pr"]["zlib"], filters["pr"]["complevel"]) == (level > 0, level)
    nco_strings, nco_pr, nco_filters = contents(ncks_out)  # ncks -v pr: the same values, strings unfiltered
    assert nco_strings == strings and np.array_equal(nco_pr, pr)
    assert [nco_filters[n]["zlib"] for n in STRINGS] == [False, False]
