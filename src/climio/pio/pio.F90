! PIO2's Fortran interface on climio: a program written for PIO2 (ParallelIO 2.x) compiles unchanged with
! `use pio` against climio's pio.mod and links with libpiof (pkg-config pio). The names, kinds, constants, derived
! types and generic interfaces are PIO2's; every call goes to climio's libpioc (pio.h) through ISO_C_BINDING.
!
! Conventions of PIO2's Fortran layer, kept here:
!  * Ids are 1-based: a var_desc_t's varid, dimension ids and attribute numbers are the C ids plus 1, so that
!    PIO_global (0) becomes NC_GLOBAL (-1) in C.
!  * Dimension lists are in Fortran order (fastest first): gdims, dimids, starts, counts, indices and chunk sizes
!    are reversed for C, and starts, indices and frames are 1-based. A decomposition's compdof holds 1-based
!    offsets into the Fortran-ordered global array: the same numbers as C's row-major offsets over the reversed
!    dimensions, so they pass unchanged.
!  * Distributed arrays are passed flat: write_darray/read_darray take the task's elements in compdof's order,
!    whatever the rank of the Fortran array that holds them.
!  * PIO_init, PIO_initdecomp, PIO_closefile and the other subroutines return no code: a failure there is
!    handled by the I/O system's error handler (PIO_INTERNAL_ERROR, the default, aborts with one line).
!
! Modules: pio (what programs use), pio_kinds, pio_types, pio_support (PIO2's names: pio_readdof, pio_writedof
! and piodie are used from there) and pio_climio (the calls).

module pio_kinds
  use iso_fortran_env, only : int16, int32, int64, real32, real64
  implicit none
  private

  integer, parameter, public :: i2 = int16, i4 = int32, i8 = int64, r4 = real32, r8 = real64
  integer, parameter, public :: int_kind = kind(1), log_kind = kind(.true.), char_len = 360
  integer, parameter, public :: PIO_OFFSET_KIND = int64  ! pio.h's PIO_Offset (MPI_Offset)
end module pio_kinds


