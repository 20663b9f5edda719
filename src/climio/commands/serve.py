"""``climio serve``: I/O server ranks beside a model's ranks (docs/serve-protocol.md)."""

from __future__ import annotations

import argparse
import sys
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


def servers_communicator() -> MPI.Comm:
    """climio serve runs on the servers' own communicator: the model's ranks share COMM_WORLD with it."""
    from climio.serve import connect

    return connect.servers_communicator()


def report(comm: MPI.Intracomm | None, err: ClimioError, status: int) -> None:
    """The servers' errors are the model's to report: every model rank gets the line at its climio_init (or its
    next call), and its program says it and ends. Where no model can be told (none said hello in time), the
    first server says it and ends the job, which would otherwise wait for the model in MPI_Finalize."""
    from climio.core import mpi
    from climio.serve import connect

    if comm is not None and connect.tell_model(comm, err):
        return
    world = mpi.world()
    # Without the servers' communicator the launch's layout is wrong (CLIMIO_SERVERS), which the model's ranks
    # see too: the last rank says it only if they did not
    first = comm.Get_rank() == 0 if comm is not None else world.Get_rank() == world.Get_size() - 1
    if first and (comm is not None or not mpi.spoken_within(3.0)) and mpi.first_to_speak():
        sys.stderr.write(f"climio: error: {err}\n")
        sys.stderr.flush()
    if world.Get_size() > 1:
        world.Abort(status)


def run(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.core import settings
    from climio.serve import server

    settings.check_all()  # before the hello, whose answer carries the refusal
    server.serve(comm)
