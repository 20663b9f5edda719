"""``climio eva``: extreme value fits at every cell of a variable of one or many files, in parallel.

Two methods (:mod:`climio.eva.methods`): peaks over threshold with GPD fits (``pot``, the default) and
block maxima with GEV fits (``gev``).

The input (:mod:`climio.eva.series`) is any variable with a time dimension, in any
layout, joined along time over many files and cut by ``-d``; its other dimensions
are the cells. Cells are split over ranks (by rows, columns or 2-D blocks of the
last two cell dimensions). Each rank gets its cells' whole time series once:

* ``slab`` (default): every rank reads its own (time, cells) hyperslab in parallel,
  a block of time steps at a time, the design TN-534 wanted but could not express
  with foreach;
* ``transpose``: every rank reads a contiguous block of time steps of the whole
  grid (the file's own order: fast for netCDF-4 files chunked one time step per
  chunk), and one MPI all-to-all turns the time blocks into cell blocks;
* ``root``: rank 0 reads each rank's hyperslab and sends it (TN-534's read-all
  baseline), kept for the study.

While the series streams past, each cell keeps only what its method needs (its largest values,
or its blocks' maxima). Each rank then analyses its cells (:mod:`climio.eva.pot`,
:mod:`climio.eva.block_maxima`), and all
ranks write their blocks of the result in parallel to one CF netCDF file
(:mod:`climio.eva.output`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING

import numpy as np

from climio.core import collective, kernels, mpi, ncio, progress, targets, trace
from climio.core.decomp import Decomposition, Hyperslab, process_grid
from climio.core.rearrange import Layout, Plan
from climio.core.ncio.schema import missing_values
from climio.errors import ClimioError
from climio.eva import cf, covariate, largest, output, timestep
from climio.eva.intervals import Request
from climio.eva.methods import METHODS, Method, Result, TimeAxis
from climio.eva.plot import Fields, Map, draw
from climio.eva.results import Trended
from climio.eva.series import Series, time_rule
from climio.core.inputs import open_inputs
from climio.core.ranges import DimRange
from climio.core.timeaxis import calendar_of, describe, time_units

if TYPE_CHECKING:
    from mpi4py import MPI

SPLITS = ("lat", "lon", "block")
STREAM_BYTES = 4 << 20  # the slab scheme reads and scans this much at a time: it stays in cache between the two
STRIDED_BYTES = 64 << 20  # ... unless time is not the slowest dimension: then each read is a piece per cell
READAHEAD_BYTES = 64 << 20  # ... while the kernel reads this much of the rank's slab ahead (page cache, not ours)
SCHEMES = ("slab", "transpose", "root")


@dataclass(frozen=True)
class Options:
    var: str | None = None  # None: the inputs' one data variable
    tail: float = 0.01
    periods: tuple[float, ...] = (100.0,)
    npy: float | str | None = None  # values per year; None: daily values (checked), 365.25; "calendar": daily
    # values (checked) in the time coordinate's calendar
    min_exceed: int = 10
    split: str = "lat"
    scheme: str = "slab"
    mode: str | None = None  # output storage mode; None: the first input's format (hdf5 when compressing)
    compress: ncio.Settings | None = None  # NCO's -L / --ppc for the output (netCDF-4)
    overwrite: bool = False
    plot: str | None = None  # PNG with maps of the return level and the shape
    ranges: tuple[DimRange, ...] = ()  # -d cuts of the variable's dimensions
    allow_gaps: bool = False  # joined inputs may miss time steps between files (said in the output's history)
    method: str = "pot"  # a key of climio.eva.methods.METHODS
    block: str = "year"  # gev: the blocks (climio.eva.blocks)
    max_missing: float = 0.1  # gev: a block missing more than this fraction of its time steps is dropped
    min_blocks: int = 10  # gev: fewest complete blocks to fit
    ci: Request | None = None  # --ci/--ci-method: confidence intervals of the return levels, standard errors
    decluster: int | None = None  # pot: --decluster runs:R, the run length R (time steps)
    covariate: str | None = None  # --covariate year|FILE:VAR: the GEV location, the GPD log scale linear in it
    covariate_at: tuple[float, ...] = ()  # covariate values of the effective return levels

    def settings(self) -> dict[str, object]:
        """The options by name, as a method reads them (:mod:`climio.eva.methods`)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def check(self) -> None:
        """Reject bad options before any file is touched (the same verdict on every rank)."""
        if not self.periods or any(not p > 1.0 for p in self.periods):
            raise ClimioError(f"--return-period must be over 1 year, got {list(self.periods)}", collective=True)
        if self.split not in SPLITS:
            raise ClimioError(f"--split '{self.split}': choose one of {', '.join(SPLITS)}", collective=True)
        if self.scheme not in SCHEMES:
            raise ClimioError(f"--scheme '{self.scheme}': choose one of {', '.join(SCHEMES)}", collective=True)
        if self.method not in METHODS:
            raise ClimioError(f"--method '{self.method}': choose one of {', '.join(METHODS)}", collective=True)
        method = METHODS[self.method]
        method.check(self.settings())
        self._check_foreign(method)
        if self.ci is not None:
            self.ci.check()
        self._check_covariate(method)
        dims = [r.dim for r in self.ranges]
        if len(set(dims)) != len(dims):
            raise ClimioError(f"-d: dimension '{next(d for d in dims if dims.count(d) > 1)}' is cut twice",
                              collective=True)

    def _check_foreign(self, method: Method) -> None:
        """Refuse the options of another method, given other than their defaults."""
        defaults = {f.name: f.default for f in fields(self)}
        for other in METHODS.values():
            given = [o.flag for o in other.options
                     if o not in method.options and getattr(self, o.name) != defaults[o.name]]
            if given:
                raise ClimioError(f"{', '.join(given)}: {other.only}", collective=True)

    def _check_covariate(self, method: Method) -> None:
        if self.covariate is None:
            if self.covariate_at:
                raise ClimioError("--covariate-at: give the covariate too (--covariate year|FILE:VAR)",
                                  collective=True)
            return
        covariate.parse(self.covariate)
        method.check_trend(self.settings(), self.ci, self.covariate_at)


