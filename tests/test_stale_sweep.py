"""After a kill (SIGKILL: nothing of the process runs), the next climio run on the machine removes the temporary files
and Open MPI session directories the killed run left, wherever it wrote, and says so in one line; a running
process's are never touched. Each test has a registry and a temporary folder of its own, so that other runs on
the machine neither see its leftovers nor add theirs."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import climio_argv, leftovers, run

BIG = ("--shape", "4000,192,288", "--mode", "cdf5")  # 0.9 GB: seconds of writing, stopped long before its end
HOST = socket.gethostname().split(".")[0]

# ``climio --trace`` whose trace is being written when the disk stalls (the run is then killed): the trace's
# temporary file exists only while it is written, a moment too short to kill a run in otherwise.
STALLED_TRACE = """
import json, sys, time
from climio.core import trace
from climio.__main__ import main

class StalledDisk:
    @staticmethod
    def dump(report, f, **options):
        json.dump(report, f, **options)
        f.flush()
        time.sleep(60)

trace.json = StalledDisk
main()
"""


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``run/`` (the user's runtime folder, where the registry goes) and ``tmp/`` (the temporary folder, where
    session directories go) of this test's own, with a folder ``a/``, ``b/`` for outputs."""
    for name, folder in (("XDG_RUNTIME_DIR", "run"), ("TMPDIR", "tmp")):
        (tmp_path / folder).mkdir()
        monkeypatch.setenv(name, str(tmp_path / folder))
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    return tmp_path


def writing(argv: list[str], target: Path) -> subprocess.Popen[bytes]:
    """A climio process, returned once the temporary file of its ``target`` is there."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not any(name.startswith(f".{target.name}.") for name in leftovers(str(target.parent))):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no temporary file for {target}: {proc.communicate()[1].decode()}")
        time.sleep(0.02)
    return proc


def killed(proc: subprocess.Popen[bytes]) -> int:
    proc.kill()
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    return proc.pid


def sessions(machine: Path) -> set[str]:
    return {name for name in os.listdir(machine / "tmp") if name.startswith("climio-ompi-")}


def test_the_next_run_removes_what_killed_runs_left_in_one_line(machine: Path) -> None:
    """Both runs are killed while both run (a run that starts after a kill sweeps what it left)."""
    output = writing(climio_argv("gen", "cmip", str(machine / "a" / "big.nc"), *BIG), machine / "a" / "big.nc")
    trace = writing([sys.executable, "-c", STALLED_TRACE, "--trace", str(machine / "b" / "t.json"), "gen", "cmip",
                     str(machine / "b" / "small.nc"), "--shape", "5,4,6"], machine / "b" / "t.json")
    first, second = killed(output), killed(trace)
    (left,) = leftovers(str(machine / "a"))
    assert left.startswith(f".big.nc.{HOST}.{first}.") and not (machine / "a" / "big.nc").exists()
    (left,) = leftovers(str(machine / "b"))
    assert left.startswith(f".t.json.{HOST}.{second}.") and (machine / "b" / "small.nc").exists()
    assert len(sessions(machine)) == 2  # one for each killed run

    result = run(climio_argv("info"))  # any command, anywhere
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [f"climio: removed 2 temporary files and 2 temporary folders left by "
                                          f"stopped runs (pid {', '.join(map(str, sorted([first, second])))})"]
    assert leftovers(str(machine / "a")) == leftovers(str(machine / "b")) == [] and sessions(machine) == set()
    assert (machine / "b" / "small.nc").exists()  # the output the traced run completed stays
    assert os.listdir(machine / "run" / "climio") == []  # and the sweeping run's own record went at its exit


def test_a_running_process_keeps_its_temporaries(machine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs at once, one of them stopped (SIGSTOP: alive, its file half written), the other killed; the
    sweeping run has two ranks, which sweep together and report once. Without a runtime folder the registry is
    in the temporary folder."""
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    live = writing(climio_argv("gen", "cmip", str(machine / "a" / "big.nc"), *BIG), machine / "a" / "big.nc")
    live.send_signal(signal.SIGSTOP)
    try:
        live_session = sessions(machine)
        dead = killed(writing(climio_argv("gen", "cmip", str(machine / "b" / "big.nc"), *BIG),
                              machine / "b" / "big.nc"))
        result = run(climio_argv("info"), nranks=2)
        assert result.returncode == 0, result.stderr
        said = [line for line in result.stderr.splitlines() if line.startswith("climio")]
        assert said == [f"climio: removed 1 temporary file and 1 temporary folder left by a stopped run (pid {dead})"]
        assert leftovers(str(machine / "b")) == [] and len(leftovers(str(machine / "a"))) == 1
        assert len(live_session) == 1 and sessions(machine) == live_session
    finally:
        killed(live)
    result = run(climio_argv("info"))
    assert result.stderr.splitlines() == [f"climio: removed 1 temporary file and 1 temporary folder left by a "
                                          f"stopped run (pid {live.pid})"]
    assert leftovers(str(machine / "a")) == [] and sessions(machine) == set()
    assert os.listdir(machine / "tmp" / f"climio-{os.getuid()}") == []


def test_a_process_that_reuses_a_stopped_runs_pid_is_not_its_owner(machine: Path) -> None:
    """A record whose process id is now another process's (this test's: alive, but started at another time)
    is swept, but of what it lists only this process id's temporary files and session directories; the
    record of the process that does run, and another host's, are left alone."""
    pid = os.getpid()
    with open(f"/proc/{pid}/stat") as stat:
        started = stat.read().rsplit(")", 1)[1].split()[19]
    registry = machine / "run" / "climio"
    registry.mkdir(mode=0o700)
    files = {name: machine / "a" / name for name in
             (f".out.nc.{HOST}.{pid}.00c0ffee.climio-tmp",  # the stopped run's: removed
              f".out.nc.{HOST}.1.00c0ffee.climio-tmp",  # named for another process
              f".out.nc.elsewhere.{pid}.00c0ffee.climio-tmp",  # named for another host
              "out.nc",  # not a temporary file
              f".live.nc.{HOST}.{pid}.0badf00d.climio-tmp")}  # the running process's
    for path in files.values():
        path.write_bytes(b"x")
    session = machine / "tmp" / "climio-ompi-abcd1234"
    scratch = machine / "tmp" / "climio-subset-abcd1234"  # .climio.subset's, as the registry makes it
    for folder in (session, scratch):
        folder.mkdir()
        (folder / "contact.txt").write_text("x")
    *listed, live = files.values()
    (registry / f"{HOST}.{pid}.1").write_text("".join(f"{p}\n" for p in [*listed, session, scratch, machine / "b"]))
    (registry / f"{HOST}.{pid}.{started}").write_text(f"{live}\n")
    (registry / f"elsewhere.{pid}.1").write_text(f"{live}\n")

    result = run(climio_argv("info"))
    assert result.stderr.splitlines() == [f"climio: removed 1 temporary file and 2 temporary folders left by a "
                                          f"stopped run (pid {pid})"]
    assert sorted(p.name for p in files.values() if not p.exists()) == [f".out.nc.{HOST}.{pid}.00c0ffee.climio-tmp"]
    assert not session.exists() and not scratch.exists() and (machine / "b").is_dir()
    assert sorted(os.listdir(registry)) == sorted([f"{HOST}.{pid}.{started}", f"elsewhere.{pid}.1"])
