/*
 * chain_model.c — the chain cost model (cost.h) from shapes alone: the figures
 * chain_profile.c measures by running each layer, found by walking its ops (ChainOp) as
 * the engine runs them, with sizes and no data. What it is not: a second prediction; its
 * ChainCost goes to cost.c's, as a measured one does. The rules the walk follows:
 *
 *   forward   an op allocates its output and its extras (a mask, mean and rstd) at once;
 *             a value's Var is freed after its last reader; what an op saves stays
 *             until that op's backward (with grad off nothing is saved, extras go at once)
 *   backward  in reverse: before an op runs, the engine makes a zeroed buffer for each
 *             input's gradient that has none yet; after it, the op's output gradient is
 *             freed and what it saved is released
 *   policy    a selective region's first forward runs with grad off, but the cache holds
 *             the outputs and extras of the ops its policy keeps until the forward ends,
 *             then lets go of those its replay will not read (checkpoint.c); the replay
 *             finds the rest alive, and makes a placeholder for each it let go
 *
 * Owns: nothing beyond the cost it returns, which keeps a copy of the shape (for
 * app/predict_spill.c). Touches: nothing but its arguments.
 */
#include "checkpoint/cost.h"

#include <stdlib.h>
#include <string.h>

#include "checkpoint/ops_plan.h"

/* A walk through one stage: references to each value (0 the stage's input, i + 1 op i's
 * output), the bytes alive, counted from the stage's start without its input, the op
 * running and the one that first reached the peak (their tags), and the FLOPs of its
 * forward (and of its backward kernels' RECOMPUTE). */
typedef struct Walk {
    const ChainStage *stage;
    int refs[CHAIN_MAX_OPS + 1];
    bool has_grad[CHAIN_MAX_OPS + 1];
    size_t live, peak;
    const char *op, *peak_op;
    uint64_t flops, recompute;
} Walk;

static void walk_alloc(Walk *w, size_t bytes)
{
    w->live += bytes;
    if (w->live > w->peak) w->peak = w->live, w->peak_op = w->op;
}

/* Drops a reference to value v, freeing it at the last (the input is the caller's). */
static void walk_unref(Walk *w, int v)
{
    if (v > 0 && --w->refs[v] == 0) w->live -= w->stage->ops[v - 1].out;
}

static bool has(uint32_t set, int i) { return set >> i & 1u; }

/* The stage's forward, grad on or off: w->peak its most, w->live what it leaves. A
 * value's Var holds a reference for each op that reads it, dropped as each has read it;
 * the stage's output keeps one for the caller. With `keep` (bit i: the policy keeps op i),
 * grad off is a region's first forward, grad on its replay; `needed` (bit v: the replay
 * reads value v) is what the cache still holds between the two. */
static void walk_forward(Walk *w, const ChainStage *s, bool grad, uint32_t keep, uint32_t needed)
{
    *w = (Walk){.stage = s};
    w->refs[s->n_ops] = 1;
    for (int i = 0; i < s->n_ops; i++)
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (s->ops[i].in[k] > 0) w->refs[s->ops[i].in[k]]++;
    for (int i = 0; grad && i < s->n_ops; i++) /* the cache's, alive since the first forward */
        if (has(keep, i)) w->live += (has(needed, i + 1) ? s->ops[i].out : 0) + s->ops[i].extra;
    for (int i = 0; i < s->n_ops; i++) {
        const ChainOp *op = &s->ops[i];
        const bool cached = has(keep, i), served = grad && cached; /* the replay takes it from the cache */
        w->op = op->tag;
        walk_alloc(w, !served ? op->out + op->extra : has(needed, i + 1) ? 0 : op->out); /* or a placeholder */
        if (!grad && !cached) w->live -= op->extra;
        if (!grad && cached) w->refs[i + 1]++; /* the cache's reference */
        if (grad && (op->saves & CHAIN_SAVES_OUT)) w->refs[i + 1]++;
        for (int k = 0; k < CHAIN_OP_INPUTS; k++) { /* an input of −1 is never saved */
            if (grad && (op->saves & 1u << k)) w->refs[op->in[k]]++;
            walk_unref(w, op->in[k]);
        }
        w->flops += served ? 0 : op->flops;
        w->recompute += op->recompute;
    }
    for (int i = 0; !grad && i < s->n_ops; i++)
        if (has(keep, i) && !has(needed, i + 1)) walk_unref(w, i + 1);
}

/* Of the ops whose outputs a policy keeps, the values the replay reads (bit v), as
 * checkpoint.c's cache marks them: what an op saves, what an op it recomputes reads, and
 * the stage's output. */
