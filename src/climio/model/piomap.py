"""PIO2 decomposition map files (NCAR ParallelIO), read and written, so a model's real decomposition can be
fed to climio.

A PIO decomposition gives every compute task its ``compmap``: for each element of the task's local array, the
1-based offset of that element in the flattened global array, 0 for a hole (a local element that is written
nowhere). PIO stores the decompositions of a model in two file formats, both read here (the format is told
by the file's first bytes: netCDF's ``CDF\\x01``/``CDF\\x02``/``CDF\\x05`` or HDF5's ``\\x89HDF``, else text).

Text format, as written by ``PIOc_writemap`` (``src/clib/pioc_support.c``; ``PIOc_write_decomp`` calls it
with the decomposition's ``iodesc->dimlen`` and ``iodesc->map``) and read by ``PIOc_readmap``::

    version 2001 npes <N> ndims <D> \\n          fprintf "version %d npes %d ndims %d \\n", VERSNO = 2001
    <d0> <d1> ... \\n                          "%d " per global dimension length
    0 <maplen0>\\n                             "%d %lld\\n": task index, map length
    <m> <m> ... \\n                            "%lld " per compmap entry; an empty map leaves an empty line
    1 <maplen1>\\n
    ...
    \\n                                        one empty line after the last task, then print_trace():
    Obtained <n> stack frames.\\n              "Obtained %zd stack frames.\\n" and one line per frame
    ...

``PIOc_readmap`` rejects any version but 2001 (``rversno != VERSNO``) and any task count below 1, and checks
that each task block carries its own index; there is no older header it accepts, so none is read here. Its
``fscanf`` ignores everything after the last task (the backtrace, and the ``ioid\\t<n>`` line E3SM's SCORPIO
fork adds), and so does :func:`read_map`. :func:`write_map_text` writes the same bytes, with a backtrace of
no frames (``Obtained 0 stack frames.``): climio has no C stack to show.

netCDF format, as written by ``PIOc_write_nc_decomp`` / ``pioc_write_nc_decomp_int`` and read by
``PIOc_read_nc_decomp`` / ``pioc_read_nc_decomp_int`` (names from ``src/clib/pio.h``, ``DECOMP_*``)::

    dimensions:  dims = D ;  task = N ;  map_element = max_maplen ;
    variables:   int global_size(dims) ;  int maplen(task) ;  int map(task, map_element) ;
    global attributes (in this order, NUL-terminated text as PIO writes it, strlen + 1):
        PIO_library_version (text), max_maplen (int), title and history (text, only when given),
        source (text), array_order ("C" or "Fortran"), backtrace (text)

``map`` holds each task's compmap *0-based* (``iodesc->map[e] - 1``: a hole is -1), padded after the task's
``maplen`` with ``NC_FILL_INT`` (-2147483647); the reader adds 1 back and ignores the padding. PIO's reader
needs ``max_maplen`` to equal the ``map_element`` length, and ``array_order`` to be "C" or "Fortran".
With every task empty, ``map_element`` has length 0, which netCDF-C takes for an unlimited dimension;
:func:`write_map_netcdf` then writes netCDF-4 classic, where that is legal (PIO's classic files cannot).

Dimension order (the convention adopted here): :attr:`PioMap.dims` is in C order (the netCDF file's order,
last dimension fastest) and a compmap entry ``m > 0`` is element ``m - 1`` of the C-order flattening of an
array of shape ``dims``; :meth:`PioMap.offsets` is therefore ``compmap - 1``. This is PIO's own convention:
``PIOc_InitDecomp`` (``src/clib/pioc.c``) takes C-order ``gdimlen`` and keeps them as ``iodesc->dimlen``;
the Fortran ``PIO_initdecomp`` (``src/flib/piolib_mod.F90``, ``PIO_initdecomp_internal``) reverses the
Fortran dimensions before calling it and passes the Fortran ``compdof`` unchanged, since a column-major
offset over Fortran dims equals the row-major offset over the reversed dims. So files written by
``PIOc_write_decomp`` / ``PIO_write_decomp`` (text) and by ``PIOc_write_nc_decomp`` (netCDF, whose
``array_order`` attribute only records the caller's language: ``global_size`` is always ``iodesc->dimlen``)
hold C-order dims. Two writers put the Fortran order on the text file's dims line instead, with the very
same compmap values: ``pio_writedof`` (``src/flib/pio_support.F90``) passes the Fortran caller's ``gdims``
as given, and SCORPIO's ``PIOc_writemap`` reverses ``gdims`` when PIO was started from Fortran. Read those
with ``read_map(path, fortran_order=True)``; ``write_map_text(..., fortran_order=True)`` writes them.

Order of a task's entries: the file keeps the order it was given. ``PIOc_writemap`` called by a model writes
the model's local order; ``PIOc_write_decomp`` writes ``iodesc->map``, which ``PIOc_InitDecomp`` (PIO 2.5
and later) sorts ascending when the model's compmap is not already so (``needssort``/``remap``; holes sort
first), so such files list each task's points, not its memory order.
"""

