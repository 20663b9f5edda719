"""climio serve: a model's output sent to I/O server ranks is the file ModelOutput writes itself.

Two launches, each running every case of tests/mpi_serve/client.py: 2 model ranks and 1 server as MPMD app
contexts (``mpiexec -n 2 python client.py : -n 1 climio serve``), and 4 model ranks with 2 servers in one app
context whose last ranks serve (``CLIMIO_SERVERS=2``, as ``srun --multi-prog`` starts them). The same launches
read served files back through the servers (ServedInput). Each launch has a timeout: a hang fails.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import netCDF4
import numpy as np
import pytest

from climio.core.mpi import mpiexec_command
from conftest import climio_argv, leftovers

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

import ncdiff  # noqa: E402

SCRIPT = Path(__file__).resolve().parent / "mpi_serve" / "client.py"
_spec = importlib.util.spec_from_file_location("serve_client", SCRIPT)
model = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(model)  # type: ignore[union-attr]

class FakeComm(NamedTuple):
    """What decomposition() asks of a communicator."""

    size: int
    rank: int

    def Get_size(self) -> int:  # noqa: N802
        return self.size

    def Get_rank(self) -> int:  # noqa: N802
        return self.rank


class Launch(NamedTuple):
    outdir: Path
    nmodel: int
    nservers: int


OLD = b"an older file at the path: it must survive a failed write\n"


def launch(outdir: Path, nmodel: int, nservers: int, layout: str, program: list[str] | None = None,
           timeout: str = "60") -> subprocess.CompletedProcess[str]:
    """The test model (or ``program``) on ``nmodel`` ranks and ``nservers`` servers, as MPMD app contexts or
    (``layout`` env) the last ranks of one."""
    program = program or [sys.executable, str(SCRIPT), str(outdir)]
    if layout == "mpmd":
        argv, env = mpiexec_command(nmodel, program)
        argv += [":", "-n", str(nservers), *climio_argv("serve", "--trace", str(outdir / "trace.json"))]
    else:
        argv, env = mpiexec_command(nmodel + nservers, program)
        env["CLIMIO_SERVERS"] = str(nservers)
    env["CLIMIO_SERVE_TIMEOUT"] = timeout
    try:
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"timed out (hang?): {' '.join(argv)}\n{err.stderr}")


@pytest.fixture(scope="module", params=[(2, 1, "mpmd"), (4, 2, "env")], ids=["2+1-mpmd", "4+2-CLIMIO_SERVERS"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Launch:
    nmodel, nservers, layout = request.param
    outdir = tmp_path_factory.mktemp(f"serve{nmodel}")
    (outdir / "old.nc").write_bytes(OLD)
    result = launch(outdir, nmodel, nservers, layout)
    assert result.returncode == 0, result.stderr[-4000:]
    return Launch(outdir, nmodel, nservers)


@pytest.mark.parametrize("case", list(model.CASES))
def test_served_file_is_the_direct_one(served: Launch, case: str) -> None:
    outdir, nmodel = served.outdir, served.nmodel
    differences = ncdiff.diff(outdir / f"served-{case}.nc", outdir / f"direct-{case}.nc")
    assert not differences, ncdiff.report(case, differences)
    with netCDF4.Dataset(outdir / f"served-{case}.nc") as ds:
        assert ds.data_model == netCDF4.Dataset(outdir / f"direct-{case}.nc").data_model
        assert ds.history.splitlines()[1] == f"climio serve: sent by {nmodel} model rank(s)", ds.history
        if case == "deflate":
            assert ds["T"].filters()["zlib"] and ds["T"].filters()["complevel"] == 4


@pytest.mark.parametrize("case", model.BOTH)
def test_files_written_at_once_are_the_direct_ones(served: Launch, case: str) -> None:
    """Two files of two decompositions open at once, their calls interleaved."""
    outdir = served.outdir
    differences = ncdiff.diff(outdir / f"served-both-{case}.nc", outdir / f"direct-{case}.nc")
    assert not differences, ncdiff.report(case, differences)


def test_client_buffer_stays_bounded(served: Launch) -> None:
    """The data in flight never passed the buffer, or one message bigger than it."""
    outdir, nmodel = served.outdir, served.nmodel
    for rank in range(nmodel):
        peak, bound = (int(v) for v in (outdir / f"peak.rank{rank}.txt").read_text().split())
        assert 0 < peak <= bound, (rank, peak, bound)


def test_online_reductions_are_numpys(served: Launch) -> None:
    """A mean over 24 steps is numpy's float64 mean cast to the variable's type, bit for bit; so are min, max,
    sum and the instant (last) step; time is the middle of the steps' times, with bounds."""
    outdir = served.outdir
    steps = np.stack([model.reduce_step(s) for s in range(model.REDUCE_STEPS)])
    periods = steps.reshape(-1, model.REDUCE_EVERY, model.NY, model.NX)
    expected = {"mean": periods.mean(axis=1), "min": periods.min(axis=1), "max": periods.max(axis=1),
                "sum": periods.sum(axis=1), "instant": periods[:, -1]}
    methods = {"mean": "area: mean time: mean", "min": "time: minimum", "max": "time: maximum",
               "sum": "time: sum", "instant": "time: point"}
    with netCDF4.Dataset(outdir / "reduce.nc") as ds:
        ds.set_auto_mask(False)
        for op, want in expected.items():
            got = ds[op][:]
            assert got.dtype == np.dtype("f8" if op == "sum" else "f4")
            assert np.array_equal(got, want.astype(got.dtype)), op
            assert ds[op].cell_methods == methods[op]
        assert ds["time"].bounds == "time_bnds"
        first = np.arange(0, model.REDUCE_STEPS, model.REDUCE_EVERY, dtype="f8")
        last = first + model.REDUCE_EVERY - 1
        assert np.array_equal(ds["time"][:], (first + last) / 2)
        assert np.array_equal(ds["time_bnds"][:], np.stack([first, last], axis=1))


