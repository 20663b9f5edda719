"""``climio tune``: this machine's per-operation costs, measured, as a machine file for the cost model
(:mod:`climio.model.costmodel`).

The driver starts itself on 2 ranks (``mpiexec``); the ranks measure, each figure the median of several runs:

- ``copy_Bps``, ``row_s``: both ranks converting 128 MiB of float32 rows with a halo into big-endian (a classic
  file's pack), in rows of 1,024 and of 48 values: the bandwidth, and what each row adds (short rows are a small
  block's, whose every row is a run in memory: the pack and MPI's datatypes walk them one by one);
- ``touch_Bps``, ``huge_touch_Bps``: both ranks making new arrays of 1 MiB and of 8 MiB, 128 MiB in all, and
  touching every page (a file's first step makes every record's buffers; numpy asks for huge pages on arrays
  of 4 MiB or more);
- ``latency_s``: ping-pong of 8 bytes between the two ranks;
- ``link_Bps``, ``message_row_s``: 12 MiB each way between the two ranks at once, rows of a block inside a
  halo landing as rows of a record (subarray datatypes on both sides, as climio's exchanges send them), in
  rows of 1,024 values (the bandwidth) and of 48 (what each row adds);
- ``collective_s``: an 8-byte allreduce on the two ranks;
- ``write_Bps``: one process's ``pwrite`` of 4 KiB and of 16 MiB requests into a new file in ``--dir`` (the
  bandwidth from the difference); ``request_s``: 256-byte ``pwrite`` s with gaps between them, less their bytes
  (a block's rows, each a request of its own); ``servers_Bps``: both ranks writing 16 MiB requests into one file
  at once;
- ``run_s``: ``direct`` steps through ``ModelOutput`` of 4,096 runs of 48 values from each rank, interleaved
  with the other's, against one run of the same bytes each: what each run adds on the node's one MPI-IO
  aggregator (ROMIO's default), which sorts and copies both ranks' runs, with climio's own listing of them;
- ``sync_Bps``: 256 MiB written then ``fsync`` (0 where it costs nothing: tmpfs);
- per storage mode, through ``ModelOutput`` on the two ranks with records of 2 x 2 values: the cost of creating
  and closing a file of 1 and of 64 variables (``file_s``, ``define_s``), and of steps of 1 and of 64 records
  (a step's and a record's fixed costs, ``step_s`` and ``record_s``, and their collective calls,
  ``collectives`` and ``record_collectives``, whose time the model counts apart); and ``record_Bps``: rank 0
  alone writing steps of 16 records of 4 MiB through the mode's library (netCDF-C for ``serial``, HDF5 for
  ``hdf5``, climio's own writes for the classic modes), less those fixed costs and the pack.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.model.costmodel import CLASSIC, PER_MODE, Machine, save
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI

    from climio.model.output import ModelOutput

REPS = 5
MODES = ("serial", "cdf2", "cdf5", "hdf5")
MANY = 64  # variables and records of the per-mode runs
RUN_BYTES = 256  # a row of a block, written on its own
PACKED = 128 << 20  # bytes packed to measure a copy's bandwidth


@contextmanager
def probe(comm: MPI.Comm | None, directory: str, what: str) -> Iterator[str]:
    """A probe file's path in ``directory``, the same on every rank of ``comm`` (None: this process alone):
    a hidden climio temporary, registered before it is made, so that a later climio run removes it if this one
    is killed, and removed here however the measurement ends."""
    from climio.core.targets import PENDING_OUTPUTS, temporary_name

    mine = comm is None or comm.Get_rank() == 0
    path = temporary_name(os.path.join(directory, f"climio-tune-{what}")) if mine else None
    path = comm.bcast(path) if comm is not None else path
    assert path is not None
    PENDING_OUTPUTS.add(path)
    try:
        yield path
    finally:
        if comm is not None:
            comm.Barrier()
        if mine:
            with suppress(FileNotFoundError):
                os.unlink(path)
        PENDING_OUTPUTS.discard(path)


def slowest(comm: MPI.Comm, run: Callable[[], None]) -> float:
    """:func:`median_time` of ``run`` on every rank at once (they start together), the slowest rank's."""
    from mpi4py import MPI

    comm.Barrier()
    return float(comm.allreduce(median_time(run), op=MPI.MAX))


