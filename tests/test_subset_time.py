"""climio subset on time axes: joining files with different time units (as ncrcat), dates in -d (as ncks),
and unions that would lose records.

References are NCO's own output on the real public files (ncrcat, ncks), cftime applied value by value, or
plain calendar arithmetic written here; every run goes through the real command under mpiexec.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import cftime
import netCDF4
import numpy as np
import pytest

import sys

from conftest import DATA, leftovers

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch, Preparers, Result, SubsetRuns  # noqa: E402

REAL = DATA / "real"
EC_EARTH = [REAL / f"tas_Amon_EC-EARTH_historical_r1i1p1_{y}01-{y + 9}12.nc" for y in (1850, 1860, 1870)]
CORDEX = [REAL / f"pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_{span}.nc"
          for span in ("20510101-20551231", "20560101-20601231")]
CESM = REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"


def read_all(path: Path) -> dict[str, np.ndarray]:
    """Every numeric variable, raw (no masking or scaling)."""
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        return {name: np.asarray(v[...]) for name, v in ds.variables.items() if v.dtype != str and v.dtype.kind != "S"}


def ok(result: subprocess.CompletedProcess[str] | Result) -> None:
    assert result.returncode == 0, result.stderr + result.stdout


def nco(*args: str) -> None:
    subprocess.run(list(args), check=True, capture_output=True)


def assert_same(got: Path, want: Path, names: list[str] | None = None) -> None:
    """Exactly the same values (and types) of every variable of ``want`` (or of ``names``)."""
    a, b = read_all(got), read_all(want)
    for name in names or list(b):
        assert name in a, f"{name} missing from climio's output"
        assert a[name].dtype == b[name].dtype, (name, a[name].dtype, b[name].dtype)
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def fails(result: subprocess.CompletedProcess[str] | Result, out: Path, *fragments: str) -> str:
    """Exit status 2, one error line holding every fragment, no output and no temporary file."""
    assert result.returncode == 2, result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("climio: error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert not out.exists() and not leftovers(str(out.parent))
    return lines[0]


def make(path: Path, units: str, values: object, calendar: str | None = "standard", dtype: str = "f8",
         bounds: object = "auto", fmt: str = "NETCDF3_CLASSIC", extra: dict[str, float] | None = None) -> Path:
    """A small file: unlimited ``time`` (units, calendar) with bounds, ``x(x)`` and ``v(time, x)``."""
    values = np.asarray(values)
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 3)
        ds.createDimension("nv", 2)
        t = ds.createVariable("time", dtype, ("time",))
        t.units = units
        if calendar is not None:
            t.calendar = calendar
        t[:] = values
        if bounds is not None:
            t.bounds = "time_bnds"
            b = ds.createVariable("time_bnds", dtype, ("time", "nv"))
            b[:] = np.stack([values - 0.5, values + 0.5], 1) if isinstance(bounds, str) else np.asarray(bounds)
        for key, value in (extra or {}).items():
            t.setncattr(key, value)
        x = ds.createVariable("x", "f8", ("x",))
        x.units = "m"
        x[:] = [0.0, 1.0, 2.0]
        v = ds.createVariable("v", "f4", ("time", "x"))
        v[:] = np.arange(values.size * 3, dtype=np.float32).reshape(-1, 3) + float(values.size)
    return path


# ---------------------------------------------------------------------------------------------------------------
# Every climio run of this file goes in one table per rank count (helpers/climio_batch.py: one launch each, every
# case captured as a process of its own). Each test's ``prepare_*`` function below makes its inputs in a
# directory of its own and adds its runs, each writing into a directory of its own; the test then checks them.
# ---------------------------------------------------------------------------------------------------------------

prepare = Preparers()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> SubsetRuns:
    r = SubsetRuns(Batch(tmp_path_factory.mktemp("runs")))
    for fn in prepare:
        fn(r)
    return r


# ---------------------------------------------------------------------------------------------------------------
# Joining the real files: equal to ncrcat
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ncrcat_ec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ncrcat") / "ec.nc"
    nco("ncrcat", "-O", *map(str, EC_EARTH), str(out))
    return out


@prepare
def prepare_join_ec_earth(r: SubsetRuns) -> None:
    for nranks in (1, 2, 3):
        r.subset(f"ec-join-n{nranks}", *EC_EARTH, nranks=nranks)


@pytest.mark.parametrize("nranks", (1, 2, 3))
def test_join_ec_earth_rebases_like_ncrcat(ncrcat_ec: Path, runs: SubsetRuns, nranks: int) -> None:
    with netCDF4.Dataset(EC_EARTH[1]) as ds:
        assert ds["time"].units.startswith("days since 1860")  # the files really differ in units
    out = runs.out(f"ec-join-n{nranks}")
    ok(runs.result(f"ec-join-n{nranks}"))  # subset EC_EARTH... out
    assert_same(out, ncrcat_ec)
    got = read_all(out)
    assert np.all(np.diff(got["time"]) > 0) and got["time"].size == 360
    with netCDF4.Dataset(out) as ds:
        assert ds["time"].units == "days since 1850-01-01 00:00:00" and ds["time"].calendar == "standard"


# date cuts on the joined (rebased) axis: they must select on the rebased values, as ncks does on ncrcat's file
EC_CUTS = [("1859-11-01,1860-03-01", 1), ("1860-01-20", 2), ("1869-12-16T12:00,1870-02-15 12:00:00", 3),
           ("3640.,3700.", 2)]


@prepare
def prepare_ec_cuts(r: SubsetRuns) -> None:
    for cut, nranks in EC_CUTS:
        r.subset(f"ec-cut-{cut}", "-d", f"time,{cut}", *EC_EARTH, nranks=nranks)


@pytest.mark.parametrize("cut,nranks", EC_CUTS, ids=[c for c, _ in EC_CUTS])
def test_join_ec_earth_cut_by_date_like_ncks(ncrcat_ec: Path, runs: SubsetRuns, tmp_path: Path, cut: str,
                                             nranks: int) -> None:
    out, want = runs.out(f"ec-cut-{cut}"), tmp_path / "ncks.nc"
    ok(runs.result(f"ec-cut-{cut}"))  # subset -d time,CUT EC_EARTH... out at nranks
    nco("ncks", "-O", "-d", f"time,{cut}", str(ncrcat_ec), str(want))
    assert_same(out, want)


CORDEX_CUT = ("-d", "time,2055-12-25,2056-01-03 12:00")


@prepare
def prepare_join_cordex(r: SubsetRuns) -> None:
    for nranks in (1, 3):
        cut = CORDEX_CUT if nranks == 3 else ()
        r.subset(f"cordex-n{nranks}", *cut, *CORDEX, nranks=nranks)


@pytest.fixture(scope="module")
def ncrcat_cordex(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ncrcat") / "cordex.nc"
    nco("ncrcat", "-O", *map(str, CORDEX), str(out))
    return out


@pytest.mark.parametrize("nranks", (1, 3))
def test_join_cordex_like_ncrcat(tmp_path: Path, runs: SubsetRuns, ncrcat_cordex: Path, nranks: int) -> None:
    want = ncrcat_cordex  # ncrcat of the two files, made once for both rank counts
    out = runs.out(f"cordex-n{nranks}")
    cut = CORDEX_CUT if nranks == 3 else ()
    ok(runs.result(f"cordex-n{nranks}"))  # subset CUT CORDEX... out
    if cut:
        nco("ncks", "-O", *cut, str(want), str(tmp_path / "ncks.nc"))
        want = tmp_path / "ncks.nc"
        assert read_all(want)["time"].size == 10
    assert_same(out, want, ["time", "time_bnds", "pr", "lat", "lon", "rlat", "rlon"])


# ---------------------------------------------------------------------------------------------------------------
# Dates in -d: the same time indices as ncks
# ---------------------------------------------------------------------------------------------------------------

CESM_CUTS = [
    ("2000-01-01,2000-02-01", 1),
    ("2000-01-15 13:00", 2),  # MIN alone: the nearest time
    ("2000-01-01T12:00,2000-01-03 12:00:00", 3),
    ("2009-12-30,", 1),  # open end
    ("2000-02-28,2000-03-01", 2),  # noleap: no 29 February between them
    ("2001-03-01,2003-03-01,30", 3),  # with a stride
]


@prepare
def prepare_dates_noleap(r: SubsetRuns) -> None:
    for cut, nranks in CESM_CUTS:
        r.subset(f"cesm-{cut}", "-d", f"time,{cut}", CESM, nranks=nranks)


@pytest.mark.parametrize("cut,nranks", CESM_CUTS, ids=[c for c, _ in CESM_CUTS])
def test_dates_noleap_like_ncks(tmp_path: Path, runs: SubsetRuns, cut: str, nranks: int) -> None:
    out, want = runs.out(f"cesm-{cut}"), tmp_path / "ncks.nc"
    ok(runs.result(f"cesm-{cut}"))  # subset -d time,CUT CESM out at nranks
    nco("ncks", "-O", "-d", f"time,{cut}", str(CESM), str(want))
    assert_same(out, want, ["time", "time_bnds", "tas", "lat", "lon"])


DAYS_360 = np.arange(720) + 0.5  # two 360-day years, one value at noon each day
# 2000-02-30 exists in this calendar: day 59 (30 days per month); to 2000-03-02 (day 61) inclusive
CUTS_360 = [("2000-02-30,2000-03-02", [59, 60], 2), ("2001-12-30 12:00", [719], None)]


@prepare
def prepare_dates_360_day(r: SubsetRuns) -> None:
    src = make(r.folder("d360") / "d360.nc", "days since 2000-01-01", DAYS_360, calendar="360_day", bounds=None)
    for cut, _, nranks in CUTS_360:
        r.subset(f"d360-{cut}", "-O", "-d", f"time,{cut}", src, nranks=nranks)


def test_dates_360_day(tmp_path: Path, runs: SubsetRuns) -> None:
    days = DAYS_360
    src = runs.folder("d360") / "d360.nc"
    for cut, expected, nranks in CUTS_360:
        out, want = runs.out(f"d360-{cut}"), tmp_path / "ncks.nc"
        ok(runs.result(f"d360-{cut}"))  # subset -O -d time,CUT src out at nranks
        np.testing.assert_array_equal(read_all(out)["time"], days[expected], err_msg=cut)
        nco("ncks", "-O", "-d", f"time,{cut}", str(src), str(want))
        assert_same(out, want)


@prepare
def prepare_dates_noleap_synthetic(r: SubsetRuns) -> None:
    hours = np.arange(0, 2 * 365 * 24, 6, dtype=np.float64)  # six-hourly, hours since 2001-01-01, noleap
    src = make(r.folder("six") / "six.nc", "hours since 2001-01-01 00:00:00", hours, calendar="365_day", bounds=None)
    r.subset("six", "-d", "time,2001-02-28 18:00,2001-03-01 06:00", src)


def test_dates_noleap_synthetic(runs: SubsetRuns) -> None:
    out = runs.out("six")
    ok(runs.result("six"))  # subset -d "time,2001-02-28 18:00,2001-03-01 06:00" six.nc out, plainly
    start = (31 + 27) * 24 + 18  # 28 Feb 18:00, then 1 March (no 29 February)
    np.testing.assert_array_equal(read_all(out)["time"], [start, start + 6, start + 12])
    expected = cftime.date2num(cftime.datetime(2002, 3, 1, calendar="noleap"), "hours since 2001-01-01", "noleap")
    assert expected == 365 * 24 + 59 * 24  # the reference itself: cftime agrees with plain arithmetic


@prepare
def prepare_bad_dates(r: SubsetRuns) -> None:
    src = make(r.folder("bad-dates") / "a.nc", "days since 2001-01-01", np.arange(10.0), calendar="noleap")
    r.subset("bad-dates-x", "-d", "x,2001-01-01,2001-01-05", src, nranks=2)
    r.subset("bad-dates-feb29", "-d", "time,2001-02-29", src)
    r.subset("bad-dates-after", "-d", "time,2002-01-01,", src)
    r.subset("bad-dates-index", "-d", "time,-2,", src)


def test_bad_dates(runs: SubsetRuns) -> None:
    fails(runs.result("bad-dates-x"), runs.out("bad-dates-x"),  # at 2 ranks
          "-d x,2001-01-01,2001-01-05", "dimension 'x'", "no coordinate with CF time units", "'m'")
    fails(runs.result("bad-dates-feb29"), runs.out("bad-dates-feb29"),
          "-d time,2001-02-29", "not a date of the 'noleap' calendar")
    fails(runs.result("bad-dates-after"), runs.out("bad-dates-after"),
          "selects nothing", "2001-01-01 00:00:00..2001-01-10 00:00:00")
    ok(runs.result("bad-dates-index"))  # -d time,-2,: negative indices are still indices
    np.testing.assert_array_equal(read_all(runs.out("bad-dates-index"))["time"], [8.0, 9.0])


LIMITS = [("1850-01-01", "date"), ("1850-1-1", "date"), ("1850-01-01T12:00", "date"), ("1850-01-01 12:00:30", "date"),
          ("-3", "index"), ("7", "index"), ("-3.5", "value"), ("1e-5", "value"), ("-2E3", "value")]


@pytest.mark.parametrize("text,kind", LIMITS, ids=[t for t, _ in LIMITS])
def test_limits_recognised(text: str, kind: str) -> None:
    from climio.core.ranges import parse_dim_range
    from climio.core.timeaxis import Date

    got = parse_dim_range(f"time,{text}").low
    assert {Date: "date", int: "index", float: "value"}[type(got)] == kind, got


def test_date_limits_in_process() -> None:
    """DimRange.resolve on coordinates alone: 360_day, all_leap, errors."""
    from climio.errors import ClimioError
    from climio.core.ranges import parse_dim_range

    days = np.arange(720) + 0.5
    pick = parse_dim_range("time,2000-12-30,2001-01-01 12:00").resolve(720, days, False, "days since 2000-1-1",
                                                                        "360_day")
    np.testing.assert_array_equal(pick, [359, 360])
    leap = parse_dim_range("time,2001-02-29 06:00").resolve(720, days, False, "days since 2001-01-01", "366_day")
    np.testing.assert_array_equal(leap, [59])  # all_leap: 29 February exists every year; 59.25 is nearest 59.5
    for text, units, message in [("time,2001-01-03,5", "days since 2001-01-01", "mixes an index and a date"),
                                 ("time,2001-01-05,2001-01-02", "days since 2001-01-01", "MIN 2001-01-05 is after"),
                                 ("time,2001-13-01", "days since 2001-01-01", "not a valid date"),
                                 ("time,2001-01-02", "months since 2001-01-01", "not CF time units cftime")]:
        with pytest.raises(ClimioError, match=message) as err:
            parse_dim_range(text).resolve(720, days, False, units, "standard")
        assert err.value.collective and "\n" not in str(err.value)


# ---------------------------------------------------------------------------------------------------------------
# Joining synthetic files: mixed units, calendars, order, integer time
# ---------------------------------------------------------------------------------------------------------------

def cftime_rebased(path: Path, name: str, units: str, calendar: str) -> np.ndarray:
    """The reference: every value through num2date in its file's units, date2num in ``units``."""
    with netCDF4.Dataset(path) as ds:
        values = np.asarray(ds[name][...], dtype=np.float64)
        own = ds[name].units if "units" in ds[name].ncattrs() else ds["time"].units
    dates = cftime.num2date(values.ravel(), own, calendar)
    return np.asarray(cftime.date2num(dates, units, calendar), dtype=np.float64).reshape(values.shape)


