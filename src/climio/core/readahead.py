"""Read-ahead: hand byte ranges of a file to the kernel (``posix_fadvise(POSIX_FADV_WILLNEED)``) from a
background thread, so that the disk reads what a rank needs next while the rank computes.

The call returns at once while the disk's request queue has room, but blocks while it is full: called
from the computing thread it stalled the scan for seconds per run (10-13 s of a 60 s eva run on a 53 GB
field). One daemon thread per process takes the ranges in order from a queue; the syscall releases
the GIL. Advice only: a range that cannot be advised (a file gone, a pipe) is skipped.
"""

from __future__ import annotations

import os
import queue
import threading

from climio.core import trace

_ranges: queue.SimpleQueue[tuple[str, int, int]] = queue.SimpleQueue()
_worker: threading.Thread | None = None
_lock = threading.Lock()


def advise(path: str, offset: int, length: int) -> None:
    """Ask for ``length`` bytes of ``path`` from ``offset`` to be read into the page cache; returns at once."""
    global _worker
    with _lock:
        if _worker is None:
            _worker = threading.Thread(target=_advise_forever, name="climio-readahead", daemon=True)
            _worker.start()
    _ranges.put((path, offset, length))


def _advise_forever() -> None:
    while True:
        path, offset, length = _ranges.get()
        with trace.phase("prefetch", length):  # the background thread's wait for room in the disk's queue
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, offset, length, os.POSIX_FADV_WILLNEED)
                finally:
                    os.close(fd)
            except OSError:
                pass
