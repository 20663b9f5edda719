/* PIO2's C API on climio (docs/pio.md): a model written for PIO2 compiles against this header and links with
 * libpioc (pkg-config pio) unchanged. The names, signatures and constant values are PIO2 2.7's; every call is
 * answered by climio's model I/O (its rearranger, strategies and storage modes), in the model's own processes.
 *
 * A call climio cannot honour returns PIO's error code and says one line on the I/O system's first rank;
 * none is a silent no-op. */
#ifndef CLIMIO_PIO_H
#define CLIMIO_PIO_H

#include <stdbool.h>
#include <stdio.h>  /* as PIO2's header: its programs rely on these */
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <netcdf.h>

#define PIO_Offset MPI_Offset
#define PIO_OFFSET MPI_OFFSET
#define PIO_MAX_VARS NC_MAX_VARS
#define PIO_MAX_DIMS NC_MAX_DIMS
#define PIO_DEFAULT (-1)  /* the iosysid of PIOc_set_iosystem_error_handling's default for new systems */

enum PIO_IOTYPE {
    PIO_IOTYPE_PNETCDF = 1,  /* climio: cdf1, cdf2 (PIO_64BIT_OFFSET) or cdf5 (PIO_64BIT_DATA), in parallel */
    PIO_IOTYPE_NETCDF = 2,   /* climio: one writer through netCDF-C (format from the mode's flags) */
    PIO_IOTYPE_NETCDF4C = 3, /* climio: hdf5 by one writer (compression allowed) */
    PIO_IOTYPE_NETCDF4P = 4, /* climio: hdf5, every I/O task writing */
    PIO_IOTYPE_GDAL = 5      /* refused: climio reads and writes netCDF */
};

enum PIO_REARRANGERS {
    PIO_REARR_BOX = 1,   /* climio: agg:num_iotasks (root for one I/O task) */
    PIO_REARR_SUBSET = 2 /* the same strategies */
};

enum PIO_ERROR_HANDLERS {
    PIO_INTERNAL_ERROR = (-51), /* say the line and MPI_Abort the job (PIO's default) */
    PIO_BCAST_ERROR = (-52),    /* every task returns the same code */
    PIO_RETURN_ERROR = (-53)    /* climio: as PIO_BCAST_ERROR (its errors are always agreed) */
};

#define PIO_GLOBAL NC_GLOBAL
#define PIO_UNLIMITED NC_UNLIMITED

#define PIO_BYTE NC_BYTE
#define PIO_CHAR NC_CHAR
#define PIO_SHORT NC_SHORT
#define PIO_INT NC_INT
#define PIO_FLOAT NC_FLOAT
#define PIO_REAL NC_FLOAT
#define PIO_DOUBLE NC_DOUBLE
#define PIO_UBYTE NC_UBYTE
#define PIO_USHORT NC_USHORT
#define PIO_UINT NC_UINT
#define PIO_INT64 NC_INT64
#define PIO_UINT64 NC_UINT64
#define PIO_STRING NC_STRING

#define PIO_WRITE NC_WRITE
#define PIO_NOWRITE NC_NOWRITE
#define PIO_CLOBBER NC_CLOBBER
#define PIO_NOCLOBBER NC_NOCLOBBER
#define PIO_FILL NC_FILL
#define PIO_NOFILL NC_NOFILL
#define PIO_MAX_NAME NC_MAX_NAME
#define PIO_MAX_VAR_DIMS NC_MAX_VAR_DIMS
#define PIO_64BIT_OFFSET NC_64BIT_OFFSET
#define PIO_64BIT_DATA NC_64BIT_DATA

#define PIO_NOQUANTIZE NC_NOQUANTIZE
#define PIO_QUANTIZE_BITGROOM NC_QUANTIZE_BITGROOM
#define PIO_QUANTIZE_GRANULARBR NC_QUANTIZE_GRANULARBR
#define PIO_QUANTIZE_BITROUND NC_QUANTIZE_BITROUND

