/* Write decomposed fields through climio's C API from halo'd local arrays on a 2-D process grid: a 3-D
 * temperature T(time, lev, y, x) in float, a 2-D surface pressure ps(time, y, x) in double and the cell
 * areas area(y, x) without records; and the undistributed coordinates lat(y), lon(x), lev(lev) and the
 * time bounds time_bnds(time, nv), given whole on every rank (rank 0's are written).
 *
 *   mpiexec -n 4 write_fields OUT.nc [MODES [STRATEGIES [NSTEPS]]]    (default cdf5 agg 3)
 *   mpiexec -n 4 write_fields OUT.nc serial,hdf5,cdf5 auto           (OUT.serial.nc, OUT.hdf5.nc, ...)
 *   mpiexec -n 4 write_fields OUT.nc serial,cdf5 root,stripe         (a strategy per mode)
 *   mpiexec -n 4 write_fields OUT.nc : -n 1 climio serve            (the same file, written by a server)
 *
 * Every value tells where it belongs: T = step*1e4 + lev*1e3 + y*NX + x (ps: the same, level 0, plus 0.5),
 * so the file can be checked point by point; the halo holds -999, which must never reach the file.
 * The last record of T is then read back through the same decomposition and checked, its halo too: a read
 * gives the halo the variable's fill value (T has no _FillValue: netCDF's default). The program runs on
 * the communicator climio_model_comm gives: every rank of the launch but the I/O servers'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <climio.h>

enum { NY = 24, NX = 36, NLEV = 4, HALO = 2 };
#define FILL_FLOAT 9.9692099683868690e+36f /* netCDF's NC_FILL_FLOAT */

/* Block `index` of n points split into `parts`, the first n % parts one point longer (climio's own split:
 * with it, a process grid of blocks also gets the rows and cols strategies). */
static void block_range(long long n, int parts, int index, long long *start, long long *count)
{
    long long base = n / parts, extra = n % parts;
    *start = index * base + (index < extra ? index : extra);
    *count = base + (index < extra);
}

#define CHECK(call)                                                                 \
    do {                                                                            \
        int status_ = (call);                                                       \
        if (status_ != CLIMIO_NOERR) {                                              \
            char message_[512];                                                     \
            climio_errmsg(message_, sizeof message_);                               \
            fprintf(stderr, "write_fields: %s (%s)\n", message_, climio_strerror(status_)); \
            return 1;                                                               \
        }                                                                           \
    } while (0)

static double value(int step, int lev, long long y, long long x)
{
    return step * 1e4 + lev * 1e3 + (double)(y * NX + x);
}

/* Item k of a comma-separated list into out (a list of one item gives it for every k). */
static void item(const char *list, int k, char *out, size_t size)
{
    while (k-- > 0 && strchr(list, ','))
        list = strchr(list, ',') + 1;
    snprintf(out, size, "%.*s", (int)strcspn(list, ","), list);
}

/* Write one file in one mode and read its last record of T back: the number of values that differ. */
static int write_and_read(MPI_Comm comm, int iosys, const char *path, const char *mode, const char *strategy,
                          int nsteps, long long *wrong);

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 2) {
        fprintf(stderr, "usage: write_fields OUT.nc [MODES [STRATEGIES [NSTEPS]]]\n");
        MPI_Finalize();
        return 2;
    }
    const char *modes = argc > 2 ? argv[2] : "cdf5", *strategies = argc > 3 ? argv[3] : "agg";
    int nsteps = argc > 4 ? atoi(argv[4]) : 3, several = strchr(modes, ',') != NULL, rank, status = 0, iosys;
    int nmodes = 1;
    for (const char *c = modes; *c; c++)
        nmodes += *c == ',';
    MPI_Comm comm;
    CHECK(climio_model_comm(&comm));
    MPI_Comm_rank(comm, &rank);
    CHECK(climio_init_intracomm(comm, &iosys));
    for (int k = 0; k < nmodes && !status; k++) {
        char mode[64], strategy[64], path[4096];
        item(modes, k, mode, sizeof mode);
        item(strategies, k, strategy, sizeof strategy);
        const char *dot = strrchr(argv[1], '.');
        if (several && dot)  /* the mode before the suffix: out.nc -> out.cdf5.nc */
            snprintf(path, sizeof path, "%.*s.%s%s", (int)(dot - argv[1]), argv[1], mode, dot);
        else
            snprintf(path, sizeof path, several ? "%s.%s" : "%s", argv[1], mode);
        long long wrong = 0;
        status = write_and_read(comm, iosys, path, mode, strategy, nsteps, &wrong);
        if (rank == 0 && !status)
            printf("write_fields: %s written and read back, %lld values differ\n", path, wrong);
        status = status ? status : wrong != 0;
    }
    CHECK(climio_finalize(iosys));
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return status;
}

