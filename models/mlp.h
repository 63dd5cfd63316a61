/*
 * mlp.h — the MLP chain: N residual blocks y = x + relu(x·W + b) and an MSE loss, trained
 * to imitate a fixed random teacher network.
 *
 * This is the "idealized chain" of quiz question 4: every block keeps the same two
 * activations of B·W floats for backward (its input, and its relu's output), so the
 * memory of each checkpoint strategy can be derived by hand and compared with the ledger
 * to the byte.
 *
 * Why residual blocks rather than a plain Linear+ReLU stack: in a plain stack, the only
 * tensor a layer keeps is its relu's output, which is also the next layer's input — so
 * checkpointing every layer (which keeps exactly the layer inputs) would save nothing, and
 * a 256-layer plain ReLU stack barely trains. A residual block keeps one tensor besides its
 * input, as real blocks do (a transformer block keeps many), and trains at any depth.
 */
#ifndef REMAT_MLP_H
#define REMAT_MLP_H

#include "models/model.h"

typedef struct MlpConfig {
    int n_layers; /* N ≥ 1 */
    int width;    /* W ≥ 1 */
    uint64_t seed;
} MlpConfig;

/* The chain: blocks "h.0" … "h.{N-1}", each residual_mlp(W) with weights drawn from
 * standard deviation sqrt(2/W)/N — He et al.'s, divided by N; embed is the identity; the
 * head is mse(x_N, targets). Why N and not sqrt(N): a ReLU's output has a positive mean,
 * and every block adds its branch's mean to the residual stream in the same direction, so
 * the means add up as N·(branch size), not as sqrt(N)·(branch size) the way independent
 * noise would. With the branches scaled by 1/N the stream stays the size of the input
 * whatever N is (a width-64 chain starts at a validation loss of about 1.8 at 16 layers
 * and at 1,024; scaled by 1/sqrt(N) it started at 23.7 and 1.1e15). NULL on error (bad
 * config, budget). */
Model *mlp_create(const MlpConfig *config);

/* The parameters (floats) mlp_create would make for `config`, computed without making
 * them, so that a program can check what a model will need before building it: N·(W² + W).
 * In double, so that no size overflows. */
double mlp_param_count(const MlpConfig *config);

/* As gpt_chain_model (gpt.h), for the chain on its task's batches of `batch` examples;
 * its fixed memory has the teacher too. NULL on error: a bad config or batch. */
ChainCost *mlp_chain_model(const MlpConfig *config, int batch, const Policy *policy, bool ops);

/* The synthetic regression task: inputs x ~ N(0, 1) of shape (B, W), drawn from a
 * generator the caller passes (so a training run can save and restore it), targets
 * y = relu(relu(x·T1)·T2) for a fixed random teacher (T1, T2 ~ N(0, 2/W)). The teacher's
 * weights are data-generation machinery, not part of the model: they are counted as
 * MEM_WORK, so MEM_PARAM holds exactly the trained parameters. */
typedef struct MlpTask MlpTask;

MlpTask *mlp_task_create(int width, uint64_t seed);

/* The bytes of the teacher mlp_task_create(width, ...) makes (MEM_WORK): 2·W² floats. */
double mlp_task_bytes(int width);
void mlp_task_free(MlpTask *task);

/* Draws a batch of `batch` examples: *x and *y are new constant Vars (MEM_ACT) the caller
 * owns. The teacher is data, not training work: its FLOPs are left out of the ledger.
 * On error returns the status and sets both to NULL. */
RematStatus mlp_task_batch(MlpTask *task, Pcg32 *rng, int batch, Var **x, Var **y);

#endif /* REMAT_MLP_H */
