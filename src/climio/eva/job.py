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
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from climio.core import collective, kernels, mpi, ncio, progress, targets, trace
from climio.core.decomp import Decomposition, Hyperslab, process_grid
from climio.core.rearrange import Layout, Plan
from climio.core.ncio.schema import missing_values
from climio.errors import ClimioError
from climio.eva import block_maxima, blocks, cf, covariate, distributions, largest, output, pot, timestep
from climio.eva.intervals import Request
from climio.eva.methods import METHODS, TRENDS, Method
from climio.eva.plot import Fields, Map, draw, method_text, record_years
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
Result = pot.Result | pot.TrendResult | block_maxima.Result | block_maxima.TrendResult
TREND_RESULTS = (pot.TrendResult, block_maxima.TrendResult)


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
        if self.method not in METHODS:
            raise ClimioError(f"--method '{self.method}': choose one of {', '.join(METHODS)}", collective=True)
        if self.method == "gev":
            blocks.seasons_of(self.block)
            if not 0.0 <= self.max_missing < 1.0:
                raise ClimioError(f"--max-missing must be in [0, 1), got {self.max_missing}", collective=True)
            if self.min_blocks < 2:
                raise ClimioError(f"--min-blocks must be at least 2, got {self.min_blocks}", collective=True)
            given = [flag for flag, value, default in (("--tail", self.tail, 0.01), ("--min-exceed", self.min_exceed, 10),
                                                       ("--npy", self.npy, None), ("--decluster", self.decluster, None))
                     if value != default]
            if given:
                raise ClimioError(f"{', '.join(given)}: for peaks over threshold only (--method pot); block maxima "
                                  f"take --block, --max-missing and --min-blocks", collective=True)
        else:
            given = [flag for flag, value, default in (("--block", self.block, "year"),
                                                       ("--max-missing", self.max_missing, 0.1),
                                                       ("--min-blocks", self.min_blocks, 10)) if value != default]
            if given:
                raise ClimioError(f"{', '.join(given)}: for block maxima only: add --method gev", collective=True)
        timestep.check_npy(self.npy)
        if self.ci is not None:
            self.ci.check()
        self._check_covariate()
        dims = [r.dim for r in self.ranges]
        if len(set(dims)) != len(dims):
            raise ClimioError(f"-d: dimension '{next(d for d in dims if dims.count(d) > 1)}' is cut twice",
                              collective=True)


    def _check_covariate(self) -> None:
        if self.covariate is None:
            if self.covariate_at:
                raise ClimioError("--covariate-at: give the covariate too (--covariate year|FILE:VAR)",
                                  collective=True)
            return
        covariate.parse(self.covariate)
        fewest, option = (self.min_blocks, "--min-blocks") if self.method == "gev" else (self.min_exceed, "--min-exceed")
        if fewest < block_maxima.TREND_MIN_BLOCKS:
            raise ClimioError(f"{option} must be at least {block_maxima.TREND_MIN_BLOCKS} with --covariate, got "
                              f"{fewest}", collective=True)
        if self.ci is not None and self.ci.method != "normal":
            raise ClimioError("--ci with --covariate: give --ci-method normal (profile intervals of effective "
                              "return levels are not available)", collective=True)
        if not all(math.isfinite(v) for v in self.covariate_at):
            raise ClimioError(f"--covariate-at: give finite numbers, got {list(self.covariate_at)}", collective=True)


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


def _npy(series: Series, paths: Sequence[str], step: float | None, opts: Options) -> float:
    where = f"{_where(paths)}: '{series.time_dim}'"
    return timestep.values_per_year(opts.npy, step, calendar_of(series.time_attrs), where)


