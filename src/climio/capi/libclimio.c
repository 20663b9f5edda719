/* libclimio's entry points: each call goes to the I/O servers (served.c, plain C and MPI) when its id is a
 * server-mode id, else to climio's Python (attached mode: the embedded interpreter of libclimio_py.so, loaded
 * with dlopen on the first attached call only, so that a model writing through servers never maps Python).
 *
 * The mode is chosen once, by climio_init_intracomm (the launch's layout) or climio_init_servers; every later
 * id carries it. The last error's message lives here for both modes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fenv.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static char last_error[2048];

int climio_fail(int code, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return code;
}

void climio_keep_error(const char *message)
{
    snprintf(last_error, sizeof last_error, "%s", message);
}

int climio_errmsg(char *buffer, int length)
{
    if (length <= 0 || buffer == NULL)  /* nothing written, nothing counted */
        return 0;
    int n = (int)strlen(last_error);
    if (n > length - 1) {
        n = length - 1;
        while (n > 0 && (last_error[n] & 0xC0) == 0x80)  /* whole UTF-8 characters only */
            n--;
    }
    memcpy(buffer, last_error, (size_t)n);
    buffer[n] = '\0';
    return n;
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
    case CLIMIO_ENOMEM: return "out of memory on a model rank: nothing was published";
    default: return "not a climio error code";
    }
}

/* ------------------------------------------------------------------------------------------ attached mode */

/* The calls climio's Python implements, named climiopy_<call> in libclimio_py.so. */
#define PYTHON_CALLS(X)                                                                                        \
    X(init_intracomm_f, (int fcomm, int *iosysid))                                                             \
    X(set_error_handling, (int iosysid, int method))                                                           \
    X(finalize, (int iosysid))                                                                                 \
    X(init_decomp_blocks, (int iosysid, int ndims, const long long *gdimlen, const long long *start,          \
                           const long long *count, int halo, int *ioid))                                       \
    X(init_decomp, (int iosysid, int ndims, const long long *gdimlen, long long maplen,                        \
                    const long long *compmap, int *ioid))                                                      \
    X(free_decomp, (int iosysid, int ioid))                                                                    \
    X(createfile, (int iosysid, int ioid, int *ncid, const char *mode, const char *strategy, const char *path, \
                   int flags))                                                                                 \
    X(openfile, (int iosysid, int ioid, int *ncid, const char *strategy, const char *path))                    \
    X(closefile, (int ncid))                                                                                   \
    X(def_dim, (int ncid, const char *name, long long len, int *dimid))                                        \
    X(def_var, (int ncid, const char *name, int xtype, int ndims, const int *dimids, int *varid))              \
    X(def_var_deflate, (int ncid, int varid, int shuffle, int deflate, int level))                             \
    X(def_var_quantize, (int ncid, int varid, int quantize_mode, int nsd))                                     \
    X(def_var_reduce, (int ncid, int varid, int op, int steps))                                                \
    X(put_att_text, (int ncid, int varid, const char *name, const char *value))                                \
    X(put_att_double, (int ncid, int varid, const char *name, int xtype, long long len, const double *values)) \
    X(enddef, (int ncid))                                                                                      \
    X(inq_varid, (int ncid, const char *name, int *varid))                                                     \
    X(put_time, (int ncid, long long frame, double time))                                                      \
    X(write_darray, (int ncid, int varid, long long frame, int memtype, long long arraylen, const void *array)) \
    X(put_var, (int ncid, int varid, long long frame, int memtype, long long len, const void *values))         \
    X(read_darray, (int ncid, int varid, long long frame, int memtype, long long arraylen, void *array))        \
    X(errmsg, (char *buffer, int length))

#define MEMBER(name, params) int(*name) params;
static struct {
    PYTHON_CALLS(MEMBER)
} py;
#undef MEMBER

/* libclimio_py.so from this library's own directory, loaded once; NULL (with the message kept) when it cannot be. */
static void *python_library(void)
{
    static void *lib = NULL;
    if (lib != NULL)
        return lib;
    Dl_info self;
    char path[4096] = "libclimio_py.so";
    if (dladdr((void *)&python_library, &self) && self.dli_fname && strrchr(self.dli_fname, '/')) {
        int dir = (int)(strrchr(self.dli_fname, '/') - self.dli_fname);
        snprintf(path, sizeof path, "%.*s/libclimio_py.so", dir, self.dli_fname);
    }
    /* global: the interpreter's extension modules (numpy, mpi4py) resolve libpython's symbols through it */
    lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL)
        climio_fail(CLIMIO_EIO, "climio: cannot load its Python half %s (%s): install climio with make install, or "
                    "launch with climio serve ranks to write without Python", path, dlerror());
    return lib;
}

