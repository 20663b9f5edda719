"""Time steps as the eva kernels read them: in either byte order, with missing values left out.

Classic netCDF files store big-endian values, and MPI-IO reads them as they are; the scanners
(:mod:`climio.eva.largest`, :mod:`climio.eva.block_maxima`) take a time step in either order and swap
it into a cache-resident row just before looking at it (:func:`native`), instead of in a pass of its own
over a whole block. A value is missing when it is NaN or equals one of up to ``MISSING_SLOTS`` missing
values (``_FillValue``, ``missing_value``), tested without branches so that the loops vectorize.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic, overload

MISSING_SLOTS = 4  # NaN and up to this many missing values (_FillValue, missing_value) are left out


@intrinsic
def _byte_swap(typingctx, word):  # type: ignore[no-untyped-def]
    """The bytes of an unsigned integer in reverse order (LLVM bswap: vectorizes to a shuffle)."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bswap(args[0])
    return word(word), codegen


def native(raw: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """``raw`` (a time step) in the machine's byte order: itself, or swapped into ``scratch``
    when it is the unsigned-integer view of values stored in the other order (numba only)."""
    raise NotImplementedError("compiled only")


@overload(native, inline="always")
def _native_compiled(raw, scratch):  # type: ignore[no-untyped-def]
    if isinstance(raw.dtype, types.Float):
        return lambda raw, scratch: raw
    bits = {4: np.uint32, 8: np.uint64}[raw.dtype.bitwidth // 8]

    def swapped(raw, scratch):  # type: ignore[no-untyped-def]
        words = scratch.view(bits)
        for c in range(raw.size):  # vectorized
            words[c] = _byte_swap(raw[c])
        return scratch
    return swapped


@numba.njit(inline="always")
def missing_value(v: float, m0: float, m1: float, m2: float, m3: float) -> bool:
    """NaN or one of the missing values (branch-free, so the flag loop stays vectorized)."""
    return (v != v) | (v == m0) | (v == m1) | (v == m2) | (v == m3)


def missing_slots(missing: Sequence[float], dtype: np.dtype) -> np.ndarray:
    if len(missing) > MISSING_SLOTS:
        raise ValueError(f"at most {MISSING_SLOTS} missing values are supported, got {list(missing)}")
    return np.array([*missing, *[np.nan] * (MISSING_SLOTS - len(missing))], dtype=dtype)


def is_missing(values: np.ndarray, missing: Sequence[float]) -> np.ndarray:
    """NaN or equal to one of ``missing``, element-wise (numpy, for the few columns looked at alone)."""
    return np.isnan(values) | np.isin(values, np.asarray(missing, dtype=values.dtype))


def kernel_rows(rows: np.ndarray) -> np.ndarray:
    """Values as the kernels take them: as they are in the machine's byte order, else their bits."""
    return rows if rows.dtype.isnative else rows.view(f"u{rows.dtype.itemsize}")
