/*
 * planner.c — the planners: the budget checked against what every schedule needs, Chen
 * et al. 2016's search and Revolve's, and the message that says the smallest feasible
 * budget when nothing fits (see planner.h). The exact search is search_dp.c.
 */
#include "checkpoint/planner.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/search.h"

/* ---- Chen et al. 2016's search -------------------------------------------------------- */

/* Their Algorithm 3 cuts the chain wherever the activations kept since the last cut pass
 * a threshold b; the appendix's search tries a few b. */

/* Their Algorithm 3 on the chain with threshold b: walk the layers adding up what each
 * keeps (kept_k); when the running sum passes b, the layer's output becomes a stored
 * segment boundary and the sum starts again. x is the bytes of the stored boundaries, y
 * the largest segment. Every segment but the last is a region; the last runs plainly,
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

/* The cheapest of the schedules the search of b tries that fits `act_budget`; NULL when
 * none does (no error set), with *leanest the least peak ACT among them. */
static Schedule *search_chen(const ChainCost *c, size_t act_budget, size_t *leanest)
{
    const int L = c->n_layers;
    Segment *segs = calloc((size_t)L, sizeof *segs);
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
        Schedule *s = chain_schedule(c, segs, n);
        if (!s) break;
        schedule_keep_best(&best, s, act_budget, leanest);
    }
    free(segs);
    return best;
}

/* ---- Revolve over the whole chain --------------------------------------------------------- */

/* Of storing everything and Revolve with 1 … L−1 slots over the whole chain, the one with
 * the fewest RECOMPUTE FLOPs whose predicted peak ACT is at most `act_budget` (ties: the
 * leaner), which is the most slots the budget holds. *leanest gets the least peak ACT
 * among them (SIZE_MAX when the chain is not uniform). NULL when none fits (no error set)
 * or on error (REMAT_EINVAL for a chain that is not uniform). */
static Schedule *search_revolve(const ChainCost *cost, size_t act_budget, size_t *leanest)
{
    *leanest = SIZE_MAX;
    if (chain_check_uniform(cost) != REMAT_OK) return NULL;
    const int most = cost->n_layers > 1 ? cost->n_layers - 1 : 1; /* more slots than L − 1 change nothing */
    Schedule *best = NULL;
    for (int slots = 0; slots <= most; slots++) { /* 0: store everything */
        const Segment whole = {0, cost->n_layers, slots ? SEGMENT_REVOLVE : SEGMENT_PLAIN, NULL, slots};
        Schedule *s = chain_schedule(cost, &whole, 1);
        if (!s) {
            schedule_free(best);
            return NULL;
        }
        schedule_keep_best(&best, s, act_budget, leanest);
        if (best && slots == 0) break; /* storing everything fits: nothing recomputes less */
    }
    return best;
}

/* ---- budgets ----------------------------------------------------------------------------- */

/* REMAT_EINVAL for a chain too long for the exact search, whose work grows as L^3. */
static RematStatus check_dp_limit(const ChainCost *c)
{
    if (c->n_layers <= PLANNER_DP_MAX_LAYERS) return REMAT_OK;
    return remat_fail(REMAT_EINVAL, "the exact search plans chains of up to %d layers (its work grows as L^3), this "
                      "one has %d: use the chen planner", PLANNER_DP_MAX_LAYERS, c->n_layers);
}

size_t planner_min_budget(const ChainCost *cost)
{
    Schedule *lean = cost && check_dp_limit(cost) == REMAT_OK ? search_dp_leanest(cost) : NULL;
    const size_t budget = lean ? lean->predicted.peak_total : 0;
    schedule_free(lean);
    return budget;
}

size_t planner_revolve_min_budget(const ChainCost *cost)
{
    size_t leanest;
    Schedule *s = search_revolve(cost, 0, &leanest);
    schedule_free(s);
    return leanest == SIZE_MAX ? 0 : cost->fixed + cost->work_peak + leanest;
}

/* ---- planners ---------------------------------------------------------------------------- */

static const char *const NAMES[PLANNER_COUNT] = {"chen", "dp", "revolve"};
const NameTable PLANNER_NAMES = {NAMES, PLANNER_COUNT};

const char *planner_name(PlannerKind kind)
{
    return name_of(&PLANNER_NAMES, (int)kind);
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
        Schedule *s = search_revolve(cost, act_budget, &leanest);
        if (!s && leanest != SIZE_MAX) fail_too_small(cost, kind, budget, reserved + leanest);
        return s;
    }
    if (kind == PLANNER_DP) {
        if (check_dp_limit(cost) != REMAT_OK) return NULL;
        bool none_fits;
        Schedule *s = search_dp(cost, act_budget, &none_fits);
        if (!s && none_fits) fail_too_small(cost, kind, budget, planner_min_budget(cost));
        return s;
    }
    size_t leanest = SIZE_MAX;
    Schedule *s = search_chen(cost, act_budget, &leanest);
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
