"""The benchmark commands run end to end on tiny sizes (their numbers are not checked: benchmarks, not tests)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import climio, one_error_line, run

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from run_table import run_table  # noqa: E402


def refused(directory: Path, cases: list[list[str]]) -> list[subprocess.CompletedProcess[str]]:
    """``cases``, climio command lines refused before any work, run in one process (helpers/run_table.py)."""
    return run_table(run, cases, directory)


def test_bench_io(tmp_path: Path) -> None:
    result = climio("bench", "io", "--shape", "20,6,8", "--ranks", "1,2", "--reps", "1", "--dir", str(tmp_path),
                    "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "r" / "results.json").read_text())["table"]
    assert {(e["ranks"], e["mode"]) for e in table} == {(n, m) for n in (1, 2) for m in
                                                         ("sequential", "serial", "hdf5", "cdf2", "cdf5")}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # benchmark files removed


def test_bench_eva(tmp_path: Path) -> None:
    result = climio("bench", "eva", "--shape", "400,3,4", "--ranks", "2", "--reps", "1", "--schemes",
                    "slab,transpose", "--splits", "lat", "--dir", str(tmp_path), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "r" / "eva.json").read_text())["table"]
    assert {(e["format"], e["scheme"]) for e in table} == {(f, s) for f in ("cdf5", "nc4z")
                                                           for s in ("slab", "transpose")}
    assert all(e["read_s"] > 0 and e["sequential_read_s"] > 0 for e in table)  # 2-rank and 1-rank reads, run too
    assert "vs scipy" in result.stdout and "eva / sequential read" in result.stdout


def test_bench_eva_methods(tmp_path: Path) -> None:
    """--methods pot,gev: both methods on the same input, interleaved, one table row each, each against its
    own scipy fit (GEV needs 10 complete years: 3700 days). One rank: test_bench_eva runs the driver's 2-rank
    path (a read baseline per rank count)."""
    result = climio("bench", "eva", "--shape", "3700,3,4", "--ranks", "1", "--reps", "1", "--schemes", "slab",
                    "--splits", "lat", "--formats", "cdf5", "--methods", "pot,gev", "--dir", str(tmp_path),
                    "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r" / "eva.json").read_text())
    assert [r["method"] for r in report["rows"] if "scheme" in r] == ["pot", "gev"]
    assert {e["method"] for e in report["table"]} == {"pot", "gev"}
    assert set(report["scipy_seconds_per_cell"]) == {"pot", "gev"}
    assert "genextreme" in result.stdout and "| gev" in result.stdout


def test_bench_eva_cold(tmp_path: Path) -> None:
    """--cold: every eva run after a cold dd of the same file (interleaved), the cache method reported. One rank, as
    in test_bench_eva_methods."""
    result = climio("bench", "eva", "--shape", "400,3,4", "--ranks", "1", "--reps", "2", "--schemes", "slab",
                    "--splits", "lat", "--formats", "cdf5", "--cold", "--dir", str(tmp_path), "--out",
                    str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r" / "eva.json").read_text())
    runs = [r for r in report["rows"] if "scheme" in r]
    assert report["cold"] and len(runs) == 2 and all(r["cold_dd_s"] > 0 for r in runs)
    assert {r["cache"] for r in runs} <= {"drop_caches", "fadvise"}
    entry = report["table"][0]
    assert entry["wall_over_cold_dd"] == pytest.approx(entry["wall_s"] / entry["cold_dd_s"])
    assert "wall / cold dd" in result.stdout


def test_bench_model(tmp_path: Path) -> None:
    """Every strategy and mode measured, and each beside the cost model's time on a given machine file."""
    from climio.model import costmodel
    from climio.model.counts import block_job, needs_plan, writers
    from climio.bench.model import HALO

    out, machine = tmp_path / "r", tmp_path / "machine.toml"
    modes = ("serial", "cdf5")
    costs = costmodel.Machine(
        name="test", nodes=1, cores_per_node=2, copy_Bps=1e9, row_s=1e-8, touch_Bps=4e9, latency_s=1e-6,
        link_Bps=5e8, message_row_s=3e-8, collective_s=1e-5, write_Bps=2e8, servers_Bps=3e8, request_s=1e-5,
        shared_request_s=2e-5, run_s=1e-6, sync_Bps=0.0, record_s={m: 1e-4 for m in modes}, step_s={m: 1e-3 for m in modes},
        collectives={m: 3.0 for m in modes}, record_collectives={m: 0.0 for m in modes},
        define_s={m: 1e-4 for m in modes}, file_s={m: 1e-2 for m in modes})
    costmodel.save(costs, str(machine))
    result = climio("bench", "model", "--domain", "20x12x3x4", "--grid", "1x1,2x1", "--steps", "2", "--reps", "1",
                    "--strategy", "root,root:p2p,direct,rows,cols", "--mode", "serial,cdf5", "--out", str(out),
                    "--keep", "--machine", str(machine))
    assert result.returncode == 0, result.stderr
    assert "skipped direct x serial" in result.stdout
    table = json.loads((out / "model.json").read_text())["table"]
    measured = {(e["ranks"], e["strategy"], e["mode"]) for e in table if "io_s" in e}
    assert (2, "rows", "cdf5") in measured and (1, "sequential", "-") in measured
    for row in (e for e in table if "io_s" in e and e["strategy"] != "sequential"):
        px, py = (int(n) for n in row["case"].split("x"))
        job = block_job(row["case"], (12, 20), 3, px, py, HALO)
        strategy = costmodel.settle(costs, job, row["strategy"].partition(":p2p")[0], row["mode"])
        counts, _ = costmodel.file_counts(costs, job, strategy, row["mode"])
        unplanned = costmodel.run_time(costs, counts, 4, 2, row["mode"], strategy.name)
        # every term but the plans' build time, which is timed anew on a loaded machine (a millisecond or a few)
        assert 0.0 <= row["model_s"] - unplanned < 0.05, row
        assert (row["model_s"] > unplanned) == needs_plan(job, writers(job, strategy, 4)), row
        assert f"| {row['case']} | {row['strategy']} | {row['mode']} |" in result.stdout
    assert (out / "model.png").read_bytes()[:4] == b"\x89PNG" and (out / "cmaq-rows-cdf5-2x1.nc").exists()


