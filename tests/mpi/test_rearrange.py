"""The rearranger (climio.core.rearrange) at 1-6 ranks, against a plain gather/scatter reference.

Every case draws its layouts from a fixed seed, the same on every rank: a global space split into random
pieces per rank (some ranks hold nothing), sources that leave elements out, destinations with holes,
elements nobody wants, and offsets held by several destinations. The reference gathers every rank's
(offsets, values) on rank 0, builds the global array with numpy and broadcasts it; it shares no code
with the module under test.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from conftest import assert_all, runs_here
from mpi4py import MPI

from climio.core import collectives, trace
from climio.core.decomp import Decomposition, Hyperslab, process_grid
from climio.core.rearrange import Layout, ListedPieces, Plan, forward_together
from climio.errors import ClimioError

KINDS = ["block", "halo", "box", "runs", "offsets", "compmap"]
PAIRS = list(itertools.product(KINDS, KINDS))
DTYPES = [np.dtype(d) for d in ("f4", "f8", "i4", "i1", "u2", ">f4")]
TRAILINGS = [(), (3,), (2, 5)]
FILL = 99  # what ``out`` holds before an exchange: holes must keep it
HALO_FILL = 55  # a source's halo cells: never sent

Spec = tuple[str, object]  # (kind, what one rank holds): a Decomposition, a Hyperslab, runs or offsets


# ------------------------------------------------------------------------------- random layouts


def random_shape(rng: np.random.Generator) -> tuple[int, ...]:
    return tuple(int(n) for n in rng.integers(1, 8, size=int(rng.integers(1, 4))))


def random_decomposition(rng: np.random.Generator, shape: tuple[int, ...], size: int, halo: int) -> Decomposition:
    if len(shape) >= 2 and rng.random() < 0.5:
        divisors = [d for d in range(1, size + 1) if size % d == 0]
        px = int(rng.choice(divisors))
        return Decomposition.block2d(shape, px, size // px, halo=halo)
    return Decomposition.block1d(shape, size, axis=int(rng.integers(len(shape))), halo=halo)


def cuts(rng: np.random.Generator, n: int, parts: int) -> np.ndarray:
    """``parts + 1`` sorted bounds splitting ``0..n`` into random (possibly empty) pieces."""
    return np.concatenate([[0], np.sort(rng.integers(0, n + 1, size=parts - 1)), [n]]).astype(np.int64)


def specs(rng: np.random.Generator, shape: tuple[int, ...], size: int, kind: str, role: str) -> list[Spec]:
    """What every rank holds: disjoint (with elements nobody holds) for a source; overlapping, with holes
    and elements nobody holds, for a destination (block layouts cover the space once either way)."""
    n = math.prod(shape)
    if kind in ("block", "halo"):
        decomp = random_decomposition(rng, shape, size, halo=int(rng.integers(1, 3)) if kind == "halo" else 0)
        return [(kind, decomp)] * size
    if kind == "box":
        slabs = []
        rows = cuts(rng, shape[0], size)
        for rank in range(size):
            start, count = [], []
            for axis, length in enumerate(shape):
                if role == "source" and axis == 0:
                    a, b = int(rows[rank]), int(rows[rank + 1])
                else:
                    a, b = sorted(int(x) for x in rng.integers(0, length + 1, size=2))
                    if role == "source" and rng.random() < 0.5:
                        a, b = 0, length
                start.append(a)
                count.append(b - a)
            slabs.append(Hyperslab(tuple(start), tuple(count)))
        return [("box", s) for s in slabs]
    if kind == "runs":
        bounds = cuts(rng, n, 3 * size + 1)
        owner = rng.integers(-1, size, size=bounds.size - 1)  # -1: nobody holds this stretch
        held: list[list[tuple[int, int]]] = [[] for _ in range(size)]
        for a, b, rank in zip(bounds[:-1], bounds[1:], owner):
            if rank >= 0 and b > a:
                held[rank].append((int(a), int(b - a)))
        for rank in range(size):
            if role == "dest":  # overlapping runs: some elements go to several ranks, or twice to one
                for _ in range(int(rng.integers(0, 3))):
                    a = int(rng.integers(0, n))
                    held[rank].append((a, int(rng.integers(1, n - a + 1))))
            rng.shuffle(held[rank])
        return [("runs", np.array(r, dtype=np.int64).reshape(-1, 2)) for r in held]
    offsets = rng.permutation(n)[: int(rng.integers(n // 2, n + 1))]  # the rest is held by nobody
    bounds = cuts(rng, offsets.size, size)
    out = []
    for rank in range(size):
        mine = offsets[bounds[rank]:bounds[rank + 1]]
        if role == "dest":
            mine = np.concatenate([mine, rng.integers(0, n, size=int(rng.integers(0, 4)))])  # replicated
        holes = rng.integers(0, mine.size + 1, size=int(rng.integers(0, 3)))
        out.append((kind, np.insert(mine, holes, -1).astype(np.int64)))
    return out


def layout(spec: Spec, shape: tuple[int, ...], rank: int) -> Layout:
    kind, what = spec
    if kind in ("block", "halo"):
        return Layout.block(what, rank)  # type: ignore[arg-type]
    if kind == "box":
        return Layout.box(shape, what)  # type: ignore[arg-type]
    if kind == "runs":
        return Layout.runs(shape, what)  # type: ignore[arg-type]
    if kind == "offsets":
        return Layout.offsets(shape, what)  # type: ignore[arg-type]
    return Layout.from_compmap(shape, np.asarray(what) + 1)


def slab_of(spec: Spec, rank: int) -> Hyperslab:
    kind, what = spec
    return what.owned(rank) if kind in ("block", "halo") else what  # type: ignore[union-attr,return-value]


def held(spec: Spec, shape: tuple[int, ...], rank: int) -> np.ndarray:
    """Flat offset of every element of the local array (without halo), in its order; -1 for a hole."""
    kind, what = spec
    if kind in ("block", "halo", "box"):
        slab = slab_of(spec, rank)
        grid = np.meshgrid(*[np.arange(s, s + c) for s, c in zip(slab.start, slab.count)], indexing="ij")
        return np.ravel_multi_index(tuple(grid), shape).ravel().astype(np.int64)
    if kind == "runs":
        runs = np.asarray(what).reshape(-1, 2)
        return np.concatenate([np.zeros(0, np.int64)] + [np.arange(a, a + k) for a, k in runs])
    return np.asarray(what)


def local(spec: Spec, rank: int, values: np.ndarray, trailing: tuple[int, ...], halo_fill: int) -> np.ndarray:
    """The local array holding ``values`` (one row per element, in local order): block-shaped, with a halo
    of ``halo_fill`` for the halo kind."""
    kind, what = spec
    if kind in ("block", "halo", "box"):
        block = values.reshape(*slab_of(spec, rank).count, *trailing)
        if kind != "halo":
            return block
        array = np.full((*what.local_shape(rank), *trailing), halo_fill, values.dtype)  # type: ignore[union-attr]
        array[what.interior(rank)] = block  # type: ignore[union-attr]
        return array
    return values


def random_values(rng: np.random.Generator, dtype: np.dtype, count: int, trailing: tuple[int, ...]) -> np.ndarray:
    shape = (count, *trailing)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


def reference(comm: MPI.Comm, total: int, offsets: np.ndarray, values: np.ndarray, wanted: np.ndarray,
              fill: int) -> np.ndarray:
    """What a rank holding ``wanted`` should get when every rank's ``offsets`` hold ``values``: gathered on
    rank 0 into the global array, broadcast, picked out with numpy; ``fill`` where nobody holds the element."""
    gathered = comm.gather((offsets, values), root=0)
    table = have = None
    if comm.Get_rank() == 0:
        table = np.zeros((total, *values.shape[1:]), values.dtype)
        have = np.zeros(total, bool)
        for o, v in gathered:
            table[o[o >= 0]] = v[o >= 0]
            have[o[o >= 0]] = True
    table, have = comm.bcast((table, have), root=0)
    out = np.full((wanted.size, *values.shape[1:]), fill, values.dtype)
    hit = wanted >= 0
    hit[hit] = have[wanted[hit]]
    out[hit] = table[wanted[hit]]
    return out


# --------------------------------------------------------------------------------------- checking


class Case:
    """One drawn pair of layouts on every rank, with the arrays and expectations of each exchange."""

    def __init__(self, comm: MPI.Comm, seed: int, shape: tuple[int, ...], sources: list[Spec], dests: list[Spec],
                 trailing: tuple[int, ...]) -> None:
        self.comm, self.seed, self.shape, self.trailing = comm, seed, shape, trailing
        rank = comm.Get_rank()
        self.source, self.dest = sources[rank], dests[rank]
        self.src_offsets, self.dst_offsets = held(self.source, shape, rank), held(self.dest, shape, rank)
        self.plan = Plan(comm, layout(self.source, shape, rank), layout(self.dest, shape, rank), trailing=trailing)

    def __enter__(self) -> Case:
        return self

    def __exit__(self, *exc: object) -> None:
        self.plan.free()

    def forward_arrays(self, dtype: np.dtype, k: int, fill: int = FILL) -> tuple[np.ndarray, ...]:
        """Forward exchange ``k``: (source array, pre-filled output, expected output, expected in local order)."""
        rank, trailing = self.comm.Get_rank(), self.trailing
        values = random_values(np.random.default_rng([self.seed, rank, k]), dtype, self.src_offsets.size, trailing)
        expected = reference(self.comm, math.prod(self.shape), self.src_offsets, values, self.dst_offsets, fill)
        out = local(self.dest, rank, np.full_like(expected, fill), trailing, fill)
        return (local(self.source, rank, values, trailing, HALO_FILL), out,
                local(self.dest, rank, expected, trailing, fill), expected)

    def backward_arrays(self, dtype: np.dtype, k: int) -> tuple[np.ndarray, ...]:
        """The same backward: destination values come from one global table (replicas agree), holes random."""
        rank, trailing = self.comm.Get_rank(), self.trailing
        table = random_values(np.random.default_rng([self.seed, k]), dtype, math.prod(self.shape), trailing)
        values = random_values(np.random.default_rng([self.seed, rank, k]), dtype, self.dst_offsets.size, trailing)
        values[self.dst_offsets >= 0] = table[self.dst_offsets[self.dst_offsets >= 0]]
        expected = reference(self.comm, math.prod(self.shape), self.dst_offsets, values, self.src_offsets, FILL)
        out = local(self.source, rank, np.full_like(expected, FILL), trailing, FILL)
        return (local(self.dest, rank, values, trailing, HALO_FILL), out,
                local(self.source, rank, expected, trailing, FILL))

    def check(self, dtypes: list[np.dtype], what: str) -> None:
        """Forward and backward of ``dtypes[0]``, forward into a new array, then all of ``dtypes`` in one
        exchange each way."""
        comm, plan = self.comm, self.plan
        source, out, expected, _ = self.forward_arrays(dtypes[0], 0)
        got = plan.forward(source, out=out)
        assert_all(comm, got is out and np.array_equal(out, expected), f"{what}: forward {dtypes[0]}")
        source, _, _, zero_holes = self.forward_arrays(dtypes[0], 0, fill=0)
        fresh = plan.forward(source)  # without halo; holes are 0
        assert_all(comm, fresh.shape == (*plan.dest.local_shape, *self.trailing)
                   and np.array_equal(fresh.reshape(zero_holes.shape), zero_holes), f"{what}: forward, new output")
        dest, out, expected = self.backward_arrays(dtypes[0], 1)
        plan.backward(dest, out=out)
        assert_all(comm, np.array_equal(out, expected), f"{what}: backward {dtypes[0]}")

        forward = [self.forward_arrays(d, 2 + k) for k, d in enumerate(dtypes)]
        trace.reset()
        plan.forward_many([f[0] for f in forward], [f[1] for f in forward])
        calls = [r for r in trace.tracer().records if r[0] == "rearrange"]
        assert_all(comm, len(calls) == 1, f"{what}: forward_many is one exchange, got {len(calls)}")
        assert_all(comm, all(np.array_equal(f[1], f[2]) for f in forward), f"{what}: forward_many {dtypes}")
        backward = [self.backward_arrays(d, 5 + k) for k, d in enumerate(dtypes)]
        plan.backward_many([b[0] for b in backward], [b[1] for b in backward])
        assert_all(comm, all(np.array_equal(b[1], b[2]) for b in backward), f"{what}: backward_many {dtypes}")


def draw(comm: MPI.Comm, seed: int, source_kind: str, dest_kind: str,
         trailing: tuple[int, ...]) -> Case:
    rng = np.random.default_rng(seed)
    shape, size = random_shape(rng), comm.Get_size()
    sources, dests = specs(rng, shape, size, source_kind, "source"), specs(rng, shape, size, dest_kind, "dest")
    return Case(comm, seed, shape, sources, dests, trailing)


@pytest.mark.parametrize(("source_kind", "dest_kind"), PAIRS, ids=[f"{s}-{d}" for s, d in PAIRS])
def test_every_pair_of_layout_kinds(comm: MPI.Comm, source_kind: str, dest_kind: str) -> None:
    """Each pair in three draws: one per trailing shape, every dtype in one of them. Each draw runs at 1 rank and at
    two of 2, 3, 4, 6 (conftest.runs_here), at least one draw of every pair at every count."""
    case = PAIRS.index((source_kind, dest_kind))
    for draw_index in range(3):
        k = 3 * case + draw_index
        if not runs_here(comm, k):
            continue
        dtypes = [DTYPES[(k + j) % len(DTYPES)] for j in (0, 2, 5)]
        with draw(comm, 1000 + k, source_kind, dest_kind, TRAILINGS[k % len(TRAILINGS)]) as case_:
            case_.check(dtypes, f"{source_kind} -> {dest_kind} {case_.shape} {case_.trailing} seed {1000 + k}")


@pytest.mark.parametrize("trailing", TRAILINGS, ids=str)
@pytest.mark.parametrize(("source_kind", "dest_kind"), [("halo", "runs"), ("offsets", "halo")],
                         ids=["boxes", "directory"])
def test_every_dtype_and_trailing_shape(comm: MPI.Comm, source_kind: str, dest_kind: str,
                                        trailing: tuple[int, ...]) -> None:
    """Every dtype (big-endian too: bytes travel as they are) both ways, on one plan per trailing shape."""
    with draw(comm, 2000 + TRAILINGS.index(trailing), source_kind, dest_kind, trailing) as case:
        for k, dtype in enumerate(DTYPES):
            source, out, expected, _ = case.forward_arrays(dtype, 2 * k)
            case.plan.forward(source, out=out)
            assert_all(comm, out.dtype == dtype and np.array_equal(out, expected), f"forward {dtype}")
            dest, out, expected = case.backward_arrays(dtype, 2 * k + 1)
            case.plan.backward(dest, out=out)
            assert_all(comm, out.dtype == dtype and np.array_equal(out, expected), f"backward {dtype}")


def as_runs(spec: Spec, shape: tuple[int, ...], rank: int) -> Spec:
    """The same elements in the same local order, as runs (holes left out)."""
    offsets = held(spec, shape, rank)
    offsets = offsets[offsets >= 0]
    starts = np.flatnonzero(np.diff(offsets, prepend=-2) != 1)
    return "runs", np.stack([offsets[starts], np.diff(np.append(starts, offsets.size))], axis=1)


@pytest.mark.parametrize("kinds", [("box", "runs"), ("runs", "offsets")], ids=["boxes", "directory"])
def test_ranks_may_mix_layout_kinds(comm: MPI.Comm, kinds: tuple[str, str]) -> None:
    """Every other rank describes its share as runs: the plan does not care how each rank describes it."""
    size = comm.Get_size()
    for seed in range(3000, 3004):
        if not runs_here(comm, seed):  # each draw at 1 rank and at two of 2, 3, 4, 6 (conftest.runs_here)
            continue
        rng = np.random.default_rng(seed)
        shape = random_shape(rng)
        sources = specs(rng, shape, size, kinds[0], "source")
        dests = specs(rng, shape, size, kinds[1], "dest")
        sources = [as_runs(spec, shape, r) if r % 2 else spec for r, spec in enumerate(sources)]
        dests = [as_runs(spec, shape, r) if r % 2 == 0 else spec for r, spec in enumerate(dests)]
        with Case(comm, seed, shape, sources, dests, TRAILINGS[seed % 3]) as case:
            case.check([DTYPES[seed % 6], DTYPES[(seed + 3) % 6]], f"mixed {kinds} {shape} seed {seed}")


def test_halo_layout_takes_arrays_without_halo(comm: MPI.Comm) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    shape = (6, 5, 4)
    by_rows, by_columns = Decomposition.block1d(shape, size, axis=1, halo=2), Decomposition.block1d(shape, size, axis=2)
    data = np.arange(math.prod(shape), dtype="f8").reshape(shape)
    with Plan(comm, Layout.block(by_rows, rank), Layout.block(by_columns, rank)) as plan:
        got = plan.forward(np.ascontiguousarray(data[by_rows.owned(rank).slices]))
        assert_all(comm, np.array_equal(got, data[by_columns.owned(rank).slices]), "forward without halo")
        back = plan.backward(got, out=np.full(by_rows.local_shape(rank), -1.0))
        inner = back[by_rows.interior(rank)]
        assert_all(comm, np.array_equal(inner, data[by_rows.owned(rank).slices])
                   and (back == -1).sum() == back.size - inner.size, "backward into an array with halo")


def test_time_blocks_to_cell_blocks_as_eva_does(comm: MPI.Comm) -> None:
    """Eva's transpose, from time blocks of the whole grid to the whole series of cell blocks, and back."""
    rank, size = comm.Get_rank(), comm.Get_size()
    shape = (37, 5, 7)
    by_time = Decomposition.block1d(shape, size, axis=0)
    px, py = process_grid(size, shape[1], shape[2])
    by_cells = Decomposition.block2d(shape, px, py)
    data = np.random.default_rng(37).standard_normal(shape).astype("f4")
    mine = np.ascontiguousarray(data[by_time.owned(rank).slices])
    with Plan(comm, Layout.block(by_time, rank), Layout.block(by_cells, rank)) as plan:
        got = plan.forward(mine)
        expected = data[by_cells.owned(rank).slices]
        assert_all(comm, got.shape == expected.shape and np.array_equal(got, expected), "cells")
        assert_all(comm, np.array_equal(plan.backward(got), mine), "back to time blocks")


