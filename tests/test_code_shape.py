"""The rules of the source's shape that a reader relies on, checked over the source itself."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "climio"
JOBS = ("model", "subset", "eva")


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (functions included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


@pytest.mark.parametrize("job", JOBS)
def test_no_job_imports_another_job(job: str) -> None:
    others = tuple(f"climio.{j}" for j in JOBS if j != job)
    found = {f"{path.relative_to(SRC)}: {name}" for path in (SRC / job).rglob("*.py") for name in _imports(path)
             if name.startswith(others) and name.split(".")[1] in JOBS}
    assert not found, f"climio.{job} imports another job: {sorted(found)}"


def _python_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_format_names_are_tested_in_the_mode_table_only() -> None:
    table = SRC / "core" / "ncio" / "modes.py"
    found = [f"{path.relative_to(SRC)}:{n}" for path in _python_files() if path != table
             for n, line in enumerate(path.read_text().splitlines(), 1) if 'startswith("NETCDF' in line]
    assert not found, f"format names tested outside the mode table: {found}"


def test_netcdf4_python_private_handles_stay_in_the_storage_layer() -> None:
    storage = SRC / "core" / "ncio"
    private = re.compile(r"(?<!self)\._(grpid|varid|grp)\b")  # a class's own _varid method is its own
    found = [f"{path.relative_to(SRC)}:{n}" for path in _python_files() if storage not in path.parents
             for n, line in enumerate(path.read_text().splitlines(), 1) if private.search(line)]
    assert not found, f"netCDF4-python's private attributes used outside climio.core.ncio: {found}"


def test_a_new_mode_of_an_existing_library_is_one_table_entry(tmp_path: Path) -> None:
    """A mode registered here, and nowhere else, writes and reads a file through the store and model output."""
    import netCDF4
    import numpy as np
    from mpi4py import MPI

    from climio.core import ncio
    from climio.core.decomp import Hyperslab
    from climio.core.ncio import modes
    from climio.model.decomposition import blocks
    from climio.model.input import ModelInput
    from climio.model.output import Field, ModelOutput

    alias = modes.register(modes.Mode("cdf5-scratch", "NETCDF3_64BIT_DATA", True, "PnetCDF", "a throw-away alias",
                                      ("direct", "agg")))
    try:
        values = np.arange(12, dtype="f8").reshape(3, 4)
        schema = ncio.Schema({"y": 3, "x": 4}, [ncio.Variable("v", "f8", ("y", "x"), {"units": "K"})])
        with ncio.create(str(tmp_path / "store.nc"), schema, mode=alias.name, comm=MPI.COMM_SELF) as ds:
            ds.write("v", values, Hyperslab((0, 0), (3, 4)))
        with ncio.open(str(tmp_path / "store.nc"), MPI.COMM_SELF) as ds:
            assert np.array_equal(ds.read("v"), values)
        grid = blocks((3, 4), 1, 1, 0)
        path = str(tmp_path / "model.nc")
        with ModelOutput(path, grid, [Field("T")], MPI.COMM_SELF, mode=alias.name, strategy="agg") as out:
            out.write(0, {"T": values}, 0.0)
        with netCDF4.Dataset(path) as ds:
            assert ds.data_model == "NETCDF3_64BIT_DATA"
            assert "mode cdf5-scratch" in ds.history
        with ModelInput(path, grid, MPI.COMM_SELF, strategy="direct") as reader:
            assert np.array_equal(reader.read("T", 0), values)
    finally:
        del modes.MODES[alias.name]


def test_the_command_line_only_dispatches() -> None:
    """Each command declares its own options in climio.commands; cli.py parses, dispatches and maps errors."""
    lines = len((SRC / "cli.py").read_text().splitlines())
    assert lines < 200, f"cli.py has {lines} lines: options and runs belong to their command's module"