def test_bench_model_servers(tmp_path: Path) -> None:
    """The Fortran mock-up attached and beside a climio serve rank: both files compared, every measure reported."""
    out = tmp_path / "r"
    result = climio("bench", "model", "--servers", "1", "--domain", "20x12x3x4", "--grid", "2x1", "--steps", "2",
                    "--reps", "1", "--strategy", "agg", "--mode", "cdf5", "--out", str(out))
    assert result.returncode == 0, result.stderr
    (row,) = json.loads((out / "model-served.json").read_text())["table"]
    assert (row["grid"], row["strategy"], row["mode"], row["buffer_mb"]) == ("2x1", "agg", "cdf5", 32)
    assert row["sync_step_s"] > 0 and row["served_step_s"] > 0 and row["server_mib_s"] > 0 and row["work_s"] > 0
    assert row["server_collectives_per_step"] >= 1  # the server's own calls, counted by climio's library
    assert "| 2x1 | agg | cdf5 |" in result.stdout and not list(out.glob("*.nc"))


def test_bench_model_decomp_file(tmp_path: Path) -> None:
    """A PIO decomposition map drives bench model: the CA-like 2x2 blocks of a (3, 12, 20) field listed point by
    point, and a scattered map with holes; every file holds exactly the values written (holes: fill). --domain
    gives only the species count with --decomp: 4 species, not CA's 146 (every species of every kept file is read
    back, and 146 of them at each point of a scattered map took minutes)."""
    import netCDF4
    import numpy as np

    from climio.core.decomp import Decomposition
    from climio.model import piomap

    shape = (3, 12, 20)
    blocks = Decomposition.block2d(shape, 2, 2)
    maps = [np.ravel_multi_index(np.meshgrid(*[np.arange(s, s + c) for s, c in zip(b.start, b.count)],
                                             indexing="ij"), shape).ravel() for b in map(blocks.owned, range(4))]
    piomap.write_map_text(str(tmp_path / "ca2x2.dat"), piomap.from_offsets(shape, maps))
    points = np.random.default_rng(3).permutation(12 * 20)[:200]
    piomap.write_map_netcdf(str(tmp_path / "scattered.nc"), piomap.from_offsets((12, 20), [points[:50], points[50:]]))
    for name, ranks in (("ca2x2.dat", 4), ("scattered.nc", 2)):
        out = tmp_path / name.replace(".", "-")
        result = climio("bench", "model", "--decomp", str(tmp_path / name), "--domain", "20x12x3x4", "--steps", "2",
                        "--reps", "1", "--strategy", "root,direct,agg:2", "--mode", "cdf5,hdf5", "--out", str(out),
                        "--keep")
        assert result.returncode == 0, result.stderr
        table = json.loads((out / "model.json").read_text())["table"]
        measured = [e for e in table if "io_s" in e and e["strategy"] != "sequential"]
        assert len(measured) == 6 and all(e["verified"] and e["ranks"] == ranks for e in measured)
        files = sorted(out.glob("cmaq-*.nc"))
        species = [f"SPEC{s:03d}" for s in range(4)]
        with netCDF4.Dataset(files[0]) as first:
            reference = {name: first[name][:] for name in species}
        for path in files[1:]:
            with netCDF4.Dataset(path) as ds:
                for name in species:
                    assert np.ma.allequal(ds[name][:], reference[name]) and ds[name].dimensions[0] == "time"


