/* Fill mode through PIO's calls: what a file holds where the model wrote nothing, in each iotype. Per iotype,
 * one file made by PIOc_createfile then PIOc_set_fill(PIO_FILL), with
 *   W  int   (time, y, x)  records 0 and 2 written by darray (point 0 is no task's), record 1 never;
 *   U  short (time, y, x)  never written;
 *   F  double (y, x)        never written (fixed size);
 *   G  float (time, y, x)  never written, fill value -5 given by PIOc_def_var_fill;
 *   N  int   (time, y, x)  never written, PIOc_def_var_fill(PIO_NOFILL);
 *   C  char  (time, y)     never written;
 * one made by PIOc_createfile alone (no fill values: PIO2's default), and one by PIOc_create with a netCDF-4
 * mode (netCDF-4's default: fill). tests/test_pio.py checks what the files hold.
 *
 *     mpiexec -n N pio_fill DIR                                                                            */
#include <pio.h>
#include <stdlib.h>

#include "check.h"

#define NY 3
#define NX 4

static int rank;

/* One file: fill as above when `fill`, by PIOc_create with `cmode` when `create`. */
static void one_file(int iosysid, int ioid, int iotype, const char *path, int fill, int create, int cmode,
                     int nlocal, const int *values)
{
    int ncid, dims[3], w, u, fx, g, nf, c;
    if (create)
        CHECK(PIOc_create(iosysid, path, cmode, &ncid));
    else
        CHECK(PIOc_createfile(iosysid, &ncid, &iotype, path, PIO_CLOBBER));
    if (fill)
        CHECK(PIOc_set_fill(ncid, PIO_FILL, NULL));
    CHECK(PIOc_def_dim(ncid, "time", PIO_UNLIMITED, &dims[0]));
    CHECK(PIOc_def_dim(ncid, "y", NY, &dims[1]));
    CHECK(PIOc_def_dim(ncid, "x", NX, &dims[2]));
    CHECK(PIOc_def_var(ncid, "W", PIO_INT, 3, dims, &w));
    CHECK(PIOc_def_var(ncid, "U", PIO_SHORT, 3, dims, &u));
    CHECK(PIOc_def_var(ncid, "F", PIO_DOUBLE, 2, dims + 1, &fx));
    CHECK(PIOc_def_var(ncid, "G", PIO_FLOAT, 3, dims, &g));
    CHECK(PIOc_def_var(ncid, "N", PIO_INT, 3, dims, &nf));
    CHECK(PIOc_def_var(ncid, "C", PIO_CHAR, 2, dims, &c));
    float g_fill = -5.0f;
    CHECK(PIOc_def_var_fill(ncid, g, PIO_FILL, &g_fill));
    CHECK(PIOc_def_var_fill(ncid, nf, PIO_NOFILL, NULL));
    int no_fill = -1;
    CHECK(PIOc_inq_var_fill(ncid, u, &no_fill, NULL));
    EXPECT(no_fill == !(fill || create));
    CHECK(PIOc_enddef(ncid));
    for (int frame = 0; frame < 3; frame += 2) {
        CHECK(PIOc_setframe(ncid, w, frame));
        CHECK(PIOc_write_darray(ncid, w, ioid, nlocal, (void *)values, NULL));
    }
    CHECK(PIOc_closefile(ncid));
}

int main(int argc, char **argv)
{
    int size, iosysid, ioid;
    MPI_Init(&argc, &argv);
    if (argc != 2) {
        fprintf(stderr, "usage: pio_fill DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(PIOc_Init_Intracomm(MPI_COMM_WORLD, (size + 1) / 2, 2, 0, PIO_REARR_BOX, &iosysid));
    /* Points 1.. round-robin over the first two tasks (a third owns nothing); value 10 * point. */
    PIO_Offset map[NY * NX];
    int values[NY * NX], nlocal = 0, grid[2] = {NY, NX}, owners = size < 2 ? size : 2;
    for (int p = 1; p < NY * NX; p++)
        if (p % owners == rank && rank < owners) {
            map[nlocal] = p + 1;
            values[nlocal++] = 10 * p;
        }
    CHECK(PIOc_InitDecomp(iosysid, PIO_INT, 2, grid, nlocal, map, &ioid, NULL, NULL, NULL));
    const char *dir = argv[1];
    const char *names[] = {"pnetcdf", "netcdf", "netcdf4c", "netcdf4p"};
    int iotypes[] = {PIO_IOTYPE_PNETCDF, PIO_IOTYPE_NETCDF, PIO_IOTYPE_NETCDF4C, PIO_IOTYPE_NETCDF4P};
    char path[4096];
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/fill-%s.nc", dir, names[k]);
        one_file(iosysid, ioid, iotypes[k], path, 1, 0, 0, nlocal, values);
        snprintf(path, sizeof path, "%s/nofill-%s.nc", dir, names[k]);
        one_file(iosysid, ioid, iotypes[k], path, 0, 0, 0, nlocal, values);
    }
    snprintf(path, sizeof path, "%s/create-netcdf4.nc", dir);
    one_file(iosysid, ioid, 0, path, 0, 1, NC_NETCDF4, nlocal, values);
    CHECK(PIOc_freedecomp(iosysid, ioid));
    CHECK(PIOc_free_iosystem(iosysid));
    if (rank == 0)
        printf("pio_fill: 9 files on %d tasks\n", size);
    MPI_Finalize();
    return 0;
}
