"""The calls of climio's C API one by one, from small C programs: each is written here, compiled once per
module with mpicc and ``pkg-config --cflags --libs climio`` (as a model is built), and run under mpiexec at
1 to 3 ranks. The programs print what every call returned on every rank (``code NAME RANK CODE``, with
``msg NAME RANK TEXT`` for errors) and the values they read (``val NAME RANK INDEX VALUE``); the tests parse
that and check the files with netCDF4-python against values worked out here, independently of climio.

Covered: PIO compmaps (holes, padding entries, a rank owning nothing), reading files written by
netCDF4-python (records and levels, fixed variables, halos), the order of calls and what a failed call
leaves behind, type conversions both ways, deflate and quantization, CLOBBER/NOCLOBBER, climio_errmsg and
climio_strerror, several files and I/O systems at once, records out of order, climio_put_var's undistributed
variables beside a decomposed field without records, a second climio_finalize. Each rank prints into a file
of its own (CAPI_TEST_LOGS): mpiexec may split long lines of several ranks.

To start MPI and the library's Python once per rank count rather than once per run, every scenario but the
second climio_finalize (which ends its process) is also compiled into one table driver (DRIVER): one launch per
rank count runs that rank count's scenarios one after the other, each with its own arguments, its own directory
and its own log files, and its return value in a file (``merged`` below); the errmsg and multi scenarios run
first in their tables, as they would in a process of their own.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import netCDF4
import numpy as np
import pytest
from conftest import climio_pkg_config, run

NOERR, EBADID, EINVAL, ESTATE, EIO, EINTERNAL, ENOMEM = 0, -1, -2, -3, -4, -5, -6
F4_FILL = np.float32(netCDF4.default_fillvals["f4"])
F8_FILL = np.float64(netCDF4.default_fillvals["f8"])
TIMEOUT = 60

# ------------------------------------------------------------------------------------------------ the C side

PRELUDE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <mpi.h>
#include <climio.h>

static int rank, nranks;

/* A call that must succeed: else the job ends with status 3 and says which call failed. */
#define MUST(call)                                                                                     \
    do {                                                                                               \
        int s_ = (call);                                                                               \
        if (s_ != CLIMIO_NOERR) {                                                                      \
            char m_[2048];                                                                             \
            climio_errmsg(m_, sizeof m_);                                                              \
            fprintf(stderr, "rank %d line %d: %s returned %d: %s\n", rank, __LINE__, #call, s_, m_);   \
            fflush(stderr);                                                                            \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                              \
        }                                                                                              \
    } while (0)

/* Every rank prints what a call returned, and its message when it failed. */
static inline int report(const char *name, int code)
{
    char m[2048] = "";
    if (code != CLIMIO_NOERR)
        climio_errmsg(m, sizeof m);
    printf("code %s %d %d\n", name, rank, code);
    if (code != CLIMIO_NOERR)
        printf("msg %s %d %s\n", name, rank, m);
    fflush(stdout);
    return code;
}

static inline void exists(const char *name, const char *path)
{
    if (rank == 0) {
        printf("exists %s %d\n", name, access(path, F_OK) == 0);
        fflush(stdout);
    }
}

static inline void print_f(const char *name, const float *a, long long n)
{
    for (long long i = 0; i < n; i++)
        printf("val %s %d %lld %.9g\n", name, rank, i, a[i]);
    fflush(stdout);
}

static inline void print_d(const char *name, const double *a, long long n)
{
    for (long long i = 0; i < n; i++)
        printf("val %s %d %lld %.17g\n", name, rank, i, a[i]);
    fflush(stdout);
}

static inline void print_i(const char *name, const int *a, long long n)
{
    for (long long i = 0; i < n; i++)
        printf("val %s %d %lld %d\n", name, rank, i, a[i]);
    fflush(stdout);
}

/* Block `index` of n points in `parts`, the first n % parts one longer. */
static inline void block_range(long long n, int parts, int index, long long *start, long long *count)
{
    long long base = n / parts, extra = n % parts;
    *start = index * base + (index < extra ? index : extra);
    *count = base + (index < extra);
}

/* A (ny, nx) grid split into bands of rows over the ranks of comm. */
static inline void rows(int iosys, MPI_Comm comm, long long ny, long long nx, int halo, long long *start,
                 long long *count, int *ioid)
{
    int r, n;
    long long grid[2] = {ny, nx};
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    block_range(ny, n, r, &start[0], &count[0]);
    start[1] = 0;
    count[1] = nx;
    MUST(climio_init_decomp_blocks(iosys, 2, grid, start, count, halo, ioid));
}

/* time(UNLIMITED), y(4), x(6), the record coordinate and v(time, y, x) of xtype. */
static inline void basic(int ncid, int xtype, int *dims, int *v)
{
    int t;
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "y", 4, &dims[1]));
    MUST(climio_def_dim(ncid, "x", 6, &dims[2]));
    MUST(climio_def_var(ncid, "time", CLIMIO_DOUBLE, 1, dims, &t));
    MUST(climio_def_var(ncid, "v", xtype, 3, dims, v));
}

int scenario(int argc, char **argv);

#ifdef CLIMIO_TEST_ENTRY
/* Built into the table driver (DRIVER below): the scenario is one of several run in one process, each printing
   into log files of its own; rank 0 writes its return value to LOGS/status.txt once every rank is done. */
int CLIMIO_TEST_ENTRY(int argc, char **argv, const char *logs)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    char log[4200];
    snprintf(log, sizeof log, "%s/rank%d.txt", logs, rank);
    fflush(stdout);
    if (!freopen(log, "w", stdout))
        MPI_Abort(MPI_COMM_WORLD, 4);
    int status = scenario(argc, argv);
    if (rank == 0) {
        printf("done\n");
        fflush(stdout);
    }
    fflush(stdout);
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        snprintf(log, sizeof log, "%s/status.txt", logs);
        FILE *fp = fopen(log, "w");
        if (!fp)
            MPI_Abort(MPI_COMM_WORLD, 4);
        fprintf(fp, "%d\n", status);
        fclose(fp);
    }
    return status;
}
#else
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *logs = getenv("CAPI_TEST_LOGS");   /* one file per rank: mpiexec may split long lines */
    if (logs) {
        char log[4200];
        snprintf(log, sizeof log, "%s/rank%d.txt", logs, rank);
        if (!freopen(log, "w", stdout))
            MPI_Abort(MPI_COMM_WORLD, 4);
    }
    int status = scenario(argc, argv);
    if (rank == 0) {
        printf("done\n");
        fflush(stdout);
    }
    MPI_Finalize();
    return status;
}
#endif
"""

# A (4, 5) grid under a PIO compmap: ranks 0 and 1 own alternate points (rank 1 lists its points backwards),
# grid points 5, 6 and 13 are holes (their local elements have compmap entry 0), rank 0 has one more padding
# entry 0 first, and ranks from 2 on own nothing (maplen 0, compmap NULL). T(time, lev, y, x) float and
# ps(time, y, x) double (with its own _FillValue) are written for two frames, then read back.
COMPMAP = r"""
enum { NY = 4, NX = 5, NP = 20, NLEV = 2 };
static int hole(long long p) { return p == 5 || p == 6 || p == 13; }

int scenario(int argc, char **argv)
{
    const char *path = argv[1], *mode = argv[2], *strategy = argv[3], *rstrategy = argv[4];
    int owners = nranks < 2 ? nranks : 2;
    long long grid[2] = {NY, NX}, map[NP + 1], n = 0;
    if (rank == 0)
        map[n++] = 0;
    if (rank < owners)
        for (long long k = 0; k < NP; k++) {
            long long p = rank == 1 ? NP - 1 - k : k;
            if (p % owners == rank)
                map[n++] = hole(p) ? 0 : p + 1;
        }
    int iosys, ioid, bad, ncid, dims[4], tid, Tid, psid, in, Tin, psin;
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));

    long long badmap[2] = {rank + 1, rank == nranks - 1 ? NP + 1 : rank + 2};  /* NP + 1 is past the grid */
    report("bad_entry", climio_init_decomp(iosys, 2, grid, 2, badmap, &bad));
    MUST(climio_init_decomp(iosys, 2, grid, n, n ? map : NULL, &ioid));

    float *T = malloc(sizeof(float) * NLEV * (n + 1));
    double *ps = malloc(sizeof(double) * (n + 1));
    MUST(climio_createfile(iosys, ioid, &ncid, mode, strategy, path, CLIMIO_CLOBBER));
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "lev", NLEV, &dims[1]));
    MUST(climio_def_dim(ncid, "y", NY, &dims[2]));
    MUST(climio_def_dim(ncid, "x", NX, &dims[3]));
    MUST(climio_def_var(ncid, "time", CLIMIO_DOUBLE, 1, dims, &tid));
    MUST(climio_def_var(ncid, "T", CLIMIO_FLOAT, 4, dims, &Tid));
    int psdims[3] = {dims[0], dims[2], dims[3]};
    MUST(climio_def_var(ncid, "ps", CLIMIO_DOUBLE, 3, psdims, &psid));
    double fv = -1e30;
    MUST(climio_put_att_double(ncid, psid, "_FillValue", CLIMIO_DOUBLE, 1, &fv));
    MUST(climio_enddef(ncid));
    for (int frame = 0; frame < 2; frame++) {
        for (long long e = 0; e < n; e++) {
            long long p = map[e] - 1;
            for (int k = 0; k < NLEV; k++)
                T[k * n + e] = map[e] ? (float)(frame * 1000 + k * 100 + p) + 0.25f : -12345.0f;
            ps[e] = map[e] ? frame * 1000 + p + 0.5 : -12345.0;
        }
        MUST(climio_put_time(ncid, frame, 6.0 * frame));
        MUST(climio_write_darray(ncid, Tid, frame, CLIMIO_FLOAT, NLEV * n, T));
        MUST(climio_write_darray(ncid, psid, frame, CLIMIO_DOUBLE, n, ps));
    }
    MUST(climio_closefile(ncid));

    MUST(climio_openfile(iosys, ioid, &in, rstrategy, path));
    MUST(climio_inq_varid(in, "T", &Tin));
    MUST(climio_inq_varid(in, "ps", &psin));
    for (long long e = 0; e < NLEV * n; e++)
        T[e] = 777.0f;
    for (long long e = 0; e < n; e++)
        ps[e] = 777.0;
    MUST(climio_read_darray(in, Tin, 1, CLIMIO_FLOAT, NLEV * n, T));
    MUST(climio_read_darray(in, psin, 0, CLIMIO_DOUBLE, n, ps));
    print_f("T", T, NLEV * n);
    print_d("ps", ps, n);
    MUST(climio_closefile(in));
    MUST(climio_free_decomp(iosys, ioid));
    MUST(climio_finalize(iosys));
    return 0;
}
"""

