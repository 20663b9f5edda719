"""climio with what ``pip install`` gives: netCDF4 from PyPI, whose wheel carries a serial netCDF-C and HDF5 and
neither PnetCDF nor parallel HDF5.

The environment is a plain virtual environment holding PyPI's netCDF4 wheel (the lock file's version), over this
environment's other packages (numpy, numba with its compiled kernels, and mpi4py, itself PyPI's wheel), so it is
ready in seconds; ``make check-pip`` builds one from PyPI alone with ``pip install .``. In it, on the shipped real
files, at one and two ranks: subset, eva and gen give exactly the full install's files (two ranks read each its
own part through its own netCDF-C handle, and rank 0 writes, saying so); a mode that needs a parallel library is
refused under mpiexec in one line naming it; ``climio info`` says what works.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from climio.core.mpi import mpiexec_command
from conftest import DATA, one_error_line, run
from helpers.ncdiff import diff_structure

ROOT = Path(__file__).resolve().parents[1]
RUN_MANY = Path(__file__).parent / "helpers" / "run_many.py"
REAL, CMIP, MESHES = DATA / "real", DATA / "cmip", DATA / "meshes"
NAM = sorted(REAL.glob("pr_NAM-22_*.nc"))
EC_EARTH = sorted(REAL.glob("tas_Amon_EC-EARTH_*.nc"))
CESM = REAL / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
RANKS = (1, 2)


def locked_version(package: str) -> str:
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.startswith(f"{package}=="):
            return line.split("==", 1)[1].strip()
    raise AssertionError(f"{package} is not in constraints.txt")


@pytest.fixture(scope="module")
def pip_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with PyPI's netCDF4 wheel, the rest of this environment behind it; its python (or
    ``$CLIMIO_PIP_PYTHON``, an environment built from PyPI alone: ``make check-pip``)."""
    given = os.environ.get("CLIMIO_PIP_PYTHON")
    python = Path(given) if given else overlay(tmp_path_factory.mktemp("pip") / "venv")
    flags = subprocess.run([str(python), "-c", "import netCDF4, climio; print(netCDF4.__file__, bool("
                            "netCDF4.__has_pnetcdf_support__), bool(netCDF4.__has_parallel4_support__))"],
                           capture_output=True, text=True, timeout=60)
    assert flags.returncode == 0, flags.stderr
    where, pnetcdf, parallel4 = flags.stdout.split()
    assert where.startswith(str(python.parents[1])) and pnetcdf == parallel4 == "False", flags.stdout
    return python


NUMERICS = ("numpy", "numba", "llvmlite")


@pytest.fixture(scope="module")
def tolerance(pip_python: Path) -> dict[str, float]:
    """Bit for bit where the pip environment computes with the same numpy, numba and llvmlite as this one (the
    overlay); where PyPI gave others (``make check-pip``), their math libraries round differently, and a maximum
    likelihood fit stops within its own tolerance of the optimum: values agree to 1e-9 relative, 1e-12 absolute
    (a shape parameter near 0)."""
    def versions(python: Path) -> str:
        return subprocess.run([str(python), "-c", "import importlib.metadata as m; print(["
                               f"m.version(p) for p in {NUMERICS!r}])"], capture_output=True, text=True,
                              check=True, timeout=60).stdout
    same = versions(pip_python) == versions(Path(sys.executable))
    return {"rtol": 0.0, "atol": 0.0} if same else {"rtol": 1e-9, "atol": 1e-12}


