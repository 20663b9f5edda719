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

#endif
