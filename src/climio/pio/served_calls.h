/* The calls of pio_python.h answered through climio's I/O servers (served_calls.c): served_pio_NAME has the
 * signature of climiopy_pio_NAME, which the compiler checks. Not installed. */
#ifndef CLIMIO_SERVED_CALLS_H
#define CLIMIO_SERVED_CALLS_H

#include "pio_python.h"

/* Every call of pio_python.h, for the table of who answers them (libpioc.c). */
#define PIO_PYTHON_CALLS(X)                                                                                        \
    X(pio_init) X(pio_free_iosystem) X(pio_error_handling) X(pio_numiotasks) X(pio_iotask) X(pio_deletefile)  \
    X(pio_set_hint) X(pio_inq_var_chunking) X(pio_rename)                                                     \
    X(pio_iotype_available) X(pio_init_decomp) X(pio_init_decomp_blocks) X(pio_freedecomp) X(pio_local_size) \
    X(pio_write_nc_decomp) X(pio_read_nc_decomp) X(pio_createfile) X(pio_openfile) X(pio_closefile)           \
    X(pio_sync) X(pio_enddef) X(pio_redef) X(pio_set_fill) X(pio_file_is_open) X(pio_inq) X(pio_inq_dim)      \
    X(pio_inq_dimid) X(pio_inq_var) X(pio_inq_varid) X(pio_inq_var_fill) X(pio_inq_var_deflate)               \
    X(pio_inq_att) X(pio_inq_attname) X(pio_def_dim) X(pio_def_var) X(pio_def_var_fill)                       \
    X(pio_def_var_deflate) X(pio_def_var_chunking) X(pio_def_var_quantize) X(pio_put_att) X(pio_get_att)      \
    X(pio_vars) X(pio_setframe) X(pio_advanceframe) X(pio_write_darray) X(pio_read_darray)

#define DECLARE_SERVED(name) __typeof__(climiopy_##name) served_##name;
PIO_PYTHON_CALLS(DECLARE_SERVED)
#undef DECLARE_SERVED

/* Connect this task to I/O servers: `count` ranks of `peer` from `first` (the launch's climio serve ranks, or
 * with own_tasks PIO's async I/O tasks, which end when the last I/O system is freed); PIO's code, under
 * `method`'s rule. */
int served_pio_connect(MPI_Comm comm, MPI_Comm peer, int first, int count, int method, int own_tasks);

#endif
