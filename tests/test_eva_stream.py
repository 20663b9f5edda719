"""The slab scheme streams each rank's slab from the file a block of time steps at a time: the scan must
end exactly where a scan of the whole series in memory ends, whatever the block size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_eva_largest import check_scanner

from climio.core import ncio
from climio.core.decomp import Hyperslab
from climio.eva import largest
from climio.eva.job import scan_slab
from climio.eva.series import Series, time_rule
from climio.core.inputs import Inputs, open_inputs


def _file(path: Path, series: np.ndarray, fill: float | None) -> Inputs:
    t, ny, nx = series.shape
    attrs = {"_FillValue": np.float32(fill)} if fill is not None else {}
    schema = ncio.Schema({"time": None, "lat": ny, "lon": nx},
                         (ncio.Variable("pr", "f4", ("time", "lat", "lon"), attrs),), {})
    with ncio.create(str(path), schema, "cdf5") as ds:
        ds.write("pr", series, Hyperslab((0, 0, 0), series.shape))
    return _open(path)


def _open(path: Path) -> Inputs:
    from mpi4py import MPI

    return open_inputs([str(path)], MPI.COMM_WORLD, time_rule("pr", str(path)), False, label="inputs")


def _gamma_with_gaps() -> np.ndarray:
    rng = np.random.default_rng(7)
    series = rng.gamma(0.6, 4.0, (3000, 4, 5)).astype(np.float32)
    series[rng.random(series.shape) < 0.5] = 0.0
    series[rng.random(series.shape) < 0.02] = np.nan
    series[rng.random(series.shape) < 0.01] = 1e20
    series[:, 0, 1] = 2.5  # constant
    series[:, 1, 2] = 1e20  # no valid value
    return series


def _bar_too_high() -> np.ndarray:
    series = np.tile(np.linspace(0.0, 1.0, 3000, dtype=np.float32)[:, None, None], (1, 4, 5))
    series[::largest.SAMPLE_STRIDE] += 10.0  # the sample sees only the largest values: every cell is rescanned
    return series


@pytest.mark.parametrize("block_bytes", [1, 3 * 4 * 20 * 7, 1 << 30])
@pytest.mark.parametrize("make, k, fill", [(_gamma_with_gaps, 31, 1e20), (_bar_too_high, 400, None)])
def test_streamed_slab_scan_is_the_in_memory_scan(tmp_path: Path, block_bytes: int, make, k: int,  # type: ignore[no-untyped-def]
                                                  fill: float | None) -> None:
    series = make()
    missing = [] if fill is None else [fill]
    with _file(tmp_path / "pr.nc", series, fill) as inputs:
        whole = Hyperslab((0, 0, 0), series.shape)
        scanner = scan_slab(Series(inputs, "pr", [], "pr.nc"), whole, k, missing, inputs.comm, block_bytes=block_bytes)
    check_scanner(scanner, series.reshape(series.shape[0], -1), k, missing)
    part = Hyperslab((0, 1, 2), (series.shape[0], 2, 3))  # a rank's block inside the grid
    with _open(tmp_path / "pr.nc") as inputs:
        scanner = scan_slab(Series(inputs, "pr", [], "pr.nc"), part, k, missing, inputs.comm, block_bytes=block_bytes)
    check_scanner(scanner, series[:, 1:3, 2:5].reshape(series.shape[0], -1), k, missing)
