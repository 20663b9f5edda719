#!/usr/bin/env bash
# climio as `pip install` gives it: a plain virtual environment, everything from PyPI (netCDF4's wheel: serial
# netCDF-C and HDF5, no PnetCDF), then tests/test_pip_env.py's comparison with the full installation in .venv.
#   make check-pip            (needs `make install` first, and the network)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/climio-pip-XXXXXX")
trap 'rm -rf "$work"' EXIT
say() { echo "climio check-pip: $*"; }

say "creating a plain venv in $work and installing the repository from PyPI's packages"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip --disable-pip-version-check -q install "$root"
"$work/venv/bin/python" -c "import netCDF4, sys; sys.exit(bool(netCDF4.__has_pnetcdf_support__ or netCDF4.__has_parallel4_support__))" \
    || { say "pip gave a netCDF4 with a parallel library: this check wants PyPI's serial wheel"; exit 1; }
"$work/venv/bin/climio" info
"$work/venv/bin/climio" info --compile
cd "$root"
CLIMIO_PIP_PYTHON=$work/venv/bin/python .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_pip_env.py