@prepare
def prepare_join_mixed_units(r: SubsetRuns) -> None:
    tmp_path = r.folder("mixed")
    files = [make(tmp_path / "a.nc", "days since 2000-01-01", [0.25, 1.25, 2.25]),
             make(tmp_path / "b.nc", "hours since 2000-01-04 06:00", [0.0, 7.0, 30.5, 49.0], calendar="gregorian"),
             make(tmp_path / "c.nc", "minutes since 1999-12-01", np.arange(2) * 1440.0 + 37 * 1440 + 13.0)]
    r.subset("mixed", *files, nranks=3)
    r.subset("mixed-cut", "-d", "time,2000-01-04T06:00,2000-01-06 00:00", *files, nranks=3)


def test_join_mixed_units(tmp_path: Path, runs: SubsetRuns) -> None:
    files = [runs.folder("mixed") / name for name in ("a.nc", "b.nc", "c.nc")]
    out = runs.out("mixed")
    ok(runs.result("mixed"))  # subset a b c out at 3 ranks
    got = read_all(out)
    want_time = np.concatenate([cftime_rebased(f, "time", "days since 2000-01-01", "standard") for f in files])
    want_bnds = np.concatenate([cftime_rebased(f, "time_bnds", "days since 2000-01-01", "standard") for f in files])
    np.testing.assert_allclose(got["time"], want_time, rtol=0, atol=1e-9)  # cftime rounds to microseconds
    np.testing.assert_allclose(got["time_bnds"], want_bnds, rtol=0, atol=1e-9)
    assert np.all(np.diff(got["time"]) > 0)
    np.testing.assert_array_equal(got["v"], np.concatenate([read_all(f)["v"] for f in files]))
    nco("ncrcat", "-O", *map(str, files), str(tmp_path / "ncrcat.nc"))  # and ncrcat, to the bit
    assert_same(out, tmp_path / "ncrcat.nc")
    # a cut by date on the joined axis selects on the rebased values
    cut = runs.out("mixed-cut")
    ok(runs.result("mixed-cut"))  # subset -d "time,2000-01-04T06:00,2000-01-06 00:00" a b c cut at 3 ranks
    np.testing.assert_array_equal(read_all(cut)["time"], got["time"][3:6])


