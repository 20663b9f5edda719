"""``.climio.fit_pot`` and ``fit_gev`` with ``comm=`` under mpiexec: the ranks share the cells and every rank gets
the whole result, which ``to_netcdf`` writes as the file ``climio eva`` writes at the same rank count.

One launch of ``helpers/xr_fits.py`` at 2 ranks fits both methods on the two CORDEX NAM-22 files joined by
``climio.open_mfdataset`` and checks on the way that every rank returns the same Dataset, that it is one
process's bit for bit, that a rank with no cell takes part, and that a failure on one rank stops every rank in
one IOFault; the command runs both methods in one batch at 2 ranks (``helpers/eva_batch.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import netCDF4
import pytest
import xarray as xr
from conftest import DATA, run

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Batch  # noqa: E402

HELPERS = Path(__file__).resolve().parent / "helpers"
NAM = sorted((DATA / "real").glob("pr_NAM-22_*.nc"))
COMMANDS = {"pot": ["--tail", "0.02", "--return-period", "5", "20"],
            "gev": ["--method", "gev", "--return-period", "5", "20"]}
NOT_COMPARED = ("history", "climio_inputs")  # what made each file, and the command's input paths


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The command's files (``pot-command.nc``, ``gev-command.nc``) and the accessor's (``pot.nc``,
    ``gev.nc``), all at 2 ranks; and what the helper printed."""
    out = tmp_path_factory.mktemp("parallel-fits")
    commands = Batch(out / "commands", 2, timeout=300)
    for method, options in COMMANDS.items():
        commands.add(method, "eva", *NAM, out / f"{method}-command.nc", *options)
    for method in COMMANDS:
        assert commands[method].returncode == 0, commands[method].stderr
    with netCDF4.Dataset(out / "pot-command.nc") as nc:
        form = nc.data_model
    done = run([sys.executable, str(HELPERS / "xr_fits.py"), str(out), form, *map(str, NAM)], nranks=2, timeout=300)
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def test_every_rank_returns_one_processs_result(made: tuple[Path, str]) -> None:
    """The helper's checks at 2 ranks, each printed once it passed."""
    assert made[1].splitlines() == ["the same on all 2 ranks", "one process's result",
                                    "a failure on rank 1 stops every rank"]


@pytest.mark.parametrize("method", COMMANDS)
def test_the_accessors_fit_under_mpiexec_writes_the_commands_file(made: tuple[Path, str], method: str) -> None:
    """Every variable, value (as stored: fill values unmasked, bit for bit) and attribute, but what made each."""
    out, _ = made
    opened = []
    for path in (out / f"{method}.nc", out / f"{method}-command.nc"):
        with xr.open_dataset(path, decode_times=False, mask_and_scale=False) as ds:
            opened.append(ds.load())
    for ds in opened:
        for key in NOT_COMPARED:
            ds.attrs.pop(key, None)
    xr.testing.assert_identical(*opened)
