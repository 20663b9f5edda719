/* PIO's async mode on climio: PIOc_init_async makes NIO tasks I/O tasks (climio's I/O servers, inside the call)
 * and the others one computational component, which writes a field of two records through a decomposition
 * (with a hole, and a last task that owns nothing), reads it back, then makes a write fail on the I/O tasks (a
 * value out of the variable's range) and checks that every computational task gets PIO's code for it at its
 * next call; the computational tasks never load Python. Prints one line on the first computational task;
 * tests/test_pio.py checks the files.
 *
 *     mpiexec -n N pio_async DIR NIO [first|last] [forget]
 *
 * The I/O tasks are world's first NIO, or its last. With "forget" the computational tasks end (MPI_Finalize)
 * right after writing, the file still open and the system never freed: the servers end with them and
 * publish nothing. */
#include <pio.h>
#include <stdlib.h>

#include "check.h"

#define PER_TASK 5

static int rank;

/* Whether this process has loaded Python (a computational task through servers must not). */
static int python_loaded(void)
{
    char line[4096];
    int found = 0;
    FILE *maps = fopen("/proc/self/maps", "r");
    while (maps && !found && fgets(line, sizeof line, maps))
        found = strstr(line, "libpython") != NULL || strstr(line, "libclimio_py") != NULL;
    if (maps)
        fclose(maps);
    return found;
}

