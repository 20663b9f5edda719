"""The C API and the Fortran module through I/O servers: examples/write_fields.c and examples/cmaq_mockup.F90 built
as a model is built, launched MPMD beside ``climio serve`` (2, 4 and 6 model ranks, 1 and 2 servers,
oversubscribed), write the files they write attached, in every mode; a model rank maps no Python; and the faults
of the contract (a bad argument on one rank, an unwritable path, a full disk, a server killed outright) end with
one agreed error on every model rank, or the job with one line, within a bounded time, publishing nothing."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import climio_argv, compile_programs, run, small_tmpfs

from climio.core.mpi import is_open_mpi, mpiexec_command

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
import ncdiff  # noqa: E402

ROOT = Path(__file__).parent.parent
MODES = ("serial", "hdf5", "cdf2", "cdf5")
EBADID, EINVAL, ENOMEM = -1, -2, -6
LAUNCH_TIMEOUT = 150


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_programs(tmp_path_factory.mktemp("served-bin"),
                            [("write_fields", "mpicc", ROOT / "examples" / "write_fields.c"),
                             ("cmaq_mockup", "mpifort", ROOT / "examples" / "cmaq_mockup.F90"),
                             ("faults", "mpifort", ROOT / "tests" / "capi" / "faults.F90"),
                             ("mapped", "mpicc", ROOT / "tests" / "capi" / "mapped.c")])


def served(program: list[str], nmodel: int, nservers: int, timeout_s: str = "60", recovery: bool = False
           ) -> subprocess.Popen[str]:
    """``mpiexec -n NMODEL PROGRAM : -n NSERVERS climio serve``, started (the caller waits, with a timeout)."""
    argv, env = mpiexec_command(nmodel, program)
    if recovery and is_open_mpi(argv[0]):  # the job outlives a killed rank: the model's own timeout must end it
        argv.insert(1, "--enable-recovery")
    argv += [":", "-n", str(nservers), *climio_argv("serve")]
    env["CLIMIO_SERVE_TIMEOUT"] = timeout_s
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(job: subprocess.Popen[str], timeout: float = LAUNCH_TIMEOUT) -> subprocess.CompletedProcess[str]:
    try:
        out, err = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        job.kill()
        out, err = job.communicate()
        pytest.fail(f"timed out after {timeout} s (hang?): {' '.join(job.args)}\n{err[-3000:]}")
    return subprocess.CompletedProcess(job.args, job.returncode, out, err)


def same_as_attached(got: Path, want: Path, nmodel: int) -> None:
    assert ncdiff.diff(got, want, ignore_global=("history",)) == [], got
    with netCDF4.Dataset(got) as ds:
        assert f"climio serve: sent by {nmodel} model rank(s)" in ds.history


@pytest.fixture(scope="module")
def attached(programs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    """``get(nmodel)``: write_fields' files in every mode, written attached at ``nmodel`` ranks (once each)."""
    base, done = tmp_path_factory.mktemp("attached"), {}

    def get(nmodel: int) -> Path:
        if nmodel not in done:
            out = base / f"n{nmodel}.nc"
            result = run([str(programs["write_fields"]), str(out), ",".join(MODES), "auto"], nranks=nmodel,
                         timeout=LAUNCH_TIMEOUT)
            assert result.returncode == 0, result.stderr
            done[nmodel] = out
        return done[nmodel]
    return get


# the servers' strategy for each of MODES, per (model ranks, servers): every strategy the servers apply, each in
# several modes and launches (agg:N needs N servers)
STRATEGIES = {(2, 1): "root,agg,direct,stripe", (2, 2): "auto,agg:2,agg,direct", (4, 1): "root,direct,stripe,agg",
              (4, 2): "auto,agg,direct,stripe", (6, 1): "root,direct,agg,stripe", (6, 2): "auto,agg:2,stripe,agg:2"}


@pytest.mark.parametrize("nmodel", [2, 4, 6])
@pytest.mark.parametrize("nservers", [1, 2])
def test_write_fields_through_servers_is_the_attached_file(programs: dict[str, Path], attached, tmp_path: Path,
                                                           nmodel: int, nservers: int) -> None:
    """The files of every mode, each written by the servers with another strategy, equal the attached ones."""
    out = tmp_path / "out.nc"
    result = finished(served([str(programs["write_fields"]), str(out), ",".join(MODES),
                              STRATEGIES[nmodel, nservers]], nmodel, nservers))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("written and read back, 0 values differ") == len(MODES), result.stdout
    reference = attached(nmodel)
    for mode in MODES:
        same_as_attached(tmp_path / f"out.{mode}.nc", reference.with_name(f"{reference.stem}.{mode}.nc"), nmodel)
    assert sorted(os.listdir(tmp_path)) == sorted(f"out.{mode}.nc" for mode in MODES)  # no temporary left


