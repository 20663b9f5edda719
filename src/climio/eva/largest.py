"""The largest values of every cell's series, read in the (time, cells) order of the file.

A cell's threshold and excesses need only its ``k`` largest valid values (the
~1 % tail). Keeping them costs one compare per value if each cell has a bar
just below its ``k``-th largest:

1. **Bar from a sample.** Every ``SAMPLE_STRIDE``-th time step is scanned the
   same way (step 2), keeping each cell's ``ks`` largest, where ``ks`` is the
   expected count of sample values among the cell's ``k`` largest plus
   ``MARGIN_SD`` standard deviations. The ``ks``-th largest sample value is
   then, with high probability, at or below the ``k``-th largest of the series.
   The sample's own bar comes from a sample of it, down to ``MIN_SAMPLE`` steps.
2. **One pass over all time steps.** A vectorized loop writes, per cell, a flag
   byte: value above the bar, or missing. Set flags are visited eight cells at a
   time with count-trailing-zeros, so a value below the bar costs one compare.
   A value above it is appended to the cell's buffer; a full buffer is cut to
   its ``k`` largest (quickselect) and the bar raised to the smallest of them.
3. **Exact whatever the sample.** A cell left with fewer than ``k`` values
   (its bar was too high) is scanned again alone. The sample count among the
   ``k`` largest is hypergeometric: 5 standard deviations leave about one cell in
   four million short on a CMIP-size series, 4 left one in 70,000, and a rescan
   re-reads the slab.

The result is the exact multiset of each cell's largest valid values, so the
threshold does not depend on the sample, the chunking or the rank count. On
request (``times=True``: runs declustering needs them) each kept value's time
step is kept beside it, moved with it by every cut. A
:class:`Scanner` takes the time steps a block at a time, so a reader can stream
them from a file (``climio eva``'s slab scheme) instead of holding the series.
It takes them in either byte order: a classic file's big-endian values are
swapped a time step at a time into a cache-resident row just before step 2
looks at them, instead of in a pass of their own over the whole block.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from climio.eva.rows import is_missing, kernel_rows, missing_slots, missing_value, native

SAMPLE_STRIDE = 8
MARGIN_SD = 5.0
BUFFER_FACTOR = 4  # a cell's buffer holds this many times k values before it is cut back to k
MIN_SAMPLE = 64  # a sample of fewer time steps is scanned from -inf, without a sample of its own
NO_TIMES = np.empty((1, 0), np.int64)  # the time steps' buffer when none are kept


@intrinsic
def _trailing_zeros(typingctx, word):  # type: ignore[no-untyped-def]
    """Count of trailing zero bits of a uint64 (LLVM cttz: one instruction)."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))
    return types.int64(types.uint64), codegen


@numba.njit(cache=True)
def _select_top(a: np.ndarray, n: int, k: int) -> float:
    """Move the k largest of a[:n] to a[:k] (in any order) and return the smallest of them."""
    return _select_top_with(a, a[:0], n, k)


@numba.njit(cache=True)
def _select_top_with(a: np.ndarray, when: np.ndarray, n: int, k: int) -> float:
    """:func:`_select_top`, moving ``when[i]`` with ``a[i]`` (``when`` empty: nothing to move)."""
    paired = when.size > 0
    lo, hi = 0, n - 1
    while lo < hi:
        pivot = a[(lo + hi) >> 1]
        i, j = lo, hi
        while i <= j:
            while a[i] > pivot:
                i += 1
            while a[j] < pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                if paired:
                    when[i], when[j] = when[j], when[i]
                i += 1
                j -= 1
        if k - 1 <= j:
            hi = j
        elif k - 1 >= i:
            lo = i
        else:
            break
    smallest = a[0]
    for q in range(1, k):
        smallest = min(smallest, a[q])
    return smallest


@numba.njit(cache=True, error_model="numpy")
def _scan(rows: np.ndarray, stride: int, missing: np.ndarray, bar: np.ndarray, buf: np.ndarray,
          kept: np.ndarray, k: int, n_missing: np.ndarray, low: np.ndarray, when: np.ndarray, t0: int) -> None:
    """Steps 1 and 2 over rows[::stride]: append values above ``bar`` to ``buf`` (and, unless ``when`` is
    empty, their time steps, counted from ``t0``, to ``when``), count missing values, and lower ``low`` to
    each cell's smallest valid value (a constant series has it equal to its largest).
    ``rows`` holds values of ``buf``'s type, or their byte-swapped bits as unsigned integers."""
    length, n = rows.shape
    m0, m1, m2, m3 = missing[0], missing[1], missing[2], missing[3]
    words = (n + 7) // 8
    flags = np.zeros(words * 8, np.uint8)
    flag_words = flags.view(np.uint64)
    width = buf.shape[1]
    timed = when.size > 0
    scratch = np.empty(n, buf.dtype)
    for t in range(0, length, stride):
        row = native(rows[t], scratch)
        for c in range(n):  # vectorized
            v = row[c]
            lowest = low[c]
            missing_here = missing_value(v, m0, m1, m2, m3)
            flags[c] = (v > bar[c]) | missing_here
            low[c] = lowest if missing_here else min(lowest, v)
        for w in range(words):
            word = flag_words[w]
            while word:
                c = w * 8 + (_trailing_zeros(word) >> 3)
                word &= word - np.uint64(1)
                v = row[c]
                if missing_value(v, m0, m1, m2, m3):
                    n_missing[c] += 1
                    continue
                j = kept[c]
                buf[c, j] = v
                if timed:
                    when[c, j] = t0 + t
                j += 1
                if j == width:
                    bar[c] = _select_top_with(buf[c], when[c] if timed else when[0, :0], j, k)
                    j = k
                kept[c] = j