# Read IN (written by netCDF4-python) into bands of rows of the (4, 6) grid with a halo of 1.
READ = r"""
enum { NY = 4, NX = 6, NLEV = 3, H = 1 };

int scenario(int argc, char **argv)
{
    const char *path = argv[1], *strategy = argv[2];
    int iosys, ioid, in, theta, area, count, big, other;
    long long start[2], cnt[2];
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    rows(iosys, MPI_COMM_WORLD, NY, NX, H, start, cnt, &ioid);
    long long ly = cnt[0] + 2 * H, lx = NX + 2 * H, plane = ly * lx;
    float *f = malloc(sizeof(float) * NLEV * plane);
    double *d = malloc(sizeof(double) * NLEV * plane);
    int *iv = malloc(sizeof(int) * NLEV * plane);
    short *sv = malloc(sizeof(short) * plane);

    MUST(climio_openfile(iosys, ioid, &in, strategy, path));
    MUST(climio_inq_varid(in, "theta", &theta));
    MUST(climio_inq_varid(in, "area", &area));
    MUST(climio_inq_varid(in, "count", &count));
    MUST(climio_inq_varid(in, "big", &big));
    report("inq_nosuch", climio_inq_varid(in, "nosuch", &other));

    for (long long i = 0; i < NLEV * plane; i++) { f[i] = 777.0f; d[i] = 777.0; iv[i] = 777; }
    MUST(climio_read_darray(in, theta, 1, CLIMIO_FLOAT, NLEV * plane, f));
    print_f("theta_f", f, NLEV * plane);
    MUST(climio_read_darray(in, theta, 0, CLIMIO_DOUBLE, NLEV * plane, d));
    print_d("theta_d", d, NLEV * plane);
    MUST(climio_read_darray(in, area, CLIMIO_NOFRAME, CLIMIO_DOUBLE, plane, d));
    print_d("area_d", d, plane);
    MUST(climio_read_darray(in, area, CLIMIO_NOFRAME, CLIMIO_FLOAT, plane, f));
    print_f("area_f", f, plane);

    report("theta_int", climio_read_darray(in, theta, 1, CLIMIO_INT, NLEV * plane, iv));
    report("area_int", climio_read_darray(in, area, CLIMIO_NOFRAME, CLIMIO_INT, plane, iv));
    report("theta_frame2", climio_read_darray(in, theta, 2, CLIMIO_FLOAT, NLEV * plane, f));
    report("theta_noframe", climio_read_darray(in, theta, CLIMIO_NOFRAME, CLIMIO_FLOAT, NLEV * plane, f));
    report("area_short_array", climio_read_darray(in, area, CLIMIO_NOFRAME, CLIMIO_DOUBLE, plane - 1, d));
    report("bad_memtype", climio_read_darray(in, area, CLIMIO_NOFRAME, 7, plane, d));

    /* the file opened for reading is not given up after those errors */
    for (long long i = 0; i < plane; i++) iv[i] = 777;
    report("count_int", climio_read_darray(in, count, 1, CLIMIO_INT, plane, iv));
    print_i("count_i", iv, plane);
    report("big_short", climio_read_darray(in, big, 0, CLIMIO_SHORT, plane, sv));
    MUST(climio_closefile(in));

    report("open_bogus_strategy", climio_openfile(iosys, ioid, &other, "bogus", path));
    report("open_stripe", climio_openfile(iosys, ioid, &other, "stripe", path));
    report("open_missing", climio_openfile(iosys, ioid, &other, "auto", argv[3]));
    MUST(climio_finalize(iosys));
    return 0;
}
"""

# Calls out of order and bad definitions, each on its own file in DIR; a good file last.
SEQUENCE = r"""
static char dir[4096];
static int iosys, ioid;
static const char *path_of(const char *name)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s/%s.nc", dir, name);
    return p;
}
static int create(const char *name, const char *mode, const char *strategy, int *ncid)
{
    return climio_createfile(iosys, ioid, ncid, mode, strategy, path_of(name), CLIMIO_CLOBBER);
}

int scenario(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "%s", argv[1]);
    long long start[2], cnt[2];
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    rows(iosys, MPI_COMM_WORLD, 4, 6, 0, start, cnt, &ioid);
    long long n = cnt[0] * 6;
    float *a = malloc(sizeof(float) * (n + 1));
    for (long long i = 0; i < n; i++)
        a[i] = (float)(start[0] * 6 + i);
    int ncid, dims[5], v, w, t, code;

    MUST(create("def_var_after_enddef", "cdf5", "auto", &ncid));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    MUST(climio_enddef(ncid));
    report("def_var_after_enddef", climio_def_var(ncid, "w", CLIMIO_FLOAT, 3, dims, &w));
    report("def_var_after_enddef.write", climio_write_darray(ncid, v, 0, CLIMIO_FLOAT, n, a));
    report("def_var_after_enddef.close", climio_closefile(ncid));
    exists("def_var_after_enddef", path_of("def_var_after_enddef"));

    MUST(create("write_before_enddef", "cdf5", "auto", &ncid));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    report("write_before_enddef", climio_write_darray(ncid, v, 0, CLIMIO_FLOAT, n, a));
    report("write_before_enddef.enddef", climio_enddef(ncid));
    report("write_before_enddef.close", climio_closefile(ncid));
    exists("write_before_enddef", path_of("write_before_enddef"));

    MUST(create("put_time_before_enddef", "cdf5", "auto", &ncid));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    report("put_time_before_enddef", climio_put_time(ncid, 0, 1.0));
    report("put_time_before_enddef.close", climio_closefile(ncid));
    exists("put_time_before_enddef", path_of("put_time_before_enddef"));

    MUST(create("no_record", "cdf5", "auto", &ncid));
    MUST(climio_def_dim(ncid, "y", 4, &dims[0]));
    MUST(climio_def_dim(ncid, "x", 6, &dims[1]));
    MUST(climio_def_var(ncid, "v", CLIMIO_FLOAT, 2, dims, &v));
    report("no_record", climio_enddef(ncid));
    report("no_record.close", climio_closefile(ncid));
    exists("no_record", path_of("no_record"));

    MUST(create("grid_mismatch", "hdf5", "auto", &ncid));
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "y", 4, &dims[1]));
    MUST(climio_def_dim(ncid, "x", 7, &dims[2]));
    MUST(climio_def_var(ncid, "v", CLIMIO_FLOAT, 3, dims, &v));
    report("grid_mismatch", climio_enddef(ncid));
    report("grid_mismatch.close", climio_closefile(ncid));
    exists("grid_mismatch", path_of("grid_mismatch"));

    MUST(create("grid_transposed", "cdf5", "auto", &ncid));
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "x", 6, &dims[1]));
    MUST(climio_def_dim(ncid, "y", 4, &dims[2]));
    MUST(climio_def_var(ncid, "v", CLIMIO_FLOAT, 3, dims, &v));
    report("grid_transposed", climio_enddef(ncid));
    report("grid_transposed.close", climio_closefile(ncid));
    exists("grid_transposed", path_of("grid_transposed"));

    MUST(create("two_level_dims", "cdf5", "auto", &ncid));
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "lev", 2, &dims[1]));
    MUST(climio_def_dim(ncid, "spec", 3, &dims[2]));
    MUST(climio_def_dim(ncid, "y", 4, &dims[3]));
    MUST(climio_def_dim(ncid, "x", 6, &dims[4]));
    MUST(climio_def_var(ncid, "v", CLIMIO_FLOAT, 5, dims, &v));
    report("two_level_dims", climio_enddef(ncid));
    report("two_level_dims.close", climio_closefile(ncid));
    exists("two_level_dims", path_of("two_level_dims"));

    /* beside a field over the grid, a variable over (time, y, x) with x of 7 is no decomposed field: refused by
       enddef or, when it is taken as an undistributed variable, by write_darray */
    MUST(create("grid_beside_field", "cdf5", "auto", &ncid));
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "y", 4, &dims[1]));
    MUST(climio_def_dim(ncid, "x", 6, &dims[2]));
    MUST(climio_def_dim(ncid, "x7", 7, &dims[3]));
    MUST(climio_def_var(ncid, "u", CLIMIO_FLOAT, 3, dims, &w));
    int seven[3] = {dims[0], dims[1], dims[3]};
    MUST(climio_def_var(ncid, "v", CLIMIO_FLOAT, 3, seven, &v));
    code = report("grid_beside_field.enddef", climio_enddef(ncid));
    if (code == CLIMIO_NOERR)
        report("grid_beside_field.write", climio_write_darray(ncid, v, 0, CLIMIO_FLOAT, n, a));
    report("grid_beside_field.close", climio_closefile(ncid));
    exists("grid_beside_field", path_of("grid_beside_field"));

    report("bad_mode", create("bad_mode", "netcdf7", "auto", &ncid));
    report("bad_mode.close", climio_closefile(ncid));
    exists("bad_mode", path_of("bad_mode"));

    /* an unknown strategy, and one that does not apply to the mode: refused by createfile or at the latest by
       enddef */
    const char *refused[2][3] = {{"bad_strategy", "cdf5", "bogus"}, {"serial_direct", "serial", "direct"}};
    for (int k = 0; k < 2; k++) {
        char label[64];
        code = create(refused[k][0], refused[k][1], refused[k][2], &ncid);
        snprintf(label, sizeof label, "%s.create", refused[k][0]);
        report(label, code);
        if (code == CLIMIO_NOERR) {
            basic(ncid, CLIMIO_FLOAT, dims, &v);
            snprintf(label, sizeof label, "%s.enddef", refused[k][0]);
            report(label, climio_enddef(ncid));
        }
        snprintf(label, sizeof label, "%s.close", refused[k][0]);
        report(label, climio_closefile(ncid));
        exists(refused[k][0], path_of(refused[k][0]));
    }

    MUST(create("bad_xtype", "cdf5", "auto", &ncid));
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    report("bad_xtype", climio_def_var(ncid, "c", 2, 1, dims, &v));   /* NC_CHAR */
    report("bad_xtype.close", climio_closefile(ncid));
    exists("bad_xtype", path_of("bad_xtype"));

    MUST(create("dup_dim", "cdf5", "auto", &ncid));
    MUST(climio_def_dim(ncid, "y", 4, &dims[0]));
    report("dup_dim", climio_def_dim(ncid, "y", 4, &dims[1]));
    report("dup_dim.def_dim", climio_def_dim(ncid, "x", 6, &dims[1]));
    report("dup_dim.close", climio_closefile(ncid));
    exists("dup_dim", path_of("dup_dim"));

    MUST(create("float_time", "cdf5", "auto", &ncid));
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "y", 4, &dims[1]));
    MUST(climio_def_dim(ncid, "x", 6, &dims[2]));
    MUST(climio_def_var(ncid, "time", CLIMIO_FLOAT, 1, dims, &t));
    MUST(climio_def_var(ncid, "v", CLIMIO_FLOAT, 3, dims, &v));
    report("float_time", climio_enddef(ncid));
    report("float_time.close", climio_closefile(ncid));
    exists("float_time", path_of("float_time"));

    MUST(create("write_time_var", "cdf5", "auto", &ncid));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    MUST(climio_inq_varid(ncid, "time", &t));
    MUST(climio_enddef(ncid));
    double times[64] = {0};
    report("write_time_var", climio_write_darray(ncid, t, 0, CLIMIO_DOUBLE, n, times));
    report("write_time_var.close", climio_closefile(ncid));
    exists("write_time_var", path_of("write_time_var"));

    MUST(create("close_before_enddef", "cdf5", "auto", &ncid));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    report("close_before_enddef", climio_closefile(ncid));
    report("close_before_enddef.again", climio_closefile(ncid));
    exists("close_before_enddef", path_of("close_before_enddef"));

    MUST(create("read_while_writing", "cdf5", "auto", &ncid));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    MUST(climio_enddef(ncid));
    report("read_while_writing", climio_read_darray(ncid, v, 0, CLIMIO_FLOAT, n, a));
    report("read_while_writing.close", climio_closefile(ncid));
    exists("read_while_writing", path_of("read_while_writing"));

    /* a good file, then opened for reading: writing and defining there are out of order */
    MUST(create("good", "cdf5", "auto", &ncid));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    MUST(climio_enddef(ncid));
    MUST(climio_put_time(ncid, 0, 3.5));
    MUST(climio_write_darray(ncid, v, 0, CLIMIO_FLOAT, n, a));
    report("good.close", climio_closefile(ncid));
    exists("good", path_of("good"));
    MUST(climio_openfile(iosys, ioid, &ncid, "auto", path_of("good")));
    MUST(climio_inq_varid(ncid, "v", &v));
    report("write_on_reading", climio_write_darray(ncid, v, 0, CLIMIO_FLOAT, n, a));
    report("def_var_on_reading", climio_def_var(ncid, "w", CLIMIO_FLOAT, 3, dims, &w));
    report("enddef_on_reading", climio_enddef(ncid));
    for (long long i = 0; i < n; i++)
        a[i] = -1.0f;
    report("read_after_errors", climio_read_darray(ncid, v, 0, CLIMIO_FLOAT, n, a));
    print_f("good_v", a, n);
    report("reading.close", climio_closefile(ncid));
    report("reading.close_again", climio_closefile(ncid));
    MUST(climio_finalize(iosys));
    return 0;
}
"""

