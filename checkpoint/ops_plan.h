/*
 * ops_plan.h — the op-level planner's model of a layer (--planner ops): its ops as one
 * forward measured them, what a keep-set of them (the classes (op, tag) a policy saves)
 * keeps and recomputes in a region's replay, the exact search of its keep-sets, and each
 * Pareto point's figures as its region measured them (checkpoint/README.md, "--planner ops").
 */
#ifndef REMAT_CHECKPOINT_OPS_PLAN_H
#define REMAT_CHECKPOINT_OPS_PLAN_H

#include "checkpoint/cost.h"

enum { OPS_MAX_CLASSES = 24, OPS_MAX_OPS = 48, OPS_MAX_OUTPUTS = 4, OPS_NAME_LEN = 32 };

/* One op of a layer, as its forward ran. */
typedef struct OpsOp {
    int cls;                           /* its class, an index into OpsLayer's */
    uint64_t flops;                    /* its forward FLOPs: what recomputing it costs */
    int n_out;
    size_t bytes[OPS_MAX_OUTPUTS];     /* each output's bytes */
    bool read_back[OPS_MAX_OUTPUTS];   /* saved by some op's backward (the layer's output is kept anyway) */
    uint32_t readers[OPS_MAX_OUTPUTS]; /* bit c: an op of class c reads it */
} OpsOp;

/* A layer's ops in forward order, and their classes: what a policy decides on. */
typedef struct OpsLayer {
    int n_classes, n_ops;
    char op[OPS_MAX_CLASSES][OPS_NAME_LEN], tag[OPS_MAX_CLASSES][OPS_NAME_LEN]; /* tag "" for none */
    OpsOp ops[OPS_MAX_OPS];
} OpsLayer;

/* A keep-set of a layer and its figures; its `policy` runs it (user: the point). */
typedef struct OpsPoint {
    uint32_t keep;         /* bit c: class c saved */
    size_t kept;           /* kept(K), the cache's bytes */
    uint64_t flops;        /* flops(K), the replay's */
    const OpsLayer *layer; /* the shape it is a point of */
    Policy policy;         /* named by what it keeps: "keeps attn.qkv, ..." */
    char name[360];
} OpsPoint;

/* The figures kept(K) and flops(K) of keep-set `keep` of layer `l`. */
void ops_evaluate(const OpsLayer *l, uint32_t keep, size_t *kept, uint64_t *flops);

/* The Pareto set of layer `l`'s keep-sets over (kept bytes, recompute FLOPs), by kept
 * bytes rising (FLOPs falling); of keep-sets with equal figures, the one of the smallest
 * mask. *points (the caller frees it) gets *n points, each with its policy. REMAT_EINVAL
 * for a layer of more than OPS_MAX_CLASSES classes; REMAT_ENOMEM. */
RematStatus ops_layer_pareto(const OpsLayer *l, OpsPoint **points, int *n);

/* The op-level model of a chain (chain_profile_ops in cost.h measures it, chain_model
 * computes it from shapes; a ChainCost holds it): each layer's shape, each shape's Pareto
 * set, each layer's points as measured. */
typedef struct OpsProfile {
    int n_layers, n_shapes, max_points;
    OpsLayer *shapes;         /* the distinct layers */
    int *shape_of, *n_points; /* per layer, its shape; per shape, its points */
    OpsPoint **points;        /* per shape: its Pareto set */
    SegmentFigures *measured; /* [layer][point]: a one-layer region under the point, as measured */
} OpsProfile;

/* Layer `layer`'s forward on x (grad off, as a region's first forward) with its ops
 * recorded into `l` (zeroed by the caller); returns its output. NULL on error: REMAT_EINVAL
 * naming a layer whose ops the model cannot hold, or the layer's own error. */
Var *ops_record_layer(Layer *layer, OpsLayer *l, Var *x, TrainCtx *ctx);

/* Layer stage s's ops (cost.h: ChainOp) as `l`, as ops_record_layer records them with
 * sizes and no data: an op's extras are one output it saves. REMAT_EINVAL for more classes
 * than OPS_MAX_CLASSES, or a name too long. */
RematStatus ops_layer_of_stage(const ChainStage *s, OpsLayer *l);

/* An op-level model of n_layers layers with nothing in it yet (NULL: REMAT_ENOMEM); then,
 * once its shapes are in, each shape's Pareto set searched and `measured` made, zeroed. */
OpsProfile *ops_profile_create(int n_layers);
RematStatus ops_profile_search(OpsProfile *o);

/* The figures of layer k under `policy`; NULL when it is no point of layer k's shape (or
 * there is no model, o NULL). */
const SegmentFigures *ops_figures(const OpsProfile *o, int k, const Policy *policy);

/* Layer k's Pareto points (NULL, *n = 0 without an op-level model). */
const OpsPoint *ops_points(const OpsProfile *o, int k, int *n);

void ops_profile_free(OpsProfile *ops);

#endif /* REMAT_CHECKPOINT_OPS_PLAN_H */