def _blocks(series: Series, paths: Sequence[str], step: float | None, opts: Options) -> blocks.Blocks:
    """The blocks of the analysed time steps, from the time coordinate and its calendar."""
    units, times = time_units(series.time_attrs), series.times()
    if units is None or times is None or step is None or not step > 0:
        raise ClimioError(f"{_where(paths)}: --method gev needs a time coordinate '{series.time_dim}' with CF units "
                          f"('days since ...') and at least two steps, to find the blocks", collective=True)
    return blocks.of_axis(times, units, calendar_of(series.time_attrs), step, opts.block)


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
        npy = _npy(series, paths, step, opts) if method.name == "pot" else None
        cuts = _blocks(series, paths, step, opts) if method.name == "gev" else None
        trend, cov = _trend(cuts, series, paths, opts) if opts.covariate else (None, None)
        where = Map.of(series) if opts.plot else None  # refuse a layout that is no map before the analysis
        shape = series.shape
        decomp = decomposition(shape, opts.split, comm.Get_size())
        owned = decomp.owned(rank)
        missing = missing_values(series.var.attrs)
        if cuts is None:
            scanner = _scan(series, decomp, owned, pot.tail_capacity(shape[0], opts.tail), missing,
                            opts.scheme, comm, times=opts.decluster is not None or trend is not None)
        else:
            scanner = _scan_blocks(series, decomp, owned, cuts, missing, opts.scheme, comm)
        layout = output.Layout(series)
        history_lines = [history, *(f"climio eva: {n}" for n in notes)]
        schema, values = output.schema(layout, method.outputs(opts.ci, opts.decluster is not None, trend is not None),
                                       method, _attributes(series, opts, cov), opts.periods,
                                       {**_options_record(opts, npy), "climio_inputs": "\n".join(paths)},
                                       "\n".join(h for h in history_lines if h),
                                       None if trend is None or cov is None else
                                       (trend.at, cf.covariate_attributes(cov.long_name, cov.units)),
                                       cuts.seasons if cuts is not None and len(cuts.seasons) > 1 else ())
        period, extra_axes = series.period(), _extra_axes(series)
    result = _analyse_cells(scanner, opts, npy, rank == 0, trend)

    plotting = 0.0  # rank 0 draws while the others wait: every rank leaves rank 0's time out

    def draw() -> None:
        nonlocal plotting
        if where is not None:
            begun = MPI.Wtime()
            _plot(opts, comm, decomp, result, where, values, npy)
            plotting = comm.allreduce(MPI.Wtime() - begun, op=MPI.MAX)

    _write(out, schema, values, series, owned, result, method, opts, comm, draw)
    counts = np.bincount(result.status.ravel(), minlength=len(method.statuses)).astype(np.int64)
    comm.Allreduce(MPI.IN_PLACE, counts, op=MPI.SUM)
    seconds = MPI.Wtime() - started - plotting
    notes += [f"{a} fitted as a cell axis" for a in extra_axes]
    return Summary(series.cells(), seconds, {m: int(c) for m, c in zip(method.statuses, counts) if c},
                   shape[0], len(paths), period, tuple(notes), plot_seconds=plotting, variable=series.name,
                   fits=method.said)


def _attributes(series: Series, opts: Options, cov: covariate.Covariate | None) -> dict[str, dict[str, object]]:
    """CF attributes of the method's result variables (and, with --ci, of the intervals)."""
    if opts.method == "gev":
        attrs = cf.block_maxima_attributes(series.name, series.var.attrs, blocks.canonical(opts.block),
                                           opts.max_missing, None if cov is None else (cov.long_name, cov.units))
    else:
        attrs = cf.result_attributes(series.name, series.var.attrs, opts.tail, opts.decluster,
                                     None if cov is None else (cov.long_name, cov.units))
    if opts.ci is not None:
        name = METHODS[opts.method].distribution
        parameters = TRENDS[name].PARAMETERS if cov is not None else distributions.get(name).PARAMETERS
        attrs.update(cf.interval_attributes(attrs, name, parameters, opts.ci.level, opts.ci.method))
    return attrs


def _trend(cuts: blocks.Blocks | None, series: Series, paths: Sequence[str], opts: Options
           ) -> tuple[covariate.Trend, covariate.Covariate]:
    """The covariate of each block (GEV) or time step (POT) and the values of the effective return levels."""
    assert opts.covariate is not None
    cov = covariate.load(opts.covariate)
    if cuts is not None:
        return block_maxima.trend(cov, cuts, opts.max_missing, opts.covariate_at, series.where), cov
    units, times = time_units(series.time_attrs), series.times()
    if units is None or times is None:
        raise ClimioError(f"{_where(paths)}: --covariate needs a time coordinate '{series.time_dim}' with CF units "
                          f"('days since ...'), to find each value's year", collective=True)
    import cftime

    years = np.array([d.year for d in cftime.num2date(times, units, calendar_of(series.time_attrs))])
    return pot.trend(cov, years, opts.covariate_at), cov


