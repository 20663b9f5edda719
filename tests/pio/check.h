/* The test programs' checks: a failed PIO call or expectation ends the job with its line (status 3 or 4). They
 * need an int `rank` in scope. */
#ifndef PIO_TEST_CHECK_H
#define PIO_TEST_CHECK_H

#define CHECK(call)                                                                                            \
    do {                                                                                                       \
        int code_ = (call);                                                                                    \
        if (code_ != PIO_NOERR) {                                                                              \
            fprintf(stderr, "task %d: %s returned %d (line %d)\n", rank, #call, code_, __LINE__);             \
            MPI_Abort(MPI_COMM_WORLD, 3);                                                                      \
        }                                                                                                      \
    } while (0)

#define EXPECT(condition)                                                                                      \
    do {                                                                                                       \
        if (!(condition)) {                                                                                    \
            fprintf(stderr, "task %d: expected %s (line %d)\n", rank, #condition, __LINE__);                  \
            MPI_Abort(MPI_COMM_WORLD, 4);                                                                      \
        }                                                                                                      \
    } while (0)

/* The model's communicator: MPI_COMM_WORLD, or with `servers` climio serve ranks as the launch's last
 * application, world's other ranks (MPI_Comm_create_group: collective over them only); *rank_out: its rank. */
static inline MPI_Comm model_comm(int servers, int *rank_out)
{
    int size;
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (servers > 0) {
        MPI_Group world, model;
        int range[1][3] = {{0, size - servers - 1, 1}};
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_range_incl(world, 1, range, &model);
        MPI_Comm_create_group(MPI_COMM_WORLD, model, 1, &comm);
        MPI_Group_free(&world);
        MPI_Group_free(&model);
    }
    MPI_Comm_rank(comm, rank_out);
    return comm;
}

#endif