# Memory types other than the variable's: DIR/conv.nc gets the accepted ones, the refused ones each a file
# of their own. Bands of rows of the (4, 6) grid with a halo of 1.
CONVERT = r"""
enum { NY = 4, NX = 6, H = 1, NLEV = 2 };

int scenario(int argc, char **argv)
{
    const char *dir = argv[1], *mode = argv[2], *strategy = argv[3];
    char path[4200];
    int iosys, ioid, ncid, dims[4], t, f, d, i, s, L, v;
    long long start[2], cnt[2];
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    rows(iosys, MPI_COMM_WORLD, NY, NX, H, start, cnt, &ioid);
    long long ly = cnt[0] + 2 * H, lx = NX + 2 * H, plane = ly * lx, inner = cnt[0] * NX;
    double *fd = malloc(sizeof(double) * plane);        /* halo'd */
    int *di = malloc(sizeof(int) * inner);              /* without the halo */
    long long *il = malloc(sizeof(long long) * plane);  /* halo'd */
    int *si = malloc(sizeof(int) * inner);
    float *Lf = malloc(sizeof(float) * NLEV * plane);
    float *ff = malloc(sizeof(float) * plane);
    for (long long j = 0; j < ly; j++)
        for (long long x = 0; x < lx; x++) {
            int inside = j >= H && j < ly - H && x >= H && x < lx - H;
            long long p = (start[0] + j - H) * NX + (x - H), at = j * lx + x;
            fd[at] = inside ? p * 0.1 + 1.0 / 3.0 : -999.0;
            il[at] = inside ? p * 100000 - 50 : -999;
            ff[at] = inside ? (float)p + 0.5f : -999.0f;
            for (int k = 0; k < NLEV; k++)
                Lf[k * plane + at] = inside ? (float)(k * 100 + p) + 0.75f : -999.0f;
            if (inside) {
                di[(j - H) * NX + x - H] = (int)(p * 1000003 - 7);
                si[(j - H) * NX + x - H] = (int)(p * 1000 - 12000);
            }
        }

    snprintf(path, sizeof path, "%s/conv.nc", dir);
    MUST(climio_createfile(iosys, ioid, &ncid, mode, strategy, path, CLIMIO_CLOBBER));
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "lev", NLEV, &dims[1]));
    MUST(climio_def_dim(ncid, "y", NY, &dims[2]));
    MUST(climio_def_dim(ncid, "x", NX, &dims[3]));
    int flat[3] = {dims[0], dims[2], dims[3]};
    MUST(climio_def_var(ncid, "time", CLIMIO_DOUBLE, 1, dims, &t));
    MUST(climio_def_var(ncid, "f", CLIMIO_FLOAT, 3, flat, &f));
    MUST(climio_def_var(ncid, "d", CLIMIO_DOUBLE, 3, flat, &d));
    MUST(climio_def_var(ncid, "i", CLIMIO_INT, 3, flat, &i));
    MUST(climio_def_var(ncid, "s", CLIMIO_SHORT, 3, flat, &s));
    MUST(climio_def_var(ncid, "L", CLIMIO_DOUBLE, 4, dims, &L));
    MUST(climio_enddef(ncid));
    MUST(climio_put_time(ncid, 0, 0.0));
    report("double_to_float", climio_write_darray(ncid, f, 0, CLIMIO_DOUBLE, plane, fd));
    report("int_to_double", climio_write_darray(ncid, d, 0, CLIMIO_INT, inner, di));
    report("int64_to_int", climio_write_darray(ncid, i, 0, CLIMIO_INT64, plane, il));
    report("int_to_short", climio_write_darray(ncid, s, 0, CLIMIO_INT, inner, si));
    report("float_to_double", climio_write_darray(ncid, L, 0, CLIMIO_FLOAT, NLEV * plane, Lf));
    MUST(climio_closefile(ncid));

    const char *names[3] = {"float_to_int", "double_to_int", "unknown_memtype"};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s.nc", dir, names[k]);
        MUST(climio_createfile(iosys, ioid, &ncid, mode, strategy, path, CLIMIO_CLOBBER));
        basic(ncid, CLIMIO_INT, dims, &v);
        MUST(climio_enddef(ncid));
        if (k == 0)
            report(names[k], climio_write_darray(ncid, v, 0, CLIMIO_FLOAT, plane, ff));
        else
            report(names[k], climio_write_darray(ncid, v, 0, k == 1 ? CLIMIO_DOUBLE : 7, plane, fd));
        report("refused.close", climio_closefile(ncid));
        exists(names[k], path);
    }
    MUST(climio_finalize(iosys));
    return 0;
}
"""

# Integers out of the variable's range: 120 + p (up to 143) into a CLIMIO_BYTE variable.
NARROW = r"""
int scenario(int argc, char **argv)
{
    const char *path = argv[1], *strategy = argv[2];
    int iosys, ioid, ncid, dims[3], v;
    long long start[2], cnt[2];
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    rows(iosys, MPI_COMM_WORLD, 4, 6, 0, start, cnt, &ioid);
    long long n = cnt[0] * 6;
    int *a = malloc(sizeof(int) * (n + 1));
    for (long long k = 0; k < n; k++)
        a[k] = (int)(120 + start[0] * 6 + k);
    MUST(climio_createfile(iosys, ioid, &ncid, "cdf5", strategy, path, CLIMIO_CLOBBER));
    basic(ncid, CLIMIO_BYTE, dims, &v);
    MUST(climio_enddef(ncid));
    report("int_to_byte", climio_write_darray(ncid, v, 0, CLIMIO_INT, n, a));
    report("int_to_byte.close", climio_closefile(ncid));
    exists("int_to_byte", path);
    MUST(climio_finalize(iosys));
    return 0;
}
"""

# Deflate and quantization: DIR/comp.nc in mode hdf5; the same calls refused in mode cdf5.
COMPRESS = r"""
enum { NY = 4, NX = 6, NLEV = 3 };

int scenario(int argc, char **argv)
{
    const char *dir = argv[1], *strategy = argv[2];
    char path[4200];
    int iosys, ioid, ncid, dims[4], t, z, q, v;
    long long start[2], cnt[2];
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    rows(iosys, MPI_COMM_WORLD, NY, NX, 0, start, cnt, &ioid);
    long long n = cnt[0] * NX;
    float *zv = malloc(sizeof(float) * NLEV * (n + 1)), *qv = malloc(sizeof(float) * (n + 1));

    snprintf(path, sizeof path, "%s/comp.nc", dir);
    MUST(climio_createfile(iosys, ioid, &ncid, "hdf5", strategy, path, CLIMIO_CLOBBER));
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "lev", NLEV, &dims[1]));
    MUST(climio_def_dim(ncid, "y", NY, &dims[2]));
    MUST(climio_def_dim(ncid, "x", NX, &dims[3]));
    int flat[3] = {dims[0], dims[2], dims[3]};
    MUST(climio_def_var(ncid, "time", CLIMIO_DOUBLE, 1, dims, &t));
    MUST(climio_def_var(ncid, "z", CLIMIO_FLOAT, 4, dims, &z));
    MUST(climio_def_var(ncid, "q", CLIMIO_FLOAT, 3, flat, &q));
    report("deflate", climio_def_var_deflate(ncid, z, 1, 1, 4));
    report("quantize", climio_def_var_quantize(ncid, q, CLIMIO_QUANTIZE_BITROUND, 7));
    MUST(climio_enddef(ncid));
    for (int frame = 0; frame < 2; frame++) {
        for (long long e = 0; e < n; e++) {
            long long p = start[0] * NX + e;
            for (int k = 0; k < NLEV; k++)
                zv[k * n + e] = (float)(frame * 1000 + k * 100 + p) + 0.25f;
            qv[e] = (float)(1.0 + p * 0.0137 + frame * 0.5);
        }
        MUST(climio_put_time(ncid, frame, (double)frame));
        MUST(climio_write_darray(ncid, z, frame, CLIMIO_FLOAT, NLEV * n, zv));
        MUST(climio_write_darray(ncid, q, frame, CLIMIO_FLOAT, n, qv));
    }
    MUST(climio_closefile(ncid));

    const char *names[4] = {"deflate_cdf5", "quantize_cdf5", "quantize_int", "deflate_level10"};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/%s.nc", dir, names[k]);
        MUST(climio_createfile(iosys, ioid, &ncid, k < 2 ? "cdf5" : "hdf5", strategy, path, CLIMIO_CLOBBER));
        basic(ncid, k == 2 ? CLIMIO_INT : CLIMIO_FLOAT, dims, &v);
        int code = k == 0 ? climio_def_var_deflate(ncid, v, 1, 1, 4)
                 : k == 3 ? climio_def_var_deflate(ncid, v, 1, 1, 10)
                 : climio_def_var_quantize(ncid, v, CLIMIO_QUANTIZE_BITROUND, 7);
        report(names[k], code);
        if (code == CLIMIO_NOERR) {   /* not refused yet: enddef must */
            char label[64];
            snprintf(label, sizeof label, "%s.enddef", names[k]);
            report(label, climio_enddef(ncid));
        }
        report("refused.close", climio_closefile(ncid));
        exists(names[k], path);
    }
    MUST(climio_finalize(iosys));
    return 0;
}
"""

