"""The ``climio`` command's entry point (and ``python -m climio``).

A stop signal can come while the command is still importing its libraries (a second on a busy node): from the
first instant it ends the process with one line and status 128 + signal, never a traceback. The command installs
its own handlers once it knows what it writes (``climio.cli.run``).
"""

import os
import signal


def _stopped_before_start(signum: int, frame: object) -> None:
    os.write(2, f"climio: stopped by {signal.Signals(signum).name} before it began; nothing written\n".encode())
    os._exit(128 + signum)


def main() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _stopped_before_start)
    from climio.cli import main as command

    command()


if __name__ == "__main__":
    main()
