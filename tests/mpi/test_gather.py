"""Every gather strategy gives rank 0 exactly the global array, for 2-D and 3-D fields with and without halos."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_all
from mpi4py import MPI

from climio.core.decomp import Decomposition, process_grid
from climio.errors import ClimioError
from climio.model.gather import STRATEGIES, Gatherer


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("shape", [(13, 17), (5, 11, 7)])  # 2-D and 3-D, uneven for every rank count
@pytest.mark.parametrize("halo", [0, 2])
@pytest.mark.parametrize("pass_halo", [True, False])
def test_rank0_gets_exactly_the_global_array(comm: MPI.Comm, strategy: str, shape: tuple[int, ...], halo: int,
                                             pass_halo: bool) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    px, py = process_grid(size, shape[-2], shape[-1])
    d = Decomposition.block2d(shape, px, py, halo=halo)
    truth = np.arange(np.prod(shape), dtype="f8").reshape(shape) * 1.5 - 7
    local = np.full(d.local_shape(rank, with_halo=pass_halo), -999.0)  # halo cells hold junk
    local[d.interior(rank) if pass_halo else ...] = truth[d.owned(rank).slices]
    with Gatherer(d, "f8", comm, strategy) as gatherer:
        for _ in range(2):  # plans are reused across steps
            got = gatherer.gather(local)
            assert_all(comm, (got is None) != (rank == 0))
            assert_all(comm, rank != 0 or np.array_equal(got, truth), f"{strategy} {shape} halo {halo}")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_gather_into_a_reused_output_array(comm: MPI.Comm, strategy: str) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    shape = (4, 9, 10)
    d = Decomposition.block2d(shape, *process_grid(size, 9, 10), halo=1)
    out = np.full(shape, np.nan, "f4") if rank == 0 else None
    with Gatherer(d, "f4", comm, strategy) as gatherer:
        for step in range(3):
            truth = (np.arange(np.prod(shape), dtype="f4").reshape(shape) + 1000 * step)
            local = np.full(d.local_shape(rank), -1.0, "f4")
            local[d.interior(rank)] = truth[d.owned(rank).slices]
            got = gatherer.gather(local, out=out)
            assert_all(comm, rank != 0 or (got is out and np.array_equal(out, truth)), f"{strategy} step {step}")
    if rank == 0:  # a wrong output array is refused before any message
        alone = Decomposition.block2d(shape, 1, 1)
        with Gatherer(alone, "f4", MPI.COMM_SELF, strategy) as gatherer:
            for bad in (np.zeros(shape, "f8"), np.zeros((4, 9, 11), "f4"), np.zeros(shape[::-1], "f4").T):
                with pytest.raises(ClimioError, match="this gatherer needs a C-contiguous"):
                    gatherer.gather(np.zeros(shape, "f4"), out=bad)


def test_more_ranks_than_rows_and_wrong_inputs(comm: MPI.Comm) -> None:
    size = comm.Get_size()
    d = Decomposition.block2d((3, 1, 4), 1, size)  # 1 row: ranks beyond the first own nothing
    truth = np.arange(12, dtype="i4").reshape(3, 1, 4)
    for strategy in STRATEGIES:
        with Gatherer(d, "i4", comm, strategy) as gatherer:
            got = gatherer.gather(truth[d.owned(comm.Get_rank()).slices].copy())
            assert_all(comm, comm.Get_rank() != 0 or np.array_equal(got, truth), strategy)
            with pytest.raises(ClimioError, match="planned for int32"):
                gatherer.gather(np.zeros(d.local_shape(comm.Get_rank()), "f8"))
            with pytest.raises(ClimioError, match="does not match its block"):
                gatherer.gather(np.zeros((3, 2, 9), "i4"))
    with pytest.raises(ClimioError, match="unknown gather strategy 'tree'"):
        Gatherer(d, "i4", comm, "tree")
    with pytest.raises(ClimioError, match="ranks but the job has"):
        Gatherer(Decomposition.block2d((4, 4), 1, size + 1), "i4", comm, "p2p")