# CLOBBER and NOCLOBBER over PATH, which holds an older file; rank 0 looks at PATH while the new file is
# being written and after it is closed.
CLOBBER = r"""
static void head(const char *what, const char *path)
{
    if (rank != 0)
        return;
    unsigned char b[8] = {0};
    FILE *fp = fopen(path, "rb");
    size_t got = fp ? fread(b, 1, 8, fp) : 0;
    if (fp)
        fclose(fp);
    printf("head %s ", what);
    for (size_t k = 0; k < got; k++)
        printf("%02x", b[k]);
    printf("\n");
    fflush(stdout);
}

int scenario(int argc, char **argv)
{
    const char *path = argv[1], *fresh = argv[2];
    int iosys, ioid, ncid, dims[3], v;
    long long start[2], cnt[2];
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    rows(iosys, MPI_COMM_WORLD, 4, 6, 0, start, cnt, &ioid);
    long long n = cnt[0] * 6;
    float *a = malloc(sizeof(float) * (n + 1));
    for (long long k = 0; k < n; k++)
        a[k] = (float)(start[0] * 6 + k) + 0.5f;

    report("noclobber", climio_createfile(iosys, ioid, &ncid, "cdf5", "auto", path, CLIMIO_NOCLOBBER));
    report("noclobber.close", climio_closefile(ncid));
    head("after_noclobber", path);

    MUST(climio_createfile(iosys, ioid, &ncid, "cdf5", "auto", path, CLIMIO_CLOBBER));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    MUST(climio_enddef(ncid));
    MUST(climio_put_time(ncid, 0, 1.0));
    MUST(climio_write_darray(ncid, v, 0, CLIMIO_FLOAT, n, a));
    MPI_Barrier(MPI_COMM_WORLD);
    head("while_writing", path);
    MPI_Barrier(MPI_COMM_WORLD);
    MUST(climio_closefile(ncid));
    head("after_close", path);

    report("noclobber_again", climio_createfile(iosys, ioid, &ncid, "cdf5", "auto", path, CLIMIO_NOCLOBBER));
    report("noclobber_fresh", climio_createfile(iosys, ioid, &ncid, "hdf5", "auto", fresh, CLIMIO_NOCLOBBER));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    MUST(climio_enddef(ncid));
    MUST(climio_write_darray(ncid, v, 0, CLIMIO_FLOAT, n, a));
    MUST(climio_closefile(ncid));
    MUST(climio_finalize(iosys));
    return 0;
}
"""

ERRMSG = r"""
int scenario(int argc, char **argv)
{
    const char *path = argv[1];
    char buf[256];
    int iosys, ioid, ncid, d;
    long long start[2], cnt[2];
    memset(buf, 'Z', sizeof buf);
    int before = climio_errmsg(buf, sizeof buf);
    printf("before %d %d\n", before, buf[0] == 0);
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    rows(iosys, MPI_COMM_WORLD, 4, 6, 0, start, cnt, &ioid);
    MUST(climio_createfile(iosys, ioid, &ncid, "cdf5", "auto", path, CLIMIO_CLOBBER));
    MUST(climio_def_dim(ncid, "x", 6, &d));
    report("dup_dim", climio_def_dim(ncid, "x", 6, &d));

    memset(buf, 'Z', sizeof buf);
    int full = climio_errmsg(buf, sizeof buf);
    printf("full %d %d %s\n", full, (int)strlen(buf), buf);
    memset(buf, 'Z', sizeof buf);
    int r = climio_errmsg(buf, 11);
    printf("clip11 %d %d %d %.10s\n", r, buf[10] == 0, buf[11] == 'Z', buf);
    memset(buf, 'Z', sizeof buf);
    r = climio_errmsg(buf, 1);
    printf("clip1 %d %d %d\n", r, buf[0] == 0, buf[1] == 'Z');
    memset(buf, 'Z', sizeof buf);
    r = climio_errmsg(buf, 0);
    printf("clip0 %d %d\n", r, buf[0] == 'Z');
    printf("null %d\n", climio_errmsg(NULL, 0));
    int codes[10] = {CLIMIO_NOERR, CLIMIO_EBADID, CLIMIO_EINVAL, CLIMIO_ESTATE, CLIMIO_EIO, CLIMIO_EINTERNAL,
                     CLIMIO_ENOMEM, -7, 1, 12345};
    for (int k = 0; k < 10; k++)
        printf("strerror %d %s\n", codes[k], climio_strerror(codes[k]));
    fflush(stdout);
    report("close", climio_closefile(ncid));
    MUST(climio_finalize(iosys));
    return 0;
}
"""

# Several files on one I/O system, interleaved; a second I/O system over half the ranks; a file left open
# at climio_finalize; a freed decomposition and one of another system.
MULTI = r"""
static char dir[4096];
static const char *path_of(const char *name)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s/%s.nc", dir, name);
    return p;
}

static void fill(float *a, long long n, long long first, float base)
{
    for (long long k = 0; k < n; k++)
        a[k] = base + (float)(first + k);
}

int scenario(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "%s", argv[1]);
    int A, B, dA, dB, f1, f2, f3, g, bad, d1[3], d2[3], d3[3], dg[3], v1, v2, v3, vg, t;
    long long sA[2], cA[2], sB[2], cB[2];
    MPI_Comm sub;
    int color = rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &sub);
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &A));
    MUST(climio_init_intracomm(sub, &B));
    printf("systems %d %d %d\n", rank, A, B);
    rows(A, MPI_COMM_WORLD, 4, 6, 0, sA, cA, &dA);
    rows(B, sub, 4, 6, 0, sB, cB, &dB);
    long long nA = cA[0] * 6, nB = cB[0] * 6;
    float *a = malloc(sizeof(float) * 32);

    report("cross_decomp", climio_createfile(B, dA, &bad, "cdf5", "auto", path_of("cross"), CLIMIO_CLOBBER));

    MUST(climio_createfile(A, dA, &f1, "cdf5", "agg", path_of("one"), CLIMIO_CLOBBER));
    MUST(climio_createfile(A, dA, &f2, "hdf5", "direct", path_of("two"), CLIMIO_CLOBBER));
    MUST(climio_def_dim(f1, "time", CLIMIO_UNLIMITED, &d1[0]));
    MUST(climio_def_dim(f2, "t", CLIMIO_UNLIMITED, &d2[0]));
    MUST(climio_def_dim(f1, "y", 4, &d1[1]));
    MUST(climio_def_dim(f2, "lat", 4, &d2[1]));
    MUST(climio_def_dim(f1, "x", 6, &d1[2]));
    MUST(climio_def_dim(f2, "lon", 6, &d2[2]));
    MUST(climio_def_var(f2, "t", CLIMIO_DOUBLE, 1, d2, &t));
    MUST(climio_def_var(f1, "time", CLIMIO_DOUBLE, 1, d1, &t));
    MUST(climio_def_var(f2, "b", CLIMIO_FLOAT, 3, d2, &v2));
    MUST(climio_def_var(f1, "a", CLIMIO_FLOAT, 3, d1, &v1));
    MUST(climio_enddef(f2));
    MUST(climio_enddef(f1));
    fill(a, nA, sA[0] * 6, 1000.0f);
    MUST(climio_write_darray(f1, v1, 0, CLIMIO_FLOAT, nA, a));
    fill(a, nA, sA[0] * 6, 2000.0f);
    MUST(climio_write_darray(f2, v2, 0, CLIMIO_FLOAT, nA, a));
    MUST(climio_put_time(f2, 0, 20.0));
    MUST(climio_put_time(f1, 0, 10.0));
    fill(a, nA, sA[0] * 6, 1100.0f);
    MUST(climio_write_darray(f1, v1, 1, CLIMIO_FLOAT, nA, a));
    MUST(climio_closefile(f2));
    MUST(climio_put_time(f1, 1, 11.0));
    MUST(climio_closefile(f1));

    MUST(climio_createfile(A, dA, &f3, "cdf5", "auto", path_of("left_open"), CLIMIO_CLOBBER));
    basic(f3, CLIMIO_FLOAT, d3, &v3);
    MUST(climio_enddef(f3));
    MUST(climio_put_time(f3, 0, 30.0));
    fill(a, nA, sA[0] * 6, 3000.0f);
    MUST(climio_write_darray(f3, v3, 0, CLIMIO_FLOAT, nA, a));
    MUST(climio_free_decomp(A, dA));
    report("freed_decomp", climio_createfile(A, dA, &bad, "cdf5", "auto", path_of("freed"), CLIMIO_CLOBBER));
    exists("left_open_before_finalize", path_of("left_open"));
    MUST(climio_finalize(A));      /* publishes left_open */
    exists("left_open_after_finalize", path_of("left_open"));

    char name[32];
    snprintf(name, sizeof name, "sub%d", color);
    MUST(climio_createfile(B, dB, &g, "cdf5", "auto", path_of(name), CLIMIO_CLOBBER));
    basic(g, CLIMIO_FLOAT, dg, &vg);
    MUST(climio_enddef(g));
    MUST(climio_put_time(g, 0, 40.0 + color));
    fill(a, nB, sB[0] * 6, 4000.0f + 100.0f * color);
    MUST(climio_write_darray(g, vg, 0, CLIMIO_FLOAT, nB, a));
    MUST(climio_closefile(g));
    MUST(climio_finalize(B));
    MPI_Comm_free(&sub);
    return 0;
}
"""

# Records out of order: frame 5 first, then 0 and 2; then read back.
FRAMES = r"""
int scenario(int argc, char **argv)
{
    const char *path = argv[1], *mode = argv[2], *strategy = argv[3];
    int iosys, ioid, ncid, dims[3], v, in;
    long long start[2], cnt[2];
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    rows(iosys, MPI_COMM_WORLD, 4, 6, 0, start, cnt, &ioid);
    long long n = cnt[0] * 6;
    float *a = malloc(sizeof(float) * (n + 1));
    MUST(climio_createfile(iosys, ioid, &ncid, mode, strategy, path, CLIMIO_CLOBBER));
    basic(ncid, CLIMIO_FLOAT, dims, &v);
    MUST(climio_enddef(ncid));
    int order[3] = {5, 0, 2};
    for (int k = 0; k < 3; k++) {
        for (long long e = 0; e < n; e++)
            a[e] = (float)(order[k] * 100 + start[0] * 6 + e);
        MUST(climio_write_darray(ncid, v, order[k], CLIMIO_FLOAT, n, a));
        MUST(climio_put_time(ncid, order[k], 10.0 * order[k]));
    }
    MUST(climio_closefile(ncid));
    MUST(climio_openfile(iosys, ioid, &in, "auto", path));
    MUST(climio_inq_varid(in, "v", &v));
    MUST(climio_read_darray(in, v, 5, CLIMIO_FLOAT, n, a));
    print_f("frame5", a, n);
    report("frame6", climio_read_darray(in, v, 6, CLIMIO_FLOAT, n, a));
    MUST(climio_closefile(in));
    MUST(climio_finalize(iosys));
    return 0;
}
"""

FINALIZE_TWICE = r"""
int scenario(int argc, char **argv)
{
    int iosys;
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    report("finalize", climio_finalize(iosys));
    report("finalize_again", climio_finalize(iosys));
    return 0;
}
"""