/* Error codes: netCDF's, and PIO's own from PIO_FIRST_ERROR_CODE down. */
#define PIO_NOERR NC_NOERR
#define PIO_EBADID NC_EBADID
#define PIO_ENFILE NC_ENFILE
#define PIO_EEXIST NC_EEXIST
#define PIO_EINVAL NC_EINVAL
#define PIO_EPERM NC_EPERM
#define PIO_ENOTINDEFINE NC_ENOTINDEFINE
#define PIO_EINDEFINE NC_EINDEFINE
#define PIO_EINVALCOORDS NC_EINVALCOORDS
#define PIO_EMAXDIMS NC_EMAXDIMS
#define PIO_ENAMEINUSE NC_ENAMEINUSE
#define PIO_ENOTATT NC_ENOTATT
#define PIO_EMAXATTS NC_EMAXATTS
#define PIO_EBADTYPE NC_EBADTYPE
#define PIO_EBADDIM NC_EBADDIM
#define PIO_EUNLIMPOS NC_EUNLIMPOS
#define PIO_EMAXVARS NC_EMAXVARS
#define PIO_ENOTVAR NC_ENOTVAR
#define PIO_EGLOBAL NC_EGLOBAL
#define PIO_ENOTNC NC_ENOTNC
#define PIO_ESTS NC_ESTS
#define PIO_EMAXNAME NC_EMAXNAME
#define PIO_EUNLIMIT NC_EUNLIMIT
#define PIO_ENORECVARS NC_ENORECVARS
#define PIO_ECHAR NC_ECHAR
#define PIO_EEDGE NC_EEDGE
#define PIO_ESTRIDE NC_ESTRIDE
#define PIO_EBADNAME NC_EBADNAME
#define PIO_ERANGE NC_ERANGE
#define PIO_ENOMEM NC_ENOMEM
#define PIO_EVARSIZE NC_EVARSIZE
#define PIO_EDIMSIZE NC_EDIMSIZE
#define PIO_ETRUNC NC_ETRUNC
#define PIO_EAXISTYPE NC_EAXISTYPE
#define PIO_EIO NC_EIO
#define PIO_ENODATA NC_ENODATA
#define PIO_EHDFERR NC_EHDFERR
#define PIO_ECANTREAD NC_ECANTREAD
#define PIO_ECANTWRITE NC_ECANTWRITE
#define PIO_ECANTCREATE NC_ECANTCREATE
#define PIO_EFILEMETA NC_EFILEMETA
#define PIO_EDIMMETA NC_EDIMMETA
#define PIO_EATTMETA NC_EATTMETA
#define PIO_EVARMETA NC_EVARMETA
#define PIO_EATTEXISTS NC_EATTEXISTS
#define PIO_ENOTNC4 NC_ENOTNC4
#define PIO_ESTRICTNC3 NC_ESTRICTNC3
#define PIO_ENOTNC3 NC_ENOTNC3
#define PIO_ENOPAR NC_ENOPAR
#define PIO_EPARINIT NC_EPARINIT
#define PIO_ELATEFILL NC_ELATEFILL
#define PIO_ELATEDEF NC_ELATEDEF
#define PIO_ESTORAGE NC_ESTORAGE
#define PIO_EBADCHUNK NC_EBADCHUNK
#define PIO_ENOTBUILT NC_ENOTBUILT

#define PIO_FILL_BYTE NC_FILL_BYTE
#define PIO_FILL_CHAR NC_FILL_CHAR
#define PIO_FILL_SHORT NC_FILL_SHORT
#define PIO_FILL_INT NC_FILL_INT
#define PIO_FILL_FLOAT NC_FILL_FLOAT
#define PIO_FILL_DOUBLE NC_FILL_DOUBLE
#define PIO_FILL_UBYTE NC_FILL_UBYTE
#define PIO_FILL_USHORT NC_FILL_USHORT
#define PIO_FILL_UINT NC_FILL_UINT
#define PIO_FILL_INT64 NC_FILL_INT64
#define PIO_FILL_UINT64 NC_FILL_UINT64

#define PIO_EINDEP (-203)
#define PIO_EINSUFFBUF (-219)
#define PIO_FIRST_ERROR_CODE (-500)
#define PIO_EBADIOTYPE (-500)
#define PIO_EVARDIMMISMATCH (-501)
#define PIO_EBADREARR (-502)
#define PIO_REQ_NULL (-2)

/* The typed families: PIOc_put_var_<t>, PIOc_get_vara_<t>, PIOc_put_att_<t>, ... for every <t> below, each
 * with the signature of its untyped call, e.g.
 *   int PIOc_put_vara_int(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const int *op);
 *   int PIOc_put_att_double(int ncid, int varid, const char *name, nc_type xtype, PIO_Offset len,
 *                           const double *op);
 *   int PIOc_get_att_float(int ncid, int varid, const char *name, float *ip); */
