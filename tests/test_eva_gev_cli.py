"""``climio eva --method gev`` end to end: block maxima and GEV fits at every rank count, scheme and split, against
a reference computed here (blocks from cftime dates, complete blocks by --max-missing, the fit's likelihood by
the plain formula and scipy's fit), on a synthetic file, real CESM2 and CORDEX output, and bad input.

The command's runs are made once, one process per rank count (``helpers/eva_batch.py``: one start-up for all of
them, each run in a directory of its own); each test checks its own runs' outcomes and files.
"""

from __future__ import annotations

import calendar
import math
import os
import sys
import warnings
from pathlib import Path

import cftime
import netCDF4
import numpy as np
import pytest
from conftest import DATA, leftovers, one_error_line
from scipy import stats

from climio.eva import gev

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Runs  # noqa: E402

TIMEOUT = 120  # every mpiexec run: a hang fails the test
FIELDS = ("location", "scale", "shape", "n_blocks", "return_level", "nll", "status")
PERIODS = (10.0, 100.0)
FILL, MISSING_VALUE = np.float32(1e20), np.float32(-999.0)
UNITS, CALENDAR = "days since 1950-01-01", "standard"
FIRST, LAST = 1951, 1962  # the complete years; the series starts on 1 July 1950 (a partial first year)
NY, NX = 4, 5
# special cells
ALL_MISSING, CONSTANT, NAN_GAPS, FILL_GAPS, MISSING_VALUE_GAPS, YEAR_MISSING, DEC_SPIKE, FEW_YEARS, BOUNDED = \
    (0, 0), (0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (2, 0), (2, 3), (3, 0)
MIN_BLOCKS = 6  # FEW_YEARS keeps 5 complete years: too_few_blocks

REAL = DATA / "real"
CESM2 = REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
CORDEX = [REAL / f"pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_{span}.nc"
          for span in ("20510101-20551231", "20560101-20601231")]


# ---------------------------------------------------------------------------------------------------------
# The synthetic input and the reference.
# ---------------------------------------------------------------------------------------------------------

def gev_quantiles(n: int, xi: float) -> np.ndarray:
    """A GEV(0, 1, xi) sample without noise: the quantiles at plotting positions (a fit stays inside)."""
    p = (np.arange(1, n + 1) - 0.35) / n
    return ((-np.log(p)) ** -xi - 1.0) / xi


def write_synthetic(path: Path) -> None:
    """Daily values, 1 July 1950 .. 31 December 1962 (standard calendar), on 4 x 5 cells: a uniform background,
    one planted maximum per year (March to November) and per DJF season, larger than the background; a large
    value in the partial year 1950 (dropped); and the special cells named above. The planted annual maxima are
    GEV quantiles with shape 0.1 (a fit inside the region), -1.2 at BOUNDED (a fit at the lower bound)."""
    rng = np.random.default_rng(20240611)
    start = cftime.date2num(cftime.datetime(1950, 7, 1, 12, calendar=CALENDAR), UNITS, CALENDAR)
    stop = cftime.date2num(cftime.datetime(1963, 1, 1, calendar=CALENDAR), UNITS, CALENDAR)
    times = np.arange(start, stop, 1.0)
    dates = cftime.num2date(times, UNITS, CALENDAR)
    year = np.array([d.year for d in dates])
    month = np.array([d.month for d in dates])
    data = rng.uniform(270.0, 280.0, (times.size, NY, NX))
    djf = gev_quantiles(13, 0.1)
    for i in range(NY):
        for j in range(NX):
            loc, scale = 300.0 + 3 * i, 2.0 + 0.5 * j
            annual = gev_quantiles(13, -1.2 if (i, j) == BOUNDED else 0.1)  # xi < -1: the fit stops at -1
            for k, y in enumerate(rng.permutation(np.arange(1950, 1963))):
                days = np.flatnonzero((year == y) & (month >= 3) & (month <= 11))
                data[rng.choice(days), i, j] = 330.0 if y == 1950 else loc + scale * annual[k]
            for k, y in enumerate(rng.permutation(np.arange(1951, 1964))):  # DJF y: Dec y-1, Jan and Feb y
                days = np.flatnonzero(((year == y - 1) & (month == 12)) | ((year == y) & (month <= 2)))
                data[rng.choice(days), i, j] = 282.0 + 3.0 * djf[k]
    data[:, ALL_MISSING[0], ALL_MISSING[1]] = FILL
    data[:, CONSTANT[0], CONSTANT[1]] = 290.0

    def gap(cell: tuple[int, int], y: int, count: int, value: float) -> None:
        days = np.flatnonzero(year == y)
        data[rng.choice(days, count, replace=False), cell[0], cell[1]] = value

    gap(NAN_GAPS, 1953, 36, np.nan)  # 36 of 365 days: 0.0986, kept at --max-missing 0.1
    gap(NAN_GAPS, 1954, 37, np.nan)  # 37 of 365: dropped
    gap(FILL_GAPS, 1952, 36, FILL)  # 36 of 366 (leap year): kept
    gap(FILL_GAPS, 1956, 37, FILL)  # 37 of 366: 0.1011, dropped
    gap(MISSING_VALUE_GAPS, 1958, 40, MISSING_VALUE)  # dropped
    gap(MISSING_VALUE_GAPS, 1959, 10, MISSING_VALUE)  # kept
    data[year == 1955, YEAR_MISSING[0], YEAR_MISSING[1]] = FILL
    data[(year >= 1951) & (year <= 1957), FEW_YEARS[0], FEW_YEARS[1]] = FILL
    data[(year == 1950) & (month == 12) & ([d.day == 15 for d in dates]), DEC_SPIKE[0], DEC_SPIKE[1]] = 299.0

    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", NY)
        ds.createDimension("lon", NX)
        t = ds.createVariable("time", "f8", ("time",))
        t.setncatts({"units": UNITS, "calendar": CALENDAR, "standard_name": "time", "axis": "T"})
        t[:] = times
        lat = ds.createVariable("lat", "f8", ("lat",))
        lat.setncatts({"units": "degrees_north", "standard_name": "latitude"})
        lat[:] = np.linspace(40.0, 55.0, NY)
        lon = ds.createVariable("lon", "f8", ("lon",))
        lon.setncatts({"units": "degrees_east", "standard_name": "longitude"})
        lon[:] = np.linspace(0.0, 20.0, NX)
        v = ds.createVariable("tasmax", "f4", ("time", "lat", "lon"), fill_value=FILL)
        v.setncatts({"units": "K", "standard_name": "air_temperature", "cell_methods": "time: maximum",
                     "missing_value": MISSING_VALUE})
        v.set_auto_maskandscale(False)
        v[:] = data.astype(np.float32)


def read_input(paths: list[Path], var: str) -> tuple[np.ndarray, list[cftime.datetime]]:
    """(values as float64 with every missing value NaN, dates), the files joined along time."""
    values, dates = [], []
    for path in paths:
        with netCDF4.Dataset(path) as ds:
            v = ds[var]
            v.set_auto_maskandscale(False)
            x = np.asarray(v[:], dtype=np.float64)
            for name in ("_FillValue", "missing_value"):
                if name in v.ncattrs():
                    x[x == np.float64(np.float32(v.getncattr(name)))] = np.nan
            values.append(x)
            t = ds["time"]
            dates += list(cftime.num2date(t[:], t.units, getattr(t, "calendar", "standard")))
    return np.concatenate(values), dates


def days_in(block_year: int, block: str, cal: str) -> int:
    """A block's length in days, from the calendar's rules (not from dates)."""
    leap = {"standard": calendar.isleap(block_year), "noleap": False, "365_day": False}[cal]
    if block == "year":
        return 366 if leap else 365
    assert block == "DJF"
    return 31 + 31 + (29 if leap else 28)


def block_key(d: cftime.datetime, block: str) -> int | None:
    """The year of the block a date belongs to: DJF Y is December Y-1, January and February Y."""
    if block == "year":
        return d.year
    return d.year + 1 if d.month == 12 else d.year if d.month <= 2 else None


def reference_maxima(values: np.ndarray, dates: list[cftime.datetime], block: str, cal: str,
                     max_missing: float) -> tuple[list[list[np.ndarray]], np.ndarray, np.ndarray]:
    """Per cell, the maxima of its complete blocks in time order; the count of complete blocks; whether the cell
    has any valid value. A block is complete when at most ``max_missing`` of its days are missing."""
    keys = np.array([block_key(d, block) or -1 for d in dates])
    cells = values.reshape(values.shape[0], -1)
    maxima: list[list[float]] = [[] for _ in range(cells.shape[1])]
    for y in sorted(set(keys[keys >= 0].tolist())):
        rows = cells[keys == y]
        valid = np.isfinite(rows).sum(axis=0)
        top = np.nanmax(np.where(np.isfinite(rows), rows, -np.inf), axis=0)
        complete = days_in(y, block, cal) - valid <= max_missing * days_in(y, block, cal)
        for c in np.flatnonzero(complete):
            maxima[c].append(top[c])
    grid = values.shape[1:]
    out = [[np.array(maxima[i * grid[1] + j]) for j in range(grid[1])] for i in range(grid[0])]
    counts = np.array([[out[i][j].size for j in range(grid[1])] for i in range(grid[0])])
    return out, counts, np.isfinite(values).any(axis=0)


def read_results(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        out = {name: np.asarray(ds[name][:]) for name in (*FIELDS, "period")}
        out["names"] = np.array(ds["status"].flag_meanings.split())[np.asarray(ds["status"][:], dtype=int)]
        assert list(ds["status"].flag_values) == list(range(len(ds["status"].flag_meanings.split())))
        return out


def assert_identical(got: dict[str, np.ndarray], want: dict[str, np.ndarray], what: str) -> None:
    for name in (*FIELDS, "period"):
        assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, (what, name)
        assert np.array_equal(got[name], want[name], equal_nan=True), (what, name)


def scipy_nll(maxima: np.ndarray) -> tuple[float, float]:
    """(shape xi, -log L) at scipy's GEV fit (scipy's c is -xi)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        c, loc, scale = stats.genextreme.fit(maxima)
    return -c, gev.negative_log_likelihood(maxima, loc, scale, -c)


def check_fit(maxima: np.ndarray, loc: float, scale: float, shape: float, nll: float, status: str,
              what: object) -> bool:
    """The fitted parameters against the likelihood: nll is -log L at them by the plain formula (to 1e-9), never
    above scipy's fit when scipy stays in the searched region (-1 <= xi <= 3) and, inside the region, below the
    xi = -1 supremum n log(mean(max - x)) + n; an estimate at the lower bound has exactly that supremum.
    Returns whether scipy's estimate was compared."""
    n = maxima.size
    bound = n * math.log(np.mean(maxima.max() - maxima)) + n
    tolerance = 1e-9 * max(1.0, abs(nll))
    if status == "shape_at_lower_bound":
        assert shape == -1.0, what
        assert math.isclose(nll, bound, rel_tol=1e-9, abs_tol=1e-9), (what, nll, bound)
        return False
    assert status in ("ok", "shape_at_upper_bound"), (what, status)
    assert scale > 0 and (shape == 3.0 if status == "shape_at_upper_bound" else -1.0 < shape < 3.0), (what, shape)
    plain = gev.negative_log_likelihood(maxima, loc, scale, shape)
    assert math.isclose(nll, plain, rel_tol=1e-9, abs_tol=1e-12), (what, nll, plain)
    assert nll < bound + tolerance, (what, nll, bound)
    xi, theirs = scipy_nll(maxima)
    if -1.0 <= xi <= 3.0:
        assert nll <= theirs + tolerance, (what, nll, theirs, xi)
        return True
    return False


def check_against_reference(got: dict[str, np.ndarray], maxima: list[list[np.ndarray]], counts: np.ndarray,
                            any_valid: np.ndarray, min_blocks: int) -> dict[tuple[int, int], str]:
    """Every cell's n_blocks, status and fit against the reference maxima; return levels from the parameters.
    Returns the statuses by cell."""
    statuses = {}
    ny, nx = counts.shape
    assert got["n_blocks"].dtype == np.int32
    assert got["n_blocks"].tolist() == counts.tolist()
    assert got["period"].tolist() == list(PERIODS)
    for i in range(ny):
        for j in range(nx):
            m, name = maxima[i][j], str(got["names"][i, j])
            statuses[(i, j)] = name
            params = [float(got[p][i, j]) for p in ("location", "scale", "shape", "nll")]
            if not any_valid[i, j]:
                want = "no_valid_data"
            elif m.size < min_blocks:
                want = "too_few_blocks"
            elif m.max() == m.min():
                want = "constant_maxima"
            else:
                want = None
            if want is not None:
                assert name == want, ((i, j), name, want)
                assert all(math.isnan(p) for p in params), ((i, j), params)
                assert np.all(np.isnan(got["return_level"][:, i, j]))
                continue
            check_fit(m, *params, name, (i, j))
            for k, period in enumerate(PERIODS):
                level = gev.return_level(np.array([params[0]]), np.array([params[1]]), np.array([params[2]]), period)
                np.testing.assert_allclose(got["return_level"][k, i, j], level[0], rtol=1e-13, atol=0)
    return statuses


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gev") / "tasmax.nc"
    write_synthetic(path)
    return path


def gev_argv(inputs: list[Path] | Path, out: Path, *args: str, var: str = "tasmax") -> list[object]:
    """The command line of a GEV run of ``var``."""
    paths = inputs if isinstance(inputs, list) else [inputs]
    return ["eva", *map(str, paths), str(out), "--method", "gev", "-v", var, *args]


ANNUAL = ("--min-blocks", str(MIN_BLOCKS), "--return-period", *map(str, PERIODS))
RUNS = [(2, "transpose", "block"), (2, "root", "lat"), (3, "slab", "block"), (3, "root", "lat"),
        (3, "transpose", "lat")]
CESM2_ARGS = ("--min-blocks", "5", "--return-period", *map(str, PERIODS))
BAD_OPTIONS = [
    (("--block", "XYZ"), ("--block 'XYZ'",)),
    (("--max-missing", "1.5"), ("--max-missing", "[0, 1)")),
    (("--min-blocks", "1"), ("--min-blocks", "at least 2")),
    (("--method", "foo"), ("--method 'foo'", "gev")),
    (("--method", "pot", "--block", "JJA", "--min-blocks", "5"), ("--block, --min-blocks", "--method gev")),
]


def write_without_time_coordinate(source: Path) -> None:
    """A file whose time dimension has no coordinate variable."""
    with netCDF4.Dataset(source, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 2)
        ds.createDimension("lon", 3)
        pr = ds.createVariable("pr", "f4", ("time", "lat", "lon"))
        pr.units = "kg m-2 s-1"
        pr[:] = np.random.default_rng(1).gamma(1.0, 1e-4, (400, 2, 3)).astype(np.float32)


class Made:
    """The file's runs, made once: each one's outcome and directory."""

    def __init__(self, runs: Runs, dirs: dict[object, Path]) -> None:
        self.runs, self.dirs = runs, dirs

    def gev(self, key: object, out: str) -> dict[str, np.ndarray]:
        """The results of a GEV run that must have succeeded cleanly (no traceback, nothing left over)."""
        result = self.runs[key]
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr and "GEV fits of block maxima" in result.stdout
        assert leftovers(str(self.dirs[key])) == []
        return read_results(self.dirs[key] / out)


@pytest.fixture(scope="module")
def made(synthetic: Path, tmp_path_factory: pytest.TempPathFactory) -> Made:
    runs = Runs(tmp_path_factory.mktemp("runs"), timeout=540)
    dirs: dict[object, Path] = {}

    def add(key: object, argv: list[object], nranks: int) -> None:
        runs.add(key, *argv, nranks=nranks)

    def new_dir(key: object) -> Path:
        dirs[key] = runs.case_dir()
        return dirs[key]

    add("annual-1", gev_argv(synthetic, new_dir("annual-1") / "annual-1.nc", *ANNUAL, "--scheme", "slab", "--split",
                             "lat"), 1)
    add("cesm2-one", gev_argv(CESM2, new_dir("cesm2-one") / "one.nc", *CESM2_ARGS, var="tas"), 1)
    for nranks, scheme, split in RUNS:
        key = ("annual", nranks, scheme, split)
        add(key, gev_argv(synthetic, new_dir(key) / "annual.nc", *ANNUAL, "--scheme", scheme, "--split", split), nranks)
    add("djf", gev_argv(synthetic, new_dir("djf") / "djf.nc", "--block", "DJF", "--return-period", *map(str, PERIODS),
                        "--scheme", "transpose", "--split", "block"), 2)
    add("cesm2-two", gev_argv(CESM2, new_dir("cesm2-two") / "two.nc", *CESM2_ARGS, "--split", "block", var="tas"), 2)
    add("cordex", gev_argv(CORDEX, new_dir("cordex") / "pr.nc", "--max-missing", "0.05", "--min-blocks", "8",
                           "--return-period", *map(str, PERIODS), var="pr"), 2)
    for n, (args, _) in enumerate(BAD_OPTIONS):
        method = () if "--method" in args else ("--method", "gev")
        add(("bad", n), ["eva", synthetic, new_dir(("bad", n)) / "eva.nc", "-v", "tasmax", *method, *args], 2)
    d = new_dir("no-time")
    write_without_time_coordinate(d / "notime.nc")
    add("no-time", ["eva", d / "notime.nc", d / "eva.nc", "--method", "gev", "-v", "pr"], 2)
    return Made(runs.run(), dirs)


@pytest.fixture(scope="module")
def annual_one_rank(made: Made) -> dict[str, np.ndarray]:
    return made.gev("annual-1", "annual-1.nc")


# ---------------------------------------------------------------------------------------------------------
# 1-2: the synthetic file, annual and DJF blocks.
# ---------------------------------------------------------------------------------------------------------

def test_annual_maxima_fits_match_the_reference(synthetic: Path, annual_one_rank: dict[str, np.ndarray]) -> None:
    """On one rank: n_blocks counts the complete years (the partial 1950 and years missing over 10% dropped;
    NaN, _FillValue and missing_value all missing), each fit's nll is the plain -log L at its parameters and
    no worse than scipy's, return levels follow from the parameters, and the special cells get their status
    (a cell whose maxima lie beyond xi = -1 stops at the bound with the supremum of the likelihood there)."""
    values, dates = read_input([synthetic], "tasmax")
    maxima, counts, any_valid = reference_maxima(values, dates, "year", CALENDAR, 0.1)
    full = LAST - FIRST + 1
    assert counts[ALL_MISSING] == 0 and counts[CONSTANT] == full and counts[YEAR_MISSING] == full - 1
    assert counts[NAN_GAPS] == counts[FILL_GAPS] == counts[MISSING_VALUE_GAPS] == full - 1
    assert counts[FEW_YEARS] == 5 and counts[DEC_SPIKE] == full
    statuses = check_against_reference(annual_one_rank, maxima, counts, any_valid, MIN_BLOCKS)
    assert statuses[ALL_MISSING] == "no_valid_data"
    assert statuses[CONSTANT] == "constant_maxima"
    assert statuses[FEW_YEARS] == "too_few_blocks"
    assert statuses[BOUNDED] == "shape_at_lower_bound"
    special = {ALL_MISSING, CONSTANT, FEW_YEARS, BOUNDED}
    assert all(name == "ok" for cell, name in statuses.items() if cell not in special), statuses
    # the planted maxima, not the partial year's 330, are the annual maxima
    assert np.all(np.concatenate([m for row in maxima for m in row]) < 330.0)


@pytest.mark.parametrize("nranks, scheme, split", RUNS)
def test_every_rank_count_scheme_and_split_gives_the_same_values(made: Made, annual_one_rank: dict[str, np.ndarray],
                                                                 nranks: int, scheme: str, split: str) -> None:
    """2 and 3 ranks, each scheme, lat and block splits: every output value equals the one-rank run's."""
    got = made.gev(("annual", nranks, scheme, split), "annual.nc")
    assert_identical(got, annual_one_rank, f"{nranks} ranks, {scheme}, {split}")


def test_djf_blocks_belong_to_the_year_of_january(synthetic: Path, made: Made) -> None:
    """--block DJF: DJF Y = Dec Y-1 + Jan/Feb Y (DJF 1951 opens with Dec 1950 of the partial first year, the last
    December alone is dropped), 90 or 91 days; a missing year 1955 drops DJF 1955 and DJF 1956."""
    got = made.gev("djf", "djf.nc")
    values, dates = read_input([synthetic], "tasmax")
    maxima, counts, any_valid = reference_maxima(values, dates, "DJF", CALENDAR, 0.1)
    assert counts[CONSTANT] == 12 and counts[YEAR_MISSING] == 10 and counts[FEW_YEARS] == 4
    assert maxima[DEC_SPIKE[0]][DEC_SPIKE[1]][0] == 299.0  # December 1950 is in DJF 1951
    statuses = check_against_reference(got, maxima, counts, any_valid, 10)
    assert statuses[FEW_YEARS] == "too_few_blocks" and statuses[YEAR_MISSING] != "too_few_blocks"
    with netCDF4.Dataset(made.dirs["djf"] / "djf.nc") as ds:
        assert ds.climio_block == "DJF"
        assert "DJF seasonal maxima" in ds["location"].cell_methods


# ---------------------------------------------------------------------------------------------------------
# 3: real model output.
# ---------------------------------------------------------------------------------------------------------

def test_cesm2_tas_one_and_two_ranks(made: Made) -> None:
    """CESM2 daily tas (noleap, 2000-2009): 10 annual maxima per cell, the same values at 1 and 2 ranks, each
    fit's nll the plain -log L at its parameters and never above scipy's."""
    one = made.gev("cesm2-one", "one.nc")
    two = made.gev("cesm2-two", "two.nc")
    assert_identical(two, one, "CESM2 on 2 ranks")
    values, dates = read_input([CESM2], "tas")
    maxima, counts, any_valid = reference_maxima(values, dates, "year", "noleap", 0.1)
    assert np.all(counts == 10)
    statuses = check_against_reference(one, maxima, counts, any_valid, 5)
    assert sum(name == "ok" for name in statuses.values()) >= len(statuses) // 2, statuses


def test_cordex_pr_two_files_joined(made: Made) -> None:
    """Two CORDEX files (2051-2055, 2056-2060, 365_day) joined along time on 2 ranks: 10 annual maxima per cell,
    fits checked as above, CF attributes copied from pr and the options recorded as global attributes."""
    out = made.dirs["cordex"] / "pr.nc"
    got = made.gev("cordex", "pr.nc")
    values, dates = read_input(CORDEX, "pr")
    maxima, counts, any_valid = reference_maxima(values, dates, "year", "365_day", 0.05)
    assert np.all(counts == 10) and np.all(got["n_blocks"] == 10)
    statuses = check_against_reference(got, maxima, counts, any_valid, 8)
    assert "ok" in statuses.values()
    with netCDF4.Dataset(out) as ds, netCDF4.Dataset(CORDEX[0]) as source:
        for name in ("location", "return_level"):
            attrs = ds[name]
            assert attrs.units == source["pr"].units == "kg m-2 s-1"
            assert attrs.standard_name == source["pr"].standard_name == "precipitation_flux"
            assert attrs.cell_methods.startswith("time: mean time: maximum"), attrs.cell_methods
            assert "annual maxima" in attrs.cell_methods
        assert ds["shape"].units == "1" and not hasattr(ds["shape"], "standard_name")
        assert ds["return_level"].dimensions == ("period", "rlat", "rlon")
        assert ds.climio_block == "year"
        assert float(ds.climio_max_missing) == 0.05 and int(ds.climio_min_blocks) == 8
        assert ds.title == "block-maxima GEV fits of pr"
        assert [os.path.basename(p) for p in ds.climio_inputs.split("\n")] == [p.name for p in CORDEX]


# ---------------------------------------------------------------------------------------------------------
# 4: errors.
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, needles", BAD_OPTIONS)
def test_bad_options_one_line_and_no_output(made: Made, args: tuple[str, ...], needles: tuple[str, ...]) -> None:
    """Each bad option ends the run with status 2 and one error line naming it; nothing is written."""
    key = ("bad", BAD_OPTIONS.index((args, needles)))
    d = made.dirs[key]
    one_error_line(made.runs[key], *needles)
    assert not (d / "eva.nc").exists() and leftovers(str(d)) == [] and os.listdir(d) == []


def test_no_time_coordinate(made: Made) -> None:
    """An input whose time dimension has no coordinate variable: gev cannot find the blocks, and says so."""
    d = made.dirs["no-time"]
    with netCDF4.Dataset(d / "notime.nc") as ds:
        assert "time" in ds.dimensions and "time" not in ds.variables
    one_error_line(made.runs["no-time"], "--method gev", "time coordinate 'time'")
    assert not (d / "eva.nc").exists() and leftovers(str(d)) == [] and os.listdir(d) == ["notime.nc"]
