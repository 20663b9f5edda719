"""The time of an output step from what it does and what each operation costs on a machine.

What a step does is counted per rank by :mod:`climio.model.counts` (messages, bytes moved, bytes and requests
written, for one record). What each operation costs is a :class:`Machine`: measured on this machine by
``climio tune``, or given for a cluster in a site file (TOML, each value with its source). The model adds, for a
step of ``fields`` records of one shape (``ModelOutput.write``: one exchange for the step, one write per record):

- pack: each rank copies its owned values into the file's byte order (classic modes: big-endian);
- exchange: the busiest rank's messages x latency, plus its bytes sent and received at the link's bandwidth, plus
  the bytes it keeps at copy speed, plus its block's rows, each walked by MPI's datatype engine (one
  ``Alltoallw`` a step: messages are paid once, bytes and rows for every record);
- write: the busiest writer's further requests x the cost of a request (a record's first is in its fixed cost),
  its further runs x the cost of a run (MPI-IO flattens and sorts them), and its bytes at one writer's
  bandwidth; or every writer's bytes at the file system's bandwidth, if that takes longer. Writers whose pieces
  interleave and who write through MPI-IO's collective calls (``direct``; every strategy in parallel HDF5) are
  MPI-IO's two-phase write: their runs sent to its aggregators, which write (:func:`file_counts`), its
  messages paid in each collective write call (:func:`collective_writes`). On a file system that stripes files
  over storage targets (``osts``): the step's stripes at the targets' bandwidth, a lock hand-over per further
  writer on a target and record;
- collectives: the mode's collective calls a step, and ROMIO's in each collective write call, each
  ``collective_s`` x log2 P;
- the fixed cost of climio's write path per record (checks, bookkeeping, the library's call).

A file adds its creation (a fixed cost and one per variable), its routes' plans (``stripe``'s in every step
where its records' phases are not kept: :func:`routes_built`), its records' buffers (made
and touched in the first step) and its close, which drains the written bytes to disk at ``sync_Bps`` (where
the file system keeps dirty pages: a disk, not tmpfs).

``auto`` (:func:`auto`) writes with the strategy whose step :func:`ranking` finds fastest.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING

import numpy as np

from climio.core import mpi
from climio.core.decomp import Hyperslab
from climio.core.ncio.stored import PACK_BYTES
from climio.errors import ClimioError
from climio.model.counts import (Job, exchange, filled_nodes, piece_runs, plan_cost, step_counts, tally, writers,
                                 written)
from climio.model.route import spread
from climio.model.strategy import KEPT_STRIPE_ROUTES, Strategy, applicable_modes

if TYPE_CHECKING:
    from mpi4py import MPI

    from climio.model.decomposition import GridDecomposition

SITES = os.path.join(os.path.dirname(__file__), "sites")  # the site files climio ships, by name
FALLBACK_SITE = "node"  # where this machine has not been measured: a small node's costs (its file says whose)
HUGE_ARRAY = 4 << 20  # numpy asks the kernel for huge pages on arrays this large: one fault for 512 pages
CLASSIC = ("serial", "cdf2", "cdf5")  # modes whose files hold big-endian values: every rank packs its share
ROMIO_DECIDES = 1  # collectives of every MPI-IO collective write: an allgather of each rank's first and last
# offsets, by which ROMIO decides whether the requests interleave
ROMIO_TWO_PHASE = 3  # and where they do: an alltoall of request counts, an allreduce of the rounds and an
# alltoall of a round's sizes (one round: an aggregator's range within its 16 MiB buffer)
STEADY_STEPS = 3  # a file's steps after which its step's plans are those of every later one
PER_MODE = ("record_s", "step_s", "collectives", "record_collectives", "define_s", "file_s")


@dataclass(frozen=True)
class Machine:
    """Per-operation costs (seconds, bytes per second) of a machine and its file system."""

    name: str
    nodes: int
    cores_per_node: int
    copy_Bps: float  # one core copying memory (into the file's byte order), every core at it
    row_s: float  # each run in memory a copy walks (a row of a block with a halo)
    touch_Bps: float  # making new arrays of a record's size and touching their pages (a file's first step's buffers)
    latency_s: float  # a message's start-up between two ranks
    link_Bps: float  # what one rank sends or receives per second
    message_row_s: float  # each row of a block a message's datatype walks
    collective_s: float  # one small collective call on 2 ranks; log2 P of them on P
    write_Bps: float  # one writer into the file system
    servers_Bps: float  # every writer together (the storage targets' sum)
    request_s: float  # a write request's fixed cost (library, MPI-IO, system call)
    shared_request_s: float  # the same while another writer writes small requests into the file
    run_s: float  # each further noncontiguous run a writer sorts (an MPI-IO aggregator: all runs in its range)
    sync_Bps: float  # fsync's drain of written bytes to the disk; 0: nothing to drain (tmpfs)
    record_s: Mapping[str, float]  # climio's fixed cost per record written (its first request included), by mode
    step_s: Mapping[str, float]  # and per step
    collectives: Mapping[str, float]  # collective calls a step, by mode
    record_collectives: Mapping[str, float]  # and a record
    define_s: Mapping[str, float]  # creating a file: cost per variable, by mode
    file_s: Mapping[str, float]  # creating and closing a file: the fixed cost, by mode
    # a file system that stripes files over storage targets (Lustre, GPFS); 0 targets: it does not
    osts: int = 0  # storage targets a file may be striped over
    ost_Bps: float = 0.0  # what one storage target writes per second
    stripe_count: int = 1  # a new file's stripes (the file system's default)
    stripe_size: int = 1 << 20  # and their size in bytes
    lock_s: float = 0.0  # a writer taking a storage target's extent lock from another writer
    huge_touch_Bps: float = 0.0  # the same for arrays of HUGE_ARRAY or more, on huge pages where given (0: as small)
    record_Bps: Mapping[str, float] = field(default_factory=dict)  # one writer through a mode's library (netCDF-C,
    # HDF5), its pack apart, by mode (none: write_Bps)
    sources: Mapping[str, str] = field(default_factory=dict)  # where each value comes from

    def per_node(self, nranks: int) -> int:
        """Ranks on each node of a job of ``nranks``: a node's cores, or more where the nodes are too few."""
        return max(self.cores_per_node, -(-nranks // self.nodes))

    def check_mode(self, mode: str) -> None:
        missing = [name for name in PER_MODE if mode not in getattr(self, name)]
        if missing:
            raise ClimioError(f"machine '{self.name}': no {', '.join(missing)} for mode '{mode}': measure it with "
                              f"climio tune (or add it to the site file)")


def load(path: str) -> Machine:
    """A machine from a site file (TOML: the fields of :class:`Machine`, the per-mode ones as tables)."""
    try:
        with open(path, "rb") as f:
            values = tomllib.load(f)
    except OSError as err:
        raise ClimioError(f"{path}: cannot read the machine file: {err.strerror}; measure one with climio tune")
    except tomllib.TOMLDecodeError as err:
        raise ClimioError(f"{path}: not a TOML machine file: {err}") from err
    names = {f.name for f in fields(Machine)}
    optional = {f.name for f in fields(Machine) if f.default is not MISSING or f.default_factory is not MISSING}
    missing = sorted(names - optional - set(values))
    unknown = sorted(set(values) - names)
    if missing or unknown:
        said = f"lacks {', '.join(missing)}" if missing else f"has unknown keys {', '.join(unknown)}"
        raise ClimioError(f"{path}: the machine file {said}")
    return Machine(**values)


def save(machine: Machine, path: str) -> None:
    """Write ``machine`` as a site file (atomically)."""
    from climio.core.targets import write_atomically

    def value(v: object) -> str:
        return f'"{v}"' if isinstance(v, str) else repr(float(v)) if isinstance(v, float) else str(v)

    plain = {k: v for k, v in asdict(machine).items() if not isinstance(v, Mapping)}
    tables = {k: v for k, v in asdict(machine).items() if isinstance(v, Mapping)}
    lines = [f"{k} = {value(v)}" for k, v in plain.items()]
    for name, table in tables.items():
        lines += ["", f"[{name}]"] + [f'"{k}" = {value(v)}' for k, v in table.items()]

    def dump(temp: str) -> None:
        with open(temp, "w") as f:
            f.write("\n".join(lines) + "\n")

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_atomically(path, "--out", dump, "")


def step_parts(machine: Machine, counts: Mapping[str, np.ndarray], fields: int, mode: str, strategy: str,
               striping: tuple[int, int] | None = None, collective: bool | None = None) -> dict[str, float]:
    """The seconds of each part of one step of ``fields`` records, from one record's per-rank ``counts``
    (:func:`climio.model.counts.step_counts`, or :func:`file_counts` on a striped file system) of a strategy
    named ``strategy``; ``striping``: the file's stripe count and size there; ``collective``: see
    :func:`through_mpiio`."""
    machine.check_mode(mode)
    nranks = len(counts["bytes_written"])
    shared = turns(machine, nranks)
    owned = owned_bytes(counts)
    walk = counts["memory_runs"] * machine.row_s  # a rank's rows, walked by each copy of its share
    pack = fields * float(np.max(owned / machine.copy_Bps + walk)) if mode in CLASSIC else 0.0
    moved = counts["bytes_sent"] + counts["bytes_kept"] > 0
    # MPI-IO's two-phase messages (counted once) are paid in each collective write call: the writers' lists of
    # runs to the aggregators, then the data
    mpiio_calls = collective_writes(mode, strategy, collective, fields, owned)
    mpiio = counts.get("mpiio_messages", np.zeros_like(counts["messages_sent"]))
    messages = counts["messages_sent"] + counts["messages_received"] + max(2 * mpiio_calls - 1, 0) * mpiio
    exchange = float(np.max(messages * machine.latency_s
                            + fields * (counts["bytes_sent"] + counts["bytes_received"]) / machine.link_Bps
                            + fields * (counts["bytes_kept"] / machine.copy_Bps
                                        + np.where(moved, counts["memory_runs"] * machine.message_row_s, 0.0))))
    # classic files written by aggregators: each of a writer's runs is a pwrite of its own; otherwise its
    # requests go to MPI-IO, whose two-phase write takes the runs together
    own_writes = mode in ("cdf2", "cdf5") and not through_mpiio(mode, strategy, collective)
    calls = counts["file_runs"] if own_writes else counts["requests"]
    runs = np.zeros_like(calls) if own_writes else np.maximum(counts["file_runs"] - counts["requests"], 0)
    request_s = machine.shared_request_s if np.count_nonzero(counts["bytes_written"]) > 1 else machine.request_s
    bandwidth = machine.write_Bps if own_writes else min(machine.write_Bps, machine.record_Bps.get(mode, math.inf))
    one_writer = float(np.max(fields * (np.maximum(calls - 1, 0) * request_s + runs * machine.run_s
                                        + counts["bytes_written"] / bandwidth)))
    everyone = fields * float(counts["bytes_written"].sum()) / machine.servers_Bps
    locks = 0.0
    if machine.osts and striping is not None:  # the step's stripes on the targets they use; shared targets' locks
        count, size = striping
        step_bytes = fields * float(counts["bytes_written"].sum())
        used = min(count, machine.osts, max(1, math.ceil(step_bytes / size)))
        everyone = max(everyone, step_bytes / (used * machine.ost_Bps))
        locks = fields * max(float(np.max(counts["sharers"])) - 1.0, 0.0) * machine.lock_s
    calls_a_step = machine.collectives[mode] + fields * machine.record_collectives[mode]
    # ROMIO's own collectives in each call (parallel HDF5's first one is in its measured record_collectives)
    calls_a_step += mpiio_calls * ((ROMIO_DECIDES if mode in CLASSIC else 0) + (ROMIO_TWO_PHASE if mpiio.any() else 0))
    return {"pack": shared * pack, "exchange": exchange, "write": max(one_writer, everyone) + locks,
            "collectives": calls_a_step * machine.collective_s * max(1.0, math.log2(nranks)),
            "fixed": shared * (machine.step_s[mode] + fields * machine.record_s[mode])}


def collective_writes(mode: str, strategy: str, collective: bool | None, fields: int, owned: np.ndarray) -> int:
    """The MPI-IO collective write calls of a step of ``fields`` records (``owned``: each rank's bytes of a
    record): parallel HDF5 makes one a record (a dataset's write), as do writers like PnetCDF's
    (``collective``: one a variable's put); climio's ``direct`` in the classic modes one a part of a step's
    records (:data:`PACK_BYTES` at most); none where nobody writes through MPI-IO."""
    if not through_mpiio(mode, strategy, collective):
        return 0
    if mode == "hdf5" or collective:
        return fields
    return max(1, math.ceil(fields * float(np.max(owned)) / PACK_BYTES))


def turns(machine: Machine, nranks: int) -> float:
    """How many ranks of a job of ``nranks`` take turns on each core (1: a core each): their own CPU work (a
    pack, climio's fixed costs, a plan's build) takes that many times as long."""
    return max(machine.per_node(nranks) / machine.cores_per_node, 1.0)


def run_time(machine: Machine, counts: Mapping[str, np.ndarray], fields: int, steps: int, mode: str, strategy: str,
             plans_s: float = 0.0, striping: tuple[int, int] | None = None, collective: bool | None = None) -> float:
    """Seconds to create a file of ``fields`` variables, build its routes (``plans_s``) and the records'
    buffers (where a rank lands records, or packs its own), write ``steps`` steps and close it."""
    step = sum(step_parts(machine, counts, fields, mode, strategy, striping, collective).values())
    # climio's routes pack each record's share into a buffer of its own, and land each record in another (the
    # aggregators of MPI-IO's two-phase write reuse theirs); direct has no route: the writer packs a call's records
    # (a step's) into one buffer of PACK_BYTES at most, reused
    packed = fields * touch_seconds(machine, counts["bytes_sent"] + counts["bytes_kept"])
    if strategy == "direct":
        packed = touch_seconds(machine, np.minimum(fields * owned_bytes(counts), PACK_BYTES))
    landed = fields * touch_seconds(machine, counts["bytes_landed"])
    buffers = float(np.max(landed + (packed if mode in CLASSIC else 0.0)))
    written = steps * fields * float(counts["bytes_written"].sum())
    drain = written / machine.sync_Bps if machine.sync_Bps > 0 else 0.0
    plans = turns(machine, len(counts["bytes_written"])) * plans_s
    return machine.file_s[mode] + fields * machine.define_s[mode] + plans + buffers + steps * step + drain


def owned_bytes(counts: Mapping[str, np.ndarray]) -> np.ndarray:
    """Each rank's bytes of its own share: what it sends and keeps, or where nobody exchanges, what it writes."""
    moved = counts["bytes_sent"] + counts["bytes_kept"]
    return moved if moved.any() else counts["bytes_written"]


def touch_seconds(machine: Machine, nbytes: np.ndarray) -> np.ndarray:
    """Seconds to make and touch an array of ``nbytes`` (each rank's): numpy asks for huge pages on large ones,
    which the kernel gives where transparent huge pages are ``madvise`` or ``always``."""
    huge = machine.huge_touch_Bps or machine.touch_Bps
    return nbytes / np.where(nbytes >= HUGE_ARRAY, huge, machine.touch_Bps)


def settle(machine: Machine, job: Job, text: str, mode: str, *, stripe_count: int | None = None,
           stripe_size: int | None = None) -> Strategy:
    """``text`` resolved for ``job`` on ``machine`` (its ranks filling the nodes in turn)."""
    nodes = filled_nodes(job.nranks, machine.per_node(job.nranks))
    if machine.osts:  # the file system's own striping unless told
        stripe_count = stripe_count or min(machine.stripe_count, job.nranks)
        stripe_size = stripe_size or machine.stripe_size
    return Strategy.settle(text, mode, nodes, job.share(0), stripe_count=stripe_count, stripe_size=stripe_size)


@dataclass(frozen=True)
class Counted:
    """What :func:`predict` prices, worked out once for any costs of the same machine's shape (its nodes and
    storage targets): a strategy settled for a job, its counts as the file system sees them, the file's
    striping, and the seconds one of its routes' plans takes to build."""

    job: Job
    strategy: Strategy
    counts: dict[str, np.ndarray]
    striping: tuple[int, int] | None
    plan_s: float
    collective: bool | None

    def seconds(self, machine: Machine, mode: str, fields: int, steps: int) -> float:
        plans_s = self.plan_s * sum(routes_built(self.job, self.strategy, fields, steps))
        return run_time(machine, self.counts, fields, steps, mode, self.strategy.name, plans_s, self.striping,
                        self.collective)


def count(machine: Machine, job: Job, text: str, mode: str, *, stripe_count: int | None = None,
          stripe_size: int | None = None, collective: bool | None = None) -> Counted:
    """:func:`predict`'s counts and plans (``stripe_count`` and ``stripe_size``: the file's striping, where not
    the file system's default; ``collective``: see :func:`through_mpiio`)."""
    strategy = settle(machine, job, text, mode, stripe_count=stripe_count, stripe_size=stripe_size)
    counts, striping = file_counts(machine, job, strategy, mode, stripe_count=stripe_count, stripe_size=stripe_size,
                                   collective=collective)
    planned = step_counts(job, strategy)  # climio's own route, not MPI-IO's
    return Counted(job, strategy, counts, striping, plan_seconds(job, strategy, planned), collective)


def predict(machine: Machine, job: Job, text: str, mode: str, fields: int, steps: int, *,
            stripe_count: int | None = None, stripe_size: int | None = None, collective: bool | None = None) -> float:
    """Seconds for ``job``'s ranks to write a file of ``fields`` fields for ``steps`` steps through ``text``
    (the options: :func:`count`'s)."""
    counted = count(machine, job, text, mode, stripe_count=stripe_count, stripe_size=stripe_size,
                    collective=collective)
    return counted.seconds(machine, mode, fields, steps)


def file_counts(machine: Machine, job: Job, strategy: Strategy, mode: str, itemsize: int = 4, *,
                stripe_count: int | None = None, stripe_size: int | None = None, collective: bool | None = None
                ) -> tuple[dict[str, np.ndarray], tuple[int, int] | None]:
    """One record's per-rank counts as the file system sees them in ``mode``, and the file's striping (None
    where the file system does not stripe files). Writers whose pieces interleave in the file and who write
    through MPI-IO's collective calls (parallel HDF5; ``direct`` in the classic modes) are written by MPI-IO's
    two-phase write (:func:`two_phase`, :func:`collective_buffering`). On a striped file system each writer's
    ``sharers`` is the most writers on any storage target it writes (1: its targets are its own)."""
    striping = None
    if machine.osts:
        if strategy.name == "stripe":
            striping = (len(strategy.aggregators), int(strategy.stripe_size or machine.stripe_size))
        else:
            striping = (min(stripe_count or machine.stripe_count, machine.osts), stripe_size or machine.stripe_size)
    pieces = writers(job, strategy, itemsize)
    counts, runs = tally(job, pieces, itemsize)
    counts["mpiio_messages"] = np.zeros(job.nranks, np.int64)
    if through_mpiio(mode, strategy.name, collective) and interleaved(runs, job.nranks):
        pieces = writers(job, two_phase(machine, job, striping), itemsize)  # MPI-IO's aggregators write
        counts = collective_buffering(job, counts, runs, pieces, itemsize)
    if striping is not None:
        counts["sharers"] = sharers(pieces, job.shape, itemsize, *striping)
    return counts, striping


def through_mpiio(mode: str, strategy: str, collective: bool | None = None) -> bool:
    """Whether a strategy's writers write through MPI-IO's collective calls in ``mode``: parallel HDF5 always;
    in the classic modes ``direct`` only (climio's aggregators write their runs themselves), unless
    ``collective`` says (True: as PnetCDF's writers do, whatever the strategy); ``serial``'s netCDF-C never."""
    if mode not in ("cdf2", "cdf5"):
        return mode == "hdf5"
    return strategy == "direct" if collective is None else collective


def interleaved(runs: tuple[np.ndarray, np.ndarray, np.ndarray], nranks: int) -> bool:
    """Whether the writers' ``runs`` (``(first, end, rank)``) interleave in the file, a writer's first byte
    before the last of the writer before it: ROMIO then writes them in two phases (otherwise each its own)."""
    first, end, rank = runs
    lo = np.full(nranks, np.iinfo(np.int64).max)
    hi = np.full(nranks, -1)
    np.minimum.at(lo, rank, first)
    np.maximum.at(hi, rank, end)
    holding = hi >= 0
    return bool(np.any(lo[holding][1:] < hi[holding][:-1]))


def collective_buffering(job: Job, counts: Mapping[str, np.ndarray], runs: tuple[np.ndarray, np.ndarray, np.ndarray],
                         aggregated: list[list[Hyperslab]], itemsize: int) -> dict[str, np.ndarray]:
    """``counts`` (climio's own route) with MPI-IO's two phases after it: the writers' ``runs`` sent to the
    aggregators' ranges (``aggregated``: every rank's, :func:`two_phase`'s pieces), which the aggregators
    write, each sorting and copying every writer's runs in its range."""
    final, ranges = written(job.shape, aggregated, itemsize)
    first, end, rank = runs
    order = np.argsort(first, kind="stable")
    sources = (first[order], end[order], rank[order], np.unique(np.concatenate([first, end])))
    moved = exchange(sources, ranges, job.nranks, itemsize)
    out = dict(counts)
    for name, value in moved.items():
        out[name] = counts[name] + value
    share = final["bytes_written"] / max(int(final["bytes_written"].sum()), 1)
    out["requests"], out["bytes_written"] = final["requests"], final["bytes_written"]
    out["file_runs"] = final["file_runs"] + np.round(first.size * share).astype(np.int64)
    out["mpiio_messages"] = moved["messages_sent"] + moved["messages_received"]
    return out


def two_phase(machine: Machine, job: Job, striping: tuple[int, int] | None) -> Strategy:
    """MPI-IO's collective buffering as climio's strategy of the same shape: ROMIO's aggregators (one per node,
    its default ``cb_nodes``) each write an equal contiguous range of the record after receiving the ranks'
    data in it (``agg``); on a striped file system, one aggregator per stripe target, each the stripes of its
    target (as the Lustre drivers of ROMIO and Cray MPI place them: ``stripe``)."""
    nodes = filled_nodes(job.nranks, machine.per_node(job.nranks))
    if striping is None:
        return Strategy("agg", tuple(spread(nodes, len(set(nodes)))))
    return Strategy("stripe", tuple(spread(nodes, min(striping[0], job.nranks))), striping[1])


def sharers(pieces: Sequence[Sequence[Hyperslab]], shape: tuple[int, ...], itemsize: int, count: int,
            size: int) -> np.ndarray:
    """For each rank, the most writers that write any one of the storage targets it writes, a record's bytes
    lying from the file's first stripe on, stripe i on target i mod ``count``."""
    runs = [(piece_runs(shape, p) * itemsize, r) for r, mine in enumerate(pieces) for p in mine if p.size]
    out = np.zeros(len(pieces), np.int64)
    if not runs:
        return out
    first = np.concatenate([r[:, 0] for r, _ in runs])
    last = first + np.concatenate([r[:, 1] for r, _ in runs]) - 1
    rank = np.concatenate([np.full(len(r), k, np.int64) for r, k in runs])
    span = np.minimum(last // size - first // size + 1, count)  # a run over count stripes or more: every target
    stripe = np.repeat(first // size, span) + (np.arange(span.sum()) - np.repeat(np.cumsum(span) - span, span))
    pairs = np.unique(np.repeat(rank, span) * count + stripe % count)
    writer, target = pairs // count, pairs % count
    on_target = np.bincount(target, minlength=count)
    np.maximum.at(out, writer, on_target[target])
    return out


def routes_built(job: Job, strategy: Strategy, fields: int, steps: int, itemsize: int = 4) -> list[int]:
    """The routes a file of ``fields`` records of one shape builds in each of ``steps`` steps: one in the first,
    or for ``stripe`` one for each phase of a record's offset against a round of stripes that the file no longer
    keeps (records lie back to back, a step after another; after each step a file keeps the most recently used,
    one a field and :data:`KEPT_STRIPE_ROUTES` more, as ``ModelOutput`` does)."""
    if strategy.name != "stripe":
        return [1] + [0] * (steps - 1)
    record = math.prod(job.shape) * itemsize
    kept: dict[int, None] = {}  # least recently used first
    built = []
    for step in range(steps):
        new = 0
        for k in range(step * fields, (step + 1) * fields):
            key = strategy.stripe_key(k * record)
            new += key not in kept
            kept.pop(key, None)
            kept[key] = None
        while len(kept) > fields + KEPT_STRIPE_ROUTES:
            del kept[next(iter(kept))]
        built.append(new)
    return built


def plan_seconds(job: Job, strategy: Strategy, counts: Mapping[str, np.ndarray]) -> float:
    """Seconds the busiest rank takes to build one route's plan, timed here (the rearranger's own planning)."""
    busiest = {int(np.argmax(counts["bytes_received"])), int(np.argmax(counts["messages_sent"]))}
    return max((seconds for _, seconds in plan_cost(job, strategy, sorted(busiest)).values()), default=0.0)


def tuned_path() -> str:
    """Where ``climio tune`` keeps this machine's costs: ``$CLIMIO_MACHINE`` (unless it names a shipped site) or
    the user's config."""
    given = os.environ.get("CLIMIO_MACHINE")
    if given and given not in site_names():
        return given
    return os.path.join(os.path.expanduser("~"), ".config", "climio", "machine.toml")


def site_names() -> list[str]:
    """The site files climio ships (``edison``, ``node``, ``perlmutter``)."""
    return sorted(name[:-5] for name in os.listdir(SITES) if name.endswith(".toml"))


def find(name: str | None = None) -> Machine:
    """The machine a job is priced on: ``name`` (a shipped site or a machine file), else ``$CLIMIO_MACHINE``,
    else this machine's file from ``climio tune``, else the shipped ``node``."""
    text = name or os.environ.get("CLIMIO_MACHINE")
    if text is None:
        measured = tuned_path()
        text = measured if os.path.exists(measured) else FALLBACK_SITE
    if text not in site_names():
        return load(text)
    site = load(os.path.join(SITES, f"{text}.toml"))
    return replace(site, cores_per_node=os.cpu_count() or 1) if text == FALLBACK_SITE else site  # a node like this


def candidates(machine: Machine, job: Job, mode: str) -> list[str]:
    """The strategies ``auto`` weighs for ``job`` in ``mode``: each that applies, and ``agg`` with 1, 2, 4, ...
    aggregators a node up to a node's cores; ``stripe`` where the file system stripes files."""
    per_node = machine.per_node(job.nranks)
    nodes = -(-job.nranks // per_node)
    share = job.share(0)
    texts = ["direct", "root"] + (["rows", "cols"] if share.blocks is not None else [])
    k = 1
    while k <= per_node and k * nodes <= job.nranks:
        texts.append(f"agg:{k * nodes}")
        k *= 2
    if machine.osts:
        texts.append("stripe")
    return [t for t in texts if mode in applicable_modes(t)]


def ranking(machine: Machine, jobs: Sequence[tuple[Job, int, int]], mode: str) -> list[tuple[float, str]]:
    """Each candidate strategy with the seconds of one output step (a later one: with the routes it builds
    anew, ``stripe``'s where its phases are not kept), fastest first. ``jobs``: a step's records,
    one ``(job, records, itemsize)`` per shape (the same ranks and shares, each with its levels)."""
    if not jobs:
        return []
    machine.check_mode(mode)
    out = []
    for text in candidates(machine, jobs[0][0], mode):
        seconds = 0.0
        for job, records, itemsize in jobs:
            strategy = settle(machine, job, text, mode)
            counts, striping = file_counts(machine, job, strategy, mode, itemsize)
            seconds += sum(step_parts(machine, counts, records, mode, strategy.name, striping).values())
            again = routes_built(job, strategy, records, STEADY_STEPS, itemsize)[-1]  # stripe's phases not kept
            if again:
                seconds += again * turns(machine, job.nranks) * plan_seconds(job, strategy, step_counts(job, strategy))
        out.append((seconds, text))
    return sorted(out, key=lambda pair: pair[0])


def auto(comm: MPI.Comm, share: GridDecomposition, mode: str, records: Sequence[tuple[int | None, np.dtype]],
         machine: str | None = None) -> str:
    """The strategy ``auto`` writes a step of ``records`` (each one's levels and type) with: the one the model
    finds fastest for this job on ``machine`` (:func:`find`). Collective: rank 0 weighs every rank's share and
    tells the others, so that all agree."""
    shares = comm.gather(share, root=0)

    def fastest() -> str:
        assert shares is not None
        per_shape = Counter((levels, np.dtype(dtype).itemsize) for levels, dtype in records)
        jobs = [(Job("auto", len(shares), share.grid, levels, tuple(shares)), count, itemsize)
                for (levels, itemsize), count in per_shape.items()]
        try:
            return ranking(find(machine), jobs, mode)[0][1]
        except ClimioError as err:
            raise ClimioError(f"strategy auto: {err}") from None

    return mpi.agree(comm, fastest)
