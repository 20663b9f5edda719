"""The storage layer on several ranks: every mode, 2-D process grids with halos, uneven and empty blocks."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import assert_all, listing
from mpi4py import MPI

from climio.core import ncio
from climio.core.decomp import Decomposition, Hyperslab, process_grid
from climio.errors import ClimioError

MODES = ["serial", "hdf5", "cdf2", "cdf5"]
NT, NZ, NY, NX = 3, 4, 7, 9  # uneven for every rank count


def global_field(step: int) -> np.ndarray:
    return (np.arange(NZ * NY * NX, dtype="f8").reshape(NZ, NY, NX) * 0.5 + 1000 * step).astype("f4")


def surface(step: int) -> np.ndarray:
    return np.arange(NY * NX, dtype="i4").reshape(NY, NX) * 3 - step


def model_schema() -> ncio.Schema:
    return ncio.Schema(
        {"time": None, "z": NZ, "y": NY, "x": NX},
        [ncio.Variable("time", "f8", ("time",), {"units": "hours since 2000-01-01"}),
         ncio.Variable("z", "f8", ("z",), {"positive": "up"}),
         ncio.Variable("temp", "f4", ("time", "z", "y", "x"), {"units": "K", "_FillValue": -1.0}),
         ncio.Variable("mask", "i4", ("time", "y", "x"), {"flag_values": [0, 1]})],
        {"title": "climio store test"})


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_2d_grid_with_halos(comm: MPI.Comm, shared_dir: str, mode: str) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    px, py = process_grid(size, NY, NX)
    d3 = Decomposition.block2d((NZ, NY, NX), px, py, halo=2)
    d2 = Decomposition.block2d((NY, NX), px, py, halo=2)
    d3.check_comm_size(size)
    own3, own2 = d3.owned(rank), d2.owned(rank)
    path = os.path.join(shared_dir, f"model-{mode}.nc")
    with ncio.create(path, model_schema(), mode, comm) as ds:
        for step in range(NT):
            local3 = np.full(d3.local_shape(rank), -7.0, "f4")  # halo'd model arrays, halo filled with junk
            local3[d3.interior(rank)] = global_field(step)[own3.slices]
            local2 = np.full(d2.local_shape(rank), -7, "i4")
            local2[d2.interior(rank)] = surface(step)[own2.slices]
            ds.write_many([
                ("time", np.array([6.0 * step]) if rank == 0 else None, Hyperslab((step,), (1 if rank == 0 else 0,))),
                ("z", np.arange(NZ, dtype="f8"), None),
                ("temp", d3.owned_view(rank, local3)[None], Hyperslab((step, *own3.start), (1, *own3.count))),
                ("mask", d2.owned_view(rank, local2)[None], Hyperslab((step, *own2.start), (1, *own2.count))),
            ])
    assert_all(comm, listing(shared_dir) == [f"model-{mode}.nc"], "temporary file renamed into place")
    for read in ("parallel", "root"):
        with ncio.open(path, comm, read=read) as ds:
            assert_all(comm, ds.records == NT and ds.shape("temp") == (NT, NZ, NY, NX))
            own_back = ds.read("temp", Hyperslab((1, *own3.start), (1, *own3.count)))
            assert_all(comm, np.array_equal(own_back[0], global_field(1)[own3.slices]), f"own block, read={read}")
            every = ds.read_every("temp", Hyperslab((0, *own3.start), (NT, *own3.count)), 2)
            assert_all(comm, np.array_equal(every, np.stack([global_field(s)[own3.slices] for s in (0, 2)])),
                       f"every other step of the own block, read={read}")
            whole = ds.read("mask")
            assert_all(comm, np.array_equal(whole, np.stack([surface(s) for s in range(NT)])), "whole variable")
            # the file's own bytes through MPI-IO: three record variables, so records are padded and interleaved
            stored = ds.read("mask", Hyperslab((1, *own2.start), (2, *own2.count)), as_stored=True)
            stored_every = ds.read_every("temp", Hyperslab((0, *own3.start), (NT, *own3.count)), 2, as_stored=True)
            big_endian = read == "parallel" and mode != "hdf5"  # classic files (serial mode writes CDF-2)
            assert_all(comm, stored.dtype == np.dtype(">i4" if big_endian else "i4")
                       and stored_every.dtype == np.dtype(">f4" if big_endian else "f4"), f"stored order, read={read}")
            assert_all(comm, np.array_equal(stored, whole[1:, own2.slices[0], own2.slices[1]])
                       and np.array_equal(stored_every, every), f"stored values, read={read}")
            assert_all(comm, np.array_equal(ds.read("time"), [0.0, 6.0, 12.0]) and ds.schema.attrs["title"]
                       == "climio store test", "coordinates and attributes")


def round_trip_rows(comm: MPI.Comm, path: str, mode: str, rows: int, dtype: str) -> None:
    """Each rank writes its block of rows of a (rows, 5) variable; every rank reads back its block and the
    whole variable, in parallel and through rank 0."""
    rank = comm.Get_rank()
    d = Decomposition.block1d((rows, 5), comm.Get_size())
    expected = np.arange(rows * 5, dtype=dtype).reshape(rows, 5)
    schema = ncio.Schema({"y": rows, "x": 5}, [ncio.Variable("v", dtype, ("y", "x"))])
    with ncio.create(path, schema, mode, comm) as ds:
        ds.write("v", expected[d.owned(rank).slices], d.owned(rank))
    for read in ("parallel", "root"):
        with ncio.open(path, comm, read=read) as ds:
            assert_all(comm, np.array_equal(ds.read("v", d.owned(rank)), expected[d.owned(rank).slices]), read)
            assert_all(comm, np.array_equal(ds.read("v"), expected), read)
            for step in (1, 2, 3):  # a strided sample of rows: every step-th of the rank's own, then of all
                mine = ds.read_every("v", d.owned(rank), step)
                assert_all(comm, np.array_equal(mine, expected[d.owned(rank).slices][::step]), f"{read} {step}")
                assert_all(comm, np.array_equal(ds.read_every("v", Hyperslab.whole((rows, 5)), step),
                                                expected[::step]), f"{read} every {step}")
                stored = ds.read_every("v", d.owned(rank), step, as_stored=True)
                assert_all(comm, np.array_equal(stored, expected[d.owned(rank).slices][::step]),
                           f"{read} every {step} as stored")


@pytest.mark.parametrize("mode", MODES)
def test_ranks_with_empty_blocks_still_take_part(comm: MPI.Comm, shared_dir: str, mode: str) -> None:
    # 2 rows: at 3 and 4 ranks some ranks own nothing, yet must join every collective call
    round_trip_rows(comm, os.path.join(shared_dir, f"empty-{mode}.nc"), mode, rows=2, dtype="f8")


@pytest.mark.parametrize("mode", MODES)
def test_write_after_close_and_write_to_reader_are_errors(comm: MPI.Comm, shared_dir: str, mode: str) -> None:
    schema = ncio.Schema({"x": 2}, [ncio.Variable("v", "f4", ("x",))])
    path = os.path.join(shared_dir, f"closed-{mode}.nc")
    ds = ncio.create(path, schema, mode, comm)
    ds.write("v", np.ones(2, "f4"))
    ds.close()
    with pytest.raises(ClimioError, match="closed: cannot write after close"):
        ds.write("v", np.ones(2, "f4"))
    with ncio.open(path, comm) as reader:
        with pytest.raises(ClimioError, match="opened for reading"):
            reader.write("v", np.ones(2, "f4"))


@pytest.mark.parametrize("mode", MODES)
def test_hyperslab_and_type_errors(comm: MPI.Comm, shared_dir: str, mode: str) -> None:
    schema = ncio.Schema({"x": 4}, [ncio.Variable("v", "i2", ("x",))])
    path = os.path.join(shared_dir, f"bad-{mode}.nc")
    with ncio.create(path, schema, mode, comm) as ds:
        with pytest.raises(ClimioError, match="outside dimension 'x' of length 4"):
            ds.write("v", np.ones(3, "i2"), Hyperslab((2,), (3,)))
        with pytest.raises(ClimioError, match=r"shape \(2,\).*count \(3,\)"):
            ds.write("v", np.ones(2, "i2"), Hyperslab((0,), (3,)))
        with pytest.raises(ClimioError, match="would be altered"):  # every rank passes the same bad data
            ds.write("v", np.array([1, 2, 3, 70000]), Hyperslab((0,), (4,)))
        with pytest.raises(ClimioError, match="no variable 'w'"):
            ds.write("w", np.ones(4))
        ds.write("v", np.array([1, 2, 3, 4]))  # int64 values that fit int16: converted exactly
    with ncio.open(path, comm) as ds:
        assert_all(comm, np.array_equal(ds.read("v"), [1, 2, 3, 4]))


@pytest.mark.parametrize("mode", ["cdf5", "hdf5"])
def test_variable_over_4gib_sparse(comm: MPI.Comm, shared_dir: str, mode: str) -> None:
    """A 4.3 GiB variable: each rank writes a few values far apart; the file stays sparse on disk."""
    rank, size = comm.Get_rank(), comm.Get_size()
    shape = (1100, 1024, 1024)  # 4.4e9 bytes of float32, over CDF-2's 4 GiB
    schema = ncio.Schema({"z": shape[0], "y": shape[1], "x": shape[2]}, [ncio.Variable("big", "f4", ("z", "y", "x"))])
    path = os.path.join(shared_dir, f"big-{mode}.nc")
    spots = [Hyperslab((z, 1023, 1020), (1, 1, 4)) for z in (0, 550, 1099)]
    values = [np.arange(4, dtype="f4").reshape(1, 1, 4) + 10 * i for i in range(len(spots))]
    mine = [i for i in range(len(spots)) if i % size == rank]
    with ncio.create(path, schema, mode, comm) as ds:
        for i, spot in enumerate(spots):  # the same collective calls on every rank; one rank writes each spot
            ds.write("big", values[i] if i in mine else np.empty((0, 0, 0), "f4"),
                     spot if i in mine else Hyperslab.empty(3))
    if rank == 0:
        stat = os.stat(path)
        assert stat.st_size > 4 * 2**30
        assert stat.st_blocks * 512 < 2**30, "data beyond what was written must not be on disk"
    with ncio.open(path, comm) as ds:
        back = [ds.read("big", spot) for spot in spots]
        assert_all(comm, ds.shape("big") == shape and all(np.array_equal(b, v) for b, v in zip(back, values)))


@pytest.mark.parametrize("mode", MODES)
def test_large_hyperslabs_go_in_pieces(comm: MPI.Comm, shared_dir: str, mode: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests over the per-call limit are split; ranks with fewer pieces pad with empty calls."""
    from climio.core.ncio import parallel_, serial_

    monkeypatch.setattr(parallel_, "REQUEST_BYTES", 3 * 5 * 4)  # three rows of 5 float32 per call
    monkeypatch.setattr(serial_, "MESSAGE_BYTES", 2 * 5 * 4)
    # uneven: rank 0 holds more rows, so more pieces, than the last rank
    round_trip_rows(comm, os.path.join(shared_dir, f"pieces-{mode}.nc"), mode, rows=4 * comm.Get_size() + 3,
                    dtype="f4")


