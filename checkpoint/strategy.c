/*
 * strategy.c — turning a strategy into segments of layers, and running them (see
 * strategy.h).
 */
#include "checkpoint/strategy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint/revolve.h"

static const char *const NAMES[] = {"none", "full", "sqrt", "selective", "budget"};

Strategy strategy_defaults(StrategyKind kind)
{
    return (Strategy){.kind = kind, .preserve_rng = true};
}

const char *strategy_name(StrategyKind kind)
{
    return (unsigned)kind < sizeof NAMES / sizeof NAMES[0] ? NAMES[kind] : "unknown";
}

RematStatus strategy_parse(const char *name, StrategyKind *kind)
{
    for (int k = 0; name && k < (int)(sizeof NAMES / sizeof NAMES[0]); k++) {
        if (!strcmp(name, NAMES[k])) {
            *kind = (StrategyKind)k;
            return REMAT_OK;
        }
    }
    return remat_fail(REMAT_EINVAL, "unknown strategy '%s' (expected none, full, sqrt, selective or budget)",
                      name ? name : "(null)");
}

int strategy_segment_sizes(StrategyKind kind, int n, int *sizes)
{
    if (kind == STRATEGY_NONE) {
        sizes[0] = n;
        return 1;
    }
    if (kind != STRATEGY_SQRT) {
        for (int i = 0; i < n; i++) sizes[i] = 1;
        return n;
    }
    int k = (int)ceil(sqrt((double)n));
    int s = (n + k - 1) / k;
    for (int i = 0; i < s; i++) sizes[i] = n / s + (i < n % s ? 1 : 0);
    return s;
}

Plan *plan_create_segments(const Strategy *strategy, Layer **layers, int n, const int *counts,
                           const bool *region, int n_segments)
{
    if (!strategy || !layers || n < 1 || !counts || !region || n_segments < 1 || n_segments > n) {
        remat_fail(REMAT_EINVAL, "plan_create: need a strategy, at least one layer and 1 to %d segments", n);
        return NULL;
    }
    int total = 0;
    for (int i = 0; i < n_segments; i++) {
        if (counts[i] < 1) {
            remat_fail(REMAT_EINVAL, "plan_create: segment %d has %d layers", i, counts[i]);
            return NULL;
        }
        total += counts[i];
    }
    if (total != n) {
        remat_fail(REMAT_EINVAL, "plan_create: the segments hold %d layers, the chain has %d", total, n);
        return NULL;
    }
    Plan *plan = calloc(1, sizeof *plan);
    Segment *segments = calloc((size_t)n_segments, sizeof *segments);
    if (!plan || !segments) {
        free(plan), free(segments);
        remat_fail(REMAT_ENOMEM, "plan_create: no memory for %d segments", n_segments);
        return NULL;
    }
    plan->strategy = *strategy;
    if (plan->strategy.kind == STRATEGY_SELECTIVE && !plan->strategy.policy)
        plan->strategy.policy = &POLICY_ATTENTION_CORE;
    plan->n_segments = n_segments;
    plan->segments = segments;
    for (int i = 0, first = 0; i < n_segments; first += counts[i], i++) {
        Segment *seg = &segments[i];
        seg->layers = layers + first;
        seg->count = counts[i];
        seg->region = region[i];
        if (seg->count == 1)
            snprintf(seg->name, sizeof seg->name, "%s", layers[first]->name);
        else
            snprintf(seg->name, sizeof seg->name, "%.28s-%.28s", layers[first]->name,
                     layers[first + seg->count - 1]->name);
    }
    return plan;
}

Plan *plan_create(const Strategy *strategy, Layer **layers, int n)
{
    if (!strategy || !layers || n < 1) {
        remat_fail(REMAT_EINVAL, "plan_create: need a strategy and at least one layer");
        return NULL;
    }
    if (strategy->kind == STRATEGY_BUDGET) {
        remat_fail(REMAT_EINVAL, "plan_create: a budget plan needs the planner's segments (plan_from_schedule)");
        return NULL;
    }
    if ((unsigned)strategy->kind > STRATEGY_SELECTIVE) {
        remat_fail(REMAT_EINVAL, "plan_create: unknown strategy %d", (int)strategy->kind);
        return NULL;
    }
    int *sizes = calloc((size_t)n, sizeof *sizes);
    bool *region = calloc((size_t)n, sizeof *region);
    if (!sizes || !region) {
        free(sizes), free(region);
        remat_fail(REMAT_ENOMEM, "plan_create: no memory for %d segments", n);
        return NULL;
    }
    const int count = strategy_segment_sizes(strategy->kind, n, sizes);
    for (int i = 0; i < count; i++) region[i] = strategy->kind != STRATEGY_NONE;
    Plan *plan = plan_create_segments(strategy, layers, n, sizes, region, count);
    free(sizes);
    free(region);
    return plan;
}

void plan_free(Plan *plan)
{
    if (!plan) return;
    free(plan->segments);
    free(plan);
}

/* A segment's layers one after the other, each intermediate freed once the next exists:
 * the RegionFn of every region. */
static Var *run_segment(void *fn_ctx, Var *x, TrainCtx *ctx)
{
    const Segment *seg = fn_ctx;
    Var *h = var_retain(x);
    for (int i = 0; i < seg->count && h; i++) {
        Var *next = layer_forward(seg->layers[i], h, ctx);
        var_free(h);
        h = next;
    }
    return h;
}

Var *plan_forward(const Plan *plan, Var *x, TrainCtx *ctx)
{
    if (!plan || !x) {
        remat_fail(REMAT_EINVAL, "plan_forward: %s is NULL", plan ? "the input" : "the plan");
        return NULL;
    }
    if (plan->revolve_slots > 0)
        return revolve_forward(plan->segments[0].layers, plan->segments[0].count, plan->revolve_slots, x, ctx);
    const Strategy *s = &plan->strategy;
    Var *h = var_retain(x);
    for (int i = 0; i < plan->n_segments && h; i++) {
        Segment *seg = &plan->segments[i];
        Var *next;
        if (!seg->region) {
            next = run_segment(seg, h, ctx);
        } else {
            CheckpointOptions o = {.name = seg->name, .preserve_rng = s->preserve_rng,
                                   .determinism_check = s->determinism_check,
                                   .policy = s->kind == STRATEGY_SELECTIVE ? s->policy : NULL};
            next = checkpoint(run_segment, seg, h, ctx, &o);
        }
        var_free(h);
        h = next;
    }
    return h;
}
