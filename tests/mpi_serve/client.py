"""A model that sends its output to I/O servers and, for comparison, writes the same output itself.

    mpiexec -n M python client.py OUTDIR : -n S python -m climio serve
    CLIMIO_SERVERS=S mpiexec -n M+S python client.py OUTDIR        (the last S ranks run climio serve)

For each case of :data:`CASES` it writes OUTDIR/served-CASE.nc through the servers and OUTDIR/direct-CASE.nc
with ModelOutput on the model's communicator; OUTDIR/reduce.nc holds online reductions of the steps of
:func:`reduce_step`; for each fault case each rank writes OUTDIR/CASE.rankR.txt: the call that raised and the
error. Each case of :data:`READS` reads its served file back through the servers (:class:`ServedInput`) and
writes OUTDIR/read-CASE.rankR.txt: ``ok`` or what differs; each of :data:`READ_FAULTS` writes
OUTDIR/read-NAME.rankR.txt: the error (tests/test_serve.py checks them all).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

if "CLIMIO_SERVERS" in os.environ and int(os.environ["OMPI_COMM_WORLD_RANK"]) >= \
        int(os.environ["OMPI_COMM_WORLD_SIZE"]) - int(os.environ["CLIMIO_SERVERS"]):
    from climio.cli import main

    main(["serve", "--trace", os.path.join(sys.argv[1], "trace.json")])  # as srun --multi-prog starts them

from climio.core import ncio  # noqa: E402
from climio.core.decomp import process_grid  # noqa: E402
from climio.errors import ClimioError  # noqa: E402
from climio.model import decomposition as dec  # noqa: E402
from climio.model.input import ModelInput  # noqa: E402
from climio.model.output import ModelOutput  # noqa: E402
from climio.serve import client  # noqa: E402
from climio.serve.client import ServedField, ServedInput, ServedOutput  # noqa: E402
from climio.serve.protocol import Kind  # noqa: E402

NY, NX, NLEV, STEPS = 12, 18, 3, 3
REDUCE_STEPS, REDUCE_EVERY = 48, 24
# case: (mode, strategy, decomposition kind, deflate)
CASES = {"serial": ("serial", "root", "blocks", 0), "cdf5": ("cdf5", "agg:1", "blocks", 0),
         "hdf5": ("hdf5", "direct", "blocks", 0), "deflate": ("hdf5", "agg:1", "blocks", 4),
         "points": ("cdf5", "direct", "points", 0), "big": ("cdf5", "agg:1", "big", 0)}
BOTH = ("cdf5", "points")  # written at once, interleaved
BUFFER = 4096  # the client buffer: smaller than a record of "big", so every such send waits for the one before


def decomposition(kind: str, comm: object) -> dec.GridDecomposition:
    """Blocks with a halo of 2 (``big``: on a grid of 96 x 128, too big for MPI's eager sends), or every 7th
    cell of a 1-D grid left as a hole and the rest dealt round, with one ghost cell per rank."""
    size, rank = comm.Get_size(), comm.Get_rank()  # type: ignore[attr-defined]
    if kind in ("blocks", "big"):
        grid = (NY, NX) if kind == "blocks" else (96, 128)
        px, py = process_grid(size, *grid)
        return dec.blocks(grid, px, py, rank, halo=2)
    cells = np.arange(NY * NX)
    kept = cells[cells % 7 != 3]
    mine = kept[rank::size]
    return dec.from_offsets((NY * NX,), mine, size, rank, ghosts=[(int(mine[-1]) + 1) % (NY * NX)])


def local(d: dec.GridDecomposition, values: np.ndarray, fill: float = -999.0) -> np.ndarray:
    """This rank's local array (halo or ghosts as ``fill``, which must never reach the file) of a global field
    of shape ``(levels, *grid)``."""
    out = np.full((values.shape[0], *d.local_shape()), fill, values.dtype)
    flat = values.reshape(values.shape[0], -1)
    if isinstance(d, dec.BlockDecomposition):
        out[(slice(None), *d.interior())] = values[(slice(None), *d.box.slices)]
    else:
        out[:, :d.offsets.size] = flat[:, d.offsets]
    return out


def field_values(step: int, grid: tuple[int, ...], levels: int = 1) -> np.ndarray:
    """Values that say where they are: step, level and flat grid offset."""
    size = int(np.prod(grid))
    return (step * 1e4 + np.arange(levels)[:, None] * 1e3 + np.arange(size)[None, :]).reshape(levels, *grid)


def open_case(make: Callable[..., object], path: str, case: str, comm: object) -> tuple[object, object]:
    """A case's output through ModelOutput (``comm``: the model's communicator) or ServedOutput (``make``;
    ``comm``: the servers' handle), and its decomposition."""
    mode, strategy, kind, deflate = CASES[case]
    d = decomposition(kind, getattr(comm, "comm", comm))
    fields = [ServedField("T", levels=NLEV, attrs={"units": "K", "valid_range": np.array([0.0, 1e6], "f4")},
                          level_dim="lev", deflate=deflate),
              ServedField("ps", dtype="f8", attrs={"units": "Pa", "scale": 2.5}),
              ServedField("count", dtype="i4"),
              ServedField("area", dtype="f8", records=False)]
    variables = [ncio.Variable("lev", "i4", ("lev",), {"positive": "down"}),
                 ncio.Variable("time_bnds", "f8", ("time", "nv"))]
    out = make(path, d, fields, comm, mode=mode, strategy=strategy, overwrite=True,
               dims=("y", "x") if len(d.grid) == 2 else ("cell",), attrs={"title": "served or not",
                                                                         "answer": np.int32(42)},
               variables=variables, extra_dims={"nv": 2}, time_units="hours since 2016-07-01 00:00:00",
               calendar="noleap", time_attrs={"bounds": "time_bnds"})
    return out, d


def write_step(out: object, d: dec.GridDecomposition, step: int) -> None:
    """One step of a case (-1: what is written once), with the same calls whoever writes."""
    grid = d.grid
    if step < 0:
        out.write_variable("lev", np.arange(NLEV, dtype="i4") * 100)  # type: ignore[attr-defined]
        out.write_field(None, "area", local(d, field_values(0, grid) + 0.5)[0])  # type: ignore[attr-defined]
        return
    out.write(step, {"T": local(d, field_values(step, grid, NLEV).astype("f4")),  # type: ignore[attr-defined]
                     "ps": local(d, field_values(step, grid))[0],
                     "count": local(d, field_values(step, grid).astype("i4"), fill=-9)[0]}, time=6.0 * step)
    out.write_variable("time_bnds", [6.0 * step - 3, 6.0 * step + 3], step=step)  # type: ignore[attr-defined]


def write_case(make: Callable[..., object], path: str, case: str, comm: object) -> None:
    out, d = open_case(make, path, case, comm)
    with out:  # type: ignore[attr-defined]
        for step in range(-1, STEPS):
            write_step(out, d, step)  # type: ignore[arg-type]


def write_interleaved(servers: client.Servers, outdir: Path) -> None:
    """Two files of two decompositions open at once, their calls interleaved."""
    opened = [open_case(ServedOutput, str(outdir / f"served-both-{case}.nc"), case, servers) for case in BOTH]
    with opened[0][0], opened[1][0]:  # type: ignore[attr-defined]
        for step in range(-1, STEPS):
            for out, d in opened:
                write_step(out, d, step)  # type: ignore[arg-type]


def reduce_step(step: int) -> np.ndarray:
    """The global (NY, NX) float64 values of one step of the reductions' field."""
    return np.random.default_rng(step).normal(280.0, 20.0, (NY, NX))


def write_reductions(path: str, servers: client.Servers) -> None:
    d = decomposition("blocks", servers.comm)
    ops = ("mean", "min", "max", "sum", "instant")
    fields = [ServedField(op, dtype="f8" if op == "sum" else "f4", reduce=(op, REDUCE_EVERY),
                          attrs={"cell_methods": "area: mean"} if op == "mean" else {}) for op in ops]
    with ServedOutput(path, d, fields, servers, mode="cdf5", strategy="direct", overwrite=True, dims=("y", "x"),
                      time_units="hours since 2016-07-01 00:00:00") as out:
        for step in range(REDUCE_STEPS):
            values = local(d, reduce_step(step)[None])[0]
            out.write(step, {op: values for op in ops}, time=float(step))


# fault: (path under OUTDIR, mode, the field, extra elements in model rank 1's local array)
FAULTS = {"nodir": ("missing/x.nc", "cdf5", ServedField("T"), 0),  # an unwritable path
          "refused": ("old.nc", "cdf5", ServedField("T", deflate=4), 0),  # compression in a classic file
          "shape": ("old.nc", "cdf5", ServedField("T"), 1),  # one rank's array too long
          "local": ("old.nc", "cdf5", ServedField("T", reduce=("avg", 2)), 0)}  # refused before any is sent


def fault(name: str, servers: client.Servers, outdir: Path) -> None:
    """Write two steps to a file that must fail; record the call where this rank's error came, and the error."""
    path, mode, field, extra = FAULTS[name]
    d = decomposition("blocks", servers.comm)
    call = "create"
    try:
        with ServedOutput(str(outdir / path), d, [field], servers, mode=mode, strategy="direct",
                          overwrite=True) as out:
            for step in range(2):
                call = f"write {step}"
                values = local(d, field_values(step, d.grid))[0]
                if extra and servers.comm.Get_rank() == 1:
                    values = np.zeros(values.size + extra)
                out.write(step, {"T": values}, time=float(step))
            call = "close"
        result = "no error"
    except ClimioError as err:
        result = f"{type(err).__name__}: {err}"
    (outdir / f"{name}.rank{servers.comm.Get_rank()}.txt").write_text(f"{call}\t{result}\n")


READS = {"cdf5": "auto", "points": "direct"}  # served files read back: blocks with a halo, points with a ghost


def owned(d: dec.GridDecomposition, local_values: np.ndarray) -> np.ndarray:
    """The owned points of a local array (levels first)."""
    if isinstance(d, dec.BlockDecomposition):
        return local_values[(slice(None), *d.interior())]
    return local_values[:, :d.offsets.size]


def read_back(servers: client.Servers, outdir: Path, case: str) -> str:
    """Read every field of a served file through the servers: the original values exactly, and the local arrays
    ModelInput reads itself (with the halo's fill value; ghosts are not read); ``ok`` or what differs."""
    path = str(outdir / f"served-{case}.nc")
    d = decomposition(CASES[case][2], servers.comm)
    problems = []
    with ServedInput(path, d, servers, strategy=READS[case]) as served, \
            ModelInput(path, d, servers.comm, strategy="direct") as direct:
        reads = [("T", 0), ("ps", 1), ("count", 2), ("T", STEPS - 1), ("area", None)]
        for name, step in reads:
            got = served.read(name, step)
            want = direct.read(name, step, cf=False)
            values = {"T": field_values(step or 0, d.grid, NLEV).astype("f4"), "ps": field_values(step or 0, d.grid),
                      "count": field_values(step or 0, d.grid).astype("i4"), "area": field_values(0, d.grid) + 0.5}
            original = owned(d, local(d, values[name]))
            mine = owned(d, got if got.ndim > len(d.local_shape()) else got[None])
            if isinstance(d, dec.PointDecomposition):  # ghosts are not read through the servers
                got, want = got[..., :d.offsets.size], want[..., :d.offsets.size]
            if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want, equal_nan=True):
                problems.append(f"{name} {step}: {got.dtype}{got.shape} differs from ModelInput's {want.dtype}"
                                f"{want.shape}")
            elif not np.array_equal(mine, original):
                problems.append(f"{name} {step}: not the values written")
        into = np.zeros(d.local_shape(NLEV), "f8")  # into an array of another type, in place
        served.read("T", 1, out=into)
        if not np.array_equal(owned(d, into), owned(d, local(d, field_values(1, d.grid, NLEV)))):
            problems.append("T into float64: not the values written")
        narrow = np.zeros(d.local_shape(), "i2")[None]  # narrower: every value fits
        served.read("count", 2, out=narrow[0])
        if not np.array_equal(owned(d, narrow), owned(d, local(d, field_values(2, d.grid).astype("i2")))):
            problems.append("count into int16: not the values written")
    return "; ".join(problems) or "ok"


