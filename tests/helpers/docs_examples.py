"""Read the examples out of the Markdown pages and run them as a reader would (tests/test_docs.py).

A page's fenced blocks are examples when their language is:

``console``
    an interactive session: ``$ `` starts a command (a trailing ``\\`` continues it on the next line), and the
    lines up to the next ``$ `` are what it prints. Every printed line shown must appear in what the command
    really prints; ``...`` stands for any text, a line of ``...`` alone marks an elision, and times and rates
    (``0.35 s``, ``34 cells/s``, ``812 MB/s``) are compared as "some number". A shown ``climio: error`` line
    means the command must fail with status 2; otherwise it must succeed.
``sh`` (also ``bash``, ``shell``)
    commands, one per line (comments and blank lines aside, ``\\`` continues a line); each must succeed.
``python``
    code: the page's Python blocks run in order in one interpreter, sharing their names, like a notebook's
    cells. A ```` ```text ```` block right after one, marked ``<!-- test: output -->``, is what it prints.

An HTML comment on the line before a fence steers the test (Markdown renders none of them):

``<!-- test: install -->``
    the block installs software (``make install``, ``pip install``, ``apt-get``, ``module load``): it is not
    run, and it may hold nothing else.
``<!-- test: file NAME -->``
    the block is a file the reader saves as NAME (a script, a job file): the test writes it into the working
    directory, and a later command runs it.
``<!-- test: output -->``
    the ```` ```text ```` block is what the Python block before it prints.

Every page runs in a directory of its own that looks like a clone's root: ``tests/data`` (each shipped file
linked), ``examples`` and ``.venv`` are there, so the paths the docs give work as written.
"""

from __future__ import annotations

import glob
import json
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SHELL_LANGUAGES = ("sh", "bash", "shell")
RUN_LANGUAGES = ("console", *SHELL_LANGUAGES, "python")
# What an install block may hold, and all it may hold.
INSTALL = re.compile(r"^(sudo\s+)?(make\s+install\b|((\S*/)?python3?\s+-m\s+)?(\S*/)?pip3?\s+install\b|apt-get\b|"
                     r"module\s+load\b)")
