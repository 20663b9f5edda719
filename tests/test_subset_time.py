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

from conftest import DATA, climio, leftovers

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


def ok(result: subprocess.CompletedProcess[str]) -> None:
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


def fails(result: subprocess.CompletedProcess[str], out: Path, *fragments: str) -> str:
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
# Joining the real files: equal to ncrcat
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ncrcat_ec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ncrcat") / "ec.nc"
    nco("ncrcat", "-O", *map(str, EC_EARTH), str(out))
    return out


@pytest.mark.parametrize("nranks", (1, 2, 3))
def test_join_ec_earth_rebases_like_ncrcat(ncrcat_ec: Path, tmp_path: Path, nranks: int) -> None:
    with netCDF4.Dataset(EC_EARTH[1]) as ds:
        assert ds["time"].units.startswith("days since 1860")  # the files really differ in units
    out = tmp_path / "joined.nc"
    ok(climio("subset", *map(str, EC_EARTH), str(out), nranks=nranks))
    assert_same(out, ncrcat_ec)
    got = read_all(out)
    assert np.all(np.diff(got["time"]) > 0) and got["time"].size == 360
    with netCDF4.Dataset(out) as ds:
        assert ds["time"].units == "days since 1850-01-01 00:00:00" and ds["time"].calendar == "standard"


# date cuts on the joined (rebased) axis: they must select on the rebased values, as ncks does on ncrcat's file
EC_CUTS = [("1859-11-01,1860-03-01", 1), ("1860-01-20", 2), ("1869-12-16T12:00,1870-02-15 12:00:00", 3),
           ("3640.,3700.", 2)]


@pytest.mark.parametrize("cut,nranks", EC_CUTS, ids=[c for c, _ in EC_CUTS])
def test_join_ec_earth_cut_by_date_like_ncks(ncrcat_ec: Path, tmp_path: Path, cut: str, nranks: int) -> None:
    out, want = tmp_path / "cut.nc", tmp_path / "ncks.nc"
    ok(climio("subset", "-d", f"time,{cut}", *map(str, EC_EARTH), str(out), nranks=nranks))
    nco("ncks", "-O", "-d", f"time,{cut}", str(ncrcat_ec), str(want))
    assert_same(out, want)


@pytest.mark.parametrize("nranks", (1, 3))
def test_join_cordex_like_ncrcat(tmp_path: Path, nranks: int) -> None:
    want = tmp_path / "ncrcat.nc"
    nco("ncrcat", "-O", *map(str, CORDEX), str(want))
    out = tmp_path / "joined.nc"
    cut = ("-d", "time,2055-12-25,2056-01-03 12:00") if nranks == 3 else ()
    ok(climio("subset", *cut, *map(str, CORDEX), str(out), nranks=nranks))
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


@pytest.mark.parametrize("cut,nranks", CESM_CUTS, ids=[c for c, _ in CESM_CUTS])
def test_dates_noleap_like_ncks(tmp_path: Path, cut: str, nranks: int) -> None:
    out, want = tmp_path / "cut.nc", tmp_path / "ncks.nc"
    ok(climio("subset", "-d", f"time,{cut}", str(CESM), str(out), nranks=nranks))
    nco("ncks", "-O", "-d", f"time,{cut}", str(CESM), str(want))
    assert_same(out, want, ["time", "time_bnds", "tas", "lat", "lon"])


def test_dates_360_day(tmp_path: Path) -> None:
    days = np.arange(720) + 0.5  # two 360-day years, one value at noon each day
    src = make(tmp_path / "d360.nc", "days since 2000-01-01", days, calendar="360_day", bounds=None)
    # 2000-02-30 exists in this calendar: day 59 (30 days per month); to 2000-03-02 (day 61) inclusive
    for cut, expected, nranks in [("2000-02-30,2000-03-02", [59, 60], 2), ("2001-12-30 12:00", [719], None)]:
        out, want = tmp_path / "cut.nc", tmp_path / "ncks.nc"
        ok(climio("subset", "-O", "-d", f"time,{cut}", str(src), str(out), nranks=nranks))
        np.testing.assert_array_equal(read_all(out)["time"], days[expected], err_msg=cut)
        nco("ncks", "-O", "-d", f"time,{cut}", str(src), str(want))
        assert_same(out, want)