def median_time(run: Callable[[], None], reps: int = REPS) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def copy_rates(comm: MPI.Comm) -> tuple[float, float]:
    """Bytes a second each rank packs while the other does too, and the seconds each row adds: 128 MiB of
    float32 rows (more than any cache holds: a step's fields are) with a halo of 2 on each side (as a model's
    arrays have), rows of 1,024 and of 48 values, into a contiguous big-endian buffer."""

    def pack(width: int) -> float:
        values = np.random.default_rng(0).random((PACKED // 4 // width, width + 4), dtype=np.float32)
        inner = values[:, 2:-2]
        out = np.empty(inner.shape, ">f4")
        return slowest(comm, lambda: np.copyto(out, inner, casting="unsafe"))

    long_rows, short_rows = pack(1024), pack(48)
    rows = PACKED // 4 // 48 - PACKED // 4 // 1024
    return PACKED / long_rows, max(short_rows - long_rows, 0.0) / rows


def ping_pong(comm: MPI.Comm, nbytes: int, rounds: int) -> float:
    """Seconds of one message of ``nbytes`` between ranks 0 and 1 while the other goes the other way (an exchange
    sends and receives at once)."""
    out, back = np.zeros(max(nbytes, 1), np.uint8), np.zeros(max(nbytes, 1), np.uint8)
    peer = 1 - comm.Get_rank()

    def run() -> None:
        for _ in range(rounds):
            comm.Sendrecv(out, peer, recvbuf=back, source=peer)

    return slowest(comm, run) / rounds


def strided_exchange(comm: MPI.Comm, width: int, nbytes: int = 12 << 20) -> float:
    """Seconds of ``nbytes`` of float32 rows of ``width`` values going each way between the two ranks at once,
    as climio's exchanges send them: rows of a block inside a halo of 2, landing as rows of a larger record
    (subarray datatypes on both sides: MPI copies them through its buffers, not in one copy)."""
    from mpi4py import MPI

    rows = nbytes // 4 // width
    block = np.zeros((rows, width + 4), np.float32)
    record = np.zeros((rows, 2 * width), np.float32)
    sent = MPI.FLOAT.Create_subarray([rows, width + 4], [rows, width], [0, 2]).Commit()
    landed = MPI.FLOAT.Create_subarray([rows, 2 * width], [rows, width], [0, width]).Commit()
    peer = 1 - comm.Get_rank()

    def run() -> None:
        comm.Sendrecv([block, 1, sent], peer, recvbuf=[record, 1, landed], source=peer)

    try:
        for _ in range(REPS):  # untimed: the buffers' pages and MPI's own made first
            run()
        return slowest(comm, run)
    finally:
        sent.Free()
        landed.Free()


def exchange_rates(comm: MPI.Comm, nbytes: int = 12 << 20) -> tuple[float, float]:
    """Bytes a second a rank sends and receives at once in an exchange of long rows (1,024 values), and the
    seconds each further row adds (rows of 48 values, the same bytes)."""
    long_rows, short_rows = strided_exchange(comm, 1024, nbytes), strided_exchange(comm, 48, nbytes)
    rows = nbytes // 4 // 48 - nbytes // 4 // 1024
    return nbytes / long_rows, max(short_rows - long_rows, 0.0) / rows


def allreduce_time(comm: MPI.Comm, rounds: int = 1000) -> float:
    from mpi4py import MPI

    value = np.zeros(1, np.float64)
    comm.Barrier()
    return median_time(lambda: [comm.Allreduce(MPI.IN_PLACE, value) for _ in range(rounds)]) / rounds


def pwrite_time(directory: str, size: int, count: int, stride: int | None = None, path: str | None = None,
                first: int = 0) -> float:
    """Seconds for one process to write ``count`` requests of ``size`` bytes, ``stride`` apart (default: one after
    the other), into a new file (pages the file system must allocate, as a model's output is; no fsync): the
    median of several files; or once into the new file ``path`` from request ``first`` on (another process
    writes the other requests at the same time). Making and removing the file are not timed."""
    data = np.ones(size, np.uint8)
    step = stride or size
    times = []
    for _ in range(REPS if path is None else 1):
        with probe(None, directory, "writes") if path is None else nullcontext(path) as target:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                start = time.perf_counter()
                for k in range(first, first + count):
                    os.pwrite(fd, data, k * step)
                times.append(time.perf_counter() - start)
            finally:
                os.close(fd)
    return statistics.median(times)


def shared_write_time(comm: MPI.Comm, directory: str, size: int, count: int, stride: int | None = None,
                      first: int = 0) -> float:
    """:func:`pwrite_time` on every rank at once into one new file (a new one each time: overwriting pages a
    file already has is faster than making them), the slowest rank's, the median of several files."""
    from mpi4py import MPI

    times = []
    for _ in range(REPS):
        with probe(comm, directory, "shared") as shared:
            comm.Barrier()
            mine = pwrite_time(directory, size, count, stride, path=shared, first=first)
            times.append(comm.allreduce(mine, op=MPI.MAX))
    return statistics.median(times)


def touch_rate(comm: MPI.Comm, nbytes: int = PACKED, each: int = 1 << 20) -> float:
    """Bytes a second each rank makes new arrays and touches their pages while the other does too (a file's
    first step: every record's buffers are made), in arrays of ``each`` bytes as records' are (numpy asks for
    huge pages on one of 4 MiB or more, which fault 512 times less often where the kernel gives them)."""
    def run() -> None:
        made = [np.empty(each, np.uint8) for _ in range(nbytes // each)]
        for array in made:
            array[::4096] = 0

    return nbytes / slowest(comm, run)


def sync_rate(directory: str, nbytes: int = 256 << 20) -> float:
    """Bytes a second ``fsync`` drains to the disk; 0 where it drains nothing measurable (tmpfs)."""
    data = np.ones(nbytes, np.uint8)
    with probe(None, directory, "sync") as path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
            start = time.perf_counter()
            os.fsync(fd)
            seconds = time.perf_counter() - start
        finally:
            os.close(fd)
    return nbytes / seconds if seconds > 0.01 else 0.0


def run_cost(comm: MPI.Comm, directory: str, link_Bps: float, levels: int = 64, rows: int = 64, width: int = 48,
             records: int = 4) -> float:
    """Seconds each run adds on the node's one MPI-IO aggregator (ROMIO's default) to climio's ``direct`` write:
    steps of ``records`` records of ``levels`` x ``rows`` x (2 x ``width``) float32 in two column blocks (each
    rank ``levels`` x ``rows`` runs between the other's, which the aggregator sorts, both ranks' alike) against
    the same bytes as two bands of rows of a 2-D field (each rank's one run: no two-phase write), less the half
    of the bytes the two-phase write moves to the aggregator (the model's exchange counts them)."""
    from mpi4py import MPI

    from climio.model import decomposition as dec
    from climio.model.output import Field, ModelOutput

    size, rank = comm.Get_size(), comm.Get_rank()
    columns = dec.blocks((rows, size * width), size, 1, rank)
    bands = dec.blocks((levels * rows, size * width), 1, size, rank)

    def step_time(share: dec.GridDecomposition, field_levels: int | None, path: str) -> float:
        out = ModelOutput(path, share, [Field(f"v{k}", field_levels) for k in range(records)], comm, mode="cdf5",
                          strategy="direct", overwrite=True)
        try:
            run = later_steps(out, np.ones(share.local_shape(field_levels), np.float32), records)
            comm.Barrier()
            return float(comm.allreduce(median_time(run), op=MPI.MAX))
        finally:
            out.close()

    with probe(comm, directory, "runs.nc") as path:
        many = step_time(columns, levels, path)
        one = step_time(bands, None, path)
    moved = records * levels * rows * width * 4 * (size - 1)
    return max(many - one - moved / link_Bps, 0.0) / (records * (size * levels * rows - 1))


def later_steps(out: ModelOutput, local: np.ndarray, count: int) -> Callable[[], None]:
    """After a first step of ``count`` records ``v0``, ``v1``, ... of ``local`` (it makes the routes and buffers),
    a call that writes the next step."""
    records = {f"v{k}": local for k in range(count)}
    out.write(0, records, 0.0)
    step = [0]

    def run() -> None:
        step[0] += 1
        out.write(step[0], records, float(step[0]))

    return run


def mode_costs(comm: MPI.Comm, directory: str, mode: str) -> dict[str, float]:
    """Through ``ModelOutput`` with records of 2 x 2 values: a file's fixed cost and its cost per variable; a
    step's and a record's fixed costs and collective calls (from steps of 1 and of MANY records)."""
    from mpi4py import MPI

    from climio.core import collectives
    from climio.model import decomposition as dec
    from climio.model.output import Field, ModelOutput

    share = dec.blocks((2, 2 * comm.Get_size()), comm.Get_size(), 1, comm.Get_rank())
    strategy = "root" if mode == "serial" else "agg:1"
    local = np.ones(share.local_shape(None), np.float32)

    def made(count: int, path: str) -> ModelOutput:
        return ModelOutput(path, share, [Field(f"v{k}") for k in range(count)], comm, mode=mode, strategy=strategy,
                           overwrite=True)

    def create(count: int, path: str) -> float:
        def run() -> None:
            made(count, path).close()
            comm.Barrier()
        return slowest(comm, run)

    def steps(count: int, path: str) -> tuple[float, float]:
        """Seconds and collective calls of a step of ``count`` records."""
        out = made(count, path)
        try:
            run = later_steps(out, local, count)
            comm.Barrier()
            before = collectives.calls()
            seconds = comm.allreduce(median_time(run), op=MPI.MAX)
            after = collectives.calls()
        finally:
            out.close()
        calls = -1.0 if before is None else (after - before - 1) / REPS  # the allreduce above is not the step's
        return seconds, comm.allreduce(calls, op=MPI.MAX)

    with probe(comm, directory, f"{mode}.nc") as path:
        one, many = create(1, path), create(MANY, path)
        (t_one, c_one), (t_many, c_many) = steps(1, path), steps(MANY, path)
    per_record = max(c_many - c_one, 0.0) / (MANY - 1)
    return {"file_s": one - (many - one) / (MANY - 1), "define_s": (many - one) / (MANY - 1),
            "record_s": (t_many - t_one) / (MANY - 1), "step_s": t_one - (t_many - t_one) / (MANY - 1),
            "collectives": max(c_one - per_record, 0.0), "record_collectives": per_record}


def library_time(comm: MPI.Comm, directory: str, mode: str, records: int = 16, side: int = 1024) -> float:
    """Seconds of a step of ``records`` records of ``side`` x ``side`` float32 (4 MiB) written by rank 0 alone
    through ``ModelOutput`` in ``mode`` (no exchange: netCDF-C's, HDF5's or climio's own write of them)."""
    from mpi4py import MPI

    from climio.model import decomposition as dec
    from climio.model.output import Field, ModelOutput

    alone = comm.Split(0 if comm.Get_rank() == 0 else MPI.UNDEFINED)
    seconds = 0.0
    with probe(comm, directory, f"library-{mode}.nc") as path:
        if alone != MPI.COMM_NULL:
            try:
                share = dec.blocks((side, side), 1, 1, 0)
                local = np.ones((side, side), np.float32)
                out = ModelOutput(path, share, [Field(f"v{k}") for k in range(records)], alone, mode=mode,
                                  strategy="root", overwrite=True)
                try:
                    seconds = median_time(later_steps(out, local, records))
                finally:
                    out.close()
            finally:
                alone.Free()
        comm.Barrier()
    return float(comm.bcast(seconds))


def measure(comm: MPI.Comm, directory: str) -> dict[str, Any]:
    """Every figure (collective on 2 ranks); the results on rank 0."""
    rank = comm.Get_rank()
    figures: dict[str, Any] = {}
    small, large = 4096, 16 << 20
    figures["latency_s"] = ping_pong(comm, 8, 1000)
    figures["link_Bps"], figures["message_row_s"] = exchange_rates(comm)
    figures["collective_s"] = allreduce_time(comm)
    figures["copy_Bps"], figures["row_s"] = copy_rates(comm)
    figures["touch_Bps"] = touch_rate(comm)
    figures["huge_touch_Bps"] = touch_rate(comm, each=8 << 20)
    if rank == 0:
        t_small = pwrite_time(directory, small, 4096) / 4096
        t_large = pwrite_time(directory, large, 8) / 8
        figures["write_Bps"] = (large - small) / max(t_large - t_small, 1e-12)
        t_run = pwrite_time(directory, RUN_BYTES, 4096, stride=2 * RUN_BYTES) / 4096
        figures["request_s"] = max(t_run - RUN_BYTES / figures["write_Bps"], 0.0)
        figures["sync_Bps"] = sync_rate(directory)
    # both ranks into one new file, as a strategy's writers write: large requests one after the other, and small
    # runs interleaved
    both = shared_write_time(comm, directory, large, 8, first=8 * rank)
    figures["servers_Bps"] = comm.Get_size() * 8 * large / both
    runs = shared_write_time(comm, directory, RUN_BYTES, 4096, stride=2 * RUN_BYTES, first=4096 * rank)
    figures["shared_request_s"] = max(runs / 4096 - RUN_BYTES * comm.Get_size() / figures["servers_Bps"], 0.0)
    figures["run_s"] = run_cost(comm, directory, figures["link_Bps"])
    per_mode = {mode: mode_costs(comm, directory, mode) for mode in MODES}
    for costs in per_mode.values():  # the fixed costs without the collective calls the model counts apart
        costs["record_s"] = max(costs["record_s"] - costs["record_collectives"] * figures["collective_s"], 0.0)
        costs["step_s"] = max(costs["step_s"] - costs["collectives"] * figures["collective_s"], 0.0)
    for mode, costs in per_mode.items():  # a mode's library with big records, less what the model counts apart
        records, nbytes = 16, 16 * (4 << 20)
        fixed = costs["step_s"] + records * costs["record_s"]
        pack = nbytes / figures["copy_Bps"] if mode in CLASSIC else 0.0
        costs["record_Bps"] = nbytes / max(library_time(comm, directory, mode, records) - fixed - pack, 1e-9)
    figures["modes"] = per_mode
    return figures


def machine(figures: dict[str, Any], name: str, cores: int) -> Machine:
    """The machine file's values from the measured figures."""
    modes = figures["modes"]
    per_mode = {key: {m: modes[m][key] for m in modes} for key in (*PER_MODE, "record_Bps")}
    plain = {k: v for k, v in figures.items() if k != "modes"}
    return Machine(name=name, nodes=1, cores_per_node=cores, **plain, **per_mode,
                   sources={"all": "measured by climio tune on 2 ranks"})


def main(comm: MPI.Comm, *, directory: str, out: str, worker_json: str | None) -> None:
    """The driver (a plain process: runs the ranks, writes the machine file) or a worker rank."""
    from climio.bench.runner import run_ranks

    if not os.path.isdir(directory):
        raise ClimioError(f"--dir: '{directory}' is not a directory", collective=True)
    if worker_json is not None:
        figures = measure(comm, directory)
        if comm.Get_rank() == 0:
            with open(worker_json, "w") as f:
                json.dump(figures, f)
        return
    if comm.Get_size() > 1:
        raise ClimioError("climio tune starts its own 2 ranks: run it as a plain process", collective=True)
    print(f"climio tune: measuring this machine's costs on 2 ranks in {directory} ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="climio-tune-") as tmp:
        path = os.path.join(tmp, "figures.json")
        run_ranks(2, ["tune", "--dir", directory, "--worker-json", path])
        with open(path) as f:
            figures = json.load(f)
    found = machine(figures, socket.gethostname(), os.cpu_count() or 1)
    save(found, out)
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        if key != "modes":
            print(f"  {key:<{width}}  {value:.4g}")
    for mode, costs in figures["modes"].items():
        print(f"  {mode:<{width}}  " + ", ".join(f"{k} {v:.4g}" for k, v in costs.items()))
    print(f"machine file: {out}", file=sys.stdout)
