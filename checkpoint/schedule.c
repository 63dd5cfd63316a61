/*
 * schedule.c — the schedules the strategies make, and the one executor that runs any
 * schedule (see schedule.h).
 */
#include "checkpoint/schedule.h"

#include <math.h>
#include <stdlib.h>

#include "checkpoint/dtr.h"
#include "checkpoint/revolve.h"

/* ---- strategies ------------------------------------------------------------------------- */

static const char *const NAMES[] = {"none", "full", "sqrt", "selective", "dtr", "budget"};
const NameTable STRATEGY_NAMES = {NAMES, sizeof NAMES / sizeof NAMES[0]};

Strategy strategy_defaults(StrategyKind kind) { return (Strategy){.kind = kind, .replay.preserve_rng = true}; }

/* ---- making schedules --------------------------------------------------------------------- */

/* REMAT_OK if the segments cover layers 0 .. n_layers − 1 in order, each well formed. */
static RematStatus check_segments(const Segment *segments, int n, int n_layers)
{
    for (int i = 0, next = 0; i < n; next += segments[i].count, i++) {
        const Segment *g = &segments[i];
        if (g->first != next || g->count < 1 || next + g->count > n_layers)
            return remat_fail(REMAT_EINVAL, "schedule_create: segment %d (layers %d..%d) does not continue the "
                              "chain at layer %d of %d", i, g->first, g->first + g->count - 1, next, n_layers);
        if ((unsigned)g->kind > SEGMENT_DTR || (g->kind == SEGMENT_REVOLVE && g->slots < 1) ||
            (g->kind == SEGMENT_DTR && n > 1))
            return remat_fail(REMAT_EINVAL, "schedule_create: segment %d is of no known kind, Revolve without "
                              "slots, or DTR beside other segments", i);
        if (i == n - 1 && next + g->count != n_layers)
            return remat_fail(REMAT_EINVAL, "schedule_create: the segments end at layer %d of %d",
                              next + g->count, n_layers);
    }
    return REMAT_OK;
}

Schedule *schedule_create(StrategyKind strategy, const Segment *segments, int n, int n_layers)
{
    if (!segments || n < 1 || n_layers < 1)
        return remat_fail_null(REMAT_EINVAL, "schedule_create: need at least one layer and one segment");
    if (check_segments(segments, n, n_layers) != REMAT_OK) return NULL;
    Schedule *s = calloc(1, sizeof *s + (size_t)n * sizeof(Segment)); /* its segments follow it */
    if (!s) return remat_fail_null(REMAT_ENOMEM, "schedule_create: no memory for %d segments", n);
    Segment *copy = (Segment *)(s + 1);
    int m = 0;
    for (int i = 0; i < n; i++) {
        const bool both_plain = m > 0 && copy[m - 1].kind == SEGMENT_PLAIN && segments[i].kind == SEGMENT_PLAIN;
        if (both_plain) copy[m - 1].count += segments[i].count;
        else copy[m++] = segments[i];
    }
    *s = (Schedule){.strategy = strategy, .n_layers = n_layers, .n_segments = m, .segments = copy,
                    .replay.preserve_rng = true};
    return s;
}

Schedule *schedule_for_strategy(const Strategy *strategy, int n_layers)
{
    if (!strategy || n_layers < 1 || (unsigned)strategy->kind >= STRATEGY_BUDGET)
        return remat_fail_null(REMAT_EINVAL, "schedule_for_strategy: need none, full, sqrt, selective or dtr and a "
                               "layer (a budget's schedule comes from a planner, planner.h)");
    const StrategyKind kind = strategy->kind;
    /* none and dtr: one segment; full and selective: one per layer; sqrt: ceil(n / k) of at most
     * k = ceil(sqrt(n)) layers, as equal as possible, the longer ones first (schedule.h). */
    const int k = (int)ceil(sqrt((double)n_layers));
    const bool one = kind == STRATEGY_NONE || kind == STRATEGY_DTR;
    const int m = one ? 1 : kind == STRATEGY_SQRT ? (n_layers + k - 1) / k : n_layers;
    Schedule *s = calloc(1, sizeof *s + (size_t)m * sizeof(Segment)); /* its segments follow it */
    if (!s) return remat_fail_null(REMAT_ENOMEM, "schedule_for_strategy: no memory for %d segments", m);
    Segment *segs = (Segment *)(s + 1); /* in order, each well formed: nothing for check_segments to refuse */
    *s = (Schedule){.strategy = kind, .n_layers = n_layers, .n_segments = m, .segments = segs,
                    .replay = strategy->replay};
    const Policy *policy = kind != STRATEGY_SELECTIVE ? NULL
                         : strategy->policy ? strategy->policy : &POLICY_ATTENTION_CORE;
    for (int i = 0, first = 0; i < m; first += segs[i].count, i++)
        segs[i] = (Segment){first, n_layers / m + (i < n_layers % m ? 1 : 0),
                            kind == STRATEGY_NONE ? SEGMENT_PLAIN : one ? SEGMENT_DTR : SEGMENT_REGION, policy, 0};
    return s;
}

int schedule_regions(const Schedule *s)
{
    int regions = 0;
    for (int i = 0; s && i < s->n_segments; i++) regions += s->segments[i].kind == SEGMENT_REGION;
    return regions;
}

