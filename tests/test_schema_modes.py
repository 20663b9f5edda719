"""Schema validation and format limits, checked before any file exists."""

from __future__ import annotations

import numpy as np
import pytest

from climio.core.ncio import modes
from climio.core.ncio.modes import CDF2_VARIABLE_LIMIT, MODES, get_mode
from climio.core.ncio.schema import Schema, Variable, attribute_array, typed_attribute
from climio.core.ncio.store import check_schema_fits, classic_attribute
from climio.errors import ClimioError

BIG = Schema({"z": 1100, "y": 1024, "x": 1024}, [Variable("big", "f4", ("z", "y", "x"))])


@pytest.mark.parametrize("mode", ["serial", "cdf2"])
def test_variable_over_4gib_refused_in_cdf2_modes(mode: str) -> None:
    with pytest.raises(ClimioError, match=r"'big' needs 4.30 GiB.*4 GiB variable limit of CDF-2.*use --mode cdf5 or hdf5"):
        check_schema_fits(BIG, MODES[mode], "out.nc")


@pytest.mark.parametrize("mode", ["cdf5", "hdf5"])
def test_variable_over_4gib_accepted_in_cdf5_and_hdf5(mode: str) -> None:
    check_schema_fits(BIG, MODES[mode], "out.nc")


def test_limit_is_per_record_for_record_variables() -> None:
    n = CDF2_VARIABLE_LIMIT // 4  # one record just at the limit: fine, whatever the number of records
    ok = Schema({"t": None, "x": n}, [Variable("v", "f4", ("t", "x"))])
    check_schema_fits(ok, MODES["cdf2"], "f.nc")
    over = Schema({"t": None, "x": n + 1}, [Variable("v", "f4", ("t", "x"))])
    with pytest.raises(ClimioError, match="per record"):
        check_schema_fits(over, MODES["cdf2"], "f.nc")


def test_cdf2_refuses_types_it_cannot_store() -> None:
    s = Schema({"x": 3}, [Variable("n", "i8", ("x",))])
    with pytest.raises(ClimioError, match="int64.*use --mode cdf5 or hdf5"):
        check_schema_fits(s, MODES["cdf2"], "f.nc")
    check_schema_fits(s, MODES["cdf5"], "f.nc")


def test_unlimited_after_other_dimensions_only_in_netcdf4() -> None:
    """netCDF-4 files may put the unlimited dimension anywhere (a (lat, lon, time) file); classic-model formats
    want it first, so writing one there is refused before anything is created."""
    s = Schema({"t": None, "x": 2}, [Variable("a", "f4", ("x", "t"))])
    assert s.is_record(s.variable("a")) and s.record_bytes(s.variable("a")) == 8
    check_schema_fits(s, MODES["hdf5"], "f.nc")
    for name in ("cdf1", "cdf2", "cdf5", "serial", "hdf5-classic"):
        with pytest.raises(ClimioError, match="unlimited dimension 't' after others.*use --mode hdf5"):
            check_schema_fits(s, MODES[name], "f.nc")


@pytest.mark.parametrize("dims,variables,message", [
    ({"t": None, "u": None}, [], "at most one unlimited"),
    ({"x": 2}, [Variable("a", "f4", ("y",))], "undeclared dimension 'y'"),
    ({"x": 2}, [Variable("a", "f4", ("x",)), Variable("a", "f8", ("x",))], "declared twice"),
    ({"x": 2}, [Variable("s", "U10", ("x",))], r"stores numeric, char \(S1\) and string"),
    ({"x": 2}, [Variable("a", "f4", ("x",), chunks=(1, 2))], "one size per dimension"),
])
def test_schema_validation(dims: dict, variables: list, message: str) -> None:
    with pytest.raises(ClimioError, match=message):
        Schema(dims, variables)


def test_unknown_mode_lists_the_modes() -> None:
    with pytest.raises(ClimioError, match="unknown mode 'pnetcdf'.*serial, hdf5, cdf2, cdf5"):
        get_mode("pnetcdf")


