/* Read one record of a variable of a real file through climio's C API into each rank's local array, and save
 * the local arrays for tests/test_capi.py to compare with netCDF4-python's reading.
 *
 *   mpiexec -n N read_real PATH VAR LEVELS OUTDIR blocks NY NX     (halo 1 on a process grid of MPI_Dims_create)
 *   mpiexec -n N read_real PATH VAR LEVELS OUTDIR compmap NPOINTS  (rank r holds points r, r + N, ...)
 *
 * LEVELS is 0 for a variable (time, grid...) and L for (time, lev, grid...). Rank r writes OUTDIR/rank<r>.bin:
 * its local array as doubles (with the halo), C order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <climio.h>

static void block_range(long long n, int parts, int index, long long *start, long long *count)
{
    long long base = n / parts, extra = n % parts;
    *start = index * base + (index < extra ? index : extra);
    *count = base + (index < extra);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, iosys, ioid, ncid, varid, status;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *path = argv[1], *var = argv[2], *outdir = argv[4];
    long long levels = atoll(argv[3]), n = 0;
    climio_init_intracomm(MPI_COMM_WORLD, &iosys);
    if (strcmp(argv[5], "blocks") == 0) {
        int dims[2] = {0, 0};
        MPI_Dims_create(size, 2, dims);
        long long grid[2] = {atoll(argv[6]), atoll(argv[7])}, start[2], count[2];
        block_range(grid[0], dims[0], rank / dims[1], &start[0], &count[0]);
        block_range(grid[1], dims[1], rank % dims[1], &start[1], &count[1]);
        status = climio_init_decomp_blocks(iosys, 2, grid, start, count, 1, &ioid);
        n = (count[0] + 2) * (count[1] + 2);
    } else {
        long long points = atoll(argv[6]);
        long long *compmap = malloc(sizeof(long long) * (points / size + 1));
        for (long long p = rank; p < points; p += size)
            compmap[n++] = p + 1;
        status = climio_init_decomp(iosys, 1, &points, n, compmap, &ioid);
        free(compmap);
    }
    n *= levels ? levels : 1;
    double *local = malloc(sizeof(double) * (n ? n : 1));
    if (status == CLIMIO_NOERR) status = climio_openfile(iosys, ioid, &ncid, "auto", path);
    if (status == CLIMIO_NOERR) status = climio_inq_varid(ncid, var, &varid);
    if (status == CLIMIO_NOERR) status = climio_read_darray(ncid, varid, 0, CLIMIO_DOUBLE, n, local);
    if (status != CLIMIO_NOERR) {
        char message[512];
        climio_errmsg(message, sizeof message);
        fprintf(stderr, "read_real: %s\n", message);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char name[1024];
    snprintf(name, sizeof name, "%s/rank%d.bin", outdir, rank);
    FILE *out = fopen(name, "wb");
    fwrite(local, sizeof(double), (size_t)n, out);
    fclose(out);
    climio_closefile(ncid);
    climio_free_decomp(iosys, ioid);
    climio_finalize(iosys);
    free(local);
    MPI_Finalize();
    return 0;
}
