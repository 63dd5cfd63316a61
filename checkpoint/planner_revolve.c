/*
 * planner_revolve.c — Revolve as a budget planner: whether a chain is uniform, what one
 * of its layers costs Revolve (read off the chain cost model, chain_profile.c), and the
 * whole step's peak ACT and RECOMPUTE FLOPs under a Revolve schedule (see planner.h,
 * "Revolve over the chain", for the formula and why Revolve fits tighter budgets).
 *
 * Owns: the Revolve Schedule records it makes. Touches: nothing but its arguments; the
 * schedule itself comes from revolve.c, and the choice of slots is in planner.c.
 */
#include "checkpoint/planner.h"

#include <stdlib.h>

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* ---- uniform chains ------------------------------------------------------------------- */

/* The first figure in which layer k differs from `ref`, or NULL. Layer 0's backward may
 * differ (no gradient for the chain's input): only its forward figures are compared. */
static const char *first_difference(const ChainLayer *k, const ChainLayer *ref, bool forward_only,
                                    size_t *got, size_t *want)
{
    const struct { const char *what; size_t got, want; bool backward; } figures[] = {
        {"input bytes", k->in_bytes, ref->in_bytes, false},
        {"output bytes", k->out_bytes, ref->out_bytes, false},
        {"kept bytes", k->kept, ref->kept, false},
        {"forward peak", k->fwd_peak, ref->fwd_peak, false},
        {"forward peak without grad", k->nograd_peak, ref->nograd_peak, false},
        {"forward FLOPs", (size_t)k->flops, (size_t)ref->flops, false},
        {"input gradient bytes", k->grad_bytes, ref->grad_bytes, true},
        {"backward peak", k->back_plain, ref->back_plain, true},
        {"backward peak as a region's last layer", k->back_held, ref->back_held, true},
    };
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++) {
        if (forward_only && figures[i].backward) continue;
        if (figures[i].got != figures[i].want) {
            *got = figures[i].got;
            *want = figures[i].want;
            return figures[i].what;
        }
    }
    return NULL;
}

RematStatus chain_check_uniform(const ChainCost *c)
{
    if (!c || c->n_layers < 1) return remat_fail(REMAT_EINVAL, "planner revolve: need a chain cost of at least one layer");
    const ChainLayer *l = c->layers;
    if (l[0].in_bytes != l[0].out_bytes)
        return remat_fail(REMAT_EINVAL, "planner revolve: layer 0's output (%zu bytes) is not the size of its input "
                          "(%zu bytes); Revolve stores every state in the same slots", l[0].out_bytes, l[0].in_bytes);
    for (int k = 0; k < c->n_layers; k++) {
        size_t got = 0, want = 0;
        const char *what = k == 1 ? NULL : first_difference(&l[k], &l[c->n_layers > 1 ? 1 : 0], k == 0, &got, &want);
        if (what)
            return remat_fail(REMAT_EINVAL, "planner revolve: the chain is not uniform: layer %d differs from layer 1 in "
                              "its %s (%zu, against %zu); Revolve's schedules assume every layer costs the same — "
                              "use the dp or chen planner", k, what, got, want);
    }
    if (c->n_layers > 1 && l[1].grad_bytes != l[1].in_bytes)
        return remat_fail(REMAT_EINVAL, "planner revolve: layer 1's input gradient (%zu bytes) is not the size of its "
                          "input (%zu bytes)", l[1].grad_bytes, l[1].in_bytes);
    return REMAT_OK;
}

/* ---- what one layer costs Revolve ------------------------------------------------------- */

/* Revolve's per-layer costs (revolve.h) in terms of the chain model's figures. A layer
 * advanced with grad off is a region's first forward: ng. A layer reversed runs forward
 * with grad on (fwd) and then backpropagates holding kept − out with the gradient flowing
 * in alive to the end: a region's last layer, back_held, which includes the allocation of
 * its input gradient. For layer 0 that gradient, when there is one, is the engine's
 * buffer, which the predictor counts already. */