MANY_UNITS = ("h.nc", "d.nc", "s.nc", "m.nc")


@prepare
def prepare_join_many_units(r: SubsetRuns) -> None:
    tmp_path = r.folder("many")
    rng = np.random.default_rng(7)
    files = [make(tmp_path / "h.nc", "hours since 2000-01-01", [0.0, 1.0, 2.0]),
             make(tmp_path / "d.nc", "days since 2000-01-01 03:00", np.sort(rng.uniform(1, 400, 12))),
             make(tmp_path / "s.nc", "seconds since 2001-03-01 00:00:07", np.sort(rng.uniform(0, 1e8, 12))),
             make(tmp_path / "m.nc", "minutes since 2017-01-01", np.sort(rng.uniform(0, 1e6, 12)))]
    assert [f.name for f in files] == list(MANY_UNITS)
    r.subset("many", *files)


def test_join_many_units_like_ncrcat(tmp_path: Path, runs: SubsetRuns) -> None:
    files = [runs.folder("many") / name for name in MANY_UNITS]
    out, want = runs.out("many"), tmp_path / "ncrcat.nc"
    ok(runs.result("many"))  # subset h d s m out, plainly
    nco("ncrcat", "-O", *map(str, files), str(want))
    assert_same(out, want)


@prepare
def prepare_join_calendar_aliases(r: SubsetRuns) -> None:
    tmp_path = r.folder("aliases")
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0], calendar="365_day", dtype="f4")
    b = make(tmp_path / "b.nc", "hours since 2000-01-03", [0.0, 12.0], calendar="noleap", dtype="f4")
    r.subset("aliases", a, b)


