"""``climio eva`` end to end: every rank count, scheme and split gives the same file; real GCM output; bad input."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio, leftovers

from climio.eva import cf, pot

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


@pytest.mark.parametrize("nranks, scheme, split", PAIRWISE)
def test_same_results_for_every_rank_count_scheme_and_split(tmp_path: Path, cmip_file: Path, reference: pot.Result,
                                                            nranks: int, scheme: str, split: str) -> None:
    out = tmp_path / "eva.nc"
    result = climio("eva", str(cmip_file), str(out), "--tail", "0.02", "--return-period", "10", "100",
                    "--scheme", scheme, "--split", split, nranks=nranks)
    assert result.returncode == 0, result.stderr
    assert "status: ok 35" in result.stdout
    got = read_results(out)
    for name in FIELDS:
        want = getattr(reference, name)
        want = want.reshape(2, 5, 7) if name == "return_level" else want.reshape(5, 7)
        assert np.array_equal(got[name], want, equal_nan=True), name
    assert leftovers(str(tmp_path)) == []


def test_output_is_cf_with_coordinates_units_and_flags(tmp_path: Path, cmip_file: Path) -> None:
    out = tmp_path / "eva.nc"
    assert climio("eva", str(cmip_file), str(out), "--tail", "0.02", "--mode", "hdf5").returncode == 0
    with netCDF4.Dataset(out) as ds:
        assert ds.data_model == "NETCDF4"
        assert ds["return_level"].dimensions == ("period", "lat", "lon")
        assert ds["threshold"].units == ds["return_level"].units == "kg m-2 s-1"
        assert ds["lat"].units == "degrees_north" and ds["lat"].shape == (5,)
        assert list(ds["status"].flag_values) == list(range(len(cf.STATUS_MEANINGS)))
        assert ds["status"].flag_meanings.split()[0] == "ok"
        assert ds["period"][:].tolist() == [100.0] and "climio" in ds.history and "gen cmip" in ds.history


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_gcm_output_with_its_own_calendar(tmp_path: Path, name: str) -> None:
    out = tmp_path / "eva.nc"
    days_per_year, nranks = REAL[name]
    result = climio("eva", str(CMIP / name), str(out), "--npy", "calendar", "--return-period", "20", "100",
                    nranks=nranks)
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


@pytest.mark.parametrize("args,needles", [
    (("--var", "tas"), ("no variable 'tas'", "--var")),
    (("--var", "lat"), ("'lat(lat)' has no time dimension",)),
    (("--tail", "0.7"), ("--tail", "(0, 0.5)")),
    (("--tail", "0"), ("--tail",)),
    (("--return-period", "1"), ("--return-period", "over 1 year")),
    (("--npy", "often"), ("--npy",)),
    (("--split", "diagonal"), ("--split",)),
    (("--scheme", "magic"), ("--scheme",)),
])
def test_bad_options(tmp_path: Path, cmip_file: Path, args: tuple[str, ...], needles: tuple[str, ...]) -> None:
    result = climio("eva", str(cmip_file), str(tmp_path / "eva.nc"), *args, nranks=2)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("climio: error:") == 1
    for needle in needles:
        assert needle in result.stderr
    assert os.listdir(tmp_path) == []


def test_not_netcdf_and_truncated_inputs(tmp_path: Path, cmip_file: Path) -> None:
    text = tmp_path / "notes.nc"
    text.write_text("not a netCDF file\n")
    result = climio("eva", str(text), str(tmp_path / "a.nc"))
    assert result.returncode == 2 and "is not a readable netCDF file" in result.stderr
    truncated = tmp_path / "cut.nc"
    with open(cmip_file, "rb") as f:
        truncated.write_bytes(f.read(os.path.getsize(cmip_file) // 2))
    result = climio("eva", str(truncated), str(tmp_path / "b.nc"), nranks=2)
    assert result.returncode == 2, result.stderr
    assert "cut.nc" in result.stderr and "truncated" in result.stderr
    assert sorted(os.listdir(tmp_path)) == ["cut.nc", "notes.nc"]


def test_existing_output_needs_overwrite(tmp_path: Path, cmip_file: Path) -> None:
    out = tmp_path / "eva.nc"
    shutil.copy(cmip_file, out)
    before = out.read_bytes()
    result = climio("eva", str(cmip_file), str(out))
    assert result.returncode == 2 and "--overwrite" in result.stderr and out.read_bytes() == before
    assert climio("eva", str(cmip_file), str(out), "--overwrite").returncode == 0


def test_plot_draws_a_png_atomically(tmp_path: Path, cmip_file: Path) -> None:
    out, png = tmp_path / "eva.nc", tmp_path / "map.png"
    result = climio("eva", str(cmip_file), str(out), "--tail", "0.02", "--plot", str(png), nranks=2)
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert sorted(os.listdir(tmp_path)) == ["eva.nc", "map.png"]
    again = climio("eva", str(cmip_file), str(tmp_path / "other.nc"), "--plot", str(png))
    assert again.returncode == 2 and "--plot" in again.stderr and not (tmp_path / "other.nc").exists()


def test_output_checks_come_before_the_analysis(tmp_path: Path, cmip_file: Path) -> None:
    """An input given as its own output is refused, even with -O, and the input is left as it was."""
    source = tmp_path / "in.nc"
    shutil.copy(cmip_file, source)
    before = source.read_bytes()
    result = climio("eva", str(source), str(source), "-O", nranks=2)
    assert result.returncode == 2 and f"output '{source}' is the input '{source}'" in result.stderr
    assert source.read_bytes() == before and not leftovers(str(tmp_path))


def test_a_time_axis_that_is_not_daily_needs_npy(tmp_path: Path) -> None:
    """Monthly means (EC-EARTH, CDF-1) would otherwise get daily return-level arithmetic without a word."""
    monthly = DATA / "real" / "tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc"
    out = tmp_path / "eva.nc"
    for extra in ((), ("--npy", "calendar")):
        result = climio("eva", str(monthly), str(out), "--var", "tas", *extra, nranks=2)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert "'time' steps by 30.5 days (monthly), not daily: give --npy" in result.stderr
        assert not out.exists() and not leftovers(str(tmp_path))
    result = climio("eva", str(monthly), str(out), "--var", "tas", "--npy", "12", "--min-exceed", "1",
                    "--tail", "0.1", nranks=2)
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(out) as ds:
        assert float(ds.climio_npy) == 12.0
