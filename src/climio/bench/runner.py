"""Start a climio command on N ranks from a benchmark driver, and report its failure in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from climio.core import mpi
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI


def run_ranks(nranks: int, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """``mpiexec -n nranks python -m climio ARGS``; a ClimioError with the job's own message if it fails."""
    command, env = mpi.mpiexec_command(nranks, [sys.executable, "-m", "climio", *args])
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        said = [line for line in result.stderr.splitlines() if line.startswith("climio:")]
        raise ClimioError(f"{' '.join(args[:2])} on {nranks} ranks failed (exit {result.returncode}): "
                          f"{said[-1] if said else result.stderr.strip()[-500:]}", collective=True)
    return result


def rows_from_ranks(nranks: int, args: Sequence[str]) -> list[dict[str, Any]]:
    """Run ``climio ARGS --rows-json FILE`` on ``nranks`` ranks and return the rows its rank 0 saved."""
    with tempfile.TemporaryDirectory(prefix="climio-bench-rows-") as tmp:
        path = os.path.join(tmp, "rows.json")
        run_ranks(nranks, [*args, "--rows-json", path])
        with open(path) as f:
            return json.load(f)


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
