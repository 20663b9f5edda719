/* climio's model I/O for C: PIO2's way of writing and reading domain-decomposed fields, over the same
 * strategies and storage modes as climio's Python API (docs/model-api.md is the reference).
 *
 * Every call is collective over the I/O system's communicator and returns CLIMIO_NOERR or a code below,
 * the same code on every rank; climio_errmsg gives the message. Ids are opaque ints.
 * Arrays are C order: a field over (time, lev, y, x) has local arrays (lev, local_y, local_x). */
#ifndef CLIMIO_H
#define CLIMIO_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLIMIO_NOERR      0
#define CLIMIO_EBADID    (-1)  /* no such I/O system, decomposition, file, dimension or variable id */
#define CLIMIO_EINVAL    (-2)  /* a bad argument: name, type, length, shape, mode or strategy */
#define CLIMIO_ESTATE    (-3)  /* a call out of order: define before climio_enddef, write after it */
#define CLIMIO_EIO       (-4)  /* a fault of the machine (unwritable path, full disk): nothing published */
#define CLIMIO_EINTERNAL (-5)  /* a bug in climio */
#define CLIMIO_ENOMEM    (-6)  /* this rank ran out of memory: nothing published */

/* netCDF's type numbers */
#define CLIMIO_BYTE    1
#define CLIMIO_SHORT   3
#define CLIMIO_INT     4
#define CLIMIO_FLOAT   5
#define CLIMIO_DOUBLE  6
#define CLIMIO_INT64  10

#define CLIMIO_UNLIMITED 0LL   /* the record dimension's length */
#define CLIMIO_GLOBAL   (-1)   /* varid of the file's global attributes */
#define CLIMIO_NOFRAME  (-1LL) /* frame of a variable without records (reading) */

#define CLIMIO_RETURN_ERROR   0  /* PIO_RETURN_ERROR: every call returns its code (the default) */
#define CLIMIO_ABORT_ON_ERROR 1  /* PIO_INTERNAL_ERROR: print the message and MPI_Abort the job */

#define CLIMIO_CLOBBER   0  /* replace an existing file (when the new one is closed whole) */
#define CLIMIO_NOCLOBBER 1  /* refuse to create over an existing file */

#define CLIMIO_INSTANT 0  /* online reductions on the I/O servers (climio_def_var_reduce): every Nth step, */
#define CLIMIO_MEAN    1  /* the mean of N steps, */
#define CLIMIO_MIN     2  /* their minimum, */
#define CLIMIO_MAX     3  /* their maximum, */
#define CLIMIO_SUM     4  /* their sum (float64 on the servers, cast to the variable's type) */

#define CLIMIO_QUANTIZE_BITGROOM   1  /* netCDF's NC_QUANTIZE_* */
#define CLIMIO_QUANTIZE_GRANULARBR 2
#define CLIMIO_QUANTIZE_BITROUND   3

/* I/O systems: the model's communicator, used as is (climio never calls MPI_Init or MPI_Finalize).
 * climio_init_intracomm writes through the I/O servers when the launch has them (climio serve as the last
 * MPMD application, or CLIMIO_SERVERS=N: the last N ranks; CLIMIO_SERVERS=0: none), else in this process.
 * With servers, the communicator must hold model ranks only: climio_model_comm gives one. */
int climio_init_intracomm(MPI_Comm comm, int *iosysid);
int climio_init_intracomm_f(int fcomm, int *iosysid);            /* a Fortran handle (MPI_Comm_c2f) */
int climio_init_servers(MPI_Comm comm, long long buffer_bytes, int *iosysid); /* servers required; buffer
                                      bytes per rank of data sent but not yet taken (0: the default, 32 MiB) */
int climio_init_servers_f(int fcomm, long long buffer_bytes, int *iosysid);
int climio_model_comm(MPI_Comm *comm);  /* the model's ranks (every world rank but the servers'): a new
                                           communicator, collective over the model's ranks only */
int climio_model_comm_f(int *fcomm);
int climio_set_error_handling(int iosysid, int method);
int climio_finalize(int iosysid);                                /* closes (publishes) what is still open */

/* Decompositions of the horizontal grid (ndims grid dimensions, C order, 0-based). */
int climio_init_decomp_blocks(int iosysid, int ndims, const long long *gdimlen, const long long *start,
                              const long long *count, int halo, int *ioid);
int climio_init_decomp(int iosysid, int ndims, const long long *gdimlen, long long maplen,
                       const long long *compmap, int *ioid);    /* PIO's compmap: 1-based, 0 = hole */
int climio_free_decomp(int iosysid, int ioid);

/* Files: mode is serial, hdf5, cdf2, cdf5 (...); strategy direct, root, rows, cols, agg, agg:N, stripe, auto. */
int climio_createfile(int iosysid, int ioid, int *ncid, const char *mode, const char *strategy,
                      const char *path, int flags);
int climio_openfile(int iosysid, int ioid, int *ncid, const char *strategy, const char *path);
int climio_closefile(int ncid);

/* Definitions (before climio_enddef). */
int climio_def_dim(int ncid, const char *name, long long len, int *dimid);
int climio_def_var(int ncid, const char *name, int xtype, int ndims, const int *dimids, int *varid);
int climio_def_var_deflate(int ncid, int varid, int shuffle, int deflate, int level);
int climio_def_var_quantize(int ncid, int varid, int quantize_mode, int nsd);
int climio_def_var_reduce(int ncid, int varid, int op, int steps);  /* servers only: one record per `steps`
                                           steps (every field with records of the file over as many) */
int climio_put_att_text(int ncid, int varid, const char *name, const char *value);
int climio_put_att_double(int ncid, int varid, const char *name, int xtype, long long len,
                          const double *values);
int climio_enddef(int ncid);
int climio_inq_varid(int ncid, const char *name, int *varid);

/* Data: one record (frame; CLIMIO_NOFRAME for a variable without the record dimension) of a variable
 * from / into this rank's local array of memtype. climio_put_var writes an undistributed variable
 * (coordinates, bounds: any variable whose last dimensions are not the decomposition's grid) from
 * rank 0's values; the other ranks' are not read. climio_write_darray is checked and copied on each rank
 * alone (the array may be reused at once) and written with the file's other held records by its next other
 * call; a rank's refusal returns there, and on every rank at that next call. */
int climio_put_time(int ncid, long long frame, double time);
int climio_write_darray(int ncid, int varid, long long frame, int memtype, long long arraylen,
                        const void *array);
int climio_put_var(int ncid, int varid, long long frame, int memtype, long long len, const void *values);
int climio_read_darray(int ncid, int varid, long long frame, int memtype, long long arraylen, void *array);

/* Errors. */
int climio_errmsg(char *buffer, int length);  /* this rank's last message; returns its length */
const char *climio_strerror(int code);        /* what a code means */

#ifdef __cplusplus
}
#endif
#endif
