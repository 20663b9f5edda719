"""``climio bench model``: the CMAQ mock-up of seed 003, every write strategy x storage mode.

A time-step loop over a CMAQ domain (columns x rows x layers x species, each
species a (layer, row, column) float32 field) decomposed on a ``px x py`` process
grid with halos; each step does an artificial workload (one pass of arithmetic
over every species) and then writes all species as one output step through
:class:`climio.model.output.ModelOutput`. Reported per strategy and mode: the
maximum over ranks of the I/O time (create + every step's gather/aggregate and
write + close + fsync), the bandwidth next to rank 0 writing the same bytes to a
plain file with sequential 64 MiB writes and fsync in the same run
(``sequential``, what ``dd`` does: "x dd"), seed 003's relative performance
``(T1 - T2) / T1`` of each strategy against ``root`` and against ``direct``, the
collective MPI calls per output step (the most on any rank, counted by
:mod:`climio.bench.collectives` in every library), and the bytes copied per byte
written: climio's own copies (the exchange to the writers, the packing into the
file's byte order) summed over the ranks, plus the kernel's one into the page
cache. With ``busy``, each case also runs beside that many processes that keep a
core each busy, interleaved with the quiet runs, and the slowdown is reported.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from climio.bench.cache import evict
from climio.bench.io import sequential_write
from climio.bench.runner import (busy_processes, check_reps, grouped, make_directory, markdown_table, median,
                                 repeated, require_plain_process, rows_per_size, save_results, save_rows)
from climio.core import collectives, mpi, trace
from climio.errors import ClimioError, IOFault
from climio.model import decomposition as dec
from climio.model import piomap
from climio.model.gather import STRATEGIES as GATHERS
from climio.model.output import Field, ModelOutput, applicable_modes, fill_value
from climio.model.strategy import parse_strategy

if TYPE_CHECKING:
    from mpi4py import MPI

    from climio.model.costmodel import Machine

DOMAINS = {"CA": (89, 134, 35, 146), "EUS": (279, 299, 35, 146), "CONUS": (459, 299, 35, 146)}  # NX NY NLAY NSPEC
HALO = 2


def parse_domain(text: str) -> tuple[int, int, int, int]:
    """CA, EUS, CONUS or NXxNYxNLAYxNSPEC."""
    if text.upper() in DOMAINS:
        return DOMAINS[text.upper()]
    sizes = [int(v) for v in re.findall(r"\d+", text)] if re.fullmatch(r"\d+x\d+x\d+x\d+", text) else []
    if len(sizes) != 4 or min(sizes) < 1:
        raise ClimioError(f"--domain '{text}': use CA, EUS, CONUS or NXxNYxNLAYxNSPEC (e.g. 89x134x35x146)",
                          collective=True)
    return sizes[0], sizes[1], sizes[2], sizes[3]


def parse_quantize(text: str | None) -> tuple[str, int] | None:
    """'GranularBR:3' -> ('GranularBR', 3)."""
    if text is None:
        return None
    from climio.core.ncio.compression import parse_algorithm

    algorithm, _, digits = text.partition(":")
    if not digits.isdigit():
        raise ClimioError(f"--quantize '{text}': use ALGORITHM:NSD, e.g. GranularBR:3 (BitRound:NSB)",
                          collective=True)
    return parse_algorithm(algorithm), int(digits)


def parse_grids(text: str) -> list[tuple[int, int]]:
    """'4x2,2x2' -> [(4, 2), (2, 2)] as (px, py)."""
    grids = []
    for item in text.split(","):
        match = re.fullmatch(r"(\d+)x(\d+)", item)
        if not match or min(int(match[1]), int(match[2])) < 1:
            raise ClimioError(f"--grid '{item}': use PXxPY, e.g. 2x2 (several: 2x1,2x2)", collective=True)
        grids.append((int(match[1]), int(match[2])))
    return grids


def split_gather(text: str) -> tuple[str, str | None]:
    """'rows' -> ('rows', None); 'root:p2p' -> ('root', 'p2p'); 'agg:4' -> ('agg:4', None): the gather of a root
    write is the bench's own suffix; the strategy is checked by :func:`climio.model.strategy.parse_strategy`."""
    strategy, colon, gather = text.partition(":")
    if strategy != "root" or not colon:
        strategy, gather = text, ""
    elif gather not in GATHERS:
        raise ClimioError(f"--strategy '{text}': choose GATHER in root:GATHER from {', '.join(GATHERS)}",
                          collective=True)
    try:
        parse_strategy(strategy)
    except ClimioError as err:
        raise ClimioError(f"--strategy: {err}", collective=True) from err
    return strategy, gather or None


