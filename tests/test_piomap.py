"""PIO2 decomposition map files: round trips, files laid out exactly as PIO writes them, and every malformed
file refused with one line naming it."""

from __future__ import annotations

import ctypes
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from climio.errors import ClimioError
from climio.model.piomap import NC_FILL_INT, PioMap, from_offsets, read_map, write_map_netcdf, write_map_text

# What PIOc_writemap writes for a 4 x 3 array (C order) over 2 tasks: task 0 holds rows 0-1 in order, task 1
# rows 2-3 backwards with a hole where 9 would be. fprintf "version %d npes %d ndims %d \n", "%d " per
# dimension, then per task "%d %lld\n" and "%lld " per entry, a blank line, and print_trace's backtrace.
PIO_TEXT = (b"version 2001 npes 2 ndims 2 \n"
            b"4 3 \n"
            b"0 6\n"
            b"1 2 3 4 5 6 \n"
            b"1 6\n"
            b"12 11 10 0 8 7 \n"
            b"\n"
            b"Obtained 4 stack frames.\n"
            b"/opt/pio/lib/libpioc.so(print_trace+0x2e) [0x7f1c2b4a5f3e]\n"
            b"/opt/pio/lib/libpioc.so(PIOc_writemap+0x3b1) [0x7f1c2b4a7c01]\n"
            b"./model(main+0x1d4) [0x401b84]\n"
            b"/lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0xea) [0x7f1c2a1d3d0a]\n")
PIO_OFFSETS = [np.arange(6), np.array([11, 10, 9, -1, 7, 6])]


def random_map(rng: np.random.Generator, dims: tuple[int, ...], ntasks: int, holes: int,
               empty: tuple[int, ...] = ()) -> PioMap:
    """Each point of ``dims`` on one task (a random permutation cut at random places), holes sprinkled in."""
    size = int(np.prod(dims))
    order = rng.permutation(size)
    cuts = np.sort(rng.choice(np.arange(1, size), ntasks - 1 - len(empty), replace=False)) if ntasks > 1 else []
    pieces = list(np.split(order, cuts))
    for task in empty:
        pieces.insert(task, np.zeros(0, np.int64))
    with_holes = []
    for piece in pieces:
        if piece.size:
            piece = np.insert(piece, rng.integers(0, piece.size + 1, holes), -1)
        with_holes.append(piece)
    return from_offsets(dims, with_holes)


MAPS = {
    "1d": ((17,), 3, 0, ()),
    "2d-holes": ((6, 5), 4, 2, ()),
    "2d-empty-task": ((4, 7), 4, 1, (2,)),
    "3d-holes-empty-first": ((3, 4, 5), 5, 3, (0,)),
    "1-task": ((2, 2, 2), 1, 1, ()),
}


@pytest.mark.parametrize("name", MAPS)
@pytest.mark.parametrize("fmt", ["text", "netcdf"])
def test_round_trip(tmp_path: Path, name: str, fmt: str) -> None:
    dims, ntasks, holes, empty = MAPS[name]
    m = random_map(np.random.default_rng(sorted(MAPS).index(name)), dims, ntasks, holes, empty)
    path = str(tmp_path / ("map.txt" if fmt == "text" else "map.nc"))
    (write_map_text if fmt == "text" else write_map_netcdf)(path, m)
    back = read_map(path)
    assert back == m
    assert back.dims == dims and back.ntasks == ntasks
    for task in range(ntasks):
        assert back.maps[task].dtype == np.int64
        np.testing.assert_array_equal(back.offsets(task), m.maps[task] - 1)
    owned = np.concatenate([back.offsets(t) for t in range(ntasks)])
    np.testing.assert_array_equal(np.sort(owned[owned >= 0]), np.arange(np.prod(dims)))


