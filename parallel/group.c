/*
 * group.c — the process group over MPI_COMM_WORLD (see group.h).
 */
#include "parallel/group.h"

#include <mpi.h>
#include <stdlib.h>

static bool launched;
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
    if (launched) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

void dist_barrier(const DistGroup *g)
{
    if (launched && g->size > 1) MPI_Barrier(MPI_COMM_WORLD);
}
