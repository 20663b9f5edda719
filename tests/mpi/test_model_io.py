"""Write-then-read round trips for every decomposition helper x write strategy x storage mode x read strategy.

The truth is a global array per field and step; each rank hands ModelOutput its share (halo and ghost
entries hold junk that must never reach the file), rank 0 checks the file with netCDF4-python (owned points
exact, holes = _FillValue), and ModelInput reads it back into the same decomposition with each read strategy
in turn: owned and ghost points exact, everything else the fill value.
"""

from __future__ import annotations

import math
import os

import netCDF4
import numpy as np
import pytest
from conftest import LARGE, assert_all, runs_here
from mpi4py import MPI

from climio.core.decomp import process_grid
from climio.errors import ClimioError
from climio.model import decomposition as dec
from climio.model import piomap
from climio.model.input import ModelInput
from climio.model.output import Field, ModelOutput, applicable_modes

NY, NX, NLEV, STEPS, JUNK = 9, 10, 3, 2, -7
MODES = ["serial", "hdf5", "cdf2", "cdf5"]
WRITES = ["direct", "root", "rows", "cols", "agg", "agg:2", "stripe", "auto"]
READS = ["root", "direct", "agg:1", "agg", "auto"]
FIELDS = [Field("T", levels=NLEV, attrs={"units": "K"}), Field("ps", attrs={"units": "Pa"}),
          Field("k", dtype="i4")]


def ocean_masks() -> list[np.ndarray]:
    """A coast (land in the north-east corner and a strip along the south), and an ocean in the west only."""
    coast = np.ones((NY, NX), bool)
    coast[:4, 5:] = False
    coast[-2:, :] = False
    west = np.zeros((NY, NX), bool)
    west[:, :5] = True
    return [coast, west]


def land_grid(size: int) -> tuple[np.ndarray, int, int]:
    """A mask and a process grid with land blocks whose ocean blocks number exactly ``size``."""
    for mask in ocean_masks():
        for px in range(1, 7):
            for py in range(1, 7):
                if dec.land_block_count(mask, px, py) == size and px * py > size:
                    return mask, px, py
    raise AssertionError(f"no land-eliminated grid of {size} ranks")


