"""PIO2's Fortran interface on climio (``use pio``: src/climio/pio/pio.F90, pio.mod and libpiof), from a program
written here against PIO2's Fortran API and built as a PIO model is (pkg-config pio). In every iotype, at 1 and 3
tasks, it writes T(x, y, time) (double, decomposed, a record dimension) and I(x, y) (int) with PIO_write_darray
(the third task owns nothing, one point belongs to no task, the first task's map has a hole), coordinates, a
scalar and a text variable with PIO_put_var, and attributes of each type; it reopens each file and checks it
through PIO_read_darray, PIO_get_var, PIO_get_att and the inquiries. Its files are checked here against values
worked out independently; its decomposition file (pio_writedof) against climio's reader of PIO's format, and
pio_readdof against a map file climio's writer made. A second program starts PIO's async mode through PIO_init
with the I/O task list (the last world rank serving, at 2 and 4 ranks) and writes, syncs and reads back a
decomposed int variable in netcdf and pnetcdf."""

from __future__ import annotations

import os
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import climio_pkg_config, compile_programs, own_lines, run

from climio.model.piomap import PioMap, read_map, write_map_text

NX, NY, NSTEPS = 7, 5, 3
FORMATS = {"pnetcdf": "NETCDF3_64BIT_OFFSET", "netcdf": "NETCDF3_CLASSIC", "netcdf4c": "NETCDF4",
           "netcdf4p": "NETCDF4"}  # the program creates pnetcdf with PIO_64bit_offset, the others with PIO_clobber

