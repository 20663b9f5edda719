/* The PIO calls climio refuses, each once, under PIO_RETURN_ERROR: prints "name code" per refusal on task 0
 * (tests/test_pio.py checks the codes and the one line each says on stderr), then writes the file the refused
 * calls left usable. With a second argument "abort", the first refusal under PIO's default handler
 * (PIO_INTERNAL_ERROR) ends the job instead.
 *
 *     mpiexec -n N pio_refusals DIR [abort] [SERVERS]    (SERVERS: climio serve ranks, the last application) */
#include <pio.h>
#include <stdlib.h>

#include "check.h"

static int rank;

static void say(const char *name, int code)
{
    if (rank == 0)
        printf("%s %d\n", name, code);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int size, iosysid, ioid, ncid, dim[2], varid, ivar, bad;
    MPI_Init(&argc, &argv);
    int aborting = 0, servers = 0;
    for (int a = 2; a < argc; a++)
        if (strcmp(argv[a], "abort") == 0)
            aborting = 1;
        else
            servers = atoi(argv[a]);
    MPI_Comm comm = model_comm(servers, &rank);
    MPI_Comm_size(comm, &size);
    CHECK(PIOc_Init_Intracomm(comm, size, 1, 0, PIO_REARR_BOX, &iosysid));
    if (!aborting)
        CHECK(PIOc_set_iosystem_error_handling(iosysid, PIO_RETURN_ERROR, NULL));
    int gdim[1] = {4 * size};
    PIO_Offset map[4], iostart[1] = {0}, iocount[1] = {4};
    for (int k = 0; k < 4; k++)
        map[k] = rank * 4 + k + 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/refusals.nc", argv[1]);
    int iotype = PIO_IOTYPE_PNETCDF;
    if (aborting) {
        CHECK(PIOc_createfile(iosysid, &ncid, &iotype, path, PIO_CLOBBER));
        CHECK(PIOc_def_dim(ncid, "x", gdim[0], dim));
        say("def_var bad type", PIOc_def_var(ncid, "v", 99, 1, dim, &varid)); /* the job ends here */
        say("not reached", 0);
        MPI_Finalize();
        return 0;
    }
    say("InitDecomp iostart", PIOc_InitDecomp(iosysid, PIO_INT, 1, gdim, 4, map, &bad, NULL, iostart, iocount));
    CHECK(PIOc_InitDecomp(iosysid, PIO_DOUBLE, 1, gdim, 4, map, &ioid, NULL, NULL, NULL));
    int gdal = PIO_IOTYPE_GDAL;
    say("createfile GDAL", PIOc_createfile(iosysid, &bad, &gdal, path, PIO_CLOBBER));
    CHECK(PIOc_createfile(iosysid, &ncid, &iotype, path, PIO_CLOBBER));
    CHECK(PIOc_def_dim(ncid, "time", PIO_UNLIMITED, &dim[0]));
    CHECK(PIOc_def_dim(ncid, "x", gdim[0], &dim[1]));
    say("def_dim same name", PIOc_def_dim(ncid, "x", 3, &bad));
    say("def_var bad type", PIOc_def_var(ncid, "v", 99, 2, dim, &bad));
    CHECK(PIOc_def_var(ncid, "v", PIO_DOUBLE, 2, dim, &varid));
    CHECK(PIOc_def_var(ncid, "i", PIO_SHORT, 1, &dim[1], &ivar));
    PIO_Offset chunks[2] = {1, 4};
    say("def_var_chunking classic", PIOc_def_var_chunking(ncid, varid, 0, chunks));
    say("def_var_deflate classic", PIOc_def_var_deflate(ncid, varid, 1, 1, 1));
    CHECK(PIOc_enddef(ncid));
    say("redef", PIOc_redef(ncid));
    say("def_dim after enddef", PIOc_def_dim(ncid, "y", 3, &bad));
    int out_of_range[2] = {1, 70000};
    PIO_Offset start[1] = {0}, count[1] = {2}, stride[1] = {2};
    say("put_vara out of range", PIOc_put_vara_int(ncid, ivar, start, count, out_of_range));
    say("put_vars stride", PIOc_put_vars_int(ncid, ivar, start, count, stride, out_of_range));
    say("inq_varid missing", PIOc_inq_varid(ncid, "nope", &bad));
    say("inq_var bad id", PIOc_inq_var(ncid, 7, NULL, NULL, NULL, NULL, NULL));
    say("get_att missing", PIOc_get_att_double(ncid, varid, "units", NULL));
    say("closefile bad ncid", PIOc_closefile(ncid + 100));
    double values[4];
    for (int k = 0; k < 4; k++)
        values[k] = map[k] * 1.5;
    CHECK(PIOc_setframe(ncid, varid, 0));
    if (!servers) /* attached: held writes are each task's own (served, a refused one abandons its file) */
        say("write_darray bad varid", PIOc_write_darray(ncid, varid + 7, ioid, 4, values, NULL));
    CHECK(PIOc_write_darray(ncid, varid, ioid, 4, values, NULL));
    short small[2] = {1, 2};
    CHECK(PIOc_put_vara_short(ncid, ivar, start, count, small));
    CHECK(PIOc_closefile(ncid));
    say("openfile PIO_WRITE", PIOc_openfile(iosysid, &bad, &iotype, path, PIO_WRITE));
    if (!servers && size > 1) { /* the last task alone refuses a write the others hold: caught at the close */
        snprintf(path, sizeof path, "%s/diverged.nc", argv[1]);
        CHECK(PIOc_createfile(iosysid, &ncid, &iotype, path, PIO_CLOBBER));
        CHECK(PIOc_def_dim(ncid, "time", PIO_UNLIMITED, &dim[0]));
        CHECK(PIOc_def_dim(ncid, "x", gdim[0], &dim[1]));
        CHECK(PIOc_def_var(ncid, "v", PIO_DOUBLE, 2, dim, &varid));
        CHECK(PIOc_enddef(ncid));
        int refused = PIOc_write_darray(ncid, varid, ioid, rank == size - 1 ? 2 : 4, values, NULL);
        if ((refused != PIO_NOERR) != (rank == size - 1))
            return printf("write_darray on task %d returned %d\n", rank, refused), 1;
        say("closefile after one task refused a write", PIOc_closefile(ncid));
    }
    CHECK(PIOc_freedecomp(iosysid, ioid));
    CHECK(PIOc_free_iosystem(iosysid));
    CHECK(PIOc_Init_Intracomm(comm, size, 1, 0, PIO_REARR_BOX, &iosysid)); /* a system again, after the first */
    CHECK(PIOc_get_numiotasks(iosysid, &bad));
    CHECK(PIOc_free_iosystem(iosysid));
    if (rank == 0)
        printf("pio_refusals: done\n");
    MPI_Finalize();
    return 0;
}
