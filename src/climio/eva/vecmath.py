"""log and exp made of arithmetic and bit operations only, so numba loops over them vectorize.

libm's ``log`` and ``exp`` are opaque scalar calls: a loop that sums logs runs one
element at a time, and the GPD and GEV profile likelihoods spend most of their time
there. :func:`log` splits ``x = 2^k m`` with ``m`` in ``[sqrt(2)/2, sqrt(2))``
and evaluates ``log m = 2 atanh(s) = f - s (f - 2 z P(z))`` with ``f = m - 1``,
``s = f / (2 + f)``, ``z = s^2`` and ``P`` the degree-6 Chebyshev interpolant of
``(atanh(s) - s) / s^3`` on ``[0, z_max]``. ``k log 2`` is added in two parts
so that it is exact. Errors stay within 1 ulp of libm (tests check it);
inputs are assumed normal or zero (subnormals are not needed by the fits).

:func:`exp` splits ``x = k log 2 + r``, ``|r| <= log(2)/2``, evaluates ``e^r`` by its
Taylor polynomial to degree 13 (the next term is below 1e-17) and puts ``k`` in the
exponent bits. Results that would be subnormal are 0 (below ``e^-708``), over ``e^709.78`` inf.
"""

from __future__ import annotations

import math

import numba
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

LN2_HI = 0.6931467056274414  # log 2 to 21 bits: k * LN2_HI is exact for any exponent k
LN2_LO = 4.7493250390316726e-07  # log 2 - LN2_HI
SQRT2 = math.sqrt(2.0)
MANTISSA_BITS = (1 << 52) - 1
EXPONENT_OF_ONE = 1023 << 52
# (atanh(s) - s) / s^3 as a polynomial in z = s^2, lowest power first (numpy Chebyshev.interpolate, degree 6)
EXP_LOW = -708.0  # exp(x) below this is returned as 0 (it would be subnormal)
EXP_HIGH = 709.782712893384  # ... and above this, inf
EXP_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(14))
LOG2E = 1.0 / math.log(2.0)
P = (0.3333333333333336, 0.19999999999924267, 0.14285714321933202, 0.1111110436270024,
     0.09091520056352238, 0.07663640860177344, 0.0733297806663616)


@intrinsic
def _bits(typingctx, x):  # type: ignore[no-untyped-def]
    """The IEEE-754 bits of a float64 as an int64 (an LLVM bitcast: free, and vectorizable)."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _from_bits(typingctx, b):  # type: ignore[no-untyped-def]
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@numba.njit(inline="always", error_model="numpy", fastmath={"contract"})
def log(x: float) -> float:
    """Natural log of x: -inf at 0, NaN below, inf at inf; within 1 ulp elsewhere."""
    b = _bits(x)
    k = ((b >> 52) & 0x7FF) - 1023
    m = _from_bits((b & MANTISSA_BITS) | EXPONENT_OF_ONE)
    big = m > SQRT2
    m = 0.5 * m if big else m
    k = k + 1 if big else k
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    p = ((((((P[6] * z + P[5]) * z + P[4]) * z + P[3]) * z + P[2]) * z + P[1]) * z + P[0])
    fk = float(k)
    out = fk * LN2_HI + ((f - s * (f - 2.0 * z * p)) + fk * LN2_LO)
    if not x > 0.0:
        out = -math.inf if x == 0.0 else math.nan
    return math.inf if x == math.inf else out


@numba.njit(inline="always", error_model="numpy", fastmath={"contract"})
def exp(x: float) -> float:
    """e^x within 2 ulp of libm for x in [EXP_LOW, EXP_HIGH]; 0 below, inf above, NaN for NaN."""
    c = min(max(x, EXP_LOW), EXP_HIGH)
    fk = math.floor(c * LOG2E + 0.5)
    r = (c - fk * LN2_HI) - fk * LN2_LO
    p = EXP_TAYLOR[13]
    for j in range(12, -1, -1):
        p = p * r + EXP_TAYLOR[j]
    k = int(fk)
    big = k > 1023  # only at the very top: 2^k as 2 * 2^(k-1)
    scale = _from_bits((k - (1 if big else 0) + 1023) << 52)
    out = p * scale * (2.0 if big else 1.0)
    if x < EXP_LOW:
        out = 0.0
    if x > EXP_HIGH:
        out = math.inf
    return out if x == x else x
