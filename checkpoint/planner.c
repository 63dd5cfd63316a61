/*
 * planner.c — the prediction of a schedule's peak ACT and RECOMPUTE FLOPs from the chain
 * cost model (measured by chain_profile.c); the exact dynamic program and Chen et al.'s
 * budget search; the dispatch to the three planners; memory sizes with units (see
 * planner.h for the model and its formula). Revolve's prediction and its choice of slots
 * are in planner_revolve.c.
 *
 * Owns: Schedule records and the searches' scratch. Touches: nothing but its arguments;
 * plan_from_schedule makes a Plan (strategy.h).
 */
#include "checkpoint/planner.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* ---- prediction ------------------------------------------------------------------------ */

size_t chain_grad_bytes(const ChainCost *c, int k)
{
    return k < c->n_layers ? c->layers[k].grad_bytes : c->layers[c->n_layers - 1].out_bytes;
}

/* The most ACT above S(k) while plain layer k runs forward and, later, backward. */
static size_t plain_need(const ChainCost *c, int k)
{
    const ChainLayer *l = &c->layers[k];
    return max_size(l->fwd_peak, l->kept - l->out_bytes + chain_grad_bytes(c, k + 1) + c->resid + l->back_plain);
}

/* The most ACT above S(a) while region [a, b] runs its first forward, its replay and its
 * backward (planner.h's formula, term by term). */
static size_t region_need(const ChainCost *c, int a, int b)
{
    const ChainLayer *l = c->layers;
    size_t need = l[a].nograd_peak;
    for (int k = a + 1; k <= b; k++) need = max_size(need, l[k].in_bytes + l[k].nograd_peak);
    const size_t in = chain_grad_bytes(c, b + 1) + c->resid, ga = chain_grad_bytes(c, a);
    size_t kept = 0; /* Σ kept_i for i < k */
    for (int k = a; k <= b; k++) {
        need = max_size(need, in + ga + kept + l[k].fwd_peak);
        kept += l[k].kept;
        /* The region's last layer backpropagates with the gradient flowing in alive to the
         * end (back_held); the others as plain layers do, but with g_a already there. */
        const size_t held = in + (k > a || k < b ? ga : 0) + kept - l[k].out_bytes + (k < b ? chain_grad_bytes(c, k + 1) : 0);
        need = max_size(need, held + (k == b ? l[k].back_held : l[k].back_plain));
    }
    return need;
}

static uint64_t segment_flops(const ChainCost *c, int a, int b)
{
    uint64_t f = 0;
    for (int k = a; k <= b; k++) f += c->layers[k].flops;
    return f;
}

size_t chain_predict(const ChainCost *c, const ScheduleSegment *segments, int n, uint64_t *recompute)
{
    size_t s = c->base + c->embed, peak = max_size(c->base + c->embed_peak, c->tail_peak);
    uint64_t flops = 0;
    for (int i = 0; i < n; i++) {
        const int a = segments[i].first, b = a + segments[i].count - 1;
        if (segments[i].region) {
            peak = max_size(peak, s + region_need(c, a, b));
            flops += segment_flops(c, a, b);
            s += c->layers[b].out_bytes;
            continue;
        }
        for (int k = a; k <= b; k++) {
            peak = max_size(peak, s + plain_need(c, k));
            s += c->layers[k].kept;
        }
    }
    peak = max_size(peak, s + c->head_peak);
    if (recompute) *recompute = flops;
    return peak;
}

/* ---- schedules ------------------------------------------------------------------------- */

Schedule *schedule_create(const ChainCost *cost, const ScheduleSegment *segments, int n)
{
    if (!cost || !segments || n < 1) {
        remat_fail(REMAT_EINVAL, "schedule_create: need a chain cost and at least one segment");
        return NULL;
    }
    for (int i = 0, next = 0; i < n; next += segments[i].count, i++) {
        if (segments[i].first != next || segments[i].count < 1 || next + segments[i].count > cost->n_layers) {
            remat_fail(REMAT_EINVAL, "schedule_create: segment %d (layers %d..%d) does not continue the "
                       "chain at layer %d of %d", i, segments[i].first, segments[i].first + segments[i].count - 1,
                       next, cost->n_layers);
            return NULL;
        }
        if (i == n - 1 && next + segments[i].count != cost->n_layers) {
            remat_fail(REMAT_EINVAL, "schedule_create: the segments end at layer %d of %d",
                       next + segments[i].count, cost->n_layers);
            return NULL;
        }
    }
    Schedule *s = calloc(1, sizeof *s);
    ScheduleSegment *copy = calloc((size_t)n, sizeof *copy);
    if (!s || !copy) {
        free(s), free(copy);
        remat_fail(REMAT_ENOMEM, "schedule_create: no memory for %d segments", n);
        return NULL;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && !copy[m - 1].region && !segments[i].region) copy[m - 1].count += segments[i].count;
        else copy[m++] = segments[i];
    }
    s->n_layers = cost->n_layers;
    s->n_segments = m;
    s->segments = copy;
    s->peak_act = chain_predict(cost, copy, m, &s->recompute_flops);
    s->peak_total = cost->fixed + cost->work_peak + s->peak_act;
    return s;
}

