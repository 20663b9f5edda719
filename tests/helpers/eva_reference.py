"""Reference minimisation for the EVA tests, written with numpy only (no code of ``climio``).

:func:`newton_minimize` polishes many starting points of one vectorised objective at once: Newton's method on
central-difference derivatives (gradient and Hessian from one stencil of evaluations per iteration, in a single
call of the objective for every point), each step searched along by halving (all candidates in one call again),
inside bounds. It replaces chains of scipy searches (L-BFGS-B on forward differences, Nelder-Mead, Powell) on
Python objectives of one point at a time: the same local minima, converged at least as far, for a fraction of
the overhead of evaluating one point at a time.

The differences are taken along the eigenvectors of the last Hessian, each step 1e-4 of that direction's
1/sqrt(|eigenvalue|) (so the objective changes by about 5e-9 along each, whatever the conditioning: a long
narrow valley is measured along its floor with long steps and across it with short ones), and no longer than
the caller's ``steps`` in any coordinate (which keep a stencil inside a support that ends close by).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

RELATIVE_STEP = 1e-4  # each difference's step: this of 1/sqrt(|eigenvalue|) of the Hessian along it
HALVINGS = 2.0 ** -np.arange(0, 48)  # the fractions of a step tried along it (down to 3.6e-15)


@functools.cache
def _stencil(d: int) -> np.ndarray:
    """Unit offsets: +-e_k, then +(e_i + e_j) and -(e_i + e_j) for j < i."""
    rows = []
    for k in range(d):
        e = np.zeros(d)
        e[k] = 1.0
        rows += [e, -e]
    for i in range(d):
        for j in range(i):
            e = np.zeros(d)
            e[i] = e[j] = 1.0
            rows += [e, -e]
    return np.array(rows).reshape(-1, d)


def derivatives(f: Callable[[np.ndarray], np.ndarray], p: np.ndarray, fp: np.ndarray, frame: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gradient (m, d), Hessian (m, d, d), every stencil value finite (m,)) of f at points p (m, d + held columns)
    with values fp, in their first d coordinates, by central differences along the columns of ``frame``
    (m, d, d): in s, p + frame s,
    f_k = (f(+k) - f(-k))/2, f_kk = f(+k) - 2 f + f(-k), f_ij = (f(+i+j) - f(+i) - f(+j) + 2 f - f(-i) - f(-j)
    + f(-i-j))/2; then mapped to p's coordinates (g = F^-T g_s, H = F^-T H_s F^-1)."""
    m, d = frame.shape[:2]
    offsets = _stencil(d)
    points = np.repeat(p[:, None, :], offsets.shape[0], axis=1)
    points[:, :, :d] += np.einsum("mij,sj->msi", frame, offsets)
    values = f(points.reshape(-1, p.shape[1])).reshape(m, -1)
    plus, minus = values[:, 0:2 * d:2], values[:, 1:2 * d:2]
    grad = (plus - minus) / 2
    hess = np.empty((m, d, d))
    hess[:, np.arange(d), np.arange(d)] = plus - 2 * fp[:, None] + minus
    col = 2 * d
    for i in range(d):
        for j in range(i):
            both = (values[:, col] - plus[:, i] - plus[:, j] + 2 * fp - minus[:, i] - minus[:, j]
                    + values[:, col + 1])
            hess[:, i, j] = hess[:, j, i] = both / 2
            col += 2
    ok = np.isfinite(values).all(1)
    inverse = frame.transpose(0, 2, 1) / (frame**2).sum(1)[:, :, None]  # (the frame's columns are orthogonal)
    grad = np.einsum("mji,mj->mi", inverse, grad)
    hess = np.einsum("mki,mkl,mlj->mij", inverse, hess, inverse)
    return grad, hess, ok