def test_dates_noleap_synthetic(tmp_path: Path) -> None:
    hours = np.arange(0, 2 * 365 * 24, 6, dtype=np.float64)  # six-hourly, hours since 2001-01-01, noleap
    src = make(tmp_path / "six.nc", "hours since 2001-01-01 00:00:00", hours, calendar="365_day", bounds=None)
    out = tmp_path / "cut.nc"
    ok(climio("subset", "-d", "time,2001-02-28 18:00,2001-03-01 06:00", str(src), str(out)))
    start = (31 + 27) * 24 + 18  # 28 Feb 18:00, then 1 March (no 29 February)
    np.testing.assert_array_equal(read_all(out)["time"], [start, start + 6, start + 12])
    expected = cftime.date2num(cftime.datetime(2002, 3, 1, calendar="noleap"), "hours since 2001-01-01", "noleap")
    assert expected == 365 * 24 + 59 * 24  # the reference itself: cftime agrees with plain arithmetic


def test_bad_dates(tmp_path: Path) -> None:
    src = make(tmp_path / "a.nc", "days since 2001-01-01", np.arange(10.0), calendar="noleap")
    out = tmp_path / "out.nc"
    fails(climio("subset", "-d", "x,2001-01-01,2001-01-05", str(src), str(out), nranks=2), out,
          "-d x,2001-01-01,2001-01-05", "dimension 'x'", "no coordinate with CF time units", "'m'")
    fails(climio("subset", "-d", "time,2001-02-29", str(src), str(out)), out,
          "-d time,2001-02-29", "not a date of the 'noleap' calendar")
    fails(climio("subset", "-d", "time,2002-01-01,", str(src), str(out)), out,
          "selects nothing", "2001-01-01 00:00:00..2001-01-10 00:00:00")
    ok(climio("subset", "-d", "time,-2,", str(src), str(out)))  # negative indices are still indices
    np.testing.assert_array_equal(read_all(out)["time"], [8.0, 9.0])


LIMITS = [("1850-01-01", "date"), ("1850-1-1", "date"), ("1850-01-01T12:00", "date"), ("1850-01-01 12:00:30", "date"),
          ("-3", "index"), ("7", "index"), ("-3.5", "value"), ("1e-5", "value"), ("-2E3", "value")]


@pytest.mark.parametrize("text,kind", LIMITS, ids=[t for t, _ in LIMITS])
def test_limits_recognised(text: str, kind: str) -> None:
    from climio.subset.options import parse_dim_range
    from climio.subset.timeaxis import Date

    got = parse_dim_range(f"time,{text}").low
    assert {Date: "date", int: "index", float: "value"}[type(got)] == kind, got


def test_date_limits_in_process() -> None:
    """DimRange.resolve on coordinates alone: 360_day, all_leap, errors."""
    from climio.errors import ClimioError
    from climio.subset.options import parse_dim_range

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


def test_join_mixed_units(tmp_path: Path) -> None:
    nranks = 3
    files = [make(tmp_path / "a.nc", "days since 2000-01-01", [0.25, 1.25, 2.25]),
             make(tmp_path / "b.nc", "hours since 2000-01-04 06:00", [0.0, 7.0, 30.5, 49.0], calendar="gregorian"),
             make(tmp_path / "c.nc", "minutes since 1999-12-01", np.arange(2) * 1440.0 + 37 * 1440 + 13.0)]
    out = tmp_path / "joined.nc"
    ok(climio("subset", *map(str, files), str(out), nranks=nranks))
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
    cut = tmp_path / "cut.nc"
    ok(climio("subset", "-d", "time,2000-01-04T06:00,2000-01-06 00:00", *map(str, files), str(cut), nranks=nranks))
    np.testing.assert_array_equal(read_all(cut)["time"], got["time"][3:6])


def test_join_many_units_like_ncrcat(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    files = [make(tmp_path / "h.nc", "hours since 2000-01-01", [0.0, 1.0, 2.0]),
             make(tmp_path / "d.nc", "days since 2000-01-01 03:00", np.sort(rng.uniform(1, 400, 12))),
             make(tmp_path / "s.nc", "seconds since 2001-03-01 00:00:07", np.sort(rng.uniform(0, 1e8, 12))),
             make(tmp_path / "m.nc", "minutes since 2017-01-01", np.sort(rng.uniform(0, 1e6, 12)))]
    out, want = tmp_path / "joined.nc", tmp_path / "ncrcat.nc"
    ok(climio("subset", *map(str, files), str(out)))
    nco("ncrcat", "-O", *map(str, files), str(want))
    assert_same(out, want)


def test_join_calendar_aliases_and_float32(tmp_path: Path) -> None:
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0], calendar="365_day", dtype="f4")
    b = make(tmp_path / "b.nc", "hours since 2000-01-03", [0.0, 12.0], calendar="noleap", dtype="f4")
    out = tmp_path / "joined.nc"
    ok(climio("subset", str(a), str(b), str(out)))
    got = read_all(out)
    assert got["time"].dtype == np.float32
    np.testing.assert_array_equal(got["time"], np.array([0.0, 1.0, 2.0, 2.5], dtype=np.float32))
    np.testing.assert_array_equal(got["time_bnds"][2:], np.array([[2.0 - 0.5 / 24, 2.0 + 0.5 / 24],
                                                                  [2.5 - 0.5 / 24, 2.5 + 0.5 / 24]], np.float32))


