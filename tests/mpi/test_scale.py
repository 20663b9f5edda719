"""``climio bench scale`` works out each rank's messages, bytes and requests of a job of any size in one process;
here, at the real job's size, they equal what the real routes trace (built by the rearranger's box intersections
or its directory, with MPI), for every strategy and decomposition kind."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_all
from mpi4py import MPI

from climio.bench import scale
from climio.model.counts import Job, QUANTITIES, block_job, plan_cost, step_counts
from climio.core import collectives, trace
from climio.model.output import Field, ModelOutput
from climio.model.route import Route, node_of
from climio.model.strategy import Strategy

STRATEGIES = ["direct", "root", "rows", "cols", "agg", "agg:2", "agg:3", "stripe"]
COUNTED = [q for q in QUANTITIES if q != "plan_bytes"]


def traced(comm: MPI.Comm, job: Job, strategy: Strategy, dtype: str) -> tuple[dict[str, int], Route]:
    """The counts the real route of this rank traces, and the route; on blocks, every strategy whose writers
    follow from the record (all but direct) builds it without a collective call."""
    trace.reset()
    before = collectives.calls()
    route = strategy.route(comm, job.share(comm.Get_rank()), job.levels, dtype)
    if before is not None and job.owner is None and strategy.name != "direct":
        assert collectives.calls() == before, f"{job.label} {strategy.name}: the route communicated"
    try:
        return trace.tracer().tallies["route"], route
    finally:
        route.free()


@pytest.mark.parametrize("kind", [*scale.KINDS, "tiny"])
def test_simulated_counts_equal_the_traced_ones(comm: MPI.Comm, kind: str) -> None:
    """Each kind of decomposition; ``tiny``: a 3 x 2 grid on a process row, so that at 4 and 6 ranks some own
    nothing."""
    size, rank = comm.Get_size(), comm.Get_rank()
    if kind == "cube" and 6 % size and size % 6:
        pytest.skip("a cubed sphere splits over a divisor or a multiple of 6 ranks")
    job = block_job("tiny", (3, 2), 2, size, 1, 1) if kind == "tiny" else scale.job(kind, size)
    assert job.nranks == size
    for text in STRATEGIES:
        if text.startswith("agg:") and int(text[4:]) > size or text in ("rows", "cols") and job.share(0).blocks is None:
            continue
        strategy = Strategy.choose(text, "cdf5", comm, job.share(rank), stripe_size=1 << 16)
        assert strategy == Strategy.settle(text, "cdf5", node_of(comm), job.share(0), stripe_size=1 << 16)
        for itemsize, dtype in ((4, "f4"), (8, "f8")):
            real, route = traced(comm, job, strategy, dtype)
            simulated = step_counts(job, strategy, itemsize)
            differ = {q: (real[q], int(simulated[q][rank])) for q in COUNTED if real[q] != simulated[q][rank]}
            assert_all(comm, not differ, f"{kind} {text} {dtype}: (traced, simulated) {differ}")
            if job.owner is None and route.plan is not None:  # the plan's memory, from its own planning
                cost = plan_cost(job, strategy, [rank], itemsize)
                assert_all(comm, cost[rank][0] == real["plan_bytes"],
                           f"{kind} {text}: plan bytes {real['plan_bytes']} real, {cost[rank][0]} worked out")


def test_a_model_output_step_traces_the_simulated_counts(comm: MPI.Comm, shared_dir: str) -> None:
    """Written through ModelOutput (a step of two fields of one shape: one route, traced once)."""
    size, rank = comm.Get_size(), comm.Get_rank()
    job = scale.job("CA", size)
    share = job.share(rank)
    trace.reset()
    fields = [Field("O3", levels=job.levels), Field("NO2", levels=job.levels)]
    with ModelOutput(f"{shared_dir}/ca.nc", share, fields, comm, mode="cdf5", strategy="agg") as out:
        local = np.zeros(share.local_shape(job.levels), "f4")
        out.write(0, {"O3": local, "NO2": local}, 0.0)
    real = trace.tracer().tallies["route"]
    strategy = Strategy.settle("agg", "cdf5", node_of(comm), job.share(0))
    simulated = step_counts(job, strategy)
    differ = {q: (real[q], int(simulated[q][rank])) for q in COUNTED if real[q] != simulated[q][rank]}
    assert_all(comm, not differ, f"(traced, simulated) {differ}")
