/*
 * chain_profile.c — measuring the chain cost model (cost.h) with one profiling step on
 * one batch, run twice: every layer plainly, then every layer its own region; and, for
 * --planner ops, each layer's ops recorded and each Pareto point's region measured.
 *
 * Owns: the Probe that watches the step. Touches: the ledgers (reads them, resets their
 * peaks between windows), the saved-tensor path's observer (set for the backward and put
 * back), the model's layers only through layers_forward and checkpoint(). The FLOP ledger
 * and the caller's generator are left as they were.
 */
#include "checkpoint/cost.h"

#include <stdlib.h>
#include <string.h>

#include "checkpoint/ops_plan.h"
#include "tensor/flops.h"

/* ---- profiling ------------------------------------------------------------------------- */

/* The passes cost.h names. A plain layer's forward is measured around the call, and its
 * backward between the moments the saved-tensor path releases the layer's last tensor —
 * which, since a layer keeps its input, is the end of its backward. A region's backward
 * ends when its input is released; a policy region is measured whole, from its first
 * forward to the end of its backward. */
enum { WINDOW_NONE = -2, WINDOW_HEAD = -1 };

typedef enum ProbePass { PASS_PLAIN, PASS_REGIONS, PASS_POLICY } ProbePass;

typedef struct Probe {
    Layer **layers;
    ChainCost *cost;
    ProbePass pass;
    int window;         /* the layer whose backward is being watched, the head, or none */
    size_t window_base; /* ACT the open window's peak is measured above */
    size_t last_release;/* ACT when the saved-tensor path last released something */
    size_t work_peak;   /* the most MEM_WORK seen, across the resets of the peaks */
    size_t resid;       /* what backward holds besides, as the first replay saw it */
    struct ProbeLayer *pl; /* the regions passes: each layer's region */
    const Policy *policy;  /* PASS_POLICY: the policy its regions replay under */
    const Policy *const *policies; /* or, when given, layer k's policies[k] */
} Probe;

typedef struct ProbeLayer {
    Probe *probe;
    int k;
    size_t state;            /* PASS_POLICY: the forward state S(k) (ACT before the region) */
    uint64_t replay_flops;   /* PASS_POLICY: RECOMPUTE FLOPs when its replay began */
} ProbeLayer;

/* Resets the ledger's peaks, keeping the most workspace seen so far. */
static void probe_reset_peaks(Probe *p)
{
    p->work_peak = max_size(p->work_peak, mem_peak(MEM_WORK));
    mem_reset_peaks();
}

static size_t peak_above(size_t base)
{
    const size_t peak = mem_peak(MEM_ACT);
    return peak > base ? peak - base : 0;
}

/* The layer whose ops made `node` ("h.3.mlp.fc" is layer h.3's), or −1. */
static int layer_of(const Probe *p, const char *name)
{
    for (int k = 0; k < p->cost->n_layers; k++) {
        const size_t len = strlen(p->layers[k]->name);
        if (!strncmp(name, p->layers[k]->name, len) && name[len] == '.') return k;
    }
    return -1;
}

/* The plain pass: each release ends a window of the backward. Windows before the chain's
 * are the head's, those of a layer its backward's, those after the chain the embed
 * stage's (its peak is the same for every schedule: kept as an absolute figure). */
static void plain_released(void *ctx, const Node *node, int slot)
{
    (void)slot;
    Probe *p = ctx;
    ChainCost *c = p->cost;
    const int k = layer_of(p, node->name);
    if (k >= 0 && k != p->window) {
        p->window = k; /* layer k's backward began after the last release */
        p->window_base = p->last_release;
    }
    if (k >= 0) c->layers[k].back_plain = max_size(c->layers[k].back_plain, peak_above(p->window_base));
    else if (p->window == WINDOW_HEAD) c->head_peak = max_size(c->head_peak, peak_above(p->window_base));
    else c->tail_peak = max_size(c->tail_peak, mem_peak(MEM_ACT));
    if (k < 0 && p->window == 0) p->window = WINDOW_NONE; /* layer 0 is done: the chain's backward is over */
    p->last_release = mem_current(MEM_ACT);
    probe_reset_peaks(p);
}