# read faults: a missing file, a write strategy, a float variable into an int array, one rank's array too long, a bad varid, a
# synchronous message about a file the servers failed (they drop its other messages, never these)
READ_FAULTS = ("missing", "strategy", "float-into-int", "shape", "varid", "failed-id")


def read_fault(name: str, servers: client.Servers, outdir: Path) -> None:
    """A read the servers refuse: record the error; a refused read leaves the file open (the next read works)."""
    d = decomposition("blocks", servers.comm)
    rank = servers.comm.Get_rank()
    result = "no error"
    try:
        if name in ("missing", "strategy"):
            ServedInput(str(outdir / ("missing/restart.nc" if name == "missing" else "served-cdf5.nc")), d, servers,
                        strategy="auto" if name == "missing" else "rows")
        elif name == "failed-id":
            out = ServedOutput(str(outdir / "missing" / "x.nc"), d, [ServedField("T")], servers, overwrite=True)
            try:
                out.close()
            except ClimioError:
                pass
            servers.ask(Kind.INQ_VARID, out.id, [], ["T"], "a look-up in a failed file")
        else:
            with ServedInput(str(outdir / "served-cdf5.nc"), d, servers) as restart:
                try:
                    if name == "float-into-int":
                        restart.read("ps", 0, out=np.zeros(d.local_shape(), "i4"))
                    elif name == "shape":
                        restart.read("ps", 0, out=np.zeros(math.prod(d.local_shape()) + (rank == 1)))
                    else:
                        servers.ask(Kind.READ, restart.id, [99, 0, 6, 1, 1], (), "a read of varid 99")
                except ClimioError as err:
                    result = f"{type(err).__name__}: {err}"
                after = restart.read("ps", 1)
                if not np.array_equal(owned(d, after[None]), owned(d, local(d, field_values(1, d.grid)))):
                    result += " (and the next read was wrong)"
    except ClimioError as err:
        result = f"{type(err).__name__}: {err}"
    (outdir / f"read-{name}.rank{rank}.txt").write_text(f"{result}\n")


