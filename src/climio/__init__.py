"""climio: parallel netCDF for climate and Earth-system data.

One package and one command for writing domain-decomposed model output,
cutting subsets and grid-point statistics, as one process or under mpiexec.
The file layer is :mod:`climio.core.ncio`; decompositions are in
:mod:`climio.core.decomp`.
"""

__version__ = "0.1.0"

from climio.core import collectives  # noqa: E402 (before netCDF4 or mpi4py load MPI)
from climio.core.plugins import use_system_plugins  # noqa: E402 (before netCDF loads HDF5)

collectives.load()
use_system_plugins()


def __getattr__(name: str) -> object:
    """``climio.open_mfdataset`` imports xarray on first use only, so that ``import climio`` (every command)
    stays light."""
    if name == "open_mfdataset":
        from climio.xr import open_mfdataset

        return open_mfdataset
    raise AttributeError(f"module 'climio' has no attribute '{name}'")
