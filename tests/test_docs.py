"""The docs do what they say: every command and code example in README.md and docs/*.md runs on the shipped files
and prints what the page shows; the reference pages are the generator's output; user pages carry no lab notes.

How examples are found, run and compared: tests/helpers/docs_examples.py. Blocks marked ``<!-- test: install -->``
are the only ones not run, and they may hold install commands only.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

import docs_examples as de  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Records of measurements and of how the design came about: the two pages where dates, versions and the
# targets that were set may stay.
HISTORY_PAGES = {"docs/benchmarks.md", "docs/design.md"}
REFERENCE = ROOT / "docs" / "reference"


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def runnable(page: Path) -> bool:
    return any(b.language in de.RUN_LANGUAGES and b.marker != "install" for b in de.blocks(page))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=page_id)
def test_page_examples(page: Path, tmp_path: Path) -> None:
    report = de.run_page(page, tmp_path)
    assert report.commands + report.python_blocks > 0
    assert not report.failures, f"{report.page}: {len(report.failures)} example(s) do not do what the page says:\n\n" \
        + "\n\n".join(report.failures)


def test_only_install_commands_are_skipped() -> None:
    """A block marked install holds install commands and nothing else; no other block is left out."""
    wrong = []
    for page in PAGES:
        for block in de.blocks(page):
            if block.marker != "install":
                continue
            if block.language not in (*de.SHELL_LANGUAGES, "console"):
                wrong.append(f"{block.where}: an install block must be a shell block, not {block.language!r}")
                continue
            lines = de.commands(block)
            if not lines:
                wrong.append(f"{block.where}: an empty install block")
            wrong += [f"{block.where}: not an install command, so it must run: {c.line}"
                      for c in lines if not de.is_install(c.line)]
    assert not wrong, "\n".join(wrong)


def test_blocks_say_what_they_are() -> None:
    """Every fence names its language, at the margin; prompts appear only in console blocks; markers fit."""
    wrong = []
    for page in PAGES:
        found = de.blocks(page)
        for k, block in enumerate(found):
            if not block.language:
                wrong.append(f"{block.where}: a fence without a language (console, sh, python, text, c, ...)")
            if getattr(block, "indent", ""):
                wrong.append(f"{block.where}: an indented fence (examples are read at the margin only)")
            if block.language not in ("console",) and any(line.startswith("$ ") for line in block.text.splitlines()):
                wrong.append(f"{block.where}: '$ ' prompts belong in a console block")
            if block.marker == "file" and not block.argument:
                wrong.append(f"{block.where}: <!-- test: file NAME --> needs the NAME")
            if block.marker == "output" and (block.language != "text" or k == 0 or found[k - 1].language != "python"):
                wrong.append(f"{block.where}: <!-- test: output --> marks a text block right after a python block")
            if block.marker not in (None, "install", "file", "output"):
                wrong.append(f"{block.where}: unknown marker {block.marker!r}")
    assert not wrong, "\n".join(wrong)


LAB_NOTES = [
    (re.compile(r"\bseed \d{3}\b", re.I), "a seed number: cite the paper"),
    (re.compile(r"\bissues? \d+\b", re.I), "an issue number"),
    (re.compile(r"\b(the|this) issue\b", re.I), "the issue tracker"),
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"), "what looks like a commit hash"),
    (re.compile(r"\ba session ago\b|\bthis session\b|\blast session\b", re.I), "a session"),
    (re.compile(r"\b(before|since) this landed\b", re.I), "a change's history"),
]


@pytest.mark.parametrize("page", [p for p in PAGES if page_id(p) not in HISTORY_PAGES], ids=page_id)
def test_user_pages_carry_no_history(page: Path) -> None:
    """User pages describe climio as it is; measurements and history live in benchmarks.md and design.md."""
    found = []
    for number, line in enumerate(page.read_text().splitlines(), 1):
        for regex, what in LAB_NOTES:
            match = regex.search(line)
            if match:
                found.append(f"{page_id(page)}:{number}: {what}: {match.group(0)!r} in {line.strip()[:120]!r}")
    assert not found, "\n".join(found)


def test_links_resolve() -> None:
    """Every relative link of the docs points at a file of the repository (and an anchor at a heading)."""
    wrong = []
    for page in [*PAGES, *sorted(REFERENCE.glob("*.md"))]:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if not where.exists():
                wrong.append(f"{page_id(page)}: link to a missing file: {target}")
            elif anchor and where.suffix == ".md" and anchor not in anchors(where):
                wrong.append(f"{page_id(page)}: link to a missing heading: {target}")
    assert not wrong, "\n".join(wrong)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    out = set()
    for line in page.read_text().splitlines():
        heading = re.match(r"^#+\s+(.*)$", line)
        if heading:
            text = heading.group(1).strip().lower()
            text = re.sub(r"[^\w\- ]", "", text)
            out.add(text.replace(" ", "-"))
    return out


def test_reference_pages_are_the_generators_output() -> None:
    """docs/reference/ is written by scripts/reference.py from the argument parser and the docstrings."""
    spec = importlib.util.spec_from_file_location("reference", ROOT / "scripts" / "reference.py")
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    stale = []
    for name, text in reference.pages().items():
        path = REFERENCE / name
        if not path.exists() or path.read_text() != text:
            stale.append(str(path.relative_to(ROOT)))
    assert not stale, (f"{', '.join(stale)} differ from what scripts/reference.py generates from the code: run "
                       f"`make docs` and commit the result")
