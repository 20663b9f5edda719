"""Run a table of ``climio`` command lines in one process (plain, or under mpiexec: one MPI start-up for the
whole table), each case captured as if it had been a process of its own.

Test side::

    from climio_batch import run_table
    results = run_table([["subset", "-v", "pr", IN, OUT], ...], nranks=2, workdir=tmp)
    results[k].returncode, results[k].stdout, results[k].stderr   # like subprocess.CompletedProcess

Process side (``python climio_batch.py CASES.json RESULTS.jsonl``): every rank runs every case through
``climio.cli.main`` with its file descriptors 1 and 2 sent to files of its own (so that what libraries print
is caught too) and a fresh trace log; rank 0 appends one JSON line per case, with every rank's output joined in
rank order (as mpiexec joins them) and the exit status (``"ranks disagree: [...]"`` when the ranks' differ).

A case that ends the process (MPI_Abort, a crash) or hangs ends the launch: that case gets returncode
``ABORTED`` (no exit status can equal it) and an stderr that says what happened, so a test of it fails
clearly; the cases after it run in a fresh launch. With ``aborts=True`` (for tables whose cases may
legitimately end the job, such as hostile inputs) an aborted case gets instead what a launch of its own would
have given: the launch's exit status, and the case's own output followed by the launcher's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

ABORTED = -1000  # no process exit status: a test checking any real status fails on it
HERE = Path(__file__).resolve()


@dataclass
class Result:
    """What one case gave, shaped like ``subprocess.CompletedProcess``."""

    args: list[str]
    returncode: int | str
    stdout: str
    stderr: str


# ------------------------------------------------------------------------------------------------ process side

@contextmanager
def descriptors_to(out: BinaryIO, err: BinaryIO) -> Iterator[None]:
    """File descriptors 1 and 2 into ``out`` and ``err`` for the block, so that what libraries print is caught
    too; restored afterwards, whatever happened."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def _case(argv: list[str], rank: int, where: str, index: int) -> tuple[int | str, str, str]:
    """Run one command line with fds 1 and 2 in files of this rank's own; (status, stdout, stderr)."""
    import traceback

    from climio import cli
    from climio.core import trace

    trace.reset()
    paths = [os.path.join(where, f"case{index}.rank{rank}.{name}") for name in ("out", "err")]
    status: int | str
    with open(paths[0], "wb") as out, open(paths[1], "wb") as err, descriptors_to(out, err):
        try:
            cli.main(list(argv))
            status = 0
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if isinstance(stop.code, str):
                sys.stderr.write(stop.code + "\n")
        except BaseException:  # noqa: BLE001 - recorded: the test fails on it
            status = "exception"
            sys.stderr.write(traceback.format_exc())
    texts = [Path(p).read_text(errors="replace") for p in paths]
    for p in paths:
        os.unlink(p)
    return status, texts[0], texts[1]


def _layer(argv: list[str]) -> str:
    """The MPI-IO layer a command line asks for (``--mpi-io``; subset, gen and eva default to OMPIO)."""
    for k, arg in enumerate(argv):
        if arg == "--mpi-io" and k + 1 < len(argv):
            return "ompio" if argv[k + 1] == "auto" else argv[k + 1]
        if arg.startswith("--mpi-io="):
            return "ompio" if arg.endswith("=auto") else arg.split("=", 1)[1]
    return "ompio"


