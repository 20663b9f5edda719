"""The ``climio`` command: argument parsing, one place that turns errors into exit codes.

Runs as one plain process or under ``mpiexec -n N climio ...``. Bad input is a
one-line ``climio: error: ...`` and exit status 2; an unexpected exception on
any rank ends the whole job (MPI_Abort) with that rank's message, so nothing hangs.
MPI is initialised only after the arguments parse.
"""

from __future__ import annotations

import argparse
import difflib
import os
import resource  # imported up front: with memory gone, importing it fails too
import shlex
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from climio import __version__
from climio.__main__ import STOP_SIGNALS
from climio.core import mpi, targets, trace
from climio.core.targets import Target, check as check_targets
from climio.core.ncio.modes import MODES
from climio.errors import ClimioError, IOFault

if TYPE_CHECKING:
    from mpi4py import MPI

    from climio.core.ncio.compression import Settings

MODE_NAMES = ("serial", "hdf5", "cdf2", "cdf5")


class Parser(argparse.ArgumentParser):
    """argparse that prints usage errors on rank 0 only and exits 2 on every rank, and takes no abbreviated
    option (``--ret`` is not silently ``--return-period``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def unknown(self, extra: list[str]) -> NoReturn:
        """This command's usage and, for each unknown option, the nearest one it has."""
        known = [s for action in self._actions for s in action.option_strings if s.startswith("--")]
        guesses = []
        for arg in extra:
            name = arg.split("=", 1)[0]
            if not name.startswith("--"):
                continue
            close = [k for k in known if k.startswith(name)] or difflib.get_close_matches(name, known, cutoff=0.6)
            if close:
                guesses.append(f"did you mean {' or '.join(close[:3])}?")
        self.error(f"unrecognized arguments: {' '.join(extra)}" + (f" ({'; '.join(guesses)})" if guesses else ""))

    def error(self, message: str) -> NoReturn:
        if mpi.launcher_rank() == 0:
            self.print_usage(sys.stderr)
            sys.stderr.write(f"climio: error: {message}\n")
        sys.exit(2)


def number_list(text: str) -> list[float]:
    """``20,100`` -> [20.0, 100.0]: a list option's value (argparse type; several words are joined first)."""
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values:
        raise argparse.ArgumentTypeError(f"expects comma-separated numbers, e.g. 20,100, got '{text}'")
    return values


def int_list(text: str, option: str, count: int | None = None) -> tuple[int, ...]:
    """'12775,192,288' -> (12775, 192, 288), or a one-line error naming the option."""
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if not values or (count is not None and len(values) != count) or min(values) < 1:
        need = f"{count} " if count else ""
        raise ClimioError(f"{option} expects {need}comma-separated positive integers, got '{text}'", collective=True)
    return values


