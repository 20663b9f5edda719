"""Under mpiexec: ``.climio.subset`` of files opened with ``climio.open_mfdataset``, written to OUT
(tests/test_xarray_backend.py compares it with the command's file).

    python xr_subset.py OUT [-d RANGE ...] [-b BOX [--touching] [--mask]] IN [IN ...]
"""

from __future__ import annotations

import argparse

import climio
import climio.xr  # noqa: F401 (registers .climio)
from climio.core import mpi


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("-d", action="append", default=[])
    parser.add_argument("-b")
    parser.add_argument("--touching", action="store_true")
    parser.add_argument("--mask", action="store_true")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    comm = mpi.world()
    with climio.open_mfdataset(args.files) as dataset:
        dataset.climio.subset(*args.d, box=args.b, path=args.out, comm=comm, touching=args.touching,
                              mask=args.mask).close()


if __name__ == "__main__":
    main()
