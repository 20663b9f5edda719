"""``climio gen cmip``: same values in every mode and at every rank count, readable by ncdump/ncks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import leftovers

from climio.gen import cmip

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch  # noqa: E402

SHAPE = (23, 9, 14)  # uneven splits over 1..4 ranks; a few days per rank
SEED = 7


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """The field computed in this process, in one piece, independently of any file or rank count."""
    return cmip.field(SEED, 0, SHAPE[0], cmip.climatology(*SHAPE[1:])).reshape(SHAPE)


def test_field_is_independent_of_chunking(reference: np.ndarray) -> None:
    clim = cmip.climatology(*SHAPE[1:])
    pieces = [cmip.field(SEED, a, b - a, clim) for a, b in [(0, 5), (5, 6), (6, 23)]]
    assert np.array_equal(np.concatenate(pieces).reshape(SHAPE), reference)


def test_field_looks_like_daily_precipitation() -> None:
    shape = (730, 48, 72)
    pr = cmip.field(1, 0, shape[0], cmip.climatology(*shape[1:])).reshape(shape) * 86400.0  # mm/day
    dry = (pr == 0).mean()
    assert 0.4 < dry < 0.8, dry  # many dry days
    wet = pr[pr > 0]
    assert np.median(wet) < wet.mean() < np.percentile(wet, 90)  # right-skewed wet-day amounts
    tropics, poles = pr[:, 22:26].mean(), np.r_[pr[:, :3].ravel(), pr[:, -3:].ravel()].mean()
    assert tropics > 2 * poles  # spatial structure: a wet ITCZ
    north = pr[:, 40:].reshape(2, 365, -1).mean(axis=(0, 2))
    assert north[150:240].mean() > 1.2 * north[np.r_[0:60, 330:365]].mean()  # northern summer is wetter
    assert not np.array_equal(cmip.field(2, 0, 3, cmip.climatology(4, 4)), cmip.field(1, 0, 3, cmip.climatology(4, 4)))


MODES = ["serial", "hdf5", "cdf2", "cdf5"]
RANKS = [1, 2, 3, 4]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    """The runs below, one table per rank count (helpers/climio_batch.py: one launch each, every case captured as a
    process of its own, with a fresh trace log); each writes into a directory of its own."""
    b = Batch(tmp_path_factory.mktemp("runs"))
    for nranks in RANKS:
        for mode in MODES:
            folder = b.folder(f"{mode}-{nranks}")
            b.add(f"{mode}-{nranks}", ["--trace", folder / "trace.json", "gen", "cmip", folder / f"pr-{mode}-{nranks}.nc",
                                       "--shape", ",".join(map(str, SHAPE)), "--mode", mode, "--seed", str(SEED)],
                  nranks)
    return b


@pytest.mark.parametrize("nranks", RANKS)
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_and_rank_count_writes_the_same_values(runs, reference, mode: str, nranks: int) -> None:
    tmp_path = runs.folder(f"{mode}-{nranks}")
    out = tmp_path / f"pr-{mode}-{nranks}.nc"
    trace = tmp_path / "trace.json"
    # --trace trace.json gen cmip out --shape SHAPE --mode MODE --seed SEED at nranks
    result = runs.result(f"{mode}-{nranks}")
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}" in result.stdout
    with netCDF4.Dataset(out) as ds:
        assert ds.data_model == {"serial": "NETCDF3_64BIT_OFFSET", "hdf5": "NETCDF4",
                                 "cdf2": "NETCDF3_64BIT_OFFSET", "cdf5": "NETCDF3_64BIT_DATA"}[mode]
        assert ds.dimensions["time"].isunlimited()
        pr = ds["pr"]
        pr.set_auto_mask(False)
        assert np.array_equal(pr[:], reference)
        assert pr.dtype == np.float32 and pr.units == "kg m-2 s-1" and pr._FillValue == np.float32(1e20)
        assert np.array_equal(ds["time"][:], np.arange(SHAPE[0]) + 0.5)
        assert ds["time"].calendar == "365_day" and ds["time"].units.startswith("days since 1955-01-01")
        assert np.allclose(ds["lat"][:], -90 + (np.arange(9) + 0.5) * 20)
        assert np.allclose(ds["lon_bnds"][:, 1] - ds["lon_bnds"][:, 0], 360 / 14)
        assert ds.climio_seed == SEED and ": climio --trace" in ds.history and "gen cmip" in ds.history
    assert leftovers(str(tmp_path)) == []
    report = json.loads(trace.read_text())
    assert report["nranks"] == nranks and len(report["ranks"]) == nranks
    assert report["summary"]["write"]["total_bytes"] >= reference.nbytes
    # Independent readers: ncdump and ncks see the same numbers.
    header = subprocess.run(["ncdump", "-h", str(out)], capture_output=True, text=True, check=True).stdout
    assert "time = UNLIMITED ; // (23 currently)" in header and 'pr:units = "kg m-2 s-1"' in header
    value = subprocess.run(["ncks", "-H", "-C", "-s", "%.9g\\n", "-v", "pr", "-d", "time,17", "-d", "lat,4",
                            "-d", "lon,11", str(out)], capture_output=True, text=True, check=True).stdout.split()
    assert np.float32(value[-1]) == reference[17, 4, 11]
