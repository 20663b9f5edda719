"""``climio eva`` on real model output (tests/data/real): CORDEX daily precipitation in two files joined
along time, CESM2 daily tas, EC-EARTH monthly decades, ICON's unstructured grid, 4-D ozone, the overturning
streamfunction with its char basin names, and a EURO-CORDEX field with a scalar height.

The files are read in place (eva never writes beside its inputs); everything written goes to a temporary
directory. The command's runs are made once, one process per rank count (``helpers/eva_batch.py``: one start-up
for all of them, each run in a directory of its own); each test checks its own runs' outcomes and files.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, leftovers, one_error_line

from climio.eva import pot

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Outcome, Runs  # noqa: E402

REAL = DATA / "real"
CORDEX = [REAL / f"pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_{span}.nc"
          for span in ("20510101-20551231", "20560101-20601231")]
CESM2 = REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
EC_EARTH = [REAL / f"tas_Amon_EC-EARTH_historical_r1i1p1_{span}.nc"
            for span in ("185001-185912", "186001-186912", "187001-187912")]
ICON = REAL / "tas_Amon_ICON-ESM-LR_historical_r1i1p1f1_gn_185001.nc"
EUR11 = REAL / "tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc"
O3 = REAL / "o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc"
MSFTMZ = REAL / "msftmz_Omon_MPI-ESM1-2-HR_historical_r1i1p1f1_gn_191001.nc"

FIELDS = ("threshold", "scale", "shape", "rate", "n_exceed", "return_level", "nll", "status")
IDENTIFYING = {
    "cordex": ("driving_model_id", "driving_experiment", "driving_model_ensemble_member", "experiment_id",
               "model_id", "rcm_version_id", "institute_id", "CORDEX_domain", "project_id"),
    "cmip6": ("source_id", "experiment_id", "variant_label", "institution_id", "activity_id", "grid_label"),
}
DROPPED = ("tracking_id", "creation_date", "frequency")

def eva(result: Outcome) -> Outcome:
    """A run that must have succeeded."""
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def variables(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: np.asarray(ds[name][:]) for name in names}


def assert_same(got: dict[str, np.ndarray], want: dict[str, np.ndarray], what: str = "") -> None:
    assert got.keys() == want.keys()
    for name in got:
        assert got[name].shape == want[name].shape, (what, name, got[name].shape, want[name].shape)
        assert got[name].dtype == want[name].dtype, (what, name)
        assert np.array_equal(got[name], want[name], equal_nan=True), (what, name)


def reference(data: np.ndarray, cells: tuple[int, ...], *, tail: float = 0.01, npy: float = 365.25,
              min_exceed: int = 10, missing: tuple[float, ...] = (1e20,)) -> dict[str, np.ndarray]:
    """pot.analyse on the (time, cells...) values read with netCDF4, shaped as the output's variables."""
    result = pot.analyse(data.reshape(data.shape[0], -1), tail=tail, periods=[100], npy=npy, min_exceed=min_exceed,
                         missing=list(missing))
    return {name: getattr(result, name).reshape((1, *cells) if name == "return_level" else cells)
            for name in FIELDS}


# -- CORDEX NAM-22: two 5-year files --------------------------------------------------------------------------------

CORDEX_COMPARED = (*FIELDS, "lat", "lon", "rlat", "rlon", "time", "time_bnds")


