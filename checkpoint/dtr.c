/*
 * dtr.c — DTR's eviction policy over a pool of entries, and its unit chain with the optimum
 * (dtr.h). The pool takes the steps of DTR's simulator (simrd: runtime V2, eager eviction,
 * h_DTR) in its order, down to which of equal scores goes: the chain's counts equal its.
 */
#include "checkpoint/dtr.h"
#include "checkpoint/revolve.h"

#include <math.h>
#include <stdlib.h>

DtrPool *dtr_pool_create(size_t budget, int capacity, DtrHooks hooks)
{
    if (budget == 0 || capacity < 1)
        return remat_fail_null(REMAT_EINVAL, "dtr: a pool needs a budget and room (got %zu bytes, %d entries)", budget,
                               capacity);
    DtrPool *pool = calloc(1, sizeof *pool + (size_t)capacity * sizeof(DtrEntry));
    if (!pool) return remat_fail_null(REMAT_ENOMEM, "dtr: no memory for a pool of %d entries", capacity);
    *pool = (DtrPool){.budget = budget, .hooks = hooks, .entries = (DtrEntry *)(pool + 1), .capacity = capacity};
    return pool;
}

void dtr_pool_free(DtrPool *pool) { free(pool); }

int dtr_add(DtrPool *pool, size_t bytes, double cost, const int *inputs, int n_inputs)
{
    bool ok = pool->n_entries < pool->capacity && bytes > 0 && bytes <= pool->budget && cost >= 0 &&
              n_inputs >= 0 && n_inputs <= DTR_MAX_INPUTS;
    for (int k = 0; ok && k < n_inputs; k++) ok = inputs[k] >= 0 && inputs[k] < pool->n_entries;
    if (!ok) {
        remat_fail(REMAT_EINVAL, "dtr: entry %d of a pool of %d needs 1 to %zu bytes (the budget), a cost of 0 or more "
                   "and at most %d inputs among those added (got %zu bytes, cost %g, %d inputs)", pool->n_entries,
                   pool->capacity, pool->budget, DTR_MAX_INPUTS, bytes, cost, n_inputs);
        return -1;
    }
    DtrEntry *e = &pool->entries[pool->n_entries];
    *e = (DtrEntry){.bytes = bytes, .cost = cost, .n_inputs = n_inputs, .first_reader = -1};
    for (int k = 0; k < n_inputs; k++) {
        e->inputs[k] = inputs[k];
        e->next_reader[k] = pool->entries[inputs[k]].first_reader;
        pool->entries[inputs[k]].first_reader = pool->n_entries * DTR_MAX_INPUTS + k;
    }
    return pool->n_entries++;
}

/* The entry's last lock is gone: evictable from now, after every other evictable one. */
static void unlock(DtrPool *pool, int id)
{
    if (--pool->entries[id].locks == 0) pool->entries[id].evictable_since = ++pool->unlocks;
}

void dtr_release(DtrPool *pool, int id)
{
    if (id < 0 || id >= pool->n_entries || pool->entries[id].state != DTR_RESIDENT) return;
    pool->entries[id].state = DTR_EVICTED;
    pool->used -= pool->entries[id].bytes;
    if (pool->hooks.drop) pool->hooks.drop(pool->hooks.ctx, id);
}

/* The cost of the evicted entries reached from `id` through evicted ones, towards its
 * inputs (up) or its readers, each counted once per walk: a resident entry ends the walk. */
static double neighbourhood(DtrPool *pool, int id, bool up)
{
    const DtrEntry *e = &pool->entries[id];
    double cost = 0;
    int link = e->first_reader; /* down: the next reader's link */
    for (int k = 0; up ? k < e->n_inputs : link >= 0; k++) {
        const int next = up ? e->inputs[k] : link / DTR_MAX_INPUTS;
        if (!up) link = pool->entries[next].next_reader[link % DTR_MAX_INPUTS];
        DtrEntry *n = &pool->entries[next];
        if (n->state == DTR_EVICTED && n->walk != pool->walks) {
            n->walk = pool->walks;
            cost += n->cost + neighbourhood(pool, next, up);
        }
    }
    return cost;
}

double dtr_score(DtrPool *pool, int id)
{
    const DtrEntry *e = &pool->entries[id];
    pool->walks++;
    const double c = e->cost + neighbourhood(pool, id, true) + neighbourhood(pool, id, false);
    const double m_s = (double)e->bytes * (pool->clock - e->last_use);
    return m_s > 0 ? c / m_s : INFINITY;
}

int dtr_choose(DtrPool *pool)
{
    int best = -1;
    double least = INFINITY;
    for (int i = 0; i < pool->n_entries; i++) {
        const DtrEntry *e = &pool->entries[i];
        if (e->state != DTR_RESIDENT || e->locks > 0) continue;
        const double h = dtr_score(pool, i);
        if (h < least || (h == least && (best < 0 || e->evictable_since > pool->entries[best].evictable_since))) {
            least = h;
            best = i;
        }
    }
    return best;
}

void dtr_resident(DtrPool *pool, int id, bool recompute)
{
    DtrEntry *e = &pool->entries[id];
    if (e->state == DTR_RESIDENT) return;
    e->state = DTR_RESIDENT;
    e->last_use = pool->clock;
    e->evictable_since = ++pool->unlocks;
    pool->used += e->bytes;
    pool->recomputes += recompute;
}

