/* climio's processes' collective MPI calls: each counted, and the small blocking ones waited for without
 * holding the core.
 *
 * Open MPI's blocking calls poll until every peer has arrived. A rank that shares its core with anything (another
 * rank, an I/O server, the other test worker, a daemon) then burns its scheduler quantum polling while the rank it
 * waits for cannot run: parallel HDF5 makes about ten small agreements per variable inside each write, and the
 * CMAQ CA output through it ran 10-15x slower beside one busy process. Here such a call (an allreduce, broadcast
 * or allgather of at most SMALL_BYTES, or a barrier) becomes its nonblocking twin, completed by polls that yield
 * the core for POLL_SECONDS, then by sleeps doubling from FIRST_SLEEP to LONGEST_SLEEP (climio.core.waiting does
 * the same for climio's own agreements). Calls that move data (exchanges, MPI-IO's collective reads and writes)
 * keep the library's own wait: their bytes move inside the polls. CLIMIO_MPI_WAIT=spin keeps every wait as the
 * library makes it.
 *
 * The library reaches MPI through its profiling names (PMPI_*), found when first called, so that it can be
 * loaded before the MPI library is: climio loads it at import (climio.core.collectives), ahead of the MPI library
 * in the process's symbol lookup, so that the calls of PnetCDF, HDF5, netCDF-C and mpi4py come here. A process
 * that loaded MPI first (a model program, which links it) is unchanged unless the library is preloaded
 * (LD_PRELOAD), as climio bench does to count a run's calls. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SMALL_BYTES 65536
#define POLL_SECONDS 2e-3
#define FIRST_SLEEP 50000L  /* ns */
#define LONGEST_SLEEP 1000000L

static long calls;

long climio_collective_calls(void) { return calls; }

/* The MPI library's own function ``name``, looked up once. */
#define NEXT(name)                                                                                             \
    static __typeof__(&PMPI_##name) next_##name;                                                              \
    if (next_##name == NULL)                                                                                   \
        next_##name = (__typeof__(&PMPI_##name))dlsym(RTLD_DEFAULT, "PMPI_" #name)

static int spinning(void)
{
    static int known = -1;
    if (known < 0) {
        const char *how = getenv("CLIMIO_MPI_WAIT");
        known = how != NULL && strcmp(how, "spin") == 0;
    }
    return known;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Complete ``request`` yielding the core, then sleeping, between polls. */
static int waited(int code, MPI_Request *request)
{
    NEXT(Test);
    if (code != MPI_SUCCESS)
        return code;
    int done = 0;
    double start = now();
    long sleep = FIRST_SLEEP;
    while ((code = next_Test(request, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done) {
        if (now() - start < POLL_SECONDS) {
            sched_yield();
        } else {
            struct timespec pause = {0, sleep};
            nanosleep(&pause, NULL);
            sleep = sleep < LONGEST_SLEEP ? 2 * sleep : LONGEST_SLEEP;
        }
    }
    return code;
}

static int small(MPI_Datatype type, int count)
{
    NEXT(Type_size);
    int size = 0;
    return next_Type_size(type, &size) == MPI_SUCCESS && (long)size * count <= SMALL_BYTES;
}

int MPI_Barrier(MPI_Comm c)
{
    NEXT(Barrier);
    NEXT(Ibarrier);
    MPI_Request r;
    calls++;
    return spinning() ? next_Barrier(c) : waited(next_Ibarrier(c, &r), &r);
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    NEXT(Bcast);
    NEXT(Ibcast);
    MPI_Request r;
    calls++;
    if (spinning() || !small(t, n))
        return next_Bcast(b, n, t, root, c);
    return waited(next_Ibcast(b, n, t, root, c, &r), &r);
}

int MPI_Allreduce(const void *s, void *b, int n, MPI_Datatype t, MPI_Op o, MPI_Comm c)
{
    NEXT(Allreduce);
    NEXT(Iallreduce);
    MPI_Request r;
    calls++;
    if (spinning() || !small(t, n))
        return next_Allreduce(s, b, n, t, o, c);
    return waited(next_Iallreduce(s, b, n, t, o, c, &r), &r);
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c)
{
    NEXT(Allgather);
    NEXT(Iallgather);
    NEXT(Comm_size);
    MPI_Request r;
    int size = 1;
    calls++;
    next_Comm_size(c, &size);
    if (spinning() || !small(rt, rn * size))
        return next_Allgather(s, sn, st, rb, rn, rt, c);
    return waited(next_Iallgather(s, sn, st, rb, rn, rt, c, &r), &r);
}

#define COUNTED(name, params, args)                                                                            \
    int MPI_##name params                                                                                      \
    {                                                                                                          \
        NEXT(name);                                                                                            \
        calls++;                                                                                               \
        return next_##name args;                                                                               \
    }

COUNTED(Ibarrier, (MPI_Comm c, MPI_Request *r), (c, r))
COUNTED(Ibcast, (void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *r), (b, n, t, root, c, r))
COUNTED(Reduce, (const void *s, void *b, int n, MPI_Datatype t, MPI_Op o, int root, MPI_Comm c),
        (s, b, n, t, o, root, c))
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