/* The regions passes: the release of a region's input ends that layer's backward. */
static void region_released(void *ctx, const Node *node, int slot)
{
    (void)slot;
    Probe *p = ctx;
    if (p->window < 0 || !node->tag || strcmp(node->tag, TAG_CHECKPOINT_INPUT) ||
        strcmp(node->name, p->layers[p->window]->name))
        return;
    ChainLayer *c = &p->cost->layers[p->window];
    if (p->pass == PASS_REGIONS) {
        c->back_held = peak_above(p->window_base);
    } else { /* the policy's region: its replay and backward, above the forward state */
        const ProbeLayer *pl = &p->pl[p->window];
        c->policy.need = max_size(c->policy.need, peak_above(pl->state));
        c->policy.flops = flops_get(PHASE_RECOMPUTE) - pl->replay_flops;
    }
    p->window = WINDOW_NONE;
}

/* The plain pass's forward of layer k: fwd_k, kept_k, flops_k, the sizes, and the
 * model's assumptions (REMAT_EINVAL, naming the layer, for a layer that breaks one). */
static Var *probe_plain_layer(Probe *p, int k, Var *x, TrainCtx *ctx)
{
    ChainLayer *c = &p->cost->layers[k];
    const size_t before = mem_current(MEM_ACT);
    const int input_refs = x->value->refcount;
    const uint64_t flops = flops_get(PHASE_FORWARD);
    probe_reset_peaks(p);
    Var *y = layers_forward(&p->layers[k], 1, x, ctx);
    if (!y) return NULL;
    c->flops = flops_get(PHASE_FORWARD) - flops;
    c->fwd_peak = mem_peak(MEM_ACT) - before;
    c->kept = mem_current(MEM_ACT) - before;
    c->in_bytes = x->value->bytes;
    c->out_bytes = y->value->bytes;
    const char *broken = NULL;
    if (x->value->refcount <= input_refs)
        broken = "does not keep its input for backward; the chain model assumes every layer does";
    else if (y->value->refcount != 1)
        broken = "keeps its own output for backward; the chain model assumes the next layer owns it";
    if (!broken) return y;
    var_free(y);
    return remat_fail_null(REMAT_EINVAL, "planner: layer %s %s", p->layers[k]->name, broken);
}

/* The regions pass's replay of layer k: g_k and the composition check; then opens the
 * window that watches its backward. */
static Var *probe_replay(Probe *p, int k, Var *x, TrainCtx *ctx)
{
    ChainLayer *c = &p->cost->layers[k];
    const size_t before = mem_current(MEM_ACT);
    c->grad_bytes = x->grad ? x->grad->bytes : 0;
    /* What backward holds here besides the kept inputs (the forward state S(k): base, the
     * embed stage, the outputs x_1 .. x_k the regions keep) and the two gradients is the
     * same for every layer (the loss and its seed), or the chain does not compose. */
    size_t known = p->cost->base + p->cost->embed + chain_grad_bytes(p->cost, k + 1) + c->grad_bytes;
    for (int i = 0; i < k; i++) known += p->cost->layers[i].out_bytes;
    const size_t resid = before >= known ? before - known : SIZE_MAX;
    if (k == p->cost->n_layers - 1) p->resid = resid;
    if (resid != p->resid)
        return remat_fail_null(REMAT_EINVAL, "planner: the chain does not compose at layer %s: backward holds %zu "
                               "bytes there, %zu expected", p->layers[k]->name, before, known + p->resid);
    Var *y = layers_forward(&p->layers[k], 1, x, ctx);
    if (!y) return NULL;
    /* Its backward starts once the output is released, without its input's gradient. */
    p->window_base = before + c->kept - c->out_bytes - c->grad_bytes;
    p->window = k;
    probe_reset_peaks(p);
    return y;
}

/* A region's function in the regions passes: layer k, measured. In the regions pass its
 * first forward (grad off) gives ng_k, its replay is probe_replay's; in the policy pass its
 * replay opens the window that watches it to the end of its backward. */