def neighbours(n: int) -> np.ndarray:
    """A ring of cells with one chord per cell: cell i touches i-1, i+1 and (i + n // 3) mod n."""
    i = np.arange(n)
    return np.stack([(i - 1) % n, (i + 1) % n, (i + n // 3) % n, np.full(n, -1)], axis=1)


def decomposition(kind: str, comm: MPI.Comm, grid_dir: str) -> dec.GridDecomposition:
    """The decomposition ``kind`` for this job's rank count."""
    rank, size = comm.Get_rank(), comm.Get_size()
    rng = np.random.default_rng(17)
    if kind == "blocks":
        return dec.blocks((NY, NX), *process_grid(size, NY, NX), rank, halo=1)
    if kind == "land":
        mask, px, py = land_grid(size)
        return dec.land_blocks(mask, px, py, rank, halo=1)
    if kind == "round_robin":
        return dec.round_robin((NY, NX), size, rank)
    if kind == "cells":
        owner = rng.integers(0, size, NY * NX)
        return dec.cells(owner, rank, nranks=size, neighbours=neighbours(NY * NX), layers=2)
    if kind == "cubed_sphere":
        return dec.cubed_sphere(4, size, rank, halo=1)
    # a PIO map: a random permutation of 80 % of the points, dealt unevenly (rank 0 none when there are
    # several), with holes (-1) among the local elements; written as a PIO text file and read back
    points = rng.permutation(NY * NX)[:NY * NX * 4 // 5]
    cuts = np.sort(rng.integers(0, points.size, size - 1)) if size > 1 else np.zeros(0, int)
    parts = np.split(points, cuts)
    if size > 1:
        parts[1] = np.concatenate([parts[0], parts[1]])
        parts[0] = points[:0]
    maps = [np.insert(p, min(1, p.size), -1) if p.size else p for p in parts]
    path = os.path.join(grid_dir, "decomp.txt")
    if rank == 0:
        piomap.write_map_text(path, piomap.from_offsets((NY, NX), maps))
    comm.Barrier()
    m = piomap.read_map(path)
    return dec.from_compmap(m.dims, m.maps[rank], m.ntasks, rank)


KINDS = ["blocks", "land", "round_robin", "cells", "cubed_sphere", "pio"]


def truth(f: Field, grid: tuple[int, ...], step: int) -> np.ndarray:
    shape = (f.levels, *grid) if f.levels else grid
    return (np.arange(math.prod(shape)).reshape(shape) * 3 + 1000 * step + len(f.name)).astype(f.dtype)


def owned_mask(d: dec.GridDecomposition, comm: MPI.Comm) -> np.ndarray:
    """Which grid points some rank owns, computed independently of the library's routes."""
    mine = np.zeros(math.prod(d.grid), bool)
    if isinstance(d, dec.BlockDecomposition):
        mine.reshape(d.grid)[d.box.slices] = True
    else:
        mine[d.offsets[d.offsets >= 0]] = True
    return comm.allreduce(mine.astype(np.int8)).reshape(d.grid) > 0  # sum over ranks: owned somewhere


def local_of(d: dec.GridDecomposition, whole: np.ndarray, levels: int | None, ghosts: bool,
             other: float) -> np.ndarray:
    """This rank's local array of ``whole``: owned points (and ghosts if ``ghosts``), ``other`` elsewhere."""
    out = np.full(d.local_shape(levels), other, whole.dtype)
    if isinstance(d, dec.BlockDecomposition):
        out[d.interior(levels)] = whole[(..., *d.box.slices)]
        return out
    flat = whole.reshape((levels, -1) if levels else -1)
    n = d.offsets.size
    valid = d.offsets >= 0
    out[..., :n][..., valid] = flat[..., d.offsets[valid]]
    if ghosts:
        out[..., n:] = flat[..., d.ghost_offsets]
    return out


def fill_of(f: Field) -> object:
    return netCDF4.default_fillvals[np.dtype(f.dtype).str[1:]]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_round_trip(comm: MPI.Comm, shared_dir: str, kind: str, mode: str) -> None:
    size = comm.Get_size()
    if kind == "cubed_sphere" and 6 % size and size % 6:  # no layout over this count (4 ranks): refused
        with pytest.raises(ClimioError, match=f"a cubed sphere splits over a divisor or a multiple of 6 ranks, not "
                                              f"{size}$"):
            decomposition(kind, comm, shared_dir)
        return
    d = decomposition(kind, comm, shared_dir)
    mask = owned_mask(d, comm)
    holes = not mask.all()
    assert_all(comm, holes == (kind in ("land", "pio")), f"{kind}: holes where expected")
    strategies = [s for s in WRITES if mode in applicable_modes(s)]
    for k, strategy in enumerate(WRITES):
        if mode not in applicable_modes(strategy) or (strategy == "agg:2" and comm.Get_size() < 2):
            continue
        if strategy in ("rows", "cols") and d.blocks is None:
            with pytest.raises(ClimioError, match=f"'{strategy}' writes whole (rows|columns) of a process grid of "):
                ModelOutput(os.path.join(shared_dir, "no.nc"), d, FIELDS, comm, mode=mode, strategy=strategy)
            continue
        # each round trip at 1 rank and at two of 2, 3, 4, 6 (conftest.runs_here); the cubed sphere has no 4
        case = strategies.index(strategy) + KINDS.index(kind) + MODES.index(mode)
        if not runs_here(comm, case, large=(6,) if kind == "cubed_sphere" else LARGE):
            continue
        path = os.path.join(shared_dir, f"{kind}-{strategy.replace(':', '')}-{mode}.nc")
        stripes = {"stripe_count": min(3, comm.Get_size()), "stripe_size": 40} if strategy == "stripe" else {}
        with ModelOutput(path, d, FIELDS, comm, mode=mode, strategy=strategy, **stripes) as out:
            for step in range(STEPS):
                out.write(step, {f.name: local_of(d, truth(f, d.grid, step), f.levels, False, JUNK)
                                 for f in FIELDS}, time=60.0 * step)
        ok = True
        if comm.Get_rank() == 0:
            with netCDF4.Dataset(path) as ds:
                ds.set_auto_mask(False)
                for f in FIELDS:
                    fill = fill_of(f)
                    ok &= ("_FillValue" in ds[f.name].ncattrs()) == holes
                    for step in range(STEPS):
                        expected = np.where(mask, truth(f, d.grid, step), np.asarray(fill, f.dtype))
                        ok &= np.array_equal(ds[f.name][step], expected)
        assert_all(comm, ok, f"{kind} {strategy} {mode}: the file")
        read = READS[k % len(READS)] if mode != "serial" else "root"
        with ModelInput(path, d, comm, strategy=read) as model_input:
            for f in FIELDS:
                for step in range(STEPS):
                    got = model_input.read(f.name, record=step, cf=False)
                    whole = np.where(mask, truth(f, d.grid, step), np.asarray(fill_of(f), f.dtype))
                    expected = local_of(d, whole, f.levels, True, fill_of(f))
                    assert_all(comm, got.dtype == np.dtype(f.dtype) and np.array_equal(got, expected),
                               f"{kind} {strategy} {mode} read {read}: {f.name} step {step}")


def test_cf_view_and_errors(comm: MPI.Comm, shared_dir: str) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    d = dec.from_offsets((NY, NX), [rank, -1, rank + size], size, rank)  # most points are holes
    path = os.path.join(shared_dir, "cf.nc")
    fields = [Field("t", attrs={"units": "K"}), Field("n", dtype="i2", attrs={"scale_factor": 0.5})]
    with ModelOutput(path, d, fields, comm, mode="cdf5", strategy="agg") as out:
        out.write(0, {"t": np.array([1.5, 9.0, 2.5], "f4"), "n": np.array([3, 0, 5], "i2")}, 0.0)
    with ModelInput(path, d, comm) as model_input:
        t, n = model_input.read("t", 0), model_input.read("n", 0)
        assert_all(comm, np.array_equal(t, [1.5, np.nan, 2.5], equal_nan=True), "t: the hole is NaN")
        assert_all(comm, n.dtype.kind == "f" and np.array_equal(n, [1.5, np.nan, 2.5], equal_nan=True),
                   "n: unpacked by scale_factor, the hole NaN")
        with pytest.raises(ClimioError, match="has 1 records: pass record=0..0"):
            model_input.read("t")
        with pytest.raises(ClimioError, match="no numeric variable 'nope'"):
            model_input.read("nope", 0)
    other = dec.round_robin((NX, NY), size, rank)
    with pytest.raises(ClimioError, match=r"variable 't' .* is not \(\[time,\] \[level,\] \*grid\)"):
        with ModelInput(path, other, comm) as model_input:
            model_input.read("t", 0)
    with pytest.raises(ClimioError, match="read strategy 'stripe'"):
        ModelInput(path, d, comm, strategy="stripe")
    if 6 % size and size % 6:
        with pytest.raises(ClimioError, match=f"cubed sphere splits over a divisor or a multiple of 6 ranks, not {size}"):
            dec.cubed_sphere(4, size, rank)
    with pytest.raises(ClimioError, match="the decomposition is for"):
        ModelOutput(os.path.join(shared_dir, "x.nc"), dec.round_robin((NY, NX), size + 1, rank), fields, comm)
