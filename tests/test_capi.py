"""The C API and the Fortran module from compiled programs: examples/write_fields.c and examples/cmaq_mockup.F90
built against the installed library with pkg-config, run under mpiexec at 1, 2 and 4 ranks, their files
compared element by element with the same fields written through the Python API (tests/helpers/
capi_reference.py, every reference of one rank count written in one launch by tests/helpers/
capi_reference_batch.py) and with the values worked out here; tests/capi/faults.F90 makes one call fail on one
rank and checks that every rank gets the same code (or that the job is aborted when asked) and that no file
is left behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio_pkg_config, compile_programs, run

ROOT = Path(__file__).parent.parent
EXAMPLES = ROOT / "examples"
REFERENCE_BATCH = Path(__file__).parent / "helpers" / "capi_reference_batch.py"
EBADID, EINVAL, EIO = -1, -2, -4


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The examples and the fault program, compiled as a model would be."""
    return compile_programs(tmp_path_factory.mktemp("capi-bin"),
                            [("write_fields", "mpicc", EXAMPLES / "write_fields.c"),
                             ("cmaq_mockup", "mpifort", EXAMPLES / "cmaq_mockup.F90"),
                             ("faults", "mpifort", ROOT / "tests" / "capi" / "faults.F90"),
                             ("read_real", "mpicc", ROOT / "tests" / "capi" / "read_real.c")])


def test_pkg_config_names_the_installed_library() -> None:
    flags = climio_pkg_config()
    includes = [Path(f[2:]) for f in flags if f.startswith("-I")]
    assert any((d / "climio.h").is_file() and (d / "climio_io.mod").is_file() for d in includes)
    assert "-lclimio" in flags and "-lclimiof" in flags


def same_file(path: Path, reference: Path, skip_attrs: tuple[str, ...] = ()) -> None:
    """Every variable, dimension and attribute of ``reference`` is in ``path`` with the same values and type."""
    with netCDF4.Dataset(path) as got, netCDF4.Dataset(reference) as want:
        assert {n: len(d) for n, d in got.dimensions.items()} == {n: len(d) for n, d in want.dimensions.items()}
        assert set(got.variables) == set(want.variables)
        for name, var in want.variables.items():
            mine = got.variables[name]
            assert mine.dimensions == var.dimensions and mine.dtype == var.dtype, name
            assert np.array_equal(np.ma.filled(mine[:], -1), np.ma.filled(var[:], -1)), name
            assert {k: str(mine.getncattr(k)) for k in mine.ncattrs()} == \
                {k: str(var.getncattr(k)) for k in var.ncattrs()}, name
        for key in set(want.ncattrs()) - set(skip_attrs):
            assert str(got.getncattr(key)) == str(want.getncattr(key))


WRITE_FIELDS = [(1, "serial", "root"), (1, "cdf5", "direct"), (2, "cdf5", "agg"), (2, "hdf5", "direct"),
                (4, "cdf5", "agg:2"), (4, "hdf5", "agg"), (4, "cdf2", "rows"), (4, "cdf5", "stripe")]

