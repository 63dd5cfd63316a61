/*
 * cost.h — the chain cost model: what each layer of a chain holds and computes, measured
 * by one profiling step, and the prediction of any schedule's peak activation memory and
 * RECOMPUTE FLOPs from it. The planners (planner.h) search over these predictions.
 *
 * A schedule (schedule.h) cuts the chain x_0 ─layer 0─▶ x_1 ─ … ─layer L−1─▶ x_L into plain
 * segments and regions (adjacent plain layers act as one).
 *
 * ---- the cost model -------------------------------------------------------------------
 *
 * One profiling step on one batch, run twice — every layer plainly, then every layer its
 * own region — reads the ledgers around each stage (chain_profile_policy). Twice, because a
 * layer's backward holds different things in the two cases: plainly, the gradient flowing
 * in is freed after the layer's last op; as a region's last layer, it stays alive to the
 * end. Per layer k it measures:
 *
 *   in_k, out_k  bytes of x_k and x_{k+1}
 *   g_k          bytes of x_k's gradient buffer (0 when x_k needs none: the MLP's input)
 *   kept_k       what the layer holds after a forward with grad on, its input aside: the
 *                tensors its ops saved plus its output
 *   fwd_k        the most ACT above its start during that forward (grad on)
 *   ng_k         the same for a forward with grad off (a region's first forward)
 *   back_k       the most ACT above "kept_k − out_k + what was there before" during its
 *                backward, including the allocation of g_k: back_plain_k run plainly,
 *                back_held_k as a region's last layer
 *   flops_k      its forward FLOPs, which is what it costs to recompute
 *
 * and for the stages around the chain: base (ACT before the step: the batch), embed
 * (what the embed stage leaves, x_0 included) and its peak, the head's peak above its
 * start through its backward, what backward holds besides (the loss and its seed), and
 * the peak once the chain's backward is done (the embed stage's backward, the same for
 * every schedule).
 *
 * The forward state before layer k is S(k): S(0) = base + embed; a plain layer adds
 * kept_k; a region [a, b] adds only out_b (it keeps x_a, already counted). The predicted
 * peak ACT is the largest of these moments (R = the loss and its seed):
 *
 *   embed          base + embed_peak
 *   plain k        S(k) + fwd_k                                          (forward)
 *                  S(k) + kept_k − out_k + g_{k+1} + R + back_plain_k     (backward)
 *   region [a,b]   S(a) + ng_a;  S(a) + in_k + ng_k for a < k ≤ b          (first forward)
 *                  P + g_a + Σ_{i=a}^{k−1} kept_i + fwd_k                   (replay of k)
 *                  P + [k > a or k < b]·g_a + Σ_{i=a}^{k} kept_i − out_k
 *                    + [k < b]·(g_{k+1} + back_plain_k) + [k = b]·back_held_k (backward of k)
 *                  with P = S(a) + g_{b+1} + R: the kept inputs, the gradient flowing
 *                  in, and the loss. (For k = a < b, g_a is counted although back_plain_a
 *                  counts it too: plainly it may come late, in a region it is there from
 *                  the start; the sum is an upper bound, never reached first on the MLP.)
 *   head           S(L) + head_peak
 *   after          tail_peak                                   (the embed stage's backward)
 *
 * In words: the inputs kept so far, plus the segment being recomputed, plus what its
 * backward holds at once (gradients in and out, the layer's transient). RECOMPUTE FLOPs
 * are Σ flops_k over the layers in regions, plus what backward kernels redo whatever the
 * schedule (fused attention's probabilities, counter-based dropout's masks), measured
 * once by the plain pass.
 *
 * Selective recomputation: a region with a policy keeps the outputs the policy caches
 * besides its input, and its replay recomputes only the rest. Profiled with a policy
 * (chain_profile_policy: a third pass, every layer its own region under that policy), the
 * model measures per layer what such a region adds to the forward state (policy_adds_k:
 * its output and its cache) and the most ACT above S(k) from its first forward to the end
 * of its backward (policy_need_k), and the FLOPs its replay recomputes:
 *
 *   policy region [k, k]   S(k) + policy_need_k;   S(k+1) = S(k) + policy_adds_k
 *
 * chain_model computes the same three figures from the layer's ops, deciding per op by
 * its name and tag as the policy does; its FLOPs leave out what the layer's backward
 * kernels redo, which kernel_recompute counts once for the whole chain.
 *
 * The model assumes what both of remat's models do: every layer keeps its own input for
 * backward (its first op is a linear or a LayerNorm) and hands its output to the next
 * layer without keeping it (its last op is a residual add). chain_profile_policy checks both and
 * refuses a chain that breaks them.
 *
 * Exactness: on the MLP chain the prediction equals the ledger to the byte for every
 * schedule tests/test_planner.c tries (fixed, random and planned). On the GPT it is an
 * upper bound that can be high by at most one block input (B·T·C floats): a block's input
 * gradient is allocated only when backward reaches the attention residual, half way
 * through the block, while the profile's one-layer region holds it from the start of the
 * block's backward. tests/test_planner.c measures both.
 *
 * ---- Revolve over the chain ------------------------------------------------------------
 *
 * Revolve's schedules (revolve.h) assume a uniform chain, read off the same model: layers
 * 1 … L−1 measured alike in every figure, and layer 0 like them in all but what its
 * backward holds (the chain's input may need no gradient, as the MLP's does not). Its
 * executor's moments are predicted by walking its actions (cost.c), and the stages around
 * the chain are added as above, so a budget means the same for all three planners:
 *
 *   forward        S(0) − in_0 + the executor's forward peak   (it counts x_0 itself)
 *   head           S(0) − in_0 + what the executor keeps + out + head_peak
 *   chain backward S(0) − in_0 + R + the executor's backward peak
 *   embed, after   as for any schedule
 */
