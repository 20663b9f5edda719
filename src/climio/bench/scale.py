"""``climio bench scale``: what one output step costs each rank of a job of any size, worked out in one process.

A model writing a record through a strategy costs each rank messages, bytes moved, bytes written, requests to
the file and plan memory. None of these depends on the machine: they follow from the decomposition, the
strategy and the rank count. So they are worked out here for jobs of 4 to 16,384 simulated ranks, with no MPI:

- each rank's share of the record (a CMAQ domain on a process grid, the INM RAS grid, a cubed sphere, a mesh
  partitioned into patches) as flat runs of the record, and each writer's pieces (:meth:`Strategy.pieces`,
  :meth:`Strategy.own_pieces`: the code the real job runs) as flat runs too;
- the messages and bytes of the exchange by one sweep over the sorted runs of every rank and every writer
  (independent of the rearranger's box intersections, which real jobs use: ``tests/mpi`` holds the two equal
  at 1-6 ranks against each route's :meth:`~climio.model.route.Route.counts` that real runs trace);
- the memory and time of a plan on the busiest writer and the busiest sender by the rearranger's own planning
  (:func:`~climio.core.rearrange.known_moves`), which every rank runs on everyone's pieces.

Each quantity is reported as its maximum over ranks, with its growth exponent in the rank count (the slope of
log q against log P): in weak scaling (``--weak``: every rank keeps the block it has on 4x4) a per-rank
quantity that grows where the strategy's design does not say so is flagged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from climio.bench.inmcm import GROUPS as INM_GROUPS
from climio.bench.inmcm import HALO as INM_HALO
from climio.bench.inmcm import MODELS as INM_MODELS
from climio.bench.inmcm import NSLEVS
from climio.bench.model import DOMAINS, HALO
from climio.bench.runner import grouped, markdown_table, save_results
from climio.core.decomp import process_grid
from climio.errors import ClimioError
from climio.model import costmodel
from climio.model import decomposition as dec
from climio.model.counts import QUANTITIES, Job, block_job, filled_nodes, plan_cost, step_counts
from climio.model.strategy import Strategy, parse_strategy

KINDS = ("CA", "EUS", "CONUS", "inm", "cube", "mesh")
CUBE_N = 384  # C384: FV3's 25 km grid
MESH_CELLS = 655362  # MPAS's 30 km mesh
MESH_LEVELS = None  # a 2-D field of the mesh (a level axis multiplies its runs by the levels, not its messages)
WEAK_CELLS = 1024  # mesh cells a rank owns in weak scaling
GROWS = 0.2  # a per-rank quantity growing faster than P**GROWS in weak scaling is flagged
# per-rank quantities that grow with P in weak scaling by design, and how: (strategy, quantity) -> formula
_ROW_BAND = "a band of whole rows: px blocks on its first rank"
_COL_BAND = "a band of whole columns: py blocks on its first rank"
_RANGE = ("an aggregator's contiguous range spans whole levels (rows) of the record: it hears from min(P, levels x "
          "ranks per aggregator) ranks")
_LEVELS = "a block's levels fall in as many aggregators' ranges (at most levels + 1)"
_STRIPES = "a writer's stripes: record / (stripe count x stripe size), the stripe count fixed"
BY_DESIGN = {("root", "messages_received"): "P - 1 on rank 0", ("root", "bytes_received"): "the record on rank 0",
             ("root", "bytes_written"): "the record on rank 0", ("root", "plan_bytes"): "one match per rank on rank 0",
             ("rows", "messages_received"): _ROW_BAND, ("rows", "bytes_received"): _ROW_BAND,
             ("rows", "bytes_written"): _ROW_BAND, ("rows", "plan_bytes"): _ROW_BAND,
             ("cols", "messages_received"): _COL_BAND, ("cols", "bytes_received"): _COL_BAND,
             ("cols", "bytes_written"): _COL_BAND, ("cols", "plan_bytes"): _COL_BAND,
             ("cols", "file_runs"): "a column band's rows: levels x rows, each a run",
             ("agg", "messages_received"): _RANGE, ("agg", "plan_bytes"): _RANGE,
             ("agg", "messages_sent"): _LEVELS, ("agg", "sender_plan_seconds"): _LEVELS,
             ("agg", "bytes_received"): "record / nodes: constant once P exceeds a node",
             ("agg", "bytes_written"): "record / nodes: constant once P exceeds a node",
             ("agg", "requests"): "record / nodes: constant once P exceeds a node",
             ("stripe", "messages_sent"): "a block's rows fall in up to the stripe count's writers",
             ("stripe", "messages_received"): "P / stripe count on each writer",
             ("stripe", "bytes_received"): _STRIPES, ("stripe", "bytes_written"): _STRIPES,
             ("stripe", "requests"): _STRIPES, ("stripe", "file_runs"): _STRIPES, ("stripe", "plan_bytes"): _STRIPES,
             # the busiest rank's plan meets the pieces of every rank it hears from
             ("root", "plan_seconds"): "rank 0 meets every rank's block", ("rows", "plan_seconds"): _ROW_BAND,
             ("cols", "plan_seconds"): _COL_BAND, ("agg", "plan_seconds"): _RANGE,
             ("stripe", "plan_seconds"): "P / stripe count blocks on each writer",
             ("stripe", "sender_plan_seconds"): "every rank tables the record's stripes (three numbers each): record / "
                                                "stripe size"}



def job(kind: str, nranks: int, *, weak: bool = False) -> Job:
    """The ``kind`` of decomposition (a CMAQ domain, ``inm``, ``cube``, ``mesh``) on about ``nranks`` ranks (a
    cubed sphere takes a divisor or a multiple of 6: the one below)."""
    if kind in DOMAINS:
        nx, ny, nlay, _ = DOMAINS[kind]
        px, py = process_grid(nranks, ny, nx)
        if weak:  # every rank the block the domain has on 4x4
            ny, nx = -(-ny // 4) * py, -(-nx // 4) * px
        return block_job(f"{kind} {px}x{py}", (ny, nx), nlay, px, py, HALO)
    if kind == "inm":
        nlat, nlon = INM_MODELS["6m"]
        px, py = process_grid(nranks, nlat, nlon)
        if weak:
            nlat, nlon = -(-nlat // 4) * py, -(-nlon // 4) * px
        return block_job(f"INMCM6M {px}x{py}", (nlat, nlon), NSLEVS, px, py, INM_HALO)
    if kind == "cube":
        ranks = nranks if nranks <= 6 and 6 % nranks == 0 else max(6, nranks // 6 * 6)
        n = CUBE_N if not weak else int(round(CUBE_N * math.sqrt(ranks / 24)))  # every rank C384's block on 24 ranks
        first = dec.cubed_sphere(n, ranks, 0, halo=HALO)
        return Job(f"C{n} on {ranks}", ranks, first.grid, None, tuple(replace(first, rank=r) for r in range(ranks)))
    if kind == "mesh":
        cells = MESH_CELLS if not weak else WEAK_CELLS * nranks
        return Job(f"mesh {cells} cells", nranks, (cells,), MESH_LEVELS, owner=patches(cells, nranks))
    raise ClimioError(f"--decomposition '{kind}': choose from {', '.join(KINDS)}")


def patches(cells: int, nranks: int) -> np.ndarray:
    """Each cell's owner on a mesh numbered row by row over a square lattice and partitioned into compact
    patches of equal size along a Z-order curve (what METIS does to a mesh whose numbering it does not follow:
    each rank's cells are a patch, a few dozen runs of the cell index)."""
    side = math.isqrt(cells - 1) + 1
    index = np.arange(cells, dtype=np.int64)
    row, col = index // side, index % side
    z = np.zeros(cells, dtype=np.int64)
    for bit in range(side.bit_length()):
        z |= ((col >> bit) & 1) << (2 * bit) | ((row >> bit) & 1) << (2 * bit + 1)
    along = np.empty(cells, dtype=np.int64)
    along[np.argsort(z, kind="stable")] = index
    return along * nranks // cells





def growth(ranks: Sequence[int], values: Sequence[float]) -> float | None:
    """The exponent b of values ~ a P**b, by least squares on the logs (None with fewer than two positive
    values)."""
    keep = [(math.log(p), math.log(v)) for p, v in zip(ranks, values) if v > 0]
    if len(keep) < 2:
        return None
    x, y = np.array(keep).T
    return float(np.polyfit(x, y, 1)[0])


def measure(kind: str, strategy_text: str, ranks: Sequence[int], *, weak: bool, cores_per_node: int,
            stripe_count: int, stripe_size: int, mode: str = "cdf5") -> list[dict[str, Any]]:
    """One row per rank count: each quantity's maximum over ranks (and for plan memory and time, over the
    busiest writer and the busiest sender), and the plan time of the rank that sends most among those that
    write nothing."""
    rows = []
    for nranks in ranks:
        made = job(kind, nranks, weak=weak)
        nodes = filled_nodes(made.nranks, cores_per_node)
        strategy = Strategy.settle(strategy_text, mode, nodes, made.share(0),
                                   stripe_count=min(stripe_count, made.nranks), stripe_size=stripe_size)
        counts = step_counts(made, strategy)
        busiest = {int(np.argmax(counts["bytes_received"])), int(np.argmax(counts["messages_sent"]))}
        idle = np.flatnonzero(counts["bytes_written"] == 0)  # the ranks that only send
        sender = int(idle[np.argmax(counts["messages_sent"][idle])]) if idle.size else None
        plans = plan_cost(made, strategy, sorted(busiest | ({sender} if sender is not None else set())))
        row = {"decomposition": made.label, "kind": kind, "strategy": strategy_text, "ranks": made.nranks,
               "writers": int(np.count_nonzero(counts["bytes_written"])),
               **{q: int(counts[q].max()) for q in QUANTITIES}}
        row["plan_bytes"] = max((plans[r][0] for r in busiest if r in plans), default=0)
        row["plan_seconds"] = max((plans[r][1] for r in busiest if r in plans), default=0.0)
        row["sender_plan_seconds"] = plans[sender][1] if sender in plans else 0.0
        rows.append(row)
    return rows


def applies(kind: str, strategy: str) -> bool:
    """``rows`` and ``cols`` need a process grid of blocks (not a cubed sphere's faces, not a mesh)."""
    return not (strategy in ("rows", "cols") and kind in ("cube", "mesh"))


def flags(rows: list[dict[str, Any]]) -> list[str]:
    """The per-rank quantities of weak-scaling rows that grow with P where the strategy's design does not say
    so, each with its exponent."""
    out = []
    for (kind, strategy), group in grouped(rows, "kind", "strategy").items():
        ranks = [r["ranks"] for r in group]
        for quantity in (*QUANTITIES, "plan_seconds", "sender_plan_seconds"):
            b = growth(ranks, [r[quantity] for r in group])
            if b is not None and b > GROWS and (strategy, quantity) not in BY_DESIGN:
                out.append(f"{kind} {strategy}: {quantity} grows as P^{b:.2f}")
    return out


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per decomposition kind and strategy: the largest job's figures and the growth exponents."""
    table = []
    for (kind, strategy), group in grouped(rows, "kind", "strategy").items():
        ranks, last = [r["ranks"] for r in group], group[-1]
        exponents = {f"{q}_growth": growth(ranks, [r[q] for r in group])
                     for q in ("messages_sent", "messages_received", "bytes_received", "plan_bytes", "plan_seconds",
                               "sender_plan_seconds")}
        table.append({**last, **exponents})
    return table


def format_table(table: list[dict[str, Any]]) -> str:
    def exponent(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    columns = [("decomposition", "l"), ("strategy", "l"), ("ranks", "r"), ("writers", "r"), ("msgs out", "r"),
               ("msgs in", "r"), ("MB in", "r"), ("MB written", "r"), ("requests", "r"), ("file runs", "r"),
               ("plan KiB", "r"), ("plan ms", "r"), ("sender ms", "r"), ("b(msgs out)", "r"), ("b(msgs in)", "r"),
               ("b(MB in)", "r"), ("b(plan KiB)", "r"), ("b(plan ms)", "r"), ("b(sender ms)", "r")]
    return markdown_table(columns, [
        [r["decomposition"], r["strategy"], str(r["ranks"]), str(r["writers"]), str(r["messages_sent"]),
         str(r["messages_received"]), f"{r['bytes_received'] / 1e6:.2f}", f"{r['bytes_written'] / 1e6:.2f}",
         str(r["requests"]), str(r["file_runs"]), f"{r['plan_bytes'] / 1024:.1f}", f"{r['plan_seconds'] * 1e3:.1f}",
         f"{r['sender_plan_seconds'] * 1e3:.1f}", exponent(r["messages_sent_growth"]),
         exponent(r["messages_received_growth"]), exponent(r["bytes_received_growth"]),
         exponent(r["plan_bytes_growth"]), exponent(r["plan_seconds_growth"]),
         exponent(r["sender_plan_seconds_growth"])]
        for r in table])


def records(kind: str) -> int:
    """The records of one output step: a CMAQ domain's species, INMCM's daily fields on sigma levels, else ten."""
    if kind in DOMAINS:
        return DOMAINS[kind][3]
    return next(g.fields for g in INM_GROUPS if g.levels == "s") if kind == "inm" else 10


def recommend(kinds: Sequence[str], ranks: Sequence[int], machine: costmodel.Machine, mode: str) -> list[dict[str, Any]]:
    """Every strategy ``auto`` weighs, ranked by the cost model's step time on ``machine``, per decomposition
    and rank count (the first is what ``auto`` picks)."""
    rows = []
    for kind in kinds:
        count = records(kind)
        for nranks in ranks:
            made = job(kind, nranks)
            order = costmodel.ranking(machine, [(made, count, 4)], mode)
            best = order[0][0]
            rows += [{"decomposition": made.label, "kind": kind, "ranks": made.nranks, "place": place,
                      "strategy": text, "records": count, "step_s": seconds, "vs_best": seconds / best}
                     for place, (seconds, text) in enumerate(order, 1)]
    return rows


def check_kinds(kinds: Sequence[str]) -> None:
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ClimioError(f"--decompositions: unknown '{bad[0]}': choose from {', '.join(KINDS)}")


def main_recommend(*, kinds: Sequence[str], ranks: Sequence[int], machine: str | None, mode: str,
                   out: str | None) -> None:
    """``climio bench scale --recommend``: the strategies ranked by predicted step time, and the rows to ``out``."""
    check_kinds(kinds)
    costs = costmodel.find(machine)
    print(f"climio bench scale --recommend: {mode} on machine '{costs.name}' ({costs.nodes} nodes of "
          f"{costs.cores_per_node} cores{f', {costs.osts} storage targets' if costs.osts else ''}); one step of "
          f"each decomposition's records, predicted", flush=True)
    rows = recommend(kinds, ranks, costs, mode)
    print(markdown_table([("decomposition", "l"), ("ranks", "r"), ("records", "r"), ("place", "r"), ("strategy", "l"),
                          ("step s", "r"), ("x best", "r")],
                         [[r["decomposition"], str(r["ranks"]), str(r["records"]), str(r["place"]), r["strategy"],
                           f"{r['step_s']:.4g}", f"{r['vs_best']:.2f}"] for r in rows]))
    if out:
        save_results(out, "recommend", {"machine": costs.name, "mode": mode, "rows": rows},
                     [r for r in rows if r["place"] == 1])


def main(*, kinds: Sequence[str], strategies: Sequence[str], ranks: Sequence[int], weak: bool, cores_per_node: int,
         stripe_count: int, stripe_size: int, out: str | None) -> None:
    """``climio bench scale``: the table, the growth flags (weak scaling), and the rows to ``out``."""
    check_kinds(kinds)
    for text in strategies:
        try:
            parse_strategy(text)
        except ClimioError as err:
            raise ClimioError(f"--strategies: {err}") from err
    scaling = "weak: every rank the block it has on 4x4" if weak else "strong: the whole domain"
    print(f"climio bench scale: one record of a field, max over ranks, {scaling}; {cores_per_node} cores a node "
          f"(agg: one aggregator a node), stripe {stripe_count} x {stripe_size} B; b(q): q ~ P^b", flush=True)
    rows = [row for kind in kinds for text in strategies if applies(kind, text.partition(":")[0])
            for row in measure(kind, text, ranks, weak=weak, cores_per_node=cores_per_node,
                               stripe_count=stripe_count, stripe_size=stripe_size)]
    table = summary(rows)
    print(format_table(table))
    grown = flags(rows) if weak else []
    for line in grown:
        print(f"grows with P: {line}")
    if out:
        save_results(out, "scale", {"weak": weak, "cores_per_node": cores_per_node, "stripe_count": stripe_count,
                                    "stripe_size": stripe_size, "rows": rows, "flags": grown}, table)
