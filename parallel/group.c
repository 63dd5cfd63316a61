/*
 * group.c — the process group over MPI_COMM_WORLD (see group.h).
 */
#include "parallel/group.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool launched;
static bool failed_together; /* dist_agree found a difference, which every rank saw */
static DistGroup world_group = {.rank = 0, .size = 1};

RematStatus dist_init(int *argc, char ***argv, DistGroup *world)
{
    *world = (DistGroup){.rank = 0, .size = 1};
    if (!dist_under_launcher()) return REMAT_OK;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && MPI_Init(argc, argv) != MPI_SUCCESS)
        return remat_fail(REMAT_EIO, "dist_init: MPI_Init failed");
    launched = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &world->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world->size);
    world_group = *world;
    return REMAT_OK;
}

DistGroup dist_world(void) { return world_group; }

void dist_finalize(void)
{
    int finalized = 0;
    if (launched && MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Finalize();
}

_Noreturn void dist_abort(int code)
{
    if (launched && !failed_together) MPI_Abort(MPI_COMM_WORLD, code);
    dist_finalize();
    exit(code);
}

void dist_barrier(const DistGroup *g)
{
    if (launched && g->size > 1) MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- ranks that must agree ------------------------------------------------------------ */

DistFact dist_fact(const char *name, const char *format, ...)
{
    DistFact f = {.name = name};
    va_list ap;
    va_start(ap, format);
    vsnprintf(f.value, sizeof f.value, format, ap);
    va_end(ap);
    return f;
}

RematStatus dist_agree(const DistGroup *g, const DistFact *facts, int n, const char *hint)
{
    if (!launched || g->size == 1) return REMAT_OK;
    const size_t bytes = (size_t)n * DIST_FACT_CHARS; /* one rank's facts */
    char *all = calloc((size_t)(g->size + 1), bytes); /* every rank's, then this one's */
    if (!all) return remat_fail(REMAT_ENOMEM, "rank %d: no memory to check that the ranks agree", g->rank);
    char *mine = all + (size_t)g->size * bytes;
    for (int i = 0; i < n; i++) memcpy(mine + (size_t)i * DIST_FACT_CHARS, facts[i].value, DIST_FACT_CHARS);
    MPI_Allgather(mine, (int)bytes, MPI_CHAR, all, (int)bytes, MPI_CHAR, MPI_COMM_WORLD);
    RematStatus status = REMAT_OK;
    for (int i = 0; status == REMAT_OK && i < n; i++) /* the first fact another rank holds otherwise */
        for (int r = 0; r < g->size && status == REMAT_OK; r++) {
            const char *theirs = all + ((size_t)r * (size_t)n + (size_t)i) * DIST_FACT_CHARS;
            if (strcmp(theirs, facts[i].value))
                status = remat_fail(REMAT_EINVAL, "%s is %s here, %s on rank %d: %s", facts[i].name, facts[i].value,
                                    theirs, r, hint);
        }
    failed_together = status != REMAT_OK; /* every rank saw what this one saw */
    free(all);
    return status;
}
