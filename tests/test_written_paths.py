"""Every path a command writes (its output, ``--trace``, ``--plot``) follows one rule, checked before any work:
never an input (the covariate included; by any spelling, link or hard link), never another of its outputs,
never an existing file without ``-O``. Inputs that are not regular files are refused before anything opens
them. Each refusal is one line and exit status 2, at 1 and 2 ranks, and leaves every file as it was.

The refusals run as one table per rank count (``helpers/run_many.py``: one MPI start-up for all of them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from conftest import climio, climio_argv, leftovers, one_error_line, run

RUN_MANY = Path(__file__).parent / "helpers" / "run_many.py"
sys.path.insert(0, str(RUN_MANY.parent))
from run_table import run_table  # noqa: E402


def md5s(directory: Path) -> dict[str, str]:
    """Every file's md5 (links by what they name, FIFOs by their kind) in ``directory``, recursively."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_fifo():
            out[str(path)] = "fifo"
        elif path.is_symlink():
            out[str(path)] = f"-> {os.readlink(path)}"
        elif path.is_file():
            out[str(path)] = hashlib.md5(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An input, a covariate series, an unrelated existing file, a link and a hard link to the input, a FIFO,
    and an empty directory for outputs."""
    d = tmp_path_factory.mktemp("paths")
    data = d / "in.nc"
    assert climio("gen", "cmip", str(data), "--shape", "800,3,4").returncode == 0
    cov = d / "gmst.nc"
    with netCDF4.Dataset(cov, "w") as ds:
        ds.createDimension("time", None)
        time = ds.createVariable("time", "f8", ("time",))
        time.units, time.calendar = "days since 1950-01-01", "standard"
        time[:] = 182.5 + 365.0 * np.arange(20)
        ds.createVariable("tas", "f4", ("time",))[:] = 14.0 + 0.02 * np.arange(20)
    (d / "old.nc").write_bytes(b"an unrelated file the user keeps\n")
    os.symlink("in.nc", d / "link.nc")
    os.link(data, d / "hard.nc")
    os.mkfifo(d / "fifo.nc")
    (d / "o").mkdir()
    return {"d": d, "in": data, "cov": cov, "old": d / "old.nc", "link": d / "link.nc", "hard": d / "hard.nc",
            "fifo": d / "fifo.nc", "out": d / "o" / "out.nc", "png": d / "o" / "map.png"}


def refusals(f: dict[str, Path]) -> list[tuple[list[str], str]]:
    """(command line, what its one error line must say): the product {output, --trace, --plot} x {an input,
    another output, an existing file without -O} for every command, and inputs that are not files."""
    i, cov, old, out, png = (str(f[k]) for k in ("in", "cov", "old", "out", "png"))
    d = f["d"]
    covariate = ["--method", "gev", "--covariate", f"{cov}:tas"]
    commands = {  # the command line of each command, writing `out`, and what it reads
        "subset": ["subset", "-v", "pr", i, out],
        "eva": ["eva", i, out, *covariate],
        "gen cmip": ["gen", "cmip", out, "--shape", "10,4,8"],
        "gen geodesic": ["gen", "geodesic", out, "--level", "1"],
    }
    cases: list[tuple[list[str], str]] = []
    for name, argv in commands.items():
        def swap(target: str, argv: list[str] = argv) -> list[str]:
            return [target if a == out else a for a in argv]

        # output x an existing file without -O; --trace x another output (the command's own); --trace x existing
        cases.append((swap(old), f"output '{old}' exists: pass --overwrite (-O)"))
        cases.append((["--trace", out, *argv, "-O"], f"--trace '{out}' is also the output '{out}'"))
        cases.append((["--trace", old, *argv], f"--trace '{old}' exists: pass --overwrite (-O)"))
        if name in ("subset", "eva"):  # commands with inputs: output and --trace x each input, any spelling
            for spelled in (i, str(f["link"]), str(f["hard"]), f"{d}/./in.nc"):
                cases.append((swap(spelled) + ["-O"], f"output '{spelled}' is the input"))
            cases.append((["--trace", i, *argv, "-O"], f"--trace '{i}' is the input '{i}'"))
    # eva reads a covariate: no output may be it
    eva = commands["eva"]
    cases += [
        ([a if a != out else cov for a in eva] + ["-O"], f"output '{cov}' is the input '{cov}'"),
        (["--trace", cov, *eva, "-O"], f"--trace '{cov}' is the input '{cov}'"),
        # --plot x an input (data, covariate, a link to the data), another output, an existing file without -O
        ([*eva, "--plot", i, "-O"], f"--plot '{i}' is the input '{i}'"),
        ([*eva, "--plot", cov, "-O"], f"--plot '{cov}' is the input '{cov}'"),
        ([*eva, "--plot", str(f["link"]), "-O"], f"--plot '{f['link']}' is the input"),
        ([*eva, "--plot", out], f"--plot '{out}' is also the output '{out}'"),
        ([*eva, "--plot", out, "-O"], f"--plot '{out}' is also the output '{out}'"),
        (["--trace", png, *eva, "--plot", png, "-O"], f"--trace '{png}' is also the --plot '{png}'"),
        ([*eva, "--plot", str(old)], f"--plot '{old}' exists: pass --overwrite (-O)"),
        # commands without inputs or -O: an existing trace is kept
        (["--trace", old, "info"], f"--trace '{old}' exists: remove it or choose another path"),
        (["--trace", old, "bench", "io", "--shape", "4,4,4", "--reps", "1", "--modes", "cdf5", "--dir", str(d)],
         f"--trace '{old}' exists: remove it or choose another path"),
        # inputs that are not regular files: refused before anything opens them (opening a FIFO blocks)
        (["subset", "-v", "pr", str(f["fifo"]), out], f"input file '{f['fifo']}' is a FIFO"),
        (["eva", str(f["fifo"]), out], f"input file '{f['fifo']}' is a FIFO"),
        (["eva", i, out, "--method", "gev", "--covariate", f"{f['fifo']}:tas"], "is a FIFO"),
    ]
    return cases


@pytest.mark.parametrize("nranks", [None, 2])
def test_no_command_writes_over_an_input_another_output_or_an_old_file(files: dict[str, Path], tmp_path: Path,
                                                                      nranks: int | None) -> None:
    before = md5s(files["d"])
    cases = refusals(files)
    table, results = tmp_path / "cases.json", tmp_path / "results.json"
    table.write_text(json.dumps([argv for argv, _ in cases]))
    done = run([sys.executable, str(RUN_MANY), str(table), str(results)], nranks, timeout=240)
    assert done.returncode == 0, done.stderr
    outcomes = json.loads(results.read_text())
    assert len(outcomes) == len(cases)
    for (argv, needle), outcome in zip(cases, outcomes):
        assert outcome["status"] == 2, (argv, outcome)
        lines = outcome["stderr"].splitlines()
        assert len(lines) == 1 and lines[0].startswith("climio: error: ") and needle in lines[0], (argv, lines)
    assert md5s(files["d"]) == before
    assert list(files["out"].parent.iterdir()) == [] and leftovers(str(files["d"])) == []


def test_successful_runs_leave_their_inputs_alone(files: dict[str, Path], tmp_path: Path) -> None:
    """A trace and a map beside a subset and an analysis, replaced with -O: every input keeps its bytes."""
    before = md5s(files["d"])
    trace, out, png = tmp_path / "t.json", tmp_path / "s.nc", tmp_path / "m.png"
    for _ in range(2):  # the second run replaces all three (-O)
        done = climio("--trace", str(trace), "subset", "-v", "pr", str(files["link"]), str(out), "-O", nranks=2)
        assert done.returncode == 0, done.stderr
        assert "job" in json.loads(trace.read_text())["summary"]
    done = climio("--trace", str(trace), "eva", str(files["hard"]), str(tmp_path / "e.nc"), "--plot", str(png),
                  "-O", nranks=2)
    assert done.returncode == 0, done.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and json.loads(trace.read_text())["nranks"] == 2
    assert md5s(files["d"]) == before and leftovers(str(tmp_path)) == []


def test_out_of_memory_is_one_line_not_a_bug(tmp_path: Path) -> None:
    """A field that cannot fit under the address-space limit: one line saying so and how much, exit 1."""
    huge = tmp_path / "huge.nc"
    with netCDF4.Dataset(huge, "w") as ds:  # 12 GB declared, nothing stored (every chunk is fill)
        ds.createDimension("time", None)
        ds.createDimension("lat", 1000)
        ds.createDimension("lon", 1000)
        time = ds.createVariable("time", "f8", ("time",))
        time.units = "days since 2000-01-01"
        time[:] = np.arange(3000)
        ds.createVariable("pr", "f4", ("time", "lat", "lon"), chunksizes=(1, 1000, 1000))

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))

    result = subprocess.run(climio_argv("eva", str(huge), str(tmp_path / "e.nc"), "--scheme", "root"),
                            capture_output=True, text=True, timeout=120, preexec_fn=limited)
    one_error_line(result, "out of memory", "address-space limit of 3072 MiB", "unable to allocate 11.2 GiB",
                   status=1)
    assert "bug" not in result.stderr and sorted(os.listdir(tmp_path)) == ["huge.nc"]


def test_a_negative_count_in_a_cdf5_header_is_refused(files: dict[str, Path], tmp_path: Path) -> None:
    """A fuzzed CDF-5 header whose dimension id is negative (it indexed from the end: IndexError, 'a bug')."""
    data = bytearray(files["in"].read_bytes())
    at = data.index(b"\x00\x00\x00\x00\x00\x00\x00\x02pr\x00\x00") + 12  # pr's name, then its rank
    assert int.from_bytes(data[at:at + 8], "big") == 3
    data[at + 8:at + 16] = (-100).to_bytes(8, "big", signed=True)  # its first dimension id
    bad = tmp_path / "bad.nc"
    bad.write_bytes(data)
    commands = (["subset", "-v", "pr"], ["eva"])  # both in one process (helpers/run_table.py)
    for result in run_table(run, [[*command, str(bad), str(tmp_path / "o.nc")] for command in commands], tmp_path):
        one_error_line(result, f"input file '{bad}' has an invalid netCDF classic header", "negative count -100")


def test_kernels_run_with_no_writable_cache_anywhere(files: dict[str, Path], tmp_path: Path) -> None:
    """A read-only install and no writable home: numba refused to define the cached kernels ('cannot cache
    function', reported as a bug); they now run compiled in memory. The package is mounted read-only in a
    private mount namespace (unshare, as root)."""
    import climio as package

    if os.geteuid() != 0 or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.fail("this test needs root and unshare -m (mount namespaces), as the project's CI has")
    copy = tmp_path / "ro"
    copy.mkdir()
    subprocess.run(["cp", "-r", str(Path(package.__file__).parent), str(copy)], check=True)
    script = (f"mount --bind {copy} {copy} && mount -o remount,bind,ro {copy} && "
              f"exec {sys.executable} -m climio eva {files['in']} {tmp_path / 'e.nc'}")
    env = {**os.environ, "HOME": "/proc/none", "XDG_CACHE_HOME": "/proc/none", "PYTHONPATH": str(copy)}
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("CLIMIO_NUMBA_CACHE_ROOT", None)
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300,
                            env=env)
    assert result.returncode == 0, result.stderr
    assert "GPD fits of pr at 12 cells" in result.stdout
    # nothing cached: every kernel is compiled, which the run says up front and leaves out of its cells/s
    assert result.stderr.count("climio: compiling eva's kernels") == 1
    assert re.search(r"; \d+\.\d s compiling kernels, not counted\) on 1 rank", result.stdout), result.stdout


def test_a_refused_benchmark_makes_no_results_directory(tmp_path: Path) -> None:
    """bench model under mpiexec (it starts its own) is refused before its --out directory is made."""
    out = tmp_path / "results"
    result = climio("bench", "model", "--grid", "3x3", "--out", str(out), nranks=2)
    one_error_line(result, "starts its own mpiexec runs")
    assert not out.exists()
