"""Bad input: one line naming the option/file, exit status 2, and no output file left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import climio, leftovers, one_error_line, own_lines, run

from climio.core.mpi import mpiexec_command

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch, Preparers  # noqa: E402

HELPER = str(Path(__file__).parent / "helpers" / "fail_on_rank.py")
SMALL = ("--shape", "5,4,6")

# The refusals and other runs that need no process of their own go in one table per rank count and MPI-IO layer
# (helpers/climio_batch.py: one launch each, every case captured as a process of its own); each ``prepare_*``
# function adds a test's runs, each in a directory of its own (``runs.folder(name)``). What only a real process
# shows (signals, kills, aborts of a rank, the exit status of a usage error under mpiexec) keeps its own launch.
prepare = Preparers()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    return Batch.prepared(tmp_path_factory.mktemp("runs"), prepare)


@prepare
def prepare_unknown_mode(b: Batch) -> None:
    for nranks in (None, 2):
        b.add(f"mode-{nranks}", ["gen", "cmip", b.folder(f"mode-{nranks}") / "x.nc", *SMALL, "--mode", "netcdf7"],
              nranks)


@pytest.mark.parametrize("nranks", [None, 2])
def test_unknown_mode(runs: Batch, nranks: int | None) -> None:
    tmp_path = runs.folder(f"mode-{nranks}")
    out = tmp_path / "x.nc"
    one_error_line(runs.result(f"mode-{nranks}"),  # type: ignore[arg-type]  # gen cmip out SMALL --mode netcdf7
                   "unknown mode 'netcdf7'", "--mode", "cdf5")
    assert not out.exists() and leftovers(str(tmp_path)) == []


@prepare
def prepare_missing_output_directory(b: Batch) -> None:
    for nranks in (None, 3):
        b.add(f"missing-{nranks}", ["gen", "cmip", b.folder(f"missing-{nranks}") / "no" / "such" / "x.nc", *SMALL],
              nranks)


@pytest.mark.parametrize("nranks", [None, 3])
def test_missing_output_directory(runs: Batch, nranks: int | None) -> None:
    # gen cmip DIR/no/such/x.nc SMALL
    one_error_line(runs.result(f"missing-{nranks}"), "output directory", "does not exist")  # type: ignore[arg-type]


@prepare
def prepare_unwritable_output_directory(b: Batch) -> None:
    b.add("proc", ["gen", "cmip", "/proc/climio-test.nc", *SMALL])


def test_unwritable_output_directory(runs: Batch) -> None:
    # /proc refuses new files even to root, so this holds whoever runs the tests.
    one_error_line(runs.result("proc"), "'/proc' is not writable")  # type: ignore[arg-type]


@prepare
def prepare_existing_output_needs_overwrite(b: Batch) -> None:
    for nranks in (None, 2):
        for name, extra in ((f"existing-{nranks}", []), (f"overwrite-{nranks}", ["--overwrite"])):
            out = b.folder(name) / "x.nc"
            out.write_bytes(b"precious")
            b.add(name, ["gen", "cmip", out, *SMALL, *extra], nranks)


@pytest.mark.parametrize("nranks", [None, 2])
def test_existing_output_needs_overwrite(runs: Batch, nranks: int | None) -> None:
    tmp_path = runs.folder(f"existing-{nranks}")
    out = tmp_path / "x.nc"  # held b"precious" before the run
    one_error_line(runs.result(f"existing-{nranks}"), str(out), "--overwrite")  # type: ignore[arg-type]
    assert out.read_bytes() == b"precious" and leftovers(str(tmp_path)) == []
    out = runs.folder(f"overwrite-{nranks}") / "x.nc"  # held b"precious" too
    result = runs.result(f"overwrite-{nranks}")  # gen cmip out SMALL --overwrite
    assert result.returncode == 0, result.stderr
    assert out.read_bytes()[:3] == b"CDF"


@prepare
def prepare_variable_over_4gib(b: Batch) -> None:
    for mode in ("serial", "cdf2"):
        b.add(f"4gib-{mode}", ["gen", "cmip", b.folder(f"4gib-{mode}") / "x.nc", "--shape", "1,32768,32768", "--mode",
                               mode])


@pytest.mark.parametrize("mode", ["serial", "cdf2"])
def test_variable_over_4gib_refused_in_cdf2(runs: Batch, mode: str) -> None:
    tmp_path = runs.folder(f"4gib-{mode}")
    # one record of 1 x 32768 x 32768 float32 is 4 GiB: refused before anything is allocated or written
    one_error_line(runs.result(f"4gib-{mode}"),  # type: ignore[arg-type]  # gen cmip out --shape 1,32768,32768
                   "variable 'pr'", "4 GiB", "use --mode cdf5 or hdf5")
    assert os.listdir(tmp_path) == []


BAD_OPTIONS = [
    (("--shape", "5,4"), ("--shape", "3 comma-separated positive integers")),
    (("--shape", "5,0,4"), ("--shape",)),
    (("--var", "2pr"), ("--var", "not a valid variable name")),
    (("--hint", "striping_factor"), ("--hint", "key=value")),
]


@prepare
def prepare_bad_options(b: Batch) -> None:
    for k, (args, _) in enumerate(BAD_OPTIONS):
        b.add(f"option-{k}", ["gen", "cmip", b.folder(f"option-{k}") / "x.nc", *args])


@pytest.mark.parametrize("args,needles", BAD_OPTIONS)
def test_bad_options(runs: Batch, args: tuple[str, ...], needles: tuple[str, ...]) -> None:
    k = BAD_OPTIONS.index((args, needles))
    one_error_line(runs.result(f"option-{k}"), *needles)  # type: ignore[arg-type]  # gen cmip x.nc ARGS
    assert os.listdir(runs.folder(f"option-{k}")) == []


def test_usage_errors_exit_2_once_under_mpiexec(tmp_path: Path) -> None:
    result = climio("gen", "cmip", nranks=2)
    assert result.returncode == 2
    assert result.stderr.count("climio: error:") == 1  # printed by rank 0 only


@prepare
def prepare_bad_trace_path(b: Batch) -> None:
    b.add("trace", ["--trace", b.folder("trace") / "none" / "t.json", "info"])


def test_bad_trace_path(runs: Batch) -> None:
    # --trace DIR/none/t.json info
    one_error_line(runs.result("trace"), "--trace", "does not exist")  # type: ignore[arg-type]


def test_killed_run_leaves_no_finished_looking_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a registry of running processes (its folder's name is taken here), the next run to the same output
    removes a killed run's temporary file (with one, any next run does: test_stale_sweep.py)."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    (tmp_path / f"climio-{os.getuid()}").write_text("")
    out = tmp_path / "big.nc"
    proc = subprocess.Popen([sys.executable, "-m", "climio", "gen", "cmip", str(out), "--shape", "4000,192,288",
                             "--mode", "cdf5"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not leftovers(str(tmp_path)) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)  # well inside the write
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()  # only a hidden .climio-tmp remains, never big.nc
    (stale,) = leftovers(str(tmp_path))
    assert f".{proc.pid}." in stale  # its owner's PID is in the name: the next run knows it is dead
    rerun = climio("gen", "cmip", str(out), "--shape", "10,4,8")
    assert rerun.returncode == 0, rerun.stderr
    assert f"removed {tmp_path / stale}, left by a job that ended before finishing" in rerun.stderr
    assert leftovers(str(tmp_path)) == [] and out.exists()


@prepare
def prepare_a_running_jobs_temporary_file(b: Batch) -> None:
    import socket

    tmp_path = b.folder("running")
    live = tmp_path / f".out.nc.{socket.gethostname().split('.')[0]}.{os.getpid()}.abcd.climio-tmp"  # this process
    other_host = tmp_path / ".out.nc.elsewhere.1.abcd.climio-tmp"
    live.write_bytes(b"x")
    other_host.write_bytes(b"x")
    b.add("running", ["gen", "cmip", tmp_path / "out.nc", "--shape", "10,4,8"])


def test_a_running_jobs_temporary_file_is_left_alone(runs: Batch) -> None:
    import socket

    tmp_path = runs.folder("running")
    live = tmp_path / f".out.nc.{socket.gethostname().split('.')[0]}.{os.getpid()}.abcd.climio-tmp"
    other_host = tmp_path / ".out.nc.elsewhere.1.abcd.climio-tmp"
    result = runs.result("running")  # gen cmip out.nc --shape 10,4,8 beside the two temporary files
    assert result.returncode == 0, result.stderr
    assert live.exists() and other_host.exists()
    assert f"{other_host} was left by a job on host elsewhere: remove it if that job has ended" in result.stderr


@pytest.mark.parametrize("signum, nranks", [(signal.SIGTERM, None), (signal.SIGINT, None), (signal.SIGHUP, None),
                                            (signal.SIGTERM, 2)])
def test_stop_signals_remove_the_unfinished_output(tmp_path: Path, signum: int, nranks: int | None) -> None:
    """What a batch system's time limit (SIGTERM to the job), Ctrl-C or a closed terminal send."""
    out = tmp_path / "big.nc"
    # mpiexec takes up to a second or more to pass a signal on: give its job time enough not to finish first
    shape = "4000,192,288" if nranks is None else "16000,192,288"
    argv = [sys.executable, "-m", "climio", "gen", "cmip", str(out), "--shape", shape, "--mode", "cdf5"]
    env = dict(os.environ)
    if nranks is not None:
        argv, env = mpiexec_command(nranks, argv)
        # mpiexec's SIGKILL follows its SIGTERM after 1 s: a rank of a busy machine may need longer
        env["OMPI_MCA_odls_base_sigkill_timeout"] = "3"
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not leftovers(str(tmp_path)) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "Traceback" not in stderr
    if nranks is None:
        assert proc.returncode == 128 + signum
    # under mpiexec every rank is sent SIGTERM, and handles it even while it waits inside MPI
    said = signal.Signals(signum if nranks is None else signal.SIGTERM).name
    assert own_lines(stderr) == [f"climio: stopped by {said}; unfinished output removed"], stderr
    assert not out.exists() and leftovers(str(tmp_path)) == []