# ranks, grid, domain (NXxNYxNLAYxNSPEC), strategy, mode; 4x1 over 3 columns leaves one rank owning nothing
CMAQ = [(1, "1x1", "20x16x3x4", "direct", "cdf5"), (2, "2x1", "20x16x3x4", "agg", "cdf5"),
        (2, "1x2", "20x16x3x4", "root", "serial"), (4, "2x2", "20x16x3x4", "agg:2", "hdf5"),
        (4, "4x1", "3x16x2x3", "direct", "cdf5"), (4, "2x2", "20x16x3x4", "cols", "cdf2")]


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory):
    """``get(key)``: the Python API's file for a WRITE_FIELDS or CMAQ case, each in a directory of its own. The
    files of one rank count are written in one launch (tests/helpers/capi_reference_batch.py), when a test first
    needs one of them; a case its launch did not finish fails its test with the launch's output."""
    base = tmp_path_factory.mktemp("python-reference")
    cases: dict[tuple, tuple[int, Path, list[str]]] = {}
    for nranks, mode, strategy in WRITE_FIELDS:
        path = base / f"write_fields-{nranks}-{mode}-{strategy}" / "python.nc"
        cases[("write_fields", nranks, mode, strategy)] = (nranks, path, ["write_fields", str(path), mode, strategy,
                                                                          "3"])
    for nranks, grid, domain, strategy, mode in CMAQ:
        path = base / f"cmaq-{nranks}-{grid}-{domain}-{strategy}-{mode}" / "python.nc"
        cases[("cmaq", nranks, grid, domain, strategy, mode)] = (nranks, path, ["cmaq", str(path), domain, grid,
                                                                                strategy, mode, "3"])
    written: dict[tuple, str | None] = {}

    def get(key: tuple) -> Path:
        nranks, path, _ = cases[key]
        if key not in written:
            keys = [k for k, (n, _, _) in cases.items() if n == nranks]
            for k in keys:
                cases[k][1].parent.mkdir()
            table, done = base / f"cases-{nranks}.json", base / f"done-{nranks}.txt"
            table.write_text(json.dumps([cases[k][2] for k in keys]))
            result = run([sys.executable, str(REFERENCE_BATCH), str(table), str(done)], nranks=nranks,
                         timeout=60 + 60 * len(keys))
            finished = {int(line) for line in done.read_text().split()} if done.exists() else set()
            for index, k in enumerate(keys):
                written[k] = None if index in finished and result.returncode == 0 else (
                    f"the Python reference {cases[k][2]} at {nranks} rank(s) was not written: status "
                    f"{result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}")
        assert written[key] is None, written[key]
        return path
    return get