def test_bench_model_compressed_and_verified(tmp_path: Path) -> None:
    """--deflate/--quantize: hdf5 only, a netCDF4-python baseline row, every species of every kept file verified
    against netCDF-C's quantization of the known values; a corrupted value is found and named."""
    import netCDF4
    import numpy as np

    from climio.bench.model import mismatch, quantized, value

    out = tmp_path / "r"
    result = climio("bench", "model", "--domain", "20x12x3x4", "--grid", "2x1", "--steps", "2", "--reps", "1",
                    "--strategy", "agg:2,root,direct", "--mode", "hdf5,cdf5", "--deflate", "1", "--quantize",
                    "GranularBR:3", "--out", str(out), "--keep")
    assert result.returncode == 0, result.stderr
    assert "skipped root x cdf5: compression needs hdf5" in result.stdout
    table = json.loads((out / "model.json").read_text())["table"]
    measured = {e["strategy"]: e for e in table if "io_s" in e}
    assert set(measured) == {"sequential", "netcdf4-python", "agg:2", "root", "direct"}
    assert all(measured[s]["verified"] for s in ("agg:2", "root", "direct"))
    path = out / "cmaq-agg-2-hdf5-2x1.nc"
    with netCDF4.Dataset(path, "a") as ds:
        assert ds["SPEC002"].filters()["complevel"] == 1 and ds["SPEC002"].quantization() == (3, "GranularBitRound")
        ds["SPEC002"][1, 2, 5, 7] = -1.0
    owned = np.ones(3 * 12 * 20, bool)
    written = quantized(value(np.array([2 * 240 + 5 * 20 + 7]), 2), ("GranularBR", 3))[0]
    assert mismatch(str(path), owned, 2, range(4), ("GranularBR", 3)) == (
        f"{path}: variable 'SPEC002' step 1: 1 values differ, the first at index (2, 5, 7): -1.0 where "
        f"{written} was written")
    assert mismatch(str(out / "cmaq-root-hdf5-2x1.nc"), owned, 2, range(4), ("GranularBR", 3)) == ""


def test_bench_model_bad_options(tmp_path: Path) -> None:
    cases = ((("--domain", "PACIFIC"), "--domain"), (("--grid", "2by2"), "--grid"),
             (("--strategy", "carrier-pigeon"), "--strategy"),
             (("--strategy", "agg:4"), "--strategy agg:4: more aggregators"),
             (("--decomp", "/nonexistent.dat"), "/nonexistent.dat"),
             (("--quantize", "GranularBR"), "--quantize 'GranularBR'"),
             (("--deflate", "11"), "deflate level 11"), (("--servers", "3", "--grid", "2x1"), "--servers 3"))
    results = refused(tmp_path, [["bench", "model", *args, "--out", str(tmp_path)] for args, _ in cases])
    for (args, needle), result in zip(cases, results):
        assert result.returncode == 2 and needle in result.stderr, (args, result.stderr)


