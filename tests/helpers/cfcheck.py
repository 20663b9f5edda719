"""Check netCDF files for CF compliance with the CF checker ``cfchecks``, offline.

``cf_report(path)`` runs ``cfchecks -v 1.8`` on one file in a subprocess (with a timeout) and returns its
ERROR and WARN messages, each with the variable it concerns (``None``: the file as a whole);
``cf_reports(paths)`` does the same for several files in one run (cfchecks takes a while to read the
standard-name table, so one run for many files is faster); ``introduced(output, inputs)`` lists the
messages an output has that none of its inputs has, so a test can require that climio adds no CF
problem of its own to what the input files already had.

Offline: cfchecks downloads its three tables (standard names, area types, standardized regions) on
every run unless told where they are. ``make install`` (scripts/install.sh) puts pinned copies in
``.venv/share/cf-tables``, and every run here names them with ``-s``, ``-a`` and ``-r``; so no test
touches the network. ``CLIMIO_CF_TABLES`` may point at another folder holding the same three files.

Nothing here passes silently: a missing ``cfchecks``, a missing table, a crash or timeout of cfchecks,
output that cannot be read, or a file cfchecks could not check at all (its FATAL messages: not
readable, name not ending in ``.nc``) raises ``CFCheckError``.

How the output is read: with ``-d`` cfchecks ends with ``Messages that were printed: [...]``, every
message of the run in order, each as ``CATEGORY: (code): variable NAME: text`` (code and variable
only where there are some). That list names the variable of every message, including those given
before the per-variable sections start (``Boundary var time_bnds should not have attribute units`` is
printed among the file's global messages, but belongs to ``time_bnds``). Each file's part starts with
``VERSION: CHECKING NetCDF FILE: PATH`` and ends with the counts (``ERRORS detected: N``,
``WARNINGS given: N``), which are checked against the messages read. The exit status is not used: it
is the number of errors (modulo 256), or 256 less the number of warnings.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

CF_VERSION = "1.8"
TIMEOUT = 120.0  # seconds for one cfchecks run (a file takes well under a second)
TABLES = {  # option -> file name in the tables folder
    "-s": "cf-standard-name-table.xml",
    "-a": "area-type-table.xml",
    "-r": "standardized-region-list.xml",
}

_MESSAGES = "Messages that were printed: "
_FILE = "VERSION: CHECKING NetCDF FILE: "
_LINE = re.compile(r"(?P<category>FATAL|ERROR|WARN|INFO|VERSION|DEBUG): (?:\((?P<code>[^)]*)\): )?"
                   r"(?:variable (?P<variable>.+?): )?(?P<text>.*)", re.S)
_COUNTS = {"ERRORS detected": "ERROR", "WARNINGS given": "WARN", "FATAL ERRORS": "FATAL"}


class CFCheckError(RuntimeError):
    """cfchecks could not be run, or did not check the file: never a pass."""


@dataclass(frozen=True)
class Message:
    category: str  # "ERROR" or "WARN"
    code: str | None  # the CF section cfchecks cites, e.g. "7.1"
    variable: str | None  # None: the file as a whole (global attributes, Conventions)
    text: str  # as cfchecks prints it, without category, code and variable

    def __str__(self) -> str:
        code = f" ({self.code})" if self.code else ""
        where = f" variable {self.variable}" if self.variable is not None else ""
        return f"{self.category}{code}{where}: {self.text}"

    def key(self) -> tuple[str, str | None, str]:
        """What ``introduced`` compares: the message with its variable's name replaced by ``<var>``."""
        text = self.text
        if self.variable:
            text = re.sub(rf"(?<!\w){re.escape(self.variable)}(?!\w)", "<var>", text)
        return self.category, self.code, text


@dataclass(frozen=True)
class Report:
    path: str
    errors: list[Message] = field(default_factory=list)
    warnings: list[Message] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)  # checker, CF and table versions cfchecks used

    @property
    def messages(self) -> list[Message]:
        return self.errors + self.warnings

    def lines(self) -> list[str]:
        return [str(m) for m in self.messages]

    def __str__(self) -> str:
        return "\n".join([f"cfchecks -v {CF_VERSION} {self.path}:", *("  " + line for line in self.lines())])


def tables_dir() -> Path:
    """The folder holding the three CF tables; raises if any is missing."""
    folder = Path(os.environ.get("CLIMIO_CF_TABLES") or Path(sys.prefix) / "share" / "cf-tables")
    missing = [name for name in TABLES.values() if not (folder / name).is_file()]
    if missing:
        raise CFCheckError(f"CF tables {', '.join(missing)} not found in {folder}: run `make install` "
                           "(scripts/install.sh puts them there), or set CLIMIO_CF_TABLES")
    return folder


