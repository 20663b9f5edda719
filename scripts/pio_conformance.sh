#!/usr/bin/env bash
# Judge climio's PIO API (pio.h, libpioc, the Fortran module pio, libpiof) with PIO2's own programs.
#
#   scripts/pio_conformance.sh [options] PIO_SOURCE_DIR [WORK_DIR]
#
# PIO_SOURCE_DIR is a checkout of PIO2 (NCAR/ParallelIO, e.g. tag pio2_7_0). The script
#   1. builds PIO2 itself with cmake (C and Fortran, PnetCDF and netCDF-4, no timing) and, apart, its GPTL
#      (pioperf's timers) into WORK_DIR/pio2 and WORK_DIR/gptl, once: a stamp file keeps them until the flags,
#      the source directory or a file of its library changes; the build output is in WORK_DIR/pio2/build.log;
#   2. builds each program from its unchanged sources twice: against PIO2, and against climio with
#      `pkg-config --cflags --libs pio` from climio's prefix (Fortran programs: the same, plus -lpiof if the
#      flags lack it); a program that does not compile or link is a row "build failed", not a stop;
#   3. runs every program in a fresh directory under `timeout`, once linked with PIO2 and once with climio,
#      at the rank counts of PIO's own tests, and compares the netCDF files the two runs wrote with
#      scripts/pio_compare.py (file names, format, dimensions, variables, types, values byte for byte,
#      attributes but `history`);
#   4. prints a table (program, ranks, iotypes, result) and pioperf's timing lines.
#
# Programs: examples/c (example1, example2, examplePio, darray_no_async, darray_async, piorcw),
# tests/cunit/test_darray*.c, tests/performance/pioperformance.F90 (pioperf, one run per iotype on a small
# generated decomposition and on a CMAQ-CA-shaped one, 89 x 134 x 35 on a 2 x 2 grid) and
# examples/f03/examplePio.F90 and exampleAsyncPio.F90. Iotypes "loop": the program writes a file per iotype itself; "none": no file.
#
# Options:
#   --climio-prefix DIR   where climio is installed (default: the .venv of this repository); its
#                         lib/pkgconfig/pio.pc gives the flags
#   --only NAME[,NAME]    run only these rows (a name matches a row that starts with it: test_darray, pioperf)
#   --timeout SECONDS     limit on each run (default 120)
#   --pio2-only           build and run the PIO2 half only (checks the machine and the reference)
#   --rebuild             build PIO2 again even if its stamp is current
#   --speed REPS          then time pioperf on the CMAQ-CA-shaped decomposition (20 variables, 3 frames, 2 I/O
#                         tasks, 4 ranks) REPS times per iotype, PIO2's and climio's runs interleaved, and print
#                         each side's median MB/s by iotype, rearranger and direction, with the ratio
#   --busy                with --speed: a process keeping one core busy runs beside every timed run
#   --preload             with --speed: climio's runs preload libclimio_collectives.so (ranks that wait in
#                         small collective calls yield their core; see docs/model-api.md)
# Environment: NETCDF_PC, the pkg-config name of the parallel netCDF-C (default netcdf-pnetcdf).
#
# Exit status: 0 when every program that runs with PIO2 also runs with climio and writes the same files,
# 1 otherwise, 2 when PIO2 itself cannot be built or the arguments are wrong. Everything the script writes
# is under WORK_DIR (default ${TMPDIR:-/tmp}/climio-pio-conformance): runs/NAME/{pio2,climio}/ hold each
# run's files, runs/NAME/{pio2,climio}.{out,err} its output, runs/NAME/compare.txt the file-by-file verdict.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
climio_prefix="$repo/.venv"
only=""
run_timeout=120
pio2_only=0
rebuild=0
speed_reps=0
busy=0
preload=0
positional=()
while [ $# -gt 0 ]; do
    case "$1" in
        --climio-prefix) climio_prefix=${2:?--climio-prefix needs a directory}; shift 2 ;;
        --climio-prefix=*) climio_prefix=${1#*=}; shift ;;
        --only) only=${2:?--only needs names}; shift 2 ;;
        --only=*) only=${1#*=}; shift ;;
        --timeout) run_timeout=${2:?--timeout needs seconds}; shift 2 ;;
        --timeout=*) run_timeout=${1#*=}; shift ;;
        --pio2-only) pio2_only=1; shift ;;
        --rebuild) rebuild=1; shift ;;
        --speed) speed_reps=${2:?--speed needs a count}; shift 2 ;;
        --busy) busy=1; shift ;;
        --preload) preload=1; shift ;;
        -h|--help) sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "pio_conformance.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) positional+=("$1"); shift ;;
    esac
