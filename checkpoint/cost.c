/*
 * cost.c — predicting a schedule's peak ACT and RECOMPUTE FLOPs from the chain cost model
 * (see cost.h for the model and its formula; chain_profile.c measures it).
 *
 * Owns: nothing beyond the schedules it returns. Touches: nothing but its arguments.
 */
#include "checkpoint/cost.h"

#include "checkpoint/revolve.h"

/* ---- single-level schedules ------------------------------------------------------------ */

size_t chain_grad_bytes(const ChainCost *c, int k)
{
    return k < c->n_layers ? c->layers[k].grad_bytes : c->layers[c->n_layers - 1].out_bytes;
}

/* f's need becomes `need` if that is more, reached at layer k's op. */
static void reach(SegmentFigures *f, size_t need, int k, const char *op)
{
    if (need > f->need) f->need = need, f->op = op, f->op_layer = k;
}

/* The most ACT above S(a) while region [a, b] runs its first forward, its replay and its
 * backward (cost.h's formula, term by term), and where. */
static void region_need(const ChainCost *c, int a, int b, SegmentFigures *f)
{
    const ChainLayer *l = c->layers;
    reach(f, l[a].nograd_peak, a, l[a].nograd_op);
    for (int k = a + 1; k <= b; k++) reach(f, l[k].in_bytes + l[k].nograd_peak, k, l[k].nograd_op);
    const size_t in = chain_grad_bytes(c, b + 1) + c->resid, ga = chain_grad_bytes(c, a);
    size_t kept = 0; /* Σ kept_i for i < k */
    for (int k = a; k <= b; k++) {
        reach(f, in + ga + kept + l[k].fwd_peak, k, l[k].fwd_op);
        kept += l[k].kept;
        /* The region's last layer backpropagates with the gradient flowing in alive to the
         * end (back_held); the others as plain layers do, but with g_a already there. */
        const size_t held = in + (k > a || k < b ? ga : 0) + kept - l[k].out_bytes +
                            (k < b ? chain_grad_bytes(c, k + 1) : 0);
        reach(f, held + (k == b ? l[k].back_held : l[k].back_plain), k, k == b ? l[k].held_op : l[k].plain_op);
    }
}

bool chain_segment(const ChainCost *c, const Segment *g, SegmentFigures *f)
{
    const int a = g->first, b = a + g->count - 1;
    if (g->kind == SEGMENT_REGION && g->policy) { /* measured: the cost's own policy, or a keep-set */
        const SegmentFigures *m = g->policy == c->policy ? &c->layers[a].policy
                                  : c->ops ? c->ops_figures(c->ops, a, g->policy) : NULL;
        if (!m || g->count != 1) return false;
        *f = *m;
        f->op_layer = a;
        return true;
    }
    *f = (SegmentFigures){0};
    if (g->kind == SEGMENT_REGION) { /* keeps its output x_{b+1}; recomputes layers a .. b */
        for (int k = a; k <= b; k++) f->flops += c->layers[k].flops;
        f->adds = c->layers[b].out_bytes;
        region_need(c, a, b, f);
        return true;
    }
    if (g->kind != SEGMENT_PLAIN) return false;
    for (int k = a; k <= b; k++) { /* each layer on top of what the ones before it kept, its forward first */
        const ChainLayer *l = &c->layers[k];
        reach(f, f->adds + l->fwd_peak, k, l->fwd_op);
        reach(f, f->adds + l->kept - l->out_bytes + chain_grad_bytes(c, k + 1) + c->resid + l->back_plain, k,
              l->plain_op);
        f->adds += l->kept;
    }
    return true;
}

/* ---- uniform chains, for Revolve -------------------------------------------------------- */

/* Layer 0's backward may differ from the others' (no gradient for the chain's input): only
 * its forward figures are compared. */