def nco(*args: object) -> None:
    result = subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def ncrcat_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two files joined by NCO."""
    joined = tmp_path_factory.mktemp("ncrcat") / "pr_2051-2060.nc"
    nco("ncrcat", "-O", *CORDEX, joined)
    with netCDF4.Dataset(joined) as ds:
        assert ds.dimensions["time"].size == 3650
    return joined


# Every rank count meets every scheme once and every split once per rank count and per scheme (a Latin square):
# nine runs instead of 27, each pair of settings covered.
SPLITS = ("lat", "lon", "block")
SQUARE = [(nranks, scheme, SPLITS[(i + j) % 3]) for i, nranks in enumerate((1, 2, 3))
          for j, scheme in enumerate(("slab", "transpose", "root"))]
DATES = "time,2055-06-01,2056-06-30"


class Made:
    """The file's runs, made once: each one's outcome and directory."""

    def __init__(self, runs: Runs, dirs: dict[object, Path]) -> None:
        self.runs, self.dirs = runs, dirs

    def __getitem__(self, key: object) -> Outcome:
        return self.runs[key]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, ncrcat_file: Path) -> Made:
    runs = Runs(tmp_path_factory.mktemp("runs"), timeout=540)
    dirs: dict[object, Path] = {}

    def add(key: object, *argv: object, nranks: int | None = None) -> None:
        runs.add(key, "eva", *argv, nranks=nranks)

    def new_dir(key: object) -> Path:
        dirs[key] = runs.case_dir()
        return dirs[key]

    add("ncrcat", ncrcat_file, new_dir("ncrcat") / "eva.nc", "-v", "pr")
    add("cordex", *CORDEX, new_dir("cordex") / "eva.nc", "-v", "pr")
    for nranks, scheme, split in SQUARE:
        key = ("square", nranks, scheme, split)
        add(key, *CORDEX, new_dir(key) / "eva.nc", "-v", "pr", "--scheme", scheme, "--split", split, nranks=nranks)
    d = new_dir("dates")
    nco("ncks", "-O", "-d", DATES, ncrcat_file, d / "cut.nc")
    add("of-cut", d / "cut.nc", d / "of_cut.nc", "-v", "pr", "--tail", "0.05")
    add("by-dates", *CORDEX, d / "by_dates.nc", "-v", "pr", "-d", DATES, "--tail", "0.05", "--scheme", "transpose",
        nranks=2)
    add("twice", CORDEX[0], CORDEX[0], new_dir("twice") / "eva.nc", "-v", "pr")
    add("cesm2", CESM2, new_dir("cesm2") / "eva.nc", "-v", "tas", "--split", "block", nranks=2)
    add("ec-earth-no-npy", *EC_EARTH, new_dir("ec-earth-no-npy") / "eva.nc", "-v", "tas")
    add("ec-earth", *EC_EARTH, new_dir("ec-earth") / "eva.nc", "-v", "tas", "--npy", "12", "--tail", "0.1",
        "--min-exceed", "5")
    gap = [EC_EARTH[0], EC_EARTH[2]]
    add("gap-refused", *gap, new_dir("gap-refused") / "eva.nc", "-v", "tas", "--npy", "12")
    add("gap-allowed", *gap, new_dir("gap-allowed") / "eva.nc", "-v", "tas", "--npy", "12", "--allow-gaps")
    for n in (1, 3):
        add(("icon", n), ICON, new_dir(("icon", n)) / f"eva{n}.nc", "-v", "tas", "--npy", "12", nranks=n)
    d = new_dir("o3")
    add("o3-picked", O3, d / "lev0.nc", "-v", "o3", "-d", "lev,0", "--npy", "12")
    add("o3-all", O3, d / "all.nc", "-v", "o3", "--npy", "12")
    add("msftmz", MSFTMZ, new_dir("msftmz") / "eva.nc", "-v", "msftmz", "--npy", "12")
    add("eur11", EUR11, new_dir("eur11") / "eva.nc", "-v", "tas", "--npy", "12")
    return Made(runs.run(), dirs)


@pytest.fixture(scope="module")
def ncrcat_joined(made: Made) -> dict[str, np.ndarray]:
    """The file NCO joined, analysed: what climio's own join must give."""
    eva(made["ncrcat"])
    return variables(made.dirs["ncrcat"] / "eva.nc", CORDEX_COMPARED)


@pytest.fixture(scope="module")
def cordex_out(made: Made) -> Path:
    result = eva(made["cordex"])
    assert "2 files, 3650 steps" in result.stdout and "status: ok 12" in result.stdout, result.stdout
    return made.dirs["cordex"] / "eva.nc"


@pytest.mark.parametrize("nranks,scheme,split", SQUARE)
def test_cordex_joined_by_climio_equals_joined_by_ncrcat(made: Made, ncrcat_joined: dict[str, np.ndarray],
                                                        nranks: int, scheme: str, split: str) -> None:
    key = ("square", nranks, scheme, split)
    eva(made[key])
    assert_same(variables(made.dirs[key] / "eva.nc", CORDEX_COMPARED), ncrcat_joined,
                f"{nranks} ranks, {scheme}, {split}")
    assert leftovers(str(made.dirs[key])) == []


