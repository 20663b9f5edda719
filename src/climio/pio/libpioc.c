/* libpioc: PIO2's C entry points (include/pio.h) on climio. PIO's typed families (put_vara_int, get_att_float,
 * ...) become a few calls with a memory type (pio_python.h), which climio's Python answers in this process
 * (climio.pio.calls), through libclimio_py.so, loaded on the first call as the climio API loads it, or, in a
 * launch with I/O servers and in PIO's async mode, the servers do (served_calls.c: no Python here). */
#define _GNU_SOURCE
#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pio.h"
#include "pio_python.h"
#include "served_calls.h"

int PIOc_openfile_retry(int iosysid, int *ncidp, int *iotype, const char *filename, int mode, int retry,
                        int use_ext_ncid);
int PIOc_put_vars_tc(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const PIO_Offset *stride,
                     nc_type xtype, const void *buf);
int PIOc_get_vars_tc(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const PIO_Offset *stride,
                     nc_type xtype, void *buf);

#define SLOT(name) __typeof__(climiopy_##name) *name;
static struct {
    PIO_PYTHON_CALLS(SLOT)
} answers; /* who answers: climio's Python in this process, or the I/O servers (served_calls.c) */
#undef SLOT
static int answered;

/* Bind climio's Python in this process to answer: 1, or 0 after saying why on stderr (PIO programs have no
 * message call). */
