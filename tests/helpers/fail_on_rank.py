"""Run a climio command body where one rank raises while the others wait in a collective.

usage: mpiexec -n N python fail_on_rank.py RANK [usage]
'usage' raises a (non-collective) ClimioError, otherwise a RuntimeError.
"""

import argparse
import sys

from climio import cli
from climio.errors import ClimioError


def body(args: argparse.Namespace, comm) -> None:
    if comm.Get_rank() == int(sys.argv[1]):
        if "usage" in sys.argv[2:]:
            raise ClimioError("bad input seen by one rank")
        raise RuntimeError("injected failure")
    comm.Barrier()  # the others would wait here forever without an abort


sys.exit(cli.run(body, argparse.Namespace(trace=None)))
