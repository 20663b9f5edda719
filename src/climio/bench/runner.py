"""Start a climio command on N ranks from a benchmark driver, and report its failure in one line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

from climio.core import mpi
from climio.errors import ClimioError


def run_ranks(nranks: int, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """``mpiexec -n nranks python -m climio ARGS``; a ClimioError with the job's own message if it fails."""
    command, env = mpi.mpiexec_command(nranks, [sys.executable, "-m", "climio", *args])
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        said = [line for line in result.stderr.splitlines() if line.startswith("climio:")]
        raise ClimioError(f"{' '.join(args[:2])} on {nranks} ranks failed (exit {result.returncode}): "
                          f"{said[-1] if said else result.stderr.strip()[-500:]}", collective=True)
    return result