def test_join_calendar_aliases_and_float32(runs: SubsetRuns) -> None:
    out = runs.out("aliases")
    ok(runs.result("aliases"))  # subset a b out, plainly
    got = read_all(out)
    assert got["time"].dtype == np.float32
    np.testing.assert_array_equal(got["time"], np.array([0.0, 1.0, 2.0, 2.5], dtype=np.float32))
    np.testing.assert_array_equal(got["time_bnds"][2:], np.array([[2.0 - 0.5 / 24, 2.0 + 0.5 / 24],
                                                                  [2.5 - 0.5 / 24, 2.5 + 0.5 / 24]], np.float32))


@prepare
def prepare_join_calendars_differ(r: SubsetRuns) -> None:
    tmp_path = r.folder("calendars")
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0], calendar="gregorian")
    b = make(tmp_path / "b.nc", "days since 2000-01-03", [0.0, 1.0], calendar="noleap")
    c = make(tmp_path / "c.nc", "days since 2000-01-03", [0.0, 1.0], calendar=None)  # no attribute: standard
    r.subset("calendars-differ", a, b, nranks=2)
    r.subset("calendars-none", a, c)


def test_join_calendars_differ(runs: SubsetRuns) -> None:
    fails(runs.result("calendars-differ"), runs.out("calendars-differ"),  # subset a b out at 2 ranks
          "calendars differ", "/a.nc'", "/b.nc'", "'gregorian'", "'noleap'")
    ok(runs.result("calendars-none"))  # subset a c out (c has no calendar attribute: standard), plainly


