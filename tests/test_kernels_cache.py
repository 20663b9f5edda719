"""numba's cache of climio's kernels is keyed on the whole package's sources (``climio.core.kernels``): a change
to any file, not only the kernel's own, starts a fresh cache, so no kernel runs stale inlined code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from climio.core import kernels


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "eva").mkdir()
    (tmp_path / "eva" / "gev.py").write_text("A = 1\n")
    (tmp_path / "eva" / "trend.py").write_text("B = 2\n")
    (tmp_path / "eva" / "__pycache__").mkdir()
    monkeypatch.setattr(kernels, "PACKAGE", tmp_path)
    kernels.source_digest.cache_clear()
    yield tmp_path
    kernels.source_digest.cache_clear()


def test_any_source_file_changes_the_version(package: Path) -> None:
    first = kernels.source_digest()
    kernels.source_digest.cache_clear()
    assert kernels.source_digest() == first  # nothing changed
    other = package / "eva" / "gev.py"  # a file the kernel inlines from, not the kernel's own
    other.write_text("A = 10\n")
    stat = other.stat()
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    kernels.source_digest.cache_clear()
    second = kernels.source_digest()
    assert second != first
    (package / "eva" / "__pycache__" / "x.py").write_text("")  # caches do not count
    kernels.source_digest.cache_clear()
    assert kernels.source_digest() == second
    (package / "eva" / "new.py").write_text("")
    kernels.source_digest.cache_clear()
    assert kernels.source_digest() != second


def test_the_cache_directory_and_children(tmp_path: Path) -> None:
    """A process points numba at <root>/<digest>; the processes it starts (mpiexec's ranks) inherit the same."""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "CLIMIO_NUMBA_CACHE_ROOT")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "root")
    code = ("import os, subprocess, sys; from climio.eva import intervals; intervals.level_factor(0.1, 2.0); import numba; "
            "print(numba.config.CACHE_DIR); print(os.environ['NUMBA_CACHE_DIR']); "
            "print(subprocess.run([sys.executable, '-c', 'import climio.eva, os; print(os.environ[\"NUMBA_CACHE_DIR\"])'],"
            " capture_output=True, text=True).stdout.strip())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    want = str(tmp_path / "root" / kernels.source_digest())
    assert lines == [want, want, want]
    assert any(p.suffix == ".nbi" for p in Path(want).rglob("*"))  # the kernel was cached there


def test_a_cache_that_cannot_be_written_is_skipped(tmp_path: Path) -> None:
    """Under a file-size limit (as on a full disk) a kernel whose compiled code cannot be saved still runs and
    gives its answer; numba's temporary cache file is removed. Without climio's guard numba raises EFBIG."""
    import resource

    (tmp_path / "kernel.py").write_text("import numba\n\n\n@numba.njit(cache=True)\ndef twice(x):\n    return 2 * x\n")
    program = ("from climio.core.kernels import use_versioned_cache\n"
               "use_versioned_cache()\n"
               "import kernel\n"
               "print(kernel.twice(21))\n")

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))  # numba's cache files are larger

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    env.pop("CLIMIO_NUMBA_CACHE_ROOT", None)
    result = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120,
                            preexec_fn=limited, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "42", result.stderr
    assert not [p for p in (tmp_path / "cache").rglob("*") if ".tmp." in p.name]


def test_compilations_are_announced_once_and_timed() -> None:
    """A kernel numba has not cached is compiled inside the clock: announced at the first compilation only
    (nested ones included), its time counted once; a second call compiles nothing."""
    import numba

    @numba.njit
    def inner(x: float) -> float:
        return x + 1.0

    @numba.njit
    def outer(x: float) -> float:
        return inner(x) * 2.0

    said: list[str] = []
    with kernels.compile_clock(lambda: said.append("compiling")) as clock:
        assert outer(1.0) == 4.0
        assert outer(2.0) == 6.0
    assert said == ["compiling"] and clock.depth == 0 and clock.seconds > 0.0
    with kernels.compile_clock(lambda: said.append("again")) as again:
        assert outer(3.0) == 8.0
    assert said == ["compiling"] and again.seconds == 0.0