from __future__ import annotations

import errno
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from climio.errors import ClimioError, IOFault

VERSNO = 2001
"""The only text map version PIO2 writes and reads (``VERSNO`` in ``pioc_support.c``)."""

NC_FILL_INT = -2147483647
"""netCDF's default int fill value: PIO pads each task's row of ``map`` with it after the task's maplen."""

_INT_MAX = 2**31 - 1
_NETCDF_MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF")
_PIO_MAX_NAME = 256  # PIO_MAX_NAME (NC_MAX_NAME): PIO reads title/history into buffers of this + 1
_FAULTS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


@dataclass(frozen=True)
class PioMap:
    """A PIO decomposition: global dims (C order) and every task's 1-based compmap (0 = hole)."""

    dims: tuple[int, ...]
    """Global array dimensions in C (netCDF file) order, as climio uses them."""
    maps: list[np.ndarray]
    """Per task, the 1-based compmap (int64), 0 = hole, in the order the file lists it."""
    title: str = ""
    history: str = ""
    """A netCDF decomposition file's own title and history attributes (PIOc_read_nc_decomp returns them)."""

    def __post_init__(self) -> None:
        """Normalise to a tuple of ints and int64 arrays, and check them, so every map written is readable."""
        dims = _check_dims(self.dims, "PIO map")
        size = math.prod(dims)
        maps = []
        for task, values in enumerate(self.maps):
            array = _int64_array(values, f"PIO map: task {task}")
            bad = array[(array < 0) | (array > size)]
            if bad.size:
                raise ClimioError(f"PIO map: task {task}: compmap entry {int(bad[0])} is outside the array "
                                  f"{dims} ({size} elements; 1-based, 0 = hole)")
            maps.append(array)
        if not maps:
            raise ClimioError("PIO map: a decomposition needs at least one task (PIOc_readmap rejects npes < 1)")
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "maps", maps)

    def __eq__(self, other: object) -> bool:
        """Same dims and the same compmap, entry for entry (arrays compare by value, not identity)."""
        if not isinstance(other, PioMap):
            return NotImplemented
        return (self.dims == other.dims and len(self.maps) == len(other.maps)
                and all(np.array_equal(a, b) for a, b in zip(self.maps, other.maps)))

    @property
    def ntasks(self) -> int:
        """How many compute tasks the decomposition is for (``npes`` / the ``task`` dimension)."""
        return len(self.maps)

    def offsets(self, task: int) -> np.ndarray:
        """Task ``task``'s 0-based flat C-order offsets into an array of shape ``dims``, -1 for holes: climio's
        own convention (``climio.model.decomposition.from_offsets``)."""
        if not 0 <= task < self.ntasks:
            raise ClimioError(f"PIO map: task {task} does not exist; the map has {self.ntasks} tasks")
        return self.maps[task] - 1


def from_offsets(dims: Sequence[int], offsets_per_task: list[np.ndarray]) -> PioMap:
    """The PioMap of per-task 0-based flat C-order offsets (-1 for holes), e.g. to save a decomposition built
    in climio for PIO."""
    dims = _check_dims(dims, "PIO map")
    size = math.prod(dims)
    maps = []
    for task, values in enumerate(offsets_per_task):
        array = _int64_array(values, f"PIO map: task {task}")
        bad = array[(array < -1) | (array >= size)]
        if bad.size:
            raise ClimioError(f"PIO map: task {task}: offset {int(bad[0])} is outside the array {dims} "
                              f"({size} elements; 0-based, -1 = hole)")
        maps.append(array + 1)
    return PioMap(dims, maps)