def cfchecks_command() -> list[str]:
    """``cfchecks`` of this interpreter's environment, with the CF version and the local tables."""
    exe = Path(sys.executable).parent / "cfchecks"
    if not exe.is_file():
        raise CFCheckError(f"{exe} not found: run `make install` (it installs cfchecker into the venv)")
    folder = tables_dir()
    argv = [str(exe), "-d", "-v", CF_VERSION]
    for option, name in TABLES.items():
        argv += [option, str(folder / name)]
    return argv


def cf_reports(paths: Iterable[str | os.PathLike[str]], timeout: float = TIMEOUT) -> dict[str, Report]:
    """One cfchecks run over ``paths``; the report of each, keyed by ``str(path)`` as given."""
    files = list(dict.fromkeys(str(p) for p in paths))
    if not files:
        return {}
    for f in files:
        if not Path(f).is_file():
            raise CFCheckError(f"no such file: {f}")
    argv = cfchecks_command() + files
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise CFCheckError(f"cfchecks timed out after {timeout} s: {' '.join(argv)}\n{err.stdout}\n{err.stderr}")
    return _parse(done, files, argv)


def cf_report(path: str | os.PathLike[str], timeout: float = TIMEOUT) -> Report:
    """cfchecks' ERROR and WARN messages for one file."""
    return cf_reports([path], timeout)[str(path)]


def introduced(output_path: str | os.PathLike[str], input_paths: Iterable[str | os.PathLike[str]],
               timeout: float = TIMEOUT) -> list[str]:
    """The output's ERROR and WARN messages (as ``str(Message)``) that no input has.

    A message of the output is not introduced when an input has the same category, code and text,
    after each message's own variable name is replaced by a placeholder (so ``missing_value and
    _FillValue set to differing values`` on input ``pr`` excuses the same on any output variable, and
    ``Boundary var time_bnds should not have attribute units`` excuses ``Boundary var
    time_bounds ...``). The variable the message is about does not have to match.
    """
    inputs = [str(p) for p in input_paths]
    reports = cf_reports([output_path, *inputs], timeout)
    known = {m.key() for p in inputs for m in reports[p].messages}
    return [str(m) for m in reports[str(output_path)].messages if m.key() not in known]


def _fail(why: str, done: subprocess.CompletedProcess[str], argv: list[str]) -> CFCheckError:
    tail = lambda s: s[-4000:]  # noqa: E731
    return CFCheckError(f"{why}\ncommand: {' '.join(argv)}\nexit status: {done.returncode}\n"
                        f"stdout (end):\n{tail(done.stdout)}\nstderr (end):\n{tail(done.stderr)}")


def _parse(done: subprocess.CompletedProcess[str], files: list[str], argv: list[str]) -> dict[str, Report]:
    if "Traceback" in done.stderr:
        raise _fail("cfchecks crashed", done, argv)
    listed = [line for line in done.stdout.splitlines() if line.startswith(_MESSAGES)]
    if len(listed) != 1:
        raise _fail(f"cfchecks printed no '{_MESSAGES}' line (is -d honoured?)", done, argv)
    try:
        messages = ast.literal_eval(listed[0][len(_MESSAGES):])
    except (ValueError, SyntaxError) as err:
        raise _fail(f"cannot read cfchecks' message list: {err}", done, argv)

    reports: dict[str, Report] = {}
    counts: dict[str, dict[str, int]] = {}
    current: Report | None = None
    for raw in messages:
        if raw.startswith(_FILE):
            name = raw[len(_FILE):]
            if name not in files or name in reports:
                raise _fail(f"cfchecks reported on an unexpected file {name!r}", done, argv)
            current = reports[name] = Report(name)
            counts[name] = {}
            continue
        if current is None:
            raise _fail(f"cfchecks message before any file: {raw!r}", done, argv)
        label, _, number = raw.partition(": ")
        if label in _COUNTS or label in ("INFORMATION messages", "DEBUG messages"):
            counts[current.path][_COUNTS.get(label, label)] = int(number)
            continue
        match = _LINE.fullmatch(raw)
        if not match:
            raise _fail(f"cannot read cfchecks message {raw!r}", done, argv)
        category = match["category"]
        message = Message(category, match["code"], match["variable"], match["text"])
        if category == "FATAL":
            raise _fail(f"cfchecks could not check {current.path}: {message}", done, argv)
        if category == "ERROR":
            current.errors.append(message)
        elif category == "WARN":
            current.warnings.append(message)
        elif category == "VERSION":
            current.versions.append(message.text)

    for name in files:
        if name not in reports:
            raise _fail(f"cfchecks did not report on {name}", done, argv)
        got = counts[name]
        if got.get("ERROR") != len(reports[name].errors) or got.get("WARN") != len(reports[name].warnings):
            raise _fail(f"{name}: cfchecks counted {got}, but {len(reports[name].errors)} ERROR and "
                        f"{len(reports[name].warnings)} WARN messages were read", done, argv)
    return reports