PROGRAM = r'''
! Writes with `use pio`, in each iotype: T(x, y, time), a double field decomposed over the tasks with a record
! dimension, and I(x, y), an int field, through PIO_write_darray; coordinates, a scalar and a text variable
! through PIO_put_var; attributes of each type. Reopens each file and checks it through PIO's inquiries,
! PIO_read_darray, PIO_get_var and PIO_get_att. The decomposition: point p (1-based, Fortran order over
! (NX, NY)) belongs to task mod((p-1)/4, owners), in ascending order on even tasks and descending on odd
! ones; the first task's map has a hole; point 1 is no task's; with 3 tasks the last owns nothing. It is
! written with pio_writedof and read back with pio_readdof; DIR/given.txt (the test's) is read with
! pio_readdof and printed ("readdof <task>: <ndims> <gdims> <maplen> <map>"). Prints one line per failed
! check, and "pio_fortran: <files> files, <tasks> tasks, <n> failed checks" from the first task.
program pio_fortran
  use mpi
  use pio
  implicit none
  integer, parameter :: NX = 7, NY = 5, NSTEPS = 3
  character(len=*), parameter :: NAMES(4) = ['pnetcdf ', 'netcdf  ', 'netcdf4c', 'netcdf4p']
  integer, parameter :: IOTYPES(4) = [PIO_iotype_pnetcdf, PIO_iotype_netcdf, PIO_iotype_netcdf4c, &
       PIO_iotype_netcdf4p]
  type(iosystem_desc_t) :: ios
  type(io_desc_t) :: iod, ioi
  integer :: ierr, rank, ntasks, owners, niotasks, n, p, k, failed, total, iotypes_done
  integer(PIO_OFFSET_KIND), allocatable :: compdof(:)
  integer, allocatable :: compdof4(:)
  integer, pointer :: gdims(:)
  integer(PIO_OFFSET_KIND), pointer :: dof(:)
  character(len=512) :: dir

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, ntasks, ierr)
  call get_command_argument(1, dir)
  failed = 0

  owners = ntasks
  if (ntasks == 3) owners = 2
  allocate(compdof(0))
  if (rank < owners) then
     do p = 2, NX * NY
        if (mod((p - 1) / 4, owners) == rank) compdof = [compdof, int(p, PIO_OFFSET_KIND)]
     end do
     if (mod(rank, 2) == 1) compdof = compdof(size(compdof):1:-1)
     if (rank == 0) compdof = [compdof(1:1), 0_PIO_OFFSET_KIND, compdof(2:)]
  end if
  compdof4 = int(compdof)

  niotasks = (ntasks + 1) / 2
  call PIO_init(rank, MPI_COMM_WORLD, niotasks, 0, 2, PIO_rearr_box, ios, base=0)
  call PIO_seterrorhandling(ios, PIO_return_error)
  call PIO_getnumiotasks(ios, n)
  call check(n == niotasks, 'PIO_getnumiotasks')
  call PIO_initdecomp(ios, PIO_double, [NX, NY], compdof, iod, rearr=PIO_rearr_box)
  call PIO_initdecomp(ios, PIO_int, [NX, NY], compdof4, ioi, rearr=PIO_rearr_subset)
  call check(PIO_get_local_array_size(iod) == size(compdof), 'PIO_get_local_array_size')

  call pio_writedof(trim(dir)//'/decomp.txt', [NX, NY], compdof, MPI_COMM_WORLD)
  call pio_readdof(trim(dir)//'/decomp.txt', n, gdims, dof, MPI_COMM_WORLD)
  call check(n == 2 .and. all(gdims == [NX, NY]), 'pio_readdof: dimensions')
  call check(size(dof) == size(compdof), 'pio_readdof: map length')
  if (size(dof) == size(compdof)) call check(all(dof == compdof), 'pio_readdof: map')
  deallocate(gdims, dof)
  call pio_readdof(trim(dir)//'/given.txt', n, gdims, dof, MPI_COMM_WORLD)  ! a map written by climio's Python
  print '(a,i0,":",*(1x,i0))', 'readdof ', rank, n, gdims, size(dof), dof

  iotypes_done = 0
  do k = 1, size(IOTYPES)
     call write_file(IOTYPES(k), trim(dir)//'/'//trim(NAMES(k))//'.nc')
     call read_file(IOTYPES(k), trim(dir)//'/'//trim(NAMES(k))//'.nc')
     iotypes_done = iotypes_done + 1
  end do

  call PIO_freedecomp(ios, iod)
  call PIO_freedecomp(ios, ioi)
  call PIO_finalize(ios, ierr)
  call ok(ierr, 'PIO_finalize')
  call MPI_Reduce(failed, total, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0,a,i0,a)', 'pio_fortran: ', iotypes_done, ' files, ', ntasks, ' tasks, ', &
       total, ' failed checks'
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what

    if (.not. ok) then
       failed = failed + 1
       print '(a,i0,a)', 'FAIL on task ', rank, ': '//what
    end if
  end subroutine check

  subroutine ok(code, what)
    integer, intent(in) :: code
    character(len=*), intent(in) :: what

    call check(code == PIO_noerr, what)
  end subroutine ok

  ! The values of point c of the (NX, NY) grid at step s (c 0: a hole, given a value no file may hold).
  double precision function t_value(c, s)
    integer(PIO_OFFSET_KIND), intent(in) :: c
    integer, intent(in) :: s

    t_value = 1d30
    if (c > 0) t_value = s * 1000 + (((c - 1) / NX) + 1) * 10 + mod(c - 1, int(NX, PIO_OFFSET_KIND)) + 1 + 0.25d0
  end function t_value

  integer function i_value(c)
    integer(PIO_OFFSET_KIND), intent(in) :: c

    i_value = 77
    if (c > 0) i_value = -int(100 * (((c - 1) / NX) + 1) + mod(c - 1, int(NX, PIO_OFFSET_KIND)) + 1)
  end function i_value

  subroutine write_file(iotype, path)
    integer, intent(in) :: iotype
    character(len=*), intent(in) :: path
    type(file_desc_t) :: file
    type(var_desc_t) :: vt, vi, vlat, vtime, vdt, vlabel
    integer :: dx, dy, dtime, dchar, s, j, mode
    double precision :: tbuf(size(compdof))
    integer :: ibuf(size(compdof))

    mode = PIO_clobber
    if (iotype == PIO_iotype_pnetcdf) mode = PIO_64bit_offset
    call ok(PIO_createfile(ios, file, iotype, path, mode), path//': PIO_createfile')
    call check(PIO_file_is_open(file), path//': PIO_file_is_open')
    call ok(PIO_def_dim(file, 'x', NX, dx), 'def_dim x')
    call ok(PIO_def_dim(file, 'y', int(NY, PIO_OFFSET_KIND), dy), 'def_dim y')
    call ok(PIO_def_dim(file, 'time', PIO_unlimited, dtime), 'def_dim time')
    call ok(PIO_def_dim(file, 'nchar', 5, dchar), 'def_dim nchar')
    call ok(PIO_def_var(file, 'T', PIO_double, [dx, dy, dtime], vt), 'def_var T')
    call ok(PIO_def_var(file, 'I', PIO_int, [dx, dy], vi), 'def_var I')
    call ok(PIO_def_var(file, 'lat', PIO_double, [dy], vlat), 'def_var lat')
    call ok(PIO_def_var(file, 'time', PIO_double, [dtime], vtime), 'def_var time')
    call ok(PIO_def_var(file, 'dt', PIO_double, vdt), 'def_var dt')
    call ok(PIO_def_var(file, 'label', PIO_char, [dchar], vlabel), 'def_var label')
    call ok(PIO_put_att(file, PIO_global, 'title', 'written by use pio'), 'put_att title')
    call ok(PIO_put_att(file, PIO_global, 'version', 3), 'put_att version')
    call ok(PIO_put_att(file, PIO_global, 'scale', [0.5, 2.0]), 'put_att scale')
    call ok(PIO_put_att(file, vt, 'units', 'K'), 'put_att units')
    call ok(PIO_put_att(file, vt, '_FillValue', -999d0), 'put_att T _FillValue')
    call ok(PIO_put_att(file, vi, '_FillValue', -1), 'put_att I _FillValue')
    call ok(PIO_put_att(file, vi, 'valid_range', [-1000, 0]), 'put_att valid_range')
    call ok(PIO_enddef(file), path//': PIO_enddef')

    call ok(PIO_put_var(file, vlat, [(-60d0 + 30 * j, j = 0, NY - 1)]), 'put_var lat')
    call ok(PIO_put_var(file, vdt, 0.5d0), 'put_var dt')
    call ok(PIO_put_var(file, vlabel, 'abc'), 'put_var label')
    do s = 1, NSTEPS
       call ok(PIO_put_var(file, vtime, [s], [1], [s * 0.5d0]), 'put_var time')
       tbuf = [(t_value(compdof(j), s), j = 1, size(compdof))]
       call PIO_setframe(file, vt, int(s, PIO_OFFSET_KIND))
       call PIO_write_darray(file, vt, iod, tbuf, ierr, fillval=-999d0)
       call ok(ierr, path//': write_darray T')
    end do
    ibuf = [(i_value(compdof(j)), j = 1, size(compdof))]
    call PIO_write_darray(file, vi, ioi, ibuf, ierr, fillval=-1)
    call ok(ierr, path//': write_darray I')
    call PIO_closefile(file)
    call check(.not. PIO_file_is_open(file), path//': closed')
  end subroutine write_file

  subroutine read_file(iotype, path)
    integer, intent(in) :: iotype
    character(len=*), intent(in) :: path
    type(file_desc_t) :: file
    type(var_desc_t) :: vt, vi, vmissing
    integer :: dx, dy, dtime, ndims, nvars, unlimited, xtype, length, dimids(3), s, j, code, version, varid
    double precision :: tbuf(size(compdof)), lat(NY), times(NSTEPS), dt, fill
    integer :: ibuf(size(compdof)), valid(2)
    real :: scale(2)
    character(len=40) :: text
    character(len=PIO_max_name) :: message

    call ok(PIO_openfile(ios, file, iotype, path, PIO_nowrite), path//': PIO_openfile')
    call ok(PIO_inquire(file, nDimensions=ndims, nVariables=nvars, unlimitedDimID=unlimited), 'PIO_inquire')
    call ok(PIO_inq_dimid(file, 'x', dx), 'PIO_inq_dimid x')
    call ok(PIO_inq_dimid(file, 'y', dy), 'PIO_inq_dimid y')
    call ok(PIO_inq_dimid(file, 'time', dtime), 'PIO_inq_dimid time')
    call check(ndims == 4 .and. nvars == 6 .and. unlimited == dtime .and. dx == 1, 'PIO_inquire values')
    call ok(PIO_inquire_dimension(file, dx, name=text, len=length), 'PIO_inquire_dimension')
    call check(text == 'x' .and. length == NX, 'PIO_inquire_dimension values')
    call ok(PIO_inq_dimlen(file, dtime, length), 'PIO_inq_dimlen')
    call check(length == NSTEPS, 'PIO_inq_dimlen of time')
    call ok(PIO_inq_varid(file, 'T', vt), 'PIO_inq_varid T')
    call ok(PIO_inq_varid(file, 'I', vi), 'PIO_inq_varid I')
    call ok(PIO_inquire_variable(file, vt, name=text, xtype=xtype, ndims=ndims, dimids=dimids), &
         'PIO_inquire_variable')
    call check(text == 'T' .and. xtype == PIO_double .and. ndims == 3 .and. all(dimids == [dx, dy, dtime]), &
         'PIO_inquire_variable values')
    call ok(PIO_inq_vartype(file, vi, xtype), 'PIO_inq_vartype')
    call check(xtype == PIO_int, 'PIO_inq_vartype of I')

    do s = NSTEPS, 1, -1
       call PIO_setframe(file, vt, s)
       call PIO_read_darray(file, vt, iod, tbuf, ierr)
       call ok(ierr, path//': read_darray T')
       do j = 1, size(compdof)  ! a hole is left out: PIO2 leaves it as it was, climio gives the fill value
          if (compdof(j) > 0) call check(tbuf(j) == t_value(compdof(j), s), path//': T read back')
       end do
    end do
    call PIO_read_darray(file, vi, ioi, ibuf, ierr)
    call ok(ierr, path//': read_darray I')
    do j = 1, size(compdof)
       if (compdof(j) > 0) call check(ibuf(j) == i_value(compdof(j)), path//': I read back')
    end do

    call ok(PIO_inq_varid(file, 'lat', varid), 'PIO_inq_varid lat')
    call ok(PIO_get_var(file, varid, lat), 'get_var lat')
    call check(all(lat == [(-60d0 + 30 * j, j = 0, NY - 1)]), 'lat values')
    call ok(PIO_inq_varid(file, 'time', varid), 'PIO_inq_varid time')
    call ok(PIO_get_var(file, varid, times), 'get_var time')
    call check(all(times == [(s * 0.5d0, s = 1, NSTEPS)]), 'time values')
    call ok(PIO_inq_varid(file, 'dt', varid), 'PIO_inq_varid dt')
    call ok(PIO_get_var(file, varid, dt), 'get_var dt')
    call check(dt == 0.5d0, 'dt value')
    call ok(PIO_inq_varid(file, 'label', varid), 'PIO_inq_varid label')
    call ok(PIO_get_var(file, varid, text), 'get_var label')
    call check(text == 'abc', 'label value')

    call ok(PIO_get_att(file, PIO_global, 'title', text), 'get_att title')
    call check(text == 'written by use pio', 'title value')
    call ok(PIO_get_att(file, PIO_global, 'version', version), 'get_att version')
    call check(version == 3, 'version value')
    call ok(PIO_get_att(file, PIO_global, 'scale', scale), 'get_att scale')
    call check(all(scale == [0.5, 2.0]), 'scale values')
    call ok(PIO_get_att(file, vt, 'units', text), 'get_att units')
    call check(text == 'K', 'units value')
    call ok(PIO_get_att(file, vt, '_FillValue', fill), 'get_att _FillValue')
    call check(fill == -999d0, '_FillValue value')
    call ok(PIO_get_att(file, vi, 'valid_range', valid), 'get_att valid_range')
    call check(all(valid == [-1000, 0]), 'valid_range values')

    code = PIO_inq_varid(file, 'nosuch', vmissing)  ! refused: the code, and PIO_strerror's text for it
    call check(code /= PIO_noerr, 'PIO_inq_varid of a missing variable')
    call ok(PIO_strerror(code, message), 'PIO_strerror')
    call check(index(message, 'Variable not found') > 0, 'PIO_strerror: '//trim(message))
    call PIO_closefile(file)
  end subroutine read_file
end program pio_fortran
'''


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pio-fortran")
    (out / "pio_fortran.F90").write_text(PROGRAM)
    return compile_programs(out, [("pio_fortran", "mpifort", out / "pio_fortran.F90")], package="pio")["pio_fortran"]