#ifndef REMAT_CHECKPOINT_COST_H
#define REMAT_CHECKPOINT_COST_H

#include <stddef.h>
#include <stdint.h>

#include "checkpoint/schedule.h"

/* ---- the chain model ------------------------------------------------------------------- */

/* The larger of two byte counts: every peak here is one. */
static inline size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

typedef struct OpsProfile OpsProfile; /* the op-level planner's figures (ops_plan.h) */

/* A segment in the model: what it adds to the forward state S at its start, the most ACT
 * above S from its first forward to the end of its backward, and the FLOPs its replay
 * recomputes; and where `need` is reached: the op about to run (its tag) and its layer
 * (chain_model's; NULL when measured). */
typedef struct SegmentFigures {
    size_t adds, need;
    uint64_t flops;
    const char *op;
    int op_layer;
} SegmentFigures;

typedef struct ChainLayer {
    size_t in_bytes, out_bytes; /* x_k and x_{k+1} */
    size_t grad_bytes;          /* g_k: x_k's gradient, 0 when x_k needs none */
    size_t kept;                /* kept_k */
    size_t fwd_peak;            /* fwd_k */
    size_t nograd_peak;         /* ng_k */
    size_t back_plain;          /* back_k of a plain layer (the gradient in is freed after its last op) */
    size_t back_held;           /* back_k of a region's last layer (the gradient in stays to the end) */
    uint64_t flops;             /* flops_k */
    const char *fwd_op, *nograd_op, *plain_op, *held_op; /* the op at each peak (its tag): chain_model's */
    SegmentFigures policy;      /* layer k as a one-layer region with the cost's policy
                                   (selective recomputation), when one was profiled: it adds
                                   its output and the outputs the policy caches */
} ChainLayer;

