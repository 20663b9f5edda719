"""The vectorizable log behind the GPD fits: within 1 ulp of libm, exact special values."""

from __future__ import annotations

import math

import numba
import numpy as np

from climio.eva import vecmath


@numba.njit(error_model="numpy")
def _logs(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = vecmath.log(x[i])


def test_within_one_ulp_of_libm_over_the_whole_range() -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(0.0, 4.0, 200_000), np.exp(rng.uniform(-700.0, 700.0, 200_000)),
                        1.0 + rng.uniform(-1e-6, 1e-6, 200_000), np.nextafter(1.0, [0.0, 2.0]),
                        [2.2250738585072014e-308, 1.7976931348623157e308, math.sqrt(2.0), 0.5, 2.0, 3.0]])
    out = np.empty_like(x)
    _logs(x, out)
    reference = np.array([math.log(v) for v in x])
    ulps = np.abs(out - reference) / np.spacing(np.abs(reference))
    assert ulps.max() <= 1.0
    assert (out[np.abs(out - reference) > 0].size / out.size) < 0.1


def test_special_values() -> None:
    x = np.array([1.0, 0.0, -0.0, -1.0, np.nan, np.inf, -np.inf])
    out = np.empty_like(x)
    _logs(x, out)
    assert out[0] == 0.0
    assert out[1] == -np.inf and out[2] == -np.inf
    assert np.isnan(out[3]) and np.isnan(out[4]) and np.isnan(out[6])
    assert out[5] == np.inf


@numba.njit(error_model="numpy")
def _exps(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = vecmath.exp(x[i])


def test_exp_within_two_ulp_of_libm_and_its_limits() -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-708.0, 709.7, 300_000), rng.uniform(-1.0, 1.0, 200_000),
                        rng.uniform(-1e-8, 1e-8, 1000), [0.0, -0.0, 1.0, -1.0, 709.78, -708.0, math.log(2.0)]])
    out = np.empty_like(x)
    _exps(x, out)
    reference = np.exp(x)
    ulps = np.abs(out - reference) / np.spacing(reference)
    assert ulps.max() <= 2.0
    assert out[-7] == 1.0 and out[-6] == 1.0
    special = np.array([-708.5, -1000.0, -np.inf, 709.79, 1000.0, np.inf, np.nan])
    got = np.empty_like(special)
    _exps(special, got)
    assert list(got[:3]) == [0.0, 0.0, 0.0] and list(got[3:6]) == [np.inf] * 3 and np.isnan(got[6])
