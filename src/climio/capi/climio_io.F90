! climio's model I/O for Fortran: `use climio_io`, over the C API of climio.h (ISO_C_BINDING).
!
! Fortran order throughout, as netCDF-Fortran and PIO's Fortran interface have it: dimension ids, grid
! lengths, box starts and counts are listed fastest first (x, y, lev, time), starts and frames are 1-based,
! and a field T(time, lev, y, x) in the file is the Fortran array t(nx_local, ny_local, nlev). The module
! reverses them for the C API. Every function returns CLIMIO_NOERR or an error code, the same on all ranks.
module climio_io
  use iso_c_binding
  implicit none
  private

  integer, parameter, public :: CLIMIO_NOERR = 0, CLIMIO_EBADID = -1, CLIMIO_EINVAL = -2, &
       CLIMIO_ESTATE = -3, CLIMIO_EIO = -4, CLIMIO_EINTERNAL = -5, CLIMIO_ENOMEM = -6
  integer, parameter, public :: CLIMIO_BYTE = 1, CLIMIO_SHORT = 3, CLIMIO_INT = 4, CLIMIO_FLOAT = 5, &
       CLIMIO_DOUBLE = 6, CLIMIO_INT64 = 10
  integer, parameter, public :: CLIMIO_UNLIMITED = 0, CLIMIO_GLOBAL = -1, CLIMIO_NOFRAME = 0
  integer, parameter, public :: CLIMIO_RETURN_ERROR = 0, CLIMIO_ABORT_ON_ERROR = 1
  integer, parameter, public :: CLIMIO_CLOBBER = 0, CLIMIO_NOCLOBBER = 1
  integer, parameter, public :: CLIMIO_INSTANT = 0, CLIMIO_MEAN = 1, CLIMIO_MIN = 2, CLIMIO_MAX = 3, CLIMIO_SUM = 4
  integer, parameter, public :: CLIMIO_QUANTIZE_BITGROOM = 1, CLIMIO_QUANTIZE_GRANULARBR = 2, &
       CLIMIO_QUANTIZE_BITROUND = 3

  public :: climio_init_intracomm, climio_init_servers, climio_model_comm, climio_set_error_handling, &
       climio_finalize, climio_init_decomp_blocks, &
       climio_init_decomp, climio_free_decomp, climio_createfile, climio_openfile, climio_closefile, &
       climio_def_dim, climio_def_var, climio_def_var_deflate, climio_def_var_quantize, climio_def_var_reduce, &
       climio_put_att, &
       climio_enddef, climio_inq_varid, climio_put_time, climio_write_darray, climio_read_darray, climio_put_var, &
       climio_errmsg, climio_strerror

  interface climio_write_darray
     module procedure write_real4, write_real8, write_int4
  end interface climio_write_darray

  interface climio_put_var
     module procedure put_var_real4, put_var_real8, put_var_int4
  end interface climio_put_var

  interface climio_read_darray
     module procedure read_real4, read_real8, read_int4
  end interface climio_read_darray

  interface climio_put_att
     module procedure put_att_text, put_att_real8, put_att_int4
  end interface climio_put_att

  interface
     integer(c_int) function c_init_intracomm(fcomm, iosysid) bind(C, name="climio_init_intracomm_f")
       import :: c_int
       integer(c_int), value :: fcomm
       integer(c_int) :: iosysid
     end function c_init_intracomm
     integer(c_int) function c_init_servers(fcomm, buffer_bytes, iosysid) bind(C, name="climio_init_servers_f")
       import :: c_int, c_long_long
       integer(c_int), value :: fcomm
       integer(c_long_long), value :: buffer_bytes
       integer(c_int) :: iosysid
     end function c_init_servers
     integer(c_int) function c_model_comm(fcomm) bind(C, name="climio_model_comm_f")
       import :: c_int
       integer(c_int) :: fcomm
     end function c_model_comm
     integer(c_int) function c_set_error_handling(iosysid, method) bind(C, name="climio_set_error_handling")
       import :: c_int
       integer(c_int), value :: iosysid, method
     end function c_set_error_handling
     integer(c_int) function c_finalize(iosysid) bind(C, name="climio_finalize")
       import :: c_int
       integer(c_int), value :: iosysid
     end function c_finalize
     integer(c_int) function c_init_decomp_blocks(iosysid, ndims, gdimlen, start, count, halo, ioid) &
          bind(C, name="climio_init_decomp_blocks")
       import :: c_int, c_long_long
       integer(c_int), value :: iosysid, ndims, halo
       integer(c_long_long), intent(in) :: gdimlen(*), start(*), count(*)
       integer(c_int) :: ioid
     end function c_init_decomp_blocks
     integer(c_int) function c_init_decomp(iosysid, ndims, gdimlen, maplen, compmap, ioid) &
          bind(C, name="climio_init_decomp")
       import :: c_int, c_long_long
       integer(c_int), value :: iosysid, ndims
       integer(c_long_long), value :: maplen
       integer(c_long_long), intent(in) :: gdimlen(*), compmap(*)
       integer(c_int) :: ioid
     end function c_init_decomp
     integer(c_int) function c_free_decomp(iosysid, ioid) bind(C, name="climio_free_decomp")
       import :: c_int
       integer(c_int), value :: iosysid, ioid
     end function c_free_decomp
     integer(c_int) function c_createfile(iosysid, ioid, ncid, mode, strategy, path, flags) &
          bind(C, name="climio_createfile")
       import :: c_int, c_char
       integer(c_int), value :: iosysid, ioid, flags
       integer(c_int) :: ncid
       character(kind=c_char), intent(in) :: mode(*), strategy(*), path(*)
     end function c_createfile
     integer(c_int) function c_openfile(iosysid, ioid, ncid, strategy, path) bind(C, name="climio_openfile")
       import :: c_int, c_char
       integer(c_int), value :: iosysid, ioid
       integer(c_int) :: ncid
       character(kind=c_char), intent(in) :: strategy(*), path(*)
     end function c_openfile
     integer(c_int) function c_closefile(ncid) bind(C, name="climio_closefile")
       import :: c_int
       integer(c_int), value :: ncid
     end function c_closefile
     integer(c_int) function c_def_dim(ncid, name, length, dimid) bind(C, name="climio_def_dim")
       import :: c_int, c_char, c_long_long
       integer(c_int), value :: ncid
       character(kind=c_char), intent(in) :: name(*)
       integer(c_long_long), value :: length
       integer(c_int) :: dimid
     end function c_def_dim
     integer(c_int) function c_def_var(ncid, name, xtype, ndims, dimids, varid) bind(C, name="climio_def_var")
       import :: c_int, c_char
       integer(c_int), value :: ncid, xtype, ndims
       character(kind=c_char), intent(in) :: name(*)
       integer(c_int), intent(in) :: dimids(*)
       integer(c_int) :: varid
     end function c_def_var
     integer(c_int) function c_def_var_deflate(ncid, varid, shuffle, deflate, level) &
          bind(C, name="climio_def_var_deflate")
       import :: c_int
       integer(c_int), value :: ncid, varid, shuffle, deflate, level
     end function c_def_var_deflate
     integer(c_int) function c_def_var_quantize(ncid, varid, quantize_mode, nsd) &
          bind(C, name="climio_def_var_quantize")
       import :: c_int
       integer(c_int), value :: ncid, varid, quantize_mode, nsd
     end function c_def_var_quantize
     integer(c_int) function c_def_var_reduce(ncid, varid, op, steps) bind(C, name="climio_def_var_reduce")
       import :: c_int
       integer(c_int), value :: ncid, varid, op, steps
     end function c_def_var_reduce
     integer(c_int) function c_put_att_text(ncid, varid, name, value) bind(C, name="climio_put_att_text")
       import :: c_int, c_char
       integer(c_int), value :: ncid, varid
       character(kind=c_char), intent(in) :: name(*), value(*)
     end function c_put_att_text
     integer(c_int) function c_put_att_double(ncid, varid, name, xtype, length, values) &
          bind(C, name="climio_put_att_double")
       import :: c_int, c_char, c_long_long, c_double
       integer(c_int), value :: ncid, varid, xtype
       character(kind=c_char), intent(in) :: name(*)
       integer(c_long_long), value :: length
       real(c_double), intent(in) :: values(*)
     end function c_put_att_double
     integer(c_int) function c_enddef(ncid) bind(C, name="climio_enddef")
       import :: c_int
       integer(c_int), value :: ncid
     end function c_enddef
     integer(c_int) function c_inq_varid(ncid, name, varid) bind(C, name="climio_inq_varid")
       import :: c_int, c_char
       integer(c_int), value :: ncid
       character(kind=c_char), intent(in) :: name(*)
       integer(c_int) :: varid
     end function c_inq_varid
     integer(c_int) function c_put_time(ncid, frame, time) bind(C, name="climio_put_time")
       import :: c_int, c_long_long, c_double
       integer(c_int), value :: ncid
       integer(c_long_long), value :: frame
       real(c_double), value :: time
     end function c_put_time
     integer(c_int) function c_write_darray(ncid, varid, frame, memtype, arraylen, array) &
          bind(C, name="climio_write_darray")
       import :: c_int, c_long_long, c_ptr
       integer(c_int), value :: ncid, varid, memtype
       integer(c_long_long), value :: frame, arraylen
       type(c_ptr), value :: array
     end function c_write_darray
     integer(c_int) function c_put_var(ncid, varid, frame, memtype, length, values) bind(C, name="climio_put_var")
       import :: c_int, c_long_long, c_ptr
       integer(c_int), value :: ncid, varid, memtype
       integer(c_long_long), value :: frame, length
       type(c_ptr), value :: values
     end function c_put_var
     integer(c_int) function c_read_darray(ncid, varid, frame, memtype, arraylen, array) &
          bind(C, name="climio_read_darray")
       import :: c_int, c_long_long, c_ptr
       integer(c_int), value :: ncid, varid, memtype
       integer(c_long_long), value :: frame, arraylen
       type(c_ptr), value :: array
     end function c_read_darray
     integer(c_int) function c_errmsg(buffer, length) bind(C, name="climio_errmsg")
       import :: c_int, c_char
       character(kind=c_char) :: buffer(*)
       integer(c_int), value :: length
     end function c_errmsg
     type(c_ptr) function c_strerror(code) bind(C, name="climio_strerror")
       import :: c_int, c_ptr
       integer(c_int), value :: code
     end function c_strerror
     integer(c_size_t) function c_strlen(text) bind(C, name="strlen")
       import :: c_size_t, c_ptr
       type(c_ptr), value :: text
     end function c_strlen
  end interface

