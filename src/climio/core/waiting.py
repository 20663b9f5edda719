"""Waiting for other ranks' agreement without holding a core: nonblocking MPI calls completed with a progressive
back-off.

Open MPI's blocking calls poll until their peers arrive. A rank that shares its core with anything (another rank,
an I/O server, a monitoring daemon, the other test worker) then burns its scheduler quantum polling while the
rank it waits for cannot run, and every agreement of a step costs a quantum (the CMAQ CA output slowed 7-18x
with one busy process on a 2-core machine; Open MPI's ``mpi_yield_when_idle`` changed nothing measurable).

:func:`wait` polls a request for up to :data:`POLL_SECONDS`, yielding the core between polls (a peer that is
already there costs microseconds; one that waits for this very core runs at once: ranks outnumber the cores),
then sleeps between polls, doubling the sleep up to :data:`LONGEST_SLEEP`. Progress of a nonblocking collective
happens inside the polls, so the sleep is bounded: a waiting rank notices its peers' arrival within a
millisecond. Sleeping from the first poll cost PIO's calls on 4 ranks of 2 cores 2-4x (pioperf): each of
their many small agreements then waited for a peer's wake-up.

Only agreements (a few bytes each) wait this way. An exchange of data (the rearranger's, MPI-IO's collective
write) moves its bytes inside the polls, fragment by fragment, so a rank that sleeps between polls stalls the
transfer: CMAQ CA's records to rank 0 took 0.9 s a step sleeping against 0.09 s polling. Those keep MPI's own
wait: while data move the core is doing the copying, not idling.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from mpi4py import MPI

POLL_SECONDS = 2e-3  # polling first, yielding the core between polls: a peer that shares it runs at once
FIRST_SLEEP = 5e-5  # seconds
LONGEST_SLEEP = 1e-3
FIRST_MESSAGE = 1024  # bytes a broadcast sends at once: its length, and its value when that fits


def wait(request: MPI.Request) -> None:
    """Complete ``request``, giving the core back while it is not done."""
    wait_all([request])


def wait_all(requests: Sequence[MPI.Request]) -> None:
    """Complete every request, polling then sleeping with a doubling back-off."""
    from mpi4py import MPI

    pending = list(requests)
    if MPI.Request.Testall(pending):
        return
    polled_until, sleep = time.perf_counter() + POLL_SECONDS, FIRST_SLEEP
    while not MPI.Request.Testall(pending):
        if time.perf_counter() < polled_until:
            os.sched_yield()
        else:
            time.sleep(sleep)
            sleep = min(2 * sleep, LONGEST_SLEEP)


def bcast(comm: MPI.Comm, value: Any, root: int = 0) -> Any:
    """``comm.bcast``, waited for without holding the core: one message of :data:`FIRST_MESSAGE` bytes (the
    pickled value's length, and the value when it fits), then the rest of a longer value."""
    if comm.Get_size() == 1:
        return value
    if comm.Is_inter():  # an intercommunicator's root is named otherwise (MPI.ROOT): MPI's own call
        return comm.bcast(value, root=root)
    mine = comm.Get_rank() == root
    first = np.zeros(FIRST_MESSAGE, np.uint8)
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL) if mine else b""
    head = FIRST_MESSAGE - 8
    if mine:
        first[:8] = np.frombuffer(np.int64(len(data)).tobytes(), np.uint8)
        first[8:8 + min(len(data), head)] = np.frombuffer(data[:head], np.uint8)
    wait(comm.Ibcast(first, root=root))
    size = int(first[:8].view(np.int64)[0])
    rest = np.frombuffer(data[head:], np.uint8).copy() if mine else np.empty(max(0, size - head), np.uint8)
    if size > head:
        wait(comm.Ibcast(rest, root=root))
    return value if mine else pickle.loads(first[8:8 + min(size, head)].tobytes() + rest.tobytes())
