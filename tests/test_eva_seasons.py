"""``climio eva --method gev --block season|DJF,JJA,...``: several seasons in one run.

Each season's results are exactly those of a run with that season alone (``--block DJF``, ...), on a leading
``season`` dimension named by the char coordinate ``season_name``; the same at 1, 2 and 3 ranks, from
``fit_gev(block=...)`` (eager and dask), with a covariate, and on real daily output (CESM2, noleap); seasons
that share a month are refused.
"""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio, leftovers, one_error_line

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


def eva(inputs: Path, out: Path, *args: str, nranks: int | None = None) -> dict[str, np.ndarray]:
    result = climio("eva", str(inputs), str(out), "--method", "gev", "--return-period", "10", "50", *args,
                    nranks=nranks, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(out) as ds:
        ds.set_auto_mask(False)
        return {name: ds[name][...] for name in ds.variables}


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(a, b, equal_nan=np.asarray(a).dtype.kind == "f")


@pytest.fixture(scope="module")
def all_four(field: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return eva(field, tmp_path_factory.mktemp("four") / "eva.nc", "--block", "season")


def test_each_season_is_its_own_run(field: Path, tmp_path: Path, all_four: dict[str, np.ndarray]) -> None:
    assert [b"".join(row).decode() for row in all_four["season_name"]] == list(SEASONS)
    for s, season in enumerate(SEASONS):
        alone = eva(field, tmp_path / f"{season}.nc", "--block", season)
        for name in ("location", "scale", "shape", "n_blocks", "return_level", "nll", "status"):
            assert all_four[name].shape[0] == 4, name
            assert same(all_four[name][s], alone[name]), (season, name)
    assert np.all(all_four["n_blocks"][0] == 19)  # DJF: the first (Jan-Feb 1955) and last are partial
    assert np.all(all_four["n_blocks"][1:] == 20)


@pytest.mark.parametrize("nranks, scheme, split", [(2, "slab", "lat"), (3, "transpose", "block"), (2, "root", "lon")])
def test_every_rank_count_gives_the_same_seasons(field: Path, tmp_path: Path, all_four: dict[str, np.ndarray],
                                                 nranks: int, scheme: str, split: str) -> None:
    got = eva(field, tmp_path / "eva.nc", "--block", "season", "--scheme", scheme, "--split", split, nranks=nranks)
    assert set(got) == set(all_four)
    for name, want in all_four.items():
        assert same(got[name], want), name


def test_two_seasons_with_a_covariate_and_intervals(field: Path, tmp_path: Path) -> None:
    args = ("--covariate", "year", "--ci", "0.9", "--ci-method", "normal")
    both = eva(field, tmp_path / "both.nc", "--block", "djf,JJA", *args, "--covariate-at", "1960", "1970")
    two = eva(field, tmp_path / "two.nc", "--block", "DJF,JJA", *args, "--covariate-at", "1960", "1970", nranks=2)
    for name, want in both.items():
        assert same(two[name], want), name
    assert both["return_level"].shape == (2, 2, 2, 6, 8)  # season, covariate, period, lat, lon
    for s, season in enumerate(("DJF", "JJA")):
        alone = eva(field, tmp_path / f"{season}.nc", "--block", season, *args, "--covariate-at", "1960", "1970")
        for name in ("location_slope", "location_slope_se", "trend_p_value", "return_level", "return_level_upper"):
            assert same(both[name][s], alone[name]), (season, name)
    with netCDF4.Dataset(tmp_path / "both.nc") as ds:
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


def test_plot_of_several_seasons(field: Path, tmp_path: Path) -> None:
    eva(field, tmp_path / "eva.nc", "--block", "season", "--plot", str(tmp_path / "map.png"))
    assert (tmp_path / "map.png").stat().st_size > 10_000


@pytest.mark.parametrize("block, needles", [
    ("DJF,DJFM", ("--block 'DJF,DJFM'", "share month D")),
    ("JJA,year", ("--block 'YEAR'", "give 'year'")),
    ("DJF,XYZ", ("--block 'XYZ'", "season")),
])
def test_overlapping_or_unknown_seasons_are_refused(field: Path, tmp_path: Path, block: str,
                                                    needles: tuple[str, ...]) -> None:
    out = tmp_path / "eva.nc"
    result = climio("eva", str(field), str(out), "--method", "gev", "--block", block, nranks=2, timeout=TIMEOUT)
    one_error_line(result, *needles)
    assert not out.exists() and not leftovers(str(tmp_path))


def test_cesm2_seasonal_maxima(tmp_path: Path) -> None:
    """10 years of daily tas (noleap): each season's maxima against numpy, and 1 rank against 2."""
    import cftime

    one = eva(CESM2, tmp_path / "a.nc", "-v", "tas", "--block", "season", "--min-blocks", "9")
    two = eva(CESM2, tmp_path / "b.nc", "-v", "tas", "--block", "season", "--min-blocks", "9", nranks=2)
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
