"""This machine's record of the temporary files and Open MPI session directories that climio processes make, so
that what a killed process leaves (SIGKILL, the out-of-memory killer, a launcher ending its job) is removed by the
next climio command on the machine, wherever the process wrote.

The record is a folder of the user's own: ``$XDG_RUNTIME_DIR/climio`` where that runtime folder exists and is
writable, else ``climio-UID`` in the temporary folder (``$TMPDIR``, else ``/tmp``). A process that makes a temporary
has one file there, ``HOST.PID.START``: its host's short name, its process id and its start time (clock ticks since
boot, from ``/proc/PID/stat``; 0 where there is no ``/proc``), so that a later process given the same id is not
taken for it. The file holds one absolute path a line, each appended in one write as the process makes it. A normal
exit removes what its file still lists (an output it never finished), then the file; a command's start removes the
listed paths of the processes of this host that no longer run (:func:`sweep`), but only paths that are still a
climio temporary file of that process, a climio session directory or a climio scratch folder, never anything else.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import os
import shutil
import stat
import sys
import tempfile
from typing import TYPE_CHECKING

from climio.core import mpi, targets

if TYPE_CHECKING:
    from mpi4py import MPI

# What one sweep removed for one stopped process: (its pid, temporary files, session and scratch folders)
Removed = tuple[int, int, int]
NAMED_PIDS = 8  # the line names this many stopped processes, then counts the others


def record(path: str) -> None:
    """Add ``path``, a temporary file or session directory this process makes, to its file in the registry: one
    line in one write, cheap, and there for any later run to read whatever ends this process. Without a registry
    (no writable folder) nothing is recorded: the next run to the same output still removes a temporary file."""
    entry = _entry(os.getpid())
    line = os.fsencode(os.path.abspath(path)) + b"\n"
    if entry is None or line.count(b"\n") > 1:
        return
    try:
        fd = os.open(entry, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError:
        pass


SCRATCH_PREFIXES = ("climio-subset-", "climio-info-")  # climio's scratch folders in the temporary folder


def scratch_directory(prefix: str, directory: str | None = None) -> str:
    """A new scratch folder (``tempfile.mkdtemp``), recorded, so that a killed process's is swept too: its
    ``prefix`` is one of :data:`SCRATCH_PREFIXES`."""
    if prefix not in SCRATCH_PREFIXES:
        raise ValueError(f"{prefix!r} is no scratch prefix of climio.core.registry")
    folder = tempfile.mkdtemp(prefix=prefix, dir=directory)
    record(folder)
    return folder


def running(pid: int, start: str = "") -> bool:
    """Whether process ``pid`` of this host still runs (a zombie has ended); with ``start``, whether it is the
    process that started then, not a later one given the same id."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: no process can have that id
        return False
    except PermissionError:
        pass  # another user's process
    seen = _state(pid)
    if seen is None:
        return True
    state, started = seen
    return state != "Z" and start in ("", "0", started)


def sweep(comm: MPI.Comm) -> None:
    """At a command's start, on every rank: remove what the recorded processes of this host that no longer run
    left, and their files in the registry; rank 0 says in one line what the ranks removed. Ranks of one host sweep
    at once: each stopped process's file is taken by one of them (a lock), and a removal that fails is left."""
    swept = comm.gather(_sweep(), root=0)
    if comm.Get_rank() == 0:
        line = _summary([r for rank in swept for r in rank])
        if line:
            sys.stderr.write(line + "\n")


def _summary(removed: list[Removed]) -> str:
    """The one line that says what a sweep removed, "" for nothing."""
    removed = [r for r in removed if r[1] or r[2]]
    if not removed:
        return ""
    files, directories = sum(r[1] for r in removed), sum(r[2] for r in removed)
    what = [f"{n} {one if n == 1 else many}" for n, one, many in
            ((files, "temporary file", "temporary files"), (directories, "temporary folder", "temporary folders"))
            if n]
    pids = sorted({r[0] for r in removed})
    named = ", ".join(str(p) for p in pids[:NAMED_PIDS]) + (f" and {len(pids) - NAMED_PIDS} more"
                                                            if len(pids) > NAMED_PIDS else "")
    by = "a stopped run" if len(pids) == 1 else "stopped runs"
    return f"climio: removed {' and '.join(what)} left by {by} (pid {named})"


def folder() -> str | None:
    """The registry's folder, made on first use and private to the user; None where there can be none (a
    read-only temporary folder, or another user's folder of that name)."""
    return _folder(os.environ.get("XDG_RUNTIME_DIR", ""), tempfile.gettempdir())


@functools.cache
def _folder(runtime: str, temporary: str) -> str | None:
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK | os.X_OK):
        place = os.path.join(runtime, "climio")
    else:
        place = os.path.join(temporary, f"climio-{os.getuid()}")
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(place, 0o700)
        info = os.lstat(place)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        return None
    return place


@functools.cache
def _entry(pid: int) -> str | None:
    """Process ``pid``'s file in the registry (the name only: the first record makes it), None without a
    registry; its removal at a normal exit is arranged here."""
    place = folder()
    if place is None:
        return None
    seen = _state(pid)
    entry = os.path.join(place, f"{targets.host()}.{pid}.{seen[1] if seen else 0}")
    atexit.register(_close, pid, entry)
    return entry


def _close(pid: int, entry: str) -> None:
    """At a normal exit of process ``pid`` (not of a child forked from it): remove what its file still lists,
    then the file."""
    if os.getpid() == pid:
        _take(entry, pid)


def _state(pid: int) -> tuple[str, str] | None:
    """(state, start time) of process ``pid`` from ``/proc``, None where there is none to read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # after the command's name, which may hold anything
        return fields[0].decode(), fields[19].decode()
    except (OSError, IndexError):
        return None


def _sweep() -> list[Removed]:
    """This rank's share of the sweep: what it removed, for each stopped process whose file it took."""
    place = folder()
    if place is None:
        return []
    try:
        names = os.listdir(place)
    except OSError:
        return []
    removed = []
    for name in names:
        parts = name.split(".")
        if len(parts) != 3 or parts[0] != targets.host() or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid != os.getpid() and not running(pid, parts[2]):
            removed.append((pid, *_take(os.path.join(place, name), pid)))
    return removed


def _take(entry: str, pid: int) -> tuple[int, int]:
    """Remove the paths ``entry`` of process ``pid`` lists, then ``entry``: (files, directories) removed. A file
    another sweeper holds is left to it."""
    try:
        f = open(entry, "rb")
    except OSError:
        return 0, 0  # already taken
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0, 0
        except OSError:
            pass  # a file system without locks: two sweepers then race, and the loser's removals fail
        kinds = [_remove(os.fsdecode(line), pid) for line in f.read().splitlines()]
        with contextlib.suppress(OSError):
            os.unlink(entry)
    return kinds.count("file"), kinds.count("directory")


def _remove(path: str, pid: int) -> str:
    """Remove ``path`` if it is still a temporary file of process ``pid``, a climio session directory or scratch
    folder, and the user's: "file", "directory", or "" (gone, or anything else, which is never touched)."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):  # ValueError: a line that is no path
        return ""
    name = os.path.basename(path)
    owner = targets.temporary_owner(name)
    try:
        if (stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and owner is not None
                and owner[1:] == (targets.host(), pid)):
            os.unlink(path)
            return "file"
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and name.startswith(
                (mpi.SESSION_PREFIX, *SCRATCH_PREFIXES)):
            shutil.rmtree(path)
            return "directory"
    except OSError:
        pass
    return ""