@prepare
def prepare_join_overlap_and_order(r: SubsetRuns) -> None:
    tmp_path = r.folder("overlap")
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0, 2.0])
    b = make(tmp_path / "b.nc", "hours since 2000-01-03", [0.0, 24.0])  # starts on a's last time
    c = make(tmp_path / "c.nc", "days since 2000-01-10", [0.0, 1.0])
    r.subset("overlap", "--join", "time", a, b, nranks=2)
    r.subset("order", c, a)


def test_join_overlap_and_order(runs: SubsetRuns) -> None:
    fails(runs.result("overlap"), runs.out("overlap"),  # subset --join time a b out at 2 ranks
          "--join time", "/b.nc'", "/a.nc'", "overlaps", "2000-01-03")
    # subset c a out: taken in time order (as cdo mergetime), a's units first, with a note saying so
    ok(runs.result("order"))
    assert "climio: note: inputs given out of time order; joined as " in runs.result("order").stderr
    with netCDF4.Dataset(runs.out("order")) as ds:
        assert ds["time"].units == "days since 2000-01-01" and list(ds["time"][:]) == [0.0, 1.0, 2.0, 9.0, 10.0]


@prepare
def prepare_join_not_increasing(r: SubsetRuns) -> None:
    tmp_path = r.folder("increasing")
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0])
    b = make(tmp_path / "b.nc", "days since 2000-01-05", [0.0, 2.0, 1.0])
    r.subset("increasing", a, b, nranks=2)


