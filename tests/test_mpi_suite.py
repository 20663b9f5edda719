"""Runs tests/mpi under mpiexec at 1, 2, 3, 4 and 6 ranks (oversubscribed on small machines)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import run

SUITE = Path(__file__).parent / "mpi"


@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 6])
def test_mpi_suite(nranks: int) -> None:
    result = run([sys.executable, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider", "--timeout", "120",
                  "-o", "addopts=", str(SUITE)], nranks=nranks, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and " failed" not in result.stdout


@pytest.mark.parametrize("nranks", [4, 6])
def test_model_output_with_romio(nranks: int) -> None:
    """climio picks ROMIO for model output (OMPIO elsewhere): the files must be the same with either layer."""
    result = run([sys.executable, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider", "--timeout", "120",
                  "-o", "addopts=", str(SUITE / "test_model_output.py")], nranks=nranks, timeout=600,
                 env_extra={"OMPI_MCA_io": "^ompio"})
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and " failed" not in result.stdout