done
if [ ${#positional[@]} -lt 1 ] || [ ${#positional[@]} -gt 2 ]; then
    echo "usage: scripts/pio_conformance.sh [options] PIO_SOURCE_DIR [WORK_DIR]   (--help tells more)" >&2
    exit 2
fi
for d in src/clib examples/c tests/cunit tests/performance examples/f03; do
    if [ ! -d "${positional[0]}/$d" ]; then
        echo "pio_conformance.sh: ${positional[0]} is not a PIO2 checkout (no $d)" >&2
        exit 2
    fi
done
src=$(cd "${positional[0]}" && pwd)
work=${positional[1]:-${TMPDIR:-/tmp}/climio-pio-conformance}
mkdir -p "$work" || exit 2
work=$(cd "$work" && pwd)
case "$run_timeout" in ''|*[!0-9]*) echo "pio_conformance.sh: --timeout takes whole seconds" >&2; exit 2 ;; esac
climio_python="$climio_prefix/bin/python"
[ -x "$climio_python" ] || climio_python=python3

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Many ranks on few cores: ranks waiting in MPI give the core away instead of spinning.
export OMPI_MCA_mpi_yield_when_idle=1

# ---------------------------------------------------------------- the netCDF and PnetCDF of this machine
netcdf_pc=${NETCDF_PC:-netcdf-pnetcdf}
if ! pkg-config --exists "$netcdf_pc"; then
    echo "pio_conformance.sh: pkg-config knows no $netcdf_pc (set NETCDF_PC to the parallel netCDF-C's name)" >&2
    exit 2
fi
nc_inc=$(pkg-config --variable=prefix "$netcdf_pc")/include
[ -f "$nc_inc/netcdf.h" ] || nc_inc=$(pkg-config --variable=includedir "$netcdf_pc")
nc_cflags="-I$nc_inc $(pkg-config --cflags "$netcdf_pc")"
nc_libs=$(pkg-config --libs "$netcdf_pc")
pn_inc=$(pnetcdf-config --includedir)
pn_libdir=$(pnetcdf-config --libdir)

# ---------------------------------------------------------------- 1. PIO2, the reference
pio2="$work/pio2"
pio2_prefix="$pio2/install"
gptl="$work/gptl"
mkdir -p "$pio2/pkgconfig-shim"
# PIO's cmake looks for netcdf.pc, and for netcdf-fortran.pc when Fortran is on: the parallel netCDF-C under
# that name, and a stand-in for netCDF-Fortran, which PIO2's Fortran library does not use (it calls the C one).
cat > "$pio2/pkgconfig-shim/netcdf.pc" <<EOF
Name: netCDF
Description: netCDF-C with PnetCDF and parallel HDF5 ($netcdf_pc)
Version: $(pkg-config --modversion "$netcdf_pc")
Cflags: $nc_cflags
Libs: $nc_libs
EOF
sed 's/^Name: .*/Name: netCDF-Fortran/; s/^Description: .*/Description: stand-in, PIO2 Fortran calls netCDF-C/' \
    "$pio2/pkgconfig-shim/netcdf.pc" > "$pio2/pkgconfig-shim/netcdf-fortran.pc"
cmake_flags=(-DCMAKE_BUILD_TYPE=Debug -DBUILD_SHARED_LIBS=ON
             "-DCMAKE_INSTALL_PREFIX=$pio2_prefix" "-DCMAKE_INSTALL_RPATH=$pio2_prefix/lib"
             -DPIO_ENABLE_FORTRAN=ON -DPIO_ENABLE_TIMING=OFF -DWITH_PNETCDF=ON
             -DPIO_ENABLE_DOC=OFF -DPIO_ENABLE_TESTS=OFF -DPIO_ENABLE_EXAMPLES=OFF
             "-DUSER_CMAKE_MODULE_PATH=$src/cmake" "-DGENF90_PATH=$src/scripts")
# GPTL (src/gptl: the timers pioperf calls through perf_mod) on its own: PIO2 itself is built without timing,
# and climio's builds of pioperf see no PIO2 file.
gptl_flags=(-DBUILD_SHARED_LIBS=ON "-DCMAKE_INSTALL_PREFIX=$gptl" "-DCMAKE_MODULE_PATH=$src/cmake"
            -DCMAKE_Fortran_FLAGS=-fallow-argument-mismatch)
stamp_text="source $src
flags ${cmake_flags[*]}
gptl ${gptl_flags[*]}
netcdf $netcdf_pc"
if [ "$rebuild" = 1 ] || [ ! -f "$pio2/stamp" ] || [ "$(cat "$pio2/stamp")" != "$stamp_text" ] \
        || [ -n "$(find "$src/src" "$src/cmake" "$src/CMakeLists.txt" -newer "$pio2/stamp" -print -quit)" ] \
        || [ ! -f "$pio2_prefix/lib/libpioc.so" ] || [ ! -f "$gptl/lib/libgptl.so" ]; then
    echo "building PIO2 from $src into $pio2 (log: $pio2/build.log)"
    rm -rf "$pio2/build" "$pio2/build-gptl" "$pio2_prefix" "$gptl" "$pio2/stamp"
    if (set -e
        export CC=mpicc FC=mpifort
        echo "+ cmake ${cmake_flags[*]} $src"
        PKG_CONFIG_PATH="$pio2/pkgconfig-shim" cmake -S "$src" -B "$pio2/build" "${cmake_flags[@]}"
        echo "+ make"
        make -C "$pio2/build" -j"$(nproc)"
        echo "+ make install"
        make -C "$pio2/build" install
        echo "+ cmake ${gptl_flags[*]} $src/src/gptl"
        cmake -S "$src/src/gptl" -B "$pio2/build-gptl" "${gptl_flags[@]}"
        echo "+ make install (GPTL)"
        make -C "$pio2/build-gptl" -j"$(nproc)" install) > "$pio2/build.log" 2>&1; then
        echo "$stamp_text" > "$pio2/stamp"
    else
        first=$(grep -v '^+ ' "$pio2/build.log" | grep -m1 -E 'error|Error|undefined reference|No such file' \
                || tail -n1 "$pio2/build.log")
        echo "PIO2 build failed: ${first} (whole output: $pio2/build.log)"
        exit 2
    fi
fi
# PIO2 ships no pkg-config file; this one gives its flags the way climio's pio.pc gives climio's.
mkdir -p "$pio2/pkgconfig"
cat > "$pio2/pkgconfig/pio.pc" <<EOF
prefix=$pio2_prefix
Name: PIO
Description: PIO2 built from $src (the reference)
Version: 2
Cflags: -I\${prefix}/include $nc_cflags -I$pn_inc
Libs: -L\${prefix}/lib -Wl,-rpath,\${prefix}/lib -lpioc $nc_libs -L$pn_libdir -lpnetcdf
EOF

# PIO2's examples and cunit tests include PIO2's private headers pio_internal.h and pio_error.h, for the error
# macros of its tests (ERR, MPIERR, AERR, PBAIL), one constant and one helper of its library. climio installs
# PIO2's public API only, so the programs built against climio get these from here: headers and a small
# library written for this harness (an archive, so that a program that defines err_buffer itself keeps its own).
shim="$work/climio-shim"
mkdir -p "$shim"
cat > "$shim/pio_error.h" <<'SHIM'
/* The error macros of PIO2's test programs, for building them against climio (scripts/pio_conformance.sh). */
#ifndef CLIMIO_PIO_TEST_ERROR_H
#define CLIMIO_PIO_TEST_ERROR_H
#include <config.h>
#include <pio.h>
#define ERR(e) do { fprintf(stderr, "%d Error %d in %s, line %d\n", my_rank, e, __FILE__, __LINE__); \
                     MPI_Finalize(); return e; } while (0)