NEEDLES = {"nodir": "missing", "refused": "compression", "shape": "on model rank 1", "local": "reduce=('avg', 2)"}


@pytest.mark.parametrize("case", list(model.FAULTS))
def test_server_fault_reaches_every_rank_once(served: Launch, case: str) -> None:
    """An unwritable path, a compressed field in a classic file, a local array too long on one rank, a reduction
    refused before anything is sent: one error, the same on every model rank, raised by the close at the latest;
    nothing published, the older file intact, no temporary left."""
    outdir, nmodel = served.outdir, served.nmodel
    lines = [(outdir / f"{case}.rank{r}.txt").read_text().strip().split("\t") for r in range(nmodel)]
    errors = {error for _, error in lines}
    assert len(errors) == 1, lines
    error = errors.pop()
    assert error.startswith(("ClimioError: ", "IOFault: ")) and "\n" not in error, error
    assert NEEDLES[case] in error, error
    assert all(call in ("create", "write 0", "write 1", "close") for call, _ in lines)
    assert not (outdir / "missing").exists()
    assert (outdir / "old.nc").read_bytes() == OLD
    assert not leftovers(str(outdir))


@pytest.mark.parametrize("case", list(model.READS))
def test_a_served_file_read_through_the_servers_is_what_was_written(served: Launch, case: str) -> None:
    """Every field of a file written through the servers, read back through them (ServedInput): the values written,
    exactly, and ModelInput's local arrays (a block decomposition's halo with the fill value), also into float64 and
    int16 arrays."""
    for rank in range(served.nmodel):
        assert (served.outdir / f"read-{case}.rank{rank}.txt").read_text().strip() == "ok", rank


