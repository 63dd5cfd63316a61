/*
 * chain_model.c — the chain cost model (cost.h) computed from shapes alone: the figures
 * chain_profile.c measures by running a layer, found instead by walking the layer's ops
 * as the engine would run them, with sizes and no data. What it is not: a second
 * prediction. Its ChainCost goes to the one prediction of cost.c, as a measured one does.
 *
 * Each stage (the embed stage, a layer, the head) is a list of ops in forward order
 * (ChainOp in cost.h). The walk follows the rules the model files and the engine keep:
 *
 *   forward   an op allocates its output and its extras (a mask, mean and rstd) at once;
 *             a value's Var is freed after its last reader; what an op saves stays
 *             until that op's backward (with grad off nothing is saved, extras go at once)
 *   backward  in reverse: before an op runs, the engine makes a zeroed buffer for each
 *             input's gradient that has none yet; after it, the op's output gradient is
 *             freed and what it saved is released
 *
 * Owns: nothing beyond the cost it returns. Touches: nothing but its arguments.
 */
#include "checkpoint/cost.h"

#include <stdlib.h>
#include <string.h>

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* A walk through one stage: references to each value (0 the stage's input, i + 1 op i's
 * output) and the bytes alive, counted from the stage's start without its input. */
typedef struct Walk {
    const ChainStage *stage;
    int refs[CHAIN_MAX_OPS + 1];
    bool has_grad[CHAIN_MAX_OPS + 1];
    size_t live, peak;
} Walk;

static size_t value_bytes(const ChainStage *s, int v)
{
    return v ? s->ops[v - 1].out : s->in_bytes;
}

static void walk_alloc(Walk *w, size_t bytes)
{
    w->live += bytes;
    w->peak = max_size(w->peak, w->live);
}

/* Drops a reference to value v, freeing it at the last (the input is the caller's). */
static void walk_unref(Walk *w, int v)
{
    if (v > 0 && --w->refs[v] == 0) w->live -= value_bytes(w->stage, v);
}

static bool read_after(const ChainStage *s, int i, int v)
{
    for (int j = i + 1; j < s->n_ops; j++)
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (s->ops[j].in[k] == v) return true;
    return false;
}

/* The stage's forward, grad on or off: w->peak its most, w->live what it leaves. */
static void walk_forward(Walk *w, const ChainStage *s, bool grad)
{
    *w = (Walk){.stage = s};
    for (int i = 0; i < s->n_ops; i++) {
        const ChainOp *op = &s->ops[i];
        walk_alloc(w, op->out + op->extra);
        if (!grad) w->live -= op->extra;
        w->refs[i + 1] = 1 + (grad && (op->saves & CHAIN_SAVES_OUT));
        for (int k = 0; k < CHAIN_OP_INPUTS; k++) {
            const int v = op->in[k];
            if (v < 0) continue;
            if (grad && (op->saves & 1u << k)) w->refs[v]++;
            if (!read_after(s, i, v)) walk_unref(w, v);
        }
    }
}

/* How the stage's backward begins, after its forward with grad on:
 *   ROOT_PLAIN   its output's Var is gone; the gradient flowing in (the engine's buffer,
 *                made by the stage after) is alive and freed after the last op; the
 *                input's gradient is made when first needed;
 *   ROOT_REGION  a region's replay: the output's Var is gone, the gradient flowing in is
 *                the region's (alive to the end, not counted), the input's is ready;
 *   ROOT_LOSS    the head: the loss stays, its seed (the loss's size) is alive to the end. */
typedef enum Root { ROOT_PLAIN, ROOT_REGION, ROOT_LOSS } Root;

/* The stage's backward: the most bytes alive, counted as walk_forward counts them. */
static size_t walk_backward(Walk *w, Root root)
{
    const ChainStage *s = w->stage;
    const int n = s->n_ops;
    if (root != ROOT_LOSS) walk_unref(w, n);
    if (root != ROOT_REGION) w->live += s->ops[n - 1].out;
    memset(w->has_grad, 0, sizeof w->has_grad);
    w->has_grad[n] = true;
    w->has_grad[0] = root == ROOT_REGION || !s->input_grad;
    if (root == ROOT_REGION && s->input_grad) w->live += s->in_bytes;
    w->peak = w->live;
    for (int i = n - 1; i >= 0; i--) {
        const ChainOp *op = &s->ops[i];
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (op->in[k] >= 0 && !w->has_grad[op->in[k]]) {
                w->has_grad[op->in[k]] = true;
                walk_alloc(w, value_bytes(s, op->in[k]));
            }
        if (root == ROOT_PLAIN || i < n - 1) w->live -= op->out; /* its output's gradient */
        w->live -= op->extra;
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (op->saves & 1u << k) walk_unref(w, op->in[k]);
        if (op->saves & CHAIN_SAVES_OUT) walk_unref(w, i + 1);
    }
    return w->peak;
}