static Var *probe_region_layer(void *fn_ctx, Var *x, TrainCtx *ctx)
{
    ProbeLayer *pl = fn_ctx;
    Probe *p = pl->probe;
    if (p->pass == PASS_REGIONS && grad_enabled()) return probe_replay(p, pl->k, x, ctx);
    if (grad_enabled()) { /* the policy's replay */
        pl->replay_flops = flops_get(PHASE_RECOMPUTE);
        p->window = pl->k;
    }
    const size_t before = mem_current(MEM_ACT);
    probe_reset_peaks(p);
    Var *y = layers_forward(&p->layers[pl->k], 1, x, ctx);
    if (y && p->pass == PASS_REGIONS) p->cost->layers[pl->k].nograd_peak = mem_peak(MEM_ACT) - before;
    return y;
}

/* Layer k as a region, under the probe's policy in the policy pass (which measures what
 * the whole region needs and adds there). */
static Var *probe_region(Probe *p, int k, Var *h, TrainCtx *ctx)
{
    ProbeLayer *pl = &p->pl[k];
    *pl = (ProbeLayer){.probe = p, .k = k, .state = mem_current(MEM_ACT)};
    CheckpointOptions o = checkpoint_defaults();
    o.name = p->layers[k]->name;
    o.policy = p->pass != PASS_POLICY ? NULL : p->policies ? p->policies[k] : p->policy;
    probe_reset_peaks(p);
    Var *y = checkpoint(probe_region_layer, pl, h, ctx, &o);
    if (y && p->pass == PASS_POLICY) {
        p->cost->layers[k].policy.need = peak_above(pl->state);
        p->cost->layers[k].policy.adds = mem_current(MEM_ACT) - pl->state;
    }
    return y;
}

/* One pass's forward: the embed stage, the chain as the pass runs it, the head. */
static Var *probe_forward(Probe *p, const ChainStages *stages, TrainCtx *ctx)
{
    ChainCost *c = p->cost;
    c->base = mem_current(MEM_ACT);
    probe_reset_peaks(p);
    Var *x0 = stages->embed(stages->user, ctx);
    if (!x0) return NULL;
    c->embed_peak = mem_peak(MEM_ACT) - c->base;
    c->embed = mem_current(MEM_ACT) - c->base;
    Var *h = var_retain(x0);
    for (int k = 0; k < c->n_layers && h; k++) {
        Var *next = p->pass == PASS_PLAIN ? probe_plain_layer(p, k, h, ctx) : probe_region(p, k, h, ctx);
        var_free(h);
        h = next;
    }
    var_free(x0);
    if (!h) return NULL;
    p->window_base = mem_current(MEM_ACT);
    p->window = WINDOW_HEAD;
    probe_reset_peaks(p);
    Var *loss = stages->head(stages->user, h, ctx);
    var_free(h);
    if (loss) c->head_kept = mem_current(MEM_ACT) - p->window_base;
    return loss;
}

/* One pass: forward and backward with the release observer on. */
static RematStatus probe_pass(Probe *p, ProbePass pass, const ChainStages *stages, TrainCtx ctx)
{
    p->pass = pass;
    p->window = WINDOW_NONE;
    const uint64_t forward_start = flops_get(PHASE_FORWARD);
    Var *loss = probe_forward(p, stages, &ctx);
    if (pass == PASS_PLAIN) p->cost->forward_flops = flops_get(PHASE_FORWARD) - forward_start;
    if (loss) p->last_release = mem_current(MEM_ACT);
    const SavedObserver watch = {.released = pass == PASS_PLAIN ? plain_released : region_released, .ctx = p};
    const SavedObserver *previous = saved_observer_set(&watch);
    const uint64_t recompute_start = flops_get(PHASE_RECOMPUTE);
    RematStatus status = loss ? backward(loss) : remat_last_status();
    saved_observer_set(previous);
    if (pass == PASS_PLAIN) p->cost->kernel_recompute = flops_get(PHASE_RECOMPUTE) - recompute_start;
    if (pass == PASS_PLAIN) p->cost->tail_peak = max_size(p->cost->tail_peak, mem_peak(MEM_ACT));
    var_free(loss);
    tape_reset();
    flops_set_phase(PHASE_FORWARD);
    return status;
}

/* A profile's passes — plain, regions, then the policy's if any — or (`all` false) the policy's
 * alone; the FLOP ledger, phase, grad mode put back. REMAT_EINVAL: the model's assumptions broken. */
