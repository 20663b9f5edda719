"""climio's two exception types: bad input (exit status 2) and run-time I/O faults (exit status 1)."""


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
