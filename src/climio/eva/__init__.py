"""Extreme value analysis at every grid cell: peaks over threshold (GPD) and block maxima (GEV), each at the
maximum of its likelihood.

``climio eva`` (:mod:`climio.eva.job`) for files on any number of ranks; :func:`fit_pot` (numpy arrays and
xarray DataArrays or Datasets) and :func:`fit_gev` (xarray with a time coordinate), eager or dask-backed (lazy).
"""

from typing import Any

from climio.core.kernels import use_versioned_cache

__all__ = ["fit_gev", "fit_pot"]

use_versioned_cache()  # before any of eva's kernels is compiled or loaded


def __getattr__(name: str) -> Any:
    if name in __all__:  # imported on first use: the command line does not need xarray
        from climio.eva import api

        return getattr(api, name)
    raise AttributeError(name)