@pytest.mark.parametrize("nranks, mode, strategy", WRITE_FIELDS)
def test_write_fields_c_equals_python(programs: dict[str, Path], references, tmp_path: Path, nranks: int, mode: str,
                                      strategy: str) -> None:
    c_file = tmp_path / "c.nc"
    result = run([str(programs["write_fields"]), str(c_file), mode, strategy, "3"], nranks=nranks, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "written and read back, 0 values differ" in result.stdout
    # capi_reference.py write_fields python.nc MODE STRATEGY 3 at nranks (in its rank count's launch)
    py_file = references(("write_fields", nranks, mode, strategy))
    same_file(c_file, py_file)
    with netCDF4.Dataset(c_file) as ds:  # and the values the C program meant, worked out independently
        step, lev, y, x = np.meshgrid(np.arange(3), np.arange(4), np.arange(24), np.arange(36), indexing="ij")
        assert np.array_equal(ds["T"][:], (step * 1e4 + lev * 1e3 + y * 36 + x).astype(np.float32))
        assert np.array_equal(ds["ps"][:], step[:, 0] * 1e4 + y[:, 0] * 36 + x[:, 0] + 0.5)
        assert list(ds["time"][:]) == [0.0, 3.0, 6.0]
        assert ds["time"].units == "hours since 2016-07-01 00:00:00" and ds.title == "climio C API example"
        assert list(ds["ps"].valid_range) == [0.0, 1e6]
        assert np.array_equal(ds["area"][:], 1e6 + y[0, 0] * 36 + x[0, 0]) and ds["area"].dimensions == ("y", "x")
        assert np.array_equal(ds["lat"][:], -90.0 + 180.0 * (np.arange(24) + 0.5) / 24)
        assert np.array_equal(ds["lon"][:], 360.0 * np.arange(36) / 36) and list(ds["lev"][:]) == [1000, 750, 500, 250]
        assert ds["lev"].dtype == np.int32 and ds["time"].bounds == "time_bnds"
        assert np.array_equal(ds["time_bnds"][:], [[-1.5, 1.5], [1.5, 4.5], [4.5, 7.5]])
    assert sorted(os.listdir(tmp_path)) == ["c.nc"]  # the C program left nothing else
    assert sorted(os.listdir(py_file.parent)) == ["python.nc"]


@pytest.mark.parametrize("nranks, grid, domain, strategy, mode", CMAQ)
def test_cmaq_mockup_fortran_equals_python(programs: dict[str, Path], references, tmp_path: Path, nranks: int,
                                           grid: str, domain: str, strategy: str, mode: str) -> None:
    f_file, timing = tmp_path / "fortran.nc", tmp_path / "timing.json"
    result = run([str(programs["cmaq_mockup"]), str(f_file), f"domain={domain}", f"grid={grid}",
                  f"strategy={strategy}", f"mode={mode}", "steps=3", f"timing={timing}"], nranks=nranks, timeout=120)
    assert result.returncode == 0, result.stderr
    # capi_reference.py cmaq python.nc DOMAIN GRID STRATEGY MODE 3 at nranks (in its rank count's launch)
    py_file = references(("cmaq", nranks, grid, domain, strategy, mode))
    same_file(f_file, py_file, skip_attrs=("title",))
    nx, ny, nlay, nspec = (int(n) for n in domain.split("x"))
    flat = np.arange(nlay * ny * nx, dtype=np.int64).reshape(nlay, ny, nx)
    with netCDF4.Dataset(f_file) as ds:
        assert ds.title == "CMAQ mock-up (Fortran)" and ds["SPEC000"].dimensions == ("time", "LAY", "ROW", "COL")
        for s in range(nspec):
            expected = ((flat * 7 + s * 13) % 1000003).astype(np.float32)
            assert all(np.array_equal(ds[f"SPEC{s:03d}"][step], expected) for step in range(3))
        assert list(ds["time"][:]) == [0.0, 3600.0, 7200.0]
    measured = json.loads(timing.read_text())
    assert set(measured) == {"start_s", "io_s", "calls", "steps_s", "step_calls", "run_s"}
    assert measured["step_calls"] == 3 * (nspec + 1) and 0 < measured["steps_s"] < measured["io_s"]


def test_a_model_built_with_floating_point_traps_runs(tmp_path: Path) -> None:
    """gfortran's -ffpe-trap, a common debugging build: climio's Python (numpy) runs inside the model's calls with
    the traps held off, and leaves no flag raised behind it."""
    trapped = compile_programs(tmp_path, [("cmaq_mockup", "mpifort", EXAMPLES / "cmaq_mockup.F90")],
                               extra=["-ffpe-trap=invalid,zero,overflow"])["cmaq_mockup"]
    out = tmp_path / "trapped.nc"
    result = run([str(trapped), str(out), "domain=6x4x2x3", "grid=1x1", "strategy=root", "mode=serial", "steps=2"],
                 nranks=1, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "signalling" not in result.stderr and "Floating-point exception" not in result.stderr
    with netCDF4.Dataset(out) as ds:
        assert list(ds["time"][:]) == [0.0, 3600.0]


@pytest.mark.parametrize("kind, code", [("varid", EBADID), ("shape", EINVAL), ("path", EIO), ("frame", EINVAL)])
@pytest.mark.parametrize("nranks", [2, 3])
def test_fortran_fault_on_one_rank_returns_one_code_everywhere(programs: dict[str, Path], tmp_path: Path, kind: str,
                                                               code: int, nranks: int) -> None:
    """A bad createfile on the last rank: every rank returns its code at that call. A bad climio_write_darray,
    which each rank checks and holds alone: the last rank returns its code at that call, and every rank at the
    file's next call (its close), with the same line. Nothing is published."""
    out = tmp_path / "out.nc"
    result = run([str(programs["faults"]), kind, str(nranks - 1), "0", str(out)], nranks=nranks, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    at_call = dict(re.findall(r"^rank (\d+) code (-?\d+)$", result.stdout, flags=re.M))
    at_close = dict(re.findall(r"^rank (\d+) close (-?\d+)$", result.stdout, flags=re.M))
    said = {"varid": "no variable id 99", "shape": "local array of shape", "path": "/nonexistent-climio-dir",
            "frame": "frame -1 must be >= 0"}[kind]
    if kind == "path":
        assert at_call == {str(r): str(code) for r in range(nranks)}, result.stdout
        assert set(at_close.values()) == {str(EBADID)}  # never created
        assert said in re.search(r"^message (.*)$", result.stdout, flags=re.M)[1]
    else:
        assert at_call == {str(r): str(code if r == nranks - 1 else 0) for r in range(nranks)}, result.stdout
        assert at_close == {str(r): str(code) for r in range(nranks)}, result.stdout
        assert said in re.findall(r"^message (.*)$", result.stdout, flags=re.M)[-1]  # rank 0's, at its close
    assert os.listdir(tmp_path) == []  # nothing at the path, no temporary file


@pytest.mark.parametrize("kind, status", [("varid", 2), ("shape", 2), ("path", 1)])
def test_fortran_fault_aborts_every_rank_when_asked(programs: dict[str, Path], tmp_path: Path, kind: str,
                                                    status: int) -> None:
    out = tmp_path / "out.nc"
    result = run([str(programs["faults"]), kind, "1", "1", str(out)], nranks=3, timeout=120)
    assert result.returncode == status, result.stdout + result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("climio: ")]
    assert len(said) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "close" not in result.stdout  # no rank went past the file's next call (a bad write is held alone)
    assert os.listdir(tmp_path) == []


def test_old_output_survives_a_failed_run(programs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out.nc"
    out.write_bytes(b"an older file")
    result = run([str(programs["faults"]), "shape", "0", "0", str(out)], nranks=2, timeout=120)
    assert result.returncode == 0 and "code -2" in result.stdout
    assert out.read_bytes() == b"an older file" and os.listdir(tmp_path) == ["out.nc"]


def test_examples_need_no_python_environment(programs: dict[str, Path], tmp_path: Path) -> None:
    """A model started without the venv on PATH or PYTHONPATH still finds climio (baked into the library)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(sys.prefix))
    result = subprocess.run([str(programs["write_fields"]), str(tmp_path / "a.nc"), "cdf5", "direct", "1"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


REAL = DATA / "real"
# file, variable, levels, decomposition arguments: CORDEX's rotated pole (netCDF-4), CMIP6 ozone on levels,
# ICON's unstructured cells read by a PIO compmap (round-robin points)
REAL_READS = [("tas_EUR-11_MPI-M-MPI-ESM-LR_rcp85_r1i1p1_KNMI-RACMO22E_v1_mon_209101.nc", "tas", 0, ["blocks"]),
              ("o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc", "o3", 3, ["blocks"]),
              ("tas_Amon_ICON-ESM-LR_historical_r1i1p1f1_gn_185001.nc", "tas", 0, ["compmap"])]


def block_range(n: int, parts: int, index: int) -> tuple[int, int]:
    base, extra = divmod(n, parts)
    return index * base + min(index, extra), base + (1 if index < extra else 0)


@pytest.mark.parametrize("nranks", [1, 2, 3])
@pytest.mark.parametrize("name, var, levels, how", REAL_READS)
def test_c_reads_real_files_into_any_decomposition(programs: dict[str, Path], tmp_path: Path, nranks: int, name: str,
                                                   var: str, levels: int, how: list[str]) -> None:
    """climio_read_darray of a real CMIP/CORDEX file equals netCDF4-python's values at every owned point; the halo
    holds the variable's fill value."""
    path = REAL / name
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        values = ds[var][0].astype(np.float64)
        fill = float(np.float32(ds[var]._FillValue))
    grid = values.shape[1:] if levels else values.shape
    argv = [str(programs["read_real"]), str(path), var, str(levels), str(tmp_path), *how, *map(str, grid)]
    result = run(argv, nranks=nranks, timeout=120)
    assert result.returncode == 0, result.stderr
    field = values if levels else values[None]
    for rank in range(nranks):
        local = np.fromfile(tmp_path / f"rank{rank}.bin")
        if how == ["compmap"]:
            assert np.array_equal(local, field[:, rank::nranks].ravel()), rank
            continue
        cols = max(d for d in range(1, int(nranks ** 0.5) + 1) if nranks % d == 0)  # as MPI_Dims_create(n, 2)
        rows = nranks // cols
        (y0, ny), (x0, nx) = block_range(grid[0], rows, rank // cols), block_range(grid[1], cols, rank % cols)
        local = local.reshape(field.shape[0], ny + 2, nx + 2)
        assert np.array_equal(local[:, 1:-1, 1:-1], field[:, y0:y0 + ny, x0:x0 + nx]), rank
        halo = np.ones(local.shape, bool)
        halo[:, 1:-1, 1:-1] = False
        assert np.all(local[halo] == fill), rank
