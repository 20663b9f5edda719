"""Every stop of a served launch is clean: ``mpiexec -n M cmaq_mockup OUT ... : -n 1 climio serve`` ends within a
few seconds of its cause, with one line on stderr (Open MPI's own notices aside) and a non-zero status, leaving
no climio temporary file, and an older file at the path as it was. The causes: a server that refuses its own
option or setting (it still answers the model's hello, so every model rank gets the line at climio_init), a bad
``CLIMIO_*`` value (read by the C client and the server by one rule: the same line from either), a server that
gets no model (it ends the job), SIGTERM and SIGINT to mpiexec mid-write (a batch system's time limit, Ctrl-C),
SIGKILL of mpiexec, and a model rank that dies under ``--enable-recovery`` (named by the server)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import climio_argv, compile_programs, own_lines

from climio.core import settings
from climio.core.mpi import is_open_mpi, mpiexec_command
from climio.errors import ClimioError

ROOT = Path(__file__).parent.parent
SMALL = ("domain=16x12x2x3", "grid=1x1", "steps=2")  # one model rank: the model's line is said once
LONG = ("domain=80x60x10x20", "grid=2x1", "steps=60", "work=0.05")  # about 10 s of writing at 2 model ranks
SOON = 20.0  # seconds: a stop "at once" (the launch itself takes one or two on a busy machine)
# mpiexec follows its SIGTERM with SIGKILL after 1 s; on this machine, busy with the other test worker, a
# rank may not be given its core that soon (docs/usage.md says how a batch job gives its ranks longer)
GRACE = {"OMPI_MCA_odls_base_sigkill_timeout": "3"}


@pytest.fixture(autouse=True)
def own_runtime(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's runs keep their records of temporaries apart (climio.core.registry): a run sweeps only what
    the stops of its own test left."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path_factory.mktemp("runtime")))


@pytest.fixture(scope="module")
def cmaq(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_programs(tmp_path_factory.mktemp("stops-bin"),
                            [("cmaq_mockup", "mpifort", ROOT / "examples" / "cmaq_mockup.F90")])["cmaq_mockup"]


def launch(model: list[str], nmodel: int, serve: tuple[str, ...] = (), env: dict[str, str] | None = None,
           recovery: bool = False) -> subprocess.Popen[str]:
    """``mpiexec -n NMODEL MODEL : -n 1 climio serve SERVE``, started in its own session (signals reach only it)."""
    argv, environ = mpiexec_command(nmodel, model)
    if recovery and is_open_mpi(argv[0]):
        argv.insert(1, "--enable-recovery")
    argv += [":", "-n", "1", *climio_argv("serve", *serve)]
    environ.update({"CLIMIO_SERVE_TIMEOUT": "60", **(env or {})})
    return subprocess.Popen(argv, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def ended(job: subprocess.Popen[str], within: float = 90.0) -> tuple[int, list[str], float]:
    """The launch's status, its lines on stderr but Open MPI's notices, and the seconds it took from now."""
    began = time.monotonic()
    try:
        _, err = job.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        _, err = job.communicate()
        pytest.fail(f"hung for {within} s: {' '.join(job.args)}\n{err[-3000:]}")
    return job.returncode, own_lines(err), time.monotonic() - began


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".climio-tmp"))


def refusal(setting: settings.Setting, value: str) -> str:
    try:
        setting.read({setting.name: value})
    except ClimioError as err:
        return str(err)
    raise AssertionError(f"{setting.name}={value} was taken")


# --------------------------------------------------------------------------------------------------------------
# One rule for the CLIMIO_* settings, on both sides
# --------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "taken"), [
    ("600", 600.0), ("2.5", 2.5), ("1e3", 1000.0), (".5", 0.5), ("+7", 7.0), ("", 600.0)])
def test_a_timeout_is_a_positive_number(value: str, taken: float) -> None:
    assert settings.SERVE_TIMEOUT.read({"CLIMIO_SERVE_TIMEOUT": value}) == taken


@pytest.mark.parametrize("value", ["0", "-1", "abc", "inf", "nan", "10s", " 5", "0x10", "1_000", "1e999", "."])
def test_a_timeout_refuses_what_is_no_positive_number(value: str) -> None:
    assert refusal(settings.SERVE_TIMEOUT, value) == (
        f"CLIMIO_SERVE_TIMEOUT={value}: give the seconds a model and its I/O servers wait for each other, a number "
        f"greater than 0 (default 600)")


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1.5", "1e3", "65537"])
def test_a_buffer_is_a_whole_number_of_mib(value: str) -> None:
    assert refusal(settings.SERVE_BUFFER_MB, value) == (
        f"CLIMIO_SERVE_BUFFER_MB={value}: give the MiB of each model rank's buffer for the I/O servers, a whole "
        f"number from 1 to 65536 (default 32)")
    assert settings.SERVE_BUFFER_MB.read({"CLIMIO_SERVE_BUFFER_MB": "64"}) == 64


def test_servers_are_counted_within_the_launch() -> None:
    assert settings.servers(4).read({"CLIMIO_SERVERS": "3"}) == 3
    assert refusal(settings.servers(1), "1") == (
        "CLIMIO_SERVERS=1: give the number of I/O server ranks, the last of this launch of 1, a whole number from "
        "0 to 0 (unset: the last application of the launch)")


BAD_SETTINGS = [(settings.SERVE_TIMEOUT, "0"), (settings.SERVE_TIMEOUT, "-1"), (settings.SERVE_TIMEOUT, "abc"),
                (settings.SERVE_BUFFER_MB, "0"), (settings.SERVE_BUFFER_MB, "-5"), (settings.SERVE_BUFFER_MB, "abc"),
                (settings.servers(2), "abc"), (settings.servers(2), "5")]  # the launch: 1 model rank, 1 server


def test_bad_settings_end_the_launch_at_once_with_the_servers_line(cmaq: Path, tmp_path: Path) -> None:
    """The C client refuses a bad value in the line the server's rule gives (the same rule: a C copy of
    climio.core.settings), tells the server, which ends quietly, and returns it from climio_init: one line,
    within seconds, nothing written."""
    for setting, value in BAD_SETTINGS:
        job = launch([str(cmaq), str(tmp_path / "o.nc"), *SMALL], 1, env={setting.name: value})
        status, lines, seconds = ended(job)
        assert (status != 0, lines) == (True, [f"cmaq_mockup: {refusal(setting, value)}"]), (setting.name, value)
        assert seconds < SOON, (setting.name, value, seconds)
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------------------------
# A server that refuses its own options, or gets no model
# --------------------------------------------------------------------------------------------------------------

def test_a_server_that_refuses_its_options_still_answers_the_hello(cmaq: Path, tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text("{}")
    cases = {"/dev/full": "--trace '/dev/full' exists and is not a regular file: choose another path",
             str(tmp_path): f"--trace '{tmp_path}' is a directory",
             str(tmp_path / "no" / "t.json"): f"--trace directory '{tmp_path / 'no'}' does not exist",
             str(tmp_path / "old.json"): f"'{tmp_path / 'old.json'}' exists"}
    for k, (trace, words) in enumerate(cases.items()):
        for nmodel in (1, 2) if k == 0 else (1,):
            job = launch([str(cmaq), str(tmp_path / "o.nc"), *SMALL[:1], f"grid={nmodel}x1", *SMALL[2:]], nmodel,
                         ("--trace", trace))
            status, lines, seconds = ended(job)
            assert status != 0 and seconds < SOON, (trace, nmodel, status, seconds)
            assert lines and all(line == lines[0] for line in lines), (trace, lines)  # the one line, per model rank
            # each model rank says it, but MPI_Abort of the first may end the others before they do
            assert 1 <= len(lines) <= nmodel and lines[0].startswith("cmaq_mockup: ") and words in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]
    assert (tmp_path / "old.json").read_text() == "{}"


def test_a_server_without_a_model_ends_the_job(tmp_path: Path) -> None:
    idle = [sys.executable, "-c", "from mpi4py import MPI; import time; time.sleep(120)"]
    status, lines, seconds = ended(launch(idle, 1, env={"CLIMIO_SERVE_TIMEOUT": "2"}))
    assert status != 0 and seconds < SOON, (status, seconds)
    assert lines == ["climio: error: climio serve: no model connected within 2 s (CLIMIO_SERVE_TIMEOUT): the model "
                     "calls climio_init_intracomm or climio.serve.client.connect as the other application of this "
                     "launch"]


# --------------------------------------------------------------------------------------------------------------
# Stops mid-write
# --------------------------------------------------------------------------------------------------------------

def written(folder: Path) -> int:
    """Bytes in the server's temporary file so far."""
    return sum((folder / name).stat().st_size for name in temporaries(folder))