def _options_record(opts: Options, npy: float | None) -> dict[str, object]:
    """The options that shaped the results, as global attributes of the output."""
    ci = {} if opts.ci is None else {"climio_ci_level": opts.ci.level, "climio_ci_method": opts.ci.method}
    if opts.method == "gev":
        trend = {} if opts.covariate is None else {"climio_covariate": opts.covariate}
        return {"climio_block": blocks.canonical(opts.block), "climio_max_missing": opts.max_missing,
                "climio_min_blocks": np.int32(opts.min_blocks), **trend, **ci}
    runs = {} if opts.decluster is None else {"climio_decluster": f"runs:{opts.decluster}"}
    trend = {} if opts.covariate is None else {"climio_covariate": opts.covariate}
    return {"climio_tail": opts.tail, "climio_npy": npy, "climio_min_exceed": np.int32(opts.min_exceed), **runs,
            **trend, **ci}


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
    names = method.outputs(opts.ci, opts.decluster is not None, isinstance(result, TREND_RESULTS))
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


def _plot(opts: Options, comm: MPI.Comm, decomp: Decomposition, result: Result, where: Map,
          values: dict[str, np.ndarray], npy: float | None) -> None:
    """Gather the shape, the return level (100 years, or the longest period; of the first of several seasons;
    with a trend, the effective level at the last covariate value) and each cell's years of data on rank 0 and
    draw them."""
    assert opts.plot is not None
    which = opts.periods.index(100.0) if 100.0 in opts.periods else int(np.argmax(opts.periods))
    level, shape, years, notes = result.return_level[..., which, :], result.shape, record_years(result, npy), []
    seasons = blocks.seasons_of(opts.block) if opts.method == "gev" else ()
    if len(seasons) > 1:
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
    draw(opts.plot, where, values, Fields(*grids, opts.periods[which], method_text(opts),
                                          METHODS[opts.method].distribution.upper(),
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


def _scan_blocks(series: Series, decomp: Decomposition, owned: Hyperslab, cuts: blocks.Blocks,
                 missing: Sequence[float], scheme: str, comm: MPI.Comm) -> block_maxima.Scanner:
    """Each cell's block maxima and valid counts, from its whole series read as the scheme says (collective)."""
    cells = math.prod(owned.count[1:])
    scanner = block_maxima.Scanner(cuts, cells, series.var.numpy_dtype, missing)
    if scheme == "slab":
        for _, rows in stream(series, owned, comm):
            with trace.phase("scan", rows.nbytes):
                scanner.update(rows)
        return scanner
    slab = _whole(series, decomp, owned, scheme, comm)
    with trace.phase("scan"):
        scanner.update(slab.reshape(series.shape[0], -1))
    return scanner


def _analyse_cells(scanner: largest.Scanner | block_maxima.Scanner, opts: Options, npy: float | None,
                   show_progress: bool, trend: covariate.Trend | None = None) -> Result:
    """Fits and return levels of the cells a scanner has seen, with a progress bar on rank 0."""
    if isinstance(scanner, block_maxima.Scanner):
        with progress.bar(scanner.maxima.shape[1], "cell", "eva", show_progress) as bar, trace.phase("work"):
            return block_maxima.analyse(scanner, periods=opts.periods, max_missing=opts.max_missing,
                                        min_blocks=opts.min_blocks, progress=bar.update, ci=opts.ci, trend=trend)
    assert npy is not None
    with progress.bar(scanner.values.shape[0], "cell", "eva", show_progress) as bar, trace.phase("work"):
        return pot.from_scanner(scanner, tail=opts.tail, periods=opts.periods, npy=npy, min_exceed=opts.min_exceed,
                                progress=bar.update, ci=opts.ci, run=opts.decluster, trend=trend)
