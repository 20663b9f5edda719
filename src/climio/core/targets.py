"""The one rule for every path a command writes (its output, ``--trace``, ``--plot``; model output through
``ncio.create``).

A command checks all its targets at once, before any work: a target that names an input (by resolved path, or
by device and inode, so links and ``./`` spellings are caught), two targets that are one file, and a target
that exists without ``--overwrite`` are refused in one line. Each target is then written under a temporary
name beside it and renamed when complete, so a failed run leaves neither a half-written file nor a changed one.
Inputs that are not regular files (FIFOs, devices, sockets) are refused before anything opens them: reading
one blocks until a writer comes, which would hang every rank.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from climio.errors import ClimioError, IOFault

if TYPE_CHECKING:
    from climio.core.ncio.modes import Mode


# Temporary copies of targets this process has not renamed yet: removed if the job fails or is stopped.
PENDING_OUTPUTS: set[str] = set()
# The command's outputs (resolved paths), and those this process renamed into place: a command stopped by a
# signal leaves all of them or none, so that its exit status says what happened to its output.
DECLARED: set[str] = set()
COMPLETE: set[str] = set()


def discard_pending_outputs() -> None:
    """Best-effort removal of unfinished temporary outputs (called before an abort or on a signal)."""
    for path in list(PENDING_OUTPUTS):
        try:
            os.unlink(path)
        except OSError:
            pass
        PENDING_OUTPUTS.discard(path)


def declare(paths: Iterable[str]) -> None:
    """The outputs of the command now running (every rank)."""
    DECLARED.update(os.path.realpath(p) for p in paths)


def published(path: str) -> None:
    """``path`` was renamed into place by this process."""
    COMPLETE.add(os.path.realpath(path))


def all_complete() -> bool:
    """Whether every output the command declared is in place (it has only to print its lines and exit)."""
    return bool(DECLARED) and DECLARED <= COMPLETE


def discard_complete_outputs() -> list[str]:
    """Remove the outputs this process already put in place, for a stopped command that did not finish the
    others: returns their paths."""
    removed = []
    for path in sorted(COMPLETE & DECLARED):
        try:
            os.unlink(path)
            removed.append(path)
        except OSError:
            pass
    COMPLETE.clear()
    return removed


# Suffixes of formats climio does not write: an output named so would be a netCDF file under a misleading name.
OTHER_FORMATS = {".zarr": "a Zarr store", ".grib": "GRIB", ".grb": "GRIB", ".grib2": "GRIB", ".grb2": "GRIB",
                 ".tif": "GeoTIFF", ".tiff": "GeoTIFF", ".csv": "CSV", ".json": "JSON", ".txt": "text",
                 ".png": "an image", ".pdf": "PDF", ".zip": "a zip archive", ".gz": "gzip", ".parquet": "Parquet"}
HDF5_SUFFIXES = (".h5", ".hdf5", ".he5", ".hdf")  # right for netCDF-4 (HDF5) files only
# What --plot can write (matplotlib's own formats), chosen by the suffix
IMAGE_SUFFIXES = (".png", ".pdf", ".svg", ".svgz", ".eps", ".ps", ".jpg", ".jpeg", ".tif", ".tiff", ".webp")


def _suffix(path: str) -> str:
    return os.path.splitext(path.rstrip("/"))[1].lower()


def check_netcdf_suffix(path: str, mode: Mode, option: str = "output") -> None:
    """Once the output's mode is known: an HDF5 suffix on a classic netCDF file is refused (tools would open it
    as HDF5 and fail)."""
    if _suffix(path) in HDF5_SUFFIXES and not mode.format.hdf5:
        raise ClimioError(f"{option} '{path}' is named as an HDF5 file but would be classic netCDF ({mode.nc_format}): "
                          f"name it .nc, or choose --mode hdf5 for a netCDF-4 (HDF5) file", collective=True)


@dataclass(frozen=True)
class Target:
    """A path a command writes, and how the user named it (``output``, ``--trace``, ``--plot``)."""

    path: str
    option: str = "output"

    def label(self) -> str:
        return f"{self.option} '{self.path}'"

    def check_suffix(self) -> None:
        """A netCDF output must not be named as another format; a map's suffix must be one matplotlib writes."""
        suffix = _suffix(self.path)
        if self.option == "--plot":
            if suffix not in IMAGE_SUFFIXES:
                raise ClimioError(f"--plot '{self.path}': name the map with an image suffix ({', '.join(IMAGE_SUFFIXES)})"
                                  f", which chooses its format")
        elif self.option == "output" and suffix in OTHER_FORMATS:
            raise ClimioError(f"{self.label()} has the suffix of {OTHER_FORMATS[suffix]}, but climio writes netCDF files: "
                              f"name it .nc (and convert it afterwards, e.g. with xarray or cdo)")