# Undistributed variables (climio_put_var, from rank 0's values) beside decomposed ones, and a decomposed field
# without records (CLIMIO_NOFRAME); then each wrong call on a file of its own.
PUTVAR = r"""
static int define(int ncid, int *ids)   /* ids: v, lat, lon, area, time_bnds, level */
{
    int dims[5], t;
    MUST(climio_def_dim(ncid, "time", CLIMIO_UNLIMITED, &dims[0]));
    MUST(climio_def_dim(ncid, "y", 4, &dims[1]));
    MUST(climio_def_dim(ncid, "x", 6, &dims[2]));
    MUST(climio_def_dim(ncid, "nb", 2, &dims[3]));
    MUST(climio_def_dim(ncid, "lev", 3, &dims[4]));
    MUST(climio_def_var(ncid, "time", CLIMIO_DOUBLE, 1, dims, &t));
    MUST(climio_put_att_text(ncid, t, "bounds", "time_bnds"));
    int lev_y_x[4] = {dims[0], dims[4], dims[1], dims[2]}, bnds[2] = {dims[0], dims[3]};
    MUST(climio_def_var(ncid, "v", CLIMIO_FLOAT, 4, lev_y_x, &ids[0]));
    MUST(climio_def_var(ncid, "lat", CLIMIO_DOUBLE, 1, &dims[1], &ids[1]));
    MUST(climio_def_var(ncid, "lon", CLIMIO_FLOAT, 1, &dims[2], &ids[2]));
    MUST(climio_def_var(ncid, "area", CLIMIO_DOUBLE, 2, &dims[1], &ids[3]));
    MUST(climio_def_var(ncid, "time_bnds", CLIMIO_DOUBLE, 2, bnds, &ids[4]));
    MUST(climio_def_var(ncid, "level", CLIMIO_SHORT, 1, &dims[4], &ids[5]));
    return climio_enddef(ncid);
}

int scenario(int argc, char **argv)
{
    const char *dir = argv[1], *mode = argv[2], *strategy = argv[3];
    char path[4200];
    int iosys, ioid, ncid, ids[6], in, area_in;
    long long start[2], cnt[2];
    MUST(climio_init_intracomm(MPI_COMM_WORLD, &iosys));
    rows(iosys, MPI_COMM_WORLD, 4, 6, 0, start, cnt, &ioid);
    long long n = cnt[0] * 6;
    double lat[4] = {-67.5, -22.5, 22.5, 67.5}, lon[6] = {0, 60, 120, 180, 240, 300}, bnds[2];
    int level[3] = {1000, 500, 250}, wide[3] = {70000, 1, 2};
    if (rank != 0)   /* only rank 0's values are read */
        lat[0] = lon[0] = -999.0, level[0] = -999;
    float *v = malloc(sizeof(float) * 3 * (n + 1));
    double *area = malloc(sizeof(double) * (n + 1));
    for (long long e = 0; e < n; e++)
        area[e] = (double)(start[0] * 6 + e) + 0.125;

    snprintf(path, sizeof path, "%s/putvar.nc", dir);
    MUST(climio_createfile(iosys, ioid, &ncid, mode, strategy, path, CLIMIO_CLOBBER));
    report("enddef", define(ncid, ids));
    report("lat", climio_put_var(ncid, ids[1], CLIMIO_NOFRAME, CLIMIO_DOUBLE, 4, lat));
    report("lon", climio_put_var(ncid, ids[2], CLIMIO_NOFRAME, CLIMIO_DOUBLE, 6, lon));   /* into float */
    report("level", climio_put_var(ncid, ids[5], CLIMIO_NOFRAME, CLIMIO_INT, 3, level));  /* into short */
    report("area", climio_write_darray(ncid, ids[3], CLIMIO_NOFRAME, CLIMIO_DOUBLE, n, area));
    for (int frame = 0; frame < 2; frame++) {
        for (long long e = 0; e < n; e++)
            for (int k = 0; k < 3; k++)
                v[k * n + e] = (float)(frame * 1000 + k * 100 + start[0] * 6 + e);
        bnds[0] = 6.0 * frame;
        bnds[1] = 6.0 * frame + 6.0;
        MUST(climio_put_time(ncid, frame, 6.0 * frame + 3.0));
        MUST(climio_put_var(ncid, ids[4], frame, CLIMIO_DOUBLE, 2, bnds));
        MUST(climio_write_darray(ncid, ids[0], frame, CLIMIO_FLOAT, 3 * n, v));
    }
    MUST(climio_closefile(ncid));
    MUST(climio_openfile(iosys, ioid, &in, "auto", path));
    MUST(climio_inq_varid(in, "area", &area_in));
    for (long long e = 0; e < n; e++)
        area[e] = -1.0;
    MUST(climio_read_darray(in, area_in, CLIMIO_NOFRAME, CLIMIO_DOUBLE, n, area));
    print_d("area", area, n);
    MUST(climio_closefile(in));

    const char *names[7] = {"put_var_on_field", "write_darray_on_coordinate", "frame_on_fixed_field",
                            "noframe_on_records", "short_coordinate", "float_into_short", "int_out_of_short"};
    for (int k = 0; k < 7; k++) {
        snprintf(path, sizeof path, "%s/%s.nc", dir, names[k]);
        MUST(climio_createfile(iosys, ioid, &ncid, mode, strategy, path, CLIMIO_CLOBBER));
        MUST(define(ncid, ids));
        float lonf[6] = {0, 60, 120, 180, 240, 300};
        int code = k == 0 ? climio_put_var(ncid, ids[3], CLIMIO_NOFRAME, CLIMIO_DOUBLE, n, area)
                 : k == 1 ? climio_write_darray(ncid, ids[1], CLIMIO_NOFRAME, CLIMIO_DOUBLE, 4, lat)
                 : k == 2 ? climio_write_darray(ncid, ids[3], 0, CLIMIO_DOUBLE, n, area)
                 : k == 3 ? climio_put_var(ncid, ids[4], CLIMIO_NOFRAME, CLIMIO_DOUBLE, 2, bnds)
                 : k == 4 ? climio_put_var(ncid, ids[1], CLIMIO_NOFRAME, CLIMIO_DOUBLE, 3, lat)
                 : k == 5 ? climio_put_var(ncid, ids[5], CLIMIO_NOFRAME, CLIMIO_FLOAT, 3, lonf)
                 : climio_put_var(ncid, ids[5], CLIMIO_NOFRAME, CLIMIO_INT, 3, wide);
        report(names[k], code);
        report("refused.close", climio_closefile(ncid));
        exists(names[k], path);
    }
    MUST(climio_finalize(iosys));
    return 0;
}
"""

SOURCES = {"compmap": COMPMAP, "read": READ, "sequence": SEQUENCE, "convert": CONVERT, "narrow": NARROW,
           "compress": COMPRESS, "clobber": CLOBBER, "errmsg": ERRMSG, "multi": MULTI, "frames": FRAMES,
           "finalize_twice": FINALIZE_TWICE, "putvar": PUTVAR}


# ------------------------------------------------------------------------------------------------ the Python side


STANDALONE = ("finalize_twice",)  # programs run in a process of their own
MERGED = tuple(name for name in SOURCES if name not in STANDALONE)  # scenarios built into the table driver

# The table driver: ``driver NAME LOGS ARGS... -- NAME LOGS ARGS... -- ...`` runs each scenario in turn (its
# argv[0] is its name) between one MPI_Init and one MPI_Finalize; the status is the largest scenario status.
DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include <mpi.h>
%(declarations)s

static int run(const char *name, int argc, char **argv, const char *logs)
{
%(dispatch)s
    fprintf(stderr, "no scenario %%s\n", name);
    MPI_Abort(MPI_COMM_WORLD, 5);
    return 5;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int status = 0;
    for (int i = 1; i < argc;) {
        char *args[64];
        int n = 0, j = i + 2;
        args[n++] = argv[i];
        while (j < argc && strcmp(argv[j], "--") != 0 && n < 63)
            args[n++] = argv[j++];
        args[n] = NULL;
        int s = run(argv[i], n, args, argv[i + 1]);
        if (s > status)
            status = s;
        i = j + 1;
    }
    MPI_Finalize();
    return status;
}
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The standalone programs and the table driver (``programs["driver"]``, every MERGED scenario in it),
    compiled once as a model would be (mpicc, -ffp-contract=off so that the doubles the C side works out are the
    ones worked out here), side by side."""
    out = tmp_path_factory.mktemp("capi-calls-bin")
    flags = climio_pkg_config()
    cflags = [f for f in flags if f.startswith(("-I", "-D"))]
    common = ["mpicc", "-Wall", "-Werror", "-ffp-contract=off"]
    jobs = {}
    for name, body in SOURCES.items():
        source = out / f"{name}.c"
        source.write_text(PRELUDE + body)
        if name in STANDALONE:
            argv = [*common, str(source), "-o", str(out / name), *flags]
        else:
            argv = [*common, f"-Dscenario=scenario_{name}", f"-DCLIMIO_TEST_ENTRY=entry_{name}", "-c", str(source),
                    "-o", str(out / f"{name}.o"), *cflags]
        jobs[name] = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for name, job in jobs.items():
        _, errors = job.communicate(timeout=120)
        assert job.returncode == 0, f"mpicc {name}.c: {errors}"
    driver = out / "driver.c"
    driver.write_text(DRIVER % {
        "declarations": "\n".join(f"int entry_{n}(int argc, char **argv, const char *logs);" for n in MERGED),
        "dispatch": "\n".join(f'    if (strcmp(name, "{n}") == 0)\n        return entry_{n}(argc, argv, logs);'
                               for n in MERGED)})
    done = subprocess.run([*common, str(driver), *(str(out / f"{n}.o") for n in MERGED), "-o", str(out / "driver"),
                           *flags], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"mpicc driver.c: {done.stderr}"
    return {**{name: out / name for name in STANDALONE}, "driver": out / "driver"}


@dataclass
class Output:
    """What a program printed: codes[name][rank], messages[name][rank], values[name][rank] (by local index),
    and the other lines."""

    stdout: str
    codes: dict[str, dict[int, int]] = field(default_factory=lambda: defaultdict(dict))
    messages: dict[str, dict[int, str]] = field(default_factory=lambda: defaultdict(dict))
    values: dict[str, dict[int, dict[int, float]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(dict)))
    lines: list[str] = field(default_factory=list)

    def code(self, name: str, nranks: int) -> int:
        """The one code every rank got from call ``name`` (fails unless all ranks reported the same)."""
        got = self.codes[name]
        assert sorted(got) == list(range(nranks)), (name, got, self.stdout)
        assert len(set(got.values())) == 1, (name, got)
        return next(iter(got.values()))

    def message(self, name: str) -> str:
        """The message of a failed call, the same on every rank."""
        got = self.messages[name]
        assert got and len(set(got.values())) == 1, (name, got)
        return next(iter(got.values()))

    def local(self, name: str, rank: int) -> np.ndarray:
        got = self.values[name][rank]
        assert sorted(got) == list(range(len(got))), name
        return np.array([got[i] for i in range(len(got))])

    def line(self, key: str) -> list[str]:
        found = [line.split()[1:] for line in self.lines if line.split()[:1] == [key]]
        assert len(found) == 1, (key, self.stdout)
        return found[0]


def launch(program: Path, args: list[str], nranks: int) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run a program under mpiexec; its status and what its ranks printed (each into a file of its own)."""
    with tempfile.TemporaryDirectory() as logs:
        result = run([str(program), *args], nranks=nranks, timeout=TIMEOUT, env_extra={"CAPI_TEST_LOGS": logs})
        printed = "".join(Path(logs, f"rank{r}.txt").read_text() for r in range(nranks)
                          if Path(logs, f"rank{r}.txt").exists())
    return result, printed


