"""Compare the netCDF files two runs of one program wrote (used by scripts/pio_conformance.sh).

usage: python scripts/pio_compare.py REF_DIR TEST_DIR [--ignore-values VAR ...] [--names REF,TEST]

Every netCDF file (found by its magic bytes, not its name) directly in either directory is compared:
the same file names; for each file the same format, global attributes, dimensions (name, length,
unlimited), variables (name, type, dimensions, attributes, values byte for byte) and groups, in the
same order. Attributes named ``history`` are left out, and the global attributes by which a decomposition
file (PIOc_write_nc_decomp's) names the library and code that wrote it (``PIO_library_version``,
``source``, ``backtrace``), whose values are the writer's, not the data's. ``--ignore-values`` leaves out
the values of the named variables (a program that writes the date), not their definitions.

Values a file leaves undefined are not compared: in a netCDF-4 file written without fill values (PIO
creates every file in NOFILL mode), the chunks HDF5 never allocated, or a contiguous variable with no
storage, read as whatever memory held. Where the reference holds such a region the test file may hold
anything; where the reference holds data and the test file holds none, that is a difference.

Prints one line per file (``NAME: same`` or ``NAME: <first difference>``), then a last line: ``same
(N files)`` or ``differs: <the first difference>``. Exit status 0 when every file is the same, 1
when something differs, 2 on a usage error.
"""

import argparse
import ctypes
import os
import sys

import netCDF4
import numpy as np

