"""How long a small job takes from the shell prompt back to it: ``climio subset``, ``climio info`` and
``climio eva --help`` as plain processes on a tiny file, against ``ncks`` on the same file and the floors
under climio (the interpreter alone; numpy, netCDF4 and MPI imported); and ``climio eva`` on a small daily
series, its first run (the first after installing, when the bench runs first) against the next ones: installing
compiles eva's kernels, so the first analysis should not wait for a compiler.

Users call subset in loops over thousands of files, so start-up is the whole cost of a small job. Each
command runs ``reps`` times, the commands interleaved so that a change in the machine's speed hits them
alike; medians are reported. Whether climio's bytecode is precompiled is recorded: without it (an editable
install under ``PYTHONDONTWRITEBYTECODE``) every run compiles climio's sources again (about 0.05 s).
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from climio.bench.runner import markdown_table, require_plain_process, save_results, scratch_directory, timed
from climio.core import mpi

if TYPE_CHECKING:
    from mpi4py import MPI

TARGET_S = 0.25  # a single-process subset, info or eva --help on a small file
FIRST_EVA_TARGET = 1.5  # the first analysis at most this many times the next ones


def commands(tiny: str, series: str, out: str, workdir: str) -> dict[str, list[str]]:
    """The timed command lines by name; climio's run as ``python -m climio`` (what the ``climio`` script does)."""
    climio = [sys.executable, "-m", "climio"]
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import numpy, netCDF4, mpi4py.MPI": [sys.executable, "-c", "import numpy, netCDF4; from mpi4py import MPI"],
        "climio subset": [*climio, "subset", "-O", "-v", "tas", tiny, out],
        "ncks": ["ncks", "-O", "-v", "tas", tiny, out],
        "climio info": [*climio, "info", "--dir", workdir],
        "climio eva --help": [*climio, "eva", "--help"],
        "climio eva": [*climio, "eva", "-O", series, os.path.join(workdir, "eva.nc")],
    }


def bytecode_precompiled() -> bool:
    """Whether climio's modules have up-to-date bytecode next to them (``make install`` compiles it)."""
    import climio.cli

    source = climio.cli.__file__
    cached = importlib.util.cache_from_source(source)
    return os.path.exists(cached) and os.path.getmtime(cached) >= os.path.getmtime(source)


def main(comm: MPI.Comm, *, reps: int, directory: str, out: str | None) -> list[dict[str, Any]]:
    require_plain_process(comm, "startup")
    # the children are plain processes, as a user's shell starts them: no launcher variables, the singleton
    # settings climio gives itself (so the import floor is measured as climio runs it)
    env = {k: v for k, v in os.environ.items() if k not in mpi.RANK_VARIABLES}
    env.update({k: env.get(k, v) for k, v in mpi.SINGLETON_DEFAULTS.items()})
    with scratch_directory(comm, "startup", directory) as tmp:
        tiny, series, target = (os.path.join(tmp, name) for name in ("tiny.nc", "series.nc", "out.nc"))
        for path, shape, var in ((tiny, "12,4,5", "tas"), (series, "3650,4,5", "pr")):
            subprocess.run([sys.executable, "-m", "climio", "gen", "cmip", path, "--shape", shape, "--var", var],
                           check=True, capture_output=True, env=env)
        lines = commands(tiny, series, target, tmp)
        times: dict[str, list[float]] = {name: [] for name in lines}
        # one warm-up each (the page cache holds the libraries afterwards); eva's is its first run
        first = {name: timed("startup", argv, env) for name, argv in lines.items()}
        for _ in range(reps):
            for name, argv in lines.items():
                times[name].append(timed("startup", argv, env))
    ncks = statistics.median(times["ncks"])
    rows = [{"command": name, "median_s": statistics.median(t), "min_s": min(t), "runs_s": t,
             "vs_ncks": statistics.median(t) / ncks} for name, t in times.items()]
    rows.append({"command": "climio eva, first run", "median_s": first["climio eva"], "min_s": first["climio eva"],
                 "runs_s": [first["climio eva"]], "vs_ncks": first["climio eva"] / ncks})
    first_eva = first["climio eva"] / statistics.median(times["climio eva"])
    precompiled = bytecode_precompiled()
    if comm.Get_rank() == 0:
        print(markdown_table([("command", "l"), ("median s", "r"), ("min s", "r"), ("x ncks", "r")],
                             [(r["command"], f"{r['median_s']:.3f}", f"{r['min_s']:.3f}", f"{r['vs_ncks']:.1f}")
                              for r in rows]))
        worst = max(r["median_s"] for r in rows if r["command"].startswith("climio") and r["command"] != "climio eva"
                    and not r["command"].startswith("climio eva,"))
        print(f"target: climio subset, info and eva --help at most {TARGET_S} s: "
              f"{'met' if worst <= TARGET_S else 'missed'} (slowest {worst:.3f} s); bytecode precompiled: "
              f"{'yes' if precompiled else 'no'}")
        print(f"first eva: {first_eva:.2f}x the next ones (target at most {FIRST_EVA_TARGET}x: "
              f"{'met' if first_eva <= FIRST_EVA_TARGET else 'missed'})")
        if out:
            save_results(out, "startup", {"reps": reps, "bytecode_precompiled": precompiled, "target_s": TARGET_S,
                                          "first_eva_vs_next": first_eva, "table": rows})
    return rows
