"""How model ranks and I/O servers find each other, with no collective call over MPI_COMM_WORLD by the model.

The servers are the last ranks of the launch: ``CLIMIO_SERVERS=N`` says the last N world ranks (for
``srun --multi-prog``), else the last MPMD app context (``mpiexec -n 4 model : -n 1 climio serve``), whose
size Open MPI gives in ``OMPI_APP_CTX_NUM_PROCS`` (one count per app context; their ranks are contiguous) and
whose number is ``MPI_APPNUM``. The servers make their own communicator with ``MPI_Comm_create_group`` over
their world ranks. The model's leader (rank 0 of the communicator the model passes) sends the first server a
hello (:data:`~climio.serve.protocol.MAGIC`, version, the model's size, and whether the model refused its own
settings) on MPI_COMM_WORLD, so the servers learn its world rank, and waits (bounded) for the first server's
answer in kind, so that a last application that is no ``climio serve`` ends in an error rather than a hang; a
server that refused its options or settings answers with its line, which every model rank returns. Otherwise
both sides then call ``MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, remote leader, TAG_INTERCOMM)``. A C
client does the same with the same calls.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from climio.core import mpi, settings
from climio.errors import ClimioError, IOFault
from climio.serve import protocol as wire

if TYPE_CHECKING:
    from mpi4py import MPI

HOW = ("start them as the last app context (mpiexec -n M MODEL : -n S climio serve) or set CLIMIO_SERVERS=S "
       "(the last S ranks)")


def timeout() -> float:
    """Seconds either side waits for the other at most (``CLIMIO_SERVE_TIMEOUT``, default 600)."""
    return settings.SERVE_TIMEOUT.read()


def within_timeout(done: Callable[[], bool], seconds: float | None = None) -> bool:
    """Poll ``done`` until it is true or ``seconds`` (:func:`timeout`) pass: MPI's own waits cannot time out. The
    pauses between polls grow from 10 us to 10 ms, so a quick answer costs no sleep and a long wait no core."""
    deadline, pause = time.monotonic() + (timeout() if seconds is None else seconds), 1e-5
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(2 * pause, 1e-2)
    return True


def server_ranks(world_size: int, appnum: int | None, environ: dict[str, str] | os._Environ[str] = os.environ
                 ) -> range:
    """The world ranks of the I/O servers, from the launch's layout alone (no communication)."""
    if environ.get("CLIMIO_SERVERS"):
        count = int(settings.servers(world_size).read(environ))
        if count == 0:
            raise ClimioError("no I/O servers in this launch: CLIMIO_SERVERS=0", collective=True)
        return range(world_size - count, world_size)
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


def hello(comm: MPI.Intracomm, world: MPI.Intracomm | None = None) -> np.ndarray:
    """Servers (collective): wait for the model's hello on ``world`` (COMM_WORLD, or the communicator of PIO's
    async init); its numbers (:data:`~climio.serve.protocol.HELLO_LEN`) and its sender's rank there, or zeros
    when none came within :func:`timeout` seconds."""
    world = world or mpi.world()
    got = np.zeros(wire.HELLO_LEN + 1, np.int64)
    if comm.Get_rank() == 0:
        from mpi4py import MPI

        status = MPI.Status()
        try:
            seconds = timeout()
        except ClimioError:
            seconds = settings.SERVE_TIMEOUT.default  # refused by the servers too: long enough to say so
        if within_timeout(lambda: world.Iprobe(source=MPI.ANY_SOURCE, tag=wire.TAG_HELLO, status=status), seconds):
            world.Recv([got[:wire.HELLO_LEN], MPI.INT64_T], source=status.Get_source(), tag=wire.TAG_HELLO)
            got[-1] = status.Get_source()
    return comm.bcast(got)


def welcome(comm: MPI.Intracomm, model: int, code: int = 0, text: str = "", world: MPI.Intracomm | None = None
            ) -> None:
    """Servers: the first server answers the model's leader (rank ``model`` of ``world``): the servers' count,
    or their refusal and its line."""
    if comm.Get_rank() != 0:
        return
    from mpi4py import MPI

    world = world or mpi.world()
    line = text.encode()
    answer = np.array([wire.MAGIC, wire.VERSION, comm.Get_size(), code, len(line)], np.int64)
    world.Send([answer, MPI.INT64_T], dest=model, tag=wire.TAG_HELLO)  # the model waits for it
    if line:
        world.Send([np.frombuffer(line, np.uint8), MPI.BYTE], dest=model, tag=wire.TAG_WELCOME_TEXT)


class NoModel(ClimioError):
    """No model said hello in time (or something else did): nobody to tell, so the servers end the job."""


class Told(ClimioError):
    """An error the model's ranks already have (the servers replied it, or it is the model's own): the model
    reports it, the servers end quietly."""


class ModelRefused(Told):
    """The model's ranks refused their own settings at the hello."""


