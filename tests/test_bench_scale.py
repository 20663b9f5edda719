"""``climio bench scale``'s counts on cases worked out by hand (tests/mpi holds them equal to real routes' at 1-6
ranks), its growth exponents, and the command end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from conftest import climio, one_error_line

from climio.bench import scale
from climio.model.counts import Job, filled_nodes, step_counts
from climio.model.strategy import Strategy


def settled(job: Job, text: str, cores: int, **options: int) -> Strategy:
    return Strategy.settle(text, "cdf5", filled_nodes(job.nranks, cores), job.share(0), **options)


def test_root_on_ca_2x2_gathers_the_other_three_blocks() -> None:
    """CA (89 x 134 x 35) on 2x2: blocks of 67 rows x 45 (44) columns; rank 0 hears from 3 ranks the record
    less its own block, and writes the record in one request of one run."""
    job = scale.job("CA", 4)
    counts = step_counts(job, settled(job, "root", 4))
    block = [35 * 67 * 45, 35 * 67 * 44, 35 * 67 * 45, 35 * 67 * 44]
    assert counts["messages_received"].tolist() == [3, 0, 0, 0]
    assert counts["messages_sent"].tolist() == [0, 1, 1, 1]
    assert counts["bytes_received"].tolist() == [4 * (35 * 134 * 89 - block[0]), 0, 0, 0]
    assert counts["bytes_sent"].tolist() == [0] + [4 * b for b in block[1:]]
    assert counts["bytes_kept"].tolist() == [4 * block[0], 0, 0, 0]
    assert counts["bytes_written"].tolist() == [4 * 35 * 134 * 89, 0, 0, 0]
    assert counts["requests"].tolist() == [1, 0, 0, 0] and counts["file_runs"].tolist() == [1, 0, 0, 0]


def test_direct_moves_nothing_and_writes_each_block_row_by_row() -> None:
    job = scale.job("CA", 4)
    counts = step_counts(job, settled(job, "direct", 4))
    assert not counts["messages_sent"].any() and not counts["bytes_kept"].any()
    assert counts["file_runs"].tolist() == [35 * 67] * 4  # a block's rows are runs of the record
    assert counts["requests"].tolist() == [1] * 4


def test_agg_gives_a_mesh_record_to_every_node() -> None:
    """A 2-D mesh field (one cell axis) on 1,024 ranks, 128 a node: 8 aggregators, one eighth of the cells each."""
    job = scale.job("mesh", 1024)
    counts = step_counts(job, settled(job, "agg", 128))
    writers = np.flatnonzero(counts["bytes_written"])
    assert writers.tolist() == [128 * k for k in range(8)]
    shares = counts["bytes_written"][writers] // 4
    assert shares.sum() == scale.MESH_CELLS and shares.max() - shares.min() <= 1


def test_stripe_writers_take_stripes_in_turn() -> None:
    """CONUS (19.2 MB a record: 10 stripes of 2 MiB, the last part full) over 11 writers: writer k takes stripe k;
    the eleventh none."""
    job = scale.job("CONUS", 16)
    counts = step_counts(job, settled(job, "stripe", 16, stripe_count=11, stripe_size=2 << 20))
    record = 4 * 35 * 299 * 459
    stripes = -(-record // (2 << 20))
    assert stripes == 10
    expected = [min(2 << 20, record - k * (2 << 20)) for k in range(stripes)] + [0] * 6
    assert counts["bytes_written"].tolist() == expected


def test_growth_exponents() -> None:
    assert abs(scale.growth([4, 16, 64], [3.0, 12.0, 48.0]) - 1.0) < 1e-12
    assert abs(scale.growth([4, 16, 64], [5.0, 5.0, 5.0])) < 1e-12
    assert scale.growth([4, 16], [0, 7]) is None


def test_bench_scale_command(tmp_path: Path) -> None:
    result = climio("bench", "scale", "--decompositions", "CA,mesh", "--strategies", "root,agg", "--ranks", "4,16",
                    "--weak", "--cores-per-node", "4", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "| CA 4x4 | root | 16 | 1 | 1 | 15 |" in result.stdout
    saved = json.loads((tmp_path / "scale.json").read_text())
    assert {(r["kind"], r["strategy"], r["ranks"]) for r in saved["rows"]} == \
        {(k, s, n) for k in ("CA", "mesh") for s in ("root", "agg") for n in (4, 16)}
    for args, says in ((["--decompositions", "CA,moon"], "--decompositions: unknown 'moon'"),
                       (["--strategies", "agg:x"], "--strategies: I/O strategy 'agg:x'")):
        bad = climio("bench", "scale", "--ranks", "4", *args)
        assert bad.returncode == 2 and says in one_error_line(bad)
