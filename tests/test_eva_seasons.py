"""``climio eva --method gev --block season|DJF,JJA,...``: several seasons in one run.

Each season's results are exactly those of a run with that season alone (``--block DJF``, ...), on a leading
``season`` dimension named by the char coordinate ``season_name``; the same at 1, 2 and 3 ranks, from
``fit_gev(block=...)`` (eager and dask), with a covariate, and on real daily output (CESM2, noleap); seasons
that share a month are refused.

The command's runs are made once, one process per rank count (``helpers/eva_batch.py``: one start-up for all of
them, each run in a directory of its own); each test checks its own runs' outcomes and files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio, leftovers, one_error_line

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Made, Runs  # noqa: E402

TIMEOUT = 120  # every mpiexec run: a hang fails the test
CESM2 = DATA / "real" / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"
SEASONS = ("DJF", "MAM", "JJA", "SON")


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 years of daily CMIP-like precipitation on 6 x 8 cells."""
    path = tmp_path_factory.mktemp("seasons") / "pr.nc"
    result = climio("gen", "cmip", str(path), "--shape", "7305,6,8", timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    return path


def read(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: ds[name][...] for name in ds.variables}


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(a, b, equal_nan=np.asarray(a).dtype.kind == "f")


RANKS = [(2, "slab", "lat"), (3, "transpose", "block"), (2, "root", "lon")]
TREND = ("--covariate", "year", "--ci", "0.9", "--ci-method", "normal")
REFUSED = [
    ("DJF,DJFM", ("--block 'DJF,DJFM'", "share month D")),
    ("JJA,year", ("--block 'YEAR'", "give 'year'")),
    ("DJF,XYZ", ("--block 'XYZ'", "season")),
]
CESM2_ARGS = ("-v", "tas", "--block", "season", "--min-blocks", "9")


@pytest.fixture(scope="module")
def made(field: Path, tmp_path_factory: pytest.TempPathFactory) -> Made:
    runs = Runs(tmp_path_factory.mktemp("runs"), timeout=540)
    dirs: dict[object, Path] = {}

    def add(key: object, inputs: Path, out: str, *args: str, nranks: int | None = None) -> Path:
        """A run of ``eva`` (the command line the tests' ``eva`` ran) in a directory of its own."""
        d = dirs[key] = runs.case_dir()
        runs.add(key, "eva", inputs, d / out, "--method", "gev", "--return-period", "10", "50", *args, nranks=nranks)
        return d

    add("four", field, "eva.nc", "--block", "season")
    for season in SEASONS:
        add(("alone", season), field, f"{season}.nc", "--block", season)
    add("both", field, "both.nc", "--block", "djf,JJA", *TREND, "--covariate-at", "1960", "1970")
    for season in ("DJF", "JJA"):
        add(("trend-alone", season), field, f"{season}.nc", "--block", season, *TREND, "--covariate-at", "1960",
            "1970")
    d = dirs["plot"] = runs.case_dir()
    runs.add("plot", "eva", field, d / "eva.nc", "--method", "gev", "--return-period", "10", "50", "--block", "season",
             "--plot", d / "map.png")
    add("cesm2-one", CESM2, "a.nc", *CESM2_ARGS)
    for nranks, scheme, split in RANKS:
        add((nranks, scheme, split), field, "eva.nc", "--block", "season", "--scheme", scheme, "--split", split,
            nranks=nranks)
    add("two", field, "two.nc", "--block", "DJF,JJA", *TREND, "--covariate-at", "1960", "1970", nranks=2)
    for n, (block, _) in enumerate(REFUSED):
        d = dirs[("refused", n)] = runs.case_dir()
        runs.add(("refused", n), "eva", field, d / "eva.nc", "--method", "gev", "--block", block, nranks=2)
    add("cesm2-two", CESM2, "b.nc", *CESM2_ARGS, nranks=2)
    return Made(runs.run(), dirs, read)


@pytest.fixture(scope="module")
def all_four(made: Made) -> dict[str, np.ndarray]:
    return made.result("four")


def test_each_season_is_its_own_run(made: Made, all_four: dict[str, np.ndarray]) -> None:
    assert [b"".join(row).decode() for row in all_four["season_name"]] == list(SEASONS)
    for s, season in enumerate(SEASONS):
        alone = made.result(("alone", season), f"{season}.nc")
        for name in ("location", "scale", "shape", "n_blocks", "return_level", "nll", "status"):
            assert all_four[name].shape[0] == 4, name
            assert same(all_four[name][s], alone[name]), (season, name)
    assert np.all(all_four["n_blocks"][0] == 19)  # DJF: the first (Jan-Feb 1955) and last are partial
    assert np.all(all_four["n_blocks"][1:] == 20)


@pytest.mark.parametrize("nranks, scheme, split", RANKS)
def test_every_rank_count_gives_the_same_seasons(made: Made, all_four: dict[str, np.ndarray], nranks: int,
                                                 scheme: str, split: str) -> None:
    got = made.result((nranks, scheme, split))
    assert set(got) == set(all_four)
    for name, want in all_four.items():
        assert same(got[name], want), name


def test_two_seasons_with_a_covariate_and_intervals(made: Made) -> None:
    both = made.result("both", "both.nc")
    two = made.result("two", "two.nc")
    for name, want in both.items():
        assert same(two[name], want), name
    assert both["return_level"].shape == (2, 2, 2, 6, 8)  # season, covariate, period, lat, lon
    for s, season in enumerate(("DJF", "JJA")):
        alone = made.result(("trend-alone", season), f"{season}.nc")
        for name in ("location_slope", "location_slope_se", "trend_p_value", "return_level", "return_level_upper"):
            assert same(both[name][s], alone[name]), (season, name)
    with netCDF4.Dataset(made.dirs["both"] / "both.nc") as ds:
        assert ds.climio_block == "DJF,JJA"
        assert ds["location_slope"].dimensions == ("season", "lat", "lon")
        assert "season_name" in ds["location_slope"].coordinates


def test_the_api_gives_the_same_seasons(field: Path, all_four: dict[str, np.ndarray]) -> None:
    import xarray as xr

    from climio.eva import fit_gev

    with xr.open_dataset(field) as ds:
        eager = fit_gev(ds, var="pr", block="season", return_periods=[10, 50])
        lazy = fit_gev(ds.chunk({"lon": 3}), var="pr", block="season", return_periods=[10, 50]).compute()
    assert list(eager["season_name"].values) == list(SEASONS)
    assert eager["return_level"].dims == ("season", "period", "lat", "lon")
    for out in (eager, lazy):
        for name in out.data_vars:
            assert same(out[name].values, all_four[name]), name


def test_plot_of_several_seasons(made: Made) -> None:
    made.result("plot")
    assert (made.dirs["plot"] / "map.png").stat().st_size > 10_000


@pytest.mark.parametrize("block, needles", REFUSED)
def test_overlapping_or_unknown_seasons_are_refused(made: Made, block: str, needles: tuple[str, ...]) -> None:
    key = ("refused", REFUSED.index((block, needles)))
    d = made.dirs[key]
    one_error_line(made.runs[key], *needles)
    assert not (d / "eva.nc").exists() and not leftovers(str(d))


def test_cesm2_seasonal_maxima(made: Made) -> None:
    """10 years of daily tas (noleap): each season's maxima against numpy, and 1 rank against 2."""
    import cftime

    one = made.result("cesm2-one", "a.nc")
    two = made.result("cesm2-two", "b.nc")
    for name, want in one.items():
        assert same(two[name], want), name
    with netCDF4.Dataset(CESM2) as ds:
        dates = cftime.num2date(ds["time"][:], ds["time"].units, ds["time"].calendar)
        data = ds["tas"][...].astype(np.float64)
    month = np.array([d.month for d in dates])
    year = np.array([d.year for d in dates])
    from climio.eva import gev

    for s, months in enumerate(((12, 1, 2), (3, 4, 5), (6, 7, 8), (9, 10, 11))):
        end_year = year + (month == 12)
        years = [y for y in np.unique(end_year) if np.sum(np.isin(month, months) & (end_year == y)) >= 0.9 * 90]
        maxima = np.stack([data[np.isin(month, months) & (end_year == y)].max(axis=0).reshape(-1) for y in years])
        assert np.all(one["n_blocks"][s] == len(years)), s
        fit = gev.fit(maxima.T, np.full(maxima.shape[1], len(years)))
        status = one["status"][s].reshape(-1)
        assert np.all((status == 0) | (status == 4)), status  # ok, or shape_at_lower_bound (bounded tails)
        assert np.array_equal(status == 4, fit.at_bound)
        np.testing.assert_allclose(one["location"][s].reshape(-1), fit.location, rtol=1e-12)
        np.testing.assert_allclose(one["shape"][s].reshape(-1), fit.shape, rtol=1e-9, atol=1e-12)
