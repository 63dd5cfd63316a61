/*
 * planner.c — the planners' dispatcher: the budget checked against what every schedule
 * needs, the search run, and the message that says the smallest feasible budget when
 * nothing fits (see planner.h; the searches are search_*.c).
 */
#include "checkpoint/planner.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/search.h"

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
