"""climio subset on the real public files: conformance with ncks, and valid meshes.

Regular grids (and any file that is not a mesh): for every file a whole-file copy, one ``-d`` cut
and one box, each at 1, 2 and 3 ranks, must equal ``ncks``'s output for the same arguments: same
format, dimensions, variables (in order), types, attributes and data, bitwise (global ``history``,
``history_of_appended_files`` and ``NCO`` aside); helpers/ncdiff.py lists every difference.

* ``ncks`` runs with ``--no_alphabetize``: by default NCO 5 sorts the variables (and so the
  dimensions) alphabetically, while climio keeps the input's order, which is what
  ``--no_alphabetize`` gives.
* Boxes: climio takes NCO's ``-X LONMIN,LONMAX,LATMIN,LATMAX``. NCO's own ``-X`` only works on 1-D
  *auxiliary* coordinates (``lat(i)``, ``lon(i)``); on a regular grid ncks 5.1.4 crashes
  (segmentation fault) or refuses, so there the reference is the same box as ``-d`` coordinate
  ranges, ``-d lon,W.,E. -d lat,S.,N.`` (inclusive, wrapping when W > E), which is what
  docs/subset.md says a box is on a regular grid. On the ICON file (1-D auxiliary ``latitude(i)``,
  ``longitude(i)``) the reference is ncks's own ``-X``. On CORDEX's rotated pole (2-D ``lat``/``lon``) it is
  ``-d`` on ``rlat``/``rlon`` for the rectangle of the cells centred in the box, worked out here.
* Files where a box has no meaning are refused: exit status 2, exactly one line
  ``climio: error: ...``, no output (the reason is in ``FILES`` beside each one).

Meshes (UGRID, FESOM's transposed UGRID, MPAS): a box at 1, 2 and 3 ranks, checked by an
independent checker below (no climio code): every element dimension has ``DIM_original_index``
(increasing, in range); every connectivity entry maps back through the original indices to the
input's entry, or is "none" exactly where the input's target was removed or was none; every kept
face is whole (all its nodes and edges kept) and nodes/edges are exactly those of kept faces; the
face centres, where the file stores them, decide which faces are kept; every other variable is the
input's, cut along its element dimensions. The 2- and 3-rank outputs must equal the 1-rank output.

Synthetic files (written here with netCDF4-python) cover the format classes: CDF-1, netCDF-4
classic, netCDF-4 with one record on an unlimited dimension, and netCDF-4 with char and NC_STRING
variables (a char ``sector(basin, strlen)`` named in ``coordinates``, a char scalar
``rotated_pole`` named in ``grid_mapping``, a string variable, an NC_STRING global attribute); whole
copies and ``-v`` vs ncks.

The climio runs of one rank count run as one table in one launch (helpers/climio_batch.py: one MPI
start-up for all of them, each case captured as a process of its own, with its own output directory).
Every climio run has a timeout (``CLIMIO_REAL_TIMEOUT`` seconds, default 60): a hang fails that case
only, and a case that ends its launch fails that case only. ncks runs once per file and case (cached for
the module).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import netCDF4
import numpy as np
import pytest

from conftest import DATA, leftovers

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
import ncdiff  # noqa: E402
from climio_batch import Result, run_table  # noqa: E402

REAL = DATA / "real"
CMIP = DATA / "cmip"
MESHES = DATA / "meshes"
RANKS = (1, 2, 3)
TIMEOUT = float(os.environ.get("CLIMIO_REAL_TIMEOUT", "60"))

# ---------------------------------------------------------------------------------------------------------------
# The files, classified by hand
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    name: str  # whole, cut, box, v-...
    args: tuple[str, ...]  # climio's selection arguments
    ncks: tuple[str, ...] | None = None  # ncks's, when they differ from climio's (boxes on regular grids)
    refused: str | None = None  # why this case must be refused (exit 2, one error line)


def whole() -> Case:
    return Case("whole", ())


def cut(*args: str) -> Case:
    return Case("cut", args)


def box(xbox: str, lon: str = "lon", lat: str = "lat") -> Case:
    """climio -X W,E,S,N; ncks: the same box as coordinate ranges on the regular grid's lon/lat."""
    w, e, s, n = (f"{float(v)!r}" for v in xbox.split(","))
    return Case("box", ("-X", xbox), ("-d", f"{lon},{w},{e}", "-d", f"{lat},{s},{n}"))


def aux_box(xbox: str) -> Case:
    """A box on 1-D auxiliary lat(i)/lon(i): ncks's own -X is the reference."""
    return Case("box", ("-X", xbox))


def refused_box(xbox: str, why: str) -> Case:
    return Case("box", ("-X", xbox), refused=why)


