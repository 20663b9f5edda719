/* What libclimio's two halves share: the last error, and the calls of server mode (served.c) that the public
 * entry points (libclimio.c) dispatch to. Not installed. */
#ifndef CLIMIO_INTERNAL_H
#define CLIMIO_INTERNAL_H

#include <stdint.h>

#include "climio.h"

/* Ids of server mode have this bit set; the embedded Python's ids (system << 16 | n) stay below it. */
#define CLIMIO_SERVED_BIT 0x40000000
#define CLIMIO_SERVED(id) (((id) & CLIMIO_SERVED_BIT) != 0)

/* Keep `message` (printf-style) as this rank's last error and return `code`. */
int climio_fail(int code, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Keep a message already formatted. */
void climio_keep_error(const char *message);

/* A function of libclimio_py.so (climio's Python half, loaded on first use), or NULL with the message kept. */
void *climio_python_symbol(const char *name);

/* The launch's server ranks: 1 with the first world rank and count, 0 for none, or an error code. */
int served_layout(int *first, int *count);

/* Mark that this rank says the launch's one line about error `code` (climio.core.mpi.first_to_speak). */
int served_said(int code);

/* 1 when comm holds no rank of the launch's servers (world ranks first .. first + count - 1). */
int served_holds_none(MPI_Comm comm, int first, int count);

int served_init(MPI_Comm comm, long long buffer_bytes, int *iosysid);
/* Tell the servers (rank first of peer) that the model refused to connect (code): they end without a line. */
void served_refuse(MPI_Comm comm, MPI_Comm peer, int first, int code);
/* served_init with the servers given: `count` ranks of `peer` from `first` (PIO's async I/O tasks). */
int served_init_peer(MPI_Comm comm, MPI_Comm peer, int first, int count, long long buffer_bytes, int *iosysid);
int served_set_error_handling(int iosysid, int method);
int served_finalize(int iosysid);
int served_init_decomp_blocks(int iosysid, int ndims, const long long *gdimlen, const long long *start,
                              const long long *count, int halo, int *ioid);
int served_init_decomp(int iosysid, int ndims, const long long *gdimlen, long long maplen,
                       const long long *compmap, int *ioid);
int served_free_decomp(int iosysid, int ioid);
int served_createfile(int iosysid, int ioid, int *ncid, const char *mode, const char *strategy, const char *path,
                      int flags);
int served_openfile(int iosysid, int ioid, int *ncid, const char *strategy, const char *path);
int served_closefile(int ncid);
int served_def_dim(int ncid, const char *name, long long len, int *dimid);
int served_def_var(int ncid, const char *name, int xtype, int ndims, const int *dimids, int *varid);
int served_def_var_deflate(int ncid, int varid, int shuffle, int deflate, int level);
int served_def_var_quantize(int ncid, int varid, int quantize_mode, int nsd);
int served_def_var_reduce(int ncid, int varid, int op, int steps);
int served_put_att_text(int ncid, int varid, const char *name, const char *value);
int served_put_att_double(int ncid, int varid, const char *name, int xtype, long long len, const double *values);
int served_enddef(int ncid);
int served_inq_varid(int ncid, const char *name, int *varid);
int served_put_time(int ncid, long long frame, double time);
int served_write_darray(int ncid, int varid, long long frame, int memtype, long long arraylen, const void *array);
int served_put_var(int ncid, int varid, long long frame, int memtype, long long len, const void *values);
int served_read_darray(int ncid, int varid, long long frame, int memtype, long long arraylen, void *array);

/* The answer to a call of PIO's through the servers: its out-values, out-strings (each ended by a NUL) and
 * out-data, views of `payload` (served_answer_free frees it); status: the exit status an error calls for. */
typedef struct {
    char *payload;
    const int64_t *values;
    int nvalues;
    const char *strings;
    long long nstrings;
    const char *data;
    long long ndata;
    int status;
} served_answer;

int served_pio_call(int iosysid, const char *call, long long ident, const long long *ints, int nints,
                    const char *const *strings, int nstrings, int memtype, const void *data, long long bytes,
                    served_answer *answer);
void served_answer_free(served_answer *answer);

#endif