#define PBAIL(e) do { fprintf(stderr, "%d Error %d in %s, line %d\n", my_rank, e, __FILE__, __LINE__); \
                      ret = e; goto exit; } while (0)
#define AERR(e) do { fprintf(stderr, "%d Async Error %d in %s, line %d\n", my_rank, e, __FILE__, __LINE__); \
                     PIOc_free_iosystem(iosysid); return e; } while (0)
#define MPIERR(e) do { MPI_Error_string(e, err_buffer, &resultlen); \
                       fprintf(stderr, "MPI error, line %d, file %s: %s\n", __LINE__, __FILE__, err_buffer); \
                       MPI_Finalize(); return PIO_EIO; } while (0)
extern char err_buffer[MPI_MAX_ERROR_STRING];
extern int resultlen;
#endif
SHIM
cat > "$shim/pio_internal.h" <<'SHIM'
/* What PIO2's test programs take from PIO2's private header, for building them against climio. */
#ifndef CLIMIO_PIO_TEST_INTERNAL_H
#define CLIMIO_PIO_TEST_INTERNAL_H
#include <stdint.h>
#include <pio_error.h>
#define NETCDF_INT_FLOAT_SIZE 4  /* bytes of an NC_INT or NC_FLOAT */
int find_mpi_type(int pio_type, MPI_Datatype *mpi_type, int *type_size);  /* MPI type and size of a netCDF type */
/* climio's libpioc has these two of PIO2's private calls, which its tests use */
int PIOc_put_vars_tc(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const PIO_Offset *stride,
                     nc_type xtype, const void *buf);
