"""``climio bench scale --papers``: the cost model against the figures of the papers climio grew from.

Wong et al. (2014, seed 003) ran CMAQ's output mock-up on NERSC's Edison with four I/O schemes and report, for
three domains and five process grids each, the relative performance (T1 - T2) / T1 of straight PnetCDF
(pnetCDF) against serial netCDF (rnetCDF: rank 0 gathers and writes) and of row aggregation before PnetCDF
(pnetCDFcr) against pnetCDF, at the stripe settings they find best. Their figures are bar charts; the values
here are those the text states (Sect. 5.1), each with its words. climio's counterparts, priced on a site file
(``edison`` by default): ``root`` in ``serial`` mode, ``direct`` and ``rows`` in ``cdf2``, their writers
writing through MPI-IO's collective calls a variable at a time, as PnetCDF's do. Three steps of the 146
species.

Seeds 002 (PISM on Ranger) and 004 (INM RAS) give their ratios in figures only, or without the file system's
settings the model needs; Kraken (seed 003's other machine) has no site file (no source we could read gives
its Lustre's targets and bandwidth): none of them is compared here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from climio.bench.model import DOMAINS, HALO
from climio.bench.runner import markdown_table, save_results
from climio.model import costmodel
from climio.model.counts import block_job

STEPS = 3  # the mock-up's time steps
BEST_STRIPES = {"CA": (5, 1 << 20), "EUS": (5, 2 << 20), "CONUS": (11, 2 << 20)}  # Sect. 5.1 and 6, on Edison
GRIDS = {"CA": ("4x4", "4x8", "8x8", "8x16", "16x16"), "EUS": ("4x4", "4x8", "8x8", "8x16", "16x16"),
         "CONUS": ("4x8", "8x8", "8x16", "16x16", "16x32")}
FIT_ON = ("CA",)  # the figures the site's unsourced values are fitted on; the others test the fit
FIT_RUN_S = tuple(k * 1e-9 for k in range(5, 301, 5))  # seconds a run, 5 ns to 300 ns
# climio's strategy, mode, and whether its writers write through MPI-IO's collective calls (a call a variable)
SCHEMES = {"rnetCDF": ("root", "serial", None), "pnetCDF": ("direct", "cdf2", True),
           "pnetCDFcr": ("rows", "cdf2", True)}


@dataclass(frozen=True)
class Figure:
    """One relative performance the paper states: ``faster`` against ``slower`` in percent (None: a sign only,
    ``sign``), on ``domain``'s process grid ``grid``."""

    domain: str
    grid: str
    faster: str
    slower: str
    percent: float | None
    words: str
    sign: int = 0


FIGURES = (
    Figure("CA", "4x4", "pnetCDF", "rnetCDF", 40, "from ~40 % (Fig. 4)"),
    Figure("CA", "16x16", "pnetCDF", "rnetCDF", -25, "to about negative 25 % on Edison"),
    Figure("CA", "4x4", "pnetCDFcr", "pnetCDF", 20, "increases from ~20 (Fig. 4)"),
    Figure("CA", "16x16", "pnetCDFcr", "pnetCDF", 80, "to 80 % on Edison"),
    Figure("EUS", "4x4", "pnetCDF", "rnetCDF", 50, "~50 (Fig. 6)"),
    Figure("EUS", "16x16", "pnetCDF", "rnetCDF", 40, "to ~40 % on Edison"),
    Figure("EUS", "4x4", "pnetCDFcr", "pnetCDF", None, "4x4 and 4x8: pnetCDF performs better", sign=-1),
    Figure("EUS", "4x8", "pnetCDFcr", "pnetCDF", None, "(the same)", sign=-1),
    Figure("EUS", "8x8", "pnetCDFcr", "pnetCDF", 10, "better than pnetCDF slightly, ~10 %"),
    Figure("CONUS", "4x8", "pnetCDF", "rnetCDF", 75, "from ~75 (Fig. 8)"),
    Figure("CONUS", "16x32", "pnetCDF", "rnetCDF", 50, "down to ~50 % on Edison"),
)


Counts = dict[tuple[str, str], dict[str, costmodel.Counted]]


