"""Write several of capi_reference.py's files in one process (one MPI start-up for a whole table of them).

    mpiexec -n N python capi_reference_batch.py CASES.json DONE.txt

CASES.json is a list of argument lists, each as capi_reference.py takes them (``["write_fields", OUT, MODE,
STRATEGY, NSTEPS]`` or ``["cmaq", OUT, DOMAIN, GRID, STRATEGY, MODE, STEPS]``). They are written in order; after
each, once every rank has finished it, rank 0 appends its index to DONE.txt. An exception ends the job (MPI_Abort)
with its traceback: the cases not listed in DONE.txt are then missing, and their tests fail.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import capi_reference  # noqa: E402
from mpi4py import MPI  # noqa: E402


def main() -> None:
    cases = json.loads(Path(sys.argv[1]).read_text())
    comm = MPI.COMM_WORLD
    for index, (what, *args) in enumerate(cases):
        try:
            if what == "write_fields":
                capi_reference.write_fields(args[0], args[1], args[2], int(args[3]))
            else:
                capi_reference.cmaq(args[0], args[1], args[2], args[3], args[4], int(args[5]))
        except BaseException:  # noqa: BLE001 - one rank failing: end them all, with the traceback
            sys.stderr.write(f"case {index} {[what, *args]} failed on rank {comm.Get_rank()}:\n{traceback.format_exc()}")
            sys.stderr.flush()
            comm.Abort(1)
        comm.Barrier()
        if comm.Get_rank() == 0:
            with open(sys.argv[2], "a") as done:
                done.write(f"{index}\n")


if __name__ == "__main__":
    main()
