"""How model ranks and I/O servers find each other, with no collective call over MPI_COMM_WORLD by the model.

The servers are the last ranks of the launch: ``CLIMIO_SERVERS=N`` says the last N world ranks (for
``srun --multi-prog``), else the last MPMD app context (``mpiexec -n 4 model : -n 1 climio serve``), whose
size Open MPI gives in ``OMPI_APP_CTX_NUM_PROCS`` (one count per app context; their ranks are contiguous) and
whose number is ``MPI_APPNUM``. The servers make their own communicator with ``MPI_Comm_create_group`` over
their world ranks. The model's leader (rank 0 of the communicator the model passes) sends the first server a
hello (:data:`~climio.serve.protocol.MAGIC`, version, the model's size) on MPI_COMM_WORLD, so the servers learn
its world rank, and waits (bounded) for the first server's answer in kind, so that a last application that
is no ``climio serve`` ends in an error rather than a hang; both sides then call ``MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, remote leader,
TAG_INTERCOMM)``. A C client does the same with the same calls.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from climio.core import mpi
from climio.errors import ClimioError, IOFault
from climio.serve import protocol as wire

if TYPE_CHECKING:
    from mpi4py import MPI

TIMEOUT = 600.0
HOW = ("start them as the last app context (mpiexec -n M MODEL : -n S climio serve) or set CLIMIO_SERVERS=S "
       "(the last S ranks)")


def timeout() -> float:
    """Seconds either side waits for the other at most (``CLIMIO_SERVE_TIMEOUT``, default 600)."""
    return float(os.environ.get("CLIMIO_SERVE_TIMEOUT", TIMEOUT))


def within_timeout(done: Callable[[], bool]) -> bool:
    """Poll ``done`` until it is true or :func:`timeout` seconds pass (MPI's own waits cannot time out)."""
    deadline = time.monotonic() + timeout()
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def server_ranks(world_size: int, appnum: int | None, environ: dict[str, str] | os._Environ[str] = os.environ
                 ) -> range:
    """The world ranks of the I/O servers, from the launch's layout alone (no communication)."""
    given = environ.get("CLIMIO_SERVERS")
    if given:
        if not given.isdigit() or not 0 <= int(given) < world_size:
            raise ClimioError(f"CLIMIO_SERVERS={given}: give the number of server ranks, 0 (none) to {world_size - 1} "
                              f"(the last ranks of the {world_size})", collective=True)
        if int(given) == 0:
            raise ClimioError(f"no I/O servers in this launch: CLIMIO_SERVERS=0", collective=True)
        return range(world_size - int(given), world_size)
    counts = environ.get("OMPI_APP_CTX_NUM_PROCS", "").replace(",", " ").split()
    if appnum is None or len(counts) < 2 or not all(c.isdigit() for c in counts):
        raise ClimioError(f"no I/O servers in this launch of {world_size} rank(s): {HOW}", collective=True)
    sizes = [int(c) for c in counts]
    return range(sum(sizes[:-1]), sum(sizes))


def layout() -> tuple[MPI.Intracomm, range]:
    """COMM_WORLD and the servers' world ranks."""
    world = mpi.world()
    from mpi4py import MPI

    appnum = world.Get_attr(MPI.APPNUM)
    return world, server_ranks(world.Get_size(), None if appnum is None else int(appnum))


def servers_communicator() -> MPI.Intracomm:
    """The servers' own communicator (collective over the servers only); refused on a rank that is no server."""
    world, servers = layout()
    if world.Get_rank() not in servers:
        raise ClimioError(f"climio serve runs on world rank {world.Get_rank()}, which is no server rank "
                          f"({servers.start}-{servers.stop - 1}): {HOW}")
    group = world.Get_group().Incl(list(servers))
    comm = world.Create_group(group, wire.TAG_INTERCOMM)
    group.Free()
    return comm


def model_communicator() -> MPI.Intracomm:
    """The model's ranks (every world rank but the servers') as one communicator, made with
    ``MPI_Comm_create_group``: collective over the model's ranks only, for a model that used COMM_WORLD."""
    world, servers = layout()
    if world.Get_rank() in servers:
        raise ClimioError(f"world rank {world.Get_rank()} is an I/O server rank ({servers.start}-{servers.stop - 1}), "
                          f"not a model rank", collective=True)
    group = world.Get_group().Excl(list(servers))
    comm = world.Create_group(group, wire.TAG_HELLO)
    group.Free()
    return comm


def accept(comm: MPI.Intracomm) -> tuple[MPI.Intercomm, int]:
    """Servers: wait for the model's hello, then make the intercommunicator; returns it and the model's size."""
    world, servers = layout()
    hello = np.zeros(4, np.int64)
    if comm.Get_rank() == 0:
        from mpi4py import MPI

        status = MPI.Status()
        if within_timeout(lambda: world.Iprobe(source=MPI.ANY_SOURCE, tag=wire.TAG_HELLO, status=status)):
            world.Recv([hello[:3], MPI.INT64_T], source=status.Get_source(), tag=wire.TAG_HELLO)
            hello[3] = status.Get_source()
            answer = np.array([wire.MAGIC, wire.VERSION, comm.Get_size()], np.int64)
            world.Send([answer, MPI.INT64_T], dest=int(hello[3]), tag=wire.TAG_HELLO)  # the model waits for it
    hello = comm.bcast(hello)
    if int(hello[0]) == 0:
        raise ClimioError(f"climio serve: no model connected within {timeout():g} s (CLIMIO_SERVE_TIMEOUT): the model "
                          f"calls climio.serve.client.connect, or sends the hello of docs/serve-protocol.md",
                          collective=True)
    if int(hello[0]) != wire.MAGIC:
        raise ClimioError(f"climio serve: a stray message on the hello tag {wire.TAG_HELLO} from world rank "
                          f"{int(hello[3])}", collective=True)
    inter = comm.Create_intercomm(0, world, int(hello[3]), wire.TAG_INTERCOMM)
    if int(hello[1]) != wire.VERSION:
        raise ClimioError(f"climio serve speaks protocol version {wire.VERSION}, the model {int(hello[1])}: use one "
                          f"climio for both", collective=True)
    return inter, int(hello[2])


def connect(comm: MPI.Intracomm) -> tuple[MPI.Intercomm, range]:
    """Model: the intercommunicator to the servers (collective over ``comm`` only) and their world ranks."""
    world, servers = layout()
    from mpi4py import MPI

    group, everyone = comm.Get_group(), world.Get_group()
    ranks = MPI.Group.Translate_ranks(group, list(range(comm.Get_size())), everyone)
    group.Free()
    everyone.Free()
    if any(r in servers for r in ranks):
        raise ClimioError(f"the model's communicator holds I/O server ranks ({servers.start}-{servers.stop - 1} of "
                          f"COMM_WORLD): pass the model's own ranks, e.g. climio.serve.connect.model_communicator()",
                          collective=True)
    answer = np.zeros(3, np.int64)
    if comm.Get_rank() == 0:
        hello = np.array([wire.MAGIC, wire.VERSION, comm.Get_size()], np.int64)
        world.Send([hello, MPI.INT64_T], dest=servers.start, tag=wire.TAG_HELLO)
        request = world.Irecv([answer, MPI.INT64_T], source=servers.start, tag=wire.TAG_HELLO)
        if not within_timeout(request.Test):
            request.Cancel()
            request.Free()
    answer = comm.bcast(answer)
    if int(answer[0]) != wire.MAGIC:
        raise IOFault(f"the I/O servers (world rank {servers.start} on) did not answer within {timeout():g} s: start "
                      f"climio serve as the last application, or set CLIMIO_SERVERS=0 for a launch without it",
                      collective=True)
    if int(answer[1]) != wire.VERSION:
        raise ClimioError(f"climio serve speaks protocol version {int(answer[1])}, this climio {wire.VERSION}: use "
                          f"one climio for both", collective=True)
    return comm.Create_intercomm(0, world, servers.start, wire.TAG_INTERCOMM), servers
