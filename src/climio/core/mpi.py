"""MPI runtime helpers: one-rank runs without mpiexec, agreement on errors, launching.

mpi4py is imported inside functions so that ``climio --help`` and argument errors
never initialise MPI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI

T = TypeVar("T")

# Environment variables set by the common launchers for every started process.
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "MPI_LOCALRANKID")


# A plain process is an MPI singleton: it talks to nobody, so Open MPI need not probe the network
# (the UCX transport alone costs 0.2 s) nor start a helper daemon. Users' own settings win.
SINGLETON_DEFAULTS = {"OMPI_MCA_pml": "ob1", "OMPI_MCA_ess_singleton_isolated": "1"}


# Open MPI has two MPI-IO layers (its "io" framework). On the development VM OMPIO reads a slab of a
# CDF-5 file 3-5x faster than ROMIO, while ROMIO writes aggregated model output about 1.5x faster
# (docs/output.md). ``^ompio`` picks ROMIO whatever its version suffix (romio321, romio341).
MPI_IO_LAYERS = {"romio": "^ompio", "ompio": "ompio"}


def choose_mpi_io(layer: str) -> None:
    """Select Open MPI's MPI-IO layer for this process and the ranks it launches (before MPI starts).

    A user's own ``OMPI_MCA_io`` wins; other MPI libraries ignore the variable.
    """
    os.environ.setdefault("OMPI_MCA_io", MPI_IO_LAYERS[layer])


def check_mpi_io_path(path: str) -> None:
    """ROMIO takes the text before a ':' in a path for a file-system prefix ("ufs:", "lustre:") and fails."""
    chosen = os.environ.get("OMPI_MCA_io", "")
    if ":" in os.path.abspath(path) and (chosen == MPI_IO_LAYERS["romio"] or chosen.startswith("romio")):
        raise ClimioError(f"'{path}': ROMIO reads the text before ':' as a file-system prefix; use a path "
                          "without ':' or --mpi-io ompio", collective=True)


def launched() -> bool:
    """Whether a launcher (mpiexec, srun) started this process. A process started by a plain MPI program (a
    singleton, which sets ``OMPI_MCA_ess=singleton`` and ``PMIX_RANK`` for itself) inherits those and is no rank."""
    if os.environ.get("OMPI_MCA_ess") == "singleton":
        return False
    return any(name in os.environ for name in RANK_VARIABLES)


def world() -> MPI.Comm:
    """COMM_WORLD; a plain process (no mpiexec) is a one-rank world."""
    if not launched():
        for name, value in SINGLETON_DEFAULTS.items():
            os.environ.setdefault(name, value)
        private_session_directory()
    from mpi4py import MPI

    if _session and os.environ.get(SESSION_BASE) == _session[0]:
        del os.environ[SESSION_BASE]  # read at MPI_Init; a child (a climio command run from here) makes its own
    return MPI.COMM_WORLD


SESSION_BASE = "OMPI_MCA_orte_tmpdir_base"
SESSION_PREFIX = "climio-ompi-"  # a singleton's own session directory in the temporary folder
_session: list[str] = []  # this process's own session base, if it made one


def private_session_directory() -> None:
    """Give this singleton its own Open MPI session directory. Isolated singletons all share one (``jf.0``
    under the system's temporary folder), which the first of them to end removes under the others: their next
    file open then fails (OMPIO keeps a shared-file-pointer file there), so two climio commands run at once on
    one machine could break each other. Removed at exit (and by :func:`remove_session_directory` on the
    paths that skip it), and recorded so that the next run removes it if this process is killed. A base the
    user set wins."""
    if SESSION_BASE in os.environ or _session:
        return
    import atexit
    import tempfile

    from climio.core import registry

    _session.append(tempfile.mkdtemp(prefix=SESSION_PREFIX))
    registry.record(_session[0])
    os.environ[SESSION_BASE] = _session[0]
    atexit.register(remove_session_directory)


def remove_session_directory() -> None:
    """Remove this singleton's own session directory (before an exit that skips ``atexit``)."""
    for path in _session:
        shutil.rmtree(path, ignore_errors=True)


def launcher_rank() -> int:
    """This process's rank as told by the launcher's environment, without initialising MPI."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name)
        if value is not None and value.isdigit():
            return int(value)
    return 0


def agree(comm: MPI.Comm, check: Callable[[], T], root: int = 0) -> T:
    """Run ``check`` on ``root`` only and broadcast its result or its ClimioError.

    Checks of the file system (does the output exist, is the directory
    writable) must give every rank the same verdict, or the ranks that pass
    would wait forever in the next collective call for the one that failed.
    """
    from climio.core import waiting

    outcome: tuple[bool, object] = (True, None)
    if comm.Get_rank() == root:
        try:
            outcome = (True, check())
        except ClimioError as err:
            outcome = (False, (type(err), str(err)))  # bad input or an IOFault: every rank raises the same kind
    ok, value = waiting.bcast(comm, outcome, root=root)
    if not ok:
        kind, message = value  # type: ignore[misc]
        raise kind(message, collective=True)
    return value  # type: ignore[return-value]


def raise_fault(comm: MPI.Comm, failure: str) -> None:
    """Collective: if any rank's ``failure`` is not empty, every rank raises the same IOFault (the first rank's
    message), so a write fault seen by some ranks ends the job cleanly instead of leaving the others waiting."""
    from climio.errors import IOFault

    if not all_true(comm, not failure):
        raise IOFault(next(f for f in comm.allgather(failure) if f), collective=True)


def all_true(comm: MPI.Comm, flag: bool) -> bool:
    """True on every rank when ``flag`` is true on every rank (waiting without holding the core)."""
    import numpy as np
    from mpi4py import MPI

    from climio.core import waiting

    if comm.Get_size() == 1:
        return bool(flag)
    mine, every = np.array([flag], np.uint8), np.empty(1, np.uint8)
    waiting.wait(comm.Iallreduce(mine, every, op=MPI.LAND))
    return bool(every[0])


def agree_state(comm: MPI.Comm, flag: bool, value: int) -> tuple[bool, bool]:
    """In one agreement: whether ``flag`` is true on every rank, and whether ``value`` (an int64) is the same on
    every rank (waiting without holding the core)."""
    import numpy as np
    from mpi4py import MPI

    from climio.core import waiting

    if comm.Get_size() == 1:
        return bool(flag), True
    both = np.array([not flag, value, -value], np.int64)
    waiting.wait(comm.Iallreduce(MPI.IN_PLACE, both, op=MPI.MAX))
    return not both[0], bool(both[1] == -both[2])


def spoken_mark() -> str | None:
    """The mark that a rank of this launch has said how the job ended, so that one fault is one line: several
    servers failing in one write, or the ranks that MPI_Abort stops, say nothing more. It lives in the launcher's
    own directory of this node (Open MPI's ``PMIX_SERVER_TMPDIR``, removed with the job), as the C client's
    ``said`` makes it; None where there is none (one process: it is always the first)."""
    base, job = os.environ.get("PMIX_SERVER_TMPDIR"), os.environ.get("PMIX_NAMESPACE")
    started = sys.modules.get("mpi4py.MPI")  # never started here: a signal handler may ask
    alone = started is None or not started.Is_initialized() or started.COMM_WORLD.Get_size() == 1
    if not base or not job or alone:  # (a process started by an MPI program inherits its PMIX_* settings)
        return None
    return os.path.join(base, f"climio-spoke-{job}")


def first_to_speak() -> bool:
    """Whether this rank is the first of its launch to say how the job ended (it makes the mark)."""
    mark = spoken_mark()
    try:
        if mark is not None:
            os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError:
        pass
    return True


def spoken_within(seconds: float) -> bool:
    """Whether another rank of this launch says how the job ended within ``seconds`` (for a rank whose fault
    the other side of the launch sees too, and says first when it can)."""
    mark, deadline = spoken_mark(), time.monotonic() + seconds
    while mark is not None and time.monotonic() < deadline:
        if os.path.exists(mark):
            return True
        time.sleep(0.05)
    return False


def abort(comm: MPI.Comm | None, message: str, status: int) -> None:
    """Print ``message`` (unless another rank of the job already said its line) and end the whole job, however
    many ranks it has.

    A lone failing rank cannot simply exit: the others would hang in their next
    collective call. MPI_Abort ends them all, with this rank's message first.
    """
    if first_to_speak():
        sys.stderr.write(message.rstrip("\n") + "\n")
        sys.stderr.flush()
    if comm is None or comm.Get_size() == 1:
        remove_session_directory()
        os._exit(status)
    comm.Abort(status)


def is_open_mpi(mpiexec: str) -> bool:
    """True when ``mpiexec`` is Open MPI's (it needs --oversubscribe and root flags)."""
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in out or "OpenRTE" in out


def mpiexec_command(nranks: int, argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that start ``argv`` on ``nranks`` ranks here.

    ``CLIMIO_MPIEXEC`` overrides the launcher (e.g. ``srun`` on a cluster). With
    Open MPI, more ranks than cores needs ``--oversubscribe``, and running as
    root needs the two OMPI_ALLOW_RUN_AS_ROOT variables.
    """
    launcher = os.environ.get("CLIMIO_MPIEXEC", "mpiexec").split()
    env = dict(os.environ)
    if shutil.which(launcher[0]) is None:
        raise ClimioError(f"cannot start {nranks} ranks: launcher '{launcher[0]}' not found; "
                          "install Open MPI (make install) or set CLIMIO_MPIEXEC")
    command = [*launcher, "-n", str(nranks)]
    if is_open_mpi(launcher[0]):
        command.append("--oversubscribe")
        env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
        if os.geteuid() == 0:
            env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return [*command, *argv], env