def main(outdir: Path) -> None:
    from mpi4py import MPI

    try:
        client.connect(MPI.COMM_WORLD)  # it holds the servers too: refused, with no communication
        refused = "no error"
    except ClimioError as err:
        refused = str(err)
    servers = client.connect(buffer_bytes=BUFFER)
    (outdir / f"world.rank{servers.comm.Get_rank()}.txt").write_text(refused)
    comm = servers.comm
    for case in CASES:
        write_case(ServedOutput, str(outdir / f"served-{case}.nc"), case, servers)
        write_case(ModelOutput, str(outdir / f"direct-{case}.nc"), case, comm)
    write_interleaved(servers, outdir)
    largest = NLEV * decomposition("big", comm).owned * 4 + 8 * 8  # the biggest message: a record of T, its header
    (outdir / f"peak.rank{comm.Get_rank()}.txt").write_text(f"{servers.peak_bytes} {max(BUFFER, largest)}\n")
    write_reductions(str(outdir / "reduce.nc"), servers)
    for name in FAULTS:
        fault(name, servers, outdir)
    for case in READS:
        try:
            result = read_back(servers, outdir, case)
        except ClimioError as err:
            result = f"{type(err).__name__}: {err}"
        (outdir / f"read-{case}.rank{comm.Get_rank()}.txt").write_text(f"{result}\n")
    for name in READ_FAULTS:
        read_fault(name, servers, outdir)
    servers.finalize()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
