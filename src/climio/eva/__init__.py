"""Extreme value analysis: peaks over threshold with GPD maximum likelihood at every grid cell.

``climio eva`` (:mod:`climio.eva.job`) for files on any number of ranks;
:func:`fit_pot` for numpy arrays and xarray DataArrays or Datasets, eager or dask-backed (lazy).
"""

from typing import Any

__all__ = ["fit_pot"]


def __getattr__(name: str) -> Any:
    if name == "fit_pot":  # imported on first use: the command line does not need xarray
        from climio.eva.api import fit_pot

        return fit_pot
    raise AttributeError(name)
