/*
 * ops_plan.c — the op-level planner's layer model (ops_plan.h): recording a layer's ops,
 * the exact search of its keep-sets, and reading the OpsProfile a ChainCost holds (which
 * chain_profile.c measures, a profiling pass per Pareto point); planner.c's DP searches the
 * chain.
 */
#include "checkpoint/ops_plan.h"

#include <stdlib.h>
#include <string.h>

/* ---- the search ------------------------------------------------------------------------ */

void ops_evaluate(const OpsLayer *l, uint32_t keep, size_t *kept, uint64_t *flops)
{
    *kept = 0, *flops = 0;
    for (int i = 0; i < l->n_ops; i++) {
        const OpsOp *o = &l->ops[i];
        const bool saved = keep >> o->cls & 1u;
        if (!saved) *flops += o->flops; /* not saved: it runs again in the replay */
        for (int j = 0; saved && j < o->n_out; j++) /* saved: kept if the replay reads it */
            if (o->read_back[j] || (o->readers[j] & ~keep)) *kept += o->bytes[j];
    }
}

typedef struct Eval { size_t kept; uint64_t flops; uint32_t keep; } Eval; /* a keep-set, while searching */

/* By bytes kept, then FLOPs, then mask. */
static int compare_evals(const void *x, const void *y)
{
    const Eval *a = x, *b = y;
    if (a->kept != b->kept) return a->kept < b->kept ? -1 : 1;
    if (a->flops != b->flops) return a->flops < b->flops ? -1 : 1;
    return (a->keep > b->keep) - (a->keep < b->keep);
}

/* "keeps attn.qkv, mlp.fc": each class kept, by its tag (or its op when it has none). */
static void point_name(OpsPoint *p)
{
    const OpsLayer *l = p->layer;
    size_t at = (size_t)snprintf(p->name, sizeof p->name, "keeps%s", p->keep ? "" : " nothing");
    for (int c = 0; c < l->n_classes && at < sizeof p->name; c++)
        if (p->keep >> c & 1u)
            at += (size_t)snprintf(p->name + at, sizeof p->name - at, "%s %s", at > 5 ? "," : "",
                                   l->tag[c][0] ? l->tag[c] : l->op[c]);
}

/* The class (op, tag) of layer `l`, or −1. */
static int find_class(const OpsLayer *l, const char *op, const char *tag)
{
    for (int c = 0; c < l->n_classes; c++)
        if (!strcmp(op, l->op[c]) && !strcmp(tag ? tag : "", l->tag[c])) return c;
    return -1;
}

static PolicyDecision point_decide(const char *op, const char *tag, void *user)
{
    const OpsPoint *p = user;
    const int c = find_class(p->layer, op, tag);
    return c >= 0 && p->keep >> c & 1u ? POLICY_SAVE : POLICY_RECOMPUTE;
}

RematStatus ops_layer_pareto(const OpsLayer *l, OpsPoint **points, int *n)
{
    *points = NULL, *n = 0;
    if (!l || l->n_classes < 1 || l->n_classes > OPS_MAX_CLASSES)
        return remat_fail(REMAT_EINVAL, "planner ops: a layer needs 1 to %d op classes to search, this one has %d",
                          OPS_MAX_CLASSES, l ? l->n_classes : 0);
    const uint32_t count = 1u << l->n_classes;
    Eval *all = malloc(count * sizeof *all);
    if (!all) return remat_fail(REMAT_ENOMEM, "planner ops: no memory for %u keep-sets", count);
    int m = 0;
    for (uint32_t keep = 0; keep < count; keep++)
        all[keep].keep = keep, ops_evaluate(l, keep, &all[keep].kept, &all[keep].flops);
    /* The Pareto set: by bytes rising, each keep-set that recomputes less than all before. */
    qsort(all, count, sizeof *all, compare_evals);
    for (uint32_t i = 0; i < count; i++)
        if (m == 0 || all[i].flops < all[m - 1].flops) all[m++] = all[i];
    OpsPoint *p = calloc((size_t)m, sizeof *p);
    for (int i = 0; p && i < m; i++) {
        p[i] = (OpsPoint){.keep = all[i].keep, .kept = all[i].kept, .flops = all[i].flops, .layer = l};
        point_name(&p[i]);
        p[i].policy = (Policy){.name = p[i].name, .decide = point_decide, .user = &p[i]};
    }
    free(all);
    if (!p) return remat_fail(REMAT_ENOMEM, "planner ops: no memory for %d points", m);
    *points = p;
    *n = m;
    return REMAT_OK;
}