def read_map(path: str, *, fortran_order: bool = False) -> PioMap:
    """Read a PIO decomposition file, text (``PIOc_writemap``) or netCDF (``PIOc_write_nc_decomp``), told
    apart by its first bytes.

    ``fortran_order``: the text file's dims line is in Fortran order (``pio_writedof``, or SCORPIO started
    from Fortran), so it is reversed into C order; the compmap values need no change (see the module doc).
    netCDF decomposition files always store C order, so it is an error there.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
            netcdf = head in _NETCDF_MAGIC
            data = b"" if netcdf else head + handle.read()
    except OSError as err:
        raise ClimioError(f"{path}: cannot read the PIO decomposition file: {_reason(err)}") from err
    if netcdf:
        if fortran_order:
            raise ClimioError(f"{path}: fortran_order applies to text map files only; a netCDF decomposition "
                              "file always holds global_size in C order (iodesc->dimlen)")
        return _read_netcdf(path)
    return _read_text(path, data, fortran_order)


def write_map_text(path: str, m: PioMap, *, fortran_order: bool = False) -> None:
    """Write ``m`` byte for byte as ``PIOc_writemap`` does (version 2001), so PIO's ``PIOc_readmap`` /
    ``pio_readdof`` and PIO's tools read it. ``fortran_order`` writes the dims line reversed, as
    ``pio_writedof`` called from Fortran does."""
    _check_pio_ints(path, m, netcdf=False)
    dims = m.dims[::-1] if fortran_order else m.dims
    try:
        with open(path, "wb") as out:
            out.write(f"version {VERSNO} npes {m.ntasks} ndims {len(dims)} \n".encode())
            out.write(("".join(f"{d} " for d in dims) + "\n").encode())
            for task, compmap in enumerate(m.maps):
                out.write(f"{task} {compmap.size}\n".encode())
                out.write(("".join(f"{v} " for v in compmap.tolist()) + "\n").encode())
            out.write(b"\nObtained 0 stack frames.\n")
    except OSError as err:
        raise _write_error(path, err) from err


def write_map_netcdf(path: str, m: PioMap, *, title: str = "", history: str = "",
                     file_format: str = "NETCDF3_64BIT_OFFSET") -> None:
    """Write ``m`` laid out as ``PIOc_write_nc_decomp`` does (same dimensions, variables, types, attribute
    names and order, NUL-terminated text), so ``PIOc_read_nc_decomp`` reads it. ``title`` and ``history`` are
    written only when given, and must fit PIO's buffers (at most 256 bytes). ``file_format``: netCDF4-python's
    name of the file's format (PIO takes it from its create mode)."""
    import netCDF4

    from climio import __version__
    from climio.core.ncio import libnetcdf

    _check_pio_ints(path, m, netcdf=True)
    for name, text in (("title", title), ("history", history)):
        if len(text.encode()) > _PIO_MAX_NAME:
            raise ClimioError(f"{path}: the {name} has {len(text.encode())} bytes; PIO reads at most "
                              f"{_PIO_MAX_NAME} (PIO_MAX_NAME)")
    maplens = np.array([c.size for c in m.maps], dtype=np.int32)
    max_maplen = int(maplens.max())
    table = np.full((m.ntasks, max_maplen), NC_FILL_INT, dtype=np.int32)
    for task, compmap in enumerate(m.maps):
        table[task, :compmap.size] = compmap - 1
    attrs: list[tuple[str, str | np.ndarray]] = [("PIO_library_version", f"climio {__version__}"),
                                                 ("max_maplen", np.array([max_maplen], dtype=np.int32))]
    attrs += [(name, text) for name, text in (("title", title), ("history", history)) if text]
    attrs += [("source", "Decomposition file produced by climio, in the layout of the PIO library."),
              ("array_order", "C"),
              ("backtrace", "climio.model.piomap.write_map_netcdf\n")]
    # A map_element of length 0 is NC_UNLIMITED to netCDF-C, legal as map's second dimension only in netCDF-4.
    fmt = file_format if max_maplen else "NETCDF4_CLASSIC"
    try:
        dataset = netCDF4.Dataset(path, "w", format=fmt, clobber=True)
    except OSError as err:
        raise _write_error(path, err) from err
    try:
        ncid = libnetcdf.ncid(dataset)
        for name, value in attrs:  # text with its NUL, as PIO's strlen + 1: its reader needs the terminator
            libnetcdf.put_att(ncid, libnetcdf.NC_GLOBAL, name, value + "\0" if isinstance(value, str) else value,
                              path)
        dim_ids = [libnetcdf.def_dim(ncid, name, length, path)
                   for name, length in (("dims", len(m.dims)), ("task", m.ntasks), ("map_element", max_maplen))]
        int32 = np.dtype("i4")
        gsize = libnetcdf.def_var(ncid, "global_size", int32, [dim_ids[0]], path)
        lens = libnetcdf.def_var(ncid, "maplen", int32, [dim_ids[1]], path)
        mapvar = libnetcdf.def_var(ncid, "map", int32, [dim_ids[1], dim_ids[2]], path)
        libnetcdf.enddef(ncid, path)
        libnetcdf.put_vara(ncid, gsize, (0,), (len(m.dims),), np.array(m.dims, dtype=np.int32), path)
        libnetcdf.put_vara(ncid, lens, (0,), (m.ntasks,), maplens, path)
        if table.size:
            libnetcdf.put_vara(ncid, mapvar, (0, 0), table.shape, table, path)
    except libnetcdf.NetCDFError as err:
        try:
            dataset.close()
        except OSError:
            pass  # the first error is the one to report
        raise ClimioError(str(err)) from err
    try:
        dataset.close()
    except OSError as err:
        raise _write_error(path, err) from err


