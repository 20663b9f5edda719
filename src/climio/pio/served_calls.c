/* PIO's calls through climio's I/O servers (docs/serve-protocol.md, "PIO's calls"), in C and MPI alone: a
 * model rank that talks to servers loads no Python. Each of pio_python.h's calls becomes one message that the
 * servers answer by running the same call of climio.pio.calls; this side keeps only what sizes its buffers (a
 * decomposition's type and map, a variable's type and rank) and its I/O systems' error handlers, and acts on
 * them as attached mode does: the first task says a failed call's line, PIO_INTERNAL_ERROR ends the job. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "pio.h"
#include "pio_python.h"
#include "served_calls.h"

typedef struct {
    int ioid, pio_type;
    long long maplen;
    unsigned char *hole; /* per local element: no grid point (reads keep the caller's value); NULL: none */
} decomposition;

typedef struct {
    int xtype, ndims;     /* once asked (xtype 0: not yet) */
    int fill_known, fill_given; /* given by PIOc_def_var_fill: write_darray's fill values must be it */
    char fill[8];         /* its fill value, in its type */
} variable;

typedef struct {
    int ncid, iosysid;
    int nvars;
    variable *vars; /* what this side knows of the file's variables, by varid */
} open_file;

static int connection;    /* the servers' connection (served_init's id), made at the first init */
static int ends_with_systems; /* the program's own I/O tasks serve: they come back from their init when the
                               * last system is freed (climio serve ranks are kept until MPI_Finalize, so that a
                               * program may make a system again) */
static MPI_Comm model;    /* the model's communicator it was made over */
static int rank;
static int default_method = PIO_INTERNAL_ERROR;
static struct {
    int id, method;
} systems[64];
static int nsystems;
static decomposition *decomps;
static int ndecomps;
static open_file *files;
static int nfiles;

