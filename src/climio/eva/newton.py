"""Small solvers shared by the trend fits of :mod:`climio.eva.gev_trend` and :mod:`climio.eva.gpd_trend`:
Newton's step (a few parameters per cell, an exact Hessian that need not be positive definite away from the
maximum), and the lower envelope problem of their likelihoods' corner at shape -1."""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, error_model="numpy")
def step(h: np.ndarray, g: np.ndarray, k: int, out: np.ndarray, lower: np.ndarray) -> float:
    """Newton's step -H^-1 g in the first k parameters into ``out`` (Cholesky; H's diagonal shifted until
    positive definite where it is not); returns the decrement -g'out."""
    shift = 0.0
    size = 0.0
    for i in range(k):
        size = max(size, abs(h[i, i]))
    for _ in range(80):
        ok = True
        for i in range(k):
            for j in range(i + 1):
                v = h[i, j] + (shift if i == j else 0.0)
                for m in range(j):
                    v -= lower[i, m] * lower[j, m]
                if i == j:
                    if not v > 0.0:
                        ok = False
                        break
                    lower[i, i] = math.sqrt(v)
                else:
                    lower[i, j] = v / lower[j, j]
            if not ok:
                break
        if ok:
            break
        shift = max(2.0 * shift, 1e-6 * size + 1e-300)
    for i in range(k):  # L u = -g, then L' step = u
        v = -g[i]
        for m in range(i):
            v -= lower[i, m] * out[m]
        out[i] = v / lower[i, i]
    for i in range(k - 1, -1, -1):
        v = out[i]
        for m in range(i + 1, k):
            v -= lower[m, i] * out[m]
        out[i] = v / lower[i, i]
    decrement = 0.0
    for i in range(k):
        decrement -= g[i] * out[i]
    return decrement


@numba.njit(cache=True, error_model="numpy")
def envelope_min(level: np.ndarray, c: np.ndarray, n: int) -> tuple[float, float]:
    """min over b of max_i (level_i - b c_i) and its b, for c[:n] of mean 0 (not all 0): the lowest line in
    (level, c) lying above every point, at the shape -1 corner of the trend fits' likelihoods. By bisection on
    the sign of the convex envelope's right derivative, -c of its active line (the smallest c among ties),
    inside the bracket every crossing of two lines lies in."""
    low_level, high_level, smallest = math.inf, -math.inf, math.inf
    for i in range(n):
        low_level, high_level = min(low_level, level[i]), max(high_level, level[i])
        if c[i] != 0.0:
            smallest = min(smallest, abs(c[i]))
    reach = (high_level - low_level) / smallest + 1.0
    lo, hi = -reach, reach
    b = 0.0
    for _ in range(400):
        b = 0.5 * (lo + hi)
        top, slope_c = -math.inf, 0.0
        for i in range(n):
            v = level[i] - b * c[i]
            if v > top or (v == top and c[i] < slope_c):
                top, slope_c = v, c[i]
        if slope_c > 0.0:  # the envelope falls to the right
            lo = b
        elif slope_c < 0.0:
            hi = b
        else:
            break
        if not lo < 0.5 * (lo + hi) < hi:
            break
    top = -math.inf
    for i in range(n):
        top = max(top, level[i] - b * c[i])
    return top, b
