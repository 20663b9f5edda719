"""The cost model's formulas against cases worked out by hand, its machine files, and ``climio tune``."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import climio, climio_argv, one_error_line

from climio.bench import scale
from climio.core.ncio.stored import PACK_BYTES
from climio.model import costmodel
from climio.model.counts import QUANTITIES, block_job, step_counts
from climio.errors import ClimioError

MODES = ("serial", "cdf2", "cdf5", "hdf5")
ROUND = costmodel.Machine(
    name="round", nodes=1, cores_per_node=2, copy_Bps=1e9, row_s=1e-8, touch_Bps=4e9, latency_s=1e-6,
    link_Bps=5e8, message_row_s=3e-8, collective_s=1e-5, write_Bps=2e8, servers_Bps=3e8, request_s=1e-5,
    shared_request_s=2e-5, run_s=1e-6, sync_Bps=1e8, record_s={m: 1e-4 for m in MODES}, step_s={m: 1e-3 for m in MODES},
    collectives={m: 3.0 for m in MODES}, record_collectives={m: 2.0 if m == "hdf5" else 0.0 for m in MODES},
    define_s={m: 1e-4 for m in MODES}, file_s={m: 1e-2 for m in MODES}, sources={"all": "round numbers"})


def counts(**given: list[int]) -> dict[str, np.ndarray]:
    names = (*QUANTITIES, "memory_runs", "bytes_landed")
    size = len(next(iter(given.values())))
    return {q: np.array(given.get(q, [0] * size), np.int64) for q in names}


def test_two_ranks_gathered_on_the_first() -> None:
    """Rank 1 sends rank 0 its 1 MB (100 rows); rank 0 keeps its own 1 MB (100 rows) and writes 2 MB in one
    request of one run; 10 records a step, cdf5."""
    c = counts(messages_sent=[0, 1], messages_received=[1, 0], bytes_sent=[0, 10**6], bytes_received=[10**6, 0],
               bytes_kept=[10**6, 0], bytes_written=[2 * 10**6, 0], requests=[1, 0], file_runs=[1, 0],
               memory_runs=[100, 100], bytes_landed=[2 * 10**6, 0])
    parts = costmodel.step_parts(ROUND, c, 10, "cdf5", "root")
    assert parts["pack"] == pytest.approx(10 * (1e6 / 1e9 + 100 * 1e-8))
    # rank 0: 1 message, 1 MB received at 5e8, 1 MB kept at copy speed, its 100 rows walked by MPI's datatypes
    assert parts["exchange"] == pytest.approx(1e-6 + 10 * (1e6 / 5e8) + 10 * (1e6 / 1e9 + 100 * 3e-8))
    assert parts["write"] == pytest.approx(10 * 2e6 / 2e8)  # one writer: its bandwidth, not the servers'
    assert parts["collectives"] == pytest.approx(3 * 1e-5 * 1.0)  # log2 2 = 1
    assert parts["fixed"] == pytest.approx(1e-3 + 10 * 1e-4)
    written = 4 * 10 * 2e6  # four steps
    buffers = 10 * (2e6 + 1e6) / 4e9  # rank 0 lands 10 records of 2 MB and packs 10 of its own 1 MB
    assert costmodel.run_time(ROUND, c, 10, 4, "cdf5", "root", plans_s=0.5) == pytest.approx(
        1e-2 + 10 * 1e-4 + 0.5 + buffers + 4 * sum(parts.values()) + written / 1e8)
    hdf5 = costmodel.step_parts(ROUND, c, 10, "hdf5", "root")  # no pack: its buffers are the landing ones only
    assert costmodel.run_time(ROUND, c, 10, 4, "hdf5", "root") == pytest.approx(
        1e-2 + 10 * 1e-4 + 10 * 2e6 / 4e9 + 4 * sum(hdf5.values()) + written / 1e8)
    # a mode's library at its own bandwidth (HDF5's copies), and buffers of 4 MiB or more on huge pages
    library = replace(ROUND, record_Bps={"hdf5": 1e8}, huge_touch_Bps=8e9)
    assert costmodel.step_parts(library, c, 10, "hdf5", "root")["write"] == pytest.approx(10 * 2e6 / 1e8)
    assert costmodel.step_parts(library, c, 10, "cdf5", "root")["write"] == pytest.approx(10 * 2e6 / 2e8)
    assert list(costmodel.touch_seconds(library, np.array([4 << 20, (4 << 20) - 1]))) == pytest.approx(
        [(4 << 20) / 8e9, ((4 << 20) - 1) / 4e9])


def test_writers_of_many_runs_and_the_servers_bound() -> None:
    """Four writers on 4 ranks (2 cores: ranks take turns), each 50 runs in 2 requests: classic files written
    by aggregators make each run a pwrite (shared: other writers write too); direct's go to MPI-IO as requests
    of runs; the servers bound the four writers' 4 MB."""
    c = counts(bytes_written=[10**6] * 4, requests=[2] * 4, file_runs=[50] * 4, memory_runs=[10] * 4)
    own = costmodel.step_parts(ROUND, c, 1, "cdf5", "rows")
    assert own["write"] == pytest.approx(max(49 * 2e-5 + 1e6 / 2e8, 4e6 / 3e8))
    mpiio = costmodel.step_parts(ROUND, c, 1, "cdf5", "direct")
    assert mpiio["write"] == pytest.approx(max(1 * 2e-5 + 48 * 1e-6 + 1e6 / 2e8, 4e6 / 3e8))
    assert own["collectives"] == pytest.approx(3 * 1e-5 * math.log2(4))
    assert own["fixed"] == pytest.approx(2 * (1e-3 + 1e-4))  # 4 ranks on 2 cores
    assert own["exchange"] == 0.0 and own["pack"] == pytest.approx(2 * (1e6 / 1e9 + 10 * 1e-8))
    hdf5 = costmodel.step_parts(ROUND, c, 5, "hdf5", "rows")
    assert hdf5["pack"] == 0.0 and hdf5["collectives"] == pytest.approx((3 + 5 * 2) * 1e-5 * 2)


