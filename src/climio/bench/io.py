"""``climio bench io``: write and read the CMIP field in each mode, next to a plain sequential file.

For each rank count (each under its own mpiexec) and repetition, the field is
generated once in memory (ranks own contiguous blocks of days), then:

* baseline: rank 0 alone writes the same number of bytes to a plain file with
  sequential ``write`` calls and ``fsync`` (what ``dd`` measures), drops it from
  the page cache, and reads it back sequentially;
* every mode: all ranks write the field (create, write, close, ``fsync``), the
  file is dropped from the page cache, and each rank reads its own block back
  (``serial`` reads on rank 0 and scatters, the others read in parallel); the
  data read back must equal what was written.

Times are wall-clock between barriers, so they are the slowest rank's; the
report gives medians over repetitions in MB/s (1 MB = 10**6 bytes).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.bench.cache import evict
from climio.bench.runner import (check_directory, check_reps, grouped, make_directory, markdown_table, rows_per_size,
                                 save_results, save_rows, scratch_directory)
from climio.core import mpi, ncio
from climio.core.decomp import Decomposition
from climio.errors import ClimioError
from climio.gen import cmip

if TYPE_CHECKING:
    from mpi4py import MPI

CHUNK = 64 * 2**20


def sequential_write(path: str, source: np.ndarray, nbytes: int) -> float:
    """Seconds to write ``nbytes`` (cycling over ``source``'s bytes) in 64 MiB sequential writes, with fsync."""
    from mpi4py import MPI

    view = memoryview(source.reshape(-1).view(np.uint8))
    started = MPI.Wtime()
    with open(path, "wb", buffering=0) as f:
        written = 0
        while written < nbytes:
            piece = view[written % len(view):][:min(CHUNK, nbytes - written)]
            written += f.write(piece)
        os.fsync(f.fileno())
    return MPI.Wtime() - started


def sequential_read(path: str) -> float:
    """Seconds for one process to read ``path`` from a cold page cache in 64 MiB sequential reads."""
    from mpi4py import MPI

    evict(path)
    buffer = bytearray(CHUNK)
    started = MPI.Wtime()
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buffer):
            pass
    return MPI.Wtime() - started


def sequential_baseline(path: str, source: np.ndarray, nbytes: int) -> tuple[float, float]:
    """Plain sequential write (with fsync) then, from a cold page cache, sequential read of ``nbytes``."""
    write_seconds = sequential_write(path, source, nbytes)
    read_seconds = sequential_read(path)
    os.unlink(path)
    return write_seconds, read_seconds


