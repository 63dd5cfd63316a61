/*
 * group.h — the process group of data-parallel training: which rank this process is, and
 * how many there are.
 *
 * A program started by an MPI launcher (`mpirun -np K build/app/train ...`) is one of
 * K ranks; started plainly, it is the one rank of a group of one and never initialises
 * MPI, so a single process runs exactly as it would without MPI (no daemon, no network
 * probing). Which of the two it is, dist_under_launcher tells from the launcher's
 * environment; a program started plainly need not call parallel/ at all.
 *
 * Ranks given different flags or state would wait for each other in collectives that never
 * match, or train other numbers without a word: they compare what must agree first
 * (dist_agree), and every rank names the first difference.
 *
 * What this is not: sub-communicators, several groups, or fault tolerance. A rank that
 * fails ends the whole job (dist_abort): the others would wait for it forever otherwise.
 * Only parallel/ knows MPI; every other room sees a rank and a size.
 */
#ifndef REMAT_PARALLEL_GROUP_H
#define REMAT_PARALLEL_GROUP_H

#include <stdbool.h>
#include <stdlib.h>

#include "base/error.h"

typedef struct DistGroup {
    int rank; /* 0 .. size-1 */
    int size; /* the world size K; 1 for a process started without a launcher */
} DistGroup;

/* True when an MPI launcher started this process: its environment names the job's size
 * or this rank (Open MPI's OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, or PMI_SIZE). It reads
 * the environment alone, so a program can ask before it calls anything else of parallel/. */
static inline bool dist_under_launcher(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}

/* The group of every process of the job. Under a launcher, initialises MPI (once; later
 * calls return the same group); otherwise returns {0, 1} and touches no MPI. REMAT_EIO if
 * MPI does not start. */
RematStatus dist_init(int *argc, char ***argv, DistGroup *world);

/* The group dist_init found; {0, 1} before it, or without a launcher. */
DistGroup dist_world(void);

/* Ends MPI, if dist_init started it: every rank calls it once, at the end. */
void dist_finalize(void);

/* Ends every rank of the job at once with exit status `code` (MPI_Abort); without a
 * launcher, exits this process with it. For a rank that failed: the others are waiting
 * for it in a collective and would never return. After dist_agree found the ranks
 * disagree, every rank failed alike: each ends itself (MPI_Finalize, exit), so that every
 * rank's message is printed and none is cut short. */
_Noreturn void dist_abort(int code);

/* Waits until every rank has arrived. Nothing without a launcher. */
void dist_barrier(const DistGroup *g);

/* ---- ranks that must agree ------------------------------------------------------------ */

/* One setting every rank must hold the same of, by name, with its value as canonical text
 * (no struct bytes, no padding): equal values print alike on every rank. */
#define DIST_FACT_CHARS 40
typedef struct DistFact {
    const char *name;             /* "--steps", "the resumed step" */
    char value[DIST_FACT_CHARS];  /* "4", "adamw"; longer text is cut */
} DistFact;

/* The fact `name` with its value printed by `format` ("%d"; "%.9g" for a float, which
 * tells every float apart). */
__attribute__((format(printf, 2, 3))) DistFact dist_fact(const char *name, const char *format, ...);

/* Whether every rank holds the same n facts: each rank's are all-gathered and compared in
 * order. REMAT_OK if they agree; else, on every rank alike, REMAT_EINVAL naming this rank's
 * first difference, "--steps is 4 here, 6 on rank 0: `hint`", and dist_abort then lets each
 * rank end itself. A collective: every rank calls it at the same point, with facts of the
 * same names. A group of one agrees with itself and touches no MPI. */
RematStatus dist_agree(const DistGroup *g, const DistFact *facts, int n, const char *hint);

#endif /* REMAT_PARALLEL_GROUP_H */
