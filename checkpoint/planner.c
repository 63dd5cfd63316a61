/*
 * planner.c — the planners' searches (see planner.h), each judging schedules by cost.h's
 * predictions, and the message that says the smallest feasible budget when nothing fits.
 */
#include "checkpoint/planner.h"

#include <math.h>
#include <stdlib.h>

#include "checkpoint/ops_plan.h"

/* ---- the exact search: a dynamic program over single-level schedules ------------------- */

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
    Segment seg;    /* the segment that led here */
} DpState;

typedef struct Dp {
    const ChainCost *cost;
    size_t act_budget; /* the most ACT any moment may reach (DP_FEWEST_FLOPS) */
    DpGoal goal;
    bool ops;          /* the ops planner: one-layer regions may also run a keep-set */
    DpState *states;
    int count, capacity;
    int *front;        /* boundary k's Pareto front: states front[k] .. front[k + 1] − 1 */
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

/* Sorts the states added since `start` and keeps their Pareto front. */
static void dp_keep_front(Dp *dp, int start)
{
    DpState *st = dp->states + start;
    const int n = dp->count - start;
    qsort(st, (size_t)n, sizeof *st, compare_states);
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (kept == 0 || st[i].value < st[kept - 1].value) st[kept++] = st[i];
    dp->count = start + kept;
}

/* Adds the state reached from state `from` by the segment `next` of figures f (cost.h), if
 * its moments fit. */
static RematStatus dp_extend(Dp *dp, int from, Segment next, const SegmentFigures *f)
{
    const DpState *st = &dp->states[from];
    const size_t moment = st->s + f->need;
    if (dp->goal == DP_FEWEST_FLOPS && moment > dp->act_budget) return REMAT_OK;
    const uint64_t value = dp->goal == DP_FEWEST_FLOPS ? st->value + f->flops : max_size(st->value, moment);
    return dp_push(dp, (DpState){st->s + f->adds, value, from, next});
}

/* The segments from state `from` that end where `region` (of figures f) ends: the region;
 * for a one-layer region also its layer plain and, for the ops planner, under its keep-sets. */
static RematStatus dp_extend_all(Dp *dp, int from, const Segment *region, const SegmentFigures *f)
{
    const ChainCost *c = dp->cost;
    const int a = region->first;
    RematStatus status = dp_extend(dp, from, *region, f);
    if (status != REMAT_OK || region->count != 1) return status;
    const Segment plain = {a, 1, SEGMENT_PLAIN, NULL, 0};
    SegmentFigures plain_f;
    chain_segment(c, &plain, &plain_f);
    status = dp_extend(dp, from, plain, &plain_f);
    int n = 0;
    const OpsPoint *points = dp->ops ? ops_points(c->ops, a, &n) : NULL;
    for (int p = 0; p < n && status == REMAT_OK; p++)
        status = dp_extend(dp, from, (Segment){a, 1, SEGMENT_REGION, &points[p].policy, 0},
                           ops_figures(c->ops, a, &points[p].policy));
    return status;
}

/* Runs the search; *best gets the index of the best final state, or −1 if none fits. The
 * head is the last step: from boundary L, a segment that needs head_peak and adds nothing. */
static RematStatus dp_run(Dp *dp, int *best)
{
    const ChainCost *c = dp->cost;
    const int L = c->n_layers;
    *best = -1;
    /* The moments every schedule has: the embed stage's, and the one after the chain. */
    const size_t start_moment = max_size(c->base + c->embed_peak, c->tail_peak);
    if (dp->goal == DP_FEWEST_FLOPS && start_moment > dp->act_budget) return REMAT_OK;
    const uint64_t start_value = dp->goal == DP_FEWEST_FLOPS ? 0 : start_moment;
    RematStatus status = dp_push(dp, (DpState){c->base + c->embed, start_value, -1, {0}});
    dp->front[1] = 1;
    /* States reaching boundary k come from every earlier boundary's front. */
    for (int k = 1; k <= L && status == REMAT_OK; k++) {
        for (int a = 0; a < k && status == REMAT_OK; a++) {
            const Segment region = {a, k - a, SEGMENT_REGION, NULL, 0};
            SegmentFigures f;
            chain_segment(c, &region, &f);
            for (int i = dp->front[a]; i < dp->front[a + 1] && status == REMAT_OK; i++)
                status = dp_extend_all(dp, i, &region, &f);
        }
        dp_keep_front(dp, dp->front[k]);
        dp->front[k + 1] = dp->count;
    }
    const int ends = dp->count;
    const SegmentFigures head = {.need = c->head_peak};
    for (int i = dp->front[L]; i < dp->front[L + 1] && status == REMAT_OK; i++)
        status = dp_extend(dp, i, (Segment){0}, &head);
    for (int i = ends; i < dp->count && status == REMAT_OK; i++)
        if (*best < 0 || dp->states[i].value < dp->states[*best].value) *best = i;
    return status;
}

/* The exact search for `goal` (under `act_budget` for DP_FEWEST_FLOPS): the single-level
 * schedule it finds; NULL with *none_fits set when no schedule fits, or NULL on error. */
static Schedule *dp_search(const ChainCost *c, DpGoal goal, size_t act_budget, bool ops, bool *none_fits)
{
    const int L = c->n_layers;
    Dp dp = {.cost = c, .goal = goal, .act_budget = act_budget, .ops = ops,
             .front = calloc((size_t)L + 2, sizeof(int))};
    Segment *segs = calloc((size_t)L, sizeof *segs);
    int best = -1;
    const RematStatus status = dp.front && segs ? dp_run(&dp, &best)
                             : remat_fail(REMAT_ENOMEM, "planner: no memory to search %d layers", L);
    Schedule *s = NULL;
    if (status == REMAT_OK && best >= 0) {
        int at = L; /* the states that led to the head's, walked from the end: segs fills from the back */
        for (int i = dp.states[best].from; dp.states[i].from >= 0; i = dp.states[i].from)
            segs[--at] = dp.states[i].seg;
        s = chain_schedule(c, segs + at, L - at);
    }
    *none_fits = status == REMAT_OK && best < 0;
    free(segs);
    free(dp.states);
    free(dp.front);
    return s;
}

/* The exact search (see SEARCHES). It refuses chains longer than PLANNER_DP_MAX_LAYERS:
 * its work grows as L^3. With `ops`, each layer may also be a one-layer region under any
 * point of its Pareto set of keep-sets (ops_plan.h). */
static Schedule *search_exact(const ChainCost *c, size_t act_budget, size_t *leanest, bool ops)
{
    if (c->n_layers > PLANNER_DP_MAX_LAYERS)
        return remat_fail_null(REMAT_EINVAL, "the exact search plans chains of up to %d layers (its work grows as "
                               "L^3), this one has %d: use the chen planner", PLANNER_DP_MAX_LAYERS, c->n_layers);
    if (ops && !c->ops)
        return remat_fail_null(REMAT_EINVAL, "planner ops: the chain cost has no op-level model (chain_profile_ops)");
    bool none_fits;
    Schedule *s = dp_search(c, DP_FEWEST_FLOPS, act_budget, ops, &none_fits);
    if (!none_fits) return s;
    Schedule *lean = dp_search(c, DP_LEAST_PEAK, 0, ops, &none_fits);
    if (lean) *leanest = lean->predicted.peak_act;
    schedule_free(lean);
    return NULL;
}

static Schedule *search_dp(const ChainCost *c, size_t budget, size_t *l) { return search_exact(c, budget, l, false); }
static Schedule *search_ops(const ChainCost *c, size_t budget, size_t *l) { return search_exact(c, budget, l, true); }

/* A search's step: keeps in *best whichever of *best and `candidate` (owned by the call)
 * has the fewest RECOMPUTE FLOPs among those whose predicted peak ACT fits `act_budget`
 * (ties: the leaner), frees the other, and lowers *leanest to the candidate's peak ACT. */
static void schedule_keep_best(Schedule **best, Schedule *candidate, size_t act_budget, size_t *leanest)
{
    if (candidate->predicted.peak_act < *leanest) *leanest = candidate->predicted.peak_act;
    const Schedule *b = *best;
    const Prediction *c = &candidate->predicted;
    const bool better = !b || c->recompute_flops < b->predicted.recompute_flops ||
                        (c->recompute_flops == b->predicted.recompute_flops && c->peak_act < b->predicted.peak_act);
    if (c->peak_act <= act_budget && better) {
        schedule_free(*best);
        *best = candidate;
    } else {
        schedule_free(candidate);
    }
}

/* A search that fails on an error keeps nothing it found and lowers no *leanest, so that
 * planner_plan reports the error, not a budget too small (SEARCHES' contract). */
static Schedule *search_failed(Schedule *best, size_t *leanest)
{
    schedule_free(best);
    *leanest = SIZE_MAX;
    return NULL;
}

/* ---- Chen et al. 2016's search -------------------------------------------------------- */

/* Their Algorithm 3 on the chain with threshold b (the appendix's search tries a few b):
 * walk the layers adding up what each keeps (kept_k); when the running sum passes b, the
 * layer's output becomes a stored segment boundary and the sum starts again. x is the
 * bytes of the stored boundaries, y the largest segment. Every segment but the last is a region; the last runs plainly,
 * since its backward comes first and would recompute what it just computed. With no
 * boundary at all the chain is one plain segment: nothing is recomputed. */
static int chen_segments(const ChainCost *c, double b, Segment *segs, double *x, double *y)
{
    int n = 0, first = 0;
    double running = 0.0;
    *x = *y = 0.0;
    for (int k = 0; k < c->n_layers; k++) {
        running += (double)c->layers[k].kept;
        if (k < c->n_layers - 1 && running > b) {
            *x += (double)c->layers[k].out_bytes;
            *y = fmax(*y, running);
            segs[n++] = (Segment){first, k + 1 - first, SEGMENT_REGION, NULL, 0};
            first = k + 1;
            running = 0.0;
        }
    }
    segs[n++] = (Segment){first, c->n_layers - first, SEGMENT_PLAIN, NULL, 0};
    return n;
}

enum { CHEN_GUESSES = 3, CHEN_GRID = 6 };

/* The thresholds the appendix's search tries: b = 0 (every layer its own segment), then
 * b = sqrt(x·y) from the x and y of the previous run, CHEN_GUESSES times, then CHEN_GRID
 * equal steps from the smallest y seen to sqrt(2) times the last guess; and b = ∞, where
 * no boundary is stored. Returns how many, at most CHEN_GUESSES + CHEN_GRID + 2. */
static int chen_thresholds(const ChainCost *c, Segment *scratch, double *b)
{
    int n = 0;
    double x, y, guess = 0.0, min_y = INFINITY;
    for (int i = 0; i <= CHEN_GUESSES; i++) {
        b[n++] = guess;
        chen_segments(c, guess, scratch, &x, &y);
        if (y > 0.0) min_y = fmin(min_y, y);
        guess = sqrt(x * y);
    }
    const double top = sqrt(2.0) * b[n - 1];
    if (isfinite(min_y) && top > min_y) {
        const double step = (top - min_y) / CHEN_GRID;
        for (int i = 1; i <= CHEN_GRID; i++) b[n++] = min_y + step * i;
    }
    b[n++] = INFINITY;
    return n;
}

/* Chen's search (see SEARCHES), over the schedules the thresholds b make. */
static Schedule *search_chen(const ChainCost *c, size_t act_budget, size_t *leanest)
{
    const int L = c->n_layers;
    Segment *segs = calloc((size_t)L, sizeof *segs);
    double b[CHEN_GUESSES + CHEN_GRID + 2];
    if (!segs) return remat_fail_null(REMAT_ENOMEM, "planner: no memory for %d segments", L);
    const int n_b = chen_thresholds(c, segs, b);
    Schedule *best = NULL;
    for (int i = 0; i < n_b; i++) {
        double x, y;
        const int n = chen_segments(c, b[i], segs, &x, &y);
        Schedule *s = chain_schedule(c, segs, n);
        if (!s) {
            best = search_failed(best, leanest);
            break;
        }
        schedule_keep_best(&best, s, act_budget, leanest);
    }
    free(segs);
    return best;
}

/* ---- Revolve over the whole chain --------------------------------------------------------- */

/* Revolve's search (see SEARCHES), over storing everything and Revolve with 1 … L−1 slots
 * over the whole chain: the fewest FLOPs that fit are the most slots the budget holds.
 * REMAT_EINVAL for a chain that is not uniform. */
static Schedule *search_revolve(const ChainCost *cost, size_t act_budget, size_t *leanest)
{
    if (chain_check_uniform(cost) != REMAT_OK) return NULL;
    const int most = cost->n_layers > 1 ? cost->n_layers - 1 : 1; /* more slots than L − 1 change nothing */
    Schedule *best = NULL;
    for (int slots = 0; slots <= most; slots++) { /* 0: store everything */
        const Segment whole = {0, cost->n_layers, slots ? SEGMENT_REVOLVE : SEGMENT_PLAIN, NULL, slots};
        Schedule *s = chain_schedule(cost, &whole, 1);
        if (!s) return search_failed(best, leanest);
        schedule_keep_best(&best, s, act_budget, leanest);
        if (best && slots == 0) break; /* storing everything fits: nothing recomputes less */
    }
    return best;
}

/* ---- planners ---------------------------------------------------------------------------- */

static const char *const NAMES[PLANNER_COUNT] = {"chen", "dp", "revolve", "ops"};
const NameTable PLANNER_NAMES = {NAMES, PLANNER_COUNT};

/* Each planner's search, by PlannerKind: the cheapest schedule it finds whose predicted peak
 * ACT fits `act_budget`; when none does, NULL (no error set) with *leanest (SIZE_MAX, set by
 * the caller) lowered to the least peak ACT it can reach; on error NULL, *leanest SIZE_MAX. */
static Schedule *(*const SEARCHES[PLANNER_COUNT])(const ChainCost *, size_t, size_t *) = {
    search_chen, search_dp, search_revolve, search_ops};

size_t planner_min_budget(PlannerKind kind, const ChainCost *cost)
{
    size_t leanest = SIZE_MAX;
    if (cost && (unsigned)kind < PLANNER_COUNT)
        schedule_free(SEARCHES[kind == PLANNER_CHEN ? PLANNER_DP : kind](cost, 0, &leanest));
    return leanest == SIZE_MAX ? 0 : cost->fixed + cost->work_peak + leanest;
}

/* NULL with REMAT_EOOM for a budget below `min_budget`, the leanest schedule's need for
 * planner `kind` (0: unknown), saying what that need is; for dp and chen, also where planner
 * revolve starts when it starts lower (a uniform chain). */
static Schedule *fail_too_small(const ChainCost *c, PlannerKind kind, size_t budget, size_t min_budget)
{
    char b[32], m[32], fixed[32], work[32], act[32], lower[160] = "";
    if (min_budget == 0) /* a chain too long for the exact search */
        return remat_fail_null(REMAT_EOOM, "memory budget %s: no schedule found fits it (params, grads, optimizer "
                               "and workspace alone take %s)", mem_format_bytes(b, sizeof b, budget),
                               mem_format_bytes(fixed, sizeof fixed, c->fixed + c->work_peak));
    const size_t revolve_min = kind == PLANNER_REVOLVE ? 0 : planner_min_budget(PLANNER_REVOLVE, c);
    if (revolve_min > 0 && revolve_min < min_budget)
        snprintf(lower, sizeof lower, "; planner revolve, which recomputes layers more than once, fits from %s",
                 mem_format_bytes(m, sizeof m, revolve_min));
    return remat_fail_null(REMAT_EOOM, "memory budget %s is below what any %s schedule needs: the smallest "
                           "feasible budget is %s = %zu bytes (params, grads, optimizer and workspace %s + "
                           "kernel scratch %s + the leanest schedule's peak activations %s)%s",
                           mem_format_bytes(b, sizeof b, budget), kind == PLANNER_REVOLVE ? "Revolve" : "single-level",
                           mem_format_bytes(m, sizeof m, min_budget), min_budget,
                           mem_format_bytes(fixed, sizeof fixed, c->fixed),
                           mem_format_bytes(work, sizeof work, c->work_peak),
                           mem_format_bytes(act, sizeof act, min_budget - c->fixed - c->work_peak), lower);
}

Schedule *planner_plan(PlannerKind kind, const ChainCost *cost, size_t budget)
{
    if (!cost || (unsigned)kind >= PLANNER_COUNT)
        return remat_fail_null(REMAT_EINVAL, "planner_plan: need a chain cost and a planner (chen, dp, revolve or "
                               "ops)");
    if (kind == PLANNER_REVOLVE && chain_check_uniform(cost) != REMAT_OK) return NULL;
    const size_t reserved = cost->fixed + cost->work_peak;
    if (budget <= reserved) return fail_too_small(cost, kind, budget, planner_min_budget(kind, cost));
    size_t leanest = SIZE_MAX;
    Schedule *s = SEARCHES[kind](cost, budget - reserved, &leanest);
    if (s || leanest == SIZE_MAX) return s;
    /* Nothing fits. Chen's search may miss a schedule the exact search finds: it says so. */
    const size_t min_budget = kind == PLANNER_CHEN ? planner_min_budget(kind, cost) : reserved + leanest;
    if (kind != PLANNER_CHEN || min_budget > budget || min_budget == 0)
        return fail_too_small(cost, kind, budget, min_budget);
    char b[32], need[32], m[32];
    return remat_fail_null(REMAT_EOOM, "memory budget %s: none of the schedules Chen's search of b tries fits (its "
                           "leanest needs %s); the exact search (--planner dp) fits budgets from %s",
                           mem_format_bytes(b, sizeof b, budget),
                           mem_format_bytes(need, sizeof need, leanest + reserved),
                           mem_format_bytes(m, sizeof m, min_budget));
}
