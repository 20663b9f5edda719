"""Every fault in one line, in the words of whoever reads it, checked word for word: bad input at 2 and 3 ranks
ends with one line and no rank aborting the job; a full disk is named as one in every mode; a corrupt record
count is a corrupt file; calendars are named as the file spells them; the Python API names its own arguments;
``rows`` and ``--ppc`` are refused where they cannot apply instead of being passed over."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import DATA, climio_argv, leftovers, small_tmpfs

from climio.core.mpi import mpiexec_command
from climio.errors import ClimioError

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import Batch, Preparers, Result  # noqa: E402

TINY = DATA / "cmip" / "tiny_daily_pr.nc"  # pr(time, lat, lon) on a 365_day calendar, 3 x 2 cells near 43N 218E
RECORDS = 0xFFFFFFFF  # the record count of a classic header that is read as "streaming", which netCDF-C does not do

# The command lines, each in a directory of its own, run in one table per rank count (helpers/climio_batch.py): a
# case that ended its launch with MPI_Abort would come back as ABORTED, so every test here also shows no rank aborts
prepare = Preparers()


@pytest.fixture(scope="module")
def full_disk() -> Iterator[Path | None]:
    """A 1 MiB tmpfs with no byte free (None where none can be mounted: the full-disk test is then skipped)."""
    try:
        with small_tmpfs("1m") as disk:
            free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
            subprocess.run(["fallocate", "-l", str(free), str(disk / "filler")], check=True)
            yield disk
    except pytest.skip.Exception:
        yield None


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, full_disk: Path | None) -> Batch:
    batch = Batch.prepared(tmp_path_factory.mktemp("runs"), prepare)
    if full_disk is not None:
        add_full_disk(batch, full_disk)
    return batch


def said(result: Result | subprocess.CompletedProcess[str], line: str, status: int = 2) -> None:
    """The run ended with ``status`` having printed ``line`` and nothing else on stderr (every rank's together: no
    second rank's line, no library's, no traceback)."""
    assert (result.returncode, result.stderr) == (status, line + "\n")


@prepare
def prepare_missing_inputs(b: Batch) -> None:
    folder = b.folder("missing")
    b.add("missing", ["subset", "-v", "pr", folder / "a.nc", folder / "b.nc", folder / "out.nc"], 2)


def test_missing_inputs_at_2_ranks(runs: Batch) -> None:
    folder = runs.folder("missing")
    said(runs.result("missing"), f"climio: error: input file '{folder / 'a.nc'}' does not exist")
    assert os.listdir(folder) == []


@prepare
def prepare_empty_box(b: Batch) -> None:
    b.add("box", ["subset", "-v", "pr", "-X", "0,1,0,1", TINY, b.folder("box") / "out.nc"], 3)


def test_empty_box_at_3_ranks(runs: Batch) -> None:
    said(runs.result("box"),
         f"climio: error: the box selects nothing: no 'lon' value of {TINY} lies in the box 0..1N, 0..1E")
    assert os.listdir(runs.folder("box")) == []


BENCH = ["bench", "model", "--domain", "20x12x3x4", "--grid", "2x1", "--steps", "1", "--reps", "1"]


@prepare
def prepare_bench_grid_mismatch(b: Batch) -> None:
    b.add("bench-driver", [*BENCH, "--out", b.folder("bench-driver") / "out"], 3)
    worker = b.folder("bench-worker")
    b.add("bench-worker", [*BENCH, "--out", worker / "out", "--rows-json", worker / "rows.json"], 3)


def test_bench_grid_mismatch_at_3_ranks(runs: Batch) -> None:
    """The driver under mpiexec, and its worker (which the driver starts on the grid's 2 ranks) on 3: every rank
    finds the mismatch before the rank past the grid builds a share it has not."""
    said(runs.result("bench-driver"),
         "climio: error: climio bench model starts its own mpiexec runs: run it as a plain process")
    said(runs.result("bench-worker"), "climio: error: the decomposition is for 2 ranks but the job has 3; run with "
                                      "mpiexec -n 2 or build it for 3 ranks")
    assert not (runs.folder("bench-worker") / "rows.json").exists()


def add_full_disk(b: Batch, disk: Path) -> None:
    for nranks, modes in ((None, ("serial", "hdf5", "cdf2", "cdf5")), (2, ("hdf5", "cdf5"))):
        for mode in modes:
            b.add(f"full-{mode}-{nranks}", ["gen", "cmip", disk / f"{mode}-{nranks}.nc", "--shape", "5,4,6",
                                            "--mode", mode], nranks)


@pytest.mark.parametrize("mode, nranks", [("serial", None), ("hdf5", None), ("cdf2", None), ("cdf5", None),
                                          ("hdf5", 2), ("cdf5", 2)])
def test_full_disk_in_every_mode(runs: Batch, full_disk: Path | None, mode: str, nranks: int | None) -> None:
    """Named as a full disk before the library defines the file (not 'NetCDF: HDF error', nor OMPIO's lines)."""
    if full_disk is None:
        pytest.skip("no tmpfs can be mounted here")
    out = full_disk / f"{mode}-{nranks}.nc"
    said(runs.result(f"full-{mode}-{nranks}"),
         f"climio: error: {out}: no space left on device (0 bytes free where 1048576 are needed for a new file's "
         f"header and metadata); free some space or write elsewhere", status=1)
    assert not out.exists() and leftovers(str(full_disk)) == []


@prepare
def prepare_corrupt_record_count(b: Batch) -> None:
    path = b.folder("records") / "bad.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 3)
        ds.createVariable("tas", "f4", ("time", "x"))[:] = np.ones((2, 3))  # the one record variable: 12 bytes each
    data = bytearray(path.read_bytes())
    data[4:8] = RECORDS.to_bytes(4, "big")  # numrecs, right after the magic
    path.write_bytes(bytes(data))
    for nranks in (None, 2):
        b.add(f"records-{nranks}", ["subset", path, b.folder(f"records-{nranks}") / "out.nc"], nranks)


@pytest.mark.parametrize("nranks", [None, 2])
def test_corrupt_record_count_is_a_corrupt_file(runs: Batch, nranks: int | None) -> None:
    """A CDF-2 header claiming 0xFFFFFFFF records: a corrupt or truncated file, not 32 GiB netCDF-C cannot
    allocate."""
    path = runs.folder("records") / "bad.nc"
    size = path.stat().st_size
    needed = size - 2 * 12 + RECORDS * 12  # the data begins 2 records before the end
    said(runs.result(f"records-{nranks}"),
         f"climio: error: input file '{path}' is truncated or corrupt: its header counts {RECORDS} records, which "
         f"need {needed} bytes but the file has {size}; copy or regenerate it")
    assert os.listdir(runs.folder(f"records-{nranks}")) == []


def time_file(path: Path, calendar: str, start: str) -> Path:
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        time = ds.createVariable("time", "f8", ("time",))
        time.units, time.calendar = f"days since {start}", calendar
        time[:] = [0.0, 1.0]
        ds.createVariable("tas", "f4", ("time",))[:] = [1.0, 2.0]
    return path


@prepare
def prepare_calendars(b: Batch) -> None:
    b.add("leap-day", ["subset", "-v", "pr", "-d", "time,1851-02-29", TINY, b.folder("leap-day") / "out.nc"])
    folder = b.folder("calendars")
    a, c = time_file(folder / "a.nc", "gregorian", "2000-01-01"), time_file(folder / "c.nc", "365_day", "2000-01-03")
    b.add("calendars", ["subset", a, c, b.folder("calendars-out") / "out.nc"], 2)


def test_calendars_named_as_the_files_spell_them(runs: Batch) -> None:
    """'365_day' and 'gregorian', as ncdump -h shows them, not the aliases 'noleap' and 'standard'."""
    said(runs.result("leap-day"),
         "climio: error: -d time,1851-02-29: '1851-02-29' is not a date of the '365_day' calendar")
    folder = runs.folder("calendars")
    said(runs.result("calendars"),  # at 2 ranks
         f"climio: error: --join time: calendars differ: 'time' is on calendar 'gregorian' in '{folder / 'a.nc'}' but "
         f"'365_day' in '{folder / 'c.nc'}'; files on different calendars cannot be joined")


def text_file(path: Path) -> Path:
    """A netCDF-4 file with a float, a char and a string variable."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("x", 3)
        ds.createDimension("n", 2)
        ds.createVariable("tas", "f4", ("x",))[:] = [1.0, 2.0, 3.0]
        ds.createVariable("label", "S1", ("x", "n"))[:] = netCDF4.stringtochar(np.array(["ab", "cd", "ef"], "S2"))
        ds.createVariable("name", str, ("x",))[:] = np.array(["a", "bb", "c"], object)
    return path


PPC = [("label", "char", None), ("label", "char", 2), ("name", "string", None)]


@prepare
def prepare_ppc_on_text(b: Batch) -> None:
    source = text_file(b.folder("text") / "in.nc")
    for name, _, nranks in PPC:
        case = f"ppc-{name}-{nranks}"
        b.add(case, ["subset", "--mode", "hdf5", "--ppc", f"{name}=3", source, b.folder(case) / "out.nc"], nranks)


@pytest.mark.parametrize("name, kind, nranks", PPC)
def test_ppc_on_a_text_variable_is_refused(runs: Batch, name: str, kind: str, nranks: int | None) -> None:
    case = f"ppc-{name}-{nranks}"
    said(runs.result(case), f"climio: error: variable '{name}' is {kind}: quantization applies to float32 and "
                            f"float64 only (leave it out of --ppc)")
    assert os.listdir(runs.folder(case)) == []


MODEL = """
import os
import sys

from climio.errors import ClimioError
from climio.model import decomposition as dec
from climio.model.output import Field, ModelOutput
from climio.serve import client

servers = client.connect()
comm = servers.comm
blocks = dec.blocks((4, 6), comm.Get_size(), 1, comm.Get_rank())
points = dec.round_robin((4, 6), comm.Get_size(), comm.Get_rank())
for how, output in (("served", lambda: client.ServedOutput(sys.argv[1] + "/s.nc", blocks, [client.ServedField("T")],
                                                           servers, strategy="rows")),
                    ("attached", lambda: ModelOutput(sys.argv[1] + "/a.nc", points, [Field("T")], comm,
                                                     strategy="rows"))):
    try:
        output().close()
    except ClimioError as err:
        os.write(1, f"{how} {comm.Get_rank()}: {err}\\n".encode())  # one write: the ranks' lines never interleave
servers.finalize()
"""
ROWS = "I/O strategy 'rows' writes whole rows of a process grid of blocks, but "
POINTS = ("the ranks that write hold lists of points (a PIO map, mesh cells, round-robin columns; I/O servers always "
          "do, whatever the model's decomposition): use agg, root or direct")


def test_rows_through_the_servers_and_attached_in_the_users_words(tmp_path: Path) -> None:
    """A model of 2 ranks on a 2 x 1 process grid asks the servers for rows (the servers hold points, whatever the
    model's blocks), then writes round-robin columns itself with rows: each rank gets the same line."""
    argv, env = mpiexec_command(2, [sys.executable, "-c", MODEL, str(tmp_path)])
    argv += [":", "-n", "1", *climio_argv("serve")]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert sorted(result.stdout.splitlines()) == [f"{how} {rank}: {ROWS}{POINTS}" for how in ("attached", "served")
                                                  for rank in (0, 1)]
    assert os.listdir(tmp_path) == []


def test_rows_on_blocks_that_are_no_process_grid() -> None:
    from mpi4py import MPI

    from climio.model import decomposition as dec
    from climio.model.output import Field, ModelOutput

    faces = dec.cubed_sphere(4, 1, 0)
    with pytest.raises(ClimioError) as caught:
        ModelOutput("never.nc", faces, [Field("T")], MPI.COMM_SELF, strategy="cols")
    assert str(caught.value) == ("I/O strategy 'cols' writes whole columns of a process grid of blocks, but these "
                                 "blocks are not climio's split of one (land-eliminated blocks, cubed-sphere faces, "
                                 "boxes given one by one): use agg, root or direct")


def test_blocks_that_overlap_are_refused() -> None:
    """Boxes given one by one must not share a point (each point is written by its one owner): every rank finds
    the same first pair, so every rank refuses alike."""
    from climio.core.decomp import Hyperslab
    from climio.model.decomposition import BlockDecomposition

    boxes = (Hyperslab((0, 0), (2, 3)), Hyperslab((0, 3), (2, 3)), Hyperslab((2, 0), (2, 6)),
             Hyperslab((0, 0), (0, 0)), Hyperslab((3, 5), (1, 1)))
    with pytest.raises(ClimioError) as caught:
        BlockDecomposition((4, 6), 5, 1, boxes)
    assert str(caught.value) == ("the boxes of ranks 2 ((2, 0) + (2, 6)) and 4 ((3, 5) + (1, 1)) overlap: each grid "
                                 "point needs one owner")
    assert BlockDecomposition((4, 6), 4, 3, boxes[:4]).owned == 0  # an empty box overlaps nothing


def api_error(call: object) -> str:
    """The message of the ClimioError that ``call()`` raises."""
    with pytest.raises(ClimioError) as caught:
        call()  # type: ignore[operator]
    return str(caught.value)


def test_python_api_errors_name_its_own_arguments(tmp_path: Path) -> None:
    """fit_gev/fit_pot, ModelOutput and the .climio accessor say what their caller passed (max_missing=,
    overwrite=True, a Field's quantize=, ppc=, a range), never the command's flags."""
    import pandas as pd
    import xarray as xr
    from mpi4py import MPI

    import climio.xr  # noqa: F401  (the .climio accessor)
    from climio.eva import fit_gev, fit_pot
    from climio.model import decomposition as dec
    from climio.model.output import Field, ModelOutput

    daily = xr.DataArray(np.linspace(1.0, 2.0, 4000), dims="time", name="pr", attrs={"units": "mm"},
                         coords={"time": pd.date_range("2000-01-01", periods=4000)})
    assert api_error(lambda: fit_gev(daily, max_missing=1.0)) == "max_missing must be in [0, 1), got 1.0"
    assert api_error(lambda: fit_pot(daily, ci=0.9, ci_method="bogus")) == \
        "ci_method 'bogus': choose one of normal, profile"
    old = tmp_path / "old.nc"
    old.write_bytes(b"old")
    exists = f"output '{old}' exists: pass overwrite=True to replace it"
    grid = dec.blocks((4, 6), 1, 1, 0)
    assert api_error(lambda: ModelOutput(str(old), grid, [Field("T")], MPI.COMM_SELF)) == exists
    integers = [Field("n", dtype="i4", quantize=("BitGroom", 2))]
    assert api_error(lambda: ModelOutput(str(tmp_path / "n.nc"), grid, integers, MPI.COMM_SELF, mode="hdf5")) == \
        "variable 'n' is int32: quantization applies to float32 and float64 only (leave it out of quantize)"
    text = xr.open_dataset(text_file(tmp_path / "text.nc"), engine="climio").load()
    assert api_error(lambda: text.climio.to_netcdf(old)) == exists
    assert api_error(lambda: text.climio.to_netcdf(tmp_path / "q.nc", ppc=["label=3"])) == \
        "variable 'label' is char: quantization applies to float32 and float64 only (leave it out of ppc)"
    tiny = xr.open_dataset(TINY, engine="climio")
    assert api_error(lambda: tiny.climio.subset("time,1851-02-29")) == \
        "range time,1851-02-29: '1851-02-29' is not a date of the '365_day' calendar"
    assert old.read_bytes() == b"old" and sorted(os.listdir(tmp_path)) == ["old.nc", "text.nc"]


def test_a_reader_that_goes_away_ends_climio_quietly() -> None:
    """``climio ... | head -1``: the reader has closed the pipe when climio writes (here before its first line,
    so that the test does not race the reader's close against climio's next write); climio ends with status 1
    and says nothing (a closed pipe is no bug of climio's)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(climio_argv("bench", "scale", "--papers"), env=dict(os.environ), stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode == 1 and result.stderr == "", result.stderr