# ------------------------------------------------------------------------------------------------ text


def _read_text(path: str, data: bytes, fortran_order: bool) -> PioMap:
    """Parse the line layout ``PIOc_writemap`` writes; blank lines are skipped, the trailer ignored."""
    lines = data.split(b"\n")
    cursor = 0

    def next_line(what: str) -> tuple[int, list[bytes]]:
        """The next non-blank line (1-based number, tokens); the end of the file where one is needed is an error."""
        nonlocal cursor
        while cursor < len(lines):
            cursor += 1
            tokens = lines[cursor - 1].split()
            if tokens:
                return cursor, tokens
        raise ClimioError(f"{path}: the file ends where {what} should be")

    def ints(tokens: list[bytes], number: int, what: str) -> np.ndarray:
        try:
            return np.array(tokens, dtype=np.int64)
        except (ValueError, OverflowError) as err:
            bad = next((t for t in tokens if not _is_int(t)), tokens[0])
            raise ClimioError(f"{path}: line {number}: {what} must be integers, found '{_show(bad)}'") from err

    if not data.strip():
        raise ClimioError(f"{path}: empty file, not a PIO decomposition map")
    number, header = next_line("the header")
    if (len(header) != 6 or header[0] != b"version" or header[2] != b"npes" or header[4] != b"ndims"
            or not all(_is_int(t) for t in header[1::2])):
        raise ClimioError(f"{path}: line {number}: not a PIO decomposition map: expected the header "
                          f"'version {VERSNO} npes <N> ndims <D>', found '{_show(b' '.join(header))}'")
    version, npes, ndims = (int(t) for t in header[1::2])
    if version != VERSNO:
        raise ClimioError(f"{path}: line {number}: unsupported PIO map version {version}; PIO2 writes and reads "
                          f"only version {VERSNO}")
    if npes < 1:
        raise ClimioError(f"{path}: line {number}: npes is {npes}; a decomposition has at least one task")
    if ndims < 1:
        raise ClimioError(f"{path}: line {number}: ndims is {ndims}; a decomposition has at least one dimension")

    number, tokens = next_line(f"the {ndims} global dimension lengths")
    if len(tokens) != ndims:
        raise ClimioError(f"{path}: line {number}: expected the {ndims} global dimension lengths the header "
                          f"announces, found {len(tokens)} numbers")
    dims = ints(tokens, number, "dimension lengths")
    if (dims < 1).any() or (dims > _INT_MAX).any():
        raise ClimioError(f"{path}: line {number}: dimension lengths must be positive ints, found "
                          f"{' '.join(str(d) for d in dims.tolist())}")
    dims_c = tuple(int(d) for d in (dims[::-1] if fortran_order else dims))
    size = math.prod(dims_c)

    maps: list[np.ndarray] = []
    for task in range(npes):
        number, tokens = next_line(f"the header of task {task} (the header announces npes {npes})")
        if len(tokens) != 2 or not all(_is_int(t) for t in tokens):
            raise ClimioError(f"{path}: line {number}: expected the header '<task> <maplen>' of task {task} "
                              f"of {npes} (npes), found '{_show(b' '.join(tokens))}'")
        index, maplen = int(tokens[0]), int(tokens[1])
        if index != task:
            raise ClimioError(f"{path}: line {number}: expected the block of task {task}, found task {index}")
        if maplen < 0:
            raise ClimioError(f"{path}: line {number}: task {task} has a negative map length {maplen}")
        if maplen == 0:  # its line of entries is empty: nothing to read
            maps.append(np.zeros(0, np.int64))
            continue
        number, tokens = next_line(f"the {maplen} compmap entries of task {task}")
        if len(tokens) != maplen:
            raise ClimioError(f"{path}: line {number}: task {task} announces {maplen} compmap entries, the line "
                              f"holds {len(tokens)}")
        compmap = ints(tokens, number, "compmap entries")
        bad = compmap[(compmap < 0) | (compmap > size)]
        if bad.size:
            raise ClimioError(f"{path}: line {number}: task {task}: compmap entry {int(bad[0])} is outside the "
                              f"array {dims_c} ({size} elements; 1-based, 0 = hole)")
        maps.append(compmap)

    rest = next((line.split() for line in lines[cursor:] if line.strip()), [])
    if len(rest) == 2 and all(_is_int(t) for t in rest) and int(rest[0]) == npes:
        raise ClimioError(f"{path}: the file holds a block for task {npes} but the header announces npes {npes}")
    return PioMap(dims_c, maps)