def test_stripe_routes_one_per_phase() -> None:
    """Records of CA (1,669,640 bytes) back to back in rounds of 2 stripes of 1 MiB: each record starts at a new
    phase until they repeat."""
    job = scale.job("CA", 2)
    strategy = costmodel.settle(replace(ROUND, cores_per_node=2), job, "stripe", "cdf5", stripe_count=2,
                                stripe_size=1 << 20)
    record = 4 * 35 * 134 * 89
    assert costmodel.routes_built(job, strategy, 10, 1) == [len({k * record % (2 << 20) for k in range(10)})] == [10]
    # 2 MiB / gcd(record, 2 MiB) = 262,144 phases before they repeat, far more than a file keeps (10 + 8): every
    # record of every step builds a route
    assert costmodel.routes_built(job, strategy, 10, 3) == [10, 10, 10]
    # stripes of a record's size: phases 0 and one record only, kept: built in the first step alone
    whole = costmodel.settle(replace(ROUND, cores_per_node=2), job, "stripe", "cdf5", stripe_count=2,
                             stripe_size=record)
    assert costmodel.routes_built(job, whole, 3, 3) == [2, 0, 0]
    assert costmodel.routes_built(job, costmodel.settle(ROUND, job, "agg", "cdf5"), 10, 3) == [1, 0, 0]


def test_placement_on_too_few_nodes() -> None:
    """On one node of 2 cores, 4 ranks share it; on 4 nodes of 2, a node takes 2."""
    assert ROUND.per_node(4) == 4 and replace(ROUND, nodes=4).per_node(4) == 2
    job = scale.job("CA", 4)
    assert costmodel.settle(ROUND, job, "agg", "cdf5").aggregators == (0,)
    assert costmodel.settle(replace(ROUND, nodes=4), job, "agg", "cdf5").aggregators == (0, 2)


