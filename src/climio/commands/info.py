"""``climio info``: what this installation can read and write, or (``--compile``) eva's kernels compiled now."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from climio.commands.common import Subcommands

if TYPE_CHECKING:
    from mpi4py import MPI


def register(commands: Subcommands, common: argparse.ArgumentParser) -> None:
    info = commands.add_parser("info", parents=[common], help="library versions and the storage modes that work here")
    info.add_argument("--dir", help="directory for the probe files (default: the system temporary directory)")
    info.add_argument("--compile", action="store_true",
                      help="compile every kernel climio eva uses into numba's cache now, so that no analysis "
                           "waits for it (make install does this; a few minutes, once per installation)")
    info.set_defaults(func=run)


def run(args: argparse.Namespace, comm: MPI.Comm) -> None:
    if args.compile:
        from climio.core.kernels import use_versioned_cache
        from climio.eva import warmup

        runs, seconds = warmup.compile_kernels(comm)
        if comm.Get_rank() == 0:
            print(f"compiled eva's kernels for {runs} option sets in {seconds:.1f} s, cached in "
                  f"{use_versioned_cache()}")
        return
    from climio.info import report

    lines = report(comm, args.dir)
    if comm.Get_rank() == 0:
        print("\n".join(lines))
