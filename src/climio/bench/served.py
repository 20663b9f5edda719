"""``climio bench model --servers N``: the CMAQ mock-up in Fortran (examples/cmaq_mockup.F90) writing attached
(every model rank writes, synchronously) against the same program beside N ``climio serve`` ranks, with a
workload between the steps, interleaved in one run; and the same program without output, for memory.

Per strategy and mode it reports, as medians: the model-visible output time per step (rank 0's time inside the
steps' climio calls) and its ratio to one copy of a rank's step (``memcpy``, timed in the same run before each
pair of launches: the least a call that lets the model reuse its arrays at once can cost), the whole run's
time (workload and output, to the close), the servers' write bandwidth (the file's bytes over the time the
servers spent on anything but waiting for messages, from their trace), a server's collective MPI calls a step
(from one step's start to the last step's, from the same trace: the file's definitions and close left out), and
each model rank's peak resident memory above the program without output (GNU time's maximum RSS). The served
file is compared with the attached one after each pair.

    climio bench model --servers 1 --grid 2x1 --strategy agg --mode cdf5 --reps 3

The client buffer is one step of a rank's fields (at least 32 MiB) unless ``--buffer-mb`` says otherwise, and the
workload lasts 1.5 times the first attached run's write per step unless ``--work`` gives its seconds.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from typing import Any

from climio.bench.capi import compile_mockup, same_values
from climio.bench.runner import make_directory, markdown_table, require_plain_process, save_results
from climio.core import mpi
from climio.errors import ClimioError, IOFault

PEAK = "climio-peak-kb"
TIMEOUT = 1800


def main(comm: Any, *, domain: str, grids: str, steps: int, strategies: list[str], modes: list[str], out: str,
         reps: int, servers: int, work: float | None, buffer_mb: int | None) -> None:
    from climio.bench.model import parse_domain, parse_grids

    require_plain_process(comm, "model --servers")
    nx, ny, nlay, nspec = parse_domain(domain)
    if steps < 1 or reps < 1 or servers < 1 or (work is not None and work < 0) or (buffer_mb is not None and
                                                                                    buffer_mb < 1):
        raise ClimioError("--steps, --reps, --servers and --buffer-mb must be at least 1, --work at least 0")
    for px, py in parse_grids(grids):
        if servers > px * py:
            raise ClimioError(f"--servers {servers}: at most as many servers as model ranks ({px * py} for --grid "
                              f"{px}x{py})")
    make_directory(out)
    binary = compile_mockup(out)
    rows: list[dict[str, Any]] = []
    for px, py in parse_grids(grids):
        step_bytes = nx * ny * nlay * nspec * 4
        buffer = buffer_mb or max(32, math.ceil(1.1 * step_bytes / (px * py) / 2**20) + 1)
        base = [f"domain={nx}x{ny}x{nlay}x{nspec}", f"grid={px}x{py}", f"steps={steps}"]
        without = run(binary, out, "none", [*base, "io=no"], px * py)
        for strategy in strategies:
            for mode in modes:
                args = [*base, f"strategy={strategy}", f"mode={mode}"]
                pause = work
                for rep in range(reps):
                    if pause is None:  # 1.5 x the synchronous write per step, from a first attached run
                        first = run(binary, out, "attached", [*args, "work=0"], px * py)
                        pause = 1.5 * first["steps_s"] / steps
                    files, copy_s = {}, copy_seconds(step_bytes // (px * py))
                    for kind in (("attached", "served") if rep % 2 == 0 else ("served", "attached")):
                        measured = run(binary, out, kind, [*args, f"work={pause}"], px * py, servers, buffer)
                        files[kind] = measured.pop("path")
                        rows.append({"grid": f"{px}x{py}", "strategy": strategy, "mode": mode, "kind": kind,
                                     "rep": rep, "work_s": pause, "buffer_mb": buffer, "servers": servers,
                                     "bytes": step_bytes * steps, "steps": steps, "memcpy_s": copy_s,
                                     "rss_above_kb": measured["peak_kb"] - without["peak_kb"], **measured})
                    if not same_values(files["served"], files["attached"]):
                        raise IOFault(f"bench model --servers: the served and attached files differ ({strategy}, "
                                      f"{mode})")
                    for path in files.values():
                        os.unlink(path)
    table = summarise(rows)
    print(f"climio bench model --servers {servers}: {nx}x{ny}x{nlay}x{nspec}, {steps} step(s), medians of {reps}")
    print(format_table(table))
    save_results(out, "model-served", {"domain": [nx, ny, nlay, nspec], "steps": steps, "reps": reps,
                                       "servers": servers, "rows": rows, "table": table})


def run(binary: str, out: str, kind: str, args: list[str], nranks: int, servers: int = 0,
        buffer_mb: int = 0) -> dict[str, Any]:
    """One launch of the mock-up: attached, beside ``servers`` climio serve ranks, or without output ("none").
    Its timing, each model rank's peak RSS (the largest), the servers' busy time and the file's path."""
    path = os.path.join(out, f"served-{kind}.nc")
    timing, trace = os.path.join(out, f"served-{kind}.json"), os.path.join(out, f"served-{kind}-trace.json")
    peaks_file = os.path.join(out, f"served-{kind}-peak.txt")
    for stale in (timing, trace, peaks_file):
        if os.path.exists(stale):
            os.unlink(stale)
    peak = shutil.which("time", path="/usr/bin:/bin")  # GNU time: each rank's maximum resident set, one line
    program = [*([peak, "-a", "-o", peaks_file, "-f", f"{PEAK} %M"] if peak else []), binary, path, *args,
               f"timing={timing}"]
    command, env = mpi.mpiexec_command(nranks, program)
    if kind == "served":
        command += [":", "-n", str(servers), sys.executable, "-m", "climio", "serve", "--trace", trace]
        env["CLIMIO_SERVE_BUFFER_MB"] = str(buffer_mb)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    if result.returncode != 0:
        raise IOFault(f"bench model --servers: the {kind} run failed (exit {result.returncode}): "
                      f"{result.stderr.strip()[-400:]}")
    with open(timing) as f:
        measured: dict[str, Any] = json.load(f)
    peaks = []
    if os.path.exists(peaks_file):
        with open(peaks_file) as f:
            peaks = [int(line.split()[-1]) for line in f if line.startswith(PEAK)]
    measured.update(path=path, peak_kb=max(peaks) if peaks else math.nan, server_busy_s=math.nan,
                    server_collectives=math.nan)
    if kind == "served":
        with open(trace) as f:
            ranks = json.load(f)["ranks"]
        measured["server_busy_s"] = max(sum(p["seconds"] for name, p in r["phases"].items()
                                            if name != "serve:receive") for r in ranks)
        # climio's library counts them (built with the C API): the calls so far, marked as each step begins
        marks = [[e[3] for e in r["events"] if e[0] == "serve:step"] for r in ranks]
        if all(r.get("collective_calls") is not None for r in ranks) and all(len(m) > 1 for m in marks):  # a step's, between the first and last steps
            measured["server_collectives"] = max((m[-1] - m[0]) / (len(m) - 1) for m in marks)
    return measured