@dataclass(frozen=True)
class Case:
    """What one mpiexec of the benchmark writes: a grid decomposed over ``ranks``, ``nspec`` species of
    ``levels`` levels each (None: the decomposition covers the whole field, as a PIO map of a 3-D array does)."""

    label: str
    ranks: int
    nspec: int
    levels: int | None
    grid: tuple[int, ...]
    decomp_file: str | None = None

    def decomposition(self, comm: MPI.Comm) -> dec.GridDecomposition:
        """This rank's share, once every rank has found the job the case's size."""
        dec.check_job_size(self.ranks, comm.Get_size())
        rank = comm.Get_rank()
        if self.decomp_file is None:
            px, py = (int(n) for n in self.label.split("x"))
            return dec.blocks(self.grid, px, py, rank, halo=HALO)
        m = piomap.read_map(self.decomp_file)
        return dec.from_compmap(m.dims, m.maps[rank], m.ntasks, rank)

    @property
    def dims(self) -> tuple[str, ...]:
        return {1: ("cell",), 2: ("ROW", "COL"), 3: ("LAY", "ROW", "COL")}.get(
            len(self.grid), tuple(f"dim{k}" for k in range(len(self.grid))))

    @property
    def record_values(self) -> int:
        return (self.levels or 1) * math.prod(self.grid)


def cases(domain: tuple[int, int, int, int], grids: list[tuple[int, int]], decomp_file: str | None) -> list[Case]:
    """The runs: one per process grid over the domain, or the one a PIO decomposition map file describes."""
    nx, ny, nlay, nspec = domain
    if decomp_file is None:
        return [Case(f"{px}x{py}", px * py, nspec, nlay, (ny, nx)) for px, py in grids]
    m = piomap.read_map(decomp_file)
    return [Case(os.path.basename(decomp_file), m.ntasks, nspec, None, m.dims, decomp_file)]


def per_case(runs: Sequence[Case], decomp: str | None, args: list[str]) -> list[tuple[str, int, list[str]]]:
    """The driver's mpiexec runs, one per case (:func:`climio.bench.runner.rows_per_size`): its grid or the map,
    then the suite's other arguments."""
    return [(f"{case.label} on {case.ranks} ranks", case.ranks,
             [*(["--decomp", decomp] if decomp else ["--grid", case.label]), *args]) for case in runs]


def value(flat: np.ndarray, species: int) -> np.ndarray:
    """The value of species ``species`` at flat record offsets ``flat``: exact in float32, so files can be
    compared element by element."""
    return ((flat * 7 + species * 13) % 1000003).astype(np.float32)


def local_species(d: dec.GridDecomposition, levels: int | None, nspec: int) -> np.ndarray:
    """Every species' local array ``(nspec, *local)`` (halo and non-grid elements -1)."""
    layout = d.layout(levels)
    flat = layout.flat_offsets()  # each local element's record offset, in the order without halo
    conc = np.full((nspec, *d.local_shape(levels)), -1, np.float32)
    for s in range(nspec):
        values = np.where(flat >= 0, value(flat, s), -1).astype(np.float32).reshape(layout.local_shape)
        if isinstance(d, dec.BlockDecomposition):
            conc[s][d.interior(levels)] = values
        else:
            conc[s] = values.reshape(d.local_shape(levels))
    return conc


def quantized(values: np.ndarray, quantize: tuple[str, int] | None) -> np.ndarray:
    """``values`` as netCDF-C quantizes them (through an in-memory netCDF-4 file), or as they are."""
    if quantize is None:
        return values
    import netCDF4

    mode = {"GranularBR": "GranularBitRound"}.get(quantize[0], quantize[0])
    with netCDF4.Dataset("climio-quantized.nc", "w", diskless=True, persist=False) as ds:
        ds.createDimension("n", values.size)
        var = ds.createVariable("v", values.dtype, ("n",), significant_digits=quantize[1], quantize_mode=mode)
        var[:] = values
        return var[:].data


