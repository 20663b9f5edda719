"""Read a CMIP-like pr file back in parallel (each rank its block of days) and print a summary.

usage: mpiexec -n N python scripts/demo_summary.py FILE
"""

import sys

import numpy as np
from mpi4py import MPI

from climio.core import ncio
from climio.core.decomp import Decomposition

comm = MPI.COMM_WORLD
started = MPI.Wtime()
with ncio.open(sys.argv[1], comm) as ds:
    shape = ds.shape("pr")
    owned = Decomposition.block1d(shape, comm.Get_size()).owned(comm.Get_rank())
    pr = ds.read("pr", owned) * np.float32(86400.0)  # mm/day
    mode = ds.mode.name
seconds = comm.allreduce(MPI.Wtime() - started, op=MPI.MAX)
wet = comm.allreduce(int((pr > 0).sum()))
total = comm.allreduce(float(pr.sum(dtype="f8")))
peak = comm.allreduce(float(pr.max()) if pr.size else 0.0, op=MPI.MAX)
if comm.Get_rank() == 0:
    n = int(np.prod(shape))
    print(f"read back pr{shape} in parallel ({mode}, {comm.Get_size()} ranks): {n * 4 / 1e6:.0f} MB in {seconds:.2f} s "
          f"({n * 4 / 1e6 / seconds:.0f} MB/s)")
    print(f"  wet days {wet / n:.1%}, mean {total / n:.2f} mm/day, wettest day {peak:.0f} mm")
