"""Fixtures for tests that run under ``mpiexec -n N python -m pytest tests/mpi``.

Assertions go through ``assert_all`` (an allreduce first), so every rank passes
or fails a check together and no rank is left waiting in a collective call.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from mpi4py import MPI


@pytest.fixture
def comm() -> MPI.Comm:
    return MPI.COMM_WORLD


@pytest.fixture
def shared_dir(comm: MPI.Comm) -> Iterator[str]:
    """A directory made by rank 0, its name broadcast; removed after a final barrier."""
    path = comm.bcast(tempfile.mkdtemp(prefix="climio-mpitest-") if comm.Get_rank() == 0 else None)
    yield path
    comm.Barrier()
    if comm.Get_rank() == 0:
        shutil.rmtree(path, ignore_errors=True)


def assert_all(comm: MPI.Comm, condition: bool, message: str = "") -> None:
    ok = comm.allreduce(bool(condition), op=MPI.LAND)
    assert ok, f"failed on rank(s) {[r for r, c in enumerate(comm.allgather(bool(condition))) if not c]}: {message}"


def listing(directory: str) -> list[str]:
    return sorted(os.listdir(directory))


# The rank counts tests/test_mpi_suite.py runs this suite at besides 1: 2 and 3, and 4 and 6 (its ROMIO runs' too).
SMALL, LARGE = (2, 3), (4, 6)


def runs_here(comm: MPI.Comm, case: int, large: tuple[int, ...] = LARGE) -> bool:
    """Whether case number ``case`` of a sweep (a write strategy or grid of a test, a random draw, ...) runs at this
    job's rank count: every case at 1 rank and on several ranks at two counts, even cases at 2 and 6, odd ones at 3
    and 4 (``large=(6,)``: 6 for both, for layouts 4 ranks cannot take). So each multi-rank count runs about half of
    a sweep, and each case runs at a power of two and at a multiple of 3, and at one of the ROMIO runs' counts.
    Sweeps number their cases so that neighbouring parameters shift them: every strategy, mode and layout still runs
    at every count, in some combination. At any other count (a run by hand) every case runs."""
    size = comm.Get_size()
    if size == 1 or size not in (*SMALL, *LARGE):
        return True
    return size in (SMALL[case % len(SMALL)], large[(case + 1) % len(large)])
