"""Newton's step for the small fits of :mod:`climio.eva.gev_trend` and :mod:`climio.eva.gpd_trend`: a few
parameters per cell, an exact Hessian that need not be positive definite away from the maximum."""

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