Schedule *schedule_for_strategy(const ChainCost *cost, StrategyKind kind)
{
    if (!cost || (kind != STRATEGY_NONE && kind != STRATEGY_FULL && kind != STRATEGY_SQRT)) {
        remat_fail(REMAT_EINVAL, "schedule_for_strategy: only none, full and sqrt have fixed segments");
        return NULL;
    }
    const int n = cost->n_layers;
    int *sizes = calloc((size_t)n, sizeof *sizes);
    ScheduleSegment *segs = calloc((size_t)n, sizeof *segs);
    Schedule *s = NULL;
    if (sizes && segs) {
        const int m = strategy_segment_sizes(kind, n, sizes);
        for (int i = 0, first = 0; i < m; first += sizes[i], i++)
            segs[i] = (ScheduleSegment){first, sizes[i], kind != STRATEGY_NONE};
        s = schedule_create(cost, segs, m);
    } else {
        remat_fail(REMAT_ENOMEM, "schedule_for_strategy: no memory for %d segments", n);
    }
    free(sizes);
    free(segs);
    return s;
}

void schedule_keep_best(Schedule **best, Schedule *candidate, size_t act_budget, size_t *leanest)
{
    if (candidate->peak_act < *leanest) *leanest = candidate->peak_act;
    const Schedule *b = *best;
    const bool better = !b || candidate->recompute_flops < b->recompute_flops ||
                        (candidate->recompute_flops == b->recompute_flops && candidate->peak_act < b->peak_act);
    if (candidate->peak_act <= act_budget && better) {
        schedule_free(*best);
        *best = candidate;
    } else {
        schedule_free(candidate);
    }
}

void schedule_free(Schedule *s)
{
    if (!s) return;
    revolve_schedule_free(s->revolve);
    free(s->segments);
    free(s);
}

Plan *plan_from_schedule(const Strategy *strategy, Layer **layers, const Schedule *s)
{
    if (!strategy || !layers || !s) {
        remat_fail(REMAT_EINVAL, "plan_from_schedule: need a strategy, the layers and a schedule");
        return NULL;
    }
    int *counts = calloc((size_t)s->n_segments, sizeof *counts);
    bool *region = calloc((size_t)s->n_segments, sizeof *region);
    Plan *plan = NULL;
    if (counts && region) {
        for (int i = 0; i < s->n_segments; i++) {
            counts[i] = s->segments[i].count;
            region[i] = s->segments[i].region;
        }
        Strategy st = *strategy;
        st.kind = STRATEGY_BUDGET;
        st.policy = NULL;
        plan = plan_create_segments(&st, layers, s->n_layers, counts, region, s->n_segments);
        if (plan) plan->revolve_slots = s->revolve_slots;
    } else {
        remat_fail(REMAT_ENOMEM, "plan_from_schedule: no memory for %d segments", s->n_segments);
    }
    free(counts);
    free(region);
    return plan;
}

/* The predicted peak and recompute figures every schedule's print ends with. */
static void print_prediction(const Schedule *s, const ChainCost *cost, FILE *out)
{
    char peak[32], total[32];
    fprintf(out, "predicted peak activations %s, peak memory %s,\n"
                 "    recompute %.3f GFLOP per step (%.1f%% of the forward)\n",
            mem_format_bytes(peak, sizeof peak, s->peak_act), mem_format_bytes(total, sizeof total, s->peak_total),
            (double)s->recompute_flops * 1e-9,
            cost->forward_flops ? 100.0 * (double)s->recompute_flops / (double)cost->forward_flops : 0.0);
}

/* A Revolve schedule: its slots and repetition number, and how often each layer is
 * recomputed (runs of equal counts together, so a long chain stays a few lines). */