static RematStatus probe_passes(Probe *p, const ChainStages *stages, const TrainCtx *ctx, bool all)
{
    if (!(p->pl = calloc((size_t)p->cost->n_layers, sizeof *p->pl)))
        return remat_fail(REMAT_ENOMEM, "chain_profile: no memory for %d layers", p->cost->n_layers);
    const TrainCtx step = ctx ? *ctx : (TrainCtx){.training = true};
    const FlopCounts flops_before = flops_snapshot();
    const Phase phase = flops_set_phase(PHASE_FORWARD);
    const bool was = grad_set_enabled(true);
    RematStatus status = all ? probe_pass(p, PASS_PLAIN, stages, step) : REMAT_OK;
    if (all && status == REMAT_OK) status = probe_pass(p, PASS_REGIONS, stages, step);
    if (status == REMAT_OK && (p->policy || p->policies))
        status = probe_pass(p, PASS_POLICY, stages, step);
    grad_set_enabled(was);
    flops_restore(&flops_before);
    flops_set_phase(phase);
    probe_reset_peaks(p);
    free(p->pl);
    return status;
}

ChainCost *chain_profile_policy(Layer **layers, int n, const ChainStages *stages, const TrainCtx *ctx,
                                const Policy *policy)
{
    if (!layers || n < 1 || !stages || !stages->embed || !stages->head)
        return remat_fail_null(REMAT_EINVAL, "chain_profile: need at least one layer and both stages");
    ChainCost *cost = calloc(1, sizeof *cost);
    if (cost) *cost = (ChainCost){.n_layers = n, .layers = calloc((size_t)n, sizeof *cost->layers), .policy = policy};
    Probe p = {.layers = layers, .cost = cost, .policy = policy};
    const size_t work_before = mem_current(MEM_WORK);
    mem_reset_peaks(); /* the workspace's peak from before the step is not the step's */
    const RematStatus status = cost && cost->layers
                                   ? probe_passes(&p, stages, ctx, true)
                                   : remat_fail(REMAT_ENOMEM, "chain_profile: no memory for %d layers", n);
    if (status != REMAT_OK) {
        chain_cost_free(cost);
        return NULL;
    }
    cost->resid = p.resid;
    cost->fixed = mem_current(MEM_PARAM) + mem_current(MEM_GRAD) + mem_current(MEM_OPTIM) + mem_current(MEM_WORK);
    cost->work_peak = p.work_peak > work_before ? p.work_peak - work_before : 0;
    return cost;
}

/* ---- the op-level model (--planner ops, ops_plan.h) ------------------------------------ */

/* One forward of the chain, grad off, every layer's ops recorded; layers of one shape
 * share an entry of o->shapes. */
static RematStatus record_chain(OpsProfile *o, Layer **layers, const ChainStages *stages, TrainCtx ctx)
{
    const bool was = grad_set_enabled(false);
    Var *h = stages->embed(stages->user, &ctx);
    RematStatus status = h ? REMAT_OK : remat_last_status();
    for (int k = 0; k < o->n_layers && status == REMAT_OK; k++) {
        OpsLayer *l = &o->shapes[o->n_shapes]; /* recorded in the next free entry, zeroed */
        memset(l, 0, sizeof *l);
        Var *y = ops_record_layer(layers[k], l, h, &ctx);
        var_free(h);
        h = y;
        if (!y) status = remat_last_status();
        int s = 0; /* layers of one shape: the same ops, classes, bytes, FLOPs and readers (padding zeroed) */
        while (s < o->n_shapes && memcmp(&o->shapes[s], l, sizeof *l)) s++;
        o->shape_of[k] = s;
        o->n_shapes += s == o->n_shapes;
    }
    var_free(h);
    grad_set_enabled(was);
    return status;
}

/* The profiling passes, as few as measure each Pareto point once per set of alike layers (one
 * shape, the same figures in the plain and regions passes: not the MLP's first layer, whose input
 * needs no gradient): in pass j, the i-th of m alike layers is a region under point j·m + i, and
 * its figures are all m's. A region's figures are measured above the forward state it starts on,
 * whatever its neighbours keep (cost.h; tests/test_ops_planner.c checks them against a pass per
 * point). The passes write into a copy of the cost. */
