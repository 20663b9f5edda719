"""Open each file named on the command line with climio's storage layer and read every variable.

Prints one line per file: ``OK path``, ``REFUSED path: message`` (a ClimioError), ``WRONG path: variables``
(climio's own reading of the header disagrees with netCDF-C's) or ``FAILED path: Type: message`` (anything
else). Run under a memory cap by tests/test_header_fuzz.py: a crash or a runaway
allocation inside a library ends this process, and the last line printed names the file that did it.
"""

from __future__ import annotations

import sys

import numpy as np

from climio.core import ncio
from climio.errors import ClimioError


def main(paths: list[str]) -> None:
    for path in paths:
        print(f"START {path}", flush=True)
        try:
            wrong = []
            with ncio.open(path) as ds:
                for var in ds.schema.variables:
                    if var.is_text:
                        ds.read_text(var.name)
                        continue
                    # climio's own reading of the header (the file's bytes through MPI-IO) must agree with netCDF-C
                    library, stored = ds.read(var.name), ds.read(var.name, as_stored=True)
                    if not np.array_equal(library, stored.astype(library.dtype), equal_nan=library.dtype.kind == "f"):
                        wrong.append(var.name)
            print(f"WRONG {path}: {', '.join(wrong)}" if wrong else f"OK {path}", flush=True)
        except ClimioError as err:
            print(f"REFUSED {path}: {err}", flush=True)
        except Exception as err:  # noqa: BLE001 - the test reports every other outcome
            print(f"FAILED {path}: {type(err).__name__}: {err}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
