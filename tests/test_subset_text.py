"""climio subset keeps what ncks keeps: text (char and NC_STRING) variables, associated variables, attribute
types and the input's file format; what it cannot copy is named, never dropped in silence."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import netCDF4
import numpy as np
import pytest

import sys

from conftest import leftovers

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch  # noqa: E402

RANKS = (1, 2, 3)
TEXT_ARGS = [(), ("-v", "tas"), ("-v", "tas", "-d", "station,1,3"), ("-d", "time,1,1")]
FORMATS = ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA", "NETCDF4_CLASSIC", "NETCDF4"]


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


def write_format(source: Path, fmt: str) -> None:
    with netCDF4.Dataset(source, "w", format=fmt) as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 5)
        ds.createVariable("v", "i2", ("time", "x"))[:] = np.arange(10).reshape(2, 5)
        ds.createVariable("code", "S1", ("x",))[:] = np.array(list("abcde"), dtype="S1")


def write_uncopyable(source: Path) -> None:
    with netCDF4.Dataset(source, "w", format="NETCDF4") as ds:
        ds.createDimension("x", 3)
        pair = ds.createCompoundType(np.dtype([("a", "f4"), ("b", "i4")]), "pair_t")
        ds.createVariable("pairs", pair, ("x",))
        ds.createVariable("v", "f8", ("x",))[:] = [1, 2, 3]
        ds.createGroup("extra").createVariable("w", "f8", ())


@pytest.fixture(scope="module")
def runs(stations: Path, tmp_path_factory: pytest.TempPathFactory) -> Batch:
    """Every climio run of this file, one table per rank count (helpers/climio_batch.py: one launch each, every
    case captured as a process of its own, with a timeout of 60 s); each case writes into a directory of its own
    (``runs.folder(name)``), where the inputs made here are too."""
    b = Batch(tmp_path_factory.mktemp("runs"), timeout=60)
    for args in TEXT_ARGS:
        for nranks in RANKS:
            name = f"text-{'_'.join(args)}-n{nranks}"
            b.add(name, ["subset", *args, stations, b.folder(name) / "out.nc"], nranks)
    b.add("classic", ["subset", "--mode", "cdf5", stations, b.folder("classic") / "out.nc"], 2)
    for fmt in FORMATS:
        source = b.folder(fmt) / "in.nc"
        write_format(source, fmt)
        b.add(fmt, ["subset", "-d", "x,1,3", source, b.folder(fmt) / "out.nc"], 2)
    source = b.folder("uncopyable") / "in.nc"
    write_uncopyable(source)
    b.add("uncopyable", ["subset", source, b.folder("uncopyable") / "out.nc"], 2)
    return b


_NCKS: dict[tuple[str, ...], str] = {}


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("args", TEXT_ARGS, ids=["whole", "v", "v-d", "d-time"])
def test_text_and_associated_variables_as_ncks(tmp_path: Path, stations: Path, runs: Batch, args: tuple[str, ...],
                                               nranks: int) -> None:
    name = f"text-{'_'.join(args)}-n{nranks}"
    out = runs.folder(name) / "out.nc"
    result = runs.result(name)  # subset ARGS stations out at nranks
    assert result.returncode == 0, result.stderr
    if args not in _NCKS:  # ncks's output, made once for the three rank counts
        _NCKS[args] = ncdump(ncks(tmp_path, stations, *args))
    assert ncdump(out) == _NCKS[args]
    with netCDF4.Dataset(out) as ds:
        assert ds.data_model == "NETCDF4"
        if "tas" in args:  # -v brings everything tas names: coordinates (text), grid_mapping (char scalar)
            assert set(ds.variables) == {"time", "tas", "label", "name", "crs"}
        assert ds["tas"].missing_value.dtype == np.float64


def test_strings_into_a_classic_format_are_refused(runs: Batch, stations: Path) -> None:
    tmp_path = runs.folder("classic")
    out = tmp_path / "out.nc"
    result = runs.result("classic")  # subset --mode cdf5 stations out at 2 ranks
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("climio")] == [
        f"climio: error: {out}: variable 'name' has type string (NC_STRING), which the NETCDF3_64BIT_DATA format "
        f"(mode 'cdf5') cannot store: use --mode hdf5"]
    assert not out.exists() and not leftovers(str(tmp_path))


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_keeps_the_input_format(tmp_path: Path, runs: Batch, fmt: str) -> None:
    source = runs.folder(fmt) / "in.nc"  # write_format(source, fmt)
    out = runs.folder(fmt) / "out.nc"
    result = runs.result(fmt)  # subset -d x,1,3 source out at 2 ranks
    assert result.returncode == 0, result.stderr
    assert ncdump(out) == ncdump(ncks(tmp_path, source, "-d", "x,1,3"))
    with netCDF4.Dataset(out) as ds:
        assert ds.data_model == fmt


def test_what_cannot_be_copied_is_named(runs: Batch) -> None:
    """A compound variable and a group are outside what climio copies: a warning names each, the rest is copied."""
    out = runs.folder("uncopyable") / "out.nc"  # the input: write_uncopyable(in.nc)
    result = runs.result("uncopyable")  # subset in.nc out at 2 ranks
    assert result.returncode == 0, result.stderr
    assert "variable 'pairs' (CompoundType)" in result.stderr and "group 'extra'" in result.stderr
    with netCDF4.Dataset(out) as ds:
        assert list(ds.variables) == ["v"] and np.array_equal(ds["v"][:], [1, 2, 3])