def curvilinear_box(path: Path, xbox: str) -> Case:
    """climio -X on 2-D lat/lon (CORDEX rotated pole); ncks: -d on the grid's own index dimensions for the
    smallest rectangle holding every cell centred in the box, worked out here from the file's lat/lon (ncks -X
    refuses 2-D auxiliary coordinates, or crashes)."""
    west, east, south, north = (float(v) for v in xbox.split(","))
    with netCDF4.Dataset(path) as ds:
        lat, lon, dims = np.asarray(ds["lat"][:]), np.asarray(ds["lon"][:]), ds["lat"].dimensions
    inside = (lat >= south) & (lat <= north) & (np.mod(lon - west, 360.0) <= np.mod(east - west, 360.0))
    rows, cols = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
    assert rows.size, f"{xbox} keeps no cell of {path}"
    return Case("box", ("-X", xbox), ("-d", f"{dims[0]},{rows.min()},{rows.max()}",
                                      "-d", f"{dims[1]},{cols.min()},{cols.max()}"))

# Regular grids and other non-mesh files: key -> (path, cases). Every .nc/.ug under real/ and cmip/ is
# here or in MESH_FILES (test_every_file_is_classified checks it).
FILES: dict[str, tuple[Path, tuple[Case, ...]]] = {
    # CDF-1, 2 lat x 4 lon (0..337.5), 120 records; three decades of one run
    "ecearth1850": (REAL / "tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc", (
        whole(),
        cut("-d", "time,12,47,5", "-d", "lon,112.,260."),  # index stride on the record dimension, lon values
        box("300,120,0,40"),  # across the file's seam: lon 337.5, 0, 112.5 (wrapped, with lon_bounds)
    )),
    "ecearth1860": (REAL / "tas_Amon_EC-EARTH_historical_r1i1p1_186001-186912.nc", (
        whole(),
        cut("-d", "time,-12,", "-d", "lat,1"),  # negative index, open end; one index
        box("100,300,-90,30"),
    )),
    "ecearth1870": (REAL / "tas_Amon_EC-EARTH_historical_r1i1p1_187001-187912.nc", (
        whole(),
        cut("-v", "tas", "-d", "lon,1,3", "-d", "time,100,"),  # -v: coordinates and their bounds follow
        box("0,200,-90,0"),
    )),
    # netCDF-4 classic, ONE record on an unlimited time; hybrid sigma-pressure lev with formula_terms
    "o3": (REAL / "o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc", (
        whole(),
        cut("-v", "o3", "-d", "lev,1,2", "-d", "lat,-30.,30."),  # ap, b, ps (formula_terms), *_bnds follow
        box("90,160,-20,20"),
    )),
    # netCDF-4 classic, one record; char coordinate sector(basin, strlen) named in `coordinates`
    "msftmz": (REAL / "msftmz_Omon_MPI-ESM1-2-HR_historical_r1i1p1f1_gn_191001.nc", (
        whole(),
        cut("-v", "msftmz", "-d", "basin,1,2", "-d", "lat,-30.,60."),  # sector is cut along basin too
        refused_box("-30,30,-10,10", "a meridional streamfunction: latitude but no longitude at all "
                                     "(ncks -X refuses it too)"),
    )),
    # netCDF-4 classic, one record; ICON triangles as CMIP6 stores them: tas(time, i), 1-D auxiliary
    # latitude(i)/longitude(i) with vertex bounds, `coordinates` naming a scalar height
    "icon": (REAL / "tas_Amon_ICON-ESM-LR_historical_r1i1p1f1_gn_185001.nc", (
        whole(),
        # a stride on the points dimension; kept short: climio reads each strided element separately
        # (-d i,1000,5000,3 takes ~9 s per run against ncks's 0.05 s)
        cut("-d", "i,1000,1300,3"),
        aux_box("0,60,30,70"),  # ncks -X selects the cells along i whose centre is in the box
    )),
    # netCDF-4 classic, one record; CORDEX rotated pole, char scalar rotated_pole as grid_mapping
    "eur11": (REAL / "tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc", (
        whole(),
        cut("-v", "tas", "-d", "rlat,100,199", "-d", "rlon,-10.,5."),  # lat/lon 2-D, height, rotated_pole follow
        curvilinear_box(REAL / "tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc",
                        "0,20,40,60"),
    )),
    # netCDF-4 (not classic), 3650 records, noleap; missing_value double beside a float _FillValue
    "cesm2": (REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc", (
        whole(),
        cut("-v", "tas", "-d", "time,2001-02-01,2001-03-01", "-d", "lon,100.,260."),  # dates (noleap), as NCO
        box("0,130,-90,0"),
    )),
    # netCDF-4 classic, 1825 records (365_day); CORDEX rotated pole, 3 x 4 cells
    "nam2051": (REAL / "pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20510101-20551231.nc", (
        whole(),
        cut("-d", "time,31,58", "-d", "rlat,1"),
        curvilinear_box(REAL / "pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20510101-20551231.nc",
                        "-80,-70,40,60"),
    )),
    "nam2056": (REAL / "pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20560101-20601231.nc", (
        whole(),
        cut("-v", "pr", "-d", "time,2057-01-01,2057-01-31"),  # dates in a 365_day calendar, as NCO
        curvilinear_box(REAL / "pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20560101-20601231.nc",
                        "-80,-75,45,60"),
    )),
    # CDF-1, psi(ncol) only: data for outCSne30.ug on its own dimension, no coordinates at all
    "ne30vortex": (REAL / "outCSne30_vortex.nc", (
        whole(),
        cut("-d", "ncol,100,999,7"),
        refused_box("0,90,0,45", "no latitude/longitude in the file (the mesh is in outCSne30.ug); "
                                 "ncks -X refuses it too"),
    )),
    # netCDF-4 (compressed), 7200 days on a fixed time dimension, 360_day; 6 x 7 cells, 0..360
    "echog": (CMIP / "pr.sresa2.miub_echo_g.run1.atm.da.nc", (
        whole(),
        cut("-v", "pr", "-d", "time,360,719", "-d", "lat,45.,55."),
        box("285,300,50,62"),
    )),
    # CDF-1, 55115 records on an unlimited time, 3 x 2 cells
    "tinypr": (CMIP / "tiny_daily_pr.nc", (
        whole(),
        cut("-d", "time,-365,", "-d", "lat,1,2"),
        box("217,220,40,44"),
    )),
}

