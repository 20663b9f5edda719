"""Compare two netCDF files the way a reader would see them, and list every difference.

Written for the real-file conformance suite (tests/test_subset_real.py): ``diff(got, want)`` returns
a list of readable lines (empty when the files are equal), so a test can assert on all of them at
once. It is independent of climio: netCDF4-python for structure and data, ``ncdump`` text as a second
check (it shows what netCDF4-python hides, e.g. an NC_STRING attribute where NC_CHAR was expected).

What is compared:

* the file format (``data_model``) and groups;
* dimensions: names, lengths and which is unlimited, in order;
* global attributes (except ``IGNORED_GLOBAL``): names in order, types and values;
* variables, in order: type, dimensions, attributes (names in order, types, values) and data,
  bitwise (raw values: no masking, no scaling, chars as bytes), NaN-aware;
* ``ncdump`` text (header, then data), the first line and the ignored attributes aside.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Iterable

import netCDF4
import numpy as np

IGNORED_GLOBAL = ("history", "history_of_appended_files", "NCO")


def _raw(ds: netCDF4.Dataset) -> None:
    ds.set_auto_maskandscale(False)
    ds.set_always_mask(False)
    for var in ds.variables.values():
        var.set_auto_chartostring(False)


def _show(value: Any, limit: int = 80) -> str:
    text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_of(value: Any) -> str:
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "text[]"
    return str(np.asarray(value).dtype)


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (str, bytes)) or isinstance(b, (str, bytes)):
        return a == b
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return list(a) == list(b) if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) else False
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape:
        return False
    if x.dtype.kind in "fc" and y.dtype.kind in "fc":
        return bool(np.array_equal(x, y, equal_nan=True))
    return bool(np.array_equal(x, y))


def _attrs(obj: Any, ignore: Iterable[str] = ()) -> dict[str, Any]:
    return {name: obj.getncattr(name) for name in obj.ncattrs() if name not in ignore}


def _diff_names(what: str, got: Iterable[str], want: Iterable[str]) -> list[str]:
    """Names missing, unexpected, or in another order (``what``: 'attributes', 'variables', with a place)."""
    got, want = list(got), list(want)
    out = []
    missing = [n for n in want if n not in got]
    extra = [n for n in got if n not in want]
    if missing:
        out.append(f"{what} missing: {missing}")
    if extra:
        out.append(f"unexpected {what}: {extra}")
    if [n for n in got if n in want] != [n for n in want if n in got]:
        out.append(f"{what} order {[n for n in got if n in want]} (want {[n for n in want if n in got]})")
    return out


def _diff_attrs(where: str, got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    out = _diff_names(f"{where}: attributes", got, want)
    for name in (n for n in want if n in got):
        a, b = got[name], want[name]
        if _type_of(a) != _type_of(b):
            out.append(f"{where}:{name}: type {_type_of(a)} {_show(a)} (want {_type_of(b)} {_show(b)})")
        elif not _same_value(a, b):
            out.append(f"{where}:{name}: value {_show(a)} (want {_show(b)})")
    return out


def _diff_data(name: str, got: Any, want: Any, rtol: float = 0.0, atol: float = 0.0) -> list[str]:
    a, b = np.asarray(got), np.asarray(want)
    if a.shape != b.shape:
        return [f"{name}: data shape {a.shape} (want {b.shape})"]
    if a.dtype != b.dtype:
        return [f"{name}: data type {a.dtype} (want {b.dtype})"]
    if a.dtype.kind == "O":  # NC_STRING / vlen
        same = np.array([x == y for x, y in zip(a.ravel(), b.ravel())], dtype=bool).reshape(a.shape)
    elif a.tobytes() == b.tobytes():
        return []
    elif a.dtype.kind in "fc":
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        same &= np.signbit(a) == np.signbit(b)
        if rtol or atol:
            same |= np.isclose(a, b, rtol=rtol, atol=atol)
        elif same.all():  # equal as numbers, different bits (NaN payloads)
            return [f"{name}: data equal as numbers but not bitwise (NaN payloads?)"]
    else:
        same = a == b
    if same.all():
        return []
    bad = np.argwhere(~same) if a.ndim else np.zeros((1, 0), dtype=int)
    first = tuple(int(i) for i in bad[0])
    return [f"{name}: data differ at {len(bad)} of {a.size} elements; first at {first}: "
            f"{_show(a[first] if a.ndim else a[()])} (want {_show(b[first] if b.ndim else b[()])})"]


def diff_structure(got: str | Path, want: str | Path, ignore_global: Iterable[str] = IGNORED_GLOBAL,
                   data: bool = True, rtol: float = 0.0, atol: float = 0.0) -> list[str]:
    """Differences between two files read with netCDF4-python; [] when equal (floating-point values within
    ``atol + rtol * |want|`` of each other, where given; else bit for bit)."""
    ignore = tuple(ignore_global)
    out: list[str] = []
    with netCDF4.Dataset(got) as g, netCDF4.Dataset(want) as w:
        _raw(g)
        _raw(w)
        if g.data_model != w.data_model:
            out.append(f"format {g.data_model} (want {w.data_model})")
        if list(g.groups) != list(w.groups):
            out.append(f"groups {list(g.groups)} (want {list(w.groups)})")
        gd = [(n, len(d), d.isunlimited()) for n, d in g.dimensions.items()]
        wd = [(n, len(d), d.isunlimited()) for n, d in w.dimensions.items()]
        if gd != wd:
            def fmt(dims: list[tuple[str, int, bool]]) -> str:
                return ", ".join(f"{n}={'UNLIMITED:' if u else ''}{size}" for n, size, u in dims)
            out.append(f"dimensions [{fmt(gd)}] (want [{fmt(wd)}])")
        out += _diff_attrs("global", _attrs(g, ignore), _attrs(w, ignore))
        gv, wv = list(g.variables), list(w.variables)
        out += _diff_names("variables", gv, wv)
        for name in (n for n in wv if n in gv):
            a, b = g.variables[name], w.variables[name]
            ta, tb = str(a.dtype), str(b.dtype)
            if ta != tb:
                out.append(f"{name}: type {ta} (want {tb})")
            if a.dimensions != b.dimensions:
                out.append(f"{name}: dimensions {a.dimensions} (want {b.dimensions})")
            out += _diff_attrs(name, _attrs(a), _attrs(b))
            if data and ta == tb:
                out += _diff_data(name, a[...], b[...], rtol, atol)
    return out


def _ncdump_lines(path: str | Path, header_only: bool, ignore: tuple[str, ...]) -> list[str]:
    args = ["ncdump", "-h", str(path)] if header_only else ["ncdump", str(path)]
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    lines = text.splitlines()[1:]  # "netcdf NAME {" names the file
    kept, skipping = [], False
    starts = tuple(f"\t\t:{name} = " for name in ignore)
    for line in lines:
        if not skipping and line.startswith(starts):
            skipping = True
        if skipping:
            if line.endswith(" ;"):
                skipping = False
            continue
        kept.append(line)
    return kept


def diff_ncdump(got: str | Path, want: str | Path, ignore_global: Iterable[str] = IGNORED_GLOBAL,
                header_only: bool = False) -> list[str]:
    """The first difference between the two files' ``ncdump`` text, the ignored global attributes aside."""
    ignore = tuple(ignore_global)
    a = _ncdump_lines(got, header_only, ignore)
    b = _ncdump_lines(want, header_only, ignore)
    if a == b:
        return []
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return [f"ncdump{' -h' if header_only else ''} line {k + 2}: {x.strip()[:160]!r} "
                    f"(want {y.strip()[:160]!r})"]
    k = min(len(a), len(b))
    return [f"ncdump{' -h' if header_only else ''}: {len(a)} lines (want {len(b)}); "
            f"first extra line {(a if len(a) > len(b) else b)[k].strip()[:160]!r}"]


def diff(got: str | Path, want: str | Path, ignore_global: Iterable[str] = IGNORED_GLOBAL) -> list[str]:
    """Every difference netCDF4-python sees, then the ncdump text's first difference.

    The header text is always compared (it names attribute types netCDF4-python reads alike); the
    whole text (with data) only when nothing else differs, as a last check.
    """
    out = diff_structure(got, want, ignore_global)
    out += diff_ncdump(got, want, ignore_global, header_only=True)
    if not out:
        out += diff_ncdump(got, want, ignore_global)
    return out


def report(title: str, differences: list[str]) -> str:
    return f"{title}: {len(differences)} difference(s)\n  " + "\n  ".join(differences)
