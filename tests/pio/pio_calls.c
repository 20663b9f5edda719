/* Every call of climio's PIO API that a PIO model makes, in each iotype and create mode climio has: a 6 x 8
 * field over time written and read through two decompositions (1-based with holes, 0-based), undistributed
 * values, attributes, and the whole header inquired again from the reopened file. Checks its own values and
 * prints one line; tests/test_pio.py checks the files.
 *
 *     mpiexec -n N pio_calls DIR
 *     mpiexec -n N pio_calls DIR S : -n S climio serve    (through S I/O servers, which are PIO's I/O tasks)
 *
 * Ownership: point 0 belongs to no task (the file holds the fill value there); the others go round-robin to the
 * first three tasks, so a fourth task owns nothing; task 0's array starts with an element that is no point. */
#include <pio.h>
#include <stdlib.h>

#include "check.h"

#define NY 6
#define NX 8
#define NSTEPS 3
#define MAXLOCAL (NY * NX + 1)

static int rank;

static float t_value(int step, int point)
{
    return (float)(step * 1000 + (point / NX) * 10 + point % NX) + 0.25f;
}

static int i_value(int step, int point)
{
    return -(step * 100 + point);
}

int main(int argc, char **argv)
{
    int size, old = 0, iosysid, ntasks = 0;
    MPI_Init(&argc, &argv);
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: pio_calls DIR [SERVERS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int servers = argc == 3 ? atoi(argv[2]) : 0;
    MPI_Comm comm = model_comm(servers, &rank);
    MPI_Comm_size(comm, &size);
    CHECK(PIOc_set_log_level(0));
    CHECK(PIOc_set_iosystem_error_handling(PIO_DEFAULT, PIO_BCAST_ERROR, &old));
    EXPECT(old == PIO_INTERNAL_ERROR);
    CHECK(PIOc_Init_Intracomm(comm, (size + 1) / 2, 2, 0, PIO_REARR_BOX, &iosysid));
    CHECK(PIOc_get_numiotasks(iosysid, &ntasks));
    EXPECT(ntasks == (servers && servers < (size + 1) / 2 ? servers : (size + 1) / 2));
    bool iotask = false, active = false;
    int iorank = -2;
    CHECK(PIOc_iam_iotask(iosysid, &iotask));
    CHECK(PIOc_iotask_rank(iosysid, &iorank));
    CHECK(PIOc_iosystem_is_active(iosysid, &active));
    if (servers) /* the servers are the I/O tasks */
        EXPECT(active && !iotask && iorank == -1);
    else
        EXPECT(active && iotask == (rank % 2 == 0) && iorank == (rank % 2 == 0 ? rank / 2 : -1));
    CHECK(PIOc_set_global_log_level(iosysid, 0));
    PIOc_set_buffer_size_limit(1 << 24);
    EXPECT(PIOc_set_buffer_size_limit(1 << 25) == 1 << 24);

    /* This task's points: 1-based (0 a hole in the array), and the same 0-based (-1 a hole). */
    int gdim[2] = {NY, NX}, owners = size < 3 ? size : 3, maplen = 0, point[MAXLOCAL];
    PIO_Offset map1[MAXLOCAL], map0[MAXLOCAL];
    if (rank == 0)
        point[maplen++] = -1;
    for (int p = 1; p < NY * NX; p++)
        if (p % owners == rank)
            point[maplen++] = p;
    for (int k = 0; k < maplen; k++) {
        map1[k] = point[k] + 1;
        map0[k] = point[k];
    }
    int ioid_t, ioid_i, ioid_area, ioid_read;
    CHECK(PIOc_InitDecomp(iosysid, PIO_FLOAT, 2, gdim, maplen, map1, &ioid_t, NULL, NULL, NULL));
    CHECK(PIOc_init_decomp(iosysid, PIO_INT, 2, gdim, maplen, map0, &ioid_i, PIO_REARR_SUBSET, NULL, NULL));
    EXPECT(PIOc_get_local_array_size(ioid_t) == maplen);
    /* the area: one block of rows per task (PIOc_InitDecomp_bc), rows split over all tasks */
    long rows = NY / size, first = rank * rows + (rank < NY % size ? rank : NY % size);
    long start[2] = {first, 0}, count[2] = {rows + (rank < NY % size), NX};
    CHECK(PIOc_InitDecomp_bc(iosysid, PIO_DOUBLE, 2, gdim, start, count, &ioid_area));

    /* R: a decomposition over the records too (time, y, x), every task a round-robin share of the steps' points */
    int gdim3[3] = {NSTEPS, NY, NX}, maplen3 = 0, ioid_r3;
    PIO_Offset map3[NSTEPS * NY * NX];
    for (int p = rank; p < NSTEPS * NY * NX; p += size)
        map3[maplen3++] = p;
    CHECK(PIOc_init_decomp(iosysid, PIO_INT, 3, gdim3, maplen3, map3, &ioid_r3, PIO_REARR_BOX, NULL, NULL));

    char path[4096], title[PIO_MAX_NAME + 1] = "", history[PIO_MAX_NAME + 1] = "";
    int order = -1;
    snprintf(path, sizeof path, "%s/decomp.nc", argv[1]);
    CHECK(PIOc_write_nc_decomp(iosysid, path, 0, ioid_t, "test decomposition", "made by pio_calls", 0));
    CHECK(PIOc_read_nc_decomp(iosysid, path, &ioid_read, comm, PIO_FLOAT, title, history, &order));
    EXPECT(strcmp(title, "test decomposition") == 0 && strcmp(history, "made by pio_calls") == 0 && order == 0);
    EXPECT(PIOc_get_local_array_size(ioid_read) == maplen);
    snprintf(path, sizeof path, "%s/spare.nc", argv[1]);
    CHECK(PIOc_write_nc_decomp(iosysid, path, 0, ioid_i, "spare", "", 0));
    CHECK(PIOc_deletefile(iosysid, path));

    struct {
        int iotype, flags;
        const char *name;
    } cases[] = {{PIO_IOTYPE_PNETCDF, 0, "pnetcdf"},
                 {PIO_IOTYPE_PNETCDF, PIO_64BIT_OFFSET, "pnetcdf-64bit-offset"},
                 {PIO_IOTYPE_PNETCDF, PIO_64BIT_DATA, "pnetcdf-64bit-data"},
                 {PIO_IOTYPE_NETCDF, 0, "netcdf"},
                 {PIO_IOTYPE_NETCDF, PIO_64BIT_OFFSET, "netcdf-64bit-offset"},
                 {PIO_IOTYPE_NETCDF4C, 0, "netcdf4c"},
                 {PIO_IOTYPE_NETCDF4P, 0, "netcdf4p"}};
    int written = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int iotype = cases[c].iotype, netcdf4 = iotype == PIO_IOTYPE_NETCDF4C || iotype == PIO_IOTYPE_NETCDF4P;
        if (!PIOc_iotype_available(iotype))
            continue;
        snprintf(path, sizeof path, "%s/%s.nc", argv[1], cases[c].name);
        int ncid, dim[4], t, i, lat, label, area, r;
        CHECK(PIOc_createfile(iosysid, &ncid, &iotype, path, PIO_CLOBBER | cases[c].flags));
        EXPECT(PIOc_File_is_Open(ncid));
        CHECK(PIOc_def_dim(ncid, "time", PIO_UNLIMITED, &dim[0]));
        CHECK(PIOc_def_dim(ncid, "y", NY, &dim[1]));
        CHECK(PIOc_def_dim(ncid, "x", NX, &dim[2]));
        CHECK(PIOc_def_dim(ncid, "nchar", 4, &dim[3]));
        CHECK(PIOc_def_var(ncid, "T", PIO_FLOAT, 3, dim, &t));
        CHECK(PIOc_def_var(ncid, "I", PIO_INT, 3, dim, &i));
        CHECK(PIOc_def_var(ncid, "lat", PIO_DOUBLE, 1, &dim[1], &lat));
        CHECK(PIOc_def_var(ncid, "label", PIO_CHAR, 1, &dim[3], &label));
        CHECK(PIOc_def_var_fill(ncid, label, PIO_FILL, "-")); /* a char fill value: stored as text */
        CHECK(PIOc_def_var(ncid, "area", PIO_DOUBLE, 2, &dim[1], &area));
        CHECK(PIOc_def_var(ncid, "R", PIO_INT, 3, dim, &r));
        int spare;  /* a dimension and a variable renamed, an attribute renamed and deleted */
        CHECK(PIOc_def_dim(ncid, "spare_dim", 2, &spare));
        CHECK(PIOc_rename_dim(ncid, spare, "nchar2"));
        CHECK(PIOc_def_var(ncid, "spare", PIO_INT, 1, &spare, &spare));
        CHECK(PIOc_rename_var(ncid, spare, "count"));
        CHECK(PIOc_put_att_text(ncid, PIO_GLOBAL, "draft", 2, "no"));
        CHECK(PIOc_rename_att(ncid, PIO_GLOBAL, "draft", "note"));
        CHECK(PIOc_del_att(ncid, PIO_GLOBAL, "note"));
        float t_fill = -999.0f;
        int i_fill = -1, range[2] = {-100000, 0};
        short version = 2;
        double scale[2] = {0.5, 2.0};
        CHECK(PIOc_put_att_text(ncid, t, "units", 1, "K"));
        CHECK(PIOc_put_att_float(ncid, t, "_FillValue", PIO_FLOAT, 1, &t_fill));
        CHECK(PIOc_put_att_int(ncid, i, "valid_range", PIO_INT, 2, range));
        CHECK(PIOc_def_var_fill(ncid, i, 0, &i_fill));
        CHECK(PIOc_put_att_double(ncid, PIO_GLOBAL, "scale", PIO_DOUBLE, 2, scale));
        CHECK(PIOc_put_att_short(ncid, PIO_GLOBAL, "version", PIO_SHORT, 1, &version));
        CHECK(PIOc_put_att(ncid, lat, "units", PIO_CHAR, 13, "degrees_north"));
        if (netcdf4) {
            PIO_Offset chunks[3] = {1, NY, NX};
            CHECK(PIOc_def_var_deflate(ncid, t, 1, 1, 4));
            CHECK(PIOc_def_var_chunking(ncid, i, 0, chunks));
        }
        CHECK(PIOc_enddef(ncid));

        double lats[NY];
        for (int y = 0; y < NY; y++)
            lats[y] = -75.0 + 30.0 * y;
        CHECK(PIOc_put_var_double(ncid, lat, lats));
        CHECK(PIOc_put_var_text(ncid, label, "abcd"));
        int counts[2] = {7, 8};
        CHECK(PIOc_put_var_int(ncid, spare, counts));
        float tdata[MAXLOCAL];
        int idata[MAXLOCAL];
        for (int step = 0; step < NSTEPS; step++) {
            for (int k = 0; k < maplen; k++) {
                tdata[k] = point[k] < 0 ? 12345.0f : t_value(step, point[k]);
                idata[k] = point[k] < 0 ? 777 : i_value(step, point[k]);
            }
            if (step == 0)
                CHECK(PIOc_setframe(ncid, t, 0));
            else
                CHECK(PIOc_advanceframe(ncid, t));
            CHECK(PIOc_write_darray(ncid, t, ioid_t, maplen, tdata, NULL));
            int frame[1] = {step};
            CHECK(PIOc_write_darray_multi(ncid, &i, ioid_i, 1, maplen, idata, frame, NULL, 0));
        }
        double adata[NY * NX];
        for (int k = 0; k < count[0] * NX; k++)
            adata[k] = 1e6 + (double)(first * NX + k);
        CHECK(PIOc_write_darray(ncid, area, ioid_area, count[0] * NX, adata, NULL));
        int rdata[NSTEPS * NY * NX];
        for (int k = 0; k < maplen3; k++)
            rdata[k] = 7 * (int)map3[k];
        CHECK(PIOc_write_darray(ncid, r, ioid_r3, maplen3, rdata, NULL));
        CHECK(PIOc_put_vard_int(ncid, i, ioid_i, NSTEPS - 1, idata)); /* the last record again, through vard */
        CHECK(PIOc_sync(ncid));
        /* read back through the open file */
        float back[MAXLOCAL];
        CHECK(PIOc_setframe(ncid, t, 1));
        CHECK(PIOc_read_darray(ncid, t, ioid_t, maplen, back));
        for (int k = 0; k < maplen; k++)
            EXPECT(point[k] < 0 || back[k] == t_value(1, point[k]));
        CHECK(PIOc_closefile(ncid));

        /* the file again, from its header */
        CHECK(PIOc_openfile(iosysid, &ncid, &iotype, path, PIO_NOWRITE));
        int ndims, nvars, natts, unlimdim, format, varid, xtype, vdims[4], nvatts, attid;
        CHECK(PIOc_inq(ncid, &ndims, &nvars, &natts, &unlimdim));
        EXPECT(ndims == 5 && nvars == 7 && natts == 2 && unlimdim == 0);
        CHECK(PIOc_inq_format(ncid, &format));
        EXPECT(format == (netcdf4 ? NC_FORMAT_NETCDF4 : cases[c].flags == PIO_64BIT_DATA ? NC_FORMAT_CDF5
                          : cases[c].flags == PIO_64BIT_OFFSET ? NC_FORMAT_64BIT_OFFSET : NC_FORMAT_CLASSIC));
        char name[PIO_MAX_NAME + 1];
        PIO_Offset len;
        CHECK(PIOc_inq_dim(ncid, 1, name, &len));
        EXPECT(strcmp(name, "y") == 0 && len == NY);
        CHECK(PIOc_inq_dimlen(ncid, 0, &len));
        EXPECT(len == NSTEPS);
        CHECK(PIOc_inq_dimname(ncid, 3, name));
        EXPECT(strcmp(name, "nchar") == 0);
        CHECK(PIOc_inq_dimid(ncid, "x", &varid));
        EXPECT(varid == 2);
        CHECK(PIOc_inq_unlimdim(ncid, &unlimdim));
        EXPECT(unlimdim == 0);
        CHECK(PIOc_inq_ndims(ncid, &ndims));
        CHECK(PIOc_inq_nvars(ncid, &nvars));
        CHECK(PIOc_inq_natts(ncid, &natts));
        EXPECT(ndims == 5 && nvars == 7 && natts == 2);
        CHECK(PIOc_inq_varid(ncid, "T", &varid));
        CHECK(PIOc_inq_var(ncid, varid, name, &xtype, &ndims, vdims, &nvatts));
        EXPECT(strcmp(name, "T") == 0 && xtype == PIO_FLOAT && ndims == 3 && vdims[0] == 0 && vdims[2] == 2);
        EXPECT(nvatts == 2);
        CHECK(PIOc_inq_varname(ncid, 1, name));
        EXPECT(strcmp(name, "I") == 0);
        CHECK(PIOc_inq_vartype(ncid, 2, &xtype));
        EXPECT(xtype == PIO_DOUBLE);
        CHECK(PIOc_inq_varndims(ncid, 3, &ndims));
        EXPECT(ndims == 1);
        CHECK(PIOc_inq_vardimid(ncid, 4, vdims));
        EXPECT(vdims[0] == 1 && vdims[1] == 2);
        CHECK(PIOc_inq_varnatts(ncid, 2, &nvatts));
        EXPECT(nvatts == 1);
        CHECK(PIOc_inq_att(ncid, t, "units", &xtype, &len));
        EXPECT(xtype == PIO_CHAR && len == 1);
        CHECK(PIOc_inq_attlen(ncid, PIO_GLOBAL, "scale", &len));
        EXPECT(len == 2);
        CHECK(PIOc_inq_atttype(ncid, PIO_GLOBAL, "version", &xtype));
        EXPECT(xtype == PIO_SHORT);
        CHECK(PIOc_inq_attid(ncid, t, "_FillValue", &attid));
        EXPECT(attid == 1);
        CHECK(PIOc_inq_attname(ncid, PIO_GLOBAL, 1, name));
        EXPECT(strcmp(name, "version") == 0);
        char units[8] = "";
        float fill_back = 0;
        double scale_back[2] = {0, 0};
        int range_back[2] = {0, 0}, no_fill = -1, fill_i = 0;
        CHECK(PIOc_get_att_text(ncid, t, "units", units));
        EXPECT(units[0] == 'K');
        CHECK(PIOc_get_att_float(ncid, t, "_FillValue", &fill_back));
        EXPECT(fill_back == t_fill);
        CHECK(PIOc_get_att_double(ncid, PIO_GLOBAL, "scale", scale_back));
        EXPECT(scale_back[0] == 0.5 && scale_back[1] == 2.0);
        CHECK(PIOc_get_att_int(ncid, i, "valid_range", range_back));
        EXPECT(range_back[0] == range[0] && range_back[1] == range[1]);
        CHECK(PIOc_get_att(ncid, PIO_GLOBAL, "version", &version));
        EXPECT(version == 2);
        int storage = -1;
        PIO_Offset chunk_back[3] = {0, 0, 0};
        CHECK(PIOc_inq_var_chunking(ncid, i, &storage, chunk_back));
        EXPECT(netcdf4 ? storage == 0 && chunk_back[0] == 1 && chunk_back[1] == NY && chunk_back[2] == NX
                       : storage == 1);
        CHECK(PIOc_inq_var_fill(ncid, i, &no_fill, &fill_i));
        EXPECT(fill_i == i_fill);
        double lat_back[NY];
        CHECK(PIOc_get_var_double(ncid, lat, lat_back));
        for (int y = 0; y < NY; y++)
            EXPECT(lat_back[y] == lats[y]);
        float row[NX];
        PIO_Offset rstart[3] = {2, 1, 0}, rcount[3] = {1, 1, NX}, one[3] = {1, 2, 3};
        CHECK(PIOc_get_vara_float(ncid, t, rstart, rcount, row));
        for (int x = 0; x < NX; x++)
            EXPECT(row[x] == t_value(2, NX + x));
        int element = 0;
        CHECK(PIOc_get_var1_int(ncid, i, one, &element));
        EXPECT(element == i_value(1, 2 * NX + 3));
        char text[5] = "";
        CHECK(PIOc_get_var_text(ncid, label, text));
        EXPECT(strncmp(text, "abcd", 4) == 0);
        int vback[MAXLOCAL];
        CHECK(PIOc_get_vard_int(ncid, i, ioid_i, 1, vback));
        for (int k = 0; k < maplen; k++)
            EXPECT(point[k] < 0 || vback[k] == i_value(1, point[k]));
        int rback[NSTEPS * NY * NX];
        CHECK(PIOc_read_darray(ncid, r, ioid_r3, maplen3, rback));
        for (int k = 0; k < maplen3; k++)
            EXPECT(rback[k] == 7 * (int)map3[k]);
        for (int step = 0; step < NSTEPS; step++) { /* through the decomposition read from its file */
            float values[MAXLOCAL] = {5.5f}; /* a hole keeps what the array held */
            int got_i[MAXLOCAL];
            CHECK(PIOc_setframe(ncid, t, step));
            CHECK(PIOc_read_darray(ncid, t, ioid_read, PIOc_get_local_array_size(ioid_read), values));
            CHECK(PIOc_setframe(ncid, i, step));
            CHECK(PIOc_read_darray(ncid, i, ioid_i, maplen, got_i));
            for (int k = 0; k < maplen; k++)
                if (point[k] >= 0) {
                    EXPECT(values[k] == t_value(step, point[k]));
                    EXPECT(got_i[k] == i_value(step, point[k]));
                } else
                    EXPECT(values[k] == 5.5f);
        }
        CHECK(PIOc_closefile(ncid));
        written++;
    }
    CHECK(PIOc_freedecomp(iosysid, ioid_t));
    CHECK(PIOc_freedecomp(iosysid, ioid_i));
    CHECK(PIOc_freedecomp(iosysid, ioid_area));
    CHECK(PIOc_freedecomp(iosysid, ioid_read));
    CHECK(PIOc_freedecomp(iosysid, ioid_r3));
    CHECK(PIOc_free_iosystem(iosysid));
    if (rank == 0)
        printf("pio_calls: %d files written and read back on %d tasks (%d I/O tasks)\n", written, size, ntasks);
    MPI_Finalize();
    return 0;
}