def test_join_not_increasing_inside_a_file(runs: SubsetRuns) -> None:
    line = fails(runs.result("increasing"), runs.out("increasing"),  # subset a b out at 2 ranks
                 "not strictly increasing inside", "/b.nc'", "record 1", "2000-01-07", "2000-01-06")
    assert "a.nc" not in line


@prepare
def prepare_join_integer_time(r: SubsetRuns) -> None:
    tmp_path = r.folder("integer")
    a = make(tmp_path / "a.nc", "days since 2000-01-01", np.array([0, 1, 2]), dtype="i4",
             bounds=np.array([[0, 1], [1, 2], [2, 3]]))
    exact = make(tmp_path / "b.nc", "hours since 2000-01-04", np.array([0, 24, 48]), dtype="i4",
                 bounds=np.array([[0, 24], [24, 48], [48, 72]]))
    half = make(tmp_path / "c.nc", "hours since 2000-01-04", np.array([0, 12, 48]), dtype="i4",
                bounds=np.array([[0, 12], [12, 48], [48, 72]]))
    bounds_only = make(tmp_path / "d.nc", "hours since 2000-01-04", np.array([0, 24, 48]), dtype="i4",
                       bounds=np.array([[0, 6], [6, 48], [48, 72]]))
    r.subset("integer-exact", a, exact, nranks=2)
    r.subset("integer-half", a, half)
    r.subset("integer-bounds", a, bounds_only)