static size_t type_size(int xtype)
{
    static const size_t sizes[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
    return xtype > 0 && xtype < (int)(sizeof sizes / sizeof *sizes) ? sizes[xtype] : 0;
}

static int method_of(int iosysid)
{
    for (int i = 0; i < nsystems; i++)
        if (systems[i].id == iosysid)
            return systems[i].method;
    return default_method;
}

static open_file *file_of(int ncid)
{
    for (int i = 0; i < nfiles; i++)
        if (files[i].ncid == ncid)
            return &files[i];
    return NULL;
}

static decomposition *decomp_of(int ioid)
{
    for (int i = 0; i < ndecomps; i++)
        if (decomps[i].ioid == ioid)
            return &decomps[i];
    return NULL;
}

/* A failed call, by its handler's rule: the first task says its line; PIO_INTERNAL_ERROR ends the job with the
 * exit status the error calls for (2 bad input, 1 a fault), as attached mode does. */
static int handled(int method, int code, int status)
{
    char line[2048];
    climio_errmsg(line, (int)sizeof line);
    if (rank == 0) {
        fprintf(stderr, "climio: %s\n", line);
        fflush(stderr);
    }
    if (method == PIO_INTERNAL_ERROR) {
        served_said(code);
        if (rank != 0) { /* the first task's abort ends this one: its line comes first */
            struct timespec t = {30, 0};
            nanosleep(&t, NULL);
        }
        MPI_Abort(MPI_COMM_WORLD, status);
    }
    return code;
}

/* An error of this side (a lost connection, memory): climio's code as PIO's, and its exit status. */
static int local_error(int method, int code)
{
    static const int pio[] = {0, NC_EBADID, NC_EINVAL, NC_EINDEFINE, NC_EIO, NC_EINTERNAL, NC_ENOMEM};
    int fault = code == CLIMIO_EIO || code == CLIMIO_EINTERNAL || code == CLIMIO_ENOMEM;
    return handled(method, code < 0 && code >= CLIMIO_ENOMEM ? pio[-code] : code, fault ? 1 : 2);
}

/* One call of `iosysid`'s (whose handler applies) acting on `ident`; answer NULL: sent without waiting. */
static int ask(int iosysid, const char *call, long long ident, const long long *ints, int nints,
               const char *const *strings, int nstrings, int memtype, const void *data, long long bytes,
               served_answer *answer)
{
    if (!connection)
        return local_error(method_of(iosysid), climio_fail(CLIMIO_EBADID, "PIO's %s: no I/O system: call "
                                                           "PIOc_Init_Intracomm first", call));
    int code = served_pio_call(connection, call, ident, ints, nints, strings, nstrings, memtype, data, bytes,
                               answer);
    if (code == CLIMIO_NOERR)
        return PIO_NOERR;
    if (answer != NULL && answer->status)
        return handled(method_of(iosysid), code, answer->status);
    return local_error(method_of(iosysid), code);
}

/* The system whose handler applies to a call on file ncid: its own, or for an id of no open file, the newest
 * system's (the one a bad id was most likely meant for). */
static int system_of_file(int ncid)
{
    open_file *f = file_of(ncid);
    return f ? f->iosysid : nsystems ? systems[nsystems - 1].id : PIO_DEFAULT;
}

/* ask() on a file. */
static int ask_file(const char *call, int ncid, const long long *ints, int nints, const char *const *strings,
                    int nstrings, int memtype, const void *data, long long bytes, served_answer *answer)
{
    return ask(system_of_file(ncid), call, ncid, ints, nints, strings, nstrings, memtype, data, bytes, answer);
}

static void put_int(int *p, long long v)
{
    if (p)
        *p = (int)v;
}

static void put_text(char *p, const served_answer *a, int k)
{
    const char *s = a->strings;
    for (int i = 0; i < k && s < a->strings + a->nstrings; i++)
        s += strlen(s) + 1;
    if (p)
        strcpy(p, s < a->strings + a->nstrings ? s : "");
}

static void *grown(void *array, int count, size_t size)
{
    void *p = realloc(array, (size_t)(count + 1) * size);
    if (p == NULL) {
        fprintf(stderr, "climio: out of memory for PIO's tables\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* What this side keeps of variable varid of file f (NULL for a bad id), made room for. */
static variable *kept_variable(open_file *f, int varid)
{
    if (f == NULL || varid < 0)
        return NULL;
    if (varid >= f->nvars) {
        f->vars = grown(f->vars, varid, sizeof(variable));
        memset(f->vars + f->nvars, 0, (size_t)(varid + 1 - f->nvars) * sizeof(variable));
        f->nvars = varid + 1;
    }
    return &f->vars[varid];
}

/* A variable's type and rank, asked once per file (they never change). */
static int var_info(int ncid, int varid, int *xtype, int *ndims)
{
    variable asked = {0}, *v = kept_variable(file_of(ncid), varid);
    if (v == NULL) /* a bad id, or a file this side does not know: asked, not kept (the servers refuse it) */
        v = &asked;
    if (!v->xtype) {
        served_answer a;
        long long ints[1] = {varid};
        int code = ask_file("inq_var", ncid, ints, 1, NULL, 0, 0, NULL, 0, &a);
        if (code)
            return code;
        v->xtype = (int)a.values[0];
        v->ndims = (int)a.values[1];
        served_answer_free(&a);
    }
    *xtype = v->xtype;
    *ndims = v->ndims;
    return PIO_NOERR;
}

/* PIO2's check of write_darray's fill values, here as there before anything is sent: a fill value given for a
 * variable given one by PIOc_def_var_fill must be that one, byte for byte (where the array's type has the
 * variable's size; the servers check the others). */
static int check_fills(int ncid, int nvars, const int *varids, const void *fills, size_t size)
{
    for (int k = 0; fills && k < nvars; k++) {
        variable *v = kept_variable(file_of(ncid), varids[k]);
        if (v == NULL)
            return PIO_NOERR; /* a bad id: the servers say so */
        if (!v->fill_known) {
            served_answer a;
            long long ints[1] = {varids[k]};
            int code = ask_file("inq_var_fill", ncid, ints, 1, NULL, 0, 0, NULL, 0, &a);
            if (code)
                return code;
            v->fill_given = a.nvalues > 1 && a.values[1];
            memcpy(v->fill, a.data, a.ndata < 8 ? (size_t)a.ndata : 8);
            v->fill_known = 1;
            served_answer_free(&a);
        }
        int own = 0, ndims = 0, code = var_info(ncid, varids[k], &own, &ndims);
        if (code)
            return code;
        if (v->fill_given && type_size(own) == size && memcmp((const char *)fills + k * size, v->fill, size) != 0)
            return local_error(method_of(system_of_file(ncid)),
                               climio_fail(CLIMIO_EINVAL, "PIOc_write_darray: variable %d: the fill value given is "
                                           "not the variable's: pass NULL or its fill value", varids[k]));
    }
    return PIO_NOERR;
}

/* ------------------------------------------------------------------------------------ I/O systems */

int served_pio_connect(MPI_Comm comm, MPI_Comm peer, int first, int count, int method, int own_tasks)
{
    if (connection)
        return local_error(method, climio_fail(CLIMIO_EINVAL, "PIO's init: this task is already connected to I/O "
                                               "servers: one async init per launch"));
    MPI_Comm_rank(comm, &rank);
    int code = served_init_peer(comm, peer, first, count, 0, &connection);
    if (code) {
        connection = 0;
        return local_error(method, code);
    }
    model = comm;
    ends_with_systems = own_tasks;
    return PIO_NOERR;
}

int served_pio_init(int fcomm, int num_iotasks, int stride, int base, int rearr, int server_first,
                    int server_count, int *iosysid)
{
    MPI_Comm comm = MPI_Comm_f2c(fcomm);
    *iosysid = -1;
    if (connection && comm != model) {
        int same;
        MPI_Comm_compare(comm, model, &same);
        if (same != MPI_IDENT && same != MPI_CONGRUENT)
            return local_error(default_method, climio_fail(CLIMIO_EINVAL, "PIOc_Init_Intracomm: the I/O servers "
                               "serve the communicator of the first PIOc_Init_Intracomm: pass that one again"));
    }
    if (!connection && !served_holds_none(comm, server_first, server_count)) {
        MPI_Comm_rank(comm, &rank);
        int code = climio_fail(CLIMIO_EINVAL, "PIOc_Init_Intracomm: the communicator holds this launch's climio serve "
                               "ranks (world ranks %d-%d), which are PIO's I/O tasks here: pass the model's own ranks "
                               "(MPI_Comm_create_group of world ranks 0-%d), or start the I/O tasks with "
                               "PIOc_init_async", server_first, server_first + server_count - 1, server_first - 1);
        served_refuse(comm, MPI_COMM_WORLD, server_first, code); /* the servers end at once, without a line */
        return local_error(default_method, code);
    }
    if (!connection) {
        int code = served_pio_connect(comm, MPI_COMM_WORLD, server_first, server_count, default_method, 0);
        if (code)
            return code;
    }
    served_answer a;
    long long ints[4] = {num_iotasks, stride, base, rearr};
    int code = ask(PIO_DEFAULT, "init", 0, ints, 4, NULL, 0, 0, NULL, 0, &a);
    if (code)
        return code;
    *iosysid = (int)a.values[0];
    served_answer_free(&a);
    if (nsystems == (int)(sizeof systems / sizeof *systems))
        return local_error(default_method, climio_fail(CLIMIO_EINVAL, "PIOc_Init_Intracomm: more than %d I/O systems "
                                                       "at once: free one first", nsystems));
    systems[nsystems].id = *iosysid;
    systems[nsystems++].method = default_method;
    return PIO_NOERR;
}

int served_pio_free_iosystem(int iosysid)
{
    served_answer a;
    int code = ask(iosysid, "free_iosystem", iosysid, NULL, 0, NULL, 0, 0, NULL, 0, &a);
    if (code)
        return code;
    served_answer_free(&a);
    for (int i = 0; i < nsystems; i++)
        if (systems[i].id == iosysid)
            systems[i] = systems[--nsystems];
    if (nsystems == 0 && ends_with_systems) { /* the last system: PIO's async I/O tasks end */
        code = served_finalize(connection);
        connection = 0;
        if (code)
            return local_error(default_method, code);
    }
    return PIO_NOERR;
}

int served_pio_error_handling(int iosysid, int method, int *old_method)
{
    if (iosysid == PIO_DEFAULT) {
        put_int(old_method, default_method);
        default_method = method;
        return PIO_NOERR;
    }
    for (int i = 0; i < nsystems; i++)
        if (systems[i].id == iosysid) {
            put_int(old_method, systems[i].method);
            systems[i].method = method;
            return PIO_NOERR;
        }
    return local_error(default_method, climio_fail(CLIMIO_EBADID, "no I/O system with id %d", iosysid));
}

/* The values a call answers, into up to n ints. */
static int values_of(int iosysid, const char *call, long long ident, const long long *ints, int nints,
                     const char *const *strings, int nstrings, int *out[], int n)
{
    served_answer a;
    int code = ask(iosysid, call, ident, ints, nints, strings, nstrings, 0, NULL, 0, &a);
    if (code)
        return code;
    for (int k = 0; k < n && k < a.nvalues; k++)
        put_int(out[k], a.values[k]);
    served_answer_free(&a);
    return PIO_NOERR;
}

/* values_of() for a call on a file. */
static int file_values(int ncid, const char *call, const long long *ints, int nints, const char *const *strings,
                       int nstrings, int *out[], int n)
{
    return values_of(system_of_file(ncid), call, ncid, ints, nints, strings, nstrings, out, n);
}

int served_pio_numiotasks(int iosysid, int *numiotasks)
{
    return values_of(iosysid, "numiotasks", iosysid, NULL, 0, NULL, 0, (int *[]){numiotasks}, 1);
}

int served_pio_iotask(int iosysid, int *iorank, int *active)
{
    for (int i = 0; i < nsystems; i++)
        if (systems[i].id == iosysid) { /* a model task is never an I/O task: the servers are */
            put_int(iorank, -1);
            put_int(active, 1);
            return PIO_NOERR;
        }
    return PIO_EBADID;
}

int served_pio_deletefile(int iosysid, const char *path)
{
    return values_of(iosysid, "deletefile", iosysid, NULL, 0, (const char *[]){path}, 1, NULL, 0);
}

int served_pio_set_hint(int iosysid, const char *hint, const char *value)
{
    return values_of(iosysid, "set_hint", iosysid, NULL, 0, (const char *[]){hint, value}, 2, NULL, 0);
}

int served_pio_iotype_available(int iotype)
{
    if (!connection) /* climio's four iotypes (climio.pio.calls.storage_of), all built in */
        return iotype >= PIO_IOTYPE_PNETCDF && iotype <= PIO_IOTYPE_NETCDF4P;
    int available = 0;
    long long ints[1] = {iotype};
    return values_of(PIO_DEFAULT, "iotype_available", 0, ints, 1, NULL, 0, (int *[]){&available}, 1) ? 0
                                                                                                      : available;
}

/* ------------------------------------------------------------------------------------ decompositions */

/* Keep a decomposition's type and map (its holes) for the buffers of its calls. */
static void keep_decomp(int ioid, int pio_type, long long maplen, const long long *offsets)
{
    decomps = grown(decomps, ndecomps, sizeof *decomps);
    decomposition *d = &decomps[ndecomps++];
    *d = (decomposition){ioid, pio_type, maplen, NULL};
    for (long long i = 0; offsets && i < maplen; i++)
        if (offsets[i] < 0) {
            if (d->hole == NULL && (d->hole = calloc((size_t)maplen, 1)) == NULL) {
                fprintf(stderr, "climio: out of memory for a decomposition's holes\n");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            d->hole[i] = 1;
        }
}

int served_pio_init_decomp(int iosysid, int pio_type, int ndims, const int *gdimlen, long long maplen,
                           const long long *compmap, int base, int rearr, int has_io_blocks, int *ioid)
{
    long long ints[5 + PIO_MAX_VAR_DIMS] = {pio_type, ndims, base, rearr, has_io_blocks};
    for (int d = 0; d < ndims && d < PIO_MAX_VAR_DIMS; d++)
        ints[5 + d] = gdimlen[d];
    served_answer a;
    int n = 5 + (ndims > 0 && ndims <= PIO_MAX_VAR_DIMS ? ndims : 0);
    int code = ask(iosysid, "init_decomp", iosysid, ints, n, NULL, 0, 0, compmap, maplen * 8, &a);
    if (code)
        return code;
    *ioid = (int)a.values[0];
    served_answer_free(&a);
    long long *offsets = malloc((size_t)(maplen > 0 ? maplen : 1) * sizeof(long long));
    for (long long i = 0; offsets && i < maplen; i++)
        offsets[i] = compmap[i] - base;
    keep_decomp(*ioid, pio_type, maplen, offsets);
    free(offsets);
    return PIO_NOERR;
}

int served_pio_init_decomp_blocks(int iosysid, int pio_type, int ndims, const int *gdimlen, const long long *start,
                                  const long long *count, int *ioid)
{
    if (ndims < 0 || ndims > PIO_MAX_VAR_DIMS)
        return local_error(method_of(iosysid), climio_fail(CLIMIO_EINVAL, "PIOc_InitDecomp_bc: %d dimensions: "
                           "give 0 to %d", ndims, PIO_MAX_VAR_DIMS));
    long long ints[2 + 3 * PIO_MAX_VAR_DIMS] = {pio_type, ndims};
    for (int d = 0; d < ndims; d++) {
        ints[2 + d] = gdimlen[d];
        ints[2 + ndims + d] = start[d];
        ints[2 + 2 * ndims + d] = count[d];
    }
    served_answer a;
    int code = ask(iosysid, "init_decomp_blocks", iosysid, ints, 2 + 3 * ndims, NULL, 0, 0, NULL, 0, &a);
    if (code)
        return code;
    *ioid = (int)a.values[0];
    keep_decomp(*ioid, pio_type, a.values[1], NULL);
    served_answer_free(&a);
    return PIO_NOERR;
}

int served_pio_freedecomp(int iosysid, int ioid)
{
    long long ints[1] = {ioid};
    int code = values_of(iosysid, "freedecomp", iosysid, ints, 1, NULL, 0, NULL, 0);
    decomposition *d = code ? NULL : decomp_of(ioid);
    if (d) {
        free(d->hole);
        *d = decomps[--ndecomps];
    }
    return code;
}

int served_pio_local_size(int ioid, long long *size)
{
    decomposition *d = decomp_of(ioid);
    if (d == NULL)
        return PIO_EBADID;
    *size = d->maplen;
    return PIO_NOERR;
}

int served_pio_write_nc_decomp(int iosysid, const char *path, int cmode, int ioid, const char *title,
                               const char *history, int fortran_order)
{
    long long ints[3] = {cmode, ioid, fortran_order};
    return values_of(iosysid, "write_nc_decomp", iosysid, ints, 3, (const char *[]){path, title, history}, 3, NULL,
                     0);
}

int served_pio_read_nc_decomp(int iosysid, const char *path, int *ioid, int fcomm, int pio_type, char *title,
                              char *history, int *fortran_order)
{
    (void)fcomm; /* the servers read it for the system's tasks */
    long long ints[1] = {pio_type};
    served_answer a;
    int code = ask(iosysid, "read_nc_decomp", iosysid, ints, 1, (const char *[]){path}, 1, 0, NULL, 0, &a);
    if (code)
        return code;
    *ioid = (int)a.values[0];
    put_int(fortran_order, a.values[1]);
    put_text(title, &a, 0);
    put_text(history, &a, 1);
    keep_decomp(*ioid, pio_type, a.values[2], (const long long *)a.data);
    served_answer_free(&a);
    return PIO_NOERR;
}

/* ------------------------------------------------------------------------------------ files */

static void keep_file(int ncid, int iosysid)
{
    files = grown(files, nfiles, sizeof *files);
    files[nfiles++] = (open_file){ncid, iosysid, 0, NULL};
}

int served_pio_createfile(int iosysid, int *ncid, int iotype, const char *path, int mode)
{
    long long ints[2] = {iotype, mode};
    int code = values_of(iosysid, "createfile", iosysid, ints, 2, (const char *[]){path}, 1, (int *[]){ncid}, 1);
    if (!code)
        keep_file(*ncid, iosysid);
    return code;
}

int served_pio_openfile(int iosysid, int *ncid, int *iotype, const char *path, int mode, int retry)
{
    long long ints[3] = {iotype ? *iotype : -1, mode, retry};
    int code = values_of(iosysid, "openfile", iosysid, ints, 3, (const char *[]){path}, 1, (int *[]){ncid, iotype},
                         2);
    if (!code)
        keep_file(*ncid, iosysid);
    return code;
}

int served_pio_closefile(int ncid)
{
    int code = file_values(ncid, "closefile", NULL, 0, NULL, 0, NULL, 0);
    open_file *f = file_of(ncid);
    if (f) {
        free(f->vars);
        *f = files[--nfiles];
    }
    return code;
}

int served_pio_sync(int ncid)
{
    return file_values(ncid, "sync", NULL, 0, NULL, 0, NULL, 0);
}

int served_pio_enddef(int ncid)
{
    return file_values(ncid, "enddef", NULL, 0, NULL, 0, NULL, 0);
}

int served_pio_redef(int ncid)
{
    return file_values(ncid, "redef", NULL, 0, NULL, 0, NULL, 0);
}

int served_pio_set_fill(int ncid, int fillmode, int *old_mode)
{
    long long ints[1] = {fillmode};
    return file_values(ncid, "set_fill", ints, 1, NULL, 0, (int *[]){old_mode}, 1);
}

int served_pio_file_is_open(int ncid)
{
    return file_of(ncid) != NULL;
}

/* ------------------------------------------------------------------------------------ inquiry */

int served_pio_inq(int ncid, int *ndims, int *nvars, int *natts, int *unlimdim, int *format)
{
    return file_values(ncid, "inq", NULL, 0, NULL, 0, (int *[]){ndims, nvars, natts, unlimdim, format}, 5);
}

int served_pio_inq_dim(int ncid, int dimid, char *name, long long *length)
{
    long long ints[1] = {dimid};
    served_answer a;
    int code = ask_file("inq_dim", ncid, ints, 1, NULL, 0, 0, NULL, 0, &a);
    if (code)
        return code;
    if (length)
        *length = a.values[0];
    put_text(name, &a, 0);
    served_answer_free(&a);
    return PIO_NOERR;
}

int served_pio_inq_dimid(int ncid, const char *name, int *dimid)
{
    return file_values(ncid, "inq_dimid", NULL, 0, (const char *[]){name}, 1, (int *[]){dimid}, 1);
}

int served_pio_inq_var(int ncid, int varid, char *name, int *xtype, int *ndims, int *dimids, int *natts)
{
    long long ints[1] = {varid};
    served_answer a;
    int code = ask_file("inq_var", ncid, ints, 1, NULL, 0, 0, NULL, 0, &a);
    if (code)
        return code;
    put_int(xtype, a.values[0]);
    put_int(ndims, a.values[1]);
    put_int(natts, a.values[2]);
    for (int d = 0; dimids && d < a.values[1]; d++)
        dimids[d] = (int)a.values[3 + d];
    put_text(name, &a, 0);
    served_answer_free(&a);
    return PIO_NOERR;
}

int served_pio_inq_varid(int ncid, const char *name, int *varid)
{
    return file_values(ncid, "inq_varid", NULL, 0, (const char *[]){name}, 1, (int *[]){varid}, 1);
}

int served_pio_inq_var_fill(int ncid, int varid, int *no_fill, void *fill)
{
    long long ints[1] = {varid};
    served_answer a;
    int code = ask_file("inq_var_fill", ncid, ints, 1, NULL, 0, 0, NULL, 0, &a);
    if (code)
        return code;
    put_int(no_fill, a.values[0]);
    if (fill)
        memcpy(fill, a.data, (size_t)a.ndata);
    served_answer_free(&a);
    return PIO_NOERR;
}

int served_pio_inq_var_deflate(int ncid, int varid, int *shuffle, int *deflate, int *level)
{
    long long ints[1] = {varid};
    return file_values(ncid, "inq_var_deflate", ints, 1, NULL, 0, (int *[]){shuffle, deflate, level}, 3);
}

int served_pio_inq_var_chunking(int ncid, int varid, int *storage, long long *chunks)
{
    long long ints[1] = {varid};
    served_answer a;
    int code = ask_file("inq_var_chunking", ncid, ints, 1, NULL, 0, 0, NULL, 0, &a);
    if (code)
        return code;
    put_int(storage, a.values[0]);
    for (int d = 1; chunks && d < a.nvalues; d++)
        chunks[d - 1] = a.values[d];
    served_answer_free(&a);
    return PIO_NOERR;
}

int served_pio_inq_att(int ncid, int varid, const char *name, int *xtype, long long *length, int *attid)
{
    long long ints[1] = {varid};
    served_answer a;
    int code = ask_file("inq_att", ncid, ints, 1, (const char *[]){name}, 1, 0, NULL, 0, &a);
    if (code)
        return code;
    put_int(xtype, a.values[0]);
    if (length)
        *length = a.values[1];
    put_int(attid, a.values[2]);
    served_answer_free(&a);
    return PIO_NOERR;
}

int served_pio_inq_attname(int ncid, int varid, int attnum, char *name)
{
    long long ints[2] = {varid, attnum};
    served_answer a;
    int code = ask_file("inq_attname", ncid, ints, 2, NULL, 0, 0, NULL, 0, &a);
    if (code)
        return code;
    put_text(name, &a, 0);
    served_answer_free(&a);
    return PIO_NOERR;
}

/* ------------------------------------------------------------------------------------ definitions */

int served_pio_rename(int ncid, int what, int id, const char *name, const char *newname)
{
    long long ints[3] = {what, id, newname != NULL};
    return file_values(ncid, "rename", ints, 3, (const char *[]){name, newname ? newname : ""}, 2, NULL, 0);
}

int served_pio_def_dim(int ncid, const char *name, long long length, int *dimid)
{
    long long ints[1] = {length};
    return file_values(ncid, "def_dim", ints, 1, (const char *[]){name}, 1, (int *[]){dimid}, 1);
}

int served_pio_def_var(int ncid, const char *name, int xtype, int ndims, const int *dimids, int *varid)
{
    long long ints[2 + PIO_MAX_VAR_DIMS] = {xtype, ndims};
    int n = ndims > 0 && ndims <= PIO_MAX_VAR_DIMS && dimids ? ndims : 0;
    for (int d = 0; d < n; d++)
        ints[2 + d] = dimids[d];
    return file_values(ncid, "def_var", ints, 2 + n, (const char *[]){name}, 1, (int *[]){varid}, 1);
}

int served_pio_def_var_fill(int ncid, int varid, int no_fill, const void *fill)
{
    int xtype = 0, ndims = 0, code = fill ? var_info(ncid, varid, &xtype, &ndims) : PIO_NOERR;
    if (code)
        return code;
    long long ints[3] = {varid, no_fill, fill != NULL};
    served_answer a;
    code = ask_file("def_var_fill", ncid, ints, 3, NULL, 0, 0, fill, fill ? (long long)type_size(xtype) : 0, &a);
    if (!code)
        served_answer_free(&a);
    return code;
}

int served_pio_def_var_deflate(int ncid, int varid, int shuffle, int deflate, int level)
{
    long long ints[4] = {varid, shuffle, deflate, level};
    return file_values(ncid, "def_var_deflate", ints, 4, NULL, 0, NULL, 0);
}

int served_pio_def_var_chunking(int ncid, int varid, int storage, const long long *chunks)
{
    int xtype = 0, ndims = 0, code = chunks ? var_info(ncid, varid, &xtype, &ndims) : PIO_NOERR;
    if (code)
        return code;
    long long ints[3 + PIO_MAX_VAR_DIMS] = {varid, storage, chunks != NULL};
    for (int d = 0; chunks && d < ndims && d < PIO_MAX_VAR_DIMS; d++)
        ints[3 + d] = chunks[d];
    return file_values(ncid, "def_var_chunking", ints, 3 + (chunks ? ndims : 0), NULL, 0, NULL, 0);
}

int served_pio_def_var_quantize(int ncid, int varid, int quantize_mode, int nsd)
{
    long long ints[3] = {varid, quantize_mode, nsd};
    return file_values(ncid, "def_var_quantize", ints, 3, NULL, 0, NULL, 0);
}

int served_pio_put_att(int ncid, int varid, const char *name, int xtype, long long length, int memtype,
                       const void *values)
{
    long long ints[3] = {varid, xtype, length};
    long long bytes = length > 0 ? length * (long long)type_size(memtype ? memtype : xtype) : 0;
    served_answer a;
    int code = ask_file("put_att", ncid, ints, 3, (const char *[]){name}, 1, memtype, values, bytes, &a);
    if (!code)
        served_answer_free(&a);
    return code;
}

int served_pio_get_att(int ncid, int varid, const char *name, int memtype, void *values)
{
    long long ints[1] = {varid};
    served_answer a;
    int code = ask_file("get_att", ncid, ints, 1, (const char *[]){name}, 1, memtype, NULL, 0, &a);
    if (code)
        return code;
    if (values)
        memcpy(values, a.data, (size_t)a.ndata);
    served_answer_free(&a);
    return PIO_NOERR;
}

/* ------------------------------------------------------------------------------------ data */

/* The elements of a whole variable now (its records as many as written): asked, as they grow. */
static int whole_variable(int ncid, int varid, long long *elements)
{
    served_answer shape;
    long long ints[1] = {varid};
    int code = ask_file("inq_var", ncid, ints, 1, NULL, 0, 0, NULL, 0, &shape);
    if (code)
        return code;
    int ndims = (int)shape.values[1];
    *elements = 1;
    for (int d = 0; d < ndims; d++)
        *elements *= shape.values[3 + ndims + d];
    served_answer_free(&shape);
    return PIO_NOERR;
}

int served_pio_vars(int ncid, int varid, int write, const long long *start, const long long *count,
                    const long long *stride, int memtype, void *buffer)
{
    long long ints[6 + 3 * PIO_MAX_VAR_DIMS] = {varid, write, start != NULL, count != NULL, stride != NULL};
    int xtype = 0, ndims = 0, n = 5, code = var_info(ncid, varid, &xtype, &ndims);
    if (code)
        return code;
    long long elements = 1; /* what a write sends: a reads' values come back sized by the servers */
    if (write && start == NULL && count == NULL && (code = whole_variable(ncid, varid, &elements)))
        return code;
    for (int d = 0; count && d < ndims && d < PIO_MAX_VAR_DIMS; d++)
        elements *= count[d];
    const long long *given[3] = {start, count, stride};
    for (int k = 0; k < 3; k++)
        for (int d = 0; given[k] && d < ndims && d < PIO_MAX_VAR_DIMS; d++)
            ints[n++] = given[k][d];
    size_t size = type_size(memtype ? memtype : xtype);
    served_answer a;
    code = ask_file("vars", ncid, ints, n, NULL, 0, memtype, write ? buffer : NULL,
                    write ? elements * (long long)size : 0, &a);
    if (code)
        return code;
    if (!write && buffer)
        memcpy(buffer, a.data, (size_t)a.ndata);
    served_answer_free(&a);
    return PIO_NOERR;
}

int served_pio_setframe(int ncid, int varid, int frame)
{
    long long ints[2] = {varid, frame};
    return ask_file("setframe", ncid, ints, 2, NULL, 0, 0, NULL, 0, NULL);
}

int served_pio_advanceframe(int ncid, int varid)
{
    return served_pio_setframe(ncid, varid, -1);
}

/* The element size of a distributed array: its memtype's, else (0) the decomposition's type or, for the vard
 * calls (own_type), the variable's. */
static int darray_size(int ncid, int varid, const decomposition *d, int memtype, int own_type, size_t *size)
{
    int xtype = memtype ? memtype : d ? d->pio_type : 0, ndims = 0;
    if (!memtype && own_type) {
        int code = var_info(ncid, varid, &xtype, &ndims);
        if (code)
            return code;
    }
    *size = type_size(xtype);
    return PIO_NOERR;
}

int served_pio_write_darray(int ncid, int nvars, const int *varids, int ioid, long long arraylen, const void *array,
                            const int *frames, const void *fills, int memtype, int own_type)
{
    decomposition *d = decomp_of(ioid);
    size_t size = 0;
    int code = nvars > 0 && varids ? darray_size(ncid, varids[0], d, memtype, own_type, &size) : PIO_NOERR;
    if (code)
        return code;
    if (arraylen < 0)
        arraylen = d ? d->maplen : 0;
    if (fills && varids && size && (code = check_fills(ncid, nvars, varids, fills, size)))
        return code;
    long long header = 6 + 2 * (long long)(nvars > 0 ? nvars : 0);
    long long *ints = calloc((size_t)header, sizeof(long long));
    long long array_bytes = (nvars > 0 ? nvars : 0) * arraylen * (long long)size;
    long long bytes = array_bytes + (fills ? (nvars > 0 ? nvars : 0) * (long long)size : 0);
    char *data = fills && bytes > 0 ? malloc((size_t)bytes) : NULL; /* the fills follow the arrays: a copy */
    if (ints == NULL || (fills && bytes > 0 && data == NULL)) {
        free(ints);
        return local_error(method_of(system_of_file(ncid)),
                           climio_fail(CLIMIO_ENOMEM, "out of memory for a distributed array of %lld bytes", bytes));
    }
    ints[0] = nvars;
    ints[1] = ioid;
    ints[2] = arraylen;
    ints[3] = own_type;
    ints[4] = frames != NULL;
    ints[5] = fills != NULL;
    for (int k = 0; k < nvars; k++) {
        ints[6 + k] = varids ? varids[k] : -1;
        ints[6 + nvars + k] = frames ? frames[k] : -1;
    }
    if (data) {
        memcpy(data, array, (size_t)array_bytes);
        memcpy(data + array_bytes, fills, (size_t)(bytes - array_bytes));
    }
    code = ask_file("write_darray", ncid, ints, (int)header, NULL, 0, memtype, data ? data : array, bytes, NULL);
    free(ints);
    free(data);
    return code;
}

int served_pio_read_darray(int ncid, int varid, int ioid, long long arraylen, void *array, long long frame,
                           int memtype, int own_type)
{
    decomposition *d = decomp_of(ioid);
    size_t size = 0;
    int code = darray_size(ncid, varid, d, memtype, own_type, &size);
    if (code)
        return code;
    if (arraylen < 0)
        arraylen = d ? d->maplen : 0;
    long long ints[5] = {varid, ioid, arraylen, frame, own_type};
    served_answer a;
    code = ask_file("read_darray", ncid, ints, 5, NULL, 0, memtype, NULL, 0, &a);
    if (code)
        return code;
    long long n = size ? a.ndata / (long long)size : 0;
    for (long long i = 0; array && i < n; i++)
        if (d == NULL || d->hole == NULL || !d->hole[i])
            memcpy((char *)array + i * (long long)size, a.data + i * (long long)size, size);
    served_answer_free(&a);
    return PIO_NOERR;
}
