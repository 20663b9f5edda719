"""``climio bench SUITE``: the benchmarks' options, and each suite's call into :mod:`climio.bench` (imported only
when the suite runs, so that no other command pays for it)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from climio.commands.common import Subcommands, hints, int_list, name_list
from climio.core.ncio.modes import output_modes

if TYPE_CHECKING:
    from mpi4py import MPI

SCRATCH_HELP = "where the inputs and outputs are written (deleted afterwards)"


def add_run_options(parser: argparse.ArgumentParser, *, files: str | None, results: str,
                    out: str | None = None) -> None:
    """``--reps``, ``--dir`` (where the run's ``files`` go, if it writes any) and ``--out`` (``results``, with
    ``out`` as its default): the options every suite takes, in this order."""
    parser.add_argument("--reps", type=int, default=3, help="repetitions; medians are reported (default 3)")
    if files:
        parser.add_argument("--dir", default=".", help=files)
    parser.add_argument("--out", default=out, help=results)


def add_cases(parser: argparse.ArgumentParser, domain: str, grid: str, decomp: str) -> None:
    """The CMAQ domain and its process grids, or a PIO map (``decomp``: its help): the model suites' cases."""
    parser.add_argument("--domain", default=domain, help=f"CA, EUS, CONUS or NXxNYxNLAYxNSPEC (default {domain})")
    parser.add_argument("--grid", default=grid, metavar="PXxPY[,PXxPY...]",
                        help=f"process grids, one mpiexec each (default {grid})")
    parser.add_argument("--decomp", metavar="FILE", help=decomp)


def add_cold(parser: argparse.ArgumentParser, baseline: str) -> None:
    """``--cold``: every timed run from an empty page cache, against ``dd``'s cold read of the input."""
    parser.add_argument("--cold", action="store_true", help=f"empty the page cache of the input before every timed "
                        f"run, {baseline} (root: drop_caches, else posix_fadvise)")


def add_rows_json(parser: argparse.ArgumentParser) -> None:
    """The worker's option: a driver runs the suite under mpiexec per size and collects each run's rows here."""
    parser.add_argument("--rows-json", help=argparse.SUPPRESS)


def register(commands: Subcommands, common: argparse.ArgumentParser) -> None:
    bench = commands.add_parser("bench", help="benchmarks")
    suites = bench.add_subparsers(dest="suite", required=True, metavar="SUITE")
    for add_suite in (add_io, add_eva, add_model, add_restart, add_subset, add_open, add_points, add_startup, add_inmcm, add_scale):
        add_suite(suites, common)


def add_io(suites: Subcommands, common: argparse.ArgumentParser) -> None:
    io = suites.add_parser("io", parents=[common],
                           help="write and read the CMIP field in each mode vs a plain sequential file")
    io.add_argument("--shape", default="12775,192,288", metavar="T,NLAT,NLON", help="field shape (default TN-534's)")
    io.add_argument("--modes", default=",".join(output_modes()), help="comma-separated modes (default all four)")
    io.add_argument("--ranks", metavar="N,N,...",
                    help="rank counts to run, each under its own mpiexec (default: this job's size only)")
    add_run_options(io, files="where the benchmark files are written (default .)",
                    results="directory for results.json and results.csv")
    io.add_argument("--hint", action="append", metavar="KEY=VALUE", help="MPI-IO hint (repeatable)")
    add_rows_json(io)
    io.set_defaults(func=run_io)