typedef struct ChainCost {
    int n_layers;
    ChainLayer *layers;  /* n_layers, owned */
    size_t base;         /* ACT before the step (the batch) */
    size_t embed;        /* what the embed stage leaves, x_0 included */
    size_t embed_peak;   /* the most ACT above base during the embed stage */
    size_t head_peak;    /* the most ACT above S(L) during the head's forward and backward */
    size_t head_kept;    /* what the head's forward leaves above S(L) for its backward (the loss among it) */
    size_t resid;        /* what backward holds besides: the loss and its seed */
    size_t tail_peak;    /* the most ACT once the chain's backward is done (the embed stage's) */
    const char *embed_op, *head_op, *tail_op; /* the op at each of these peaks: chain_model's */
    size_t fixed;        /* params + grads + optimizer + workspace in use, after the step */
    size_t work_peak;    /* the most kernel scratch above that during the step */
    uint64_t forward_flops; /* FORWARD FLOPs of a step without checkpointing */
    uint64_t kernel_recompute; /* RECOMPUTE FLOPs a step's backward does inside its kernels
                                  (fused attention's tiles, counter-based dropout's masks):
                                  every layer's backward runs once under any schedule, so
                                  every schedule pays them alike */
    const Policy *policy;   /* the selective policy profiled (ChainLayer.policy), or NULL */
    OpsProfile *ops;        /* per layer, its keep-sets' figures (chain_profile_ops, chain_model), or NULL */
    /* With `ops`, the op-level planner's lookup into it, plugged in by the planner (ops_figures,
     * ops_plan.h): a one-layer region at layer k under one of its keep-sets, as measured. */
    const SegmentFigures *(*ops_figures)(const OpsProfile *ops, int k, const Policy *policy);
    struct ChainShape *shape; /* chain_model's shape, its ops copied (owned); NULL when profiled */
} ChainCost;

/* The stages around the chain, as the model runs them. */
typedef struct ChainStages {
    Var *(*embed)(void *user, TrainCtx *ctx);          /* x_0 (a new Var) */
    Var *(*head)(void *user, Var *x, TrainCtx *ctx);   /* the loss from x_L (a new Var) */
    void *user;
} ChainStages;

/* Runs one profiling step (forward and backward, no optimizer) of `layers` between the
 * stages and measures the chain model above; with a `policy` (NULL: none), a third pass,
 * every layer a region under it, measures each layer's policy figures: then a schedule
 * whose regions with a policy are one layer each, with this policy, is predicted too.
 * Parameters' gradients are accumulated by it (zero them before training); the FLOP
 * ledger is put back as it was, `ctx` is not changed (the step uses a copy), and the
 * ledger's peaks are reset. Call it with the batch allocated and the optimizer created,
 * so that base and fixed see them. The caller owns the result (chain_cost_free). NULL on
 * error: REMAT_EINVAL for bad arguments or a chain that breaks the model's assumptions
 * (the message says which layer), or the step's own error. */
ChainCost *chain_profile_policy(Layer **layers, int n, const ChainStages *stages, const TrainCtx *ctx,
                                const Policy *policy);

/* Measures the op-level model of the chain whose cost was profiled (`cost`, from
 * chain_profile_policy with the same layers, stages and context): one forward recording
 * every layer's ops, one search per shape, one profiling pass per Pareto point (ops_plan.h).
 * Attaches it to cost->ops (freed with the cost). The FLOP ledger and `ctx` are left as they
 * were; parameters' gradients are accumulated (zero them before training). REMAT_EINVAL for
 * a layer with too many ops or classes (the message names it), or the step's own error. */
RematStatus chain_profile_ops(ChainCost *cost, Layer **layers, const ChainStages *stages, const TrainCtx *ctx);

void chain_cost_free(ChainCost *cost);

/* Bytes of x_k's gradient for 0 ≤ k ≤ L (x_L's: the size of the chain's output). */
size_t chain_grad_bytes(const ChainCost *cost, int k);

/* REMAT_OK if the chain is uniform (see "Revolve over the chain" above); else
 * REMAT_EINVAL with a message naming the first layer that differs from layer 1 and in
 * what. */
RematStatus chain_check_uniform(const ChainCost *cost);