int PIOc_get_vars_tc(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const PIO_Offset *stride,
                     nc_type xtype, void *buf);
#endif
SHIM
cat > "$shim/shim_errors.c" <<'SHIM'
#include <mpi.h>
char err_buffer[MPI_MAX_ERROR_STRING];
int resultlen;
SHIM
cat > "$shim/shim_types.c" <<'SHIM'
#include <pio.h>
int find_mpi_type(int pio_type, MPI_Datatype *mpi_type, int *type_size)
{
    MPI_Datatype types[] = {MPI_DATATYPE_NULL, MPI_BYTE, MPI_CHAR, MPI_SHORT, MPI_INT, MPI_FLOAT, MPI_DOUBLE,
                            MPI_UNSIGNED_CHAR, MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_LONG_LONG,
                            MPI_UNSIGNED_LONG_LONG};
    int sizes[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
    if (pio_type < PIO_BYTE || pio_type > PIO_UINT64)
        return PIO_EBADTYPE;
    if (mpi_type)
        *mpi_type = types[pio_type];
    if (type_size)
        *type_size = sizes[pio_type];
    return PIO_NOERR;
}
SHIM

# The config.h PIO's own build makes, for the programs that include it (C and Fortran preprocessors alike).
common="$work/common"
mkdir -p "$common"
version_part() { sed -n "s/^set(VERSION_$1 \([0-9]*\) .*/\1/p" "$src/CMakeLists.txt" | head -n1; }
cat > "$common/config.h" <<EOF
#ifndef _PIO_CONFIG_
#define _PIO_CONFIG_
#define PIO_VERSION_MAJOR $(version_part MAJOR)
#define PIO_VERSION_MINOR $(version_part MINOR)
#define PIO_VERSION_PATCH $(version_part PATCH)
#define PIO_ENABLE_LOGGING 0
#define SIZEOF_MPI_OFFSET 8
#define PIO_BUFFER_SIZE 134217728
#define USE_VARD 0
#define HAVE_NETCDF4
#define HAVE_NETCDF_PAR
#define HAVE_PAR_FILTERS
#define _NETCDF4
#define _PNETCDF
#endif
EOF

# ---------------------------------------------------------------- pioperf's decompositions
# PIO's text decomposition format (PIOc_writemap, version 2001): dimensions in Fortran order, then for each
# task its index and map length and the 1-based offsets (0: a hole). Blocks of a 2 x 2 grid of tasks over
# (x, y), every layer; in the small one task 1 also has a hole.
inputs="$work/inputs"
mkdir -p "$inputs"
write_decomp() {  # NX NY NZ HOLE_TASK FILE
    awk -v nx="$1" -v ny="$2" -v nz="$3" -v hole="$4" 'BEGIN {
        printf "version 2001 npes 4 ndims 3 \n%d %d %d \n", nx, ny, nz
        for (t = 0; t < 4; t++) {
            px = t % 2; py = int(t / 2)
            x0 = px ? int((nx + 1) / 2) : 0; x1 = px ? nx : int((nx + 1) / 2)
            y0 = py ? int((ny + 1) / 2) : 0; y1 = py ? ny : int((ny + 1) / 2)
            n = (x1 - x0) * (y1 - y0) * nz + (t == hole)
            printf "%d %d\n", t, n
            for (k = 0; k < nz; k++) for (j = y0; j < y1; j++) for (i = x0; i < x1; i++)
                printf "%d ", k * nx * ny + j * nx + i + 1
            if (t == hole) printf "0 "
            printf "\n"
        }
    }' > "$5.tmp" && mv "$5.tmp" "$5"
}
write_decomp 12 10 3 1 "$inputs/small.dat"
write_decomp 89 134 35 -1 "$inputs/ca.dat"
pioperf_nl() {  # DECOMP IOTYPE FILE [NVARS NFRAMES]
    cat > "$3" <<EOF
&pioperf
 decompfile = '$1',
 pio_typenames = '$2'
 rearrangers = 1,2
 nframes = ${5:-2}
 nvars = ${4:-2}
 niotasks = 2
/
EOF
}