def test_every_task_empty_round_trips(tmp_path: Path) -> None:
    m = PioMap((5,), [np.zeros(0, np.int64), np.zeros(0, np.int64)])
    write_map_text(str(tmp_path / "e.txt"), m)
    write_map_netcdf(str(tmp_path / "e.nc"), m)  # map_element has length 0: netCDF-C's unlimited
    assert read_map(str(tmp_path / "e.txt")) == m == read_map(str(tmp_path / "e.nc"))
    assert (tmp_path / "e.txt").read_bytes() == (b"version 2001 npes 2 ndims 1 \n5 \n0 0\n\n1 0\n\n"
                                                 b"\nObtained 0 stack frames.\n")


def test_pio_text_file_parses_to_c_order_offsets(tmp_path: Path) -> None:
    path = tmp_path / "piodecomp2tasks.dat"
    path.write_bytes(PIO_TEXT)
    m = read_map(str(path))
    assert m.dims == (4, 3) and m.ntasks == 2
    np.testing.assert_array_equal(m.maps[1], [12, 11, 10, 0, 8, 7])
    for task, expected in enumerate(PIO_OFFSETS):
        np.testing.assert_array_equal(m.offsets(task), expected)
    rows, cols = np.unravel_index(m.offsets(1)[m.offsets(1) >= 0], m.dims)  # C order: task 1 has rows 2 and 3
    assert set(rows.tolist()) == {2, 3} and cols.tolist() == [2, 1, 0, 1, 0]


def test_text_writer_writes_pio_bytes(tmp_path: Path) -> None:
    path = tmp_path / "out.dat"
    write_map_text(str(path), from_offsets((4, 3), PIO_OFFSETS))
    maps_part = PIO_TEXT[:PIO_TEXT.index(b"\n\nObtained") + 2]
    assert path.read_bytes() == maps_part + b"Obtained 0 stack frames.\n"


def test_text_trailers_and_empty_tasks(tmp_path: Path) -> None:
    """SCORPIO's extra 'ioid' line after the backtrace, an empty task's empty line, no backtrace at all."""
    path = tmp_path / "scorpio.dat"
    path.write_bytes(b"version 2001 npes 3 ndims 1 \n10 \n0 3\n1 2 3 \n1 0\n\n2 2\n10 9 \n\n"
                     b"Obtained 1 stack frames.\n./e3sm.exe() [0x42]\nioid\t512\n")
    m = read_map(str(path))
    assert m.dims == (10,) and [a.tolist() for a in m.maps] == [[1, 2, 3], [], [10, 9]]
    path.write_bytes(b"version 2001 npes 1 ndims 1 \r\n3 \r\n0 2\r\n3 1 \r\n")  # CRLF, nothing after the maps
    assert read_map(str(path)).maps[0].tolist() == [3, 1]


def test_fortran_order_dims_line(tmp_path: Path) -> None:
    """pio_writedof (and SCORPIO from Fortran) list the dims in Fortran order with the same compmap values."""
    m = from_offsets((4, 3), PIO_OFFSETS)
    path = str(tmp_path / "f.dat")
    write_map_text(path, m, fortran_order=True)
    assert Path(path).read_bytes().split(b"\n")[1] == b"3 4 "
    assert read_map(path, fortran_order=True) == m
    assert read_map(path).dims == (3, 4)


@pytest.mark.parametrize("fmt", ["NETCDF3_CLASSIC", "NETCDF4"])
def test_pio_netcdf_file_parses(tmp_path: Path, fmt: str) -> None:
    """A decomposition file built as pioc_write_nc_decomp_int lays it out (names from pio.h's DECOMP_*)."""
    path = str(tmp_path / "decomp.nc")
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.setncattr("PIO_library_version", "2.6.2")
        ds.setncattr("max_maplen", np.int32(6))
        ds.setncattr("title", "test decomposition")
        ds.setncattr("history", "written by test_decomp_frame")
        ds.setncattr("source", "Decomposition file produced by PIO library.")
        ds.setncattr("array_order", "C")
        ds.setncattr("backtrace", "./test_darray(main+0x12) [0x4011a2]\n")
        ds.createDimension("dims", 2)
        ds.createDimension("task", 2)
        ds.createDimension("map_element", 6)
        ds.createVariable("global_size", "i4", ("dims",))[:] = [4, 3]
        ds.createVariable("maplen", "i4", ("task",))[:] = [6, 6]
        var = ds.createVariable("map", "i4", ("task", "map_element"))
        var.set_auto_mask(False)
        var[:] = [[0, 1, 2, 3, 4, 5], [11, 10, 9, -1, 7, 6]]  # 0-based: iodesc->map[e] - 1, a hole is -1
    m = read_map(path)
    assert m.dims == (4, 3)
    for task, expected in enumerate(PIO_OFFSETS):
        np.testing.assert_array_equal(m.offsets(task), expected)


