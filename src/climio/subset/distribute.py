"""All-to-all exchanges over block-distributed 1-D index spaces (MPI in place of Global Arrays).

An element dimension of ``n`` elements is split over the ranks with
:func:`climio.core.decomp.block_range`; whoever owns element ``i`` holds its mask
bit and its new index. :func:`ask` sends requests to the owners and brings their
answers back (seed 001's ``NGA_Gather``); :func:`redistribute` moves rows of a
packed array to the even distribution of the output (its ``NGA_Put``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from climio.core.decomp import block_range

if TYPE_CHECKING:
    from mpi4py import MPI


def block_starts(n: int, parts: int) -> np.ndarray:
    """First element of every block, plus ``n`` at the end (``parts + 1`` values)."""
    return np.array([block_range(n, parts, r)[0] for r in range(parts)] + [n], dtype=np.int64)


def owners(indices: np.ndarray, n: int, parts: int) -> np.ndarray:
    """The rank owning each of ``indices`` in the block distribution of ``n`` elements."""
    return np.searchsorted(block_starts(n, parts), indices, side="right") - 1


def _exchange(comm: MPI.Comm, send: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Alltoallv of ``send`` (grouped by destination, ``counts`` each); returns (received, their counts)."""
    from mpi4py import MPI

    recv_counts = np.empty_like(counts)
    comm.Alltoall(counts, recv_counts)
    send_displ = np.concatenate([[0], np.cumsum(counts)[:-1]])
    recv_displ = np.concatenate([[0], np.cumsum(recv_counts)[:-1]])
    received = np.empty(int(recv_counts.sum()), dtype=send.dtype)
    datatype = MPI._typedict[send.dtype.char]
    comm.Alltoallv([send, counts, send_displ, datatype], [received, recv_counts, recv_displ, datatype])
    return received, recv_counts


def _route(comm: MPI.Comm, indices: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Send each global index to its owner: (the caller's order by owner, counts sent, indices received)."""
    size = comm.Get_size()
    indices = np.ascontiguousarray(indices, dtype=np.int64).ravel()
    where = owners(indices, n, size)
    order = np.argsort(where, kind="stable")
    received, recv_counts = _exchange(comm, indices[order], np.bincount(where, minlength=size).astype(np.int64))
    return order, recv_counts, received


def ask(comm: MPI.Comm, indices: np.ndarray, n: int, answer: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """For each global index, the owner's ``answer(indices)`` value (collective; int64 in and out).

    ``answer`` runs on the owner with the requested indices; requests go out in
    one Alltoallv and the answers come back in another, in the caller's order.
    """
    order, recv_counts, requests = _route(comm, indices, n)
    answers, _ = _exchange(comm, np.ascontiguousarray(answer(requests), dtype=np.int64), recv_counts)
    out = np.empty_like(answers)
    out[order] = answers
    return out


def tell(comm: MPI.Comm, indices: np.ndarray, n: int) -> np.ndarray:
    """Send each global index to its owner; return the indices this rank received (collective)."""
    return _route(comm, indices, n)[2]


def redistribute(comm: MPI.Comm, rows: np.ndarray, first: int, total: int) -> np.ndarray:
    """Move packed rows to the even distribution of ``total`` rows (collective).

    This rank's ``rows`` are global rows ``first .. first + len(rows)``; it gets
    back rows ``block_range(total, size, rank)``. Rows travel as one derived
    datatype each, so counts stay small however large the rows are.
    """
    from mpi4py import MPI

    size, rank = comm.Get_size(), comm.Get_rank()
    rows = np.ascontiguousarray(rows)
    starts = block_starts(total, size)
    ends = np.minimum(starts[1:], first + len(rows))
    send_counts = np.maximum(ends - np.maximum(starts[:-1], first), 0).astype(np.int64)
    recv_counts = np.empty_like(send_counts)
    comm.Alltoall(send_counts, recv_counts)
    out = np.empty((block_range(total, size, rank)[1], *rows.shape[1:]), dtype=rows.dtype)
    row_bytes = int(np.prod(rows.shape[1:], dtype=np.int64)) * rows.itemsize
    if row_bytes == 0:
        return out
    row = MPI.BYTE.Create_contiguous(row_bytes).Commit()
    try:
        send_displ = np.concatenate([[0], np.cumsum(send_counts)[:-1]])
        recv_displ = np.concatenate([[0], np.cumsum(recv_counts)[:-1]])
        comm.Alltoallv([rows, send_counts, send_displ, row], [out, recv_counts, recv_displ, row])
    finally:
        row.Free()
    return out
