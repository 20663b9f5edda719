"""``climio eva``: peaks-over-threshold GPD fits at every grid cell of a (time, y, x) variable, in parallel.

Cells are split over ranks (by latitude rows, longitude columns or 2-D blocks).
Each rank gets its cells' whole time series once:

* ``slab`` (default): every rank reads its own (time, y-block, x-block) hyperslab
  in parallel, the design TN-534 wanted but could not express with foreach;
* ``transpose``: every rank reads a contiguous block of time steps of the whole
  grid (the file's own order: fast for netCDF-4 files chunked one time step per
  chunk), and one MPI all-to-all turns the time blocks into cell blocks;
* ``root``: rank 0 reads each rank's hyperslab and sends it (TN-534's read-all
  baseline), kept for the study.

Each rank then analyses its cells in chunks (:mod:`climio.eva.pot`), and all
ranks write their blocks of the result in parallel to one CF netCDF file.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from climio.core import collective, mpi, ncio, trace
from climio.core.decomp import Decomposition, Hyperslab, process_grid
from climio.core.ncio.schema import missing_values
from climio.errors import ClimioError
from climio.eva import cf, largest, pot

if TYPE_CHECKING:
    from mpi4py import MPI

SPLITS = ("lat", "lon", "block")
STREAM_BYTES = 4 << 20  # the slab scheme reads and scans this much at a time: it stays in cache between the two
SCHEMES = ("slab", "transpose", "root")
DAYS_PER_YEAR = {"noleap": 365.0, "365_day": 365.0, "all_leap": 366.0, "366_day": 366.0, "360_day": 360.0,
                 "standard": 365.2425, "gregorian": 365.2425, "proleptic_gregorian": 365.2425, "julian": 365.25}


@dataclass(frozen=True)
class Options:
    var: str = "pr"
    tail: float = 0.01
    periods: tuple[float, ...] = (100.0,)
    npy: float | str | None = None  # values per year; None: daily values (checked), 365.25; "calendar": daily
    # values (checked) in the time coordinate's calendar
    min_exceed: int = 10
    split: str = "lat"
    scheme: str = "slab"
    mode: str = "cdf5"
    overwrite: bool = False
    plot: str | None = None  # PNG with maps of the return level and the shape

    def check(self) -> None:
        """Reject bad options before any file is touched (the same verdict on every rank)."""
        if not 0.0 < self.tail < 0.5:
            raise ClimioError(f"--tail must be inside (0, 0.5), got {self.tail}", collective=True)
        if not self.periods or any(not p > 1.0 for p in self.periods):
            raise ClimioError(f"--return-period must be over 1 year, got {list(self.periods)}", collective=True)
        if self.min_exceed < 1:
            raise ClimioError(f"--min-exceed must be at least 1, got {self.min_exceed}", collective=True)
        if self.split not in SPLITS:
            raise ClimioError(f"--split '{self.split}': choose one of {', '.join(SPLITS)}", collective=True)
        if self.scheme not in SCHEMES:
            raise ClimioError(f"--scheme '{self.scheme}': choose one of {', '.join(SCHEMES)}", collective=True)
        if isinstance(self.npy, str) and self.npy != "calendar":
            raise ClimioError(f"--npy takes a number of days per year or 'calendar', got '{self.npy}'",
                              collective=True)
        if isinstance(self.npy, float) and not self.npy > 0:
            raise ClimioError(f"--npy must be positive, got {self.npy}", collective=True)


@dataclass(frozen=True)
class Summary:
    cells: int
    seconds: float
    status_counts: dict[str, int]


def decomposition(shape: tuple[int, int, int], split: str, nranks: int) -> Decomposition:
    """Split the (y, x) cells of a (time, y, x) variable over ranks; time stays whole."""
    if split == "lat":
        return Decomposition.block1d(shape, nranks, axis=1)
    if split == "lon":
        return Decomposition.block1d(shape, nranks, axis=2)
    px, py = process_grid(nranks, shape[1], shape[2])
    return Decomposition.block2d(shape, px, py)


def _input_variable(store: ncio.Store, path: str, name: str) -> ncio.Variable:
    names = [v.name for v in store.schema.variables]
    if name not in names:
        raise ClimioError(f"{path}: no variable '{name}' (--var); it has {', '.join(names)}", collective=True)
    var = store.schema.variable(name)
    time_like = bool(var.dims) and _is_time(store, var.dims[0])
    if len(var.dims) != 3 or not time_like:
        raise ClimioError(f"{path}: variable '{name}{var.dims}' must be (time, y, x) with time first",
                          collective=True)
    return var


def _is_time(store: ncio.Store, dim: str) -> bool:
    if store.schema.dims.get(dim, 0) is None or dim.lower() in ("time", "t"):
        return True
    coords = [v for v in store.schema.variables if v.name == dim]
    attrs = coords[0].attrs if coords else {}
    return attrs.get("axis") == "T" or " since " in str(attrs.get("units", ""))


# Days in one unit of CF time ("<unit> since <date>").
DAILY_NPY = 365.25  # extRemes's default
UNIT_DAYS = {"day": 1.0, "days": 1.0, "d": 1.0, "hour": 1 / 24, "hours": 1 / 24, "h": 1 / 24, "hr": 1 / 24,
             "minute": 1 / 1440, "minutes": 1 / 1440, "min": 1 / 1440,
             "second": 1 / 86400, "seconds": 1 / 86400, "s": 1 / 86400, "sec": 1 / 86400}


def _check_daily(store: ncio.Store, time_dim: str, path: str) -> None:
    """The default npy (and 'calendar') count days: refuse, with what was found, a time axis that is not daily
    (monthly means would silently get daily return-level arithmetic). Collective: every rank reads the axis."""
    coords = [v for v in store.schema.variables if v.name == time_dim and v.dims == (time_dim,)]
    if not coords or store.shape(time_dim)[0] < 2:
        return
    unit = str(coords[0].attrs.get("units", "")).split(" since ")[0].strip().lower()
    if unit not in UNIT_DAYS:
        return
    step = float(np.median(np.diff(store.read(time_dim).astype(np.float64)))) * UNIT_DAYS[unit]
    if not 0.9 <= step <= 1.1:
        raise ClimioError(f"{path}: '{time_dim}' steps by {step:g} days, not daily: give --npy with the number of "
                          f"values per year (e.g. --npy 12 for monthly, 1460 for 6-hourly)", collective=True)


def _days_per_year(store: ncio.Store, time_dim: str, path: str, npy: float | str | None) -> float:
    if npy is not None and not isinstance(npy, str):
        return float(npy)
    _check_daily(store, time_dim, path)
    if npy is None:
        return DAILY_NPY
    coords = [v for v in store.schema.variables if v.name == time_dim]
    calendar = str(coords[0].attrs.get("calendar", "standard")).lower() if coords else "standard"
    if calendar not in DAYS_PER_YEAR:
        raise ClimioError(f"{path}: calendar '{calendar}' of '{time_dim}' is unknown: give --npy as a number")
    return DAYS_PER_YEAR[calendar]


def output_schema(store: ncio.Store, var: ncio.Variable, opts: Options, npy: float, history: str) -> ncio.Schema:
    _, ydim, xdim = var.dims
    coords = [v for v in store.schema.variables if v.name in (ydim, xdim) and v.dims == (v.name,)]
    attrs = cf.result_attributes(var.name, var.attrs, opts.tail)
    variables = [ncio.Variable(c.name, c.dtype, c.dims, dict(c.attrs)) for c in coords]
    variables.append(ncio.Variable("period", "f8", ("period",), {"long_name": "return period", "units": "years"}))
    for name, dtype in pot.RESULT_TYPES.items():
        dims = ("period", ydim, xdim) if name == "return_level" else (ydim, xdim)
        fill = {"_FillValue": np.nan} if dtype == "f8" else {}
        variables.append(ncio.Variable(name, dtype, dims, {**fill, **attrs[name]}))
    old = str(store.schema.attrs.get("history", ""))
    return ncio.Schema(
        dims={ydim: store.schema.dims[ydim] or 0, xdim: store.schema.dims[xdim] or 0, "period": len(opts.periods)},
        variables=tuple(variables),
        attrs={"Conventions": "CF-1.8", "title": f"peaks-over-threshold GPD fits of {var.name}",
               "source": store.path, "climio_tail": opts.tail, "climio_npy": npy,
               "climio_min_exceed": np.int32(opts.min_exceed),
               "method": "threshold: R type-7 quantile; GPD maximum likelihood with shape >= -1 "
                         "(profile likelihood, global search); return level u + s/k((T npy rate)^k - 1)",
               "history": f"{history}\n{old}".strip()})


def _progress(total: int, enabled: bool):  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    return tqdm(total=total, unit="cell", desc="eva", disable=None if enabled else True, file=sys.stderr,
                mininterval=1.0, delay=3.0)


def run(inp: str, out: str, comm: MPI.Comm, opts: Options, history: str = "") -> Summary:
    """The whole analysis (collective)."""
    from mpi4py import MPI

    opts.check()
    mpi.agree(comm, lambda: ncio.check_output(out, opts.overwrite, [inp]))  # before the analysis, not after it
    if opts.plot:
        mpi.agree(comm, lambda: _check_plot_path(opts.plot, opts.overwrite))
    largest.load_kernels()
    ncio.load_library()
    comm.Barrier()
    started = MPI.Wtime()
    rank = comm.Get_rank()
    with ncio.open(inp, comm, read="root" if opts.scheme == "root" else "parallel") as store:
        var = _input_variable(store, inp, opts.var)
        shape = store.shape(var.name)
        npy = _days_per_year(store, var.dims[0], inp, opts.npy)
        decomp = decomposition(shape, opts.split, comm.Get_size())
        owned = decomp.owned(rank)
        k, missing = pot.tail_capacity(shape[0], opts.tail), missing_values(var.attrs)
        if opts.scheme == "slab":
            scanner = scan_slab(store, var, owned, k, missing, comm)
        else:
            if opts.scheme == "transpose":
                by_time = Decomposition.block1d(shape, comm.Get_size(), axis=0)
                slab = time_blocks_to_cell_blocks(store.read(var.name, by_time.owned(rank)), by_time, decomp, comm)
            else:
                slab = store.read(var.name, owned)
            with trace.phase("scan"):
                scanner = largest.scan(slab.reshape(shape[0], -1), k, missing)
            del slab
        coordinates = {c: store.read(c) for c in var.dims[1:] if c in {v.name for v in store.schema.variables}}
        schema = output_schema(store, var, opts, npy, history)
    result = _analyse_cells(scanner, opts, npy, rank == 0)
    field_slab = Hyperslab(owned.start[1:], owned.count[1:])
    with ncio.create(out, schema, opts.mode, comm, overwrite=opts.overwrite) as ds:
        block = owned.count[1:]
        declared = {v.name for v in schema.variables}
        items = [(name, values, None) for name, values in coordinates.items() if name in declared]
        items.append(("period", np.asarray(opts.periods, dtype=float), None))
        items += [(name, getattr(result, name).reshape(block), field_slab)
                  for name in pot.RESULT_TYPES if name != "return_level"]
        levels = result.return_level.reshape(len(opts.periods), *block)
        items.append(("return_level", levels, Hyperslab((0, *field_slab.start), (len(opts.periods), *block))))
        ds.write_many(items)
        if opts.plot:  # before the output is renamed into place: a plot that cannot be written publishes nothing
            _plot(opts, comm, decomp, result, coordinates, var)
    counts = np.bincount(result.status, minlength=len(pot.STATUS_MEANINGS)).astype(np.int64)
    comm.Allreduce(MPI.IN_PLACE, counts, op=MPI.SUM)
    seconds = MPI.Wtime() - started
    return Summary(math.prod(shape[1:]), seconds, {m: int(c) for m, c in zip(pot.STATUS_MEANINGS, counts) if c})


def _check_plot_path(path: str, overwrite: bool) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ClimioError(f"--plot: directory '{directory}' does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ClimioError(f"--plot: directory '{directory}' is not writable: choose another path")
    if os.path.exists(path) and not overwrite:
        raise ClimioError(f"--plot: '{path}' exists: pass --overwrite to replace it")


def _plot(opts: Options, comm: MPI.Comm, decomp: Decomposition, result: pot.Result,
          coordinates: dict[str, np.ndarray], var: ncio.Variable) -> None:
    """Gather the shape and the return level (100 years, or the longest period) on rank 0 and draw them."""
    from climio.eva import plot

    which = opts.periods.index(100.0) if 100.0 in opts.periods else int(np.argmax(opts.periods))
    pieces = comm.gather((result.return_level[which], result.shape), root=0)
    if pieces is None:
        return
    _, ny, nx = decomp.shape
    level, shape = np.full((ny, nx), np.nan), np.full((ny, nx), np.nan)
    for rank, (rl, xi) in enumerate(pieces):
        owned = decomp.owned(rank)
        level[owned.slices[1:]] = rl.reshape(owned.count[1:])
        shape[owned.slices[1:]] = xi.reshape(owned.count[1:])
    _, ydim, xdim = var.dims
    lat = coordinates.get(ydim, np.arange(ny))
    lon = coordinates.get(xdim, np.arange(nx))
    plot.draw(opts.plot, lat, lon, level, opts.periods[which], shape, var.name, str(var.attrs.get("units", "")))


def time_blocks_to_cell_blocks(mine: np.ndarray, by_time: Decomposition, by_cells: Decomposition,
                               comm: MPI.Comm) -> np.ndarray:
    """All-to-all from (my time steps, all cells) to (all time steps, my cells).

    Rank j receives, from every rank i in rank order, i's time steps of j's cells;
    as time blocks follow rank order, the receive buffer is j's (time, y, x) slab.
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    cells_of = [by_cells.owned(j) for j in range(size)]
    send_counts = [mine.shape[0] * math.prod(c.count[1:]) for c in cells_of]
    send = np.empty(sum(send_counts), mine.dtype)
    offset = 0
    for cells, count in zip(cells_of, send_counts):
        send[offset:offset + count].reshape(mine.shape[0], *cells.count[1:])[...] = mine[(slice(None), *cells.slices[1:])]
        offset += count
    del mine
    own = cells_of[rank]
    receive = np.empty((by_time.shape[0], *own.count[1:]), send.dtype)
    receive_counts = [by_time.owned(i).count[0] * math.prod(own.count[1:]) for i in range(size)]
    with trace.phase("alltoall", send.nbytes):
        comm.Alltoallv([send, (send_counts, np.cumsum([0, *send_counts[:-1]]))],
                       [receive, (receive_counts, np.cumsum([0, *receive_counts[:-1]]))])
    return receive


