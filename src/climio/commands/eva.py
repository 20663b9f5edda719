"""``climio eva``: extreme value fits and return levels at every grid cell of one or more input files."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from climio.commands.common import (Paths, Subcommands, compression, compression_options, history, number_list,
                                   place_options)
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI


def register(commands: Subcommands, common: argparse.ArgumentParser) -> None:
    eva = commands.add_parser("eva", parents=[common, compression_options()],
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
    eva.add_argument("--plot", metavar="MAP.png",
                     help="also draw maps of the longest return period's level and of the shape parameter (PNG)")
    place_options(eva, eva.add_mutually_exclusive_group(), points="fit the series at these stations only, each "
                  "at its cell as climio subset --points takes it; their names go to the output",
                  region="fit the cells inside a region only, as climio subset --region --mask cuts it")
    eva.add_argument("--overwrite", "-O", action="store_true", help="replace OUT (and MAP.png) if it exists")
    eva.set_defaults(func=run, paths=written)


def written(args: argparse.Namespace) -> Paths:
    from climio.eva import job

    if len(args.files) < 2:
        return [], []
    return job.written(args.files[-1], args.plot), [*args.files[:-1], *job.read_besides(args.covariate)]


def observations_per_year(text: str | None) -> float | str | None:
    """``--npy``: a number, or the word as given (``calendar``, or one Options.check names as wrong)."""
    if text in (None, "calendar"):
        return text
    try:
        return float(text)
    except ValueError:
        return text


def _at_stations_or_region(args: argparse.Namespace, out: str, comm: MPI.Comm, opts: Any) -> Any:
    """eva on the stations' series or the region's cells: cut by ``climio subset`` into a scratch folder beside the
    output (every rank sees it, as it sees the output), fitted there, the folder removed whatever happens."""
    import shutil

    from climio.core import mpi, registry
    from climio.eva import job
    from climio.subset.job import Request, subset
    from climio.subset.regions import read_region
    from climio.subset.stations import read_stations

    points = read_stations(args.points) if args.points else None
    region = read_region(args.region) if args.region else None
    folder = mpi.agree(comm, lambda: registry.scratch_directory("climio-subset-", os.path.dirname(out) or "."))
    try:
        cut = os.path.join(folder, "cut.nc")
        subset(Request(inputs=args.files[:-1], output=cut, variables=[args.var] if args.var else None,
                       join=None, points=points, points_inside=args.points_inside, region=region,
                       mask=region is not None), comm)
        return job.run([cut], out, comm, opts, history(args.argv))
    finally:
        comm.Barrier()  # every rank is done reading the cut
        if comm.Get_rank() == 0:
            shutil.rmtree(folder, ignore_errors=True)


def run(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.core.ranges import parse_dim_range
    from climio.eva import decluster, job
    from climio.eva.intervals import Request

    npy = observations_per_year(args.npy)
    if len(args.files) < 2:
        raise ClimioError("eva needs at least one input file and the output file: climio eva IN [IN ...] OUT",
                          collective=True)
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
    if args.points_inside and args.points is None:
        raise ClimioError("--points-inside applies to stations: give --points FILE", collective=True)
    if args.points is None and args.region is None:
        summary = job.run(args.files[:-1], out, comm, opts, history(args.argv))
    else:
        summary = _at_stations_or_region(args, out, comm, opts)
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