def _is_int(token: bytes) -> bool:
    return re.fullmatch(rb"[+-]?[0-9]+", token) is not None


def _show(token: bytes) -> str:
    text = token.decode("ascii", errors="replace")
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------------------------------------- netCDF


def _read_netcdf(path: str) -> PioMap:
    """Read the layout ``pioc_write_nc_decomp_int`` writes, checked as ``pioc_read_nc_decomp_int`` needs it."""
    import netCDF4

    try:
        dataset = netCDF4.Dataset(path, "r")
    except OSError as err:
        raise ClimioError(f"{path}: cannot open the netCDF decomposition file: {_reason(err)}") from err
    with dataset:
        dataset.set_auto_mask(False)
        for name in ("dims", "task", "map_element"):
            if name not in dataset.dimensions:
                raise ClimioError(f"{path}: not a PIO decomposition file: no dimension '{name}'")
        for name, dims in (("global_size", ("dims",)), ("maplen", ("task",)), ("map", ("task", "map_element"))):
            var = dataset.variables.get(name)
            if var is None:
                raise ClimioError(f"{path}: not a PIO decomposition file: no variable '{name}'")
            if var.dimensions != dims:
                raise ClimioError(f"{path}: variable '{name}' has dimensions {var.dimensions}, a PIO "
                                  f"decomposition file has {dims}")
            if getattr(var.dtype, "kind", "") not in ("i", "u"):
                raise ClimioError(f"{path}: variable '{name}' has type {var.dtype}, PIO writes int")
        width = len(dataset.dimensions["map_element"])
        attrs = dataset.ncattrs()
        if "max_maplen" in attrs:
            value = np.asarray(dataset.getncattr("max_maplen"))
            if value.size != 1 or value.dtype.kind not in "iu" or int(value.ravel()[0]) != width:
                raise ClimioError(f"{path}: attribute max_maplen is {value.ravel().tolist()} but dimension "
                                  f"map_element has length {width}; PIO reads the map by max_maplen")
        if "array_order" in attrs:
            order = dataset.getncattr("array_order")
            if not isinstance(order, str) or order not in ("C", "Fortran"):
                raise ClimioError(f"{path}: attribute array_order is {order!r}; PIO writes 'C' or 'Fortran'")
        title, history = (str(dataset.getncattr(a)) if a in attrs else "" for a in ("title", "history"))
        dims = np.asarray(dataset.variables["global_size"][:], dtype=np.int64)
        maplens = np.asarray(dataset.variables["maplen"][:], dtype=np.int64)
        table = np.asarray(dataset.variables["map"][:], dtype=np.int64)
    if dims.size < 1 or (dims < 1).any():
        raise ClimioError(f"{path}: global_size is {dims.tolist()}; a decomposition needs positive dimension "
                          "lengths")
    if maplens.size < 1:
        raise ClimioError(f"{path}: dimension task has length 0; a decomposition has at least one task")
    bad = np.flatnonzero((maplens < 0) | (maplens > width))
    if bad.size:
        task = int(bad[0])
        raise ClimioError(f"{path}: maplen of task {task} is {int(maplens[task])}, outside 0..{width} (the "
                          "map_element length)")
    dims_c = tuple(int(d) for d in dims)
    size = math.prod(dims_c)
    maps = []
    for task, maplen in enumerate(maplens.tolist()):
        zero_based = table[task, :maplen]
        wrong = np.flatnonzero((zero_based < -1) | (zero_based >= size))
        if wrong.size:
            raise ClimioError(f"{path}: map of task {task}, element {int(wrong[0])}: {int(zero_based[wrong[0]])} "
                              f"is outside the array {dims_c} ({size} elements; 0-based, -1 = hole)")
        maps.append(zero_based + 1)
    return PioMap(dims_c, maps, title, history)