def measure(comm: MPI.Comm, shape: tuple[int, int, int], modes: Sequence[str], reps: int, directory: str,
            hints: dict[str, str]) -> list[dict[str, Any]]:
    """All measurements of this job's size (collective); rows on rank 0."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    owned = Decomposition.block1d(shape, size, axis=0).owned(rank)
    clim = cmip.climatology(shape[1], shape[2])
    block = cmip.field(1, owned.start[0], owned.count[0], clim).reshape(owned.count)
    schema = cmip.schema(shape, "pr", 1, "climio bench io")
    coords = cmip.coordinates(shape)
    nbytes = int(np.prod(shape)) * 4
    rows: list[dict[str, Any]] = []
    with scratch_directory(comm, "io", directory) as workdir:
        for rep in range(reps):
            comm.Barrier()
            if rank == 0:
                w, r = sequential_baseline(os.path.join(workdir, "baseline.bin"), block, nbytes)
                rows.append({"ranks": size, "mode": "sequential", "rep": rep, "bytes": nbytes,
                             "write_s": w, "read_s": r})
            for mode in modes:
                path = os.path.join(workdir, f"pr-{mode}.nc")
                comm.Barrier()
                started = MPI.Wtime()
                with ncio.create(path, schema, mode, comm, hints=hints) as ds:
                    ds.write_many((name, values, None) for name, values in coords.items())
                    ds.write("pr", block, owned)
                if rank == 0:
                    evict(path)  # fsync: the write is not done until the data is on disk
                comm.Barrier()
                write_seconds = MPI.Wtime() - started
                comm.Barrier()
                started = MPI.Wtime()
                with ncio.open(path, comm, read="root" if mode == "serial" else "parallel", hints=hints) as ds:
                    back = ds.read("pr", owned)
                comm.Barrier()
                read_seconds = MPI.Wtime() - started
                if not mpi.all_true(comm, np.array_equal(back, block)):
                    raise ClimioError(f"bench io: data read back from mode {mode} differ from what was written",
                                      collective=True)
                del back
                if rank == 0:
                    os.unlink(path)
                    rows.append({"ranks": size, "mode": mode, "rep": rep, "bytes": nbytes,
                                 "write_s": write_seconds, "read_s": read_seconds})
    return rows


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median MB/s per (ranks, mode), with the sequential baseline of the same run beside it."""
    table = []
    order = ["sequential", *ncio.MODES]
    cases = grouped(rows, "ranks", "mode")
    for (nranks, mode), sample in sorted(cases.items(), key=lambda case: (case[0][0], order.index(case[0][1]))):
        base = cases.get((nranks, "sequential"), [])
        mbps = lambda rs, key: statistics.median(r["bytes"] / r[key] / 1e6 for r in rs)  # noqa: E731
        entry = {"ranks": nranks, "mode": mode, "reps": len(sample), "MB": sample[0]["bytes"] / 1e6,
                 "write_MBps": mbps(sample, "write_s"), "read_MBps": mbps(sample, "read_s")}
        if base:
            entry["write_vs_sequential"] = entry["write_MBps"] / mbps(base, "write_s")
            entry["read_vs_sequential"] = entry["read_MBps"] / mbps(base, "read_s")
        table.append(entry)
    return table


def format_table(table: list[dict[str, Any]]) -> str:
    columns = [("ranks", "r"), ("mode", "l")] + [(h, "r") for h in (
        "write MB/s", "read MB/s", "write / sequential", "read / sequential")]
    return markdown_table(columns, ([str(e["ranks"]), e["mode"], f"{e['write_MBps']:.0f}", f"{e['read_MBps']:.0f}",
                                     f"{e.get('write_vs_sequential', 1.0):.2f}",
                                     f"{e.get('read_vs_sequential', 1.0):.2f}"] for e in table))


def main(comm: MPI.Comm, *, shape: tuple[int, ...], modes: Sequence[str], ranks: tuple[int, ...] | None, reps: int,
         directory: str, out: str | None, hints: dict[str, str], rows_json: str | None = None) -> None:
    check_reps(reps)
    for mode in modes:
        ncio.get_mode(mode)
    mpi.agree(comm, lambda: check_directory(directory, "--dir"))
    if out:
        mpi.agree(comm, lambda: make_directory(out))
    shape3 = (shape[0], shape[1], shape[2])
    if ranks and comm.Get_size() > 1:
        raise ClimioError("--ranks starts its own mpiexec for each rank count: run 'climio bench io --ranks ...' "
                          "as a plain process, or drop --ranks under mpiexec", collective=True)
    if ranks:
        args = ["--shape", ",".join(map(str, shape3)), "--modes", ",".join(modes), "--reps", str(reps), "--dir",
                directory, *[f"--hint={k}={v}" for k, v in hints.items()]]
        rows = rows_per_size("io", ((f"{n} rank(s)", n, args) for n in ranks))
    else:
        rows = measure(comm, shape3, modes, reps, directory, hints)
    if rows_json:
        save_rows(comm, rows, rows_json)
        return
    if comm.Get_rank() != 0:
        return
    table = summarise(rows)
    print(f"climio bench io: pr{tuple(shape3)} float32, {table[0]['MB']:.0f} MB, median of {reps} rep(s)")
    print(format_table(table))
    if out:
        save_results(out, "results", {"shape": shape3, "reps": reps, "hints": hints, "rows": rows, "table": table},
                     table)
