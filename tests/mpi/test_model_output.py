"""Every write strategy x every storage mode writes the same file, at every rank count, with uneven grids."""

from __future__ import annotations

import os
from dataclasses import replace

import netCDF4
import numpy as np
import pytest
from conftest import assert_all, runs_here
from mpi4py import MPI

from climio.core.decomp import Decomposition, process_grid
from climio.errors import ClimioError
from climio.model import costmodel
from climio.model.counts import Job
from climio.model.decomposition import from_blocks
from climio.model.output import STRATEGIES, Field, ModelOutput, applicable_modes

NY, NX, NLEV, STEPS = 11, 13, 4, 2
FIELDS = [Field("T", levels=NLEV, attrs={"units": "K"}), Field("ps", attrs={"units": "Pa"}),
          Field("mask", dtype="i4")]


def truth(name: str, step: int) -> np.ndarray:
    shape = {"T": (NLEV, NY, NX), "ps": (NY, NX), "mask": (NY, NX)}[name]
    values = np.arange(np.prod(shape)).reshape(shape) + 1000 * step + {"T": 0, "ps": 7, "mask": 3}[name]
    return values.astype("i4" if name == "mask" else "f4")


def holds_truth(comm: MPI.Comm, path: str, steps: int) -> bool:
    """Whether the file at ``path`` holds every field's true values for ``steps`` steps (read on rank 0)."""
    ok = True
    if comm.Get_rank() == 0:
        with netCDF4.Dataset(path) as ds:
            ds.set_auto_mask(False)
            ok = all(np.array_equal(ds[f.name][s], truth(f.name, s)) for f in FIELDS for s in range(steps))
    return ok


def local_arrays(rank: int, px: int, py: int, step: int, halo: int) -> dict[str, np.ndarray]:
    out = {}
    for f in FIELDS:
        whole = truth(f.name, step)
        d = Decomposition.block2d(whole.shape, px, py, halo=halo)
        local = np.full(d.local_shape(rank), -1, whole.dtype)  # halo cells hold junk
        local[d.interior(rank)] = whole[d.owned(rank).slices]
        out[f.name] = local
    return out


