"""The ``climio`` command: dispatch to the command modules (``climio.commands``, which own their options), and
one place that turns errors into exit codes.

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
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from climio import __version__
from climio.commands import COMMANDS, DESCRIPTION, EXAMPLES
from climio.commands.common import check_paths, declared_paths, global_options, is_number_list
from climio.core import mpi, registry, stops, targets, trace
from climio.errors import ClimioError, IOFault


class Parser(argparse.ArgumentParser):
    """argparse that prints a usage error in one line on rank 0 only and exits 2 on every rank, and takes no
    abbreviated option (``--ret`` is not silently ``--return-period``)."""

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
        """One line for the fault (argparse's usage would add a dozen): the message and where the usage is."""
        if mpi.launcher_rank() == 0:
            sys.stderr.write(f"climio: error: {message}; see '{self.prog} --help'\n")
        sys.exit(2)


def build_parser() -> Parser:
    """``climio`` and every command's parser: each command module adds its own (``climio.commands``)."""
    common = global_options()
    parser = Parser(prog="climio", description=DESCRIPTION, epilog=EXAMPLES, parents=[common],
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"climio {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.register(commands, common)
    name_leaf_parsers(parser)
    return parser


def name_leaf_parsers(parser: argparse.ArgumentParser) -> None:
    """Each command's parser in its own defaults, so that an unknown option gets that command's usage."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(parser=sub)
                name_leaf_parsers(sub)


def report(comm: Any, err: ClimioError, status: int) -> None:
    """An error every rank raised: one line, from the first rank. (A command whose errors go to the other side
    of its launch, as ``climio serve``'s go to the model, declares its own ``report``.)"""
    if comm is None or comm.Get_rank() == 0:
        sys.stderr.write(f"climio: error: {err}\n")


def run(func: Callable[[argparse.Namespace, Any], None], args: argparse.Namespace) -> int:
    """Run a command on this rank; map errors to exit codes without leaving any rank hanging."""
    from climio.core import ncio
    from climio.core.ncio import libnetcdf

    stops.watch()
    comm = None
    try:
        layer = getattr(args, "mpi_io", "auto")
        mpi.choose_mpi_io(getattr(args, "auto_mpi_io", "ompio") if layer == "auto" else layer)
        comm = getattr(args, "communicator", mpi.world)()
        registry.sweep(comm)  # what killed runs left on this machine
        stops.SPEAKER[0] = comm.Get_rank() == 0
        mpi.agree(comm, lambda: check_paths(args))
        targets.declare(t.path for t in declared_paths(args)[0])
        func(args, comm)
        if args.trace:
            trace.tracer().write(args.trace, comm)
        stops.ENDED[0] = True
        return 0
    except ClimioError as err:  # bad input (2) or a run-time fault of the machine (IOFault, 1)
        ncio.discard_pending_outputs()
        status = 1 if isinstance(err, IOFault) else 2
        single = comm is None or comm.Get_size() == 1
        if err.collective or single:
            stops.ENDED[0] = True  # a stop while the line goes out (the other side of a launch may end first) adds none
            getattr(args, "report", report)(comm, err, status)
            return status
        mpi.abort(comm, f"climio: error (rank {comm.Get_rank()}): {err}", status)
    except BrokenPipeError:  # whoever read the output went away (``| head``): end quietly, as Unix tools do
        ncio.discard_pending_outputs()
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the interpreter's last flush fails else
        if comm is None or comm.Get_size() == 1:
            stops.ENDED[0] = True
            return 1
        mpi.abort(comm, f"climio: rank {comm.Get_rank()}: the reader of its output went away", 1)
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


def normalise_argv(argv: list[str]) -> list[str]:
    """Join what argparse would misread, before it reads it: ``-X -180,180,0,90`` as NCO users type it (the value
    looks like an option), and a list option's several numbers (``--return-period 20 100 IN OUT``) into one value,
    so that the list ends at the first word that is not a number and never swallows the files."""
    out: list[str] = []
    for arg in argv:
        last = out[-1] if out else ""
        if last in VALUE_OPTIONS and arg.startswith("-") and "," in arg:
            out[-1] = f"{last}={arg}"
        elif last.split("=", 1)[0] in LIST_OPTIONS and is_number_list(arg):
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