def test_join_integer_time(runs: SubsetRuns) -> None:
    out = runs.out("integer-exact")
    ok(runs.result("integer-exact"))  # subset a b out at 2 ranks
    got = read_all(out)
    assert got["time"].dtype == np.int32 and got["time_bnds"].dtype == np.int32
    np.testing.assert_array_equal(got["time"], [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(got["time_bnds"][3:], [[3, 4], [4, 5], [5, 6]])
    fails(runs.result("integer-half"), runs.out("integer-half"),  # subset a c out
          "'time'", "integer", "/c.nc'", "12", "3.5", "days since 2000-01-01")
    fails(runs.result("integer-bounds"), runs.out("integer-bounds"), "'time_bnds'", "/d.nc'", "3.25")  # a d


@prepare
def prepare_join_fill_values(r: SubsetRuns) -> None:
    tmp_path = r.folder("fill")
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0])
    b = make(tmp_path / "b.nc", "days since 2000-01-03", [0.0, 1.0], bounds=np.array([[-0.5, -999.0], [0.5, 1.5]]))
    with netCDF4.Dataset(b, "a") as ds:
        ds["time_bnds"].missing_value = -999.0
    r.subset("fill", a, b)


def test_join_fill_values_are_not_rebased(runs: SubsetRuns) -> None:
    out = runs.out("fill")
    ok(runs.result("fill"))  # subset a b out, plainly
    np.testing.assert_array_equal(read_all(out)["time_bnds"][2:], [[1.5, -999.0], [2.5, 3.5]])


@prepare
def prepare_join_climatology(r: SubsetRuns) -> None:
    tmp_path = r.folder("climatology")
    files = []
    for name, units in (("a.nc", "days since 2000-01-01"), ("b.nc", "days since 2001-01-01")):
        path = make(tmp_path / name, units, [15.5, 45.0], bounds=None, extra={"climatology": "climatology_bnds"})
        with netCDF4.Dataset(path, "a") as ds:
            ds.createVariable("climatology_bnds", "f8", ("time", "nv"))[:] = [[0.0, 31.0], [31.0, 59.0]]
        files.append(path)
    r.subset("climatology", *files)


def test_join_rebases_climatology_bounds(runs: SubsetRuns) -> None:
    out = runs.out("climatology")
    ok(runs.result("climatology"))  # subset a b out, plainly
    got = read_all(out)
    np.testing.assert_array_equal(got["time"], [15.5, 45.0, 381.5, 411.0])
    np.testing.assert_array_equal(got["climatology_bnds"], [[0, 31], [31, 59], [366, 397], [397, 425]])


# ---------------------------------------------------------------------------------------------------------------
# Union of files that share a record dimension
# ---------------------------------------------------------------------------------------------------------------

def monthly(path: Path, month: int, names: tuple[str, ...] = ("psi",), ncol: int = 5400) -> Path:
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createDimension("ncol", ncol)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = [15.5 + 31 * month]
        ds.createVariable("date", "i4", ("time",))[:] = [20000116 + 100 * month]  # labels the record (as CESM)
        for k, name in enumerate(names):
            ds.createVariable(name, "f8", ("time", "ncol"))[:] = np.full((1, ncol), 10.0 * month + k)
    return path


@prepare
def prepare_union_of_record_files(r: SubsetRuns) -> None:
    tmp_path = r.folder("union-records")
    mesh = tmp_path / "outCSne30.ug"
    mesh.write_bytes((REAL / "outCSne30.ug").read_bytes())
    months = [monthly(tmp_path / f"m{m}.nc", m) for m in range(3)]
    again = monthly(tmp_path / "again.nc", 0)
    nco("ncrcat", "-O", str(months[1]), str(months[2]), str(tmp_path / "m12.nc"))
    r.subset("union-records-default", mesh, *months, nranks=2)
    r.subset("union-records-again", "--union", months[0], again)
    r.subset("union-records-more", "--union", months[0], tmp_path / "m12.nc")