READ_NEEDLES = {"missing": "restart.nc' does not exist",
                "strategy": "served-cdf5.nc: read strategy 'rows': choose one of root, direct, agg, agg:N, auto",
                "float-into-int": "variable 'ps' is float64: read it into a float array, not int32 (climio does not "
                                  "round)",
                "shape": "variable 'ps': local array of {n} elements on model rank 1, expected {m} (1 level(s) x {m} "
                         "points) or {h} (with the halo: {h} points per level)",
                "varid": "served-cdf5.nc: no variable id 99",
                "failed-id": "no open file with id"}


@pytest.mark.parametrize("case", model.READ_FAULTS)
def test_a_refused_read_is_one_line_on_every_rank(served: Launch, case: str) -> None:
    """A missing file, a write strategy, a float into an int array, one rank's array too long, a bad varid, a look-up in a file the
    servers failed (never dropped: the client waits for it): the same one-line error on every model rank; after a
    refused read the file stays open and the next read works."""
    lines = {(served.outdir / f"read-{case}.rank{r}.txt").read_text() for r in range(served.nmodel)}
    assert len(lines) == 1, lines
    line = lines.pop().rstrip("\n")
    needle = READ_NEEDLES[case]
    if case == "shape":  # rank 1's local array of ps with its halo, and one element more
        d = model.decomposition("blocks", FakeComm(served.nmodel, 1))
        halo = math.prod(d.local_shape())
        needle = needle.format(n=halo + 1, m=d.owned, h=halo)
    assert line.startswith("ClimioError: ") and "\n" not in line and needle in line, line
    assert "the next read was wrong" not in line


def test_a_communicator_that_holds_servers_is_refused(served: Launch) -> None:
    for rank in range(served.nmodel):
        text = (served.outdir / f"world.rank{rank}.txt").read_text()
        assert text.startswith("the model's communicator holds I/O server ranks") and "model_communicator()" in text


def test_servers_trace_their_phases(served: Launch) -> None:
    report = json.loads((served.outdir / "trace.json").read_text())
    assert report["nranks"] == served.nservers and {"serve:receive", "serve:reduce", "write"} <= set(report["summary"])


def test_servers_without_a_model_end_with_one_line(tmp_path: Path) -> None:
    """A model that never connects: the servers give up after CLIMIO_SERVE_TIMEOUT, and the job ends."""
    idle = [sys.executable, "-c", "import time; from mpi4py import MPI; time.sleep(2)"]
    result = launch(tmp_path, 1, 1, "mpmd", idle, timeout="0.5")
    assert result.returncode != 0
    assert "climio: error: climio serve: no model connected within 0.5 s (CLIMIO_SERVE_TIMEOUT)" in result.stderr


def test_model_ranks_that_call_differently_end_the_job(tmp_path: Path) -> None:
    """Rank 1 writes another record than rank 0: the servers cannot pair the calls, and end the job with one line."""
    code = ("import numpy as np; from climio.serve import client; from climio.model import decomposition as dec; "
            "from climio.model.output import Field; s = client.connect(); r = s.comm.Get_rank(); "
            "d = dec.round_robin((10,), 2, r); "
            f"out = client.ServedOutput('{tmp_path / 'x.nc'}', d, [Field('a')], s); "
            "out.write(r, {'a': np.ones(d.local_shape())}, 0.0); out.close()")
    result = launch(tmp_path, 2, 1, "mpmd", [sys.executable, "-c", code])
    assert result.returncode != 0
    assert "climio serve: the model's ranks made different calls" in result.stderr, result.stderr
    assert not (tmp_path / "x.nc").exists() and not leftovers(str(tmp_path))


def test_a_wait_for_the_servers_ends_with_an_error_naming_them() -> None:
    """MPI's own waits cannot time out: the client polls, and gives up after its timeout."""
    from climio.errors import IOFault
    from climio.serve.client import Servers

    servers = object.__new__(Servers)
    servers.timeout, servers.world_ranks = 0.05, range(4, 6)
    servers.progress = lambda: None  # type: ignore[method-assign]
    with pytest.raises(IOFault, match=r"I/O servers \(world ranks 4-5\) did not take the close of x.nc within 0.05 s"):
        servers.wait(lambda: False, "the close of x.nc")