# ---------------------------------------------------------------------------------------------- shared


def _check_dims(dims: Sequence[int], where: str) -> tuple[int, ...]:
    """Dims as a tuple of positive ints (``PIOc_InitDecomp`` rejects a length <= 0)."""
    try:
        values = tuple(int(d) for d in dims)
    except (TypeError, ValueError) as err:
        raise ClimioError(f"{where}: dims must be integers, got {dims!r}") from err
    if not values or any(d < 1 for d in values):
        raise ClimioError(f"{where}: dims must be one or more positive lengths, got {values}")
    return values


def _int64_array(values: object, where: str) -> np.ndarray:
    """One task's map as a 1-D int64 array; integers only (a float could hide a truncated offset)."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ClimioError(f"{where}: a map is 1-D, got an array of shape {array.shape}")
    if array.size and array.dtype.kind not in "iu":
        raise ClimioError(f"{where}: map entries must be integers, got {array.dtype}")
    return array.astype(np.int64)


def _check_pio_ints(path: str, m: PioMap, *, netcdf: bool) -> None:
    """PIO holds dims, map lengths and (netCDF only) 0-based offsets in C ints: refuse what it cannot read
    back. The text format's offsets are PIO_Offset (long long)."""
    if max(m.dims) > _INT_MAX:
        raise ClimioError(f"{path}: dimension length {max(m.dims)} exceeds PIO's int ({_INT_MAX})")
    longest = max(c.size for c in m.maps)
    if longest > _INT_MAX:
        raise ClimioError(f"{path}: a task's map has {longest} entries; PIO's maplen is an int ({_INT_MAX})")
    if netcdf and math.prod(m.dims) - 1 > _INT_MAX and any(c.size and int(c.max()) - 1 > _INT_MAX for c in m.maps):
        raise ClimioError(f"{path}: offsets beyond {_INT_MAX} do not fit PIO's int map in a netCDF "
                          "decomposition file; write the text format (write_map_text)")


def _reason(err: OSError) -> str:
    return (err.strerror or str(err)).lower()


def _write_error(path: str, err: OSError) -> ClimioError:
    """A full disk or a failing device is a run-time fault (IOFault); a bad path is bad input."""
    kind = IOFault if err.errno in _FAULTS else ClimioError
    return kind(f"{path}: cannot write the PIO decomposition file: {_reason(err)}")


__all__ = ["NC_FILL_INT", "VERSNO", "PioMap", "from_offsets", "read_map", "write_map_netcdf", "write_map_text"]