RematStatus chain_check_uniform(const ChainCost *c)
{
    if (!c || c->n_layers < 1)
        return remat_fail(REMAT_EINVAL, "planner revolve: need a chain cost of at least one layer");
    const ChainLayer *l = c->layers, *ref = &l[c->n_layers > 1 ? 1 : 0];
    if (l[0].in_bytes != l[0].out_bytes)
        return remat_fail(REMAT_EINVAL, "planner revolve: layer 0's output (%zu bytes) is not the size of its input "
                          "(%zu bytes); Revolve stores every state in the same slots", l[0].out_bytes, l[0].in_bytes);
    for (int k = 0; k < c->n_layers; k++) {
        const struct { const char *what; size_t got, want; bool backward; } figures[] = {
            {"input bytes", l[k].in_bytes, ref->in_bytes, false},
            {"output bytes", l[k].out_bytes, ref->out_bytes, false},
            {"kept bytes", l[k].kept, ref->kept, false},
            {"forward peak", l[k].fwd_peak, ref->fwd_peak, false},
            {"forward peak without grad", l[k].nograd_peak, ref->nograd_peak, false},
            {"forward FLOPs", (size_t)l[k].flops, (size_t)ref->flops, false},
            {"input gradient bytes", l[k].grad_bytes, ref->grad_bytes, true},
            {"backward peak", l[k].back_plain, ref->back_plain, true},
            {"backward peak as a region's last layer", l[k].back_held, ref->back_held, true},
        };
        for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
            if (figures[i].got != figures[i].want && !(k == 0 && figures[i].backward))
                return remat_fail(REMAT_EINVAL, "planner revolve: the chain is not uniform: layer %d differs from "
                                  "layer 1 in its %s (%zu, against %zu); Revolve's schedules assume every layer costs "
                                  "the same — use the dp or chen planner", k, figures[i].what, figures[i].got,
                                  figures[i].want);
    }
    if (c->n_layers > 1 && l[1].grad_bytes != l[1].in_bytes)
        return remat_fail(REMAT_EINVAL, "planner revolve: layer 1's input gradient (%zu bytes) is not the size of its "
                          "input (%zu bytes)", l[1].grad_bytes, l[1].in_bytes);
    return REMAT_OK;
}

/* ---- the whole step under Revolve ---------------------------------------------------------- */

/* What is alive while Revolve's executor (revolve.h) runs, in bytes, as its schedule is
 * walked:
 *
 *   states     x_0 and every state kept in a slot, plus the current state when it is not
 *              also in a slot: a bytes each (the executor's input is counted: a slot keeps
 *              it alive whether or not the caller does);
 *   gradients  in the backward only: the chain output's gradient, given to the executor
 *              and alive until it returns; the chain input's gradient buffer, when the
 *              input needs one; and the gradient between two reversals (the last reversed
 *              layer's input gradient): a bytes each;
 *   the layer  on top: while a layer advances with grad off, a region's first forward (ng);
 *              while one is reversed, its forward with grad on (fwd) and then its backward
 *              holding kept − out with the gradient flowing in alive to the end, as a
 *              region's last layer does (back_held, which includes its input gradient's
 *              allocation; for layer 0 that is the engine's buffer, counted already).
 *
 * The peak is the most of these at any moment. It is exact when every layer allocates and
 * frees as the measured one does: a uniform chain. */
typedef struct Walk {
    size_t a;                      /* a layer's input (= its output, = a gradient) */
    size_t advance, reverse, reverse_first; /* on top while a layer advances, is reversed (layer 0) */
    size_t live;                   /* bytes of states and gradients alive */
    size_t peak;                   /* the most of live + the layer on top, so far */
    bool cur_in_slot;              /* the current state is also kept in a slot */
    bool dy_separate;              /* a gradient between reversals is alive (not the engine's dout) */
} Walk;

static void walk_action(Walk *w, const RevolveAction *act)
{
    switch (act->kind) {
    case REVOLVE_ADVANCE:
        for (int j = 0; j < act->steps; j++) {
            w->peak = max_size(w->peak, w->live + w->advance);
            if (w->cur_in_slot) w->live += w->a; /* the next state; else it replaces the current one */
            w->cur_in_slot = false;
        }
        break;
    case REVOLVE_STORE: w->cur_in_slot = true; break;
    case REVOLVE_RESTORE: w->cur_in_slot = !act->release; break; /* the slot's state: no new bytes */
    case REVOLVE_REVERSE:
        w->peak = max_size(w->peak, w->live + (act->position == 0 ? w->reverse_first : w->reverse));
        if (!w->cur_in_slot) w->live -= w->a; /* the state is used up */
        if (w->dy_separate) w->live -= w->a;
        if (act->position > 0) w->live += w->a; /* the next gradient between reversals */
        w->dy_separate = act->position > 0;
        w->cur_in_slot = false;
        break;
    }
}

/* Into p, the step's peak ACT with the whole chain, uniform (else REMAT_EINVAL), under
 * Revolve with `slots` slots: the executor's moments on top of what the stages around it
 * hold (cost.h); and its RECOMPUTE FLOPs, t(L, s) + 1 layer forwards (revolve.h). */