# ---------------------------------------------------------------- the programs
# name|kind|sources (relative to PIO_SOURCE_DIR)|ranks|iotypes|extra inputs (decomp:iotype for pioperf)
programs=(
    "example1|c|examples/c/example1.c|4|loop|"
    "example2|c|examples/c/example2.c|4|loop|"
    "examplePio|c|examples/c/examplePio.c|4|netcdf|"
    "darray_no_async|c|examples/c/darray_no_async.c|16|loop|"
    "darray_async|c|examples/c/darray_async.c|5|none|"
    "piorcw|c|examples/c/piorcw.c|16|pnetcdf,netcdf4p|"
)
for f in "$src"/tests/cunit/test_darray*.c; do
    t=$(basename "$f" .c)
    programs+=("$t|c|tests/cunit/$t.c tests/cunit/test_common.c|4|loop|")
done
for d in small ca; do
    for io in pnetcdf netcdf netcdf4c netcdf4p; do
        programs+=("pioperf-$d-$io|f90|tests/performance/pioperformance.F90|4|$io|$d:$io")
    done
done
programs+=("examplePio_f90|f90|examples/f03/examplePio.F90|4|netcdf|")
programs+=("exampleAsyncPio_f90|f90|examples/f03/exampleAsyncPio.F90|4|netcdf|")

selected() {
    [ -z "$only" ] && return 0
    local n
    for n in ${only//,/ }; do
        case "$1" in "$n"*) return 0 ;; esac
    done
    return 1
}

# ---------------------------------------------------------------- building
bin="$work/bin"
rm -rf "$bin"
mkdir -p "$bin/pio2" "$bin/climio"
pc_dir() { if [ "$1" = pio2 ]; then echo "$pio2/pkgconfig"; else echo "$climio_prefix/lib/pkgconfig"; fi; }
pio_flags() { PKG_CONFIG_PATH="$(pc_dir "$1")" pkg-config "--$2" pio; }

# The test programs' shim library for the climio side (see climio-shim above), against climio's pio.h.
if [ -f "$(pc_dir climio)/pio.pc" ]; then
    # shellcheck disable=SC2046
    for s in errors types; do
        mpicc -std=c99 -c $(pio_flags climio cflags) "$shim/shim_$s.c" -o "$shim/shim_$s.o" || exit 2
    done
    rm -f "$shim/libpioshim.a"
    ar rcs "$shim/libpioshim.a" "$shim/shim_errors.o" "$shim/shim_types.o" || exit 2
fi

first_error() {  # LOG: the first line that tells what went wrong (not the echoed command)
    grep -v -E '^\+ |^[[:space:]]*$' "$1" | grep -m1 -E 'error|Error|undefined reference|cannot find|No such file' \
        || grep -v -E '^\+ |^[[:space:]]*$' "$1" | head -n1 | grep . || echo "(no output)"
}

