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

import math
import os
import struct
from typing import BinaryIO

from climio.core.ncio.schema import name_problem

TYPE_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8}
STREAMING = 0xFFFFFFFF


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


Layout = tuple[int, int, list[tuple[str, int, int, bool]]]


def _layout(path: str) -> Layout | None:
    """Record count, end of the header and non-record data, and (name, begin, bytes, is_record) per variable
    (a record variable's bytes per record).

    None if the file is not classic or is streamed; raises EOFError if the header is cut short (or claims
    more than the file holds) and HeaderError if it is invalid.
    """
    with open(path, "rb") as f:
        magic = f.read(4)
        if len(magic) < 4 or magic[:3] != b"CDF" or magic[3] not in (1, 2, 5):
            return None
        version = magic[3]
        h = _Header(f, version, os.fstat(f.fileno()).st_size)
        numrecs = h.count()
        if numrecs in (STREAMING, -1):  # streaming: the record count is not in the header
            return None
        h.int32()
        dims = [(h.name(), h.count()) for _ in range(h.count())]
        h.skip_attributes()
        h.int32()
        end, variables = f.tell(), []
        for _ in range(h.count()):
            name = h.name()
            dimids = [h.count() for _ in range(h.count())]
            if any(d >= len(dims) for d in dimids):
                raise HeaderError(f"variable '{name}' uses dimension id {max(dimids)} of {len(dims)}")
            h.skip_attributes()
            nc_type = h.nc_type()
            h.count()  # vsize: informational, as for netCDF-C
            begin = h.offset(version)
            lengths = [dims[d][1] for d in dimids]
            record = bool(dimids) and lengths[0] == 0
            data = math.prod(lengths[1:] if record else lengths) * TYPE_SIZES[nc_type]
            variables.append((name, begin, data, record))
            if not record:
                end = max(end, begin + data)
    return numrecs, end, variables


def record_size(variables: list[tuple[str, int, int, bool]]) -> int:
    """Bytes of one record, from the dimensions as netCDF-C computes it: each record variable's record padded
    to 4 bytes, except a lone record variable's, which is not padded."""
    records = [data for _, _, data, record in variables if record]
    return records[0] if len(records) == 1 else sum(data + -data % 4 for data in records)


def variable_offsets(path: str) -> tuple[dict[str, int], int]:
    """Where each variable's data start (a record variable's record 0), and the record size: record k of
    a record variable is ``k * size`` further."""
    layout = _layout(path)
    if layout is None:
        raise ValueError(f"{path} is not a netCDF classic file with a record count")
    _, _, variables = layout
    return {name: begin for name, begin, _, _ in variables}, record_size(variables)


def required_size(path: str) -> int | None:
    """Bytes the file needs according to its header; None if it is not a classic file or is streamed."""
    try:
        layout = _layout(path)
    except EOFError:
        return math.inf  # type: ignore[return-value]  # the header itself is cut short
    if layout is None:
        return None
    numrecs, end, variables = layout
    records = [(begin, data) for _, begin, data, record in variables if record]
    if records and numrecs:
        recsize = record_size(variables)
        end = max(end, *(begin + (numrecs - 1) * recsize + data for begin, data in records))
    return end