def test_bench_restart(tmp_path: Path) -> None:
    out = tmp_path / "r"
    result = climio("bench", "restart", "--domain", "20x12x3x4", "--grid", "2x1,1x3", "--reps", "2",
                    "--mode", "serial,hdf5,cdf5", "--dir", str(tmp_path / "d"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    table = json.loads((out / "restart.json").read_text())["table"]
    rows = {(e["ranks"], e["mode"], e["strategy"]) for e in table}
    assert {(2, m, s) for m in ("hdf5", "cdf5") for s in ("sequential", "root", "direct", "agg:1", "agg:2", "auto")} \
        <= rows and (3, "serial", "root") in rows and (3, "serial", "direct") not in rows
    assert all(e["verified"] and e["reps"] == 2 for e in table) and "speed-up over root" in result.stdout
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == []  # restart files removed
    cases = ((("--strategy", "rows"), "--strategy rows: read strategies are"),
             (("--strategy", "agg:9"), "--strategy agg:9: more readers"))
    results = refused(tmp_path, [["bench", "restart", "--domain", "20x12x3x4", *args, "--out", str(out)]
                                 for args, _ in cases])
    for (args, needle), result in zip(cases, results):
        assert result.returncode == 2 and needle in result.stderr, (args, result.stderr)


def test_inmcm_check_finds_a_wrong_value(tmp_path: Path) -> None:
    import netCDF4
    import numpy as np

    from climio.bench.inmcm import first_difference

    expected = np.arange(12, dtype="f4").reshape(3, 4)
    with netCDF4.Dataset(tmp_path / "f.nc", "w") as ds:
        for name, n in (("time", None), ("y", 3), ("x", 4)):
            ds.createDimension(name, n)
        var = ds.createVariable("a_00", "f4", ("time", "y", "x"))
        var[0], var[1] = expected, expected
        var[1, 2, 1] = -1
    assert first_difference(str(tmp_path / "f.nc"), expected, ["a_00"], 1) == ""
    assert first_difference(str(tmp_path / "f.nc"), expected, ["a_00"], 2) == (
        f"{tmp_path / 'f.nc'}: variable 'a_00' record 1: 1 values differ, the first at (2, 1)")


def test_bench_inmcm(tmp_path: Path) -> None:
    result = climio("bench", "inmcm", "--model", "6lm", "--ranks", "2", "--reps", "1", "--gathers", "p2p,gatherv",
                    "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "inmcm.json").read_text())["table"]
    assert {e["group"] for e in table} == {"dyz", "dxy", "dxyz", "dxys", "6h", "3h", "1h"}
    assert "p2p / gatherv" in result.stdout


def test_bench_subset(tmp_path: Path) -> None:
    result = climio("bench", "subset", "--level", "3", "--layers", "2", "--times", "2", "--ranks", "1,2", "--reps", "1",
                    "--cmip-shape", "10,24,36", "--dir", str(tmp_path), "--out", str(tmp_path / "r"), "--cold")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r" / "subset.json").read_text())
    assert report["cold"] and all(e["cold_dd_s"] > 0 for e in report["geodesic"]) and "cold dd s" in result.stdout
    assert {(e["ranks"], e["read"]) for e in report["geodesic"]} == {(n, r) for n in (1, 2) for r in ("whole", "needed")}
    for entry in report["geodesic"]:
        assert entry["selected_MB"] > 0 and entry["read_MB"] >= entry["selected_MB"] * 0.99
    assert [e["subset"] for e in report["regular"]] == ["MJO box", "45S..45N"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # benchmark files removed


def test_bench_startup(tmp_path: Path) -> None:
    result = climio("bench", "startup", "--reps", "2", "--dir", str(tmp_path), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r" / "startup.json").read_text())
    table = {e["command"]: e for e in report["table"]}
    assert set(table) == {"python -c pass", "import numpy, netCDF4, mpi4py.MPI", "climio subset", "ncks",
                          "climio info", "climio eva --help", "climio eva", "climio eva, first run"}
    first = table.pop("climio eva, first run")
    assert first["runs_s"] == [first["median_s"]] and first["median_s"] > 0
    assert all(len(e["runs_s"]) == 2 and 0 < e["min_s"] <= e["median_s"] for e in table.values())
    assert table["ncks"]["vs_ncks"] == 1.0 and isinstance(report["bytecode_precompiled"], bool)
    assert report["first_eva_vs_next"] == pytest.approx(first["median_s"] / table["climio eva"]["median_s"])
    assert "target: climio subset, info and eva --help at most 0.25 s" in result.stdout
    assert re.search(r"^first eva: \d+\.\d\dx the next ones \(target at most 1\.5x: (met|missed)\)$", result.stdout,
                     re.M), result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # the tiny file and outputs removed


SUITES = ["eva", "subset", "io", "startup"]
Runs = dict[str, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def missing_directory_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Runs]:
    """``climio bench SUITE --dir MISSING`` for every suite, in one process (:func:`refused`)."""
    directory = tmp_path_factory.mktemp("missing-dir")
    missing = directory / "nowhere"
    results = refused(directory, [["bench", suite, "--dir", str(missing), "--reps", "1"] for suite in SUITES])
    return missing, dict(zip(SUITES, results))


@pytest.mark.parametrize("suite", SUITES)
def test_bench_working_directory_must_exist(missing_directory_runs: tuple[Path, Runs], suite: str) -> None:
    missing, results = missing_directory_runs
    one_error_line(results[suite], "--dir", str(missing), "does not exist")
    assert not missing.exists()


def test_bench_open(tmp_path: Path) -> None:
    """Three ways open the same daily files and read the same series; opening reads coordinates, no tas."""
    result = climio("bench", "open", "--files", "12", "--shape", "2,6,8", "--reps", "1", "--dir", str(tmp_path),
                    "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r" / "open.json").read_text())
    assert set(report["medians_s"]) == {"climio", "xarray", "xarray minimal"}
    assert all(seconds > 0 for seconds in report["medians_s"].values())
    assert report["opened_bytes"] == report["coordinate_bytes"] == 12 * 8 * (2 + 6 + 8)
    assert "the series is the same by every way" in result.stdout and "target: climio at least 10x" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # the files removed


def test_bench_points(tmp_path: Path) -> None:
    """Both ways take the series at the same stations from both formats; the contiguous files are read cell by
    cell (exactly the series' bytes, the lat and lon read once to place the stations, and the time copied), the
    chunked ones a box per chunk."""
    result = climio("bench", "points", "--files", "6", "--stations", "5", "--shape", "2,6,8", "--reps", "1",
                    "--dir", str(tmp_path), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r" / "points.json").read_text())
    assert report["bytes_selected"] == 6 * 2 * 5 * 4
    assert report["formats"]["cdf5"]["bytes_read"] == report["bytes_selected"] + 8 * (6 + 8) + 8 * 12
    assert report["formats"]["netcdf4"]["bytes_read"] >= report["bytes_selected"]
    assert all(f["same_cell"] == 5 for f in report["formats"].values())
    assert "their series equal" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_bench_model_agreements_per_step_and_a_busy_core(tmp_path: Path) -> None:
    """40 fields a step on 4 ranks: every classic-format strategy (stripe too, whose fields each take the route
    of their own stripe phase, built without communication and moved in one exchange) and rank 0's netCDF-4 and
    serial writes make at most 5 collective MPI calls a step (counted in every library by the preloaded
    counter), whatever the number of fields; and every write finishes and holds what was written beside a process that keeps a core busy (a hang
    or a collapse fails the run's time limit, not a timing assertion)."""
    out = tmp_path / "r"
    result = climio("bench", "model", "--domain", "20x12x3x40", "--grid", "2x2", "--steps", "2", "--reps", "1",
                    "--strategy", "root,agg:2,direct,rows,stripe", "--mode", "cdf5,hdf5,serial", "--busy", "1",
                    "--out", str(out), "--verify", timeout=240)
    assert result.returncode == 0, result.stderr
    rows = [e for e in json.loads((out / "model.json").read_text())["rows"] if "io_s" in e
            and e["strategy"] != "sequential"]
    assert {e["busy"] for e in rows} == {0, 1} and all(e["verified"] for e in rows)
    few = [e for e in rows if e["mode"] in ("cdf5", "serial") or e["strategy"] == "root"]
    assert len(few) == 2 * 7 and all(0 < e["collectives_per_step"] <= 5 for e in few), \
        [(e["strategy"], e["mode"], e["collectives_per_step"]) for e in few]
    assert all(1 <= e["copies_per_byte"] < 3.01 for e in rows)  # the time coordinate is packed too
    assert "| 2x2 | agg:2 | cdf5 | 1 |" in result.stdout