#define PIO_MEMORY_TYPES(X)                                                                                    \
    X(schar, signed char, NC_BYTE)                                                                             \
    X(short, short, NC_SHORT)                                                                                  \
    X(int, int, NC_INT)                                                                                        \
    X(long, long, (sizeof(long) == 8 ? NC_INT64 : NC_INT))                                                     \
    X(float, float, NC_FLOAT)                                                                                  \
    X(double, double, NC_DOUBLE)                                                                               \
    X(uchar, unsigned char, NC_UBYTE)                                                                          \
    X(ushort, unsigned short, NC_USHORT)                                                                       \
    X(uint, unsigned int, NC_UINT)                                                                             \
    X(longlong, long long, NC_INT64)                                                                           \
    X(ulonglong, unsigned long long, NC_UINT64)
#define PIO_DATA_TYPES(X) X(text, char, NC_CHAR) PIO_MEMORY_TYPES(X)

#define PIO_DECLARE_TYPED_DATA(t, ctype, nctype)                                                               \
    int PIOc_put_var_##t(int ncid, int varid, const ctype *op);                                                \
    int PIOc_get_var_##t(int ncid, int varid, ctype *buf);                                                     \
    int PIOc_put_var1_##t(int ncid, int varid, const PIO_Offset *index, const ctype *op);                      \
    int PIOc_get_var1_##t(int ncid, int varid, const PIO_Offset *index, ctype *buf);                           \
    int PIOc_put_vara_##t(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count,               \
                          const ctype *op);                                                                    \
    int PIOc_get_vara_##t(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, ctype *buf);  \
    int PIOc_put_vars_##t(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count,               \
                          const PIO_Offset *stride, const ctype *op);                                          \
    int PIOc_get_vars_##t(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count,               \
                          const PIO_Offset *stride, ctype *buf);                                               \
    int PIOc_get_att_##t(int ncid, int varid, const char *name, ctype *ip);
#define PIO_DECLARE_TYPED_ATT(t, ctype, nctype)                                                                \
    int PIOc_put_att_##t(int ncid, int varid, const char *name, nc_type xtype, PIO_Offset len, const ctype *op);