def test_pio_netcdf_padding_and_fortran_order_attribute(tmp_path: Path) -> None:
    """Rows shorter than max_maplen end in NC_FILL_INT; array_order "Fortran" leaves global_size in C order."""
    path = str(tmp_path / "decomp.nc")
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.setncatts({"PIO_library_version": "2.5.10", "max_maplen": np.int32(4),
                      "source": "Decomposition file produced by PIO library.", "array_order": "Fortran"})
        for name, length in (("dims", 3), ("task", 3), ("map_element", 4)):
            ds.createDimension(name, length)
        ds.createVariable("global_size", "i4", ("dims",))[:] = [2, 2, 2]
        ds.createVariable("maplen", "i4", ("task",))[:] = [4, 0, 2]
        var = ds.createVariable("map", "i4", ("task", "map_element"))
        var.set_auto_mask(False)
        fill = NC_FILL_INT
        var[:] = [[0, 1, 2, 3], [fill, fill, fill, fill], [7, -1, fill, fill]]
    m = read_map(path)
    assert m.dims == (2, 2, 2)
    assert [a.tolist() for a in m.maps] == [[1, 2, 3, 4], [], [8, 0]]


def _attribute_length(path: str, name: str) -> int:
    from climio.core.ncio import libnetcdf

    with netCDF4.Dataset(path) as ds:
        length = ctypes.c_size_t()
        assert libnetcdf.lib().nc_inq_attlen(ds._grpid, libnetcdf.NC_GLOBAL, name.encode(),
                                             ctypes.byref(length)) == 0
        return length.value


def test_netcdf_writer_layout(tmp_path: Path) -> None:
    path = str(tmp_path / "w.nc")
    write_map_netcdf(path, from_offsets((4, 3), [PIO_OFFSETS[0], PIO_OFFSETS[1][:5]]), title="T", history="H")
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        assert ds.ncattrs() == ["PIO_library_version", "max_maplen", "title", "history", "source",
                                "array_order", "backtrace"]
        assert ds.max_maplen == 6 and ds.array_order == "C" and ds.title == "T" and ds.history == "H"
        assert {k: len(v) for k, v in ds.dimensions.items()} == {"dims": 2, "task": 2, "map_element": 6}
        assert {k: (v.dimensions, v.dtype) for k, v in ds.variables.items()} == {
            "global_size": (("dims",), np.dtype("i4")), "maplen": (("task",), np.dtype("i4")),
            "map": (("task", "map_element"), np.dtype("i4"))}
        assert ds["global_size"][:].tolist() == [4, 3] and ds["maplen"][:].tolist() == [6, 5]
        assert ds["map"][:].tolist() == [[0, 1, 2, 3, 4, 5], [11, 10, 9, -1, 7, NC_FILL_INT]]
    assert _attribute_length(path, "array_order") == 2  # "C" and its NUL: PIO writes strlen + 1
    assert _attribute_length(path, "title") == 2
    write_map_netcdf(path, from_offsets((3,), [np.arange(3)]))
    with netCDF4.Dataset(path) as ds:
        assert "title" not in ds.ncattrs() and "history" not in ds.ncattrs()  # like PIO given NULL


def test_offsets_and_from_offsets_agree() -> None:
    m = PioMap((2, 3), [np.array([6, 0, 1]), np.array([2, 3, 4, 5])])
    assert m.offsets(0).tolist() == [5, -1, 0]
    assert from_offsets((2, 3), [m.offsets(0), m.offsets(1)]) == m
    assert m != PioMap((3, 2), m.maps)