def mismatch(path: str, owned: np.ndarray, steps: int, species: Sequence[int],
             quantize: tuple[str, int] | None = None) -> str:
    """'' if ``path`` holds each of ``species`` at every step as written (holes: the fill value; quantized as
    netCDF-C quantizes), else where it first differs: file, variable, step, index, values."""
    import netCDF4

    fill = np.float32(fill_value(Field("x")))
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        for s in species:
            name = f"SPEC{s:03d}"
            expected = np.where(owned, quantized(value(np.arange(owned.size), s), quantize), fill)
            for step in range(steps):
                got = ds[name][step]
                bad = np.flatnonzero(got.ravel() != expected)
                if bad.size:
                    k = int(bad[0])
                    return (f"{path}: variable '{name}' step {step}: {bad.size} values differ, the first at index "
                            f"{tuple(int(i) for i in np.unravel_index(k, got.shape))}: {got.ravel()[k]} where "
                            f"{expected[k]} was written")
    return ""


def owned_points(comm: MPI.Comm, d: dec.GridDecomposition, levels: int | None) -> np.ndarray:
    """Which record offsets some rank owns (rank 0; the others get None)."""
    from mpi4py import MPI

    mine = np.zeros((levels or 1) * math.prod(d.grid), np.uint8)
    offsets = d.layout(levels).flat_offsets()
    mine[offsets[offsets >= 0]] = 1
    comm.Reduce(MPI.IN_PLACE if comm.Get_rank() == 0 else mine, mine if comm.Get_rank() == 0 else None, op=MPI.MAX)
    return mine.astype(bool)


def serial_compressed(case: Case, owned: np.ndarray, steps: int, field: Field, directory: str,
                      common: dict[str, Any]) -> dict[str, Any]:
    """One process writing every species with netCDF4-python, serially, with the same filters and chunks (the
    baseline compression is measured against: compressing is CPU work that ranks share)."""
    import netCDF4
    from mpi4py import MPI

    path = os.path.join(directory, f"serial-nc4-{case.label}.nc")
    shape = (case.levels, *case.grid) if case.levels else case.grid
    algorithm = field.quantize[0] if field.quantize else "BitGroom"
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        names = ("time", *(f"d{k}" for k in range(len(shape))))
        for name, n in zip(names[1:], shape):
            ds.createDimension(name, n)
        variables = [ds.createVariable(f"SPEC{s:03d}", "f4", names, zlib=field.deflate > 0,
                                       complevel=field.deflate or 1, shuffle=True, chunksizes=(1, *shape),
                                       significant_digits=field.quantize[1] if field.quantize else None,
                                       quantize_mode={"GranularBR": "GranularBitRound"}.get(algorithm, algorithm),
                                       fill_value=False)
                     for s in range(case.nspec)]
        records = [np.where(owned, value(np.arange(owned.size), s), np.float32(fill_value(field))).reshape(shape)
                   for s in range(case.nspec)]
        started = MPI.Wtime()
        for step in range(steps):
            for var, record in zip(variables, records):
                var[step] = record
    evict(path)
    seconds = MPI.Wtime() - started
    size = os.path.getsize(path)
    os.unlink(path)
    return {"strategy": "netcdf4-python", "mode": "serial", **common, "io_s": seconds,
            "MBps": common["bytes"] / seconds / 1e6, "file_bytes": size}


COPYING_PHASES = ("rearrange", "gather", "pack")  # the trace's phases that copy the data (bytes moved, all ranks)