static uint32_t cache_needed(const ChainStage *s, uint32_t keep)
{
    uint32_t needed = 1u << s->n_ops;
    for (int i = 0; i < s->n_ops; i++) {
        const ChainOp *op = &s->ops[i];
        if (op->saves & CHAIN_SAVES_OUT) needed |= 1u << (i + 1);
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (op->in[k] > 0 && (op->saves & 1u << k || !has(keep, i))) needed |= 1u << op->in[k];
    }
    return needed;
}

/* How the stage's backward begins, after its forward with grad on: the gradient flowing
 * in is the engine's buffer, freed after the last op (ROOT_ENGINE), or a region's, alive
 * to the end and not counted, with the input's gradient there from the start (ROOT_HELD),
 * both with the output's Var gone; or the head's loss stays and its seed is alive to the
 * end (ROOT_LOSS). Otherwise the input's gradient is made when first needed. */
typedef enum Root { ROOT_ENGINE, ROOT_HELD, ROOT_LOSS } Root;

/* The most bytes alive during the backward of the stage whose forward left `w` (a copy:
 * the caller's walk is unchanged), counted as walk_forward counts them; *at (may be NULL)
 * the op whose backward first reaches it. */
static size_t walk_backward(Walk w, Root root, const char **at)
{
    const ChainStage *s = w.stage;
    const int n = s->n_ops;
    const bool ready = root == ROOT_HELD;
    if (root != ROOT_LOSS) walk_unref(&w, n);
    if (root != ROOT_HELD) w.live += s->ops[n - 1].out;
    memset(w.has_grad, 0, sizeof w.has_grad);
    w.has_grad[n] = true;
    w.has_grad[0] = ready || !s->input_grad;
    if (ready && s->input_grad) w.live += s->in_bytes;
    w.peak = w.live, w.peak_op = s->ops[n - 1].tag;
    for (int i = n - 1; i >= 0; i--) {
        const ChainOp *op = &s->ops[i];
        w.op = op->tag;
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (op->in[k] >= 0 && !w.has_grad[op->in[k]]) {
                w.has_grad[op->in[k]] = true;
                walk_alloc(&w, op->in[k] ? s->ops[op->in[k] - 1].out : s->in_bytes);
            }
        if (root == ROOT_ENGINE || i < n - 1) w.live -= op->out; /* its output's gradient */
        w.live -= op->extra;
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (op->saves & 1u << k) walk_unref(&w, op->in[k]);
        if (op->saves & CHAIN_SAVES_OUT) walk_unref(&w, i + 1);
    }
    if (at) *at = w.peak_op;
    return w.peak;
}

/* Layer k as a one-layer region under the cost's policy (cost.h): what its first forward
 * leaves (its output and the cache), and the most above S(k) from that forward to the end
 * of its backward, where the gradient flowing in (the size of its output) and the loss
 * sit under the input's gradient, the cache and the replay. */
static void model_policy_layer(const ChainCost *c, ChainLayer *l, const ChainStage *s)
{
    uint32_t keep = 0;
    for (int i = 0; i < s->n_ops; i++)
        if (c->policy->decide(s->ops[i].name, s->ops[i].tag, c->policy->user) == POLICY_SAVE) keep |= 1u << i;
    const uint32_t needed = cache_needed(s, keep);
    Walk w;
    walk_forward(&w, s, false, keep, needed);
    l->policy = (SegmentFigures){.adds = w.live, .need = w.peak, .op = w.peak_op};
    walk_forward(&w, s, true, keep, needed);
    const char *back;
    const size_t under = l->out_bytes + c->resid, backward = walk_backward(w, ROOT_HELD, &back);
    const size_t replay = max_size(l->grad_bytes + w.peak, backward);
    if (under + replay > l->policy.need) /* the replay's peak comes before the backward's */
        l->policy.need = under + replay, l->policy.op = l->grad_bytes + w.peak >= backward ? w.peak_op : back;
    l->policy.flops = w.flops;
}

/* Layer k's figures (cost.h): a forward with grad off, one with grad on, and its backward
 * run plainly and as a region's last layer. */
static void model_layer(ChainCost *c, ChainLayer *l, const ChainStage *s)
{
    Walk w;
    walk_forward(&w, s, false, 0, 0);
    const size_t nograd_peak = w.peak, out = s->ops[s->n_ops - 1].out;
    const char *nograd_op = w.peak_op;
    walk_forward(&w, s, true, 0, 0);
    *l = (ChainLayer){.in_bytes = s->in_bytes, .out_bytes = out, .grad_bytes = s->input_grad ? s->in_bytes : 0,
                      .kept = w.live, .fwd_peak = w.peak, .nograd_peak = nograd_peak, .flops = w.flops,
                      .fwd_op = w.peak_op, .nograd_op = nograd_op};
    l->back_plain = walk_backward(w, ROOT_ENGINE, &l->plain_op) - l->kept; /* kept − out + the gradient in */
    l->back_held = walk_backward(w, ROOT_HELD, &l->held_op) - (l->kept - out);
    c->forward_flops += w.flops;
    c->kernel_recompute += w.recompute;
    if (c->policy) model_policy_layer(c, l, s);
}

