"""Write docs/reference/ from the code: every command from climio's argument parser, the Python API from its
docstrings. Run by ``make docs``; tests/test_docs.py checks that the committed pages are this script's output.

    python scripts/reference.py            # write docs/reference/commands.md and python.md
    python scripts/reference.py --check    # exit 1 if they differ from what the code gives
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "reference"
WIDTH = "100"  # argparse wraps usage lines to the terminal: fixed, so the pages do not depend on it

# The public Python API, in the order the page gives it: (module, names, what the section is about).
PYTHON_API = [
    ("climio.eva.api", ["fit_pot", "fit_gev", "UnitsWarning", "NoFitWarning"],
     "Extreme value fits on numpy, xarray or dask data (also importable as `from climio.eva import fit_pot, "
     "fit_gev`)."),
    ("climio.model.decomposition",
     ["blocks", "land_blocks", "land_block_count", "round_robin", "cells", "read_partition", "cubed_sphere",
      "from_offsets", "from_compmap", "BlockDecomposition", "PointDecomposition"],
     "How a model's grid is split over its ranks: build one rank's share from global facts."),
    ("climio.model.output", ["Field", "ModelOutput"], "Writing a model's history: time records of decomposed "
     "fields."),
    ("climio.model.input", ["ModelInput"], "Reading restarts, initial conditions and forcing into a "
     "decomposition."),
    ("climio.model.piomap", ["PioMap", "read_map", "write_map_text", "write_map_netcdf", "from_offsets"],
     "PIO2's decomposition map files, text and netCDF."),
    ("climio.model.gather", ["Gatherer"], "Gathering a block-decomposed field to rank 0, four ways."),
    ("climio.core.decomp", ["Hyperslab", "Decomposition", "process_grid"], "Block decompositions and "
     "hyperslabs: pure arithmetic, no MPI."),
    ("climio.core.ncio", ["Schema", "Variable", "Compression", "create", "open", "Store"],
     "The storage layer: a schema, then collective writes and reads of hyperslabs in any storage mode."),
]


# ------------------------------------------------------------------------------------------------- commands

def escape(text: str) -> str:
    """Text for a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def option_name(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{names}`"
    metavar = action.metavar or (action.dest.upper() if not action.choices else
                                 "{" + ",".join(map(str, action.choices)) + "}")
    return f"`{names} {metavar}`"


def default_of(action: argparse.Action) -> str:
    if not action.option_strings or action.nargs == 0 or action.default in (None, argparse.SUPPRESS):
        return ""
    value = action.default
    if isinstance(value, list):
        value = " ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return f"`{value}`"


def leaf_parsers(parser: argparse.ArgumentParser, path: list[str]) -> list[tuple[list[str], argparse.ArgumentParser,
                                                                                   str]]:
    """Every parser under ``parser`` with its command path and the one-line help its parent gave it."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                out.append(([*path, name], sub, helps.get(name, "")))
                out.extend(leaf_parsers(sub, [*path, name]))
    return out


def anchor(path: list[str]) -> str:
    return "-".join(path)


COMMON = ("-h", "--trace", "--mpi-io")


def command_section(path: list[str], parser: argparse.ArgumentParser, summary: str,
                    common: tuple[str, ...] = ()) -> list[str]:
    lines = [f"## {' '.join(path)}", ""]
    if summary:
        lines += [summary if len(path) == 1 else summary[0].upper() + summary[1:] + ".", ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for action in subcommands:
        lines += ["| command | what it does |", "| --- | --- |"]
        for choice in action._choices_actions:
            full = [*path, choice.dest]
            lines.append(f"| [`{' '.join(full)}`](#{anchor(full)}) | {escape(choice.help or '')} |")
        lines.append("")
    rows = [a for a in parser._actions if a.help != argparse.SUPPRESS and not isinstance(a, argparse._SubParsersAction)
            and not set(a.option_strings) & set(common)]
    positionals = [a for a in rows if not a.option_strings]
    options = [a for a in rows if a.option_strings]
    if positionals:
        lines += ["| argument | meaning |", "| --- | --- |"]
        lines += [f"| {option_name(a)} | {escape(a.help or '')} |" for a in positionals]
        lines.append("")
    if options:
        lines += ["| option | default | meaning |", "| --- | --- | --- |"]
        for a in options:
            choices = f" (one of {', '.join(map(str, a.choices))})" if a.choices and a.metavar else ""
            lines.append(f"| {option_name(a)} | {default_of(a)} | {escape((a.help or '') + choices)} |")
        lines.append("")
    return lines


def commands_page() -> str:
    from climio.cli import build_parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = build_parser()
        text = commands_text(parser)
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return text


def commands_text(parser: argparse.ArgumentParser) -> str:
    lines = ["# Command reference", "",
             "Generated from climio's argument parser by `scripts/reference.py` (`make docs`); do not edit by hand.",
             "How the commands behave, with examples: [the guide to the commands](../usage.md) and the "
             "[tutorials](../README.md).", "",
             "Every command runs as one process (`climio ...`) or on N ranks (`mpiexec -n N climio ...`).", ""]
    lines += command_section(["climio"], parser, " ".join((parser.description or "").split()))
    if parser.epilog:
        lines += ["```text", parser.epilog.strip(), "```", ""]
    lines += ["`-h`/`--help`, `--trace` and `--mpi-io`, above, are taken by every command and are not repeated "
              "below.", ""]
    for path, sub, summary in leaf_parsers(parser, ["climio"]):
        lines += command_section(path, sub, summary, COMMON)
    return "\n".join(lines).rstrip() + "\n"


# ------------------------------------------------------------------------------------------------- Python API

ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|obj):`~?([^`]+)`")


def inline(text: str) -> str:
    """reStructuredText's inline markup as Markdown."""
    text = ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1] if '~' in m.group(0) else m.group(1)}`", text)
    return text.replace("``", "`")


def docstring(obj: object) -> list[str]:
    """A docstring as Markdown: paragraphs, and numpydoc's sections as lists of names and meanings."""
    doc = inspect.getdoc(obj)
    if not doc:
        return []
    lines = doc.splitlines()
    out: list[str] = []
    k = 0
    section = None
    while k < len(lines):
        line = lines[k]
        if k + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[k + 1].strip()) and line.strip():
            section = line.strip()
            out += ["", f"**{section}**", ""]
            k += 2
            continue
        follows = k + 1 < len(lines) and lines[k + 1].startswith(" ")
        if section and line and not line.startswith(" ") and not follows:
            section = None
        if section and line and not line.startswith(" "):
            names = line.strip()
            body = []
            k += 1
            while k < len(lines) and (lines[k].startswith(" ") or not lines[k].strip()):
                if not lines[k].strip() and (k + 1 >= len(lines) or not lines[k + 1].startswith(" ")):
                    break
                body.append(lines[k].strip())
                k += 1
            label = ", ".join(f"`{n.strip()}`" for n in names.split(",")) if section != "Returns" else f"`{names}`"
            out.append(f"- {label}: {inline(' '.join(body))}")
            continue
        if not line.strip():
            out.append("")
            k += 1
            continue
        out.append(inline(line.strip()))
        k += 1
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    # join wrapped lines of a paragraph (Markdown does it too, but the page reads better in a diff this way)
    return text.splitlines()


