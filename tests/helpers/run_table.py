"""A table of ``climio`` command lines run through ``helpers/run_many.py``: one process (or one mpiexec) for all of
them instead of one each, so a test file pays Python's and MPI's start-up once. Each case comes back as a
``subprocess.CompletedProcess`` with its exit status and what it wrote to stderr (stdout is not kept: "").

A case that ends the process (an abort) ends the table: the run then fails with fewer results than cases.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

RUN_MANY = Path(__file__).with_name("run_many.py")


def run_table(run: Callable[..., subprocess.CompletedProcess[str]], cases: Sequence[Sequence[str]], directory: Path,
              nranks: int | None = None, timeout: float = 240) -> list[subprocess.CompletedProcess[str]]:
    """Run ``cases`` with ``run`` (conftest.run: plainly, or under mpiexec on ``nranks`` ranks, with a timeout);
    the table and the results are kept in ``directory`` while it runs, then removed."""
    table, results = directory / "run-table-cases.json", directory / "run-table-results.json"
    table.write_text(json.dumps([list(argv) for argv in cases]))
    done = run([sys.executable, str(RUN_MANY), str(table), str(results)], nranks, timeout=timeout)
    assert done.returncode == 0, done.stderr
    outcomes = json.loads(results.read_text())
    table.unlink()
    results.unlink()
    assert len(outcomes) == len(cases), (outcomes, done.stderr)
    return [subprocess.CompletedProcess(list(argv), o["status"], "", o["stderr"]) for argv, o in zip(cases, outcomes)]
