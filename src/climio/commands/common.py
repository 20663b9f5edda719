"""What several commands share: the options every command takes, NCO's compression flags, the little parsers of
list and key=value options, and the check of what a command writes and reads before any work."""

from __future__ import annotations

import argparse
import shlex
import time
from typing import TYPE_CHECKING, Any

from climio.core import mpi
from climio.core.targets import Target, check as check_targets
from climio.errors import ClimioError

if TYPE_CHECKING:
    from climio.core.ncio.compression import Settings

Subcommands = argparse._SubParsersAction  # what ``add_subparsers`` returns: each command adds its parser to it
Paths = tuple[list[Target], list[str]]  # what a command writes, what it reads


def global_options() -> argparse.ArgumentParser:
    """``--trace`` and ``--mpi-io``: every command takes them, before or after its name."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--trace", metavar="FILE.json", default=argparse.SUPPRESS,
                         help="write per-rank phase times and bytes, with max/mean over ranks, to this JSON file")
    options.add_argument("--mpi-io", choices=("auto", *mpi.MPI_IO_LAYERS), default=argparse.SUPPRESS,
                         help="Open MPI's MPI-IO layer: auto (ROMIO for writing model output, OMPIO otherwise: "
                              "faster on each job here), romio or ompio; OMPI_MCA_io, if set, wins")
    return options


def compression_options() -> argparse.ArgumentParser:
    """NCO's flags for a compressed netCDF-4 output, taken alike by every command that writes netCDF."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("-L", type=int, metavar="LEVEL", dest="deflate",
                         help="deflate (with shuffle) at LEVEL 1-9, as ncks -L; the output is netCDF-4 (mode "
                              "hdf5 unless --mode says otherwise)")
    options.add_argument("--ppc", action="append", metavar="VAR=NSD",
                         help="keep NSD significant digits (quantize, as ncks --ppc): VAR1,VAR2=NSD or "
                              "default=NSD for every floating-point variable but coordinates (repeatable)")
    options.add_argument("--cnk_dmn", action="append", metavar="DIM,SIZE",
                         help="chunk size along a dimension, as ncks --cnk_dmn (repeatable; netCDF-4)")
    options.add_argument("--cmp", metavar="CODECS",
                         help="codec chain, as ncks --cmp: CODEC[,PARAM]|... with shf (shuffle), dfl,LEVEL, "
                              "bz2,LEVEL, zst,LEVEL, lz4, szip,PIXELS, f32 (Fletcher-32), gbr,NSD, btg,NSD, "
                              "btr,NSB or an HDF5 filter id, e.g. 'gbr,3|shf|bz2,5' (climio info: which exist)")
    options.add_argument("--baa", metavar="ALGORITHM",
                         help="quantization algorithm for --ppc: GranularBR (default, as NCO 5), BitGroom, "
                              "BitRound (NSD is then significant bits)")
    return options


def place_options(parser: argparse.ArgumentParser, where: Any, *, points: str, region: str) -> None:
    """``--points FILE`` and ``--region FILE[:NAME]`` (one of them: ``where`` is the command's exclusive group of
    places) and ``--points-inside``: where subset cuts and eva fits; ``points`` and ``region`` say what each
    does in that command."""
    where.add_argument("--points", metavar="FILE", help=f"{points} (stations: a CSV with name,lat,lon, a GeoJSON of "
                       f"points or a netCDF of stations)")
    where.add_argument("--region", metavar="FILE[:NAME]", help=f"{region} (polygons of a GeoJSON file or a "
                       f"shapefile; NAME: the feature so named, or KEY=VALUE: those whose property KEY is VALUE)")
    parser.add_argument("--points-inside", action="store_true", help="with --points: the cell that contains each "
                        "station, by the cells' bounds (default: the one whose centre is nearest)")


def compression(args: argparse.Namespace) -> Settings:
    """NCO's -L, --ppc, --baa, --cnk_dmn and --cmp as the output's compression and chunking settings."""
    from climio.core.ncio.compression import settings

    return settings(args.deflate, args.ppc, args.baa, args.cnk_dmn, args.cmp)


def number_list(text: str) -> list[float]:
    """``20,100`` -> [20.0, 100.0]: a list option's value (argparse type; several words are joined first)."""
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values:
        raise argparse.ArgumentTypeError(f"expects comma-separated numbers, e.g. 20,100, got '{text}'")
    return values


def is_number_list(text: str) -> bool:
    """Whether a word is (part of) a list option's value, which ``climio.cli.normalise_argv`` joins to it."""
    try:
        return bool(number_list(text))
    except argparse.ArgumentTypeError:
        return False


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
    """'serial,cdf5' -> ('serial', 'cdf5'), or a one-line error naming the option and what it takes."""
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
    """The output's history line, as NCO writes it: when, and the command line that made it."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"{stamp}: climio {' '.join(shlex.quote(a) for a in argv)}"


def megabytes(nbytes: int) -> str:
    """A byte count for a summary line: MB, or kB below a tenth of one."""
    return f"{nbytes / 1e6:.1f} MB" if nbytes >= 1e5 else f"{nbytes / 1e3:.1f} kB"


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