def main() -> None:
    cases = json.loads(Path(sys.argv[1]).read_text())
    results_path, where = sys.argv[2], sys.argv[3]
    from climio.core import mpi

    # MPI starts once for the table, with the MPI-IO layer its cases choose (each case would choose it before MPI
    # starts): a table mixing layers could not be run faithfully (Batch puts each layer in a table of its own)
    layers = {_layer(argv) for argv in cases}
    if len(layers) > 1:
        raise SystemExit(f"climio_batch: the cases ask for different MPI-IO layers {sorted(layers)}")
    comm = None
    if mpi.launched():
        mpi.choose_mpi_io(layers.pop() if layers else "ompio")
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    rank = comm.Get_rank() if comm is not None else 0
    out = open(results_path, "a") if rank == 0 else None
    for index, argv in enumerate(cases):
        if out is not None:
            out.write(json.dumps({"start": index}) + "\n")
            out.flush()
        status, stdout, stderr = _case(argv, rank, where, index)
        gathered = comm.gather((status, stdout, stderr), root=0) if comm is not None else [(status, stdout, stderr)]
        if out is not None:
            statuses = [g[0] for g in gathered]
            joined = statuses[0] if len(set(map(str, statuses))) == 1 else f"ranks disagree: {statuses}"
            out.write(json.dumps({"index": index, "status": joined, "stdout": "".join(g[1] for g in gathered),
                                  "stderr": "".join(g[2] for g in gathered)}) + "\n")
            out.flush()
    if out is not None:
        out.write(json.dumps({"end": True}) + "\n")
        out.close()


# ------------------------------------------------------------------------------------------------ test side

def _records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:  # a line being written
            break
    return out


def run_table(cases: list[list[str]], nranks: int | None, workdir: str | Path, timeout: float = 180,
              aborts: bool = False, env_extra: dict[str, str] | None = None) -> list[Result]:
    """Every case's Result, in order. ``nranks`` None: one plain process; else under mpiexec. Each case has a
    timeout of its own (``timeout`` seconds from its start; the launch's start-up counts into the first one's):
    a case that hangs or ends its launch is reported as described above, and the cases after it run in a new
    launch."""
    from climio.core.mpi import mpiexec_command

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cases = [[str(a) for a in argv] for argv in cases]
    results: list[Result | None] = [None] * len(cases)
    first, launch = 0, 0
    while first < len(cases):
        launch += 1
        table, answers = workdir / f"cases-{launch}.json", workdir / f"results-{launch}.jsonl"
        capture = workdir / f"capture-{launch}"
        capture.mkdir()
        table.write_text(json.dumps(cases[first:]))
        argv = [sys.executable, str(HERE), str(table), str(answers), str(capture)]
        env = dict(os.environ)
        if nranks is not None:
            argv, env = mpiexec_command(nranks, argv)
        env.update(env_extra or {})
        logs = [workdir / f"launch-{launch}.{name}" for name in ("stdout", "stderr")]
        with open(logs[0], "w") as out_log, open(logs[1], "w") as err_log:
            proc = subprocess.Popen(argv, env=env, stdout=out_log, stderr=err_log, text=True, start_new_session=True)
            since, seen, hung = time.time(), -1, False
            while proc.poll() is None:
                try:
                    proc.wait(timeout=0.05)
                except subprocess.TimeoutExpired:
                    pass
                records = _records(answers)
                if len(records) != seen:
                    seen, since = len(records), time.time()
                elif time.time() - since > timeout:  # no case started or ended for that long: a hang
                    hung = True
                    try:
                        os.killpg(proc.pid, 9)
                    except ProcessLookupError:
                        pass
                    proc.wait()
        status = proc.returncode
        stdout, stderr = (p.read_text(errors="replace") for p in logs)
        how = f"was killed: no progress for {timeout:.0f} s (a hang?)" if hung else f"ended with status {status}"
        running = None
        records = _records(answers)
        for record in records:
            if "start" in record:
                running = first + record["start"]
            elif "index" in record:
                k = first + record["index"]
                results[k] = Result(cases[k], record["status"], record["stdout"], record["stderr"])
                running = None
        if any("end" in r for r in records) and status == 0 and not hung:
            break
        if running is None:  # the launch failed before its first case or after its last one
            note = (f"[climio_batch: the launch ({' '.join(argv[:4])} ...) {how} outside any case]\n"
                    f"stdout:\n{stdout[-3000:]}\nstderr:\n{stderr[-5000:]}")
            for k in range(first, len(cases)):
                if results[k] is None:
                    results[k] = Result(cases[k], ABORTED, "", note)
                else:
                    results[k].stderr += "\n" + note
                    results[k].returncode = ABORTED
            break
        # the case that was running ended the launch: what its ranks had printed, then the launcher's output
        own_out, own_err = ("".join(p.read_text(errors="replace")
                                    for p in sorted(capture.glob(f"case{running - first}.rank*.{name}")))
                            for name in ("out", "err"))
        if aborts and not hung:
            results[running] = Result(cases[running], status, own_out + stdout, own_err + stderr)
        else:
            results[running] = Result(cases[running], ABORTED, own_out + stdout,
                                      f"[climio_batch: this case ended its launch, which {how}]\n{own_err}{stderr}")
        first = running + 1
    return [r if r is not None else Result(cases[k], ABORTED, "", "[climio_batch: never run]")
            for k, r in enumerate(results)]