@dataclass(frozen=True)
class Summary:
    cells: int
    seconds: float
    status_counts: dict[str, int]
    steps: int = 0
    files: int = 1
    period: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)  # extra cell axes, allowed gaps
    compiled: float = 0.0  # seconds spent compiling kernels numba had not cached (left out of ``seconds``)
    plot_seconds: float = 0.0  # seconds drawing and writing --plot's map (left out of ``seconds``)
    variable: str = ""  # the variable analysed (--var, or the inputs' one data variable)
    fits: str = ""  # what was fitted, in the method's words ("GPD fits")


def decomposition(shape: tuple[int, ...], split: str, nranks: int) -> Decomposition:
    """Split the cells of a (time, cells...) array over ranks; time stays whole. ``lat`` splits the rows (the
    second-to-last cell axis), ``lon`` the columns (the last), ``block`` both; one cell axis is split alone."""
    if len(shape) == 2:
        return Decomposition.block1d(shape, nranks, axis=1)
    if split == "lat":
        return Decomposition.block1d(shape, nranks, axis=len(shape) - 2)
    if split == "lon":
        return Decomposition.block1d(shape, nranks, axis=len(shape) - 1)
    px, py = process_grid(nranks, shape[-2], shape[-1])
    return Decomposition.block2d(shape, px, py)


def _where(paths: Sequence[str]) -> str:
    return paths[0] if len(paths) == 1 else f"{paths[0]} (and {len(paths) - 1} more)"


def _time_step(series: Series, paths: Sequence[str], opts: Options) -> tuple[float | None, list[str]]:
    """The time step in days (None: unknown), after checking the gaps between joined inputs (collective)."""
    attrs = series.time_attrs
    units = time_units(attrs)
    calendar = calendar_of(attrs)
    times = series.times()
    step = timestep.step_days(times, units, series.time_bounds() if times is not None and times.size == 1 else None) \
        if times is not None else None
    notes = []
    unit_days = timestep.unit_days(units)
    if step is not None and step > 0 and times is not None and unit_days is not None:
        for a, b, last, first in series.inputs.gaps(step / unit_days):
            if not (times[0] <= last and times[-1] >= first):
                continue  # outside the analysed period
            missing = round((first - last) * unit_days / step) - 1
            gap = (f"'{series.inputs.paths[a]}' ends at {describe(last, units, calendar)} and "
                   f"'{series.inputs.paths[b]}' starts at "
                   f"{describe(first, units, calendar)}: {missing} time step(s) of {timestep.describe_step(step)} "
                   f"missing between them")
            if not opts.allow_gaps:
                raise ClimioError(f"inputs: {gap}; give the missing file, or --allow-gaps to analyse them anyway "
                                  f"(the gap is then recorded in the output's history)", collective=True)
            notes.append(f"gap allowed: {gap}")
    return step, notes


