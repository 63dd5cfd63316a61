/*
 * error.h — remat's one error convention, used by every room.
 *
 * A function that can fail returns either a RematStatus (REMAT_OK is 0) or a pointer
 * (NULL on failure: remat_fail_null). On failure it also leaves a human-readable message in a
 * thread-local buffer, which remat_last_error() returns. A failing function changes
 * nothing the caller owns unless its comment says otherwise.
 *
 *     Tensor *t = tensor_create(MEM_ACT, DTYPE_F32, 2, (int[]){B, C});
 *     if (!t) { fprintf(stderr, "remat: %s\n", remat_last_error()); return 1; }
 *
 * This is deliberately not an exception mechanism: callers check and propagate.
 */
#ifndef REMAT_ERROR_H
#define REMAT_ERROR_H

typedef enum RematStatus {
    REMAT_OK = 0,
    REMAT_EINVAL,   /* bad argument: NULL, bad shape, out-of-range value */
    REMAT_ENOMEM,   /* the host allocator failed */
    REMAT_EOOM,     /* the memory ledger's budget would be crossed */
    REMAT_EIO,      /* a file could not be read or written */
    REMAT_ECORRUPT, /* a file or record failed validation */
    REMAT_ESTATE,   /* a call made in the wrong state (e.g. a freed saved tensor) */
} RematStatus;

/* The message of the last failure on this thread ("" if none since the last clear).
 * The returned string is owned by remat and valid until the next failure on this thread. */
const char *remat_last_error(void);

/* The status of the last failure on this thread (REMAT_OK if none since the last clear). */
RematStatus remat_last_status(void);

/* Forgets the last failure on this thread. */
void remat_clear_error(void);

/* Records a failure: formats the message (printf-style) and returns `status`, so that a
 * failing function can write `return remat_fail(REMAT_EINVAL, "bad shape %d", n);`. */
RematStatus remat_fail(RematStatus status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The same for a function that returns a pointer: records the failure and returns NULL,
 * so that it can write `return remat_fail_null(REMAT_EINVAL, "bad shape %d", n);`. A macro,
 * so that remat_fail records every failure (one breakpoint catches them all). */
#define remat_fail_null(...) (remat_fail(__VA_ARGS__), NULL)

#endif /* REMAT_ERROR_H */