def test_machine_files(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    costmodel.save(ROUND, str(path))
    assert costmodel.load(str(path)) == ROUND
    text = path.read_text()
    path.write_text(text.replace("run_s = ", "runs = "))
    with pytest.raises(ClimioError, match=r"m.toml: the machine file lacks run_s"):
        costmodel.load(str(path))
    path.write_text("colour = 3\n" + text)
    with pytest.raises(ClimioError, match="has unknown keys colour"):
        costmodel.load(str(path))
    path.write_text("name = \n")
    with pytest.raises(ClimioError, match="not a TOML machine file"):
        costmodel.load(str(path))
    with pytest.raises(ClimioError, match="no record_s, step_s.*for mode 'cdf1'"):
        ROUND.check_mode("cdf1")


def test_tune_measures_this_machine(tmp_path: Path) -> None:
    out = tmp_path / "conf" / "machine.toml"
    result = climio("tune", "--dir", str(tmp_path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    machine = costmodel.load(str(out))
    for name in ("copy_Bps", "latency_s", "link_Bps", "collective_s", "write_Bps", "servers_Bps", "touch_Bps",
                 "huge_touch_Bps"):
        assert getattr(machine, name) > 0, name
    assert set(machine.record_Bps) == set(MODES) and all(v > 0 for v in machine.record_Bps.values())
    assert set(machine.record_s) == set(MODES) and all(v > 0 for v in machine.file_s.values())
    assert machine.collectives["cdf5"] >= 1  # the step's exchange at least
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf"]  # its probe files removed
    bad = climio("tune", "--dir", str(tmp_path / "none"))
    assert bad.returncode == 2 and "--dir: " in one_error_line(bad)


def test_a_stopped_driver_stops_its_ranks(tmp_path: Path) -> None:
    """SIGTERM to ``climio tune``'s driver alone (``kill PID``, not its process group): the ranks it launched
    are told too and remove their probe files; one line, status 143, nothing left running or on disk."""
    # os.environ, not the process's own: an MPI started in this process (another test's) set variables of its
    # own there, which would lead the job's mpiexec astray
    proc = subprocess.Popen(climio_argv("tune", "--dir", str(tmp_path), "--out", str(tmp_path / "m.toml")),
                            env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(p.name.startswith(".climio-tune-") for p in tmp_path.iterdir()):  # the ranks measure
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.splitlines() == ["climio: stopped by SIGTERM; unfinished output removed"]
    if list(tmp_path.iterdir()):  # a rank that mpiexec's SIGKILL took a second after its SIGTERM (a loaded
        swept = climio("info")    # machine) left its probe file to the next run's sweep, which says so
        assert "left by a stopped run" in swept.stderr, swept.stderr
    assert list(tmp_path.iterdir()) == []
    ranks = subprocess.run(["pgrep", "-f", f"tune --dir {tmp_path} --worker-json"], capture_output=True, text=True)
    assert ranks.stdout == ""


def test_the_machine_a_job_is_priced_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shipped site by name, a file, $CLIMIO_MACHINE, this machine's tuned file, else the shipped node with
    this machine's cores."""
    monkeypatch.delenv("CLIMIO_MACHINE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert {"node"} <= set(costmodel.site_names())
    fallback = costmodel.find()
    assert fallback.name == "node" and fallback.cores_per_node == os.cpu_count()
    tuned = tmp_path / ".config" / "climio" / "machine.toml"
    costmodel.save(ROUND, str(tuned))
    assert costmodel.find() == ROUND
    other = tmp_path / "other.toml"
    costmodel.save(replace(ROUND, name="other"), str(other))
    monkeypatch.setenv("CLIMIO_MACHINE", str(other))
    assert costmodel.find().name == "other" and costmodel.find("node").name == "node"
    assert costmodel.tuned_path() == str(other)
    monkeypatch.setenv("CLIMIO_MACHINE", "edison")  # a shipped site: auto prices on it, climio tune writes the config
    assert costmodel.find().name == "edison" and costmodel.tuned_path() == str(tuned)
    for site in costmodel.site_names():  # every shipped site loads and prices every mode
        machine = costmodel.find(site)
        for mode in MODES:
            machine.check_mode(mode)
        assert machine.sources, site
    with pytest.raises(ClimioError, match="nowhere.toml: cannot read the machine file"):
        costmodel.find(str(tmp_path / "nowhere.toml"))


def test_auto_ranks_the_strategies_that_apply() -> None:
    """Candidates: those the mode and decomposition take, agg with 1, 2, 4, ... aggregators a node, stripe on a
    striped file system; ranked by the sum of each shape's step parts."""
    job = scale.job("CA", 16)  # 4x4 on 2 cores a node: 8 nodes
    wide = replace(ROUND, nodes=8)
    assert costmodel.candidates(wide, job, "cdf5") == ["direct", "root", "rows", "cols", "agg:8", "agg:16"]
    assert costmodel.candidates(wide, job, "serial") == ["root"]
    assert costmodel.candidates(replace(wide, osts=4), job, "hdf5")[-1] == "agg:16"  # no stripe in HDF5
    assert costmodel.candidates(replace(wide, osts=4), job, "cdf2")[-1] == "stripe"
    assert "rows" not in costmodel.candidates(wide, scale.job("mesh", 16), "cdf5")
    flat = scale.job("CA", 16)
    ranked = costmodel.ranking(wide, [(job, 3, 4), (replace(flat, levels=None), 2, 8)], "cdf5")
    assert sorted(t for _, t in ranked) == sorted(costmodel.candidates(wide, job, "cdf5"))
    for seconds, text in ranked:
        expected = 0.0
        for j, n, size in [(job, 3, 4), (replace(flat, levels=None), 2, 8)]:
            c, _ = costmodel.file_counts(wide, j, costmodel.settle(wide, j, text, "cdf5"), "cdf5", size)
            expected += sum(costmodel.step_parts(wide, c, n, "cdf5", text.partition(":")[0]).values())
        assert seconds == pytest.approx(expected, rel=1e-12), text
    assert [s for s, _ in ranked] == sorted(s for s, _ in ranked)
    # a message costing a second: first the two that send none where each rank writes its own block (bands of
    # whole rows of a 2-D field, each contiguous in the file): direct (no two-phase write), rows and agg:16;
    # a request costing one: an aggregated strategy whose writers each make one request a record
    bands = block_job("bands", (134, 89), None, 1, 16, 2)
    assert {t for _, t in costmodel.ranking(replace(wide, latency_s=1.0), [(bands, 3, 4)], "cdf5")[:3]} == {
        "direct", "rows", "agg:16"}  # (16 aggregators: a band each)
    dear = replace(wide, request_s=1.0, shared_request_s=1.0, run_s=1.0)
    assert costmodel.ranking(dear, [(job, 3, 4)], "cdf5")[0][1] in ("root", "agg:8", "agg:16")


def test_bench_scale_recommends(tmp_path: Path) -> None:
    result = climio("bench", "scale", "--recommend", "--machine", "node", "--decompositions", "CA,mesh",
                    "--ranks", "4,64", "--mode", "hdf5", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "recommend.json").read_text())["rows"]
    node = costmodel.find("node")
    for kind, nranks in (("CA", 4), ("CA", 64), ("mesh", 4), ("mesh", 64)):
        mine = [r for r in rows if r["kind"] == kind and r["ranks"] == nranks]
        job = scale.job(kind, nranks)
        expected = costmodel.ranking(node, [(job, scale.records(kind), 4)], "hdf5")
        assert [(r["strategy"], r["place"]) for r in mine] == [(t, k) for k, (_, t) in enumerate(expected, 1)]
        assert [r["step_s"] for r in mine] == pytest.approx([s for s, _ in expected], rel=1e-9)
        assert f"| {job.label} | {nranks} | {scale.records(kind)} | 1 | {expected[0][1]} |" in result.stdout
    bad = climio("bench", "scale", "--recommend", "--machine", "atlantis")
    assert bad.returncode == 2 and "atlantis: cannot read the machine file" in one_error_line(bad)


def test_writers_sharing_storage_targets() -> None:
    """A record of 4,096 bytes on stripes of 1,024 bytes over 2 targets (stripe i on target i mod 2)."""
    from climio.core.decomp import Hyperslab

    def slabs(*ranges: tuple[int, int]) -> list[Hyperslab]:
        return [Hyperslab((a // 4,), ((b - a) // 4,)) for a, b in ranges]

    # bytes [0, 1536) on stripes 0-1, [1536, 4096) on stripes 1-3: both writers on both targets; a third idle
    assert list(costmodel.sharers([slabs((0, 1536)), slabs((1536, 4096)), []], (1024,), 4, 2, 1024)) == [2, 2, 0]
    # stripe-aligned: each writer the stripes of one target
    aligned = [slabs((0, 1024), (2048, 3072)), slabs((1024, 2048), (3072, 4096))]
    assert list(costmodel.sharers(aligned, (1024,), 4, 2, 1024)) == [1, 1]
    # a run over more stripes than targets touches every target
    assert list(costmodel.sharers([slabs((0, 4096)), slabs((0, 4))], (1024,), 4, 3, 1024)) == [2, 2]


def test_a_striped_file_system() -> None:
    """On a file system of 4 targets of 1e8 B/s with 1 ms a contended lock: direct is MPI-IO's two-phase write
    (one aggregator per stripe target), the step's bytes go to the targets they use, and writers sharing a
    target pay its locks."""
    lustre = replace(ROUND, nodes=8, osts=4, ost_Bps=1e8, stripe_count=2, stripe_size=1 << 20, lock_s=1e-3)
    job = scale.job("CA", 16)
    direct, striping = costmodel.file_counts(lustre, job, costmodel.settle(lustre, job, "direct", "cdf5"), "cdf5")
    assert striping == (2, 1 << 20) and np.count_nonzero(direct["bytes_written"]) == 2  # the record spans 2 stripes
    assert direct["sharers"].max() == 1 and direct["messages_received"].max() > 0
    record = 89 * 134 * 35 * 4
    assert direct["file_runs"].sum() == pytest.approx(job.source_runs()[0].size + 2, abs=2)  # every rank's rows
    rows, _ = costmodel.file_counts(lustre, job, costmodel.settle(lustre, job, "rows", "cdf5"), "cdf5")
    assert rows["sharers"].max() == 4  # 4 row writers, each on both targets
    parts = costmodel.step_parts(lustre, rows, 10, "cdf5", "rows", striping)
    plain = costmodel.step_parts(replace(lustre, lock_s=0.0), rows, 10, "cdf5", "rows", striping)
    assert parts["write"] - plain["write"] == pytest.approx(10 * 3 * 1e-3)
    assert plain["write"] >= 10 * record / (2 * 1e8)  # 10 records over the 2 targets of their stripes


def test_interleaved_writers_take_mpiio_two_phase_write() -> None:
    """4 x 4 points, 2 levels, on one node (ROMIO: one aggregator, rank 0). Two column blocks interleave in the
    file: direct's collective write sends rank 1's 16 values to rank 0, which writes the record and sorts both
    ranks' 8 rows each; two bands of whole rows of a 2-D field do not interleave: each rank writes its own."""
    columns = block_job("columns", (4, 4), 2, 2, 1, 0)
    for mode in ("cdf5", "hdf5"):
        c, striping = costmodel.file_counts(ROUND, columns, costmodel.settle(ROUND, columns, "direct", mode), mode)
        assert striping is None
        assert list(c["messages_sent"]) == [0, 1] and list(c["messages_received"]) == [1, 0]
        assert list(c["bytes_sent"]) == [0, 64] and list(c["bytes_received"]) == [64, 0]
        assert list(c["bytes_kept"]) == [64, 0] and list(c["bytes_written"]) == [128, 0]
        assert list(c["requests"]) == [1, 0] and list(c["file_runs"]) == [1 + 16, 0]
        assert list(c["bytes_landed"]) == [0, 0]  # MPI-IO's buffers, not climio's
        write = costmodel.step_parts(ROUND, c, 1, mode, "direct")["write"]
        assert write == pytest.approx(16 * 1e-6 + 128 / 2e8)
        # no route: in cdf5 each rank packs a step's 3 records of its 64 bytes into one buffer, nothing landed
        step = sum(costmodel.step_parts(ROUND, c, 3, mode, "direct").values())
        buffers = 3 * 64 / 4e9 if mode == "cdf5" else 0.0
        assert costmodel.run_time(ROUND, c, 3, 1, mode, "direct") == pytest.approx(
            1e-2 + 3 * 1e-4 + buffers + step + 3 * 128 / 1e8)
    bands = block_job("bands", (4, 4), None, 1, 2, 0)
    c, _ = costmodel.file_counts(ROUND, bands, costmodel.settle(ROUND, bands, "direct", "cdf5"), "cdf5")
    assert not c["messages_sent"].any() and list(c["bytes_written"]) == [32, 32] and list(c["file_runs"]) == [1, 1]
    # rows in hdf5 on 2 x 2 blocks: climio brings each band to its first rank (0 and 2), then MPI-IO brings band
    # 2's 64 bytes to rank 0, which writes the record: the bands interleave (each spans both levels)
    square = block_job("square", (4, 4), 2, 2, 2, 0)
    rows = costmodel.settle(ROUND, square, "rows", "hdf5")
    own = step_counts(square, rows)
    c, _ = costmodel.file_counts(ROUND, square, rows, "hdf5")
    assert list(own["bytes_written"]) == [64, 0, 64, 0]
    assert list(c["bytes_received"] - own["bytes_received"]) == [64, 0, 0, 0]
    assert list(c["bytes_sent"] - own["bytes_sent"]) == [0, 0, 64, 0]
    assert list(c["bytes_written"]) == [128, 0, 0, 0] and list(c["bytes_landed"]) == [64, 0, 64, 0]
    assert list(c["file_runs"]) == [1 + 2 * 2, 0, 0, 0]  # each band one run a level (its rows are whole)
    # in cdf5 the band writers write their own runs: no second phase, unless they write through MPI-IO's
    # collective calls as PnetCDF's do
    rows = costmodel.settle(ROUND, square, "rows", "cdf5")
    assert costmodel.file_counts(ROUND, square, rows, "cdf5")[0]["bytes_written"].tolist() == [64, 0, 64, 0]
    assert costmodel.file_counts(ROUND, square, rows, "cdf5", collective=True)[0]["bytes_written"].tolist() == [
        128, 0, 0, 0]


def test_mpiio_pays_its_messages_and_collectives_in_each_call() -> None:
    """Two column blocks on one node: rank 1 sends its 16 values to MPI-IO's aggregator, rank 0, one message a
    collective write call, after the list of its runs (the counts hold the data's message once). In hdf5 each
    of a step's 3 records is a call of its own; climio's direct in cdf5 makes one a step (a part of PACK_BYTES);
    each call adds ROMIO's collectives (1 where its writers go through MPI-IO at all, 3 more where they
    interleave; parallel HDF5's first is in its measured record_collectives)."""
    columns = block_job("columns", (4, 4), 2, 2, 1, 0)
    for mode, calls, collectives in (("hdf5", 3, 3 + 3 * 2 + 3 * 3), ("cdf5", 1, 3 + 1 * (1 + 3))):
        c, _ = costmodel.file_counts(ROUND, columns, costmodel.settle(ROUND, columns, "direct", mode), mode)
        assert list(c["mpiio_messages"]) == [1, 1]
        alone = {**c, "mpiio_messages": np.zeros(2, np.int64)}  # as if the data's message were all
        parts = costmodel.step_parts(ROUND, c, 3, mode, "direct")
        once = costmodel.step_parts(ROUND, alone, 3, mode, "direct")
        assert parts["exchange"] - once["exchange"] == pytest.approx((2 * calls - 1) * 1e-6), mode
        assert parts["collectives"] == pytest.approx(collectives * 1e-5), mode  # log2 P = 1 on 2 ranks
    assert costmodel.collective_writes("cdf5", "direct", None, 3, np.array([PACK_BYTES // 2, 0])) == 2
    assert costmodel.collective_writes("cdf5", "rows", None, 3, np.array([64, 0])) == 0  # its own pwrites
    assert costmodel.collective_writes("cdf5", "rows", True, 3, np.array([64, 0])) == 3  # PnetCDF's: a variable
    assert costmodel.collective_writes("serial", "root", None, 3, np.array([64, 0])) == 0


def test_bench_scale_papers(tmp_path: Path) -> None:
    """Seed 003's figures against the model: each row is Eq. 1 of the predicted times of climio's counterparts on
    the edison site, beside the value the paper's text states; the fit finds the site's fitted cost a run."""
    from climio.bench import papers
    from climio.bench.model import DOMAINS, HALO

    result = climio("bench", "scale", "--papers", "--fit", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    fitted = float(result.stdout.split("fitted on CA: run_s ")[1].split()[0])
    edison = costmodel.find("edison")
    assert fitted == edison.run_s
    rows = json.loads((tmp_path / "papers.json").read_text())["rows"]
    assert [(r["domain"], r["grid"], r["paper"]) for r in rows][:2] == [("CA", "4x4", 40), ("CA", "16x16", -25)]
    assert len(rows) == len(papers.FIGURES)
    machine = replace(edison, run_s=fitted)
    for row, fig in zip(rows, papers.FIGURES):
        nx, ny, layers, species = DOMAINS[fig.domain]
        px, py = (int(n) for n in fig.grid.split("x"))
        job = block_job(fig.grid, (ny, nx), layers, px, py, HALO)
        count, size = papers.BEST_STRIPES[fig.domain]
        seconds = {}
        for name, (strategy, mode, collective) in papers.SCHEMES.items():  # no climio routes, no plans
            settled = costmodel.settle(machine, job, strategy, mode, stripe_count=count, stripe_size=size)
            c, striping = costmodel.file_counts(machine, job, settled, mode, stripe_count=count, stripe_size=size,
                                                collective=collective)
            seconds[name] = costmodel.run_time(machine, c, species, 3, mode, settled.name, 0.0, striping, collective)
        expected = 100 * (seconds[fig.slower] - seconds[fig.faster]) / seconds[fig.slower]
        assert row["model"] == pytest.approx(expected, rel=1e-9), row
        assert row["error"] == (None if fig.percent is None else pytest.approx(row["model"] - fig.percent))
        assert row["fitted_on"] == (fig.domain == "CA")
        assert f"| {fig.domain} | {fig.grid} | {fig.faster} vs {fig.slower} |" in result.stdout
