/*
 * dtr.h — Dynamic Tensor Rematerialization's eviction policy (Kirisame et al., ICLR 2021),
 * over a pool of entries that knows nothing of tensors, and DTR on its paper's unit chain.
 *
 * Every entry computed is kept while the budget allows; to make room, the resident entry
 * with the least h_DTR = c / (m · s) is evicted: m its bytes, s the clock's advance (by each
 * op's cost) since its last use, c its cost plus its evicted neighbourhood e*'s: the
 * evicted ancestors and descendants reached through evicted entries (what recomputing it
 * would recompute, what needs it back). Inputs of the op being computed are never evicted;
 * an evicted one is recomputed first, recursively. A released entry is freed at once
 * (eager eviction) and stays in the graph, evicted. The pool counts bytes and calls the
 * caller's hooks; --strategy dtr's runtime (dtr_forward, dtr_run.c) drives it from a real step.
 */
#ifndef REMAT_CHECKPOINT_DTR_H
#define REMAT_CHECKPOINT_DTR_H

#include "checkpoint/checkpoint.h"

enum { DTR_MAX_INPUTS = 8, DTR_CHAIN_MAX = 10000 };

typedef enum DtrState { DTR_PENDING, DTR_RESIDENT, DTR_EVICTED } DtrState;

typedef struct DtrEntry {
    size_t bytes;
    double cost;     /* of computing it once: FLOPs, or 1 per op on the unit chain */
    double last_use; /* the clock when the program computed it or an op last read it */
    DtrState state;  /* PENDING: never computed yet */
    int locks;       /* ops being computed that read it: not evictable while > 0 */
    int64_t evictable_since; /* resident and unlocked since this (DtrPool.unlocks) */
    int n_inputs, inputs[DTR_MAX_INPUTS];
    /* Its readers, a list of links r·DTR_MAX_INPUTS + k (r's input k) ending with -1: */
    int first_reader, next_reader[DTR_MAX_INPUTS]; /* the list's head; the next link after r's k */
    uint64_t walk; /* the e* walk that last counted it */
} DtrEntry;

/* What the caller does when the pool decides: run entry `id`'s op (recompute: it was
 * evicted before) and drop its data. Either may be NULL; neither may add entries. */
typedef struct DtrHooks {
    RematStatus (*run)(void *ctx, int id, bool recompute);
    void (*drop)(void *ctx, int id);
    void *ctx;
} DtrHooks;

typedef struct DtrPool {
    size_t budget, used; /* bytes; used: the resident entries' */
    double clock;        /* the cost of every op run so far */
    DtrHooks hooks;
    DtrEntry *entries;   /* by id, in the order added */
    int n_entries, capacity;
    uint64_t walks;
    int64_t unlocks, recomputes, evictions; /* times an entry became evictable; evictions not releases */
} DtrPool;

/* A pool of `budget` bytes with room for `capacity` entries, owned by the caller
 * (dtr_pool_free accepts NULL); NULL on error (REMAT_EINVAL, REMAT_ENOMEM). */
DtrPool *dtr_pool_create(size_t budget, int capacity, DtrHooks hooks);
void dtr_pool_free(DtrPool *pool);

/* A new pending entry whose op reads `inputs` (ids added before). Returns its id (0, 1...),
 * or -1 with REMAT_EINVAL, the pool unchanged: no room left, bytes 0 or above the budget,
 * a negative cost, more than DTR_MAX_INPUTS or an unknown input. */
int dtr_add(DtrPool *pool, size_t bytes, double cost, const int *inputs, int n_inputs);

/* The program computes pending entry `id`, as described above. On error `id` stays pending
 * and what was evicted or recomputed meanwhile stays so: REMAT_EOOM when nothing evictable
 * is left, REMAT_ESTATE when `id` is not pending, or a hook's error. */
RematStatus dtr_compute(DtrPool *pool, int id);

/* The program drops entry `id`: freed now if resident. */
void dtr_release(DtrPool *pool, int id);

/* h_DTR of resident entry `id` (+inf when s is 0), and the evictable entry with the
 * smallest (of equals, the last to become evictable, as DTR's simulator picks), or -1. */
double dtr_score(DtrPool *pool, int id);
int dtr_choose(DtrPool *pool);

/* For a runtime that computes entries itself: entry `id` (pending, or evicted: `recompute`)
 * is resident from the pool's clock on. */
void dtr_resident(DtrPool *pool, int id, bool recompute);

/* DTR's simulated chain (uniform_linear): f_i from f_{i−1}, gradient b_i from f_{i−1} and
 * b_{i+1}, n ops of each, cost 1, every tensor a unit of B, the one being made too; f_{n−1}
 * is released before backward, f_i once b_{i+1} is made, b_{i+1} once b_i is. Into *extra,
 * the computes beyond those 2n, as DTR does them and the fewest any schedule can do.
 * REMAT_EINVAL unless 3 ≤ n ≤ DTR_CHAIN_MAX and B ≥ 3 (b_i holds two inputs and itself). */
RematStatus dtr_chain_extra(int n, int budget, int64_t *extra);
RematStatus dtr_chain_optimum(int n, int budget, int64_t *extra);

/* ---- the runtime: --strategy dtr (dtr_run.c) ------------------------------------------------
 * The chain runs with every saved activation kept while the budget allows. Each tensor an op
 * of a layer saves, and each layer's input, is an entry (parameters and the chain's input are
 * held, never evicted). When an allocation would cross the budget, the ledger's pressure hook
 * (tensor/memory.h) evicts the entry of least h_DTR that nothing but the runtime holds (not
 * one in use by the op running), until it fits; when none is left the allocation fails with
 * the ledger's out-of-memory message. When backward unpacks an evicted entry, its layer's
 * forward is replayed (replay.h: grad off, RECOMPUTE FLOPs, the generator restored from the
 * layer's record) from the layer's input, itself rematerialised first if evicted, recursively;
 * the replay makes the same ops in the same order, so the tensor it saves as op k's slot i is
 * the entry's, bit for bit, and every evicted entry of the layer still held is taken back.
 * Each eviction and each tensor taken back is a mark on the ledger's timeline ("dtr.evict",
 * "dtr.remat": mem_timeline_mark), so a recorded step shows where they happened. */
enum { DTR_MAX_REMATS = 8, DTR_ENTRIES_PER_LAYER = 64 };

typedef struct DtrOptions {
    RegionReplay replay; /* preserve_rng: replay with the layer's generator; determinism_check:
                            each tensor made again must equal its first forward's (a hash) */
    int max_remats;      /* more rematerialisations of one tensor in a step is an error (the budget
                            thrashes); 0: DTR_MAX_REMATS */
} DtrOptions;

/* What runtimes did since the process started. */
typedef struct DtrStats {
    int64_t evictions, remats, replays; /* entries evicted, taken back, layer forwards replayed */
    double choose_seconds;              /* in the pressure hook, scoring and choosing victims
                                           (platform_seconds), whether or not one was found */
} DtrStats;

/* Runs layers[0 .. n) on x (borrowed) under DTR and returns the last output (a new Var the
 * caller owns); the runtime lives, its pressure hook installed, until the tape is reset. With
 * grad mode off the layers simply run. NULL on error (the budget, more than
 * DTR_ENTRIES_PER_LAYER saved tensors a layer). */
Var *dtr_forward(Layer **layers, int n, Var *x, TrainCtx *ctx, const DtrOptions *opts);
DtrStats dtr_stats(void);

#endif /* REMAT_CHECKPOINT_DTR_H */
