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
