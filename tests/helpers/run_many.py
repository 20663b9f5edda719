"""Run many ``climio`` command lines in one process (plain or under mpiexec): one MPI start-up for a whole table
of refusals. Reads a JSON list of argument lists from argv[1]; rank 0 writes a JSON list of
``{"status": N, "stderr": "..."}`` to argv[2]. A case that ends the process (an abort) ends the table: the test
then finds fewer results than cases."""

from __future__ import annotations

import io
import json
import sys

from climio import cli


def main() -> None:
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    results = []
    for argv in cases:
        captured, sys.stderr = io.StringIO(), io.StringIO()
        try:
            cli.main(argv)
            status = 0
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 1
        finally:
            captured, sys.stderr = sys.stderr, sys.__stderr__
        results.append({"status": status, "stderr": captured.getvalue()})
    from mpi4py import MPI

    if MPI.COMM_WORLD.Get_rank() == 0:
        with open(sys.argv[2], "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
