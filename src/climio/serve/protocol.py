"""The wire protocol between model ranks and I/O servers (docs/serve-protocol.md), shared by both sides.

A model rank sends its server *packets* (tag :data:`TAG_PACKET`, ``MPI_BYTE``): one or more messages back to
back, so that a step of many fields travels in a few large sends the servers take while the model computes.
Every message is a fixed header of :data:`HEADER_LEN` int64, the text (UTF-8 names, each NUL-terminated,
``header[7]`` bytes) and the kind's typed buffers, whose types and lengths the header gives
(:func:`payload_types`); the text and each buffer are padded with zeros to a multiple of 8 bytes
(:func:`pack`, :func:`unpack`). Nothing is pickled: a C client lays out the same bytes. Replies (server to
client) are :data:`REPLY_LEN` int64 (tag :data:`TAG_REPLY`), then their text (tag :data:`TAG_REPLY_TEXT`). The
synchronous kinds (:data:`SYNC`: OPEN, INQ_VARID, READ) each get one answer the client waits for:
:data:`ANSWER_LEN` int64 (tag :data:`TAG_ANSWER`), its text (:data:`TAG_ANSWER_TEXT`) and, for a READ that
succeeded, the client's piece of the record (:data:`TAG_ANSWER_DATA`). A model that calls PIO's API sends each
call as one message of kind :attr:`Kind.PIO` (:mod:`climio.serve.pio_server`), answered in the same three parts,
the data being the call's out-values, out-strings and out-data (:func:`pio_answer`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING

import numpy as np

from climio.errors import ClimioError
from climio.model.definition import CHAR, xtype_dtype

if TYPE_CHECKING:
    from mpi4py import MPI

MAGIC = 0x636C696D696F  # "climio": the first word of the hello, so that a stray message is recognised
VERSION = 3  # 2: messages travel in packets; 3: either side of the hello may refuse, with its line
HELLO_LEN = 4  # the model's hello: MAGIC, VERSION, the model's size, 0 or the code of the model's own refusal
WELCOME_LEN = 5  # the answer: MAGIC, VERSION, the servers' count, 0 or the refusal's status (1 a fault,
#                   2 bad input), the bytes of its line
HEADER_LEN = 8
REPLY_LEN = 4
ANSWER_LEN = 4
TAG_HELLO, TAG_INTERCOMM, TAG_PACKET, TAG_REPLY, TAG_REPLY_TEXT = 7301, 7302, 7303, 7305, 7306
TAG_ANSWER, TAG_ANSWER_TEXT, TAG_ANSWER_DATA = 7307, 7308, 7309  # a synchronous answer: header, text, READ's data
TAG_WELCOME_TEXT = 7310  # the servers' refusal of the hello
SYSTEM = -1  # the id of a reply about the connection rather than one file
# The calls' own constants (GLOBAL, NOFRAME, UNLIMITED, CLOBBER, CHAR, the type and quantize numbers) are
# climio.model.definition's: the wire carries them as the C API defines them.


class Kind(IntEnum):
    """``header[0]``: what a message asks. ``header[1]`` is the id of its file (its decomposition for DECOMP)."""

    DECOMP = 1       # a: ndims, b: maplen; data: int64[ndims] grid, int64[maplen] compmap (1-based, 0 a hole)
    CREATE = 2       # a: decomposition id, b: CLOBBER/NOCLOBBER; text: path, mode, strategy
    DEF_DIM = 3      # a: length (UNLIMITED 0); text: name
    DEF_VAR = 4      # a: xtype, b: ndims; text: name; data: int64[ndims] dimension ids
    PUT_ATT = 5      # a: varid (GLOBAL -1), b: xtype (CHAR 2: text), c: length; text: name[, value]; data: xtype[c]
    DEF_COMPRESS = 6  # a: varid, b: deflate level (0 none), c: quantize mode (0 none), d: nsd; text: codecs or none
    DEF_REDUCE = 7   # a: varid, b: Op, c: steps per output record
    ENDDEF = 8
    WRITE = 9        # a: varid, b: frame (NOFRAME -1), c: memtype, d: count; data: memtype[count]
    PUT_TIME = 10    # a: frame; data: float64[1]
    PUT_VAR = 11     # a: varid, b: frame, c: memtype, d: count (0 but on model rank 0); data: memtype[count]
    CLOSE = 12       # a: 0 publish, 1 discard
    FINALIZE = 13
    OPEN = 14        # a: decomposition id; text: path, strategy. Answer value: 0
    INQ_VARID = 15   # text: name. Answer value: the varid
    READ = 16        # a: varid, b: frame, c: memtype, d: local length, e: local points per level with halo.
    #                  Answer value: elements sent on TAG_ANSWER_DATA (levels x map length, no halo)
    PIO = 17         # one of PIO's calls. a: int64 arguments, b: memtype (0: the variable's or decomposition's),
    #                  c: bytes of data; text: the call's name, its strings; data: int64[a], c bytes. Answered (but
    #                  write_darray and setframe) with status, code, line and pio_answer's payload


SYNC = (Kind.OPEN, Kind.INQ_VARID, Kind.READ)  # the kinds a client waits on: always answered, never dropped


class Reply(IntEnum):
    OK = 0
    ERROR = 1


class Op(IntEnum):
    """A field's online reduction over ``count`` steps, and its CF ``cell_methods``."""

    INSTANT = 0
    MEAN = 1
    MIN = 2
    MAX = 3
    SUM = 4

    @property
    def cell_method(self) -> str:
        return {Op.INSTANT: "point", Op.MEAN: "mean", Op.MIN: "minimum", Op.MAX: "maximum", Op.SUM: "sum"}[self]


