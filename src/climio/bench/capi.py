"""``climio bench model --driver fortran``: the CMAQ mock-up as a Fortran program writing through libclimio
(examples/cmaq_mockup.F90) against the same loop in Python through :class:`ModelOutput`, on the same domain,
process grid, strategy, mode and rank count, interleaved in one run.

Both drivers time the same span (the decomposition, create and definitions, every step's writes, close) and
write it as JSON; the Fortran program's first call, which starts the library's Python, is timed apart
(``start_s``). The C entry points' cost per call is measured two ways: within each Fortran run (the time the
program measured around its steps' calls less the time the library's trace spent in their collective phases,
``entry_us``), and as the difference of the two drivers' I/O times over the number of calls in a second pair of
runs on a tiny domain with many steps (``per_call_us``: the issue's "many small writes", but noisier, as two
runs are subtracted). The Fortran file is compared with the Python one after each pair.

    climio bench model --driver fortran --domain CA --grid 2x1 --strategy agg --mode cdf5 --reps 5

The worker side (``python -m climio.bench.capi OUT key=value ...``) takes the Fortran program's arguments.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from climio.bench.runner import make_directory, markdown_table, require_plain_process, run_job, save_results
from climio.core import collectives, mpi
from climio.errors import ClimioError, IOFault

MOCKUP = Path(__file__).resolve().parents[3] / "examples" / "cmaq_mockup.F90"
SMALL = "8x8x1x2"  # the per-call runs: 2 tiny species, so the calls' cost shows


def compile_mockup(directory: str) -> str:
    """examples/cmaq_mockup.F90 built as a model would build it: mpifort and ``pkg-config --libs climio``."""
    pkgconfig = os.path.join(sys.prefix, "lib", "pkgconfig")
    env = {**os.environ, "PKG_CONFIG_PATH": os.pathsep.join(filter(None, [pkgconfig, os.environ.get("PKG_CONFIG_PATH")]))}
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "climio"], env=env, capture_output=True, text=True)
    if flags.returncode != 0 or not MOCKUP.is_file():
        raise ClimioError(f"--driver fortran: needs the C API installed (make install: {pkgconfig}/climio.pc) and "
                          f"{MOCKUP}: {flags.stderr.strip()}")
    binary = os.path.join(directory, "cmaq_mockup")
    compiler = os.environ.get("MPIFC", "mpifort")
    built = subprocess.run([compiler, "-O2", str(MOCKUP), "-o", binary, *flags.stdout.split()], capture_output=True,
                           text=True, cwd=directory)
    if built.returncode != 0:
        raise ClimioError(f"--driver fortran: {compiler} could not build {MOCKUP.name}: {built.stderr.strip()[-400:]}")
    return binary


def run_driver(argv: list[str], nranks: int, timing: str, trace_path: str | None = None) -> dict[str, float]:
    """One mpiexec of a driver; its timing JSON. With ``trace_path`` (the Fortran driver), the library's trace
    gives the time rank 0 spent inside the steps' calls' collective phases: the rest of the time the program
    measured around those calls is what the C entry points cost (``entry_us`` per call)."""
    command, env = mpi.mpiexec_command(nranks, argv)
    if trace_path:
        env = collectives.preload({**env, "CLIMIO_TRACE": trace_path})  # the model's MPI calls counted too
    result = run_job(command, env)
    if result.returncode != 0:
        raise IOFault(f"bench model --driver fortran: {os.path.basename(argv[0])} on {nranks} ranks failed "
                      f"(exit {result.returncode}): {result.stderr.strip()[-400:]}")
    with open(timing) as f:
        measured = json.load(f)
    if trace_path:
        with open(trace_path) as f:
            phases = json.load(f)["ranks"][0]["phases"]
        inside = sum(phases.get(f"capi:{call}", {}).get("seconds", 0.0) for call in ("put_time", "write_darray"))
        measured["entry_us"] = (measured["steps_s"] - inside) / measured["step_calls"] * 1e6
        if "collectives" in phases.get("capi:put_time", {}):  # rank 0's in the steps' calls and the close
            measured["collective_calls"] = sum(phases.get(f"capi:{call}", {}).get("collectives", 0)
                                               for call in ("put_time", "write_darray", "closefile"))
    return measured


def same_values(a: str, b: str) -> bool:
    import netCDF4

    with netCDF4.Dataset(a) as x, netCDF4.Dataset(b) as y:
        return set(x.variables) == set(y.variables) and all(np.array_equal(x[v][:], y[v][:]) for v in y.variables)


def main(comm: Any, *, domain: str, grids: str, steps: int, strategies: list[str], modes: list[str], out: str,
         reps: int, call_steps: int = 200) -> None:
    from climio.bench.model import parse_domain, parse_grids

    require_plain_process(comm, "model --driver fortran")
    nx, ny, nlay, nspec = parse_domain(domain)
    if steps < 1 or reps < 1 or call_steps < 0:
        raise ClimioError("--steps and --reps must be at least 1, --call-steps at least 0")
    make_directory(out)
    binary = compile_mockup(out)
    rows: list[dict[str, Any]] = []
    for px, py in parse_grids(grids):
        for strategy in strategies:
            for mode in modes:
                runs = [("io", f"{nx}x{ny}x{nlay}x{nspec}", steps)]
                if call_steps:
                    runs.append(("calls", SMALL, call_steps))
                for kind, size, count in runs:
                    for rep in range(reps):
                        rows += pair(binary, out, kind, size, count, px, py, strategy, mode, rep)
    table = summarise(rows)
    print(f"climio bench model --driver fortran: {nx}x{ny}x{nlay}x{nspec}, {steps} step(s); per-call runs "
          f"{SMALL} x {call_steps} steps; median of {reps}")
    print(format_table(table))
    save_results(out, "model-capi", {"domain": [nx, ny, nlay, nspec], "steps": steps, "call_steps": call_steps,
                                     "reps": reps, "mpiio": os.environ.get("OMPI_MCA_io", "default"), "rows": rows,
                                     "table": table})


def pair(binary: str, out: str, kind: str, size: str, steps: int, px: int, py: int, strategy: str, mode: str,
         rep: int) -> list[dict[str, Any]]:
    """The Python and the Fortran driver once each (their order alternating by repetition), files compared."""
    rows = []
    files = {}
    for driver in (("python", "fortran") if rep % 2 == 0 else ("fortran", "python")):
        path = os.path.join(out, f"capi-{driver}.nc")
        timing = os.path.join(out, f"capi-{driver}.json")
        args = [path, f"domain={size}", f"grid={px}x{py}", f"strategy={strategy}", f"mode={mode}", f"steps={steps}",
                f"timing={timing}"]
        argv = [binary, *args] if driver == "fortran" else [sys.executable, "-m", "climio.bench.capi", *args]
        measured = run_driver(argv, px * py, timing, os.path.join(out, "capi-trace.json") if driver == "fortran"
                              else None)
        rows.append({"kind": kind, "driver": driver, "domain": size, "steps": steps, "grid": f"{px}x{py}",
                     "ranks": px * py, "strategy": strategy, "mode": mode, "rep": rep, **measured})
        files[driver] = path
    if not same_values(files["fortran"], files["python"]):
        raise IOFault(f"bench model --driver fortran: the Fortran and Python files differ ({strategy}, {mode})")
    for path in files.values():
        os.unlink(path)
    return rows


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per grid, strategy and mode: median I/O times of both drivers, their ratio, the Fortran start-up, and the
    C entry points' cost per call from the tiny runs."""
    table = []
    keys = sorted({(r["grid"], r["strategy"], r["mode"]) for r in rows})
    for grid, strategy, mode in keys:
        def median(kind: str, driver: str, field: str) -> float | None:
            values = [r[field] for r in rows if (r["grid"], r["strategy"], r["mode"], r["kind"], r["driver"]) ==
                      (grid, strategy, mode, kind, driver)]
            return statistics.median(values) if values else None

        python, fortran = median("io", "python", "io_s"), median("io", "fortran", "io_s")
        entry = {"grid": grid, "strategy": strategy, "mode": mode, "python_io_s": python, "fortran_io_s": fortran,
                 "ratio": fortran / python, "fortran_start_s": median("io", "fortran", "start_s")}
        entry["entry_us"] = median("io", "fortran", "entry_us")
        collective = median("io", "fortran", "collective_calls")
        steps = next(r["steps"] for r in rows if r["kind"] == "io")
        entry["collectives_per_step"] = collective / steps if collective is not None else None
        small_python, small_fortran = median("calls", "python", "io_s"), median("calls", "fortran", "io_s")
        if small_python is not None and small_fortran is not None:
            calls = next(r["calls"] for r in rows if r["kind"] == "calls" and r["driver"] == "fortran")
            entry.update(call_python_s=small_python, call_fortran_s=small_fortran, calls=calls,
                         per_call_us=(small_fortran - small_python) / calls * 1e6,
                         small_entry_us=median("calls", "fortran", "entry_us"))
        table.append(entry)
    return table