def copy_seconds(nbytes: int, times: int = 5) -> float:
    """The median time of one ``memcpy`` of ``nbytes`` between two arrays already in memory."""
    import time

    import numpy as np

    source, target = np.ones(max(1, nbytes // 4), np.float32), np.zeros(max(1, nbytes // 4), np.float32)
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        np.copyto(target, source)
        spent.append(time.perf_counter() - started)
    return statistics.median(spent)


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per grid, strategy and mode: the medians of both kinds and the ratios the targets name."""
    table = []
    for key in sorted({(r["grid"], r["strategy"], r["mode"]) for r in rows}):
        def median(kind: str, value: str) -> float:
            return statistics.median(r[value] for r in rows if (r["grid"], r["strategy"], r["mode"], r["kind"]) ==
                                     (*key, kind))

        some = next(r for r in rows if (r["grid"], r["strategy"], r["mode"]) == key)
        sync, visible = median("attached", "steps_s") / some["steps"], median("served", "steps_s") / some["steps"]
        table.append({"grid": key[0], "strategy": key[1], "mode": key[2], "work_s": some["work_s"],
                      "buffer_mb": some["buffer_mb"], "sync_step_s": sync, "served_step_s": visible,
                      "visible_ratio": visible / sync, "memcpy_s": median("served", "memcpy_s"),
                      "memcpy_ratio": visible / median("served", "memcpy_s"),
                      "attached_run_s": median("attached", "run_s"),
                      "served_run_s": median("served", "run_s"),
                      "server_mib_s": some["bytes"] / 2**20 / median("served", "server_busy_s"),
                      # a server's whole run (connection, define and close included) over the steps
                      "server_collectives_per_step": median("served", "server_collectives"),
                      "attached_rss_mb": median("attached", "rss_above_kb") / 1024,
                      "served_rss_mb": median("served", "rss_above_kb") / 1024})
    return table


def format_table(table: list[dict[str, Any]]) -> str:
    def cells(r: dict[str, Any]) -> list[str]:
        return [r["grid"], r["strategy"], r["mode"], f"{r['work_s']:.2f}", f"{r['sync_step_s']:.3f}",
                f"{r['served_step_s']:.3f}", f"{r['visible_ratio']:.2f}", f"{r['memcpy_s']:.3f}",
                f"{r['memcpy_ratio']:.2f}", f"{r['attached_run_s']:.2f}",
                f"{r['served_run_s']:.2f}", f"{r['server_mib_s']:.0f}",
                f"{r['server_collectives_per_step']:.0f}" if not math.isnan(r["server_collectives_per_step"]) else "-",
                f"{r['attached_rss_mb']:.1f}",
                f"{r['served_rss_mb']:.1f} ({r['buffer_mb']} buffer)"]

    return markdown_table([("grid", "l"), ("strategy", "l"), ("mode", "l"), ("work s/step", "r"),
                           ("attached write s/step", "r"), ("served s/step", "r"), ("served / attached", "r"),
                           ("memcpy s/step", "r"), ("x memcpy", "r"),
                           ("attached run s", "r"), ("served run s", "r"), ("servers MiB/s", "r"),
                           ("server collectives / step", "r"), ("attached RSS +MB", "r"), ("served RSS +MB", "r")],
                          (cells(r) for r in table))
