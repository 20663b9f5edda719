"""The in-memory API gives what the command writes."""

from __future__ import annotations

import netCDF4
import numpy as np
import pytest
import xarray as xr
from conftest import climio

from climio.errors import ClimioError
from climio.eva import fit_pot, pot
from climio.gen import cmip


def test_dataarray_matches_the_command(tmp_path) -> None:
    path, out = tmp_path / "pr.nc", tmp_path / "eva.nc"
    assert climio("gen", "cmip", str(path), "--shape", "1500,4,6").returncode == 0
    assert climio("eva", str(path), str(out), "--tail", "0.02", "--return-period", "5", "50").returncode == 0
    with xr.open_dataset(path) as ds:
        result = fit_pot(ds["pr"], "time", tail=0.02, return_periods=[5, 50])
    with netCDF4.Dataset(out) as written:
        written.set_auto_mask(False)
        for name in pot.RESULT_TYPES:
            assert np.array_equal(result[name].values, written[name][:], equal_nan=True), name
    assert result["return_level"].dims == ("period", "lat", "lon")
    assert np.array_equal(result["lat"].values, cmip.grid(4, 6)[0])
    assert result["threshold"].attrs["units"] == "kg m-2 s-1"


def test_numpy_with_time_on_another_axis() -> None:
    rng = np.random.default_rng(0)
    data = rng.gamma(0.6, 5.0, size=(3, 2000, 4))  # (y, time, x)
    on_axis = fit_pot(data, 1, tail=0.02)
    moved = fit_pot(np.moveaxis(data, 1, 0), tail=0.02)
    assert on_axis["shape"].shape == (3, 4)
    assert np.array_equal(on_axis["shape"].values, moved["shape"].values)
    assert (on_axis["status"] == 0).all()


def test_api_errors() -> None:
    da = xr.DataArray(np.ones((10, 2)), dims=("t", "x"), name="pr")
    with pytest.raises(ClimioError, match="no dimension 'time'"):
        fit_pot(da)
    with pytest.raises(ClimioError, match="tail"):
        fit_pot(da, "t", tail=0.9)
    with pytest.raises(ClimioError, match="over 1 year"):
        fit_pot(da, "t", return_periods=[0.5])