def scan_slab(store: ncio.Store, var: ncio.Variable, owned: Hyperslab, k: int, missing: Sequence[float],
              comm: MPI.Comm, block_bytes: int = STREAM_BYTES) -> largest.Scanner:
    """The slab scheme's read: this rank's hyperslab, a cache-sized block of time steps at a time, each
    block scanned while it is still in cache; the series is never whole in memory (collective).

    The bars come from every ``SAMPLE_STRIDE``-th time step, read first. Values come in the
    file's own byte order (a classic file's, big-endian, straight from MPI-IO): the scan swaps
    them as it reads them. Cells whose bar was too high (rare) need their whole series: then
    every rank streams the slab once more.
    """
    from mpi4py import MPI

    length, block = owned.count[0], owned.count[1:]
    cells = math.prod(block)

    def steps(t0: int, n: int) -> Hyperslab:
        return Hyperslab((owned.start[0] + t0, *owned.start[1:]), (n, *block))

    def blocks() -> Iterator[tuple[int, np.ndarray]]:  # every rank reads as many blocks, as the reads are collective
        widest = comm.allreduce(cells, op=MPI.MAX)
        step = max(1, block_bytes // max(widest * var.numpy_dtype.itemsize, 1))
        for t0, n in collective.rounds(comm, length, step):
            yield t0, store.read(var.name, steps(t0, n), as_stored=True).reshape(n, cells)

    sample = store.read_every(var.name, owned, largest.SAMPLE_STRIDE, as_stored=True)
    sample = sample.reshape(sample.shape[0], cells)
    with trace.phase("scan"):
        scanner = largest.Scanner(sample, 1, length, k, missing)
    del sample
    for _, rows in blocks():
        with trace.phase("scan", rows.nbytes):
            scanner.update(rows)
    short = scanner.short()
    if not mpi.all_true(comm, short.size == 0):
        columns = np.empty((length, short.size), var.numpy_dtype)
        for t0, rows in blocks():
            columns[t0:t0 + rows.shape[0]] = rows[:, short]
        scanner.rescan(short, columns)
    return scanner


def _analyse_cells(scanner: largest.Scanner, opts: Options, npy: float, show_progress: bool) -> pot.Result:
    """Thresholds, fits and return levels of the cells a scanner has seen, with a progress bar on rank 0."""
    with _progress(scanner.values.shape[0], show_progress) as bar, trace.phase("work"):
        return pot.from_scanner(scanner, tail=opts.tail, periods=opts.periods, npy=npy, min_exceed=opts.min_exceed,
                                progress=bar.update)