static int bind_python(void)
{
#define BIND(name)                                                                                             \
    if ((*(void **)&answers.name = climio_python_symbol("climiopy_" #name)) == NULL) {                         \
        char line[2048];                                                                                       \
        climio_errmsg(line, (int)sizeof line);                                                                 \
        fprintf(stderr, "%s\n", line);                                                                         \
        return 0;                                                                                              \
    }
    PIO_PYTHON_CALLS(BIND)
#undef BIND
    answered = 1;
    return 1;
}

static void bind_served(void);

/* Who answers, bound once (each init binds again): the I/O servers in a launch with climio serve ranks, else
 * climio's Python in this process. */
static int bound(void)
{
    int first = 0, count = 0;
    if (answered)
        return 1;
    if (served_layout(&first, &count) > 0) {
        bind_served();
        return 1;
    }
    return bind_python();
}

/* Answer every call through the launch's climio serve ranks: this process loads no Python. */
static void bind_served(void)
{
#define BIND_SERVED(name) answers.name = served_##name;
    PIO_PYTHON_CALLS(BIND_SERVED)
#undef BIND_SERVED
    answered = 1;
}

/* `code` = an answer, with the program's floating-point traps held off (climio's Python, when it answers, would
 * stop in numpy under a model built with -ffpe-trap) and no flag of the answer's left raised behind it (gfortran
 * reports raised flags at STOP). */
#define HELD(code, answer)                                                                                     \
    do {                                                                                                       \
        fenv_t program_;                                                                                       \
        feholdexcept(&program_);                                                                               \
        code = (answer);                                                                                       \
        fesetenv(&program_);                                                                                   \
    } while (0)

#define CALL(name, ...)                                                                                        \
    do {                                                                                                       \
        int code_ = PIO_EIO;                                                                                   \
        if (bound())                                                                                           \
            HELD(code_, answers.name(__VA_ARGS__));                                                            \
        return code_;                                                                                          \
    } while (0)

/* ------------------------------------------------------------------------------------ errors, I/O systems */

int PIOc_strerror(int pioerr, char *errstr)
{
    const char *text;
    switch (pioerr) {
    case PIO_EBADIOTYPE: text = "Bad IO type"; break;
    case PIO_EVARDIMMISMATCH: text = "Variable dim mismatch in multivar call"; break;
    case PIO_EBADREARR: text = "Rearranger mismatch in async mode"; break;
    case PIO_EINDEP: text = "Independent access error"; break;
    case PIO_EINSUFFBUF: text = "Insufficient buffer size"; break;
    default: text = pioerr <= 0 && pioerr > PIO_FIRST_ERROR_CODE ? nc_strerror(pioerr) : "Unknown Error"; break;
    }
    if (errstr != NULL)
        snprintf(errstr, PIO_MAX_NAME + 1, "%s", text);
    return PIO_NOERR;
}

int PIOc_set_log_level(int level)
{
    (void)level;
    return PIO_NOERR;
}

int PIOc_set_global_log_level(int iosysid, int level)
{
    (void)iosysid;
    return PIOc_set_log_level(level);
}

/* PIO_DEFAULT's handler, for the systems made later: kept here and handed over at each init, so that setting it
 * first (as PIO programs do) loads nothing. */
static int default_handler = PIO_INTERNAL_ERROR;

int PIOc_set_iosystem_error_handling(int iosysid, int method, int *old_method)
{
    if (method != PIO_INTERNAL_ERROR && method != PIO_BCAST_ERROR && method != PIO_RETURN_ERROR) {
        fprintf(stderr, "climio: PIOc_set_iosystem_error_handling: method %d: use PIO_INTERNAL_ERROR (-51), "
                "PIO_BCAST_ERROR (-52) or PIO_RETURN_ERROR (-53)\n", method);
        return PIO_EINVAL;
    }
    if (iosysid != PIO_DEFAULT)
        CALL(pio_error_handling, iosysid, method, old_method);
    if (old_method != NULL)
        *old_method = default_handler;
    default_handler = method;
    return PIO_NOERR;
}

/* A new I/O system over comp_comm, under the default handler. */
static int new_system(MPI_Comm comp_comm, int num_iotasks, int stride, int base, int rearr, int server_first,
                      int server_count, int *iosysidp)
{
    int code = PIO_EIO;
    if (bound())
        HELD(code, answers.pio_error_handling(PIO_DEFAULT, default_handler, NULL));
    if (code == PIO_NOERR)
        HELD(code, answers.pio_init((int)MPI_Comm_c2f(comp_comm), num_iotasks, stride, base, rearr, server_first,
                                    server_count, iosysidp));
    return code;
}

int PIOc_Set_IOSystem_Error_Handling(int iosysid, int method)
{
    int old = PIO_INTERNAL_ERROR;
    PIOc_set_iosystem_error_handling(iosysid, method, &old);
    return old;
}

int PIOc_iotype_available(int iotype)
{
    CALL(pio_iotype_available, iotype);
}

int PIOc_Init_Intracomm_from_F90(int f90_comp_comm, int num_iotasks, int stride, int base, int rearr,
                                 void *rearr_opts, int *iosysidp)
{
    (void)rearr_opts;
    int first = 0, count = 0, found = served_layout(&first, &count); /* climio serve ranks in this launch? */
    if (found < 0) {                                                 /* a bad CLIMIO_SERVERS: its line */
        char line[2048];
        climio_errmsg(line, (int)sizeof line);
        fprintf(stderr, "%s\n", line);
        return PIO_EINVAL;
    }
    if (found) /* a system of a launch with servers, or of this process: a program may make both in turn */
        bind_served();
    else if (!bind_python())
        return PIO_EIO;
    return new_system(MPI_Comm_f2c(f90_comp_comm), num_iotasks, stride, base, rearr, first, found ? count : 0,
                      iosysidp);
}

int PIOc_Init_Intracomm(MPI_Comm comp_comm, int num_iotasks, int stride, int base, int rearr, int *iosysidp)
{
    return PIOc_Init_Intracomm_from_F90((int)MPI_Comm_c2f(comp_comm), num_iotasks, stride, base, rearr, NULL,
                                        iosysidp);
}

/* ------------------------------------------------------------------------------------ async: I/O tasks apart */

enum { TAG_IO_COMM = 7311, TAG_COMP_COMM = 7312 }; /* MPI_Comm_create_group's tags (climio's wire: 7301-7310) */

/* A refusal of PIO's async init: said once (by world's first task), and under PIO_INTERNAL_ERROR the end. */
static int async_refused(MPI_Comm world, const char *what)
{
    int rank;
    MPI_Comm_rank(world, &rank);
    if (rank == 0) {
        fprintf(stderr, "climio: %s\n", what);
        fflush(stderr);
    }
    if (default_handler == PIO_INTERNAL_ERROR)
        MPI_Abort(world, 2);
    return PIO_EINVAL;
}

/* Both sides of PIO's async mode: the I/O tasks (io_comm) run climio's server loop (climio.pio.bridge's serve,
 * in this task's Python) until the computational tasks free their system; the computational tasks (comp_comm)
 * connect to them as to `climio serve` ranks, with no Python of their own. io_first: the first I/O task's rank
 * in world, nio their count. A task of neither returns at once. */
static int start_async(MPI_Comm world, MPI_Comm io_comm, MPI_Comm comp_comm, int io_first, int nio, int rearranger,
                       int *iosysidp)
{
    if (io_comm != MPI_COMM_NULL) {
        int (*serve)(int, int) = (int (*)(int, int))climio_python_symbol("climiopy_pio_serve");
        if (serve == NULL) {
            char line[2048];
            climio_errmsg(line, (int)sizeof line);
            fprintf(stderr, "%s\n", line);
            return PIO_EIO;
        }
        *iosysidp = -1; /* an I/O task has no system of its own: PIO2's I/O tasks do not use it either */
        int code;
        HELD(code, serve((int)MPI_Comm_c2f(world), (int)MPI_Comm_c2f(io_comm)));
        return code;
    }
    if (comp_comm == MPI_COMM_NULL)
        return PIO_NOERR;
    bind_served();
    int code = served_pio_connect(comp_comm, world, io_first, nio, default_handler, 1);
    return code ? code : new_system(comp_comm, nio, 1, 0, rearranger, io_first, nio, iosysidp);
}

/* The rank of `task` among world's, or -1 (PIO's lists give world ranks). */
static int in_list(int task, const int *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == task)
            return i;
    return -1;
}

int PIOc_init_async(MPI_Comm world, int num_io_procs, int *io_proc_list, int component_count,
                    int *num_procs_per_comp, int **proc_list, MPI_Comm *user_io_comm, MPI_Comm *user_comp_comm,
                    int rearranger, int *iosysidp)
{
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    char why[512] = "";
    if (component_count != 1)
        snprintf(why, sizeof why, "PIOc_init_async: %d computational components: climio's I/O servers serve one "
                 "(give component_count 1; run other components with a launch of their own)", component_count);
    else if (num_io_procs < 1 || num_procs_per_comp == NULL || num_procs_per_comp[0] < 1 || iosysidp == NULL ||
             num_io_procs + num_procs_per_comp[0] > size)
        snprintf(why, sizeof why, "PIOc_init_async: %d I/O tasks and %d computational tasks over %d tasks: give at "
                 "least one of each, no more than the communicator has, and iosysidp", num_io_procs,
                 num_procs_per_comp ? num_procs_per_comp[0] : 0, size);
    else if (rearranger != PIO_REARR_BOX && rearranger != PIO_REARR_SUBSET)
        snprintf(why, sizeof why, "PIOc_init_async: rearranger %d: use PIO_REARR_BOX (1) or PIO_REARR_SUBSET (2)",
                 rearranger);
    int nio = why[0] ? 1 : num_io_procs, ncomp = why[0] ? 1 : num_procs_per_comp[0];
    int *io = malloc(sizeof(int) * (size_t)nio), *comp = malloc(sizeof(int) * (size_t)ncomp);
    if (io == NULL || comp == NULL) {
        free(io);
        free(comp);
        fprintf(stderr, "climio: PIOc_init_async: out of memory for the task lists\n");
        return PIO_ENOMEM;
    }
    for (int i = 0; !why[0] && i < nio; i++) {
        io[i] = io_proc_list ? io_proc_list[i] : i; /* PIO2's defaults: the I/O tasks first, then the component */
        if (io[i] < 0 || io[i] >= size || in_list(io[i], io, i) >= 0)
            snprintf(why, sizeof why, "PIOc_init_async: I/O task %d: give distinct ranks of 0..%d", io[i], size - 1);
    }
    for (int i = 0; !why[0] && i < ncomp; i++) {
        comp[i] = proc_list && proc_list[0] ? proc_list[0][i] : num_io_procs + i;
        if (comp[i] < 0 || comp[i] >= size || in_list(comp[i], comp, i) >= 0 || in_list(comp[i], io, nio) >= 0)
            snprintf(why, sizeof why, "PIOc_init_async: computational task %d: give distinct ranks of 0..%d that are "
                     "no I/O task", comp[i], size - 1);
    }
    if (why[0]) {
        free(io);
        free(comp);
        return async_refused(world, why);
    }
    MPI_Group everyone, group;
    MPI_Comm io_comm = MPI_COMM_NULL, comp_comm = MPI_COMM_NULL;
    MPI_Comm_group(world, &everyone);
    if (in_list(rank, io, nio) >= 0) {
        MPI_Group_incl(everyone, nio, io, &group);
        MPI_Comm_create_group(world, group, TAG_IO_COMM, &io_comm);
        MPI_Group_free(&group);
    } else if (in_list(rank, comp, ncomp) >= 0) {
        MPI_Group_incl(everyone, ncomp, comp, &group);
        MPI_Comm_create_group(world, group, TAG_COMP_COMM, &comp_comm);
        MPI_Group_free(&group);
    }
    MPI_Group_free(&everyone);
    if (user_io_comm != NULL) {
        *user_io_comm = MPI_COMM_NULL;
        if (io_comm != MPI_COMM_NULL)
            MPI_Comm_dup(io_comm, user_io_comm);
    }
    if (user_comp_comm != NULL) {
        user_comp_comm[0] = MPI_COMM_NULL;
        if (comp_comm != MPI_COMM_NULL)
            MPI_Comm_dup(comp_comm, user_comp_comm);
    }
    int first = io[0];
    free(io);
    free(comp);
    int code = start_async(world, io_comm, comp_comm, first, nio, rearranger, iosysidp);
    if (io_comm != MPI_COMM_NULL)
        MPI_Comm_free(&io_comm);
    return code;
}

int PIOc_init_async_from_comms(MPI_Comm world, int component_count, MPI_Comm *comp_comm, MPI_Comm io_comm,
                               int rearranger, int *iosysidp)
{
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (component_count != 1)
        return async_refused(world, "PIOc_init_async_from_comms: climio's I/O servers serve one computational "
                                    "component: give component_count 1");
    /* The first I/O task and the I/O tasks' count, which every task learns over world (collective, as PIO's) */
    int io = io_comm != MPI_COMM_NULL, mine[2] = {io ? rank : size, io}, found[2];
    MPI_Allreduce(&mine[0], &found[0], 1, MPI_INT, MPI_MIN, world);
    MPI_Allreduce(&mine[1], &found[1], 1, MPI_INT, MPI_SUM, world);
    if (found[1] == 0)
        return async_refused(world, "PIOc_init_async_from_comms: no task passed an I/O communicator: give io_comm on "
                                    "the I/O tasks (MPI_COMM_NULL elsewhere)");
    MPI_Comm comp = comp_comm != NULL && !io ? comp_comm[0] : MPI_COMM_NULL;
    return start_async(world, io ? io_comm : MPI_COMM_NULL, comp, found[0], found[1], rearranger, iosysidp);
}

int PIOc_init_intercomm(int component_count, MPI_Comm peer_comm, MPI_Comm *comp_comms, MPI_Comm io_comm,
                        int rearranger, int *iosysidps)
{
    return PIOc_init_async_from_comms(peer_comm, component_count, comp_comms, io_comm, rearranger, iosysidps);
}

int PIOc_init_async_from_F90(int f90_world_comm, int num_io_procs, int *io_proc_list, int component_count,
                             int *procs_per_component, int *flat_proc_list, int *f90_io_comm, int *f90_comp_comm,
                             int rearranger, int *iosysidp)
{
    /* flat_proc_list: component_count columns of the longest component's length (one component here) */
    int *lists[1] = {flat_proc_list};
    MPI_Comm io_comm = MPI_COMM_NULL, comp_comm = MPI_COMM_NULL;
    int code = PIOc_init_async(MPI_Comm_f2c(f90_world_comm), num_io_procs, io_proc_list, component_count,
                               procs_per_component, flat_proc_list ? lists : NULL, &io_comm, &comp_comm, rearranger,
                               iosysidp);
    *f90_io_comm = (int)MPI_Comm_c2f(io_comm);
    *f90_comp_comm = (int)MPI_Comm_c2f(comp_comm);
    return code;
}

int PIOc_init_async_comms_from_F90(int f90_world_comm, int component_count, int *f90_comp_comms, int f90_io_comm,
                                   int rearranger, int *iosysidp)
{
    MPI_Comm comp = f90_comp_comms ? MPI_Comm_f2c(f90_comp_comms[0]) : MPI_COMM_NULL;
    return PIOc_init_async_from_comms(MPI_Comm_f2c(f90_world_comm), component_count, &comp,
                                      MPI_Comm_f2c(f90_io_comm), rearranger, iosysidp);
}

int PIOc_free_iosystem(int iosysid)
{
    CALL(pio_free_iosystem, iosysid);
}

int PIOc_finalize(int iosysid)
{
    return PIOc_free_iosystem(iosysid);
}

int PIOc_get_numiotasks(int iosysid, int *numiotasks)
{
    CALL(pio_numiotasks, iosysid, numiotasks);
}

int PIOc_iam_iotask(int iosysid, bool *ioproc)
{
    int iorank = -1, active = 0, code = PIO_EIO;
    if (bound())
        HELD(code, answers.pio_iotask(iosysid, &iorank, &active));
    if (code == PIO_NOERR && ioproc != NULL)
        *ioproc = iorank >= 0;
    return code;
}

int PIOc_iotask_rank(int iosysid, int *iorank)
{
    int active = 0;
    CALL(pio_iotask, iosysid, iorank, &active);
}

int PIOc_iosystem_is_active(int iosysid, bool *active)
{
    int iorank = -1, is = 0, code = PIO_EIO;
    if (bound())
        HELD(code, answers.pio_iotask(iosysid, &iorank, &is));
    if (code == PIO_NOERR && active != NULL)
        *active = is;
    return code;
}

PIO_Offset PIOc_set_buffer_size_limit(PIO_Offset limit)
{
    /* The most bytes of held darray writes an I/O task receives at a flush (climio's pio/calls.py asks with a
       limit of 0); PIO2's limit is a task's buffer, 10 MiB by default. */
    static PIO_Offset current = 268435456;
    PIO_Offset old = current;
    if (limit > 0)
        current = limit;
    return old;
}

int PIOc_set_hint(int iosysid, const char *hint, const char *hintval)
{
    CALL(pio_set_hint, iosysid, hint, hintval);
}

/* ------------------------------------------------------------------------------------ decompositions */

static int init_decomp(int iosysid, int pio_type, int ndims, const int *gdimlen, int maplen,
                       const PIO_Offset *compmap, int *ioidp, int rearr, int base, const PIO_Offset *iostart,
                       const PIO_Offset *iocount)
{
    CALL(pio_init_decomp, iosysid, pio_type, ndims, gdimlen, maplen, compmap, base, rearr,
         iostart != NULL || iocount != NULL, ioidp);
}

int PIOc_InitDecomp(int iosysid, int pio_type, int ndims, const int *gdimlen, int maplen, const PIO_Offset *compmap,
                    int *ioidp, const int *rearr, const PIO_Offset *iostart, const PIO_Offset *iocount)
{
    return init_decomp(iosysid, pio_type, ndims, gdimlen, maplen, compmap, ioidp, rearr ? *rearr : PIO_REARR_BOX,
                       1, iostart, iocount);
}

int PIOc_init_decomp(int iosysid, int pio_type, int ndims, const int *gdimlen, int maplen,
                     const PIO_Offset *compmap, int *ioidp, int rearranger, const PIO_Offset *iostart,
                     const PIO_Offset *iocount)
{
    return init_decomp(iosysid, pio_type, ndims, gdimlen, maplen, compmap, ioidp, rearranger, 0, iostart, iocount);
}

int PIOc_InitDecomp_bc(int iosysid, int basetype, int ndims, const int *gdimlen, const long int *start,
                       const long int *count, int *ioidp)
{
    long long starts[PIO_MAX_VAR_DIMS], counts[PIO_MAX_VAR_DIMS];
    for (int d = 0; d < ndims && d < PIO_MAX_VAR_DIMS; d++) {
        starts[d] = start[d];
        counts[d] = count[d];
    }
    CALL(pio_init_decomp_blocks, iosysid, basetype, ndims, gdimlen, starts, counts, ioidp);
}

int PIOc_freedecomp(int iosysid, int ioid)
{
    CALL(pio_freedecomp, iosysid, ioid);
}

int PIOc_get_local_array_size(int ioid)
{
    long long size = 0;
    int code = PIO_EIO;
    if (bound())
        HELD(code, answers.pio_local_size(ioid, &size));
    return code == PIO_NOERR ? (int)size : code;
}

int PIOc_write_nc_decomp(int iosysid, const char *filename, int cmode, int ioid, char *title, char *history,
                         int fortran_order)
{
    CALL(pio_write_nc_decomp, iosysid, filename, cmode, ioid, title, history, fortran_order);
}

int PIOc_read_nc_decomp(int iosysid, const char *filename, int *ioid, MPI_Comm comm, int pio_type, char *title,
                        char *history, int *fortran_order)
{
    CALL(pio_read_nc_decomp, iosysid, filename, ioid, (int)MPI_Comm_c2f(comm), pio_type, title, history,
         fortran_order);
}

/* ------------------------------------------------------------------------------------ files */

int PIOc_createfile(int iosysid, int *ncidp, int *iotype, const char *fname, int mode)
{
    CALL(pio_createfile, iosysid, ncidp, iotype ? *iotype : -1, fname, mode);
}

/* The library's own default fill mode, as PIO2's: netCDF-4 fills, PnetCDF does not (PIOc_createfile: never). */
int PIOc_create(int iosysid, const char *path, int cmode, int *ncidp)
{
    int iotype = (cmode & NC_NETCDF4) ? PIO_IOTYPE_NETCDF4P : PIO_IOTYPE_PNETCDF;
    int code = PIOc_createfile(iosysid, ncidp, &iotype, path, cmode);
    return code || iotype == PIO_IOTYPE_PNETCDF ? code : PIOc_set_fill(*ncidp, NC_FILL, NULL);
}

/* Not in pio.h: PIO2 declares it in its private header, and its own examples call it. climio opens any netCDF
 * file whatever the iotype, so a retry is never needed; use_ext_ncid (a Fortran layer's own ncid) is refused. */
int PIOc_openfile_retry(int iosysid, int *ncidp, int *iotype, const char *filename, int mode, int retry,
                        int use_ext_ncid)
{
    if (use_ext_ncid) {
        fprintf(stderr, "climio: %s: PIOc_openfile_retry with use_ext_ncid: climio gives the ncid itself (pass 0)\n",
                filename);
        return PIO_EINVAL;
    }
    CALL(pio_openfile, iosysid, ncidp, iotype, filename, mode, retry);
}

int PIOc_openfile(int iosysid, int *ncidp, int *iotype, const char *fname, int mode)
{
    return PIOc_openfile_retry(iosysid, ncidp, iotype, fname, mode, 1, 0);
}

int PIOc_openfile2(int iosysid, int *ncidp, int *iotype, const char *fname, int mode)
{
    return PIOc_openfile_retry(iosysid, ncidp, iotype, fname, mode, 0, 0);
}

int PIOc_open(int iosysid, const char *path, int mode, int *ncidp)
{
    int iotype = PIO_IOTYPE_PNETCDF;
    return PIOc_openfile_retry(iosysid, ncidp, &iotype, path, mode, 1, 0);
}

int PIOc_closefile(int ncid)
{
    CALL(pio_closefile, ncid);
}

int PIOc_sync(int ncid)
{
    CALL(pio_sync, ncid);
}

int PIOc_enddef(int ncid)
{
    CALL(pio_enddef, ncid);
}

int PIOc_redef(int ncid)
{
    CALL(pio_redef, ncid);
}

int PIOc_set_fill(int ncid, int fillmode, int *old_modep)
{
    CALL(pio_set_fill, ncid, fillmode, old_modep);
}

int PIOc_deletefile(int iosysid, const char *filename)
{
    CALL(pio_deletefile, iosysid, filename);
}

int PIOc_File_is_Open(int ncid)
{
    int open = 0;
    if (bound())
        HELD(open, answers.pio_file_is_open(ncid));
    return open;
}

/* ------------------------------------------------------------------------------------ inquiry */

int PIOc_inq(int ncid, int *ndimsp, int *nvarsp, int *ngattsp, int *unlimdimidp)
{
    CALL(pio_inq, ncid, ndimsp, nvarsp, ngattsp, unlimdimidp, NULL);
}

int PIOc_inq_format(int ncid, int *formatp)
{
    CALL(pio_inq, ncid, NULL, NULL, NULL, NULL, formatp);
}

int PIOc_inq_ndims(int ncid, int *ndimsp)
{
    return PIOc_inq(ncid, ndimsp, NULL, NULL, NULL);
}

int PIOc_inq_nvars(int ncid, int *nvarsp)
{
    return PIOc_inq(ncid, NULL, nvarsp, NULL, NULL);
}

int PIOc_inq_natts(int ncid, int *ngattsp)
{
    return PIOc_inq(ncid, NULL, NULL, ngattsp, NULL);
}

int PIOc_inq_unlimdim(int ncid, int *unlimdimidp)
{
    return PIOc_inq(ncid, NULL, NULL, NULL, unlimdimidp);
}

int PIOc_inq_unlimdims(int ncid, int *nunlimdimsp, int *unlimdimidsp)
{
    int unlimited = -1, code = PIOc_inq(ncid, NULL, NULL, NULL, &unlimited);
    if (code == PIO_NOERR) {
        if (nunlimdimsp != NULL)
            *nunlimdimsp = unlimited >= 0;
        if (unlimdimidsp != NULL && unlimited >= 0)
            *unlimdimidsp = unlimited;
    }
    return code;
}

int PIOc_inq_type(int ncid, nc_type xtype, char *name, PIO_Offset *sizep)
{
    static const char *const names[] = {"", "byte", "char", "short", "int", "float", "double", "ubyte",
                                        "ushort", "uint", "int64", "uint64", "string"};
    static const int sizes[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8, (int)sizeof(char *)};
    (void)ncid;
    if (xtype < NC_BYTE || xtype > NC_STRING)
        return PIO_EBADTYPE;
    if (name != NULL)
        strcpy(name, names[xtype]);
    if (sizep != NULL)
        *sizep = sizes[xtype];
    return PIO_NOERR;
}

int PIOc_inq_dim(int ncid, int dimid, char *name, PIO_Offset *lenp)
{
    CALL(pio_inq_dim, ncid, dimid, name, lenp);
}

int PIOc_inq_dimname(int ncid, int dimid, char *name)
{
    return PIOc_inq_dim(ncid, dimid, name, NULL);
}

int PIOc_inq_dimlen(int ncid, int dimid, PIO_Offset *lenp)
{
    return PIOc_inq_dim(ncid, dimid, NULL, lenp);
}

int PIOc_inq_dimid(int ncid, const char *name, int *idp)
{
    CALL(pio_inq_dimid, ncid, name, idp);
}

int PIOc_inq_varid(int ncid, const char *name, int *varidp)
{
    CALL(pio_inq_varid, ncid, name, varidp);
}

int PIOc_inq_var(int ncid, int varid, char *name, nc_type *xtypep, int *ndimsp, int *dimidsp, int *nattsp)
{
    CALL(pio_inq_var, ncid, varid, name, xtypep, ndimsp, dimidsp, nattsp);
}

int PIOc_inq_varname(int ncid, int varid, char *name)
{
    return PIOc_inq_var(ncid, varid, name, NULL, NULL, NULL, NULL);
}

int PIOc_inq_vartype(int ncid, int varid, nc_type *xtypep)
{
    return PIOc_inq_var(ncid, varid, NULL, xtypep, NULL, NULL, NULL);
}

int PIOc_inq_varndims(int ncid, int varid, int *ndimsp)
{
    return PIOc_inq_var(ncid, varid, NULL, NULL, ndimsp, NULL, NULL);
}

int PIOc_inq_vardimid(int ncid, int varid, int *dimidsp)
{
    return PIOc_inq_var(ncid, varid, NULL, NULL, NULL, dimidsp, NULL);
}

int PIOc_inq_varnatts(int ncid, int varid, int *nattsp)
{
    return PIOc_inq_var(ncid, varid, NULL, NULL, NULL, NULL, nattsp);
}

int PIOc_inq_var_fill(int ncid, int varid, int *no_fill, void *fill_valuep)
{
    CALL(pio_inq_var_fill, ncid, varid, no_fill, fill_valuep);
}

int PIOc_inq_var_deflate(int ncid, int varid, int *shufflep, int *deflatep, int *deflate_levelp)
{
    CALL(pio_inq_var_deflate, ncid, varid, shufflep, deflatep, deflate_levelp);
}

int PIOc_inq_var_chunking(int ncid, int varid, int *storagep, PIO_Offset *chunksizesp)
{
    CALL(pio_inq_var_chunking, ncid, varid, storagep, chunksizesp);
}

int PIOc_inq_att(int ncid, int varid, const char *name, nc_type *xtypep, PIO_Offset *lenp)
{
    CALL(pio_inq_att, ncid, varid, name, xtypep, lenp, NULL);
}

int PIOc_inq_attid(int ncid, int varid, const char *name, int *idp)
{
    CALL(pio_inq_att, ncid, varid, name, NULL, NULL, idp);
}

int PIOc_inq_attlen(int ncid, int varid, const char *name, PIO_Offset *lenp)
{
    return PIOc_inq_att(ncid, varid, name, NULL, lenp);
}

int PIOc_inq_atttype(int ncid, int varid, const char *name, nc_type *xtypep)
{
    return PIOc_inq_att(ncid, varid, name, xtypep, NULL);
}

int PIOc_inq_attname(int ncid, int varid, int attnum, char *name)
{
    CALL(pio_inq_attname, ncid, varid, attnum, name);
}

/* ------------------------------------------------------------------------------------ definitions */

/* what climiopy_pio_rename renames: a dimension, a variable, an attribute, or (a NULL name) deletes */
enum { RENAME_DIM, RENAME_VAR, RENAME_ATT };

int PIOc_rename_dim(int ncid, int dimid, const char *name)
{
    CALL(pio_rename, ncid, RENAME_DIM, dimid, name, name);
}

int PIOc_rename_var(int ncid, int varid, const char *name)
{
    CALL(pio_rename, ncid, RENAME_VAR, varid, name, name);
}

int PIOc_rename_att(int ncid, int varid, const char *name, const char *newname)
{
    CALL(pio_rename, ncid, RENAME_ATT, varid, name, newname);
}

int PIOc_del_att(int ncid, int varid, const char *name)
{
    CALL(pio_rename, ncid, RENAME_ATT, varid, name, NULL);
}

int PIOc_def_dim(int ncid, const char *name, PIO_Offset len, int *idp)
{
    CALL(pio_def_dim, ncid, name, len, idp);
}

int PIOc_def_var(int ncid, const char *name, nc_type xtype, int ndims, const int *dimidsp, int *varidp)
{
    CALL(pio_def_var, ncid, name, xtype, ndims, dimidsp, varidp);
}

int PIOc_def_var_fill(int ncid, int varid, int no_fill, const void *fill_value)
{
    CALL(pio_def_var_fill, ncid, varid, no_fill, fill_value);
}

int PIOc_def_var_deflate(int ncid, int varid, int shuffle, int deflate, int deflate_level)
{
    CALL(pio_def_var_deflate, ncid, varid, shuffle, deflate, deflate_level);
}

int PIOc_def_var_chunking(int ncid, int varid, int storage, const PIO_Offset *chunksizesp)
{
    CALL(pio_def_var_chunking, ncid, varid, storage, chunksizesp);
}

int PIOc_def_var_quantize(int ncid, int varid, int quantize_mode, int nsd)
{
    CALL(pio_def_var_quantize, ncid, varid, quantize_mode, nsd);
}

int PIOc_put_att(int ncid, int varid, const char *name, nc_type xtype, PIO_Offset len, const void *op)
{
    CALL(pio_put_att, ncid, varid, name, xtype, len, 0, op);
}

int PIOc_put_att_text(int ncid, int varid, const char *name, PIO_Offset len, const char *op)
{
    CALL(pio_put_att, ncid, varid, name, NC_CHAR, len, NC_CHAR, op);
}

int PIOc_get_att(int ncid, int varid, const char *name, void *ip)
{
    CALL(pio_get_att, ncid, varid, name, 0, ip);
}

#define DEFINE_TYPED_ATT(t, ctype, nctype)                                                                     \
    int PIOc_put_att_##t(int ncid, int varid, const char *name, nc_type xtype, PIO_Offset len, const ctype *op) \
    {                                                                                                          \
        CALL(pio_put_att, ncid, varid, name, xtype, len, nctype, op);                                          \
    }
PIO_MEMORY_TYPES(DEFINE_TYPED_ATT)

/* ------------------------------------------------------------------------------------ undistributed data */

static int vars(int ncid, int varid, int write, const PIO_Offset *start, const PIO_Offset *count,
                const PIO_Offset *stride, int memtype, const void *buffer)
{
    CALL(pio_vars, ncid, varid, write, start, count, stride, memtype, (void *)buffer);
}

int PIOc_put_var(int ncid, int varid, const void *buf)
{
    return vars(ncid, varid, 1, NULL, NULL, NULL, 0, buf);
}

int PIOc_get_var(int ncid, int varid, void *buf)
{
    return vars(ncid, varid, 0, NULL, NULL, NULL, 0, buf);
}

int PIOc_put_var1(int ncid, int varid, const PIO_Offset *index, const void *buf)
{
    return vars(ncid, varid, 1, index, NULL, NULL, 0, buf);
}

int PIOc_get_var1(int ncid, int varid, const PIO_Offset *index, void *buf)
{
    return vars(ncid, varid, 0, index, NULL, NULL, 0, buf);
}

int PIOc_put_vara(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const void *buf)
{
    return vars(ncid, varid, 1, start, count, NULL, 0, buf);
}

int PIOc_get_vara(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, void *buf)
{
    return vars(ncid, varid, 0, start, count, NULL, 0, buf);
}

int PIOc_put_vars(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const PIO_Offset *stride,
                  const void *buf)
{
    return vars(ncid, varid, 1, start, count, stride, 0, buf);
}

int PIOc_get_vars(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const PIO_Offset *stride,
                  void *buf)
{
    return vars(ncid, varid, 0, start, count, stride, 0, buf);
}

#define DEFINE_TYPED_DATA(t, ctype, nctype)                                                                    \
    int PIOc_put_var_##t(int ncid, int varid, const ctype *op)                                                 \
    {                                                                                                          \
        return vars(ncid, varid, 1, NULL, NULL, NULL, nctype, op);                                             \
    }                                                                                                          \
    int PIOc_get_var_##t(int ncid, int varid, ctype *buf)                                                      \
    {                                                                                                          \
        return vars(ncid, varid, 0, NULL, NULL, NULL, nctype, buf);                                            \
    }                                                                                                          \
    int PIOc_put_var1_##t(int ncid, int varid, const PIO_Offset *index, const ctype *op)                       \
    {                                                                                                          \
        return vars(ncid, varid, 1, index, NULL, NULL, nctype, op);                                            \
    }                                                                                                          \
    int PIOc_get_var1_##t(int ncid, int varid, const PIO_Offset *index, ctype *buf)                            \
    {                                                                                                          \
        return vars(ncid, varid, 0, index, NULL, NULL, nctype, buf);                                           \
    }                                                                                                          \
    int PIOc_put_vara_##t(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count,               \
                          const ctype *op)                                                                     \
    {                                                                                                          \
        return vars(ncid, varid, 1, start, count, NULL, nctype, op);                                           \
    }                                                                                                          \
    int PIOc_get_vara_##t(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, ctype *buf)   \
    {                                                                                                          \
        return vars(ncid, varid, 0, start, count, NULL, nctype, buf);                                          \
    }                                                                                                          \
    int PIOc_put_vars_##t(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count,               \
                          const PIO_Offset *stride, const ctype *op)                                           \
    {                                                                                                          \
        return vars(ncid, varid, 1, start, count, stride, nctype, op);                                         \
    }                                                                                                          \
    int PIOc_get_vars_##t(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count,               \
                          const PIO_Offset *stride, ctype *buf)                                                \
    {                                                                                                          \
        return vars(ncid, varid, 0, start, count, stride, nctype, buf);                                        \
    }                                                                                                          \
    int PIOc_get_att_##t(int ncid, int varid, const char *name, ctype *ip)                                     \
    {                                                                                                          \
        CALL(pio_get_att, ncid, varid, name, nctype, ip);                                                      \
    }
