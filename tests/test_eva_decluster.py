"""Runs declustering (``--decluster runs:R``) and the extremal index against a plain reference written here, on
synthetic and real series, max-autoregressive series with a known extremal index, and through the command at
1, 2 and 3 ranks.

The command's runs are made once, one process per rank count (``helpers/eva_batch.py``: one start-up for all of
them, each run in a directory of its own); each test checks its own runs' outcomes and files.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio, leftovers, one_error_line

from climio.eva import decluster, gpd, pot

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from eva_batch import Made, Runs  # noqa: E402

TIMEOUT = 120
CESM2 = DATA / "real" / "tas_day_CESM2-WACCM_historical_r1i1p1f1_gn_20000101-20091231.nc"


def type7(values: np.ndarray, p: float) -> float:
    x = np.sort(values)
    index = 1 + (x.size - 1) * p
    lo, hi = math.floor(index), math.ceil(index)
    h = index - lo
    a, b = float(x[lo - 1]), float(x[hi - 1])
    return a if a == b else (1 - h) * a + h * b


def reference(series: np.ndarray, tail: float, run: int) -> dict[str, object]:
    """One series: threshold, exceedances, clusters (a new one after at least ``run`` steps not above the
    threshold; missing steps are not above), cluster maxima excesses and Ferro and Segers' estimator."""
    valid = ~np.isnan(series)
    u = type7(series[valid].astype(np.float64), 1 - tail)
    where = [i for i in range(series.size) if valid[i] and float(series[i]) > u]
    maxima: list[float] = []
    for q, i in enumerate(where):
        excess = float(series[i]) - u
        if q == 0 or i - where[q - 1] - 1 >= run:
            maxima.append(excess)
        else:
            maxima[-1] = max(maxima[-1], excess)
    gaps = [b - a for a, b in zip(where, where[1:])]
    theta = math.nan
    if len(where) >= 2:
        n = len(where)
        if max(gaps) <= 2:
            theta = 2 * sum(gaps) ** 2 / ((n - 1) * sum(g * g for g in gaps))
        else:
            theta = 2 * sum(g - 1 for g in gaps) ** 2 / ((n - 1) * sum((g - 1) * (g - 2) for g in gaps))
        theta = min(1.0, theta)
    return {"threshold": u, "n_exceed": len(where), "maxima": np.array(maxima), "theta": theta,
            "rate": len(maxima) / int(valid.sum())}


def clustered_series(rng: np.random.Generator, steps: int, cells: int) -> np.ndarray:
    """Gamma noise with storms of 1-4 days, some NaN gaps, one splitting a storm."""
    data = rng.gamma(0.6, 3.0, (steps, cells))
    for c in range(cells):
        for start in rng.choice(steps - 5, 40, replace=False):
            data[start:start + rng.integers(1, 5), c] += rng.uniform(20, 60)
    data[rng.random((steps, cells)) < 0.01] = np.nan
    return data


@pytest.mark.parametrize("run", [1, 2, 5])
def test_clusters_match_the_reference(run: int) -> None:
    rng = np.random.default_rng(run)
    cells, k = 60, 50
    times = np.stack([rng.permutation(3000)[:k] for _ in range(cells)])
    excess = rng.integers(1, 6, (cells, k)).astype(float)  # ties
    count = rng.integers(0, k + 1, cells)
    maxima, n_clusters, theta = decluster.clusters(times, excess, count, run)
    for c in range(cells):
        order = np.argsort(times[c, :count[c]], kind="stable")
        t, e = times[c, order], excess[c, order]
        want: list[float] = []
        for q in range(t.size):
            if q == 0 or t[q] - t[q - 1] - 1 >= run:
                want.append(e[q])
            else:
                want[-1] = max(want[-1], e[q])
        assert n_clusters[c] == len(want)
        assert np.array_equal(maxima[c, :n_clusters[c]], want)
        if count[c] >= 2:
            gaps = np.diff(t)
            n = t.size
            if gaps.max() <= 2:
                expect = 2 * gaps.sum() ** 2 / ((n - 1) * (gaps ** 2).sum())
            else:
                expect = 2 * (gaps - 1).sum() ** 2 / ((n - 1) * ((gaps - 1) * (gaps - 2)).sum())
            assert theta[c] == pytest.approx(min(1.0, expect), rel=1e-12)
        else:
            assert math.isnan(theta[c])


@pytest.mark.parametrize("run", [1, 3])
def test_analyse_matches_the_reference(run: int) -> None:
    rng = np.random.default_rng(10 + run)
    series = clustered_series(rng, 5000, 24)
    got = pot.analyse(series, tail=0.02, periods=(50.0,), npy=365.25, min_exceed=5, run=run)
    for c in range(series.shape[1]):
        ref = reference(series[:, c], 0.02, run)
        assert got.threshold[c] == ref["threshold"]
        assert got.n_exceed[c] == ref["n_exceed"]
        assert got.n_clusters[c] == ref["maxima"].size  # type: ignore[union-attr]
        assert got.rate[c] == pytest.approx(ref["rate"], rel=1e-15)
        assert got.extremal_index[c] == pytest.approx(ref["theta"], rel=1e-12)
        assert got.status[c] in (pot.STATUS_OK, pot.AT_BOUND)  # storms of uniform size: bounded tails too
        maxima = ref["maxima"]
        if got.status[c] == pot.AT_BOUND:  # the supremum on xi = -1: sigma = the largest, -log L = n log(max)
            assert got.scale[c] == maxima.max() and got.nll[c] == pytest.approx(maxima.size * math.log(maxima.max()))
        else:
            nll = gpd.negative_log_likelihood(maxima, got.scale[c], got.shape[c])
            assert nll == pytest.approx(got.nll[c], rel=1e-9)
    assert np.all(got.n_clusters < got.n_exceed)  # the storms were joined