def counted(machine: costmodel.Machine) -> Counts:
    """Each scheme's counts and plans on every process grid (columns x rows) of every domain, worked out once."""
    out: Counts = {}
    for domain, grids in GRIDS.items():
        nx, ny, layers, _ = DOMAINS[domain]
        count, size = BEST_STRIPES[domain]
        for grid in grids:
            px, py = (int(n) for n in grid.split("x"))
            job = block_job(f"{domain} {grid}", (ny, nx), layers, px, py, HALO)
            # the paper's schemes build none of climio's routes: their plans cost nothing
            out[(domain, grid)] = {name: replace(costmodel.count(machine, job, strategy, mode, stripe_count=count,
                                                                 stripe_size=size, collective=collective), plan_s=0.0)
                                   for name, (strategy, mode, collective) in SCHEMES.items()}
    return out


def relative(seconds: dict[str, float], faster: str, slower: str) -> float:
    """Seed 003's Eq. 1, (T1 - T2) / T1 in percent: T1 the ``slower`` scheme's time, T2 the ``faster`` one's."""
    return 100.0 * (seconds[slower] - seconds[faster]) / seconds[slower]


def compare(machine: costmodel.Machine, counts: Counts) -> list[dict[str, Any]]:
    """Every figure with the model's value and the error (points; for a sign, whether the model's agrees), and
    the schemes' predicted order on its grid (``counts``: :func:`counted` on a machine of the same shape)."""
    rows = []
    for fig in FIGURES:
        species = DOMAINS[fig.domain][3]
        seconds = {name: c.seconds(machine, SCHEMES[name][1], species, STEPS)
                   for name, c in counts[(fig.domain, fig.grid)].items()}
        model = relative(seconds, fig.faster, fig.slower)
        agrees = fig.sign * model > 0 if fig.percent is None else None
        rows.append({"domain": fig.domain, "grid": fig.grid, "scheme": f"{fig.faster} vs {fig.slower}",
                     "paper": fig.percent, "words": fig.words, "model": model,
                     "error": None if fig.percent is None else model - fig.percent, "sign_agrees": agrees,
                     "fitted_on": fig.domain in FIT_ON,
                     "model_order": ", ".join(sorted(seconds, key=seconds.__getitem__))})
    return rows


def fit(machine: costmodel.Machine, counts: Counts) -> tuple[costmodel.Machine, float]:
    """``machine`` with the cost of a run on an MPI-IO aggregator, which no source gives for the paper's machine,
    fitted by least squares on the figures of :data:`FIT_ON` (over :data:`FIT_RUN_S`), and the root mean square
    error there in points (``counts``: :func:`counted`'s, which a run's cost does not change)."""

    def rms(trial: costmodel.Machine) -> float:
        errors = [r["error"] for r in compare(trial, counts) if r["fitted_on"] and r["error"] is not None]
        return math.sqrt(sum(e * e for e in errors) / len(errors))

    best = min((replace(machine, run_s=run_s) for run_s in FIT_RUN_S), key=rms)
    return best, rms(best)


def main(*, machine: str | None, refit: bool, out: str | None) -> None:
    """``climio bench scale --papers``: the table (``refit``: after fitting the site's fitted values anew), and
    the rows to ``out``."""
    costs = costmodel.find(machine or "edison")
    counts = counted(costs)
    if refit:
        costs, rms = fit(costs, counts)
        print(f"fitted on {', '.join(FIT_ON)}: run_s {costs.run_s:.3g} (root mean square error there {rms:.0f} "
              f"points)")
    print(f"climio bench scale --papers: Wong et al. (2014), CMAQ's mock-up, relative performance (T1 - T2) / T1 "
          f"in %, the paper's text against the cost model on machine '{costs.name}' ({STEPS} steps, each domain's "
          f"best stripes)", flush=True)
    rows = compare(costs, counts)

    def paper(row: dict[str, Any]) -> str:
        return f"{row['paper']:.0f}" if row["paper"] is not None else "< 0"

    def error(row: dict[str, Any]) -> str:
        if row["error"] is not None:
            return f"{row['error']:+.0f}"
        return "sign agrees" if row["sign_agrees"] else "sign differs"

    print(markdown_table([("domain", "l"), ("grid", "l"), ("scheme", "l"), ("paper %", "r"), ("model %", "r"),
                          ("error, points", "r"), ("model's order, fastest first", "l"), ("fitted on", "l"),
                          ("the paper's words", "l")],
                         [[r["domain"], r["grid"], r["scheme"], paper(r), f"{r['model']:.0f}", error(r),
                           r["model_order"], "yes" if r["fitted_on"] else "", r["words"]] for r in rows]))
    if out:
        save_results(out, "papers", {"machine": costs.name, "rows": rows}, rows)
