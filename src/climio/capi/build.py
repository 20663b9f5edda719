"""Build ``libclimio`` and PIO2's API on it, and install them with their headers, modules and package files.

    python -m climio.capi.build PREFIX

installs ``PREFIX/lib/libclimio.so`` and ``PREFIX/include/climio.h`` (C), ``PREFIX/lib/libclimiof.so`` and
``PREFIX/include/climio_io.mod`` (Fortran), ``PREFIX/lib/libclimio_py.so`` and ``PREFIX/lib/pkgconfig/climio.pc``;
and PIO2's API (:mod:`climio.pio`): ``libpioc.so`` and ``pio.h``, ``libpiof.so`` and ``pio.mod``, ``pio.pc`` and
CMake's ``lib/cmake/PIO/PIOConfig.cmake``; and ``libclimio_collectives.so``, which climio's processes load ahead
of MPI to count their collective calls and wait for the small ones without spinning (:mod:`climio.core.collectives`).

The C API is declared once, in ``include/climio.h``. ``libclimio.so`` is plain C and MPI (``libclimio.c``,
``served.c``): with I/O servers in the launch it speaks their protocol itself. Without them (attached mode)
it loads ``libclimio_py.so`` with ``dlopen`` on its first call: cffi's embedding mode, whose
``climiopy_<call>`` functions are implemented in Python (:mod:`climio.capi.bridge`). That library starts
the interpreter and adds this environment's site-packages (baked in at build time), so a model needs no
PYTHONPATH. The compilers are ``$MPICC`` and ``$MPIFC`` (default ``mpicc``, ``mpifort``): the header
includes ``mpi.h``, and a ``.mod`` file is only read by the compiler that wrote it, so build with the model's
own. Without a Fortran compiler only the C API is installed.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
HEADER = HERE / "include" / "climio.h"
C_SOURCES = ("libclimio.c", "served.c")
PIO = HERE.parent / "pio"  # PIO2's API on climio: pio.h, libpioc (its Python side in libclimio_py.so too)
PIO_HEADER = PIO / "include" / "pio.h"
COUNTER = HERE.parent / "core" / "collectives.c"  # collective MPI calls counted, small ones waited for sleeping
COUNTER_LIBRARY = "libclimio_collectives.so"
ONLY_IN_C = ("climio_init_intracomm", "climio_init_servers", "climio_init_servers_f", "climio_model_comm",
             "climio_model_comm_f", "climio_strerror")  # they choose the mode, or need no Python


def python_api(header: str) -> str:
    """The header's prototypes that Python implements, renamed ``climiopy_*``, as cffi's ``embedding_api``
    wants them."""
    prototypes = re.findall(r"^\w[\w ]*\bclimio_\w+\([^;]*\);", header, flags=re.M)
    return "\n".join(" ".join(p.split()).replace(" climio_", " climiopy_", 1) for p in prototypes
                     if p.split("(")[0].split()[-1] not in ONLY_IN_C)


def init_code() -> str:
    """What the embedded interpreter runs once: find this environment's packages, then bind the entry points."""
    sites = [p for p in site.getsitepackages() if os.path.isdir(p)]
    return (f"import os, sys, site\n"
            f"os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')  # no BLAS thread pool beside the model's ranks\n"
            f"for path in {sites!r}:\n"
            f"    site.addsitedir(path)\n"
            f"if not getattr(sys, 'argv', None):\n"
            f"    sys.argv = ['libclimio']\n"
            f"from _climio_capi import ffi\n"
            f"from climio.capi import bridge\n"
            f"bridge.attach(ffi)\n"
            f"from climio.pio import bridge as pio_bridge\n"
            f"pio_bridge.attach(ffi)\n")


def install(built: str | Path, target: Path) -> None:
    """Put a built library in place under a new inode (a copy renamed over the old one): a process that has the
    old one loaded, this one included (``import climio`` loads libclimio_collectives.so), keeps its pages."""
    staged = target.with_name(f".{target.name}.new")
    shutil.copy(built, staged)
    os.replace(staged, target)