def test_a_model_built_with_floating_point_traps_runs_attached(tmp_path_factory: pytest.TempPathFactory) -> None:
    """gfortran's -ffpe-trap, a common debugging build: climio's Python (numpy) runs inside the model's calls with
    the traps held off, and leaves no flag raised behind it."""
    out = tmp_path_factory.mktemp("pio-fortran-traps")
    (out / "pio_fortran.F90").write_text(PROGRAM)
    trapped = compile_programs(out, [("pio_fortran", "mpifort", out / "pio_fortran.F90")], package="pio",
                               extra=["-ffpe-trap=invalid,zero,overflow"])["pio_fortran"]
    write_map_text(str(out / "given.txt"), PioMap((2, 3), [np.array([6, 0, 1, 2, 3, 4, 5])]), fortran_order=True)
    result = run([str(trapped), str(out)], nranks=1, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "pio_fortran: 4 files, 1 tasks, 0 failed checks", result.stdout
    assert "signalling" not in result.stderr and "Floating-point exception" not in result.stderr


def test_pkg_config_gives_pio_module_and_libpiof() -> None:
    flags = climio_pkg_config("pio")
    includes = [Path(f[2:]) for f in flags if f.startswith("-I")]
    assert any((d / "pio.mod").is_file() and (d / "pio_support.mod").is_file() for d in includes)
    assert flags.index("-lpiof") < flags.index("-lpioc") < flags.index("-lclimio")


def owners_of(nranks: int) -> list[list[int]]:
    """Each task's 1-based map as the program builds it: point p (Fortran order over (NX, NY)) to task
    ((p-1) // 4) % owners, point 1 to none, descending on odd tasks, a hole second on task 0."""
    owners = 2 if nranks == 3 else nranks
    maps: list[list[int]] = [[] for _ in range(nranks)]
    for p in range(2, NX * NY + 1):
        maps[((p - 1) // 4) % owners].append(p)
    maps = [m[::-1] if task % 2 else m for task, m in enumerate(maps)]
    maps[0].insert(1, 0)
    return maps


def expected() -> dict[str, np.ndarray]:
    """The values the program writes, in the file's order (time, y, x): point (x, y) = (1, 1) is no task's."""
    step, y, x = np.meshgrid(np.arange(1, NSTEPS + 1), np.arange(1, NY + 1), np.arange(1, NX + 1), indexing="ij")
    t = step * 1000.0 + y * 10 + x + 0.25
    i = -(100 * y[0] + x[0]).astype(np.int32)
    t[:, 0, 0], i[0, 0] = -999.0, -1
    return {"T": t, "I": i, "lat": -60.0 + 30.0 * np.arange(NY), "time": 0.5 * np.arange(1, NSTEPS + 1)}


@pytest.mark.parametrize("nranks", [1, 3])
def test_fortran_program_in_every_iotype(program: Path, tmp_path: Path, nranks: int) -> None:
    given = [np.array([3, 0, 1, 2]), np.array([6, 5, 4]), np.zeros(0, np.int64)] if nranks == 3 else \
        [np.array([6, 0, 1, 2, 3, 4, 5])]
    write_map_text(str(tmp_path / "given.txt"), PioMap((2, 3), given), fortran_order=True)
    result = run([str(program), str(tmp_path)], nranks=nranks, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == f"pio_fortran: 4 files, {nranks} tasks, 0 failed checks", result.stdout
    # pio_readdof: the dims line as the file gives it (Fortran order), each task's map, none beyond the file's
    assert sorted(lines[:-1]) == [f"readdof {task}: 2 3 2 {m.size}" + "".join(f" {v}" for v in m)
                                  for task, m in enumerate(given)]
    # the program's one refused call (an unknown variable, under PIO_return_error) said a line per file
    assert len(own_lines(result.stderr)) == len(FORMATS)
    assert all("nosuch" in line for line in own_lines(result.stderr)), result.stderr

    decomp = read_map(str(tmp_path / "decomp.txt"), fortran_order=True)  # pio_writedof's file
    assert decomp.dims == (NY, NX)
    assert [m.tolist() for m in decomp.maps] == owners_of(nranks)

    want = expected()
    for name, data_model in FORMATS.items():
        with netCDF4.Dataset(tmp_path / f"{name}.nc") as ds:
            ds.set_auto_mask(False)
            assert ds.data_model == data_model, name
            assert {d: len(n) for d, n in ds.dimensions.items()} == {"x": NX, "y": NY, "time": NSTEPS, "nchar": 5}
            assert ds.dimensions["time"].isunlimited()
            assert [(v.name, v.dtype, v.dimensions) for v in ds.variables.values()] == [
                ("T", np.float64, ("time", "y", "x")), ("I", np.int32, ("y", "x")), ("lat", np.float64, ("y",)),
                ("time", np.float64, ("time",)), ("dt", np.float64, ()), ("label", np.dtype("S1"), ("nchar",))]
            for var in ("T", "I", "lat", "time"):
                assert np.array_equal(ds[var][:], want[var]), (name, var)
            assert ds["dt"][:] == 0.5 and ds["label"][:].tobytes() == b"abc\0\0"
            assert ds.ncattrs() == ["title", "version", "scale"] and ds.title == "written by use pio"
            assert ds.getncattr("version") == 3 and ds.getncattr("version").dtype == np.int32
            assert ds.scale.dtype == np.float32 and list(ds.scale) == [0.5, 2.0]
            assert ds["T"].units == "K" and ds["T"]._FillValue == -999.0
            assert ds["I"]._FillValue == -1 and list(ds["I"].valid_range) == [-1000, 0]


ASYNC_NPOINTS = 12
ASYNC_PROGRAM = r'''
! PIO's async mode through `use pio`: PIO_init with the I/O task list makes the last world rank the one I/O task
! (climio's server, inside the call; back with io_comm set once the component finalized) and the others one
! computational component. The component decomposes x (NPOINTS) over its tasks: point p (1-based) belongs to
! task mod(p-1, owners), ascending on even tasks and descending on odd ones; with 3+ computational tasks the last
! owns nothing. In each iotype (netcdf, then pnetcdf) it creates DIR/<name>.nc with an int variable v(x), writes
! v(p) = 1000*k + 7*p - 3 (k: the iotype's number) with PIO_write_darray, syncs, reads it back with
! PIO_read_darray and checks it, and closes the file. Prints one line per failed check, and from the first
! computational task "pio_async_fortran: <files> files, <ncomp> computational tasks, <nio> I/O tasks, <n>
! failed checks". PIO's default error handler stays: a failing call ends the job.
program pio_async_fortran
  use mpi
  use pio
  implicit none
  integer, parameter :: NPOINTS = 12
  character(len=*), parameter :: NAMES(2) = ['netcdf ', 'pnetcdf']
  integer, parameter :: IOTYPES(2) = [PIO_iotype_netcdf, PIO_iotype_pnetcdf]
  type(iosystem_desc_t), target :: ios(1)
  type(io_desc_t) :: iod
  integer :: ierr, world_rank, world_size, ncomp, rank, owners, nio, p, k, failed, total, files_done
  integer :: procs_per_component(1), io_proc_list(1), comp_comm(1), io_comm, comm_size
  integer, allocatable :: comp_proc_list(:,:)
  integer(PIO_OFFSET_KIND), allocatable :: compdof(:)
  character(len=512) :: dir

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, world_rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, world_size, ierr)
  call get_command_argument(1, dir)
  failed = 0

  ncomp = world_size - 1
  io_proc_list(1) = world_size - 1  ! the last world rank serves
  procs_per_component(1) = ncomp
  allocate(comp_proc_list(ncomp, 1))
  comp_proc_list(:, 1) = [(p, p = 0, ncomp - 1)]
  call PIO_init(ios, MPI_COMM_WORLD, procs_per_component, comp_proc_list, io_proc_list, PIO_REARR_BOX, &
       comp_comm, io_comm)
  if (io_comm /= MPI_COMM_NULL) then  ! the I/O task: back once the component finalized
     call check(world_rank == world_size - 1, 'io_comm on a computational task')
     call check(comp_comm(1) == MPI_COMM_NULL, 'comp_comm on the I/O task')
  else
     call compute()
  end if
  call MPI_Finalize(ierr)

contains

  ! The component's work, between PIO_init and MPI_Finalize.
  subroutine compute()
    call check(world_rank < world_size - 1, 'no io_comm on the I/O task')
    call check(comp_comm(1) /= MPI_COMM_NULL, 'no comp_comm on a computational task')
    call MPI_Comm_rank(comp_comm(1), rank, ierr)
    call MPI_Comm_size(comp_comm(1), comm_size, ierr)
    call check(rank == world_rank .and. comm_size == ncomp, 'comp_comm: rank and size')
    call PIO_getnumiotasks(ios(1), nio)
    call check(nio == 1, 'PIO_getnumiotasks')

    owners = ncomp
    if (ncomp >= 3) owners = ncomp - 1
    allocate(compdof(0))
    if (rank < owners) then
       do p = 1, NPOINTS
          if (mod(p - 1, owners) == rank) compdof = [compdof, int(p, PIO_OFFSET_KIND)]
       end do
       if (mod(rank, 2) == 1) compdof = compdof(size(compdof):1:-1)
    end if
    call PIO_initdecomp(ios(1), PIO_int, [NPOINTS], compdof, iod)
    call check(PIO_get_local_array_size(iod) == size(compdof), 'PIO_get_local_array_size')

    files_done = 0
    do k = 1, size(IOTYPES)
       call write_and_read(k, trim(dir)//'/'//trim(NAMES(k))//'.nc')
       files_done = files_done + 1
    end do

    call PIO_freedecomp(ios(1), iod)
    call PIO_finalize(ios(1), ierr)
    call check(ierr == PIO_noerr, 'PIO_finalize')
    call MPI_Reduce(failed, total, 1, MPI_INTEGER, MPI_SUM, 0, comp_comm(1), ierr)
    if (rank == 0) print '(a,i0,a,i0,a,i0,a,i0,a)', 'pio_async_fortran: ', files_done, ' files, ', ncomp, &
         ' computational tasks, ', nio, ' I/O tasks, ', total, ' failed checks'
  end subroutine compute

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what

    if (.not. ok) then
       failed = failed + 1
       print '(a,i0,a)', 'FAIL on world rank ', world_rank, ': '//what
    end if
  end subroutine check

  subroutine write_and_read(k, path)
    integer, intent(in) :: k
    character(len=*), intent(in) :: path
    type(file_desc_t) :: file
    type(var_desc_t) :: vv
    integer :: dx, j
    integer :: values(size(compdof)), back(size(compdof))

    call check(PIO_createfile(ios(1), file, IOTYPES(k), path, PIO_clobber) == PIO_noerr, path//': PIO_createfile')
    call check(PIO_def_dim(file, 'x', NPOINTS, dx) == PIO_noerr, path//': PIO_def_dim')
    call check(PIO_def_var(file, 'v', PIO_int, [dx], vv) == PIO_noerr, path//': PIO_def_var')
    call check(PIO_enddef(file) == PIO_noerr, path//': PIO_enddef')
    values = [(1000 * k + 7 * int(compdof(j)) - 3, j = 1, size(compdof))]
    call PIO_write_darray(file, vv, iod, values, ierr)
    call check(ierr == PIO_noerr, path//': PIO_write_darray')
    call PIO_syncfile(file)
    back = -1
    call PIO_read_darray(file, vv, iod, back, ierr)
    call check(ierr == PIO_noerr, path//': PIO_read_darray')
    call check(all(back == values), path//': values read back')
    call PIO_closefile(file)
  end subroutine write_and_read
end program pio_async_fortran
'''


@pytest.fixture(scope="module")
def async_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pio-fortran-async")
    (out / "pio_async_fortran.F90").write_text(ASYNC_PROGRAM)
    return compile_programs(out, [("pio_async_fortran", "mpifort", out / "pio_async_fortran.F90")],
                            package="pio")["pio_async_fortran"]


@pytest.mark.parametrize("nranks", [2, 4])
def test_async_pio_init_serves_from_the_last_rank(async_program: Path, tmp_path: Path, nranks: int) -> None:
    """PIO_init with the I/O task list (PIO2's async signature): the last world rank serves inside the call, the
    others (one component; the last of three owns nothing) write v(x) in netcdf and pnetcdf, sync, read it back
    and finalize; the I/O task comes back with io_comm and finalizes MPI."""
    result = run([str(async_program), str(tmp_path)], nranks=nranks, timeout=120,
                 env_extra={"CLIMIO_SERVE_TIMEOUT": "60"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"pio_async_fortran: 2 files, {nranks - 1} computational tasks, 1 I/O tasks, 0 failed checks"], result.stdout
    assert own_lines(result.stderr) == [], result.stderr
    assert sorted(os.listdir(tmp_path)) == ["netcdf.nc", "pnetcdf.nc"]  # nothing else, no temporary left
    point = np.arange(1, ASYNC_NPOINTS + 1)
    for k, name in enumerate(["netcdf", "pnetcdf"], start=1):
        with netCDF4.Dataset(tmp_path / f"{name}.nc") as ds:
            ds.set_auto_mask(False)
            assert ds.data_model == "NETCDF3_CLASSIC", name
            assert {d: len(n) for d, n in ds.dimensions.items()} == {"x": ASYNC_NPOINTS}
            assert [(v.name, v.dtype, v.dimensions) for v in ds.variables.values()] == [("v", np.int32, ("x",))]
            assert np.array_equal(ds["v"][:], 1000 * k + 7 * point - 3), (name, ds["v"][:])