static RevolveLayerCost revolve_layer_cost(const ChainCost *c)
{
    const ChainLayer *first = &c->layers[0], *any = &c->layers[c->n_layers > 1 ? 1 : 0];
    return (RevolveLayerCost){
        .input_bytes = first->in_bytes,
        .forward_bytes = first->nograd_peak,
        .reverse_bytes = max_size(any->fwd_peak, any->kept - any->out_bytes + any->back_held),
        .first_reverse_bytes = max_size(first->fwd_peak, first->kept - first->out_bytes + first->back_held - first->grad_bytes),
        .input_needs_grad = first->grad_bytes > 0,
        .forward_flops = first->flops,
    };
}

/* ---- the whole step under Revolve --------------------------------------------------------- */

/* The step's peak ACT with the chain under `p` (planner.h's formula): the executor's
 * moments on top of what the stages around the chain hold. */
static size_t step_peak(const ChainCost *c, const RevolvePrediction *p)
{
    const ChainLayer *first = &c->layers[0], *last = &c->layers[c->n_layers - 1];
    const size_t outside = c->base + c->embed - first->in_bytes; /* S(0) without x_0 */
    size_t peak = max_size(c->base + c->embed_peak, c->tail_peak);
    peak = max_size(peak, outside + p->forward_peak);
    peak = max_size(peak, outside + p->forward_kept + last->out_bytes + c->head_peak);
    return max_size(peak, outside + c->resid + p->backward_peak);
}

Schedule *schedule_revolve(const ChainCost *cost, int slots)
{
    if (!cost || slots < 1) {
        remat_fail(REMAT_EINVAL, "schedule_revolve: need a chain cost and at least one slot (got %d)", slots);
        return NULL;
    }
    if (chain_check_uniform(cost) != REMAT_OK) return NULL;
    const int L = cost->n_layers;
    Schedule *s = calloc(1, sizeof *s);
    ScheduleSegment *whole = calloc(1, sizeof *whole);
    RevolveSchedule *revolve = revolve_schedule_create(L, slots);
    if (!s || !whole || !revolve) {
        if (revolve) remat_fail(REMAT_ENOMEM, "schedule_revolve: no memory for a schedule");
        free(s), free(whole), revolve_schedule_free(revolve);
        return NULL;
    }
    const RevolveLayerCost layer = revolve_layer_cost(cost);
    RevolvePrediction p;
    revolve_predict(revolve, &layer, &p); /* cannot fail: no argument is NULL */
    *whole = (ScheduleSegment){0, L, true};
    *s = (Schedule){.n_layers = L, .n_segments = 1, .segments = whole, .revolve_slots = slots, .revolve = revolve,
                    .peak_act = step_peak(cost, &p), .recompute_flops = p.recompute_flops};
    s->peak_total = cost->fixed + cost->work_peak + s->peak_act;
    return s;
}

/* ---- choosing the slots -------------------------------------------------------------------- */

Schedule *planner_revolve_search(const ChainCost *cost, size_t act_budget, size_t *leanest)
{
    *leanest = SIZE_MAX;
    if (chain_check_uniform(cost) != REMAT_OK) return NULL;
    const int most = cost->n_layers > 1 ? cost->n_layers - 1 : 1; /* more slots than L − 1 change nothing */
    Schedule *best = schedule_for_strategy(cost, STRATEGY_NONE); /* storing everything: no recomputation */
    if (!best) return NULL;
    *leanest = best->peak_act;
    if (best->peak_act <= act_budget) return best;
    schedule_free(best);
    best = NULL;
    for (int slots = 1; slots <= most; slots++) {
        Schedule *s = schedule_revolve(cost, slots);
        if (!s) {
            schedule_free(best);
            return NULL;
        }
        schedule_keep_best(&best, s, act_budget, leanest);
    }
    return best;
}

size_t planner_revolve_min_budget(const ChainCost *cost)
{
    size_t leanest;
    Schedule *s = planner_revolve_search(cost, 0, &leanest);
    schedule_free(s);
    return leanest == SIZE_MAX ? 0 : cost->fixed + cost->work_peak + leanest;
}
