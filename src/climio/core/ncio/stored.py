"""Hyperslabs of a classic-format (CDF-1/2/5) variable as the file stores them: big-endian, through MPI-IO.

Reading (:class:`StoredReader`):

PnetCDF reads a classic file with MPI-IO and then swaps every value to the
machine's byte order in a pass of its own, about 40 % of a read from the page
cache. A caller that makes a pass over the values anyway (``climio eva``'s scan)
can take the file's bytes as they are and swap each value where it reads it.
The header says where each variable starts and how far apart its records are,
so a hyperslab, with a step along its first axis, is one MPI derived datatype:
nested ``hvector``s over a contiguous run of the last axis. A collective read
with that file view lets MPI-IO merge the ranks' requests, as PnetCDF would.

Writing (:class:`StoredWriter`): a call's hyperslabs, of any number of variables and records (a whole output
step). Pieces already in the file's byte order (the rearranger's buffers of model output and PIO, each rank
having swapped its own values before the exchange) are written from where they are; the others are packed
into one buffer in the file's byte order, swapped while packed (one pass over the data), their byte runs
merged where they touch. A record variable's records lie back to back, so a writer's share of a step is a few
runs, often one. Then either this rank's runs alone, those that follow each other in one ``pwritev`` (the
writers are climio's aggregators, whose pieces are already large and contiguous, and nobody else waits for
them), or one collective MPI-IO request for all of them (every rank its own small runs: MPI-IO's two-phase
aggregation merges them). Either way the data leave the packed buffer straight for the file: PnetCDF would
swap in place, write, and swap back, one call and several collective agreements per variable.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from climio.core import mpi, trace, waiting
from climio.core.collective import split
from climio.core.decomp import Hyperslab
from climio.core.ncio.classic import ClassicLayout
from climio.core.ncio.schema import Variable
from climio.core.ncio.space import Reserver

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


RUN_BYTES = 2**30  # MPI counts are ints: runs longer than this go as several
IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024  # buffers one pwritev takes
PACK_BYTES = 2**28  # packed at once, at most: a larger call goes in parts (the packed copy is extra memory)
SLICE_ALIGN = 1 << 16  # the ranks' slices of a reserved extent start on these file offsets (whole pages)
KEPT_VIEWS = 16  # file views kept for later calls: a step's parts (PACK_BYTES each), the first step's other variables
HOT_BYTES = 2**22  # packed at once before each rank's own pwrite: the packed bytes are still in the cache


class StoredWriter:
    """A classic file's data written by climio itself, in the stored byte order (collective to open, write and
    close). ``independent``: each rank writes its own runs with ``pwrite`` and the ranks agree once on failures
    afterwards; otherwise one collective MPI-IO write per call."""

    def __init__(self, path: str, comm: MPI.Comm, info: MPI.Info, layout: ClassicLayout,
                 shapes: Mapping[str, tuple[int, ...]], *, independent: bool = False) -> None:
        from mpi4py import MPI

        self.path, self.comm, self.independent = path, comm, independent
        self._layout, self._shapes = layout, shapes
        self._reserver = Reserver(path, comm)
        self._fd = os.open(path, os.O_WRONLY)
        self._file = MPI.File.Open(comm, path, MPI.MODE_WRONLY, info)
        self.records = 0  # the records this rank wrote so far (the file's count is the largest over the ranks)
        self._buffer = np.zeros(0, np.uint8)  # the packed data of a call, reused by the next
        self._views: dict[tuple, tuple[MPI.Datatype, MPI.Datatype]] = {}  # file and memory types, oldest first

    def write(self, pieces: Sequence[tuple[Variable, Hyperslab, np.ndarray]], where: str) -> None:
        """Write ``(variable, hyperslab, data)`` pieces, each ``data`` of the variable's type in the machine's
        byte order (any strides), in one call (collective): every rank raises the same IOFault if any rank's
        disk space or write failed (collective writes: nothing is written by any rank when space is missing)."""
        pieces = [p for p in pieces if p[1].size]
        parts = _parts(pieces, HOT_BYTES if self.independent else PACK_BYTES)
        if self.independent:  # pwrite says what failed: no reservation needed (tmpfs zeroes what it reserves)
            failure = ""
            for part in parts:
                failure = failure or self._pwrite(*self._spans(part), where)
            mpi.raise_fault(self.comm, failure)
        else:  # MPI-IO may report a failed write on stderr only (space.py): the space first
            failure = self._reserver.claim(self._reserved(pieces), where)
            for k in range(self._agreed_rounds(failure, len(parts))):
                self._write_all(parts[k] if k < len(parts) else [])
        for var, slab, _ in pieces:
            if var.name in self._layout.records:
                self.records = max(self.records, slab.start[0] + slab.count[0])

    def _reserved(self, pieces: Sequence[tuple[Variable, Hyperslab, np.ndarray]]) -> list[tuple[int, int]]:
        """The byte ranges this rank reserves before a collective write of ``pieces`` (collective). Where the
        ranks' pieces together fill one extent of the file (a step's records: every byte written once), this
        rank's slice of it, so that each block is allocated once, the ranks in parallel; otherwise the hulls of
        its own pieces (interleaved pieces' hulls overlap: every rank would allocate nearly all of them)."""
        from mpi4py import MPI

        spans = [self._span(var, slab) for var, slab, _ in pieces]
        size, rank = self.comm.Get_size(), self.comm.Get_rank()
        if size == 1:
            return _hulls(spans)
        mine = np.array([-min((lo for lo, _ in spans), default=np.iinfo(np.int64).max),
                         max((hi for _, hi in spans), default=0), sum(data.nbytes for _, _, data in pieces)],
                        np.int64)
        waiting.wait(self.comm.Iallreduce(MPI.IN_PLACE, [mine, MPI.INT64_T], op=_extent_op()))
        lo, hi, nbytes = int(-mine[0]), int(mine[1]), int(mine[2])
        if hi <= lo or nbytes != hi - lo:
            return _hulls(spans)
        cut = [lo] + [max(lo, (lo + (hi - lo) * k // size) // SLICE_ALIGN * SLICE_ALIGN) for k in range(1, size)]
        cut.append(hi)
        return [(cut[rank], cut[rank + 1])] if cut[rank + 1] > cut[rank] else []

    def _agreed_rounds(self, failure: str, rounds: int) -> int:
        """The most collective writes any rank needs (one agreement, which also carries disk-space failures:
        every rank raises the same IOFault before anyone writes)."""
        from mpi4py import MPI

        from climio.errors import IOFault

        flags = np.array([bool(failure), rounds], np.int64)
        if self.comm.Get_size() > 1:
            waiting.wait(self.comm.Iallreduce(MPI.IN_PLACE, flags, op=MPI.MAX))
        if flags[0]:
            raise IOFault(next(f for f in self.comm.allgather(failure) if f), collective=True)
        return int(flags[1])

    def _spans(self, pieces: Sequence[tuple[Variable, Hyperslab, np.ndarray]]) -> tuple[list[memoryview], np.ndarray]:
        """The pieces' bytes in the file's order: the buffers they lie in, and their runs ``(file offset, buffer,
        offset in it, bytes)`` sorted by file offset (arrays, not a Python object a run: a column band's writer
        has hundreds of thousands). A C-contiguous piece already in the file's byte order (the rearranger's
        buffers of a classic file) is written from where it is; the others are packed first."""
        ready = [p for p in pieces if p[2].dtype == _stored(p[0]) and p[2].flags.c_contiguous]
        written = {id(p) for p in ready}
        views: list[memoryview] = []
        parts = []
        for var, slab, data in ready:
            offsets, length = self._runs(var, slab)
            parts.append(np.stack([offsets, np.full(offsets.size, len(views), np.int64),
                                   np.arange(offsets.size, dtype=np.int64) * length,
                                   np.full(offsets.size, length, np.int64)], axis=1))
            views.append(memoryview(data.reshape(-1).view(np.uint8)))
        buffer, runs = self._packed([p for p in pieces if id(p) not in written])
        if len(runs):
            parts.append(np.column_stack([runs[:, 0], np.full(len(runs), len(views), np.int64), runs[:, 1:]]))
            views.append(memoryview(buffer))
        table = np.concatenate(parts) if parts else np.zeros((0, 4), np.int64)
        return views, table[np.argsort(table[:, 0], kind="stable")]

    def _packed(self, pieces: Sequence[tuple[Variable, Hyperslab, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """The pieces in one buffer of the file's byte order, and their ``(file offset, buffer offset, bytes)``
        runs sorted by file offset, merged where both sides touch."""
        ordered, buffer, starts = self._pack(pieces)
        with trace.phase("pack", 0):
            return buffer, self._table(ordered, starts)

    def _pack(self, pieces: Sequence[tuple[Variable, Hyperslab, np.ndarray]]
              ) -> tuple[list[tuple[Variable, Hyperslab, np.ndarray]], np.ndarray, list[int]]:
        """The pieces in the file's order, copied one after the other into one buffer of the file's byte order
        (reused by the next call), and where each starts in it."""
        nbytes = sum(data.nbytes for _, _, data in pieces)
        if self._buffer.nbytes < nbytes:  # made and touched once: no page faults inside the next steps
            self._buffer = np.zeros(nbytes, np.uint8)
        buffer = self._buffer[:nbytes]
        ordered = sorted(pieces, key=lambda p: self._span(p[0], p[1])[0])
        starts, at = [], 0
        with trace.phase("pack", nbytes):
            for var, slab, data in ordered:
                np.copyto(buffer[at:at + data.nbytes].view(_stored(var)).reshape(slab.count), data, casting="equiv")
                starts.append(at)
                at += data.nbytes
        return ordered, buffer, starts

    def _table(self, ordered: Sequence[tuple[Variable, Hyperslab, np.ndarray]], starts: Sequence[int]) -> np.ndarray:
        """The ``(file offset, buffer offset, bytes)`` runs of packed pieces (:meth:`_pack`), sorted by file
        offset, merged where both sides touch."""
        parts = []
        for (var, slab, _), at in zip(ordered, starts):
            offsets, length = self._runs(var, slab)
            parts.append(np.stack([offsets, at + np.arange(offsets.size, dtype=np.int64) * length,
                                   np.full(offsets.size, length, np.int64)], axis=1))
        runs = np.concatenate(parts) if parts else np.zeros((0, 3), np.int64)
        return _merged(runs[np.argsort(runs[:, 0], kind="stable")])

    def _span(self, var: Variable, slab: Hyperslab) -> tuple[int, int]:
        """The bytes ``[lo, hi)`` from the first to the last element of a non-empty ``slab`` of ``var``."""
        return self._layout.span(var.name, self._shapes[var.name], var.numpy_dtype.itemsize, slab)

    def _runs(self, var: Variable, slab: Hyperslab) -> tuple[np.ndarray, int]:
        """The file offsets of a hyperslab's contiguous runs (in its C order) and their common length in bytes."""
        itemsize = var.numpy_dtype.itemsize
        shape = self._shapes[var.name]
        strides = self._layout.strides(var.name, shape, itemsize)
        run, inner = itemsize, len(slab.count)  # axes from ``inner`` on lie within one run
        while inner > 0:
            axis = inner - 1
            if strides[axis] != run:  # a record axis (its stride is the record's size) or a gap
                break
            run *= slab.count[axis]
            inner -= 1
            if slab.count[axis] != shape[axis]:  # a partial axis ends the run
                break
        within = sum(slab.start[axis] * strides[axis] for axis in range(inner, len(slab.count)))
        offsets = np.full(1, self._layout.begins[var.name] + within, np.int64)
        for axis in range(inner):
            steps = (slab.start[axis] + np.arange(slab.count[axis], dtype=np.int64)) * strides[axis]
            offsets = (offsets[:, None] + steps[None, :]).ravel()
        return offsets, run

    def _pwrite(self, views: list[memoryview], runs: np.ndarray, where: str) -> str:
        """This rank's runs (:meth:`_spans`) straight to the file, those that follow each other in one
        ``pwritev``; a failure's line, or ''."""
        offsets, which, starts, lengths = (runs[:, k].tolist() for k in range(4))
        with trace.phase("write", sum(lengths)):
            k = 0
            while k < len(offsets):
                first, offset = k, offsets[k]
                end = offset + lengths[k]
                k += 1
                while k < len(offsets) and offsets[k] == end and k - first < IOV_MAX:
                    end += lengths[k]
                    k += 1
                try:
                    if k - first == 1:  # a run on its own (a column's row): one pwrite
                        _pwrite_all(self._fd, views[which[first]][starts[first]:starts[first] + lengths[first]], offset)
                    else:
                        _pwritev(self._fd, [views[which[j]][starts[j]:starts[j] + lengths[j]] for j in range(first, k)],
                                 offset)
                except OSError as err:
                    return f"{where}: {os.strerror(err.errno).lower() if err.errno else err} (writing " \
                           f"{end - offset} bytes at offset {offset})"
        return ""

    def _write_all(self, pieces: Sequence[tuple[Variable, Hyperslab, np.ndarray]]) -> None:
        """Every rank's pieces in one collective MPI-IO write, packed and through a file view of their runs."""
        from mpi4py import MPI

        ordered, buffer, starts = self._pack(pieces)
        filetype, memory, first = self._view(ordered, starts) if ordered else (MPI.BYTE, MPI.BYTE, 0)
        with trace.phase("write", buffer.nbytes):
            self._file.Set_view(first, MPI.BYTE, filetype)
            count = 1 if memory != MPI.BYTE else buffer.nbytes
            self._file.Write_all([buffer, count if ordered else 0, memory])

    def _view(self, ordered: Sequence[tuple[Variable, Hyperslab, np.ndarray]], starts: Sequence[int]
              ) -> tuple[MPI.Datatype, MPI.Datatype, int]:
        """The file type of packed pieces' runs from their first byte on, the memory type of their bytes in the
        buffer (BYTE: in the file's order), and that first byte's offset. A model's steps write the same pieces
        of the next record: their types are made once (a column band has hundreds of thousands of runs) and
        kept for pieces of the same shape, every record shifted alike."""
        from mpi4py import MPI

        shape = self._view_key(ordered)
        first = self._span(ordered[0][0], ordered[0][1])[0]
        if shape in self._views:
            return (*self._views[shape], first)
        runs = _split(self._table(ordered, starts), RUN_BYTES)
        filetype = MPI.BYTE.Create_hindexed(runs[:, 2].tolist(), (runs[:, 0] - first).tolist()).Commit()
        memory = MPI.BYTE
        if not np.array_equal(runs[:, 1], np.concatenate([[0], np.cumsum(runs[:-1, 2])])):
            memory = MPI.BYTE.Create_hindexed(runs[:, 2].tolist(), runs[:, 1].tolist()).Commit()
        while len(self._views) >= KEPT_VIEWS:
            _free(*self._views.pop(next(iter(self._views))))
        self._views[shape] = (filetype, memory)
        return filetype, memory, first

    def _view_key(self, ordered: Sequence[tuple[Variable, Hyperslab, np.ndarray]]) -> tuple:
        """What fixes packed pieces' runs relative to their first byte: each piece's variable, start and count,
        a record variable's record counted from the pieces' first where every piece is one (the record size
        shifts them all alike)."""
        records = self._layout.records
        shifted = all(var.name in records for var, _, _ in ordered)
        first = min(slab.start[0] for _, slab, _ in ordered) if shifted else 0
        return tuple((var.name, slab.count, (slab.start[0] - first, *slab.start[1:]) if shifted else slab.start)
                     for var, slab, _ in ordered)

    def close(self) -> int:
        """Close the handles (collective); the number of records the file holds (the most any rank wrote)."""
        from mpi4py import MPI

        for types in self._views.values():
            _free(*types)
        self._views.clear()
        self._file.Close()
        os.close(self._fd)
        self._reserver.close()
        return int(self.comm.allreduce(self.records, op=MPI.MAX))


@functools.cache
def _extent_op() -> MPI.Op:
    """The reduction of ``(-first byte, end, bytes)``: the ranks' whole extent and their bytes in one call."""
    from mpi4py import MPI

    def reduce(given: memoryview, into: memoryview, _datatype: MPI.Datatype) -> None:
        a, b = np.frombuffer(given, np.int64), np.frombuffer(into, np.int64)
        b[:2] = np.maximum(a[:2], b[:2])
        b[2:] += a[2:]

    return MPI.Op.Create(reduce, commute=True)


def _free(*datatypes: MPI.Datatype) -> None:
    """Free the committed types among ``datatypes`` (BYTE is MPI's own)."""
    from mpi4py import MPI

    for datatype in datatypes:
        if datatype != MPI.BYTE:
            datatype.Free()


def _stored(var: Variable) -> np.dtype:
    """The variable's type as a classic file stores it: big-endian."""
    return var.numpy_dtype.newbyteorder(">")


def _pwrite_all(fd: int, view: memoryview, offset: int) -> None:
    """``view`` to ``fd`` at ``offset`` (a short write is resumed): a lone run without pwritev's list."""
    while view:
        done = os.pwrite(fd, view, offset)
        view, offset = view[done:], offset + done


def _pwritev(fd: int, views: list[memoryview], offset: int) -> None:
    """All of ``views`` to ``fd`` from ``offset`` on, one after the other (a short write is resumed)."""
    while views:
        done = os.pwritev(fd, views, offset)
        offset += done
        while views and done >= views[0].nbytes:
            done -= views[0].nbytes
            views = views[1:]
        if views and done:
            views = [views[0][done:], *views[1:]]


def _parts(pieces: Sequence[tuple[Variable, Hyperslab, np.ndarray]], most: int
           ) -> list[list[tuple[Variable, Hyperslab, np.ndarray]]]:
    """The pieces in groups of at most ``most`` bytes, a larger piece cut along its first axis."""
    parts: list[list[tuple[Variable, Hyperslab, np.ndarray]]] = [[]]
    held = 0
    for var, slab, data in pieces:
        for offset, piece in split(slab, data.itemsize, most):
            part = data[offset:offset + piece.count[0]] if piece.count else data
            if held and held + part.nbytes > most:
                parts.append([])
                held = 0
            parts[-1].append((var, piece, part))
            held += part.nbytes
    return parts if parts[0] else []


def _merged(runs: np.ndarray) -> np.ndarray:
    """Sorted ``(file offset, buffer offset, bytes)`` runs with each run that continues the previous one in the
    file and in the buffer joined to it."""
    if len(runs) < 2:
        return runs
    ends_file = runs[:-1, 0] + runs[:-1, 2]
    ends_buffer = runs[:-1, 1] + runs[:-1, 2]
    starts = np.concatenate([[True], (ends_file != runs[1:, 0]) | (ends_buffer != runs[1:, 1])])
    first = np.flatnonzero(starts)
    lengths = np.add.reduceat(runs[:, 2], first)
    return np.stack([runs[first, 0], runs[first, 1], lengths], axis=1)


def _split(runs: np.ndarray, most: int) -> np.ndarray:
    """Runs cut into pieces of at most ``most`` bytes."""
    if not runs.size or runs[:, 2].max() <= most:
        return runs
    out = []
    for offset, at, length in runs.tolist():
        for k in range(0, length, most):
            out.append((offset + k, at + k, min(most, length - k)))
    return np.array(out, np.int64)


def _hulls(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[lo, hi)`` byte ranges, overlapping or touching ones joined, for the disk-space reservation: one
    ``fallocate`` per piece's extent (other ranks' bytes between its runs are reserved twice, harmlessly), not
    one per run."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out