def test_join_calendars_differ(tmp_path: Path) -> None:
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0], calendar="gregorian")
    b = make(tmp_path / "b.nc", "days since 2000-01-03", [0.0, 1.0], calendar="noleap")
    out = tmp_path / "out.nc"
    fails(climio("subset", str(a), str(b), str(out), nranks=2), out,
          "calendars differ", "/a.nc'", "/b.nc'", "'standard'", "'noleap'")
    c = make(tmp_path / "c.nc", "days since 2000-01-03", [0.0, 1.0], calendar=None)  # no attribute: standard
    ok(climio("subset", str(a), str(c), str(out)))


def test_join_overlap_and_order(tmp_path: Path) -> None:
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0, 2.0])
    b = make(tmp_path / "b.nc", "hours since 2000-01-03", [0.0, 24.0])  # starts on a's last time
    c = make(tmp_path / "c.nc", "days since 2000-01-10", [0.0, 1.0])
    out = tmp_path / "out.nc"
    fails(climio("subset", "--join", "time", str(a), str(b), str(out), nranks=2), out,
          "--join time", "/b.nc'", "/a.nc'", "overlaps", "2000-01-03")
    fails(climio("subset", str(c), str(a), str(out)), out, "/a.nc'", "/c.nc'", "overlaps")


def test_join_not_increasing_inside_a_file(tmp_path: Path) -> None:
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0])
    b = make(tmp_path / "b.nc", "days since 2000-01-05", [0.0, 2.0, 1.0])
    out = tmp_path / "out.nc"
    line = fails(climio("subset", str(a), str(b), str(out), nranks=2), out,
                 "not strictly increasing inside", "/b.nc'", "record 1", "2000-01-07", "2000-01-06")
    assert "a.nc" not in line


