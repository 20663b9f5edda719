/* The PIO calls climio's Python implements (climio.pio.bridge), in libclimio_py.so. libpioc.c converts PIO's
 * typed families to these few: a memtype of 0 means the variable's own type; a NULL start means the whole
 * variable, a NULL count one element. A distributed array's memtype of 0 is the decomposition's type (own_type:
 * the variable's), its arraylen -1 the decomposition's length, its frame -1 the variable's frame (setframe); fills are nvars values
 * of the array's type, one after the other (as PIO2 reads write_darray_multi's fillvalue), or NULL.
 * Each returns PIO's code. Not installed. */
int climiopy_pio_init(int fcomm, int num_iotasks, int stride, int base, int rearr, int server_first,
                      int server_count, int *iosysid);
int climiopy_pio_free_iosystem(int iosysid);
int climiopy_pio_error_handling(int iosysid, int method, int *old_method);
int climiopy_pio_numiotasks(int iosysid, int *numiotasks);
int climiopy_pio_iotask(int iosysid, int *iorank, int *active);
int climiopy_pio_deletefile(int iosysid, const char *path);
int climiopy_pio_set_hint(int iosysid, const char *hint, const char *value);
int climiopy_pio_iotype_available(int iotype);
int climiopy_pio_init_decomp(int iosysid, int pio_type, int ndims, const int *gdimlen, long long maplen,
                             const long long *compmap, int base, int rearr, int has_io_blocks, int *ioid);
int climiopy_pio_init_decomp_blocks(int iosysid, int pio_type, int ndims, const int *gdimlen,
                                    const long long *start, const long long *count, int *ioid);
int climiopy_pio_freedecomp(int iosysid, int ioid);
int climiopy_pio_local_size(int ioid, long long *size);
int climiopy_pio_write_nc_decomp(int iosysid, const char *path, int cmode, int ioid, const char *title,
                                 const char *history, int fortran_order);
int climiopy_pio_read_nc_decomp(int iosysid, const char *path, int *ioid, int fcomm, int pio_type, char *title,
                                char *history, int *fortran_order);
int climiopy_pio_createfile(int iosysid, int *ncid, int iotype, const char *path, int mode);
int climiopy_pio_openfile(int iosysid, int *ncid, int *iotype, const char *path, int mode, int retry);
int climiopy_pio_closefile(int ncid);
int climiopy_pio_sync(int ncid);
int climiopy_pio_enddef(int ncid);
int climiopy_pio_redef(int ncid);
int climiopy_pio_set_fill(int ncid, int fillmode, int *old_mode);
int climiopy_pio_file_is_open(int ncid);
int climiopy_pio_inq(int ncid, int *ndims, int *nvars, int *natts, int *unlimdim, int *format);
int climiopy_pio_inq_dim(int ncid, int dimid, char *name, long long *length);
int climiopy_pio_inq_dimid(int ncid, const char *name, int *dimid);
int climiopy_pio_inq_var(int ncid, int varid, char *name, int *xtype, int *ndims, int *dimids, int *natts);
int climiopy_pio_inq_varid(int ncid, const char *name, int *varid);
int climiopy_pio_inq_var_fill(int ncid, int varid, int *no_fill, void *fill);
int climiopy_pio_inq_var_deflate(int ncid, int varid, int *shuffle, int *deflate, int *level);
int climiopy_pio_inq_var_chunking(int ncid, int varid, int *storage, long long *chunks);
int climiopy_pio_inq_att(int ncid, int varid, const char *name, int *xtype, long long *length, int *attid);
int climiopy_pio_inq_attname(int ncid, int varid, int attnum, char *name);
int climiopy_pio_rename(int ncid, int what, int id, const char *name, const char *newname);
int climiopy_pio_def_dim(int ncid, const char *name, long long length, int *dimid);
int climiopy_pio_def_var(int ncid, const char *name, int xtype, int ndims, const int *dimids, int *varid);
int climiopy_pio_def_var_fill(int ncid, int varid, int no_fill, const void *fill);
int climiopy_pio_def_var_deflate(int ncid, int varid, int shuffle, int deflate, int level);
int climiopy_pio_def_var_chunking(int ncid, int varid, int storage, const long long *chunks);
int climiopy_pio_def_var_quantize(int ncid, int varid, int quantize_mode, int nsd);
int climiopy_pio_put_att(int ncid, int varid, const char *name, int xtype, long long length, int memtype,
                         const void *values);
int climiopy_pio_get_att(int ncid, int varid, const char *name, int memtype, void *values);
int climiopy_pio_vars(int ncid, int varid, int write, const long long *start, const long long *count,
                      const long long *stride, int memtype, void *buffer);
int climiopy_pio_setframe(int ncid, int varid, int frame);
int climiopy_pio_advanceframe(int ncid, int varid);
int climiopy_pio_write_darray(int ncid, int nvars, const int *varids, int ioid, long long arraylen,
                              const void *array, const int *frames, const void *fills, int memtype, int own_type);
int climiopy_pio_read_darray(int ncid, int varid, int ioid, long long arraylen, void *array, long long frame,
                             int memtype, int own_type);
/* PIO's async I/O tasks: climio's server loop over io_comm (a Fortran handle, as fworld) until the computational
 * tasks free their system (libpioc's init_async). */
int climiopy_pio_serve(int fworld, int fio_comm);
