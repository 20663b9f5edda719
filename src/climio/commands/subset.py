"""``climio subset``: variables, ranges and lat/lon boxes cut out of one or more files, as ncks and ncrcat do."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from climio.commands.common import (Paths, Subcommands, compression, compression_options, hints, history, megabytes,
                                   place_options)
from climio.core.ncio.modes import MODES
from climio.core.targets import Target
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI


def register(commands: Subcommands, common: argparse.ArgumentParser) -> None:
    sub = commands.add_parser("subset", parents=[common, compression_options()], help="cut variables, ranges, "
                              "lat/lon boxes and stations' series out of files on regular grids and unstructured meshes (geodesic, MPAS, "
                              "UGRID)")
    sub.add_argument("files", nargs="+", metavar="FILE", help="IN [IN ...] OUT: input files, then the output file")
    sub.add_argument("-v", metavar="VAR[,VAR...]",
                     help="variables to keep (default all), with their coordinates and mesh topology")
    sub.add_argument("-d", action="append", metavar="DIM,MIN[,MAX[,STRIDE]]",
                     help="range of a dimension, NCO-style: 1.5 is a coordinate value, 3 an index (repeatable)")
    where = sub.add_mutually_exclusive_group()
    where.add_argument("-b", metavar="NORTH,SOUTH,EAST,WEST", help="lat/lon box in degrees (west > east: crosses "
                       "the dateline)")
    where.add_argument("-X", metavar="LONMIN,LONMAX,LATMIN,LATMAX", help="the same box in NCO's order")
    place_options(sub, where, points="the series at stations, each from its cell, written as a CF timeSeries file",
                  region="the cells inside a region, cut as a box is")
    sub.add_argument("--weights", action="store_true", help="with --region: write each kept cell's fraction of area "
                     "inside the region, and its area there, named by the data's cell_measures")
    sub.add_argument("--strict", action="store_true", help="with --points: a station off the grid is an error "
                     "(default: a warning, and its series is _FillValue)")
    sub.add_argument("--touching", action="store_true", help="with a box or a region: keep every cell that "
                     "overlaps it, by its bounds (default: the cells whose centre is in it)")
    sub.add_argument("--mask", action="store_true", help="with a box on a curvilinear grid, or a region on a "
                     "regular or curvilinear one: set the data of the cells of the cut rectangle that are outside it "
                     "to _FillValue")
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
    sub.set_defaults(func=run, paths=written)


def written(args: argparse.Namespace) -> Paths:
    return ([Target(args.files[-1])], args.files[:-1]) if len(args.files) >= 2 else ([], [])


def run(args: argparse.Namespace, comm: MPI.Comm) -> None:
    from climio.core.ranges import parse_dim_range
    from climio.subset.job import Request, subset
    from climio.subset.options import parse_box
    from climio.subset.regions import read_region
    from climio.subset.stations import read_stations

    if len(args.files) < 2:
        raise ClimioError("subset needs at least one input file and the output file: climio subset IN [IN ...] OUT",
                          collective=True)
    box = parse_box(args.b, "-b") if args.b else parse_box(args.X, "-X") if args.X else None
    if box is None and args.region is None and (args.touching or args.mask):
        raise ClimioError(f"{'--touching' if args.touching else '--mask'} applies to a box or a region: give -b, -X "
                          f"or --region", collective=True)
    if args.points is None and (args.points_inside or args.strict):
        raise ClimioError(f"{'--points-inside' if args.points_inside else '--strict'} applies to stations: give "
                          f"--points FILE", collective=True)
    points = read_stations(args.points) if args.points else None
    region = read_region(args.region) if args.region else None
    if region is None and args.weights:
        raise ClimioError("--weights applies to a region: give --region FILE[:NAME]", collective=True)
    request = Request(inputs=args.files[:-1], output=args.files[-1],
                      variables=[v for v in args.v.split(",") if v] if args.v else None,
                      ranges=[parse_dim_range(text) for text in args.d or []], box=box, join=args.join,
                      union=args.union, mode=args.mode, read=args.read, slack=args.read_slack,
                      overwrite=args.overwrite, hints=hints(args.hint), history=history(args.argv),
                      compress=compression(args), touching=args.touching, mask=args.mask, points=points,
                      points_inside=args.points_inside, strict=args.strict, region=region,
                      weights=args.weights)
    summary = subset(request, comm)
    if comm.Get_rank() == 0:
        changed = ", ".join(f"{d} {a}->{b}" for d, (a, b) in summary.dims.items() if a != b) or "no dimension cut"
        changed += "".join(f"; {note}" for note in summary.notes)
        ratio = summary.bytes_read / summary.bytes_selected if summary.bytes_selected else 0.0
        print(f"wrote {summary.path}: {summary.variables} variables ({summary.grid} grid; {changed}) in mode "
              f"{summary.mode}; read {megabytes(summary.bytes_read)} for {megabytes(summary.bytes_selected)} "
              f"selected ({ratio:.2f}x) on {summary.nranks} rank(s) in {summary.seconds:.2f} s")
