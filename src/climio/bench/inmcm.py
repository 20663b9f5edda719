"""``climio bench inmcm``: one model day of the INM RAS Earth system model's output (seed 004, Table 1).

Output groups of the atmosphere component, with their field counts, outputs
per day and field shapes, on the INMCM6LM (120 x 180) or INMCM6M (180 x 288)
grid with 26 pressure and 73 sigma levels. Every field of every output of the
day is gathered to rank 0 with each gather strategy, from halo'd local arrays
on a 2-D block process grid, and rank 0 writes it (CDF-2, as the model does
after gathering). Reported per rank count, group and strategy: gather time and
write time (slowest rank, summed over the day), medians over repetitions.
Every field holds a known value at every point (halos hold junk), and each file
is read back and compared with it before it is deleted: a difference fails the run.

The zonal-mean group ``dyz`` (levels x latitude) is split over the same process
grid as the horizontal fields (latitude along the grid's columns, levels along
its rows): a stand-in for the model's reduction along longitude, which the
paper does not detail.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.bench.model import value
from climio.bench.runner import (check_reps, grouped, markdown_table, median, repeated, require_plain_process,
                                 rows_per_size, save_results, save_rows, scratch_directory)
from climio.core import ncio
from climio.core.decomp import Decomposition, process_grid
from climio.errors import ClimioError, IOFault
from climio.model.gather import Gatherer

if TYPE_CHECKING:
    from mpi4py import MPI

MODELS = {"6lm": (120, 180), "6m": (180, 288)}  # nlat, nlon
NPLEVS, NSLEVS = 26, 73
HALO = 1


@dataclass(frozen=True)
class Group:
    name: str
    fields: int
    per_day: int
    levels: str | None  # None: a horizontal 2-D field; "p"/"s": pressure/sigma levels; "zonal": levels x lat


GROUPS = (Group("dyz", 17, 1, "zonal"), Group("dxy", 71, 1, None), Group("dxyz", 7, 1, "p"), Group("dxys", 10, 1, "s"),
          Group("6h", 44, 4, None), Group("3h", 37, 8, None), Group("1h", 2, 24, None))


def field_decomposition(group: Group, nlat: int, nlon: int, nranks: int) -> Decomposition:
    """The decomposed shape of one field of ``group`` on ``nranks`` ranks."""
    px, py = process_grid(nranks, nlat, nlon)
    if group.levels == "zonal":
        return Decomposition.block2d((NPLEVS, nlat), px, py, halo=HALO)
    levels = {"p": NPLEVS, "s": NSLEVS}.get(group.levels or "")
    shape = (levels, nlat, nlon) if levels else (nlat, nlon)
    return Decomposition.block2d(shape, px, py, halo=HALO)


def first_difference(path: str, expected: np.ndarray, names: Sequence[str], records: int) -> str:
    """'' if every variable of ``path`` holds ``expected`` at every record, else where it first does not."""
    import netCDF4

    with netCDF4.Dataset(path) as ds:
        for name in names:
            for record in range(records):
                got = ds[name][record]
                bad = np.flatnonzero(np.asarray(got).ravel() != expected.ravel())
                if bad.size:
                    k = tuple(int(i) for i in np.unravel_index(int(bad[0]), expected.shape))
                    return f"{path}: variable '{name}' record {record}: {bad.size} values differ, the first at {k}"
    return ""


def measure(comm: MPI.Comm, model: str, gathers: Sequence[str], directory: str) -> list[dict[str, Any]]:
    """One model day per gather strategy (collective); rows on rank 0."""
    from mpi4py import MPI

    nlat, nlon = MODELS[model]
    rank, size = comm.Get_rank(), comm.Get_size()
    rows = []
    for group in GROUPS:
        decomp = field_decomposition(group, nlat, nlon, size)
        whole = value(np.arange(int(np.prod(decomp.shape))), 0).reshape(decomp.shape)  # known at every point
        local = np.full(decomp.local_shape(rank), -1, np.float32)  # halo: junk that must not reach the file
        local[decomp.interior(rank)] = whole[decomp.owned(rank).slices]
        dims = {"time": None, **{f"d{i}": n for i, n in enumerate(decomp.shape)}}
        schema = ncio.Schema(dims, [ncio.Variable(f"{group.name}_{i:02d}", "f4", ("time", *list(dims)[1:]))
                                    for i in range(group.fields)])
        for strategy in gathers:
            path = os.path.join(directory, f"inmcm-{group.name}-{strategy}.nc")
            gather_s = write_s = 0.0
            out = np.empty(decomp.shape, np.float32) if rank == 0 else None  # one global array per group
            with Gatherer(decomp, "f4", comm, strategy) as gatherer:
                store = ncio.create(path, schema, "serial", MPI.COMM_SELF, overwrite=True) if rank == 0 else None
                for output in range(group.per_day):
                    for i in range(group.fields):
                        comm.Barrier()
                        started = MPI.Wtime()
                        field = gatherer.gather(local, out=out)
                        gather_s += comm.allreduce(MPI.Wtime() - started, op=MPI.MAX)
                        if store is not None:
                            started = MPI.Wtime()
                            store.write(f"{group.name}_{i:02d}", field[None],
                                        ncio.Hyperslab((output, *(0,) * field.ndim), (1, *field.shape)))
                            write_s += MPI.Wtime() - started
                if store is not None:
                    started = MPI.Wtime()
                    store.close()
                    write_s += MPI.Wtime() - started
                    wrong = first_difference(path, whole, [v.name for v in schema.variables], group.per_day)
                    os.unlink(path)
                    if wrong:
                        raise IOFault(f"bench inmcm ({strategy}): {wrong}")
            if rank == 0:
                rows.append({"ranks": size, "group": group.name, "strategy": strategy,
                             "messages_per_day": group.fields * group.per_day,
                             "MB_per_day": group.fields * group.per_day * int(np.prod(decomp.shape)) * 4 / 1e6,
                             "gather_s": gather_s, "write_s": write_s})
    return rows


def main(comm: MPI.Comm, *, model: str, ranks: Sequence[int], gathers: Sequence[str], reps: int, out: str | None,
         rows_json: str | None = None) -> None:
    if model not in MODELS:
        raise ClimioError(f"--model '{model}': choose 6lm or 6m", collective=True)
    check_reps(reps)
    if rows_json:  # inside one mpiexec
        with scratch_directory(comm, "inmcm", None) as shared:
            rows = repeated(reps, lambda: measure(comm, model, gathers, shared))
        save_rows(comm, rows, rows_json)
        return
    require_plain_process(comm, "inmcm")
    args = ["--model", model, "--gathers", ",".join(gathers), "--reps", str(reps)]
    rows = rows_per_size("inmcm", ((f"{n} rank(s)", n, args) for n in ranks))
    table = summarise(rows)
    nlat, nlon = MODELS[model]
    print(f"climio bench inmcm: INMCM{model.upper()} ({nlat} x {nlon}, {NPLEVS}/{NSLEVS} levels), one model day, "
          f"median of {reps}")
    print(format_table(table))
    for n in ranks:
        ratio = three_d_ratio(table, n)
        if ratio:
            print(f"{n} ranks: p2p / gatherv gather time for the daily 3-D groups (dxyz, dxys): {ratio:.2f}x")
    if out:
        save_results(out, "inmcm", {"model": model, "reps": reps, "rows": rows, "table": table}, table)


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**{k: v for k, v in same[0].items() if k not in ("rep", "gather_s", "write_s")},
             "gather_s": median(same, "gather_s"), "write_s": median(same, "write_s")}
            for same in grouped(rows, "ranks", "group", "strategy").values()]


def three_d_ratio(table: list[dict[str, Any]], nranks: int) -> float | None:
    """p2p over gatherv gather time for the daily 3-D groups at ``nranks``."""
    total = {s: sum(e["gather_s"] for e in table if e["ranks"] == nranks and e["strategy"] == s
                    and e["group"] in ("dxyz", "dxys")) for s in ("p2p", "gatherv")}
    return total["p2p"] / total["gatherv"] if total["gatherv"] > 0 and total["p2p"] > 0 else None


def format_table(table: list[dict[str, Any]]) -> str:
    strategies = list(dict.fromkeys(e["strategy"] for e in table))
    columns = [("ranks", "r"), ("group", "l"), ("fields x outputs/day", "r"), ("MB/day", "r"),
               *((f"{s} gather s", "r") for s in strategies), ("write s", "r")]
    rows = []
    for nranks, group in dict.fromkeys((e["ranks"], e["group"]) for e in table):
        entries = {e["strategy"]: e for e in table if (e["ranks"], e["group"]) == (nranks, group)}
        first = next(iter(entries.values()))
        rows.append([str(nranks), group, str(first["messages_per_day"]), f"{first['MB_per_day']:.1f}",
                     *(f"{entries[s]['gather_s']:.3f}" for s in strategies),
                     f"{statistics.median(e['write_s'] for e in entries.values()):.2f}"])
    return markdown_table(columns, rows)
