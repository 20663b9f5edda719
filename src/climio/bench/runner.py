"""The benchmarks' one driver: what every ``climio bench`` suite does around its own measurement.

A driver runs as a plain process and starts ``climio bench SUITE ... --rows-json FILE`` under its own mpiexec
for each size (:func:`rows_per_size`); the worker measures and saves its rows (:func:`save_rows`). Around them:
the checks of the options every suite takes, a scratch directory removed afterwards, runs timed from the shell
or by their trace, medians per key over repetitions, and the results written to ``--out`` as JSON and CSV.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from climio.core import collectives, mpi, stops
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI


def run_job(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a launched job (an ``mpiexec`` command line) to its end, its output captured. A stop of this
    driver is passed on to the job (:func:`climio.core.stops.stop_children`), and a job that ended because of
    it is not reported as failed: the stop's own line ends the driver."""
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as job:
        stops.CHILDREN.add(job)
        try:
            stdout, stderr = job.communicate()
        finally:
            stops.CHILDREN.discard(job)
    if job.returncode != 0:
        stops.hold_if_stopping()
    return subprocess.CompletedProcess(command, job.returncode, stdout, stderr)


def run_ranks(nranks: int, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """``mpiexec -n nranks python -m climio ARGS``; a ClimioError with the job's own message if it fails."""
    command, env = mpi.mpiexec_command(nranks, [sys.executable, "-m", "climio", *args])
    result = run_job(command, collectives.preload(env))
    if result.returncode != 0:
        said = [line for line in result.stderr.splitlines() if line.startswith("climio:")]
        why = said[-1] if said else (result.stderr.strip() or result.stdout.strip())[-500:]
        raise ClimioError(f"{' '.join(args[:2])} on {nranks} ranks failed (exit {result.returncode}): {why}",
                          collective=True)
    return result


@contextmanager
def busy_processes(count: int) -> Iterator[None]:
    """``count`` background processes that each keep a core busy while the block runs: the load a rank meets
    on a shared node (another job's thread, a daemon). Each ends by itself once this process is gone."""
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"
    spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(count)]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def rows_from_ranks(nranks: int, args: Sequence[str]) -> list[dict[str, Any]]:
    """Run ``climio ARGS --rows-json FILE`` on ``nranks`` ranks and return the rows its rank 0 saved."""
    with tempfile.TemporaryDirectory(prefix="climio-bench-rows-") as tmp:
        path = os.path.join(tmp, "rows.json")
        run_ranks(nranks, [*args, "--rows-json", path])
        with open(path) as f:
            return json.load(f)


def rows_per_size(suite: str, runs: Iterable[tuple[str, int, list[str]]]) -> list[dict[str, Any]]:
    """The driver's loop: for each (what, ranks, arguments), say what runs and collect the rows of
    ``climio bench SUITE ARGUMENTS`` on that many ranks."""
    rows: list[dict[str, Any]] = []
    for what, nranks, args in runs:
        print(f"bench {suite}: {what} ...", flush=True)
        rows += rows_from_ranks(nranks, ["bench", suite, *args])
    return rows


def repeated(reps: int, measure: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The worker's repetitions: the rows of ``measure`` run ``reps`` times, each tagged with its ``rep``."""
    return [{**row, "rep": rep} for rep in range(reps) for row in measure()]


def save_rows(comm: MPI.Comm, rows: list[dict[str, Any]], path: str) -> None:
    """The worker's side of :func:`rows_from_ranks`: rank 0 saves the rows."""
    if comm.Get_rank() == 0:
        with open(path, "w") as f:
            json.dump(rows, f)


def require_plain_process(comm: MPI.Comm, command: str) -> None:
    """Drivers start their own mpiexec runs, so they must not run under one."""
    if comm.Get_size() > 1:
        raise ClimioError(f"climio bench {command} starts its own mpiexec runs: run it as a plain process",
                          collective=True)


def markdown_table(columns: Sequence[tuple[str, str]], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table for the README: ``columns`` are (header, "l" or "r" alignment), ``rows`` cell texts."""
    lines = ["| " + " | ".join(header for header, _ in columns) + " |",
             "|" + "|".join("---:" if align == "r" else "---" for _, align in columns) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def check_directory(path: str, option: str) -> None:
    """A benchmark's working directory must exist and be writable (one line, exit 2, otherwise)."""
    if not os.path.isdir(path):
        raise ClimioError(f"{option}: directory '{path}' does not exist: create it first")
    if not os.access(path, os.W_OK):
        raise ClimioError(f"{option}: directory '{path}' is not writable")


def make_directory(path: str) -> None:
    """Create a results directory (``--out``), or say in one line why it cannot be."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as err:
        raise ClimioError(f"--out: cannot create directory '{path}': {err.strerror}") from err


def check_reps(reps: int) -> None:
    """Every suite reports medians over ``--reps`` repetitions: at least one."""
    if reps < 1:
        raise ClimioError(f"--reps must be at least 1, got {reps}", collective=True)


@contextmanager
def scratch_directory(comm: MPI.Comm, suite: str, directory: str | None) -> Iterator[str]:
    """A fresh directory for a run's files inside ``directory`` (checked first; None: the system's temporary
    directory), removed with all in it afterwards; collective: rank 0 makes and removes it."""
    if directory is not None:
        mpi.agree(comm, lambda: check_directory(directory, "--dir"))
    root = comm.Get_rank() == 0
    path = comm.bcast(tempfile.mkdtemp(prefix=f"climio-bench-{suite}-", dir=directory) if root else None)
    try:
        yield path
    finally:
        comm.Barrier()
        if root:
            shutil.rmtree(path, ignore_errors=True)


def timed(suite: str, argv: Sequence[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one command from the shell, or a one-line error with the end of what it said."""
    started = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise ClimioError(f"bench {suite}: {' '.join(argv[:4])} ... failed: {result.stderr.strip()[-300:]}",
                          collective=True)
    return elapsed


def traced_run(nranks: int, args: Sequence[str], workdir: str) -> tuple[float, dict[str, Any]]:
    """``climio --trace T ARGS`` on ``nranks`` ranks: its wall seconds from the shell, and its trace."""
    trace_file = os.path.join(workdir, "trace.json")
    started = time.perf_counter()
    run_ranks(nranks, ["--trace", trace_file, *args])
    wall = time.perf_counter() - started
    with open(trace_file) as f:
        return wall, json.load(f)


def grouped(rows: Iterable[dict[str, Any]], *fields: str) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """The rows by their values of ``fields``, in the order the keys first come: the repetitions of each case."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row.get(f) for f in fields), []).append(row)
    return groups


def median(rows: Iterable[dict[str, Any]], field: str) -> float:
    """The median of one field over rows (the repetitions of a case)."""
    return statistics.median(row[field] for row in rows)


def save_results(out: str, name: str, report: dict[str, Any], table: Sequence[dict[str, Any]] = (),
                 besides: Sequence[str] = ()) -> None:
    """``OUT/NAME.json`` (the report) and, given a table, ``OUT/NAME.csv`` (a column per key any row has); one
    line says where they are, with ``besides``, files the suite wrote there itself."""
    make_directory(out)
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(report, f, indent=1)
    names = [f"{name}.json"]
    if table:
        with open(os.path.join(out, f"{name}.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for row in table for k in row)))
            writer.writeheader()
            writer.writerows(table)
        names.append(f"{name}.csv")
    names += besides
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    print(f"results in {out}/{listed}")
