"""``climio gen cmip`` and ``climio gen geodesic``: synthetic test data, written on every rank of the job."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from climio.commands.common import Paths, Subcommands, compression, compression_options, hints, history, int_list
from climio.core.ncio.modes import MODES
from climio.core.targets import Target

if TYPE_CHECKING:
    from mpi4py import MPI

MODE_HELP = f"storage mode: {', '.join(MODES)} (default cdf5; hdf5 with -L/--ppc; climio info: which work here)"


def register(commands: Subcommands, common: argparse.ArgumentParser) -> None:
    gen = commands.add_parser("gen", help="generate synthetic test data")
    kinds = gen.add_subparsers(dest="kind", required=True, metavar="KIND")
    compressing = compression_options()
    cmip = kinds.add_parser("cmip", parents=[common, compressing],
                            help="CMIP-like daily precipitation pr(time, lat, lon)")
    cmip.add_argument("out", metavar="OUT", help="output netCDF file")
    cmip.add_argument("--shape", default="12775,192,288", metavar="T,NLAT,NLON",
                      help="days, latitudes, longitudes (default: NCAR TN-534's 12775,192,288, 2.8 GB)")
    cmip.add_argument("--mode", help=MODE_HELP)
    cmip.add_argument("--seed", type=int, default=1, help="random seed (default 1); same seed, same file")
    cmip.add_argument("--var", default="pr", help="variable name (default pr)")
    cmip.add_argument("--overwrite", "-O", action="store_true", help="replace OUT if it exists")
    cmip.add_argument("--hint", action="append", metavar="KEY=VALUE", help="MPI-IO hint (repeatable)")
    cmip.set_defaults(func=run_cmip, paths=written)

    geo = kinds.add_parser("geodesic", parents=[common, compressing], help="GCRM-style icosahedral geodesic grid "
                           "with cell, corner and edge data")
    geo.add_argument("out", metavar="OUT", help="output netCDF file")
    geo.add_argument("--level", "-R", type=int, required=True,
                     help="refinement level R: 10*4^R+2 cells, 2(N-2) corners, 3(N-2) edges (R=9: 2.6 M cells)")
    geo.add_argument("--layers", type=int, default=25, help="vertical layers (default 25)")
    geo.add_argument("--times", type=int, default=4, help="time steps (default 4)")
    geo.add_argument("--mode", help=MODE_HELP)
    geo.add_argument("--overwrite", "-O", action="store_true", help="replace OUT if it exists")
    geo.add_argument("--hint", action="append", metavar="KEY=VALUE", help="MPI-IO hint (repeatable)")
    geo.set_defaults(func=run_geodesic, paths=written)


def written(args: argparse.Namespace) -> Paths:
    return [Target(args.out)], []


def run_cmip(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.gen import cmip

    shape = int_list(args.shape, "--shape", 3)
    compress = compression(args)
    summary = cmip.write(args.out, shape, args.mode, comm, seed=args.seed, var=args.var, overwrite=args.overwrite,
                         hints=hints(args.hint), history=history(args.argv), compress=compress)
    if comm.Get_rank() == 0:
        mb = summary.nbytes / 1e6
        print(f"wrote {summary.path}: {args.var}{shape} float32, {mb:.1f} MB in mode {summary.mode} "
              f"on {summary.nranks} rank(s), {summary.seconds:.2f} s ({mb / summary.seconds:.0f} MB/s incl. generation)")


def run_geodesic(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.gen import geodesic

    compress = compression(args)
    summary = geodesic.write(args.out, args.level, args.layers, args.times, args.mode, comm,
                             overwrite=args.overwrite, hints=hints(args.hint), history=history(args.argv),
                             compress=compress)
    if comm.Get_rank() == 0:
        mb = summary.nbytes / 1e6
        print(f"wrote {summary.path}: geodesic level {args.level} ({summary.cells} cells, {summary.corners} corners, "
              f"{summary.edges} edges), {mb:.1f} MB in mode {summary.mode} on {summary.nranks} rank(s), "
              f"{summary.seconds:.2f} s")
