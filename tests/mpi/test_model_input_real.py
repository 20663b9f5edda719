"""ModelInput on real files climio did not write: a CMIP5 classic file, a deflated CORDEX netCDF-4 file and a
4-D CMIP6 file with pressure levels and missing values, read into halo'd blocks with every read strategy and
compared with netCDF4-python's CF view (masked values: NaN), exactly."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import assert_all
from mpi4py import MPI

from climio.core.decomp import process_grid
from climio.model import decomposition as dec
from climio.model.input import ModelInput

REAL = Path(__file__).parent.parent / "data" / "real"
FILES = [("tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc", "tas"),
         ("pr_NAM-22_NOAA-GFDL-GFDL-ESM2M_rcp45_r1i1p1_OURANOS-CRCM5_v1_day_20510101-20551231.nc", "pr"),
         ("o3_AERmon_MPI-ESM1-2-LR_historical_r1i1p1f1_gn_185001.nc", "o3")]


@pytest.mark.parametrize("name,var", FILES)
def test_real_file_into_blocks(comm: MPI.Comm, name: str, var: str) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    with netCDF4.Dataset(REAL / name) as ds:
        truth = ds[var][...]
    grid = truth.shape[-2:]
    d = dec.blocks(grid, *process_grid(size, *grid), rank, halo=1)
    for strategy in ("root", "direct", "agg"):
        with ModelInput(str(REAL / name), d, comm, strategy=strategy) as model_input:
            levels, records = model_input.levels(var)
            assert_all(comm, records and levels == (truth.shape[1] if truth.ndim == 4 else None), "shape")
            for record in (0, truth.shape[0] - 1):
                got = model_input.read(var, record=record)
                expected = np.ma.filled(truth[record].astype(got.dtype), np.nan)[(..., *d.box.slices)]
                assert_all(comm, np.array_equal(got[d.interior(levels)], expected, equal_nan=True),
                           f"{name} {strategy} record {record}")