class Preparers(list):
    """A test module's ``prepare_*`` functions (each adds cases to a Batch, or to a wrapper of one such as
    SubsetRuns), registered by decorating them with the instance (``prepare =
    Preparers()``, then ``@prepare``); :meth:`Batch.prepared` runs them all into one batch."""

    def __call__(self, fn: Callable[..., None]) -> Callable[..., None]:
        self.append(fn)
        return fn


class Batch:
    """Cases registered by name, each with its rank count (None: a plain process) and a directory of its own
    (``folder(name)``); ``result(name)`` runs every registered case at once on first use, one table per rank
    count and MPI-IO layer, the tables in the order they were first registered (so a case may read what a case
    of an earlier table wrote)."""

    @classmethod
    def prepared(cls, workdir: str | Path, preparers: Iterable[Callable[[Batch], None]]) -> Batch:
        """A batch with every case the test module's ``prepare_*`` functions add (its module-scoped fixture)."""
        batch = cls(workdir)
        for prepare in preparers:
            prepare(batch)
        return batch

    def __init__(self, workdir: str | Path, timeout: float = 180, aborts: bool = False) -> None:
        self.workdir, self.timeout, self.aborts = Path(workdir), timeout, aborts
        self.cases: dict[str, tuple[list[str], int | None]] = {}
        self.results: dict[str, Result] | None = None

    def folder(self, name: str) -> Path:
        """The case's own directory (for its outputs; a leftover check looks only at it)."""
        path = self.workdir / "cases" / name.replace("/", "_")
        path.mkdir(parents=True, exist_ok=True)
        return path

    def add(self, name: str, argv: list[str], nranks: int | None = None) -> Path:
        assert self.results is None, "every case must be added before the first result"
        assert name not in self.cases, f"case {name!r} added twice"
        self.cases[name] = ([str(a) for a in argv], nranks)
        return self.folder(name)

    def result(self, name: str) -> Result:
        if self.results is None:
            self.results = {}
            order: list[tuple[int | None, str]] = []
            for argv, nranks in self.cases.values():
                if (nranks, _layer(argv)) not in order:
                    order.append((nranks, _layer(argv)))
            for nranks, layer in order:
                names = [n for n, (argv, r) in self.cases.items() if (r, _layer(argv)) == (nranks, layer)]
                table = [self.cases[n][0] for n in names]
                done = run_table(table, nranks, self.workdir / f"batch-n{nranks}-{layer}", self.timeout, self.aborts)
                self.results.update(zip(names, done))
        return self.results[name]


class SubsetRuns:
    """A batch of ``climio subset`` runs: each case writes OUT into a directory of its own; a test makes its inputs
    in ``folder(name)``."""

    def __init__(self, batch: Batch) -> None:
        self.batch = batch

    def subset(self, name: str, *args: object, nranks: int | None = None, out: str = "out.nc") -> Path:
        """Add ``climio subset ARGS OUT`` (a plain process when nranks is None, else under mpiexec); returns OUT."""
        path = self.out(name, out)
        self.batch.add(name, ["subset", *map(str, args), str(path)], nranks)
        return path

    def out(self, name: str, out: str = "out.nc") -> Path:
        return self.batch.folder(name) / out

    def result(self, name: str) -> Result:
        return self.batch.result(name)

    def folder(self, name: str) -> Path:
        return self.batch.folder(f"inputs-{name}")


if __name__ == "__main__":
    main()