PIO_DATA_TYPES(DEFINE_TYPED_DATA)

/* ------------------------------------------------------------------------------------ distributed data */

int PIOc_setframe(int ncid, int varid, int frame)
{
    CALL(pio_setframe, ncid, varid, frame);
}

int PIOc_advanceframe(int ncid, int varid)
{
    CALL(pio_advanceframe, ncid, varid);
}

int PIOc_write_darray(int ncid, int varid, int ioid, PIO_Offset arraylen, void *array, void *fillvalue)
{
    CALL(pio_write_darray, ncid, 1, &varid, ioid, arraylen, array, NULL, fillvalue, 0, 0);
}

int PIOc_write_darray_multi(int ncid, const int *varids, int ioid, int nvars, PIO_Offset arraylen, void *array,
                            const int *frame, void **fillvalue, bool flushtodisk)
{
    (void)flushtodisk; /* every write is on its way to disk when the call returns */
    /* fillvalue: PIO2 declares void ** but reads nvars values one after the other, as this does */
    CALL(pio_write_darray, ncid, nvars, varids, ioid, arraylen, array, frame, fillvalue, 0, 0);
}

int PIOc_read_darray(int ncid, int varid, int ioid, PIO_Offset arraylen, void *array)
{
    CALL(pio_read_darray, ncid, varid, ioid, arraylen, array, -1, 0, 0);
}

