"""``climio serve``: I/O server ranks beside a model's ranks (docs/serve-protocol.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from climio.commands.common import Subcommands

if TYPE_CHECKING:
    from mpi4py import MPI


def register(commands: Subcommands, common: argparse.ArgumentParser) -> None:
    serve = commands.add_parser("serve", parents=[common], help="I/O server ranks: receive a model's output over MPI "
                                "and write it while the model computes (docs/serve-protocol.md)")
    serve.set_defaults(func=run, communicator=servers_communicator, auto_mpi_io="romio")  # as model output writes


def servers_communicator() -> MPI.Comm:
    """climio serve runs on the servers' own communicator: the model's ranks share COMM_WORLD with it."""
    from climio.serve import connect

    return connect.servers_communicator()


def run(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.serve import server

    server.serve(comm)