def test_cordex_output_keeps_the_rotated_grid_and_the_run_identity(cordex_out: Path) -> None:
    first, second = CORDEX
    with netCDF4.Dataset(first) as a, netCDF4.Dataset(second) as b, netCDF4.Dataset(cordex_out) as out:
        assert out.data_model == a.data_model == "NETCDF4_CLASSIC"  # the first input's format
        for name in ("lat", "lon"):
            assert out[name].dimensions == ("rlat", "rlon")
            assert np.array_equal(out[name][:], a[name][:])
            assert out[name].units == a[name].units
        for name in ("rlat", "rlon"):
            assert np.array_equal(out[name][:], a[name][:]) and out[name].axis == a[name].axis
        pole = out["rotated_pole"]
        assert pole.dtype == "S1" and pole.dimensions == ()
        assert {k: pole.getncattr(k) for k in pole.ncattrs()} == \
               {k: a["rotated_pole"].getncattr(k) for k in a["rotated_pole"].ncattrs()}
        for name in FIELDS:
            var = out[name]
            assert var.grid_mapping == "rotated_pole", name
            assert {"lat", "lon", "time"} <= set(var.coordinates.split()), (name, var.coordinates)
        assert out["threshold"].units == out["return_level"].units == out["scale"].units == "kg m-2 s-1"
        for name in ("shape", "rate", "n_exceed", "nll"):
            assert out[name].units == "1", name
        assert out["threshold"].standard_name == out["return_level"].standard_name == "precipitation_flux"
        assert out["return_level"].cell_methods.startswith("time: mean time: point (comment: ")
        assert out["return_level"].dimensions == ("period", "rlat", "rlon")
        # the scalar time coordinate spans the analysed period: first bound of the first file, last of the second
        assert out["time"].dimensions == () and out["time"].calendar == "365_day"
        assert out["time"].units == a["time"].units and out["time"].bounds == "time_bnds"
        assert out["time_bnds"][:].tolist() == [float(a["time_bnds"][0, 0]), float(b["time_bnds"][-1, 1])]
        assert out["time_bnds"][0] <= out["time"][...] <= out["time_bnds"][1]
        for key in IDENTIFYING["cordex"]:
            assert out.getncattr(key) == a.getncattr(key), key
        for key in DROPPED:
            assert key not in out.ncattrs(), key
        assert out.Conventions == "CF-1.8"
        assert out.history.startswith("20") and "climio eva" in out.history.splitlines()[0]
        assert str(first) in out.history.splitlines()[0]


def test_cordex_dates_across_the_two_files_equal_ncks_on_the_ncrcat_file(made: Made) -> None:
    d = made.dirs["dates"]
    cut, of_cut, by_dates = d / "cut.nc", d / "of_cut.nc", d / "by_dates.nc"  # cut: ncks -d DATES of ncrcat's file
    eva(made["of-cut"])
    result = eva(made["by-dates"])
    assert "2 files, 394 steps" in result.stdout, result.stdout
    assert_same(variables(by_dates, CORDEX_COMPARED), variables(of_cut, CORDEX_COMPARED), "dates")
    with netCDF4.Dataset(cut) as ds:
        assert variables(by_dates, ("time_bnds",))["time_bnds"].tolist() == \
               [float(ds["time_bnds"][0, 0]), float(ds["time_bnds"][-1, 1])]


def test_the_same_file_twice_overlaps(made: Made) -> None:
    d = made.dirs["twice"]
    one_error_line(made["twice"], CORDEX[0].name, "overlaps")
    assert not (d / "eva.nc").exists() and leftovers(str(d)) == []


# -- CESM2-WACCM: daily noleap, missing_value double and _FillValue float --------------------------------------------

