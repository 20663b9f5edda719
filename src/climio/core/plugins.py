"""Where HDF5 finds filter plugins (bzip2, lz4, zstd, ...): the system's directories unless the user chose.

HDF5 reads ``HDF5_PLUGIN_PATH`` once, when the library starts, so :func:`use_system_plugins` runs when
climio is imported, before netCDF is loaded; this module imports nothing heavy for that reason.
"""

from __future__ import annotations

import os
import sysconfig


def plugin_dirs() -> list[str]:
    """Debian's HDF5 filter plugin directories (package hdf5-filter-plugin: bzip2, lz4) that exist here."""
    arch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    candidates = [f"/usr/lib/{arch}/hdf5/{flavour}/plugins" for flavour in ("openmpi", "mpich", "serial")]
    return [path for path in candidates if os.path.isdir(path)]


def use_system_plugins() -> None:
    """Point HDF5 at the system's filter plugins unless the user chose a ``HDF5_PLUGIN_PATH``: HDF5 reads
    it once, when the library starts, so this runs before netCDF is loaded."""
    if "HDF5_PLUGIN_PATH" not in os.environ and plugin_dirs():
        os.environ["HDF5_PLUGIN_PATH"] = os.pathsep.join(plugin_dirs())