static RematStatus measure_points(OpsProfile *o, const ChainCost *cost, Layer **layers, const ChainStages *stages,
                                  const TrainCtx *ctx)
{
    const int n = cost->n_layers;
    const Policy **policies = calloc((size_t)n, sizeof *policies);
    int *alike_to = calloc(3 * (size_t)n, sizeof *alike_to), passes = 0; /* per layer: the first alike, */
    int *rank = alike_to ? alike_to + n : NULL, *size = alike_to ? alike_to + 2 * n : NULL; /* its rank, their count */
    ChainCost scratch = *cost;
    scratch.layers = malloc((size_t)n * sizeof *scratch.layers);
    RematStatus status = policies && alike_to && scratch.layers ? REMAT_OK
                                                               : remat_fail(REMAT_ENOMEM, "planner ops: no memory");
    if (scratch.layers) memcpy(scratch.layers, cost->layers, (size_t)n * sizeof *scratch.layers);
    for (int k = 0; k < n && status == REMAT_OK; k++) {
        while (o->shape_of[alike_to[k]] != o->shape_of[k] ||
               memcmp(&cost->layers[alike_to[k]], &cost->layers[k], offsetof(ChainLayer, policy)))
            alike_to[k]++;
        rank[k] = size[alike_to[k]]++;
    }
    for (int k = 0; k < n && status == REMAT_OK; k++) /* enough passes for every set's points */
        while (passes * size[alike_to[k]] < o->n_points[o->shape_of[k]]) passes++;
    for (int j = 0; j < passes && status == REMAT_OK; j++) {
        for (int k = 0; k < n; k++) {
            const int p = j * size[alike_to[k]] + rank[k];
            policies[k] = p < o->n_points[o->shape_of[k]] ? &o->points[o->shape_of[k]][p].policy : NULL;
        }
        Probe probe = {.layers = layers, .cost = &scratch, .policies = policies}; /* the policy pass alone */
        status = probe_passes(&probe, stages, ctx, false);
        for (int k = 0; k < n && status == REMAT_OK; k++) {
            const size_t p = (size_t)(j * size[alike_to[k]] + rank[k]);
            for (int g = 0; policies[k] && g < n; g++)
                if (alike_to[g] == alike_to[k])
                    o->measured[(size_t)g * (size_t)o->max_points + p] = scratch.layers[k].policy;
        }
    }
    /* A region's RECOMPUTE FLOPs include what its layer's backward kernels redo under any
     * schedule (counter-based dropout's masks), which the prediction adds once for the whole
     * chain (kernel_recompute): what the last point, which keeps everything and so replays
     * nothing, measured. */
    for (int k = 0; k < n && status == REMAT_OK; k++) {
        SegmentFigures *m = &o->measured[(size_t)k * (size_t)o->max_points];
        const int n_points = o->n_points[o->shape_of[k]];
        const uint64_t share = m[n_points - 1].flops;
        for (int j = 0; j < n_points; j++) m[j].flops -= share;
    }
    free(scratch.layers), free(policies), free(alike_to);
    return status;
}

RematStatus chain_profile_ops(ChainCost *cost, Layer **layers, const ChainStages *stages, const TrainCtx *ctx)
{
    if (!cost || !layers || !stages || !stages->embed)
        return remat_fail(REMAT_EINVAL, "chain_profile_ops: need a chain cost, its layers and stages");
    OpsProfile *o = ops_profile_create(cost->n_layers);
    if (!o) return remat_last_status();
    const FlopCounts flops = flops_snapshot();
    RematStatus status = record_chain(o, layers, stages, ctx ? *ctx : (TrainCtx){.training = true});
    flops_restore(&flops);
    mem_reset_peaks();
    if (status == REMAT_OK) status = ops_profile_search(o);
    if (status == REMAT_OK) status = measure_points(o, cost, layers, stages, ctx);
    if (status == REMAT_OK) ops_profile_free(cost->ops), cost->ops = o, cost->ops_figures = ops_figures;
    else ops_profile_free(o);
    return status;
}

void chain_cost_free(ChainCost *cost)
{
    if (!cost) return;
    ops_profile_free(cost->ops);
    free(cost->shape);
    free(cost->layers);
    free(cost);
}