def start_writing(cmaq: Path, out: Path, **kw: object) -> subprocess.Popen[str]:
    """A long served write to ``out``, two steps into the file (past the first step's one-off work: the plans,
    and compiling their kernels where the cache is cold)."""
    job = launch([str(cmaq), str(out), *LONG], 2, **kw)  # type: ignore[arg-type]
    deadline = time.monotonic() + 60
    while written(out.parent) < 8e6:  # a step is 3.84 MB
        assert job.poll() is None and time.monotonic() < deadline, job.communicate()
        time.sleep(0.05)
    return job


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_to_mpiexec_removes_the_servers_file(cmaq: Path, tmp_path: Path, signum: int) -> None:
    """What Slurm and PBS send at the time limit, and Ctrl-C: one line, the temporary gone, the old file kept."""
    out = tmp_path / "o.nc"
    out.write_bytes(b"an older output")
    job = start_writing(cmaq, out, env=GRACE)
    job.send_signal(signum)
    status, lines, seconds = ended(job)
    assert status != 0 and seconds < SOON, (status, seconds)
    # mpiexec passes either on to its ranks as SIGTERM
    assert lines == ["climio: stopped by SIGTERM; unfinished output removed"]
    assert temporaries(tmp_path) == [] and out.read_bytes() == b"an older output"


