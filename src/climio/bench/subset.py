"""``climio bench subset``: seed 001's test (an MJO box out of a geodesic grid) and climio against ncks.

1. **Geodesic**: ``climio gen geodesic`` at level 9 (2.6 M cells, 5.2 M corners,
   7.9 M edges, 25 layers, 4 times), then ``climio subset -b 20,-20,160,90``
   (20N..20S, 90E..160E) of every variable, reading only the selected runs
   (``needed``) or whole blocks followed by pack-and-redistribute (``whole``,
   the seed's first subsetter), on each rank count. Per run: the slowest rank's
   time in each phase (seed 001 Tables I-II), bytes read against bytes selected,
   read and write bandwidth.
2. **Regular grid**: the same box as ``-d lat,-20.,20. -d lon,90.,160.`` out of the
   CMIP-size ``pr`` file, by ``climio subset`` as one process and by ``ncks``,
   alternating in the same run.

The input is read once before the timed runs, so they start from the page cache; with ``--cold`` its
pages are dropped before every timed run instead, and ``dd``'s cold read of the same file is timed
before each geodesic run (``cold dd s``). Medians of ``--reps`` runs.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from climio.bench import cache
from climio.bench.runner import (check_reps, grouped, markdown_table, median, require_plain_process, run_ranks,
                                 save_results, scratch_directory, timed, traced_run)
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI

MJO_BOX = "20,-20,160,90"  # -b NORTH,SOUTH,EAST,WEST
MJO_RANGES = ("-d", "lat,-20.,20.", "-d", "lon,90.,160.")
REGULAR_CASES = {"MJO box": MJO_RANGES, "45S..45N": ("-d", "lat,-45.,45.")}
PHASES = ("open", "select", "read", "renumber", "redistribute", "write", "sync", "close")


def subset_once(nranks: int, args: Sequence[str], workdir: str) -> dict[str, Any]:
    """One ``climio --trace subset`` run: its own time, phases (slowest rank) and byte counts, all from the
    trace (``job``, each phase, ``read`` bytes, ``selected`` bytes)."""
    wall, report = traced_run(nranks, ["subset", "--overwrite", *args], workdir)
    summary = report["summary"]
    row = {"wall_s": wall, "job_s": summary["job"]["max_seconds"],
           "read_MB": summary["read"]["total_bytes"] / 1e6, "selected_MB": summary["selected"]["total_bytes"] / 1e6}
    for phase in PHASES:
        row[f"{phase}_s"] = summary.get(phase, {}).get("max_seconds", 0.0)
    for phase in ("read", "write"):
        entry = summary.get(phase, {})
        row[f"{phase}_MBps"] = entry.get("bandwidth_MBps", 0.0)
    return row


def geodesic_rows(path: str, ranks: Sequence[int], reps: int, workdir: str, cold: bool) -> list[dict[str, Any]]:
    rows = []
    out = os.path.join(workdir, "mjo.nc")
    for n in ranks:
        for read in ("whole", "needed"):
            print(f"bench subset: geodesic, {n} rank(s), read {read} ...", flush=True)
            for rep in range(reps):
                how = cache.before_timed_run(path, cold)
                row = subset_once(n, ["--read", read, "-b", MJO_BOX, path, out], workdir)
                rows.append({"case": "geodesic", "ranks": n, "read": read, "rep": rep, **how, **row})
    return rows


def regular_rows(path: str, reps: int, workdir: str, cold: bool) -> list[dict[str, Any]]:
    if shutil.which("ncks") is None:
        raise ClimioError("bench subset: ncks (nco) is needed for the comparison; make install", collective=True)
    rows = []
    out = os.path.join(workdir, "box.nc")
    for name, ranges in REGULAR_CASES.items():
        print(f"bench subset: regular grid {name}, climio (1 process) and ncks ...", flush=True)
        for rep in range(reps):
            if cold:
                cache.drop(path)
            climio = timed("subset", [sys.executable, "-m", "climio", "subset", "-O", "-v", "pr", *ranges, path, out])
            if cold:
                cache.drop(path)
            ncks = timed("subset", ["ncks", "-O", "-v", "pr", *ranges, path, out])
            rows.append({"case": "regular", "subset": name, "rep": rep, "climio_s": climio, "ncks_s": ncks})
    return rows


def main(comm: MPI.Comm, *, level: int, layers: int, times: int, ranks: Sequence[int], reps: int,
         cmip_shape: Sequence[int], directory: str, out: str | None, geodesic_input: str | None,
         cold: bool = False) -> None:
    require_plain_process(comm, "subset")
    check_reps(reps)
    with scratch_directory(comm, "subset", directory) as workdir:
        path = geodesic_input or os.path.join(workdir, "geodesic.nc")
        if geodesic_input is None:
            print(f"bench subset: generating the level-{level} geodesic grid ...", flush=True)
            run_ranks(2, ["gen", "geodesic", path, "--level", str(level), "--layers", str(layers),
                          "--times", str(times)])
        if not cold:
            cache.warm(path)
        rows = geodesic_rows(path, ranks, reps, workdir, cold)
        cmip = os.path.join(workdir, "pr.nc")
        run_ranks(2, ["gen", "cmip", cmip, "--shape", ",".join(map(str, cmip_shape))])
        if not cold:
            cache.warm(cmip)
        rows += regular_rows(cmip, reps, workdir, cold)
    geodesic, regular = summarise(rows)
    print(f"climio bench subset: MJO box (-b {MJO_BOX}) of a level-{level} geodesic grid, {layers} layers, "
          f"{times} times; median of {reps} rep(s)")
    print(format_geodesic(geodesic))
    print(f"\nregular grid pr{tuple(cmip_shape)}, wall time of the command; median of {reps} rep(s)")
    print(format_regular(regular))
    if out:
        save_results(out, "subset", {"level": level, "layers": layers, "times": times, "cmip_shape": list(cmip_shape),
                                     "cold": cold, "rows": rows, "geodesic": geodesic, "regular": regular}, geodesic)


def summarise(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    geodesic = []
    for (n, read), sample in grouped((r for r in rows if r["case"] == "geodesic"), "ranks", "read").items():
        entry: dict[str, Any] = {"ranks": n, "read": read, "cache": sample[0]["cache"]}
        for key in sample[0]:
            if key not in ("case", "ranks", "read", "rep", "cache"):
                entry[key] = median(sample, key)
        entry["read_over_selected"] = entry["read_MB"] / entry["selected_MB"] if entry["selected_MB"] else 0.0
        geodesic.append(entry)
    regular = []
    for name in REGULAR_CASES:
        sample = [r for r in rows if r["case"] == "regular" and r["subset"] == name]
        climio, ncks = median(sample, "climio_s"), median(sample, "ncks_s")
        regular.append({"subset": name, "ranges": " ".join(REGULAR_CASES[name]), "climio_s": climio, "ncks_s": ncks,
                        "ncks_over_climio": ncks / climio})
    return geodesic, regular


def format_geodesic(table: list[dict[str, Any]]) -> str:
    cold = "cold_dd_s" in table[0]
    columns = [("ranks", "r"), ("read", "l")] + [(h, "r") for h in (
        "subset s", "open", "select", "read", "renumber", "redistribute", "write", "sync", "read MB", "selected MB",
        "read / selected", "read MB/s", "write MB/s", *["cold dd s"] * cold)]
    return markdown_table(columns, ([str(e["ranks"]), e["read"], *(f"{e[k]:.2f}" for k in (
        "job_s", "open_s", "select_s", "read_s", "renumber_s", "redistribute_s", "write_s", "sync_s")),
        f"{e['read_MB']:.0f}", f"{e['selected_MB']:.0f}", f"{e['read_over_selected']:.2f}",
        f"{e['read_MBps']:.0f}", f"{e['write_MBps']:.0f}", *[f"{e.get('cold_dd_s', 0):.2f}"] * cold]
        for e in table))


def format_regular(table: list[dict[str, Any]]) -> str:
    columns = [("subset (-v pr)", "l"), ("climio subset, 1 process, s", "r"), ("ncks s", "r"), ("ncks / climio", "r")]
    return markdown_table(columns, ([f"{e['subset']}: `{e['ranges']}`", f"{e['climio_s']:.2f}", f"{e['ncks_s']:.2f}",
                                     f"{e['ncks_over_climio']:.2f}"] for e in table))
