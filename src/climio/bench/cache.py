"""Cold-cache benchmarks: empty the page cache of an input before a timed run, and time ``dd``'s read of
the same file from a cold cache as the baseline the disk allows.

Every figure taken with the input in the page cache measures memory, not the disk users' files are on.
Dropping the whole cache (``/proc/sys/vm/drop_caches``) needs root; otherwise the file's own pages are
dropped with ``posix_fadvise(POSIX_FADV_DONTNEED)``, which empties them unless another process holds them
mapped. Which of the two was used is reported with the results.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

from climio.errors import ClimioError


def evict(path: str) -> None:
    """Flush ``path`` to disk and drop its own pages from the page cache (``fsync`` then
    ``posix_fadvise(DONTNEED)``): what a writer's timing includes, since written means on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def drop(path: str) -> str:
    """Empty the page cache before a cold read of ``path``: all of it where permitted (root), else the
    file's own pages (:func:`evict`); returns the method, ``drop_caches`` or ``fadvise``."""
    os.sync()  # dirty pages are not dropped: write them first
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "drop_caches"
    except OSError:
        evict(path)
        return "fadvise"


def cold_dd_seconds(path: str) -> float:
    """Wall seconds of ``dd if=PATH of=/dev/null bs=64M`` right after :func:`drop`: the disk's sequential
    read of the whole file, the baseline of a cold run."""
    drop(path)
    started = time.perf_counter()
    result = subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=64M"], capture_output=True, text=True)
    if result.returncode != 0:
        raise ClimioError(f"dd of '{path}' failed: {result.stderr.strip()[-200:]}", collective=True)
    return time.perf_counter() - started


def warm(path: str) -> None:
    """Read the file once so that the timed runs start from the page cache."""
    with open(path, "rb", buffering=0) as f:
        while f.read(64 * 2**20):
            pass


def before_timed_run(path: str, cold: bool) -> dict[str, Any]:
    """A timed run's cache fields: with ``cold``, dd's cold read of ``path`` (the baseline, ``cold_dd_s``) and
    then its pages dropped (``cache``: how); otherwise the pages stay where :func:`warm` put them."""
    if not cold:
        return {"cache": "warm"}
    return {"cold_dd_s": cold_dd_seconds(path), "cache": drop(path)}