static RematStatus revolve_predict(const ChainCost *c, int slots, Prediction *p)
{
    RevolveSchedule *r = chain_check_uniform(c) == REMAT_OK ? revolve_schedule_create(c->n_layers, slots) : NULL;
    if (!r) return remat_last_status();
    const ChainLayer *l0 = &c->layers[0], *any = &c->layers[c->n_layers > 1 ? 1 : 0];
    Walk w = {.a = l0->in_bytes, .advance = l0->nograd_peak, .live = l0->in_bytes, /* x_0, the current state */
              .reverse = max_size(any->fwd_peak, any->kept - any->out_bytes + any->back_held),
              .reverse_first = max_size(l0->fwd_peak, l0->kept - l0->out_bytes + l0->back_held - l0->grad_bytes)};
    for (int i = 0; i < r->first_reverse; i++) walk_action(&w, &r->actions[i]);
    w.peak = max_size(w.peak, w.live + w.advance); /* the last layer, for the output; x_{L−1} stays */
    const size_t outside = c->base + c->embed - w.a; /* S(0) without x_0 */
    p->peak_act = max_size(p->peak_act, outside + w.peak);
    p->forward_kept = outside + w.live + c->layers[c->n_layers - 1].out_bytes - c->base; /* x_L among it */
    p->peak_act = max_size(p->peak_act, c->base + p->forward_kept + c->head_peak);
    /* The backward: the output x_L is gone (the loss has used it), x_{L−1} is the current
     * state, and the output's gradient (and the input's buffer) have arrived. */
    w.live += w.a + (l0->grad_bytes ? w.a : 0);
    w.peak = 0;
    for (int i = r->first_reverse; i < r->n_actions; i++) walk_action(&w, &r->actions[i]);
    p->recompute_flops = (uint64_t)(r->forward_count + 1) * l0->flops;
    p->peak_act = max_size(p->peak_act, outside + c->resid + w.peak);
    revolve_schedule_free(r);
    return REMAT_OK;
}

/* ---- predicting a schedule --------------------------------------------------------------- */

/* A step whose chain runs as s's single-level segments, walked from the forward state S(0). */
static RematStatus chain_predict(const Schedule *s, const ChainCost *c, Prediction *p)
{
    size_t state = c->base + c->embed;
    for (int i = 0; i < s->n_segments; i++) {
        const Segment *g = &s->segments[i];
        SegmentFigures f;
        if (!chain_segment(c, g, &f))
            return remat_fail(REMAT_EINVAL, "schedule_predict: segment %d is %s, which the cost model does not "
                              "predict", i, g->kind == SEGMENT_DTR ? "DTR, whose evictions depend on the run"
                              : g->kind == SEGMENT_REVOLVE ? "Revolve beside other segments"
                              : g->count > 1 ? "a region of several layers with a selective policy"
                                             : "a region with a selective policy it did not profile");
        p->peak_act = max_size(p->peak_act, state + f.need);
        p->recompute_flops += f.flops;
        state += f.adds;
    }
    p->forward_kept = state - c->base;
    p->peak_act = max_size(p->peak_act, state + c->head_peak);
    return REMAT_OK;
}

RematStatus schedule_predict(Schedule *s, const ChainCost *cost)
{
    if (!s || !cost || s->n_layers != cost->n_layers)
        return remat_fail(REMAT_EINVAL, "schedule_predict: need a schedule and the cost of its chain");
    /* The embed stage's moments, before and after the chain, are every schedule's. */
    Prediction p = {.made = true, .forward_flops = cost->forward_flops,
                    .peak_act = max_size(cost->base + cost->embed_peak, cost->tail_peak)};
    const int slots = schedule_revolve_slots(s);
    const RematStatus status = slots ? revolve_predict(cost, slots, &p) : chain_predict(s, cost, &p);
    if (status != REMAT_OK) return status;
    p.recompute_flops += cost->kernel_recompute; /* the backward kernels' own, under any schedule */
    p.peak_total = cost->fixed + cost->work_peak + p.peak_act;
    s->predicted = p;
    return REMAT_OK;
}

/* Takes s (NULL: not made, the error said; a cost of no layers makes none): predicted, or
 * freed and NULL. */
static Schedule *predicted(Schedule *s, const ChainCost *cost)
{
    if (s && schedule_predict(s, cost) != REMAT_OK) {
        schedule_free(s);
        return NULL;
    }
    return s;
}

Schedule *chain_schedule(const ChainCost *cost, const Segment *segments, int n)
{
    return predicted(schedule_create(STRATEGY_BUDGET, segments, n, cost ? cost->n_layers : 0), cost);
}

Schedule *chain_schedule_for_strategy(const ChainCost *cost, StrategyKind kind)
{
    const Strategy strategy = strategy_defaults(kind);
    return predicted(schedule_for_strategy(&strategy, cost ? cost->n_layers : 0), cost);
}