def test_without_its_library_a_mode_is_written_by_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyPI's netCDF4: one process writes every format; several ranks write a format climio picked through rank 0
    (saying so), and a mode the user chose is refused naming the library."""
    monkeypatch.setattr(modes, "available_modes", lambda: ["serial"])
    for name in ("cdf5", "hdf5", "cdf1"):
        one = modes.writing_mode(name, 1)
        assert (one.name, one.nc_format, one.parallel) == (name, modes.MODES[name].nc_format, False)
        assert modes.one_writer_note("o.nc", one, 1) == ""
        picked = modes.writing_mode(name, 4, chosen=False)
        assert (picked.nc_format, picked.parallel) == (modes.MODES[name].nc_format, False)
        assert modes.one_writer_note("o.nc", picked, 4).startswith(
            f"climio: note: rank 0 writes o.nc ({picked.nc_format}) after gathering: this netCDF4-python has no ")
    with pytest.raises(ClimioError, match=r"mode 'cdf5' \(--mode\) needs PnetCDF for 2 ranks .* built without it: "
                                          r"run on one process, choose --mode serial"):
        modes.writing_mode("cdf5", 2)
    with pytest.raises(ClimioError, match="mode 'hdf5-classic' .* needs parallel HDF5 for 3 ranks"):
        modes.writing_mode("hdf5-classic", 3)
    assert modes.writing_mode("serial", 8) is modes.MODES["serial"]
    assert modes.one_writer_note("o.nc", modes.MODES["serial"], 8) == ""


def test_with_its_library_a_mode_is_collective() -> None:
    for name in ("cdf5", "hdf5", "cdf1"):
        assert modes.writing_mode(name, 4) is modes.MODES[name]
        assert modes.writing_mode(name, 1, chosen=False) is modes.MODES[name]


@pytest.mark.parametrize("values, kept", [
    (np.array([1], "i8"), np.array([1], "i4")),  # CMIP6's forcing_index = 1LL
    (np.array([3_000_000_000], "u4"), np.array([3e9], "f8")),
    (np.array([-2**31, 2**31 - 1], "i8"), np.array([-2**31, 2**31 - 1], "i4")),
    (np.array([2.5], "f4"), np.array([2.5], "f4")),
])
def test_classic_formats_take_wide_integer_attributes_exactly(values: np.ndarray, kept: np.ndarray) -> None:
    got = classic_attribute(values, modes.MODES["serial"], "a", "o.nc")
    assert got.dtype == kept.dtype and np.array_equal(got, kept)
    assert classic_attribute(values, modes.MODES["cdf5"], "a", "o.nc") is values


def test_an_attribute_a_classic_format_cannot_hold_exactly_is_refused() -> None:
    with pytest.raises(ClimioError, match=r"o.nc: attribute 'seed' holds int64 values \[1152921504606846977\] that "
                                          r"the NETCDF3_64BIT_OFFSET format \(mode 'serial'\) cannot store exactly"):
        classic_attribute(np.array([2**60 + 1], "i8"), modes.MODES["serial"], "seed", "o.nc")
    schema = Schema({"x": 2}, [Variable("v", "f4", ("x",), {"seed": np.int64(2**60 + 1)})])
    with pytest.raises(ClimioError, match="variable 'v': attribute 'seed'"):
        check_schema_fits(schema, modes.MODES["cdf1"], "o.nc")
    check_schema_fits(schema, modes.MODES["hdf5"], "o.nc")


def test_all_modes_are_built_in_here() -> None:
    assert modes.available_modes() == ["serial", "hdf5", "hdf5-classic", "cdf2", "cdf5", "cdf1"]


def test_every_input_format_has_a_mode_that_keeps_it() -> None:
    for fmt, name in modes.FORMAT_WRITE_MODE.items():
        assert modes.MODES[name].nc_format == fmt


@pytest.mark.parametrize("name, dtype, stored", [
    ("cdf1", "i8", False), ("cdf1", "u1", True), ("hdf5-classic", "u4", False), ("hdf5-classic", "S1", True),
    ("cdf5", "u8", True), ("cdf5", "O", False), ("hdf5", "O", True), ("serial", "O", False)])
def test_which_types_each_format_stores(name: str, dtype: str, stored: bool) -> None:
    assert modes.MODES[name].stores(np.dtype(dtype)) is stored
    schema = Schema({"x": 2}, [Variable("v", dtype, ("x",))])
    if stored:
        check_schema_fits(schema, modes.MODES[name], "out.nc")
    else:
        with pytest.raises(ClimioError, match=f"out.nc: variable 'v' has type .*mode '{name}'"):
            check_schema_fits(schema, modes.MODES[name], "out.nc")


def test_cf_attributes_take_the_variable_type() -> None:
    var = Variable("pr", "f4", ("x",))
    assert typed_attribute(var, "_FillValue", 1e20).dtype == np.float32
    assert typed_attribute(var, "valid_range", [0, 1]).dtype == np.float32
    assert typed_attribute(var, "scale_factor", 2.0) == 2.0
    # a value with a type of its own keeps it (CMIP6's double missing_value on a float variable), but _FillValue
    # must have the variable's type
    assert typed_attribute(var, "missing_value", np.float64(1e20)).dtype == np.float64
    assert typed_attribute(var, "_FillValue", np.float64(1e20)).dtype == np.float32
    assert attribute_array(3).dtype == np.int32
    assert attribute_array(True).dtype == np.int8


def test_required_size_of_classic_files(tmp_path) -> None:
    import netCDF4

    from climio.core.ncio.classic import required_size

    for fmt in ("NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA"):
        path = tmp_path / f"{fmt}.nc"
        with netCDF4.Dataset(path, "w", format=fmt) as ds:
            ds.createDimension("t", None)
            ds.createDimension("x", 3)
            ds.setncattr("title", "sizes")
            ds.createVariable("fixed", "f8", ("x",))[:] = [1, 2, 3]
            ds.createVariable("r1", "i2", ("t", "x"))[:] = np.ones((5, 3))
            ds.createVariable("r2", "f4", ("t",))[:] = np.arange(5)
        assert required_size(str(path)) == path.stat().st_size
        data = path.read_bytes()
        (tmp_path / "cut.nc").write_bytes(data[:-1])
        assert required_size(str(tmp_path / "cut.nc")) > len(data) - 1
        (tmp_path / "cut.nc").write_bytes(data[:30])  # inside the header
        assert required_size(str(tmp_path / "cut.nc")) > 30
    (tmp_path / "other").write_bytes(b"\x89HDF\r\n")
    assert required_size(str(tmp_path / "other")) is None


def test_classic_sizes_come_from_the_dimensions_not_vsize(tmp_path) -> None:
    """One changed byte in a header's vsize (informational: netCDF-C ignores it) must not move any data."""
    import netCDF4

    from climio.core import ncio
    from climio.core.ncio.classic import ClassicLayout

    def variable_offsets(path: str) -> tuple[dict[str, int], int]:
        layout = ClassicLayout.read(path)
        assert layout is not None
        return layout.begins, layout.record_size

    path = tmp_path / "two-records.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createDimension("bnds", 2)
        ds.createDimension("x", 3)
        ds.createVariable("time_bnds", "f8", ("time", "bnds"))[:] = np.arange(10.0).reshape(5, 2)
        ds.createVariable("tas", "f4", ("time", "x"))[:] = np.arange(15.0).reshape(5, 3) + 0.5
    good = variable_offsets(str(path))
    data = bytearray(path.read_bytes())
    at = data.index(b"time_bnds") + 12 + 4 + 8 + 8 + 4  # name (padded), 2 dimids, no attributes, type: then vsize
    assert data[at - 4:at + 4] == b"\x00\x00\x00\x06\x00\x00\x00\x10"  # NC_DOUBLE, vsize 16
    data[at + 3] = 1
    path.write_bytes(bytes(data))
    assert variable_offsets(str(path)) == good == ({"time_bnds": good[0]["time_bnds"], "tas": good[0]["tas"]}, 16 + 12)
    with ncio.open(str(path)) as ds:
        assert np.array_equal(ds.read("tas", as_stored=True), np.arange(15.0).reshape(5, 3) + 0.5)


