"""Waiting for other ranks' agreement without holding a core: nonblocking MPI calls completed with a progressive
back-off.

Open MPI's blocking calls poll until their peers arrive. A rank that shares its core with anything (another rank,
an I/O server, a monitoring daemon, the other test worker) then burns its scheduler quantum polling while the
rank it waits for cannot run, and every agreement of a step costs a quantum (the CMAQ CA output slowed 7-18x
with one busy process on a 2-core machine; Open MPI's ``mpi_yield_when_idle`` changed nothing measurable).

:func:`wait` polls a request briefly (a peer that is already there costs microseconds), then sleeps between
polls, doubling the sleep up to :data:`LONGEST_SLEEP`. Progress of a nonblocking collective happens inside the
polls, so the sleep is bounded: a waiting rank notices its peers' arrival within a millisecond.

Only agreements (a few bytes each) wait this way. An exchange of data (the rearranger's, MPI-IO's collective
write) moves its bytes inside the polls, fragment by fragment, so a rank that sleeps between polls stalls the
transfer: CMAQ CA's records to rank 0 took 0.9 s a step sleeping against 0.09 s polling. Those keep MPI's own
wait: while data move the core is doing the copying, not idling.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mpi4py import MPI

POLLS_BEFORE_SLEEP = 50  # about 50 us of polling: a collective whose peers are all running completes within it
FIRST_SLEEP = 20e-6  # seconds
LONGEST_SLEEP = 1e-3


def wait(request: MPI.Request) -> None:
    """Complete ``request``, giving the core back while it is not done."""
    wait_all([request])


def wait_all(requests: Sequence[MPI.Request]) -> None:
    """Complete every request, polling then sleeping with a doubling back-off."""
    from mpi4py import MPI

    polls, sleep = 0, FIRST_SLEEP
    while not MPI.Request.Testall(list(requests)):
        polls += 1
        if polls > POLLS_BEFORE_SLEEP:
            time.sleep(sleep)
            sleep = min(2 * sleep, LONGEST_SLEEP)