def load_kernels() -> None:
    """Have numba set up its compiler now: its first compiled call in a process costs ~0.13 s, whatever
    the function, like an import. ``climio eva`` does it before its clock starts."""
    _select_top(np.zeros(1), 1, 1)


def _sample_bar(rows: np.ndarray, dtype: np.dtype, stride: int, length: int, k: int,
                missing: np.ndarray) -> np.ndarray:
    """Step 1: per cell, a value at or below its k-th largest of ``length`` values with high probability
    (else -inf), from the sample ``rows[::stride]``. The sample's own bar comes from a sample of it, and
    so on down: a scan that starts from -inf keeps every value it sees, at ~15 ns each.
    ``rows`` is as :func:`_scan` takes it; ``dtype`` is the values' own type."""
    cells = rows.shape[1]
    sampled = -(-rows.shape[0] // stride)
    p = min(1.0, k / length)
    ks = math.ceil(sampled * p + MARGIN_SD * math.sqrt(sampled * p * (1.0 - p))) + 1
    lowest = np.full(cells, -np.inf, dtype)
    if ks >= sampled:
        return lowest
    deeper = sampled // SAMPLE_STRIDE >= MIN_SAMPLE
    bar = _sample_bar(rows, dtype, stride * SAMPLE_STRIDE, sampled, ks, missing) if deeper else lowest.copy()
    buf = np.empty((cells, 2 * ks), dtype)
    kept = np.zeros(cells, np.int64)
    _scan(rows, stride, missing, bar, buf, kept, ks, np.zeros(cells, np.int64), np.zeros(cells, dtype), NO_TIMES, 0)
    _kth_largest(buf, kept, ks, lowest)
    return np.nextafter(lowest, dtype.type(-np.inf))  # admit values equal to it


@numba.njit(cache=True)
def _kth_largest(buf: np.ndarray, kept: np.ndarray, k: int, out: np.ndarray) -> None:
    """out[c] = the k-th largest of buf[c, :kept[c]] for the cells that kept at least k values."""
    for c in range(buf.shape[0]):
        if kept[c] >= k:
            out[c] = _select_top(buf[c], kept[c], k)


class Scanner:
    """Each cell's largest valid values, fed the time steps in order, any number at a time.

    ``sample[::stride]`` must be every ``SAMPLE_STRIDE``-th of the ``length`` time steps
    (the whole series with ``stride=SAMPLE_STRIDE``, or those steps read alone with
    ``stride=1``); it sets the bars. A reader can then stream the series through
    ``update`` in cache-sized blocks, so the series never has to be in memory.
    """

    def __init__(self, sample: np.ndarray, stride: int, length: int, k: int, missing: Sequence[float] = (),
                 times: bool = False) -> None:
        cells, dtype = sample.shape[1], sample.dtype.newbyteorder("=")
        self.length, self.k, self.missing = length, k, tuple(missing)
        self.slots = missing_slots(missing, dtype)
        self.bar = _sample_bar(kernel_rows(sample), dtype, stride, length, k, self.slots)
        self.values = np.empty((cells, BUFFER_FACTOR * k), dtype)
        # each kept value's time step (0: the first of the series), with times=True
        self.times = np.empty((cells, BUFFER_FACTOR * k), np.int64) if times else None
        self.seen = 0  # time steps seen so far
        self.kept = np.zeros(cells, np.int64)
        self.n_missing = np.zeros(cells, np.int64)
        self.low = np.full(cells, np.inf, dtype)  # smallest valid value (inf: none yet)

    def update(self, rows: np.ndarray) -> None:
        """The next time steps, (steps, cells), in either byte order."""
        _scan(kernel_rows(rows), 1, self.slots, self.bar, self.values, self.kept, self.k, self.n_missing, self.low,
              NO_TIMES if self.times is None else self.times, self.seen)
        self.seen += rows.shape[0]

    def short(self) -> np.ndarray:
        """Cells left with fewer than k values (or all their valid ones) after every step: their bar was too high."""
        return np.flatnonzero(self.kept < np.minimum(self.k, self.length - self.n_missing))

    def rescan(self, cells: np.ndarray, columns: np.ndarray) -> None:
        """Step 3 for ``cells``, from their whole series ``columns`` (time, len(cells))."""
        for i, c in enumerate(cells):
            column = columns[:, i]
            valid = np.flatnonzero(~is_missing(column, self.missing))
            order = valid[np.argsort(column[valid], kind="stable")[::-1][:self.values.shape[1]]]
            self.values[c, :order.size] = column[order]
            if self.times is not None:
                self.times[c, :order.size] = order
            self.kept[c] = order.size

    @property
    def n_valid(self) -> np.ndarray:
        return self.length - self.n_missing


def scan(series: np.ndarray, k: int, missing: Sequence[float] = (), times: bool = False) -> Scanner:
    """A :class:`Scanner` that has seen the whole in-memory ``series`` (time, cells), read in place.

    Row ``c`` of its ``values`` then holds, in its first ``kept[c]`` entries and in no
    order, the ``kept[c]`` largest valid values of column ``c``, with
    ``kept[c] >= min(k, n_valid[c])``; with ``times``, row ``c`` of ``times`` their time steps.
    NaN and ``missing`` are not valid.
    """
    scanner = Scanner(series, SAMPLE_STRIDE, series.shape[0], k, missing, times)
    scanner.update(series)
    short = scanner.short()
    scanner.rescan(short, series[:, short])
    return scanner