def measure(comm: MPI.Comm, case: Case, steps: int, strategies: Sequence[str], modes: Sequence[str],
            directory: str, keep: bool, hints: dict[str, str], *, deflate: int = 0,
            quantize: tuple[str, int] | None = None, verify_all: bool = False, busy: int = 0) -> list[dict[str, Any]]:
    """Every applicable strategy x mode on this job's ranks (collective); rows on rank 0. Each file is checked
    after timing: the last species' last step, or with ``verify_all`` every species at every step."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    d = case.decomposition(comm)
    fields = [Field(f"SPEC{i:03d}", levels=case.levels, attrs={"units": "ppmV"}, deflate=deflate, quantize=quantize)
              for i in range(case.nspec)]
    compressed = fields[0].compression.active
    conc = local_species(d, case.levels, case.nspec)  # every species' local array, values known everywhere
    scratch = np.empty_like(conc)
    owned = owned_points(comm, d, case.levels)
    nbytes = case.nspec * case.record_values * 4 * steps
    rows: list[dict[str, Any]] = []
    common = {"case": case.label, "ranks": case.ranks, "steps": steps, "bytes": nbytes, "busy": busy}
    if rank == 0:  # the baseline: the same bytes in one plain sequential file, in the same run
        path = os.path.join(directory, f"sequential-{case.label}.bin")
        seconds = sequential_write(path, conc, nbytes)
        os.unlink(path)
        rows.append({"strategy": "sequential", "mode": "-", **common, "io_s": seconds, "MBps": nbytes / seconds / 1e6})
    if rank == 0 and compressed:  # the other baseline: one process writing the same fields with the same filters
        rows.append(serial_compressed(case, owned, steps, fields[0], directory, common))
    for text in strategies:
        strategy, gather = split_gather(text)
        for mode in modes:
            if mode not in applicable_modes(strategy) or (compressed and mode != "hdf5"):
                if rank == 0:
                    why = "compression needs hdf5" if compressed and mode != "hdf5" else \
                        f"{strategy} applies to {', '.join(applicable_modes(strategy))}"
                    rows.append({"strategy": text, "mode": mode, "skipped": why})
                continue
            path = os.path.join(directory, f"cmaq-{text.replace(':', '-')}-{mode}-{case.label}.nc")
            comm.Barrier()
            io = 0.0
            phases = trace.reset()
            started = MPI.Wtime()
            out = ModelOutput(path, d, fields, comm, mode=mode, strategy=strategy, gather=gather, overwrite=True,
                              hints=hints, attrs={"title": f"CMAQ mock-up {case.label}"}, dims=case.dims)
            io += MPI.Wtime() - started
            calls_before = collectives.calls()
            for step in range(steps):
                np.multiply(conc, np.float32(1.0001), out=scratch)  # the artificial workload
                started = MPI.Wtime()
                out.write(step, {f.name: conc[i] for i, f in enumerate(fields)}, time=3600.0 * step)
                io += MPI.Wtime() - started
            calls_after = collectives.calls()
            per_step = comm.allreduce(-1 if calls_before is None else (calls_after - calls_before) / steps,
                                      op=MPI.MAX)
            started = MPI.Wtime()
            out.close()
            if rank == 0:
                evict(path)  # fsync: written means on disk, as for the sequential baseline
            comm.Barrier()
            io += MPI.Wtime() - started
            io_max = comm.allreduce(io, op=MPI.MAX)
            per_rank = comm.gather(phases.totals(), root=0)
            if rank == 0:
                seconds = {name: max(t.get(name, {}).get("seconds", 0.0) for t in per_rank)
                           for name in sorted({n for t in per_rank for n in t})}
                copied = sum(t.get(name, {}).get("bytes", 0) for t in per_rank for name in COPYING_PHASES)
                rows.append({"strategy": text, "mode": mode, **common, "io_s": io_max, "MBps": nbytes / io_max / 1e6,
                             "phases_s": seconds, "copies_per_byte": 1 + copied / nbytes,
                             "collectives_per_step": per_step if per_step >= 0 else None,
                             "file_bytes": os.path.getsize(path),
                             "mismatch": mismatch(path, owned, steps, range(case.nspec) if verify_all
                                                  else [case.nspec - 1], quantize)})
                rows[-1]["verified"] = not rows[-1]["mismatch"]
                if not keep:
                    os.unlink(path)
    return rows


def relative(rows: list[dict[str, Any]]) -> None:
    """Add seed 003's Eq. 1, (T1 - T2) / T1, against root and against direct of the same mode, grid and load."""
    for row in rows:
        if "io_s" not in row:
            continue
        for base in ("root", "direct"):
            ref = [r["io_s"] for r in rows if r.get("strategy") == base and r.get("mode") == row["mode"]
                   and r.get("case") == row["case"] and r.get("busy") == row.get("busy") and "io_s" in r]
            if not ref and base == "direct":  # serial mode has no direct write: compare with cdf5's
                ref = [r["io_s"] for r in rows if r.get("strategy") == base and r.get("case") == row["case"]
                       and r.get("busy") == row.get("busy") and r.get("mode") == "cdf5"]
            if ref:
                row[f"vs_{base}"] = (ref[0] - row["io_s"]) / ref[0]


