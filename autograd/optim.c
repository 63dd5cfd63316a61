/*
 * optim.c — SGD and AdamW over a parameter list (see optim.h). The arithmetic is in
 * tensor/kernels_optim.c; this file owns the state and the all-or-nothing step.
 */
#include "autograd/optim.h"

#include <stdlib.h>
#include <string.h>

#include "tensor/flat.h"
#include "tensor/flops.h"
#include "tensor/kernels.h"

static const char *const OPTIM_KINDS[] = {"sgd", "adamw"};
const NameTable OPTIM_KIND_NAMES = {OPTIM_KINDS, 2};

struct Optimizer {
    OptimConfig config;
    int n;
    Param *params;
    Tensor **state0; /* AdamW m, SGD velocity */
    Tensor **state1; /* AdamW v */
    size_t *offset;  /* parameter i's first element in the flat concatenation */
    size_t begin, end; /* the flat range this optimizer updates */
    int steps;
    OptimSlice *slices; /* room for one per parameter: a step's list for the kernel */
};

size_t param_offsets(const Param *params, int n, size_t *offset)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (offset) offset[i] = total;
        total += params[i].var ? params[i].var->value->numel : 0;
    }
    return total;
}

OptimConfig optim_adamw_defaults(float lr)
{
    return (OptimConfig){.kind = OPTIM_ADAMW, .lr = lr, .beta1 = 0.9f, .beta2 = 0.999f,
                         .eps = 1e-8f, .weight_decay = 0.01f};
}

OptimConfig optim_sgd_defaults(float lr, float momentum)
{
    return (OptimConfig){.kind = OPTIM_SGD, .lr = lr, .momentum = momentum};
}

static RematStatus check_config(const OptimConfig *c)
{
    if (!(c->lr > 0.0f)) return remat_fail(REMAT_EINVAL, "optimizer: learning rate must be > 0, got %g", c->lr);
    if (c->kind == OPTIM_SGD) {
        if (!(c->momentum >= 0.0f && c->momentum < 1.0f))
            return remat_fail(REMAT_EINVAL, "sgd: momentum must be in [0, 1), got %g", c->momentum);
        return REMAT_OK;
    }
    if (c->kind != OPTIM_ADAMW) return remat_fail(REMAT_EINVAL, "optimizer: unknown kind %d", (int)c->kind);
    if (!(c->beta1 >= 0.0f && c->beta1 < 1.0f) || !(c->beta2 >= 0.0f && c->beta2 < 1.0f))
        return remat_fail(REMAT_EINVAL, "adamw: betas must be in [0, 1), got %g and %g", c->beta1, c->beta2);
    if (!(c->eps > 0.0f)) return remat_fail(REMAT_EINVAL, "adamw: eps must be > 0, got %g", c->eps);
    if (!(c->weight_decay >= 0.0f))
        return remat_fail(REMAT_EINVAL, "adamw: weight decay must be >= 0, got %g", c->weight_decay);
    return REMAT_OK;
}

/* Parameter i's part of the flat range [begin, end): its elements [*a, *b) (*a == *b: none). */
static void overlap(const Optimizer *opt, int i, size_t *a, size_t *b)
{
    const size_t n = flat_overlap(opt->begin, opt->end, opt->offset[i], opt->params[i].var->value->numel, a);
    *b = *a + n;
}

/* Parameter i's state tensor over its part of the range: its own shape when whole. */
static Tensor *state_tensor(const Optimizer *opt, int i)
{
    size_t a, b;
    overlap(opt, i, &a, &b);
    const Tensor *p = opt->params[i].var->value;
    if (b - a == p->numel) return tensor_zeros(MEM_OPTIM, p->ndim, p->shape);
    return tensor_zeros(MEM_OPTIM, 1, (int[]){(int)(b - a)});
}

static RematStatus check_params(const Param *params, int n)
{
    for (int i = 0; i < n; i++) {
        if (!params[i].var || !params[i].var->requires_grad || params[i].var->value->dtype != DTYPE_F32)
            return remat_fail(REMAT_EINVAL, "optim_create: parameter %d (%s) is not a float leaf that requires grad",
                              i, params[i].var ? params[i].var->name : "NULL");
    }
    return REMAT_OK;
}