# Meshes: key -> (path, climio -X box). Boxes chosen to keep part of each mesh.
MESH_FILES: dict[str, tuple[Path, str]] = {
    "ne30": (REAL / "outCSne30.ug", "150,-150,-30,30"),  # UGRID cubed sphere, node coordinates only; dateline
    "fesom": (REAL / "fesom.mesh.diag.nc", "-30,30,30,60"),  # UGRID stored transposed (n3, elem), 1-based
    "gradient": (MESHES / "gradient_grid_subset.nc", "44,46,-1,1"),  # UGRID, int64, every connectivity
    "mpas": (MESHES / "mesh.QU.1920km.151026.nc", "170,-100,-40,40"),  # MPAS, 1-based, 0 = none; dateline
}


# ---------------------------------------------------------------------------------------------------------------
# Synthetic files for the format classes
# ---------------------------------------------------------------------------------------------------------------

def _grid(ds: netCDF4.Dataset, ntime: int, nc4: bool) -> None:
    """time (unlimited), lat with bounds, lon, a grid_mapping scalar and a float field with fills."""
    ds.setncattr("title", "climio synthetic format test")
    ds.setncattr("Conventions", "CF-1.8")
    ds.setncattr("version", np.int32(3))
    ds.setncattr("levels", np.array([1.5, 2.5], dtype="f8"))
    ds.createDimension("time", None)
    ds.createDimension("lat", 3)
    ds.createDimension("lon", 4)
    ds.createDimension("bnds", 2)
    kw: dict[str, Any] = {"zlib": True, "complevel": 4} if nc4 else {}
    t = ds.createVariable("time", "f8", ("time",))
    t.units, t.calendar, t.standard_name = "days since 2000-01-01", "noleap", "time"
    t[:] = np.arange(ntime) + 0.5
    lat = ds.createVariable("lat", "f8", ("lat",))
    lat.units, lat.standard_name, lat.bounds = "degrees_north", "latitude", "lat_bnds"
    lat[:] = [-30.0, 0.0, 30.0]
    ds.createVariable("lat_bnds", "f8", ("lat", "bnds"))[:] = [[-45, -15], [-15, 15], [15, 45]]
    lon = ds.createVariable("lon", "f8", ("lon",))
    lon.units, lon.standard_name = "degrees_east", "longitude"
    lon[:] = [0.0, 90.0, 180.0, 270.0]
    crs = ds.createVariable("crs", "i4", ())
    crs.grid_mapping_name = "latitude_longitude"
    crs.semi_major_axis = 6371000.0
    tas = ds.createVariable("t", "f4", ("time", "lat", "lon"), fill_value=np.float32(1e20), **kw)
    tas.units, tas.grid_mapping, tas.valid_range = "K", "crs", np.array([150, 350], dtype="f4")
    values = (250 + np.arange(ntime * 12, dtype="f4") / 7).reshape(ntime, 3, 4)
    values[0, 1, 2] = 1e20
    tas[:] = values
    q = ds.createVariable("q", "i2", ("time", "lat", "lon"), fill_value=np.int16(-32767), **kw)
    q.scale_factor, q.add_offset = np.float32(0.01), np.float32(5.0)
    q.set_auto_maskandscale(False)
    q[:] = (np.arange(ntime * 12) * 37 % 2000 - 1000).astype("i2").reshape(ntime, 3, 4)
    ds.createVariable("flag", "i1", ("lat", "lon"))[:] = np.arange(12, dtype="i1").reshape(3, 4) - 6


