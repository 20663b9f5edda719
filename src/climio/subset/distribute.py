"""Exchanges over block-distributed 1-D index spaces (MPI in place of Global Arrays), through the rearranger.

An element dimension of ``n`` elements is split over the ranks with
:func:`climio.core.decomp.block_range`; whoever owns element ``i`` holds its mask
bit and its new index. :func:`ask` brings the owners' values of any global indices
(seed 001's ``NGA_Gather``), :func:`requested` tells each owner which of its elements
someone asked for, and :func:`redistribute` moves rows of a packed array to the even
distribution of the output (its ``NGA_Put``). Each is one plan of
:mod:`climio.core.rearrange`: the owners' blocks on one side, the asked indices (an
offsets layout) or the packed rows (a box) on the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from climio.core.decomp import Decomposition, Hyperslab, block_range
from climio.core.rearrange import Layout, Plan

if TYPE_CHECKING:
    from mpi4py import MPI


def _owned(comm: MPI.Comm, n: int) -> Layout:
    """This rank's block of ``n`` elements."""
    return Layout.block(Decomposition.block1d((n,), comm.Get_size()), comm.Get_rank())


def ask(comm: MPI.Comm, indices: np.ndarray, n: int, answers: np.ndarray) -> np.ndarray:
    """For each global index, the owner's value (collective). ``answers`` are this rank's values for its whole
    block of the ``n`` elements; the result has ``indices``'s order (any order, repeats allowed)."""
    wanted = np.ascontiguousarray(indices, dtype=np.int64).ravel()
    with Plan(comm, _owned(comm, n), Layout.offsets((n,), wanted)) as plan:
        return plan.forward(np.ascontiguousarray(answers))


def requested(comm: MPI.Comm, indices: np.ndarray, n: int) -> np.ndarray:
    """Which elements of this rank's block some rank asked for with ``indices`` (collective): a mask of it."""
    wanted = np.ascontiguousarray(indices, dtype=np.int64).ravel()
    with Plan(comm, _owned(comm, n), Layout.offsets((n,), wanted)) as plan:
        mask = np.zeros(block_range(n, comm.Get_size(), comm.Get_rank())[1], dtype=np.int8)
        return plan.backward(np.ones(wanted.size, dtype=np.int8), out=mask).astype(bool)


def redistribute(comm: MPI.Comm, rows: np.ndarray, first: int, total: int) -> np.ndarray:
    """Move packed rows to the even distribution of ``total`` rows (collective).

    This rank's ``rows`` are global rows ``first .. first + len(rows)``; it gets
    back rows ``block_range(total, size, rank)``.
    """
    rows = np.ascontiguousarray(rows)
    shape = (total, *rows.shape[1:])
    mine = Layout.box(shape, Hyperslab((first, *(0,) * (rows.ndim - 1)), rows.shape))
    with Plan(comm, mine, Layout.block(Decomposition.block1d(shape, comm.Get_size()), comm.Get_rank())) as plan:
        return plan.forward(rows)