static int write_and_read(MPI_Comm comm, int iosys, const char *path, const char *mode, const char *strategy,
                          int nsteps, long long *wrong)
{
    int rank, size, dims[2] = {0, 0};
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Dims_create(size, 2, dims);              /* dims[0] rows of ranks along y, dims[1] along x */
    int row = rank / dims[1], col = rank % dims[1];
    long long grid[2] = {NY, NX}, start[2], count[2];
    block_range(NY, dims[0], row, &start[0], &count[0]);
    block_range(NX, dims[1], col, &start[1], &count[1]);
    long long ly = count[0] + 2 * HALO, lx = count[1] + 2 * HALO;

    float *t = malloc(sizeof(float) * NLEV * ly * lx);
    double *ps = malloc(sizeof(double) * ly * lx);

    int ioid, ncid, dimids[4], nv, t_id, ps_id, time_id, area_id, lat_id, lon_id, lev_id, bnds_id;
    CHECK(climio_init_decomp_blocks(iosys, 2, grid, start, count, HALO, &ioid));
    CHECK(climio_createfile(iosys, ioid, &ncid, mode, strategy, path, CLIMIO_CLOBBER));
    CHECK(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dimids[0]));
    CHECK(climio_def_dim(ncid, "lev", NLEV, &dimids[1]));
    CHECK(climio_def_dim(ncid, "y", NY, &dimids[2]));
    CHECK(climio_def_dim(ncid, "x", NX, &dimids[3]));
    CHECK(climio_def_dim(ncid, "nv", 2, &nv));
    CHECK(climio_def_var(ncid, "time", CLIMIO_DOUBLE, 1, dimids, &time_id));
    CHECK(climio_put_att_text(ncid, time_id, "units", "hours since 2016-07-01 00:00:00"));
    CHECK(climio_def_var(ncid, "T", CLIMIO_FLOAT, 4, dimids, &t_id));
    CHECK(climio_put_att_text(ncid, t_id, "units", "K"));
    int ps_dims[3] = {dimids[0], dimids[2], dimids[3]};
    CHECK(climio_def_var(ncid, "ps", CLIMIO_DOUBLE, 3, ps_dims, &ps_id));
    double valid[2] = {0.0, 1e6};
    CHECK(climio_put_att_double(ncid, ps_id, "valid_range", CLIMIO_DOUBLE, 2, valid));
    CHECK(climio_def_var(ncid, "area", CLIMIO_DOUBLE, 2, &dimids[2], &area_id));
    CHECK(climio_put_att_text(ncid, area_id, "units", "m2"));
    CHECK(climio_def_var(ncid, "lat", CLIMIO_DOUBLE, 1, &dimids[2], &lat_id));
    CHECK(climio_put_att_text(ncid, lat_id, "units", "degrees_north"));
    CHECK(climio_def_var(ncid, "lon", CLIMIO_DOUBLE, 1, &dimids[3], &lon_id));
    CHECK(climio_put_att_text(ncid, lon_id, "units", "degrees_east"));
    CHECK(climio_def_var(ncid, "lev", CLIMIO_INT, 1, &dimids[1], &lev_id));
    int bnds_dims[2] = {dimids[0], nv};
    CHECK(climio_def_var(ncid, "time_bnds", CLIMIO_DOUBLE, 2, bnds_dims, &bnds_id));
    CHECK(climio_put_att_text(ncid, time_id, "bounds", "time_bnds"));
    CHECK(climio_put_att_text(ncid, CLIMIO_GLOBAL, "title", "climio C API example"));
    CHECK(climio_enddef(ncid));

    double lat[NY], lon[NX];
    int lev[NLEV];
    for (int j = 0; j < NY; j++) lat[j] = -90.0 + 180.0 * (j + 0.5) / NY;
    for (int i = 0; i < NX; i++) lon[i] = 360.0 * i / NX;
    for (int k = 0; k < NLEV; k++) lev[k] = 1000 - 250 * k;
    CHECK(climio_put_var(ncid, lat_id, CLIMIO_NOFRAME, CLIMIO_DOUBLE, NY, lat));
    CHECK(climio_put_var(ncid, lon_id, CLIMIO_NOFRAME, CLIMIO_DOUBLE, NX, lon));
    CHECK(climio_put_var(ncid, lev_id, CLIMIO_NOFRAME, CLIMIO_INT, NLEV, lev));
    for (long long j = 0; j < ly; j++)     /* the areas: any value tells its cell, the halo -999 */
        for (long long i = 0; i < lx; i++) {
            int inside = j >= HALO && j < ly - HALO && i >= HALO && i < lx - HALO;
            ps[j * lx + i] = inside ? 1e6 + (double)((start[0] + j - HALO) * NX + start[1] + i - HALO) : -999.0;
        }
    CHECK(climio_write_darray(ncid, area_id, CLIMIO_NOFRAME, CLIMIO_DOUBLE, ly * lx, ps));

    for (int step = 0; step < nsteps; step++) {
        for (long long j = 0; j < ly; j++)
            for (long long i = 0; i < lx; i++) {
                int inside = j >= HALO && j < ly - HALO && i >= HALO && i < lx - HALO;
                long long y = start[0] + j - HALO, x = start[1] + i - HALO;
                for (int k = 0; k < NLEV; k++)
                    t[(k * ly + j) * lx + i] = inside ? (float)value(step, k, y, x) : -999.0f;
                ps[j * lx + i] = inside ? value(step, 0, y, x) + 0.5 : -999.0;
            }
        double bounds[2] = {3.0 * step - 1.5, 3.0 * step + 1.5};
        CHECK(climio_put_time(ncid, step, 3.0 * step));
        CHECK(climio_put_var(ncid, bnds_id, step, CLIMIO_DOUBLE, 2, bounds));
        CHECK(climio_write_darray(ncid, t_id, step, CLIMIO_FLOAT, NLEV * ly * lx, t));
        CHECK(climio_write_darray(ncid, ps_id, step, CLIMIO_DOUBLE, ly * lx, ps));
    }
    CHECK(climio_closefile(ncid));

    /* Read the last record of T back into the halo'd local array, through the same decomposition. */
    int in, t_in;
    CHECK(climio_openfile(iosys, ioid, &in, "auto", path));
    CHECK(climio_inq_varid(in, "T", &t_in));
    CHECK(climio_read_darray(in, t_in, nsteps - 1, CLIMIO_FLOAT, NLEV * ly * lx, t));
    for (int k = 0; k < NLEV; k++)
        for (long long j = 0; j < ly; j++)
            for (long long i = 0; i < lx; i++) {
                int inside = j >= HALO && j < ly - HALO && i >= HALO && i < lx - HALO;
                *wrong += t[(k * ly + j) * lx + i] != (inside ? (float)value(nsteps - 1, k, start[0] + j - HALO,
                                                                             start[1] + i - HALO) : FILL_FLOAT);
            }
    CHECK(climio_closefile(in));
    MPI_Allreduce(MPI_IN_PLACE, wrong, 1, MPI_LONG_LONG, MPI_SUM, comm);
    CHECK(climio_free_decomp(iosys, ioid));
    free(t);
    free(ps);
    return 0;
}
