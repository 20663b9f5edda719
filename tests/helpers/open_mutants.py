"""Open each file named on the command line with climio's storage layer and read every variable.

Prints one line per file: ``OK path``, ``REFUSED path: message`` (a ClimioError) or ``FAILED path: Type:
message`` (anything else). Run under a memory cap by tests/test_header_fuzz.py: a crash or a runaway
allocation inside a library ends this process, and the last line printed names the file that did it.
"""

from __future__ import annotations

import sys

from climio.core import ncio
from climio.errors import ClimioError


def main(paths: list[str]) -> None:
    for path in paths:
        print(f"START {path}", flush=True)
        try:
            with ncio.open(path) as ds:
                for var in ds.schema.variables:
                    ds.read_text(var.name) if var.is_text else ds.read(var.name)
            print(f"OK {path}", flush=True)
        except ClimioError as err:
            print(f"REFUSED {path}: {err}", flush=True)
        except Exception as err:  # noqa: BLE001 - the test reports every other outcome
            print(f"FAILED {path}: {type(err).__name__}: {err}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