# model ranks, servers, process grid, mode, strategy (the servers' own): every mode and rank count
CMAQ = [(2, 1, "2x1", "cdf5", "agg"), (4, 2, "2x2", "hdf5", "agg:2"), (6, 1, "3x2", "serial", "root"),
        (6, 2, "2x3", "cdf2", "stripe")]


@pytest.mark.parametrize("nmodel, nservers, grid, mode, strategy", CMAQ)
def test_cmaq_mockup_through_servers_is_the_attached_file(programs: dict[str, Path], tmp_path: Path, nmodel: int,
                                                          nservers: int, grid: str, mode: str, strategy: str) -> None:
    args = ["domain=20x16x3x4", f"grid={grid}", f"mode={mode}", f"strategy={strategy}", "steps=3"]
    through, itself = tmp_path / "served.nc", tmp_path / "attached.nc"
    result = finished(served([str(programs["cmaq_mockup"]), str(through), *args], nmodel, nservers))
    assert result.returncode == 0, result.stderr
    result = run([str(programs["cmaq_mockup"]), str(itself), *args], nranks=nmodel, timeout=LAUNCH_TIMEOUT)
    assert result.returncode == 0, result.stderr
    same_as_attached(through, itself, nmodel)


def mapped(result: subprocess.CompletedProcess[str]) -> tuple[list[str], int]:
    assert result.returncode == 0, result.stderr
    files = re.findall(r"^mapped (.*)$", result.stdout, flags=re.M)
    return files, int(re.search(r"^rss_kb (\d+)", result.stdout, flags=re.M)[1])


@pytest.fixture(scope="module")
def small_outputs(programs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
                  ) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    """tests/capi/mapped.c's small output at 2 model ranks: through a server and attached, every step and their
    mean (climio_def_var_reduce)."""
    base, runs = tmp_path_factory.mktemp("small"), {}
    for name, args in (("served", []), ("served-mean", ["mean"]), ("attached", []), ("attached-mean", ["mean"])):
        argv = [str(programs["mapped"]), str(base / f"{name}.nc"), *args]
        runs[name] = (base / f"{name}.nc", finished(served(argv, 2, 1)) if name.startswith("served") else
                      run(argv, nranks=2, timeout=LAUNCH_TIMEOUT))
    return runs


def test_a_model_rank_that_writes_through_servers_maps_no_python(small_outputs) -> None:
    """/proc/self/maps of a model rank after its output: through servers no libpython and no file of the Python
    environment but libclimio itself; attached, the interpreter is there (the check can fail)."""
    files, rss = mapped(small_outputs["served"][1])
    python = [f for f in files if "python" in f or "climio_py" in f or
              (f.startswith(sys.prefix) and not f.endswith("/libclimio.so"))]
    assert python == [] and any(f.endswith("/libclimio.so") for f in files), files
    attached_files, attached_rss = mapped(small_outputs["attached"][1])
    assert any("libpython" in f for f in attached_files) and any("libclimio_py" in f for f in attached_files)
    assert rss < attached_rss / 2, (rss, attached_rss)
    with netCDF4.Dataset(small_outputs["served"][0]) as s, netCDF4.Dataset(small_outputs["attached"][0]) as a:
        assert (s["v"][:] == a["v"][:]).all()


def test_an_online_mean_from_c_is_numpys_mean_of_the_steps(small_outputs) -> None:
    """climio_def_var_reduce(CLIMIO_MEAN, 3): the servers write one record, numpy's float64 mean of the three steps
    the model sent, with CF cell_methods and time bounds; attached mode refuses it with one line."""
    mapped(small_outputs["served-mean"][1])
    every, reduced = (netCDF4.Dataset(small_outputs[name][0]) for name in ("served", "served-mean"))
    with every, reduced:
        assert reduced["v"].shape == (1, 16, 20) and reduced["v"].cell_methods == "time: mean"
        assert (reduced["v"][0] == every["v"][:].astype(np.float64).mean(axis=0)).all()
        assert reduced["time"][:].tolist() == [6.0] and reduced["time_bnds"][:].tolist() == [[0.0, 12.0]]
    path, result = small_outputs["attached-mean"]
    assert result.returncode != 0 and "online reductions run on the I/O servers" in result.stderr
    assert not path.exists()


@pytest.mark.parametrize("kind, code, said", [("varid", EBADID, "no variable id 99"),
                                              ("shape", EINVAL, "local array of 10 elements on model rank 2"),
                                              ("path", EINVAL, "/nonexistent-climio-dir/out.nc"),
                                              ("frame", EINVAL, "frame -1 must be >= 0"),
                                              ("memory", ENOMEM, "out of memory: world rank 2 could not allocate "
                                                                 "1152921504606847040 bytes for a message")])