# build SIDE NAME KIND SOURCES -> $bin/SIDE/EXE; status 0 or 1 with the reason in $bin/SIDE/EXE.why
build() {
    local side=$1 name=$2 kind=$3 sources=$4 exe log cflags libs s objs=() extra=()
    exe=$(exe_name "$name")
    log="$bin/$side/$exe.log"
    [ -x "$bin/$side/$exe" ] && return 0
    [ -f "$bin/$side/$exe.why" ] && return 1
    if [ "$side" = climio ] && [ ! -f "$(pc_dir climio)/pio.pc" ]; then
        echo "no pio.pc in $(pc_dir climio)" > "$bin/$side/$exe.why"
        return 1
    fi
    cflags=$(pio_flags "$side" cflags 2>"$log") && libs=$(pio_flags "$side" libs 2>>"$log") || {
        echo "pkg-config --cflags --libs pio: $(head -n1 "$log")" > "$bin/$side/$exe.why"
        return 1
    }
    for s in $sources; do objs+=("$src/$s"); done
    # PIO2's programs include PIO2's internal headers (pio_internal.h, pio_error.h), which PIO's own build
    # finds in src/clib; climio's build gets only what climio installs.
    local shim_lib=()
    if [ "$side" = pio2 ]; then
        extra+=("-I$src/src/clib")
    elif [ "$kind" = c ]; then
        extra+=("-I$shim")
        shim_lib=("$shim/libpioshim.a")
    fi
    {
        if [ "$kind" = c ]; then
            echo "+ mpicc -std=c99 -g -O0 -I$common -I$src/examples/c -I$src/tests/cunit $cflags ${extra[*]}" \
                 "${objs[*]} -o $exe $libs"
            # shellcheck disable=SC2086
            mpicc -std=c99 -g -O0 -I"$common" -I"$src/examples/c" -I"$src/tests/cunit" $cflags "${extra[@]}" \
                "${objs[@]}" "${shim_lib[@]}" -o "$bin/$side/$exe" $libs
        else
            case " $libs " in *" -lpiof "*) ;; *) libs="-lpiof $libs" ;; esac
            # pioperf: its read-back check too (DOREAD), and GPTL for its timers.
            case "$name" in
                pioperf*) extra+=(-DDOREAD "-I$gptl/include"); libs="$libs -L$gptl/lib -Wl,-rpath,$gptl/lib -lgptl" ;;
            esac
            echo "+ mpifort -cpp -g -O2 -ffree-line-length-none -fallow-argument-mismatch -I$common $cflags" \
                 "${extra[*]} ${objs[*]} -o $exe $libs"
            # -O2 (PIO's autotools default): gfortran then ends each string literal with a NUL; at -O0 they
            # run together, and pioperf's PIO_set_hint("nc_var_align_size", "1") hands PIO2's C library
            # (which expects C strings) a key running on into the next literal. Modules go to a directory of
            # their own, so the two sides never share one.
            mkdir -p "$bin/$side/$exe.mod"
            # shellcheck disable=SC2086
            mpifort -cpp -g -O2 -ffree-line-length-none -fallow-argument-mismatch -J"$bin/$side/$exe.mod" \
                -I"$common" $cflags "${extra[@]}" "${objs[@]}" -o "$bin/$side/$exe" $libs
        fi
    } >> "$log" 2>&1 || {
        first_error "$log" > "$bin/$side/$exe.why"
        return 1
    }
}
exe_name() { case "$1" in pioperf*) echo pioperf ;; *) echo "$1" ;; esac; }

# ---------------------------------------------------------------- running
runs="$work/runs"
mkdir -p "$runs"