def test_union_of_record_files_is_an_error(runs: SubsetRuns) -> None:
    # the default for these inputs (no unlimited dimension shared by all of them) is a union: subset mesh m0 m1 m2
    # out at 2 ranks
    fails(runs.result("union-records-default"), runs.out("union-records-default"),
          "--union", "'time'", "/m0.nc'", "/m1.nc'", "--join time", "ncrcat")
    # the same time in two files: the variable itself would be lost (subset --union m0 again out)
    fails(runs.result("union-records-again"), runs.out("union-records-again"),
          "variable 'psi'", "record dimension 'time'", "/m0.nc'", "/again.nc'", "--join time")
    # more records in one file than the other (subset --union m0 m12 out; m12 = ncrcat m1 m2)
    fails(runs.result("union-records-more"), runs.out("union-records-more"),
          "record dimension 'time'", "1 records", "2 in", "--join time")


@prepare
def prepare_union_on_one_time_axis(r: SubsetRuns) -> None:
    tmp_path = r.folder("union-one-axis")
    mesh = tmp_path / "outCSne30.ug"
    mesh.write_bytes((REAL / "outCSne30.ug").read_bytes())
    a = monthly(tmp_path / "a.nc", 1, ("psi",))
    b = monthly(tmp_path / "b.nc", 1, ("vort", "div"))
    with netCDF4.Dataset(b, "a") as ds:  # the same times in other units
        ds["time"].units = "hours since 2000-01-01"
        ds["time"][:] = ds["time"][:] * 24
    r.subset("union-one-axis", "--union", mesh, a, b, nranks=2)


def test_union_on_one_time_axis_stays_allowed(runs: SubsetRuns) -> None:
    out = runs.out("union-one-axis")
    ok(runs.result("union-one-axis"))  # subset --union mesh a b out at 2 ranks
    got = read_all(out)
    np.testing.assert_array_equal(got["psi"], np.full((1, 5400), 10.0))
    np.testing.assert_array_equal(got["vort"], np.full((1, 5400), 10.0))
    np.testing.assert_array_equal(got["div"], np.full((1, 5400), 11.0))
    np.testing.assert_array_equal(got["time"], [46.5])
    np.testing.assert_array_equal(got["date"], [20000216])  # in both inputs, identical: nothing lost
    assert "Mesh2_face_nodes" in got


@prepare
def prepare_unlimited_time_last(r: SubsetRuns) -> None:
    path = r.folder("last") / "last.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("lat", 3)
        ds.createDimension("lon", 2)
        ds.createDimension("time", None)
        time = ds.createVariable("time", "f8", ("time",))
        time.setncatts({"units": "days since 2000-01-01", "calendar": "noleap"})
        time[:] = np.arange(40.0)
        ds.createVariable("pr", "f4", ("lat", "lon", "time"))[:] = np.arange(240, dtype="f4").reshape(3, 2, 40)
    for nranks in (1, 2):
        r.subset(f"last-n{nranks}", "-d", "time,2000-01-05,2000-01-20", path, nranks=nranks)


@pytest.mark.parametrize("nranks", [1, 2])
def test_unlimited_time_after_other_dimensions_like_ncks(tmp_path: Path, runs: SubsetRuns, nranks: int) -> None:
    """netCDF-4 allows the unlimited dimension anywhere: a (lat, lon, time) file is cut by dates as ncks cuts it
    (climio once refused it: 'the unlimited dimension must come first')."""
    path = runs.folder("last") / "last.nc"
    want, got = tmp_path / "want.nc", runs.out(f"last-n{nranks}")
    nco("ncks", "-O", "-d", "time,2000-01-05,2000-01-20", str(path), str(want))
    ok(runs.result(f"last-n{nranks}"))  # subset -d time,2000-01-05,2000-01-20 last.nc got at nranks
    assert_same(got, want)
    with netCDF4.Dataset(got) as ds:
        assert ds["pr"].dimensions == ("lat", "lon", "time") and ds.dimensions["time"].isunlimited()
