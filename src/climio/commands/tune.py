"""``climio tune``: measure this machine's per-operation costs for the cost model (``climio bench scale
--recommend``, ``strategy=auto``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from climio.commands.common import Subcommands

if TYPE_CHECKING:
    from mpi4py import MPI


def register(commands: Subcommands, common: argparse.ArgumentParser) -> None:
    tune = commands.add_parser("tune", parents=[common], help="measure this machine's copy, message, collective and "
                               "write costs for the cost model (seconds, on 2 ranks)")
    tune.add_argument("--dir", default=".", help="a directory on the file system the model's files go to (default .)")
    tune.add_argument("--out", help="the machine file to write (default $CLIMIO_MACHINE unless it names a shipped "
                      "site, else ~/.config/climio/machine.toml)")
    tune.add_argument("--worker-json", help=argparse.SUPPRESS)
    tune.set_defaults(func=run, auto_mpi_io="romio")  # as model output writes (its MPI-IO costs are measured)


def run(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import tune
    from climio.model import costmodel

    tune.main(comm, directory=args.dir, out=args.out or costmodel.tuned_path(), worker_json=args.worker_json)
