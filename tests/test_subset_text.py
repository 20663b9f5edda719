"""climio subset keeps what ncks keeps: text (char and NC_STRING) variables, associated variables, attribute
types and the input's file format; what it cannot copy is named, never dropped in silence."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from conftest import climio, leftovers

RANKS = (1, 2, 3)


def ncdump(path: Path) -> str:
    """ncdump's text without the lines that differ by design (file name, history, NCO's own attribute)."""
    text = subprocess.run(["ncdump", str(path)], check=True, capture_output=True, text=True).stdout
    lines = text.splitlines()[1:]
    return "\n".join(line for line in lines if not re.search(r":(history|NCO) = ", line))


def ncks(tmp: Path, source: Path, *args: str) -> Path:
    out = tmp / f"ncks-{source.name}"
    subprocess.run(["ncks", "-O", "--no-abc", *args, str(source), str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def stations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A netCDF-4 station file: NC_STRING names, char labels and a char grid-mapping scalar, all referenced
    from the data variable, whose missing_value is double while the data are float (as in CMIP6 files)."""
    path = tmp_path_factory.mktemp("text") / "stations.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.Conventions = "CF-1.8"  # NCO applies CF's associated-variable rules only to files that say so
        ds.createDimension("time", None)
        ds.createDimension("station", 4)
        ds.createDimension("strlen", 6)
        time = ds.createVariable("time", "f8", ("time",))
        time.units = "days since 2000-01-01"
        time[:] = [0.5, 1.5, 2.5]
        names = ds.createVariable("name", str, ("station",))
        for k, text in enumerate(["Oslo", "Bergen fjord", "", "Tromsø"]):
            names[k] = text
        label = ds.createVariable("label", "S1", ("station", "strlen"))
        label[:] = netCDF4.stringtochar(np.array(["OSL", "BGO", "XXXXXX", "TOS"], dtype="S6"))
        crs = ds.createVariable("crs", "S1", ())
        crs.grid_mapping_name = "latitude_longitude"
        tas = ds.createVariable("tas", "f4", ("time", "station"), fill_value=np.float32(1e20))
        tas.setncattr("missing_value", np.float64(1e20))
        tas.coordinates = "label name"
        tas.grid_mapping = "crs"
        tas.valid_range = np.array([150, 350], dtype="f8")
        tas[:] = np.arange(12, dtype="f4").reshape(3, 4) + 270
        other = ds.createVariable("other", "i2", ("station",))
        other[:] = [1, 2, 3, 4]
    return path


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("args", [(), ("-v", "tas"), ("-v", "tas", "-d", "station,1,3"), ("-d", "time,1,1")],
                         ids=["whole", "v", "v-d", "d-time"])
def test_text_and_associated_variables_as_ncks(tmp_path: Path, stations: Path, args: tuple[str, ...],
                                               nranks: int) -> None:
    out = tmp_path / "out.nc"
    result = climio("subset", *args, str(stations), str(out), nranks=nranks, timeout=60)
    assert result.returncode == 0, result.stderr
    assert ncdump(out) == ncdump(ncks(tmp_path, stations, *args))
    with netCDF4.Dataset(out) as ds:
        assert ds.data_model == "NETCDF4"
        if "tas" in args:  # -v brings everything tas names: coordinates (text), grid_mapping (char scalar)
            assert set(ds.variables) == {"time", "tas", "label", "name", "crs"}
        assert ds["tas"].missing_value.dtype == np.float64


def test_strings_into_a_classic_format_are_refused(tmp_path: Path, stations: Path) -> None:
    out = tmp_path / "out.nc"
    result = climio("subset", "--mode", "cdf5", str(stations), str(out), nranks=2, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("climio")] == [
        f"climio: error: {out}: variable 'name' has type string (NC_STRING), which the NETCDF3_64BIT_DATA format "
        f"(mode 'cdf5') cannot store: use --mode hdf5"]
    assert not out.exists() and not leftovers(str(tmp_path))


@pytest.mark.parametrize("fmt", ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA", "NETCDF4_CLASSIC",
                                 "NETCDF4"])
def test_output_keeps_the_input_format(tmp_path: Path, fmt: str) -> None:
    source = tmp_path / "in.nc"
    with netCDF4.Dataset(source, "w", format=fmt) as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 5)
        ds.createVariable("v", "i2", ("time", "x"))[:] = np.arange(10).reshape(2, 5)
        ds.createVariable("code", "S1", ("x",))[:] = np.array(list("abcde"), dtype="S1")
    out = tmp_path / "out.nc"
    result = climio("subset", "-d", "x,1,3", str(source), str(out), nranks=2, timeout=60)
    assert result.returncode == 0, result.stderr
    assert ncdump(out) == ncdump(ncks(tmp_path, source, "-d", "x,1,3"))
    with netCDF4.Dataset(out) as ds:
        assert ds.data_model == fmt


def test_what_cannot_be_copied_is_named(tmp_path: Path) -> None:
    """A compound variable and a group are outside what climio copies: a warning names each, the rest is copied."""
    source = tmp_path / "in.nc"
    with netCDF4.Dataset(source, "w", format="NETCDF4") as ds:
        ds.createDimension("x", 3)
        pair = ds.createCompoundType(np.dtype([("a", "f4"), ("b", "i4")]), "pair_t")
        ds.createVariable("pairs", pair, ("x",))
        ds.createVariable("v", "f8", ("x",))[:] = [1, 2, 3]
        ds.createGroup("extra").createVariable("w", "f8", ())
    out = tmp_path / "out.nc"
    result = climio("subset", str(source), str(out), nranks=2, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "variable 'pairs' (CompoundType)" in result.stderr and "group 'extra'" in result.stderr
    with netCDF4.Dataset(out) as ds:
        assert list(ds.variables) == ["v"] and np.array_equal(ds["v"][:], [1, 2, 3])