# ------------------------------------------------------------------------------------------------ errors


def _refused(path: Path, match: str, **kwargs: bool) -> None:
    with pytest.raises(ClimioError, match=match) as info:
        read_map(str(path), **kwargs)
    message = str(info.value)
    assert str(path) in message and "\n" not in message


TEXT_ERRORS = {
    "bad header": (b"versoin 2001 npes 1 ndims 1 \n3 \n0 1\n1 \n", "not a PIO decomposition map"),
    "header not numbers": (b"version 2001 npes two ndims 1 \n3 \n", "not a PIO decomposition map"),
    "unknown version": (b"version 2000 npes 1 ndims 1 \n3 \n0 1\n1 \n", "unsupported PIO map version 2000"),
    "no tasks": (b"version 2001 npes 0 ndims 1 \n3 \n", "npes is 0"),
    "dims count": (b"version 2001 npes 1 ndims 2 \n3 \n0 1\n1 \n", "expected the 2 global dimension lengths"),
    "zero dim": (b"version 2001 npes 1 ndims 2 \n3 0 \n0 1\n1 \n", "dimension lengths must be positive"),
    "too few entries": (b"version 2001 npes 1 ndims 1 \n3 \n0 3\n1 2 \n", "announces 3 compmap entries"),
    "too many entries": (b"version 2001 npes 1 ndims 1 \n3 \n0 1\n1 2 \n", "announces 1 compmap entries"),
    "not an integer": (b"version 2001 npes 1 ndims 1 \n3 \n0 2\n1 2.5 \n", "must be integers, found '2.5'"),
    "offset past end": (b"version 2001 npes 1 ndims 2 \n2 2 \n0 2\n1 5 \n", "compmap entry 5 is outside"),
    "negative offset": (b"version 2001 npes 1 ndims 1 \n3 \n0 2\n1 -1 \n", "compmap entry -1 is outside"),
    "task index": (b"version 2001 npes 2 ndims 1 \n3 \n0 1\n1 \n2 1\n2 \n", "expected the block of task 1"),
    "fewer tasks": (b"version 2001 npes 3 ndims 1 \n3 \n0 1\n1 \n1 1\n2 \n\nObtained 0 stack frames.\n",
                    "header '<task> <maplen>' of task 2 of 3"),
    "truncated": (b"version 2001 npes 2 ndims 1 \n3 \n0 1\n1 \n", "ends where the header of task 1"),
    "more tasks": (b"version 2001 npes 1 ndims 1 \n3 \n0 1\n1 \n1 1\n2 \n", "block for task 1 but the header"),
    "negative maplen": (b"version 2001 npes 1 ndims 1 \n3 \n0 -2\n\n", "negative map length"),
    "empty": (b"", "empty file"),
    "binary": (b"\x00\xff\xfe garbage", "not a PIO decomposition map"),
}


@pytest.mark.parametrize("case", TEXT_ERRORS)
def test_malformed_text_refused(tmp_path: Path, case: str) -> None:
    data, match = TEXT_ERRORS[case]
    path = tmp_path / "bad map.dat"
    path.write_bytes(data)
    _refused(path, match)


def test_missing_file_refused(tmp_path: Path) -> None:
    _refused(tmp_path / "nowhere.dat", "cannot read")