@pytest.mark.parametrize("mode", MODES)
def test_read_runs_any_count_per_rank(comm: MPI.Comm, shared_dir: str, mode: str) -> None:
    """read_runs of a record variable with one record: rank r asks for r % 3 runs, so rank 0 asks for none.

    netCDF-C joins every rank of a parallel netCDF-4 file in a record variable's read: a rank that skipped
    the call left the others waiting forever (a CMIP6 one-month file hung at 2 ranks)."""
    rank = comm.Get_rank()
    schema = ncio.Schema({"time": None, "y": 3, "x": 5},
                         [ncio.Variable("time", "f8", ("time",)), ncio.Variable("lat", "f4", ("y",)),
                          ncio.Variable("v", "f4", ("time", "y", "x"))])
    path = os.path.join(shared_dir, f"runs-{mode}.nc")
    field = np.arange(15, dtype="f4").reshape(1, 3, 5)
    with ncio.create(path, schema, mode, comm) as ds:
        ds.write_many([("time", np.array([0.5]), None), ("lat", np.arange(3, dtype="f4"), None), ("v", field, None)])
    wanted = [Hyperslab((0, k, 1), (1, 1, 3)) for k in range(rank % 3)]
    with ncio.open(path, comm) as ds:
        for name in ("v", "time", "lat"):  # record variables and a fixed-size one, with different counts per rank
            slabs = wanted if name == "v" else [Hyperslab((0,), (1,))] * (rank % 3)
            back = ds.read_runs(name, slabs)
            assert_all(comm, len(back) == rank % 3, name)
        back = ds.read_runs("v", wanted)
        assert_all(comm, all(np.array_equal(b, field[:, k:k + 1, 1:4]) for k, b in enumerate(back)), "values")


