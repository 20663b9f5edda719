"""Hostile classic headers (seeded mutants of CDF-1, CDF-2 and CDF-5 files): every one is read or refused with
one line; none crashes netCDF-C, allocates without bound, hangs or gives a traceback."""

from __future__ import annotations

import random
import resource
import subprocess
import sys
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from conftest import leftovers

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))
from climio_batch import run_table  # noqa: E402

FORMATS = ("NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA")
MUTANTS_PER_FORMAT = 100
MEMORY_CAP = 4 * 2**30
HELPER = Path(__file__).parent / "helpers" / "open_mutants.py"


def original(path: Path, fmt: str) -> bytes:
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.title = "fuzz"
        ds.createDimension("time", None)
        ds.createDimension("lat", 3)
        ds.createDimension("nchar", 4)
        lat = ds.createVariable("lat", "f8", ("lat",))
        lat.units = "degrees_north"
        lat[:] = [-10.0, 0.0, 10.0]
        tas = ds.createVariable("tas", "f4", ("time", "lat"))
        tas.valid_range = np.array([0, 400], "f4")
        tas[:] = np.arange(6.0).reshape(2, 3)
        ds.createVariable("time_bnds", "f8", ("time", "nchar"))[:] = np.ones((2, 4))
        ds.createVariable("label", "S1", ("lat", "nchar"))[:] = np.array([list("abcd")] * 3, dtype="S1")
    return path.read_bytes()


def mutate(data: bytes, rng: random.Random) -> bytes:
    """Change 1-3 things in the header: a byte, or a 4-byte count or size made huge, zero or negative."""
    out = bytearray(data)
    header = min(len(out), 260)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(4, header - 4)
        if rng.random() < 0.5:
            out[at] = rng.randrange(256)
        else:
            at -= at % 4
            value = rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0, 1, 0x10000, rng.randrange(2**32)])
            out[at:at + 4] = value.to_bytes(4, "big")
    return bytes(out)


@pytest.fixture(scope="module")
def mutants(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("mutants")
    rng = random.Random(20261123)
    paths = []
    for fmt in FORMATS:
        data = original(folder / f"{fmt}.nc", fmt)
        for k in range(MUTANTS_PER_FORMAT):
            path = folder / f"{fmt}-{k:03d}.nc"
            path.write_bytes(mutate(data, rng))
            paths.append(path)
    return paths


def capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def test_storage_layer_reads_or_refuses_every_mutant(mutants: list[Path]) -> None:
    result = subprocess.run([sys.executable, str(HELPER), *map(str, mutants)], capture_output=True, text=True,
                            timeout=300, preexec_fn=capped)
    lines = result.stdout.splitlines()
    last = next((line for line in reversed(lines) if line.startswith("START")), "")
    assert result.returncode == 0, f"crashed ({result.returncode}) on {last}: {result.stderr[-2000:]}"
    outcomes = [line for line in lines if not line.startswith("START")]
    failed = [line for line in outcomes if line.startswith(("FAILED", "WRONG"))]
    assert not failed, "\n".join(failed[:10])
    assert len(outcomes) == len(mutants)
    assert sum(line.startswith("REFUSED") for line in outcomes) > len(mutants) // 4  # the fuzzer bites


@pytest.mark.parametrize("command", ["subset", "eva"])
def test_commands_on_mutants_end_in_one_line(mutants: list[Path], tmp_path: Path, command: str) -> None:
    """The mutants' runs go in one table at 2 ranks (helpers/climio_batch.py: one launch, each case captured as a
    process of its own, with a timeout of 60 s), each writing into a directory of its own. A mutant may end the
    job (MPI_Abort with its one line, status 1): that case then gets what a launch of its own gives (its status
    and output, the launcher's after it) and the cases after it run in a new launch (``aborts=True``)."""
    paths = mutants[::25]
    outs = [tmp_path / f"case{k}" / "out.nc" for k in range(len(paths))]
    table = [[command, str(path), str(out), "-O"] + (["--var", "tas"] if command == "eva" else [])
             for path, out in zip(paths, outs)]
    for out in outs:
        out.parent.mkdir()
    results = run_table(table, 2, tmp_path / "batch", timeout=60, aborts=True)
    for path, out, result in zip(paths, outs, results):
        assert "Traceback" not in result.stderr, (path, result.stderr)
        if result.returncode != 0:
            assert result.returncode in (1, 2), (path, result.returncode, result.stderr)
            lines = [line for line in result.stderr.splitlines() if line.startswith("climio")]
            assert len(lines) == 1, (path, result.stderr)
            assert not out.exists()
        assert leftovers(str(out.parent)) == []
        out.unlink(missing_ok=True)