def _time_axis(series: Series, paths: Sequence[str], step: float | None, method: Method) -> TimeAxis:
    """The analysed time axis as a method reads it, and how the command's errors name it."""
    units, times, calendar = time_units(series.time_attrs), series.times(), calendar_of(series.time_attrs)
    where, coordinate = _where(paths), f"a time coordinate '{series.time_dim}' with CF units ('days since ...')"
    return TimeAxis(step, calendar, None if units is None or times is None else (times, units, calendar),
                    f"{where}: '{series.time_dim}'", series.where, "--npy",
                    f"{where}: --method {method.name} needs {coordinate} and at least two steps, to find the blocks",
                    f"{where}: --covariate needs {coordinate}, to find each value's year")


HORIZONTAL_NAMES = ("latitude", "longitude", "grid_latitude", "grid_longitude", "projection_x_coordinate",
                    "projection_y_coordinate")
HORIZONTAL_UNITS = ("degrees_north", "degree_north", "degrees_N", "degree_N", "degrees_east", "degree_east",
                    "degrees_E", "degree_E")


def _extra_axes(series: Series) -> list[str]:
    """Cell dimensions that are not the horizontal grid (levels, ensemble members): fitted as cells, said so.
    Horizontal dimensions are those of coordinates CF marks as such; without any, the last two cell axes."""
    variables = series.inputs.variables
    horizontal: set[str] = set()
    for name in [*series.cell_dims, *str(series.var.attrs.get("coordinates", "")).split()]:
        attrs = variables[name].attrs if name in variables else {}
        if (attrs.get("axis") in ("X", "Y") or attrs.get("standard_name") in HORIZONTAL_NAMES
                or attrs.get("units") in HORIZONTAL_UNITS):
            horizontal |= set(variables[name].dims)
    cells = [a for a in series.axes[1:] if a.dim is not None]
    extra = [a for a in cells if a.dim not in horizontal] if horizontal else cells[:-2]
    return [f"{a.dim} ({a.count})" for a in extra]


def written(out: str, plot: str | None) -> list[targets.Target]:
    """The paths an analysis writes: its output and, with ``--plot``, the map."""
    return [targets.Target(out), *([targets.Target(plot, "--plot")] if plot else [])]


def read_besides(spec: str | None) -> list[str]:
    """Files an analysis reads besides its inputs: the covariate's (``--covariate FILE:VAR``)."""
    source = covariate.parse(spec) if spec else None
    return [source[0]] if source else []


