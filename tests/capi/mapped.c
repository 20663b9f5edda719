/* What a model rank that writes through climio has mapped and how much memory it holds: a small output
 * (decomposition, create, three records of v = offset + 1000 * step, close), then rank 0 prints every file in
 * /proc/self/maps, one "mapped PATH" line each, and "rss_kb N hwm_kb N" from /proc/self/status. With
 * "mpi-only" it does no I/O (the MPI-only baseline of the same size); with "mean" the servers write the mean
 * of the three steps (climio_def_var_reduce).
 *
 *   mpiexec -n 2 mapped OUT.nc [mpi-only|mean] [: -n 1 climio serve] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <climio.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        if ((call) != CLIMIO_NOERR) {                                                    \
            char message_[512];                                                          \
            climio_errmsg(message_, sizeof message_);                                    \
            fprintf(stderr, "mapped: %s\n", message_);                                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                \
        }                                                                                \
    } while (0)

static void report(void)
{
    char line[4096], last[4096] = "";
    FILE *maps = fopen("/proc/self/maps", "r");
    while (maps && fgets(line, sizeof line, maps)) {
        char *path = strchr(line, '/');
        if (path && strcmp(path, last)) {
            printf("mapped %s", path);
            snprintf(last, sizeof last, "%s", path);
        }
    }
    if (maps)
        fclose(maps);
    long rss = 0, hwm = 0;
    FILE *status = fopen("/proc/self/status", "r");
    while (status && fgets(line, sizeof line, status)) {
        sscanf(line, "VmRSS: %ld", &rss);
        sscanf(line, "VmHWM: %ld", &hwm);
    }
    if (status)
        fclose(status);
    printf("rss_kb %ld hwm_kb %ld\n", rss, hwm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int only_mpi = argc > 2 && !strcmp(argv[2], "mpi-only"), mean = argc > 2 && !strcmp(argv[2], "mean"), rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!only_mpi) {
        enum { NY = 16, NX = 20 };
        MPI_Comm comm;
        int size, iosys, ioid, ncid, dims[3], varid;
        CHECK(climio_model_comm(&comm));
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        long long grid[2] = {NY, NX}, start[2] = {rank * NY / size, 0};
        long long count[2] = {(rank + 1) * NY / size - start[0], NX};
        double *field = malloc(sizeof(double) * (size_t)(count[0] * NX + 1));
        for (long long i = 0; i < count[0] * NX; i++)
            field[i] = (double)(start[0] * NX + i);
        CHECK(climio_init_intracomm(comm, &iosys));
        CHECK(climio_init_decomp_blocks(iosys, 2, grid, start, count, 0, &ioid));
        CHECK(climio_createfile(iosys, ioid, &ncid, "cdf5", "direct", argv[1], CLIMIO_CLOBBER));
        CHECK(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
        CHECK(climio_def_dim(ncid, "y", NY, &dims[1]));
        CHECK(climio_def_dim(ncid, "x", NX, &dims[2]));
        int time_id;
        CHECK(climio_def_var(ncid, "time", CLIMIO_DOUBLE, 1, dims, &time_id));
        CHECK(climio_put_att_text(ncid, time_id, "units", "hours since 2000-01-01"));
        CHECK(climio_def_var(ncid, "v", CLIMIO_DOUBLE, 3, dims, &varid));
        if (mean)
            CHECK(climio_def_var_reduce(ncid, varid, CLIMIO_MEAN, 3));
        CHECK(climio_enddef(ncid));
        for (int step = 0; step < 3; step++) {
            CHECK(climio_put_time(ncid, step, 6.0 * step));
            CHECK(climio_write_darray(ncid, varid, step, CLIMIO_DOUBLE, count[0] * NX, field));
            for (long long i = 0; i < count[0] * NX; i++)
                field[i] += 1000.0;
        }
        CHECK(climio_closefile(ncid));
        CHECK(climio_finalize(iosys));
        free(field);
        MPI_Comm_free(&comm);
    }
    if (rank == 0)
        report();
    MPI_Finalize();
    return 0;
}