static uint64_t stage_flops(const ChainStage *s, uint64_t *recompute)
{
    uint64_t f = 0;
    for (int i = 0; i < s->n_ops; i++) {
        f += s->ops[i].flops;
        *recompute += s->ops[i].recompute;
    }
    return f;
}

/* Layer k's figures (cost.h), its forward FLOPs added to the cost's. */
static void model_layer(ChainCost *c, ChainLayer *l, const ChainStage *s)
{
    Walk w, back;
    walk_forward(&w, s, false);
    const size_t nograd_peak = w.peak;
    walk_forward(&w, s, true);
    const size_t out = s->ops[s->n_ops - 1].out;
    *l = (ChainLayer){.in_bytes = s->in_bytes, .out_bytes = out, .grad_bytes = s->input_grad ? s->in_bytes : 0,
                      .kept = w.live, .fwd_peak = w.peak, .nograd_peak = nograd_peak,
                      .flops = stage_flops(s, &c->kernel_recompute)};
    back = w;
    l->back_plain = walk_backward(&back, ROOT_PLAIN) - l->kept; /* above kept − out + the gradient in */
    back = w;
    l->back_held = walk_backward(&back, ROOT_REGION) - (l->kept - out);
    c->forward_flops += l->flops;
}

/* The stages around the chain: the embed stage (none: x_0 is the batch) and the head. */
static void model_stages(ChainCost *c, const ChainShape *shape)
{
    Walk w;
    const ChainStage *embed = &shape->embed, *head = &shape->head;
    c->resid = 2 * head->ops[head->n_ops - 1].out; /* the loss and its seed */
    c->tail_peak = shape->base + c->resid;
    if (embed->n_ops > 0) {
        walk_forward(&w, embed, true);
        c->embed = w.live;
        c->embed_peak = w.peak;
        c->tail_peak += walk_backward(&w, ROOT_PLAIN);
        c->forward_flops += stage_flops(embed, &c->kernel_recompute);
    }
    walk_forward(&w, head, true);
    c->head_peak = w.peak;
    c->head_peak = max_size(c->head_peak, walk_backward(&w, ROOT_LOSS));
    c->forward_flops += stage_flops(head, &c->kernel_recompute);
}

static bool stage_ok(const ChainStage *s, bool may_be_empty)
{
    if (s->n_ops < 0 || s->n_ops > CHAIN_MAX_OPS || (s->n_ops > 0 && !s->ops)) return false;
    for (int i = 0; i < s->n_ops; i++)
        for (int k = 0; k < CHAIN_OP_INPUTS; k++)
            if (s->ops[i].in[k] > i) return false; /* an op reads only what came before it */
    return may_be_empty || s->n_ops > 0;
}

ChainCost *chain_model(const ChainShape *shape)
{
    bool ok = shape && shape->n_layers >= 1 && shape->layers && stage_ok(&shape->embed, true) &&
              stage_ok(&shape->head, false);
    for (int k = 0; ok && k < shape->n_layers; k++) ok = stage_ok(&shape->layers[k], false);
    if (!ok)
        return remat_fail_null(REMAT_EINVAL, "chain_model: need at least one layer and a head, each of 1 to %d ops "
                               "that read only what came before them", CHAIN_MAX_OPS);
    ChainCost *c = calloc(1, sizeof *c);
    ChainLayer *layers = calloc((size_t)shape->n_layers, sizeof *layers);
    if (!c || !layers) {
        free(c), free(layers);
        return remat_fail_null(REMAT_ENOMEM, "chain_model: no memory for %d layers", shape->n_layers);
    }
    *c = (ChainCost){.n_layers = shape->n_layers, .layers = layers, .base = shape->base, .fixed = shape->fixed,
                     .work_peak = shape->work_peak};
    for (int k = 0; k < shape->n_layers; k++) model_layer(c, &layers[k], &shape->layers[k]);
    model_stages(c, shape);
    return c;
}
