"""``climio eva`` end to end: every rank count, scheme and split gives the same file; real GCM output; bad input.

The command's runs are made once, one process per rank count (``helpers/eva_batch.py``: one start-up for all of
them, each run in a directory of its own); each test checks its own runs' outcomes and files.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio, leftovers

from climio.eva import cf, pot

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Runs  # noqa: E402

CMIP = DATA / "cmip"
# file -> (days per year of its calendar, ranks: 4 ranks on CanESM2's 3 latitude rows leaves one rank without cells)
REAL = {"tiny_daily_pr.nc": (365.0, 4), "pr.sresa2.miub_echo_g.run1.atm.da.nc": (360.0, 2)}
FIELDS = ("threshold", "scale", "shape", "rate", "n_exceed", "return_level", "nll", "status")


@pytest.fixture(scope="module")
def cmip_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("eva") / "pr.nc"
    result = climio("gen", "cmip", str(path), "--shape", "2400,5,7", "--seed", "3", nranks=2)
    assert result.returncode == 0, result.stderr
    return path


def read_results(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: ds[name][:] for name in FIELDS}


@pytest.fixture(scope="module")
def reference(cmip_file: Path) -> pot.Result:
    """The analysis in this process, on the whole array: no MPI, no decomposition."""
    with netCDF4.Dataset(cmip_file) as ds:
        ds.set_auto_mask(False)
        pr = ds["pr"][:]
    return pot.analyse(pr.reshape(pr.shape[0], -1), tail=0.02, periods=[10, 100], npy=365.25, min_exceed=10,
                       missing=[1e20])


SCHEMES, SPLITS = ("slab", "transpose", "root"), ("lat", "lon", "block")
# every pair of (ranks, scheme), (ranks, split) and (scheme, split) once: 12 runs instead of all 36
PAIRWISE = [(n, SCHEMES[s], SPLITS[(s + n) % 3]) for n in (1, 2, 3, 4) for s in range(3)]
BAD_OPTIONS = [
    (("--var", "tas"), ("no variable 'tas'", "--var")),
    (("--var", "lat"), ("'lat(lat)' has no time dimension",)),
    (("--tail", "0.7"), ("--tail", "(0, 0.5)")),
    (("--tail", "0"), ("--tail",)),
    (("--return-period", "1"), ("--return-period", "over 1 year")),
    (("--npy", "often"), ("--npy",)),
    (("--split", "diagonal"), ("--split",)),
    (("--scheme", "magic"), ("--scheme",)),
]
MONTHLY = DATA / "real" / "tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cmip_file: Path) -> tuple[Runs, dict[object, Path]]:
    """Every run of this file, made once: (their outcomes, each run's own directory). The 2-rank runs come first:
    the plain run that must find an existing --plot file follows the one that drew it."""
    runs = Runs(tmp_path_factory.mktemp("eva-runs"))
    dirs: dict[object, Path] = {}

    def add(key: object, *argv: object, nranks: int | None = None) -> Path:
        dirs[key] = runs.case_dir()
        runs.add(key, "eva", *argv, nranks=nranks)
        return dirs[key]

    def new_dir(key: object) -> Path:
        dirs[key] = runs.case_dir()
        return dirs[key]

    cmip = str(cmip_file)
    # 2 ranks first (see above)
    for n, (args, _) in enumerate(BAD_OPTIONS):
        d = new_dir(("bad", n))
        runs.add(("bad", n), "eva", cmip, d / "eva.nc", *args, nranks=2)
    d = new_dir("plot")
    runs.add("plot", "eva", cmip, d / "eva.nc", "--tail", "0.02", "--plot", d / "map.png", nranks=2)
    d = new_dir("not-netcdf")
    (d / "notes.nc").write_text("not a netCDF file\n")
    with open(cmip_file, "rb") as f:
        (d / "cut.nc").write_bytes(f.read(os.path.getsize(cmip_file) // 2))
    runs.add("truncated", "eva", d / "cut.nc", d / "b.nc", nranks=2)
    d = new_dir("own-output")
    shutil.copy(cmip_file, d / "in.nc")
    runs.add("own-output", "eva", d / "in.nc", d / "in.nc", "-O", nranks=2)
    for k, extra in enumerate(((), ("--npy", "calendar"))):
        d = new_dir(("monthly", k))
        runs.add(("monthly", k), "eva", MONTHLY, d / "eva.nc", "--var", "tas", *extra, nranks=2)
    d = new_dir("monthly-npy")
    runs.add("monthly-npy", "eva", MONTHLY, d / "eva.nc", "--var", "tas", "--npy", "12", "--min-exceed", "1",
             "--tail", "0.1", nranks=2)
    for name, (_, nranks) in REAL.items():
        d = new_dir(("real", name))
        runs.add(("real", name), "eva", CMIP / name, d / "eva.nc", "--npy", "calendar", "--return-period", "20",
                 "100", nranks=nranks)
    for nranks, scheme, split in PAIRWISE:
        key = ("pairwise", nranks, scheme, split)
        d = new_dir(key)
        runs.add(key, "eva", cmip, d / "eva.nc", "--tail", "0.02", "--return-period", "10", "100",
                 "--scheme", scheme, "--split", split, nranks=nranks)
    # plain runs last
    d = new_dir("cf")
    runs.add("cf", "eva", cmip, d / "eva.nc", "--tail", "0.02", "--mode", "hdf5")
    runs.add("not-netcdf", "eva", dirs["not-netcdf"] / "notes.nc", dirs["not-netcdf"] / "a.nc")
    for k, extra in enumerate(((), ("--overwrite",))):  # the same existing output, refused, then replaced
        d = new_dir(("overwrite", k))
        shutil.copy(cmip_file, d / "eva.nc")
        runs.add(("overwrite", k), "eva", cmip, d / "eva.nc", *extra)
    runs.add("plot-again", "eva", cmip, dirs["plot"] / "other.nc", "--plot", dirs["plot"] / "map.png")
    return runs.run(), dirs


@pytest.mark.parametrize("nranks, scheme, split", PAIRWISE)
def test_same_results_for_every_rank_count_scheme_and_split(runs: tuple[Runs, dict[object, Path]],
                                                            reference: pot.Result, nranks: int, scheme: str,
                                                            split: str) -> None:
    done, dirs = runs
    key = ("pairwise", nranks, scheme, split)
    result = done[key]
    assert result.returncode == 0, result.stderr
    assert "status: ok 35" in result.stdout
    got = read_results(dirs[key] / "eva.nc")
    for name in FIELDS:
        want = getattr(reference, name)
        want = want.reshape(2, 5, 7) if name == "return_level" else want.reshape(5, 7)
        assert np.array_equal(got[name], want, equal_nan=True), name
    assert leftovers(str(dirs[key])) == []


def test_output_is_cf_with_coordinates_units_and_flags(runs: tuple[Runs, dict[object, Path]]) -> None:
    done, dirs = runs
    out = dirs["cf"] / "eva.nc"
    assert done["cf"].returncode == 0
    with netCDF4.Dataset(out) as ds:
        assert ds.data_model == "NETCDF4"
        assert ds["return_level"].dimensions == ("period", "lat", "lon")
        assert ds["threshold"].units == ds["return_level"].units == "kg m-2 s-1"
        assert ds["lat"].units == "degrees_north" and ds["lat"].shape == (5,)
        assert list(ds["status"].flag_values) == list(range(len(cf.STATUS_MEANINGS)))
        assert ds["status"].flag_meanings.split()[0] == "ok"
        assert ds["period"][:].tolist() == [100.0] and "climio" in ds.history and "gen cmip" in ds.history


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_gcm_output_with_its_own_calendar(runs: tuple[Runs, dict[object, Path]], name: str) -> None:
    done, dirs = runs
    out = dirs[("real", name)] / "eva.nc"
    days_per_year, nranks = REAL[name]
    result = done[("real", name)]
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(out) as ds:
        ds.set_auto_mask(False)
        assert ds.climio_npy == days_per_year
        assert np.all(ds["status"][:] == 0)
        shape = ds["shape"][:]
        assert np.all((shape > -0.5) & (shape < 1.0))
        levels = ds["return_level"][:] * 86400.0  # mm/day
        assert np.all(levels[1] > levels[0]) and np.all((levels > 10) & (levels < 500))
        assert np.all(ds["threshold"][:] * 86400.0 > 1.0)


@pytest.mark.parametrize("args,needles", BAD_OPTIONS)
def test_bad_options(runs: tuple[Runs, dict[object, Path]], args: tuple[str, ...], needles: tuple[str, ...]) -> None:
    done, dirs = runs
    key = ("bad", BAD_OPTIONS.index((args, needles)))
    result = done[key]
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("climio: error:") == 1
    for needle in needles:
        assert needle in result.stderr
    assert os.listdir(dirs[key]) == []


def test_not_netcdf_and_truncated_inputs(runs: tuple[Runs, dict[object, Path]]) -> None:
    done, dirs = runs
    result = done["not-netcdf"]
    assert result.returncode == 2 and "is not a readable netCDF file" in result.stderr
    result = done["truncated"]
    assert result.returncode == 2, result.stderr
    assert "cut.nc" in result.stderr and "truncated" in result.stderr
    assert sorted(os.listdir(dirs["not-netcdf"])) == ["cut.nc", "notes.nc"]


def test_existing_output_needs_overwrite(runs: tuple[Runs, dict[object, Path]], cmip_file: Path) -> None:
    done, dirs = runs
    before = cmip_file.read_bytes()
    result = done[("overwrite", 0)]
    assert result.returncode == 2 and "--overwrite" in result.stderr
    assert (dirs[("overwrite", 0)] / "eva.nc").read_bytes() == before
    assert done[("overwrite", 1)].returncode == 0
    with netCDF4.Dataset(dirs[("overwrite", 1)] / "eva.nc") as ds:  # replaced by the analysis
        assert "return_level" in ds.variables


def test_plot_draws_a_png_atomically(runs: tuple[Runs, dict[object, Path]]) -> None:
    done, dirs = runs
    png = dirs["plot"] / "map.png"
    result = done["plot"]
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    again = done["plot-again"]  # run after the above: map.png exists
    assert again.returncode == 2 and "--plot" in again.stderr and not (dirs["plot"] / "other.nc").exists()
    assert sorted(os.listdir(dirs["plot"])) == ["eva.nc", "map.png"]


def test_output_checks_come_before_the_analysis(runs: tuple[Runs, dict[object, Path]], cmip_file: Path) -> None:
    """An input given as its own output is refused, even with -O, and the input is left as it was."""
    done, dirs = runs
    source = dirs["own-output"] / "in.nc"
    result = done["own-output"]
    assert result.returncode == 2 and f"output '{source}' is the input '{source}'" in result.stderr
    assert source.read_bytes() == cmip_file.read_bytes() and not leftovers(str(dirs["own-output"]))


def test_a_time_axis_that_is_not_daily_needs_npy(runs: tuple[Runs, dict[object, Path]]) -> None:
    """Monthly means (EC-EARTH, CDF-1) would otherwise get daily return-level arithmetic without a word."""
    done, dirs = runs
    for k in range(2):  # without --npy, and --npy calendar
        result, d = done[("monthly", k)], dirs[("monthly", k)]
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert "'time' steps by 30.5 days (monthly), not daily: give --npy" in result.stderr
        assert not (d / "eva.nc").exists() and not leftovers(str(d))
    result = done["monthly-npy"]
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(dirs["monthly-npy"] / "eva.nc") as ds:
        assert float(ds.climio_npy) == 12.0