@pytest.mark.parametrize("kind", ["runs", "offsets"], ids=["boxes", "directory"])
def test_two_sources_of_one_element_are_an_error(comm: MPI.Comm, kind: str) -> None:
    """Every rank holds element 2 twice (and so do the others): every rank raises the same error."""
    shape = (3, 4)
    source = Layout.runs(shape, [(0, 3), (2, 2)]) if kind == "runs" else Layout.offsets(shape, [5, 2, 7, 2])
    try:
        Plan(comm, source, Layout.box(shape, Hyperslab.whole(shape)))
    except ClimioError as err:
        error = err
    else:
        error = None
    assert_all(comm, error is not None and error.collective and "(0, 2)" in str(error)
               and "held by source ranks" in str(error), str(error))


@pytest.mark.parametrize("kind", ["runs", "offsets"], ids=["boxes", "directory"])
def test_backward_takes_the_lowest_rank_then_position_of_replicas(comm: MPI.Comm, kind: str) -> None:
    """Every rank holds every element twice, with values of its own: backward gives rank 0's first copy."""
    rank, size = comm.Get_rank(), comm.Get_size()
    shape = (4, 5)
    n = math.prod(shape)
    if kind == "runs":  # the copy at positions 0..n-1 comes first
        decomp = Decomposition.block1d(shape, size)
        source, offsets = Layout.block(decomp, rank), held(("block", decomp), shape, rank)
        dest = Layout.runs(shape, [(0, n), (0, n)])
    else:  # element i sits at n - 1 - i and at n + i: the smaller position wins
        offsets = np.arange(rank, n, size)
        source = Layout.offsets(shape, offsets)
        dest = Layout.offsets(shape, np.concatenate([np.arange(n)[::-1], np.arange(n)]))
    with Plan(comm, source, dest) as plan:
        values = (rank * 1000 + np.arange(2 * n)).astype("i4")  # this rank's value at each position
        got = plan.backward(values).ravel()
        first = offsets if kind == "runs" else np.minimum(n - 1 - offsets, n + offsets)
        assert_all(comm, np.array_equal(got, first), f"{got} vs {first}")
        assert_all(comm, plan.source_complete and plan.dest_complete, "no holes")