def _identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of an existing path, None where there is nothing (or nothing readable) there."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _same(first: str, second: str) -> bool:
    """One file under two spellings: the same resolved path, or (both existing) the same device and inode."""
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    one = _identity(first)
    return one is not None and one == _identity(second)


def check_input(path: str, what: str = "input file", collective: bool = False) -> None:
    """An input exists and is a regular file (a FIFO or device would block or never end); ``collective``: every
    rank checks it alike."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ClimioError(f"{what} '{path}' does not exist", collective=collective) from None
    except OSError as err:
        raise ClimioError(f"{what} '{path}' cannot be read: {(err.strerror or str(err)).lower()}",
                          collective=collective) from err
    if stat.S_ISDIR(mode):
        raise ClimioError(f"{what} '{path}' is a directory, not a netCDF file", collective=collective)
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
        raise ClimioError(f"{what} '{path}' is {kind}: climio reads regular files only; copy the data to a file "
                          f"first", collective=collective)


def check(targets: Sequence[Target], inputs: Iterable[str] = (), overwrite: bool = False,
          overwrite_hint: str = "pass --overwrite (-O) to replace it") -> None:
    """On one rank, before any work: every target can be written, is none of ``inputs`` nor another target, and
    exists only if ``overwrite`` (``overwrite_hint`` says how to allow it, for commands without ``-O``)."""
    sources = list(inputs)
    for k, target in enumerate(targets):
        _check_writable(target)
        for source in sources:
            if _same(target.path, source):
                raise ClimioError(f"{target.label()} is the input '{source}': give another {target.option} path")
        for other in targets[:k]:
            if _same(target.path, other.path):
                raise ClimioError(f"{target.label()} is also the {other.label()}: give them different paths")
    for target in targets:
        if os.path.lexists(target.path) and not overwrite:
            raise ClimioError(f"{target.label()} exists: {overwrite_hint}")
    for target in targets:
        target.check_suffix()


def _check_writable(target: Target) -> None:
    directory = os.path.dirname(os.path.abspath(target.path))
    if not os.path.isdir(directory):
        raise ClimioError(f"{target.option} directory '{directory}' does not exist (for '{target.path}'): "
                          f"create it first")
    if os.path.isdir(target.path):
        raise ClimioError(f"{target.label()} is a directory: give a file name")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ClimioError(f"{target.option} directory '{directory}' is not writable (for '{target.path}'): "
                          f"choose another path")
    if os.path.exists(target.path) and not os.path.isfile(target.path):
        raise ClimioError(f"{target.label()} exists and is not a regular file: choose another path")


# The name of an unfinished copy: .NAME.HOST.PID.HEX.climio-tmp (the C client's remove_dead_temporaries reads it too)
TEMPORARY = re.compile(r"^\.(.+)\.([^.]+)\.(\d+)\.[0-9a-f]+\.climio-tmp$")


def host() -> str:
    """This machine's short name, as temporary files and the registry of running processes carry it."""
    return socket.gethostname().split(".")[0]


def temporary_name(path: str) -> str:
    """A hidden name beside ``path`` for this process's unfinished copy of it (:data:`TEMPORARY`), unique to
    the process and recorded in this machine's registry before anything is made under it, so that a later run
    removes it if this process is killed (:mod:`climio.core.registry`)."""
    from climio.core import registry

    directory, name = os.path.split(os.path.abspath(path))
    temp = os.path.join(directory, f".{name}.{host()}.{os.getpid()}.{secrets.token_hex(4)}.climio-tmp")
    registry.record(temp)
    return temp


def temporary_owner(name: str) -> tuple[str, str, int] | None:
    """(the target's name, host, pid) a temporary file's name carries; None for any other name."""
    match = TEMPORARY.match(name)
    return None if match is None else (match[1], match[2], int(match[3]))


def write_atomically(path: str, option: str, write: Callable[[str], None], consequence: str = "") -> None:
    """``write(temporary)`` then rename it to ``path``: a failure leaves ``path`` as it was and no temporary;
    ``consequence`` ends the fault's line (what else was not done)."""
    temp = temporary_name(path)
    PENDING_OUTPUTS.add(temp)
    try:
        write(temp)
        os.replace(temp, path)
        published(path)
    except OSError as err:
        raise IOFault(f"{option}: cannot write '{path}': {(err.strerror or str(err)).lower()}{consequence}") from err
    finally:
        PENDING_OUTPUTS.discard(temp)
        if os.path.exists(temp):
            os.unlink(temp)