def run(paths: Sequence[str] | str, out: str, comm: MPI.Comm, opts: Options, history: str = "",
        quiet: bool = False) -> Summary:
    """The whole analysis (collective); ``quiet``: no line when kernels must be compiled first."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    opts.check()
    mpi.agree(comm, lambda: targets.check(written(out, opts.plot), [*paths, *read_besides(opts.covariate)],
                                          opts.overwrite))  # before the analysis, not after it
    from mpi4py import MPI

    def announce() -> None:
        if comm.Get_rank() == 0 and not quiet:
            print("climio: compiling eva's kernels for these options (once: numba caches them; up to a minute; "
                  "'climio info --compile' does it ahead)", file=sys.stderr, flush=True)

    with kernels.compile_clock(announce) as clock:
        largest.load_kernels()
        ncio.load_library()
        comm.Barrier()
        before = clock.seconds
        with trace.phase("job"):  # the job's time from a barrier, for benchmarks
            summary = _run(paths, out, comm, opts, history)
        inside = comm.allreduce(clock.seconds - before, op=MPI.MAX)
    return replace(summary, seconds=max(summary.seconds - inside, 1e-9),
                   compiled=comm.allreduce(clock.seconds, op=MPI.MAX))


def _run(paths: list[str], out: str, comm: MPI.Comm, opts: Options, history: str) -> Summary:
    from mpi4py import MPI

    started = MPI.Wtime()
    rank = comm.Get_rank()
    read = "root" if opts.scheme == "root" else "parallel"
    with open_inputs(paths, comm, time_rule(opts.var, paths[0]), False, read=read, label="inputs") as inputs:
        series = Series(inputs, opts.var, list(opts.ranges), _where(paths))
        step, notes = _time_step(series, paths, opts)
        method = METHODS[opts.method]
        settings = opts.settings()
        axis = _time_axis(series, paths, step, method)
        timing = method.timing(settings, axis)
        cov = covariate.load(opts.covariate) if opts.covariate else None
        trend = None if cov is None else method.trend(cov, timing, settings, axis)
        where = Map.of(series) if opts.plot else None  # refuse a layout that is no map before the analysis
        shape = series.shape
        decomp = decomposition(shape, opts.split, comm.Get_size())
        owned = decomp.owned(rank)
        reading = _Reading(series, decomp, owned, missing_values(series.var.attrs), opts.scheme, comm)
        scanner = method.scan(reading, timing, settings, trend)
        layout = output.Layout(series)
        history_lines = [history, *(f"climio eva: {n}" for n in notes)]
        described = method.described(series.name, series.var.attrs, settings,
                                     None if cov is None else (cov.long_name, cov.units), opts.ci)
        seasons = method.seasons(timing)
        schema, values = output.schema(layout, method.outputs(opts.ci, opts.decluster is not None, trend is not None),
                                       method, described, opts.periods,
                                       {**method.record(settings, timing, opts.covariate, opts.ci),
                                        "climio_inputs": "\n".join(paths)},
                                       "\n".join(h for h in history_lines if h),
                                       None if trend is None or cov is None else
                                       (trend.at, cf.covariate_attributes(cov.long_name, cov.units)),
                                       seasons)
        period, extra_axes = series.period(), _extra_axes(series)
    with progress.bar(reading.cells, "cell", "eva", rank == 0) as bar, trace.phase("work"):
        result = method.analyse(scanner, timing, settings, opts.ci, trend, bar.update)

    plotting = 0.0  # rank 0 draws while the others wait: every rank leaves rank 0's time out

    def draw() -> None:
        nonlocal plotting
        if where is not None:
            begun = MPI.Wtime()
            _plot(opts, method, seasons, comm, decomp, result, where, values, timing)
            plotting = comm.allreduce(MPI.Wtime() - begun, op=MPI.MAX)

    _write(out, schema, values, series, owned, result, method, opts, comm, draw)
    counts = np.bincount(result.status.ravel(), minlength=len(method.statuses)).astype(np.int64)
    comm.Allreduce(MPI.IN_PLACE, counts, op=MPI.SUM)
    seconds = MPI.Wtime() - started - plotting
    notes += [f"{a} fitted as a cell axis" for a in extra_axes]
    return Summary(series.cells(), seconds, {m: int(c) for m, c in zip(method.statuses, counts) if c},
                   shape[0], len(paths), period, tuple(notes), plot_seconds=plotting, variable=series.name,
                   fits=method.said)


class _Reading:
    """A rank's cells' series as a method's sampler reads them (:class:`climio.eva.methods.Reading`): by the
    scheme's parallel reads (collective)."""

    def __init__(self, series: Series, decomp: Decomposition, owned: Hyperslab, missing: Sequence[float],
                 scheme: str, comm: MPI.Comm) -> None:
        self.series, self.decomp, self.owned, self.missing, self.scheme, self.comm = \
            series, decomp, owned, missing, scheme, comm
        self.length, self.cells, self.dtype = series.shape[0], math.prod(owned.count[1:]), series.var.numpy_dtype

    def largest(self, k: int, times: bool) -> largest.Scanner:
        return _scan(self.series, self.decomp, self.owned, k, self.missing, self.scheme, self.comm, times=times)

    def feed(self, update: Callable[[np.ndarray], None]) -> None:
        if self.scheme == "slab":
            for _, rows in stream(self.series, self.owned, self.comm):
                with trace.phase("scan", rows.nbytes):
                    update(rows)
            return
        slab = _whole(self.series, self.decomp, self.owned, self.scheme, self.comm)
        with trace.phase("scan"):
            update(slab.reshape(self.series.shape[0], -1))