def test_server_ranks_come_from_the_launch_alone() -> None:
    """The last app context (Open MPI's sizes per app context), or the last CLIMIO_SERVERS ranks; else a line
    that says how to start servers."""
    from climio.errors import ClimioError
    from climio.serve.connect import server_ranks

    assert server_ranks(5, 1, {"OMPI_APP_CTX_NUM_PROCS": "4 1"}) == range(4, 5)
    assert server_ranks(7, 2, {"OMPI_APP_CTX_NUM_PROCS": "2 3 2"}) == range(5, 7)
    assert server_ranks(6, 0, {"CLIMIO_SERVERS": "2", "OMPI_APP_CTX_NUM_PROCS": "6"}) == range(4, 6)
    for environ in ({"OMPI_APP_CTX_NUM_PROCS": "4"}, {"CLIMIO_SERVERS": "4"}, {"CLIMIO_SERVERS": "x"}, {}):
        with pytest.raises(ClimioError, match="CLIMIO_SERVERS"):
            server_ranks(4, 0, environ)


def test_a_message_is_a_header_its_names_and_typed_buffers() -> None:
    """What a C client sends: 8 int64, the NUL-ended names, then buffers whose types and lengths the header gives."""
    from climio.errors import ClimioError
    from climio.model import definition as rules
    from climio.serve import protocol as wire

    header, text = wire.encode(wire.Kind.WRITE, 3, [1, 0, 5, 12])
    assert header.dtype == np.int64 and header.tolist() == [9, 3, 1, 0, 5, 12, 0, 0] and text == b""
    assert wire.payload_types(header) == [(np.dtype("f4"), 12)]
    header, text = wire.encode(wire.Kind.CREATE, 4, [1, rules.NOCLOBBER], ["out.nc", "cdf5", "agg:2"])
    assert header[7] == len(text) and wire.decode_names(text) == ["out.nc", "cdf5", "agg:2"]
    assert wire.payload_types(header) == []
    header, _ = wire.encode(wire.Kind.DECOMP, 1, [2, 50])
    assert wire.payload_types(header) == [(np.dtype("i8"), 2), (np.dtype("i8"), 50)]
    header, text = wire.encode(wire.Kind.READ, 5, [2, rules.NOFRAME, 6, 36, 64])
    assert header.tolist() == [16, 5, 2, -1, 6, 36, 64, 0] and wire.payload_types(header) == []
    assert (wire.TAG_ANSWER, wire.TAG_ANSWER_TEXT, wire.TAG_ANSWER_DATA) == (7307, 7308, 7309)
    # a packet: messages back to back, text and buffers padded to 8 bytes, as a C client lays them out
    write, _ = wire.encode(wire.Kind.WRITE, 3, [1, 0, 5, 3])
    create, names = wire.encode(wire.Kind.CREATE, 4, [1, rules.NOCLOBBER], ["out.nc", "cdf5", "agg:2"])
    values = np.array([1.5, -2.0, 3.25], np.float32)
    packet = np.concatenate([wire.pack(write, b"", [values]), wire.pack(create, names, [])])
    assert packet.size == 64 + 16 + 64 + 24 and packet[64 + 12:64 + 16].tolist() == [0, 0, 0, 0]
    first, second = wire.unpack(packet)
    assert first.kind == wire.Kind.WRITE and first.data[0].tolist() == [1.5, -2.0, 3.25]
    assert second.names == ["out.nc", "cdf5", "agg:2"] and second.data == []
    with pytest.raises(ClimioError, match="ends inside a message"):
        wire.unpack(packet[:-8])
    assert [int(k) for k in wire.SYNC] == [14, 15, 16]
