"""Lazily opened Datasets pickle (dask's process scheduler and ``distributed`` pickle the arrays they read): the
pickle holds how to open the files again, which the process that unpickles it does on its first read, once per
process, and its reads take that process's own lock."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest
import xarray as xr
from conftest import DATA

import climio
from climio.xr import backend

EC_EARTH = sorted((DATA / "real").glob("tas_Amon_EC-EARTH_*.nc"))
NAM = sorted((DATA / "real").glob("pr_NAM-22_*.nc"))

OPENS: dict[str, Callable[[], xr.Dataset]] = {
    "open_dataset": lambda: xr.open_dataset(EC_EARTH[0], engine="climio"),
    "open_dataset-chunks": lambda: xr.open_dataset(EC_EARTH[0], engine="climio", chunks={"time": 12}),
    "open_mfdataset": lambda: climio.open_mfdataset(NAM),
    "open_mfdataset-chunks": lambda: climio.open_mfdataset(EC_EARTH, chunks={"time": 12}),
    "open_mfdataset-gaps": lambda: climio.open_mfdataset([EC_EARTH[0], EC_EARTH[2]], allow_gaps=True),
}


@pytest.mark.parametrize("case", OPENS)
def test_a_lazy_dataset_pickles_and_reads_its_files_again(case: str) -> None:
    with OPENS[case]() as ds:
        back = pickle.loads(pickle.dumps(ds))
        assert not any(v._in_memory for v in back.data_vars.values() if v.ndim), "read at unpickling"
        xr.testing.assert_identical(back.load(), ds.load())
        assert back.encoding["climio_sources"] == ds.encoding["climio_sources"]
        back.close()


def test_unpickled_copies_share_one_open_and_the_modules_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pickles of one Dataset, unpickled apart, open the files once, when first read; closing one closes that
    open, and the other's next read opens the files again. An unpickled array reads under this module's LOCK."""
    opens: list[tuple[str, ...]] = []
    open_inputs = backend.open_inputs
    monkeypatch.setattr(backend, "_REOPENED", {})
    monkeypatch.setattr(backend, "open_inputs", lambda paths, *a, **k: opens.append(tuple(paths)) or
                        open_inputs(paths, *a, **k))
    with climio.open_mfdataset(EC_EARTH) as ds:
        want = float(ds["tas"].mean())
        opens.clear()
        first, second = (pickle.loads(pickle.dumps(ds)) for _ in range(2))
        assert opens == []
        assert float(first["tas"].mean()) == float(second["tas"].mean()) == want
        assert opens == [tuple(map(str, EC_EARTH))]
        recipe = backend.Recipe(tuple(map(str, EC_EARTH)), "time", "open_mfdataset")
        array = pickle.loads(pickle.dumps(backend.ClimioArray(backend.InputFiles(recipe), "tas")))
        assert array.lock is backend.LOCK and "lock" not in vars(array)
        assert len(opens) == 1
        first.close()
        assert float(second["tas"].mean()) == want
        assert len(opens) == 2


@pytest.mark.timeout(120)
def test_dask_process_scheduler_reads_in_its_workers() -> None:
    import dask

    with climio.open_mfdataset(EC_EARTH, chunks={"time": 12}) as ds:
        with dask.config.set(scheduler="processes", num_workers=2):
            got = float(ds["tas"].mean())
        with dask.config.set(scheduler="synchronous"):
            want = float(ds["tas"].mean())
    assert got == want