def test_cesm2_equals_pot_analyse_on_the_values_read_with_netcdf4(made: Made) -> None:
    out = made.dirs["cesm2"] / "eva.nc"
    eva(made["cesm2"])
    with netCDF4.Dataset(CESM2) as ds:
        ds.set_auto_mask(False)
        tas = ds["tas"][:]
        missing = (float(ds["tas"]._FillValue), float(ds["tas"].missing_value))
        bounds = {name: ds[name][:] for name in ("lat_bnds", "lon_bnds")}
        ids = {k: ds.getncattr(k) for k in IDENTIFYING["cmip6"]}
    assert tas.shape == (3650, 2, 3)
    assert_same(variables(out, FIELDS), reference(tas, (2, 3), missing=missing), "CESM2")
    with netCDF4.Dataset(out) as ds:
        ds.set_auto_mask(False)
        for name, values in bounds.items():
            assert ds[name].dimensions == (name[:3], "nbnd") and ds[name].dtype == values.dtype
            assert np.array_equal(ds[name][:], values), name
        assert ds["lat"].bounds == "lat_bnds" and ds["lon"].bounds == "lon_bnds"
        assert {k: ds.getncattr(k) for k in IDENTIFYING["cmip6"]} == ids
        assert not set(DROPPED) & set(ds.ncattrs())
        assert ds.data_model == "NETCDF4" and ds["time"].calendar == "noleap"


# -- EC-EARTH: monthly, three decades with their own time units -------------------------------------------------------

def test_ec_earth_monthly_needs_npy(made: Made) -> None:
    d = made.dirs["ec-earth-no-npy"]
    one_error_line(made["ec-earth-no-npy"], "monthly", "--npy")
    assert not (d / "eva.nc").exists() and leftovers(str(d)) == []


def test_ec_earth_three_decades_join_with_their_time_units_rebased(made: Made) -> None:
    out = made.dirs["ec-earth"] / "eva.nc"
    result = eva(made["ec-earth"])
    assert "3 files, 360 steps" in result.stdout, result.stdout
    pieces, units = [], []
    for path in EC_EARTH:
        with netCDF4.Dataset(path) as ds:
            ds.set_auto_mask(False)
            pieces.append(ds["tas"][:])
            units.append(ds["time"].units)
            if path == EC_EARTH[0]:
                first_bound = float(ds["time_bnds"][0, 0])
            else:
                last = netCDF4.num2date(ds["time_bnds"][-1, 1], ds["time"].units, ds["time"].calendar)
    assert len(set(units)) == 3  # what makes the join interesting
    tas = np.concatenate(pieces)
    assert tas.shape[0] == 360
    assert_same(variables(out, FIELDS), reference(tas, tas.shape[1:], tail=0.1, npy=12.0, min_exceed=5), "EC-EARTH")
    with netCDF4.Dataset(out) as ds:
        assert ds["time"].units == units[0]
        assert ds["time_bnds"][:].tolist() == [first_bound,
                                               float(netCDF4.date2num(last, units[0], ds["time"].calendar))]
        assert float(ds.climio_npy) == 12.0


def test_ec_earth_a_missing_decade_is_a_gap(made: Made) -> None:
    d = made.dirs["gap-refused"]
    one_error_line(made["gap-refused"], EC_EARTH[0].name, EC_EARTH[2].name, "--allow-gaps")
    assert not (d / "eva.nc").exists() and leftovers(str(d)) == []
    out = made.dirs["gap-allowed"] / "eva.nc"
    result = eva(made["gap-allowed"])
    assert "240 steps" in result.stdout and "gap allowed" in result.stdout, result.stdout
    with netCDF4.Dataset(out) as ds:
        lines = ds.history.splitlines()
        assert "climio eva" in lines[0] and "--allow-gaps" in lines[0]
        gaps = [line for line in lines if line.startswith("climio eva: gap allowed:")]
        assert len(gaps) == 1 and EC_EARTH[0].name in gaps[0] and EC_EARTH[2].name in gaps[0], ds.history


# -- one-step files: the layouts and what is copied ------------------------------------------------------------------

