"""PIO2's C API on climio, from programs written against pio.h alone and built as a PIO model is (pkg-config
pio): tests/pio/pio_calls.c makes every call a PIO model makes, in every iotype and create mode climio has,
at 1, 2 and 4 tasks (a fourth task owns nothing; one grid point belongs to no task); its files are checked here
against values worked out independently, and against each other across iotypes and task counts.
tests/pio/pio_refusals.c makes each call climio refuses, checks PIO's code and the one line it says, and that
the file goes on; under PIO's default handler the first refusal ends the job with its line and no file. Both run
attached and through climio serve ranks (PIO's I/O tasks then), with the same files, codes and lines;
tests/pio/pio_async.c starts the servers itself with PIOc_init_async; tests/pio/pio_fill.c leaves values unwritten
in files with and without fill values."""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from climio.core.ncio import libnetcdf
from conftest import DATA, climio_pkg_config, compile_programs, own_lines, run

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
import ncdiff  # noqa: E402

HERE = Path(__file__).parent / "pio"
NY, NX, NSTEPS = 6, 8, 3
FORMATS = {"pnetcdf": "NETCDF3_CLASSIC", "pnetcdf-64bit-offset": "NETCDF3_64BIT_OFFSET",
           "pnetcdf-64bit-data": "NETCDF3_64BIT_DATA", "netcdf": "NETCDF3_CLASSIC",
           "netcdf-64bit-offset": "NETCDF3_64BIT_OFFSET", "netcdf4c": "NETCDF4", "netcdf4p": "NETCDF4"}


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_programs(tmp_path_factory.mktemp("pio-bin"),
                            [("pio_calls", "mpicc", HERE / "pio_calls.c"),
                             ("pio_refusals", "mpicc", HERE / "pio_refusals.c"),
                             ("pio_inquire", "mpicc", HERE / "pio_inquire.c"),
                             ("pio_fill", "mpicc", HERE / "pio_fill.c"),
                             ("pio_async", "mpicc", HERE / "pio_async.c")], package="pio")


def test_pkg_config_gives_pio_header_and_library() -> None:
    flags = climio_pkg_config("pio")
    includes = [Path(f[2:]) for f in flags if f.startswith("-I")]
    assert any((d / "pio.h").is_file() for d in includes) and any((d / "netcdf.h").is_file() for d in includes)
    assert "-lpioc" in flags and "-lclimio" in flags and "-lnetcdf" in flags