contains

  ! ---------------------------------------------------------------------------------------------- helpers

  pure function cstr(text) result(c)
    character(*), intent(in) :: text
    character(kind=c_char, len=len_trim(text) + 1) :: c
    c = trim(text) // c_null_char
  end function cstr

  pure function reversed(values) result(r)
    integer, intent(in) :: values(:)
    integer(c_long_long) :: r(size(values))
    r = int(values(size(values):1:-1), c_long_long)
  end function reversed

  ! ---------------------------------------------------------------------------------------------- systems

  !> A new I/O system over the model's communicator (an `mpi` handle; with mpi_f08 pass comm%MPI_VAL).
  integer function climio_init_intracomm(comm, iosysid) result(status)
    integer, intent(in) :: comm
    integer, intent(out) :: iosysid
    status = c_init_intracomm(int(comm, c_int), iosysid)
  end function climio_init_intracomm

  !> Server mode on the model's communicator, with `buffer_bytes` per rank of data sent but not yet taken by the
  !> servers (0: 32 MiB); an error when the launch has no I/O servers.
  integer function climio_init_servers(comm, buffer_bytes, iosysid) result(status)
    integer, intent(in) :: comm
    integer(8), intent(in) :: buffer_bytes
    integer, intent(out) :: iosysid
    status = c_init_servers(int(comm, c_int), int(buffer_bytes, c_long_long), iosysid)
  end function climio_init_servers

  !> The model's ranks: every rank of the launch but the I/O servers' (a new communicator; MPI_COMM_WORLD's
  !> duplicate when there are no servers). Collective over the model's ranks only.
  integer function climio_model_comm(comm) result(status)
    integer, intent(out) :: comm
    integer(c_int) :: fcomm
    status = c_model_comm(fcomm)
    comm = int(fcomm)
  end function climio_model_comm

  integer function climio_set_error_handling(iosysid, method) result(status)
    integer, intent(in) :: iosysid, method
    status = c_set_error_handling(iosysid, method)
  end function climio_set_error_handling

  integer function climio_finalize(iosysid) result(status)
    integer, intent(in) :: iosysid
    status = c_finalize(iosysid)
  end function climio_finalize

  ! ---------------------------------------------------------------------------------------------- decompositions

  !> This rank's box of the grid: gdims, start (1-based) and count fastest first, halo cells on each side.
  integer function climio_init_decomp_blocks(iosysid, gdims, start, count, halo, ioid) result(status)
    integer, intent(in) :: iosysid, gdims(:), start(:), count(:), halo
    integer, intent(out) :: ioid
    status = c_init_decomp_blocks(iosysid, size(gdims), reversed(gdims), reversed(start) - 1_c_long_long, &
         reversed(count), halo, ioid)
  end function climio_init_decomp_blocks

  !> PIO's decomposition: compdof(i) is local element i's 1-based offset into the grid (column-major over
  !> gdims, fastest first), 0 for a hole.
  integer function climio_init_decomp(iosysid, gdims, compdof, ioid) result(status)
    integer, intent(in) :: iosysid, gdims(:)
    integer(c_long_long), intent(in) :: compdof(:)
    integer, intent(out) :: ioid
    status = c_init_decomp(iosysid, size(gdims), reversed(gdims), size(compdof, kind=c_long_long), compdof, ioid)
  end function climio_init_decomp

  integer function climio_free_decomp(iosysid, ioid) result(status)
    integer, intent(in) :: iosysid, ioid
    status = c_free_decomp(iosysid, ioid)
  end function climio_free_decomp

  ! ---------------------------------------------------------------------------------------------- files

  integer function climio_createfile(iosysid, ioid, ncid, mode, strategy, path, flags) result(status)
    integer, intent(in) :: iosysid, ioid
    integer, intent(out) :: ncid
    character(*), intent(in) :: mode, strategy, path
    integer, intent(in), optional :: flags
    integer :: chosen
    chosen = CLIMIO_CLOBBER
    if (present(flags)) chosen = flags
    status = c_createfile(iosysid, ioid, ncid, cstr(mode), cstr(strategy), cstr(path), chosen)
  end function climio_createfile

  integer function climio_openfile(iosysid, ioid, ncid, strategy, path) result(status)
    integer, intent(in) :: iosysid, ioid
    integer, intent(out) :: ncid
    character(*), intent(in) :: strategy, path
    status = c_openfile(iosysid, ioid, ncid, cstr(strategy), cstr(path))
  end function climio_openfile

  integer function climio_closefile(ncid) result(status)
    integer, intent(in) :: ncid
    status = c_closefile(ncid)
  end function climio_closefile

  ! ---------------------------------------------------------------------------------------------- definitions

  integer function climio_def_dim(ncid, name, length, dimid) result(status)
    integer, intent(in) :: ncid, length
    character(*), intent(in) :: name
    integer, intent(out) :: dimid
    status = c_def_dim(ncid, cstr(name), int(length, c_long_long), dimid)
  end function climio_def_dim

  !> dimids fastest first (x, y, lev, time), as nf90_def_var takes them.
  integer function climio_def_var(ncid, name, xtype, dimids, varid) result(status)
    integer, intent(in) :: ncid, xtype, dimids(:)
    character(*), intent(in) :: name
    integer, intent(out) :: varid
    status = c_def_var(ncid, cstr(name), xtype, size(dimids), int(dimids(size(dimids):1:-1), c_int), varid)
  end function climio_def_var

  integer function climio_def_var_deflate(ncid, varid, shuffle, deflate, level) result(status)
    integer, intent(in) :: ncid, varid, shuffle, deflate, level
    status = c_def_var_deflate(ncid, varid, shuffle, deflate, level)
  end function climio_def_var_deflate

  integer function climio_def_var_quantize(ncid, varid, quantize_mode, nsd) result(status)
    integer, intent(in) :: ncid, varid, quantize_mode, nsd
    status = c_def_var_quantize(ncid, varid, quantize_mode, nsd)
  end function climio_def_var_quantize

  !> An online reduction on the I/O servers: one record per `steps` steps (CLIMIO_MEAN, MIN, MAX, SUM or INSTANT).
  integer function climio_def_var_reduce(ncid, varid, op, steps) result(status)
    integer, intent(in) :: ncid, varid, op, steps
    status = c_def_var_reduce(ncid, varid, op, steps)
  end function climio_def_var_reduce

  integer function put_att_text(ncid, varid, name, value) result(status)
    integer, intent(in) :: ncid, varid
    character(*), intent(in) :: name, value
    status = c_put_att_text(ncid, varid, cstr(name), value // c_null_char)
  end function put_att_text

  !> Numbers (a scalar or a 1-D array), stored as CLIMIO_DOUBLE.
  integer function put_att_real8(ncid, varid, name, values) result(status)
    integer, intent(in) :: ncid, varid
    character(*), intent(in) :: name
    real(c_double), intent(in) :: values(..)
    select rank (values)
    rank (0)
       status = c_put_att_double(ncid, varid, cstr(name), CLIMIO_DOUBLE, 1_c_long_long, [values])
    rank (1)
       status = c_put_att_double(ncid, varid, cstr(name), CLIMIO_DOUBLE, size(values, kind=c_long_long), values)
    rank default
       status = CLIMIO_EINVAL  ! attributes are vectors; the same on every rank, so no rank waits
    end select
  end function put_att_real8

  !> Integers (a scalar or a 1-D array), stored as CLIMIO_INT.
  integer function put_att_int4(ncid, varid, name, values) result(status)
    integer, intent(in) :: ncid, varid
    character(*), intent(in) :: name
    integer(c_int), intent(in) :: values(..)
    select rank (values)
    rank (0)
       status = c_put_att_double(ncid, varid, cstr(name), CLIMIO_INT, 1_c_long_long, [real(values, c_double)])
    rank (1)
       status = c_put_att_double(ncid, varid, cstr(name), CLIMIO_INT, size(values, kind=c_long_long), &
            real(values, c_double))
    rank default
       status = CLIMIO_EINVAL
    end select
  end function put_att_int4

  integer function climio_enddef(ncid) result(status)
    integer, intent(in) :: ncid
    status = c_enddef(ncid)
  end function climio_enddef

  integer function climio_inq_varid(ncid, name, varid) result(status)
    integer, intent(in) :: ncid
    character(*), intent(in) :: name
    integer, intent(out) :: varid
    status = c_inq_varid(ncid, cstr(name), varid)
  end function climio_inq_varid

  ! ---------------------------------------------------------------------------------------------- data

  !> Frame `frame` (1-based) of the record coordinate.
  integer function climio_put_time(ncid, frame, time) result(status)
    integer, intent(in) :: ncid, frame
    real(c_double), intent(in) :: time
    status = c_put_time(ncid, int(frame - 1, c_long_long), time)
  end function climio_put_time

  integer function write_real4(ncid, varid, frame, array) result(status)
    integer, intent(in) :: ncid, varid, frame
    real(c_float), intent(in), target, contiguous :: array(..)
    status = c_write_darray(ncid, varid, int(frame - 1, c_long_long), CLIMIO_FLOAT, &
         size(array, kind=c_long_long), c_loc(array))
  end function write_real4

  integer function write_real8(ncid, varid, frame, array) result(status)
    integer, intent(in) :: ncid, varid, frame
    real(c_double), intent(in), target, contiguous :: array(..)
    status = c_write_darray(ncid, varid, int(frame - 1, c_long_long), CLIMIO_DOUBLE, &
         size(array, kind=c_long_long), c_loc(array))
  end function write_real8

  integer function write_int4(ncid, varid, frame, array) result(status)
    integer, intent(in) :: ncid, varid, frame
    integer(c_int), intent(in), target, contiguous :: array(..)
    status = c_write_darray(ncid, varid, int(frame - 1, c_long_long), CLIMIO_INT, &
         size(array, kind=c_long_long), c_loc(array))
  end function write_int4

  !> An undistributed variable (coordinates, bounds) from rank 0's values: whole, or its record `frame`.
  integer function put_var_real4(ncid, varid, values, frame) result(status)
    integer, intent(in) :: ncid, varid
    real(c_float), intent(in), target, contiguous :: values(..)
    integer, intent(in), optional :: frame
    status = c_put_var(ncid, varid, frame0(frame), CLIMIO_FLOAT, size(values, kind=c_long_long), c_loc(values))
  end function put_var_real4

  integer function put_var_real8(ncid, varid, values, frame) result(status)
    integer, intent(in) :: ncid, varid
    real(c_double), intent(in), target, contiguous :: values(..)
    integer, intent(in), optional :: frame
    status = c_put_var(ncid, varid, frame0(frame), CLIMIO_DOUBLE, size(values, kind=c_long_long), c_loc(values))
  end function put_var_real8

  integer function put_var_int4(ncid, varid, values, frame) result(status)
    integer, intent(in) :: ncid, varid
    integer(c_int), intent(in), target, contiguous :: values(..)
    integer, intent(in), optional :: frame
    status = c_put_var(ncid, varid, frame0(frame), CLIMIO_INT, size(values, kind=c_long_long), c_loc(values))
  end function put_var_int4

  !> A 1-based Fortran frame as the C API's 0-based one; absent: CLIMIO_NOFRAME.
  pure integer(c_long_long) function frame0(frame)
    integer, intent(in), optional :: frame
    frame0 = -1
    if (present(frame)) frame0 = frame - 1
  end function frame0

  !> Frame `frame` (1-based; CLIMIO_NOFRAME for a variable without records) into this rank's array.
  integer function read_real4(ncid, varid, frame, array) result(status)
    integer, intent(in) :: ncid, varid, frame
    real(c_float), intent(inout), target, contiguous :: array(..)
    status = c_read_darray(ncid, varid, int(frame - 1, c_long_long), CLIMIO_FLOAT, &
         size(array, kind=c_long_long), c_loc(array))
  end function read_real4

  integer function read_real8(ncid, varid, frame, array) result(status)
    integer, intent(in) :: ncid, varid, frame
    real(c_double), intent(inout), target, contiguous :: array(..)
    status = c_read_darray(ncid, varid, int(frame - 1, c_long_long), CLIMIO_DOUBLE, &
         size(array, kind=c_long_long), c_loc(array))
  end function read_real8

  integer function read_int4(ncid, varid, frame, array) result(status)
    integer, intent(in) :: ncid, varid, frame
    integer(c_int), intent(inout), target, contiguous :: array(..)
    status = c_read_darray(ncid, varid, int(frame - 1, c_long_long), CLIMIO_INT, &
         size(array, kind=c_long_long), c_loc(array))
  end function read_int4

  ! ---------------------------------------------------------------------------------------------- errors

  !> This rank's last error message.
  function climio_errmsg() result(message)
    character(len=:), allocatable :: message
    character(kind=c_char) :: buffer(1024)
    integer :: n, i
    n = c_errmsg(buffer, size(buffer))
    allocate (character(len=n) :: message)
    do i = 1, n
       message(i:i) = buffer(i)
    end do
  end function climio_errmsg

  !> What an error code means.
  function climio_strerror(code) result(text)
    integer, intent(in) :: code
    character(len=:), allocatable :: text
    type(c_ptr) :: p
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    p = c_strerror(code)
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: text)
    do i = 1, n
       text(i:i) = chars(i)
    end do
  end function climio_strerror

end module climio_io
