"""The rules of the source's shape that a reader relies on, checked over the source itself."""

from __future__ import annotations

import ast
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