/* Makes entry `id` resident by running its op (recompute: it was evicted): its inputs are
 * marked used now; the resident ones are locked, then the others recomputed in order and
 * locked; entries are evicted until it fits; it runs; its inputs are unlocked. */
static RematStatus materialize(DtrPool *pool, int id, bool recompute)
{
    const DtrEntry *e = &pool->entries[id];
    bool resident[DTR_MAX_INPUTS];
    for (int k = 0; k < e->n_inputs; k++) {
        pool->entries[e->inputs[k]].last_use = pool->clock;
        resident[k] = pool->entries[e->inputs[k]].state == DTR_RESIDENT;
        if (resident[k]) pool->entries[e->inputs[k]].locks++;
    }
    RematStatus status = REMAT_OK;
    for (int k = 0; k < e->n_inputs && status == REMAT_OK; k++) {
        if (resident[k]) continue;
        if (pool->entries[e->inputs[k]].state != DTR_RESIDENT) status = materialize(pool, e->inputs[k], true);
        if (status == REMAT_OK) pool->entries[e->inputs[k]].locks++;
    }
    for (int victim; status == REMAT_OK && pool->used + e->bytes > pool->budget; pool->evictions++) {
        if ((victim = dtr_choose(pool)) < 0)
            return remat_fail(REMAT_EOOM, "dtr: out of memory: %zu bytes to compute, %zu of the budget's %zu resident, "
                              "none evictable (inputs of the ops being computed)", e->bytes, pool->used, pool->budget);
        dtr_release(pool, victim);
    }
    if (status == REMAT_OK && pool->hooks.run) status = pool->hooks.run(pool->hooks.ctx, id, recompute);
    if (status != REMAT_OK) return status;
    pool->clock += e->cost;
    pool->used += e->bytes;
    pool->entries[id].state = DTR_RESIDENT;
    pool->entries[id].evictable_since = ++pool->unlocks;
    for (int k = 0; k < e->n_inputs; k++) unlock(pool, e->inputs[k]);
    pool->recomputes += recompute;
    return REMAT_OK;
}

RematStatus dtr_compute(DtrPool *pool, int id)
{
    if (id < 0 || id >= pool->n_entries || pool->entries[id].state != DTR_PENDING)
        return remat_fail(REMAT_ESTATE, "dtr: entry %d is not one added and not yet computed", id);
    const RematStatus status = materialize(pool, id, false);
    if (status == REMAT_OK) pool->entries[id].last_use = pool->clock;
    for (int i = 0; status != REMAT_OK && i < pool->n_entries; i++) /* the locks of the ops it left */
        while (pool->entries[i].locks > 0) unlock(pool, i);
    return status;
}

/* ---- DTR's unit chain -------------------------------------------------------------------
 * The optimum is Revolve's count. Name x_k = f_{k−1}, and x_0 the input, which holds no
 * memory: backward op k reads x_k. With a gradient resident, an op (an advance, or b_k)
 * holds its input and its output in the B − 1 units left: Revolve's working state, which
 * an advance overwrites in place, takes two units here and x_0 none, so Revolve's slots
 * are s = B − 2. The forward, no gradient yet, makes x_n and b_{n−1} with a unit more and
 * ends as Revolve's first sweep over x_0 → … → x_{n−2} does. Left: reversing those n − 1
 * steps, t(n − 1, B − 2) advances (revolve.h) less the first sweep's n − 2. Checked against
 * an exact dynamic program and that against a search of every schedule (tests/test_dtr.c). */
static RematStatus check(int n, int budget, const int64_t *extra)
{
    return n >= 3 && n <= DTR_CHAIN_MAX && budget >= 3 && extra ? REMAT_OK
        : remat_fail(REMAT_EINVAL, "dtr: the unit chain needs 3 to %d ops, a budget B >= 3 (a backward op holds two "
                     "inputs and its output) and a result; got n = %d, B = %d", DTR_CHAIN_MAX, n, budget);
}

RematStatus dtr_chain_extra(int n, int budget, int64_t *extra)
{
    RematStatus status = check(n, budget, extra);
    DtrPool *pool = status == REMAT_OK ? dtr_pool_create((size_t)budget, 2 * n, (DtrHooks){0}) : NULL;
    if (status == REMAT_OK && !pool) status = remat_last_status();
    for (int i = 0; i < n && status == REMAT_OK; i++) /* f_i is entry i */
        status = dtr_compute(pool, dtr_add(pool, 1, 1, (int[]){i - 1}, i > 0));
    for (int i = n - 1; i >= 0 && status == REMAT_OK; i--) { /* b_i is entry 2n − 1 − i */
        const int inputs[2] = {i - 1, 2 * n - 2 - i}; /* f_{i−1} unless i = 0, b_{i+1} unless i = n − 1 */
        dtr_release(pool, i);
        status = dtr_compute(pool, dtr_add(pool, 1, 1, inputs + (i == 0), (i > 0) + (i < n - 1)));
        dtr_release(pool, 2 * n - 2 - i);
    }
    if (status == REMAT_OK) *extra = pool->recomputes;
    dtr_pool_free(pool);
    return status;
}

RematStatus dtr_chain_optimum(int n, int budget, int64_t *extra)
{
    RematStatus status = check(n, budget, extra);
    int64_t steps = 0;
    if (status == REMAT_OK) status = revolve_forward_count(n - 1, budget - 2, &steps, NULL);
    if (status == REMAT_OK) *extra = steps - (n - 2);
    return status;
}