def test_a_bad_argument_on_one_model_rank_reaches_every_rank_once(programs: dict[str, Path], tmp_path: Path,
                                                                   kind: str, code: int, said: str) -> None:
    """Rank 2 of 3 passes a bad argument, or a field it has no memory to send (a message of 2**60 bytes): every
    rank gets the same code and line once, at that call or (the servers' error arriving later) at its close, and
    the job ends; nothing is published and no temporary is left."""
    out = tmp_path / "out.nc"
    result = finished(served([str(programs["faults"]), kind, "2", "0", str(out)], 3, 2))
    assert result.returncode == 0, result.stdout + result.stderr
    at_call = dict(re.findall(r"^rank (\d+) code (-?\d+)$", result.stdout, flags=re.M))
    at_close = dict(re.findall(r"^rank (\d+) close (-?\d+)$", result.stdout, flags=re.M))
    for rank in ("0", "1", "2"):
        assert sorted([int(at_call[rank]), int(at_close[rank])]) == sorted([code, 0]), result.stdout
    assert said in result.stdout
    assert os.listdir(tmp_path) == []


OLD = b"an older file at the path: it must survive a failed write\n"


def test_an_unwritable_path_is_one_error_on_every_model_rank(programs: dict[str, Path], tmp_path: Path) -> None:
    result = finished(served([str(programs["write_fields"]), "/nonexistent-climio-dir/out.nc"], 3, 1))
    lines = [line for line in result.stderr.splitlines() if line.startswith("write_fields: ")]
    assert result.returncode != 0 and len(lines) == 3 and len(set(lines)) == 1, result.stderr
    assert "/nonexistent-climio-dir" in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize("mode", ["serial", "hdf5", "cdf5"])  # rank 0 alone, HDF5, PnetCDF (cdf2 is cdf5's path)
def test_a_full_disk_publishes_nothing_and_ends_with_one_error(programs: dict[str, Path], mode: str) -> None:
    """The servers' target on a full small tmpfs: every model rank gets the servers' one agreed line, or (a fault
    inside a collective write on the servers) the job ends with the servers' line; the old file stays."""
    with small_tmpfs("1m") as disk:
        out = disk / "out.nc"
        out.write_bytes(OLD)
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        (disk / "filler").write_bytes(b"\0" * (free - 8192))
        result = finished(served([str(programs["write_fields"]), str(out), mode, "auto"], 3, 2))
        assert result.returncode != 0 and "Traceback" not in result.stderr
        model = {line for line in result.stderr.splitlines() if line.startswith("write_fields: ")}
        servers = [line for line in result.stderr.splitlines() if line.startswith("climio: error")]  # one, not
        assert (len(model) == 1 and not servers) or (len(servers) == 1 and not model), result.stderr  # one a server
        servers = [re.sub(r"^climio: error \(rank \d+\)", "climio: error", line) for line in servers]
        assert "no space left on device" in [*model, *servers][0].lower() and "HDF error" not in result.stderr
        assert out.read_bytes() == OLD and sorted(os.listdir(disk)) == ["filler", "out.nc"]


def test_a_killed_server_ends_the_model_within_its_timeout(programs: dict[str, Path], tmp_path: Path) -> None:
    """A server SIGKILLed mid-run, in a job that outlives it (Open MPI's --enable-recovery): the model's next wait
    for the servers ends after CLIMIO_SERVE_TIMEOUT with one line; the dead server's temporary is removed and the
    old file stays."""
    out = tmp_path / "out.nc"
    out.write_bytes(OLD)
    job = served([str(programs["cmaq_mockup"]), str(out), "domain=40x30x5x20", "grid=2x1", "steps=1000000"], 2, 1,
                 timeout_s="3", recovery=True)
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(".climio-tmp") for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline and job.poll() is None, "the served output never started"
        time.sleep(0.1)
    server = int(tmp_path.glob("*.climio-tmp").__next__().name.split(".")[-3])  # .NAME.HOST.PID.HEX.climio-tmp
    os.kill(server, signal.SIGKILL)
    killed = time.monotonic()
    result = finished(job, timeout=90)
    assert time.monotonic() - killed < 45, "the model waited far past its timeout"
    lines = {line for line in result.stderr.splitlines() if line.startswith("cmaq_mockup: ")}  # each rank's, if any
    assert len(lines) == 1 and "did not take" in lines.pop(), result.stderr  # (mpiexec --enable-recovery exits 0)
    assert sorted(os.listdir(tmp_path)) == ["out.nc"] and out.read_bytes() == OLD