/* ---- the chain model from shapes (chain_model.c) ---------------------------------------- */

/* One op of a stage as chain_model walks it. Its values are the stage's input (0) and the
 * outputs of the ops before it (op i's is i + 1); parameters are fixed memory, not values. */
enum { CHAIN_OP_INPUTS = 3, CHAIN_MAX_OPS = 24 };
#define CHAIN_SAVES_OUT (1u << CHAIN_OP_INPUTS) /* in ChainOp.saves: the op saves its output */

typedef struct ChainOp {
    const char *name, *tag;  /* what a selective policy decides on ("linear", "attn.qkv") */
    int in[CHAIN_OP_INPUTS]; /* the values it reads; −1 for none */
    unsigned saves;          /* bit k: it saves input k for backward; CHAIN_SAVES_OUT: its output */
    size_t out;              /* bytes of its output */
    size_t extra;            /* bytes it makes beside and saves (a dropout mask, mean and rstd, a
                                log-sum-exp); a policy that keeps the op keeps them too */
    int extras;              /* how many tensors those are, alike in size, saved after its output */
    uint64_t flops;          /* its forward's FLOPs */
    uint64_t recompute;      /* RECOMPUTE FLOPs its backward kernel does under any schedule */
} ChainOp;

typedef struct ChainStage {
    const ChainOp *ops;
    int n_ops;
    size_t in_bytes;
    bool input_grad; /* its input needs a gradient (not the batch) */
} ChainStage;

/* A step as shapes: the embed stage (no ops when x_0 is the batch), n_layers alike layers
 * (later ones' inputs always need a gradient), the head (its last op's output the loss). */
typedef struct ChainShape {
    size_t base, fixed;   /* ACT before the step (the batch); ChainCost.fixed */
    size_t work_peak;     /* ChainCost.work_peak: the largest scratch an op makes */
    ChainStage embed, layer, head;
    int n_layers;
    const Policy *policy; /* NULL, or the selective policy whose figures to model */
    bool ops;             /* and the op-level model (--planner ops), as chain_profile_ops measures it */
} ChainShape;

/* The ChainCost chain_profile_policy measures for this step under shape->policy (and with
 * shape->ops, chain_profile_ops), byte and FLOP, computed without running anything
 * (tests/test_predict.c checks that they are equal, and that its predictions are a real
 * step's ledger). The caller owns it (chain_cost_free). NULL on error: REMAT_EINVAL for
 * no layers or head, or a stage of more than CHAIN_MAX_OPS ops. */
ChainCost *chain_model(const ChainShape *shape);

/* ---- predictions ----------------------------------------------------------------------- */

/* Into *f, plain or region segment g's figures by the formula above; a region with a
 * policy must be one layer under the policy the cost profiled or a point of the op-level
 * model. false, *f unchanged, for any other segment. */
bool chain_segment(const ChainCost *cost, const Segment *g, SegmentFigures *f);

/* Fills s->predicted from `cost`: for plain segments and regions without a policy by the
 * formula above, for one-layer regions with the policy the cost profiled by its policy
 * figures, for one Revolve segment over a uniform chain by the Revolve predictor.
 * REMAT_EINVAL, with s unchanged, for a schedule of another chain, a region with another
 * policy or of several layers with one (not in the model), Revolve beside other segments
 * or on a chain that is not uniform. */
RematStatus schedule_predict(Schedule *s, const ChainCost *cost);

/* A schedule of the `n` segments given, made by a planner (strategy budget) and
 * predicted against `cost`. The caller owns it. NULL on error. */
Schedule *chain_schedule(const ChainCost *cost, const Segment *segments, int n);

/* The schedule strategy `kind` makes for this chain, with its default options, predicted.
 * NULL on error (REMAT_EINVAL for budget, or a policy the cost did not profile). */
Schedule *chain_schedule_for_strategy(const ChainCost *cost, StrategyKind kind);

#endif /* REMAT_CHECKPOINT_COST_H */
