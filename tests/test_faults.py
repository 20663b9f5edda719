"""Faults of the machine, not of the input: a full disk and a file-size limit, in every mode, both MPI-IO layers,
1-3 ranks. Every case ends with exit status 1, one line, nothing published, an old output intact, no temporary
file left, and no hang (each run has a timeout)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import climio, climio_argv, leftovers, run, small_tmpfs

from climio.core.mpi import mpiexec_command

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch  # noqa: E402

MODES = ("serial", "hdf5", "cdf2", "cdf5")
SHAPE = "2000,96,144"  # 110 MB of float32: more than the 50 MB file system below holds
OLD = b"the previous output, which a failed run must leave as it was"


@pytest.fixture(scope="module")
def small_disk() -> Iterator[Path]:
    """A 50 MB tmpfs."""
    with small_tmpfs("50m") as mount:
        yield mount


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    """The runs that need no process of their own (no fault of the machine, no limit on the process): one table per
    rank count (helpers/climio_batch.py: one launch each, every case captured as a process of its own), each in a
    directory of its own (``runs.folder(name)``)."""
    b = Batch(tmp_path_factory.mktemp("runs"))
    b.add("field", ["gen", "cmip", b.folder("field") / "pr.nc", "--shape", SHAPE], 2)
    tmp_path = b.folder("trace")
    b.add("trace", ["--trace", tmp_path, "gen", "cmip", tmp_path / "g.nc", "--shape", "10,4,8"], 2)
    source = b.folder("plot") / "pr.nc"
    b.add("plot-source", ["gen", "cmip", source, "--shape", "2400,5,7"])
    b.add("plot-warm", ["eva", source, b.folder("plot-warm") / "warm.nc"])
    return b


@pytest.fixture(scope="module")
def field(runs: Batch) -> Path:
    result = runs.result("field")  # gen cmip pr.nc --shape SHAPE at 2 ranks
    assert result.returncode == 0, result.stderr
    return runs.folder("field") / "pr.nc"


def one_fault_line(result: subprocess.CompletedProcess[str], *causes: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("climio")]
    assert len(lines) == 1 and lines[0].startswith("climio: error"), result.stderr
    assert any(cause in lines[0] for cause in causes), lines[0]


def nothing_published(directory: Path, target: Path) -> None:
    assert target.read_bytes() == OLD
    assert leftovers(str(directory)) == []
    assert sorted(p.name for p in directory.iterdir()) == [target.name]


@pytest.mark.parametrize("layer, nranks", [("ompio", 1), ("ompio", 3), ("romio", 2)])
@pytest.mark.parametrize("mode", MODES)
def test_full_disk_gen(small_disk: Path, mode: str, layer: str, nranks: int) -> None:
    target = small_disk / "g.nc"
    target.write_bytes(OLD)
    try:
        result = climio("--mpi-io", layer, "gen", "cmip", str(target), "--shape", SHAPE, "--mode", mode, "-O",
                        nranks=nranks, timeout=90)
        one_fault_line(result, "no space left on device", "No space left on device")
        nothing_published(small_disk, target)
    finally:
        for entry in small_disk.iterdir():
            entry.unlink()


@pytest.mark.parametrize("mode, nranks", [("serial", 3), ("hdf5", 3), ("cdf2", 1), ("cdf5", 3)])
def test_full_disk_subset_and_eva(small_disk: Path, field: Path, mode: str, nranks: int) -> None:
    target = small_disk / "s.nc"
    target.write_bytes(OLD)
    try:
        result = climio("subset", "--mode", mode, "-v", "pr", "-d", "lat,-60.,60.", str(field), str(target), "-O",
                        nranks=nranks, timeout=90)
        one_fault_line(result, "no space left on device", "No space left on device")
        nothing_published(small_disk, target)
        filler = small_disk / "filler"  # leave less room than eva's 0.3 MB output
        subprocess.run(["fallocate", "-l", str(shutil.disk_usage(small_disk).free - 64 * 1024), str(filler)],
                       check=True)
        result = climio("eva", str(field), str(target), "--mode", mode, "-O", nranks=nranks, timeout=120)
        one_fault_line(result, "no space left on device", "No space left on device")
        filler.unlink()
        nothing_published(small_disk, target)
    finally:
        for entry in small_disk.iterdir():
            entry.unlink()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nranks", [1, 2])
def test_file_size_limit(tmp_path: Path, mode: str, nranks: int) -> None:
    """``ulimit -f``: writes beyond the limit fail with 'File too large' (Python ignores SIGXFSZ)."""
    target = tmp_path / "g.nc"
    target.write_bytes(OLD)
    limit = 50 * 2**20

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    argv = climio_argv("gen", "cmip", str(target), "--shape", SHAPE, "--mode", mode, "-O")
    env = dict(os.environ)
    if nranks > 1:
        argv, env = mpiexec_command(nranks, argv)  # the ranks inherit mpiexec's limit
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=90, preexec_fn=limited)
    one_fault_line(result, "file too large", "File too large")
    nothing_published(tmp_path, target)


def test_tracebacks_only_on_request() -> None:
    """An unexpected failure is one line; CLIMIO_DEBUG=1 adds the traceback for a bug report."""
    helper = Path(__file__).parent / "helpers" / "fail_on_rank.py"
    plain = run([sys.executable, str(helper), "0"], nranks=2, timeout=60)
    assert plain.returncode == 1 and "Traceback" not in plain.stderr, plain.stderr
    debug = run([sys.executable, str(helper), "0"], nranks=2, timeout=60, env_extra={"CLIMIO_DEBUG": "1"})
    assert debug.returncode == 1 and "Traceback" in debug.stderr, debug.stderr


def test_a_plot_that_cannot_be_written_publishes_nothing(runs: Batch, tmp_path: Path) -> None:
    """eva draws its plot before renaming its output: a plot over the file-size limit leaves neither file."""
    source = runs.folder("plot") / "pr.nc"
    assert runs.result("plot-source").returncode == 0  # gen cmip pr.nc --shape 2400,5,7, plainly
    out, png = tmp_path / "out" / "eva.nc", tmp_path / "out" / "eva.png"
    out.parent.mkdir()
    # A first run without the limit compiles eva's kernels into numba's cache (one directory per version of the
    # sources): run first under the limit, the cache files and MPI's start-up files would hit it before the plot.
    assert runs.result("plot-warm").returncode == 0  # eva pr.nc warm.nc, plainly, in the same table
    limit = 30 * 1024  # the analysis (5 kB) fits, the plot (37 kB) does not

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    # Under pytest -n 2 (another file's MPI jobs beside this one) PMIx's shared-memory store (gds ds21) was seen to
    # write segment files beyond the limit: the singleton's MPI_Init died of SIGXFSZ before any plot. Its
    # in-memory store (gds hash) leaves the limit to the files climio writes.
    env = {**os.environ}
    env.setdefault("PMIX_MCA_gds", "hash")
    result = subprocess.run(climio_argv("eva", str(source), str(out), "--plot", str(png)), capture_output=True,
                            text=True, timeout=120, preexec_fn=limited, env=env)
    one_fault_line(result, "--plot: cannot write", "file too large")
    assert list(out.parent.iterdir()) == []


def test_an_unwritable_trace_is_refused_before_any_work(runs: Batch) -> None:
    tmp_path = runs.folder("trace")
    target = tmp_path / "g.nc"
    result = runs.result("trace")  # --trace DIR gen cmip DIR/g.nc --shape 10,4,8 at 2 ranks
    assert result.returncode == 2 and f"--trace '{tmp_path}' is a directory" in result.stderr
    assert not target.exists() and leftovers(str(tmp_path)) == []
