"""``climio eva --plot map.png``: maps of a return level and of the GPD shape, drawn on rank 0."""

from __future__ import annotations

import os

import numpy as np

from climio.errors import IOFault

PER_SECOND_TO_PER_DAY = {"kg m-2 s-1": ("mm/day", 86400.0)}  # show fluxes as people read them


def draw(path: str, lat: np.ndarray, lon: np.ndarray, level: np.ndarray, period: float, shape: np.ndarray,
         var: str, units: str) -> None:
    """Two panels, the ``period``-year return level and the shape, written atomically to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown_units, factor = PER_SECOND_TO_PER_DAY.get(units, (units, 1.0))
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.2), constrained_layout=True)
    for ax, values, title, cmap, label in (
            (axes[0], level * factor, f"{period:g}-year return level of {var}", "viridis", shown_units),
            (axes[1], shape, "GPD shape", "RdBu_r", "1")):
        limit = np.nanmax(np.abs(values)) if cmap == "RdBu_r" and np.isfinite(values).any() else None
        mesh = ax.pcolormesh(lon, lat, values, shading="auto", cmap=cmap,
                             vmin=-limit if limit else None, vmax=limit)
        figure.colorbar(mesh, ax=ax, label=label)
        ax.set_title(title)
        ax.set_xlabel("longitude")
        ax.set_ylabel("latitude")
    directory = os.path.dirname(os.path.abspath(path))
    temp = os.path.join(directory, f".{os.path.basename(path)}.climio-tmp.png")
    try:
        figure.savefig(temp, dpi=110)
        os.replace(temp, path)
    except OSError as err:
        if os.path.exists(temp):
            os.unlink(temp)
        raise IOFault(f"--plot: cannot write '{path}': {(err.strerror or str(err)).lower()}; the analysis "
                      f"was not published either") from err
    finally:
        plt.close(figure)
