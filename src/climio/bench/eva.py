"""``climio bench eva``: the whole ``climio eva`` run per scheme, split, rank count and file format.

Inputs: the CMIP-size field from ``climio gen cmip`` as CDF-5, and the same
data as zlib-compressed netCDF-4 chunked one day per chunk, like CMIP files
(made with ``nccopy -d1``). Each file is read once first, so runs start from
the page cache. Every run is a separate ``mpiexec ... climio --trace T eva``;
the table gives medians over repetitions of:

* the wall time of the command (mpiexec and Python start-up, read, fit, write),
  and climio eva's own time (from a barrier after start-up to the end);
* cells per second over climio eva's time;
* the time to merely read the same bytes: each rank reads its slab whole, in one
  collective read, in its own ``mpiexec`` run (slowest rank), and climio eva's
  time over it; the ``read`` phase inside the eva run is kept in the JSON;
* the plain sequential read: one process reading the whole variable the same way
  (the 1-rank run of the above), and climio eva's time over it;
* the largest peak resident memory of one rank, and the sum over ranks
  against the size of the variable;
* the speed-up over scipy called cell by cell (``genpareto.fit`` on the excesses for ``--method pot``,
  ``genextreme.fit`` on the 365-day maxima for ``--method gev``), timed on a sample of cells in the same
  run and scaled to the grid.

``--methods pot,gev`` runs each method on the same inputs, interleaved, so the two compare within a run; a
method followed by ``+normal`` or ``+profile`` (``pot+profile``) runs it with ``--ci 0.95 --ci-method`` that
method, ``pot+decluster`` with ``--decluster runs:1`` and ``pot+trend``/``gev+trend`` with ``--covariate
year``, so the cost of each is measured against the plain fit in the same run.

With ``--cold`` the input's pages are dropped before every timed run instead (:mod:`climio.bench.cache`),
and before each eva run ``dd`` reads the whole file from a cold cache: the disk's own speed in the same
minute, the baseline of the ``wall / cold dd`` column.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.bench import cache
from climio.bench.runner import (check_reps, grouped, markdown_table, median, require_plain_process, rows_from_ranks,
                                 run_ranks, save_results, save_rows, scratch_directory, traced_run)
from climio.core import ncio
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI

FORMATS = ("cdf5", "nc4z")


def make_inputs(directory: str, shape: Sequence[int], formats: Sequence[str]) -> dict[str, str]:
    """The benchmark inputs, generated on 2 ranks; the compressed copy made with nccopy."""
    paths = {"cdf5": os.path.join(directory, "pr-cdf5.nc")}
    run_ranks(2, ["gen", "cmip", paths["cdf5"], "--shape", ",".join(map(str, shape)), "--mode", "cdf5",
                  "--overwrite"])
    if "nc4z" in formats:
        if shutil.which("nccopy") is None:
            raise ClimioError("bench eva: nccopy (netcdf-bin) is needed for the compressed input; make install",
                              collective=True)
        paths["nc4z"] = os.path.join(directory, "pr-nc4z.nc")
        subprocess.run(["nccopy", "-k", "nc4", "-d", "1", "-c", f"time/1,lat/{shape[1]},lon/{shape[2]}",
                        paths["cdf5"], paths["nc4z"]], check=True)
    return {f: p for f, p in paths.items() if f in formats}


SCIPY_FITS = {"pot": "genpareto", "gev": "genextreme"}
DAYS_PER_BLOCK = 365  # scipy's GEV timing: maxima of 365-day blocks (the fit's cost, not the calendar, counts)


def scipy_seconds_per_cell(path: str, sample: int, tail: float, method: str = "pot") -> float:
    """Median seconds of scipy.stats.genpareto.fit (floc=0) on the excesses of ``sample`` cells (``pot``), or of
    scipy.stats.genextreme.fit on their 365-day maxima (``gev``)."""
    from scipy import stats

    with ncio.open(path, read="root") as ds:
        t, ny, nx = ds.shape("pr")
        rng = np.random.default_rng(0)
        picks = rng.choice(ny * nx, size=min(sample, ny * nx), replace=False)
        rows = sorted({int(p) // nx for p in picks})
        series = {y: ds.read("pr", ncio.Hyperslab((0, y, 0), (t, 1, nx)))[:, 0, :] for y in rows}
    seconds = []
    for p in picks:
        y = series[int(p) // nx][:, int(p) % nx].astype(float)
        if method == "gev":
            maxima = y[:y.size // DAYS_PER_BLOCK * DAYS_PER_BLOCK].reshape(-1, DAYS_PER_BLOCK).max(axis=1)
            started = time.perf_counter()
            stats.genextreme.fit(maxima)
        else:
            u = np.quantile(y, 1 - tail)
            excess = y[y > u] - u
            started = time.perf_counter()
            stats.genpareto.fit(excess, floc=0)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def extra_arguments() -> dict[str, list[str]]:
    """What a ``+name`` after a method adds to its ``climio eva`` command line."""
    from climio.eva.intervals import METHODS as CI_METHODS

    return {**{ci: ["--ci", "0.95", "--ci-method", ci] for ci in CI_METHODS}, "decluster": ["--decluster", "runs:1"],
            "trend": ["--covariate", "year"]}


ONLY = {"decluster": "pot"}  # extras of one method only


def variants() -> tuple[str, ...]:
    """The names ``--methods`` takes: each eva method, alone or with an interval method (``pot+profile``),
    ``pot+decluster``, and ``pot+trend``/``gev+trend`` (``--covariate year``)."""
    from climio.eva.methods import METHODS

    return (*METHODS, *(f"{m}+{extra}" for m in METHODS for extra in extra_arguments()
                        if ONLY.get(extra, m) == m))


def run_once(path: str, nranks: int, scheme: str, split: str, workdir: str, method: str = "pot") -> dict[str, Any]:
    """One ``climio eva`` run of ``method`` (a name of :func:`variants`), timed from the shell and by its trace."""
    out = os.path.join(workdir, "eva.nc")
    base, _, extra = method.partition("+")
    wall, report = traced_run(nranks, ["eva", path, out, "--overwrite", "--scheme", scheme, "--split", split, "--mode",
                                       "cdf5", "--method", base, *(extra_arguments()[extra] if extra else [])],
                              workdir)
    job = report["summary"]["job"]["max_seconds"]  # climio eva's own time, from a barrier
    read = report["summary"].get("read", {}).get("max_seconds", 0.0)
    work = report["summary"].get("work", {}).get("max_seconds", 0.0)  # thresholds, fits, intervals
    return {"wall_s": wall, "job_s": job, "read_s": read, "work_s": work, "peak_rss_max": report["peak_rss_bytes"]["max"],
            "peak_rss_total": report["peak_rss_bytes"]["total"]}


def plain_read(comm: MPI.Comm, path: str, split: str, reps: int, rows_json: str, cold: bool = False) -> None:
    """The worker behind the baseline: every rank reads its slab of ``pr`` whole, in one collective read,
    as ``climio eva --split SPLIT`` divides the cells; rank 0 saves the slowest rank's seconds per rep
    (``cold``: after rank 0 dropped the file from the page cache)."""
    from mpi4py import MPI

    from climio.eva.job import decomposition

    rows = []
    with ncio.open(path, comm) as ds:
        owned = decomposition(ds.shape("pr"), split, comm.Get_size()).owned(comm.Get_rank())
        for rep in range(reps):
            if cold and comm.Get_rank() == 0:
                cache.drop(path)
            comm.Barrier()
            started = MPI.Wtime()
            data = ds.read("pr", owned)
            seconds = comm.allreduce(MPI.Wtime() - started, op=MPI.MAX)
            del data
            rows.append({"rep": rep, "plain_read_s": seconds})
    save_rows(comm, rows, rows_json)


def main(comm: MPI.Comm, *, shape: Sequence[int], ranks: Sequence[int], schemes: Sequence[str],
         splits: Sequence[str], formats: Sequence[str], reps: int, directory: str, out: str | None,
         scipy_sample: int = 40, cold: bool = False, methods: Sequence[str] = ("pot",)) -> None:
    require_plain_process(comm, "eva")
    check_reps(reps)
    cells = int(shape[1]) * int(shape[2])
    variable_bytes = int(np.prod(shape)) * 4
    rows: list[dict[str, Any]] = []
    with scratch_directory(comm, "eva", directory) as workdir:
        inputs = make_inputs(workdir, shape, formats)
        per_cell = {m: scipy_seconds_per_cell(inputs["cdf5"], scipy_sample, 0.01, m)
                    for m in dict.fromkeys(v.partition("+")[0] for v in methods)}
        for m, seconds in per_cell.items():
            print(f"scipy.stats.{SCIPY_FITS[m]}.fit: {seconds * 1e3:.2f} ms per cell (median of {scipy_sample}), "
                  f"{seconds * cells:.0f} s for {cells} cells", flush=True)
        for fmt, path in inputs.items():
            if not cold:
                cache.warm(path)
            for n in sorted({1, *ranks}):  # 1 rank: the plain sequential read of the whole variable
                for split in splits:  # the baseline: the same slabs read whole, nothing else
                    reads = rows_from_ranks(n, ["bench", "eva", "--plain-read", path, "--splits", split,
                                                "--reps", str(reps), *["--cold"] * cold])
                    rows += [{"format": fmt, "ranks": n, "split": split, **r} for r in reads]
            for n in ranks:
                for scheme in schemes:
                    for split in splits:
                        print(f"bench eva: {fmt} {n} rank(s) {scheme} {split} ...", flush=True)
                        for rep in range(reps):
                            for eva_method in methods:  # interleaved: the methods compare within a minute
                                how = cache.before_timed_run(path, cold)
                                row = run_once(path, n, scheme, split, workdir, eva_method)
                                rows.append({"format": fmt, "ranks": n, "scheme": scheme, "split": split,
                                             "method": eva_method, "rep": rep, **how, **row})
    table = summarise(rows, cells, variable_bytes, {m: s * cells for m, s in per_cell.items()})
    print(f"climio bench eva: pr{tuple(shape)} float32 ({variable_bytes / 1e6:.0f} MB), median of {reps} rep(s)")
    print(format_table(table))
    if out:
        save_results(out, "eva", {"shape": list(shape), "cold": cold, "scipy_seconds_per_cell": per_cell, "rows": rows,
                                  "table": table}, table)


def summarise(rows: list[dict[str, Any]], cells: int, variable_bytes: int,
              scipy_total: dict[str, float]) -> list[dict[str, Any]]:
    table = []
    reads = grouped((r for r in rows if "plain_read_s" in r), "format", "ranks", "split")
    runs = grouped((r for r in rows if "scheme" in r), "format", "ranks", "scheme", "split", "method")
    for (fmt, n, scheme, split, method), sample in runs.items():
        wall = median(sample, "wall_s")
        job = median(sample, "job_s")
        read, sequential = (median(reads[(fmt, m, split)], "plain_read_s") for m in (n, 1))
        table.append({"format": fmt, "ranks": n, "scheme": scheme, "split": split, "method": method,
                      "wall_s": wall, "job_s": job,
                      "cells_per_s": cells / job, "read_s": read, "job_over_read": job / read if read else 0.0,
                      "sequential_read_s": sequential, "job_over_sequential_read": job / sequential if sequential else 0.0,
                      "read_phase_s": median(sample, "read_s"),
                      "fit_phase_s": statistics.median(r.get("work_s", 0.0) for r in sample),
                      "peak_rss_rank_MB": max(r["peak_rss_max"] for r in sample) / 1e6,
                      "peak_rss_job_over_variable": max(r["peak_rss_total"] for r in sample) / variable_bytes,
                      "speedup_vs_scipy": scipy_total[method.partition("+")[0]] / wall})
        if "cold_dd_s" in sample[0]:
            dd = median(sample, "cold_dd_s")
            table[-1].update({"cold_dd_s": dd, "wall_over_cold_dd": wall / dd, "job_over_cold_dd": job / dd,
                              "cache": sample[0]["cache"]})
    return table


def format_table(table: list[dict[str, Any]]) -> str:
    cold = "cold_dd_s" in table[0]
    columns = [("input", "l"), ("ranks", "r"), ("scheme", "l"), ("split", "l"), ("method", "l")] + [(h, "r") for h in (
        "wall s", "eva s", "fit phase s", "cells/s", "read s", "eva / read", "sequential read s", "eva / sequential read",
        "peak MB per rank", "job memory / variable", "vs scipy", *["cold dd s", "wall / cold dd"] * cold)]
    return markdown_table(columns, ([e["format"], str(e["ranks"]), e["scheme"], e["split"], e["method"],
                                     f"{e['wall_s']:.2f}",
                                     f"{e['job_s']:.2f}", f"{e.get('fit_phase_s', 0):.2f}", f"{e['cells_per_s']:.0f}", f"{e['read_s']:.2f}",
                                     f"{e['job_over_read']:.1f}", f"{e['sequential_read_s']:.2f}",
                                     f"{e['job_over_sequential_read']:.1f}", f"{e['peak_rss_rank_MB']:.0f}",
                                     f"{e['peak_rss_job_over_variable']:.2f}", f"{e['speedup_vs_scipy']:.0f}x",
                                     *[f"{e.get('cold_dd_s', 0):.2f}", f"{e.get('wall_over_cold_dd', 0):.2f}"] * cold]
                                    for e in table))
