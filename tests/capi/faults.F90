! One bad call on one rank, from Fortran: every rank must get the same error code (or the job must be
! aborted with CLIMIO_ABORT_ON_ERROR), and no file may be left at OUT.
!
!   mpiexec -n N faults KIND FAULTY_RANK ABORT OUT       KIND: varid | shape | path | frame | memory
!
! memory: the faulty rank writes a field of 2**57 doubles (a pointer over its small one), which libclimio
! cannot allocate a message for: CLIMIO_ENOMEM, through I/O servers only (attached mode reads the array).
!
! Each rank prints "rank R code C" and, once, rank 0 the message; then every rank closes the file and
! finalizes (calls on an abandoned file are released quietly), printing "rank R close C" (and rank 0 the
! message when its close failed: through I/O servers an error may reach a rank at its close). The program
! runs on climio_model_comm's ranks, so that it runs beside climio serve too.
program faults
  use mpi
  use climio_io
  use iso_c_binding, only: c_f_pointer, c_loc
  implicit none
  integer, parameter :: NX = 10, NY = 6
  character(len=512) :: kind, arg, out, path
  integer :: faulty, abort, ierr, rank, nranks, comm, iosys, ioid, ncid, dims(3), varid, code, wrong, after
  real(8), allocatable, target :: field(:, :)
  real(8), pointer, contiguous :: vast(:)
  integer :: start(2), count(2)

  call MPI_Init(ierr)
  rank = 0
  call expect(climio_model_comm(comm))
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, nranks, ierr)
  call get_command_argument(1, kind)
  call get_command_argument(2, arg)
  read (arg, *) faulty
  call get_command_argument(3, arg)
  read (arg, *) abort
  call get_command_argument(4, out)

  ! rows split over the ranks (rank r owns rows start(2)..start(2)+count(2)-1; some may own none)
  start = [1, rank * NY / nranks + 1]
  count = [NX, (rank + 1) * NY / nranks - rank * NY / nranks]
  allocate (field(count(1), count(2)), source=1d0 * rank)

  call expect(climio_init_intracomm(comm, iosys))
  if (abort == 1) call expect(climio_set_error_handling(iosys, CLIMIO_ABORT_ON_ERROR))
  call expect(climio_init_decomp_blocks(iosys, [NX, NY], start, count, 0, ioid))
  path = out
  if (kind == "path" .and. rank == faulty) path = "/nonexistent-climio-dir/out.nc"
  code = climio_createfile(iosys, ioid, ncid, "cdf5", "agg", path)
  if (code == CLIMIO_NOERR) then  ! the first error of these calls (through servers, it may come late)
     call attempt(climio_def_dim(ncid, "x", NX, dims(1)))
     call attempt(climio_def_dim(ncid, "y", NY, dims(2)))
     call attempt(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, dims(3)))
     call attempt(climio_def_var(ncid, "v", CLIMIO_DOUBLE, dims, varid))
     call attempt(climio_enddef(ncid))
     call attempt(climio_write_darray(ncid, varid, 1, field))  ! a good first record
     wrong = varid
     if (kind == "varid" .and. rank == faulty) wrong = varid + 99
     if (kind == "shape" .and. rank == faulty) then
        call attempt(climio_write_darray(ncid, wrong, 2, field(:, 1:max(0, count(2) - 1))))
     else if (kind == "frame" .and. rank == faulty) then
        call attempt(climio_write_darray(ncid, wrong, 0, field))  ! frames are 1-based
     else if (kind == "memory" .and. rank == faulty) then
        call c_f_pointer(c_loc(field), vast, [2_8**57])
        call attempt(climio_write_darray(ncid, wrong, 2, vast))
     else
        call attempt(climio_write_darray(ncid, wrong, 2, field))
     end if
  end if
  write (*, '(a, i0, a, i0)') "rank ", rank, " code ", code
  if (rank == 0) write (*, '(a)') "message " // climio_errmsg()
  after = climio_closefile(ncid)
  write (*, '(a, i0, a, i0)') "rank ", rank, " close ", after
  if (rank == 0 .and. after /= CLIMIO_NOERR) write (*, '(a)') "message " // climio_errmsg()
  call expect(climio_finalize(iosys))
  call MPI_Finalize(ierr)

contains

  subroutine attempt(status)
    integer, intent(in) :: status
    if (code == CLIMIO_NOERR) code = status
  end subroutine attempt

  subroutine expect(status)
    integer, intent(in) :: status
    if (status /= CLIMIO_NOERR) then
       write (*, '(a, i0, a)') "rank ", rank, " unexpected " // climio_errmsg()
       call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
    end if
  end subroutine expect

end program faults