def parse_reduce(spec: tuple[str, int], what: str) -> tuple[Op, int]:
    """``("mean", 24)`` -> (Op.MEAN, 24), or a one-line error naming the field."""
    name, count = spec
    try:
        op = Op[str(name).upper()]
    except KeyError:
        op = None
    if op is None or int(count) < 1:
        raise ClimioError(f"{what}: reduce={spec!r}: give (OP, STEPS) with OP one of "
                          f"{', '.join(o.name.lower() for o in Op)} and STEPS >= 1, e.g. ('mean', 24)",
                          collective=True)
    return op, int(count)


@dataclass
class Message:
    """One message: its header, its names and its typed buffers."""

    header: np.ndarray
    names: list[str]
    data: list[np.ndarray]

    @property
    def kind(self) -> Kind:
        return Kind(abs(int(self.header[0])))

    @property
    def refused(self) -> bool:
        """A call its client refused itself (``-kind``): ``a`` is its error code, the text its one-line message."""
        return int(self.header[0]) < 0

    @property
    def id(self) -> int:
        return int(self.header[1])

    def arg(self, k: int) -> int:
        """``a`` .. ``e``: header words 2 .. 6."""
        return int(self.header[2 + k])


def payload_types(header: np.ndarray) -> list[tuple[np.dtype, int]]:
    """The typed buffers after the text of a message with this header, in order (what both sides agree on)."""
    kind, a, b, c, d = (int(header[k]) for k in (0, 2, 3, 4, 5))
    if kind < 0:  # refused by its client: the text alone
        return []
    i8 = np.dtype("i8")
    if kind == Kind.DECOMP:
        return [(i8, a), (i8, b)]
    if kind == Kind.DEF_VAR:
        return [(i8, b)]
    if kind == Kind.PUT_ATT and b != CHAR:
        return [(xtype_dtype(b, "attribute"), c)]
    if kind in (Kind.WRITE, Kind.PUT_VAR):
        return [(xtype_dtype(c, "data"), d)]
    if kind == Kind.PUT_TIME:
        return [(np.dtype("f8"), 1)]
    if kind == Kind.PIO:
        return [(i8, a), (np.dtype("u1"), c)]
    return []


def encode(kind: Kind, ident: int, args: Sequence[int] = (), names: Sequence[str] = ()
           ) -> tuple[np.ndarray, bytes]:
    """A header and its text."""
    text = encode_names(names)
    header = np.zeros(HEADER_LEN, np.int64)
    header[0], header[1] = kind, ident
    header[2:2 + len(args)] = args
    header[7] = len(text)
    return header, text


def encode_names(names: Sequence[str]) -> bytes:
    """Names as the wire carries them: UTF-8, each ended by a NUL byte."""
    return b"".join(n.encode() + b"\0" for n in names)


def padded(nbytes: int) -> int:
    return -(-nbytes // 8) * 8


def pad(raw: bytes) -> bytes:
    """``raw`` and zero bytes up to a multiple of 8, so that what follows it is aligned."""
    return raw + bytes(padded(len(raw)) - len(raw))


def pack(header: np.ndarray, text: bytes, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """One message's bytes in a packet: its header, its text and its buffers, each padded to 8 bytes."""
    parts = [header.astype(np.int64).tobytes(), pad(text)]
    parts.extend(pad(np.ascontiguousarray(a).tobytes()) for a in arrays)
    return np.frombuffer(b"".join(parts), np.uint8)


def pio_answer(values: Sequence[int] = (), strings: Sequence[str] = (), data: np.ndarray | None = None
               ) -> np.ndarray:
    """The payload of a PIO call's answer (:data:`TAG_ANSWER_DATA`, ``MPI_BYTE``): int64 n, int64 m, the n int64
    out-values, m bytes of out-strings (each ended by a NUL, padded to a multiple of 8: m counts the padding), then
    the out-data's bytes to the end."""
    text = pad(encode_names(strings))
    head = np.array([len(values), len(text), *values], np.int64).tobytes()
    tail = b"" if data is None else np.ascontiguousarray(data).tobytes()
    return np.frombuffer(head + text + tail, np.uint8)


def unpack(packet: np.ndarray) -> list[Message]:
    """The messages of a packet, in order (their buffers are views of it)."""
    messages, at = [], 0
    while at < packet.size:
        header = packet[at:at + 8 * HEADER_LEN].view(np.int64)
        at += 8 * HEADER_LEN
        text = packet[at:at + int(header[7])].tobytes()
        at += padded(int(header[7]))
        data = []
        for dtype, count in payload_types(header):
            data.append(packet[at:at + count * dtype.itemsize].view(dtype))
            at += padded(count * dtype.itemsize)
        messages.append(Message(header, decode_names(text), data))
    if at != packet.size:
        raise ClimioError(f"climio serve: a packet of {packet.size} bytes ends inside a message: the client speaks "
                          f"another protocol than version {VERSION}")
    return messages


def decode_names(text: bytes) -> list[str]:
    return [n.decode() for n in text.split(b"\0")[:-1]] if text else []


def mpi_type(dtype: np.dtype) -> MPI.Datatype:
    """The explicit MPI type of a buffer on the wire (``MPI_INT64_T``, not the platform's ``MPI_LONG``)."""
    from mpi4py import MPI

    return {"i1": MPI.INT8_T, "i2": MPI.INT16_T, "i4": MPI.INT32_T, "i8": MPI.INT64_T, "f4": MPI.FLOAT,
            "f8": MPI.DOUBLE, "u1": MPI.BYTE}[np.dtype(dtype).newbyteorder("=").str[1:]]


def buffer(array: np.ndarray) -> list[object]:
    """``[array, its MPI type]`` for mpi4py's buffer calls."""
    return [array, mpi_type(array.dtype)]
