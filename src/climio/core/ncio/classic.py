"""The size a netCDF classic file (CDF-1, CDF-2, CDF-5) must have, read from its header.

Neither netCDF-C nor PnetCDF notices a classic file cut short: reads past the
end return zeros, which would silently alter data. The header says where every
variable starts and how many records there are, so the smallest complete size
follows from it (layout as in the netCDF classic format specification).
"""

from __future__ import annotations

import math
import struct
from typing import BinaryIO

TYPE_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8}
STREAMING = 0xFFFFFFFF


class _Header:
    def __init__(self, f: BinaryIO, version: int) -> None:
        self.f = f
        self.big = version == 5  # CDF-5: 64-bit counts and sizes

    def _read(self, n: int) -> bytes:
        data = self.f.read(n)
        if len(data) != n:
            raise EOFError
        return data

    def int32(self) -> int:
        return struct.unpack(">i", self._read(4))[0]

    def count(self) -> int:
        return struct.unpack(">q", self._read(8))[0] if self.big else struct.unpack(">I", self._read(4))[0]

    def offset(self, version: int) -> int:
        return struct.unpack(">q", self._read(8))[0] if version != 1 else struct.unpack(">i", self._read(4))[0]

    def name(self) -> str:
        n = self.count()
        text = self._read(n)
        self._read(-n % 4)
        return text.decode("utf-8", "replace")

    def skip_attributes(self) -> None:
        self.int32()  # NC_ATTRIBUTE or ABSENT
        for _ in range(self.count()):
            self.name()
            nc_type = self.int32()
            n = self.count() * TYPE_SIZES.get(nc_type, 1)
            self._read(n + (-n % 4))


def required_size(path: str) -> int | None:
    """Bytes the file needs according to its header; None if it is not a classic file or is streamed."""
    with open(path, "rb") as f:
        magic = f.read(4)
        if len(magic) < 4 or magic[:3] != b"CDF" or magic[3] not in (1, 2, 5):
            return None
        version = magic[3]
        h = _Header(f, version)
        try:
            numrecs = h.count()
            if numrecs in (STREAMING, -1):  # streaming: the record count is not in the header
                return None
            h.int32()
            dims = [(h.name(), h.count()) for _ in range(h.count())]
            h.skip_attributes()
            h.int32()
            end, records = f.tell(), []
            for _ in range(h.count()):
                h.name()
                dimids = [h.count() for _ in range(h.count())]
                h.skip_attributes()
                nc_type, vsize, begin = h.int32(), h.count(), h.offset(version)
                lengths = [dims[d][1] for d in dimids]
                record = bool(dimids) and lengths[0] == 0
                data = math.prod(lengths[1:] if record else lengths) * TYPE_SIZES.get(nc_type, 1)
                if record:
                    records.append((begin, vsize, data))
                else:
                    end = max(end, begin + data)
        except EOFError:
            return math.inf  # type: ignore[return-value]  # the header itself is cut short
    if records and numrecs:
        recsize = records[0][2] if len(records) == 1 else sum(v for _, v, _ in records)
        end = max(end, *(begin + (numrecs - 1) * recsize + data for begin, _, data in records))
    return end