int schedule_revolve_slots(const Schedule *s)
{
    return s && s->n_segments == 1 && s->segments[0].kind == SEGMENT_REVOLVE ? s->segments[0].slots : 0;
}

void schedule_free(Schedule *s)
{
    free(s); /* its segments with it */
}

/* ---- running one ------------------------------------------------------------------------ */

/* "h.4", or "h.4-h.7": a segment named by its layers (or by their indices without them). */
static void segment_name(char *buf, size_t size, const Segment *g, Layer **layers)
{
    const int last = g->first + g->count - 1;
    if (!layers) snprintf(buf, size, "layers %d-%d", g->first, last);
    else if (g->count == 1) snprintf(buf, size, "%s", layers[g->first]->name);
    else snprintf(buf, size, "%.28s-%.28s", layers[g->first]->name, layers[last]->name);
}

Var *schedule_forward(const Schedule *s, Layer **layers, int n_layers, Var *x, TrainCtx *ctx)
{
    if (!s || !layers || !x || n_layers != s->n_layers)
        return remat_fail_null(REMAT_EINVAL, "schedule_forward: need a schedule, its %d layers and an input (got %d "
                               "layers)", s ? s->n_layers : 0, n_layers);
    Var *h = var_retain(x);
    for (int i = 0; i < s->n_segments && h; i++) {
        const Segment *g = &s->segments[i];
        Layer **run = layers + g->first;
        Var *next;
        if (g->kind == SEGMENT_PLAIN) {
            next = layers_forward(run, g->count, h, ctx);
        } else if (g->kind == SEGMENT_REVOLVE) {
            next = revolve_forward(run, g->count, g->slots, h, ctx);
        } else if (g->kind == SEGMENT_DTR) {
            next = dtr_forward(run, g->count, h, ctx, &(DtrOptions){s->replay, s->max_remats});
        } else {
            char name[NODE_NAME_LEN];
            segment_name(name, sizeof name, g, layers);
            const CheckpointOptions o = {.name = name, .replay = s->replay, .policy = g->policy};
            next = checkpoint_layers(run, g->count, h, ctx, &o);
        }
        var_free(h);
        h = next;
    }
    return h;
}

/* ---- printing one ------------------------------------------------------------------------ */

/* The predicted peak and recompute figures a planned schedule's print ends with, after
 * `lead`; nothing when it was not predicted. */
static void print_prediction(const Prediction *p, const char *lead, FILE *out)
{
    char peak[32], total[32];
    if (!p->made) return;
    fprintf(out, "%spredicted peak activations %s, peak memory %s,\n"
                 "    recompute %.3f GFLOP per step (%.1f%% of the forward)\n", lead,
            mem_format_bytes(peak, sizeof peak, p->peak_act), mem_format_bytes(total, sizeof total, p->peak_total),
            (double)p->recompute_flops * 1e-9,
            p->forward_flops ? 100.0 * (double)p->recompute_flops / (double)p->forward_flops : 0.0);
}

/* A schedule that is one Revolve segment: its slots and repetition number, and how often
 * each layer is recomputed (runs of equal counts together, so a long chain stays a few
 * lines). */
static void print_revolve(const Schedule *s, Layer **layers, FILE *out)
{
    RevolveSchedule *r = revolve_schedule_create(s->segments[0].count, s->segments[0].slots);
    if (!r) {
        fprintf(out, "  schedule: Revolve (%s)\n", remat_last_error());
        return;
    }
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
    revolve_schedule_free(r);
    fprintf(out, "\n");
    print_prediction(&s->predicted, "    ", out);
}

void schedule_print(const Schedule *s, Layer **layers, FILE *out)
{
    if (schedule_revolve_slots(s)) {
        print_revolve(s, layers, out);
        return;
    }
    const int regions = schedule_regions(s);
    fprintf(out, "  schedule: %d segment%s, %d of them regions%s\n", s->n_segments, s->n_segments == 1 ? "" : "s",
            regions, regions || s->strategy == STRATEGY_DTR ? "" : ": the budget holds every activation, so nothing is "
            "recomputed");
    /* Each kind of segment: what it keeps and how often its layers run forward. */
    static const char *const KINDS[][2] = {
        {"plain ", "every activation kept; each layer's forward runs once"},
        {"region", "its input kept; each layer's forward runs twice (recomputed once)"},
        {"revolve", "Revolve: a few stored states; layers recomputed up to r times"},
        {"dtr   ", "DTR: every activation kept while the budget allows, evicted and replayed"}};
    for (int i = 0; i < s->n_segments; i++) {
        const Segment *g = &s->segments[i];
        const bool selective = g->kind == SEGMENT_REGION && g->policy;
        char name[NODE_NAME_LEN];
        segment_name(name, sizeof name, g, layers);
        fprintf(out, "    %-16s %s: %s\n", name, KINDS[g->kind][0],
                selective ? "its input and what its policy saves kept; the rest recomputed once" : KINDS[g->kind][1]);
        if (g->policy && g->policy->user) /* a policy of its own (an op-level keep-set) says what it keeps */
            fprintf(out, "      %s\n", g->policy->name);
    }
    fprintf(out, "    inputs kept by regions: %d%s", regions, s->predicted.made ? "; " : "\n");
    print_prediction(&s->predicted, "", out);
}
