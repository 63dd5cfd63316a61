/*
 * search_dp.c — the exact optimum over single-level schedules: a dynamic program over the
 * chain's boundaries that keeps, at each, only the Pareto front of (forward state, value)
 * (see search.h; the terms it adds up are cost.h's formula).
 */
#include "checkpoint/search.h"

#include <stdlib.h>

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* The DP walks the chain's boundaries k = 0 .. L. A state at boundary k is a way to run
 * layers 0 .. k−1, summed up by its forward state S(k) and its value: the RECOMPUTE FLOPs
 * so far (for the cheapest schedule under a budget) or the highest moment so far (for the
 * leanest schedule). Every later moment is S(k) plus a term of the segments still to come,
 * so a state with a smaller S(k) and a smaller value is never worse: only the Pareto
 * front of (S, value) is kept at each boundary, which makes the search exact. */
typedef enum DpGoal { DP_FEWEST_FLOPS, DP_LEAST_PEAK } DpGoal;

typedef struct DpState {
    size_t s;       /* S(k) */
    uint64_t value; /* FLOPs so far, or the highest moment so far */
    int from;       /* the state it extends (an index into Dp.states), −1 for the start */
    int first;      /* the segment that led here: its first layer, and whether a region */
    bool region;
} DpState;

typedef struct Dp {
    const ChainCost *cost;
    size_t act_budget; /* the most ACT any moment may reach (DP_FEWEST_FLOPS) */
    DpGoal goal;
    DpState *states;
    int count, capacity;
    int *front_start, *front_count; /* per boundary: its Pareto front, a run of `states` */
    size_t *plain_need;             /* plain_need(k) */
    size_t *region_need;            /* region_need(a, b) at a·L + b */
} Dp;

static RematStatus dp_push(Dp *dp, DpState st)
{
    if (dp->count == dp->capacity) {
        const int capacity = dp->capacity ? 2 * dp->capacity : 256;
        DpState *states = realloc(dp->states, (size_t)capacity * sizeof *states);
        if (!states) return remat_fail(REMAT_ENOMEM, "planner: no memory for %d search states", capacity);
        dp->states = states;
        dp->capacity = capacity;
    }
    dp->states[dp->count++] = st;
    return REMAT_OK;
}

static int compare_states(const void *x, const void *y)
{
    const DpState *a = x, *b = y;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    return (a->value > b->value) - (a->value < b->value);
}

/* Sorts the states added since `start` and keeps their Pareto front; returns its size. */
static int dp_keep_front(Dp *dp, int start)
{
    DpState *st = dp->states + start;
    const int n = dp->count - start;
    qsort(st, (size_t)n, sizeof *st, compare_states);
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (kept == 0 || st[i].value < st[kept - 1].value) st[kept++] = st[i];
    dp->count = start + kept;
    return kept;
}

/* Adds the state reached by running segment [a, b] from state `from` (at boundary a), if
 * its moments fit. */
static RematStatus dp_extend(Dp *dp, int from, int a, int b, bool region)
{
    const DpState *f = &dp->states[from];
    const ChainCost *c = dp->cost;
    const size_t need = region ? dp->region_need[(size_t)a * c->n_layers + b] : dp->plain_need[a];
    const size_t moment = f->s + need;
    uint64_t value = f->value;
    if (dp->goal == DP_FEWEST_FLOPS) {
        if (moment > dp->act_budget) return REMAT_OK;
        if (region) value += chain_segment_flops(c, a, b);
    } else if (moment > value) {
        value = moment;
    }
    const size_t s = f->s + (region ? c->layers[b].out_bytes : c->layers[a].kept);
    return dp_push(dp, (DpState){s, value, from, a, region});
}

static void dp_free(Dp *dp)
{
    free(dp->states);
    free(dp->front_start);
    free(dp->front_count);
    free(dp->plain_need);
    free(dp->region_need);
}

static RematStatus dp_init(Dp *dp, const ChainCost *c, DpGoal goal, size_t act_budget)
{
    const int L = c->n_layers;
    *dp = (Dp){.cost = c, .goal = goal, .act_budget = act_budget};
    dp->front_start = calloc((size_t)L + 1, sizeof *dp->front_start);
    dp->front_count = calloc((size_t)L + 1, sizeof *dp->front_count);
    dp->plain_need = calloc((size_t)L, sizeof *dp->plain_need);
    dp->region_need = calloc((size_t)L * L, sizeof *dp->region_need);
    if (!dp->front_start || !dp->front_count || !dp->plain_need || !dp->region_need) {
        dp_free(dp);
        return remat_fail(REMAT_ENOMEM, "planner: no memory to search %d layers", L);
    }
    for (int a = 0; a < L; a++) {
        dp->plain_need[a] = chain_plain_need(c, a);
        for (int b = a; b < L; b++) dp->region_need[(size_t)a * L + b] = chain_region_need(c, a, b);
    }
    return REMAT_OK;
}