first_line() {  # FILE: its first line that tells something (no blank, rule, backtrace or Open MPI runtime
               # chatter); with a PIO backtrace, the function that raised the error; where a PIO test program
               # stopped on a code ("N Error C in FILE, line L"), climio's line said among its tasks' stops, or
               # else just before the first, which names the fault (the lines before are the refusals the program
               # asked for)
    awk '/^[[:space:]]*$/ || /^[[:space:]=-]*$/ || /^Obtained [0-9]+ stack frames/ { next }
         /ORTE_ERROR_LOG|more process(es)? ha(s|ve) sent help message|Set MCA parameter "orte_base_help/ { next }
         /\(pio_err\+0x[0-9a-f]+\) \[0x[0-9a-f]+\]$/ { want = 1; next }
         /\[0x[0-9a-f]+\]$/ { if (want && !from && match($0, /\([A-Za-z_][A-Za-z0-9_]*\+/))
                                  from = substr($0, RSTART + 1, RLENGTH - 2)
                              want = 0; next }
         /Error -?[0-9]+ in .*, line [0-9]+$/ { if (!stop) stop = (prev != "" ? prev " (then: " $0 ")" : $0)
                                                 else if (among != "") { stop = among " (then: " $0 ")"; among = "" }
                                                 next }
         stop && /^climio: / && !among { among = $0 }  # said among the stops of the tasks, which print apart
         !line { line = $0 }
         { prev = $0 }
         END { if (stop != "") line = stop
               if (line != "" && from != "") line = line " [PIO error raised in " from "]"
               print substr(line, 1, 240) }' "$1" 2>/dev/null
}

# run SIDE NAME RANKS INPUT -> status of the run; the reason of a failure in $runs/NAME/SIDE.why
run() {
    local side=$1 name=$2 ranks=$3 input=$4 dir rc
    dir="$runs/$name/$side"
    rm -rf "$dir" "$runs/$name/$side.why"
    mkdir -p "$dir"
    if [ -n "$input" ]; then
        cp "$inputs/${input%%:*}.dat" "$dir/"
        pioperf_nl "${input%%:*}.dat" "${input#*:}" "$dir/pioperf.nl"
    fi
    SECONDS=0
    (cd "$dir" && timeout -k 10 "$run_timeout" mpiexec --oversubscribe -n "$ranks" "$bin/$side/$(exe_name "$name")") \
        > "$runs/$name/$side.out" 2> "$runs/$name/$side.err" < /dev/null
    rc=$?
    printf ' %s %ss' "$side" "$SECONDS" >&2
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        echo "timed out after ${run_timeout} s" > "$runs/$name/$side.why"
        return "$rc"
    fi
    if [ "$rc" != 0 ]; then
        local line
        line=$(first_line "$runs/$name/$side.err")
        [ -n "$line" ] || line=$(grep -v -E '^[[:space:]]*$' "$runs/$name/$side.out" | tail -n1 | cut -c1-200)
        echo "exit $rc: ${line:-no output}" > "$runs/$name/$side.why"
        return "$rc"
    fi
    if grep -q 'ERROR: INPUT/OUTPUT data mismatch' "$runs/$name/$side.out"; then
        echo "exit 0 but $(grep -m1 'ERROR: INPUT/OUTPUT data mismatch' "$runs/$name/$side.out" | sed 's/^ *//')" \
            > "$runs/$name/$side.why"
        return 1
    fi
    return 0
}

# ---------------------------------------------------------------- the table
rows=()
bad=0
counted=0
add_row() { rows+=("$1|$2|$3|$4"); }

for spec in "${programs[@]}"; do
    IFS='|' read -r name kind sources ranks iotypes input <<< "$spec"
    selected "$name" || continue
    rm -rf "$runs/$name"
    printf '%-34s' "$name" >&2
    if ! build pio2 "$name" "$kind" "$sources"; then
        add_row "$name" "$ranks" "$iotypes" "build failed (PIO2): $(cat "$bin/pio2/$(exe_name "$name").why")"
        echo " PIO2 build failed" >&2
        continue
    fi
    if ! run pio2 "$name" "$ranks" "$input"; then
        add_row "$name" "$ranks" "$iotypes" "PIO2 failed: $(cat "$runs/$name/pio2.why")"
        echo " PIO2 failed" >&2
        continue
    fi
    if [ "$pio2_only" = 1 ]; then
        # PIO2's files against themselves: counts them, and tells whether they read the same twice.
        n=$("$climio_python" "$here/pio_compare.py" "$runs/$name/pio2" "$runs/$name/pio2" 2>&1 | tail -n1)
        case "$n" in
            same*) n=${n#same (}; add_row "$name" "$ranks" "$iotypes" "PIO2 ran, ${n%)}" ;;
            *) add_row "$name" "$ranks" "$iotypes" "PIO2 ran, but its files do not read the same twice: $n" ;;
        esac
        echo " PIO2 ran" >&2
        continue
    fi
    counted=$((counted + 1))
    if ! build climio "$name" "$kind" "$sources"; then
        add_row "$name" "$ranks" "$iotypes" "build failed: $(cat "$bin/climio/$(exe_name "$name").why")"
        bad=$((bad + 1))
        echo " climio build failed" >&2
        continue
    fi
    if ! run climio "$name" "$ranks" "$input"; then
        add_row "$name" "$ranks" "$iotypes" "climio failed: $(cat "$runs/$name/climio.why")"
        bad=$((bad + 1))
        echo " climio failed" >&2
        continue
    fi
    ignore=()
    case "$name" in pioperf*) ignore=(--ignore-values rundate) ;; esac  # pioperf writes the date and time
    "$climio_python" "$here/pio_compare.py" "$runs/$name/pio2" "$runs/$name/climio" "${ignore[@]}" \
        > "$runs/$name/compare.txt" 2>&1
    verdict=$(tail -n1 "$runs/$name/compare.txt")
    case "$verdict" in
        same*) add_row "$name" "$ranks" "$iotypes" "$verdict"; echo " same" >&2 ;;
        differs*) add_row "$name" "$ranks" "$iotypes" "$verdict"; bad=$((bad + 1)); echo " differs" >&2 ;;
        *) add_row "$name" "$ranks" "$iotypes" "compare failed: $(first_error "$runs/$name/compare.txt")"
           bad=$((bad + 1)); echo " compare failed" >&2 ;;
    esac
done