module pio_types
  use iso_c_binding, only : c_int, c_bool
  use pio_kinds, only : i4
  implicit none
  private

  type, public :: iosystem_desc_t
     integer(c_int) :: iosysid = -1  ! the C I/O system id
  end type iosystem_desc_t

  type, public :: file_desc_t
     integer(c_int) :: fh = -1  ! the C ncid
     type(iosystem_desc_t), pointer :: iosystem => null()  ! the I/O system the file was opened on
  end type file_desc_t

  type, public :: io_desc_t
     integer(i4) :: ioid = -1  ! the C decomposition id
  end type io_desc_t

  type, public :: var_desc_t
     integer(i4) :: varid = -1  ! the C varid + 1
     integer(i4) :: ncid = -1   ! the file's C ncid, once defined or looked up through a file_desc_t
  end type var_desc_t

  ! PIO_init's optional rearranger options (PIO2's layout; climio's rearranger takes no options)
  type, bind(C), public :: pio_rearr_comm_fc_opt_t
     logical(c_bool) :: enable_hs
     logical(c_bool) :: enable_isend
     integer(c_int) :: max_pend_req
  end type pio_rearr_comm_fc_opt_t

  type, bind(C), public :: pio_rearr_opt_t
     integer(c_int) :: comm_type
     integer(c_int) :: fcd
     type(pio_rearr_comm_fc_opt_t) :: comm_fc_opts_comp2io
     type(pio_rearr_comm_fc_opt_t) :: comm_fc_opts_io2comp
  end type pio_rearr_opt_t

  ! The values of pio.h (netCDF's for the modes, types and fill values)
  integer(i4), parameter, public :: PIO_iotype_pnetcdf = 1, PIO_iotype_netcdf = 2, PIO_iotype_netcdf4c = 3, &
       PIO_iotype_netcdf4p = 4
  integer(i4), parameter, public :: iotype_pnetcdf = PIO_iotype_pnetcdf, iotype_netcdf = PIO_iotype_netcdf
  integer(i4), parameter, public :: PIO_rearr_box = 1, PIO_rearr_subset = 2
  integer(i4), parameter, public :: PIO_internal_error = -51, PIO_bcast_error = -52, PIO_return_error = -53
  integer(i4), parameter, public :: PIO_default = -1  ! as an iosysid: the error handling of later I/O systems
  integer, parameter, public :: PIO_rearr_comm_p2p = 0, PIO_rearr_comm_coll = 1
  integer, parameter, public :: PIO_rearr_comm_fc_2d_enable = 0, PIO_rearr_comm_fc_1d_comp2io = 1, &
       PIO_rearr_comm_fc_1d_io2comp = 2, PIO_rearr_comm_fc_2d_disable = 3
  integer, parameter, public :: PIO_rearr_comm_unlimited_pend_req = -1

  integer, parameter, public :: PIO_noerr = 0
  integer, parameter, public :: PIO_global = 0     ! NC_GLOBAL + 1
  integer, parameter, public :: PIO_unlimited = 0  ! NC_UNLIMITED
  integer, parameter, public :: PIO_char = 2, PIO_short = 3, PIO_int = 4, PIO_real = 5, PIO_double = 6
  integer, parameter, public :: PIO_write = 1, PIO_nowrite = 0, PIO_clobber = 0, PIO_noclobber = 4
  integer, parameter, public :: PIO_fill = 0, PIO_nofill = 256
  integer, parameter, public :: PIO_64bit_offset = 512, PIO_64bit_data = 32
  integer, parameter, public :: PIO_max_name = 256
  integer, parameter, public :: PIO_max_var_dims = 6  ! PIO2's Fortran value (C's is netCDF's 1024)
  integer, parameter, public :: PIO_num_OST = 16
  integer, parameter, public :: PIO_noquantize = 0, PIO_quantize_bitgroom = 1, PIO_quantize_granularbr = 2, &
       PIO_quantize_bitround = 3
  integer, parameter, public :: PIO_FILL_INT = -2147483647
  real, parameter, public :: PIO_FILL_FLOAT = 9.9692099683868690e+36
  double precision, parameter, public :: PIO_FILL_DOUBLE = 9.9692099683868690d+36
end module pio_types


! Decomposition files in PIO's text format, and PIO's error exit.
module pio_support
  use iso_c_binding, only : c_null_char
  use pio_kinds, only : i4, PIO_OFFSET_KIND
  use mpi
  implicit none
  private

  public :: piodie, CheckMPIreturn, pio_readdof, pio_writedof, replace_c_null

  logical, public :: debug = .false., debugio = .false., debugasync = .false.

  integer, parameter :: VERSNO = 2001  ! the only version of the text format PIO2 reads and writes

contains

  ! Say where and why on stdout, then abort the job.
  subroutine piodie(file, line, msg, ival1, msg2, ival2, msg3, ival3, mpirank)
    character(len=*), intent(in) :: file
    integer, intent(in) :: line
    character(len=*), intent(in), optional :: msg, msg2, msg3
    integer, intent(in), optional :: ival1, ival2, ival3, mpirank
    character(len=:), allocatable :: text
    integer :: ierr

    text = file//':'//itoa(line)//': ERROR:'
    if (present(mpirank)) text = text//' rank '//itoa(mpirank)//':'
    if (present(msg)) text = text//' '//msg
    if (present(ival1)) text = text//' '//itoa(ival1)
    if (present(msg2)) text = text//' '//msg2
    if (present(ival2)) text = text//' '//itoa(ival2)
    if (present(msg3)) text = text//' '//msg3
    if (present(ival3)) text = text//' '//itoa(ival3)
    write(*, '(a)') 'pio_support::piodie: '//text
    flush(6)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    error stop 1
  end subroutine piodie

  function itoa(i) result(text)
    integer, intent(in) :: i
    character(len=:), allocatable :: text
    character(len=24) :: digits

    write(digits, '(i0)') i
    text = trim(digits)
  end function itoa

  ! An MPI call's failure: its message, and the end of the job when file and line are given.
  subroutine CheckMPIreturn(locmesg, errcode, file, line)
    character(len=*), intent(in) :: locmesg
    integer(i4), intent(in) :: errcode
    character(len=*), intent(in), optional :: file
    integer, intent(in), optional :: line
    character(len=MPI_MAX_ERROR_STRING) :: errorstring
    integer :: errorlen, ierr

    if (errcode == MPI_SUCCESS) return
    call MPI_Error_string(errcode, errorstring, errorlen, ierr)
    write(*, '(a)') trim(adjustl(locmesg))//errorstring(1:errorlen)
    if (present(file) .and. present(line)) call piodie(file, line)
  end subroutine CheckMPIreturn

  ! Blank out a string from its first NUL on (the first ilen characters only, when given).
  subroutine replace_c_null(istr, ilen)
    character(len=*), intent(inout) :: istr
    integer(PIO_OFFSET_KIND), intent(in), optional :: ilen
    integer :: n, at

    n = len(istr)
    if (present(ilen)) n = min(n, int(ilen))
    at = index(istr(1:n), c_null_char)
    if (at > 0) istr(at:n) = ' '
  end subroutine replace_c_null

  ! Read a decomposition file in PIO's text format (PIOc_writemap's):
  !     version 2001 npes <N> ndims <D>
  !     <gdims(1)> ... <gdims(D)>
  !     0 <maplen of task 0>
  !     <compdof of task 0: 1-based offsets, 0 for a hole>
  !     1 <maplen of task 1>
  !     ...
  ! The first task of comm reads it and sends each task its map; tasks beyond N get none. gdims come back as
  ! the file lists them (PIO2's reader does not reorder them), DOF as the file's 1-based offsets.
  subroutine pio_readdof(file, ndims, gdims, DOF, comm)
    character(len=*), intent(in) :: file
    integer, intent(out) :: ndims
    integer, pointer :: gdims(:)
    integer(PIO_OFFSET_KIND), pointer :: DOF(:)
    integer, intent(in) :: comm
    character(len=16) :: word(3)
    character(len=512) :: problem
    integer :: rank, npes, ierr, unit, ios, version, ntasks, task, t, header(2)
    integer(PIO_OFFSET_KIND) :: maplen
    integer(PIO_OFFSET_KIND), allocatable :: map(:)

    call MPI_Comm_rank(comm, rank, ierr)
    call MPI_Comm_size(comm, npes, ierr)
    if (rank == 0) then
       open(newunit=unit, file=trim(file), status='old', action='read', iostat=ios, iomsg=problem)
       if (ios /= 0) call piodie('pio_readdof', __LINE__, trim(file)//': '//trim(problem))
       read(unit, *, iostat=ios) word(1), version, word(2), ntasks, word(3), ndims
       if (ios /= 0 .or. word(1) /= 'version' .or. word(2) /= 'npes' .or. word(3) /= 'ndims') &
            call piodie('pio_readdof', __LINE__, trim(file)//': not a PIO decomposition file '// &
            '(its first line is not "version <v> npes <n> ndims <d>")')
       if (version /= VERSNO) call piodie('pio_readdof', __LINE__, trim(file)//': version', version, &
            'of the decomposition format: PIO reads version', VERSNO)
       if (ntasks < 1 .or. ntasks > npes) call piodie('pio_readdof', __LINE__, trim(file)//': a map of', &
            ntasks, 'tasks, read on', npes)
       if (ndims < 1) call piodie('pio_readdof', __LINE__, trim(file)//':', ndims, 'dimensions')
       header = [ntasks, ndims]
    end if
    call MPI_Bcast(header, 2, MPI_INTEGER, 0, comm, ierr)
    ntasks = header(1)
    ndims = header(2)
    allocate(gdims(ndims))
    if (rank == 0) then
       read(unit, *, iostat=ios) gdims
       if (ios /= 0) call piodie('pio_readdof', __LINE__, trim(file)//': no line of', ndims, 'dimension lengths')
    end if
    call MPI_Bcast(gdims, ndims, MPI_INTEGER, 0, comm, ierr)

    if (rank == 0) then
       do t = 0, ntasks - 1
          read(unit, *, iostat=ios) task, maplen
          if (ios /= 0 .or. task /= t .or. maplen < 0) &
               call piodie('pio_readdof', __LINE__, trim(file)//': no "<task> <maplen>" line for task', t)
          allocate(map(maplen))
          if (maplen > 0) then
             read(unit, *, iostat=ios) map
             if (ios /= 0) call piodie('pio_readdof', __LINE__, trim(file)//': the map of task', t, &
                  'is not of the length given:', int(maplen))
          end if
          if (t == 0) then
             allocate(DOF(maplen))
             DOF = map
          else
             call MPI_Send(maplen, 1, MPI_INTEGER8, t, 1, comm, ierr)
             call MPI_Send(map, int(maplen), MPI_INTEGER8, t, 2, comm, ierr)
          end if
          deallocate(map)
       end do
       close(unit)
    else if (rank < ntasks) then
       call MPI_Recv(maplen, 1, MPI_INTEGER8, 0, 1, comm, MPI_STATUS_IGNORE, ierr)
       allocate(DOF(maplen))
       call MPI_Recv(DOF, int(maplen), MPI_INTEGER8, 0, 2, comm, MPI_STATUS_IGNORE, ierr)
    else
       allocate(DOF(0))
    end if
  end subroutine pio_readdof

  ! Write every task's DOF into one decomposition file in PIO's text format (what pio_readdof reads), gdims
  ! as given; the first task of comm writes it.
  subroutine pio_writedof(file, gdims, DOF, comm)
    character(len=*), intent(in) :: file
    integer, intent(in) :: gdims(:)
    integer(PIO_OFFSET_KIND), intent(in) :: DOF(:)
    integer, intent(in) :: comm
    character(len=512) :: problem
    integer :: rank, npes, ierr, unit, ios, t
    integer(PIO_OFFSET_KIND) :: maplen
    integer(PIO_OFFSET_KIND), allocatable :: maplens(:), map(:)

    call MPI_Comm_rank(comm, rank, ierr)
    call MPI_Comm_size(comm, npes, ierr)
    maplen = size(DOF)
    allocate(maplens(npes))
    call MPI_Gather(maplen, 1, MPI_INTEGER8, maplens, 1, MPI_INTEGER8, 0, comm, ierr)
    if (rank /= 0) then
       call MPI_Send(DOF, int(maplen), MPI_INTEGER8, 0, 3, comm, ierr)
       return
    end if
    open(newunit=unit, file=trim(file), status='replace', action='write', iostat=ios, iomsg=problem)
    if (ios /= 0) call piodie('pio_writedof', __LINE__, trim(file)//': '//trim(problem))
    write(unit, '("version ",i0," npes ",i0," ndims ",i0," ")') VERSNO, npes, size(gdims)
    write(unit, '(*(i0,:," "))') gdims
    do t = 0, npes - 1
       allocate(map(maplens(t + 1)))
       if (t == 0) then
          map = DOF
       else
          call MPI_Recv(map, int(maplens(t + 1)), MPI_INTEGER8, t, 3, comm, MPI_STATUS_IGNORE, ierr)
       end if
       write(unit, '(i0," ",i0)') t, maplens(t + 1)
       write(unit, '(*(i0,:," "))') map
       deallocate(map)
    end do
    write(unit, '(a)') '', 'Obtained 0 stack frames.'
    close(unit)
  end subroutine pio_writedof
end module pio_support


! The calls: PIO2's generic interfaces over libpioc.
module pio_climio
  use iso_c_binding
  use iso_fortran_env, only : error_unit
  use pio_kinds
  use pio_types
  use pio_support, only : piodie
  implicit none
  private

  public :: PIO_init, PIO_finalize, PIO_initdecomp, PIO_freedecomp, PIO_get_local_array_size, &
       PIO_getnumiotasks, PIO_get_numiotasks, PIO_iotype_available, PIO_seterrorhandling, PIO_set_hint, &
       PIO_setdebuglevel, PIO_set_log_level, PIO_strerror, &
       PIO_createfile, PIO_openfile, PIO_closefile, PIO_syncfile, PIO_file_is_open, PIO_enddef, PIO_redef, &
       PIO_set_fill, PIO_setframe, PIO_advanceframe, &
       PIO_def_dim, PIO_def_var, PIO_def_var_deflate, PIO_def_var_chunking, PIO_inq_var_deflate, &
       PIO_inquire, PIO_inq_unlimdim, PIO_inq_dimid, PIO_inq_dimname, PIO_inq_dimlen, PIO_inquire_dimension, &
       PIO_inq_varid, PIO_inq_varname, PIO_inq_vartype, PIO_inq_varndims, PIO_inq_vardimid, PIO_inq_varnatts, &
       PIO_inquire_variable, PIO_inq_att, PIO_inq_attlen, PIO_inq_attname, PIO_put_att, PIO_get_att, &
       PIO_put_var, PIO_get_var, PIO_write_darray, PIO_read_darray

  integer, parameter :: PIO_EINVAL = -36  ! NC_EINVAL: the module's own checks of a call's arguments

  interface PIO_init
     module procedure init_intracom
     module procedure init_intercom
     module procedure init_intercom_from_comms
  end interface PIO_init

  interface PIO_finalize
     module procedure finalize
  end interface PIO_finalize

  interface PIO_initdecomp
     module procedure initdecomp_dof_i4, initdecomp_dof_i8, initdecomp_bc
     module procedure initdecomp_1dof_bin_i4, initdecomp_1dof_bin_i8, initdecomp_1dof_nf_i4, initdecomp_1dof_nf_i8
  end interface PIO_initdecomp

  interface PIO_freedecomp
     module procedure freedecomp_ios, freedecomp_file
  end interface PIO_freedecomp

  interface PIO_getnumiotasks
     module procedure getnumiotasks
  end interface PIO_getnumiotasks

  interface PIO_get_numiotasks
     module procedure getnumiotasks
  end interface PIO_get_numiotasks

  interface PIO_seterrorhandling
     module procedure seterrorhandling_file, seterrorhandling_iosystem, seterrorhandling_iosysid
  end interface PIO_seterrorhandling

  interface PIO_setdebuglevel
     module procedure setdebuglevel
  end interface PIO_setdebuglevel

  interface PIO_set_log_level
     module procedure set_log_level
  end interface PIO_set_log_level

  interface PIO_strerror
     module procedure strerror
  end interface PIO_strerror

  interface PIO_createfile
     module procedure createfile
  end interface PIO_createfile

  interface PIO_openfile
     module procedure openfile
  end interface PIO_openfile

  interface PIO_closefile
     module procedure closefile
  end interface PIO_closefile

  interface PIO_syncfile
     module procedure syncfile
  end interface PIO_syncfile

  interface PIO_enddef
     module procedure enddef_desc, enddef_id
  end interface PIO_enddef

  interface PIO_redef
     module procedure redef_desc, redef_id
  end interface PIO_redef

  interface PIO_set_fill
     module procedure set_fill_desc, set_fill_id
  end interface PIO_set_fill

  interface PIO_setframe
     module procedure setframe, setframe_i4
  end interface PIO_setframe

  interface PIO_advanceframe
     module procedure advanceframe
  end interface PIO_advanceframe

  interface PIO_def_dim
     module procedure def_dim_desc, def_dim_id, def_dim_int_desc, def_dim_int_id
  end interface PIO_def_dim

  interface PIO_def_var
     module procedure def_var_0d_desc, def_var_md_desc, def_var_0d_id, def_var_md_id
  end interface PIO_def_var

  interface PIO_def_var_deflate
     module procedure def_var_deflate_desc, def_var_deflate_id
  end interface PIO_def_var_deflate

  interface PIO_def_var_chunking
     module procedure def_var_chunking_desc, def_var_chunking_vid, def_var_chunking_int
  end interface PIO_def_var_chunking

  interface PIO_inq_var_deflate
     module procedure inq_var_deflate_desc, inq_var_deflate_vid, inq_var_deflate_id
  end interface PIO_inq_var_deflate

  interface PIO_inquire
     module procedure inquire_desc, inquire_id
  end interface PIO_inquire

  interface PIO_inq_unlimdim
     module procedure inq_unlimdim_desc, inq_unlimdim_id
  end interface PIO_inq_unlimdim

  interface PIO_inq_dimid
     module procedure inq_dimid_desc, inq_dimid_id
  end interface PIO_inq_dimid

  interface PIO_inq_dimname
     module procedure inq_dimname_desc, inq_dimname_id
  end interface PIO_inq_dimname

  interface PIO_inq_dimlen
     module procedure inq_dimlen_desc, inq_dimlen_id, inq_dimlen_desc_long, inq_dimlen_id_long
  end interface PIO_inq_dimlen

  interface PIO_inquire_dimension
     module procedure inquire_dimension_desc, inquire_dimension_id
  end interface PIO_inquire_dimension

  interface PIO_inq_varid
     module procedure inq_varid_desc, inq_varid_vid, inq_varid_id
  end interface PIO_inq_varid

  interface PIO_inq_varname
     module procedure inq_varname_desc, inq_varname_vid, inq_varname_id
  end interface PIO_inq_varname

  interface PIO_inq_vartype
     module procedure inq_vartype_desc, inq_vartype_vid, inq_vartype_id
  end interface PIO_inq_vartype

  interface PIO_inq_varndims
     module procedure inq_varndims_desc, inq_varndims_vid, inq_varndims_id
  end interface PIO_inq_varndims

  interface PIO_inq_vardimid
     module procedure inq_vardimid_desc, inq_vardimid_vid, inq_vardimid_id
  end interface PIO_inq_vardimid

  interface PIO_inq_varnatts
     module procedure inq_varnatts_desc, inq_varnatts_vid, inq_varnatts_id
  end interface PIO_inq_varnatts

  interface PIO_inquire_variable
     module procedure inquire_variable_desc, inquire_variable_vid, inquire_variable_id
  end interface PIO_inquire_variable

  interface PIO_inq_att
     module procedure inq_att_desc, inq_att_vid, inq_att_id
  end interface PIO_inq_att

  interface PIO_inq_attlen
     module procedure inq_attlen_desc, inq_attlen_vid, inq_attlen_id
  end interface PIO_inq_attlen

  interface PIO_inq_attname
     module procedure inq_attname_desc, inq_attname_vid, inq_attname_id
  end interface PIO_inq_attname

  interface PIO_put_att
     module procedure put_att_id_text, put_att_vid_text, put_att_desc_text
     module procedure put_att_id_int, put_att_id_real, put_att_id_double, &
          put_att_vid_int, put_att_vid_real, put_att_vid_double, &
          put_att_desc_int, put_att_desc_real, put_att_desc_double
  end interface PIO_put_att

  interface PIO_get_att
     module procedure get_att_id_text, get_att_vid_text, get_att_desc_text
     module procedure get_att_id_int, get_att_id_real, get_att_id_double, &
          get_att_vid_int, get_att_vid_real, get_att_vid_double, &
          get_att_desc_int, get_att_desc_real, get_att_desc_double
  end interface PIO_get_att

  interface PIO_put_var
     module procedure put_var_0d_text, put_var_vdesc_0d_text
     module procedure put_var_0d_int, put_var_0d_real, put_var_0d_double
     module procedure put_var_vdesc_0d_int, put_var_vdesc_0d_real, put_var_vdesc_0d_double
     module procedure put_var_1d_int, put_var_1d_real, put_var_1d_double
     module procedure put_var_vdesc_1d_int, put_var_vdesc_1d_real, put_var_vdesc_1d_double
     module procedure put_var_2d_int, put_var_2d_real, put_var_2d_double
     module procedure put_var_vdesc_2d_int, put_var_vdesc_2d_real, put_var_vdesc_2d_double
     module procedure put_var_3d_int, put_var_3d_real, put_var_3d_double
     module procedure put_var_vdesc_3d_int, put_var_vdesc_3d_real, put_var_vdesc_3d_double
     module procedure put_var1_int, put_var1_real, put_var1_double
     module procedure put_var1_vdesc_int, put_var1_vdesc_real, put_var1_vdesc_double
     module procedure put_vara_int, put_vara_real, put_vara_double
     module procedure put_vara_vdesc_int, put_vara_vdesc_real, put_vara_vdesc_double
  end interface PIO_put_var

  interface PIO_get_var
     module procedure get_var_0d_text, get_var_vdesc_0d_text
     module procedure get_var_0d_int, get_var_0d_real, get_var_0d_double
     module procedure get_var_vdesc_0d_int, get_var_vdesc_0d_real, get_var_vdesc_0d_double
     module procedure get_var_1d_int, get_var_1d_real, get_var_1d_double
     module procedure get_var_vdesc_1d_int, get_var_vdesc_1d_real, get_var_vdesc_1d_double
     module procedure get_var_2d_int, get_var_2d_real, get_var_2d_double
     module procedure get_var_vdesc_2d_int, get_var_vdesc_2d_real, get_var_vdesc_2d_double
     module procedure get_var_3d_int, get_var_3d_real, get_var_3d_double
     module procedure get_var_vdesc_3d_int, get_var_vdesc_3d_real, get_var_vdesc_3d_double
     module procedure get_var1_int, get_var1_real, get_var1_double
     module procedure get_var1_vdesc_int, get_var1_vdesc_real, get_var1_vdesc_double
     module procedure get_vara_int, get_vara_real, get_vara_double
     module procedure get_vara_vdesc_int, get_vara_vdesc_real, get_vara_vdesc_double
  end interface PIO_get_var

  interface PIO_write_darray
     module procedure write_darray_int, write_darray_real, write_darray_double
  end interface PIO_write_darray

  interface PIO_read_darray
     module procedure read_darray_int, read_darray_real, read_darray_double
  end interface PIO_read_darray

  ! libpioc (pio.h). Strings go as NUL-terminated arrays of char; buffers as C pointers.
  interface
     integer(c_int) function PIOc_Init_Intracomm_from_F90(f90_comp_comm, num_iotasks, stride, base, rearr, &
          rearr_opts, iosysidp) bind(C, name="PIOc_Init_Intracomm_from_F90")
       import :: c_int, c_ptr
       integer(c_int), value :: f90_comp_comm, num_iotasks, stride, base, rearr
       type(c_ptr), value :: rearr_opts
       integer(c_int), intent(out) :: iosysidp
     end function PIOc_Init_Intracomm_from_F90

     integer(c_int) function PIOc_init_async_from_F90(f90_world_comm, num_io_procs, io_proc_list, &
          component_count, procs_per_component, flat_proc_list, f90_io_comm, f90_comp_comm, rearranger, &
          iosysidp) bind(C, name="PIOc_init_async_from_F90")
       import :: c_int
       integer(c_int), value :: f90_world_comm, num_io_procs, component_count, rearranger
       integer(c_int), intent(in) :: io_proc_list(*), procs_per_component(*), flat_proc_list(*)
       integer(c_int), intent(out) :: f90_io_comm, f90_comp_comm(*), iosysidp(*)
     end function PIOc_init_async_from_F90

     integer(c_int) function PIOc_init_async_comms_from_F90(f90_world_comm, component_count, f90_comp_comms, &
          f90_io_comm, rearranger, iosysidp) bind(C, name="PIOc_init_async_comms_from_F90")
       import :: c_int
       integer(c_int), value :: f90_world_comm, component_count, f90_io_comm, rearranger
       integer(c_int), intent(in) :: f90_comp_comms(*)
       integer(c_int), intent(out) :: iosysidp(*)
     end function PIOc_init_async_comms_from_F90

     integer(c_int) function PIOc_finalize(iosysid) bind(C, name="PIOc_finalize")
       import :: c_int
       integer(c_int), value :: iosysid
     end function PIOc_finalize

     integer(c_int) function PIOc_Set_IOSystem_Error_Handling(iosysid, method) &
          bind(C, name="PIOc_Set_IOSystem_Error_Handling")
       import :: c_int
       integer(c_int), value :: iosysid, method
     end function PIOc_Set_IOSystem_Error_Handling

     integer(c_int) function PIOc_set_hint(iosysid, hint, hintval) bind(C, name="PIOc_set_hint")
       import :: c_int, c_char
       integer(c_int), value :: iosysid
       character(kind=c_char), intent(in) :: hint(*), hintval(*)
     end function PIOc_set_hint

     integer(c_int) function PIOc_get_numiotasks(iosysid, numiotasks) bind(C, name="PIOc_get_numiotasks")
       import :: c_int
       integer(c_int), value :: iosysid
       integer(c_int), intent(out) :: numiotasks
     end function PIOc_get_numiotasks

     integer(c_int) function PIOc_iotype_available(iotype) bind(C, name="PIOc_iotype_available")
       import :: c_int
       integer(c_int), value :: iotype
     end function PIOc_iotype_available

     integer(c_int) function PIOc_set_log_level(level) bind(C, name="PIOc_set_log_level")
       import :: c_int
       integer(c_int), value :: level
     end function PIOc_set_log_level

     integer(c_int) function PIOc_strerror(pioerr, errstr) bind(C, name="PIOc_strerror")
       import :: c_int, c_char
       integer(c_int), value :: pioerr
       character(kind=c_char) :: errstr(*)
     end function PIOc_strerror

     integer(c_int) function PIOc_InitDecomp(iosysid, pio_type, ndims, gdimlen, maplen, compmap, ioidp, rearr, &
          iostart, iocount) bind(C, name="PIOc_InitDecomp")
       import :: c_int, c_int64_t, c_ptr
       integer(c_int), value :: iosysid, pio_type, ndims, maplen
       integer(c_int), intent(in) :: gdimlen(*)
       integer(c_int64_t), intent(in) :: compmap(*)
       integer(c_int), intent(inout) :: ioidp
       type(c_ptr), value :: rearr, iostart, iocount
     end function PIOc_InitDecomp

     integer(c_int) function PIOc_InitDecomp_bc(iosysid, basetype, ndims, gdimlen, start, count, ioidp) &
          bind(C, name="PIOc_InitDecomp_bc")
       import :: c_int, c_long
       integer(c_int), value :: iosysid, basetype, ndims
       integer(c_int), intent(in) :: gdimlen(*)
       integer(c_long), intent(in) :: start(*), count(*)
       integer(c_int), intent(inout) :: ioidp
     end function PIOc_InitDecomp_bc

     integer(c_int) function PIOc_freedecomp(iosysid, ioid) bind(C, name="PIOc_freedecomp")
       import :: c_int
       integer(c_int), value :: iosysid, ioid
     end function PIOc_freedecomp

     integer(c_int) function PIOc_get_local_array_size(ioid) bind(C, name="PIOc_get_local_array_size")
       import :: c_int
       integer(c_int), value :: ioid
     end function PIOc_get_local_array_size

     integer(c_int) function PIOc_createfile(iosysid, ncidp, iotype, fname, mode) bind(C, name="PIOc_createfile")
       import :: c_int, c_char
       integer(c_int), value :: iosysid, mode
       integer(c_int), intent(inout) :: ncidp, iotype
       character(kind=c_char), intent(in) :: fname(*)
     end function PIOc_createfile

     integer(c_int) function PIOc_openfile(iosysid, ncidp, iotype, fname, mode) bind(C, name="PIOc_openfile")
       import :: c_int, c_char
       integer(c_int), value :: iosysid, mode
       integer(c_int), intent(inout) :: ncidp, iotype
       character(kind=c_char), intent(in) :: fname(*)
     end function PIOc_openfile

     integer(c_int) function PIOc_closefile(ncid) bind(C, name="PIOc_closefile")
       import :: c_int
       integer(c_int), value :: ncid
     end function PIOc_closefile

     integer(c_int) function PIOc_sync(ncid) bind(C, name="PIOc_sync")
       import :: c_int
       integer(c_int), value :: ncid
     end function PIOc_sync

     integer(c_int) function PIOc_enddef(ncid) bind(C, name="PIOc_enddef")
       import :: c_int
       integer(c_int), value :: ncid
     end function PIOc_enddef

     integer(c_int) function PIOc_redef(ncid) bind(C, name="PIOc_redef")
       import :: c_int
       integer(c_int), value :: ncid
     end function PIOc_redef

     integer(c_int) function PIOc_set_fill(ncid, fillmode, old_modep) bind(C, name="PIOc_set_fill")
       import :: c_int
       integer(c_int), value :: ncid, fillmode
       integer(c_int), intent(out) :: old_modep
     end function PIOc_set_fill

     integer(c_int) function PIOc_File_is_Open(ncid) bind(C, name="PIOc_File_is_Open")
       import :: c_int
       integer(c_int), value :: ncid
     end function PIOc_File_is_Open

     integer(c_int) function PIOc_setframe(ncid, varid, frame) bind(C, name="PIOc_setframe")
       import :: c_int
       integer(c_int), value :: ncid, varid, frame
     end function PIOc_setframe

     integer(c_int) function PIOc_advanceframe(ncid, varid) bind(C, name="PIOc_advanceframe")
       import :: c_int
       integer(c_int), value :: ncid, varid
     end function PIOc_advanceframe

     integer(c_int) function PIOc_inq(ncid, ndimsp, nvarsp, ngattsp, unlimdimidp) bind(C, name="PIOc_inq")
       import :: c_int
       integer(c_int), value :: ncid
       integer(c_int), intent(out) :: ndimsp, nvarsp, ngattsp, unlimdimidp
     end function PIOc_inq

     integer(c_int) function PIOc_inq_dimid(ncid, name, idp) bind(C, name="PIOc_inq_dimid")
       import :: c_int, c_char
       integer(c_int), value :: ncid
       character(kind=c_char), intent(in) :: name(*)
       integer(c_int), intent(inout) :: idp
     end function PIOc_inq_dimid

     integer(c_int) function PIOc_inq_dimname(ncid, dimid, name) bind(C, name="PIOc_inq_dimname")
       import :: c_int, c_char
       integer(c_int), value :: ncid, dimid
       character(kind=c_char) :: name(*)
     end function PIOc_inq_dimname

     integer(c_int) function PIOc_inq_dimlen(ncid, dimid, lenp) bind(C, name="PIOc_inq_dimlen")
       import :: c_int, c_int64_t
       integer(c_int), value :: ncid, dimid
       integer(c_int64_t), intent(inout) :: lenp
     end function PIOc_inq_dimlen

     integer(c_int) function PIOc_inq_varid(ncid, name, varidp) bind(C, name="PIOc_inq_varid")
       import :: c_int, c_char
       integer(c_int), value :: ncid
       character(kind=c_char), intent(in) :: name(*)
       integer(c_int), intent(inout) :: varidp
     end function PIOc_inq_varid

     integer(c_int) function PIOc_inq_varname(ncid, varid, name) bind(C, name="PIOc_inq_varname")
       import :: c_int, c_char
       integer(c_int), value :: ncid, varid
       character(kind=c_char) :: name(*)
     end function PIOc_inq_varname

     integer(c_int) function PIOc_inq_vartype(ncid, varid, xtypep) bind(C, name="PIOc_inq_vartype")
       import :: c_int
       integer(c_int), value :: ncid, varid
       integer(c_int), intent(inout) :: xtypep
     end function PIOc_inq_vartype

     integer(c_int) function PIOc_inq_varndims(ncid, varid, ndimsp) bind(C, name="PIOc_inq_varndims")
       import :: c_int
       integer(c_int), value :: ncid, varid
       integer(c_int), intent(inout) :: ndimsp
     end function PIOc_inq_varndims

     integer(c_int) function PIOc_inq_vardimid(ncid, varid, dimidsp) bind(C, name="PIOc_inq_vardimid")
       import :: c_int
       integer(c_int), value :: ncid, varid
       integer(c_int), intent(inout) :: dimidsp(*)
     end function PIOc_inq_vardimid

     integer(c_int) function PIOc_inq_varnatts(ncid, varid, nattsp) bind(C, name="PIOc_inq_varnatts")
       import :: c_int
       integer(c_int), value :: ncid, varid
       integer(c_int), intent(inout) :: nattsp
     end function PIOc_inq_varnatts

     integer(c_int) function PIOc_inq_att(ncid, varid, name, xtypep, lenp) bind(C, name="PIOc_inq_att")
       import :: c_int, c_char, c_int64_t
       integer(c_int), value :: ncid, varid
       character(kind=c_char), intent(in) :: name(*)
       integer(c_int), intent(inout) :: xtypep
       integer(c_int64_t), intent(inout) :: lenp
     end function PIOc_inq_att

     integer(c_int) function PIOc_inq_attname(ncid, varid, attnum, name) bind(C, name="PIOc_inq_attname")
       import :: c_int, c_char
       integer(c_int), value :: ncid, varid, attnum
       character(kind=c_char) :: name(*)
     end function PIOc_inq_attname

     integer(c_int) function PIOc_def_dim(ncid, name, len, idp) bind(C, name="PIOc_def_dim")
       import :: c_int, c_char, c_int64_t
       integer(c_int), value :: ncid
       character(kind=c_char), intent(in) :: name(*)
       integer(c_int64_t), value :: len
       integer(c_int), intent(inout) :: idp
     end function PIOc_def_dim

     integer(c_int) function PIOc_def_var(ncid, name, xtype, ndims, dimidsp, varidp) bind(C, name="PIOc_def_var")
       import :: c_int, c_char
       integer(c_int), value :: ncid, xtype, ndims
       character(kind=c_char), intent(in) :: name(*)
       integer(c_int), intent(in) :: dimidsp(*)
       integer(c_int), intent(inout) :: varidp
     end function PIOc_def_var

     integer(c_int) function PIOc_def_var_deflate(ncid, varid, shuffle, deflate, deflate_level) &
          bind(C, name="PIOc_def_var_deflate")
       import :: c_int
       integer(c_int), value :: ncid, varid, shuffle, deflate, deflate_level
     end function PIOc_def_var_deflate

     integer(c_int) function PIOc_inq_var_deflate(ncid, varid, shufflep, deflatep, deflate_levelp) &
          bind(C, name="PIOc_inq_var_deflate")
       import :: c_int
       integer(c_int), value :: ncid, varid
       integer(c_int), intent(inout) :: shufflep, deflatep, deflate_levelp
     end function PIOc_inq_var_deflate

     integer(c_int) function PIOc_def_var_chunking(ncid, varid, storage, chunksizesp) &
          bind(C, name="PIOc_def_var_chunking")
       import :: c_int, c_int64_t
       integer(c_int), value :: ncid, varid, storage
       integer(c_int64_t), intent(in) :: chunksizesp(*)
     end function PIOc_def_var_chunking

     integer(c_int) function PIOc_put_att_text(ncid, varid, name, len, op) bind(C, name="PIOc_put_att_text")
       import :: c_int, c_char, c_int64_t
       integer(c_int), value :: ncid, varid
       character(kind=c_char), intent(in) :: name(*), op(*)
       integer(c_int64_t), value :: len
     end function PIOc_put_att_text

     integer(c_int) function PIOc_get_att_text(ncid, varid, name, ip) bind(C, name="PIOc_get_att_text")
       import :: c_int, c_char
       integer(c_int), value :: ncid, varid
       character(kind=c_char), intent(in) :: name(*)
       character(kind=c_char) :: ip(*)
     end function PIOc_get_att_text

     integer(c_int) function PIOc_write_darray(ncid, varid, ioid, arraylen, array, fillvalue) &
          bind(C, name="PIOc_write_darray")
       import :: c_int, c_int64_t, c_ptr
       integer(c_int), value :: ncid, varid, ioid
       integer(c_int64_t), value :: arraylen
       type(c_ptr), value :: array, fillvalue
     end function PIOc_write_darray

     integer(c_int) function PIOc_read_darray(ncid, varid, ioid, arraylen, array) bind(C, name="PIOc_read_darray")
       import :: c_int, c_int64_t, c_ptr
       integer(c_int), value :: ncid, varid, ioid
       integer(c_int64_t), value :: arraylen
       type(c_ptr), value :: array
     end function PIOc_read_darray
  end interface

  ! pio.h's typed families, for the Fortran types (buffers as C pointers)
  interface

     integer(c_int) function PIOc_get_att_int(ncid, varid, name, ip) bind(C, name="PIOc_get_att_int")
       import :: c_int, c_char, c_ptr
       integer(c_int), value :: ncid, varid
       character(kind=c_char), intent(in) :: name(*)
       type(c_ptr), value :: ip
     end function PIOc_get_att_int


     integer(c_int) function PIOc_get_att_float(ncid, varid, name, ip) bind(C, name="PIOc_get_att_float")
       import :: c_int, c_char, c_ptr
       integer(c_int), value :: ncid, varid
       character(kind=c_char), intent(in) :: name(*)
       type(c_ptr), value :: ip
     end function PIOc_get_att_float


     integer(c_int) function PIOc_get_att_double(ncid, varid, name, ip) bind(C, name="PIOc_get_att_double")
       import :: c_int, c_char, c_ptr
       integer(c_int), value :: ncid, varid
       character(kind=c_char), intent(in) :: name(*)
       type(c_ptr), value :: ip
     end function PIOc_get_att_double

     ! an attribute of len values of type xtype, from memory of that type
     integer(c_int) function PIOc_put_att(ncid, varid, name, xtype, len, op) bind(C, name="PIOc_put_att")
       import :: c_int, c_char, c_int64_t, c_ptr
       integer(c_int), value :: ncid, varid, xtype
       character(kind=c_char), intent(in) :: name(*)
       integer(c_int64_t), value :: len
       type(c_ptr), value :: op
     end function PIOc_put_att

     ! undistributed values in memory of type xtype: the whole variable (start NULL), one value (count NULL) or
     ! a box (libpioc exports these two for PIO2's Fortran layer and tests)
     integer(c_int) function PIOc_put_vars_tc(ncid, varid, start, count, stride, xtype, buf) &
          bind(C, name="PIOc_put_vars_tc")
       import :: c_int, c_ptr
       integer(c_int), value :: ncid, varid, xtype
       type(c_ptr), value :: start, count, stride, buf
     end function PIOc_put_vars_tc

     integer(c_int) function PIOc_get_vars_tc(ncid, varid, start, count, stride, xtype, buf) &
          bind(C, name="PIOc_get_vars_tc")
       import :: c_int, c_ptr
       integer(c_int), value :: ncid, varid, xtype
       type(c_ptr), value :: start, count, stride, buf
     end function PIOc_get_vars_tc
  end interface

contains

  ! ------------------------------------------------------------------------------------------ helpers

  ! A Fortran string for C: without its trailing blanks, NUL-terminated.
  pure function c_string(s) result(c)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c

    c = trim(s)//c_null_char
  end function c_string

  ! What C wrote into buf (up to its NUL) into s, blank-padded or cut to s's length.
  subroutine from_c(buf, s)
    character(kind=c_char, len=*), intent(in) :: buf
    character(len=*), intent(out) :: s
    integer :: n

    n = index(buf, c_null_char) - 1
    if (n < 0) n = len(buf)
    s = buf(1:n)
  end subroutine from_c

  ! A line on stderr for an argument this module refuses (before any C call: every task says it).
  subroutine say(call_name, message)
    character(len=*), intent(in) :: call_name, message

    write(error_unit, '(a)') 'climio: '//call_name//': '//message
  end subroutine say

  function itoa(i) result(text)
    integer(PIO_OFFSET_KIND), intent(in) :: i
    character(len=:), allocatable :: text
    character(len=24) :: digits

    write(digits, '(i0)') i
    text = trim(digits)
  end function itoa

  ! The C dimension ids of a variable (C order), or an error code.
  integer function var_dimids(ncid, varid, cdimids) result(ierr)
    integer, intent(in) :: ncid, varid
    integer(c_int), allocatable, intent(out) :: cdimids(:)
    integer(c_int) :: ndims

    ndims = 0
    ierr = PIOc_inq_varndims(ncid, varid - 1, ndims)
    allocate(cdimids(ndims))
    if (ierr == PIO_NOERR .and. ndims > 0) ierr = PIOc_inq_vardimid(ncid, varid - 1, cdimids)
  end function var_dimids

  ! The number of elements of a variable (its records so far included), or an error code.
  integer function var_extent(ncid, varid, extent) result(ierr)
    integer, intent(in) :: ncid, varid
    integer(PIO_OFFSET_KIND), intent(out) :: extent
    integer(c_int), allocatable :: cdimids(:)
    integer(c_int64_t) :: length
    integer :: d

    extent = 1
    ierr = var_dimids(ncid, varid, cdimids)
    do d = 1, size(cdimids)
       if (ierr /= PIO_NOERR) return
       length = 0
       ierr = PIOc_inq_dimlen(ncid, cdimids(d), length)
       extent = extent * length
    end do
  end function var_extent

  ! ------------------------------------------------------------------------------------------ I/O systems

  ! PIO_init, intracommunicator form: num_iotasks I/O tasks of comp_comm, every stride-th from rank base.
  ! comp_rank and num_aggregator are PIO1's arguments, unused by PIO2 as here.
  subroutine init_intracom(comp_rank, comp_comm, num_iotasks, num_aggregator, stride, rearr, iosystem, base, &
       rearr_opts)
    integer(i4), intent(in) :: comp_rank, comp_comm, num_iotasks, num_aggregator, stride, rearr
    type(iosystem_desc_t), intent(out) :: iosystem
    integer(i4), intent(in), optional :: base
    type(pio_rearr_opt_t), intent(in), optional, target :: rearr_opts
    integer(c_int) :: lbase, ierr
    type(c_ptr) :: opts
    character(len=PIO_max_name) :: text

    if (comp_rank < 0 .and. num_aggregator < 0) continue
    lbase = 0
    if (present(base)) lbase = base
    opts = c_null_ptr
    if (present(rearr_opts)) opts = c_loc(rearr_opts)
    ierr = PIOc_Init_Intracomm_from_F90(comp_comm, num_iotasks, stride, lbase, rearr, opts, iosystem%iosysid)
    if (ierr /= PIO_NOERR) then
       if (strerror(ierr, text) /= PIO_NOERR) text = ''
       call piodie('PIO_init', __LINE__, 'PIO_init failed: '//trim(text)//', error', ierr)
    end if
  end subroutine init_intracom

  ! Async (PIO_init with the I/O tasks apart): the I/O tasks serve inside the call (climio's I/O servers) and
  ! come back with io_comm set once the component has freed its system; the component's tasks come back with
  ! their system and comp_comm. One component (size(iosystem) == 1).
  subroutine init_intercom(iosystem, incomm, procs_per_component, comp_proc_list, io_proc_list, rearranger, &
       comp_comm, io_comm)
    type(iosystem_desc_t), intent(out) :: iosystem(:)
    integer, intent(in) :: incomm, procs_per_component(:), comp_proc_list(:,:), io_proc_list(:), rearranger
    integer, intent(out) :: comp_comm(:), io_comm
    integer(c_int) :: ids(size(iosystem)), ierr
    character(len=PIO_max_name) :: text

    ids = -1
    ierr = PIOc_init_async_from_F90(incomm, size(io_proc_list), io_proc_list, size(procs_per_component), &
         procs_per_component, reshape(comp_proc_list, [size(comp_proc_list)]), io_comm, comp_comm, rearranger, ids)
    iosystem(:)%iosysid = ids
    if (ierr /= PIO_NOERR) then
       if (strerror(ierr, text) /= PIO_NOERR) text = ''
       call piodie('PIO_init', __LINE__, 'PIO_init (async) failed: '//trim(text)//', error', ierr)
    end if
  end subroutine init_intercom

  subroutine init_intercom_from_comms(iosystem, world_comm, comp_comms, io_comm, rearranger)
    type(iosystem_desc_t), intent(out) :: iosystem(:)
    integer, intent(in) :: world_comm, comp_comms(:), io_comm, rearranger
    integer(c_int) :: ids(size(iosystem)), ierr
    character(len=PIO_max_name) :: text

    ids = -1
    ierr = PIOc_init_async_comms_from_F90(world_comm, size(iosystem), comp_comms, io_comm, rearranger, ids)
    iosystem(:)%iosysid = ids
    if (ierr /= PIO_NOERR) then
       if (strerror(ierr, text) /= PIO_NOERR) text = ''
       call piodie('PIO_init', __LINE__, 'PIO_init (async) failed: '//trim(text)//', error', ierr)
    end if
  end subroutine init_intercom_from_comms

  subroutine finalize(iosystem, ierr)
    type(iosystem_desc_t), intent(inout) :: iosystem
    integer(i4), intent(out) :: ierr

    ierr = PIO_NOERR
    if (iosystem%iosysid == -1) return
    ierr = PIOc_finalize(iosystem%iosysid)
    if (ierr == PIO_NOERR) iosystem%iosysid = -1
  end subroutine finalize

  subroutine getnumiotasks(iosystem, numiotasks)
    type(iosystem_desc_t), intent(in) :: iosystem
    integer(i4), intent(out) :: numiotasks
    integer :: ierr

    numiotasks = 0
    ierr = PIOc_get_numiotasks(iosystem%iosysid, numiotasks)
  end subroutine getnumiotasks

  logical function PIO_iotype_available(iotype) result(available)
    integer, intent(in) :: iotype

    available = PIOc_iotype_available(iotype) == 1
  end function PIO_iotype_available

  subroutine seterrorhandling_iosysid(iosysid, method, oldmethod)
    integer, intent(in) :: iosysid, method
    integer, intent(out), optional :: oldmethod
    integer :: old

    old = PIOc_Set_IOSystem_Error_Handling(iosysid, method)
    if (present(oldmethod)) oldmethod = old
  end subroutine seterrorhandling_iosysid

  subroutine seterrorhandling_iosystem(iosystem, method, oldmethod)
    type(iosystem_desc_t), intent(inout) :: iosystem
    integer, intent(in) :: method
    integer, intent(out), optional :: oldmethod

    call seterrorhandling_iosysid(iosystem%iosysid, method, oldmethod)
  end subroutine seterrorhandling_iosystem

  subroutine seterrorhandling_file(file, method, oldmethod)
    type(file_desc_t), intent(inout) :: file
    integer, intent(in) :: method
    integer, intent(out), optional :: oldmethod

    if (.not. associated(file%iosystem)) then
       call say('PIO_seterrorhandling', 'the file is not open: its I/O system is not known')
       if (present(oldmethod)) oldmethod = PIO_internal_error
       return
    end if
    call seterrorhandling_iosysid(file%iosystem%iosysid, method, oldmethod)
  end subroutine seterrorhandling_file

  ! An MPI-IO hint for the files the I/O system opens or creates from now on.
  subroutine PIO_set_hint(iosystem, hint, hintval)
    type(iosystem_desc_t), intent(inout) :: iosystem
    character(len=*), intent(in) :: hint, hintval
    integer :: ierr

    ierr = PIOc_set_hint(iosystem%iosysid, c_string(hint), c_string(hintval))
  end subroutine PIO_set_hint

  ! climio's libpioc logs nothing (as PIO2 built without logging): levels are accepted.
  subroutine setdebuglevel(level)
    integer(i4), intent(in) :: level
    integer :: ierr

    ierr = PIOc_set_log_level(level)
  end subroutine setdebuglevel

  integer function set_log_level(log_level) result(ierr)
    integer, intent(in) :: log_level

    ierr = PIOc_set_log_level(log_level)
  end function set_log_level

  integer function strerror(errcode, errmsg) result(ierr)
    integer, intent(in) :: errcode
    character(len=*), intent(out) :: errmsg
    character(kind=c_char, len=PIO_max_name + 1) :: buf

    buf = c_null_char
    ierr = PIOc_strerror(errcode, buf)
    call from_c(buf, errmsg)
  end function strerror

  ! ------------------------------------------------------------------------------------------ decompositions

  ! compdof: for each local element, its 1-based offset in the Fortran-ordered global array of dims (0: a hole).
  ! rearr defaults to the box rearranger, as PIOc_InitDecomp's. iostart/iocount (1-based, Fortran order) go to
  ! C, which refuses them: climio places the I/O tasks' blocks itself.
  subroutine initdecomp_dof_i8(iosystem, basepiotype, dims, compdof, iodesc, rearr, iostart, iocount)
    type(iosystem_desc_t), intent(in) :: iosystem
    integer(i4), intent(in) :: basepiotype
    integer(i4), intent(in) :: dims(:)
    integer(PIO_OFFSET_KIND), intent(in) :: compdof(:)
    type(io_desc_t), intent(inout) :: iodesc
    integer, intent(in), optional :: rearr
    integer(PIO_OFFSET_KIND), intent(in), optional :: iostart(:), iocount(:)
    integer(c_int) :: cdims(size(dims))
    integer(c_int), target :: crearr
    integer(c_int64_t), target :: cstart(size(dims)), ccount(size(dims))
    type(c_ptr) :: prearr, pstart, pcount
    integer :: ierr, n

    n = size(dims)
    cdims = dims(n:1:-1)
    prearr = c_null_ptr
    pstart = c_null_ptr
    pcount = c_null_ptr
    if (present(rearr)) then
       crearr = rearr
       prearr = c_loc(crearr)
    end if
    if (present(iostart) .and. present(iocount)) then
       if (size(iostart) < n .or. size(iocount) < n) &
            call piodie('PIO_initdecomp', __LINE__, 'iostart and iocount need an entry per dimension:', n)
       cstart = iostart(n:1:-1) - 1
       ccount = iocount(n:1:-1)
       pstart = c_loc(cstart)
       pcount = c_loc(ccount)
    end if
    ierr = PIOc_InitDecomp(iosystem%iosysid, basepiotype, n, cdims, int(size(compdof), c_int), compdof, &
         iodesc%ioid, prearr, pstart, pcount)
  end subroutine initdecomp_dof_i8

  subroutine initdecomp_dof_i4(iosystem, basepiotype, dims, compdof, iodesc, rearr, iostart, iocount)
    type(iosystem_desc_t), intent(inout) :: iosystem
    integer(i4), intent(in) :: basepiotype
    integer(i4), intent(in) :: dims(:)
    integer(i4), intent(in) :: compdof(:)
    type(io_desc_t), intent(inout) :: iodesc
    integer, intent(in), optional :: rearr
    integer(PIO_OFFSET_KIND), intent(in), optional :: iostart(:), iocount(:)

    call initdecomp_dof_i8(iosystem, basepiotype, dims, int(compdof, PIO_OFFSET_KIND), iodesc, rearr, iostart, &
         iocount)
  end subroutine initdecomp_dof_i4

  ! One block per task: compstart (1-based) and compcount, Fortran order.
  subroutine initdecomp_bc(iosystem, basepiotype, dims, compstart, compcount, iodesc)
    type(iosystem_desc_t), intent(inout) :: iosystem
    integer(i4), intent(in) :: basepiotype
    integer(i4), intent(in) :: dims(:)
    integer(PIO_OFFSET_KIND), intent(in) :: compstart(:), compcount(:)
    type(io_desc_t), intent(out) :: iodesc
    integer(c_int) :: cdims(size(dims))
    integer(c_long) :: cstart(size(dims)), ccount(size(dims))
    integer :: ierr, n

    n = size(dims)
    if (size(compstart) < n .or. size(compcount) < n) &
         call piodie('PIO_initdecomp', __LINE__, 'compstart and compcount need an entry per dimension:', n)
    cdims = dims(n:1:-1)
    cstart = compstart(n:1:-1) - 1
    ccount = compcount(n:1:-1)
    ierr = PIOc_InitDecomp_bc(iosystem%iosysid, basepiotype, n, cdims, cstart, ccount, iodesc%ioid)
  end subroutine initdecomp_bc

  ! PIO1's forms, as PIO2 keeps them: lenblocks is unused, and the I/O map must be the computational one.
  subroutine initdecomp_1dof_nf_i8(iosystem, basepiotype, dims, lenblocks, compdof, iodof, start, count, iodesc)
    type(iosystem_desc_t), intent(in) :: iosystem
    integer(i4), intent(in) :: basepiotype
    integer(i4), intent(in) :: dims(:)
    integer(i4), intent(in) :: lenblocks
    integer(PIO_OFFSET_KIND), intent(in) :: compdof(:), iodof(:)
    integer(PIO_OFFSET_KIND), intent(in) :: start(:), count(:)
    type(io_desc_t), intent(inout) :: iodesc

    if (lenblocks < 0) continue
    if (size(iodof) /= size(compdof)) then
       call piodie('PIO_initdecomp', __LINE__, 'an I/O map other than the computational map is not supported')
    else if (any(iodof /= compdof)) then
       call piodie('PIO_initdecomp', __LINE__, 'an I/O map other than the computational map is not supported')
    end if
    if (all(start < 0) .and. all(count < 0)) then  ! the binary forms' "no I/O blocks"
       call initdecomp_dof_i8(iosystem, basepiotype, dims, compdof, iodesc, PIO_rearr_subset)
    else
       call initdecomp_dof_i8(iosystem, basepiotype, dims, compdof, iodesc, PIO_rearr_subset, start, count)
    end if
  end subroutine initdecomp_1dof_nf_i8

  subroutine initdecomp_1dof_nf_i4(iosystem, basepiotype, dims, lenblocks, compdof, iodof, start, count, iodesc)
    type(iosystem_desc_t), intent(in) :: iosystem
    integer(i4), intent(in) :: basepiotype
    integer(i4), intent(in) :: dims(:)
    integer(i4), intent(in) :: lenblocks
    integer(i4), intent(in) :: compdof(:), iodof(:)
    integer(PIO_OFFSET_KIND), intent(in) :: start(:), count(:)
    type(io_desc_t), intent(inout) :: iodesc

    call initdecomp_1dof_nf_i8(iosystem, basepiotype, dims, lenblocks, int(compdof, PIO_OFFSET_KIND), &
         int(iodof, PIO_OFFSET_KIND), start, count, iodesc)
  end subroutine initdecomp_1dof_nf_i4

  subroutine initdecomp_1dof_bin_i8(iosystem, basepiotype, dims, lenblocks, compdof, iodofr, iodesc)
    type(iosystem_desc_t), intent(in) :: iosystem
    integer(i4), intent(in) :: basepiotype
    integer(i4), intent(in) :: dims(:)
    integer(i4), intent(in) :: lenblocks
    integer(PIO_OFFSET_KIND), intent(in) :: compdof(:), iodofr(:)
    type(io_desc_t), intent(inout) :: iodesc

    call initdecomp_1dof_nf_i8(iosystem, basepiotype, dims, lenblocks, compdof, iodofr, [-1_PIO_OFFSET_KIND], &
         [-1_PIO_OFFSET_KIND], iodesc)
  end subroutine initdecomp_1dof_bin_i8

  subroutine initdecomp_1dof_bin_i4(iosystem, basepiotype, dims, lenblocks, compdof, iodofr, iodesc)
    type(iosystem_desc_t), intent(in) :: iosystem
    integer(i4), intent(in) :: basepiotype
    integer(i4), intent(in) :: dims(:)
    integer(i4), intent(in) :: lenblocks
    integer(i4), intent(in) :: compdof(:), iodofr(:)
    type(io_desc_t), intent(inout) :: iodesc

    call initdecomp_1dof_nf_i8(iosystem, basepiotype, dims, lenblocks, int(compdof, PIO_OFFSET_KIND), &
         int(iodofr, PIO_OFFSET_KIND), [-1_PIO_OFFSET_KIND], [-1_PIO_OFFSET_KIND], iodesc)
  end subroutine initdecomp_1dof_bin_i4

  subroutine freedecomp_ios(ios, iodesc)
    type(iosystem_desc_t), intent(in) :: ios
    type(io_desc_t), intent(inout) :: iodesc
    integer :: ierr

    ierr = PIOc_freedecomp(ios%iosysid, iodesc%ioid)
  end subroutine freedecomp_ios

  ! The file's pending writes first (as PIO2), then the decomposition of the file's I/O system.
  subroutine freedecomp_file(file, iodesc)
    type(file_desc_t), intent(inout) :: file
    type(io_desc_t), intent(inout) :: iodesc

    if (.not. associated(file%iosystem)) then
       call say('PIO_freedecomp', 'the file is not open: its I/O system is not known')
       return
    end if
    call syncfile(file)
    call freedecomp_ios(file%iosystem, iodesc)
  end subroutine freedecomp_file

  integer function PIO_get_local_array_size(iodesc) result(size_)
    type(io_desc_t), intent(in) :: iodesc

    size_ = PIOc_get_local_array_size(iodesc%ioid)
  end function PIO_get_local_array_size

  ! ------------------------------------------------------------------------------------------ files

  integer function createfile(iosystem, file, iotype, fname, amode_in) result(ierr)
    type(iosystem_desc_t), intent(inout), target :: iosystem
    type(file_desc_t), intent(out) :: file
    integer, intent(in) :: iotype
    character(len=*), intent(in) :: fname
    integer, intent(in), optional :: amode_in
    integer(c_int) :: mode, ciotype

    mode = 0
    if (present(amode_in)) mode = amode_in
    ciotype = iotype
    ierr = PIOc_createfile(iosystem%iosysid, file%fh, ciotype, c_string(fname), mode)
    file%iosystem => iosystem
  end function createfile

  integer function openfile(iosystem, file, iotype, fname, mode) result(ierr)
    type(iosystem_desc_t), intent(inout), target :: iosystem
    type(file_desc_t), intent(out) :: file
    integer, intent(in) :: iotype
    character(len=*), intent(in) :: fname
    integer, intent(in), optional :: mode
    integer(c_int) :: cmode, ciotype

    cmode = 0
    if (present(mode)) cmode = mode
    ciotype = iotype
    ierr = PIOc_openfile(iosystem%iosysid, file%fh, ciotype, c_string(fname), cmode)
    file%iosystem => iosystem
  end function openfile

  subroutine closefile(file)
    type(file_desc_t), intent(inout) :: file
    integer :: ierr

    ierr = PIOc_closefile(file%fh)
    nullify(file%iosystem)
  end subroutine closefile

  subroutine syncfile(file)
    type(file_desc_t), intent(inout) :: file
    integer :: ierr

    ierr = PIOc_sync(file%fh)
  end subroutine syncfile

  logical function PIO_file_is_open(file) result(is_open)
    type(file_desc_t), intent(in) :: file

    is_open = .false.
    if (associated(file%iosystem)) is_open = PIOc_File_is_Open(file%fh) == 1
  end function PIO_file_is_open

  integer function enddef_id(ncid) result(ierr)
    integer, intent(in) :: ncid

    ierr = PIOc_enddef(ncid)
  end function enddef_id

  integer function enddef_desc(file) result(ierr)
    type(file_desc_t), intent(inout) :: file

    ierr = PIOc_enddef(file%fh)
  end function enddef_desc

  integer function redef_id(ncid) result(ierr)
    integer, intent(in) :: ncid

    ierr = PIOc_redef(ncid)
  end function redef_id

  integer function redef_desc(file) result(ierr)
    type(file_desc_t), intent(inout) :: file

    ierr = PIOc_redef(file%fh)
  end function redef_desc

  integer function set_fill_id(ncid, fillmode, old_mode) result(ierr)
    integer, intent(in) :: ncid, fillmode
    integer, intent(out) :: old_mode

    old_mode = PIO_fill
    ierr = PIOc_set_fill(ncid, fillmode, old_mode)
  end function set_fill_id

  integer function set_fill_desc(file, fillmode, old_mode) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: fillmode
    integer, intent(out) :: old_mode

    ierr = set_fill_id(file%fh, fillmode, old_mode)
  end function set_fill_desc

  ! The record (1-based) that the variable's next write_darray/read_darray reaches.
  subroutine setframe(file, vardesc, frame)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(inout) :: vardesc
    integer(PIO_OFFSET_KIND), intent(in) :: frame
    integer :: ierr

    ierr = PIOc_setframe(file%fh, vardesc%varid - 1, int(frame - 1, c_int))
  end subroutine setframe

  subroutine setframe_i4(file, vardesc, frame)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(inout) :: vardesc
    integer(i4), intent(in) :: frame
    integer :: ierr

    ierr = PIOc_setframe(file%fh, vardesc%varid - 1, frame - 1)
  end subroutine setframe_i4

  subroutine advanceframe(file, vardesc)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(inout) :: vardesc
    integer :: ierr

    ierr = PIOc_advanceframe(file%fh, vardesc%varid - 1)
  end subroutine advanceframe

  ! ------------------------------------------------------------------------------------------ definitions

  integer function def_dim_id(ncid, name, len, dimid) result(ierr)
    integer, intent(in) :: ncid
    character(len=*), intent(in) :: name
    integer(PIO_OFFSET_KIND), intent(in) :: len
    integer, intent(out) :: dimid
    integer(c_int) :: cdimid

    cdimid = -2
    ierr = PIOc_def_dim(ncid, c_string(name), len, cdimid)
    dimid = cdimid + 1
  end function def_dim_id

  integer function def_dim_desc(file, name, len, dimid) result(ierr)
    type(file_desc_t), intent(in) :: file
    character(len=*), intent(in) :: name
    integer(PIO_OFFSET_KIND), intent(in) :: len
    integer, intent(out) :: dimid

    ierr = def_dim_id(file%fh, name, len, dimid)
  end function def_dim_desc

  integer function def_dim_int_id(ncid, name, len, dimid) result(ierr)
    integer, intent(in) :: ncid
    character(len=*), intent(in) :: name
    integer, intent(in) :: len
    integer, intent(out) :: dimid

    ierr = def_dim_id(ncid, name, int(len, PIO_OFFSET_KIND), dimid)
  end function def_dim_int_id

  integer function def_dim_int_desc(file, name, len, dimid) result(ierr)
    type(file_desc_t), intent(in) :: file
    character(len=*), intent(in) :: name
    integer, intent(in) :: len
    integer, intent(out) :: dimid

    ierr = def_dim_id(file%fh, name, int(len, PIO_OFFSET_KIND), dimid)
  end function def_dim_int_desc

  ! dimids: 1-based, Fortran order (the record dimension last).
  integer function def_var_md_id(ncid, name, type, dimids, varid) result(ierr)
    integer, intent(in) :: ncid
    character(len=*), intent(in) :: name
    integer, intent(in) :: type
    integer, intent(in) :: dimids(:)
    integer, intent(out) :: varid
    integer(c_int) :: cdimids(max(1, size(dimids))), cvarid
    integer :: n

    n = size(dimids)
    cdimids = 0
    cdimids(1:n) = dimids(n:1:-1) - 1
    cvarid = -2
    ierr = PIOc_def_var(ncid, c_string(name), type, n, cdimids, cvarid)
    varid = cvarid + 1
  end function def_var_md_id

  integer function def_var_0d_id(ncid, name, type, varid) result(ierr)
    integer, intent(in) :: ncid
    character(len=*), intent(in) :: name
    integer, intent(in) :: type
    integer, intent(out) :: varid
    integer :: none(0)

    ierr = def_var_md_id(ncid, name, type, none, varid)
  end function def_var_0d_id

  integer function def_var_md_desc(file, name, type, dimids, vardesc) result(ierr)
    type(file_desc_t), intent(in) :: file
    character(len=*), intent(in) :: name
    integer, intent(in) :: type
    integer, intent(in) :: dimids(:)
    type(var_desc_t), intent(inout) :: vardesc

    ierr = def_var_md_id(file%fh, name, type, dimids, vardesc%varid)
    vardesc%ncid = file%fh
  end function def_var_md_desc

  integer function def_var_0d_desc(file, name, type, vardesc) result(ierr)
    type(file_desc_t), intent(in) :: file
    character(len=*), intent(in) :: name
    integer, intent(in) :: type
    type(var_desc_t), intent(inout) :: vardesc
    integer :: none(0)

    ierr = def_var_md_id(file%fh, name, type, none, vardesc%varid)
    vardesc%ncid = file%fh
  end function def_var_0d_desc

  integer function def_var_deflate_id(file, varid, shuffle, deflate, deflate_level) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid, shuffle, deflate, deflate_level

    ierr = PIOc_def_var_deflate(file%fh, varid - 1, shuffle, deflate, deflate_level)
  end function def_var_deflate_id

  integer function def_var_deflate_desc(file, vardesc, shuffle, deflate, deflate_level) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    integer, intent(in) :: shuffle, deflate, deflate_level

    ierr = PIOc_def_var_deflate(file%fh, vardesc%varid - 1, shuffle, deflate, deflate_level)
  end function def_var_deflate_desc

  ! chunksizes: Fortran order.
  integer function def_var_chunking_int(ncid, varid, storage, chunksizes) result(ierr)
    integer, intent(in) :: ncid, varid, storage
    integer, intent(in) :: chunksizes(:)
    integer(c_int64_t) :: csizes(max(1, size(chunksizes)))
    integer :: n

    n = size(chunksizes)
    csizes = 0
    csizes(1:n) = chunksizes(n:1:-1)
    ierr = PIOc_def_var_chunking(ncid, varid - 1, storage, csizes)
  end function def_var_chunking_int

  integer function def_var_chunking_vid(file, varid, storage, chunksizes) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid, storage
    integer, intent(in) :: chunksizes(:)

    ierr = def_var_chunking_int(file%fh, varid, storage, chunksizes)
  end function def_var_chunking_vid

  integer function def_var_chunking_desc(file, vardesc, storage, chunksizes) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    integer, intent(in) :: storage
    integer, intent(in) :: chunksizes(:)

    ierr = def_var_chunking_int(file%fh, vardesc%varid, storage, chunksizes)
  end function def_var_chunking_desc

  integer function inq_var_deflate_id(ncid, varid, shuffle, deflate, deflate_level) result(ierr)
    integer, intent(in) :: ncid, varid
    integer, intent(out) :: shuffle, deflate, deflate_level

    shuffle = 0
    deflate = 0
    deflate_level = 0
    ierr = PIOc_inq_var_deflate(ncid, varid - 1, shuffle, deflate, deflate_level)
  end function inq_var_deflate_id

  integer function inq_var_deflate_vid(file, varid, shuffle, deflate, deflate_level) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    integer, intent(out) :: shuffle, deflate, deflate_level

    ierr = inq_var_deflate_id(file%fh, varid, shuffle, deflate, deflate_level)
  end function inq_var_deflate_vid

  integer function inq_var_deflate_desc(file, vardesc, shuffle, deflate, deflate_level) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    integer, intent(out) :: shuffle, deflate, deflate_level

    ierr = inq_var_deflate_id(file%fh, vardesc%varid, shuffle, deflate, deflate_level)
  end function inq_var_deflate_desc

  ! ------------------------------------------------------------------------------------------ inquiry

  ! unlimitedDimID: 1-based, -1 when the file has none.
  integer function inquire_id(ncid, nDimensions, nVariables, nAttributes, unlimitedDimID) result(ierr)
    integer, intent(in) :: ncid
    integer, intent(out), optional :: nDimensions, nVariables, nAttributes, unlimitedDimID
    integer(c_int) :: ndims, nvars, natts, unlimited

    ndims = 0
    nvars = 0
    natts = 0
    unlimited = -1
    ierr = PIOc_inq(ncid, ndims, nvars, natts, unlimited)
    if (present(nDimensions)) nDimensions = ndims
    if (present(nVariables)) nVariables = nvars
    if (present(nAttributes)) nAttributes = natts
    if (present(unlimitedDimID)) then
       unlimitedDimID = -1
       if (unlimited >= 0) unlimitedDimID = unlimited + 1
    end if
  end function inquire_id

  integer function inquire_desc(file, nDimensions, nVariables, nAttributes, unlimitedDimID) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(out), optional :: nDimensions, nVariables, nAttributes, unlimitedDimID

    ierr = inquire_id(file%fh, nDimensions, nVariables, nAttributes, unlimitedDimID)
  end function inquire_desc

  integer function inq_unlimdim_id(ncid, unlimdim) result(ierr)
    integer, intent(in) :: ncid
    integer, intent(out) :: unlimdim

    ierr = inquire_id(ncid, unlimitedDimID=unlimdim)
  end function inq_unlimdim_id

  integer function inq_unlimdim_desc(file, unlimdim) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(out) :: unlimdim

    ierr = inquire_id(file%fh, unlimitedDimID=unlimdim)
  end function inq_unlimdim_desc

  integer function inq_dimid_id(ncid, name, dimid) result(ierr)
    integer, intent(in) :: ncid
    character(len=*), intent(in) :: name
    integer, intent(out) :: dimid
    integer(c_int) :: cdimid

    cdimid = -2
    ierr = PIOc_inq_dimid(ncid, c_string(name), cdimid)
    dimid = cdimid + 1
  end function inq_dimid_id

  integer function inq_dimid_desc(file, name, dimid) result(ierr)
    type(file_desc_t), intent(in) :: file
    character(len=*), intent(in) :: name
    integer, intent(out) :: dimid

    ierr = inq_dimid_id(file%fh, name, dimid)
  end function inq_dimid_desc

  integer function inq_dimname_id(ncid, dimid, name) result(ierr)
    integer, intent(in) :: ncid, dimid
    character(len=*), intent(out) :: name
    character(kind=c_char, len=PIO_max_name + 1) :: buf

    buf = c_null_char
    ierr = PIOc_inq_dimname(ncid, dimid - 1, buf)
    call from_c(buf, name)
  end function inq_dimname_id

  integer function inq_dimname_desc(file, dimid, name) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: dimid
    character(len=*), intent(out) :: name

    ierr = inq_dimname_id(file%fh, dimid, name)
  end function inq_dimname_desc

  integer function inq_dimlen_id_long(ncid, dimid, len) result(ierr)
    integer, intent(in) :: ncid, dimid
    integer(PIO_OFFSET_KIND), intent(out) :: len

    len = 0
    ierr = PIOc_inq_dimlen(ncid, dimid - 1, len)
  end function inq_dimlen_id_long

  integer function inq_dimlen_desc_long(file, dimid, len) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: dimid
    integer(PIO_OFFSET_KIND), intent(out) :: len

    ierr = inq_dimlen_id_long(file%fh, dimid, len)
  end function inq_dimlen_desc_long

  integer function inq_dimlen_id(ncid, dimid, len) result(ierr)
    integer, intent(in) :: ncid, dimid
    integer, intent(out) :: len
    integer(PIO_OFFSET_KIND) :: length

    ierr = inq_dimlen_id_long(ncid, dimid, length)
    len = int(length)
  end function inq_dimlen_id

  integer function inq_dimlen_desc(file, dimid, len) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: dimid
    integer, intent(out) :: len

    ierr = inq_dimlen_id(file%fh, dimid, len)
  end function inq_dimlen_desc

  integer function inquire_dimension_id(ncid, dimid, name, len) result(ierr)
    integer, intent(in) :: ncid, dimid
    character(len=*), intent(out), optional :: name
    integer, intent(out), optional :: len

    ierr = PIO_NOERR
    if (present(name)) ierr = inq_dimname_id(ncid, dimid, name)
    if (present(len) .and. ierr == PIO_NOERR) ierr = inq_dimlen_id(ncid, dimid, len)
  end function inquire_dimension_id

  integer function inquire_dimension_desc(file, dimid, name, len) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: dimid
    character(len=*), intent(out), optional :: name
    integer, intent(out), optional :: len

    ierr = inquire_dimension_id(file%fh, dimid, name, len)
  end function inquire_dimension_desc

  integer function inq_varid_id(ncid, name, varid) result(ierr)
    integer, intent(in) :: ncid
    character(len=*), intent(in) :: name
    integer, intent(out) :: varid
    integer(c_int) :: cvarid

    cvarid = -2
    ierr = PIOc_inq_varid(ncid, c_string(name), cvarid)
    varid = cvarid + 1
  end function inq_varid_id

  integer function inq_varid_vid(file, name, varid) result(ierr)
    type(file_desc_t), intent(in) :: file
    character(len=*), intent(in) :: name
    integer, intent(out) :: varid

    ierr = inq_varid_id(file%fh, name, varid)
  end function inq_varid_vid

  integer function inq_varid_desc(file, name, vardesc) result(ierr)
    type(file_desc_t), intent(in) :: file
    character(len=*), intent(in) :: name
    type(var_desc_t), intent(inout) :: vardesc

    ierr = inq_varid_id(file%fh, name, vardesc%varid)
    vardesc%ncid = file%fh
  end function inq_varid_desc

  integer function inq_varname_id(ncid, varid, name) result(ierr)
    integer, intent(in) :: ncid, varid
    character(len=*), intent(out) :: name
    character(kind=c_char, len=PIO_max_name + 1) :: buf

    buf = c_null_char
    ierr = PIOc_inq_varname(ncid, varid - 1, buf)
    call from_c(buf, name)
  end function inq_varname_id

  integer function inq_varname_vid(file, varid, name) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    character(len=*), intent(out) :: name

    ierr = inq_varname_id(file%fh, varid, name)
  end function inq_varname_vid

  integer function inq_varname_desc(file, vardesc, name) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    character(len=*), intent(out) :: name

    ierr = inq_varname_id(file%fh, vardesc%varid, name)
  end function inq_varname_desc

  integer function inq_vartype_id(ncid, varid, type) result(ierr)
    integer, intent(in) :: ncid, varid
    integer, intent(out) :: type

    type = 0
    ierr = PIOc_inq_vartype(ncid, varid - 1, type)
  end function inq_vartype_id

  integer function inq_vartype_vid(file, varid, type) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    integer, intent(out) :: type

    ierr = inq_vartype_id(file%fh, varid, type)
  end function inq_vartype_vid

  integer function inq_vartype_desc(file, vardesc, type) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    integer, intent(out) :: type

    ierr = inq_vartype_id(file%fh, vardesc%varid, type)
  end function inq_vartype_desc

  integer function inq_varndims_id(ncid, varid, ndims) result(ierr)
    integer, intent(in) :: ncid, varid
    integer, intent(out) :: ndims

    ndims = 0
    ierr = PIOc_inq_varndims(ncid, varid - 1, ndims)
  end function inq_varndims_id

  integer function inq_varndims_vid(file, varid, ndims) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    integer, intent(out) :: ndims

    ierr = inq_varndims_id(file%fh, varid, ndims)
  end function inq_varndims_vid

  integer function inq_varndims_desc(file, vardesc, ndims) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    integer, intent(out) :: ndims

    ierr = inq_varndims_id(file%fh, vardesc%varid, ndims)
  end function inq_varndims_desc

  ! dimids: 1-based, Fortran order; as many as dimids holds.
  integer function inq_vardimid_id(ncid, varid, dimids) result(ierr)
    integer, intent(in) :: ncid, varid
    integer, intent(out) :: dimids(:)
    integer(c_int), allocatable :: cdimids(:)
    integer :: n, i

    dimids = 0
    ierr = var_dimids(ncid, varid, cdimids)
    n = size(cdimids)
    do i = 1, min(n, size(dimids))
       dimids(i) = cdimids(n - i + 1) + 1
    end do
  end function inq_vardimid_id

  integer function inq_vardimid_vid(file, varid, dimids) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    integer, intent(out) :: dimids(:)

    ierr = inq_vardimid_id(file%fh, varid, dimids)
  end function inq_vardimid_vid

  integer function inq_vardimid_desc(file, vardesc, dimids) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    integer, intent(out) :: dimids(:)

    ierr = inq_vardimid_id(file%fh, vardesc%varid, dimids)
  end function inq_vardimid_desc

  integer function inq_varnatts_id(ncid, varid, natts) result(ierr)
    integer, intent(in) :: ncid, varid
    integer, intent(out) :: natts

    natts = 0
    ierr = PIOc_inq_varnatts(ncid, varid - 1, natts)
  end function inq_varnatts_id

  integer function inq_varnatts_vid(file, varid, natts) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    integer, intent(out) :: natts

    ierr = inq_varnatts_id(file%fh, varid, natts)
  end function inq_varnatts_vid

  integer function inq_varnatts_desc(file, vardesc, natts) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    integer, intent(out) :: natts

    ierr = inq_varnatts_id(file%fh, vardesc%varid, natts)
  end function inq_varnatts_desc

  integer function inquire_variable_id(ncid, varid, name, xtype, ndims, dimids, natts) result(ierr)
    integer, intent(in) :: ncid, varid
    character(len=*), intent(out), optional :: name
    integer, intent(out), optional :: xtype, ndims, natts
    integer, intent(out), optional :: dimids(:)

    ierr = PIO_NOERR
    if (present(name)) ierr = inq_varname_id(ncid, varid, name)
    if (present(xtype) .and. ierr == PIO_NOERR) ierr = inq_vartype_id(ncid, varid, xtype)
    if (present(ndims) .and. ierr == PIO_NOERR) ierr = inq_varndims_id(ncid, varid, ndims)
    if (present(dimids) .and. ierr == PIO_NOERR) ierr = inq_vardimid_id(ncid, varid, dimids)
    if (present(natts) .and. ierr == PIO_NOERR) ierr = inq_varnatts_id(ncid, varid, natts)
  end function inquire_variable_id

  integer function inquire_variable_vid(file, varid, name, xtype, ndims, dimids, natts) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    character(len=*), intent(out), optional :: name
    integer, intent(out), optional :: xtype, ndims, natts
    integer, intent(out), optional :: dimids(:)

    ierr = inquire_variable_id(file%fh, varid, name, xtype, ndims, dimids, natts)
  end function inquire_variable_vid

  integer function inquire_variable_desc(file, vardesc, name, xtype, ndims, dimids, natts) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    character(len=*), intent(out), optional :: name
    integer, intent(out), optional :: xtype, ndims, natts
    integer, intent(out), optional :: dimids(:)

    ierr = inquire_variable_id(file%fh, vardesc%varid, name, xtype, ndims, dimids, natts)
  end function inquire_variable_desc

  integer function inq_att_id(ncid, varid, name, xtype, len) result(ierr)
    integer, intent(in) :: ncid, varid
    character(len=*), intent(in) :: name
    integer, intent(out), optional :: xtype
    integer(PIO_OFFSET_KIND), intent(out), optional :: len
    integer(c_int) :: ctype
    integer(c_int64_t) :: length

    ctype = 0
    length = 0
    ierr = PIOc_inq_att(ncid, varid - 1, c_string(name), ctype, length)
    if (present(xtype)) xtype = ctype
    if (present(len)) len = length
  end function inq_att_id

  integer function inq_att_vid(file, varid, name, xtype, len) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    character(len=*), intent(in) :: name
    integer, intent(out), optional :: xtype
    integer(PIO_OFFSET_KIND), intent(out), optional :: len

    ierr = inq_att_id(file%fh, varid, name, xtype, len)
  end function inq_att_vid

  integer function inq_att_desc(file, vardesc, name, xtype, len) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    character(len=*), intent(in) :: name
    integer, intent(out), optional :: xtype
    integer(PIO_OFFSET_KIND), intent(out), optional :: len

    ierr = inq_att_id(file%fh, vardesc%varid, name, xtype, len)
  end function inq_att_desc

  integer function inq_attlen_id(ncid, varid, name, len) result(ierr)
    integer, intent(in) :: ncid, varid
    character(len=*), intent(in) :: name
    integer(PIO_OFFSET_KIND), intent(out) :: len

    ierr = inq_att_id(ncid, varid, name, len=len)
  end function inq_attlen_id

  integer function inq_attlen_vid(file, varid, name, len) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    character(len=*), intent(in) :: name
    integer(PIO_OFFSET_KIND), intent(out) :: len

    ierr = inq_att_id(file%fh, varid, name, len=len)
  end function inq_attlen_vid

  integer function inq_attlen_desc(file, vardesc, name, len) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    character(len=*), intent(in) :: name
    integer(PIO_OFFSET_KIND), intent(out) :: len

    ierr = inq_att_id(file%fh, vardesc%varid, name, len=len)
  end function inq_attlen_desc

  ! attnum: 1-based.
  integer function inq_attname_id(ncid, varid, attnum, name) result(ierr)
    integer, intent(in) :: ncid, varid, attnum
    character(len=*), intent(out) :: name
    character(kind=c_char, len=PIO_max_name + 1) :: buf

    buf = c_null_char
    ierr = PIOc_inq_attname(ncid, varid - 1, attnum - 1, buf)
    call from_c(buf, name)
  end function inq_attname_id

  integer function inq_attname_vid(file, varid, attnum, name) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid, attnum
    character(len=*), intent(out) :: name

    ierr = inq_attname_id(file%fh, varid, attnum, name)
  end function inq_attname_vid

  integer function inq_attname_desc(file, vdesc, attnum, name) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vdesc
    integer, intent(in) :: attnum
    character(len=*), intent(out) :: name

    ierr = inq_attname_id(file%fh, vdesc%varid, attnum, name)
  end function inq_attname_desc

  ! ------------------------------------------------------------------------------------------ attributes

  ! Text attributes: the value without its trailing blanks.
  integer function put_att_id_text(ncid, varid, name, values) result(ierr)
    integer, intent(in) :: ncid, varid
    character(len=*), intent(in) :: name, values

    ierr = PIOc_put_att_text(ncid, varid - 1, c_string(name), int(len_trim(values), c_int64_t), c_string(values))
  end function put_att_id_text

  integer function put_att_vid_text(file, varid, name, value) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    character(len=*), intent(in) :: name, value

    ierr = put_att_id_text(file%fh, varid, name, value)
  end function put_att_vid_text

  integer function put_att_desc_text(file, vdesc, name, values) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vdesc
    character(len=*), intent(in) :: name, values

    ierr = put_att_id_text(file%fh, vdesc%varid, name, values)
  end function put_att_desc_text

  ! Into values, blank-padded (cut when the attribute is longer), up to a NUL the attribute may hold.
  integer function get_att_id_text(ncid, varid, name, values) result(ierr)
    integer, intent(in) :: ncid, varid
    character(len=*), intent(in) :: name
    character(len=*), intent(out) :: values
    character(kind=c_char, len=:), allocatable :: buf
    integer(PIO_OFFSET_KIND) :: length

    values = ' '
    ierr = inq_att_id(ncid, varid, name, len=length)
    if (ierr /= PIO_NOERR) return
    allocate(character(kind=c_char, len=length + 1) :: buf)
    buf(:) = repeat(c_null_char, len(buf))
    ierr = PIOc_get_att_text(ncid, varid - 1, c_string(name), buf)
    call from_c(buf, values)
  end function get_att_id_text

  integer function get_att_vid_text(file, varid, name, values) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    character(len=*), intent(in) :: name
    character(len=*), intent(out) :: values

    ierr = get_att_id_text(file%fh, varid, name, values)
  end function get_att_vid_text

  integer function get_att_desc_text(file, vdesc, name, values) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vdesc
    character(len=*), intent(in) :: name
    character(len=*), intent(out) :: values

    ierr = get_att_id_text(file%fh, vdesc%varid, name, values)
  end function get_att_desc_text

  ! Numeric attributes: n values at buf, of the Fortran type xtype (PIO_int, PIO_real or PIO_double). A value
  ! is stored as its Fortran type, as PIO2 does.
  integer function put_att_c(ncid, varid, name, xtype, n, buf) result(ierr)
    integer, intent(in) :: ncid, varid, xtype
    character(len=*), intent(in) :: name
    integer(PIO_OFFSET_KIND), intent(in) :: n
    type(c_ptr), intent(in) :: buf

    ierr = PIOc_put_att(ncid, varid - 1, c_string(name), xtype, n, buf)
  end function put_att_c

  ! An attribute of at most n values into buf, converted to xtype's.
  integer function get_att_c(ncid, varid, name, xtype, n, buf) result(ierr)
    integer, intent(in) :: ncid, varid, xtype
    character(len=*), intent(in) :: name
    integer(PIO_OFFSET_KIND), intent(in) :: n
    type(c_ptr), intent(in) :: buf
    integer(PIO_OFFSET_KIND) :: length

    ierr = inq_att_id(ncid, varid, name, len=length)
    if (ierr /= PIO_NOERR) return
    if (length > n) then
       call say('PIO_get_att', trim(name)//': the attribute has '//itoa(length)//' values, the array room for '// &
            itoa(n))
       ierr = PIO_EINVAL
       return
    end if
    select case (xtype)
    case (PIO_int)
       ierr = PIOc_get_att_int(ncid, varid - 1, c_string(name), buf)
    case (PIO_real)
       ierr = PIOc_get_att_float(ncid, varid - 1, c_string(name), buf)
    case default
       ierr = PIOc_get_att_double(ncid, varid - 1, c_string(name), buf)
    end select
  end function get_att_c

  ! ------------------------------------------------------------------------------------------ undistributed data

  ! Undistributed values from or to buf, in memory of the Fortran type xtype (PIO_int, PIO_real, PIO_double,
  ! PIO_char): the whole variable (start null), one value (count null) or a box (C order, 0-based).
  integer function vars_c(ncid, varid, writing, xtype, start, count, buf) result(ierr)
    integer, intent(in) :: ncid, varid, xtype
    logical, intent(in) :: writing
    type(c_ptr), intent(in) :: start, count, buf

    if (writing) then
       ierr = PIOc_put_vars_tc(ncid, varid - 1, start, count, c_null_ptr, xtype, buf)
    else
       ierr = PIOc_get_vars_tc(ncid, varid - 1, start, count, c_null_ptr, xtype, buf)
    end if
  end function vars_c

  ! The whole variable from or to buf (n values of the Fortran type xtype): n must cover it.
  integer function whole_var(ncid, varid, writing, xtype, n, buf, call_name) result(ierr)
    integer, intent(in) :: ncid, varid, xtype
    logical, intent(in) :: writing
    integer(PIO_OFFSET_KIND), intent(in) :: n
    type(c_ptr), intent(in) :: buf
    character(len=*), intent(in) :: call_name
    integer(PIO_OFFSET_KIND) :: extent

    ierr = var_extent(ncid, varid, extent)
    if (ierr /= PIO_NOERR) return
    if (n < extent) then
       call say(call_name, 'the variable has '//itoa(extent)//' values, the array '//itoa(n))
       ierr = PIO_EINVAL
       return
    end if
    ierr = vars_c(ncid, varid, writing, xtype, c_null_ptr, c_null_ptr, buf)
  end function whole_var

  ! One value at index (1-based, Fortran order).
  integer function one_value(ncid, varid, writing, xtype, index, buf, call_name) result(ierr)
    integer, intent(in) :: ncid, varid, xtype
    logical, intent(in) :: writing
    integer, intent(in) :: index(:)
    type(c_ptr), intent(in) :: buf
    character(len=*), intent(in) :: call_name
    integer(c_int), allocatable :: cdimids(:)
    integer(c_int64_t), allocatable, target :: cindex(:)
    integer :: n

    ierr = var_dimids(ncid, varid, cdimids)
    if (ierr /= PIO_NOERR) return
    n = size(cdimids)
    if (size(index) < n) then
       call say(call_name, 'the variable has '//itoa(int(n, PIO_OFFSET_KIND))//' dimensions, the index '// &
            itoa(size(index, kind=PIO_OFFSET_KIND)))
       ierr = PIO_EINVAL
       return
    end if
    allocate(cindex(max(1, n)))
    cindex = 0
    cindex(1:n) = index(n:1:-1) - 1
    ierr = vars_c(ncid, varid, writing, xtype, c_loc(cindex), c_null_ptr, buf)
  end function one_value

  ! The box start/count (1-based, Fortran order; entries beyond the variable's dimensions ignored) from or to
  ! buf, n values that must cover it.
  integer function box(ncid, varid, writing, xtype, start, count, n, buf, call_name) result(ierr)
    integer, intent(in) :: ncid, varid, xtype
    logical, intent(in) :: writing
    integer, intent(in) :: start(:), count(:)
    integer(PIO_OFFSET_KIND), intent(in) :: n
    type(c_ptr), intent(in) :: buf
    character(len=*), intent(in) :: call_name
    integer(c_int), allocatable :: cdimids(:)
    integer(c_int64_t), allocatable, target :: cstart(:), ccount(:)
    integer :: nd

    ierr = var_dimids(ncid, varid, cdimids)
    if (ierr /= PIO_NOERR) return
    nd = size(cdimids)
    if (size(start) < nd .or. size(count) < nd) then
       call say(call_name, 'the variable has '//itoa(int(nd, PIO_OFFSET_KIND))//' dimensions, start and count '// &
            itoa(size(start, kind=PIO_OFFSET_KIND))//' and '//itoa(size(count, kind=PIO_OFFSET_KIND)))
       ierr = PIO_EINVAL
       return
    end if
    if (n < product(int(count(1:nd), PIO_OFFSET_KIND))) then
       call say(call_name, 'the box has '//itoa(product(int(count(1:nd), PIO_OFFSET_KIND)))//' values, the array '// &
            itoa(n))
       ierr = PIO_EINVAL
       return
    end if
    allocate(cstart(max(1, nd)), ccount(max(1, nd)))
    cstart = 0
    ccount = 1
    cstart(1:nd) = start(nd:1:-1) - 1
    ccount(1:nd) = count(nd:1:-1)
    ierr = vars_c(ncid, varid, writing, xtype, c_loc(cstart), c_loc(ccount), buf)
  end function box

  ! A text variable from a string: its characters, then NULs to the variable's size.
  integer function put_var_0d_text(file, varid, ival) result(ierr)
    type(file_desc_t), intent(inout) :: file
    integer, intent(in) :: varid
    character(len=*), intent(in) :: ival
    character(kind=c_char), allocatable, target :: buf(:)
    integer(PIO_OFFSET_KIND) :: extent
    integer :: i

    ierr = var_extent(file%fh, varid, extent)
    if (ierr /= PIO_NOERR) return
    allocate(buf(max(extent, int(len(ival), PIO_OFFSET_KIND), 1_PIO_OFFSET_KIND)))
    buf = c_null_char
    do i = 1, len_trim(ival)
       buf(i) = ival(i:i)
    end do
    ierr = whole_var(file%fh, varid, .true., PIO_char, size(buf, kind=PIO_OFFSET_KIND), c_loc(buf), 'PIO_put_var')
  end function put_var_0d_text

  integer function put_var_vdesc_0d_text(file, vardesc, ival) result(ierr)
    type(file_desc_t), intent(inout) :: file
    type(var_desc_t), intent(in) :: vardesc
    character(len=*), intent(in) :: ival

    ierr = put_var_0d_text(file, vardesc%varid, ival)
  end function put_var_vdesc_0d_text

  ! A text variable into a string, blank-padded (cut when the variable is longer), up to its first NUL.
  integer function get_var_0d_text(file, varid, ival) result(ierr)
    type(file_desc_t), intent(in) :: file
    integer, intent(in) :: varid
    character(len=*), intent(out) :: ival
    character(kind=c_char, len=:), allocatable, target :: buf
    integer(PIO_OFFSET_KIND) :: extent

    ival = ' '
    ierr = var_extent(file%fh, varid, extent)
    if (ierr /= PIO_NOERR) return
    allocate(character(kind=c_char, len=extent + 1) :: buf)
    buf(:) = repeat(c_null_char, len(buf))
    ierr = whole_var(file%fh, varid, .false., PIO_char, extent, c_loc(buf), 'PIO_get_var')
    call from_c(buf, ival)
  end function get_var_0d_text

  integer function get_var_vdesc_0d_text(file, vardesc, ival) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    character(len=*), intent(out) :: ival

    ierr = get_var_0d_text(file, vardesc%varid, ival)
  end function get_var_vdesc_0d_text

  ! ------------------------------------------------------------------------------------------ distributed data

  ! array: this task's elements in compdof's order, of the decomposition's type; fillval (optional) fills the
  ! elements no task writes.
  integer function write_darray_c(file, vardesc, iodesc, n, array, fill) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    type(io_desc_t), intent(in) :: iodesc
    integer(PIO_OFFSET_KIND), intent(in) :: n
    type(c_ptr), intent(in) :: array, fill

    ierr = PIOc_write_darray(file%fh, vardesc%varid - 1, iodesc%ioid, n, array, fill)
  end function write_darray_c

  integer function read_darray_c(file, vardesc, iodesc, n, array) result(ierr)
    type(file_desc_t), intent(in) :: file
    type(var_desc_t), intent(in) :: vardesc
    type(io_desc_t), intent(in) :: iodesc
    integer(PIO_OFFSET_KIND), intent(in) :: n
    type(c_ptr), intent(in) :: array

    ierr = PIOc_read_darray(file%fh, vardesc%varid - 1, iodesc%ioid, n, array)
  end function read_darray_c

  ! ------------------------------------------------------------------------------------------ typed forms

  ! integer(i4), real(r4) and real(r8): written once in pio_typed.F90.in, expanded per type by the build
  include 'pio_typed.inc'
end module pio_climio


! What programs use: PIO2's module pio.
module pio
  use iso_c_binding
  use pio_kinds, only : PIO_OFFSET_KIND
  use pio_types
  use pio_support, only : pio_readdof, pio_writedof
  use pio_climio
  implicit none
  public
end module pio