def expected() -> dict[str, np.ndarray]:
    """The values pio_calls.c writes, worked out here: point 0 is no task's (its fill value)."""
    step, point = np.meshgrid(np.arange(NSTEPS), np.arange(NY * NX), indexing="ij")
    t = (step * 1000 + (point // NX) * 10 + point % NX + 0.25).astype(np.float32)
    i = (-(step * 100 + point)).astype(np.int32)
    t[:, 0], i[:, 0] = -999.0, -1
    return {"T": t.reshape(NSTEPS, NY, NX), "I": i.reshape(NSTEPS, NY, NX),
            "area": (1e6 + np.arange(NY * NX)).reshape(NY, NX), "lat": -75.0 + 30.0 * np.arange(NY),
            "R": 7 * np.arange(NSTEPS * NY * NX).reshape(NSTEPS, NY, NX)}


ATTACHED: dict[int, Path] = {}  # the attached run's files by task count, for the runs through servers


@pytest.mark.parametrize("nranks, servers", [(1, 0), (2, 0), (4, 0), (1, 1), (2, 1), (4, 3)])
def test_every_call_in_every_iotype(programs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory,
                                    nranks: int, servers: int) -> None:
    """Attached, and through climio serve ranks (PIO's I/O tasks): the values worked out here, and through servers
    files equal to the attached run's on as many tasks, every variable, type and attribute."""
    if servers and nranks not in ATTACHED:  # run alone: its attached twin first
        test_every_call_in_every_iotype(programs, tmp_path_factory, nranks, 0)
    tmp_path = tmp_path_factory.mktemp(f"pio-calls-{nranks}-{servers}")
    result = run([str(programs["pio_calls"]), str(tmp_path), *([str(servers)] if servers else [])], nranks=nranks,
                 timeout=180, servers=servers)
    assert result.returncode == 0, result.stderr
    if servers:
        for name in ["decomp", *FORMATS]:
            assert ncdiff.diff(tmp_path / f"{name}.nc", ATTACHED[nranks] / f"{name}.nc") == [], name
    else:
        ATTACHED[nranks] = tmp_path
    iotasks = min(servers, (nranks + 1) // 2) if servers else (nranks + 1) // 2
    assert result.stdout.strip() == f"pio_calls: 7 files written and read back on {nranks} tasks ({iotasks} I/O tasks)"
    assert own_lines(result.stderr) == []
    assert sorted(os.listdir(tmp_path)) == sorted(["decomp.nc", *(f"{name}.nc" for name in FORMATS)])
    want = expected()
    for name, data_model in FORMATS.items():
        with netCDF4.Dataset(tmp_path / f"{name}.nc") as ds:
            ds.set_auto_mask(False)
            assert ds.data_model == data_model, name
            assert {d: len(n) for d, n in ds.dimensions.items()} == {"time": NSTEPS, "y": NY, "x": NX, "nchar": 4,
                                                                      "nchar2": 2}
            assert ds.dimensions["time"].isunlimited()
            assert [(v.name, v.dtype, v.dimensions) for v in ds.variables.values()] == [
                ("T", np.float32, ("time", "y", "x")), ("I", np.int32, ("time", "y", "x")),
                ("lat", np.float64, ("y",)), ("label", np.dtype("S1"), ("nchar",)), ("area", np.float64, ("y", "x")),
                ("R", np.int32, ("time", "y", "x")), ("count", np.int32, ("nchar2",))]
            for var in ("T", "I", "area", "lat", "R"):
                assert np.array_equal(ds[var][:], want[var]), (name, var)
            assert list(ds["count"][:]) == [7, 8]
            assert ds["label"][:].tobytes() == b"abcd" and ds["label"].getncattr("_FillValue") == b"-"
            assert ds.ncattrs() == ["scale", "version"]  # the program's own, nothing added
            assert list(ds.scale) == [0.5, 2.0] and ds.getncattr("version").dtype == np.int16
            assert ds["T"].units == "K" and ds["T"]._FillValue == np.float32(-999.0)
            assert list(ds["I"].valid_range) == [-100000, 0] and ds["I"]._FillValue == -1
            assert ds["lat"].units == "degrees_north"
            if data_model == "NETCDF4":
                assert ds["T"].filters()["zlib"] and ds["T"].filters()["complevel"] == 4
                assert ds["T"].filters()["shuffle"] and ds["I"].chunking() == [1, NY, NX]
    with netCDF4.Dataset(tmp_path / "decomp.nc") as ds:  # PIO's decomposition file: each task's map as given
        assert list(ds["global_size"][:]) == [NY, NX] and len(ds.dimensions["task"]) == nranks
        assert ds.title == "test decomposition" and ds.history == "made by pio_calls"
        owners = min(nranks, 3)
        mine = [[p for p in range(1, NY * NX) if p % owners == r] for r in range(nranks)]
        mine[0] = [-1, *mine[0]]  # task 0's first element is no point
        assert list(ds["maplen"][:]) == [len(m) for m in mine]
        for r, m in enumerate(mine):
            assert list(ds["map"][r, :len(m)]) == m


@pytest.mark.parametrize("nranks", [1, 3])
def test_fill_mode_fills_what_the_model_never_wrote_as_each_library_does(programs: dict[str, Path],
                                                                        tmp_path: Path, nranks: int) -> None:
    """PIOc_set_fill(PIO_FILL): netCDF-C and netCDF-4 fill every value never written (fixed-size variables, and
    records added, a skipped one included); PnetCDF fills the fixed-size ones only. PIOc_createfile alone makes a
    file without fill values (unwritten values read 0), PIOc_create with a netCDF-4 mode one with them (PIO2's
    defaults). PIOc_def_var_fill's value and its PIO_NOFILL hold in every case. A third task owns nothing."""
    result = run([str(programs["pio_fill"]), str(tmp_path)], nranks=nranks, timeout=180)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"pio_fill: 9 files on {nranks} tasks" and own_lines(result.stderr) == []
    owned = np.arange(12).reshape(3, 4) * 10
    owned[0, 0] = -2147483647  # no task's point: the variable's fill value, in every file
    assert sorted(os.listdir(tmp_path)) == sorted(["create-netcdf4.nc", *(f"{kind}-{library}.nc" for kind in
                                                   ("fill", "nofill") for library in FILL_LIBRARIES)])
    for name in os.listdir(tmp_path):
        fill, library = not name.startswith("nofill"), name.split("-")[-1][:-3]
        records_filled = fill and library != "pnetcdf"
        with netCDF4.Dataset(tmp_path / name) as ds:
            ds.set_auto_mask(False)
            assert len(ds.dimensions["time"]) == 3, name
            assert np.array_equal(ds["W"][::2], [owned, owned]), name
            assert np.array_equal(ds["G"][:], np.full((3, 3, 4), 0.0 if library == "pnetcdf" else -5.0)), name
            assert ds["G"]._FillValue == np.float32(-5.0) and ds["C"][:].tobytes() == bytes(9), name
            if library.startswith("netcdf4"):  # netCDF-4 keeps each variable's fill setting
                assert no_fill(ds["U"]) != fill and no_fill(ds["N"]), name
            if not fill and library.startswith("netcdf4"):
                continue  # HDF5 without fill values: what was never written is undefined
            assert np.array_equal(ds["W"][1], np.full((3, 4), -2147483647 if records_filled else 0)), name
            assert np.array_equal(ds["U"][:], np.full((3, 3, 4), -32767 if records_filled else 0)), name
            assert np.array_equal(ds["F"][:], np.full((3, 4), 9.969209968386869e36 if fill else 0.0)), name
            if not library.startswith("netcdf4"):
                assert np.array_equal(ds["N"][:], np.zeros((3, 3, 4))), name


FILL_LIBRARIES = ("pnetcdf", "netcdf", "netcdf4c", "netcdf4p")


def no_fill(variable: netCDF4.Variable) -> bool:
    """netCDF-C's nc_inq_var_fill: whether the variable is stored without fill values."""
    flag = ctypes.c_int(-1)
    assert libnetcdf.lib().nc_inq_var_fill(variable._grpid, variable._varid, ctypes.byref(flag), None) == 0
    return bool(flag.value)


REFUSALS = {"InitDecomp iostart": (-36, "iostart/iocount are not taken"),
            "createfile GDAL": (-500, "iotype 5"),
            "def_dim same name": (-42, "dimension 'x' is already defined"),
            "def_var bad type": (-45, "type 99 is none of PIO_BYTE (1)"),
            "def_var_chunking classic": (-111, "chunking needs a netCDF-4 file"),
            "def_var_deflate classic": (-111, "compression needs a netCDF-4 file"),
            "redef": (-36, "PIOc_redef: climio defines a file once"),
            "def_dim after enddef": (-38, "PIOc_def_dim after PIOc_enddef"),
            "put_vara out of range": (-60, "values from 1 to 70000 do not fit in int16"),
            "put_vars stride": (-58, "stride (2,)"),
            "inq_varid missing": (-49, "no variable 'nope'"),
            "inq_var bad id": (-49, "no variable id 7"),
            "get_att missing": (-43, "variable 'v' has no attribute 'units'"),
            "closefile bad ncid": (-33, "no open file with id"),
            "write_darray bad varid": (-49, "no variable id 7"),
            "openfile PIO_WRITE": (-37, "opened with PIO_WRITE"),
            "closefile after one task refused a write":
                (-36, "task 1 holds 0 darray write(s) after refusing one (")}
ATTACHED_ONLY = ("write_darray bad varid", "closefile after one task refused a write")  # held writes are local


@pytest.mark.parametrize("servers", [0, 1])
def test_refused_calls_return_pio_codes_with_one_line_each(programs: dict[str, Path], tmp_path: Path,
                                                           servers: int) -> None:
    result = run([str(programs["pio_refusals"]), str(tmp_path), *([str(servers)] if servers else [])], nranks=2,
                 timeout=180, servers=servers)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "pio_refusals: done"
    refusals = {name: said for name, said in REFUSALS.items() if not servers or name not in ATTACHED_ONLY}
    assert {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in lines[:-1]} == \
        {name: code for name, (code, _) in refusals.items()}
    said = own_lines(result.stderr)
    assert len(said) == len(refusals), said  # one line each, from the first task only
    for line, (name, (_, words)) in zip(said, refusals.items()):
        assert line.startswith("climio: ") and words in line, (name, line)
    # the refusals left the file usable; a file whose tasks held different writes was not published
    assert sorted(os.listdir(tmp_path)) == ["refusals.nc"]
    if not servers:
        assert "diverged.nc: array of 2 elements on task 1" in said[-1], said[-1]
    with netCDF4.Dataset(tmp_path / "refusals.nc") as ds:
        assert np.array_equal(ds["v"][0], 1.5 * np.arange(1, 9))
        assert list(ds["i"][:2]) == [1, 2] and list(ds.variables) == ["v", "i"]


@pytest.mark.parametrize("servers", [0, 1])
def test_pio_default_handler_ends_the_job_with_one_line(programs: dict[str, Path], tmp_path: Path,
                                                        servers: int) -> None:
    result = run([str(programs["pio_refusals"]), str(tmp_path), "abort", *([str(servers)] if servers else [])],
                 nranks=2, timeout=180, servers=servers)
    assert result.returncode == 2, result.stderr
    assert "not reached" not in result.stdout
    said = own_lines(result.stderr)
    assert len(said) == 1 and "refusals.nc: variable 'v': type 99 is none of PIO_BYTE" in said[0], said
    assert os.listdir(tmp_path) == []  # the file being defined was never created, nothing half-written is left


def test_cmake_find_package_builds_a_pio_model(tmp_path: Path) -> None:
    """A model's CMake build finds climio's PIO as PIO2's (find_package(PIO), target PIO::pioc) and runs."""
    source = (Path(__file__).parent.parent / "docs" / "pio.md").read_text().split("```c\n", 1)[1].split("```", 1)[0]
    (tmp_path / "pio_example.c").write_text(source)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(model C)\nfind_package(MPI REQUIRED COMPONENTS C)\n"
        "find_package(PIO 2.5 REQUIRED COMPONENTS C)\nadd_executable(pio_example pio_example.c)\n"
        "target_link_libraries(pio_example PRIVATE PIO::pioc MPI::MPI_C)\n")
    build = tmp_path / "build"
    for argv in (["cmake", "-S", str(tmp_path), "-B", str(build), f"-DCMAKE_PREFIX_PATH={sys.prefix}",
                  "-DCMAKE_C_COMPILER=mpicc"], ["cmake", "--build", str(build)]):
        done = run(argv, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    result = run([str(build / "pio_example"), str(tmp_path / "t.nc")], nranks=2, timeout=120)
    assert result.returncode == 0 and "t.nc written and read back, 0 values differ" in result.stdout, result.stderr
    with netCDF4.Dataset(tmp_path / "t.nc") as ds:
        assert np.array_equal(ds["T"][:], 100.0 * np.arange(2)[:, None, None] + np.arange(24).reshape(1, 4, 6))


def test_a_communicator_holding_the_servers_is_refused_at_once(programs: dict[str, Path], tmp_path: Path) -> None:
    """PIOc_Init_Intracomm(MPI_COMM_WORLD) in a launch with climio serve ranks: one line naming them, and the
    servers end with the model rather than wait for a hello."""
    result = run([str(programs["pio_refusals"]), str(tmp_path), "abort"], nranks=2, timeout=60, servers=1)
    assert result.returncode == 2, result.stderr
    said = own_lines(result.stderr)
    assert len(said) == 1 and "holds this launch's climio serve ranks (world ranks 2-2)" in said[0], said
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("nranks, nio, where", [(2, 1, "first"), (5, 2, "last")])
def test_async_io_tasks_serve_and_a_failed_write_reaches_every_task(programs: dict[str, Path], tmp_path: Path,
                                                                    nranks: int, nio: int, where: str) -> None:
    """PIOc_init_async: the I/O tasks are climio's servers (inside the call); the computational tasks write and
    read back two records, then a write the servers refuse (70000 in a short) comes back as PIO's code at the
    file's next call on every task, with one line, and leaves no file."""
    result = run([str(programs["pio_async"]), str(tmp_path), str(nio), where], nranks=nranks, timeout=180,
                 env_extra={"CLIMIO_SERVE_TIMEOUT": "60"})
    assert result.returncode == 0, result.stderr
    ncomp = nranks - nio
    assert result.stdout.strip() == (f"pio_async: 2 records written and read back by {ncomp} computational tasks "
                                     f"through {nio} I/O tasks; the failed write: -60 on every task")
    said = own_lines(result.stderr)
    assert len(said) == 1 and "failed.nc: variable 's': values from 70000 to 70000 do not fit in int16" in said[0], \
        said
    assert sorted(os.listdir(tmp_path)) == ["async.nc"]  # the failed file abandoned, no temporary left
    points = 5 * ncomp
    want = 100.0 * np.arange(2)[:, None] + np.arange(points)[None, :]
    want[:, 0] = -1.0  # point 0 is no task's: the fill value
    with netCDF4.Dataset(tmp_path / "async.nc") as ds:
        ds.set_auto_mask(False)
        assert np.array_equal(ds["v"][:], want) and ds["v"].units == "K"


def test_a_model_that_ends_without_finalizing_ends_its_servers(programs: dict[str, Path], tmp_path: Path) -> None:
    """The computational tasks call MPI_Finalize with a file open and their system never freed: the servers end
    with them (well before their timeout) and publish nothing of the unclosed file."""
    result = run([str(programs["pio_async"]), str(tmp_path), "1", "last", "forget"], nranks=3, timeout=60,
                 env_extra={"CLIMIO_SERVE_TIMEOUT": "300"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "pio_async: ended with the file open"
    assert own_lines(result.stderr) == [] and os.listdir(tmp_path) == []


REAL = [("real/tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc", "tas"),  # CDF-1, CMIP5
        ("real/pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20510101-20551231.nc", "pr")]  # CORDEX


@pytest.mark.parametrize("nranks, servers", [(1, 0), (2, 0), (3, 0), (3, 2)])
def test_real_files_through_pio_calls(programs: dict[str, Path], nranks: int, servers: int) -> None:
    """Files that climio did not write (a CMIP5 classic file, a CORDEX netCDF-4 file): their header through PIO's
    inquiries and the first 12 records of a field through a decomposition, as netCDF4-python reads them; attached
    and through climio serve ranks."""
    xtypes = {np.dtype(t): x for t, x in (("i1", 1), ("S1", 2), ("i2", 3), ("i4", 4), ("f4", 5), ("f8", 6))}
    for name, var in REAL:
        result = run([str(programs["pio_inquire"]), str(DATA / name), var, *([str(servers)] if servers else [])],
                     nranks=nranks, timeout=180, servers=servers)
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        with netCDF4.Dataset(DATA / name) as ds:
            ds.set_auto_maskandscale(False)
            dims = list(ds.dimensions.values())
            assert lines[0] == "dims " + " ".join(f"{d.name}={len(d)}" for d in dims)
            assert lines[1] == "vars " + " ".join(f"{v.name}:{xtypes[v.dtype]}:{v.ndim}:{len(v.ncattrs())}"
                                                  for v in ds.variables.values())
            unlimited = [k for k, d in enumerate(dims) if d.isunlimited()]
            assert lines[2] == f"gatts {len(ds.ncattrs())} unlimited {unlimited[0]}"
            values = ds[var][:12].astype(np.float64)
        records, total, first = lines[3].split()[1::2]
        assert int(records) == values.shape[0] and float(first) == pytest.approx(float(values[0, 0, 0]), rel=1e-7)
        assert float(total) == pytest.approx(values.sum(), rel=1e-12)  # the same values, summed in another order