def _scan(series: Series, decomp: Decomposition, owned: Hyperslab, k: int,
          missing: Sequence[float], scheme: str, comm: MPI.Comm, times: bool = False) -> largest.Scanner:
    """Each cell's largest values (with ``times``, their time steps too), from the rank's cells' whole series,
    read as the scheme says (collective)."""
    if scheme == "slab":
        return scan_slab(series, owned, k, missing, comm, times=times)
    slab = _whole(series, decomp, owned, scheme, comm)
    with trace.phase("scan"):
        scanner = largest.scan(slab.reshape(series.shape[0], -1), k, missing, times)
    return scanner


def _whole(series: Series, decomp: Decomposition, owned: Hyperslab, scheme: str, comm: MPI.Comm) -> np.ndarray:
    """This rank's cells' whole series at once, by the transpose or the root scheme (collective)."""
    if scheme == "transpose":  # time blocks of the whole grid in, whole series of this rank's cells out
        rank = comm.Get_rank()
        by_time = Decomposition.block1d(series.shape, comm.Get_size(), axis=0)
        with Plan(comm, Layout.block(by_time, rank), Layout.block(decomp, rank)) as plan:
            return plan.forward(series.read(by_time.owned(rank)))
    return series.read(owned)


def _write(out: str, schema: ncio.Schema, values: dict[str, np.ndarray], series: Series, owned: Hyperslab,
           result: Result, method: Method, opts: Options, comm: MPI.Comm,
           before_publish: Callable[[], None]) -> None:
    """Every rank writes its cells' results, rank 0 the copied coordinates; ``before_publish`` runs before the
    file is renamed into place (collective)."""
    items: list[tuple[str, np.ndarray | None, Hyperslab | None]] = [
        (name, data, None) for name, data in values.items() if not schema.variable(name).is_text]
    names = method.outputs(opts.ci, opts.decluster is not None, isinstance(result, Trended))
    if series.cell_dims:
        block = owned.count[1:]
        cells = Hyperslab(owned.start[1:], block)
        for name in names:
            data = getattr(result, name)
            lead = data.shape[:-1]  # ([seasons,] [values,] periods) or ([seasons])
            items.append((name, data.reshape(*lead, *block),
                          Hyperslab((*(0 for _ in lead), *cells.start), (*lead, *block))))
    else:  # one series: rank 0 has it
        one = comm.Get_rank() == 0
        items += [(name, getattr(result, name).reshape(getattr(result, name).shape[:-1]) if one else None, None)
                  for name in names]
    compressing = opts.compress is not None and opts.compress.active
    mode = opts.mode or ("hdf5" if compressing else ncio.FORMAT_WRITE_MODE.get(series.inputs.data_model, "cdf5"))
    with ncio.create(out, schema, mode, comm, overwrite=opts.overwrite, compress=opts.compress,
                     chosen=opts.mode is not None) as ds:
        ds.write_many(items)
        for name, data in values.items():
            if schema.variable(name).is_text:
                ds.write_text(name, data)
        before_publish()  # a plot that cannot be written publishes nothing


def _plot(opts: Options, method: Method, seasons: tuple[str, ...], comm: MPI.Comm, decomp: Decomposition,
          result: Result, where: Map, values: dict[str, np.ndarray], timing: object) -> None:
    """Gather the shape, the return level (100 years, or the longest period; of the first of several seasons;
    with a trend, the effective level at the last covariate value) and each cell's years of data on rank 0 and
    draw them."""
    assert opts.plot is not None
    which = opts.periods.index(100.0) if 100.0 in opts.periods else int(np.argmax(opts.periods))
    level, shape, years = result.return_level[..., which, :], result.shape, method.record_years(result, timing)
    notes = []
    if seasons:
        level, shape, years = level[0], shape[0], years[0]
        notes.append(seasons[0])
    if opts.covariate is not None:
        level = level[-1]
        notes.append(f"covariate {values['covariate'][-1]:g}")
    pieces = comm.gather((level, shape, years), root=0)
    if pieces is None:
        return
    grids = [np.full(decomp.shape[1:], np.nan) for _ in range(3)]
    for rank, piece in enumerate(pieces):
        owned = decomp.owned(rank)
        for whole, part in zip(grids, piece):
            whole[owned.slices[1:]] = part.reshape(owned.count[1:])
    draw(opts.plot, where, values, Fields(*grids, opts.periods[which], method.plot_text(opts.settings()),
                                          method.distribution.upper(),
                                          f" ({', '.join(notes)})" if notes else ""))