def _search(f: Callable[[np.ndarray], np.ndarray], q: np.ndarray, fq: np.ndarray, step: np.ndarray,
            lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower than fq, the best point and its value) among q + HALVINGS step, clipped to the bounds: the first
    eight fractions, then the others where none of those is lower."""
    m, d = step.shape
    better, best, fbest = np.zeros(m, bool), q.copy(), fq.copy()
    rows = np.arange(m)
    for fractions in (HALVINGS[:8], HALVINGS[8:]):
        cand = np.repeat(q[rows, None, :], fractions.size, axis=1)
        cand[:, :, :d] = np.clip(q[rows, None, :d] + fractions[None, :, None] * step[rows, None, :], lower, upper)
        values = np.asarray(f(cand.reshape(-1, q.shape[1])), dtype=float).reshape(rows.size, -1)
        values = np.where(np.isnan(values), np.inf, values)
        j = values.argmin(1)
        lowest = values[np.arange(rows.size), j]
        ok = lowest < fq[rows]
        better[rows[ok]], best[rows[ok]], fbest[rows[ok]] = True, cand[np.arange(rows.size), j][ok], lowest[ok]
        rows = rows[~ok]
        if rows.size == 0:
            break
    return better, best, fbest


def newton_minimize(f: Callable[[np.ndarray], np.ndarray], starts: np.ndarray,
                    steps: Callable[[np.ndarray], np.ndarray], lower: np.ndarray | list | None = None,
                    upper: np.ndarray | list | None = None, held: int = 0, iterations: int = 300,
                    tolerance: float = 1e-15) -> tuple[np.ndarray, np.ndarray]:
    """Local minima of ``f`` ((K, d) points -> (K,) values, inf outside its domain) from each of ``starts``
    (K, d), within ``lower`` <= p <= ``upper``: (points (K, d), values (K,)). The last ``held`` columns of the
    starts are constants of each start, passed to ``f`` and not varied (``steps``, ``lower`` and ``upper`` are
    of the others).

    Each iteration takes the central-difference gradient and Hessian (along the last Hessian's eigenvectors, at
    most ``steps(p)`` (K, d) in each coordinate, shortened while the stencil leaves the domain), the Newton step
    in the coordinates free of the bounds (a coordinate on a bound whose gradient points out of it is held) with
    the Hessian's eigenvalues taken in absolute value (so that a saddle or a maximum is left downhill), and then
    the best point along that step among the fractions ``HALVINGS`` of it (clipped to the bounds). Where none is
    lower, the same again along the gradient scaled by the Hessian's diagonal; a point stops when neither lowers
    its value, or when a step moves no coordinate by more than ``tolerance`` (1 + |p|)."""
    p = np.array(starts, dtype=float, ndmin=2)
    k, d = p.shape[0], p.shape[1] - held
    lower = np.full(d, -np.inf) if lower is None else np.asarray(lower, float)
    upper = np.full(d, np.inf) if upper is None else np.asarray(upper, float)
    p[:, :d] = np.clip(p[:, :d], lower, upper)
    fp = np.asarray(f(p), dtype=float)
    live = np.isfinite(fp)
    frame = np.zeros((k, d, d))
    frame[:, np.arange(d), np.arange(d)] = np.asarray(steps(p), dtype=float) * np.ones((k, d))
    diagonal = np.arange(d)
    for _ in range(iterations):
        idx = np.flatnonzero(live)
        if idx.size == 0:
            break
        q, fq = p[idx], fp[idx]
        cap = np.asarray(steps(q), dtype=float) * np.ones((idx.size, d))
        m = frame[idx]
        m = m / np.maximum(1.0, (np.abs(m) / cap[:, :, None]).max(1))[:, None, :]  # no column beyond the caps
        grad, hess, ok = derivatives(f, q, fq, m)
        for _ in range(40):  # a stencil outside the domain: shorter steps there
            if ok.all():
                break
            m[~ok] *= 0.25
            g2, h2, ok2 = derivatives(f, q[~ok], fq[~ok], m[~ok])
            grad[~ok], hess[~ok] = g2, h2
            ok[~ok] = ok2
        bad = ~ok | ~np.isfinite(hess).all((1, 2)) | ~np.isfinite(grad).all(1)
        hess[bad], grad[bad] = np.eye(d), 0.0
        hess = (hess + hess.transpose(0, 2, 1)) / 2
        # the next differences along this Hessian's eigenvectors
        w, v = np.linalg.eigh(hess)
        w = np.abs(w)
        frame[idx] = v * (RELATIVE_STEP / np.sqrt(np.maximum(w, 1e-300)))[:, None, :]
        on = ((q[:, :d] <= lower) & (grad > 0)) | ((q[:, :d] >= upper) & (grad < 0))
        grad = np.where(on, 0.0, grad)
        free = np.where(on[:, :, None] | on[:, None, :], 0.0, hess)
        free[:, diagonal, diagonal] = np.where(on, 1.0, free[:, diagonal, diagonal])
        w, v = np.linalg.eigh(free)
        w = np.abs(w)
        w = np.maximum(w, 1e-13 * w.max(1, keepdims=True) + 1e-300)
        newton = -np.einsum("mij,mj->mi", v, np.einsum("mji,mj->mi", v, grad) / w)
        descent = -grad / np.maximum(np.abs(free[:, diagonal, diagonal]), 1e-300)
        better, chosen, fbest = _search(f, q, fq, newton, lower, upper)
        again = ~better & ~bad  # not lowered by Newton's step: the scaled gradient
        if again.any():
            better[again], chosen[again], fbest[again] = _search(f, q[again], fq[again], descent[again], lower,
                                                                 upper)
        better &= ~bad
        moved = np.abs(chosen - q).max(1)
        p[idx[better]], fp[idx[better]] = chosen[better], fbest[better]
        live[idx[~better | (moved <= tolerance * (1.0 + np.abs(q[:, :d]).max(1)))]] = False
    return p, fp