int main(int argc, char **argv)
{
    int world_rank, size, iosysid = -7;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank = world_rank;
    if (argc < 3) {
        fprintf(stderr, "usage: pio_async DIR NIO [first|last]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int nio = atoi(argv[2]), last = argc > 3 && strcmp(argv[3], "last") == 0, ncomp = size - nio;
    int forget = argc > 4 && strcmp(argv[4], "forget") == 0;
    int io_list[64], comp_list[64], *proc_list[1] = {comp_list};
    for (int i = 0; i < nio; i++)
        io_list[i] = last ? ncomp + i : i;
    for (int i = 0; i < ncomp; i++)
        comp_list[i] = last ? i : nio + i;
    CHECK(PIOc_set_iosystem_error_handling(PIO_DEFAULT, PIO_RETURN_ERROR, NULL));
    MPI_Comm io_comm, comp_comm;
    CHECK(PIOc_init_async(MPI_COMM_WORLD, nio, io_list, 1, &ncomp, proc_list, &io_comm, &comp_comm, PIO_REARR_BOX,
                          &iosysid));
    if (io_comm != MPI_COMM_NULL) { /* an I/O task: back once the component freed its system */
        EXPECT(comp_comm == MPI_COMM_NULL);
        MPI_Comm_free(&io_comm);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_rank(comp_comm, &rank);
    int ntasks = 0;
    CHECK(PIOc_get_numiotasks(iosysid, &ntasks));
    EXPECT(ntasks == nio);

    /* the grid: PER_TASK points per computational task; the last task (of several) owns nothing, its points
     * go round-robin to the others; point 0 is no task's; task 0's array starts with a hole */
    int npoints = PER_TASK * ncomp, owners = ncomp > 1 ? ncomp - 1 : 1, maplen = 0;
    PIO_Offset map[PER_TASK * 64 + 1];
    if (rank == 0)
        map[maplen++] = 0;
    for (int p = 1; p < npoints; p++)
        if (p % owners == rank && rank < owners)
            map[maplen++] = p + 1;
    int ioid, ioid_int, gdim[1] = {npoints};
    CHECK(PIOc_InitDecomp(iosysid, PIO_DOUBLE, 1, gdim, maplen, map, &ioid, NULL, NULL, NULL));
    CHECK(PIOc_InitDecomp(iosysid, PIO_INT, 1, gdim, maplen, map, &ioid_int, NULL, NULL, NULL));

    char path[4096];
    snprintf(path, sizeof path, "%s/async.nc", argv[1]);
    int iotype = PIO_IOTYPE_PNETCDF, ncid, dims[2], varid;
    CHECK(PIOc_createfile(iosysid, &ncid, &iotype, path, PIO_CLOBBER));
    CHECK(PIOc_def_dim(ncid, "time", PIO_UNLIMITED, &dims[0]));
    CHECK(PIOc_def_dim(ncid, "x", npoints, &dims[1]));
    CHECK(PIOc_def_var(ncid, "v", PIO_DOUBLE, 2, dims, &varid));
    CHECK(PIOc_put_att_text(ncid, varid, "units", 1, "K"));
    double fill = -1.0, values[PER_TASK * 64 + 1], back[PER_TASK * 64 + 1];
    CHECK(PIOc_def_var_fill(ncid, varid, 0, &fill));
    CHECK(PIOc_enddef(ncid));
    for (int step = 0; step < 2; step++) {
        for (int k = 0; k < maplen; k++)
            values[k] = map[k] ? 100.0 * step + (double)map[k] - 1 : -5.0;
        CHECK(PIOc_setframe(ncid, varid, step));
        CHECK(PIOc_write_darray(ncid, varid, ioid, maplen, values, NULL));
    }
    if (forget) {
        if (rank == 0)
            printf("pio_async: ended with the file open\n");
        MPI_Finalize();
        return 0;
    }
    CHECK(PIOc_closefile(ncid));

    int dimid = -1;
    PIO_Offset records = 0;
    CHECK(PIOc_openfile(iosysid, &ncid, &iotype, path, PIO_NOWRITE));
    CHECK(PIOc_inq_dimid(ncid, "time", &dimid));
    CHECK(PIOc_inq_dimlen(ncid, dimid, &records));
    EXPECT(records == 2);
    char units[8] = "";
    CHECK(PIOc_get_att_text(ncid, varid, "units", units));
    EXPECT(strcmp(units, "K") == 0);
    for (int step = 0; step < 2; step++) {
        for (int k = 0; k < maplen; k++)
            back[k] = -7.0;
        CHECK(PIOc_setframe(ncid, varid, step));
        CHECK(PIOc_read_darray(ncid, varid, ioid, maplen, back));
        for (int k = 0; k < maplen; k++)
            EXPECT(back[k] == (map[k] ? 100.0 * step + (double)map[k] - 1 : -7.0)); /* a hole keeps its value */
    }
    CHECK(PIOc_closefile(ncid));

    /* a write the I/O tasks refuse: 70000 in a short variable; PIO's code comes back at the next call */
    snprintf(path, sizeof path, "%s/failed.nc", argv[1]);
    int svar, ivalues[PER_TASK * 64 + 1];
    CHECK(PIOc_createfile(iosysid, &ncid, &iotype, path, PIO_CLOBBER));
    CHECK(PIOc_def_dim(ncid, "x", npoints, &dims[1]));
    CHECK(PIOc_def_var(ncid, "s", PIO_SHORT, 1, &dims[1], &svar));
    CHECK(PIOc_enddef(ncid));
    for (int k = 0; k < maplen; k++)
        ivalues[k] = 70000;
    CHECK(PIOc_write_darray(ncid, svar, ioid_int, maplen, ivalues, NULL)); /* sent: the servers check it */
    int failed = PIOc_closefile(ncid);
    EXPECT(failed != PIO_NOERR);
    int lowest = failed, highest = failed;
    MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, comp_comm);
    MPI_Allreduce(MPI_IN_PLACE, &highest, 1, MPI_INT, MPI_MAX, comp_comm);
    EXPECT(lowest == highest);

    EXPECT(!python_loaded());
    CHECK(PIOc_freedecomp(iosysid, ioid));
    CHECK(PIOc_freedecomp(iosysid, ioid_int));
    CHECK(PIOc_free_iosystem(iosysid));
    if (rank == 0)
        printf("pio_async: 2 records written and read back by %d computational tasks through %d I/O tasks; the "
               "failed write: %d on every task\n", ncomp, nio, failed);
    MPI_Comm_free(&comp_comm);
    MPI_Finalize();
    return 0;
}
