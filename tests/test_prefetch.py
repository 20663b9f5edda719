"""Read-ahead for streaming reads: ``Store.byte_span`` finds the bytes of a hyperslab in a classic file, checked
against the raw bytes (big-endian values read straight from the file at the offsets it gives) in CDF-1, CDF-2 and
CDF-5 files with interleaved record variables and fixed ones; ``prefetch`` runs on them and is a no-op on netCDF-4;
the read-ahead thread takes every range."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import pytest

from climio.core import ncio
from climio.core.decomp import Hyperslab
from climio.core.mpi import world

REAL = Path(__file__).parent / "data" / "real"


def make(path: Path, fmt: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    values = {"a": rng.random((7, 5, 6)).astype("f4"), "b": rng.integers(-9, 9, (7, 3)).astype("i2"),
              "f": rng.random((4, 5)).astype("f8"), "c": rng.random((7,)).astype("f4")}
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        for dim, n in (("t", None), ("y", 5), ("x", 6), ("z", 3), ("w", 4)):
            ds.createDimension(dim, n)
        for name, dims in (("a", ("t", "y", "x")), ("b", ("t", "z")), ("f", ("w", "y")), ("c", ("t",))):
            ds.createVariable(name, values[name].dtype, dims)[:] = values[name]
    return values


def raw(path: Path, offset: int, dtype: np.dtype) -> float:
    with open(path, "rb") as f:
        f.seek(offset)
        return np.frombuffer(f.read(dtype.itemsize), dtype.newbyteorder(">"))[0]


@pytest.mark.parametrize("fmt", ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA"])
def test_byte_span_points_at_the_slabs_first_and_last_values(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "f.nc"
    values = make(path, fmt)
    slabs = {"a": [((2, 1, 3), (4, 3, 2)), ((0, 0, 0), (7, 5, 6)), ((6, 4, 5), (1, 1, 1))],
             "b": [((1, 0), (5, 3)), ((3, 2), (1, 1))], "f": [((1, 2), (2, 3)), ((0, 0), (4, 5))],
             "c": [((2,), (4,)), ((6,), (1,))]}
    with ncio.open(str(path), world()) as ds:
        for name, cases in slabs.items():
            for start, count in cases:
                lo, hi = ds.byte_span(name, Hyperslab(start, count))
                data = values[name]
                last = tuple(s + c - 1 for s, c in zip(start, count))
                assert raw(path, lo, data.dtype) == data[start]
                assert raw(path, hi - data.itemsize, data.dtype) == data[last]
                assert hi - lo >= int(np.prod(count)) * data.itemsize
                ds.prefetch(name, Hyperslab(start, count))
        assert ds.byte_span("a", Hyperslab((0, 0, 0), (0, 5, 6))) is None  # an empty slab asks for nothing


def test_prefetch_does_nothing_on_netcdf4_and_reads_stay_exact(tmp_path: Path) -> None:
    path = tmp_path / "f4.nc"
    values = make(path, "NETCDF4")
    with ncio.open(str(path), world()) as ds:
        assert ds.byte_span("a", Hyperslab((0, 0, 0), (2, 5, 6))) is None
        ds.prefetch("a", Hyperslab((0, 0, 0), (2, 5, 6)))
        assert np.array_equal(ds.read("a", Hyperslab((1, 0, 0), (3, 5, 6))), values["a"][1:4])


def test_byte_span_on_a_real_cmip5_file() -> None:
    path = REAL / "tas_Amon_EC-EARTH_historical_r1i1p1_185001-185912.nc"
    with netCDF4.Dataset(path) as nc, ncio.open(str(path), world()) as ds:
        nc.set_auto_maskandscale(False)
        tas = nc["tas"][:]
        n = tas.shape
        lo, hi = ds.byte_span("tas", Hyperslab((3, 0, 0), (5, *n[1:])))
        assert raw(path, lo, tas.dtype) == tas[3, 0, 0] and raw(path, hi - 4, tas.dtype) == tas[7, -1, -1]


def test_readahead_thread_advises_in_order_and_skips_what_it_cannot(tmp_path: Path) -> None:
    """The background thread takes every range (one trace record each, in order), a vanished file included,
    without raising into the caller."""
    import time

    from climio.core import readahead, trace

    path = tmp_path / "data.bin"
    path.write_bytes(bytes(1 << 20))
    log = trace.reset()
    for offset in (0, 1 << 18, 1 << 19):
        readahead.advise(str(path), offset, 4096)
    readahead.advise(str(tmp_path / "gone.bin"), 0, 4096)
    deadline = time.monotonic() + 10
    while len([r for r in log.records if r[0] == "prefetch"]) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [r[3] for r in log.records if r[0] == "prefetch"] == [4096] * 4
    trace.reset()
