/* Counting a process's collective MPI calls, for ``climio bench model``'s "collectives per step".
 *
 * Preloaded (LD_PRELOAD) into a benchmark's ranks, each wrapper below counts one call and hands it to the MPI
 * library through its profiling interface (PMPI_*). Every caller is counted: climio's own calls through mpi4py
 * and those that PnetCDF, HDF5 and netCDF-C make inside one of their calls; an MPI library's calls to itself
 * inside its MPI-IO layer do not go through these names and are not. Python reads the count with ctypes
 * (climio.bench.collectives). */
#include <mpi.h>

static long calls;

long climio_collective_calls(void) { return calls; }

#define COUNTED(name, params, args) int MPI_##name params { calls++; return PMPI_##name args; }

COUNTED(Barrier, (MPI_Comm c), (c))
COUNTED(Ibarrier, (MPI_Comm c, MPI_Request *r), (c, r))
COUNTED(Bcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c), (b, n, t, root, c))
COUNTED(Ibcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *r), (b, n, t, root, c, r))
COUNTED(Reduce, (const void *s, void *b, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c),
        (s, b, n, t, o, root, c))
COUNTED(Allreduce, (const void *s, void *b, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c), (s, b, n, t, o, c))
COUNTED(Iallreduce, (const void *s, void *b, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c, MPI_Request *r),
        (s, b, n, t, o, c, r))
COUNTED(Scan, (const void *s, void *b, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c), (s, b, n, t, o, c))
COUNTED(Exscan, (const void *s, void *b, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c), (s, b, n, t, o, c))
COUNTED(Gather, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c),
        (s, sn, st, r, rn, rt, root, c))
COUNTED(Gatherv, (const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd, MPI_Datatype rt,
                  int root, MPI_Comm c), (s, sn, st, r, rn, rd, rt, root, c))
COUNTED(Scatter, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root, MPI_Comm c),
        (s, sn, st, r, rn, rt, root, c))
COUNTED(Scatterv, (const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                   int root, MPI_Comm c), (s, sn, sd, st, r, rn, rt, root, c))
COUNTED(Allgather, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
        (s, sn, st, r, rn, rt, c))
COUNTED(Allgatherv, (const void *s, int sn, MPI_Datatype st, void *r, const int *rn, const int *rd,
                     MPI_Datatype rt, MPI_Comm c), (s, sn, st, r, rn, rd, rt, c))
COUNTED(Alltoall, (const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c),
        (s, sn, st, r, rn, rt, c))
COUNTED(Alltoallv, (const void *s, const int *sn, const int *sd, MPI_Datatype st, void *r, const int *rn,
                    const int *rd, MPI_Datatype rt, MPI_Comm c), (s, sn, sd, st, r, rn, rd, rt, c))
COUNTED(Alltoallw, (const void *s, const int *sn, const int *sd, const MPI_Datatype *st, void *r, const int *rn,
                    const int *rd, const MPI_Datatype *rt, MPI_Comm c), (s, sn, sd, st, r, rn, rd, rt, c))
COUNTED(Ialltoallw, (const void *s, const int *sn, const int *sd, const MPI_Datatype *st, void *r, const int *rn,
                     const int *rd, const MPI_Datatype *rt, MPI_Comm c, MPI_Request *q),
        (s, sn, sd, st, r, rn, rd, rt, c, q))
COUNTED(Reduce_scatter, (const void *s, void *r, const int *n, MPI_Datatype t, MPI_Op o, MPI_Comm c),
        (s, r, n, t, o, c))
COUNTED(Reduce_scatter_block, (const void *s, void *r, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c),
        (s, r, n, t, o, c))
COUNTED(File_set_view, (MPI_File f, MPI_Offset d, MPI_Datatype e, MPI_Datatype t, const char *rep, MPI_Info i),
        (f, d, e, t, rep, i))
COUNTED(File_write_all, (MPI_File f, const void *b, int n, MPI_Datatype t, MPI_Status *s), (f, b, n, t, s))
COUNTED(File_write_at_all, (MPI_File f, MPI_Offset o, const void *b, int n, MPI_Datatype t, MPI_Status *s),
        (f, o, b, n, t, s))
COUNTED(File_read_all, (MPI_File f, void *b, int n, MPI_Datatype t, MPI_Status *s), (f, b, n, t, s))
COUNTED(File_read_at_all, (MPI_File f, MPI_Offset o, void *b, int n, MPI_Datatype t, MPI_Status *s),
        (f, o, b, n, t, s))
COUNTED(File_set_size, (MPI_File f, MPI_Offset n), (f, n))
COUNTED(File_sync, (MPI_File f), (f))
