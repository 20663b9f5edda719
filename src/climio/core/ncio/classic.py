"""A netCDF classic file's (CDF-1, CDF-2, CDF-5) header, read before any library sees the file.

Neither netCDF-C nor PnetCDF notices a classic file cut short: reads past the
end return zeros, which would silently alter data. The header says where every
variable starts and how many records there are, so the smallest complete size
follows from it (layout as in the netCDF classic format specification). Sizes
come from the dimensions and types, as netCDF-C computes them: a header's
``vsize`` fields are informational (netCDF-C ignores them), so a wrong one must
not move any data. Every count and length is checked against the file's size
before it is used, so a corrupt header is refused instead of read past its end.
"""

from __future__ import annotations

import functools
import math
import os
import struct
from dataclasses import dataclass
from typing import BinaryIO

from climio.core.decomp import Hyperslab
from climio.core.ncio.schema import name_problem

TYPE_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8}


class HeaderError(ValueError):
    """A classic header that no complete, valid file has (the message says where)."""


class _Header:
    def __init__(self, f: BinaryIO, version: int, size: int) -> None:
        self.f = f
        self.big = version == 5  # CDF-5: 64-bit counts and sizes
        self.size = size

    def _read(self, n: int) -> bytes:
        if n < 0 or n > self.size - self.f.tell():
            raise EOFError  # the header claims more bytes than the file has: cut short, or corrupt
        data = self.f.read(n)
        if len(data) != n:
            raise EOFError
        return data

    def int32(self) -> int:
        return struct.unpack(">i", self._read(4))[0]

    def count(self) -> int:
        at = self.f.tell()
        value = struct.unpack(">q", self._read(8))[0] if self.big else struct.unpack(">I", self._read(4))[0]
        if value < 0:  # CDF-5's counts are signed 64-bit: a negative one would index from the end
            raise HeaderError(f"negative count {value} at byte {at}")
        return value

    def offset(self, version: int) -> int:
        return struct.unpack(">q", self._read(8))[0] if version != 1 else struct.unpack(">i", self._read(4))[0]

    def name(self) -> str:
        at = self.f.tell()
        n = self.count()
        text = self._read(n)
        self._read(-n % 4)
        try:
            name = text.decode("utf-8")
        except UnicodeDecodeError:
            raise HeaderError(f"the name at byte {at} is not valid UTF-8") from None
        problem = name_problem(name)
        if problem is not None:
            raise HeaderError(f"the name {name!r} at byte {at} is not one netCDF allows: {problem}")
        return name

    def nc_type(self) -> int:
        at = self.f.tell()
        value = self.int32()
        if value not in TYPE_SIZES:
            raise HeaderError(f"unknown type {value} at byte {at}")
        return value

    def skip_attributes(self) -> None:
        self.int32()  # NC_ATTRIBUTE or ABSENT
        for _ in range(self.count()):
            self.name()
            nc_type = self.nc_type()
            n = self.count() * TYPE_SIZES[nc_type]
            self._read(n + (-n % 4))


@dataclass(frozen=True)
class ClassicLayout:
    """Where a classic file keeps its data, from its header: each variable's first byte (a record variable's
    record 0), its bytes (per record for a record variable), and how far apart records are. Parsed once per
    file; disk reservation, byte spans for read-ahead, raw big-endian reads and stripe alignment all use it."""

    numrecs: int
    end: int  # the end of the header and of the non-record data
    begins: dict[str, int]
    sizes: dict[str, int]
    records: frozenset[str]  # the record variables

    @classmethod
    def read(cls, path: str) -> ClassicLayout | None:
        """The file's layout; None if it is not classic. Raises EOFError if the header is cut short (or claims more
        than the file holds) and HeaderError if it is invalid."""
        with open(path, "rb") as f:
            magic = f.read(4)
            if len(magic) < 4 or magic[:3] != b"CDF" or magic[3] not in (1, 2, 5):
                return None
            version = magic[3]
            h = _Header(f, version, os.fstat(f.fileno()).st_size)
            numrecs = h.count()  # 0xFFFFFFFF (the format's "streaming" marker) too: netCDF-C reads it as a count
            h.int32()
            dims = [(h.name(), h.count()) for _ in range(h.count())]
            h.skip_attributes()
            h.int32()
            end, begins, sizes, records = f.tell(), {}, {}, set()
            for _ in range(h.count()):
                name = h.name()
                dimids = [h.count() for _ in range(h.count())]
                if any(d >= len(dims) for d in dimids):
                    raise HeaderError(f"variable '{name}' uses dimension id {max(dimids)} of {len(dims)}")
                h.skip_attributes()
                nc_type = h.nc_type()
                h.count()  # vsize: informational, as for netCDF-C
                begins[name] = h.offset(version)
                lengths = [dims[d][1] for d in dimids]
                record = bool(dimids) and lengths[0] == 0
                sizes[name] = math.prod(lengths[1:] if record else lengths) * TYPE_SIZES[nc_type]
                if record:
                    records.add(name)
                else:
                    end = max(end, begins[name] + sizes[name])
        return cls(numrecs, end, begins, sizes, frozenset(records))

    @functools.cached_property
    def record_size(self) -> int:
        """Bytes of one record, from the dimensions as netCDF-C computes it: each record variable's record padded
        to 4 bytes, except a lone record variable's, which is not padded."""
        sizes = [self.sizes[name] for name in self.begins if name in self.records]
        return sizes[0] if len(sizes) == 1 else sum(size + -size % 4 for size in sizes)

    def required_size(self) -> int:
        """Bytes the file needs: the header, the non-record data and every record it counts."""
        if not self.records or not self.numrecs:
            return self.end
        step = self.record_size
        return max(self.end, *(self.begins[name] + (self.numrecs - 1) * step + self.sizes[name]
                               for name in self.records))

    def strides(self, name: str, shape: tuple[int, ...], itemsize: int) -> list[int]:
        """Bytes between neighbours along each axis of variable ``name`` (of ``shape``) in the file."""
        strides = [math.prod(shape[i + 1:]) * itemsize for i in range(len(shape))]
        if name in self.records:
            strides[0] = self.record_size
        return strides

    def span(self, name: str, shape: tuple[int, ...], itemsize: int, slab: Hyperslab) -> tuple[int, int]:
        """The bytes ``[lo, hi)`` from the first to the last element of a non-empty ``slab`` of ``name`` (other
        variables' records between them included)."""
        strides = self.strides(name, shape, itemsize)

        def offset(index: tuple[int, ...]) -> int:
            return self.begins[name] + sum(i * s for i, s in zip(index, strides))

        return offset(slab.start), offset(tuple(s + c - 1 for s, c in zip(slab.start, slab.count))) + itemsize


def set_numrecs(path: str, records: int) -> None:
    """Raise the record count in the header of the classic file ``path`` to ``records`` (never lower it): its
    data were written by climio itself, not through the library that wrote the header. The count follows the
    4-byte magic: 4 bytes big-endian in CDF-1/2, 8 in CDF-5."""
    with open(path, "r+b") as f:
        magic = f.read(4)
        size = 8 if magic[3] == 5 else 4
        (now,) = struct.unpack(">Q" if size == 8 else ">I", f.read(size))
        if records > now:
            f.seek(4)
            f.write(struct.pack(">Q" if size == 8 else ">I", records))


def required_size(path: str) -> int | None:
    """Bytes the file needs according to its header; None if it is not a classic file."""
    try:
        layout = ClassicLayout.read(path)
    except EOFError:
        return math.inf  # type: ignore[return-value]  # the header itself is cut short
    return None if layout is None else layout.required_size()
