"""Gathering a domain-decomposed field to rank 0, four ways (seed 004, INM RAS Earth system model).

Each rank holds its block of a (levels, y, x) field in a local array that may
carry halos; rank 0 ends up with the global array. Everything that does not
change between output steps (MPI datatypes, counts, displacements, buffers) is
built once in the :class:`Gatherer` and reused, as Algorithm 4 prescribes.

========== =====================================================================================
strategy   how
========== =====================================================================================
p2p        rank 0 receives from each rank in rank order, one message per vertical level, with
           subarray datatypes on both sides: straight out of the halo'd array into place in the
           global one, no packing (the INMCM baseline, Algorithm 2)
p2p3d      the same with one message per rank carrying all levels (Algorithm 3)
gatherv    every other rank packs its block into a contiguous buffer, one MPI_Gatherv (rank 0
           passes MPI_IN_PLACE and copies its own block straight into place), rank 0 unpacks
           (Algorithm 4)
nonblocking rank 0 posts an Irecv per rank (all-level subarray types), then Waitall
========== =====================================================================================

2-D fields are 3-D fields with one level.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from climio.core import trace
from climio.core.decomp import Decomposition
from climio.core.rearrange import element_type
from climio.errors import ClimioError

if TYPE_CHECKING:
    from mpi4py import MPI

STRATEGIES = ("p2p", "p2p3d", "gatherv", "nonblocking")
_TAG = 21


class Gatherer:
    """Gathers ``decomp``'s blocks of a field of ``dtype`` to rank 0 of ``comm`` with ``strategy``.

    ``decomp`` splits the last two axes (y, x) of a 2-D (y, x) or 3-D (levels, y, x)
    shape. ``gather(local)`` is collective; it returns the global array on rank 0
    and None elsewhere. Call ``free()`` (or use ``with``) to release the datatypes.
    """

    def __init__(self, decomp: Decomposition, dtype: np.dtype | str, comm: MPI.Comm, strategy: str) -> None:
        from mpi4py import MPI

        if strategy not in STRATEGIES:
            raise ClimioError(f"unknown gather strategy '{strategy}': choose one of {', '.join(STRATEGIES)}",
                              collective=True)
        ndim = len(decomp.shape)
        if ndim not in (2, 3) or decomp.axes != (ndim - 2, ndim - 1):
            raise ClimioError(f"gathering needs a (y, x) or (levels, y, x) field split along y and x, "
                              f"got shape {decomp.shape} split along axes {decomp.axes}", collective=True)
        decomp.check_comm_size(comm.Get_size())
        self.decomp, self.comm, self.strategy = decomp, comm, strategy
        self.dtype = np.dtype(dtype)
        self.rank = comm.Get_rank()
        self.levels = decomp.shape[0] if ndim == 3 else 1
        self.shape3 = (self.levels, *decomp.shape[-2:])
        self._types: list[MPI.Datatype] = []
        base = element_type(self.dtype)
        if not base.is_predefined:
            self._commit(base)
        self._blocks = [(b.start[-2:], b.count[-2:]) for b in (decomp.owned(r) for r in range(comm.Get_size()))]
        (ny, nx), h = self._blocks[self.rank][1], decomp.halo
        subarray = lambda sizes, sub, start: self._commit(base.Create_subarray(sizes, sub, start))  # noqa: E731
        # Send types read the owned block straight out of the local array, with or without its halo.
        self._send: dict[tuple[int, int], tuple[MPI.Datatype, MPI.Datatype]] = {}
        if strategy != "gatherv" and ny and nx:
            for pad in {h, 0}:
                layout = (ny + 2 * pad, nx + 2 * pad)
                self._send[layout] = (subarray(layout, (ny, nx), (pad, pad)),
                                      subarray((self.levels, *layout), (self.levels, ny, nx), (0, pad, pad)))
        # Receive types put each rank's block in place in the global array on rank 0.
        self._recv: dict[int, tuple[MPI.Datatype, MPI.Datatype]] = {}
        if self.rank == 0 and strategy != "gatherv":
            for r, (start, count) in enumerate(self._blocks):
                if r and count[0] and count[1]:
                    self._recv[r] = (subarray(self.shape3[1:], count, start),
                                     subarray(self.shape3, (self.levels, *count), (0, *start)))
        if strategy == "gatherv":
            self._counts = np.array([self.levels * n[0] * n[1] for _, n in self._blocks])
            self._displs = np.concatenate([[0], np.cumsum(self._counts)[:-1]])
            self._sendbuf = np.empty(self._counts[self.rank], self.dtype) if self.rank else None
            self._recvbuf = np.empty(self._counts.sum(), self.dtype) if self.rank == 0 else None

    def _commit(self, datatype: MPI.Datatype) -> MPI.Datatype:
        datatype.Commit()
        self._types.append(datatype)
        return datatype

    def free(self) -> None:
        for datatype in self._types:
            datatype.Free()
        self._types.clear()

    def __enter__(self) -> Gatherer:
        return self

    def __exit__(self, *_: object) -> None:
        self.free()

    def gather(self, local: np.ndarray, out: np.ndarray | None = None) -> np.ndarray | None:
        """The global array on rank 0 (None elsewhere) from every rank's ``local`` block (collective).

        ``local`` is the rank's block with or without its halo, shaped like the field.
        ``out``, if given on rank 0, is a C-contiguous array of the field's shape and type
        to fill and return, so that a caller writing many fields allocates the global
        array once; other ranks ignore it.
        """
        owned = self.decomp.owned_view(self.rank, local)  # checks the shape
        if local.dtype != self.dtype:
            raise ClimioError(f"local array of type {local.dtype} on rank {self.rank}: this gatherer was "
                              f"planned for {self.dtype}")
        local3 = np.ascontiguousarray(local).reshape(self.levels, *local.shape[-2:])
        own3 = owned.reshape(self.levels, *owned.shape[-2:])
        if self.rank != 0:
            out = None
        elif out is None:
            out = np.empty(self.decomp.shape, self.dtype)
        elif out.shape != self.decomp.shape or out.dtype != self.dtype or not out.flags.c_contiguous:
            raise ClimioError(f"output array of shape {out.shape} and type {out.dtype}: this gatherer needs a "
                              f"C-contiguous {self.decomp.shape} array of {self.dtype}")
        out3 = None if out is None else out.reshape(self.shape3)
        with trace.phase("gather", owned.nbytes):
            if out3 is not None:  # rank 0's own block goes straight into place, whatever the strategy
                (y0, x0), (ny, nx) = self._blocks[0]
                out3[:, y0:y0 + ny, x0:x0 + nx] = own3
            if self.strategy == "gatherv":
                self._gatherv(own3, out3)
            elif out3 is not None:
                self._receive(out3)
            elif local3.shape[-2:] in self._send:
                self._send_block(local3)
        return out

    # -- the strategies ------------------------------------------------------------------------
    def _send_block(self, local3: np.ndarray) -> None:
        level_type, all_type = self._send[local3.shape[-2:]]
        if self.strategy == "p2p":
            for k in range(self.levels):
                self.comm.Send([local3[k], 1, level_type], dest=0, tag=_TAG)
        else:
            self.comm.Send([local3, 1, all_type], dest=0, tag=_TAG)

    def _receive(self, out: np.ndarray) -> None:
        if self.strategy == "p2p":
            for r, (level_type, _) in self._recv.items():  # rank order
                for k in range(self.levels):
                    self.comm.Recv([out[k], 1, level_type], source=r, tag=_TAG)
        elif self.strategy == "p2p3d":
            for r, (_, all_type) in self._recv.items():
                self.comm.Recv([out, 1, all_type], source=r, tag=_TAG)
        else:
            from mpi4py import MPI

            MPI.Request.Waitall([self.comm.Irecv([out, 1, all_type], source=r, tag=_TAG)
                                 for r, (_, all_type) in self._recv.items()])

    def _gatherv(self, own3: np.ndarray, out: np.ndarray | None) -> None:
        if out is None:
            self._sendbuf.reshape(own3.shape)[...] = own3  # pack
            self.comm.Gatherv(self._sendbuf, None, root=0)
            return
        from mpi4py import MPI

        self.comm.Gatherv(MPI.IN_PLACE, [self._recvbuf, (self._counts, self._displs)], root=0)
        for ((y0, x0), (ny, nx)), start, count in zip(self._blocks[1:], self._displs[1:], self._counts[1:]):  # unpack
            out[:, y0:y0 + ny, x0:x0 + nx] = self._recvbuf[start:start + count].reshape(self.levels, ny, nx)
