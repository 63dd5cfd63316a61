/*
 * group.c — the process group over MPI_COMM_WORLD (see group.h).
 */
#include "parallel/group.h"

#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
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

DistFact dist_fact_text(const char *name, const char *text)
{
    DistFact f = {.name = name};
    snprintf(f.value, sizeof f.value, "%s", text ? text : "none");
    return f;
}

DistFact dist_fact_u64(const char *name, uint64_t value)
{
    DistFact f = {.name = name};
    snprintf(f.value, sizeof f.value, "%" PRIu64, value);
    return f;
}

DistFact dist_fact_float(const char *name, float value)
{
    DistFact f = {.name = name};
    for (int digits = 1; digits <= 9; digits++) { /* 9 digits read back as any float */
        snprintf(f.value, sizeof f.value, "%.*g", digits, (double)value);
        if (strtof(f.value, NULL) == value) break;
    }
    return f;
}

/* Rank r's value of fact i, among the n facts of every rank gathered into `all`. */
static const char *fact_of(const char *all, int r, int n, int i)
{
    return all + ((size_t)r * (size_t)n + (size_t)i) * DIST_FACT_CHARS;
}

RematStatus dist_agree(const DistGroup *g, const DistFact *facts, int n, const char *hint)
{
    if (!launched || g->size == 1) return REMAT_OK;
    const int K = g->size;
    const size_t chars = DIST_FACT_CHARS;
    int *counts = malloc((size_t)K * sizeof *counts);
    const size_t bytes = (size_t)n * chars; /* one rank's facts */
    char *all = malloc((size_t)(K + 1) * bytes); /* every rank's, then this one's */
    if (!counts || !all) {
        free(counts);
        free(all);
        return remat_fail(REMAT_ENOMEM, "rank %d: no memory to check that the ranks agree", g->rank);
    }
    char *mine = all + (size_t)K * bytes;
    MPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
    int r = 0;
    while (r < K && counts[r] == n) r++;
    RematStatus status = REMAT_OK;
    if (r < K) status = remat_fail(REMAT_EINVAL, "%d settings here, %d on rank %d: %s", n, counts[r], r, hint);
    for (int i = 0; status == REMAT_OK && i < n; i++) memcpy(mine + (size_t)i * chars, facts[i].value, chars);
    if (status == REMAT_OK) MPI_Allgather(mine, (int)bytes, MPI_CHAR, all, (int)bytes, MPI_CHAR, MPI_COMM_WORLD);
    for (int i = 0; status == REMAT_OK && i < n; i++) { /* the first fact another rank holds otherwise */
        for (r = 0; r < K && status == REMAT_OK; r++)
            if (strcmp(fact_of(all, r, n, i), facts[i].value))
                status = remat_fail(REMAT_EINVAL, "%s is %s here, %s on rank %d: %s", facts[i].name, facts[i].value,
                                    fact_of(all, r, n, i), r, hint);
    }
    failed_together = status != REMAT_OK; /* every rank saw what this one saw */
    free(counts);
    free(all);
    return status;
}
