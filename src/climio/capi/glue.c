/* The parts of libclimio that need no Python: MPI handle conversion and the codes' descriptions. */

int climio_init_intracomm(MPI_Comm comm, int *iosysid)
{
    return climio_init_intracomm_f((int)MPI_Comm_c2f(comm), iosysid);
}

const char *climio_strerror(int code)
{
    switch (code) {
    case CLIMIO_NOERR: return "no error";
    case CLIMIO_EBADID: return "no such I/O system, decomposition, file, dimension or variable id";
    case CLIMIO_EINVAL: return "a bad argument: name, type, length, shape, mode or strategy";
    case CLIMIO_ESTATE: return "a call out of order: define before climio_enddef, write after it";
    case CLIMIO_EIO: return "a fault of the machine (unwritable path, full disk): nothing was published";
    case CLIMIO_EINTERNAL: return "a bug in climio: please report it with the message";
    default: return "not a climio error code";
    }
}