def scan_slab(series: Series, owned: Hyperslab, k: int, missing: Sequence[float], comm: MPI.Comm,
              block_bytes: int | None = None, times: bool = False) -> largest.Scanner:
    """The slab scheme's read: this rank's hyperslab, a cache-sized block of time steps at a time, each
    block scanned while it is still in cache; the series is never whole in memory (collective).

    The bars come from every ``SAMPLE_STRIDE``-th time step, read first (all its days asked of the kernel
    before the strided read, so the disk sees them together). While a block is read and scanned
    the kernel reads the next ``READAHEAD_BYTES`` of the slab from disk (``Series.prefetch``: the disk
    stays busy during the scan; a no-op on netCDF-4 inputs). Values come in the
    file's own byte order (a classic file's, big-endian, straight from MPI-IO): the scan swaps
    them as it reads them. Cells whose bar was too high (rare) need their whole series: then
    every rank streams the slab once more. A variable whose time is not its slowest dimension is read in
    larger blocks (each read is a piece per cell) and without a sample (the bars start low).
    """
    length, block = owned.count[0], owned.count[1:]
    cells = math.prod(block)

    def steps(t0: int, n: int) -> Hyperslab:
        return Hyperslab((owned.start[0] + t0, *owned.start[1:]), (n, *block))

    if series.time_first:  # the sample's days, asked for at once: the disk reads them with a deep queue
        for t in range(0, length, largest.SAMPLE_STRIDE):
            series.prefetch(steps(t, 1))
    sample = series.read_every(owned, largest.SAMPLE_STRIDE, as_stored=True)
    if sample is None:
        sample = np.empty((0, cells), series.var.numpy_dtype)
    sample = sample.reshape(sample.shape[0], cells)
    with trace.phase("scan"):
        scanner = largest.Scanner(sample, 1, length, k, missing, times)
    del sample
    for _, rows in stream(series, owned, comm, block_bytes):
        with trace.phase("scan", rows.nbytes):
            scanner.update(rows)
    short = scanner.short()
    if not mpi.all_true(comm, short.size == 0):
        columns = np.empty((length, short.size), series.var.numpy_dtype)
        for t0, rows in stream(series, owned, comm, block_bytes):
            columns[t0:t0 + rows.shape[0]] = rows[:, short]
        scanner.rescan(short, columns)
    return scanner


def stream(series: Series, owned: Hyperslab, comm: MPI.Comm, block_bytes: int | None = None
           ) -> Iterator[tuple[int, np.ndarray]]:
    """This rank's hyperslab, a block of time steps at a time: (first step, (steps, cells) in the file's byte
    order), with the kernel reading ``READAHEAD_BYTES`` ahead (collective: every rank reads as many blocks)."""
    from mpi4py import MPI

    length, block = owned.count[0], owned.count[1:]
    cells = math.prod(block)
    if block_bytes is None:
        block_bytes = STREAM_BYTES if series.time_first else STRIDED_BYTES
    itemsize = series.var.numpy_dtype.itemsize

    def steps(t0: int, n: int) -> Hyperslab:
        return Hyperslab((owned.start[0] + t0, *owned.start[1:]), (n, *block))

    widest = comm.allreduce(cells, op=MPI.MAX)
    step = max(1, block_bytes // max(widest * itemsize, 1))
    ahead = max(1, READAHEAD_BYTES // max(cells * itemsize, 1))
    advised = 0  # time steps the kernel has been asked for: a window that slides ahead of the reads
    for t0, n in collective.rounds(comm, length, step):
        if n and advised < min(length, t0 + n + ahead):
            end = min(length, t0 + n + ahead)
            series.prefetch(steps(max(advised, t0), end - max(advised, t0)))
            advised = end
        yield t0, series.read(steps(t0, n), as_stored=True).reshape(n, cells)