static void print_revolve(const Schedule *s, const ChainCost *cost, Layer **layers, FILE *out)
{
    const RevolveSchedule *r = s->revolve;
    fprintf(out, "  schedule: Revolve over all %d layers with %d slot%s (%d used): it keeps at most %d layer input%s "
            "besides the one being worked on;\n    no layer recomputed more than %d times, %lld layer forwards "
            "recomputed in all (t(L, s) + 1)\n", r->steps, r->slots, r->slots == 1 ? "" : "s", r->slots_used, r->slots,
            r->slots == 1 ? "" : "s", r->repetitions, (long long)r->forward_count + 1);
    fprintf(out, "    recomputed per layer:");
    for (int j = 0; j < r->steps;) {
        int end = j;
        while (end + 1 < r->steps && r->recomputed[end + 1] == r->recomputed[j]) end++;
        if (layers && end == j) fprintf(out, " %s %d×;", layers[j]->name, r->recomputed[j]);
        else if (layers) fprintf(out, " %s-%s %d× each;", layers[j]->name, layers[end]->name, r->recomputed[j]);
        else fprintf(out, " %d-%d %d×;", j, end, r->recomputed[j]);
        j = end + 1;
    }
    fprintf(out, "\n    ");
    print_prediction(s, cost, out);
}

void schedule_print(const Schedule *s, const ChainCost *cost, Layer **layers, FILE *out)
{
    if (s->revolve) {
        print_revolve(s, cost, layers, out);
        return;
    }
    int kept = 0, regions = 0;
    for (int i = 0; i < s->n_segments; i++) regions += s->segments[i].region;
    fprintf(out, "  schedule: %d segment%s, %d of them regions%s\n", s->n_segments, s->n_segments == 1 ? "" : "s", regions,
            regions ? "" : ": the budget holds every activation, so nothing is recomputed");
    for (int i = 0; i < s->n_segments; i++) {
        const ScheduleSegment *g = &s->segments[i];
        char name[64];
        if (layers && g->count == 1) snprintf(name, sizeof name, "%s", layers[g->first]->name);
        else if (layers) snprintf(name, sizeof name, "%.24s-%.24s", layers[g->first]->name, layers[g->first + g->count - 1]->name);
        else snprintf(name, sizeof name, "layers %d-%d", g->first, g->first + g->count - 1);
        if (g->region) kept++;
        fprintf(out, "    %-16s %s: %s\n", name,
                g->region ? "region" : "plain ",
                g->region ? "its input kept; each layer's forward runs twice (recomputed once)"
                          : "every activation kept; each layer's forward runs once");
    }
    fprintf(out, "    inputs kept by regions: %d; ", kept);
    print_prediction(s, cost, out);
}

/* ---- the exact dynamic program --------------------------------------------------------- */

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
        if (region) value += segment_flops(c, a, b);
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
        dp->plain_need[a] = plain_need(c, a);
        for (int b = a; b < L; b++) dp->region_need[(size_t)a * L + b] = region_need(c, a, b);
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
    ScheduleSegment *segs = calloc((size_t)L, sizeof *segs);
    if (!segs) {
        remat_fail(REMAT_ENOMEM, "planner: no memory for %d segments", L);
        return NULL;
    }
    int n = 0, end = L;
    for (int i = best; dp->states[i].from >= 0; i = dp->states[i].from) {
        const DpState *st = &dp->states[i];
        segs[n++] = (ScheduleSegment){st->first, end - st->first, st->region};
        end = st->first;
    }
    for (int i = 0; i < n / 2; i++) {
        ScheduleSegment t = segs[i];
        segs[i] = segs[n - 1 - i];
        segs[n - 1 - i] = t;
    }
    Schedule *s = schedule_create(dp->cost, segs, n);
    free(segs);
    return s;
}

