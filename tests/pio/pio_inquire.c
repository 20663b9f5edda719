/* A file that climio did not write, through PIO's calls: its header (dimensions, variables, global attributes)
 * and its first 12 records of one (time, y, x) variable read through a decomposition of its grid (round robin over
 * the tasks, each task's points in descending order), summed over the tasks. tests/test_pio.py compares what it
 * prints with netCDF4-python's view of the file.
 *
 *     mpiexec -n N pio_inquire FILE VARIABLE [SERVERS]    (SERVERS: climio serve ranks, the last application) */
#include <pio.h>
#include <stdlib.h>

#include "check.h"

static int rank;

int main(int argc, char **argv)
{
    int size, iosysid, ncid, ndims, nvars, natts, unlimdim, iotype = PIO_IOTYPE_PNETCDF;
    MPI_Init(&argc, &argv);
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: pio_inquire FILE VARIABLE [SERVERS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm comm = model_comm(argc == 4 ? atoi(argv[3]) : 0, &rank);
    MPI_Comm_size(comm, &size);
    CHECK(PIOc_Init_Intracomm(comm, size, 1, 0, PIO_REARR_BOX, &iosysid));
    CHECK(PIOc_set_iosystem_error_handling(iosysid, PIO_BCAST_ERROR, NULL));
    CHECK(PIOc_openfile(iosysid, &ncid, &iotype, argv[1], PIO_NOWRITE));
    CHECK(PIOc_inq(ncid, &ndims, &nvars, &natts, &unlimdim));
    char name[PIO_MAX_NAME + 1];
    if (rank == 0)
        printf("dims");
    for (int d = 0; d < ndims; d++) {
        PIO_Offset len;
        CHECK(PIOc_inq_dim(ncid, d, name, &len));
        if (rank == 0)
            printf(" %s=%lld", name, (long long)len);
    }
    if (rank == 0)
        printf("\nvars");
    for (int v = 0; v < nvars; v++) {
        int xtype, vndims, vnatts, dimids[PIO_MAX_VAR_DIMS];
        CHECK(PIOc_inq_var(ncid, v, name, &xtype, &vndims, dimids, &vnatts));
        if (rank == 0)
            printf(" %s:%d:%d:%d", name, xtype, vndims, vnatts);
    }
    if (rank == 0)
        printf("\ngatts %d unlimited %d\n", natts, unlimdim);

    int varid, dimids[3];
    PIO_Offset records, ny, nx;
    CHECK(PIOc_inq_varid(ncid, argv[2], &varid));
    CHECK(PIOc_inq_vardimid(ncid, varid, dimids));
    CHECK(PIOc_inq_dimlen(ncid, dimids[0], &records));
    CHECK(PIOc_inq_dimlen(ncid, dimids[1], &ny));
    CHECK(PIOc_inq_dimlen(ncid, dimids[2], &nx));
    int gdim[2] = {(int)ny, (int)nx}, maplen = 0;
    PIO_Offset *map = malloc(sizeof(PIO_Offset) * (size_t)(ny * nx));
    for (PIO_Offset p = ny * nx - 1; p >= 0; p--)
        if (p % size == rank)
            map[maplen++] = p + 1;
    int ioid;
    CHECK(PIOc_InitDecomp(iosysid, PIO_DOUBLE, 2, gdim, maplen, map, &ioid, NULL, NULL, NULL));
    double *values = malloc(sizeof(double) * (size_t)(maplen + 1)), sum = 0.0;
    if (records > 12)
        records = 12;
    for (int r = 0; r < records; r++) {
        CHECK(PIOc_setframe(ncid, varid, r));
        CHECK(PIOc_read_darray(ncid, varid, ioid, maplen, values));
        for (int k = 0; k < maplen; k++)
            sum += values[k];
    }
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
    float first_row[64];
    PIO_Offset start[3] = {0, 0, 0}, count[3] = {1, 1, nx < 64 ? nx : 64};
    CHECK(PIOc_get_vara_float(ncid, varid, start, count, first_row));
    if (rank == 0)
        printf("records %lld sum %.17g first %.9g\n", (long long)records, sum, first_row[0]);
    CHECK(PIOc_closefile(ncid));
    CHECK(PIOc_freedecomp(iosysid, ioid));
    CHECK(PIOc_free_iosystem(iosysid));
    free(map);
    free(values);
    MPI_Finalize();
    return 0;
}
