"""Disk space made sure of before each collective write, so a full disk is an error, not a hole or a hang.

Open MPI's OMPIO layer reports a failed ``pwritev`` (no space left, file too
large) on stderr but returns success to PnetCDF: the job ends "fine" with
zeros where the data should be. A classic file's layout is fixed by its header,
so each rank knows the byte range every one of its hyperslabs covers; it asks
the file system for those blocks (``fallocate(2)``) before the collective call
(where the ranks' hyperslabs fill one extent together, a step's records, each
rank asks for its own slice of it: ``StoredWriter``).
The ranks then agree: if any could not get its space, every rank raises the
same :class:`~climio.errors.IOFault` before anyone writes. Blocks once
allocated cannot fail to be written. File systems without ``fallocate``
(``EOPNOTSUPP``: some NFS and older Lustre clients) are left as they are:
glibc's ``posix_fallocate`` would emulate it by writing every block twice.

An HDF5 file's layout is HDF5's own, so there :func:`check_room` compares the
bytes of the coming call (all ranks) with the free space of the file system and
the process's file-size limit: a parallel HDF5 write that fails on some ranks
leaves the others waiting in its collective calls, so it must not start.

A new file of any mode needs room for its header (HDF5: its metadata) before
any of this: :func:`check_new_file`. Without it the libraries fail inside their
collective define in their own words ("HDF error", OMPIO's lines on stderr, a
classic file left empty), none of which names the full disk.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import resource
from typing import TYPE_CHECKING

from climio.core import mpi
from climio.errors import IOFault

if TYPE_CHECKING:
    from mpi4py import MPI

UNSUPPORTED = {errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}
HEADROOM = 2**20  # HDF5's chunk index and metadata, or a new file's header, on top of the data


@functools.cache
def _fallocate() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    call = libc.fallocate
    call.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64)
    call.restype = ctypes.c_int
    return call


class Reserver:
    """One rank's handle on a classic file being written: reserves the blocks of its hyperslabs before writes."""

    def __init__(self, path: str, comm: MPI.Comm) -> None:
        self.path = path
        self.comm = comm
        self._fd: int | None = os.open(path, os.O_WRONLY)

    def reserve(self, ranges: list[tuple[int, int]], where: str) -> None:
        """Allocate ``[lo, hi)`` ranges of the file on this rank, then agree (collective): every rank raises the
        same IOFault if any rank could not."""
        mpi.raise_fault(self.comm, self.claim(ranges, where))

    def claim(self, ranges: list[tuple[int, int]], where: str) -> str:
        """Allocate ``[lo, hi)`` ranges of the file on this rank alone: why it could not, or ''."""
        for lo, hi in ranges:
            if self._fd is None or _fallocate()(self._fd, 0, lo, hi - lo) == 0:
                continue
            code = ctypes.get_errno()
            if code not in UNSUPPORTED:
                return f"{where}: {os.strerror(code).lower()} (reserving {hi - lo} bytes at offset {lo})"
            self.close()  # this file system cannot reserve: writes go ahead as before
        return ""

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def check_room(comm: MPI.Comm, path: str, nbytes: int, where: str) -> None:
    """Refuse a write of ``nbytes`` on this rank (collective: all ranks' bytes together) that the file system's free
    space or the file-size limit (``ulimit -f``) cannot take: every rank raises the same IOFault."""
    from mpi4py import MPI

    total = int(comm.allreduce(nbytes, op=MPI.SUM))
    if total:
        _agree_on_room(comm, path, total, where)


def check_new_file(comm: MPI.Comm, path: str, where: str) -> None:
    """Refuse to define the new file ``path`` (its temporary name; ``where`` names the output) on a file system
    without room for its header and metadata (collective: every rank raises the same IOFault)."""
    _agree_on_room(comm, path, 0, where)


def _agree_on_room(comm: MPI.Comm, path: str, total: int, where: str) -> None:
    """Rank 0's verdict on ``total`` bytes more in ``path``, on every rank."""
    needed = total + max(HEADROOM, total // 100)

    def verdict() -> str:
        stat = os.statvfs(os.path.dirname(os.path.abspath(path)))
        free = stat.f_bavail * stat.f_frsize
        if free < needed:
            what = f"{total} bytes to write" if total else "a new file's header and metadata"
            return (f"{where}: no space left on device ({free} bytes free where {needed} are needed for {what}); "
                    f"free some space or write elsewhere")
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and os.path.getsize(path) + total > limit:
            return f"{where}: file too large (the file-size limit, ulimit -f, is {limit} bytes)"
        return ""

    failure = mpi.agree(comm, verdict)
    if failure:
        raise IOFault(failure, collective=True)