MAGIC = (b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n")
SKIP_ATTRS = {"history"}
WRITER_ATTRS = {"PIO_library_version", "source", "backtrace"}  # a decomposition file's, naming its writer


class Differs(Exception):
    pass


class Unwritten:
    """Which elements of a netCDF-4 variable hold no data: HDF5 storage never allocated, fill time NEVER.

    Uses the HDF5 library netCDF4 itself loaded (ctypes); without it every element counts as written.
    """

    def __init__(self):
        self.lib = None
        try:
            with open("/proc/self/maps") as maps:
                paths = {line.split()[-1] for line in maps if "libhdf5" in line and "_hl" not in line}
            for path in sorted(paths):
                lib = ctypes.CDLL(path)
                if hasattr(lib, "H5Dget_chunk_info"):
                    self.lib = lib
                    break
        except OSError:
            self.lib = None
        if self.lib is None:
            return
        lib = self.lib
        hid, herr, hsize = ctypes.c_int64, ctypes.c_int, ctypes.c_uint64
        lib.H5Fopen.restype, lib.H5Fopen.argtypes = hid, [ctypes.c_char_p, ctypes.c_uint, hid]
        lib.H5Dopen2.restype, lib.H5Dopen2.argtypes = hid, [hid, ctypes.c_char_p, hid]
        lib.H5Lexists.restype, lib.H5Lexists.argtypes = ctypes.c_int, [hid, ctypes.c_char_p, hid]
        lib.H5Dget_create_plist.restype, lib.H5Dget_create_plist.argtypes = hid, [hid]
        lib.H5Dget_storage_size.restype, lib.H5Dget_storage_size.argtypes = hsize, [hid]
        lib.H5Pget_fill_time.restype, lib.H5Pget_fill_time.argtypes = herr, [hid, ctypes.POINTER(ctypes.c_int)]
        lib.H5Pget_layout.restype, lib.H5Pget_layout.argtypes = ctypes.c_int, [hid]
        lib.H5Pget_chunk.restype, lib.H5Pget_chunk.argtypes = ctypes.c_int, [hid, ctypes.c_int,
                                                                            ctypes.POINTER(hsize)]
        lib.H5Dget_num_chunks.restype, lib.H5Dget_num_chunks.argtypes = herr, [hid, hid, ctypes.POINTER(hsize)]
        lib.H5Dget_chunk_info.restype = herr
        lib.H5Dget_chunk_info.argtypes = [hid, hid, hsize, ctypes.POINTER(hsize), ctypes.POINTER(ctypes.c_uint),
                                          ctypes.POINTER(hsize), ctypes.POINTER(hsize)]
        for name in ("H5Fclose", "H5Dclose", "H5Pclose"):
            getattr(lib, name).restype, getattr(lib, name).argtypes = herr, [hid]

    def mask(self, path, group_path, name, shape):
        """Boolean array, True where the variable holds no data; None when it holds data everywhere."""
        if self.lib is None or not shape or 0 in shape:
            return None
        lib = self.lib
        fid = lib.H5Fopen(path.encode(), 0, 0)  # H5F_ACC_RDONLY, H5P_DEFAULT
        if fid < 0:
            return None
        try:
            did = -1
            for dataset in (name, "_nc4_non_coord_" + name):
                full = (group_path.rstrip("/") + "/" + dataset).encode()
                if lib.H5Lexists(fid, full, 0) > 0:
                    did = lib.H5Dopen2(fid, full, 0)
                    break
            if did < 0:
                return None
            try:
                plist = lib.H5Dget_create_plist(did)
                try:
                    fill_time = ctypes.c_int(-1)
                    lib.H5Pget_fill_time(plist, ctypes.byref(fill_time))
                    if fill_time.value != 1:  # H5D_FILL_TIME_NEVER: else unallocated data reads as fill
                        return None
                    layout = lib.H5Pget_layout(plist)
                    if layout != 2:  # not chunked: contiguous or compact, allocated all at once or not at all
                        return np.ones(shape, bool) if lib.H5Dget_storage_size(did) == 0 else None
                    rank = len(shape)
                    chunk = (ctypes.c_uint64 * rank)()
                    if lib.H5Pget_chunk(plist, rank, chunk) != rank:
                        return None
                finally:
                    lib.H5Pclose(plist)
                count = ctypes.c_uint64(0)
                if lib.H5Dget_num_chunks(did, 0, ctypes.byref(count)) < 0:
                    return None
                unwritten = np.ones(shape, bool)
                offset = (ctypes.c_uint64 * rank)()
                mask_, addr, size = ctypes.c_uint(0), ctypes.c_uint64(0), ctypes.c_uint64(0)
                for i in range(count.value):
                    if lib.H5Dget_chunk_info(did, 0, i, offset, ctypes.byref(mask_), ctypes.byref(addr),
                                             ctypes.byref(size)) < 0:
                        return None
                    unwritten[tuple(slice(offset[d], offset[d] + chunk[d]) for d in range(rank))] = False
                return unwritten if unwritten.any() else None
            finally:
                lib.H5Dclose(did)
        finally:
            lib.H5Fclose(fid)


UNWRITTEN = None


def unwritten(path, group_path, name, shape):
    global UNWRITTEN
    if UNWRITTEN is None:
        UNWRITTEN = Unwritten()
    return UNWRITTEN.mask(path, group_path, name, shape)


def netcdf_files(directory):
    names = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            head = f.read(8)
        if head.startswith(MAGIC[:3]) or head == MAGIC[3]:
            names.append(name)
    return names


def show(value, limit=60):
    text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def same_value(a, b):
    """Attribute values: same type and the same bytes (strings: the same text)."""
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def type_name(value):
    return "text" if isinstance(value, str) else str(np.asarray(value).dtype)


def same_names(where, kind, ref_names, test_names, names):
    """The same names in the same order, else the first one missing, extra or out of place."""
    if ref_names == test_names:
        return
    missing = [n for n in ref_names if n not in test_names]
    extra = [n for n in test_names if n not in ref_names]
    if missing:
        raise Differs(f"{where}: {kind} '{missing[0]}' missing in {names[1]}")
    if extra:
        raise Differs(f"{where}: {kind} '{extra[0]}' only in {names[1]}")
    raise Differs(f"{where}: {kind} order {ref_names} ({names[0]}) vs {test_names} ({names[1]})")


def compare_attrs(where, ref, test, names):
    skip = SKIP_ATTRS | (WRITER_ATTRS if "PIO_library_version" in ref.ncattrs() else set())
    ref_names = [n for n in ref.ncattrs() if n not in skip]
    test_names = [n for n in test.ncattrs() if n not in skip]
    same_names(where, "attribute", ref_names, test_names, names)
    for name in ref_names:
        a, b = ref.getncattr(name), test.getncattr(name)
        if not same_value(a, b):
            raise Differs(f"{where}: attribute {name}: {show(a)} ({type_name(a)}, {names[0]}) vs "
                          f"{show(b)} ({type_name(b)}, {names[1]})")


def first_difference(a, b):
    """Index and values of the first element that differs (byte for byte) between equal-shape arrays."""
    if a.dtype.kind in "OSUV":
        flat_a, flat_b = a.reshape(-1), b.reshape(-1)
        for i in range(flat_a.size):
            if flat_a[i] != flat_b[i]:
                return np.unravel_index(i, a.shape), flat_a[i], flat_b[i]
        return None
    raw_a = np.ascontiguousarray(a).view(np.uint8).reshape(a.size, -1) if a.size else None
    raw_b = np.ascontiguousarray(b).view(np.uint8).reshape(b.size, -1) if b.size else None
    if raw_a is None:
        return None
    bad = np.nonzero((raw_a != raw_b).any(axis=1))[0]
    if bad.size == 0:
        return None
    i = int(bad[0])
    return np.unravel_index(i, a.shape), a.reshape(-1)[i], b.reshape(-1)[i]


def compare_group(where, ref, test, names, ignore_values, ctx):
    compare_attrs(f"{where}: {'group' if '/' in where else 'global'}", ref, test, names)
    ref_dims, test_dims = list(ref.dimensions), list(test.dimensions)
    if ref_dims != test_dims:
        raise Differs(f"{where}: dimensions {ref_dims} ({names[0]}) vs {test_dims} ({names[1]})")
    for name in ref_dims:
        a, b = ref.dimensions[name], test.dimensions[name]
        if (len(a), a.isunlimited()) != (len(b), b.isunlimited()):
            def describe(d):
                return f"{len(d)}{' unlimited' if d.isunlimited() else ''}"
            raise Differs(f"{where}: dimension {name}: {describe(a)} ({names[0]}) vs {describe(b)} ({names[1]})")
    ref_vars, test_vars = list(ref.variables), list(test.variables)
    same_names(where, "variable", ref_vars, test_vars, names)
    for name in ref_vars:
        a, b = ref.variables[name], test.variables[name]
        if a.dtype != b.dtype:
            raise Differs(f"{where}: variable {name}: type {a.dtype} ({names[0]}) vs {b.dtype} ({names[1]})")
        if a.dimensions != b.dimensions:
            raise Differs(f"{where}: variable {name}: dimensions {a.dimensions} ({names[0]}) vs "
                          f"{b.dimensions} ({names[1]})")
        compare_attrs(f"{where}: variable {name}", a, b, names)
        if name in ignore_values:
            continue
        for var in (a, b):  # the stored values, as stored
            var.set_auto_maskandscale(False)
            var.set_auto_chartostring(False)
            var.set_always_mask(False)
        va, vb = np.asarray(a[...]), np.asarray(b[...])
        if va.shape != vb.shape:
            raise Differs(f"{where}: variable {name}: shape {va.shape} ({names[0]}) vs {vb.shape} ({names[1]})")
        ua = unwritten(ctx["ref"], ref.path, name, va.shape) if ctx["ref_nc4"] else None
        ub = unwritten(ctx["test"], test.path, name, vb.shape) if ctx["test_nc4"] else None
        if ub is not None:
            lost = ub if ua is None else ub & ~ua
            if lost.any():
                index = np.unravel_index(int(np.flatnonzero(lost)[0]), va.shape)
                at = ",".join(str(int(i)) for i in index)
                raise Differs(f"{where}: variable {name}[{at}]: {show(va[index])} ({names[0]}) vs no data: "
                              f"{names[1]}'s file never stored it")
        if ua is not None:
            if ua.all():
                ctx["notes"].append(f"{name}: no data in {names[0]}'s file")
                continue
            ctx["notes"].append(f"{name}: {int(ua.sum())} of {ua.size} values with no data in {names[0]}'s file")
            vb = vb.copy()
            vb[ua] = va[ua]
        diff = first_difference(va, vb)
        if diff is not None:
            index, x, y = diff
            at = ",".join(str(int(i)) for i in index)
            raise Differs(f"{where}: variable {name}[{at}]: {show(x)} ({names[0]}) vs {show(y)} ({names[1]})")
    ref_groups, test_groups = list(ref.groups), list(test.groups)
    if ref_groups != test_groups:
        raise Differs(f"{where}: groups {ref_groups} ({names[0]}) vs {test_groups} ({names[1]})")
    for name in ref_groups:
        compare_group(f"{where}/{name}", ref.groups[name], test.groups[name], names, ignore_values, ctx)


def compare_file(ref_path, test_path, names, ignore_values):
    """Raises Differs at the first difference; else returns the notes on values left out."""
    name = os.path.basename(ref_path)
    try:
        ref = netCDF4.Dataset(ref_path, "r")
    except OSError as e:
        raise Differs(f"{name}: {names[0]}'s file does not open: {e}")
    try:
        try:
            test = netCDF4.Dataset(test_path, "r")
        except OSError as e:
            raise Differs(f"{name}: {names[1]}'s file does not open: {e}")
        try:
            if ref.data_model != test.data_model:
                raise Differs(f"{name}: format {ref.data_model} ({names[0]}) vs {test.data_model} ({names[1]})")
            ctx = {"ref": ref_path, "test": test_path, "notes": [],
                   "ref_nc4": ref.data_model.startswith("NETCDF4"), "test_nc4": test.data_model.startswith("NETCDF4")}
            compare_group(name, ref, test, names, ignore_values, ctx)
            return ctx["notes"]
        finally:
            test.close()
    finally:
        ref.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ref_dir")
    parser.add_argument("test_dir")
    parser.add_argument("--ignore-values", nargs="*", default=[], metavar="VAR")
    parser.add_argument("--names", default="PIO2,climio", help="what to call the two runs (default PIO2,climio)")
    args = parser.parse_args(argv)
    names = tuple(args.names.split(",", 1)) if "," in args.names else ("ref", "test")
    for d in (args.ref_dir, args.test_dir):
        if not os.path.isdir(d):
            print(f"pio_compare.py: {d} is not a directory", file=sys.stderr)
            return 2
    ref_files, test_files = netcdf_files(args.ref_dir), netcdf_files(args.test_dir)
    first = None
    for name in ref_files:
        if name not in test_files:
            line = f"{name}: not written by {names[1]}"
        else:
            try:
                notes = compare_file(os.path.join(args.ref_dir, name), os.path.join(args.test_dir, name), names,
                                     set(args.ignore_values))
                line = f"{name}: same" + (f" ({'; '.join(notes)})" if notes else "")
            except Differs as e:
                line = str(e)
        print(line)
        if first is None and not line.startswith(f"{name}: same"):
            first = line
    for name in test_files:
        if name not in ref_files:
            line = f"{name}: written by {names[1]} only"
            print(line)
            first = first or line
    if first is None:
        print(f"same ({len(ref_files)} file{'s' if len(ref_files) != 1 else ''})")
        return 0
    print(f"differs: {first}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