def test_join_integer_time(tmp_path: Path) -> None:
    a = make(tmp_path / "a.nc", "days since 2000-01-01", np.array([0, 1, 2]), dtype="i4",
             bounds=np.array([[0, 1], [1, 2], [2, 3]]))
    exact = make(tmp_path / "b.nc", "hours since 2000-01-04", np.array([0, 24, 48]), dtype="i4",
                 bounds=np.array([[0, 24], [24, 48], [48, 72]]))
    out = tmp_path / "out.nc"
    ok(climio("subset", str(a), str(exact), str(out), nranks=2))
    got = read_all(out)
    assert got["time"].dtype == np.int32 and got["time_bnds"].dtype == np.int32
    np.testing.assert_array_equal(got["time"], [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(got["time_bnds"][3:], [[3, 4], [4, 5], [5, 6]])
    half = make(tmp_path / "c.nc", "hours since 2000-01-04", np.array([0, 12, 48]), dtype="i4",
                bounds=np.array([[0, 12], [12, 48], [48, 72]]))
    out.unlink()
    fails(climio("subset", str(a), str(half), str(out)), out,
          "'time'", "integer", "/c.nc'", "12", "3.5", "days since 2000-01-01")
    bounds_only = make(tmp_path / "d.nc", "hours since 2000-01-04", np.array([0, 24, 48]), dtype="i4",
                       bounds=np.array([[0, 6], [6, 48], [48, 72]]))
    fails(climio("subset", str(a), str(bounds_only), str(out)), out, "'time_bnds'", "/d.nc'", "3.25")


def test_join_fill_values_are_not_rebased(tmp_path: Path) -> None:
    a = make(tmp_path / "a.nc", "days since 2000-01-01", [0.0, 1.0])
    b = make(tmp_path / "b.nc", "days since 2000-01-03", [0.0, 1.0], bounds=np.array([[-0.5, -999.0], [0.5, 1.5]]))
    with netCDF4.Dataset(b, "a") as ds:
        ds["time_bnds"].missing_value = -999.0
    out = tmp_path / "out.nc"
    ok(climio("subset", str(a), str(b), str(out)))
    np.testing.assert_array_equal(read_all(out)["time_bnds"][2:], [[1.5, -999.0], [2.5, 3.5]])


def test_join_rebases_climatology_bounds(tmp_path: Path) -> None:
    files = []
    for name, units in (("a.nc", "days since 2000-01-01"), ("b.nc", "days since 2001-01-01")):
        path = make(tmp_path / name, units, [15.5, 45.0], bounds=None, extra={"climatology": "climatology_bnds"})
        with netCDF4.Dataset(path, "a") as ds:
            ds.createVariable("climatology_bnds", "f8", ("time", "nv"))[:] = [[0.0, 31.0], [31.0, 59.0]]
        files.append(path)
    out = tmp_path / "out.nc"
    ok(climio("subset", *map(str, files), str(out)))
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


def test_union_of_record_files_is_an_error(tmp_path: Path) -> None:
    mesh = tmp_path / "outCSne30.ug"
    mesh.write_bytes((REAL / "outCSne30.ug").read_bytes())
    months = [monthly(tmp_path / f"m{m}.nc", m) for m in range(3)]
    out = tmp_path / "out.nc"
    # the default for these inputs (no unlimited dimension shared by all of them) is a union
    fails(climio("subset", str(mesh), *map(str, months), str(out), nranks=2), out,
          "--union", "'time'", "/m0.nc'", "/m1.nc'", "--join time", "ncrcat")
    # the same time in two files: the variable itself would be lost
    again = monthly(tmp_path / "again.nc", 0)
    fails(climio("subset", "--union", str(months[0]), str(again), str(out)), out,
          "variable 'psi'", "record dimension 'time'", "/m0.nc'", "/again.nc'", "--join time")
    # more records in one file than the other
    nco("ncrcat", "-O", str(months[1]), str(months[2]), str(tmp_path / "m12.nc"))
    fails(climio("subset", "--union", str(months[0]), str(tmp_path / "m12.nc"), str(out)), out,
          "record dimension 'time'", "1 records", "2 in", "--join time")


def test_union_on_one_time_axis_stays_allowed(tmp_path: Path) -> None:
    mesh = tmp_path / "outCSne30.ug"
    mesh.write_bytes((REAL / "outCSne30.ug").read_bytes())
    a = monthly(tmp_path / "a.nc", 1, ("psi",))
    b = monthly(tmp_path / "b.nc", 1, ("vort", "div"))
    with netCDF4.Dataset(b, "a") as ds:  # the same times in other units
        ds["time"].units = "hours since 2000-01-01"
        ds["time"][:] = ds["time"][:] * 24
    out = tmp_path / "out.nc"
    ok(climio("subset", "--union", str(mesh), str(a), str(b), str(out), nranks=2))
    got = read_all(out)
    np.testing.assert_array_equal(got["psi"], np.full((1, 5400), 10.0))
    np.testing.assert_array_equal(got["vort"], np.full((1, 5400), 10.0))
    np.testing.assert_array_equal(got["div"], np.full((1, 5400), 11.0))
    np.testing.assert_array_equal(got["time"], [46.5])
    np.testing.assert_array_equal(got["date"], [20000216])  # in both inputs, identical: nothing lost
    assert "Mesh2_face_nodes" in got


@pytest.mark.parametrize("nranks", [1, 2])
def test_unlimited_time_after_other_dimensions_like_ncks(tmp_path: Path, nranks: int) -> None:
    """netCDF-4 allows the unlimited dimension anywhere: a (lat, lon, time) file is cut by dates as ncks cuts it
    (climio once refused it: 'the unlimited dimension must come first')."""
    path = tmp_path / "last.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("lat", 3)
        ds.createDimension("lon", 2)
        ds.createDimension("time", None)
        time = ds.createVariable("time", "f8", ("time",))
        time.setncatts({"units": "days since 2000-01-01", "calendar": "noleap"})
        time[:] = np.arange(40.0)
        ds.createVariable("pr", "f4", ("lat", "lon", "time"))[:] = np.arange(240, dtype="f4").reshape(3, 2, 40)
    want, got = tmp_path / "want.nc", tmp_path / "got.nc"
    nco("ncks", "-O", "-d", "time,2000-01-05,2000-01-20", str(path), str(want))
    ok(climio("subset", "-d", "time,2000-01-05,2000-01-20", str(path), str(got), nranks=nranks))
    assert_same(got, want)
    with netCDF4.Dataset(got) as ds:
        assert ds["pr"].dimensions == ("lat", "lon", "time") and ds.dimensions["time"].isunlimited()
