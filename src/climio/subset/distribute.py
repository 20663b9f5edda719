"""Exchanges over block-distributed 1-D index spaces (MPI in place of Global Arrays), through the rearranger.

An element dimension of ``n`` elements is split over the ranks with
:func:`climio.core.decomp.block_range`; whoever owns element ``i`` holds its mask
bit and its new index. :func:`ask` brings the owners' values of any global indices
(seed 001's ``NGA_Gather``), :func:`requested` tells each owner which of its elements
someone asked for, and :func:`redistribute` moves rows of a packed array to the even
distribution of the output (its ``NGA_Put``). All go through :mod:`climio.core.rearrange`:
the one-shot requests through its ``route``, the rows through a plan from the packed
rows (a box) to the owners' blocks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from climio.core.decomp import Decomposition, Hyperslab, block_range
from climio.core.rearrange import Layout, Plan, route

if TYPE_CHECKING:
    from mpi4py import MPI


def _owners(indices: np.ndarray, n: int, parts: int) -> np.ndarray:
    """The rank owning each of ``indices`` in the block distribution of ``n`` elements."""
    starts = np.array([block_range(n, parts, r)[0] for r in range(parts)] + [n], dtype=np.int64)
    return np.searchsorted(starts, indices, side="right") - 1


def _to_owners(comm: MPI.Comm, indices: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Route global indices to their owners: (the order they left in, what this rank received, from whom)."""
    wanted = np.ascontiguousarray(indices, dtype=np.int64).ravel()
    owner = _owners(wanted, n, comm.Get_size())
    got, sender = route(comm, wanted[:, None], owner)
    return np.argsort(owner, kind="stable"), got[:, 0], sender


def ask(comm: MPI.Comm, indices: np.ndarray, n: int, answers: np.ndarray) -> np.ndarray:
    """For each global index, the owner's value (collective; int64 out). ``answers`` are this rank's values for
    its whole block of the ``n`` elements; the result has ``indices``'s order (any order, repeats allowed).

    A one-shot request: the indices go to their owners and the answers come back with
    :func:`climio.core.rearrange.route`, with no plan to build (its datatypes would outweigh a single use)."""
    order, asked, sender = _to_owners(comm, indices, n)
    lo = block_range(n, comm.Get_size(), comm.Get_rank())[0]
    replies, _ = route(comm, np.asarray(answers, dtype=np.int64)[asked - lo][:, None], sender)
    out = np.empty(order.size, dtype=np.int64)
    out[order] = replies[:, 0]  # owners answer in rank order, each in the order it was asked
    return out


def requested(comm: MPI.Comm, indices: np.ndarray, n: int) -> np.ndarray:
    """Which elements of this rank's block some rank asked for with ``indices`` (collective): a mask of it."""
    _, asked, _ = _to_owners(comm, indices, n)
    lo, count = block_range(n, comm.Get_size(), comm.Get_rank())
    mask = np.zeros(count, dtype=bool)
    mask[asked - lo] = True
    return mask


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
