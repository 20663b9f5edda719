"""``climio bench restart``: a model's start-up read (seed 002, PISM Fig. 5.4), every read strategy x storage mode.

The CMAQ domain's species (or a PIO map's grid, ``--decomp``) are written once per mode as a one-record
restart file; then, for every repetition and read strategy, the file is dropped from the page cache and
every rank reads every species into its decomposition through :class:`climio.model.input.ModelInput`
(open, reads, close). Reported per strategy and mode: the slowest rank's time, the bandwidth next to rank 0
reading the same file sequentially in 64 MiB reads from a cold cache in the same run (``sequential``),
the speed-up over ``root`` (rank 0 reads and the rearranger scatters: PISM's old path), and whether every
rank got exactly the values written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.bench.cache import evict
from climio.bench.io import sequential_read
from climio.bench.model import Case, cases, local_species, parse_domain, parse_grids, per_case
from climio.bench.runner import (check_reps, grouped, make_directory, markdown_table, median, require_plain_process,
                                 rows_per_size, save_results, save_rows)
from climio.core import mpi, trace
from climio.errors import ClimioError, IOFault
from climio.model import decomposition as dec
from climio.model.input import READ_STRATEGIES, ModelInput
from climio.model.output import Field, ModelOutput
from climio.model.strategy import parse_strategy

if TYPE_CHECKING:
    from mpi4py import MPI

def same_values(d: dec.GridDecomposition, levels: int | None, got: np.ndarray, written: np.ndarray) -> bool:
    """Whether a local array read back holds what was written at every owned point."""
    if isinstance(d, dec.BlockDecomposition):
        return bool(np.array_equal(got[d.interior(levels)], written[d.interior(levels)]))
    valid = d.layout(levels).flat_offsets().reshape(got.shape) >= 0
    return bool(np.array_equal(got[valid], written[valid]))


def measure(comm: MPI.Comm, case: Case, strategies: Sequence[str], modes: Sequence[str], reps: int,
            directory: str) -> list[dict[str, Any]]:
    """Every read strategy x mode on this job's ranks (collective); rows on rank 0."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    d = case.decomposition(comm)
    fields = [Field(f"SPEC{i:03d}", levels=case.levels, attrs={"units": "ppmV"}) for i in range(case.nspec)]
    conc = local_species(d, case.levels, case.nspec)
    got = np.empty(conc.shape[1:], np.float32)
    rows: list[dict[str, Any]] = []
    for mode in modes:
        path = os.path.join(directory, f"restart-{mode}-{case.label}.nc")
        with ModelOutput(path, d, fields, comm, mode=mode, strategy="root" if mode == "serial" else "agg",
                         overwrite=True, dims=case.dims) as out:
            out.write(0, {f.name: conc[i] for i, f in enumerate(fields)}, time=0.0)
        nbytes = os.path.getsize(path)
        common = {"case": case.label, "ranks": case.ranks, "mode": mode, "bytes": nbytes}
        for rep in range(reps):
            if rank == 0:
                seconds = sequential_read(path)
                rows.append({"strategy": "sequential", **common, "rep": rep, "read_s": seconds})
            for text in strategies:
                if mode == "serial" and text not in ("root", "auto"):
                    continue
                if rank == 0:
                    evict(path)
                comm.Barrier()
                phases = trace.reset()
                started = MPI.Wtime()
                ok = True
                with ModelInput(path, d, comm, strategy=text) as restart:
                    for i, f in enumerate(fields):
                        restart.read(f.name, record=0, out=got, cf=False)
                        ok &= same_values(d, case.levels, got, conc[i])
                comm.Barrier()
                seconds = comm.allreduce(MPI.Wtime() - started, op=MPI.MAX)
                ok = comm.allreduce(ok, op=MPI.LAND)
                per_rank = comm.gather(phases.totals(), root=0)
                if rank == 0:
                    rows.append({"strategy": text, **common, "rep": rep, "read_s": seconds, "verified": ok,
                                 "phases_s": {n: max(t.get(n, {}).get("seconds", 0.0) for t in per_rank)
                                              for n in sorted({n for t in per_rank for n in t})}})
        mpi.agree(comm, lambda: os.unlink(path) if rank == 0 else None)
    return rows


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median read time per (case, mode, strategy) over repetitions, with the ratios of the same run."""
    table = []
    for same in grouped(rows, "case", "mode", "strategy").values():
        seconds = median(same, "read_s")
        row = {k: v for k, v in same[0].items() if k not in ("rep", "phases_s")}
        row.update(read_s=seconds, MBps=row["bytes"] / seconds / 1e6, reps=len(same),
                   verified=all(r.get("verified", True) for r in same))
        if "phases_s" in same[0]:
            row["phases_s"] = same[len(same) // 2]["phases_s"]
        table.append(row)
    for row in table:
        for base, name in (("root", "vs_root"), ("sequential", "vs_sequential")):
            ref = [r["read_s"] for r in table if (r["case"], r["mode"], r["strategy"]) == (row["case"], row["mode"],
                                                                                           base)]
            if ref:
                row[name] = ref[0] / row["read_s"]
    return table


def format_table(table: list[dict[str, Any]]) -> str:
    columns = [("grid", "l"), ("mode", "l"), ("strategy", "l"), ("read s (max over ranks)", "r"), ("MB/s", "r"),
               ("speed-up over root", "r"), ("/ sequential read", "r"), ("verified", "l")]

    def cells(r: dict[str, Any]) -> list[str]:
        ratio = lambda key: f"{r[key]:.2f}" if key in r else "-"  # noqa: E731
        return [r["case"], r["mode"], r["strategy"], f"{r['read_s']:.2f}", f"{r['MBps']:.0f}", ratio("vs_root"),
                ratio("vs_sequential"), "-" if r["strategy"] == "sequential" else ("yes" if r["verified"] else "NO")]

    return markdown_table(columns, (cells(r) for r in table))


def main(comm: MPI.Comm, *, domain: str, grids: str, strategies: Sequence[str], modes: Sequence[str], reps: int,
         directory: str, out: str, decomp: str | None = None, rows_json: str | None = None) -> None:
    size = parse_domain(domain)
    runs = cases(size, parse_grids(grids), decomp)
    for text in strategies:
        name, count = parse_strategy(text)
        if name not in READ_STRATEGIES:
            raise ClimioError(f"--strategy {text}: read strategies are root, direct, agg, agg:N and auto",
                              collective=True)
        if count is not None and count > min(c.ranks for c in runs):
            raise ClimioError(f"--strategy {text}: more readers than the ranks of the smallest case", collective=True)
    check_reps(reps)
    mpi.agree(comm, lambda: os.makedirs(directory, exist_ok=True))
    if rows_json:  # one case, inside its own mpiexec
        save_rows(comm, measure(comm, runs[0], strategies, modes, reps, directory), rows_json)
        return
    require_plain_process(comm, "restart")
    make_directory(out)
    rows = rows_per_size("restart", per_case(runs, decomp, [
        "--domain", domain, "--strategy", ",".join(strategies), "--mode", ",".join(modes), "--reps", str(reps),
        "--dir", directory, "--out", out]))
    table = summarise(rows)
    print(f"climio bench restart: {domain if not decomp else decomp}, one record of {size[3]} species read from a "
          f"cold page cache, median of {reps}")
    print(format_table(table))
    save_results(out, "restart", {"domain": size, "decomp": decomp, "reps": reps, "rows": rows, "table": table})
    wrong = [f"{r['strategy']} x {r['mode']}" for r in table if not r.get("verified", True)]
    if wrong:
        raise IOFault(f"bench restart: {', '.join(wrong)} read values other than those written")