/* ---- recording a layer's ops ----------------------------------------------------------- */

/* The op hooks of the recording forward: each output retained until its layer is done, so
 * that a reader finds its producer by identity (no freed address is reused meanwhile). */
typedef struct Recorder {
    OpsLayer *layer;
    Tensor *outs[OPS_MAX_OPS][OPS_MAX_OUTPUTS];
    uint64_t flops_mark; /* FORWARD FLOPs when the last op was recorded */
    bool failed;
} Recorder;

/* The class (op, tag) of layer `l`, added if new; −1 when it cannot be. */
static int class_of(OpsLayer *l, const char *op, const char *tag)
{
    const int found = find_class(l, op, tag);
    tag = tag ? tag : "";
    if (found >= 0 || l->n_classes == OPS_MAX_CLASSES || strlen(op) >= OPS_NAME_LEN || strlen(tag) >= OPS_NAME_LEN)
        return found;
    snprintf(l->op[l->n_classes], OPS_NAME_LEN, "%s", op);
    snprintf(l->tag[l->n_classes], OPS_NAME_LEN, "%s", tag);
    return l->n_classes++;
}

static RematStatus record_output(void *ctx, const OpInfo *op, const char *tag, int index, Tensor *out)
{
    Recorder *r = ctx;
    OpsLayer *l = r->layer;
    if (index == 0 && l->n_ops < OPS_MAX_OPS) l->ops[l->n_ops++].cls = class_of(l, op->name, tag); /* member stores */
    OpsOp *o = &l->ops[l->n_ops > 0 ? l->n_ops - 1 : 0];
    if (r->failed || o->cls < 0 || index != o->n_out || index >= OPS_MAX_OUTPUTS) {
        r->failed = true; /* ops_record_layer says which layer */
        return remat_fail(REMAT_EINVAL, "planner ops: an op the layer model cannot hold");
    }
    o->bytes[index] = out->bytes;
    r->outs[l->n_ops - 1][o->n_out++] = tensor_retain(out);
    return REMAT_OK;
}

/* Marks every output of the layer that is `t`: read back, or read by class `reader`. */
static void mark_read(Recorder *r, const Tensor *t, bool read_back, uint32_t reader)
{
    for (int i = 0; t && i < r->layer->n_ops; i++)
        for (int j = 0; j < r->layer->ops[i].n_out; j++)
            if (r->outs[i][j] == t) r->layer->ops[i].read_back[j] |= read_back, r->layer->ops[i].readers[j] |= reader;
}

static void record_op(void *ctx, const OpInfo *op, const char *tag, Var *const *inputs, int n_inputs,
                      Tensor *const *saved, int n_saved, const Tensor *out)
{
    (void)op, (void)tag, (void)out;
    Recorder *r = ctx;
    if (r->failed || r->layer->n_ops == 0) return;
    OpsOp *o = &r->layer->ops[r->layer->n_ops - 1];
    o->flops = flops_get(PHASE_FORWARD) - r->flops_mark; /* since the op before */
    r->flops_mark += o->flops;
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i]) mark_read(r, inputs[i]->value, false, 1u << o->cls);
    for (int i = 0; i < n_saved; i++) mark_read(r, saved[i], true, 0);
}

Var *ops_record_layer(Layer *layer, OpsLayer *l, Var *x, TrainCtx *ctx)
{
    Recorder r = {.layer = l, .flops_mark = flops_get(PHASE_FORWARD)};
    const OpHooks hooks = {.name = "planner ops", .observe = record_output, .recorded = record_op, .ctx = &r};
    const bool pushed = op_hooks_push(&hooks) == REMAT_OK;
    Var *y = pushed ? layers_forward(&layer, 1, x, ctx) : NULL;
    if (pushed) op_hooks_pop();
    for (int i = 0; i < l->n_ops; i++)
        for (int j = 0; j < l->ops[i].n_out; j++) tensor_free(r.outs[i][j]);
    if (!r.failed) return y;
    var_free(y);
    return remat_fail_null(REMAT_EINVAL, "planner ops: layer %s has ops its model cannot hold (at most %d ops, %d "
                           "classes (op, tag), %d outputs an op, names under %d characters)", layer->name, OPS_MAX_OPS,
                           OPS_MAX_CLASSES, OPS_MAX_OUTPUTS, OPS_NAME_LEN);
}