@pytest.mark.parametrize("failing_rank", [0, 2])
def test_failing_rank_ends_the_job_with_its_message(failing_rank: int) -> None:
    started = time.time()
    result = run([sys.executable, HELPER, str(failing_rank)], nranks=3, timeout=60)
    assert result.returncode == 1
    assert f"climio: rank {failing_rank} failed: RuntimeError: injected failure" in result.stderr
    assert time.time() - started < 60


@pytest.mark.parametrize("failing_rank", [0, 1])
def test_rank_failing_mid_write_ends_the_job_and_leaves_no_file(tmp_path: Path, failing_rank: int) -> None:
    result = run([sys.executable, HELPER, str(failing_rank), "write", str(tmp_path)], nranks=3, timeout=60)
    assert result.returncode == 1
    assert "injected failure while writing" in result.stderr
    assert os.listdir(tmp_path) == []  # neither out.nc nor its temporary file


def test_bad_input_on_one_rank_ends_the_job_with_status_2() -> None:
    result = run([sys.executable, HELPER, "1", "usage"], nranks=3, timeout=60)
    assert result.returncode == 2
    assert "climio: error (rank 1): bad input seen by one rank" in result.stderr


def test_mpiexec_command_handles_root_and_oversubscription() -> None:
    command, env = mpiexec_command(4, ["true"])
    assert command[:3] == ["mpiexec", "-n", "4"] and command[-1] == "true"
    assert "--oversubscribe" in command  # Debian's mpiexec is Open MPI
    if os.geteuid() == 0:
        assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"


