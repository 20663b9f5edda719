"""Many ``climio`` command lines in one process, plainly or under mpiexec, for the eva tests: one start-up (MPI,
numba and its cached kernels) for a whole table of runs instead of one per run.

As a script (``python eva_batch.py CASES RESULTS``): reads a JSON list of argument lists from CASES and runs
each through ``climio.cli.main`` in turn, as ``python -m climio`` would. Every rank appends one JSON line per
case it finished, ``{"case": i, "status": N, "stdout": ..., "stderr": ...}`` (what the case printed on that
rank), to ``RESULTS.<rank>`` as soon as the case ends, so the cases before one that ends the process (an abort)
keep their outcomes. What a case writes to stderr also reaches the process's own stderr, after a line naming the
case, so an abort's message says which case it was.

As a module: :class:`Batch` collects cases under keys, runs them in one process (with a timeout) the first time
an outcome is asked for, and gives each key its :class:`Outcome`: the status (the first rank's non-zero, as
mpiexec reports it) and every rank's stdout and stderr joined, as a separate run's would be. A case the process
never finished fails its test with the process's status and stderr; so does a process that ended badly after its
last case.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).resolve()


class _Tee(io.TextIOBase):
    """Keeps what is written and passes it on to ``through``."""

    def __init__(self, through: io.TextIOBase) -> None:
        self.kept = io.StringIO()
        self.through = through

    def write(self, text: str) -> int:
        self.kept.write(text)
        self.through.write(text)
        return len(text)

    def flush(self) -> None:
        self.through.flush()


def main() -> None:
    from climio import cli
    from climio.core import mpi

    with open(sys.argv[1]) as f:
        cases = json.load(f)
    rank = mpi.launcher_rank()
    with open(f"{sys.argv[2]}.{rank}", "a") as results:
        for i, argv in enumerate(cases):
            if rank == 0:
                sys.__stderr__.write(f"eva_batch: case {i}: climio {' '.join(argv)}\n")
                sys.__stderr__.flush()
            out, err = io.StringIO(), _Tee(sys.__stderr__)
            sys.stdout, sys.stderr = out, err
            try:
                cli.main(argv)
                status = 0
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
            finally:
                sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
            results.write(json.dumps({"case": i, "status": status, "stdout": out.getvalue(),
                                      "stderr": err.kept.getvalue()}) + "\n")
            results.flush()


@dataclass(frozen=True)
class Outcome:
    """One case's end, read like ``subprocess.CompletedProcess`` (``returncode``, ``stdout``, ``stderr``)."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


class Batch:
    """Cases run together, each under its key, at one rank count (``None``: a plain process)."""

    def __init__(self, directory: Path, nranks: int | None, timeout: float | None = None) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.nranks = nranks
        self.timeout = timeout
        self.cases: dict[Hashable, list[str]] = {}
        self.outcomes: dict[Hashable, Outcome] | None = None
        self.process: subprocess.CompletedProcess[str] | None = None

    def add(self, key: Hashable, *argv: object) -> None:
        assert self.outcomes is None, "the batch has run already"
        assert key not in self.cases, key
        self.cases[key] = [str(a) for a in argv]

    def run(self) -> None:
        import pytest
        from conftest import run

        if self.outcomes is not None:
            return
        keys = list(self.cases)
        table, results = self.directory / "eva-batch-cases.json", self.directory / "eva-batch-results"
        assert not table.exists(), f"{table}: one batch per directory"
        table.write_text(json.dumps([self.cases[k] for k in keys]))
        timeout = self.timeout if self.timeout is not None else min(540, 120 + 20 * len(keys))
        self.process = done = run([sys.executable, str(RUNNER), str(table), str(results)], self.nranks,
                                  timeout=timeout)
        ranks = 1 if self.nranks is None else self.nranks
        per_rank = []
        for r in range(ranks):
            path = Path(f"{results}.{r}")
            lines = path.read_text().splitlines() if path.exists() else []
            per_rank.append({(entry := json.loads(line))["case"]: entry for line in lines})
        outcomes = {}
        for i, key in enumerate(keys):
            ends = [rank.get(i) for rank in per_rank]
            if any(end is None for end in ends):
                continue
            status = next((end["status"] for end in ends if end["status"] != 0), 0)
            outcomes[key] = Outcome(self.cases[key], status, "".join(end["stdout"] for end in ends),
                                    "".join(end["stderr"] for end in ends))
        self.outcomes = outcomes
        if done.returncode != 0 and len(outcomes) == len(keys):
            pytest.fail(f"the batch of {len(keys)} climio runs ended with status {done.returncode} after its last "
                        f"case:\n{done.stderr[-4000:]}")

    def __getitem__(self, key: Hashable) -> Outcome:
        import pytest

        self.run()
        assert self.outcomes is not None
        if key not in self.outcomes:
            done = self.process
            assert done is not None
            pytest.fail(f"climio {' '.join(self.cases[key])}: never finished: the batch process "
                        f"({self.nranks or 1} rank(s)) ended with status {done.returncode} before it\n"
                        f"{done.stderr[-6000:]}")
        return self.outcomes[key]


class Runs:
    """Cases at several rank counts: each rank count's cases in one process (a :class:`Batch`), the rank counts
    one after another in the order they were first named, each case in a directory of its own."""

    def __init__(self, root: Path, timeout: float | None = None) -> None:
        self.root = Path(root)
        self.timeout = timeout
        self.batches: dict[int | None, Batch] = {}
        self.where: dict[Hashable, int | None] = {}
        self.dirs = 0

    def case_dir(self) -> Path:
        """A new empty directory for one case's files."""
        self.dirs += 1
        path = self.root / f"case{self.dirs}"
        path.mkdir(parents=True)
        return path

    def add(self, key: Hashable, *argv: object, nranks: int | None = None) -> None:
        assert key not in self.where, key
        if nranks not in self.batches:
            self.batches[nranks] = Batch(self.root / f"batch-{nranks or 'plain'}", nranks, self.timeout)
        self.batches[nranks].add(key, *argv)
        self.where[key] = nranks

    def run(self) -> Runs:
        for batch in self.batches.values():
            batch.run()
        return self

    def __getitem__(self, key: Hashable) -> Outcome:
        return self.batches[self.where[key]][key]


if __name__ == "__main__":
    main()


class Made:
    """A test module's runs, made once: each one's outcome and directory, and its output as the module's
    ``read`` gives it."""

    def __init__(self, runs: Runs, dirs: dict[Hashable, Path], read: Callable[[Path], dict[str, Any]]) -> None:
        self.runs, self.dirs, self._read = runs, dirs, read

    def outcome(self, key: Hashable) -> Outcome:
        return self.runs[key]

    def dir(self, key: Hashable) -> Path:
        return self.dirs[key]

    def result(self, key: Hashable, out: str = "eva.nc") -> dict[str, Any]:
        """The output of a run that must have succeeded."""
        done = self.runs[key]
        assert done.returncode == 0, done.stderr
        return self._read(self.dirs[key] / out)