def overlay(venv: Path) -> Path:
    """``venv`` with PyPI's wheel of the locked netCDF4, this environment's packages behind its own (a .pth file;
    climio is this environment's editable install, whose compiled kernels serve both)."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    got = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                          "--only-binary", ":all:", f"netCDF4=={locked_version('netCDF4')}"],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "zz_full_environment.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    return python


def cases(out: Path) -> dict[str, list[str]]:
    """Named command lines writing into ``out``: subsets of every shipped file, analyses, generated files."""
    table = {f"subset {f.name}": ["subset", str(f), str(out / f"whole-{f.stem}.nc")]
             for folder in (REAL, CMIP, MESHES) for f in sorted(folder.glob("*.nc"))}
    table.update({
        "subset CESM2 days": ["subset", str(CESM), str(out / "cesm-days.nc"), "-d", "time,10,99", "-v", "tas"],
        "subset CESM2 serial": ["subset", str(CESM), str(out / "cesm-serial.nc"), "--mode", "serial"],
        "subset NAM joined": ["subset", *map(str, NAM), str(out / "nam.nc"), "-d", "time,1000,2500"],
        "subset EC-Earth box": ["subset", *map(str, EC_EARTH), str(out / "ec-box.nc"), "-b", "30,-90,120,-10"],
        "subset MPAS box": ["subset", str(MESHES / "mesh.QU.1920km.151026.nc"), str(out / "mpas-box.nc"),
                            "-b", "60,0,90,0"],
        "eva tiny": ["eva", str(CMIP / "tiny_daily_pr.nc"), str(out / "eva-tiny.nc")],
        "eva NAM intervals": ["eva", *map(str, NAM), str(out / "eva-nam.nc"), "--ci", "0.9"],
        "eva CESM2 gev": ["eva", str(CESM), str(out / "eva-cesm.nc"), "--method", "gev", "--var", "tas"],
        "eva ECHO-G": ["eva", str(CMIP / "pr.sresa2.miub_echo_g.run1.atm.da.nc"), str(out / "eva-echo.nc")],
        "gen cmip": ["gen", "cmip", str(out / "gen.nc"), "--shape", "40,5,6"],
        "gen cmip serial": ["gen", "cmip", str(out / "gen-serial.nc"), "--shape", "40,5,6", "--mode", "serial"],
    })
    return table


def run_table(python: Path, nranks: int, out: Path) -> dict[str, dict[str, object]]:
    """Every case in one process per rank (one MPI start-up): name -> {"status", "stderr"}."""
    out.mkdir(parents=True)
    table = cases(out)
    listed, results = out / "cases.json", out / "results.json"
    listed.write_text(json.dumps(list(table.values())))
    argv, env = mpiexec_command(nranks, [str(python), str(RUN_MANY), str(listed), str(results)])
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr
    outcomes = json.loads(results.read_text())
    assert len(outcomes) == len(table), done.stderr
    listed.unlink()
    results.unlink()
    return dict(zip(table, outcomes))


@pytest.fixture(scope="module")
def outputs(pip_python: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[tuple[str, int], tuple[Path, dict[str, dict[str, object]]]]:
    """(environment, ranks) -> (its output folder, its outcomes)."""
    base = tmp_path_factory.mktemp("tables")
    return {(name, n): (base / f"{name}-{n}", run_table(python, n, base / f"{name}-{n}"))
            for name, python in (("full", Path(sys.executable)), ("pip", pip_python)) for n in RANKS}


@pytest.mark.parametrize("nranks", RANKS)
def test_same_files_as_the_full_install(outputs, tolerance: dict[str, float], nranks: int) -> None:
    (full_dir, full), (pip_dir, pip) = outputs["full", nranks], outputs["pip", nranks]
    for name, outcome in full.items():
        assert outcome["status"] == 0, (name, outcome)
        assert pip[name]["status"] == 0, (name, pip[name])
    written = sorted(p.name for p in full_dir.iterdir())
    assert written == sorted(p.name for p in pip_dir.iterdir()) and len(written) == len(full)
    for file in written:
        assert diff_structure(pip_dir / file, full_dir / file, **tolerance) == [], file


def test_rank_zero_writes_and_says_so(outputs) -> None:
    """Two ranks without a parallel library: each file is rank 0's, with one note naming what is missing; on one
    rank, and in the full install, nothing is said."""
    notes = {key: {name: [line for line in str(o["stderr"]).splitlines() if line.startswith("climio: note")]
                   for name, o in table.items()} for key, (_, table) in outputs.items()}
    assert notes["pip", 2]["subset CESM2 days"] == [
        f"climio: note: rank 0 writes {outputs['pip', 2][0] / 'cesm-days.nc'} (NETCDF4) after gathering: this "
        "netCDF4-python has no parallel HDF5 for all 2 ranks to write it at once (climio info)"]
    assert "no PnetCDF for all 2 ranks" in notes["pip", 2]["gen cmip"][0]
    assert notes["pip", 2]["gen cmip serial"] == notes["pip", 2]["subset CESM2 serial"] == []
    assert all(len(lines) == 1 for name, lines in notes["pip", 2].items() if "serial" not in name)
    for key in (("pip", 1), ("full", 1), ("full", 2)):
        assert not any(notes[key].values()), key


@pytest.mark.parametrize(("args", "library"), [
    (["subset", str(CESM), "{out}", "--mode", "hdf5"], "parallel HDF5"),
    (["gen", "cmip", "{out}", "--shape", "4,2,3", "--mode", "cdf5"], "PnetCDF"),
    (["eva", str(CMIP / "tiny_daily_pr.nc"), "{out}", "--mode", "cdf2"], "PnetCDF"),
])
def test_a_chosen_parallel_mode_is_refused_under_mpiexec(pip_python: Path, tmp_path: Path, args: list[str],
                                                         library: str) -> None:
    out = tmp_path / "out.nc"
    argv = [str(pip_python), "-m", "climio", *(a.replace("{out}", str(out)) for a in args)]
    line = one_error_line(run(argv, nranks=2), f"needs {library} for 2 ranks", "--mode serial", "docs/install.md")
    assert line.startswith(f"climio: error: mode '{args[args.index('--mode') + 1]}' (--mode)")
    assert list(tmp_path.iterdir()) == []


def test_info_lists_what_works(pip_python: Path) -> None:
    one = run([str(pip_python), "-m", "climio", "info"])
    assert one.returncode == 0, one.stderr
    modes = {line.split()[0]: line for line in one.stdout.splitlines() if line.startswith("  ")}
    assert modes["serial"].split()[1] == "works"
    assert re.search(r"^PnetCDF +not built in$", one.stdout, re.M), one.stdout
    for name, library in (("cdf5", "PnetCDF"), ("hdf5", "parallel HDF5"), ("cdf1", "PnetCDF")):
        assert f"works on one process (no {library} for several ranks)" in modes[name], modes[name]
    two = run([str(pip_python), "-m", "climio", "info"], nranks=2)
    assert two.returncode == 0, two.stderr
    modes = {line.split()[0]: line for line in two.stdout.splitlines() if line.startswith("  ")}
    assert modes["serial"].split()[1] == "works"
    assert "needs PnetCDF, not built in" in modes["cdf2"] and "needs parallel HDF5, not built in" in modes["hdf5"]


def test_python_api(pip_python: Path, tolerance: dict[str, float], tmp_path: Path) -> None:
    """fit_pot gives the full install's Dataset; ModelOutput and ModelInput round-trip in every mode on one
    process (netCDF-C alone) and in serial mode on two ranks."""
    script, series = Path(__file__).parent / "helpers" / "python_api_check.py", CMIP / "tiny_daily_pr.nc"
    for python, name, nranks, modes in ((Path(sys.executable), "full", None, "serial"),
                                        (pip_python, "pip", None, "serial,cdf5,cdf2,hdf5"),
                                        (pip_python, "pip2", 2, "serial")):
        done = run([str(python), str(script), str(tmp_path / f"{name}-"), str(series), modes], nranks=nranks)
        assert done.returncode == 0, done.stderr
        want = [f"{m} {s} ok" for m in modes.split(",") for s in (["root"] if m == "serial" else
                                                                  ["root", "direct", "agg"])]
        assert done.stdout.split("\n")[-len(want) - 1:-1] == want, done.stdout
    assert diff_structure(tmp_path / "pip-pot.nc", tmp_path / "full-pot.nc", **tolerance) == []
    assert diff_structure(tmp_path / "pip2-pot.nc", tmp_path / "full-pot.nc", **tolerance) == []