def armax(rng: np.random.Generator, steps: int, cells: int, a: float) -> np.ndarray:
    """X_t = max(a X_{t-1}, (1 - a) Z_t), Z unit Frechet: extremal index 1 - a."""
    z = 1.0 / -np.log(rng.random((steps, cells)))
    x = np.empty_like(z)
    x[0] = z[0]
    for t in range(1, steps):
        x[t] = np.maximum(a * x[t - 1], (1 - a) * z[t])
    return x


@pytest.mark.parametrize("a", [0.0, 0.5])
def test_extremal_index_of_a_max_autoregressive_series(a: float) -> None:
    rng = np.random.default_rng(7)
    x = armax(rng, 20000, 1000, a)
    got = pot.analyse(x, tail=0.02, periods=(10.0,), npy=365.25, min_exceed=10, run=1)
    assert abs(float(np.mean(got.extremal_index)) - (1 - a)) < 0.03


@pytest.fixture(scope="module")
def field(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dc") / "pr.nc"
    assert climio("gen", "cmip", str(path), "--shape", "3650,6,8", timeout=TIMEOUT).returncode == 0
    return path


def read(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        return {name: ds[name][...] for name in ds.variables} | {"_decluster": ds.climio_decluster}


RANKS = [(2, "slab", "lat"), (2, "transpose", "block"), (3, "root", "lon"), (3, "slab", "block")]
BAD = [
    (("--decluster", "runs:0"), ("--decluster 'runs:0'", "runs:R")),
    (("--decluster", "blocks:3"), ("--decluster 'blocks:3'",)),
    (("--decluster", "runs:x"), ("--decluster 'runs:x'",)),
    (("--method", "gev", "--decluster", "runs:1"), ("--decluster", "peaks over threshold only")),
]


@pytest.fixture(scope="module")
def made(field: Path, tmp_path_factory: pytest.TempPathFactory) -> Made:
    runs = Runs(tmp_path_factory.mktemp("runs"), timeout=540)
    dirs: dict[object, Path] = {}

    def add(key: object, inputs: Path, out: str, *args: str, nranks: int | None = None) -> None:
        dirs[key] = runs.case_dir()
        runs.add(key, "eva", inputs, dirs[key] / out, *args, nranks=nranks)

    add("one", field, "a.nc", "--decluster", "runs:2")  # the one-rank run every rank count is compared with
    add("runs:1", field, "a.nc", "--decluster", "runs:1")
    for run in (1, 3):
        add(("cesm2", run), CESM2, "a.nc", "-v", "tas", "--npy", "calendar", "--decluster", f"runs:{run}")
    for nranks, scheme, split in RANKS:
        add((nranks, scheme, split), field, "b.nc", "--decluster", "runs:2", "--scheme", scheme, "--split", split,
            nranks=nranks)
    for n, (args, _) in enumerate(BAD):
        add(("bad", n), field, "eva.nc", *args, nranks=2)
    return Made(runs.run(), dirs, read)


@pytest.mark.parametrize("nranks, scheme, split", RANKS)
def test_command_same_at_every_rank_count(made: Made, nranks: int, scheme: str, split: str) -> None:
    one = made.result("one", "a.nc")
    many = made.result((nranks, scheme, split), "b.nc")
    assert one["_decluster"] == "runs:2"
    for name in ("n_clusters", "extremal_index", "rate", "scale", "shape", "return_level", "threshold"):
        assert np.array_equal(one[name], many[name], equal_nan=True), name


def test_command_against_the_reference_and_the_api(field: Path, made: Made) -> None:
    import xarray as xr

    from climio.eva import fit_pot

    got = made.result("runs:1", "a.nc")
    with netCDF4.Dataset(field) as ds:
        pr = ds["pr"][:].filled(np.nan)
    for j, i in [(0, 0), (3, 5), (5, 7)]:
        ref = reference(pr[:, j, i], 0.01, 1)
        assert got["n_clusters"][j, i] == ref["maxima"].size  # type: ignore[union-attr]
        assert got["extremal_index"][j, i] == pytest.approx(ref["theta"], rel=1e-12)
    with xr.open_dataset(field) as ds:
        api = fit_pot(ds, var="pr", decluster="runs:1")
        for name in ("n_clusters", "extremal_index", "scale", "return_level"):
            assert np.array_equal(api[name].values, got[name], equal_nan=True), name


@pytest.mark.filterwarnings("ignore:WARNING. missing_value not used:UserWarning")  # CESM2's double missing_value
@pytest.mark.parametrize("run", [1, 3])
def test_cesm2_tas_against_the_reference(made: Made, run: int) -> None:
    got = made.result(("cesm2", run), "a.nc")
    with netCDF4.Dataset(CESM2) as ds:
        tas = ds["tas"][:].filled(np.nan)
    cells = list(zip(*np.unravel_index(np.arange(min(20, tas[0].size)), tas.shape[1:])))
    for j, i in cells:
        ref = reference(tas[:, j, i], 0.01, run)
        assert got["n_exceed"][j, i] == ref["n_exceed"]
        assert got["n_clusters"][j, i] == ref["maxima"].size  # type: ignore[union-attr]
        assert got["extremal_index"][j, i] == pytest.approx(ref["theta"], rel=1e-12)
        assert got["rate"][j, i] == pytest.approx(ref["rate"], rel=1e-15)


@pytest.mark.parametrize("args, needles", BAD)
def test_bad_decluster_one_line(made: Made, args: tuple[str, ...], needles: tuple[str, ...]) -> None:
    key = ("bad", BAD.index((args, needles)))
    d = made.dirs[key]
    one_error_line(made.runs[key], *needles)
    assert not (d / "eva.nc").exists() and not leftovers(str(d))