@pytest.mark.parametrize("mode", ["hdf5", "cdf5"])
def test_scalar_variable_reads_on_every_rank(comm: MPI.Comm, shared_dir: str, mode: str) -> None:
    """A variable without dimensions (CMIP's scalar `height`, a grid mapping) is one value that every rank reads."""
    path = os.path.join(shared_dir, f"scalar-{mode}.nc")
    schema = ncio.Schema({"x": 3}, [ncio.Variable("height", "f8", ()), ncio.Variable("v", "f4", ("x",))])
    with ncio.create(path, schema, mode, comm) as ds:
        ds.write("height", np.array(2.0))  # whole, from rank 0
        ds.write("v", np.arange(3, dtype="f4"))
    with ncio.open(path, comm) as ds:
        assert_all(comm, float(ds.read("height")) == 2.0, "scalar read")


@pytest.mark.parametrize("aggregated", [False, True])
@pytest.mark.parametrize("pack_bytes", [100, 2**28])
def test_classic_writes_of_any_hyperslabs_in_one_call(comm: MPI.Comm, shared_dir: str, aggregated: bool,
                                                       pack_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """climio's own writes of a classic file (several variables and records in one call, record variables of
    padded sizes, a scalar, a fixed variable; each rank its own random hyperslabs, some ranks none), each rank
    writing alone (aggregated) or all in one collective MPI-IO write, packed at once or in parts of 100 bytes,
    one step's pieces given in the file's byte order: every value where netCDF-C reads it, the record count in
    the header, and read back before close."""
    import netCDF4

    from climio.core.ncio import stored

    monkeypatch.setattr(stored, "PACK_BYTES", pack_bytes)
    rank, size = comm.Get_rank(), comm.Get_size()
    rng = np.random.default_rng(rank + 7)
    shapes = {"a": (3, 5, 7), "b": (5, 7), "d": (7,)}
    for mode in ("cdf1", "cdf2", "cdf5"):
        schema = ncio.Schema({"time": None, "z": 3, "y": 5, "x": 7}, (
            ncio.Variable("time", "f8", ("time",)), ncio.Variable("a", "f4", ("time", "z", "y", "x")),
            ncio.Variable("b", "i2", ("time", "y", "x")), ncio.Variable("c", "f8", ("z", "x")),
            ncio.Variable("d", "i1", ("time", "x")), ncio.Variable("s", "f8", ())), {})
        path = os.path.join(shared_dir, f"any-{mode}-{aggregated}.nc")
        written = []
        with ncio.create(path, schema, mode, comm, overwrite=True, aggregated=aggregated) as store:
            for step in range(3):
                items = []
                for name, shape in shapes.items():  # a disjoint band of the last axis per rank, random elsewhere
                    lo, hi = rank * shape[-1] // size, (rank + 1) * shape[-1] // size
                    start = [int(rng.integers(0, n)) for n in shape[:-1]]
                    count = [int(rng.integers(1, n - s + 1)) for n, s in zip(shape[:-1], start)]
                    slab = Hyperslab((step, *start, lo), (1, *count, hi - lo))
                    data = (np.arange(slab.size).reshape(slab.count) + 1000 * step + 100 * rank) % 127
                    dtype = schema.variable(name).numpy_dtype
                    if step == 1:  # in the file's byte order, as the rearranger hands it: written from where it is
                        dtype = store.write_order(schema.variable(name))
                    items.append((name, data.astype(dtype), slab))
                items.append(("time", np.array([step * 1.5]) if rank == 0 else None,
                              Hyperslab((step,), (1 if rank == 0 else 0,))))
                store.write_many(items)
                written += [(n, d, s) for n, d, s in items if d is not None and s.size]
            store.write("c", np.arange(21.0).reshape(3, 7) if rank == 0 else None)
            store.write_many([("s", np.array(2.5) if rank == 0 else None, Hyperslab((), ()))])
            store.records = 3
            back = store.read("a", Hyperslab((1, 0, 0, 0), (1, 3, 5, 7)))
        everything = comm.allgather(written)
        with netCDF4.Dataset(path) as ds:
            ds.set_auto_mask(False)
            assert_all(comm, len(ds.dimensions["time"]) == 3, f"{mode}: records")
            for name, data, slab in (item for items in everything for item in items):
                assert_all(comm, np.array_equal(ds[name][slab.slices], data), f"{mode} {aggregated}: {name} {slab}")
            assert_all(comm, np.array_equal(ds["c"][:], np.arange(21.0).reshape(3, 7)) and ds["s"][...] == 2.5)
            assert_all(comm, np.array_equal(back, ds["a"][1:2]), f"{mode}: read back while writing")


def test_collective_classic_writes_reuse_their_file_view(comm: MPI.Comm, shared_dir: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """One collective MPI-IO write a call: a call whose pieces are those of an earlier call moved by whole records
    writes through the file view made for it (out of order, back to an earlier record, twice the same record);
    pieces of the same shape with a fixed variable among them, which records do not move, get a view of their
    own. Every value where netCDF-C reads it."""
    import netCDF4

    from climio.core.ncio import stored

    made = []  # each view made: its runs cut to MPI's counts first
    monkeypatch.setattr(stored, "_split", lambda runs, most: made.append(len(runs)) or runs)
    rank, size = comm.Get_rank(), comm.Get_size()
    schema = model_schema()
    band = Hyperslab((0, rank * NY // size), (NZ, (rank + 1) * NY // size - rank * NY // size))  # z, y: my rows
    path = os.path.join(shared_dir, "views.nc")
    with ncio.create(path, schema, "cdf5", comm, overwrite=True, aggregated=False) as store:
        for step in (2, 0, 3, 1, 1):
            temp = global_field(step)[None, *band.slices] + (step == 1) * 0.25  # record 1's second write wins
            mask = surface(step)[None, *band.slices[1:]]
            items = [("temp", temp, Hyperslab((step, *band.start, 0), (1, *band.count, NX))),
                     ("mask", mask, Hyperslab((step, band.start[1], 0), (1, band.count[1], NX)))]
            if step in (2, 3):  # pieces as if moved by a record, z among them: where z lies does not move
                items.append(("z", np.array([step], "f8") if rank == 0 else None,
                              Hyperslab((step - 1,), (1 if rank == 0 else 0,))))
            store.write_many(items)
        store.records = 4
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_mask(False)
        for step in range(4):
            assert_all(comm, np.array_equal(ds["temp"][step], global_field(step) + (step == 1) * 0.25), f"temp {step}")
            assert_all(comm, np.array_equal(ds["mask"][step], surface(step)), f"mask {step}")
        assert_all(comm, np.array_equal(ds["z"][1:3], [2.0, 3.0]), f"z {ds['z'][:]}")
    # records 2 (then 0, 1, 1); on rank 0, which writes z, 2 with z and 3 with z
    assert_all(comm, len(made) == (3 if rank == 0 else 1), f"views made: {made}")


def test_collective_classic_writes_reserve_each_block_once(comm: MPI.Comm, shared_dir: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Before a collective write the ranks reserve its blocks: where their pieces fill one extent of the file
    (a step's records, each rank its rows of every variable: interleaved), each rank reserves its own slice of
    it, the slices tiling the extent; otherwise (two levels of a variable written again, a level between them)
    each rank the hulls of its own pieces."""
    import netCDF4

    from climio.core.ncio import space, stored

    claimed: list[list[tuple[int, int]]] = []
    claim = space.Reserver.claim
    monkeypatch.setattr(space.Reserver, "claim", lambda self, ranges, where: claimed.append(ranges) or
                        claim(self, ranges, where))
    monkeypatch.setattr(stored, "SLICE_ALIGN", 4)  # slices of this small record: a few hundred bytes each
    rank, size = comm.Get_rank(), comm.Get_size()
    lo, hi = rank * NY // size, (rank + 1) * NY // size
    path = os.path.join(shared_dir, "reserve.nc")
    with ncio.create(path, model_schema(), "cdf5", comm, overwrite=True, aggregated=False) as store:
        temp = global_field(0)[None, :, lo:hi]
        mask = surface(0)[None, lo:hi]
        store.write_many([("temp", temp, Hyperslab((0, 0, lo, 0), temp.shape)),
                          ("mask", mask, Hyperslab((0, lo, 0), mask.shape))])
        store.write_many([("temp", temp[:, k:k + 1], Hyperslab((0, k, lo, 0), (1, 1, hi - lo, NX))) for k in (0, 2)])
        layout = store.layout
    step = sorted(r for ranges in comm.allgather(claimed[0]) for r in ranges)
    first, end = layout.begins["temp"], layout.begins["mask"] + NY * NX * 4  # record 0 from temp to mask's end
    assert_all(comm, len(claimed[0]) == 1 and step[0][0] == first and step[-1][1] == end and all(
        a[1] == b[0] for a, b in zip(step, step[1:])), f"slices {step} of [{first}, {end})")
    level = NY * NX * 4
    mine = first + lo * NX * 4
    assert_all(comm, claimed[1] == [(mine + k * level, mine + k * level + (hi - lo) * NX * 4) for k in (0, 2)],
               f"{claimed[1]}")
    if rank == 0:
        with netCDF4.Dataset(path) as ds:
            ds.set_auto_mask(False)
            assert np.array_equal(ds["temp"][0], global_field(0)) and np.array_equal(ds["mask"][0], surface(0))
