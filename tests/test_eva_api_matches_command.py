"""The API's result, written with ``to_netcdf``, is the file ``climio eva`` writes from the same input and options:
every dimension, variable (type, dimensions, attributes, values) and global attribute, read back with netCDF4, but
``history`` (each says what made it) and ``climio_inputs`` (the command's file names; the API has a Dataset).
Two differences are xarray's writer's: it cannot write a scalar char variable, so CORDEX's ``rotated_pole``
comes back with a length-1 dimension ``string1`` (and reads back the same); the API's ``season_name`` is str, which
xarray writes as the same chars with ``_Encoding = "utf-8"``. The Dataset the API returns is what
``xr.open_dataset`` gives of the command's file (its period's time numbers as stored, as with
``decode_times=False``; ``season_name`` as str).

On the shipped real files (tests/data/real): CESM2 daily tas (netCDF-4, lat/lon bounds, no ``var=``), the two
CORDEX NAM-22 files opened with ``open_mfdataset`` (rotated pole, 2-D lat/lon), CORDEX EUR-11 (scalar height),
msftmz (a char coordinate) and GEV seasons with intervals. The command's runs are made once, in one process
(``helpers/eva_batch.py``).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
from conftest import DATA

from climio.core.datavars import data_variables, only_data_variable
from climio.errors import ClimioError
from climio.eva import fit_gev, fit_pot

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Runs  # noqa: E402

REAL = DATA / "real"
CESM = REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
NAM = sorted(REAL.glob("pr_NAM-22_*_day_*.nc"))
EUR = next(REAL.glob("tas_EUR-11_*.nc"))
MSFTMZ = next(REAL.glob("msftmz_Omon_*.nc"))
NOT_COMPARED = ("history", "climio_inputs")


def opened(paths: list[Path]) -> xr.Dataset:
    """xarray's default open of one file or several (open_mfdataset), its fill-value warnings quiet."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xr.SerializationWarning)  # CESM's _FillValue and missing_value
        return xr.open_mfdataset(paths) if len(paths) > 1 else xr.open_dataset(paths[0])


# case -> (inputs, the command's options, the API call on the opened inputs)
CASES: dict[str, tuple[list[Path], list[str], Callable[[xr.Dataset], xr.Dataset]]] = {
    "cesm-pot": ([CESM], ["-v", "tas"], lambda ds: fit_pot(ds)),
    "nam-joined": (NAM, ["--tail", "0.02", "--return-period", "5", "20"],
                   lambda ds: fit_pot(ds, tail=0.02, return_periods=[5, 20])),
    "eur-height": ([EUR], ["-v", "tas", "--npy", "12"], lambda ds: fit_pot(ds, npy=12)),
    "msftmz-sector": ([MSFTMZ], ["-v", "msftmz", "--npy", "12"], lambda ds: fit_pot(ds, npy=12)),
    "cesm-gev-seasons": ([CESM], ["-v", "tas", "--method", "gev", "--block", "DJF,JJA", "--min-blocks", "5",
                                  "--ci", "0.9", "--ci-method", "normal", "--return-period", "10", "50"],
                         lambda ds: fit_gev(ds, block="DJF,JJA", min_blocks=5, ci=0.9, ci_method="normal",
                                            return_periods=[10, 50])),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, xr.Dataset]]:
    """Each case: (the command's file, the API's result written with to_netcdf in the command's format, the
    API's result)."""
    d = tmp_path_factory.mktemp("api-matches-command")
    runs = Runs(d / "runs", timeout=300)
    for case, (inputs, options, _) in CASES.items():
        runs.add(case, "eva", *inputs, d / f"{case}-command.nc", *options)
    runs.run()
    out = {}
    for case, (inputs, _, call) in CASES.items():
        assert runs[case].returncode == 0, (case, runs[case].stderr)
        command, api = d / f"{case}-command.nc", d / f"{case}-api.nc"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # msftmz and EUR-11 have one step: no cell can be fitted
            result = call(opened(inputs)).compute()
        with netCDF4.Dataset(command) as nc:
            result.to_netcdf(api, format=nc.data_model)
        out[case] = (command, api, result)
    return out


def attributes(thing: netCDF4.Dataset | netCDF4.Variable) -> dict[str, tuple[str, str]]:
    """Each attribute's type (``text`` or the numpy type) and value, NaN included."""
    out = {}
    for key in thing.ncattrs():
        value = thing.getncattr(key)
        out[key] = ("text", value) if isinstance(value, str) else (np.asarray(value).dtype.str,
                                                                     repr(np.asarray(value).tolist()))
    return out