void *climio_python_symbol(const char *name)
{
    void *lib = python_library();
    if (lib == NULL)
        return NULL;
    void *symbol = dlsym(lib, name);
    if (symbol == NULL)
        climio_fail(CLIMIO_EIO, "climio: its Python half has no %s: rebuild it with make install", name);
    return symbol;
}

/* Bind every attached call (once): 0 or an error code with its message. */
static int python(void)
{
    static int loaded = 0;
    if (loaded)
        return CLIMIO_NOERR;
#define LOAD(name, params)                                                                                     \
    if ((*(void **)&py.name = climio_python_symbol("climiopy_" #name)) == NULL)                                \
        return CLIMIO_EIO;
    PYTHON_CALLS(LOAD)
#undef LOAD
    loaded = 1;
    return CLIMIO_NOERR;
}

/* Return an attached call's code, keeping Python's message when it failed. */
static int attached(int code)
{
    if (code != CLIMIO_NOERR)
        py.errmsg(last_error, (int)sizeof last_error);
    return code;
}

/* A call of the Python side, with the model's floating-point traps held off (a model built with -ffpe-trap would
 * stop inside numpy) and no flag of Python's left raised behind it (gfortran reports raised flags at STOP). */
#define ATTACHED(call, ...)                                                                                    \
    do {                                                                                                       \
        int loaded_ = python();                                                                                \
        if (loaded_ != CLIMIO_NOERR)                                                                           \
            return loaded_;                                                                                    \
        fenv_t model_;                                                                                         \
        feholdexcept(&model_);                                                                                 \
        int code_ = attached(py.call(__VA_ARGS__));                                                            \
        fesetenv(&model_);                                                                                     \
        return code_;                                                                                          \
    } while (0)

/* ------------------------------------------------------------------------------------------ I/O systems */

static int init(MPI_Comm comm, long long buffer_bytes, int servers_required, int *iosysid)
{
    int first = 0, count = 0, found = served_layout(&first, &count);
    *iosysid = -1;
    if (found < 0)
        return found;
    if (found == 0 && servers_required)
        return climio_fail(CLIMIO_EINVAL, "climio_init_servers: no I/O servers in this launch: start them as the "
                           "last application (mpiexec -n M MODEL : -n S climio serve) or set CLIMIO_SERVERS=S "
                           "(the last S ranks)");
    if (found == 0)
        ATTACHED(init_intracomm_f, (int)MPI_Comm_c2f(comm), iosysid);
    if (!served_holds_none(comm, first, count))
        return climio_fail(CLIMIO_EINVAL, "climio_init_intracomm: the communicator holds I/O server ranks "
                           "(world ranks %d-%d): pass the model's own ranks, from climio_model_comm", first,
                           first + count - 1);
    return served_init(comm, buffer_bytes, iosysid);
}

int climio_init_intracomm(MPI_Comm comm, int *iosysid)
{
    return init(comm, 0, 0, iosysid);
}

int climio_init_intracomm_f(int fcomm, int *iosysid)
{
    return init(MPI_Comm_f2c(fcomm), 0, 0, iosysid);
}

int climio_init_servers(MPI_Comm comm, long long buffer_bytes, int *iosysid)
{
    return init(comm, buffer_bytes, 1, iosysid);
}

int climio_init_servers_f(int fcomm, long long buffer_bytes, int *iosysid)
{
    return init(MPI_Comm_f2c(fcomm), buffer_bytes, 1, iosysid);
}

int climio_model_comm(MPI_Comm *comm)
{
    int first = 0, count = 0, found = served_layout(&first, &count), rank;
    *comm = MPI_COMM_NULL;
    if (found < 0)
        return found;
    if (found == 0)
        return MPI_Comm_dup(MPI_COMM_WORLD, comm) == MPI_SUCCESS ? CLIMIO_NOERR
               : climio_fail(CLIMIO_EINTERNAL, "climio_model_comm: MPI_Comm_dup failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank >= first && rank < first + count)
        return climio_fail(CLIMIO_EINVAL, "climio_model_comm: world rank %d is an I/O server rank (%d-%d), not "
                           "a model rank", rank, first, first + count - 1);
    MPI_Group world, model;
    int range[1][3] = {{first, first + count - 1, 1}};
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_range_excl(world, 1, range, &model);
    int status = MPI_Comm_create_group(MPI_COMM_WORLD, model, 7301, comm);
    MPI_Group_free(&world);
    MPI_Group_free(&model);
    return status == MPI_SUCCESS ? CLIMIO_NOERR
           : climio_fail(CLIMIO_EINTERNAL, "climio_model_comm: MPI_Comm_create_group failed");
}

int climio_model_comm_f(int *fcomm)
{
    MPI_Comm comm;
    int code = climio_model_comm(&comm);
    *fcomm = code == CLIMIO_NOERR ? (int)MPI_Comm_c2f(comm) : (int)MPI_Comm_c2f(MPI_COMM_NULL);
    return code;
}

/* ------------------------------------------------------------------------------------------ dispatch */

#define DISPATCH(id, call, ...)                                                                                \
    do {                                                                                                       \
        if (CLIMIO_SERVED(id))                                                                                 \
            return served_##call(__VA_ARGS__);                                                                 \
        ATTACHED(call, __VA_ARGS__);                                                                           \
    } while (0)

int climio_set_error_handling(int iosysid, int method)
{
    DISPATCH(iosysid, set_error_handling, iosysid, method);
}

int climio_finalize(int iosysid)
{
    DISPATCH(iosysid, finalize, iosysid);
}

int climio_init_decomp_blocks(int iosysid, int ndims, const long long *gdimlen, const long long *start,
                              const long long *count, int halo, int *ioid)
{
    DISPATCH(iosysid, init_decomp_blocks, iosysid, ndims, gdimlen, start, count, halo, ioid);
}

int climio_init_decomp(int iosysid, int ndims, const long long *gdimlen, long long maplen, const long long *compmap,
                       int *ioid)
{
    DISPATCH(iosysid, init_decomp, iosysid, ndims, gdimlen, maplen, compmap, ioid);
}

int climio_free_decomp(int iosysid, int ioid)
{
    DISPATCH(iosysid, free_decomp, iosysid, ioid);
}

int climio_createfile(int iosysid, int ioid, int *ncid, const char *mode, const char *strategy, const char *path,
                      int flags)
{
    DISPATCH(iosysid, createfile, iosysid, ioid, ncid, mode, strategy, path, flags);
}

int climio_openfile(int iosysid, int ioid, int *ncid, const char *strategy, const char *path)
{
    DISPATCH(iosysid, openfile, iosysid, ioid, ncid, strategy, path);
}

int climio_closefile(int ncid)
{
    DISPATCH(ncid, closefile, ncid);
}

int climio_def_dim(int ncid, const char *name, long long len, int *dimid)
{
    DISPATCH(ncid, def_dim, ncid, name, len, dimid);
}

int climio_def_var(int ncid, const char *name, int xtype, int ndims, const int *dimids, int *varid)
{
    DISPATCH(ncid, def_var, ncid, name, xtype, ndims, dimids, varid);
}

int climio_def_var_deflate(int ncid, int varid, int shuffle, int deflate, int level)
{
    DISPATCH(ncid, def_var_deflate, ncid, varid, shuffle, deflate, level);
}

int climio_def_var_quantize(int ncid, int varid, int quantize_mode, int nsd)
{
    DISPATCH(ncid, def_var_quantize, ncid, varid, quantize_mode, nsd);
}

int climio_def_var_reduce(int ncid, int varid, int op, int steps)
{
    DISPATCH(ncid, def_var_reduce, ncid, varid, op, steps);
}

int climio_put_att_text(int ncid, int varid, const char *name, const char *value)
{
    DISPATCH(ncid, put_att_text, ncid, varid, name, value);
}

int climio_put_att_double(int ncid, int varid, const char *name, int xtype, long long len, const double *values)
{
    DISPATCH(ncid, put_att_double, ncid, varid, name, xtype, len, values);
}

int climio_enddef(int ncid)
{
    DISPATCH(ncid, enddef, ncid);
}

int climio_inq_varid(int ncid, const char *name, int *varid)
{
    DISPATCH(ncid, inq_varid, ncid, name, varid);
}

int climio_put_time(int ncid, long long frame, double time)
{
    DISPATCH(ncid, put_time, ncid, frame, time);
}

int climio_write_darray(int ncid, int varid, long long frame, int memtype, long long arraylen, const void *array)
{
    DISPATCH(ncid, write_darray, ncid, varid, frame, memtype, arraylen, array);
}

int climio_put_var(int ncid, int varid, long long frame, int memtype, long long len, const void *values)
{
    DISPATCH(ncid, put_var, ncid, varid, frame, memtype, len, values);
}

int climio_read_darray(int ncid, int varid, long long frame, int memtype, long long arraylen, void *array)
{
    DISPATCH(ncid, read_darray, ncid, varid, frame, memtype, arraylen, array);
}
