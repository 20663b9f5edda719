"""Shared helpers: run the real ``climio`` command, as one process or under mpiexec.

Every MPI run goes through ``climio.core.mpi.mpiexec_command`` (the same code the
benchmarks use), so root and oversubscription flags are handled in one place,
and every run has a timeout: a hang fails the test instead of hanging CI.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from climio.core.mpi import mpiexec_command

RUN_TIMEOUT = 180

# Real model output, meshes and daily records (tests/data/README.md gives each file's source and licence).
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session", autouse=True)
def runtime_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """climio records its temporary files in the user's runtime folder, and any run removes what killed runs
    left, with a line on stderr: the tests have a folder of their own, so that no other run on the machine (nor
    another worker's kills) adds a line to a test's output."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_RUNTIME_DIR", str(tmp_path_factory.mktemp("runtime")))
        yield


def climio_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "climio", *args]


def run(argv: list[str], nranks: int | None = None, timeout: float = RUN_TIMEOUT,
        cwd: str | None = None, env_extra: dict[str, str] | None = None,
        servers: int = 0) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` plainly (nranks None) or under mpiexec, with ``servers`` climio serve ranks as the last
    application (``mpiexec -n N PROGRAM : -n S climio serve``); fail the test on timeout."""
    env = dict(os.environ)
    if nranks is not None:
        argv, env = mpiexec_command(nranks, argv)
        argv += [":", "-n", str(servers), *climio_argv("serve")] if servers else []
    env.update(env_extra or {})
    try:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"timed out after {timeout} s (hang?): {' '.join(argv)}\n{err.stderr}")


def climio_pkg_config(package: str = "climio") -> list[str]:
    """``pkg-config --cflags --libs climio`` of this environment's C API (``make install`` builds it), or of its
    ``pio`` (PIO2's API on climio)."""
    where = Path(sys.prefix) / "lib" / "pkgconfig"
    out = subprocess.run(["pkg-config", "--cflags", "--libs", package],
                         env={**os.environ, "PKG_CONFIG_PATH": str(where)}, capture_output=True, text=True)
    assert out.returncode == 0, f"{package}.pc not installed in {where} (make install): {out.stderr}"
    return out.stdout.split()


def climio(*args: str, nranks: int | None = None, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return run(climio_argv(*args), nranks, timeout)


def leftovers(directory: str) -> list[str]:
    """Temporary outputs left in ``directory`` (a finished run leaves none)."""
    return [f for f in os.listdir(directory) if f.endswith(".climio-tmp")]


# libevent's complaint (inside Open MPI's launcher) about a descriptor an aborted rank already closed; it can land
# in the middle of a rank's line, which stays whole once it is taken out
LIBEVENT_WARNING = re.compile(r"\[warn\] Epoll [A-Z]+\(\d+\) on fd \d+ failed\.[^\n]*?: [A-Za-z ]+\n?")


def own_lines(stderr: str) -> list[str]:
    """stderr without Open MPI's banners (between lines of dashes), its ``[host:pid]`` notes, libevent's warnings
    and blank lines."""
    lines, banner = [], False
    for line in LIBEVENT_WARNING.sub("", stderr).splitlines():
        if re.fullmatch(r"-{20,}", line.strip()):
            banner = not banner
        elif not banner and line.strip() and not re.match(r"\[[^\]]+:\d+\] ", line):
            lines.append(line)
    return lines


def one_error_line(result: subprocess.CompletedProcess[str], *needles: str, status: int = 2) -> str:
    """The run ended with ``status``, one line ``climio: error...`` holding every needle, and no traceback."""
    assert result.returncode == status, (result.returncode, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("climio: error")]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    assert "Traceback" not in result.stderr
    return errors[0]


def richardson_hessian(f: Callable[[np.ndarray], float], p0: np.ndarray, h0: np.ndarray) -> np.ndarray:
    """The Hessian of f at p0 by central differences at steps h0, h0/2, h0/4, Richardson-extrapolated twice
    (error O(h^6)): an independent reference for the fits' exact Hessians."""
    size = p0.size

    def differences(h: np.ndarray) -> np.ndarray:
        out = np.empty((size, size))
        for i in range(size):
            for j in range(size):
                ei, ej = np.eye(size)[i] * h[i], np.eye(size)[j] * h[j]
                out[i, j] = (f(p0 + ei + ej) - f(p0 + ei - ej) - f(p0 - ei + ej) + f(p0 - ei - ej)) / (4 * h[i] * h[j])
        return out

    d = [differences(h0 / 2**k) for k in range(3)]
    r = [(4 * d[k + 1] - d[k]) / 3 for k in range(2)]
    return (16 * r[1] - r[0]) / 15


def level_factor(xi: float, big_l: float) -> tuple[float, float]:
    """The return level's factor g(xi) = (exp(xi L) - 1)/xi and g'(xi), written out independently of the
    kernels (series for g' where |xi L| is small)."""
    x = xi * big_l
    g = big_l if x == 0 else math.expm1(x) / xi
    if abs(x) < 1e-2:  # g' = L^2 sum_k k x^(k-1)/(k+1)!
        g1 = big_l**2 * sum(k * x ** (k - 1) / math.factorial(k + 1) for k in range(1, 9))
    else:
        g1 = big_l**2 * (x * math.exp(x) - math.expm1(x)) / x**2
    return g, g1


def compile_programs(out: Path, sources: list[tuple[str, str, Path]], package: str = "climio",
                     extra: Sequence[str] = ()) -> dict[str, Path]:
    """Compile ``(name, compiler, source)`` as a model would be built: the system's MPI compilers, ``extra`` flags
    and ``pkg-config --cflags --libs climio`` (or ``pio``), side by side (each in a directory of its own, as
    Fortran writes its module files where it runs)."""
    flags = climio_pkg_config(package)
    jobs = {}
    for name, compiler, source in sources:
        (out / f"{name}.build").mkdir()
        jobs[name] = (compiler, source, subprocess.Popen([compiler, "-Wall", *extra, str(source), "-o", str(out / name),
                                                          *flags],
                                                         cwd=out / f"{name}.build", stdout=subprocess.PIPE,
                                                         stderr=subprocess.PIPE, text=True))
    built = {}
    for name, (compiler, source, job) in jobs.items():
        _, errors = job.communicate(timeout=300)
        assert job.returncode == 0, f"{compiler} {source.name}: {errors}"
        built[name] = out / name
    return built


@contextlib.contextmanager
def small_tmpfs(size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (e.g. ``50m``; needs root, as in CI and on the development VM), or the test is skipped."""
    mount = Path(tempfile.mkdtemp(prefix="climio-full-"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        mount.rmdir()
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.decode().strip()})")
    try:
        yield mount
    finally:  # a rank that MPI_Abort ended may hold the mount a moment longer: wait for it, then let go lazily
        for _ in range(50):
            if subprocess.run(["umount", str(mount)], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        else:
            subprocess.run(["umount", "--lazy", str(mount)], check=True)
        mount.rmdir()
