"""Where numba keeps climio's compiled kernels: one cache directory per version of the package's sources.

numba caches a compiled function beside its source and trusts it while that one file's time stamp is unchanged.
It does not look at the functions it calls in other files, so a kernel that inlines another module's function
(``gev.terms`` in the trend fits, ``vecmath.log`` almost everywhere) would keep running the old code after
only that other file changed (a ``git pull`` on an editable install): a silent wrong answer. Keying the whole
cache on a digest of every source file of the package makes any change start a fresh cache instead.

Call :func:`use_versioned_cache` before the first ``@numba.njit(cache=True)`` of a module runs (the modules that
call it import numba next anyway); it respects ``NUMBA_CACHE_DIR`` as the root under which the versions are kept.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # src/climio


@cache
def source_digest() -> str:
    """A digest of every ``.py`` file of the package (its path, size and modification time, as numba judges one
    file; a few milliseconds, unlike reading them): the version numba's cache is for."""
    digest = hashlib.sha256()
    pending = [str(PACKAGE)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    stat = entry.stat()
                    digest.update(f"{entry.path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """``$NUMBA_CACHE_DIR``, else ``$XDG_CACHE_HOME/climio/numba`` (``~/.cache/climio/numba``)."""
    given = os.environ.get("CLIMIO_NUMBA_CACHE_ROOT") or os.environ.get("NUMBA_CACHE_DIR")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "climio" / "numba"


@cache
def use_versioned_cache() -> Path:
    """Point numba's cache at this version's directory (for numba loaded later too), and let a cache that cannot
    be written be skipped (:func:`tolerate_unwritable_cache`); returns the directory."""
    tolerate_unwritable_cache()
    root = cache_root()
    os.environ.setdefault("CLIMIO_NUMBA_CACHE_ROOT", str(root))  # what NUMBA_CACHE_DIR said before we set it
    directory = root / source_digest()
    os.environ["NUMBA_CACHE_DIR"] = str(directory)
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba already read its environment: tell it directly
        config.CACHE_DIR = str(directory)  # type: ignore[attr-defined]
    return directory


def tolerate_unwritable_cache() -> None:
    """Make numba's cache best-effort: on a full disk, under a file-size limit, or with a read-only home and a
    read-only install, the kernel still runs, compiled in memory, and the job goes on. numba itself lets the
    ``OSError`` of its cache file end the job (after removing its temporary file), and refuses to define a
    ``cache=True`` function for which no directory is writable (``RuntimeError: cannot cache function``), over
    what is only an optimisation; it has no setting for either, so its saving method and its enabling of the
    cache are wrapped once."""
    from numba.core import caching, dispatcher

    if getattr(caching.Cache.save_overload, "skips_unwritable", False):
        return
    save = caching.Cache.save_overload
    enable = dispatcher.Dispatcher.enable_caching

    def save_overload(self: caching.Cache, sig: object, data: object) -> None:
        try:
            save(self, sig, data)
        except OSError:
            pass

    def enable_caching(self: dispatcher.Dispatcher) -> None:
        try:
            enable(self)
        except RuntimeError:  # no writable cache directory anywhere: the dispatcher keeps its NullCache
            pass

    save_overload.skips_unwritable = True  # type: ignore[attr-defined]
    caching.Cache.save_overload = save_overload  # type: ignore[method-assign]
    dispatcher.Dispatcher.enable_caching = enable_caching  # type: ignore[method-assign]


@dataclass
class CompileClock:
    """Seconds this process spent compiling kernels numba's cache did not have (nested compilations once)."""

    seconds: float = 0.0
    depth: int = 0
    started: float = 0.0
    announced: bool = False


@contextmanager
def compile_clock(announce: Callable[[], None]) -> Iterator[CompileClock]:
    """Time every compilation inside the block; ``announce()`` runs at the first one, so a run that must compile
    says so while it waits rather than looking stuck. numba reports a compilation only on a cache miss."""
    from numba.core import event

    clock = CompileClock()

    class Listener(event.Listener):
        def on_start(self, _: event.Event) -> None:
            if clock.depth == 0:
                if not clock.announced:
                    clock.announced = True
                    announce()
                clock.started = time.perf_counter()
            clock.depth += 1

        def on_end(self, _: event.Event) -> None:
            clock.depth -= 1
            if clock.depth == 0:
                clock.seconds += time.perf_counter() - clock.started

    with event.install_listener("numba:compile", Listener()):
        yield clock
