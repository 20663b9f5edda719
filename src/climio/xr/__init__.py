"""climio from xarray: the ``climio`` engine of ``xr.open_dataset``, :func:`open_mfdataset` (files joined along
time by ``climio subset``'s rules) and the ``.climio`` accessor of Datasets and DataArrays (registered when this
package is imported)."""

from climio.xr import accessor  # noqa: F401 (registers .climio)
from climio.xr.backend import ClimioBackendEntrypoint, open_mfdataset

__all__ = ["ClimioBackendEntrypoint", "open_mfdataset"]