def name_list(text: str, option: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(n for n in text.split(",") if n)
    unknown = [n for n in names if n not in allowed]
    if not names or unknown:
        raise ClimioError(f"{option}: unknown {', '.join(unknown) or 'empty list'}; choose from {', '.join(allowed)}",
                          collective=True)
    return names


def hints(pairs: list[str] | None) -> dict[str, str]:
    """``--hint key=value`` (repeatable) -> MPI-IO hints, e.g. striping_factor=4, romio_cb_write=enable."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ClimioError(f"--hint expects key=value (e.g. striping_factor=4), got '{pair}'", collective=True)
        out[key] = value
    return out


def history(argv: list[str]) -> str:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"{stamp}: climio {' '.join(shlex.quote(a) for a in argv)}"


# -- commands ---------------------------------------------------------------------------

def cmd_info(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.info import report

    if args.compile:
        from climio.core.kernels import use_versioned_cache
        from climio.eva import warmup

        runs, seconds = warmup.compile_kernels(comm)
        if comm.Get_rank() == 0:
            print(f"compiled eva's kernels for {runs} option sets in {seconds:.1f} s, cached in "
                  f"{use_versioned_cache()}")
        return

    lines = report(comm, args.dir)
    if comm.Get_rank() == 0:
        print("\n".join(lines))


def compression(args: argparse.Namespace) -> Settings:
    """NCO's -L, --ppc, --baa, --cnk_dmn and --cmp as the output's compression and chunking settings."""
    from climio.core.ncio.compression import settings

    return settings(args.deflate, args.ppc, args.baa, args.cnk_dmn, args.cmp)


def cmd_gen_cmip(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.gen import cmip

    shape = int_list(args.shape, "--shape", 3)
    compress = compression(args)
    summary = cmip.write(args.out, shape, args.mode, comm, seed=args.seed,
                         var=args.var, overwrite=args.overwrite, hints=hints(args.hint), history=history(args.argv),
                         compress=compress)
    if comm.Get_rank() == 0:
        mb = summary.nbytes / 1e6
        print(f"wrote {summary.path}: {args.var}{shape} float32, {mb:.1f} MB in mode {summary.mode} "
              f"on {summary.nranks} rank(s), {summary.seconds:.2f} s ({mb / summary.seconds:.0f} MB/s incl. generation)")


def cmd_gen_geodesic(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.gen import geodesic

    compress = compression(args)
    summary = geodesic.write(args.out, args.level, args.layers, args.times,
                             args.mode, comm, overwrite=args.overwrite,
                             hints=hints(args.hint), history=history(args.argv), compress=compress)
    if comm.Get_rank() == 0:
        mb = summary.nbytes / 1e6
        print(f"wrote {summary.path}: geodesic level {args.level} ({summary.cells} cells, {summary.corners} corners, "
              f"{summary.edges} edges), {mb:.1f} MB in mode {summary.mode} on {summary.nranks} rank(s), "
              f"{summary.seconds:.2f} s")


def cmd_eva(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.eva import decluster, job
    from climio.eva.intervals import Request

    npy: float | str | None = args.npy
    if args.npy not in (None, "calendar"):
        try:
            npy = float(args.npy)
        except ValueError:
            pass  # a word other than 'calendar': Options.check says what --npy takes
    if len(args.files) < 2:
        raise ClimioError("eva needs at least one input file and the output file: climio eva IN [IN ...] OUT",
                          collective=True)
    from climio.core.ranges import parse_dim_range

    if args.ci_method is not None and args.ci is None:
        raise ClimioError("--ci-method: give the confidence level too, e.g. --ci 0.95", collective=True)
    opts = job.Options(var=args.var, tail=args.tail, periods=tuple(args.return_period), npy=npy,
                       min_exceed=args.min_exceed, split=args.split, scheme=args.scheme, mode=args.mode,
                       overwrite=args.overwrite, plot=args.plot,
                       ranges=tuple(parse_dim_range(text) for text in args.d or []), allow_gaps=args.allow_gaps,
                       compress=compression(args), method=args.method,
                       block=args.block,
                       max_missing=args.max_missing, min_blocks=args.min_blocks,
                       ci=None if args.ci is None else Request(args.ci, args.ci_method or "profile"),
                       decluster=None if args.decluster is None else decluster.parse(args.decluster),
                       covariate=args.covariate, covariate_at=tuple(args.covariate_at or ()))
    out = args.files[-1]
    summary = job.run(args.files[:-1], out, comm, opts, history(args.argv))
    if comm.Get_rank() == 0:
        statuses = ", ".join(f"{k} {v}" for k, v in summary.status_counts.items())
        files = f"{summary.files} files, " if summary.files > 1 else ""
        notes = "".join(f"; {note}" for note in summary.notes)
        if summary.compiled:
            notes += f"; {summary.compiled:.1f} s compiling kernels, not counted"
        if summary.plot_seconds:
            notes += f"; map drawn in {summary.plot_seconds:.2f} s, not counted"
        print(f"wrote {out}: {summary.fits} of {summary.variable} at {summary.cells} cells ({files}{summary.steps} steps, "
              f"{summary.period}{notes}) on {comm.Get_size()} rank(s) in {summary.seconds:.2f} s "
              f"({summary.cells / summary.seconds:.0f} cells/s); status: {statuses}")


def cmd_subset(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.subset.job import Request, subset
    from climio.core.ranges import parse_dim_range
    from climio.subset.options import parse_box

    if len(args.files) < 2:
        raise ClimioError("subset needs at least one input file and the output file: climio subset IN [IN ...] OUT",
                          collective=True)
    box = parse_box(args.b, "-b") if args.b else parse_box(args.X, "-X") if args.X else None
    request = Request(inputs=args.files[:-1], output=args.files[-1],
                      variables=[v for v in args.v.split(",") if v] if args.v else None,
                      ranges=[parse_dim_range(text) for text in args.d or []], box=box, join=args.join,
                      union=args.union, mode=args.mode, read=args.read, slack=args.read_slack,
                      overwrite=args.overwrite, hints=hints(args.hint), history=history(args.argv),
                      compress=compression(args))
    summary = subset(request, comm)
    if comm.Get_rank() == 0:
        changed = ", ".join(f"{d} {a}->{b}" for d, (a, b) in summary.dims.items() if a != b) or "no dimension cut"
        changed += "".join(f"; {note}" for note in summary.notes)
        ratio = summary.bytes_read / summary.bytes_selected if summary.bytes_selected else 0.0
        print(f"wrote {summary.path}: {summary.variables} variables ({summary.grid} grid; {changed}) in mode "
              f"{summary.mode}; read {megabytes(summary.bytes_read)} for {megabytes(summary.bytes_selected)} "
              f"selected ({ratio:.2f}x) on {summary.nranks} rank(s) in {summary.seconds:.2f} s")


def megabytes(nbytes: int) -> str:
    return f"{nbytes / 1e6:.1f} MB" if nbytes >= 1e5 else f"{nbytes / 1e3:.1f} kB"


def cmd_bench_io(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import io

    io.main(comm, shape=int_list(args.shape, "--shape", 3), modes=name_list(args.modes, "--modes", MODE_NAMES),
            ranks=int_list(args.ranks, "--ranks") if args.ranks else None, reps=args.reps,
            directory=args.dir, out=args.out, hints=hints(args.hint), rows_json=args.rows_json)


def cmd_bench_eva(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import eva
    from climio.eva.job import SCHEMES, SPLITS

    if args.plain_read:
        eva.plain_read(comm, args.plain_read, args.splits, args.reps, args.rows_json, cold=args.cold)
        return
    eva.main(comm, shape=int_list(args.shape, "--shape", 3), ranks=int_list(args.ranks, "--ranks"),
             schemes=name_list(args.schemes, "--schemes", SCHEMES), splits=name_list(args.splits, "--splits", SPLITS),
             formats=name_list(args.formats, "--formats", eva.FORMATS), reps=args.reps, directory=args.dir,
             out=args.out, cold=args.cold, methods=name_list(args.methods, "--methods", eva.variants()))


def cmd_bench_model(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import model

    if args.servers:
        from climio.bench import served

        served.main(comm, domain=args.domain, grids=args.grid, steps=args.steps, strategies=args.strategy.split(","),
                    modes=name_list(args.mode, "--mode", MODE_NAMES), out=args.out, reps=args.reps,
                    servers=args.servers, work=args.work, buffer_mb=args.buffer_mb)
        return
    if args.driver == "fortran":
        from climio.bench import capi

        capi.main(comm, domain=args.domain, grids=args.grid, steps=args.steps, strategies=args.strategy.split(","),
                  modes=name_list(args.mode, "--mode", MODE_NAMES), out=args.out, reps=args.reps,
                  call_steps=args.call_steps)
        return

    model.main(comm, domain=args.domain, grids=args.grid, steps=args.steps, strategies=args.strategy.split(","),
               modes=name_list(args.mode, "--mode", MODE_NAMES), out=args.out, keep=args.keep, reps=args.reps,
               hints=hints(args.hint), decomp=args.decomp, deflate=args.deflate, quantize=args.quantize,
               verify=args.verify, rows_json=args.rows_json)


def cmd_bench_restart(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import restart

    restart.main(comm, domain=args.domain, grids=args.grid, strategies=args.strategy.split(","),
                 modes=name_list(args.mode, "--mode", MODE_NAMES), reps=args.reps, directory=args.dir, out=args.out,
                 decomp=args.decomp, rows_json=args.rows_json)


def cmd_bench_inmcm(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import inmcm
    from climio.model.gather import STRATEGIES

    inmcm.main(comm, model=args.model, ranks=int_list(args.ranks, "--ranks"),
               gathers=name_list(args.gathers, "--gathers", STRATEGIES), reps=args.reps, out=args.out,
               rows_json=args.rows_json)


def cmd_bench_subset(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import subset

    subset.main(comm, level=args.level, layers=args.layers, times=args.times, ranks=int_list(args.ranks, "--ranks"),
                reps=args.reps, cmip_shape=int_list(args.cmip_shape, "--cmip-shape", 3), directory=args.dir,
                out=args.out, geodesic_input=args.input, cold=args.cold)


def cmd_serve(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.serve import server

    server.serve(comm)


def servers_communicator() -> MPI.Comm:
    """climio serve runs on the servers' own communicator: the model's ranks share COMM_WORLD with it."""
    from climio.serve import connect

    return connect.servers_communicator()


def cmd_bench_startup(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import startup

    startup.main(comm, reps=args.reps, directory=args.dir, out=args.out)


# -- what each command reads and writes: checked together, with --trace, before any work (core/targets.py) --

Paths = tuple[list[Target], list[str]]


def written_by_gen(args: argparse.Namespace) -> Paths:
    return [Target(args.out)], []


def written_by_eva(args: argparse.Namespace) -> Paths:
    from climio.eva import job

    if len(args.files) < 2:
        return [], []
    return job.written(args.files[-1], args.plot), [*args.files[:-1], *job.read_besides(args.covariate)]


def written_by_subset(args: argparse.Namespace) -> Paths:
    return ([Target(args.files[-1])], args.files[:-1]) if len(args.files) >= 2 else ([], [])


def declared_paths(args: argparse.Namespace) -> Paths:
    """What the command writes and reads (commands that write no file of their own declare nothing)."""
    declared = getattr(args, "paths", None)
    return declared(args) if declared else ([], [])


def check_paths(args: argparse.Namespace) -> None:
    """On one rank: the command's outputs and its trace, against its inputs and each other."""
    written, read = declared_paths(args)
    if args.trace:
        written = [*written, Target(args.trace, "--trace")]
    overwrite = getattr(args, "overwrite", None)
    check_targets(written, read, bool(overwrite),
                  "pass --overwrite (-O) to replace it" if overwrite is not None else "remove it or choose another path")


# -- parser -----------------------------------------------------------------------------

DESCRIPTION = """netCDF climate data on one process or many (mpiexec -n N climio ...): cut subsets out of files
as ncks and ncrcat do, fit extreme value distributions at every grid cell, and write and read
domain-decomposed model fields. Every command takes -h."""

EXAMPLES = """examples:
  climio info                                         what this installation can read and write
  climio subset -v tas -b 60,35,30,-15 IN.nc OUT.nc   a variable in a lat/lon box (north,south,east,west)
  climio subset -d time,2000-01-01,2009-12-31 IN1.nc IN2.nc OUT.nc
                                                      join files along time, keep one decade
  climio eva --return-period 20,100 IN.nc OUT.nc      20- and 100-year return levels at every cell
  mpiexec -n 4 climio eva --method gev --ci 0.95 IN.nc OUT.nc
                                                      GEV fits with 95% intervals on 4 ranks
exit status: 0 the output is complete; 2 bad input (nothing written); 1 a run-time fault (nothing
written); 128+N stopped by signal N (nothing written; under mpiexec, the launcher's status, 1 for
Open MPI): see docs/usage.md."""

def build_parser() -> Parser:
    common = Parser(add_help=False)
    common.add_argument("--trace", metavar="FILE.json", default=argparse.SUPPRESS,
                        help="write per-rank phase times and bytes, with max/mean over ranks, to this JSON file")
    common.add_argument("--mpi-io", choices=("auto", *mpi.MPI_IO_LAYERS), default=argparse.SUPPRESS,
                        help="Open MPI's MPI-IO layer: auto (ROMIO for writing model output, OMPIO otherwise: "
                             "faster on each job here), romio or ompio; OMPI_MCA_io, if set, wins")
    compressing = Parser(add_help=False)  # NCO's flags for a compressed netCDF-4 output
    compressing.add_argument("-L", type=int, metavar="LEVEL", dest="deflate",
                             help="deflate (with shuffle) at LEVEL 1-9, as ncks -L; the output is netCDF-4 (mode "
                                  "hdf5 unless --mode says otherwise)")
    compressing.add_argument("--ppc", action="append", metavar="VAR=NSD",
                             help="keep NSD significant digits (quantize, as ncks --ppc): VAR1,VAR2=NSD or "
                                  "default=NSD for every floating-point variable but coordinates (repeatable)")
    compressing.add_argument("--cnk_dmn", action="append", metavar="DIM,SIZE",
                             help="chunk size along a dimension, as ncks --cnk_dmn (repeatable; netCDF-4)")
    compressing.add_argument("--cmp", metavar="CODECS",
                             help="codec chain, as ncks --cmp: CODEC[,PARAM]|... with shf (shuffle), dfl,LEVEL, "
                                  "bz2,LEVEL, zst,LEVEL, lz4, szip,PIXELS, f32 (Fletcher-32), gbr,NSD, btg,NSD, "
                                  "btr,NSB or an HDF5 filter id, e.g. 'gbr,3|shf|bz2,5' (climio info: which exist)")
    compressing.add_argument("--baa", metavar="ALGORITHM",
                             help="quantization algorithm for --ppc: GranularBR (default, as NCO 5), BitGroom, "
                                  "BitRound (NSD is then significant bits)")
    parser = Parser(prog="climio", description=DESCRIPTION, epilog=EXAMPLES, parents=[common],
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"climio {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)

    info = commands.add_parser("info", parents=[common], help="library versions and the storage modes that work here")
    info.add_argument("--dir", help="directory for the probe files (default: the system temporary directory)")
    info.add_argument("--compile", action="store_true",
                      help="compile every kernel climio eva uses into numba's cache now, so that no analysis "
                           "waits for it (make install does this; a few minutes, once per installation)")
    info.set_defaults(func=cmd_info)

    gen = commands.add_parser("gen", help="generate synthetic test data")
    kinds = gen.add_subparsers(dest="kind", required=True, metavar="KIND", parser_class=Parser)
    cmip = kinds.add_parser("cmip", parents=[common, compressing], help="CMIP-like daily precipitation pr(time, lat, lon)")
    cmip.add_argument("out", metavar="OUT", help="output netCDF file")
    cmip.add_argument("--shape", default="12775,192,288", metavar="T,NLAT,NLON",
                      help="days, latitudes, longitudes (default: NCAR TN-534's 12775,192,288, 2.8 GB)")
    cmip.add_argument("--mode", help=f"storage mode: {', '.join(MODES)} (default cdf5; hdf5 with -L/--ppc; climio info: which "
                      "work here)")
    cmip.add_argument("--seed", type=int, default=1, help="random seed (default 1); same seed, same file")
    cmip.add_argument("--var", default="pr", help="variable name (default pr)")
    cmip.add_argument("--overwrite", "-O", action="store_true", help="replace OUT if it exists")
    cmip.add_argument("--hint", action="append", metavar="KEY=VALUE", help="MPI-IO hint (repeatable)")
    cmip.set_defaults(func=cmd_gen_cmip, paths=written_by_gen)

    geo = kinds.add_parser("geodesic", parents=[common, compressing], help="GCRM-style icosahedral geodesic grid with cell, "
                           "corner and edge data")
    geo.add_argument("out", metavar="OUT", help="output netCDF file")
    geo.add_argument("--level", "-R", type=int, required=True,
                     help="refinement level R: 10*4^R+2 cells, 2(N-2) corners, 3(N-2) edges (R=9: 2.6 M cells)")
    geo.add_argument("--layers", type=int, default=25, help="vertical layers (default 25)")
    geo.add_argument("--times", type=int, default=4, help="time steps (default 4)")
    geo.add_argument("--mode", help=f"storage mode: {', '.join(MODES)} (default cdf5; hdf5 with -L/--ppc; climio info: which "
                      "work here)")
    geo.add_argument("--overwrite", "-O", action="store_true", help="replace OUT if it exists")
    geo.add_argument("--hint", action="append", metavar="KEY=VALUE", help="MPI-IO hint (repeatable)")
    geo.set_defaults(func=cmd_gen_geodesic, paths=written_by_gen)

    eva = commands.add_parser("eva", parents=[common, compressing],
                              help="extreme value fits and return levels at every grid cell: peaks over threshold "
                                   "(GPD) or block maxima (GEV)")
    eva.add_argument("files", nargs="+", metavar="FILE",
                     help="IN [IN ...] OUT: input netCDF files (several: joined along time, taken in time order, as "
                          "climio subset does), then the output file")
    eva.add_argument("--var", "-v", help="variable to analyse (default: the file's one data variable, as CDO and "
                     "NCO take it), with time in any dimension; its other dimensions are the cells")
    eva.add_argument("-d", action="append", metavar="DIM,MIN[,MAX]",
                     help="analyse one contiguous range of a dimension (NCO's -d: indices, coordinate values with "
                          "a decimal point, or dates on time); MIN alone picks one value, as -d plev,85000.")
    eva.add_argument("--allow-gaps", action="store_true",
                     help="analyse joined inputs even where time steps are missing between files (recorded in "
                          "the output's history)")
    eva.add_argument("--method", default="pot",
                     help="pot: peaks over a threshold, GPD fit (default); gev: block maxima, GEV fit")
    eva.add_argument("--block", default="year",
                     help="gev: the blocks, 'year' (default) or a season of each year as month initials (DJF, MAM, "
                          "JJA, SON, JJAS...; DJF belongs to the year of its January)")
    eva.add_argument("--max-missing", type=float, default=0.1,
                     help="gev: drop a block that misses more than this fraction of its time steps (default 0.1)")
    eva.add_argument("--min-blocks", type=int, default=10, help="gev: fewest complete blocks to fit (default 10)")
    eva.add_argument("--covariate", metavar="year|FILE:VAR",
                     help="a trend in a covariate: 'year' or a 1-D series along time (e.g. gmst.nc:tas, its annual "
                          "means); gev: the location is linear in it (location_intercept, location_slope), pot: the "
                          "log of the GPD scale is; with their standard errors, trend_p_value, and effective return "
                          "levels on (covariate, period, ...)")
    eva.add_argument("--covariate-at", type=number_list, metavar="VALUE[,VALUE...]",
                     help="with --covariate: the covariate values of the effective return levels (default: those "
                          "of the first and the last block)")
    eva.add_argument("--tail", type=float, default=0.01, help="pot: threshold at the 1-TAIL quantile (default 0.01)")
    eva.add_argument("--return-period", type=number_list, default=[100.0], metavar="YEARS[,YEARS...]",
                     help="return periods in years, e.g. 20,100 or 20 100 (default 100)")
    eva.add_argument("--npy", default=None,
                     help="observations per year: a number, or 'calendar' (daily values in the time axis's "
                          "calendar); default 365.25 for daily values, and a time axis that is not daily is refused")
    eva.add_argument("--min-exceed", type=int, default=10, help="pot: fewest exceedances to fit (default 10)")
    eva.add_argument("--decluster", metavar="runs:R",
                     help="pot: runs declustering: exceedances less than R steps apart form one cluster, only each "
                          "cluster's maximum is fitted (and the rate is the clusters'); adds n_clusters and the "
                          "extremal index")
    eva.add_argument("--ci", type=float, metavar="LEVEL",
                     help="also confidence intervals of the return levels at this level (e.g. 0.95), as "
                          "return_level_lower/_upper, and the parameters' standard errors (<parameter>_se)")
    eva.add_argument("--ci-method", metavar="METHOD",
                     help="with --ci: profile (profile likelihood, default) or normal (delta method)")
    eva.add_argument("--split", default="lat", help="split cells over ranks by lat, lon or block (default lat)")
    eva.add_argument("--scheme", default="slab",
                     help="slab: each rank reads its cells in parallel (default); transpose: ranks read time "
                          "blocks and exchange them all-to-all; root: rank 0 reads and sends")
    eva.add_argument("--mode", help="output storage mode (default: the first input's format, as NCO keeps it)")
    eva.add_argument("--plot", metavar="MAP.png", help="also draw maps of the longest return period's level and of the shape parameter (PNG)")
    eva.add_argument("--overwrite", "-O", action="store_true", help="replace OUT (and MAP.png) if it exists")
    eva.set_defaults(func=cmd_eva, paths=written_by_eva)

    sub = commands.add_parser("subset", parents=[common, compressing], help="cut variables, ranges and lat/lon boxes out of "
                              "files on regular grids and unstructured meshes (geodesic, MPAS, UGRID)")
    sub.add_argument("files", nargs="+", metavar="FILE", help="IN [IN ...] OUT: input files, then the output file")
    sub.add_argument("-v", metavar="VAR[,VAR...]",
                     help="variables to keep (default all), with their coordinates and mesh topology")
    sub.add_argument("-d", action="append", metavar="DIM,MIN[,MAX[,STRIDE]]",
                     help="range of a dimension, NCO-style: 1.5 is a coordinate value, 3 an index (repeatable)")
    where = sub.add_mutually_exclusive_group()
    where.add_argument("-b", metavar="NORTH,SOUTH,EAST,WEST", help="lat/lon box in degrees (west > east: crosses "
                       "the dateline)")
    where.add_argument("-X", metavar="LONMIN,LONMAX,LATMIN,LATMAX", help="the same box in NCO's order")
    several = sub.add_mutually_exclusive_group()
    several.add_argument("--join", metavar="DIM", help="concatenate the inputs along DIM (default when they share "
                         "an unlimited dimension)")
    several.add_argument("--union", action="store_true", help="merge the inputs' variables (default otherwise)")
    sub.add_argument("--mode", choices=tuple(MODES), help="output storage mode (default: the one that keeps the first "
                     "input's format, as NCO does: CDF-1 -> cdf1, CDF-2 -> cdf2, CDF-5 -> cdf5, netCDF-4 -> hdf5, "
                     "netCDF-4 classic -> hdf5-classic)")
    sub.add_argument("--read", default="needed", choices=("needed", "whole"),
                     help="read only the selected runs (default) or whole blocks then pack (baseline)")
    sub.add_argument("--read-slack", type=float, default=0.1, metavar="F",
                     help="bridge gaps between runs while the extra elements read stay under F of the wanted "
                     "ones (default 0.1)")
    sub.add_argument("--overwrite", "-O", action="store_true", help="replace OUT if it exists")
    sub.add_argument("--hint", action="append", metavar="KEY=VALUE", help="MPI-IO hint (repeatable)")
    sub.set_defaults(func=cmd_subset, paths=written_by_subset)

    serve = commands.add_parser("serve", parents=[common], help="I/O server ranks: receive a model's output over MPI "
                                "and write it while the model computes (docs/serve-protocol.md)")
    serve.set_defaults(func=cmd_serve, communicator=servers_communicator, auto_mpi_io="romio")

    bench = commands.add_parser("bench", help="benchmarks")
    suites = bench.add_subparsers(dest="suite", required=True, metavar="SUITE", parser_class=Parser)
    io = suites.add_parser("io", parents=[common],
                           help="write and read the CMIP field in each mode vs a plain sequential file")
    io.add_argument("--shape", default="12775,192,288", metavar="T,NLAT,NLON", help="field shape (default TN-534's)")
    io.add_argument("--modes", default=",".join(MODE_NAMES), help="comma-separated modes (default all four)")
    io.add_argument("--ranks", metavar="N,N,...",
                    help="rank counts to run, each under its own mpiexec (default: this job's size only)")
    io.add_argument("--reps", type=int, default=3, help="repetitions; medians are reported (default 3)")
    io.add_argument("--dir", default=".", help="where the benchmark files are written (default .)")
    io.add_argument("--out", help="directory for results.json and results.csv")
    io.add_argument("--hint", action="append", metavar="KEY=VALUE", help="MPI-IO hint (repeatable)")
    io.add_argument("--rows-json", help=argparse.SUPPRESS)  # used by --ranks to collect each mpiexec's rows
    io.set_defaults(func=cmd_bench_io)

    ev = suites.add_parser("eva", parents=[common], help="climio eva per scheme, split, ranks and input format")
    ev.add_argument("--shape", default="12775,192,288", metavar="T,NLAT,NLON", help="field shape (default TN-534's)")
    ev.add_argument("--ranks", default="1,2", metavar="N,N,...", help="rank counts (default 1,2)")
    ev.add_argument("--schemes", default="slab,transpose,root", help="schemes to run (default all)")
    ev.add_argument("--splits", default="lat,block", help="splits to run (default lat,block)")
    ev.add_argument("--methods", default="pot", help="eva methods to run, interleaved: pot, gev, either with confidence "
                    "intervals (pot+normal, pot+profile, gev+normal, gev+profile), pot+decluster, and pot+trend, "
                    "gev+trend (--covariate year) (default pot)")
    ev.add_argument("--formats", default="cdf5,nc4z",
                    help="inputs: cdf5, and nc4z (zlib netCDF-4, one day per chunk) (default both)")
    ev.add_argument("--reps", type=int, default=3, help="repetitions; medians are reported (default 3)")
    ev.add_argument("--dir", default=".", help="where the inputs and outputs are written (deleted afterwards)")
    ev.add_argument("--out", help="directory for eva.json and eva.csv")
    ev.add_argument("--cold", action="store_true",
                    help="empty the page cache of the input before every timed run, and time dd's cold read of "
                         "the same file before each as the baseline (root: drop_caches, else posix_fadvise)")
    ev.add_argument("--plain-read", metavar="IN", help=argparse.SUPPRESS)  # the read baseline's worker
    ev.add_argument("--rows-json", help=argparse.SUPPRESS)
    ev.set_defaults(func=cmd_bench_eva)

    mo = suites.add_parser("model", parents=[common], help="CMAQ mock-up: write strategies x storage modes")
    mo.add_argument("--domain", default="CA", help="CA, EUS, CONUS or NXxNYxNLAYxNSPEC (default CA)")
    mo.add_argument("--grid", default="2x1", metavar="PXxPY[,PXxPY...]",
                    help="process grids, one mpiexec each (default 2x1)")
    mo.add_argument("--decomp", metavar="FILE",
                    help="a PIO decomposition map (PIOc_writemap text or PIOc_write_nc_decomp netCDF): write its "
                    "grid on its tasks' points, one run on as many ranks as it has tasks (--domain then gives "
                    "only the species count, --grid is ignored)")
    mo.add_argument("--steps", type=int, default=3, help="output steps (default 3)")
    mo.add_argument("--strategy", default="root,direct,rows,cols",
                    help="write strategies, e.g. root,root:p2p,direct,rows,cols,agg:2,stripe,auto "
                    "(default root,direct,rows,cols)")
    mo.add_argument("--mode", default="serial,cdf5", help="storage modes (default serial,cdf5)")
    mo.add_argument("--reps", type=int, default=3, help="repetitions; medians are reported (default 3)")
    mo.add_argument("--out", default="bench-output", help="directory for files and results (default bench-output)")
    mo.add_argument("--keep", action="store_true", help="keep each written file in --out (implies --verify)")
    mo.add_argument("--verify", action="store_true",
                    help="after timing, read every species of every file back and compare it with what was "
                         "written (default: the last species only); a difference fails the run")
    mo.add_argument("--deflate", type=int, default=0, metavar="LEVEL",
                    help="write every species deflated at LEVEL 1-9 (hdf5 mode only; adds one process writing the "
                         "same with netCDF4-python as a baseline)")
    mo.add_argument("--quantize", metavar="ALG:NSD", help="quantize every species, e.g. GranularBR:3 (hdf5 only)")
    mo.add_argument("--hint", action="append", metavar="KEY=VALUE",
                    help="MPI-IO hint for every file (repeatable), e.g. romio_ds_write=disable")
    mo.add_argument("--driver", choices=("python", "fortran"), default="python",
                    help="fortran: run examples/cmaq_mockup.F90 through the C API against the same loop in Python, "
                    "interleaved, and report both I/O times and the cost per call (default python)")
    mo.add_argument("--call-steps", type=int, default=200, metavar="N",
                    help="with --driver fortran: steps of the tiny runs that measure the cost per call (default "
                    "200; 0 skips them)")
    mo.add_argument("--servers", type=int, default=0, metavar="N",
                    help="run examples/cmaq_mockup.F90 beside N climio serve ranks against the same program writing "
                    "itself, with a workload between steps, and report the output time the model sees per step, the "
                    "run's time, the servers' bandwidth and the model ranks' memory")
    mo.add_argument("--work", type=float, metavar="SECONDS",
                    help="with --servers: the workload per step (default 1.5 x the synchronous write per step)")
    mo.add_argument("--buffer-mb", type=int, metavar="MB",
                    help="with --servers: the client buffer per model rank (default one step of its fields, at "
                    "least 32)")
    mo.add_argument("--rows-json", help=argparse.SUPPRESS)  # used by the driver to collect each mpiexec's rows
    mo.set_defaults(func=cmd_bench_model, auto_mpi_io="romio")  # ROMIO writes aggregated output faster here

    rs = suites.add_parser("restart", parents=[common], help="a model's start-up read of a restart file: read strategies "
                           "x storage modes against a plain sequential read")
    rs.add_argument("--domain", default="EUS", help="CA, EUS, CONUS or NXxNYxNLAYxNSPEC (default EUS)")
    rs.add_argument("--grid", default="2x2", metavar="PXxPY[,PXxPY...]",
                    help="process grids, one mpiexec each (default 2x2)")
    rs.add_argument("--decomp", metavar="FILE", help="a PIO decomposition map instead of --grid (as in bench model)")
    rs.add_argument("--strategy", default="root,direct,agg:1,agg:2,auto",
                    help="read strategies (default root,direct,agg:1,agg:2,auto)")
    rs.add_argument("--mode", default="hdf5,cdf5", help="storage modes of the restart file (default hdf5,cdf5)")
    rs.add_argument("--reps", type=int, default=3, help="repetitions; medians are reported (default 3)")
    rs.add_argument("--dir", default=".", help="where the restart files are written (deleted afterwards)")
    rs.add_argument("--out", default="bench-output", help="directory for restart.json (default bench-output)")
    rs.add_argument("--rows-json", help=argparse.SUPPRESS)
    rs.set_defaults(func=cmd_bench_restart, auto_mpi_io="romio")

    sb = suites.add_parser("subset", parents=[common], help="the MJO box out of a geodesic grid (needed-only "
                           "vs whole reads), and climio subset vs ncks on a regular grid")
    sb.add_argument("--level", type=int, default=9, help="geodesic refinement level (default 9: 2.6 M cells)")
    sb.add_argument("--layers", type=int, default=25, help="layers (default 25)")
    sb.add_argument("--times", type=int, default=4, help="time steps (default 4)")
    sb.add_argument("--input", help="an existing climio gen geodesic file to use instead of generating one")
    sb.add_argument("--ranks", default="1,2,4", metavar="N,N,...", help="rank counts (default 1,2,4)")
    sb.add_argument("--cmip-shape", default="12775,192,288", metavar="T,NLAT,NLON",
                    help="regular-grid file for the ncks comparison (default TN-534's)")
    sb.add_argument("--reps", type=int, default=3, help="repetitions; medians are reported (default 3)")
    sb.add_argument("--dir", default=".", help="where the inputs and outputs are written (deleted afterwards)")
    sb.add_argument("--out", help="directory for subset.json and subset.csv")
    sb.add_argument("--cold", action="store_true",
                    help="empty the page cache of the input before every timed run, with dd's cold read of the "
                         "same file as the baseline (root: drop_caches, else posix_fadvise)")
    sb.set_defaults(func=cmd_bench_subset)

    su = suites.add_parser("startup", parents=[common], help="a small job's wall time from the shell: climio "
                           "subset, info and eva --help against ncks on the same tiny file")
    su.add_argument("--reps", type=int, default=7, help="runs of each command, interleaved; medians (default 7)")
    su.add_argument("--dir", default=".", help="where the tiny file is written (deleted afterwards)")
    su.add_argument("--out", help="directory for startup.json")
    su.set_defaults(func=cmd_bench_startup)

    im = suites.add_parser("inmcm", parents=[common], help="one model day of INMCM output: gather strategies")
    im.add_argument("--model", default="6m", help="6lm (120x180) or 6m (180x288) (default 6m)")
    im.add_argument("--ranks", default="2,4,8", metavar="N,N,...", help="rank counts, one mpiexec each (default 2,4,8)")
    im.add_argument("--gathers", default="p2p,p2p3d,gatherv,nonblocking", help="gather strategies (default all)")
    im.add_argument("--reps", type=int, default=3, help="repetitions; medians are reported (default 3)")
    im.add_argument("--out", help="directory for inmcm.json and inmcm.csv")
    im.add_argument("--rows-json", help=argparse.SUPPRESS)  # used by the driver to collect each mpiexec's rows
    im.set_defaults(func=cmd_bench_inmcm)
    name_leaf_parsers(parser)
    return parser


def name_leaf_parsers(parser: argparse.ArgumentParser) -> None:
    """Each command's parser in its own defaults, so that an unknown option gets that command's usage."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(parser=sub)
                name_leaf_parsers(sub)


def stop_on_signal(signum: int, frame: object) -> None:
    """A batch system's time limit (SIGTERM), Ctrl-C or a closed terminal: a command whose outputs are all in
    place finishes (exit 0: they are complete); otherwise this rank removes its unfinished outputs and those of
    this run it already put in place (a stopped run leaves none), one line comes from the first rank, and the
    status is 128 + signal (no traceback). A rank blocked inside an MPI call is ended by mpiexec instead; the
    next run on the same output removes what it left (``remove_stale_temporaries``)."""
    from climio.core import targets

    if targets.all_complete():
        return
    targets.discard_pending_outputs()
    removed = targets.discard_complete_outputs()
    if mpi.launcher_rank() == 0 or removed:
        also = f" (and {', '.join(removed)}, complete, so that a stopped run leaves no output)" if removed else ""
        os.write(2, f"climio: stopped by {signal.Signals(signum).name}; unfinished output removed{also}\n".encode())
    mpi.remove_session_directory()
    os._exit(128 + signum)


def run(func: Callable[[argparse.Namespace, Any], None], args: argparse.Namespace) -> int:
    """Run a command on this rank; map errors to exit codes without leaving any rank hanging."""
    from climio.core import ncio
    from climio.core.ncio import libnetcdf

    for signum in STOP_SIGNALS:
        signal.signal(signum, stop_on_signal)
    comm = None
    try:
        layer = getattr(args, "mpi_io", "auto")
        mpi.choose_mpi_io(getattr(args, "auto_mpi_io", "ompio") if layer == "auto" else layer)
        comm = getattr(args, "communicator", mpi.world)()
        mpi.agree(comm, lambda: check_paths(args))
        targets.declare(t.path for t in declared_paths(args)[0])
        func(args, comm)
        if args.trace:
            trace.tracer().write(args.trace, comm)
        return 0
    except ClimioError as err:  # bad input (2) or a run-time fault of the machine (IOFault, 1)
        ncio.discard_pending_outputs()
        status = 1 if isinstance(err, IOFault) else 2
        single = comm is None or comm.Get_size() == 1
        if err.collective or single:
            if comm is None or comm.Get_rank() == 0:
                sys.stderr.write(f"climio: error: {err}\n")
            return status
        mpi.abort(comm, f"climio: error (rank {comm.Get_rank()}): {err}", status)
    except libnetcdf.NetCDFError as err:  # the library failed to read or write: a run-time fault, named by file
        ncio.discard_pending_outputs()
        rank = comm.Get_rank() if comm is not None else mpi.launcher_rank()
        mpi.abort(comm, f"climio: error (rank {rank}): {err}", 1)
    except Exception as err:  # noqa: BLE001 - any failure must end every rank
        ncio.discard_pending_outputs()
        rank = comm.Get_rank() if comm is not None else mpi.launcher_rank()
        memory = out_of_memory(err)
        if memory:
            mpi.abort(comm, f"climio: error (rank {rank}): {memory}", 1)
        debug = traceback.format_exc() if os.environ.get("CLIMIO_DEBUG") else ""
        mpi.abort(comm, f"{debug}climio: rank {rank} failed: {type(err).__name__}: {err} (a bug: please report it "
                  f"with CLIMIO_DEBUG=1 set, which prints the traceback)", 1)
    return 1


VALUE_OPTIONS = ("-b", "-X", "-d")
LIST_OPTIONS = ("--return-period", "--covariate-at")


def _numbers(arg: str) -> bool:
    try:
        return bool(number_list(arg))
    except argparse.ArgumentTypeError:
        return False


def normalise_argv(argv: list[str]) -> list[str]:
    """Join what argparse would misread, before it reads it: ``-X -180,180,0,90`` as NCO users type it (the value
    looks like an option), and a list option's several numbers (``--return-period 20 100 IN OUT``) into one value,
    so that the list ends at the first word that is not a number and never swallows the files."""
    out: list[str] = []
    for arg in argv:
        last = out[-1] if out else ""
        if last in VALUE_OPTIONS and arg.startswith("-") and "," in arg:
            out[-1] = f"{last}={arg}"
        elif last.split("=", 1)[0] in LIST_OPTIONS and _numbers(arg):
            out[-1] = f"{last},{arg}" if "=" in last else f"{last}={arg}"
        else:
            out.append(arg)
    return out


def out_of_memory(err: BaseException) -> str:
    """The one line for a failure that is the machine's memory running out (not a bug), or ""."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    limited = limit != resource.RLIM_INFINITY
    # Under an address-space limit the interpreter's own allocations fail too (some as SystemError), and so
    # does the loader's mapping of a library (ENOMEM: "failed to map segment from shared object")
    if not (isinstance(err, MemoryError) or isinstance(err.__context__, MemoryError)
            or (limited and isinstance(err, SystemError))
            or (isinstance(err, ImportError) and "failed to map segment" in str(err))):
        return ""
    what = str(err) if isinstance(err, MemoryError) and str(err) else ""
    detail = f": {what[0].lower()}{what[1:]}" if what else ""
    under = f" under the address-space limit of {limit / 2**20:.0f} MiB (ulimit -v)" if limited else ""
    return (f"out of memory{under}{detail}; run on more ranks or nodes (each then holds less), select less "
            f"(-v, -d), or raise the limit")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args, extra = parser.parse_known_args(normalise_argv(argv))
    if extra and (getattr(args, "files", None) is None or any(e.startswith("-") for e in extra)):
        getattr(args, "parser", parser).unknown([e for e in extra if e.startswith("-")] or extra)
    if extra:  # files after an option (IN -v tas OUT), as NCO takes them: argparse leaves them over, in order
        args.files += extra
    args.argv = argv
    args.trace = getattr(args, "trace", None)  # SUPPRESS: a subcommand must not reset the global option
    try:
        status = run(args.func, args)
    except (MemoryError, SystemError) as err:  # raised where run's handler could not run for want of memory
        line = out_of_memory(err)
        if not line:
            raise
        os.write(2, f"climio: error: {line}\n".encode())
        mpi.remove_session_directory()
        os._exit(1)
    sys.exit(status)