MARKER = re.compile(r"^<!--\s*test:\s*(?P<what>[a-z]+)(\s+(?P<arg>\S+))?\s*-->$")
SHELL_SYNTAX = re.compile(r"[|;&<>$`(){}\\]|^\s*\w+=")
COMMAND_TIMEOUT = 150  # seconds one command (or one Python block) may take: eva may compile its kernels first


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    marker: str | None = None  # install, file, output
    argument: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class Command:
    block: Block
    line: str  # the command as a shell reads it (continuations joined)
    expected: list[str] = field(default_factory=list)  # shown output (console), [] when none is shown


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, with the marker on the line before its fence."""
    name = str(page.relative_to(ROOT)) if page.is_absolute() and page.is_relative_to(ROOT) else str(page)
    lines = page.read_text().splitlines()
    out: list[Block] = []
    k = 0
    while k < len(lines):
        fence = re.match(r"^(\s*)(`{3,})\s*([\w+-]*)\s*$", lines[k])
        if not fence:
            k += 1
            continue
        ticks, language = fence.group(2), fence.group(3)
        body, j = [], k + 1
        while j < len(lines) and not lines[j].strip().startswith(ticks):
            body.append(lines[j])
            j += 1
        if j == len(lines):
            raise AssertionError(f"{name}:{k + 1}: a fence that is never closed")
        marker = argument = None
        before = k - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        found = MARKER.match(lines[before].strip()) if before >= 0 else None
        if found:
            marker, argument = found.group("what"), found.group("arg")
        out.append(Block(name, k + 1, language, "\n".join(body) + "\n", marker, argument))
        out[-1].indent = fence.group(1)  # type: ignore[attr-defined]
        k = j + 1
    return out


def logical_lines(lines: list[str]) -> list[str]:
    """Lines with a trailing backslash joined to the next (as a shell reads them)."""
    out: list[str] = []
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def commands(block: Block) -> list[Command]:
    """The commands of a console or shell block, with the output a console block shows for each."""
    lines = block.text.splitlines()
    if block.language in SHELL_LANGUAGES:
        return [Command(block, line.strip()) for line in logical_lines(lines)
                if line.strip() and not line.strip().startswith("#")]
    assert block.language == "console", block.language
    out: list[Command] = []
    k = 0
    while k < len(lines):
        line = lines[k]
        if not line.startswith("$ "):
            if out:
                out[-1].expected.append(line)
            elif line.strip():
                raise AssertionError(f"{block.where}: console output before any '$ ' command: {line!r}")
            k += 1
            continue
        text = line[2:]
        while text.rstrip().endswith("\\") and k + 1 < len(lines):
            k += 1
            text = text.rstrip()[:-1] + " " + lines[k].lstrip("> ").strip()
        out.append(Command(block, text.strip()))
        k += 1
    return out


def is_install(line: str) -> bool:
    return bool(INSTALL.match(line.strip()))


# ------------------------------------------------------------------------------------------- comparing output

TIME = re.compile(r"\b\d+(\.\d+)?(?= s\b)")
RATE = re.compile(r"\b\d+(\.\d+)? (cells|MB|kB|GB)/s\b")
COMPILING = re.compile(r"; <t> s compiling kernels, not counted")


def normalised(line: str) -> str:
    """A line with whitespace collapsed and times and rates replaced by markers (they change run to run)."""
    line = " ".join(line.split())
    line = RATE.sub(lambda m: f"<r> {m.group(2)}/s", line)
    line = TIME.sub("<t>", line)
    return COMPILING.sub("", line)


def pattern(expected: str) -> re.Pattern[str]:
    """An expected line as a regular expression: ``...`` is any text, the rest literal."""
    parts = normalised(expected).split("...")
    return re.compile(".*".join(re.escape(p) for p in parts))


def missing_lines(expected: list[str], actual: str) -> list[str]:
    """The shown lines that the actual output lacks."""
    got = [normalised(line) for line in actual.splitlines()]
    missing = []
    for line in expected:
        if not line.strip() or line.strip() == "...":
            continue
        want = pattern(line)
        if not any(want.fullmatch(g) for g in got):
            missing.append(line)
    return missing


def expects_error(expected: list[str]) -> bool:
    return any(line.startswith("climio: error") for line in expected)


# -------------------------------------------------------------------------------------------------- running


def workdir(path: Path) -> Path:
    """A directory that looks like a clone's root: the shipped data (each file linked, so that nothing written
    there reaches the repository), examples/ and .venv/."""
    path.mkdir(parents=True, exist_ok=True)
    data = ROOT / "tests" / "data"
    for source in data.rglob("*"):
        target = path / "tests" / "data" / source.relative_to(data)
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source)
    for name in ("examples", ".venv"):
        (path / name).symlink_to(ROOT / name)
    return path


def environment() -> dict[str, str]:
    """The reader's shell: climio's environment first on PATH, Slurm's two commands standing in as this
    machine's mpiexec (docs_bin/), and Open MPI allowed to run as root and oversubscribe (as the Makefile sets)."""
    from climio.core.mpi import mpiexec_command

    _, env = mpiexec_command(1, ["true"])
    env = dict(env)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), str(HERE / "docs_bin"), env.get("PATH", "")])
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    env.pop("CLIMIO_DEBUG", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass
class Outcome:
    returncode: int | str
    output: str  # stdout then stderr


def climio_call(line: str, cwd: Path) -> tuple[int | None, list[str]] | None:
    """``(ranks, argv)`` of a plain climio command (``climio ...`` or ``mpiexec -n N climio ...``) that can run in
    a batch with others, globs expanded as the shell would; None for anything that needs a shell."""
    if SHELL_SYNTAX.search(line.split(" #")[0]):
        return None
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    ranks = None
    if words[:2] == ["mpiexec", "-n"] and len(words) > 3 and words[2].isdigit():
        ranks, words = int(words[2]), words[3:]
    if not words or words[0] != "climio":
        return None
    argv: list[str] = []
    for word in words[1:]:
        if any(c in word for c in "*?["):
            found = sorted(os.path.relpath(p, cwd) for p in glob.glob(str(cwd / word)))
            argv.extend(found or [word])
        else:
            argv.append(word)
    return ranks, argv


def run_shell(line: str, cwd: Path, env: dict[str, str], timeout: float = COMMAND_TIMEOUT) -> Outcome:
    """Run one command line in bash; what it exports (``export``, ``source .venv/bin/activate``) stays in ``env``
    for the page's later commands, as in the reader's shell."""
    with tempfile.NamedTemporaryFile(prefix="docs-env-") as dump:
        script = f"{line}\n__status=$?\nenv -0 > {shlex.quote(dump.name)}\nexit $__status\n"
        try:
            done = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired as err:
            return Outcome(f"timed out after {timeout:.0f} s (a hang?)", f"{err.stdout or ''}{err.stderr or ''}")
        after = Path(dump.name).read_bytes().decode(errors="replace")
    if after:
        env.clear()
        env.update(item.split("=", 1) for item in after.split("\0") if "=" in item)
    return Outcome(done.returncode, done.stdout + done.stderr)


def run_climio_batch(calls: list[list[str]], ranks: int | None, cwd: Path, env: dict[str, str],
                     scratch: Path) -> list[Outcome]:
    """Several climio commands in one launch (tests/helpers/climio_batch.py), run from ``cwd``."""
    sys.path.insert(0, str(HERE))
    from climio_batch import run_table

    saved, before = os.getcwd(), dict(os.environ)
    os.chdir(cwd)
    os.environ.update(env)
    try:
        results = run_table(calls, ranks, scratch, timeout=COMMAND_TIMEOUT)
    finally:
        os.chdir(saved)
        os.environ.clear()
        os.environ.update(before)
    return [Outcome(r.returncode, r.stdout + r.stderr) for r in results]


class PythonSession:
    """One interpreter (tests/helpers/docs_python.py) that runs a page's Python blocks in order."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([sys.executable, str(HERE / "docs_python.py")], cwd=cwd, env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        start_new_session=True)

    def run(self, code: str, name: str, timeout: float = COMMAND_TIMEOUT) -> Outcome:
        return self._ask({"code": code, "name": name}, timeout)

    def climio(self, argv: list[str], env: dict[str, str], timeout: float = COMMAND_TIMEOUT) -> Outcome:
        """One plain climio command line, run in this interpreter (no start-up of its own)."""
        return self._ask({"climio": argv, "env": env}, timeout)

    def _ask(self, request: dict, timeout: float) -> Outcome:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            self.close()
            return Outcome(f"timed out after {timeout:.0f} s (a hang?)", "")
        reply = self.process.stdout.readline()
        if not reply:
            return Outcome(f"the interpreter ended (status {self.process.wait()})", "")
        answer = json.loads(reply)
        return Outcome(answer.get("status", 0 if answer["ok"] else 1), answer["output"])

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, 9)
            except ProcessLookupError:
                pass
            self.process.wait()


@dataclass
class Report:
    """What running a page found: a list of failures (empty: every example did what the page says)."""

    page: str
    failures: list[str] = field(default_factory=list)
    commands: int = 0
    python_blocks: int = 0
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timings: list[tuple[str, float]] = field(default_factory=list)  # (what ran, seconds): launches, blocks


def check(report: Report, what: str, outcome: Outcome, expected: list[str], where: str) -> None:
    want_error = expects_error(expected)
    if want_error and outcome.returncode != 2:
        report.failures.append(f"{where}: `{what}` should fail with status 2 as shown, got {outcome.returncode}:\n"
                               f"{outcome.output[-3000:]}")
        return
    if not want_error and outcome.returncode != 0:
        report.failures.append(f"{where}: `{what}` failed ({outcome.returncode}):\n{outcome.output[-3000:]}")
        return
    missing = missing_lines(expected, outcome.output)
    if missing:
        report.failures.append(f"{where}: `{what}` does not print what the page shows; missing:\n  "
                               + "\n  ".join(missing) + f"\nit printed:\n{outcome.output[-3000:]}")


def run_page(page: Path, directory: Path) -> Report:
    """Run every example of ``page`` in order in ``directory`` (made to look like a clone's root)."""
    start = time.monotonic()
    cwd = workdir(directory / "root")
    env = environment()
    scratch = directory / "batch"
    page_blocks = blocks(page)
    report = Report(str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page))
    session: PythonSession | None = None
    pending: list[Command] = []  # batchable climio commands waiting for their launch

    def flush() -> None:
        """Run the pending climio commands: plain ones in the page's interpreter (as climio_batch runs a table,
        without a start-up each), benchmarks (which launch mpiexec themselves) and consecutive ones with the
        same rank count in a launch of their own."""
        nonlocal session
        while pending:
            from climio_batch import _layer  # noqa: PLC0415

            first = climio_call(pending[0].line, cwd)
            assert first is not None
            if first[0] is None and first[1][:1] != ["bench"] and _layer(first[1]) == "ompio":
                command = pending.pop(0)
                if session is None:
                    session = PythonSession(cwd, env)
                began = time.monotonic()
                outcome = session.climio(first[1], env)
                report.timings.append((f"climio {' '.join(first[1])[:50]} (in the page's interpreter)",
                                       time.monotonic() - began))
                check(report, command.line, outcome, command.expected, command.block.where)
                report.commands += 1
                continue
            group = []
            for command in pending:
                call = climio_call(command.line, cwd)
                assert call is not None
                if call[0] != first[0] or _layer(call[1]) != _layer(first[1]) or \
                        (first[0] is None and call[1][:1] != ["bench"]):
                    break
                group.append((command, call[1]))
            del pending[:len(group)]
            began = time.monotonic()
            outcomes = run_climio_batch([argv for _, argv in group], first[0], cwd, env,
                                        scratch / f"launch{report.commands}")
            report.timings.append((f"{len(group)} climio command(s) on {first[0] or 1} rank(s)",
                                   time.monotonic() - began))
            for (command, _), outcome in zip(group, outcomes):
                check(report, command.line, outcome, command.expected, command.block.where)
                report.commands += 1

    sys.path.insert(0, str(HERE))
    try:
        for k, block in enumerate(page_blocks):
            if block.marker == "file":
                flush()
                target = cwd / str(block.argument)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.text)
                continue
            if block.language not in RUN_LANGUAGES or block.marker == "output":
                continue
            if block.marker == "install":
                report.skipped.extend(c.line for c in commands(block))
                continue
            if block.language == "python":
                flush()
                if session is None:
                    session = PythonSession(cwd, env)
                after = page_blocks[k + 1] if k + 1 < len(page_blocks) else None
                shown = after.text.splitlines() if after is not None and after.marker == "output" else []
                began = time.monotonic()
                outcome = session.run(block.text, f"{report.page}:{block.line}")
                report.timings.append((f"python block {block.where}", time.monotonic() - began))
                report.python_blocks += 1
                check(report, "python block", outcome, shown, block.where)
                continue
            for command in commands(block):
                if climio_call(command.line, cwd) is not None:
                    pending.append(command)
                    continue
                flush()
                began = time.monotonic()
                outcome = run_shell(command.line, cwd, env)
                report.timings.append((command.line[:60], time.monotonic() - began))
                check(report, command.line, outcome, command.expected, block.where)
                report.commands += 1
        flush()
    finally:
        if session is not None:
            session.close()
        shutil.rmtree(scratch, ignore_errors=True)
    report.seconds = time.monotonic() - start
    return report
