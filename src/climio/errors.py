"""climio's two exception types: bad input (exit status 2) and run-time I/O faults (exit status 1)."""

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager


class ClimioError(Exception):
    """A user-facing error: a one-line message naming the file, variable or option.

    ``collective`` is True when every rank of the job raises the same error at
    the same point (the check ran on all ranks, or its verdict was broadcast),
    so the job can end cleanly instead of being aborted.
    """

    def __init__(self, message: str, *, collective: bool = False) -> None:
        super().__init__(message)
        self.collective = collective


class IOFault(ClimioError):
    """A run-time fault of the machine, not of the input (no space left on device, file too large, a write that
    did not complete): the CLI turns it into exit status 1. Nothing is published."""


@contextmanager
def api_words(words: Mapping[str, str]) -> Iterator[None]:
    """Re-raise the block's ClimioError in the Python API's words: the checks the commands share name the
    commands' flags (``pass --overwrite (-O)``, ``--max-missing``), and ``words`` maps each flag to what the
    caller passed instead (``overwrite=True``, ``max_missing``). The error keeps its type and ``collective``."""
    try:
        yield
    except ClimioError as err:
        flags = "|".join(re.escape(flag) for flag in sorted(words, key=len, reverse=True))
        err.args = (re.sub(rf"(?<![\w-])(?:{flags})(?![\w-])", lambda m: words[m.group(0)], str(err)),)
        raise