def parse(printed: str) -> Output:
    out = Output(printed)
    for line in printed.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "code":
            name, rank, code = rest.split()
            out.codes[name][int(rank)] = int(code)
        elif kind == "msg":
            name, rank, text = (rest.split(" ", 2) + [""])[:3]
            out.messages[name][int(rank)] = text
        elif kind == "val":
            name, rank, index, value = rest.split()
            out.values[name][int(rank)][int(index)] = float(value)
        else:
            out.lines.append(line)
    return out


@dataclass
class Run:
    """One scenario's run in its rank count's table: its directory, its status (None when its table ended before
    it returned), what its ranks printed, and the table launch's result."""

    where: Path
    status: int | None
    printed: str
    launch: subprocess.CompletedProcess[str]

    def output(self) -> Output:
        """What it printed, parsed; fails unless it returned 0 on every rank and printed ``done`` (as
        ``execute`` of a program of its own)."""
        assert self.status == 0, (f"status {self.status} (None: the table ended before it returned; the table's "
                                  f"status {self.launch.returncode})\n{self.printed}\n{self.launch.stderr}")
        assert "done" in self.printed.splitlines(), self.printed
        return parse(self.printed)


def table_cases(base: Path) -> dict[tuple, tuple[str, int, list[str]]]:
    """Every run of a MERGED scenario: key -> (scenario, ranks, arguments), with its inputs and directory made
    under ``base``. The errmsg and multi scenarios come first in their rank counts' tables."""
    cases: dict[tuple, tuple[str, int, list[str]]] = {}

    def folder(key: tuple) -> Path:
        path = base / "-".join(map(str, key)).replace(":", "_")
        path.mkdir(parents=True)
        return path

    key = ("errmsg",)
    cases[key] = ("errmsg", 1, [str(folder(key) / "e.nc")])
    key = ("multi",)
    cases[key] = ("multi", 3, [str(folder(key))])
    for nranks, mode, strategy, read in COMPMAPS:
        key = ("compmap", nranks, mode, strategy, read)
        cases[key] = ("compmap", nranks, [str(folder(key) / "compmap.nc"), mode, strategy, read])
    for nranks, fmt, strategy in READS:
        key = ("read", nranks, fmt, strategy)
        where = folder(key)
        write_input(where / "in.nc", fmt)
        cases[key] = ("read", nranks, [str(where / "in.nc"), strategy, str(where / "missing" / "none.nc")])
    for nranks in (1, 3):
        key = ("sequence", nranks)
        cases[key] = ("sequence", nranks, [str(folder(key))])
    for nranks, mode, strategy in CONVERTS:
        key = ("convert", nranks, mode, strategy)
        cases[key] = ("convert", nranks, [str(folder(key)), mode, strategy])
    for strategy in ("agg", "direct"):
        key = ("narrow", strategy)
        cases[key] = ("narrow", 2, [str(folder(key) / "narrow.nc"), strategy])
    for nranks, strategy in COMPRESSES:
        key = ("compress", nranks, strategy)
        cases[key] = ("compress", nranks, [str(folder(key)), strategy])
    key = ("clobber",)
    where = folder(key)
    (where / "out.nc").write_bytes(OLD_FILE)
    cases[key] = ("clobber", 2, [str(where / "out.nc"), str(where / "fresh.nc")])
    for nranks, mode, strategy in FRAMES:
        key = ("frames", nranks, mode, strategy)
        cases[key] = ("frames", nranks, [str(folder(key) / "frames.nc"), mode, strategy])
    for nranks, mode, strategy in PUTVARS:
        key = ("putvar", nranks, mode, strategy)
        cases[key] = ("putvar", nranks, [str(folder(key)), mode, strategy])
    return cases