def make_cdf1(path: Path) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        _grid(ds, 4, nc4=False)


def make_nc4_classic(path: Path) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4_CLASSIC") as ds:
        _grid(ds, 3, nc4=True)


def make_nc4_one_record(path: Path) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        _grid(ds, 1, nc4=True)
        ds.createVariable("count", "u2", ("lat", "lon"))[:] = np.arange(12, dtype="u2").reshape(3, 4) * 5000
        ds.createVariable("big", "i8", ("time",))[:] = np.array([2**40 + 7], dtype="i8")


def make_nc4_text(path: Path) -> None:
    """msftmz-like: char sector(basin, strlen) in `coordinates`, char scalar rotated_pole as grid_mapping,
    an NC_STRING variable and an NC_STRING attribute."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.setncattr("title", "climio synthetic text test")
        ds.setncattr("Conventions", "CF-1.8")  # NCO follows `coordinates`/`grid_mapping` only in CF files
        ds.setncattr_string("contact", "nobody@example.org")  # an NC_STRING attribute
        ds.createDimension("time", None)
        ds.createDimension("basin", 3)
        ds.createDimension("strlen", 12)
        ds.createDimension("lat", 5)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "days since 1850-01-01", "proleptic_gregorian"
        t[:] = [15.5, 45.0]
        lat = ds.createVariable("lat", "f8", ("lat",))
        lat.units, lat.standard_name = "degrees_north", "latitude"
        lat[:] = np.linspace(-60, 60, 5)
        pole = ds.createVariable("rotated_pole", "S1", ())
        pole.grid_mapping_name = "rotated_latitude_longitude"
        pole.grid_north_pole_latitude = np.float32(39.25)
        pole.grid_north_pole_longitude = np.float32(-162.0)
        msf = ds.createVariable("msf", "f4", ("time", "basin", "lat"), fill_value=np.float32(1e20))
        msf.units, msf.coordinates, msf.grid_mapping = "kg s-1", "sector", "rotated_pole"
        msf[:] = np.arange(30, dtype="f4").reshape(2, 3, 5) * 1.5e9
        sector = ds.createVariable("sector", "S1", ("basin", "strlen"))
        sector.standard_name = "region"
        names = ["atlantic", "indo_pacific", "global"]
        sector[:] = netCDF4.stringtochar(np.array(names, dtype="S12"))
        label = ds.createVariable("label", str, ("basin",))
        label.long_name = "basin label"
        for k, name in enumerate(["Atlantic Ocean", "Indo-Pacific Ocean", "World Ocean"]):
            label[k] = name


SYNTHETIC: dict[str, tuple[Any, tuple[Case, ...]]] = {
    "syn-cdf1": (make_cdf1, (whole(), Case("v-t", ("-v", "t")))),
    "syn-nc4classic": (make_nc4_classic, (whole(), Case("v-t", ("-v", "t")))),
    "syn-nc4-onerecord": (make_nc4_one_record, (whole(), Case("v-t", ("-v", "t")))),
    "syn-nc4-text": (make_nc4_text, (whole(), Case("v-msf", ("-v", "msf")), Case("v-label", ("-v", "label")))),
}


@pytest.fixture(scope="module")
def synthetic_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("synthetic")
    for key, (make, _) in SYNTHETIC.items():
        make(folder / f"{key}.nc")
    return folder


# ---------------------------------------------------------------------------------------------------------------
# Running climio and ncks
# ---------------------------------------------------------------------------------------------------------------

def all_runs(synthetic_dir: Path) -> dict[tuple[str, str], tuple[tuple[str, ...], Path]]:
    """Every climio run of one rank count: (key, case name) -> (selection arguments, input)."""
    runs: dict[tuple[str, str], tuple[tuple[str, ...], Path]] = {}
    for key, (path, cases) in FILES.items():
        for case in cases:
            runs[(key, case.name)] = (case.args, path)
    for key, (_, cases) in SYNTHETIC.items():
        for case in cases:
            runs[(key, case.name)] = (case.args, synthetic_dir / f"{key}.nc")
    for key, (path, xbox) in MESH_FILES.items():
        runs[(f"mesh-{key}", "box")] = (("-X", xbox), path)
    return runs


@pytest.fixture(scope="module")
def climio_runs(tmp_path_factory: pytest.TempPathFactory, synthetic_dir: Path):
    """``get(key, case name, nranks)``: (climio's Result, the output path) of that run. All runs of a rank count
    go in one table, launched once when a test first needs it; each writes into a directory of its own."""
    base = tmp_path_factory.mktemp("climio")
    runs = all_runs(synthetic_dir)
    done: dict[int, dict[tuple[str, str], tuple[Result, Path]]] = {}

    def get(key: str, name: str, nranks: int) -> tuple[Result, Path]:
        if nranks not in done:
            outs = {}
            for (k, n) in runs:
                folder = base / f"n{nranks}" / f"{k}-{n}"
                folder.mkdir(parents=True)
                outs[(k, n)] = folder / (f"{k[5:]}-n{nranks}.nc" if k.startswith("mesh-") else "climio.nc")
            table = [["subset", *args, str(src), str(outs[item])] for item, (args, src) in runs.items()]
            results = run_table(table, nranks, base / f"n{nranks}-batch", timeout=TIMEOUT)
            done[nranks] = {item: (result, outs[item]) for item, result in zip(runs, results)}
        return done[nranks][(key, name)]
    return get


def tail(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


_NCKS: dict[tuple[str, str], Path | str] = {}


def ncks_reference(key: str, case: Case, src: Path, folder: Path) -> Path:
    """ncks's output for this file and case, computed once per module."""
    if (key, case.name) not in _NCKS:
        ref = folder / f"{key}-{case.name}.ncks.nc"
        args = case.ncks if case.ncks is not None else case.args
        result = subprocess.run(["ncks", "-O", "--no_alphabetize", *args, str(src), str(ref)],
                                capture_output=True, text=True, timeout=120)
        _NCKS[(key, case.name)] = ref if result.returncode == 0 else (
            f"ncks {' '.join(args)} failed ({result.returncode}): {tail(result.stderr)}")
    ref = _NCKS[(key, case.name)]
    if isinstance(ref, str):
        pytest.fail(f"the reference could not be made: {ref}")
    return ref


@pytest.fixture(scope="module")
def ncks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ncks")


def data_model(path: Path) -> str:
    with netCDF4.Dataset(path) as ds:
        return ds.data_model


def check_refused(result: Result, out: Path, why: str) -> None:
    errors = [line for line in result.stderr.splitlines() if line.startswith("climio: error:")]
    problems = []
    if result.returncode != 2:
        problems.append(f"exit status {result.returncode} (want 2)")
    if len(errors) != 1:
        problems.append(f"{len(errors)} 'climio: error:' lines (want 1)")
    if out.exists():
        problems.append("an output file was written")
    if leftovers(str(out.parent)):
        problems.append(f"temporary files left: {leftovers(str(out.parent))}")
    assert not problems, (f"must be refused ({why}): " + "; ".join(problems) +
                          f"\nstderr:\n{tail(result.stderr)}\nstdout:\n{tail(result.stdout, 3)}")


def check_equals_ncks(key: str, case: Case, src: Path, nranks: int, climio_runs, ncks_dir: Path) -> None:
    result, out = climio_runs(key, case.name, nranks)
    tmp_path = out.parent
    if case.refused:
        check_refused(result, out, case.refused)
        return
    ref = ncks_reference(key, case, src, ncks_dir)
    assert result.returncode == 0, f"climio failed ({result.returncode}):\n{tail(result.stderr)}"
    assert out.exists(), f"climio exited 0 but wrote no {out.name}:\n{tail(result.stdout)}"
    problems = []
    if data_model(out) != data_model(src):
        problems.append(f"format {data_model(out)} (input's: {data_model(src)}; ncks keeps it)")
    if leftovers(str(tmp_path)):
        problems.append(f"temporary files left: {leftovers(str(tmp_path))}")
    problems += ncdiff.diff(out, ref)
    assert not problems, ncdiff.report(
        f"{key} {case.name} ({' '.join(case.args) or 'whole file'}) at {nranks} rank(s) vs ncks "
        f"{' '.join(case.ncks if case.ncks is not None else case.args)}", problems)


REGULAR_PARAMS = [pytest.param(key, case, nranks, id=f"{key}-{case.name}-n{nranks}")
                  for key, (_, cases) in FILES.items() for case in cases for nranks in RANKS]


@pytest.mark.parametrize("key,case,nranks", REGULAR_PARAMS)
def test_real_file_equals_ncks(key: str, case: Case, nranks: int, climio_runs, ncks_dir: Path) -> None:
    check_equals_ncks(key, case, FILES[key][0], nranks, climio_runs, ncks_dir)


SYNTHETIC_PARAMS = [pytest.param(key, case, nranks, id=f"{key}-{case.name}-n{nranks}")
                    for key, (_, cases) in SYNTHETIC.items() for case in cases for nranks in RANKS]


@pytest.mark.parametrize("key,case,nranks", SYNTHETIC_PARAMS)
def test_synthetic_format_equals_ncks(key: str, case: Case, nranks: int, climio_runs, ncks_dir: Path,
                                      synthetic_dir: Path) -> None:
    check_equals_ncks(key, case, synthetic_dir / f"{key}.nc", nranks, climio_runs, ncks_dir)


def test_every_file_is_classified() -> None:
    """Every real file has a row above, so a file added to tests/data is not silently left out."""
    present = {p.resolve() for p in [*REAL.glob("*.nc"), *REAL.glob("*.ug"), *CMIP.glob("*.nc"), *MESHES.glob("*.nc")]}
    classified = {p.resolve() for p, _ in FILES.values()} | {p.resolve() for p, _ in MESH_FILES.values()}
    assert present - classified == set(), "files without a row in FILES or MESH_FILES"
    assert classified - present == set(), "rows for files that are not there"
    assert all(len({c.name for c in cases}) == len(cases) for _, cases in FILES.values()), "case names repeat"


# ---------------------------------------------------------------------------------------------------------------
# Meshes: an independent checker
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    """A connectivity variable: rows on `source`, entries pointing into `target`."""
    var: str
    source: str
    target: str
    axis: int  # axis of `source` in the variable: 1 when stored transposed, (n3, elem), as FESOM does
    base: int  # first index: UGRID start_index (default 0), MPAS 1
    none: int | None  # the "no element" value: UGRID _FillValue, MPAS 0 (any entry below base is none too)


@dataclass
class MeshSpec:
    faces: str
    nodes: str
    edges: str | None
    links: list[Link]
    closure: list[Link]  # face -> node and face -> edge: what makes a kept face whole
    topology: str | None = None
    sides: str | None = None  # MPAS nEdgesOnCell: only the first n entries of a cell's row are used
    centres: tuple[str, str, bool] | None = None  # (lon, lat, radians) of the faces, when the file stores them
    element_dims: tuple[str, ...] = field(default_factory=tuple)


MPAS_LINKS = (("cellsOnCell", "nCells", "nCells"), ("edgesOnCell", "nCells", "nEdges"),
              ("verticesOnCell", "nCells", "nVertices"), ("edgesOnEdge", "nEdges", "nEdges"),
              ("cellsOnEdge", "nEdges", "nCells"), ("verticesOnEdge", "nEdges", "nVertices"),
              ("cellsOnVertex", "nVertices", "nCells"), ("edgesOnVertex", "nVertices", "nEdges"))


def _is_radians(var: netCDF4.Variable) -> bool:
    return "rad" in str(getattr(var, "units", ""))


def mesh_spec(ds: netCDF4.Dataset) -> MeshSpec:
    topologies = [v for v in ds.variables.values() if getattr(v, "cf_role", None) == "mesh_topology"]
    if topologies:
        topo = topologies[0]
        attrs = {a: topo.getncattr(a) for a in topo.ncattrs()}
        fnc = ds[attrs["face_node_connectivity"]]
        faces = attrs.get("face_dimension", fnc.dimensions[0])
        nodes = attrs.get("node_dimension", ds[attrs["node_coordinates"].split()[0]].dimensions[0])
        edges = attrs.get("edge_dimension")
        if edges is None and "edge_node_connectivity" in attrs:
            edges = ds[attrs["edge_node_connectivity"]].dimensions[0]
        where = {"face": faces, "node": nodes, "edge": edges}
        links = []
        for attr, name in attrs.items():
            if not attr.endswith("_connectivity"):
                continue
            source, target = attr.split("_")[:2]
            var = ds[name]
            fill = getattr(var, "_FillValue", None)
            links.append(Link(name, where[source], where[target], var.dimensions.index(where[source]),
                              int(getattr(var, "start_index", 0)), None if fill is None else int(fill)))
        closure = [link for link in links if link.source == faces and link.target in (nodes, edges)]
        centres = None
        if "face_coordinates" in attrs:
            names = attrs["face_coordinates"].split()
            lon = next(n for n in names if getattr(ds[n], "standard_name", "") == "longitude"
                       or "east" in str(getattr(ds[n], "units", "")) or "lon" in n)
            lat = next(n for n in names if n != lon)
            centres = (lon, lat, _is_radians(ds[lon]))
        dims = tuple(d for d in (faces, nodes, edges) if d)
        return MeshSpec(faces, nodes, edges, links, closure, topology=topo.name, centres=centres, element_dims=dims)
    if "nCells" in ds.dimensions and "verticesOnCell" in ds.variables:
        links = [Link(name, source, target, 0, 1, 0) for name, source, target in MPAS_LINKS if name in ds.variables]
        closure = [link for link in links if link.var in ("verticesOnCell", "edgesOnCell")]
        return MeshSpec("nCells", "nVertices", "nEdges", links, closure, sides="nEdgesOnCell",
                        centres=("lonCell", "latCell", True), element_dims=("nCells", "nVertices", "nEdges"))
    raise AssertionError("not a mesh this checker knows")


def read_raw(path: Path) -> tuple[dict[str, np.ndarray], dict[str, tuple[str, ...]], dict[str, int],
                                   dict[str, dict[str, Any]]]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        ds.set_always_mask(False)
        data, dims, attrs = {}, {}, {}
        for name, var in ds.variables.items():
            var.set_auto_chartostring(False)
            data[name] = np.asarray(var[...])
            dims[name] = var.dimensions
            attrs[name] = {a: var.getncattr(a) for a in var.ncattrs()}
        sizes = {name: len(d) for name, d in ds.dimensions.items()}
    return data, dims, sizes, attrs


def in_box(lon: np.ndarray, lat: np.ndarray, xbox: str, margin: float) -> np.ndarray:
    """Centres inside the -X W,E,S,N box shrunk (margin > 0) or grown (margin < 0) by `margin` degrees."""
    west, east, south, north = (float(v) for v in xbox.split(","))
    width = (east - west) % 360
    return ((lat >= south + margin) & (lat <= north - margin)
            & ((lon - west - margin) % 360 <= width - 2 * margin))


def check_mesh(src: Path, out: Path, xbox: str) -> list[str]:
    """Every way `out` is not a valid subset of the mesh in `src` for the box `xbox`; [] when it is."""
    with netCDF4.Dataset(src) as ds:
        spec = mesh_spec(ds)
    I, idims, isizes, iattrs = read_raw(src)
    O, odims, osizes, oattrs = read_raw(out)
    problems: list[str] = []

    # provenance: DIM_original_index for every element dimension
    original: dict[str, np.ndarray] = {}
    for dim in spec.element_dims:
        name = f"{dim}_original_index"
        if dim not in osizes:
            problems.append(f"dimension {dim} missing from the output")
            continue
        if name not in O:
            problems.append(f"{name} missing")
            continue
        oi = O[name].astype(np.int64)
        if odims[name] != (dim,):
            problems.append(f"{name}: dimensions {odims[name]} (want ({dim},))")
        if oi.size and (oi.min() < 0 or oi.max() >= isizes[dim]):
            problems.append(f"{name}: values {oi.min()}..{oi.max()} outside 0..{isizes[dim] - 1}")
            continue
        if np.any(np.diff(oi) <= 0):
            problems.append(f"{name}: not strictly increasing (kept elements must keep their order)")
            continue
        original[dim] = oi
    if spec.faces not in original:
        return problems
    faces = original[spec.faces]
    if faces.size == 0:
        problems.append("no face kept (the box was chosen to keep some)")
        return problems

    # which faces: by the stored centres, when the file has them
    if spec.centres is not None:
        lon_name, lat_name, radians = spec.centres
        lon, lat = I[lon_name].astype(float), I[lat_name].astype(float)
        if radians:
            lon, lat = np.degrees(lon), np.degrees(lat)
        kept = np.zeros(isizes[spec.faces], dtype=bool)
        kept[faces] = True
        dropped_inside = np.flatnonzero(in_box(lon, lat, xbox, 1e-6) & ~kept)
        kept_outside = np.flatnonzero(~in_box(lon, lat, xbox, -1e-6) & kept)
        if dropped_inside.size:
            problems.append(f"{dropped_inside.size} faces with their centre in the box were dropped, "
                            f"e.g. {dropped_inside[:5].tolist()}")
        if kept_outside.size:
            problems.append(f"{kept_outside.size} faces with their centre outside the box were kept, "
                            f"e.g. {kept_outside[:5].tolist()}")

    # whole faces; edges exactly those of the kept faces, nodes those of the kept faces and edges
    def entries(link: Link, rows_of: np.ndarray, sides: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        rows = np.moveaxis(np.take(I[link.var], rows_of, axis=link.axis), link.axis, 0).astype(np.int64)
        valid = rows >= link.base
        if link.none is not None:
            valid &= rows != link.none
        if sides is not None:
            valid &= np.arange(rows.shape[1])[None, :] < sides[:, None]
        return rows - link.base, valid

    sides = I[spec.sides][faces] if spec.sides else None
    closure: dict[str, set[int]] = {}
    for link in spec.closure:
        rows, valid = entries(link, faces, sides)
        closure.setdefault(link.target, set()).update(rows[valid].tolist())
        if link.target not in original:
            continue
        missing = np.setdiff1d(rows[valid], original[link.target])
        if missing.size:
            broken = int(np.sum(np.any(valid & np.isin(rows, missing), axis=1)))
            problems.append(f"{link.var}: {broken} kept faces are not whole: {missing.size} of their "
                            f"{link.target} not kept, e.g. {missing[:5].tolist()}")
    edge_nodes = next((k for k in spec.links if k.source == spec.edges and k.target == spec.nodes), None)
    if spec.edges in closure and edge_nodes is not None:
        rows, valid = entries(edge_nodes, np.array(sorted(closure[spec.edges]), dtype=np.int64))
        closure[spec.nodes] |= set(rows[valid].tolist())
    for dim, used in closure.items():
        if dim in original:
            extra = np.setdiff1d(original[dim], np.array(sorted(used), dtype=np.int64))
            if extra.size:
                problems.append(f"{dim}: {extra.size} kept elements belong to no kept face (nor to an edge of "
                                f"one), e.g. {extra[:5].tolist()}")

    # every connectivity maps back to the input through the original indices
    link_vars = {link.var for link in spec.links}
    for link in spec.links:
        if link.var not in O:
            problems.append(f"connectivity {link.var} missing")
            continue
        if link.source not in original or link.target not in original:
            continue
        if odims[link.var] != idims[link.var]:
            problems.append(f"{link.var}: dimensions {odims[link.var]} (want {idims[link.var]})")
            continue
        if spec.topology is None:  # MPAS
            out_base, out_none = 1, 0
        else:
            out_base = int(oattrs[link.var].get("start_index", 0))
            fill = oattrs[link.var].get("_FillValue")
            out_none = None if fill is None else int(fill)
            if out_base != link.base:
                problems.append(f"{link.var}: start_index {out_base} (input's {link.base})")
        source_rows = np.take(I[link.var], original[link.source], axis=link.axis).astype(np.int64)
        got = O[link.var].astype(np.int64)
        if got.shape != source_rows.shape:
            problems.append(f"{link.var}: shape {got.shape} (want {source_rows.shape})")
            continue
        none_in = source_rows < link.base
        if link.none is not None:
            none_in |= source_rows == link.none
        target = original[link.target]
        wanted = source_rows - link.base
        pos = np.searchsorted(target, wanted)
        found = ~none_in & (pos < target.size) & (target[np.minimum(pos, target.size - 1)] == wanted)
        if out_none is None and not found.all():
            problems.append(f"{link.var}: {int((~found).sum())} entries point to removed (or no) {link.target} "
                            f"but the output's {link.var} has no _FillValue to say so")
            continue
        expected = np.where(found, pos + out_base, out_none if out_none is not None else 0)
        bad = np.argwhere(got != expected)
        if bad.size:
            at = tuple(int(i) for i in bad[0])
            where = list(at)
            where[link.axis] = f"{link.source} {where[link.axis]} (input {int(original[link.source][at[link.axis]])})"
            problems.append(f"{link.var}: {len(bad)} of {got.size} entries do not map back to the input; first at "
                            f"[{', '.join(map(str, where))}]: {got[at]} (want {expected[at]}; input entry "
                            f"{source_rows[at]})")

    # every other variable: the input's, cut along its element dimensions; attributes kept
    skip = link_vars | {f"{d}_original_index" for d in spec.element_dims}
    missing = [n for n in I if n not in O]
    if missing:
        problems.append(f"variables missing: {missing}")
    extra = [n for n in O if n not in I and n not in skip]
    if extra:
        problems.append(f"unexpected variables: {extra}")
    for name in (n for n in I if n in O):
        if odims[name] != idims[name]:
            problems.append(f"{name}: dimensions {odims[name]} (want {idims[name]})")
            continue
        want_attrs = dict(iattrs[name])
        got_attrs = dict(oattrs[name])
        if name in link_vars and "_FillValue" not in want_attrs:
            got_attrs.pop("_FillValue", None)  # climio may add one to say "none"
        problems += ncdiff._diff_attrs(name, got_attrs, want_attrs)
        if name in skip:
            continue
        value = I[name]
        for axis, dim in enumerate(idims[name]):
            if dim in original:
                value = np.take(value, original[dim], axis=axis)
        problems += ncdiff._diff_data(name, O[name], value)
    return problems


def mesh_output(key: str, nranks: int, climio_runs) -> Path:
    """climio's output for this mesh at this rank count (run once per module, in its rank count's table)."""
    result, out = climio_runs(f"mesh-{key}", "box", nranks)
    if not (result.returncode == 0 and out.exists()):
        pytest.fail(f"at {nranks} rank(s) climio failed ({result.returncode}):\n{tail(result.stderr)}")
    return out


MESH_PARAMS = [pytest.param(key, nranks, id=f"{key}-box-n{nranks}") for key in MESH_FILES for nranks in RANKS]


@pytest.mark.parametrize("key,nranks", MESH_PARAMS)
def test_mesh_box_is_a_valid_subset(key: str, nranks: int, climio_runs) -> None:
    src, xbox = MESH_FILES[key]
    out = mesh_output(key, nranks, climio_runs)
    problems = check_mesh(src, out, xbox)
    if nranks > 1:
        try:
            one = mesh_output(key, 1, climio_runs)
        except pytest.fail.Exception as err:
            problems.append(f"no 1-rank output to compare with: {str(err).splitlines()[0]}")
        else:
            problems += [f"vs 1 rank: {d}" for d in ncdiff.diff(out, one)]
    assert not problems, ncdiff.report(f"{key} -X {xbox} at {nranks} rank(s)", problems)