def test_icon_unstructured_cells_at_1_and_3_ranks(made: Made) -> None:
    outs = {n: made.dirs[("icon", n)] / f"eva{n}.nc" for n in (1, 3)}
    for n in outs:
        eva(made[("icon", n)])
    copied = ("latitude", "longitude", "latitude_bnds", "longitude_bnds", "height")
    with netCDF4.Dataset(ICON) as ds:
        ds.set_auto_mask(False)
        want = {name: np.asarray(ds[name][:]) for name in copied}
        tas = ds["tas"][:]
    one, three = (variables(outs[n], (*FIELDS, *copied)) for n in (1, 3))
    assert_same(three, one, "ICON 3 ranks vs 1")
    for name in copied:
        assert np.array_equal(one[name], want[name]), name
    assert np.array_equal(one["threshold"], tas[0].astype(np.float64))  # one value: the quantile is that value
    with netCDF4.Dataset(outs[1]) as ds:
        assert ds["threshold"].dimensions == ("i",) and ds["return_level"].dimensions == ("period", "i")
        assert ds["latitude"].dimensions == ("i",) and ds["latitude_bnds"].dimensions == ("i", "vertices")
        assert ds["latitude"].bounds == "latitude_bnds" and ds["longitude"].bounds == "longitude_bnds"
        assert {"height", "latitude", "longitude"} <= set(ds["threshold"].coordinates.split())
        assert ds.source_id == "ICON-ESM-LR"


def test_o3_level_picked_or_fitted_as_a_cell_axis(made: Made) -> None:
    picked, every = made.dirs["o3"] / "lev0.nc", made.dirs["o3"] / "all.nc"
    result = eva(made["o3-picked"])
    assert "fitted as a cell axis" not in result.stdout
    result = eva(made["o3-all"])
    assert "lev (3) fitted as a cell axis" in result.stdout, result.stdout
    with netCDF4.Dataset(O3) as ds:
        ds.set_auto_mask(False)
        lev, o3 = ds["lev"][:], ds["o3"][:]
    with netCDF4.Dataset(picked) as ds:
        ds.set_auto_mask(False)
        assert ds["threshold"].dimensions == ("lat", "lon")
        assert ds["return_level"].dimensions == ("period", "lat", "lon")
        assert "lev" not in ds.dimensions and ds["lev"].dimensions == () and float(ds["lev"][...]) == lev[0]
        assert "lev" in ds["threshold"].coordinates.split()
        assert "formula_terms" not in ds["lev"].ncattrs()  # ps varies in time and is not copied: no dangling name
        lev0 = {name: ds[name][:] for name in FIELDS}
    with netCDF4.Dataset(every) as ds:
        ds.set_auto_mask(False)
        assert ds["threshold"].dimensions == ("lev", "lat", "lon")
        assert ds["return_level"].dimensions == ("period", "lev", "lat", "lon")
        assert np.array_equal(ds["lev"][:], lev)
        for name in FIELDS:
            level = ds[name][:, 0] if name == "return_level" else ds[name][0]
            assert np.array_equal(level, lev0[name], equal_nan=True), name
        assert np.array_equal(ds["threshold"][:], o3[0].astype(np.float64))


def test_msftmz_basins_keep_their_char_names(made: Made) -> None:
    out = made.dirs["msftmz"] / "eva.nc"
    result = eva(made["msftmz"])
    assert "basin (3) fitted as a cell axis" in result.stdout, result.stdout
    with netCDF4.Dataset(MSFTMZ) as a, netCDF4.Dataset(out) as b:
        assert b["threshold"].dimensions == ("basin", "lev", "lat")
        assert b["sector"].dimensions == ("basin", "strlen")
        assert np.array_equal(netCDF4.chartostring(b["sector"][:]), netCDF4.chartostring(a["sector"][:]))
        assert "sector" in b["threshold"].coordinates.split()


def test_eur11_rotated_pole_and_scalar_height(made: Made) -> None:
    out = made.dirs["eur11"] / "eva.nc"
    eva(made["eur11"])
    with netCDF4.Dataset(EUR11) as a, netCDF4.Dataset(out) as b:
        assert b["height"].dimensions == () and float(b["height"][...]) == float(a["height"][...])
        assert {"lat", "lon", "height"} <= set(b["return_level"].coordinates.split())
        assert b["return_level"].grid_mapping == "rotated_pole" and b["rotated_pole"].dtype == "S1"
        assert b["lat"].dimensions == ("rlat", "rlon") and np.array_equal(b["lat"][:], a["lat"][:])
        assert b.driving_model_id == a.driving_model_id and "tracking_id" not in b.ncattrs()
