/*
 * zero.h — data parallelism with ZeRO sharding (Rajbhandari et al. 2020), as the training
 * step (models/step.h) uses it between backward and the optimizer.
 *
 * Each of K ranks has run one micro-batch of the step and holds its gradient g_r. The
 * flat array of all Ψ parameters is cut into K contiguous shards (comm.h); rank k owns
 * shard k. What each stage keeps, in bytes of float32 AdamW state, and what it moves:
 *
 *   stage 0   params 4Ψ, grads 4Ψ,    optimizer 8Ψ      = 16Ψ         gradients: ordered
 *             reduce-scatter, then all-gather; every rank runs the whole optimizer
 *   stage 1   params 4Ψ, grads 4Ψ,    optimizer 8Ψ/K    = 8Ψ + 8Ψ/K   ordered reduce-scatter;
 *             each rank updates its shard; all-gather of the parameters
 *   stage 2   params 4Ψ, grads 4Ψ/K,  optimizer 8Ψ/K    = 4Ψ + 12Ψ/K  as stage 1, and the
 *             full gradients are freed once reduced: only the shard stays
 *   stage 3   params 4Ψ/K, grads 4Ψ/K, optimizer 8Ψ/K   = 16Ψ/K       + the working set: a
 *             group of parameters (a layer's, or the embedding and head's) is gathered when
 *             it is used (the parameter-use hooks, autograd.h) — for its forward, a checkpoint
 *             region's replay, its backward — and released when the next group is, so
 *             one group is whole at a time; each rank updates its shard of the
 *             parameters, and nothing is gathered after the update
 *
 * (Ψ/K is this rank's shard length, comm.h.) Stages 0 to 2 move about 2Ψ floats per rank
 * per step, (K−1)/K · Ψ out and in for each of the reduce-scatter and the all-gather;
 * stage 3 about 3Ψ, since a group still whole is not gathered again (the forward's last
 * layer for the backward's first, a region's layer from its replay to its backward). The
 * figures are the resident state between steps: the reduce-scatter runs after backward,
 * so from stage 2 the full gradient still exists while backward runs, and the reduction
 * holds workspace, the shard's sum (stages 0 and 1) and one chunk of DIST_CHUNK floats.
 *
 * Every stage gives the same bits as one process accumulating the K micro-batches: the
 * sum is taken in rank order and scaled by 1/K exactly as step.h's accumulation does, and
 * a shard's update is the same element-wise arithmetic as the whole optimizer's.
 *
 * What this is not: gradient reduction overlapped with backward, bucketing, or prefetching
 * the next group's parameters while the current one computes.
 */
#ifndef REMAT_PARALLEL_ZERO_H
#define REMAT_PARALLEL_ZERO_H

#include "autograd/optim.h"
#include "parallel/comm.h"

typedef struct Zero Zero;

enum { ZERO_MAX_STAGE = 3 };

/* What ZeRO `stage` keeps resident on a rank between steps, in bytes, for `total` float32
 * parameters of which the rank's shard holds `shard`, with `states` optimizer floats per
 * parameter (AdamW 2, SGD with momentum 1, plain SGD 0): the table above. Stage 3's
 * working set (the group gathered while used) is not in it. */
typedef struct ZeroBytes {
    uint64_t params, grads, optimizer;
} ZeroBytes;

ZeroBytes zero_resident_bytes(int stage, uint64_t total, uint64_t shard, int states);

/* Data parallelism over `g` at ZeRO `stage` (0..ZERO_MAX_STAGE) for the n parameters
 * `params` (copied; the Vars are borrowed and must outlive it). Stage 2 allocates this
 * rank's gradient shard (MEM_GRAD); stage 3 also its parameter shard (MEM_PARAM), copied
 * from the parameters, whose storage it then releases (tensor_release_storage): between
 * steps they exist only in the shards, and zero_add_group says how they are used. NULL
 * on error (a bad stage, the memory budget). */
Zero *zero_create(const DistGroup *g, int stage, const Param *params, int n);
void zero_free(Zero *z);

int zero_rank(const Zero *z);
int zero_size(const Zero *z);
int zero_stage(const Zero *z);

/* Ψ: this rank's shard of it is [shard_begin(Ψ, rank, size), shard_begin(Ψ, rank + 1, size)) (comm.h). */
size_t zero_total(const Zero *z);

/* The optimizer this rank runs: over everything at stage 0, over its shard from stage 1
 * (OptimConfig.begin and end). NULL on error. */
Optimizer *zero_optimizer_create(const Zero *z, const OptimConfig *config);

/* After every rank's backward: reduces the gradients, the ranks' sum in rank order × 1/K
 * (stage 0: into every parameter's .grad on every rank; stages 1 and 2: this rank's shard,
 * and stage 2 frees the full gradients), and *mean_loss = the ranks' `loss` summed in
 * rank order / K. REMAT_ESTATE if a parameter has no gradient. */
RematStatus zero_reduce(Zero *z, float loss, float *mean_loss);

/* Applies the reduced gradient with `opt` (zero_optimizer_create's): stage 0 the whole
 * optimizer; stages 1 and 2 this rank's shard, then every rank's updated shard is
 * gathered into every rank's parameters. */
RematStatus zero_optimizer_step(Zero *z, Optimizer *opt);

/* Stage 3: the parameters `params` (n, each one of zero_create's) are used together by
 * `owner` (a Layer, or the Model for its embedding and head: the stage tape_set_stage names;
 * a node's backward gathers the group of the parameters it reads).
 * With `params` NULL: every parameter in no group so far. A parameter in no group is never
 * gathered by a step. REMAT_EINVAL for a parameter that is not one of zero_create's. */
RematStatus zero_add_group(Zero *z, const void *owner, const Param *params, int n);

/* Around a step's forward and backward (step.h), or an evaluation's forward: at stage 3,
 * gathers each group as it is used and releases the last one at the end; no-ops below
 * stage 3. */
void zero_step_begin(Zero *z);
void zero_step_end(Zero *z);

/* Stage 3, outside a step (sampling, saving, loading): every parameter
 * gathered in full (a collective: every rank calls it), and afterwards this rank's part
 * of them kept in its shard and their storage released again (zero_params_scatter; after
 * a load, it takes what was loaded). No-ops below stage 3. */
RematStatus zero_params_gather(Zero *z);
void zero_params_scatter(Zero *z);

/* For a save: `full` (an optimizer over everything, on rank `root` only; NULL elsewhere)
 * receives the state of every rank's `shard` optimizer. Every rank calls it. */
RematStatus zero_gather_optimizer(Zero *z, const Optimizer *shard, Optimizer *full, int root);

/* For a resume: this rank's `shard` optimizer takes its part of `full`'s state (an
 * optimizer over everything, loaded from a file) and its step count. */
RematStatus zero_scatter_optimizer(const Zero *z, Optimizer *shard, const Optimizer *full);

/* For a resume on several ranks: whether every rank holds the same state, from a file each
 * rank read itself — the step, the parameter count, and digests of the parameters' values
 * (all of them, `n`, each whole) and of `opt`'s state (an optimizer over every parameter)
 * and step count. As dist_agree, "the resumed step is 4 here, 6 on rank 0: `hint`". */
RematStatus zero_agree_state(const DistGroup *g, int step, const Param *params, int n, const Optimizer *opt,
                             const char *hint);

#endif /* REMAT_PARALLEL_ZERO_H */
