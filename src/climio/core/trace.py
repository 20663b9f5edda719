"""A light tracer: named phases timed with a monotonic clock, bytes per phase, one flush at the end.

Recording appends to an in-memory list (no I/O, no communication), so tracing
costs nothing measurable inside timed loops. ``report`` gathers every rank's
records once and adds the max and mean over ranks per phase, which is what
parallel I/O studies compare (the slowest rank sets the step time).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mpi4py import MPI


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _clock() -> float:
    """Monotonic seconds (what MPI_Wtime reads on Linux), usable before MPI is initialised."""
    return time.perf_counter()


@dataclass
class Tracer:
    """Per-rank log of ``(phase, start, end, nbytes)`` records."""

    records: list[tuple[str, float, float, int]] = field(default_factory=list)
    origin: float = field(default_factory=_clock)
    collectives: dict[str, int] = field(default_factory=dict)  # collective MPI calls inside each phase, if counted
    tallies: dict[str, dict[str, int]] = field(default_factory=dict)  # counts summed under a name

    @contextmanager
    def phase(self, name: str, nbytes: int = 0) -> Iterator[None]:
        """Time the enclosed block as one occurrence of phase ``name`` that moved ``nbytes`` (and count the
        collective MPI calls made inside it, where climio's library counts them)."""
        from climio.core.collectives import calls

        start, before = _clock(), calls()
        try:
            yield
        finally:
            self.records.append((name, start - self.origin, _clock() - self.origin, int(nbytes)))
            if before is not None:
                self.collectives[name] = self.collectives.get(name, 0) + calls() - before  # type: ignore[operator]

    def count(self, name: str, nbytes: int) -> None:
        """Record ``nbytes`` under ``name`` without a duration: a size a benchmark reads from the report (the
        bytes a subset selected, say) rather than from what the command prints."""
        now = _clock() - self.origin
        self.records.append((name, now, now, int(nbytes)))

    def tally(self, name: str, counts: dict[str, int]) -> None:
        """Add ``counts`` (messages, bytes, calls, ...) to those kept under ``name``: what a layer did, for a
        benchmark to compare with what it predicted (:mod:`climio.bench.scale`)."""
        kept = self.tallies.setdefault(name, {})
        for key, value in counts.items():
            kept[key] = kept.get(key, 0) + int(value)

    def totals(self) -> dict[str, dict[str, float]]:
        """Time, bytes and calls summed per phase on this rank."""
        out: dict[str, dict[str, float]] = {}
        for name, start, end, nbytes in self.records:
            entry = out.setdefault(name, {"seconds": 0.0, "bytes": 0, "calls": 0})
            entry["seconds"] += end - start
            entry["bytes"] += nbytes
            entry["calls"] += 1
        for name, count in self.collectives.items():
            out[name]["collectives"] = count
        return out

    def report(self, comm: MPI.Comm) -> dict[str, Any] | None:
        """Gather all ranks' totals on rank 0 with max/mean over ranks (and each rank's collective MPI calls so far,
        where climio's library counts them); None elsewhere."""
        from climio.core import collectives

        per_rank = comm.gather({"rank": comm.Get_rank(), "phases": self.totals(), "peak_rss_bytes": peak_rss(),
                                "collective_calls": collectives.calls(), "tallies": self.tallies, "events": [list(r) for r in self.records]},
                               root=0)
        if per_rank is None:
            return None
        summary: dict[str, dict[str, float]] = {}
        names = sorted({n for r in per_rank for n in r["phases"]})
        for name in names:
            seconds = [r["phases"].get(name, {}).get("seconds", 0.0) for r in per_rank]
            nbytes = [r["phases"].get(name, {}).get("bytes", 0) for r in per_rank]
            summary[name] = {"max_seconds": max(seconds), "mean_seconds": sum(seconds) / len(seconds),
                             "total_bytes": sum(nbytes),
                             "bandwidth_MBps": sum(nbytes) / max(seconds) / 1e6 if max(seconds) > 0 else 0.0}
        return {"nranks": comm.Get_size(), "summary": summary, "ranks": per_rank,
                "peak_rss_bytes": {"max": max(r["peak_rss_bytes"] for r in per_rank),
                                   "total": sum(r["peak_rss_bytes"] for r in per_rank)}}

    def write(self, path: str, comm: MPI.Comm) -> None:
        """Flush the report to ``path`` as JSON, atomically (rank 0 writes; collective)."""
        from climio.core.targets import write_atomically

        report = self.report(comm)
        if report is not None:
            def dump(temp: str) -> None:
                with open(temp, "w") as f:
                    json.dump(report, f, indent=1)

            write_atomically(path, "--trace", dump, " (the command's outputs are complete)")


_active = Tracer()


def tracer() -> Tracer:
    """The process-wide tracer that library layers record into."""
    return _active


def phase(name: str, nbytes: int = 0):  # type: ignore[no-untyped-def]
    """Shorthand for ``tracer().phase(name, nbytes)``."""
    return _active.phase(name, nbytes)


def count(name: str, nbytes: int) -> None:
    """Shorthand for ``tracer().count(name, nbytes)``."""
    _active.count(name, nbytes)


def reset() -> Tracer:
    """Start a fresh process-wide log (e.g. between benchmark repetitions)."""
    global _active
    _active = Tracer()
    return _active