@pytest.fixture(scope="module")
def merged(programs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    """``get(key)``: the Run of a table case (``table_cases``). All the cases of a rank count run in one launch of
    the table driver, when a test first needs one of them."""
    base = tmp_path_factory.mktemp("table")
    cases = table_cases(base / "cases")
    runs: dict[tuple, Run] = {}

    def get(key: tuple) -> Run:
        if key not in runs:
            nranks = cases[key][1]
            keys = [k for k, (_, n, _) in cases.items() if n == nranks]
            argv: list[str] = [str(programs["driver"])]
            logs = {}
            for index, k in enumerate(keys):
                name, _, args = cases[k]
                logs[k] = base / "logs" / f"n{nranks}-{index}-{name}"
                logs[k].mkdir(parents=True)
                argv += [*(["--"] if index else []), name, str(logs[k]), *args]
            result = run(argv, nranks=nranks, timeout=TIMEOUT + 20 * len(keys))
            for k in keys:
                printed = "".join(Path(logs[k], f"rank{r}.txt").read_text() for r in range(nranks)
                                  if Path(logs[k], f"rank{r}.txt").exists())
                status_file = logs[k] / "status.txt"
                status = int(status_file.read_text()) if status_file.exists() else None
                args = cases[k][2]
                where = Path(args[0]) if Path(args[0]).is_dir() else Path(args[0]).parent
                runs[k] = Run(where, status, printed, result)
        return runs[key]
    return get


def rows_of(ny: int, nranks: int, rank: int) -> tuple[int, int]:
    """The C programs' band of rows (start, count), worked out again."""
    base, extra = divmod(ny, nranks)
    return rank * base + min(rank, extra), base + (rank < extra)


def _exists(out: Output, name: str) -> bool:
    """Whether rank 0 found a file at the path of check ``name`` (C's access(2), right after the calls)."""
    found = [line.split()[2] for line in out.lines if line.split()[:2] == ["exists", name]]
    assert len(found) == 1, (name, out.stdout)
    return found[0] == "1"


# ------------------------------------------------------------------------------------------------ 1. compmaps

HOLES = {5, 6, 13}


def compmap_of(rank: int, nranks: int) -> list[int]:
    """The compmap the C program builds, worked out again (1-based, 0 = hole)."""
    owners = min(nranks, 2)
    entries = [0] if rank == 0 else []
    if rank < owners:
        points = range(19, -1, -1) if rank == 1 else range(20)
        entries += [0 if p in HOLES else p + 1 for p in points if p % owners == rank]
    return entries


COMPMAPS = [(1, "serial", "root", "root"), (2, "cdf5", "direct", "direct"), (3, "hdf5", "agg", "agg"),
            (3, "cdf2", "root", "auto")]


@pytest.mark.parametrize("nranks, mode, strategy, read", COMPMAPS)
def test_compmap_with_holes_written_and_read_back(merged, nranks: int, mode: str, strategy: str, read: str) -> None:
    done = merged(("compmap", nranks, mode, strategy, read))  # compmap PATH MODE STRATEGY READ at nranks
    tmp_path = done.where
    path = tmp_path / "compmap.nc"
    out = done.output()
    assert out.code("bad_entry", nranks) == EINVAL
    assert "21" in out.message("bad_entry")

    p = np.arange(20).reshape(4, 5)
    hole = np.isin(p, list(HOLES))
    with netCDF4.Dataset(path) as ds:
        assert {n: len(d) for n, d in ds.dimensions.items()} == {"time": 2, "lev": 2, "y": 4, "x": 5}
        assert ds["T"].dimensions == ("time", "lev", "y", "x") and ds["T"].dtype == np.float32
        assert ds["ps"].dimensions == ("time", "y", "x") and ds["ps"].dtype == np.float64
        ds.set_auto_mask(False)
        T, ps = ds["T"][:], ds["ps"][:]
        assert list(ds["time"][:]) == [0.0, 6.0]
        assert ds["T"]._FillValue == F4_FILL and ds["ps"]._FillValue == -1e30
    for frame in range(2):
        for k in range(2):
            want = np.where(hole, F4_FILL, (frame * 1000 + k * 100 + p).astype(np.float32) + np.float32(0.25))
            assert np.array_equal(T[frame, k], want), (frame, k, T[frame, k])
        assert np.array_equal(ps[frame], np.where(hole, -1e30, frame * 1000 + p + 0.5)), (frame, ps[frame])

    # read back: grid points exact, padding and hole elements the fill value
    for rank in range(nranks):
        entries = np.array(compmap_of(rank, nranks))
        got_T = out.local("T", rank).astype(np.float32) if entries.size else np.zeros(0, np.float32)
        got_ps = out.local("ps", rank) if entries.size else np.zeros(0)
        assert got_T.size == 2 * entries.size and got_ps.size == entries.size
        want_T = np.array([[F4_FILL if e == 0 else np.float32(1000 + k * 100 + e - 1) + np.float32(0.25)
                            for e in entries] for k in range(2)], np.float32).ravel()
        assert np.array_equal(got_T, want_T), (rank, got_T, want_T)
        assert np.array_equal(got_ps, [-1e30 if e == 0 else e - 1 + 0.5 for e in entries]), (rank, got_ps)
    assert sorted(os.listdir(tmp_path)) == ["compmap.nc"]


# ------------------------------------------------------------------------------------------------ 2. reading

NY, NX, NLEV = 4, 6, 3


def write_input(path: Path, fmt: str) -> None:
    """The input file, written by netCDF4-python: theta(time, lev, y, x) f4 over two records, area(y, x) f8
    without records, count(time, y, x) i4 and big(time, y, x) i4 (values past a short's range)."""
    y, x = np.meshgrid(np.arange(NY), np.arange(NX), indexing="ij")
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("time", None)
        ds.createDimension("lev", NLEV)
        ds.createDimension("y", NY)
        ds.createDimension("x", NX)
        theta = ds.createVariable("theta", "f4", ("time", "lev", "y", "x"))
        area = ds.createVariable("area", "f8", ("y", "x"))
        count = ds.createVariable("count", "i4", ("time", "y", "x"))
        big = ds.createVariable("big", "i4", ("time", "y", "x"))
        ds.createVariable("time", "f8", ("time",))[:] = [0.0, 1.0]
        for rec in range(2):
            theta[rec] = np.stack([rec * 1000 + k * 100 + y * 10 + x + 0.5 for k in range(NLEV)])
            count[rec] = (y * NX + x) * 1000 + rec
            big[rec] = 70000 + y * NX + x
        area[:] = 1e6 + y * 10 + x + 0.125


def halo_local(rank: int, nranks: int, inner: np.ndarray, fill: float, dtype: type) -> np.ndarray:
    """A rank's (levels, rows + 2, NX + 2) local array: its rows of ``inner`` (levels, NY, NX), the halo
    ``fill``."""
    start, count = rows_of(NY, nranks, rank)
    local = np.full((inner.shape[0], count + 2, NX + 2), fill, dtype)
    local[:, 1:-1, 1:-1] = inner[:, start:start + count]
    return local.ravel()


READS = [(1, "NETCDF4", "root"), (2, "NETCDF3_64BIT_OFFSET", "direct"), (3, "NETCDF4", "agg"),
         (2, "NETCDF3_CLASSIC", "auto")]


@pytest.fixture(scope="module")
def read_runs(merged) -> dict[tuple, Output]:
    # read IN STRATEGY DIR/missing/none.nc at nranks, IN written by write_input(IN, fmt)
    return {(nranks, fmt, strategy): merged(("read", nranks, fmt, strategy)).output()
            for nranks, fmt, strategy in READS}


@pytest.mark.parametrize("nranks, fmt, strategy", READS)
def test_read_file_written_by_netcdf4_python(read_runs: dict[tuple, Output], nranks: int, fmt: str,
                                             strategy: str) -> None:
    out = read_runs[nranks, fmt, strategy]
    y, x = np.meshgrid(np.arange(NY), np.arange(NX), indexing="ij")
    theta = [np.stack([np.float32(rec * 1000 + k * 100 + y * 10 + x + 0.5) for k in range(NLEV)]) for rec in range(2)]
    area = (1e6 + y * 10 + x + 0.125)[None]
    for rank in range(nranks):
        # halos keep the stored type's fill value, converted to the memory's type
        want = halo_local(rank, nranks, theta[1], F4_FILL, np.float32)
        assert np.array_equal(out.local("theta_f", rank).astype(np.float32), want), rank
        want = halo_local(rank, nranks, theta[0].astype(np.float64), np.float64(F4_FILL), np.float64)
        assert np.array_equal(out.local("theta_d", rank), want), rank
        assert np.array_equal(out.local("area_d", rank), halo_local(rank, nranks, area, F8_FILL, np.float64)), rank
        want = halo_local(rank, nranks, area.astype(np.float32), np.float32(F8_FILL), np.float32)
        assert np.array_equal(out.local("area_f", rank).astype(np.float32), want), rank
        want = halo_local(rank, nranks, ((y * NX + x) * 1000 + 1)[None], netCDF4.default_fillvals["i4"], np.int64)
        assert np.array_equal(out.local("count_i", rank), want), rank

    assert out.code("inq_nosuch", nranks) == EBADID and "nosuch" in out.message("inq_nosuch")
    for name in ("theta_int", "area_int"):  # float variables into int memory: refused on every rank
        assert out.code(name, nranks) == EINVAL, name
        assert "float" in out.message(name) and "int32" in out.message(name)
    assert out.code("theta_frame2", nranks) == EINVAL and "2 records" in out.message("theta_frame2")
    assert out.code("theta_noframe", nranks) == EINVAL
    assert out.code("area_short_array", nranks) == EINVAL
    assert out.code("bad_memtype", nranks) == EINVAL
    assert out.code("count_int", nranks) == NOERR  # the file opened for reading is still usable
    assert out.code("open_bogus_strategy", nranks) == EINVAL and "'bogus'" in out.message("open_bogus_strategy")
    assert out.code("open_stripe", nranks) == EINVAL and "stripe" in out.message("open_stripe")
    assert out.code("open_missing", nranks) in (EINVAL, EIO) and "none.nc" in out.message("open_missing")


def test_read_int_into_short_memory_refuses_values_out_of_range(read_runs: dict[tuple, Output]) -> None:
    for (nranks, _, _), out in read_runs.items():
        assert out.code("big_short", nranks) == EINVAL


# ------------------------------------------------------------------------------------------------ 3. sequencing

@pytest.mark.parametrize("nranks", [1, 3])
def test_calls_out_of_order_and_bad_definitions(merged, nranks: int) -> None:
    done = merged(("sequence", nranks))  # sequence DIR at nranks
    tmp_path, out = done.where, done.output()
    code = lambda name: out.code(name, nranks)  # noqa: E731

    assert code("def_var_after_enddef") == ESTATE and "after climio_enddef" in out.message("def_var_after_enddef")
    assert code("def_var_after_enddef.write") == EBADID  # the file was given up
    assert "abandoned" in out.message("def_var_after_enddef.write")
    assert code("write_before_enddef") == ESTATE and "before climio_enddef" in out.message("write_before_enddef")
    assert code("write_before_enddef.enddef") == EBADID
    assert code("put_time_before_enddef") == ESTATE
    assert code("no_record") == EINVAL and "UNLIMITED" in out.message("no_record")
    for name in ("grid_mismatch", "grid_transposed", "two_level_dims"):  # no variable over the grid
        assert code(name) == EINVAL, name
        assert "(4, 6)" in out.message(name), out.message(name)
    first = next(c for c in ("grid_beside_field.enddef", "grid_beside_field.write") if code(c) != NOERR)
    assert code(first) == EINVAL and "'v'" in out.message(first), out.message(first)
    grid_first = first
    assert code("bad_mode") == EINVAL and "'netcdf7'" in out.message("bad_mode")
    assert code("bad_mode.close") == EBADID  # never created
    for name, needle in (("bad_strategy", "'bogus'"), ("serial_direct", "'direct'")):
        # refused at the latest by enddef, with a message naming it
        calls = [f"{name}.create", f"{name}.enddef"]
        first = next(c for c in calls if c in out.codes and code(c) != NOERR)
        assert code(first) == EINVAL and needle in out.message(first), (first, out.message(first))
    assert code("bad_xtype") == EINVAL and "type 2" in out.message("bad_xtype")
    assert code("dup_dim") == EINVAL and "'y'" in out.message("dup_dim")
    assert code("dup_dim.def_dim") == EBADID
    assert code("float_time") == EINVAL and "'time'" in out.message("float_time")
    assert code("write_time_var") == EINVAL and "climio_put_time" in out.message("write_time_var")
    assert code("close_before_enddef") == ESTATE
    assert code("close_before_enddef.again") == EBADID
    assert code("read_while_writing") == ESTATE
    # every file given up after an error is released by closefile and leaves nothing at its path
    held = {"write_time_var", *(["grid_beside_field"] if grid_first == "grid_beside_field.write" else [])}
    for name in ("def_var_after_enddef", "write_before_enddef", "put_time_before_enddef", "no_record",
                 "grid_mismatch", "grid_transposed", "two_level_dims", "grid_beside_field", "bad_xtype", "dup_dim",
                 "float_time",
                 "write_time_var", "read_while_writing"):
        # a write that every rank refused while holding it fails the file's next call too, its close
        assert code(f"{name}.close") == (EINVAL if name in held else NOERR), name
        assert not _exists(out, name), name
    for name in ("bad_mode", "bad_strategy", "serial_direct", "close_before_enddef"):
        assert not _exists(out, name), name

    assert code("good.close") == NOERR and _exists(out, "good")
    assert code("write_on_reading") == ESTATE and code("def_var_on_reading") == ESTATE
    assert code("enddef_on_reading") == ESTATE
    assert code("read_after_errors") == NOERR and code("reading.close") == NOERR
    assert code("reading.close_again") == EBADID
    for rank in range(nranks):
        start, count = rows_of(4, nranks, rank)
        assert np.array_equal(out.local("good_v", rank), np.arange(start * 6, (start + count) * 6)), rank
    assert sorted(os.listdir(tmp_path)) == ["good.nc"]  # no temporary file left either
    with netCDF4.Dataset(tmp_path / "good.nc") as ds:
        assert np.array_equal(ds["v"][0], np.arange(24, dtype=np.float32).reshape(4, 6))
        assert list(ds["time"][:]) == [3.5]


def test_createfile_refuses_an_unknown_strategy(merged) -> None:
    out = merged(("sequence", 1)).output()
    assert out.code("bad_strategy.create", 1) == EINVAL and "'bogus'" in out.message("bad_strategy.create")


# ------------------------------------------------------------------------------------------------ 4. conversions

CONVERTS = [(1, "serial", "root"), (2, "cdf5", "direct"), (3, "hdf5", "agg")]


@pytest.mark.parametrize("nranks, mode, strategy", CONVERTS)
def test_memory_types_converted_exactly_or_refused(merged, nranks: int, mode: str, strategy: str) -> None:
    done = merged(("convert", nranks, mode, strategy))  # convert DIR MODE STRATEGY at nranks
    tmp_path, out = done.where, done.output()
    for name in ("double_to_float", "int_to_double", "int64_to_int", "int_to_short", "float_to_double"):
        assert out.code(name, nranks) == NOERR, (name, out.messages[name])
    p = np.arange(24).reshape(4, 6)
    with netCDF4.Dataset(tmp_path / "conv.nc") as ds:
        ds.set_auto_mask(False)
        assert [ds[v].dtype for v in "fdisL"] == [np.float32, np.float64, np.int32, np.int16, np.float64]
        assert np.array_equal(ds["f"][0], (p * 0.1 + 1.0 / 3.0).astype(np.float32))  # rounded to nearest
        assert np.array_equal(ds["d"][0], (p * 1000003 - 7).astype(np.float64))
        assert np.array_equal(ds["i"][0], p * 100000 - 50)
        assert np.array_equal(ds["s"][0], p * 1000 - 12000)
        assert np.array_equal(ds["L"][0], np.stack([k * 100 + p + 0.75 for k in range(2)]))
    for name, needle in (("float_to_int", "float32"), ("double_to_int", "float64"), ("unknown_memtype", "type 7")):
        assert out.code(name, nranks) == EINVAL, name
        assert needle in out.message(name), out.message(name)
        assert not _exists(out, name)
    assert out.code("refused.close", nranks) == EINVAL  # a refused write fails the file's next call too
    assert sorted(os.listdir(tmp_path)) == ["conv.nc"]


@pytest.mark.parametrize("strategy", ["agg", "direct"])
def test_integers_out_of_range_refused_on_every_rank(merged, strategy: str) -> None:
    done = merged(("narrow", strategy))  # narrow PATH STRATEGY at 2 ranks
    path, printed = done.where / "narrow.nc", done.printed
    codes = dict(re.findall(r"^code int_to_byte (\d+) (-?\d+)$", printed, flags=re.M))
    assert codes == {"0": str(EINVAL), "1": str(EINVAL)}, (printed, done.launch.stderr[-2000:])
    assert done.status == 0 and not path.exists()


# ------------------------------------------------------------------------------------------------ 5. compression

def bitround(values: np.ndarray, bits: int) -> np.ndarray:
    """netCDF-C's BitRound of float32 values to ``bits`` mantissa bits: add half of the last kept bit, then
    clear the bits below it."""
    drop = 23 - bits
    u = values.astype(np.float32).view(np.uint32)
    return ((u + np.uint32(1 << (drop - 1))) & np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)).view(np.float32)


COMPRESSES = [(2, "direct"), (3, "agg")]