MODES = ["serial", "hdf5", "cdf2", "cdf5"]
WRITES = [s for s in STRATEGIES if s != "agg"] + ["agg", "agg:1", "agg:2"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strategy", WRITES)
def test_every_strategy_and_mode_writes_the_same_values(comm: MPI.Comm, shared_dir: str, strategy: str,
                                                        mode: str) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    if mode not in applicable_modes(strategy):
        with pytest.raises(ClimioError, match=f"does not apply to mode '{mode}'.*works with"):
            ModelOutput(os.path.join(shared_dir, "x.nc"), Decomposition.block2d((NY, NX), size, 1), FIELDS, comm,
                        mode=mode, strategy=strategy)
        return
    if strategy == "agg:2" and size < 2:
        with pytest.raises(ClimioError, match="more aggregators than the 1 ranks"):
            ModelOutput(os.path.join(shared_dir, "x.nc"), Decomposition.block2d((NY, NX), 1, 1), FIELDS, comm,
                        mode=mode, strategy=strategy)
        return
    px, py = process_grid(size, NY, NX)
    # stripe: 40-byte stripes over up to 3 aggregators cut rows, levels and records at odd places
    stripes = {"stripe_count": min(3, size), "stripe_size": 40} if strategy == "stripe" else {}
    grids = list(dict.fromkeys([(px, py), (size, 1), (1, size)]))  # square-ish, one row, one column of ranks
    for g, grid in enumerate(grids):
        # each grid at 1 rank and at two of 2, 3, 4, 6 (conftest.runs_here): every grid of every strategy and mode
        # at some count, each count running at least one grid of each
        if not runs_here(comm, g + WRITES.index(strategy) + MODES.index(mode)):
            continue
        decomp = Decomposition.block2d((NY, NX), *grid, halo=1)
        path = os.path.join(shared_dir, f"{strategy.replace(':', '')}-{mode}-{grid[0]}x{grid[1]}.nc")  # ROMIO: no ':' 
        with ModelOutput(path, decomp, FIELDS, comm, mode=mode, strategy=strategy, **stripes) as out:
            for step in range(STEPS):
                out.write(step, local_arrays(rank, *grid, step, halo=1), time=3600.0 * step)
        ok = True
        if rank == 0:
            with netCDF4.Dataset(path) as ds:
                ds.set_auto_mask(False)
                ok = list(ds["time"][:]) == [0.0, 3600.0] and all(
                    np.array_equal(ds[f.name][s], truth(f.name, s)) for f in FIELDS for s in range(STEPS))
        assert_all(comm, ok, f"{strategy} {mode} grid {grid}")


def test_bad_model_output_input(comm: MPI.Comm, shared_dir: str) -> None:
    size = comm.Get_size()
    decomp = Decomposition.block2d((NY, NX), size, 1)
    with pytest.raises(ClimioError, match="unknown I/O strategy 'carrier-pigeon'"):
        ModelOutput(os.path.join(shared_dir, "a.nc"), decomp, FIELDS, comm, strategy="carrier-pigeon")
    with pytest.raises(ClimioError, match="needs .* ranks but the job has"):
        ModelOutput(os.path.join(shared_dir, "b.nc"), Decomposition.block2d((NY, NX), size + 1, 1), FIELDS, comm)
    with ModelOutput(os.path.join(shared_dir, "c.nc"), decomp, FIELDS, comm) as out:
        with pytest.raises(ClimioError, match="does not match its decomposition"):
            arrays = local_arrays(comm.Get_rank(), size, 1, 0, halo=0)
            arrays["T"] = np.zeros((NLEV, 1, 1), "f4")
            out.write(0, arrays, 0.0)
        with pytest.raises(ClimioError, match="on rank 0 does not match its decomposition"):  # one rank: no hang
            arrays = local_arrays(comm.Get_rank(), size, 1, 0, halo=0)
            if comm.Get_rank() == 0:
                arrays["ps"] = np.zeros((1, 1), "f4")
            out.write(0, arrays, 0.0)
        out.write(0, local_arrays(comm.Get_rank(), size, 1, 0, halo=0), 0.0)


def test_records_of_many_routes_keep_within_a_steps_buffers(comm: MPI.Comm, shared_dir: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """stripe's records each take a route of their own; a call's records still move in batches that fit the
    step's buffers (here 2 records of T on the fullest writer): 8 steps x 3 fields in 8 to 13 exchanges, not
    one, and the file holds every value."""
    from climio.core import trace
    from climio.model import output

    rank, size = comm.Get_rank(), comm.Get_size()
    grid = process_grid(size, NY, NX)
    decomp = Decomposition.block2d((NY, NX), *grid, halo=1)
    monkeypatch.setattr(output, "STEP_BUFFER_BYTES", 2 * NLEV * NY * NX * 4)
    path = os.path.join(shared_dir, "bounded.nc")
    steps = 8
    with ModelOutput(path, decomp, FIELDS, comm, mode="cdf5", strategy="stripe", stripe_count=min(2, size),
                     stripe_size=1 << 20) as out:  # every record at a phase of its own: a route each
        records = [(step, name, local) for step in range(steps)
                   for name, local in local_arrays(rank, *grid, step, halo=1).items()]
        tracer = trace.reset()
        out.write_records(records)
        exchanges = sum(1 for r in tracer.records if r[0] == "rearrange")
        for step in range(steps):
            out.write_time(step, 3600.0 * step)
    assert_all(comm, size == 1 or 8 <= exchanges <= 13, f"{exchanges} exchanges")  # 1 rank moves without MPI
    ok = True
    if rank == 0:
        with netCDF4.Dataset(path) as ds:
            ds.set_auto_mask(False)
            ok = all(np.array_equal(ds[f.name][s], truth(f.name, s)) for f in FIELDS for s in range(steps))
    assert_all(comm, ok, "stripe in bounded batches")


@pytest.mark.parametrize("strategy", ["stripe", "agg", "root"])
def test_several_steps_in_one_write_records(comm: MPI.Comm, shared_dir: str, strategy: str) -> None:
    """Every step's records in one write_records call (as a model's held writes can be), in an order that is no
    step's: the same values as step by step. With 8-byte stripes each record of each step takes a stripe route of
    its own, more than the routes kept between writes, all of them used in the one call."""
    rank, size = comm.Get_rank(), comm.Get_size()
    grid = process_grid(size, NY, NX)
    decomp = Decomposition.block2d((NY, NX), *grid, halo=1)
    stripes = {"stripe_count": min(2, size), "stripe_size": 8} if strategy == "stripe" else {}
    path = os.path.join(shared_dir, f"records-{strategy}.nc")
    with ModelOutput(path, decomp, FIELDS, comm, mode="cdf5", strategy=strategy, **stripes) as out:
        steps = 8  # x 3 fields: more routes than are kept (3 + 8)
        records = [(step, name, local) for step in range(steps)
                   for name, local in local_arrays(rank, *grid, step, halo=1).items()]
        out.write_records(records[::-1])
        for step in range(steps):
            out.write_time(step, 3600.0 * step)
    assert_all(comm, holds_truth(comm, path, steps), f"{strategy}: steps in one write_records")


def test_auto_writes_with_the_cost_models_fastest(comm: MPI.Comm, shared_dir: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` writes with the strategy the cost model ranks first for this job on $CLIMIO_MACHINE: where a
    message is dear, one whose busiest ranks send and receive the fewest (MPI-IO's two-phase write included);
    where a writer's requests are, not direct (its aggregators sort every rank's rows)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    px, py = process_grid(size, NY, NX)
    decomp = Decomposition.block2d((NY, NX), px, py, halo=1)
    shares = tuple(from_blocks(decomp, r) for r in range(size))
    jobs = [(Job("auto", size, (NY, NX), levels, shares), count, itemsize)
            for (levels, itemsize), count in {(NLEV, 4): 1, (None, 4): 2}.items()]
    node = costmodel.find("node")
    machines = {"messages": replace(node, latency_s=1.0),
                "requests": replace(node, request_s=1.0, shared_request_s=1.0, run_s=1.0)}
    picked = {}
    for dear, machine in machines.items():
        site = os.path.join(shared_dir, f"{dear}.toml")
        if rank == 0:
            costmodel.save(machine, site)
        comm.Barrier()
        monkeypatch.setenv("CLIMIO_MACHINE", site)
        best = costmodel.ranking(machine, jobs, "cdf5")[0][1]
        path = os.path.join(shared_dir, f"auto-{dear}.nc")
        with ModelOutput(path, decomp, FIELDS, comm, mode="cdf5", strategy="auto") as out:
            for step in range(STEPS):
                out.write(step, local_arrays(rank, px, py, step, halo=1), time=3600.0 * step)
        assert_all(comm, out.strategy == costmodel.settle(machine, jobs[0][0], best, "cdf5"),
                   f"{dear} dear: auto wrote with {out.strategy}, the model ranks {best} first")
        picked[dear] = best
        assert_all(comm, holds_truth(comm, path, STEPS), f"auto, {dear} dear: the file's values")

    def messages(text: str) -> int:
        """The busiest rank's messages of each shape's record under ``text``, summed over the shapes."""
        counted = 0
        for job, _, itemsize in jobs:
            strategy = costmodel.settle(machines["messages"], job, text, "cdf5")
            c, _ = costmodel.file_counts(machines["messages"], job, strategy, "cdf5", itemsize)
            counted += int(np.max(c["messages_sent"] + c["messages_received"]))
        return counted

    fewest = min(messages(t) for t in costmodel.candidates(machines["messages"], jobs[0][0], "cdf5"))
    # on one rank nothing is exchanged whatever the strategy: the model weighs the writes alone
    assert_all(comm, size == 1 or (messages(picked["messages"]) == fewest and picked["requests"] != "direct"),
               str(picked))
    monkeypatch.setenv("CLIMIO_MACHINE", os.path.join(shared_dir, "nowhere.toml"))  # every rank told, none waits
    with pytest.raises(ClimioError, match=r"strategy auto: .*nowhere.toml: cannot read the machine file"):
        ModelOutput(os.path.join(shared_dir, "auto-nowhere.nc"), decomp, FIELDS, comm, mode="cdf5", strategy="auto")
    assert_all(comm, not os.path.exists(os.path.join(shared_dir, "auto-nowhere.nc")), "a file made without a strategy")
