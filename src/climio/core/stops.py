"""How a command ends on a stop signal: a batch system's time limit (SIGTERM; mpiexec passes it, and Ctrl-C, on to
every rank as SIGTERM), Ctrl-C, a closed terminal.

A command whose outputs are all in place finishes (exit 0: they are complete); otherwise each rank removes its
unfinished outputs and those of this run it already put in place (a stopped run leaves none), one line comes
from the first rank, and the status is 128 + signal, never a traceback. The work is done at once, in a thread
of its own, even while the main thread waits inside MPI or netCDF-C: a Python handler runs only once such a
call returns, which for a rank waiting in a collective for a stopped rank is never, and mpiexec follows its
SIGTERM with SIGKILL a second later. What a SIGKILL leaves, the next run sweeps (``climio.core.registry``). A
driver that launched a job of its own (``climio tune``, ``climio bench``) passes the stop on to it and waits
for its ranks to clean up (:func:`stop_children`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading

from climio.__main__ import STOP_SIGNALS
from climio.core import mpi, targets

STOPPING = threading.Lock()  # held by the thread that handles a stop signal: one line, one exit
CHILD_GRACE_S = 10.0  # how long a stopped driver waits for the job it launched to clean up after itself
CHILDREN: set[subprocess.Popen] = set()  # jobs this process launched (a driver's mpiexec), told of a stop
SPEAKER = [True]  # whether this rank says the command's lines (rank 0 of its communicator)
ENDED = [False]  # the command has returned or reported its error: a later stop signal adds no line


def stop_on_signal(signum: int, frame: object) -> None:
    """Remove what this rank left unfinished, say so once for the job, and exit 128 + ``signum``."""
    if targets.all_complete() or not STOPPING.acquire(blocking=False):
        return
    stop_children(signum)
    if not ENDED[0]:  # else its line is said (by MPI_Abort of another rank, or by the model this rank told)
        complete = sorted(targets.COMPLETE & targets.DECLARED)
        if (SPEAKER[0] or complete) and mpi.first_to_speak():  # first: mpiexec may end before it reads more
            also = f" (and {', '.join(complete)}, complete, so that a stopped run leaves no output)" if complete else ""
            os.write(2, f"climio: stopped by {signal.Signals(signum).name}; unfinished output removed{also}\n"
                     .encode())
        targets.discard_complete_outputs()
    targets.discard_pending_outputs()
    mpi.remove_session_directory()
    os._exit(128 + signum)


def stop_children(signum: int) -> None:
    """Pass the stop on to the jobs this process launched (mpiexec passes it to every rank, which removes its
    unfinished files), and wait for them a while: a driver stopped alone (``kill`` of its pid) would otherwise
    leave its job running, orphaned."""
    children = [child for child in list(CHILDREN) if child.poll() is None]
    for child in children:
        child.send_signal(signum)
    for child in children:
        try:
            child.wait(timeout=CHILD_GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()


def hold_if_stopping() -> None:
    """Wait here for good while a stop is handled (its thread ends the process): a driver whose job ended
    because the stop was passed on must not report that as the job's failure."""
    if STOPPING.locked():
        threading.Event().wait()


def watch() -> None:
    """Install the handler, and the thread that runs it while the main thread waits in a library: the
    interpreter's own C handler writes the signal's number to a pipe, which the thread reads (MPI and the
    libraries let go of the interpreter while they wait)."""
    SPEAKER[0] = mpi.launcher_rank() == 0  # until the command's communicator says
    for signum in STOP_SIGNALS:
        signal.signal(signum, stop_on_signal)
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)

    def wait_for_signals() -> None:
        while True:
            for signum in os.read(read, 64):
                if signum in STOP_SIGNALS:
                    stop_on_signal(signum, None)
    threading.Thread(target=wait_for_signals, name="climio-stop-signals", daemon=True).start()