Optimizer *optim_create_range(const OptimConfig *config, const Param *params, int n, size_t begin, size_t end)
{
    if (!config || !params || n <= 0) {
        remat_fail(REMAT_EINVAL, "optim_create: need a config and at least one parameter");
        return NULL;
    }
    if (check_config(config) != REMAT_OK || check_params(params, n) != REMAT_OK) return NULL;
    const size_t total = param_offsets(params, n, NULL);
    if (begin >= end || end > total) {
        remat_fail(REMAT_EINVAL, "optim_create: range [%zu, %zu) is empty or outside the %zu elements of the "
                   "parameters", begin, end, total);
        return NULL;
    }
    Optimizer *opt = calloc(1, sizeof *opt);
    if (!opt) goto no_memory;
    opt->config = *config;
    opt->n = n;
    opt->begin = begin;
    opt->end = end;
    opt->params = malloc((size_t)n * sizeof *opt->params);
    opt->offset = malloc((size_t)n * sizeof *opt->offset);
    opt->state0 = calloc((size_t)n, sizeof *opt->state0);
    opt->state1 = calloc((size_t)n, sizeof *opt->state1);
    opt->slices = malloc((size_t)n * sizeof *opt->slices);
    if (!opt->params || !opt->offset || !opt->state0 || !opt->state1 || !opt->slices) goto no_memory;
    memcpy(opt->params, params, (size_t)n * sizeof *params);
    param_offsets(params, n, opt->offset);

    const int n_states = config->kind == OPTIM_ADAMW ? 2 : config->momentum > 0.0f ? 1 : 0;
    for (int i = 0; i < n; i++) {
        size_t a, b;
        overlap(opt, i, &a, &b);
        if (a == b) continue;
        if (n_states >= 1 && !(opt->state0[i] = state_tensor(opt, i))) goto failed;
        if (n_states >= 2 && !(opt->state1[i] = state_tensor(opt, i))) goto failed;
    }
    return opt;

no_memory:
    remat_fail(REMAT_ENOMEM, "optim_create: no memory for the optimizer's bookkeeping");
failed:
    optim_free(opt);
    return NULL;
}

Optimizer *optim_create(const OptimConfig *config, const Param *params, int n)
{
    return optim_create_range(config, params, n, 0, params && n > 0 ? param_offsets(params, n, NULL) : 0);
}

void optim_free(Optimizer *opt)
{
    if (!opt) return;
    for (int i = 0; opt->state0 && i < opt->n; i++) tensor_free(opt->state0[i]);
    for (int i = 0; opt->state1 && i < opt->n; i++) tensor_free(opt->state1[i]);
    free(opt->state0);
    free(opt->state1);
    free(opt->params);
    free(opt->offset);
    free(opt->slices);
    free(opt);
}

/* Updates the range's elements, in `flat_params` (the range's values) when given, else in
 * the parameters' tensors; the gradient of parameter i's part is read from `flat` (the
 * range's gradient) when given, else from its .grad. */
static RematStatus update(Optimizer *opt, const float *flat, float *flat_params)
{
    if (!opt) return remat_fail(REMAT_EINVAL, "optim_step: optimizer is NULL");
    /* Check everything before changing anything. */
    for (int i = 0; i < opt->n && !flat; i++)
        if (!opt->params[i].var->grad)
            return remat_fail(REMAT_ESTATE, "optim_step: parameter %d (%s) has no gradient — "
                              "run backward first, or remove it from the optimizer",
                              i, opt->params[i].var->name);
    const OptimConfig *c = &opt->config;
    opt->steps++;
    int count = 0;
    for (int i = 0; i < opt->n; i++) {
        size_t a, b;
        overlap(opt, i, &a, &b);
        if (a == b) continue;
        Var *p = opt->params[i].var;
        opt->slices[count++] = (OptimSlice){
            .param = flat_params ? flat_params + (opt->offset[i] + a - opt->begin) : p->value->f32 + a,
            .grad = flat ? flat + (opt->offset[i] + a - opt->begin) : p->grad->f32 + a,
            .m = opt->state0[i] ? opt->state0[i]->f32 : NULL,
            .v = opt->state1[i] ? opt->state1[i]->f32 : NULL,
            .weight_decay = c->kind == OPTIM_ADAMW && opt->params[i].decay ? c->weight_decay : 0.0f,
            .n = b - a,
        };
    }
    /* One pass over every parameter, its elements split evenly over the threads. */
    Phase previous = flops_set_phase(PHASE_OPTIMIZER);
    if (c->kind == OPTIM_ADAMW) k_adamw_update_slices(opt->slices, count, c->lr, c->beta1, c->beta2, c->eps, opt->steps);
    else k_sgd_update_slices(opt->slices, count, c->lr, c->momentum);
    flops_set_phase(previous);
    return REMAT_OK;
}

RematStatus optim_step(Optimizer *opt) { return update(opt, NULL, NULL); }

RematStatus optim_step_flat(Optimizer *opt, const float *grad, float *params)
{
    if (!grad) return remat_fail(REMAT_EINVAL, "optim_step_flat: the gradient is NULL");
    return update(opt, grad, params);
}

void optim_zero_grad(Optimizer *opt)
{
    for (int i = 0; opt && i < opt->n; i++) var_zero_grad(opt->params[i].var);
}

int optim_steps(const Optimizer *opt) { return opt ? opt->steps : 0; }

RematStatus optim_set_steps(Optimizer *opt, int steps)
{
    if (!opt || steps < 0) return remat_fail(REMAT_EINVAL, "optim_set_steps: bad step count %d", steps);
    opt->steps = steps;
    return REMAT_OK;
}

void optim_state(const Optimizer *opt, int i, Tensor **state0, Tensor **state1)
{
    *state0 = opt && i >= 0 && i < opt->n ? opt->state0[i] : NULL;
    *state1 = opt && i >= 0 && i < opt->n ? opt->state1[i] : NULL;
}