@pytest.mark.parametrize("nranks, strategy", COMPRESSES)
def test_deflate_and_quantize(merged, nranks: int, strategy: str) -> None:
    done = merged(("compress", nranks, strategy))  # compress DIR STRATEGY at nranks
    tmp_path, out = done.where, done.output()
    assert out.code("deflate", nranks) == NOERR and out.code("quantize", nranks) == NOERR
    p = np.arange(24).reshape(4, 6)
    with netCDF4.Dataset(tmp_path / "comp.nc") as ds:
        assert ds.data_model == "NETCDF4"
        filters = ds["z"].filters()
        assert filters["zlib"] and filters["shuffle"] and filters["complevel"] == 4
        assert ds["q"].quantization() == (7, "BitRound")
        for frame in range(2):
            want = np.stack([(frame * 1000 + k * 100 + p).astype(np.float32) + np.float32(0.25) for k in range(3)])
            assert np.array_equal(ds["z"][frame], want)  # lossless
            exact = np.float32(1.0 + p * 0.0137 + frame * 0.5)
            got = np.asarray(ds["q"][frame])
            assert np.all(np.abs(got - exact) <= np.abs(exact) * 2.0**-8)  # within half of the 7th bit
            assert np.all(got.view(np.uint32) & np.uint32(0xFFFF) == 0)  # the 16 lower bits cleared
            assert np.array_equal(got, bitround(exact, 7)) and not np.array_equal(got, exact)
    for name, needle in (("deflate_cdf5", "hdf5"), ("quantize_cdf5", "hdf5"), ("quantize_int", "float"),
                         ("deflate_level10", "level 10")):
        # refused by the call, or at the latest by enddef; nothing left at the path
        first = name if out.code(name, nranks) != NOERR else f"{name}.enddef"
        assert out.code(first, nranks) == EINVAL, first
        assert needle in out.message(first), out.message(first)
        assert not _exists(out, name)
    assert out.code("refused.close", nranks) == NOERR
    assert sorted(os.listdir(tmp_path)) == ["comp.nc"]


def test_quantize_refused_at_once_in_cdf5(merged) -> None:
    out = merged(("compress", 2, "direct")).output()
    assert out.code("deflate_cdf5", 2) == EINVAL  # as deflate is
    assert out.code("quantize_cdf5", 2) == EINVAL and "hdf5" in out.message("quantize_cdf5")


# ------------------------------------------------------------------------------------------------ 6. clobber

OLD_FILE = b"an older file, not netCDF\n"


def test_noclobber_keeps_the_old_file_and_clobber_replaces_it_at_close(merged) -> None:
    done = merged(("clobber",))  # clobber PATH FRESH at 2 ranks, PATH holding OLD_FILE before
    tmp_path = done.where
    path, fresh = tmp_path / "out.nc", tmp_path / "fresh.nc"
    old = OLD_FILE
    out = done.output()
    assert out.code("noclobber", 2) == EINVAL and str(path) in out.message("noclobber")
    assert out.code("noclobber.close", 2) == EBADID
    heads = {line.split()[1]: bytes.fromhex(line.split()[2] if len(line.split()) > 2 else "")
             for line in out.lines if line.startswith("head ")}
    assert heads["after_noclobber"] == old[:8]
    assert heads["while_writing"] == old[:8]  # the old file stays until the new one is closed
    assert heads["after_close"][:4] == b"CDF\x05"
    assert out.code("noclobber_again", 2) == EINVAL
    assert out.code("noclobber_fresh", 2) == NOERR
    for name in (path, fresh):
        with netCDF4.Dataset(name) as ds:
            assert np.array_equal(ds["v"][0], np.arange(24, dtype=np.float32).reshape(4, 6) + np.float32(0.5))
    assert sorted(os.listdir(tmp_path)) == ["fresh.nc", "out.nc"]


# ------------------------------------------------------------------------------------------------ 7. messages

def test_errmsg_truncation_and_strerror(merged) -> None:
    done = merged(("errmsg",))  # errmsg PATH at 1 rank, first in its table
    tmp_path = done.where
    path = tmp_path / "e.nc"
    out = done.output()
    assert out.line("before") == ["0", "1"]  # no error yet: an empty message
    assert out.code("dup_dim", 1) == EINVAL
    message = f"{path}: dimension 'x' is already defined"
    full = [line for line in out.lines if line.startswith("full ")][0].split(" ", 3)
    assert full[1:] == [str(len(message)), str(len(message)), message]
    clip = [line for line in out.lines if line.startswith("clip11 ")][0].split(" ", 4)
    assert clip[1:] == ["10", "1", "1", message[:10]]  # 10 characters, NUL, the rest of the buffer untouched
    assert out.line("clip1") == ["0", "1", "1"]
    assert out.line("clip0") == ["0", "1"]  # nothing written into a buffer of length 0
    assert out.line("null") == ["0"]
    texts = {int(line.split(" ", 2)[1]): line.split(" ", 2)[2] for line in out.lines if line.startswith("strerror ")}
    assert texts[NOERR] == "no error"
    for code, needle in ((EBADID, "id"), (EINVAL, "argument"), (ESTATE, "order"), (EIO, "machine"),
                         (EINTERNAL, "bug"), (ENOMEM, "memory")):
        assert needle in texts[code], (code, texts[code])
    assert len({texts[c] for c in (NOERR, EBADID, EINVAL, ESTATE, EIO, EINTERNAL, ENOMEM)}) == 7
    for unknown in (-7, 1, 12345):
        assert texts[unknown] == "not a climio error code"
    assert out.code("close", 1) == NOERR and os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------------------------ 8. more

def test_two_files_two_systems_and_finalize_publishing(merged) -> None:
    done = merged(("multi",))  # multi DIR at 3 ranks, first in its table
    tmp_path, out = done.where, done.output()
    assert out.code("cross_decomp", 3) == EBADID  # a decomposition of another I/O system
    assert out.code("freed_decomp", 3) == EBADID
    assert not _exists(out, "left_open_before_finalize") and _exists(out, "left_open_after_finalize")
    p = np.arange(24, dtype=np.float32).reshape(4, 6)
    with netCDF4.Dataset(tmp_path / "one.nc") as ds:
        assert np.array_equal(ds["a"][:], np.stack([1000 + p, 1100 + p])) and list(ds["time"][:]) == [10.0, 11.0]
    with netCDF4.Dataset(tmp_path / "two.nc") as ds:
        assert ds.data_model == "NETCDF4" and ds["b"].dimensions == ("t", "lat", "lon")
        assert np.array_equal(ds["b"][:], (2000 + p)[None]) and list(ds["t"][:]) == [20.0]
    with netCDF4.Dataset(tmp_path / "left_open.nc") as ds:
        assert np.array_equal(ds["v"][:], (3000 + p)[None]) and list(ds["time"][:]) == [30.0]
    for color in (0, 1):  # ranks {0, 2} and {1}
        with netCDF4.Dataset(tmp_path / f"sub{color}.nc") as ds:
            assert np.array_equal(ds["v"][:], (4000 + 100 * color + p)[None]) and list(ds["time"][:]) == [40.0 + color]
    assert sorted(os.listdir(tmp_path)) == ["left_open.nc", "one.nc", "sub0.nc", "sub1.nc", "two.nc"]


FRAMES = [(2, "cdf5", "direct"), (2, "hdf5", "agg")]


@pytest.mark.parametrize("nranks, mode, strategy", FRAMES)
def test_records_out_of_order(merged, nranks: int, mode: str, strategy: str) -> None:
    done = merged(("frames", nranks, mode, strategy))  # frames PATH MODE STRATEGY at nranks
    path = done.where / "frames.nc"
    out = done.output()
    p = np.arange(24, dtype=np.float32).reshape(4, 6)
    with netCDF4.Dataset(path) as ds:
        assert len(ds.dimensions["time"]) == 6
        for frame in (5, 0, 2):
            assert np.array_equal(ds["v"][frame], frame * 100 + p), frame
            assert ds["time"][frame] == 10.0 * frame
    for rank in range(nranks):
        start, count = rows_of(4, nranks, rank)
        assert np.array_equal(out.local("frame5", rank), 500 + np.arange(start * 6, (start + count) * 6))
    assert out.code("frame6", nranks) == EINVAL and "6 records" in out.message("frame6")


PUTVARS = [(2, "cdf5", "agg"), (3, "hdf5", "direct")]


@pytest.mark.parametrize("nranks, mode, strategy", PUTVARS)
def test_put_var_and_fields_without_records(merged, nranks: int, mode: str, strategy: str) -> None:
    done = merged(("putvar", nranks, mode, strategy))  # putvar DIR MODE STRATEGY at nranks
    tmp_path, out = done.where, done.output()
    for name in ("enddef", "lat", "lon", "level", "area"):
        assert out.code(name, nranks) == NOERR, (name, out.messages[name])
    p = np.arange(24).reshape(4, 6)
    with netCDF4.Dataset(tmp_path / "putvar.nc") as ds:
        assert {n: len(d) for n, d in ds.dimensions.items()} == {"time": 2, "y": 4, "x": 6, "nb": 2, "lev": 3}
        assert ds["lat"].dimensions == ("y",) and list(ds["lat"][:]) == [-67.5, -22.5, 22.5, 67.5]  # rank 0's
        assert ds["lon"].dtype == np.float32 and list(ds["lon"][:]) == [0, 60, 120, 180, 240, 300]
        assert ds["level"].dtype == np.int16 and list(ds["level"][:]) == [1000, 500, 250]
        assert ds["area"].dimensions == ("y", "x") and np.array_equal(ds["area"][:], p + 0.125)
        assert ds["time_bnds"].dimensions == ("time", "nb")
        assert np.array_equal(ds["time_bnds"][:], [[0.0, 6.0], [6.0, 12.0]])
        assert list(ds["time"][:]) == [3.0, 9.0] and ds["time"].bounds == "time_bnds"
        assert ds["v"].dimensions == ("time", "lev", "y", "x")
        for frame in range(2):
            assert np.array_equal(ds["v"][frame], np.stack([frame * 1000 + k * 100 + p for k in range(3)]))
    for rank in range(nranks):
        start, count = rows_of(4, nranks, rank)
        assert np.array_equal(out.local("area", rank), np.arange(start * 6, (start + count) * 6) + 0.125)
    for name, needle in (("put_var_on_field", "climio_write_darray"), ("write_darray_on_coordinate", "climio_put_var"),
                         ("frame_on_fixed_field", "CLIMIO_NOFRAME"), ("noframe_on_records", "frame -1"),
                         ("short_coordinate", "(4,)"), ("float_into_short", "float32")):
        assert out.code(name, nranks) == EINVAL, (name, out.messages[name])
        assert needle in out.message(name), out.message(name)
        assert not _exists(out, name), name
    assert out.code("refused.close", nranks) == NOERR
    assert sorted(os.listdir(tmp_path)) == ["putvar.nc"]  # int_out_of_short.nc was refused: not there


def test_put_var_refuses_integers_out_of_range(merged) -> None:
    done = merged(("putvar", *PUTVARS[0]))
    tmp_path, out = done.where, done.output()
    assert out.code("int_out_of_short", 2) == EINVAL
    assert not (tmp_path / "int_out_of_short.nc").exists()


def test_second_finalize_returns_ebadid(programs: dict[str, Path]) -> None:
    result, printed = launch(programs["finalize_twice"], [], 2)
    assert sorted(re.findall(r"^code finalize (\d+) 0$", printed, flags=re.M)) == ["0", "1"], printed
    codes = dict(re.findall(r"^code finalize_again (\d+) (-?\d+)$", printed, flags=re.M))
    assert result.returncode == 0 and codes == {"0": str(EBADID), "1": str(EBADID)}, result.stderr[-2000:]