/* The vard family (PnetCDF's put_vard in PIO2): record recnum of a variable through a decomposition, in the
 * variable's type (untyped) or the call's. */
static int vard(int ncid, int varid, int decompid, PIO_Offset recnum, int memtype, const void *buf, int write)
{
    int frame = (int)recnum, code = PIO_EIO;
    if (!bound())
        return PIO_EIO;
    HELD(code, write ? answers.pio_write_darray(ncid, 1, &varid, decompid, -1, buf, &frame, NULL, memtype,
                                                memtype == 0)
                     : answers.pio_read_darray(ncid, varid, decompid, -1, (void *)buf, recnum, memtype,
                                               memtype == 0));
    return code;
}

int PIOc_put_vard(int ncid, int varid, int decompid, const PIO_Offset recnum, const void *buf)
{
    return vard(ncid, varid, decompid, recnum, 0, buf, 1);
}

int PIOc_get_vard(int ncid, int varid, int decompid, const PIO_Offset recnum, void *buf)
{
    return vard(ncid, varid, decompid, recnum, 0, buf, 0);
}

#define DEFINE_TYPED_VARD(t, ctype, nctype)                                                                    \
    int PIOc_put_vard_##t(int ncid, int varid, int decompid, const PIO_Offset recnum, const ctype *op)         \
    {                                                                                                          \
        return vard(ncid, varid, decompid, recnum, nctype, op, 1);                                            \
    }                                                                                                          \
    int PIOc_get_vard_##t(int ncid, int varid, int decompid, const PIO_Offset recnum, ctype *buf)             \
    {                                                                                                          \
        return vard(ncid, varid, decompid, recnum, nctype, buf, 0);                                           \
    }
PIO_DATA_TYPES(DEFINE_TYPED_VARD)

/* Not in pio.h: PIO2 declares them in its private header, and its tests call them; memtype NC_NAT (0) is the
 * variable's own type. */
int PIOc_put_vars_tc(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const PIO_Offset *stride,
                     nc_type xtype, const void *buf)
{
    return vars(ncid, varid, 1, start, count, stride, xtype, buf);
}

int PIOc_get_vars_tc(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const PIO_Offset *stride,
                     nc_type xtype, void *buf)
{
    return vars(ncid, varid, 0, start, count, stride, xtype, buf);
}