echo
printf '%-28s %5s  %-16s %s\n' program ranks iotypes result
printf '%-28s %5s  %-16s %s\n' ---------------------------- ----- ---------------- ------
for row in "${rows[@]}"; do
    IFS='|' read -r name ranks iotypes result <<< "$row"
    printf '%-28s %5s  %-16s %s\n' "$name" "$ranks" "$iotypes" "$result"
done

timing=0
for spec in "${programs[@]}"; do
    IFS='|' read -r name _ <<< "$spec"
    case "$name" in pioperf*) selected "$name" || continue ;; *) continue ;; esac
    for side in pio2 climio; do
        [ -f "$runs/$name/$side.out" ] || continue
        if [ "$timing" = 0 ]; then
            echo
            echo "pioperf timing: RESULT: write|read, rearranger, iotype (1 pnetcdf, 2 netcdf, 3 netcdf4c," \
                 "4 netcdf4p), I/O tasks, variables, MB/s, seconds (writes)"
            timing=1
        fi
        grep 'RESULT:' "$runs/$name/$side.out" | sed "s/^ */  $(printf '%-22s %-6s' "$name" "$side") /"
    done
done
# pioperf's speed, both sides interleaved (--speed REPS)
if [ "$speed_reps" -gt 0 ] && [ -x "$bin/pio2/pioperf" ] && [ -x "$bin/climio/pioperf" ]; then
    speed="$work/speed"
    rm -rf "$speed"
    mkdir -p "$speed"
    spinner=""
    if [ "$busy" = 1 ]; then
        "$climio_prefix/bin/python" -c "while True: pass" &
        spinner=$!
        trap 'kill $spinner 2>/dev/null' EXIT
    fi
    for rep in $(seq "$speed_reps"); do
        for io in pnetcdf netcdf netcdf4c netcdf4p; do
            for side in pio2 climio; do
                dir="$speed/$side-$io-$rep"
                mkdir -p "$dir"
                cp "$inputs/ca.dat" "$dir/"
                pioperf_nl ca.dat "$io" "$dir/pioperf.nl" 20 3
                preloaded=""
                if [ "$side" = climio ] && [ "$preload" = 1 ]; then
                    preloaded="$climio_prefix/lib/libclimio_collectives.so"
                fi
                (cd "$dir" && timeout "$run_timeout" mpiexec --oversubscribe -x LD_PRELOAD="$preloaded" -n 4 \
                    "$bin/$side/pioperf" > out.txt 2> err.txt)
                grep 'RESULT:' "$dir/out.txt" | sed "s/^/$side $io /" >> "$speed/results.txt"
                rm -f "$dir"/*.nc
            done
        done
    done
    echo
    if [ -n "$spinner" ]; then
        kill "$spinner" 2>/dev/null
    fi
    echo "pioperf speed: CMAQ-CA-shaped decomposition, 4 ranks, 2 I/O tasks, 20 variables, 3 frames; medians of" \
         "$speed_reps interleaved runs (MB/s)$([ "$busy" = 1 ] && echo ', one core kept busy')$([ "$preload" = 1 ] \
         && echo ', climio preloaded')"
    "$climio_prefix/bin/python" - "$speed/results.txt" <<'TABLE'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):  # SIDE IOTYPE RESULT: write|read REARRANGER IOTYPE TASKS NVARS MB/S [SECONDS]
    side, iotype, _, what, rearranger, _, _, _, rate = line.split()[:9]
    runs[iotype, what, rearranger, side].append(float(rate))
print(f"  {'iotype':10} {'op':5} {'rearr':7} {'PIO2':>9} {'climio':>9} {'ratio':>6}")
for iotype in ("pnetcdf", "netcdf", "netcdf4c", "netcdf4p"):
    for what in ("write", "read"):
        for rearranger in ("BOX", "SUBSET"):
            pio2, climio = runs[iotype, what, rearranger, "pio2"], runs[iotype, what, rearranger, "climio"]
            if pio2 and climio:
                a, b = statistics.median(pio2), statistics.median(climio)
                print(f"  {iotype:10} {what:5} {rearranger:7} {a:9.1f} {b:9.1f} {b / a:6.2f}")
TABLE
fi
echo
if [ "$pio2_only" = 1 ]; then
    echo "PIO2 half only: ${#rows[@]} programs; files and output in $runs"
    exit 0
fi
if [ "$bad" = 0 ]; then
    echo "climio passes every one of the $counted programs that run with PIO2 (files and output in $runs)"
    exit 0
fi
echo "climio fails $bad of the $counted programs that run with PIO2 (files and output in $runs)"
exit 1