@pytest.mark.parametrize("damage, message", [
    (lambda d: d.replace(b"tas\x00", b"t\xffs\x00", 1), "has an invalid netCDF classic header .*not valid UTF-8"),
    (lambda d: d[:40], "is truncated or corrupt: its header runs past the end"),
    (lambda d: d.replace(b"\x00\x00\x00\x05", b"\x00\x00\x00\x2a", 1), "has an invalid netCDF classic header .*unknown type 42"),
    (lambda d: d.replace(b"\x00\x00\x00\x03tas", b"\x7f\xff\xff\xf0tas", 1), "is truncated or corrupt: its header runs past"),
])
def test_corrupt_classic_headers_are_refused_before_netcdf_reads_them(tmp_path, damage, message) -> None:
    import netCDF4

    from climio.core import ncio

    path = tmp_path / "bad.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("x", 3)
        ds.createVariable("tas", "f4", ("x",))[:] = [1, 2, 3]
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ClimioError, match=f"input file '{path}' " + message):
        ncio.open(str(path))


def test_stripe_strategy_on_one_process_without_pnetcdf(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """PyPI's netCDF4 on one process: a CDF-5 file written by netCDF-C alone still gives the stripe strategy its
    variables' offsets (the layout comes from the file's header once it is defined)."""
    from mpi4py import MPI

    from climio.model.decomposition import blocks
    from climio.model.input import ModelInput
    from climio.model.output import Field, ModelOutput

    monkeypatch.setattr(modes, "available_modes", lambda: ["serial"])
    grid = blocks((6, 8), 1, 1, 0)
    values = np.arange(48, dtype="f8").reshape(6, 8)
    path = str(tmp_path / "stripe.nc")
    with ModelOutput(path, grid, [Field("T"), Field("q", levels=2)], MPI.COMM_SELF, mode="cdf5",
                     strategy="stripe", stripe_count=1, stripe_size=64) as out:
        for step in range(2):
            out.write(step, {"T": values + step, "q": np.stack([values, -values]) * (step + 1)}, float(step))
    with ModelInput(path, grid, MPI.COMM_SELF, strategy="direct") as reader:
        assert np.array_equal(reader.read("T", 1), values + 1)
        assert np.array_equal(reader.read("q", 1), np.stack([values, -values]) * 2)