@pytest.mark.parametrize("victim", ["mpiexec", "server", "model"])
def test_what_a_kill_leaves_the_next_run_removes(cmaq: Path, tmp_path: Path, victim: str) -> None:
    """SIGKILL leaves the server's temporary file (nothing can run then); the job ends at once all the same, and
    the next climio run on the machine, whatever it writes and where, removes the file and says so in one line."""
    out = tmp_path / "o.nc"
    out.write_bytes(b"an older output")
    job = start_writing(cmaq, out)
    if victim == "mpiexec":
        job.kill()
    else:
        pattern = "climio serve$" if victim == "server" else f"^{cmaq} {out}"
        pids = subprocess.run(["pgrep", "-s", str(job.pid), "-f", pattern], capture_output=True, text=True)
        os.kill(int(pids.stdout.split()[0]), signal.SIGKILL)
    status, lines, seconds = ended(job)
    assert status != 0 and seconds < SOON, (status, seconds)
    assert len(lines) <= 1, lines  # nothing speaks for a SIGKILLed process but Open MPI (the model may)
    deadline = time.monotonic() + SOON  # ranks whose launcher was killed end by themselves, soon after
    while subprocess.run(["pgrep", "-s", str(job.pid)], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, "ranks outlived their launcher"
        time.sleep(0.2)
    nothing = subprocess.run(climio_argv("info"), capture_output=True, text=True, timeout=120)
    left = [line for line in nothing.stderr.splitlines() if "left by" in line]
    assert temporaries(tmp_path) == [] and out.read_bytes() == b"an older output"
    assert len(left) <= 1 and all(re.fullmatch(r"climio: removed 1 temporary file (and 1 temporary folder )?left "
                                               r"by a stopped run \(pid \d+\)", line) for line in left), left


def test_a_dead_model_rank_is_named_by_the_server(cmaq: Path, tmp_path: Path) -> None:
    """Under --enable-recovery the job outlives a killed model rank: the server, waiting for that rank while the
    other went on, names it (not the live server) and ends the job; nothing is published."""
    out = tmp_path / "o.nc"
    job = start_writing(cmaq, out, recovery=True, env={"CLIMIO_SERVE_TIMEOUT": "6"})
    ranks = subprocess.run(["pgrep", "-s", str(job.pid), "-f", f"^{cmaq} {out}"], capture_output=True,
                           text=True).stdout.split()
    assert len(ranks) == 2, ranks
    os.kill(min(int(r) for r in ranks), signal.SIGKILL)  # the first started: model rank 0
    _, lines, seconds = ended(job)  # (under --enable-recovery Open MPI's mpiexec exits 0 after an MPI_Abort)
    assert seconds < SOON, (seconds, lines)
    server = [line for line in lines if "climio serve" in line]
    named = r"model rank 0 (sent nothing for 3 s|stopped in the middle of a message).* died or hangs"
    assert len(server) == 1 and re.search(named, server[0]), lines
    assert temporaries(tmp_path) == [] and not out.exists()