@prepare
def prepare_info(b: Batch) -> None:
    b.add("info", ["info"], 2)


def test_info_reports_every_mode_working_in_plain_text(runs: Batch) -> None:
    result = runs.result("info")  # info at 2 ranks
    assert result.returncode == 0, result.stderr
    assert "\x00" not in result.stdout
    for mode in ("serial", "hdf5", "cdf2", "cdf5"):
        assert any(line.split()[:2] == [mode, "works"] for line in result.stdout.splitlines()), result.stdout
    assert "PnetCDF         1." in result.stdout and "ranks           2" in result.stdout
    assert "compression (hdf5 mode): deflate yes" in result.stdout and "deflate + quantize: works" in result.stdout


@prepare
def prepare_colon_in_path(b: Batch) -> None:
    for nranks in (None, 2):  # ROMIO and OMPIO runs go in tables of their own
        b.add(f"romio-{nranks}", ["--mpi-io", "romio", "gen", "cmip", b.folder(f"romio-{nranks}") / "run:1.nc", *SMALL],
              nranks)
        b.add(f"ompio-{nranks}", ["--mpi-io", "ompio", "gen", "cmip", b.folder(f"ompio-{nranks}") / "run:1.nc", *SMALL],
              nranks)


@pytest.mark.parametrize("nranks", [None, 2])
def test_colon_in_path_under_romio(runs: Batch, nranks: int | None) -> None:
    tmp_path = runs.folder(f"romio-{nranks}")
    out = tmp_path / "run:1.nc"
    one_error_line(runs.result(f"romio-{nranks}"),  # type: ignore[arg-type]  # --mpi-io romio gen cmip out SMALL
                   "run:1.nc", "file-system prefix", "--mpi-io ompio")
    assert not out.exists() and leftovers(str(tmp_path)) == []
    out = runs.folder(f"ompio-{nranks}") / "run:1.nc"
    assert runs.result(f"ompio-{nranks}").returncode == 0  # --mpi-io ompio gen cmip out SMALL
    assert out.exists()