def run_io(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import io

    io.main(comm, shape=int_list(args.shape, "--shape", 3), modes=name_list(args.modes, "--modes", output_modes()),
            ranks=int_list(args.ranks, "--ranks") if args.ranks else None, reps=args.reps,
            directory=args.dir, out=args.out, hints=hints(args.hint), rows_json=args.rows_json)


def add_eva(suites: Subcommands, common: argparse.ArgumentParser) -> None:
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
    add_run_options(ev, files=SCRATCH_HELP, results="directory for eva.json and eva.csv")
    add_cold(ev, "and time dd's cold read of the same file before each as the baseline")
    ev.add_argument("--plain-read", metavar="IN", help=argparse.SUPPRESS)  # the read baseline's worker
    add_rows_json(ev)
    ev.set_defaults(func=run_eva)


def run_eva(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import eva
    from climio.eva.job import SCHEMES, SPLITS

    if args.plain_read:
        eva.plain_read(comm, args.plain_read, args.splits, args.reps, args.rows_json, cold=args.cold)
        return
    eva.main(comm, shape=int_list(args.shape, "--shape", 3), ranks=int_list(args.ranks, "--ranks"),
             schemes=name_list(args.schemes, "--schemes", SCHEMES), splits=name_list(args.splits, "--splits", SPLITS),
             formats=name_list(args.formats, "--formats", eva.FORMATS), reps=args.reps, directory=args.dir,
             out=args.out, cold=args.cold, methods=name_list(args.methods, "--methods", eva.variants()))


def add_model(suites: Subcommands, common: argparse.ArgumentParser) -> None:
    mo = suites.add_parser("model", parents=[common], help="CMAQ mock-up: write strategies x storage modes")
    add_cases(mo, "CA", "2x1", "a PIO decomposition map (PIOc_writemap text or PIOc_write_nc_decomp netCDF): write "
              "its grid on its tasks' points, one run on as many ranks as it has tasks (--domain then gives only the "
              "species count, --grid is ignored)")
    mo.add_argument("--steps", type=int, default=3, help="output steps (default 3)")
    mo.add_argument("--strategy", default="root,direct,rows,cols",
                    help="write strategies, e.g. root,root:p2p,direct,rows,cols,agg:2,stripe,auto "
                    "(default root,direct,rows,cols)")
    mo.add_argument("--mode", default="serial,cdf5", help="storage modes (default serial,cdf5)")
    add_run_options(mo, files=None, results="directory for files and results (default bench-output)",
                    out="bench-output")
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
    mo.add_argument("--busy", type=int, default=0, metavar="N",
                    help="also run every case with N background processes that each keep a core busy, interleaved "
                         "with the quiet runs, and report the slowdown (default 0)")
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
    mo.add_argument("--machine", metavar="FILE", help="the machine file whose costs predict each I/O time (model s; "
                    "default: this machine's from climio tune, if measured)")
    add_rows_json(mo)
    mo.set_defaults(func=run_model, auto_mpi_io="romio")  # ROMIO writes aggregated output faster here


def run_model(args: argparse.Namespace, comm: MPI.Comm) -> None:
    """The Python loop, or with --driver fortran or --servers the Fortran mock-up (bench/capi.py, served.py)."""
    strategies, modes = args.strategy.split(","), name_list(args.mode, "--mode", output_modes())
    if args.servers:
        from climio.bench import served

        served.main(comm, domain=args.domain, grids=args.grid, steps=args.steps, strategies=strategies, modes=modes,
                    out=args.out, reps=args.reps, servers=args.servers, work=args.work, buffer_mb=args.buffer_mb)
    elif args.driver == "fortran":
        from climio.bench import capi

        capi.main(comm, domain=args.domain, grids=args.grid, steps=args.steps, strategies=strategies, modes=modes,
                  out=args.out, reps=args.reps, call_steps=args.call_steps)
    else:
        from climio.bench import model

        model.main(comm, domain=args.domain, grids=args.grid, steps=args.steps, strategies=strategies, modes=modes,
                   out=args.out, keep=args.keep, reps=args.reps, hints=hints(args.hint), decomp=args.decomp,
                   deflate=args.deflate, quantize=args.quantize, verify=args.verify, rows_json=args.rows_json,
                   busy=args.busy, machine=args.machine)


def add_restart(suites: Subcommands, common: argparse.ArgumentParser) -> None:
    rs = suites.add_parser("restart", parents=[common], help="a model's start-up read of a restart file: read "
                           "strategies x storage modes against a plain sequential read")
    add_cases(rs, "EUS", "2x2", "a PIO decomposition map instead of --grid (as in bench model)")
    rs.add_argument("--strategy", default="root,direct,agg:1,agg:2,auto",
                    help="read strategies (default root,direct,agg:1,agg:2,auto)")
    rs.add_argument("--mode", default="hdf5,cdf5", help="storage modes of the restart file (default hdf5,cdf5)")
    add_run_options(rs, files="where the restart files are written (deleted afterwards)",
                    results="directory for restart.json (default bench-output)", out="bench-output")
    add_rows_json(rs)
    rs.set_defaults(func=run_restart, auto_mpi_io="romio")


def run_restart(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import restart

    restart.main(comm, domain=args.domain, grids=args.grid, strategies=args.strategy.split(","),
                 modes=name_list(args.mode, "--mode", output_modes()), reps=args.reps, directory=args.dir,
                 out=args.out, decomp=args.decomp, rows_json=args.rows_json)


def add_subset(suites: Subcommands, common: argparse.ArgumentParser) -> None:
    sb = suites.add_parser("subset", parents=[common], help="the MJO box out of a geodesic grid (needed-only "
                           "vs whole reads), and climio subset vs ncks on a regular grid")
    sb.add_argument("--level", type=int, default=9, help="geodesic refinement level (default 9: 2.6 M cells)")
    sb.add_argument("--layers", type=int, default=25, help="layers (default 25)")
    sb.add_argument("--times", type=int, default=4, help="time steps (default 4)")
    sb.add_argument("--input", help="an existing climio gen geodesic file to use instead of generating one")
    sb.add_argument("--ranks", default="1,2,4", metavar="N,N,...", help="rank counts (default 1,2,4)")
    sb.add_argument("--cmip-shape", default="12775,192,288", metavar="T,NLAT,NLON",
                    help="regular-grid file for the ncks comparison (default TN-534's)")
    add_run_options(sb, files=SCRATCH_HELP, results="directory for subset.json and subset.csv")
    add_cold(sb, "with dd's cold read of the same file as the baseline")
    sb.set_defaults(func=run_subset)


def run_subset(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import subset

    subset.main(comm, level=args.level, layers=args.layers, times=args.times, ranks=int_list(args.ranks, "--ranks"),
                reps=args.reps, cmip_shape=int_list(args.cmip_shape, "--cmip-shape", 3), directory=args.dir,
                out=args.out, geodesic_input=args.input, cold=args.cold)


def add_open(suites: Subcommands, common: argparse.ArgumentParser) -> None:
    op = suites.add_parser("open", parents=[common], help="many daily files opened as one dataset and one cell's "
                           "series read: climio.open_mfdataset against xarray's open_mfdataset")
    op.add_argument("--files", type=int, default=1000, help="daily files (default 1000)")
    op.add_argument("--shape", default="1,192,288", metavar="T,NLAT,NLON", help="each file's shape (default "
                    "1,192,288: one day of a CMIP grid)")
    add_run_options(op, files=SCRATCH_HELP, results="directory for open.json and open.csv")
    op.set_defaults(func=run_open)


def run_open(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import mfopen

    mfopen.main(comm, files=args.files, shape=int_list(args.shape, "--shape", 3), reps=args.reps,
                directory=args.dir, out=args.out)


def add_points(suites: Subcommands, common: argparse.ArgumentParser) -> None:
    po = suites.add_parser("points", parents=[common], help="the series at many stations from many daily files: "
                           "climio subset --points against xarray's open_mfdataset and sel(method='nearest')")
    po.add_argument("--files", type=int, default=1000, help="daily files (default 1000)")
    po.add_argument("--stations", type=int, default=200, help="stations, spread over the globe (default 200)")
    po.add_argument("--shape", default="1,192,288", metavar="T,NLAT,NLON", help="each file's shape (default "
                    "1,192,288: one day of a CMIP grid)")
    po.add_argument("--formats", default="netcdf4,cdf5", help="the files' formats: netcdf4 (chunked), cdf5 "
                    "(contiguous) (default both)")
    add_run_options(po, files=SCRATCH_HELP, results="directory for points.json and points.csv")
    po.set_defaults(func=run_points)


def run_points(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import points

    points.main(comm, files=args.files, count=args.stations, shape=int_list(args.shape, "--shape", 3),
                formats=[f for f in args.formats.split(",") if f], reps=args.reps, directory=args.dir, out=args.out)


def add_startup(suites: Subcommands, common: argparse.ArgumentParser) -> None:
    su = suites.add_parser("startup", parents=[common], help="a small job's wall time from the shell: climio "
                           "subset, info and eva --help against ncks on the same tiny file")
    su.add_argument("--reps", type=int, default=7, help="runs of each command, interleaved; medians (default 7)")
    su.add_argument("--dir", default=".", help="where the tiny file is written (deleted afterwards)")
    su.add_argument("--out", help="directory for startup.json")
    su.set_defaults(func=run_startup)


def run_startup(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import startup

    startup.main(comm, reps=args.reps, directory=args.dir, out=args.out)


def add_inmcm(suites: Subcommands, common: argparse.ArgumentParser) -> None:
    im = suites.add_parser("inmcm", parents=[common], help="one model day of INMCM output: gather strategies")
    im.add_argument("--model", default="6m", help="6lm (120x180) or 6m (180x288) (default 6m)")
    im.add_argument("--ranks", default="2,4,8", metavar="N,N,...", help="rank counts, one mpiexec each (default 2,4,8)")
    im.add_argument("--gathers", default="p2p,p2p3d,gatherv,nonblocking", help="gather strategies (default all)")
    add_run_options(im, files=None, results="directory for inmcm.json and inmcm.csv")
    add_rows_json(im)
    im.set_defaults(func=run_inmcm)


def run_inmcm(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import inmcm
    from climio.model.gather import STRATEGIES

    inmcm.main(comm, model=args.model, ranks=int_list(args.ranks, "--ranks"),
               gathers=name_list(args.gathers, "--gathers", STRATEGIES), reps=args.reps, out=args.out,
               rows_json=args.rows_json)


def add_scale(suites: Subcommands, common: argparse.ArgumentParser) -> None:
    sc = suites.add_parser("scale", parents=[common], help="each rank's messages, bytes, requests and plan memory of "
                           "an output step at any rank count, worked out in one process")
    sc.add_argument("--decompositions", default="CA,EUS,CONUS,inm,cube,mesh", metavar="KIND,...",
                    help="CMAQ's CA, EUS, CONUS, the INM RAS grid (inm), a cubed sphere (cube), an MPAS-like mesh "
                    "(mesh) (default all)")
    sc.add_argument("--strategies", default="direct,root,rows,cols,agg,stripe", metavar="S,...",
                    help="write strategies (default direct,root,rows,cols,agg,stripe)")
    sc.add_argument("--ranks", default="4,16,64,256,1024,4096,16384", metavar="N,N,...",
                    help="simulated rank counts (default 4,16,64,256,1024,4096,16384)")
    sc.add_argument("--weak", action="store_true", help="every rank keeps the block it has on 4x4 (the domain grows "
                    "with P) and per-rank quantities that grow with P are flagged; default: the whole domain")
    sc.add_argument("--cores-per-node", type=int, default=128, help="ranks a node (agg: one aggregator a node; "
                    "default 128)")
    sc.add_argument("--stripe-count", type=int, default=64, help="the file's stripe count (default 64)")
    sc.add_argument("--stripe-size", type=int, default=1 << 20, help="the file's stripe size in bytes (default 1 MiB)")
    sc.add_argument("--recommend", action="store_true", help="rank the strategies auto weighs by the cost model's "
                    "predicted step time instead (on --machine's nodes, cores and stripes)")
    sc.add_argument("--papers", action="store_true", help="the cost model against the figures of Wong et al. (2014) "
                    "instead (on --machine, default edison)")
    sc.add_argument("--fit", action="store_true", help="with --papers: fit the cost of a run on an MPI-IO aggregator, "
                    "which no source gives, on CA's figures first")
    sc.add_argument("--machine", metavar="NAME|FILE", help="with --recommend or --papers: a shipped site (edison, "
                    "perlmutter, node) or a machine file (default: $CLIMIO_MACHINE, else this machine's from climio "
                    "tune)")
    sc.add_argument("--mode", default="cdf5", choices=output_modes(), help="with --recommend: the storage mode (default "
                    "cdf5)")
    sc.add_argument("--out", help="directory for scale.json and scale.csv (recommend.json, recommend.csv; "
                    "papers.json, papers.csv)")
    sc.set_defaults(func=run_scale)


def run_scale(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.bench import papers, scale

    if args.papers:
        papers.main(machine=args.machine, refit=args.fit, out=args.out)
        return
    if args.recommend:
        scale.main_recommend(kinds=args.decompositions.split(","), ranks=int_list(args.ranks, "--ranks"),
                             machine=args.machine, mode=args.mode, out=args.out)
        return
    scale.main(kinds=args.decompositions.split(","),
               strategies=args.strategies.split(","), ranks=int_list(args.ranks, "--ranks"), weak=args.weak,
               cores_per_node=args.cores_per_node, stripe_count=args.stripe_count, stripe_size=args.stripe_size,
               out=args.out)
