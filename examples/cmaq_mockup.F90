! The CMAQ mock-up of seed 003 as a Fortran model that writes through climio: a domain of columns x rows
! x layers x species, decomposed on a px x py process grid with a halo of 2, each species a (column, row,
! layer) real(4) array; every step does an artificial workload over every species and writes them all.
!
!   mpiexec -n 4 cmaq_mockup OUT.nc [domain=CA|EUS|CONUS|NXxNYxNLAYxNSPEC] [grid=PXxPY] [strategy=agg]
!                                   [mode=cdf5] [steps=3] [work=SECONDS] [io=yes|no] [timing=FILE.json]
!   mpiexec -n 4 cmaq_mockup OUT.nc ... : -n 1 climio serve     (written by an I/O server)
!
! The model runs on the communicator climio_model_comm gives: every rank of the launch but the servers'.
! The values are those of `climio bench model` (climio.bench.model.value): species s at the C-order
! record offset f = (lay*NY + row)*NX + col is mod(7 f + 13 s, 1000003), exact in real(4), so the file
! can be compared element by element with the same fields written through the Python API. The halo
! holds -1, which must never reach the file. With timing=, rank 0 writes as JSON the time of the first
! call (climio_init_intracomm starts the library's Python), the I/O time after it (decomposition, create,
! define, every write, close; the slowest rank's), the number of climio calls, and rank 0's own time in
! the steps' calls (climio_put_time and climio_write_darray) with their number, and the whole run's time
! (workload and output, the slowest rank's). work= makes each step's workload last that many seconds at least;
! io=no leaves out every climio call (the same program without output, for comparisons).
program cmaq_mockup
  use mpi
  use climio_io
  implicit none

  integer, parameter :: HALO = 2
  character(len=512) :: path, timing
  character(len=64) :: domain, grid, strategy, mode
  integer :: nx, ny, nlay, nspec, px, py, steps, ierr, rank, nranks, row, col, comm
  integer :: start(2), count(2), iosys, ioid, ncid, dims(4), step, s, calls, lay, j, i
  integer, allocatable :: varids(:)
  real(4), allocatable :: conc(:, :, :, :), scratch(:, :, :, :)
  real(8) :: started, io, slowest, start_s, first, steps_s, work, run_started, run_s
  logical :: with_io
  character(len=16) :: name
  integer(8) :: f

  call MPI_Init(ierr)
  rank = 0
  call check(climio_model_comm(comm))
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, nranks, ierr)
  call arguments()

  row = rank / px
  col = mod(rank, px)
  call block_range(ny, py, row, start(2), count(2))
  call block_range(nx, px, col, start(1), count(1))
  allocate (conc(1 - HALO:count(1) + HALO, 1 - HALO:count(2) + HALO, nlay, nspec), source=-1.0)
  allocate (scratch, mold=conc)
  do s = 1, nspec
     do lay = 1, nlay
        do j = 1, count(2)
           do i = 1, count(1)
              f = (int(lay - 1, 8) * ny + (start(2) - 1 + j - 1)) * nx + (start(1) - 1 + i - 1)
              conc(i, j, lay, s) = real(mod(f * 7 + int(s - 1, 8) * 13, 1000003_8), 4)
           end do
        end do
     end do
  end do
  allocate (varids(nspec))

  calls = 0
  io = 0
  first = 0
  steps_s = 0
  run_started = MPI_Wtime()
  if (with_io) call open_output()
  do step = 1, steps
     call workload()
     if (.not. with_io) cycle
     started = MPI_Wtime()
     call check(climio_put_time(ncid, step, 3600d0 * (step - 1)))
     do s = 1, nspec
        call check(climio_write_darray(ncid, varids(s), step, conc(:, :, :, s)))
     end do
     steps_s = steps_s + MPI_Wtime() - started
  end do
  io = io + steps_s
  if (with_io) call close_output()
  call MPI_Barrier(comm, ierr)
  started = MPI_Wtime() - run_started
  call MPI_Reduce(started, run_s, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, comm, ierr)
  call MPI_Reduce(io, slowest, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, comm, ierr)
  call MPI_Reduce(first, start_s, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, comm, ierr)
  if (rank == 0 .and. len_trim(timing) > 0) then
     open (newunit=i, file=trim(timing), status="replace", action="write")
     write (i, '(a, es24.16, a, es24.16, a, i0, a, es24.16, a, i0, a, es24.16, a)') '{"start_s": ', start_s, &
          ', "io_s": ', slowest, ', "calls": ', calls, ', "steps_s": ', steps_s, ', "step_calls": ', &
          steps * (nspec + 1), ', "run_s": ', run_s, '}'
     close (i)
  end if
  call MPI_Comm_free(comm, ierr)
  call MPI_Finalize(ierr)

contains

  !> climio_init_intracomm (timed apart: attached, it starts the library's Python), the decomposition, the
  !> file and its definitions.
  subroutine open_output()
    started = MPI_Wtime()
    call check(climio_init_intracomm(comm, iosys))
    first = MPI_Wtime() - started
    started = MPI_Wtime()
    call check(climio_init_decomp_blocks(iosys, [nx, ny], start, count, HALO, ioid))
    call check(climio_createfile(iosys, ioid, ncid, mode, strategy, path))
    call check(climio_def_dim(ncid, "COL", nx, dims(1)))
    call check(climio_def_dim(ncid, "ROW", ny, dims(2)))
    call check(climio_def_dim(ncid, "LAY", nlay, dims(3)))
    call check(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, dims(4)))
    call check(climio_def_var(ncid, "time", CLIMIO_DOUBLE, [dims(4)], i))
    call check(climio_put_att(ncid, i, "units", "s"))
    do s = 1, nspec
       write (name, '(a, i3.3)') "SPEC", s - 1
       call check(climio_def_var(ncid, trim(name), CLIMIO_FLOAT, dims, varids(s)))
       call check(climio_put_att(ncid, varids(s), "units", "ppmV"))
    end do
    call check(climio_put_att(ncid, CLIMIO_GLOBAL, "title", "CMAQ mock-up (Fortran)"))
    call check(climio_enddef(ncid))
    io = io + MPI_Wtime() - started
  end subroutine open_output

  subroutine close_output()
    started = MPI_Wtime()
    call check(climio_closefile(ncid))
    call check(climio_free_decomp(iosys, ioid))
    call check(climio_finalize(iosys))
    call MPI_Barrier(comm, ierr)
    io = io + MPI_Wtime() - started
  end subroutine close_output

  !> The artificial workload over every species, repeated until `work` seconds have passed.
  subroutine workload()
    real(8) :: begun
    begun = MPI_Wtime()
    scratch = conc * 1.0001
    do while (MPI_Wtime() - begun < work)
       scratch = scratch * 1.0001
    end do
  end subroutine workload

  !> A failed call ends the job, as a model does: the rank that saw it says why, then MPI_Abort (MPI_Finalize
  !> would wait for every rank of the launch, an I/O server that died too).
  subroutine check(code)
    integer, intent(in) :: code
    calls = calls + 1
    if (code /= CLIMIO_NOERR) then
       write (0, '(a)') "cmaq_mockup: " // climio_errmsg()
       flush (0)
       call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
  end subroutine check

  !> Block `index` (0-based) of `n` points split into `parts`: 1-based start, count (climio.core.decomp).
  subroutine block_range(n, parts, index, first, length)
    integer, intent(in) :: n, parts, index
    integer, intent(out) :: first, length
    first = index * (n / parts) + min(index, mod(n, parts)) + 1
    length = n / parts
    if (index < mod(n, parts)) length = length + 1
  end subroutine block_range

  subroutine arguments()
    character(len=512) :: arg
    integer :: k, x
    call get_command_argument(1, path)
    domain = "CA"
    grid = ""
    strategy = "agg"
    mode = "cdf5"
    steps = 3
    work = 0
    with_io = .true.
    timing = ""
    do k = 2, command_argument_count()
       call get_command_argument(k, arg)
       x = index(arg, "=")
       select case (arg(:x - 1))
       case ("domain")
          domain = arg(x + 1:)
       case ("grid")
          grid = arg(x + 1:)
       case ("strategy")
          strategy = arg(x + 1:)
       case ("mode")
          mode = arg(x + 1:)
       case ("steps")
          read (arg(x + 1:), *) steps
       case ("timing")
          timing = arg(x + 1:)
       case ("work")
          read (arg(x + 1:), *) work
       case ("io")
          with_io = arg(x + 1:) /= "no"
       case default
          if (rank == 0) write (0, '(a)') "cmaq_mockup: unknown argument '" // trim(arg) // "'"
          call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
       end select
    end do
    if (len_trim(path) == 0) then
       if (rank == 0) write (0, '(a)') "usage: cmaq_mockup OUT.nc [domain=CA] [grid=PXxPY] [strategy=agg] " // &
            "[mode=cdf5] [steps=3] [work=SECONDS] [io=yes|no] [timing=FILE]"
       call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
    end if
    select case (domain)
    case ("CA")
       nx = 89; ny = 134; nlay = 35; nspec = 146
    case ("EUS")
       nx = 279; ny = 299; nlay = 35; nspec = 146
    case ("CONUS")
       nx = 459; ny = 299; nlay = 35; nspec = 146
    case default
       do k = 1, len_trim(domain)
          if (domain(k:k) == "x") domain(k:k) = " "
       end do
       read (domain, *) nx, ny, nlay, nspec
    end select
    if (len_trim(grid) == 0) then
       px = nranks
       py = 1
    else
       x = index(grid, "x")
       read (grid(:x - 1), *) px
       read (grid(x + 1:), *) py
    end if
    if (px * py /= nranks) then
       if (rank == 0) write (0, '(a)') "cmaq_mockup: grid= does not match the number of ranks"
       call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
    end if
  end subroutine arguments

end program cmaq_mockup
