"""``climio serve``: I/O server ranks beside a model's ranks (docs/serve-protocol.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from climio.commands.common import Subcommands
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI


def register(commands: Subcommands, common: argparse.ArgumentParser) -> None:
    serve = commands.add_parser("serve", parents=[common], help="I/O server ranks: receive a model's output over MPI "
                                "and write it while the model computes (docs/serve-protocol.md)")
    serve.set_defaults(func=run, communicator=servers_communicator, report=report,
                       auto_mpi_io="romio")  # as model output writes


def report(comm: MPI.Intracomm | None, err: ClimioError, status: int) -> None:
    """The servers' errors are the model's to report (climio.serve.connect.report)."""
    from climio.serve import connect

    connect.report(comm, err, status)


def servers_communicator() -> MPI.Comm:
    """climio serve runs on the servers' own communicator: the model's ranks share COMM_WORLD with it."""
    from climio.serve import connect

    return connect.servers_communicator()


def run(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.core import settings
    from climio.serve import server

    settings.check_all()  # before the hello, whose answer carries the refusal
    server.serve(comm)
