"""Compressed and quantized model output: every strategy writes the same values in chunks of one record, with the
filters declared; quantized values equal netCDF4-python's serial quantization of the same data."""

from __future__ import annotations

import os

import netCDF4
import numpy as np
import pytest
from conftest import assert_all, runs_here
from mpi4py import MPI

from climio.core.decomp import process_grid
from climio.core.ncio.compression import available_filters
from climio.errors import ClimioError
from climio.model import decomposition as dec
from climio.model.input import ModelInput
from climio.model.output import Field, ModelOutput

NY, NX, NLEV = 12, 14, 3
FIELDS = [Field("t", levels=NLEV, deflate=1, quantize=("GranularBR", 3)), Field("n", dtype="i4", deflate=4),
          Field("b", quantize=("BitRound", 9)), Field("s", codecs="shf|bz2,3|f32"),
          Field("z", levels=NLEV, codecs="szip,8")]


def truth(f: Field) -> np.ndarray:
    shape = (NLEV, NY, NX) if f.levels else (NY, NX)
    x = np.linspace(0.0, 1.0, int(np.prod(shape))).reshape(shape)
    return (273.15 + 30 * np.sin(7 * x) if f.dtype == "f4" else 1000 * x).astype(f.dtype)


def reference(tmp: str, f: Field) -> np.ndarray:
    """netCDF4-python's serial write of the same values with the same quantization (independent of climio)."""
    path = os.path.join(tmp, f"ref-{f.name}.nc")
    with netCDF4.Dataset(path, "w") as ds:
        for dim, n in zip(("l", "y", "x"), (NLEV, NY, NX)):
            ds.createDimension(dim, n)
        dims = ("l", "y", "x") if f.levels else ("y", "x")
        mode = {"GranularBR": "GranularBitRound", "BitRound": "BitRound"}.get(f.quantize[0]) if f.quantize else None
        var = ds.createVariable("v", f.dtype, dims, significant_digits=f.quantize[1] if f.quantize else None,
                                quantize_mode=mode or "BitGroom")
        var[...] = truth(f)
    with netCDF4.Dataset(path) as ds:
        return ds["v"][...].data


WRITES = ["direct", "root", "rows", "agg:2", "agg"]


@pytest.mark.parametrize("strategy", WRITES)
def test_compressed_output(comm: MPI.Comm, shared_dir: str, strategy: str) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    if strategy == "agg:2" and size < 2:
        return
    d = dec.blocks((NY, NX), *process_grid(size, NY, NX), rank, halo=1)
    path = os.path.join(shared_dir, f"z-{strategy.replace(':', '')}.nc")
    with ModelOutput(path, d, FIELDS, comm, mode="hdf5", strategy=strategy) as out:
        for step in range(2):
            local = {}
            for f in FIELDS:
                whole = truth(f)
                array = np.full(d.local_shape(f.levels), -1, f.dtype)
                array[d.interior(f.levels)] = whole[(..., *d.box.slices)]
                local[f.name] = array
            out.write(step, local, time=float(step))
    ok = True
    if rank == 0:
        with netCDF4.Dataset(path) as ds:
            ds.set_auto_mask(False)
            t, n, b = ds["t"], ds["n"], ds["b"]
            ok &= t.filters()["zlib"] and t.filters()["complevel"] == 1 and t.filters()["shuffle"]
            ok &= n.filters()["complevel"] == 4 and not b.filters()["zlib"]
            ok &= t.quantization() == (3, "GranularBitRound") and b.quantization() == (9, "BitRound")
            s, z = ds["s"].filters(), ds["z"].filters()
            ok &= s["bzip2"] and s["complevel"] == 3 and s["shuffle"] and s["fletcher32"] and not s["zlib"]
            ok &= z["szip"] == {"coding": "nn", "pixels_per_block": 8} and not z["shuffle"]
            writers = {"agg:2": 2, "agg": 1}.get(strategy, 1)
            ok &= t.chunking() == [1, -(-NLEV // writers), NY, NX] and n.chunking() == [1, NY, NX]
            for f in FIELDS:
                expected = reference(shared_dir, f) if f.quantize else truth(f)
                for step in range(2):
                    ok &= np.array_equal(ds[f.name][step], expected)
            x = truth(FIELDS[0]).astype("f8")
            ok &= float(np.max(np.abs(ds["t"][0] - x) / np.abs(x))) < 5e-3  # 3 significant digits
    assert_all(comm, ok, f"{strategy}: compressed file")
    expected = {f.name: comm.bcast(reference(shared_dir, f) if rank == 0 and f.quantize else None)
                if f.quantize else truth(f) for f in FIELDS}
    for j, read in enumerate(("root", "direct", "agg")):  # parallel reads of deflated chunks, into halo'd blocks
        if not runs_here(comm, j + WRITES.index(strategy)):  # each at 1 rank and at two of 2, 3, 4, 6
            continue
        with ModelInput(path, d, comm, strategy=read) as back:
            for f in FIELDS:
                got = back.read(f.name, record=1, cf=False)
                assert_all(comm, np.array_equal(got[d.interior(f.levels)], expected[f.name][(..., *d.box.slices)]),
                           f"{strategy} read back with {read}: {f.name}")


def test_compression_needs_netcdf4(comm: MPI.Comm, shared_dir: str) -> None:
    d = dec.round_robin((NY, NX), comm.Get_size(), comm.Get_rank())
    with pytest.raises(ClimioError, match="compression and quantization need a netCDF-4 file.*use mode hdf5"):
        ModelOutput(os.path.join(shared_dir, "c.nc"), d, FIELDS, comm, mode="cdf5", strategy="agg")
    with pytest.raises(ClimioError, match="variable 'n' is int32: quantization applies to float32 and float64"):
        ModelOutput(os.path.join(shared_dir, "q.nc"), d, [Field("n", dtype="i4", quantize=("BitGroom", 2))], comm,
                    mode="hdf5")
    with pytest.raises(ClimioError, match="GranularBR keeps at most 7 significant digits, not 9"):
        ModelOutput(os.path.join(shared_dir, "q.nc"), d, [Field("x", quantize=("GranularBR", 9))], comm,
                    mode="hdf5")
    with pytest.raises(ClimioError, match="deflate level 10"):
        Field("x", deflate=10).compression
    with pytest.raises(ClimioError, match="field 'x': give codecs or deflate/quantize, not both"):
        Field("x", deflate=1, codecs="bz2").compression
    if not available_filters()["zstd"]:  # Debian packages no zstd plugin for HDF5
        with pytest.raises(ClimioError, match="cannot apply zstd .filter id 32015.: install its HDF5 plugin"):
            ModelOutput(os.path.join(shared_dir, "q.nc"), d, [Field("x", codecs="zst,3")], comm, mode="hdf5")
    assert_all(comm, not [n for n in os.listdir(shared_dir) if n.endswith(".nc") or "climio-tmp" in n], "no files")
