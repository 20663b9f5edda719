"""The examples in examples/ (documented in docs/model-io.md) run under mpiexec and write what they say."""

from __future__ import annotations

import sys
from pathlib import Path

import netCDF4
import numpy as np
from conftest import run

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_mpas_like_mesh(tmp_path: Path) -> None:
    result = run([sys.executable, str(EXAMPLES / "mpas_like.py"), str(tmp_path)], nranks=3, timeout=300)
    assert result.returncode == 0, result.stderr
    with netCDF4.Dataset(tmp_path / "history.nc") as ds:
        theta = ds["theta"][:]
        assert ds["theta"].dimensions == ("time", "lev10", "nCells") and not np.ma.is_masked(theta)
        cells = np.arange(2562, dtype="f4")
        for step in range(3):  # restart value + 0.5 per step, on every cell (owned ones are written)
            expected = (np.float32(280.0) + np.arange(10, dtype="f4")[:, None] + np.float32(0.001) * cells
                        ).astype("f4") + np.float32(0.5) * (step + 1)
            assert np.allclose(theta[step], expected, rtol=0, atol=1e-4)
        assert list(ds["time"][:]) == [600.0, 1200.0, 1800.0]


def test_land_eliminated_ocean(tmp_path: Path) -> None:
    result = run([sys.executable, str(EXAMPLES / "ocean_land.py"), str(tmp_path)], nranks=6, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "3 land blocks eliminated" in result.stdout
    with netCDF4.Dataset(tmp_path / "ocean.nc") as ds:
        temp = ds["temp"][0]
    land_blocks = [(slice(0, 20), slice(30, 60)), (slice(0, 20), slice(60, 90)), (slice(20, 40), slice(60, 90))]
    for block in land_blocks:
        assert temp[(slice(None), *block)].mask.all()
    y = np.arange(60, dtype="f4")[None, :, None]
    expected = np.broadcast_to(np.float32(15.0) - np.arange(5, dtype="f4")[:, None, None] + np.float32(0.01) * y,
                               temp.shape)
    ocean = ~temp.mask
    assert ocean.sum() == 5 * (60 * 90 - 3 * 20 * 30) and np.array_equal(temp.data[ocean], expected[ocean])