/* The op-level model (ops_plan.h): the layer's ops, one shape for all, and each point's
 * figures in each layer, modelled as model_policy_layer models a selective policy's. */
static RematStatus model_ops(ChainCost *c, const ChainShape *shape)
{
    OpsProfile *o = ops_profile_create(c->n_layers);
    RematStatus status = o ? ops_layer_of_stage(&shape->layer, &o->shapes[0]) : remat_last_status();
    if (status == REMAT_OK) o->n_shapes = 1, status = ops_profile_search(o);
    ChainCost one = *c;
    ChainStage layer = shape->layer;
    for (int k = 0; k < c->n_layers && status == REMAT_OK; k++) {
        layer.input_grad = k > 0 || shape->layer.input_grad;
        for (int p = 0; p < o->n_points[0]; p++) {
            ChainLayer l = c->layers[k];
            one.policy = &o->points[0][p].policy;
            model_policy_layer(&one, &l, &layer);
            o->measured[(size_t)k * (size_t)o->max_points + (size_t)p] = l.policy;
        }
    }
    if (status == REMAT_OK) c->ops = o, c->ops_figures = ops_figures;
    else ops_profile_free(o);
    return status;
}

static bool stage_ok(const ChainStage *s, int least)
{
    return s->n_ops >= least && s->n_ops <= CHAIN_MAX_OPS && (s->n_ops == 0 || s->ops);
}

/* A copy of `s` whose stages' ops follow it in the same block (one free). NULL: no memory. */
static ChainShape *shape_copy(const ChainShape *s)
{
    ChainShape *c = malloc(sizeof *c + (size_t)(s->embed.n_ops + s->layer.n_ops + s->head.n_ops) * sizeof(ChainOp));
    if (!c) return NULL;
    *c = *s;
    ChainOp *op = (ChainOp *)(c + 1);
    ChainStage *stages[] = {&c->embed, &c->layer, &c->head};
    for (int i = 0; i < 3; i++) {
        if (stages[i]->n_ops) memcpy(op, stages[i]->ops, (size_t)stages[i]->n_ops * sizeof *op);
        stages[i]->ops = op;
        op += stages[i]->n_ops;
    }
    return c;
}

ChainCost *chain_model(const ChainShape *shape)
{
    if (!shape || shape->n_layers < 1 || !stage_ok(&shape->embed, 0) || !stage_ok(&shape->layer, 1) ||
        !stage_ok(&shape->head, 1))
        return remat_fail_null(REMAT_EINVAL, "chain_model: need at least one layer and a head, each of 1 to %d ops",
                               CHAIN_MAX_OPS);
    ChainCost *c = calloc(1, sizeof *c);
    ChainLayer *layers = calloc((size_t)shape->n_layers, sizeof *layers);
    ChainShape *copy = shape_copy(shape);
    if (!c || !layers || !copy) {
        free(c), free(layers), free(copy);
        return remat_fail_null(REMAT_ENOMEM, "chain_model: no memory for %d layers", shape->n_layers);
    }
    const ChainStage *head = &shape->head;
    *c = (ChainCost){.n_layers = shape->n_layers, .layers = layers, .base = shape->base, .fixed = shape->fixed,
                     .work_peak = shape->work_peak, .policy = shape->policy, .shape = copy,
                     .resid = 2 * head->ops[head->n_ops - 1].out}; /* the loss and its seed */
    ChainStage layer = shape->layer;
    for (int k = 0; k < shape->n_layers; k++) {
        layer.input_grad = k > 0 || shape->layer.input_grad;
        model_layer(c, &layers[k], &layer);
    }
    /* The stages around the chain: the embed stage (none: x_0 is the batch) and the head. */
    Walk w;
    walk_forward(&w, &shape->embed, true, 0, 0);
    c->embed = w.live;
    c->embed_peak = w.peak, c->embed_op = w.peak_op;
    c->tail_peak = shape->base + c->resid + (shape->embed.n_ops > 0 ? walk_backward(w, ROOT_ENGINE, &c->tail_op) : 0);
    c->forward_flops += w.flops;
    c->kernel_recompute += w.recompute;
    walk_forward(&w, head, true, 0, 0);
    c->head_kept = w.live;
    c->head_peak = walk_backward(w, ROOT_LOSS, &c->head_op);
    if (w.peak >= c->head_peak) c->head_peak = w.peak, c->head_op = w.peak_op; /* its forward's comes first */
    c->forward_flops += w.flops;
    c->kernel_recompute += w.recompute;
    if (!shape->ops || model_ops(c, shape) == REMAT_OK) return c;
    chain_cost_free(c);
    return NULL;
}