def accept(comm: MPI.Intracomm, world: MPI.Intracomm | None = None) -> tuple[MPI.Intercomm, int]:
    """Servers: wait for the model's hello on ``world`` (COMM_WORLD by default), then make the
    intercommunicator; returns it and the model's size."""
    world = world or mpi.world()
    got = hello(comm, world)
    if int(got[0]) == 0:
        raise NoModel(f"climio serve: no model connected within {timeout():g} s (CLIMIO_SERVE_TIMEOUT): the model "
                      f"calls climio_init_intracomm or climio.serve.client.connect as the other application of "
                      f"this launch", collective=True)
    if int(got[0]) != wire.MAGIC:
        raise NoModel(f"climio serve: a stray message on the hello tag {wire.TAG_HELLO} from world rank "
                          f"{int(got[-1])}", collective=True)
    if int(got[1]) != wire.VERSION:
        welcome(comm, int(got[-1]), world=world)  # the model names the mismatch
        raise ModelRefused(f"climio serve speaks protocol version {wire.VERSION}, the model {int(got[1])}: use one "
                           f"climio for both", collective=True)
    if int(got[3]):
        raise ModelRefused("the model refused its own settings (its ranks say which)", collective=True)
    welcome(comm, int(got[-1]), world=world)
    ACCEPTED.append(True)
    return comm.Create_intercomm(0, world, int(got[-1]), wire.TAG_INTERCOMM), int(got[2])


ACCEPTED: list[bool] = []  # this server made its intercommunicator: its errors reach the model as replies


def tell_model(comm: MPI.Intracomm, err: ClimioError, world: MPI.Intracomm | None = None) -> bool:
    """Servers (collective): hand an error of theirs to the model's ranks, which report it; False where no model
    can be told (none said hello in time), so that the servers report it and end the job themselves."""
    if isinstance(err, Told):
        return True
    if ACCEPTED or isinstance(err, NoModel):
        return False  # past the hello, only a reply tells the model; before it, there is nobody to tell
    got = hello(comm, world)
    if int(got[0]) != wire.MAGIC:
        return False
    if int(got[3]) == 0:
        welcome(comm, int(got[-1]), 1 if isinstance(err, IOFault) else 2, str(err), world)
    return True


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
    try:
        settings.check_all()
        refusal = ""
    except ClimioError as err:
        refusal = str(err)
    refusal = next((r for r in comm.allgather(refusal) if r), "")  # every rank refuses if one does
    answer, text = np.zeros(wire.WELCOME_LEN, np.int64), ""
    if comm.Get_rank() == 0:
        greeting = np.array([wire.MAGIC, wire.VERSION, comm.Get_size(), 2 if refusal else 0], np.int64)
        world.Send([greeting, MPI.INT64_T], dest=servers.start, tag=wire.TAG_HELLO)
        if not refusal:
            request = world.Irecv([answer, MPI.INT64_T], source=servers.start, tag=wire.TAG_HELLO)
            if not within_timeout(request.Test):
                request.Cancel()
                request.Free()
            elif answer[4]:
                line = np.empty(int(answer[4]), np.uint8)
                world.Recv([line, MPI.BYTE], source=servers.start, tag=wire.TAG_WELCOME_TEXT)
                text = line.tobytes().decode(errors="replace")
    answer, text = comm.bcast((answer, text))
    if refusal:
        raise ClimioError(refusal, collective=True)
    if int(answer[0]) != wire.MAGIC:
        raise IOFault(f"the I/O servers (world rank {servers.start} on) did not answer within {timeout():g} s: start "
                      f"climio serve as the last application, or set CLIMIO_SERVERS=0 for a launch without it",
                      collective=True)
    if int(answer[1]) != wire.VERSION:
        raise ClimioError(f"climio serve speaks protocol version {int(answer[1])}, this climio {wire.VERSION}: use "
                          f"one climio for both", collective=True)
    if int(answer[3]):
        raise (IOFault if int(answer[3]) == 1 else ClimioError)(text, collective=True)
    return comm.Create_intercomm(0, world, servers.start, wire.TAG_INTERCOMM), servers


def report(comm: MPI.Intracomm | None, err: ClimioError, status: int, world: MPI.Intracomm | None = None) -> None:
    """The servers' errors are the model's to report: every model rank gets the line at its init (or its next
    call), and its program says it and ends. Where no model can be told (none said hello in time), the first
    server says it and ends the job, which would otherwise wait for the model in MPI_Finalize."""
    if comm is not None and tell_model(comm, err, world):
        return
    world = world or mpi.world()
    # Without the servers' communicator the launch's layout is wrong (CLIMIO_SERVERS), which the model's ranks
    # see too: the last rank says it only if they did not
    first = comm.Get_rank() == 0 if comm is not None else world.Get_rank() == world.Get_size() - 1
    if first and (comm is not None or not mpi.spoken_within(3.0)) and mpi.first_to_speak():
        sys.stderr.write(f"climio: error: {err}\n")
        sys.stderr.flush()
    if world.Get_size() > 1:
        world.Abort(status)