def format_table(table: list[dict[str, Any]]) -> str:
    def cells(r: dict[str, Any]) -> list[str]:
        small = [f"{r[k]:.0f}" if k in r else "-" for k in ("small_entry_us", "per_call_us")]
        collectives = "-" if r.get("collectives_per_step") is None else f"{r['collectives_per_step']:.1f}"
        return [r["grid"], r["strategy"], r["mode"], f"{r['python_io_s']:.3f}", f"{r['fortran_io_s']:.3f}",
                f"{r['ratio']:.2f}", f"{r['fortran_start_s']:.2f}", f"{r['entry_us']:.0f}", collectives, *small]

    return markdown_table([("grid", "l"), ("strategy", "l"), ("mode", "l"), ("Python I/O s", "r"),
                           ("Fortran I/O s", "r"), ("Fortran / Python", "r"), ("Fortran start s", "r"),
                           ("entry us/call", "r"), ("Fortran collectives / step", "r"), ("entry us/call, tiny", "r"),
                           ("difference us/call, tiny", "r")],
                          (cells(r) for r in table))


# ------------------------------------------------------------------------------------------------ the worker


def worker(argv: list[str]) -> None:
    """The Python driver: cmaq_mockup.F90's loop and timing through ModelOutput (run under mpiexec)."""
    started = time.perf_counter()
    from mpi4py import MPI

    from climio.bench.model import local_species, parse_domain
    from climio.model import decomposition as dec
    from climio.model.output import Field, ModelOutput

    imported = time.perf_counter() - started
    path, options = argv[0], dict(a.split("=", 1) for a in argv[1:])
    nx, ny, nlay, nspec = parse_domain(options.get("domain", "CA"))
    px, py = (int(n) for n in options.get("grid", f"{MPI.COMM_WORLD.Get_size()}x1").split("x"))
    steps = int(options.get("steps", "3"))
    comm = MPI.COMM_WORLD
    d = dec.blocks((ny, nx), px, py, comm.Get_rank(), halo=2)
    conc = local_species(d, nlay, nspec)
    fields = [Field(f"SPEC{s:03d}", levels=nlay, attrs={"units": "ppmV"}, level_dim="LAY") for s in range(nspec)]
    comm.Barrier()
    started = MPI.Wtime()
    d = dec.blocks((ny, nx), px, py, comm.Get_rank(), halo=2)  # timed again, as the Fortran program's
    out = ModelOutput(path, d, fields, comm, mode=options.get("mode", "cdf5"), strategy=options.get("strategy", "agg"),
                      overwrite=True, dims=("ROW", "COL"), attrs={"title": "CMAQ mock-up (Python)"},
                      time_attrs={"units": "s"})
    io = MPI.Wtime() - started
    scratch = np.empty_like(conc)  # as the Fortran program's
    for step in range(steps):
        np.multiply(conc, np.float32(1.0001), out=scratch)  # the artificial workload
        started = MPI.Wtime()
        out.write_time(step, 3600.0 * step)
        for s, f in enumerate(fields):
            out.write_field(step, f.name, conc[s])
        io += MPI.Wtime() - started
    started = MPI.Wtime()
    out.close()
    comm.Barrier()
    io += MPI.Wtime() - started
    slowest = comm.reduce(io, op=MPI.MAX)
    if comm.Get_rank() == 0 and "timing" in options:
        with open(options["timing"], "w") as f:
            json.dump({"start_s": imported, "io_s": slowest, "calls": steps * (1 + nspec)}, f)


if __name__ == "__main__":
    worker(sys.argv[1:])