def main(comm: MPI.Comm, *, domain: str, grids: str, steps: int, strategies: Sequence[str], modes: Sequence[str],
         out: str, keep: bool, reps: int, hints: dict[str, str], decomp: str | None = None, deflate: int = 0,
         quantize: str | None = None, verify: bool = False, rows_json: str | None = None, busy: int = 0,
         machine: str | None = None) -> None:
    size = parse_domain(domain)
    quantization = parse_quantize(quantize)
    Field("check", deflate=deflate, quantize=quantization).compression.check("--quantize", np.dtype("f4"))
    runs = cases(size, parse_grids(grids), decomp)
    fewest = min(c.ranks for c in runs)
    for text in strategies:
        _, aggregators = parse_strategy(split_gather(text)[0])
        if aggregators is not None and aggregators > fewest:
            raise ClimioError(f"--strategy {text}: more aggregators than the {fewest} ranks of the smallest "
                              f"{'--decomp' if decomp else '--grid'}", collective=True)
    check_reps(reps)
    if busy < 0:
        raise ClimioError(f"--busy must be 0 or more processes, got {busy}", collective=True)
    if steps < 1:
        raise ClimioError(f"--steps must be at least 1, got {steps}", collective=True)
    if not rows_json:
        require_plain_process(comm, "model")  # before anything is made: a refused run leaves no directory
    mpi.agree(comm, lambda: make_directory(out))
    if rows_json:  # one case, inside its own mpiexec (rank 0 starts the background load, if any)
        with busy_processes(busy if comm.Get_rank() == 0 else 0):
            rows = repeated(reps, lambda: measure(comm, runs[0], steps, strategies, modes, out, keep, hints,
                                                  deflate=deflate, quantize=quantization, verify_all=verify or keep,
                                                  busy=busy))
        save_rows(comm, rows, rows_json)
        return
    common = ["--domain", domain, "--steps", str(steps), "--strategy", ",".join(strategies), "--mode",
              ",".join(modes), "--out", out, *(["--keep"] if keep else []), *(["--verify"] if verify else []),
              *(["--deflate", str(deflate)] if deflate else []), *(["--quantize", quantize] if quantize else []),
              *[f"--hint={k}={v}" for k, v in hints.items()]]
    if busy:  # quiet and loaded runs interleaved, one repetition each
        launches = [(f"{what}, {f'{load} busy' if load else 'quiet'}", n, [*a, "--reps", "1", "--busy", str(load)])
                    for _ in range(reps) for what, n, a in per_case(runs, decomp, common) for load in (0, busy)]
    else:
        launches = per_case(runs, decomp, [*common, "--reps", str(reps)])
    costs = machine_costs(machine)
    rows = rows_per_size("model", launches)
    table = summarise(rows)
    relative(table)
    if costs is not None and decomp is None:
        predicted(table, costs, size, steps)
    nx, ny, nlay, nspec = size
    what = f"the grid {runs[0].grid} of {decomp}, {nspec} species" if decomp else \
        f"{nx}x{ny}x{nlay}x{nspec} (columns x rows x layers x species)"
    print(f"climio bench model: {what}, {steps} step(s), "
          f"{table[0]['bytes'] / 1e6 if table and 'bytes' in table[0] else 0:.0f} MB per run, median of {reps}")
    print(format_table(table))
    for row in table:
        if "skipped" in row:
            print(f"skipped {row['strategy']} x {row['mode']}: {row['skipped']}")
    wrong = [r["mismatch"] for r in rows if r.get("mismatch")]
    if wrong:
        raise IOFault(f"bench model: a file does not hold the values written: {wrong[0]}")
    measured = [r for r in table if "io_s" in r]
    plot(measured, os.path.join(out, "model.png"), size)
    save_results(out, "model", {"domain": size, "steps": steps, "reps": reps, "hints": hints,
                                "mpiio": os.environ.get("OMPI_MCA_io", "default"), "rows": rows, "table": table},
                 measured, besides=["model.png"])


