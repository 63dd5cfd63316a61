/*
 * optim.h — optimizers: SGD (with optional momentum) and AdamW.
 *
 * An optimizer updates a list of parameters from their .grad. Its state lives in the
 * memory ledger as MEM_OPTIM, allocated in full when the optimizer is created: AdamW keeps
 * two tensors per parameter (first and second moments), SGD with momentum one, plain SGD
 * none. That state stays resident however much of the forward is recomputed — quiz
 * question 8.
 *
 * A step runs under PHASE_OPTIMIZER in the FLOP ledger. It either updates every parameter
 * or, on error (a parameter without a gradient), none: no half-applied step.
 */
#ifndef REMAT_OPTIM_H
#define REMAT_OPTIM_H

#include "autograd/autograd.h"
#include "base/parse.h"

/* A parameter as an optimizer sees it: the Var (a leaf that requires grad) and whether
 * weight decay applies to it (GPT-2 practice: matrices yes, biases and norms no). */
typedef struct Param {
    Var *var;
    bool decay;
} Param;

/* The parameters' values read as one flat array (tensor/flat.h), parameter 0's elements
 * first: offset[i] (n entries; offset may be NULL) gets parameter i's first element, and
 * the total is returned. A parameter without a Var counts as empty. How the optimizer,
 * ZeRO's shards and the reduction over ranks address the same elements. */
size_t param_offsets(const Param *params, int n, size_t *offset);

typedef enum OptimKind { OPTIM_SGD, OPTIM_ADAMW } OptimKind;

/* "sgd", "adamw": the names of OptimKind's values. */
extern const NameTable OPTIM_KIND_NAMES;

typedef struct OptimConfig {
    OptimKind kind;
    float lr;
    float momentum;     /* SGD only; 0 keeps no state */
    float beta1, beta2; /* AdamW */
    float eps;          /* AdamW */
    float weight_decay; /* AdamW, applied to params with decay set */
    /* The elements it updates, [begin, end) of the parameters' flat concatenation (parameter
     * 0's elements first, each in its own order): a rank's shard under ZeRO sharding
     * (parallel/zero.h). end 0: to their end, so that by default it updates them all. */
    size_t begin, end;
} OptimConfig;

/* AdamW defaults as PyTorch's (beta1 0.9, beta2 0.999, eps 1e-8, weight decay 0.01). */
OptimConfig optim_adamw_defaults(float lr);
OptimConfig optim_sgd_defaults(float lr, float momentum);

typedef struct Optimizer Optimizer;

/* An optimizer over `n` parameters (the array is copied; the Vars are borrowed and must
 * outlive it), or over the range of their elements config->begin .. end says. Allocates all
 * its state (MEM_OPTIM, zero-filled), for the range's elements only: parameter i's state
 * tensors cover its part of the range (its own shape when the range holds all of it, one
 * dimension otherwise; NULL when none of it), so AdamW's state is 8 bytes per element.
 * optim_step updates those elements only, with the same arithmetic whatever the range.
 * NULL on error: a bad config (lr ≤ 0, betas outside [0,1), ...; REMAT_EINVAL for a range
 * outside the parameters or an empty one), or the memory budget — then the message names
 * the optimizer state as what did not fit. */
Optimizer *optim_create(const OptimConfig *config, const Param *params, int n);
void optim_free(Optimizer *opt);

/* Updates every parameter of the optimizer's range from its gradient: read from the
 * parameters' .grad when `grad` is NULL, else given as one array of end − begin floats
 * (borrowed), for a rank that keeps only its shard of the gradient. `params` (NULL: the
 * parameters' tensors) is where the range's values are updated instead, end − begin
 * floats held apart from the tensors: for a rank that keeps only its shard of the
 * parameters too. REMAT_ESTATE, changing nothing, if `grad` is NULL and some parameter
 * has no gradient yet. */
RematStatus optim_step(Optimizer *opt, const float *grad, float *params);

/* Zeroes every parameter's gradient. */
void optim_zero_grad(Optimizer *opt);

/* Steps taken so far (AdamW's t). */
int optim_steps(const Optimizer *opt);

/* The i-th parameter's state tensors (NULL where the optimizer keeps none; for an
 * optimizer over a range, its part of the range, see optim_create), for saving and
 * resuming. AdamW: state0 = m, state1 = v. SGD with momentum: state0 = velocity. */
void optim_state(const Optimizer *opt, int i, Tensor **state0, Tensor **state1);

/* Sets the step count when resuming from a file (state tensors are filled by the caller
 * through optim_state). REMAT_EINVAL for a negative count. */
RematStatus optim_set_steps(Optimizer *opt, int steps);

#endif /* REMAT_OPTIM_H */