def test_local_arrays_of_the_wrong_shape_are_refused(comm: MPI.Comm) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    decomp = Decomposition.block1d((2 * size, 3), size)
    with Plan(comm, Layout.block(decomp, rank), Layout.block(decomp, rank), trailing=(2,)) as plan:
        for array in (np.zeros((2, 3)), np.zeros((2, 3, 3)), np.zeros((3, 3, 2))):
            with pytest.raises(ClimioError, match="does not match its layout"):
                plan.forward(array)
        with pytest.raises(ClimioError, match="writeable C-contiguous"):
            plan.forward(np.zeros((2, 3, 2)), out=np.zeros((2, 3, 2), "f4"))


@pytest.mark.parametrize("kinds", [("halo", "runs"), ("box", "block")], ids=["halo-runs", "box-block"])
def test_plans_from_known_layouts_and_plans_moved_together(comm: MPI.Comm, kinds: tuple[str, str]) -> None:
    """Box-like layouts whose descriptions every rank has already (as a strategy's pieces are worked out alike
    on every rank): the plan built from them makes no collective call and moves what the collective plan moves,
    both ways; and two plans' forward exchanges in one (forward_together) give what each gives alone, in one
    Alltoallw."""
    rank, size = comm.Get_rank(), comm.Get_size()
    for seed in (4000, 4001):
        if not runs_here(comm, seed):  # each draw at 1 rank and at two of 2, 3, 4, 6 (conftest.runs_here)
            continue
        rng = np.random.default_rng(seed)
        shape = random_shape(rng)
        sources, dests = specs(rng, shape, size, kinds[0], "source"), specs(rng, shape, size, kinds[1], "dest")
        trailing = TRAILINGS[seed % len(TRAILINGS)]
        with Case(comm, seed, shape, sources, dests, trailing) as case:
            source, dest = layout(case.source, shape, rank), layout(case.dest, shape, rank)
            known = (ListedPieces(shape, dict(enumerate(comm.allgather(source.description)))),
                     ListedPieces(shape, dict(enumerate(comm.allgather(dest.description)))))
            before = collectives.calls()
            quiet = Plan(comm, source, dest, trailing=trailing, known=known)
            assert before is None or collectives.calls() == before, "a plan from known layouts communicated"
            with quiet:
                given, out, expected, _ = case.forward_arrays(DTYPES[seed % 6], 0)
                quiet.forward(given, out=out)
                assert_all(comm, np.array_equal(out, expected), f"known {kinds} seed {seed}: forward")
                given, out, expected = case.backward_arrays(DTYPES[seed % 6], 1)
                quiet.backward(given, out=out)
                assert_all(comm, np.array_equal(out, expected), f"known {kinds} seed {seed}: backward")
                first, second = case.forward_arrays(DTYPES[1], 2), case.forward_arrays(DTYPES[4], 3)
                trace.reset()
                forward_together([(case.plan, [first[0]], [first[1]]), (quiet, [second[0]], [second[1]])])
                calls = [r for r in trace.tracer().records if r[0] == "rearrange"]
                assert_all(comm, len(calls) == 1 and np.array_equal(first[1], first[2])
                           and np.array_equal(second[1], second[2]), f"together {kinds} seed {seed}")