def machine_costs(path: str | None) -> Machine | None:
    """The machine the model's predictions use: ``path`` (a file or a shipped site's name), else this machine's
    from ``climio tune`` if there is one (None: no predictions)."""
    from climio.model import costmodel

    if path is None and not os.path.exists(costmodel.tuned_path()):
        return None
    return costmodel.find(path or costmodel.tuned_path())


def predicted(table: list[dict[str, Any]], costs: Machine, size: tuple[int, int, int, int], steps: int) -> None:
    """Add the cost model's I/O time to each measured row (``model_s``), for the same grid, strategy and mode."""
    from climio.model import costmodel, counts

    nx, ny, nlay, nspec = size
    for row in table:
        if "io_s" not in row or row["strategy"] == "sequential" or row.get("busy"):
            continue
        px, py = (int(n) for n in row["case"].split("x"))
        job = counts.block_job(row["case"], (ny, nx), nlay, px, py, HALO)
        row["model_s"] = costmodel.predict(costs, job, split_gather(row["strategy"])[0], row["mode"], nspec, steps)


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median I/O time per (grid, strategy, mode, load) over repetitions, with the slowdown of a loaded run
    against the quiet one; skipped combinations once."""
    table = []
    for same in grouped(rows, "case", "strategy", "mode", "busy").values():
        if "skipped" in same[0]:
            if not any(t.get("skipped") and t["strategy"] == same[0]["strategy"] and t["mode"] == same[0]["mode"]
                       for t in table):
                table.append(same[0])
            continue
        io = median(same, "io_s")
        table.append({**{k: v for k, v in same[0].items() if k != "rep"}, "io_s": io,
                      "MBps": same[0]["bytes"] / io / 1e6, "reps": len(same)})
    for row in table:
        quiet = [q["io_s"] for q in table if "io_s" in q and not q.get("busy") and row.get("busy")
                 and all(q.get(k) == row.get(k) for k in ("case", "strategy", "mode"))]
        if quiet:
            row["slowdown"] = row["io_s"] / quiet[0]
    return table


def format_table(table: list[dict[str, Any]]) -> str:
    columns = [("grid", "l"), ("strategy", "l"), ("mode", "l"), ("busy", "r")] + [(h, "r") for h in (
        "I/O s (max over ranks)", "MB/s", "x dd", "vs root", "vs direct", "collectives / step", "copies / byte",
        "slowdown", "data / file", "model s")]

    def cells(r: dict[str, Any]) -> list[str]:
        rel = lambda key: f"{r[key]:+.0%}" if key in r else "-"  # noqa: E731
        base = [b["MBps"] for b in table if b.get("strategy") == "sequential" and b.get("case") == r["case"]
                and b.get("busy") == r.get("busy")]
        ratio = f"{r['MBps'] / base[0]:.2f}" if base else "-"
        calls = r.get("collectives_per_step")
        return [r["case"], r["strategy"], r["mode"], str(r.get("busy", 0)), f"{r['io_s']:.2f}", f"{r['MBps']:.0f}",
                ratio, rel("vs_root"), rel("vs_direct"), "-" if calls is None else f"{calls:g}",
                f"{r['copies_per_byte']:.2f}" if "copies_per_byte" in r else "-",
                f"{r['slowdown']:.2f}" if "slowdown" in r else "-",
                f"{r['bytes'] / r['file_bytes']:.2f}" if r.get("file_bytes") else "-",
                f"{r['model_s']:.2f}" if "model_s" in r else "-"]

    return markdown_table(columns, (cells(r) for r in table if "io_s" in r))


def plot(rows: list[dict[str, Any]], path: str, size: tuple[int, int, int, int]) -> None:
    """I/O time against ranks, one line per strategy and mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, ax = plt.subplots(figsize=(8, 5), constrained_layout=True)
    for key in sorted({(r["strategy"], r["mode"]) for r in rows if r["strategy"] != "sequential"}):
        points = sorted((r["ranks"], r["io_s"]) for r in rows if (r["strategy"], r["mode"]) == key)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"{key[0]} / {key[1]}")
    ax.set_xlabel("ranks")
    ax.set_ylabel("I/O time, max over ranks (s)")
    ax.set_title("CMAQ mock-up {}x{}x{}x{}".format(*size))
    ax.legend(fontsize=7, ncol=2)
    figure.savefig(path, dpi=100)
    plt.close(figure)
