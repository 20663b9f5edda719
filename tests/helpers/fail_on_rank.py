"""Run a climio command body where one rank fails while the others wait in a collective.

usage: mpiexec -n N python fail_on_rank.py RANK [usage | write DIR]
  (none)     RANK raises RuntimeError while the others wait in a barrier
  usage      RANK raises a ClimioError (bad input seen by one rank only)
  write DIR  every rank writes DIR/out.nc; RANK raises inside the write, the others are in collective calls
"""

import argparse
import os
import sys

import numpy as np

from climio import cli
from climio.core import ncio
from climio.core.decomp import Decomposition
from climio.errors import ClimioError


def body(args: argparse.Namespace, comm) -> None:
    failing = comm.Get_rank() == int(sys.argv[1])
    if sys.argv[2:3] == ["write"]:
        d = Decomposition.block1d((64, 100), comm.Get_size())
        schema = ncio.Schema({"t": None, "x": 100}, [ncio.Variable("v", "f8", ("t", "x"))])
        with ncio.create(os.path.join(sys.argv[3], "out.nc"), schema, "cdf5", comm) as ds:
            ds.write("v", np.ones(d.owned(comm.Get_rank()).count), d.owned(comm.Get_rank()))
            if failing:
                raise RuntimeError("injected failure while writing")
            ds.write("v", np.ones(d.owned(comm.Get_rank()).count), d.owned(comm.Get_rank()))
        return
    if failing:
        if "usage" in sys.argv[2:]:
            raise ClimioError("bad input seen by one rank")
        raise RuntimeError("injected failure")
    comm.Barrier()  # the others would wait here forever without an abort


sys.exit(cli.run(body, argparse.Namespace(trace=None)))
