"""Hyperslabs of a classic-format (CDF-1/2/5) variable as the file stores them: big-endian, through MPI-IO.

PnetCDF reads a classic file with MPI-IO and then swaps every value to the
machine's byte order in a pass of its own, about 40 % of a read from the page
cache. A caller that makes a pass over the values anyway (``climio eva``'s scan)
can take the file's bytes as they are and swap each value where it reads it.
The header says where each variable starts and how far apart its records are,
so a hyperslab, with a step along its first axis, is one MPI derived datatype:
nested ``hvector``s over a contiguous run of the last axis. A collective read
with that file view lets MPI-IO merge the ranks' requests, as PnetCDF would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from climio.core.decomp import Hyperslab
from climio.core.ncio.classic import ClassicLayout
from climio.core.ncio.schema import Variable

if TYPE_CHECKING:
    from mpi4py import MPI


class StoredReader:
    """MPI-IO reads of a classic file's variables in their stored (big-endian) byte order (collective)."""

    def __init__(self, path: str, comm: MPI.Comm, info: MPI.Info, layout: ClassicLayout,
                 shapes: Mapping[str, tuple[int, ...]]) -> None:
        from mpi4py import MPI

        self._layout = layout
        self._shapes = shapes
        self._file = MPI.File.Open(comm, path, MPI.MODE_RDONLY, info)

    def read(self, var: Variable, slab: Hyperslab, out: np.ndarray, step: int = 1) -> None:
        """Fill ``out`` (C-contiguous, ``slab.count``) with ``slab`` of ``var``, every ``step``-th index along
        the first axis from its start, in the file's byte order (collective: every rank calls it)."""
        from mpi4py import MPI

        if not slab.size:
            self._file.Set_view(0, MPI.BYTE, MPI.BYTE)
            self._file.Read_all([out, 0, MPI.BYTE])
            return
        strides = self._layout.strides(var.name, self._shapes[var.name], var.numpy_dtype.itemsize)
        displacement = self._layout.begins[var.name] + sum(s * k for s, k in zip(slab.start, strides))
        if strides:
            strides[0] *= step
        filetype = _hyperslab_type(slab.count, strides, var.numpy_dtype.itemsize)
        try:
            self._file.Set_view(displacement, MPI.BYTE, filetype)
            self._file.Read_all([out, out.nbytes, MPI.BYTE])
        finally:
            filetype.Free()

    def close(self) -> None:
        self._file.Close()


def _hyperslab_type(count: tuple[int, ...], strides: list[int], itemsize: int) -> MPI.Datatype:
    """A committed datatype selecting ``count`` elements with the given byte ``strides``: one contiguous run
    of the last axis, repeated along the others (innermost first)."""
    from mpi4py import MPI

    run = count[-1] * itemsize if count else itemsize
    datatype = MPI.BYTE.Create_contiguous(run)
    for n, stride in zip(reversed(count[:-1]), reversed(strides[:-1])):
        outer = datatype.Create_hvector(n, 1, stride)
        datatype.Free()
        datatype = outer
    datatype.Commit()
    return datatype
