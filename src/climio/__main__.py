"""The ``climio`` command's entry point (and ``python -m climio``).

A stop signal can come while the command is still importing its libraries (a second on a busy node): from the
first instant it ends the process with one line and status 128 + signal, never a traceback. The command installs
its own handlers once it knows what it writes (``climio.cli.run``). Once the command has ended, the stop signals
are ignored: the interpreter's shutdown (MPI_Finalize among it) would otherwise put back their default action,
which would end a finished command with a signal's status instead of its own.
"""

import os
import signal


def _stopped_before_start(signum: int, frame: object) -> None:
    os.write(2, f"climio: stopped by {signal.Signals(signum).name} before it began; nothing written\n".encode())
    os._exit(128 + signum)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def main() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, _stopped_before_start)
    from climio.cli import main as command

    try:
        command()
    finally:
        for signum in STOP_SIGNALS:  # the interpreter's shutdown keeps SIG_IGN as it is (not a Python handler)
            signal.signal(signum, signal.SIG_IGN)


if __name__ == "__main__":
    main()
