r"""Confidence intervals for return levels and parameters, shared by every distribution.

Both distributions' return levels have one form, a location plus the scale times a factor of the shape:

.. math::

    z = \ell + \sigma\, g(\xi),\qquad g(\xi) = \frac{e^{\xi L} - 1}{\xi}\quad (g(0) = L),

with, for peaks over threshold (GPD), :math:`\ell = u` the threshold (taken as known) and
:math:`L = \log(T\,n_y\,\zeta)` (:math:`\zeta` the rate of exceedance, set by the tail quantile, taken as
known), and, for block maxima (GEV), :math:`\ell = \mu` and :math:`L = -\log(-\log(1 - 1/T))`.

Two methods (extRemes' ``ci(..., method = "normal" | "proflik")``, Coles 2001, sections 2.6.4, 3.3.3 and
4.3.3):

* ``normal``: the delta method. :math:`\operatorname{Var} z = \nabla z^\top V \nabla z`, with :math:`V`
  the inverse of the observed information (the exact Hessian of :math:`-\log L` at the estimate), and the
  interval :math:`\hat z \pm z_{(1+\alpha)/2}\sqrt{\operatorname{Var} z}`. Parameter standard errors are
  :math:`\sqrt{V_{jj}}`.
* ``profile``: the set of levels :math:`z` whose profile likelihood (the best likelihood with the return
  level held at :math:`z`) is within half the :math:`\chi^2_1(\alpha)` quantile of the maximum. Each end is
  the root of a smooth function of :math:`z`, solved per cell to a relative 1e-12 (each distribution's
  module does the inner maximisation).

This module holds what the two share: the factor :math:`g` and its derivatives, the quantiles, and the
delta method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numba
import numpy as np

from climio.errors import ClimioError

METHODS = ("normal", "profile")
G_SERIES_X = 0.5  # |xi L| below this: g and its derivatives from their Taylor series
G_SERIES_TERMS = 30  # 0.5**30 / 31! is far below double precision
INVERSE_FACTORIALS = np.array([1.0 / math.factorial(k + 1) for k in range(G_SERIES_TERMS + 1)])  # 1/(k+1)!


@dataclass(frozen=True)
class Request:
    """What was asked: ``--ci LEVEL --ci-method METHOD``."""

    level: float = 0.95
    method: str = "profile"

    def check(self) -> None:
        """Reject a bad level or method."""
        if not 0.0 < self.level < 1.0:
            raise ClimioError(f"--ci must be a confidence level inside (0, 1), e.g. 0.95, got {self.level}",
                              collective=True)
        if self.method not in METHODS:
            raise ClimioError(f"--ci-method '{self.method}': choose one of {', '.join(METHODS)}", collective=True)

    @property
    def normal_quantile(self) -> float:
        """z with P(|N(0,1)| <= z) = level (1.95996... for 0.95)."""
        return NormalDist().inv_cdf(0.5 + self.level / 2.0)

    @property
    def half_chi2(self) -> float:
        """Half the chi-square(1) quantile at level (1.92073... for 0.95): the profile's allowed drop in log L."""
        return self.normal_quantile ** 2 / 2.0


@dataclass
class Intervals:
    """Per-cell interval ends of each return level, (periods, cells), and each parameter's standard error."""

    lower: np.ndarray
    upper: np.ndarray
    standard_errors: dict[str, np.ndarray]


@numba.njit(cache=True, error_model="numpy")
def level_factor(xi: float, big_l: float) -> tuple[float, float, float]:
    """g(xi) = (exp(xi L) - 1)/xi and its first two derivatives in xi, accurate through xi = 0."""
    x = xi * big_l
    if abs(x) < G_SERIES_X:  # g = L sum x^k/(k+1)!, g' = L^2 sum k x^(k-1)/(k+1)!, g'' = L^3 sum k(k-1) x^(k-2)/(k+1)!
        g = g1 = g2 = 0.0
        for k in range(G_SERIES_TERMS, -1, -1):
            inv = INVERSE_FACTORIALS[k]
            g = g * x + inv
            if k >= 1:
                g1 = g1 * x + k * inv
            if k >= 2:
                g2 = g2 * x + k * (k - 1) * inv
        return big_l * g, big_l * big_l * g1, big_l * big_l * big_l * g2
    ex = math.exp(x)
    return ((ex - 1.0) / xi, big_l * big_l * (ex * (x - 1.0) + 1.0) / (x * x),
            big_l ** 3 * (ex * (x * x - 2.0 * x + 2.0) - 2.0) / (x * x * x))


@numba.njit(cache=True)
def _level_factors(xi: np.ndarray, big_l: np.ndarray, g: np.ndarray, g1: np.ndarray) -> None:
    for c in range(xi.size):
        if math.isfinite(xi[c]) and math.isfinite(big_l[c]):
            g[c], g1[c], _ = level_factor(xi[c], big_l[c])


def level_factors(xi: np.ndarray, big_l: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """g and g' per cell (NaN where xi or L is not finite)."""
    xi, big_l = np.broadcast_arrays(np.asarray(xi, dtype=np.float64), np.asarray(big_l, dtype=np.float64))
    g, g1 = np.full(xi.shape, np.nan), np.full(xi.shape, np.nan)
    _level_factors(np.ascontiguousarray(xi).ravel(), np.ascontiguousarray(big_l).ravel(), g.ravel(), g1.ravel())
    return g, g1


def delta_bounds(level: np.ndarray, gradient: np.ndarray, covariance: np.ndarray, quantile: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """level -/+ quantile * sqrt(grad' V grad) per cell; ``gradient`` (cells, p), ``covariance`` (cells, p, p)."""
    variance = np.einsum("ci,cij,cj->c", gradient, covariance, gradient)
    with np.errstate(invalid="ignore"):
        half = quantile * np.sqrt(np.where(variance >= 0.0, variance, np.nan))
    return level - half, level + half


def standard_errors(covariance: np.ndarray, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """sqrt of the covariance's diagonal, by parameter name (NaN where not positive)."""
    with np.errstate(invalid="ignore"):
        return {name: np.sqrt(np.where(covariance[:, j, j] > 0.0, covariance[:, j, j], np.nan))
                for j, name in enumerate(names)}


def invert(information: np.ndarray) -> np.ndarray:
    """Covariance = inverse of each cell's observed information (cells, p, p); NaN where it is not positive
    definite (no regular maximum: the estimate is on a boundary, or the sample is degenerate)."""
    out = np.full_like(information, np.nan)
    finite = np.all(np.isfinite(information), axis=(1, 2))
    if not finite.any():
        return out
    good = np.flatnonzero(finite)
    eig = np.linalg.eigvalsh(information[good])
    definite = good[eig[:, 0] > 0.0]
    out[definite] = np.linalg.inv(information[definite])
    return out