def build(prefix: Path) -> Path:
    import cffi

    header = HEADER.read_text()
    builder = cffi.FFI()
    builder.embedding_api(python_api(header) + "\n" + (PIO / "pio_python.h").read_text().split("*/", 1)[1])
    libdir = sysconfig.get_config_var("LIBDIR")
    builder.set_source("_climio_capi", "", extra_link_args=[f"-Wl,-rpath,{libdir}"])
    builder.embedding_init_code(init_code())
    compiler = os.environ.get("MPICC", "mpicc")
    os.environ.setdefault("CC", compiler)
    os.environ.setdefault("LDSHARED", f"{os.environ['CC']} -shared")
    lib = prefix / "lib"
    (lib / "pkgconfig").mkdir(parents=True, exist_ok=True)
    (prefix / "include").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        built = builder.compile(tmpdir=work, target="libclimio_py.*")
        install(built, lib / "libclimio_py.so")
        subprocess.run([compiler, "-std=c11", "-O2", "-Wall", "-fPIC", "-shared", f"-I{HEADER.parent}", f"-I{HERE}",
                        *(str(HERE / c) for c in C_SOURCES), "-Wl,-soname,libclimio.so", "-o",
                        os.path.join(work, "libclimio.so"), "-ldl", "-lm"], check=True)
        install(os.path.join(work, "libclimio.so"), lib / "libclimio.so")
        netcdf = netcdf_flags()
        subprocess.run([compiler, "-std=c11", "-O2", "-Wall", "-fPIC", "-shared", f"-I{PIO_HEADER.parent}", f"-I{PIO}",
                        f"-I{HEADER.parent}", f"-I{HERE}", *netcdf["cflags"], str(PIO / "libpioc.c"), str(PIO / "served_calls.c"),
                        "-Wl,-soname,libpioc.so", "-o", os.path.join(work, "libpioc.so"), f"-L{lib}", "-lclimio",
                        f"-Wl,-rpath,{lib}", *netcdf["libs"], "-lm"], check=True)
        install(os.path.join(work, "libpioc.so"), lib / "libpioc.so")
        subprocess.run([compiler, "-O2", "-Wall", "-fPIC", "-shared", str(COUNTER), "-o",
                        os.path.join(work, COUNTER_LIBRARY)], check=True)
        install(os.path.join(work, COUNTER_LIBRARY), lib / COUNTER_LIBRARY)
    shutil.copy(HEADER, prefix / "include" / "climio.h")
    shutil.copy(PIO_HEADER, prefix / "include" / "pio.h")
    fortran = build_fortran(prefix)
    (prefix / "lib" / "pkgconfig" / "climio.pc").write_text(pkg_config(prefix, fortran))
    write_pio_cmake_config(prefix, netcdf_flags(), fortran)
    (prefix / "lib" / "pkgconfig" / "pio.pc").write_text(pio_pkg_config(prefix, netcdf_flags(), fortran))
    return prefix / "lib" / "libclimio.so"


def netcdf_flags() -> dict[str, list[str]]:
    """The compile and link flags of the netCDF-C that netCDF4-python uses (PIO's header includes netcdf.h, and
    PIO programs call nc_* themselves): ``NETCDF4_INCDIR``/``NETCDF4_LIBDIR`` as the install script sets them,
    else Debian's PnetCDF flavour (the install script's default), else pkg-config's netcdf."""
    multiarch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
    debian = f"/usr/lib/{multiarch or 'x86_64-linux-gnu'}/netcdf/pnetcdf"
    include = os.environ.get("NETCDF4_INCDIR") or f"{debian}/include"
    libdir = os.environ.get("NETCDF4_LIBDIR") or debian
    if not os.path.isfile(os.path.join(include, "netcdf.h")):
        include = subprocess.run(["pkg-config", "--variable=includedir", "netcdf"], capture_output=True,
                                 text=True).stdout.strip()
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "netcdf"], capture_output=True,
                                text=True).stdout.strip()
    if not include or not os.path.isfile(os.path.join(include, "netcdf.h")):
        raise SystemExit("climio install: no netcdf.h for PIO's header: set NETCDF4_INCDIR and NETCDF4_LIBDIR")
    # PnetCDF too: PIO2's programs may call it beside PIO (PIO2's own library links it)
    return {"cflags": [f"-I{include}"], "libs": [f"-L{libdir}", f"-Wl,-rpath,{libdir}", "-lnetcdf", "-lpnetcdf"]}