#if defined(__cplusplus)
extern "C" {
#endif

/* Errors and logging. */
int PIOc_strerror(int pioerr, char *errstr);  /* errstr: PIO_MAX_NAME + 1 characters */
int PIOc_set_log_level(int level);            /* as PIO2 built without logging: accepted, nothing logged */
int PIOc_set_global_log_level(int iosysid, int level);
int PIOc_set_iosystem_error_handling(int iosysid, int method, int *old_method);
int PIOc_Set_IOSystem_Error_Handling(int iosysid, int method);  /* returns the old method */
int PIOc_iotype_available(int iotype);                         /* 1 or 0 */

/* I/O systems: num_iotasks I/O tasks from rank base every stride ranks of comp_comm. */
int PIOc_Init_Intracomm(MPI_Comm comp_comm, int num_iotasks, int stride, int base, int rearr, int *iosysidp);
int PIOc_Init_Intracomm_from_F90(int f90_comp_comm, int num_iotasks, int stride, int base, int rearr,
                                 void *rearr_opts, int *iosysidp);
/* Async: the I/O tasks apart (PIO2's init_async), as climio's I/O servers. The I/O tasks serve inside this call
 * until the computational tasks free their system; the computational tasks get their iosysid. One component. */
int PIOc_init_async(MPI_Comm world, int num_io_procs, int *io_proc_list, int component_count,
                    int *num_procs_per_comp, int **proc_list, MPI_Comm *io_comm, MPI_Comm *comp_comm, int rearranger,
                    int *iosysidp);
int PIOc_init_async_from_comms(MPI_Comm world, int component_count, MPI_Comm *comp_comm, MPI_Comm io_comm,
                               int rearranger, int *iosysidp);
int PIOc_init_intercomm(int component_count, MPI_Comm peer_comm, MPI_Comm *comp_comms, MPI_Comm io_comm,
                        int rearranger, int *iosysidps); /* PIO 2.5's name of init_async_from_comms */
int PIOc_init_async_from_F90(int f90_world_comm, int num_io_procs, int *io_proc_list, int component_count,
                             int *procs_per_component, int *flat_proc_list, int *f90_io_comm, int *f90_comp_comm,
                             int rearranger, int *iosysidp);
int PIOc_init_async_comms_from_F90(int f90_world_comm, int component_count, int *f90_comp_comms, int f90_io_comm,
                                   int rearranger, int *iosysidp);
int PIOc_free_iosystem(int iosysid);
int PIOc_finalize(int iosysid);
int PIOc_get_numiotasks(int iosysid, int *numiotasks);
int PIOc_iam_iotask(int iosysid, bool *ioproc);
int PIOc_iotask_rank(int iosysid, int *iorank);       /* -1 on a task that is no I/O task */
int PIOc_iosystem_is_active(int iosysid, bool *active);
PIO_Offset PIOc_set_buffer_size_limit(PIO_Offset limit); /* returns the old limit: climio writes each
                                                            write_darray call at once, so it holds */
int PIOc_set_hint(int iosysid, const char *hint, const char *hintval);  /* an MPI-IO hint of every later file */

/* Decompositions: compmap gives each local element's offset into the variable (C order, without the record
 * dimension): 1-based (InitDecomp) or 0-based (init_decomp); 0 (1-based) or -1 (0-based) is a hole.
 * iostart/iocount must be NULL: climio places the I/O tasks' blocks itself. */
int PIOc_InitDecomp(int iosysid, int pio_type, int ndims, const int *gdimlen, int maplen,
                    const PIO_Offset *compmap, int *ioidp, const int *rearr, const PIO_Offset *iostart,
                    const PIO_Offset *iocount);
int PIOc_init_decomp(int iosysid, int pio_type, int ndims, const int *gdimlen, int maplen,
                     const PIO_Offset *compmap, int *ioidp, int rearranger, const PIO_Offset *iostart,
                     const PIO_Offset *iocount);
int PIOc_InitDecomp_bc(int iosysid, int basetype, int ndims, const int *gdimlen, const long int *start,
                       const long int *count, int *ioidp);  /* one block per task (start 0-based) */
int PIOc_freedecomp(int iosysid, int ioid);
int PIOc_get_local_array_size(int ioid);
int PIOc_write_nc_decomp(int iosysid, const char *filename, int cmode, int ioid, char *title, char *history,
                         int fortran_order);
int PIOc_read_nc_decomp(int iosysid, const char *filename, int *ioid, MPI_Comm comm, int pio_type, char *title,
                        char *history, int *fortran_order);

/* Files. */
int PIOc_createfile(int iosysid, int *ncidp, int *iotype, const char *fname, int mode);
int PIOc_create(int iosysid, const char *path, int cmode, int *ncidp);
int PIOc_openfile(int iosysid, int *ncidp, int *iotype, const char *fname, int mode);
int PIOc_openfile2(int iosysid, int *ncidp, int *iotype, const char *fname, int mode);
int PIOc_open(int iosysid, const char *path, int mode, int *ncidp);
int PIOc_closefile(int ncid);
int PIOc_sync(int ncid);
int PIOc_enddef(int ncid);
int PIOc_redef(int ncid);
int PIOc_set_fill(int ncid, int fillmode, int *old_modep);
int PIOc_File_is_Open(int ncid);
int PIOc_deletefile(int iosysid, const char *filename);

/* Inquiry. */
int PIOc_inq_format(int ncid, int *formatp);
int PIOc_inq(int ncid, int *ndimsp, int *nvarsp, int *ngattsp, int *unlimdimidp);
int PIOc_inq_ndims(int ncid, int *ndimsp);
int PIOc_inq_nvars(int ncid, int *nvarsp);
int PIOc_inq_natts(int ncid, int *ngattsp);
int PIOc_inq_unlimdim(int ncid, int *unlimdimidp);
int PIOc_inq_unlimdims(int ncid, int *nunlimdimsp, int *unlimdimidsp);
int PIOc_inq_type(int ncid, nc_type xtype, char *name, PIO_Offset *sizep);
int PIOc_inq_dim(int ncid, int dimid, char *name, PIO_Offset *lenp);
int PIOc_inq_dimid(int ncid, const char *name, int *idp);
int PIOc_inq_dimname(int ncid, int dimid, char *name);
int PIOc_inq_dimlen(int ncid, int dimid, PIO_Offset *lenp);
int PIOc_inq_varid(int ncid, const char *name, int *varidp);
int PIOc_inq_var(int ncid, int varid, char *name, nc_type *xtypep, int *ndimsp, int *dimidsp, int *nattsp);
int PIOc_inq_varname(int ncid, int varid, char *name);
int PIOc_inq_vartype(int ncid, int varid, nc_type *xtypep);
int PIOc_inq_varndims(int ncid, int varid, int *ndimsp);
int PIOc_inq_vardimid(int ncid, int varid, int *dimidsp);
int PIOc_inq_varnatts(int ncid, int varid, int *nattsp);
int PIOc_inq_var_fill(int ncid, int varid, int *no_fill, void *fill_valuep);
int PIOc_inq_var_deflate(int ncid, int varid, int *shufflep, int *deflatep, int *deflate_levelp);
int PIOc_inq_var_chunking(int ncid, int varid, int *storagep, PIO_Offset *chunksizesp);
int PIOc_inq_att(int ncid, int varid, const char *name, nc_type *xtypep, PIO_Offset *lenp);
int PIOc_inq_attid(int ncid, int varid, const char *name, int *idp);
int PIOc_inq_attlen(int ncid, int varid, const char *name, PIO_Offset *lenp);
int PIOc_inq_atttype(int ncid, int varid, const char *name, nc_type *xtypep);
int PIOc_inq_attname(int ncid, int varid, int attnum, char *name);

/* Definitions (define mode: after createfile or redef, before enddef). */
int PIOc_def_dim(int ncid, const char *name, PIO_Offset len, int *idp);
int PIOc_rename_dim(int ncid, int dimid, const char *name);
int PIOc_rename_var(int ncid, int varid, const char *name);
int PIOc_rename_att(int ncid, int varid, const char *name, const char *newname);
int PIOc_del_att(int ncid, int varid, const char *name);
int PIOc_def_var(int ncid, const char *name, nc_type xtype, int ndims, const int *dimidsp, int *varidp);
int PIOc_def_var_fill(int ncid, int varid, int no_fill, const void *fill_value);
int PIOc_def_var_deflate(int ncid, int varid, int shuffle, int deflate, int deflate_level);
int PIOc_def_var_chunking(int ncid, int varid, int storage, const PIO_Offset *chunksizesp);
int PIOc_def_var_quantize(int ncid, int varid, int quantize_mode, int nsd);
int PIOc_put_att(int ncid, int varid, const char *name, nc_type xtype, PIO_Offset len, const void *op);
int PIOc_put_att_text(int ncid, int varid, const char *name, PIO_Offset len, const char *op);
PIO_MEMORY_TYPES(PIO_DECLARE_TYPED_ATT)
int PIOc_get_att(int ncid, int varid, const char *name, void *ip);

/* Undistributed data: every task passes the same values; one writes them. Reads give every task the values.
 * The untyped calls take the variable's own type in memory. */
int PIOc_put_var(int ncid, int varid, const void *buf);
int PIOc_get_var(int ncid, int varid, void *buf);
int PIOc_put_var1(int ncid, int varid, const PIO_Offset *index, const void *buf);
int PIOc_get_var1(int ncid, int varid, const PIO_Offset *index, void *buf);
int PIOc_put_vara(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, const void *buf);
int PIOc_get_vara(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count, void *buf);
int PIOc_put_vars(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count,
                  const PIO_Offset *stride, const void *buf);
int PIOc_get_vars(int ncid, int varid, const PIO_Offset *start, const PIO_Offset *count,
                  const PIO_Offset *stride, void *buf);
PIO_DATA_TYPES(PIO_DECLARE_TYPED_DATA)

/* Distributed data: the record is the variable's frame (PIOc_setframe, 0-based); array holds this task's
 * elements in the decomposition's order, of the decomposition's type. */
int PIOc_setframe(int ncid, int varid, int frame);
int PIOc_advanceframe(int ncid, int varid);
int PIOc_write_darray(int ncid, int varid, int ioid, PIO_Offset arraylen, void *array, void *fillvalue);
int PIOc_write_darray_multi(int ncid, const int *varids, int ioid, int nvars, PIO_Offset arraylen, void *array,
                            const int *frame, void **fillvalue, bool flushtodisk);
int PIOc_read_darray(int ncid, int varid, int ioid, PIO_Offset arraylen, void *array);
/* The same through PnetCDF's vard in PIO2: record recnum, in the variable's type (or the call's type). */
int PIOc_put_vard(int ncid, int varid, int decompid, const PIO_Offset recnum, const void *buf);
int PIOc_get_vard(int ncid, int varid, int decompid, const PIO_Offset recnum, void *buf);
#define PIO_DECLARE_TYPED_VARD(t, ctype, nctype)                                                               \
    int PIOc_put_vard_##t(int ncid, int varid, int decompid, const PIO_Offset recnum, const ctype *op);        \
    int PIOc_get_vard_##t(int ncid, int varid, int decompid, const PIO_Offset recnum, ctype *buf);
PIO_DATA_TYPES(PIO_DECLARE_TYPED_VARD)

#if defined(__cplusplus)
}
#endif
#endif