/* ---- a layer's ops from its shapes -------------------------------------------------------- */

RematStatus ops_layer_of_stage(const ChainStage *s, OpsLayer *l)
{
    _Static_assert((int)CHAIN_MAX_OPS <= (int)OPS_MAX_OPS, "a stage's ops fit a layer's");
    memset(l, 0, sizeof *l);
    for (int i = 0; i < s->n_ops; i++) {
        const ChainOp *op = &s->ops[i];
        const int cls = class_of(l, op->name, op->tag);
        if (cls < 0)
            return remat_fail(REMAT_EINVAL, "planner ops: a layer of more than %d classes (op, tag), or a name of "
                              "%d characters or more: the layer model cannot hold it", OPS_MAX_CLASSES, OPS_NAME_LEN);
        l->ops[l->n_ops++] = (OpsOp){.cls = cls, .flops = op->flops, .n_out = op->extra ? 2 : 1,
                                     .bytes = {op->out, op->extra}, /* its extras, saved by itself */
                                     .read_back = {op->saves & CHAIN_SAVES_OUT, true}};
        for (int k = 0; k < CHAIN_OP_INPUTS; k++) { /* what it reads of the ops before it, and saves */
            if (op->in[k] <= 0) continue;
            l->ops[op->in[k] - 1].readers[0] |= 1u << cls;
            l->ops[op->in[k] - 1].read_back[0] |= (op->saves >> k & 1u) != 0;
        }
    }
    return REMAT_OK;
}

/* ---- reading it ------------------------------------------------------------------------- */

OpsProfile *ops_profile_create(int n_layers)
{
    OpsProfile *o = calloc(1, sizeof *o);
    if (o) *o = (OpsProfile){.n_layers = n_layers, .shapes = calloc((size_t)n_layers, sizeof(OpsLayer)),
                             .shape_of = calloc((size_t)n_layers, sizeof(int)),
                             .n_points = calloc((size_t)n_layers, sizeof(int)),
                             .points = calloc((size_t)n_layers, sizeof(OpsPoint *))};
    if (o && o->shapes && o->shape_of && o->points && o->n_points) return o;
    ops_profile_free(o);
    return remat_fail_null(REMAT_ENOMEM, "planner ops: no memory for %d layers", n_layers);
}

RematStatus ops_profile_search(OpsProfile *o)
{
    for (int s = 0; s < o->n_shapes; s++) {
        if (ops_layer_pareto(&o->shapes[s], &o->points[s], &o->n_points[s]) != REMAT_OK) return remat_last_status();
        if (o->n_points[s] > o->max_points) o->max_points = o->n_points[s];
    }
    if ((o->measured = calloc((size_t)o->n_layers * (size_t)o->max_points, sizeof *o->measured))) return REMAT_OK;
    return remat_fail(REMAT_ENOMEM, "planner ops: no memory for %d points", o->max_points);
}

const OpsPoint *ops_points(const OpsProfile *o, int k, int *n)
{
    *n = o && k >= 0 && k < o->n_layers ? o->n_points[o->shape_of[k]] : 0;
    return *n ? o->points[o->shape_of[k]] : NULL;
}

const SegmentFigures *ops_figures(const OpsProfile *o, int k, const Policy *policy)
{
    int n;
    const OpsPoint *points = ops_points(o, k, &n);
    const OpsPoint *p = points && policy && policy->decide == point_decide ? policy->user : NULL;
    if (!p || p->layer != points[0].layer) return NULL; /* no point, or one of another shape */
    return &o->measured[(size_t)k * (size_t)o->max_points + (size_t)(p - points)];
}

void ops_profile_free(OpsProfile *o)
{
    if (!o) return;
    for (int s = 0; o->points && s < o->n_layers; s++) free(o->points[s]);
    free(o->points), free(o->n_points), free(o->shape_of), free(o->shapes), free(o->measured), free(o);
}