def build_fortran(prefix: Path) -> bool:
    """The ``climio_io`` module and ``libclimiof``, and PIO2's ``pio`` module (``pio.mod`` with the modules it
    uses: pio_kinds, pio_types, pio_support, pio_climio) and ``libpiof`` over libpioc; False when there is no
    Fortran compiler."""
    compiler = os.environ.get("MPIFC", "mpifort")
    if shutil.which(compiler) is None:
        print(f"climio install: no Fortran compiler {compiler} (set MPIFC): the Fortran modules are not built")
        return False
    lib, include = prefix / "lib", prefix / "include"
    with tempfile.TemporaryDirectory() as work:
        obj = os.path.join(work, "climio_io.o")
        subprocess.run([compiler, "-c", "-fPIC", "-O2", str(HERE / "climio_io.F90"), "-J", str(include), "-o", obj],
                       check=True)
        subprocess.run([compiler, "-shared", "-o", str(lib / "libclimiof.so"), obj, f"-L{lib}", "-lclimio",
                        f"-Wl,-rpath,{lib}"], check=True)
        obj = os.path.join(work, "pio.o")
        write_pio_typed(Path(work) / "pio_typed.inc")
        subprocess.run([compiler, "-c", "-fPIC", "-O2", f"-I{work}", str(PIO / "pio.F90"), "-J", str(include),
                        "-o", obj], check=True)
        subprocess.run([compiler, "-shared", "-o", str(lib / "libpiof.so"), obj, "-Wl,-soname,libpiof.so",
                        f"-L{lib}", "-lpioc", "-lclimio", f"-Wl,-rpath,{lib}"], check=True)
    return True


def write_pio_typed(target: Path) -> None:
    """``pio_typed.inc``, which pio.F90 includes: pio_typed.F90.in's procedures once for each of PIO2's numeric
    types, its placeholders filled as PIO2's genf90 fills its templates."""
    template = (PIO / "pio_typed.F90.in").read_text()
    types = (("integer(i4)", "int", "PIO_int", "0_i4"), ("real(r4)", "real", "PIO_real", "0.0_r4"),
             ("real(r8)", "double", "PIO_double", "0.0_r8"))  # TYPE, NAME, PIO_TYPE, ZERO
    target.write_text("\n".join(template.replace("{TYPE}", decl).replace("{NAME}", name)
                                 .replace("{PIO_TYPE}", pio_type).replace("{ZERO}", zero)
                                 for decl, name, pio_type, zero in types))


def pkg_config(prefix: Path, fortran: bool) -> str:
    """``climio.pc``: the include directory (climio.h, climio_io.mod) and the libraries, with their run path."""
    from climio import __version__

    libs = "-lclimiof -lclimio" if fortran else "-lclimio"
    return (f"prefix={prefix}\nlibdir=${{prefix}}/lib\nincludedir=${{prefix}}/include\n\n"
            f"Name: climio\nDescription: climio's model I/O for C and Fortran (climio.h, use climio_io)\n"
            f"Version: {__version__}\nCflags: -I${{includedir}}\n"
            f"Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} {libs}\n")