/* Runs the search; *best gets the index of the best final state, or −1 if none fits. */
static RematStatus dp_run(Dp *dp, int *best)
{
    const ChainCost *c = dp->cost;
    const int L = c->n_layers;
    *best = -1;
    /* The moments every schedule has: the embed stage's, and the one after the chain. */
    const size_t start_moment = max_size(c->base + c->embed_peak, c->tail_peak);
    if (dp->goal == DP_FEWEST_FLOPS && start_moment > dp->act_budget) return REMAT_OK;
    const uint64_t start_value = dp->goal == DP_FEWEST_FLOPS ? 0 : start_moment;
    RematStatus status = dp_push(dp, (DpState){c->base + c->embed, start_value, -1, 0, false});
    dp->front_count[0] = 1;
    /* States reaching boundary k come from every earlier boundary's front. */
    for (int k = 1; k <= L && status == REMAT_OK; k++) {
        const int start = dp->count;
        for (int a = 0; a < k && status == REMAT_OK; a++) {
            for (int i = 0; i < dp->front_count[a] && status == REMAT_OK; i++) {
                const int from = dp->front_start[a] + i;
                status = dp_extend(dp, from, a, k - 1, true);
                if (status == REMAT_OK && a == k - 1) status = dp_extend(dp, from, a, a, false);
            }
        }
        dp->front_start[k] = start;
        dp->front_count[k] = status == REMAT_OK ? dp_keep_front(dp, start) : 0;
    }
    if (status != REMAT_OK) return status;
    uint64_t best_value = UINT64_MAX;
    for (int i = 0; i < dp->front_count[L]; i++) {
        const DpState *st = &dp->states[dp->front_start[L] + i];
        const size_t end = st->s + c->head_peak;
        uint64_t value = st->value;
        if (dp->goal == DP_FEWEST_FLOPS && end > dp->act_budget) continue;
        if (dp->goal == DP_LEAST_PEAK && end > value) value = end;
        if (value < best_value) {
            best_value = value;
            *best = dp->front_start[L] + i;
        }
    }
    return REMAT_OK;
}

/* The schedule that led to final state `best`. */
static Schedule *dp_schedule(const Dp *dp, int best)
{
    const int L = dp->cost->n_layers;
    Segment *segs = calloc((size_t)L, sizeof *segs);
    if (!segs) {
        remat_fail(REMAT_ENOMEM, "planner: no memory for %d segments", L);
        return NULL;
    }
    int end = L, at = L; /* the states are walked from the end: segs is filled from the back */
    for (int i = best; dp->states[i].from >= 0; i = dp->states[i].from) {
        const DpState *st = &dp->states[i];
        segs[--at] = (Segment){st->first, end - st->first, st->region ? SEGMENT_REGION : SEGMENT_PLAIN, NULL, 0};
        end = st->first;
    }
    Schedule *s = chain_schedule(dp->cost, segs + at, L - at);
    free(segs);
    return s;
}

/* The exact search for `goal`; NULL with *none_fits set when no schedule fits. */
static Schedule *dp_search(const ChainCost *c, DpGoal goal, size_t act_budget, bool *none_fits)
{
    Dp dp;
    *none_fits = false;
    if (dp_init(&dp, c, goal, act_budget) != REMAT_OK) return NULL;
    int best;
    Schedule *s = NULL;
    if (dp_run(&dp, &best) == REMAT_OK) {
        if (best >= 0) s = dp_schedule(&dp, best);
        else *none_fits = true;
    }
    dp_free(&dp);
    return s;
}

Schedule *search_dp(const ChainCost *c, size_t act_budget, bool *none_fits)
{
    return dp_search(c, DP_FEWEST_FLOPS, act_budget, none_fits);
}

Schedule *search_dp_leanest(const ChainCost *c)
{
    bool none_fits;
    return dp_search(c, DP_LEAST_PEAK, 0, &none_fits);
}