def _pio_netcdf(path: Path, **change: object) -> None:
    """A valid 2-task file, with ``change`` applied: a name -> None drops it, else replaces its value."""
    attrs = {"PIO_library_version": "2.6.2", "max_maplen": np.int32(3), "source": "PIO", "array_order": "C"}
    values = {"global_size": [2, 3], "maplen": [3, 3], "map": [[0, 1, 2], [5, 4, -1]]}
    for key, value in change.items():
        (attrs if key in attrs else values)[key] = value
    with netCDF4.Dataset(str(path), "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.setncatts({k: v for k, v in attrs.items() if v is not None})
        for name, length in (("dims", 2), ("task", 2), ("map_element", 3)):
            ds.createDimension(name, length)
        dims = {"global_size": ("dims",), "maplen": ("task",), "map": ("task", "map_element")}
        for name, value in values.items():
            if value is not None:
                var = ds.createVariable(name, "i4", dims[name])
                var.set_auto_mask(False)
                var[:] = value


NETCDF_ERRORS = {
    "no map variable": ({"map": None}, "no variable 'map'"),
    "max_maplen": ({"max_maplen": np.int32(4)}, "max_maplen is \\[4\\] but dimension map_element has length 3"),
    "array_order": ({"array_order": "F"}, "array_order is 'F'"),
    "maplen too long": ({"maplen": [3, 4]}, "maplen of task 1 is 4"),
    "offset past end": ({"map": [[0, 1, 6], [5, 4, -1]]}, "element 2: 6 is outside"),
    "below -1": ({"map": [[0, 1, 2], [5, -3, -1]]}, "element 1: -3 is outside"),
    "bad global size": ({"global_size": [2, 0]}, "positive dimension lengths"),
}


@pytest.mark.parametrize("case", NETCDF_ERRORS)
def test_malformed_netcdf_refused(tmp_path: Path, case: str) -> None:
    change, match = NETCDF_ERRORS[case]
    path = tmp_path / "bad.nc"
    _pio_netcdf(path, **change)
    _refused(path, match)


def test_netcdf_corrupt_and_fortran_order_refused(tmp_path: Path) -> None:
    path = tmp_path / "good.nc"
    _pio_netcdf(path)
    assert read_map(str(path)).dims == (2, 3)
    _refused(path, "fortran_order applies to text map files only", fortran_order=True)
    broken = tmp_path / "broken.nc"
    broken.write_bytes(b"CDF\x02" + b"\xff" * 28)  # netCDF's magic, then no valid header
    _refused(broken, "cannot open the netCDF decomposition file")


def test_bad_maps_refused_in_memory(tmp_path: Path) -> None:
    with pytest.raises(ClimioError, match="compmap entry 7 is outside"):
        PioMap((2, 3), [np.array([1, 7])])
    with pytest.raises(ClimioError, match="offset 6 is outside"):
        from_offsets((2, 3), [np.array([6])])
    with pytest.raises(ClimioError, match="must be integers"):
        from_offsets((2, 3), [np.array([1.5])])
    with pytest.raises(ClimioError, match="at least one task"):
        from_offsets((2, 3), [])
    with pytest.raises(ClimioError, match="positive lengths"):
        PioMap((0, 3), [np.array([0])])
    with pytest.raises(ClimioError, match="task 2 does not exist"):
        PioMap((3,), [np.array([1, 2, 3])]).offsets(2)
    with pytest.raises(ClimioError, match="256"):
        write_map_netcdf(str(tmp_path / "t.nc"), PioMap((1,), [np.array([1])]), title="x" * 300)
    with pytest.raises(ClimioError, match=str(tmp_path / "no" / "dir.dat")):
        write_map_text(str(tmp_path / "no" / "dir.dat"), PioMap((1,), [np.array([1])]))


def test_odd_tokens_and_types_refused(tmp_path: Path) -> None:
    path = tmp_path / "odd.dat"
    path.write_bytes(b"version 2001 npes +-1 ndims 1 \n3 \n")
    _refused(path, "not a PIO decomposition map")
    path.write_bytes(b"version 2001 npes 1 ndims 1 \n3 \n0 1\n99999999999999999999 \n")
    _refused(path, "must be integers")
    nc = tmp_path / "text_map.nc"
    with netCDF4.Dataset(str(nc), "w", format="NETCDF4") as ds:
        for name, length in (("dims", 1), ("task", 1), ("map_element", 1)):
            ds.createDimension(name, length)
        ds.createVariable("global_size", "i4", ("dims",))[:] = [3]
        ds.createVariable("maplen", "i4", ("task",))[:] = [1]
        ds.createVariable("map", str, ("task", "map_element"))[0, 0] = "1"
    _refused(nc, "variable 'map' has type")