def pio_pkg_config(prefix: Path, netcdf: dict[str, list[str]], fortran: bool = False) -> str:
    """``pio.pc``: what a PIO model's build takes instead of PIO2's (pio.h, pio.mod, libpioc, libpiof) with
    netCDF-C's flags, which PIO's header and programs need."""
    from climio import __version__

    libs = "-lpiof -lpioc" if fortran else "-lpioc"
    return (f"prefix={prefix}\nlibdir=${{prefix}}/lib\nincludedir=${{prefix}}/include\n\n"
            f"Name: pio\nDescription: PIO2's C and Fortran API on climio (pio.h, use pio)\n"
            f"Version: {__version__}\nCflags: -I${{includedir}} {' '.join(netcdf['cflags'])}\n"
            f"Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} {libs} -lclimio {' '.join(netcdf['libs'])}\n")


PIO_API_VERSION = "2.7.0"  # the PIO2 release whose API pio.h follows: find_package(PIO 2.x) accepts it


def write_pio_cmake_config(prefix: Path, netcdf: dict[str, list[str]], fortran: bool) -> None:
    """``lib/cmake/PIO/PIOConfig.cmake``: CMake's ``find_package(PIO [COMPONENTS C Fortran])`` finds climio's
    PIO API as it finds PIO2's, with PIO2's imported targets ``PIO::pioc`` and ``PIO::piof``."""
    folder = prefix / "lib" / "cmake" / "PIO"
    folder.mkdir(parents=True, exist_ok=True)
    includes = " ".join([str(prefix / "include"), *(f[2:] for f in netcdf["cflags"])])
    netcdf_libs = " ".join(netcdf["libs"])
    lines = ["# climio's PIO2 API (pio.h, use pio): PIO2's targets, answered by climio (written by climio's build)",
             "set(PIO_ENABLE_FORTRAN " + ("ON" if fortran else "OFF") + ")",
             "foreach(_comp ${PIO_FIND_COMPONENTS})",
             "  if(NOT _comp MATCHES \"^(C|Fortran)$\" OR (_comp STREQUAL Fortran AND NOT PIO_ENABLE_FORTRAN))",
             "    set(PIO_FOUND FALSE)",
             "    set(PIO_NOT_FOUND_MESSAGE \"climio's PIO API has no component ${_comp}\")",
             "    return()",
             "  endif()",
             "endforeach()",
             "if(NOT TARGET PIO::pioc)",
             "  add_library(PIO::pioc SHARED IMPORTED)",
             f"  set_target_properties(PIO::pioc PROPERTIES IMPORTED_LOCATION \"{prefix / 'lib' / 'libpioc.so'}\"",
             f"    INTERFACE_INCLUDE_DIRECTORIES \"{includes.replace(' ', ';')}\"",
             f"    INTERFACE_LINK_LIBRARIES \"{prefix / 'lib' / 'libclimio.so'};{netcdf_libs.replace(' ', ';')}\")",
             "endif()"]
    if fortran:
        lines += ["if(NOT TARGET PIO::piof)",
                  "  add_library(PIO::piof SHARED IMPORTED)",
                  f"  set_target_properties(PIO::piof PROPERTIES IMPORTED_LOCATION \"{prefix / 'lib' / 'libpiof.so'}\"",
                  f"    INTERFACE_INCLUDE_DIRECTORIES \"{prefix / 'include'}\" INTERFACE_LINK_LIBRARIES PIO::pioc)",
                  "endif()"]
    (folder / "PIOConfig.cmake").write_text("\n".join(lines) + "\n")
    (folder / "PIOConfigVersion.cmake").write_text(
        f"set(PACKAGE_VERSION {PIO_API_VERSION})\n"
        "if(PACKAGE_FIND_VERSION AND (PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION\n"
        "   OR NOT PACKAGE_FIND_VERSION_MAJOR EQUAL 2))\n"
        "  set(PACKAGE_VERSION_COMPATIBLE FALSE)\nelse()\n  set(PACKAGE_VERSION_COMPATIBLE TRUE)\n"
        "  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)\n    set(PACKAGE_VERSION_EXACT TRUE)\n  endif()\n"
        "endif()\n")


def main() -> None:
    prefix = Path(sys.argv[1] if len(sys.argv) > 1 else sys.prefix).resolve()
    print(f"climio install: built {build(prefix)}")


if __name__ == "__main__":
    main()