def annotation(value: object) -> str:
    if value is inspect.Parameter.empty:
        return ""
    return value if isinstance(value, str) else getattr(value, "__name__", repr(value))


def signature(name: str, obj: object) -> str:
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"{name}(...)"
    parts = []
    star = False
    for p in sig.parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        if p.kind is p.VAR_POSITIONAL:
            star = True
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        text = prefix + p.name
        if p.annotation is not p.empty:
            text += f": {annotation(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}" if p.annotation is not p.empty else f"={p.default!r}"
        parts.append(text)
    result = f" -> {annotation(sig.return_annotation)}" if sig.return_annotation is not sig.empty else ""
    one = f"{name}({', '.join(parts)}){result}"
    if len(one) <= 100:
        return one
    return f"{name}(\n" + "".join(f"    {p},\n" for p in parts) + f"){result}"


def members(cls: type) -> list[tuple[str, object]]:
    """A class's public methods and properties, defined in climio, in source order."""
    out = []
    seen = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("climio"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            if isinstance(value, (property, classmethod, staticmethod)) or inspect.isfunction(value):
                seen.add(name)
                out.append((name, value))
    return out


def python_entry(module: str, name: str, obj: object) -> list[str]:
    lines = [f"### `{module}.{name}`", ""]
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        bases = ", ".join(b.__name__ for b in obj.__bases__)
        return [*lines, "```text", f"class {name}({bases})", "```", "", *docstring(obj), ""]
    if inspect.isclass(obj):
        lines += ["```text", signature(f"class {name}", obj).removesuffix(" -> None"), "```", ""]
        lines += docstring(obj) + [""]
        for member, value in members(obj):
            if isinstance(value, property):
                lines += [f"- `{member}` (property)" + (f": {inline(' '.join((inspect.getdoc(value) or '').split()))}"
                                                         if inspect.getdoc(value) else "")]
                continue
            function = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
            kind = " (class method)" if isinstance(value, classmethod) else ""
            doc = inspect.getdoc(function)
            text = " ".join(inline(doc).split()) if doc else ""
            lines += [f"- `{signature(member, function).replace(chr(10), ' ').replace('    ', '')}`{kind}"
                      + (f": {text}" if text else "")]
        lines.append("")
        return lines
    lines += ["```text", signature(name, obj), "```", ""]
    lines += docstring(obj) + [""]
    return lines


def python_page() -> str:
    lines = ["# Python API reference", "",
             "Generated from the docstrings by `scripts/reference.py` (`make docs`); do not edit by hand. Guides "
             "with examples: [extreme value analysis](../tutorial-eva.md), [model I/O](../tutorial-model-io.md), "
             "[the storage layer](../storage.md).", ""]
    for module, names, about in PYTHON_API:
        mod = importlib.import_module(module)
        lines += [f"## `{module}`", "", about, ""]
        for name in names:
            lines += python_entry(module, name, getattr(mod, name))
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


def pages() -> dict[str, str]:
    """File name under docs/reference/ -> its text."""
    return {"commands.md": commands_page(), "python.md": python_page()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a page is stale")
    args = parser.parse_args()
    stale = []
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        path = OUT / name
        if path.exists() and path.read_text() == text:
            continue
        stale.append(name)
        if not args.check:
            path.write_text(text)
    if args.check and stale:
        print(f"stale: {', '.join(stale)} (run make docs)", file=sys.stderr)
        sys.exit(1)
    for name in stale:
        print(f"wrote docs/reference/{name}")


if __name__ == "__main__":
    main()