@pytest.mark.parametrize("case", CASES)
def test_to_netcdf_writes_the_commands_file(made: dict[str, tuple[Path, Path, xr.Dataset]], case: str) -> None:
    command, api, _ = made[case]
    with netCDF4.Dataset(command) as want, netCDF4.Dataset(api) as got:
        for nc in (want, got):
            nc.set_auto_mask(False)
            nc.set_auto_chartostring(False)  # text as stored: chars
        scalar_text = {n for n, v in want.variables.items() if v.dimensions == () and v.dtype == "S1"}
        assert {n: len(d) for n, d in got.dimensions.items() if n != "string1"} == \
               {n: len(d) for n, d in want.dimensions.items()}
        assert list(got.variables) == list(want.variables)
        for name, w in want.variables.items():
            g = got[name]
            assert g.dtype == w.dtype, name
            assert g.dimensions == (("string1",) if name in scalar_text else w.dimensions), name
            assert attributes(g) == {**attributes(w), **({"_Encoding": ("text", "utf-8")} if name == "season_name"
                                                        else {})}, name
            assert np.array_equal(np.reshape(g[:], w.shape), w[:], equal_nan=w.dtype.kind == "f"), name
        assert [k for k in got.ncattrs() if k not in NOT_COMPARED] == [k for k in want.ncattrs()
                                                                       if k not in NOT_COMPARED]
        assert {k: v for k, v in attributes(got).items() if k not in NOT_COMPARED} == \
               {k: v for k, v in attributes(want).items() if k not in NOT_COMPARED}
        assert got.history.splitlines()[0].split(": ", 1)[1].startswith("climio.eva.fit_")


@pytest.mark.parametrize("case", CASES)
def test_the_result_is_the_commands_file_as_xarray_opens_it(made: dict[str, tuple[Path, Path, xr.Dataset]],
                                                            case: str) -> None:
    command, _, result = made[case]
    with xr.open_dataset(command, decode_times=False) as want:
        want = want.load()
    for ds in (want, result):
        for key in NOT_COMPARED:
            ds.attrs.pop(key, None)
    if "season_name" in want.coords:
        assert result["season_name"].values.tolist() == ["DJF", "JJA"]
        want = want.assign_coords(season_name=want["season_name"].astype(str))
    xr.testing.assert_identical(result, want)


def test_nothing_time_dependent_comes_from_a_multi_file_open(made: dict[str, tuple[Path, Path, xr.Dataset]]) -> None:
    """open_mfdataset gives rotated_pole(time) with 3,650 entries; the result has it scalar, and nothing on time."""
    assert opened(NAM)["rotated_pole"].dims == ("time",)
    result = made["nam-joined"][2]
    assert [n for n, v in result.variables.items() if "time" in v.dims] == []
    assert result["rotated_pole"].dims == () and result["rotated_pole"].attrs["grid_mapping_name"] == \
        "rotated_latitude_longitude"
    with netCDF4.Dataset(NAM[0]) as first, netCDF4.Dataset(NAM[1]) as last:  # the period: both files' ends
        assert result["time_bnds"].values.tolist() == [float(first["time_bnds"][0, 0]),
                                                        float(last["time_bnds"][-1, 1])]
        assert result["time"].attrs["units"] == first["time"].units == "days since 1950-1-1 00:00"


def test_every_reference_of_the_written_result_is_there(made: dict[str, tuple[Path, Path, xr.Dataset]]) -> None:
    """No dangling bounds, grid_mapping or coordinates, from a Dataset or from a DataArray without lat_bnds."""
    alone = fit_pot(opened([CESM])["tas"])
    assert "bounds" not in alone["lat"].attrs and "lat_bnds" not in alone  # the DataArray has no lat_bnds
    paths = [api for _, api, _ in made.values()]
    alone.to_netcdf(paths[0].parent / "alone.nc")
    for path in [*paths, paths[0].parent / "alone.nc"]:
        with netCDF4.Dataset(path) as nc:
            for name, var in nc.variables.items():
                for key in ("bounds", "grid_mapping", "coordinates"):
                    missing = [n for n in str(var.__dict__.get(key, "")).split() if n not in nc.variables]
                    assert missing == [], (path.name, name, key)


def declared(path: Path) -> dict[str, tuple[tuple[str, ...], dict[str, object]]]:
    with netCDF4.Dataset(path) as nc:
        return {n: (v.dimensions, v.__dict__) for n, v in nc.variables.items()}


def test_the_data_variable_rule_on_the_shipped_files() -> None:
    """Bounds, grid mappings, formula terms and coordinates are never data: each CF file has one data variable."""
    expected = {"tas_day_CESM2-*.nc": "tas", "pr_NAM-22_*.nc": "pr", "tas_EUR-11_*.nc": "tas",
                "tas_Amon_ICON-*.nc": "tas", "tas_Amon_EC-EARTH_*.nc": "tas", "o3_AERmon_*.nc": "o3",
                "msftmz_*.nc": "msftmz"}
    for pattern, name in expected.items():
        for path in sorted(REAL.glob(pattern)):
            variables = declared(path)
            assert data_variables(variables) == [name], path.name
            assert only_data_variable(variables, path.name, "--var") == name
    o3 = declared(next(REAL.glob("o3_AERmon_*.nc")))
    assert {"ap", "b", "ps", "lev_bnds", "time_bnds"} <= set(o3)  # there, and none of them data
    # UGRID: the topology (cf_role) and the coordinates and connectivity it names are never data
    assert data_variables(declared(REAL / "outCSne30_vortex.nc")) == ["psi"]
    mesh = declared(REAL / "outCSne30.ug")
    with pytest.raises(ClimioError, match=r"^outCSne30.ug has no data variable .*: give --var$"):
        only_data_variable(mesh, "outCSne30.ug", "--var")
    with pytest.raises(ClimioError, match="no data variable.*give var="):
        only_data_variable({"time": (("time",), {})}, "the Dataset", "var=")