/* The exact search for `goal`; NULL with *none_fits set when no schedule fits. */
static Schedule *dp_search(const ChainCost *c, DpGoal goal, size_t act_budget, bool *none_fits)
{
    Dp dp;
    *none_fits = false;
    if (c->n_layers > PLANNER_DP_MAX_LAYERS) {
        remat_fail(REMAT_EINVAL, "the exact search plans chains of up to %d layers (its work grows as L^3), this "
                   "one has %d: use the chen planner", PLANNER_DP_MAX_LAYERS, c->n_layers);
        return NULL;
    }
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

size_t planner_min_budget(const ChainCost *cost)
{
    bool none_fits;
    Schedule *lean = cost ? dp_search(cost, DP_LEAST_PEAK, 0, &none_fits) : NULL;
    const size_t budget = lean ? lean->peak_total : 0;
    schedule_free(lean);
    return budget;
}

/* ---- Chen et al. 2016's budget search -------------------------------------------------- */

/* Their Algorithm 3 on the chain with threshold b: walk the layers adding up what each
 * keeps (kept_k); when the running sum passes b, the layer's output becomes a stored
 * segment boundary and the sum starts again. x is the bytes of the stored boundaries, y
 * the largest segment. Every segment but the last is a region; the last runs plainly,
 * since its backward comes first and would recompute what it just computed. With no
 * boundary at all the chain is one plain segment: nothing is recomputed. */
static int chen_segments(const ChainCost *c, double b, ScheduleSegment *segs, double *x, double *y)
{
    int n = 0, first = 0;
    double running = 0.0;
    *x = *y = 0.0;
    for (int k = 0; k < c->n_layers; k++) {
        running += (double)c->layers[k].kept;
        if (k < c->n_layers - 1 && running > b) {
            *x += (double)c->layers[k].out_bytes;
            *y = fmax(*y, running);
            segs[n++] = (ScheduleSegment){first, k + 1 - first, true};
            first = k + 1;
            running = 0.0;
        }
    }
    segs[n++] = (ScheduleSegment){first, c->n_layers - first, false};
    return n;
}

enum { CHEN_GUESSES = 3, CHEN_GRID = 6 };

/* The thresholds the appendix's search tries: b = 0 (every layer its own segment), then
 * b = sqrt(x·y) from the x and y of the previous run, CHEN_GUESSES times, then CHEN_GRID
 * equal steps from the smallest y seen to sqrt(2) times the last guess; and b = ∞, where
 * no boundary is stored. Returns how many, at most CHEN_GUESSES + CHEN_GRID + 2. */
static int chen_thresholds(const ChainCost *c, ScheduleSegment *scratch, double *b)
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

/* The cheapest of the search's schedules that fits `act_budget`; NULL with *leanest set
 * to the least peak among them when none does. */
static Schedule *chen_search(const ChainCost *c, size_t act_budget, size_t *leanest)
{
    const int L = c->n_layers;
    ScheduleSegment *segs = calloc((size_t)L, sizeof *segs);
    double b[CHEN_GUESSES + CHEN_GRID + 2];
    if (!segs) {
        remat_fail(REMAT_ENOMEM, "planner: no memory for %d segments", L);
        return NULL;
    }
    const int n_b = chen_thresholds(c, segs, b);
    Schedule *best = NULL;
    *leanest = SIZE_MAX;
    for (int i = 0; i < n_b; i++) {
        double x, y;
        const int n = chen_segments(c, b[i], segs, &x, &y);
        Schedule *s = schedule_create(c, segs, n);
        if (!s) break;
        schedule_keep_best(&best, s, act_budget, leanest);
    }
    free(segs);
    return best;
}

/* ---- planners ---------------------------------------------------------------------------- */

static const char *const PLANNER_NAMES[PLANNER_COUNT] = {"chen", "dp", "revolve"};

const char *planner_name(PlannerKind kind)
{
    return (unsigned)kind < PLANNER_COUNT ? PLANNER_NAMES[kind] : "unknown";
}

RematStatus planner_parse(const char *name, PlannerKind *kind)
{
    for (int k = 0; name && k < PLANNER_COUNT; k++) {
        if (!strcmp(name, PLANNER_NAMES[k])) {
            *kind = (PlannerKind)k;
            return REMAT_OK;
        }
    }
    return remat_fail(REMAT_EINVAL, "unknown planner '%s' (expected chen, dp or revolve)", name ? name : "(null)");
}

/* REMAT_EOOM for a budget below `min_budget`, the leanest schedule's need for planner
 * `kind` (0: unknown), saying what that need is; for dp and chen, also where planner
 * revolve starts when it starts lower (a uniform chain). */
static RematStatus fail_too_small(const ChainCost *c, PlannerKind kind, size_t budget, size_t min_budget)
{
    char b[32], m[32], fixed[32], work[32], act[32], lower[160] = "";
    if (min_budget == 0) /* a chain too long for the exact search */
        return remat_fail(REMAT_EOOM, "memory budget %s: no schedule found fits it (params, grads, optimizer and "
                          "workspace alone take %s)", mem_format_bytes(b, sizeof b, budget),
                          mem_format_bytes(fixed, sizeof fixed, c->fixed + c->work_peak));
    const size_t revolve_min = kind == PLANNER_REVOLVE ? 0 : planner_revolve_min_budget(c);
    if (revolve_min > 0 && revolve_min < min_budget)
        snprintf(lower, sizeof lower, "; planner revolve, which recomputes layers more than once, fits from %s",
                 mem_format_bytes(m, sizeof m, revolve_min));
    return remat_fail(REMAT_EOOM, "memory budget %s is below what any %s schedule needs: the smallest "
                      "feasible budget is %s = %zu bytes (params, grads, optimizer and workspace %s + kernel scratch %s + "
                      "the leanest schedule's peak activations %s)%s",
                      mem_format_bytes(b, sizeof b, budget), kind == PLANNER_REVOLVE ? "Revolve" : "single-level",
                      mem_format_bytes(m, sizeof m, min_budget), min_budget,
                      mem_format_bytes(fixed, sizeof fixed, c->fixed), mem_format_bytes(work, sizeof work, c->work_peak),
                      mem_format_bytes(act, sizeof act, min_budget - c->fixed - c->work_peak), lower);
}

Schedule *planner_plan(PlannerKind kind, const ChainCost *cost, size_t budget)
{
    if (!cost || (unsigned)kind >= PLANNER_COUNT) {
        remat_fail(REMAT_EINVAL, "planner_plan: need a chain cost and a planner (chen, dp or revolve)");
        return NULL;
    }
    if (kind == PLANNER_REVOLVE && chain_check_uniform(cost) != REMAT_OK) return NULL;
    const size_t reserved = cost->fixed + cost->work_peak;
    if (budget <= reserved) {
        fail_too_small(cost, kind, budget, kind == PLANNER_REVOLVE ? planner_revolve_min_budget(cost) : planner_min_budget(cost));
        return NULL;
    }
    const size_t act_budget = budget - reserved;
    if (kind == PLANNER_REVOLVE) {
        size_t leanest;
        Schedule *s = planner_revolve_search(cost, act_budget, &leanest);
        if (!s && leanest != SIZE_MAX) fail_too_small(cost, kind, budget, reserved + leanest);
        return s;
    }
    if (kind == PLANNER_DP) {
        bool none_fits;
        Schedule *s = dp_search(cost, DP_FEWEST_FLOPS, act_budget, &none_fits);
        if (!s && none_fits) fail_too_small(cost, kind, budget, planner_min_budget(cost));
        return s;
    }
    size_t leanest = SIZE_MAX;
    Schedule *s = chen_search(cost, act_budget, &leanest);
    if (s || leanest == SIZE_MAX) return s;
    const size_t min_budget = planner_min_budget(cost);
    if (min_budget > budget || min_budget == 0) {
        fail_too_small(cost, kind, budget, min_budget);
        return NULL;
    }
    char b[32], need[32], m[32];
    remat_fail(REMAT_EOOM, "memory budget %s: none of the schedules Chen's search of b tries fits (its leanest "
               "needs %s); the exact search (--planner dp) fits budgets from %s",
               mem_format_bytes(b, sizeof b, budget), mem_format_bytes(need, sizeof need, leanest + reserved),
               mem_format_bytes(m, sizeof m, min_budget));
    return NULL;
}

/* ---- sizes --------------------------------------------------------------------------------- */

RematStatus parse_memory_size(const char *text, size_t *bytes)
{
    static const struct { const char *unit; double scale; } UNITS[] = {
        {"", 1.0}, {"B", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
    if (!text || !bytes) return remat_fail(REMAT_EINVAL, "memory size: no text");
    char *end = NULL;
    errno = 0;
    const double v = strtod(text, &end);
    if (end == text || errno || !isfinite(v) || v <= 0.0 || isspace((unsigned char)text[0]))
        return remat_fail(REMAT_EINVAL, "memory size '%s': expected a positive number and a unit (B, KiB, MiB "
                          "or GiB), e.g. 300MiB", text);
    while (*end == ' ') end++;
    for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++) {
        if (strcmp(end, UNITS[i].unit)) continue;
        const double b = v * UNITS[i].scale;
        if (b >= (double)SIZE_MAX || b < 1.0)
            return remat_fail(REMAT_EINVAL, "memory size '%s' is out of range", text);
        *bytes = (size_t)b;
        return REMAT_OK;
    }
    return remat_fail(REMAT_EINVAL, "memory size '%s': unknown unit '%s' (expected B, KiB, MiB or GiB)", text, end);
}
