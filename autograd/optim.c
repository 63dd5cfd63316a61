/*
 * optim.c — SGD and AdamW over a parameter list (see optim.h). The arithmetic is in
 * tensor/kernels_optim.c; this file owns the state and the all-or-nothing step.
 */
#include "autograd/optim.h"

#include <stdlib.h>

#include "tensor/flat.h"
#include "tensor/kernels.h"

static const char *const OPTIM_KINDS[] = {"sgd", "adamw"};
const NameTable OPTIM_KIND_NAMES = {OPTIM_KINDS, 2};

/* One parameter as the optimizer holds it. */
typedef struct OptimParam {
    Param param;
    size_t offset;    /* its first element in the flat concatenation of the parameters */
    size_t a, b;      /* its elements [a, b) in the optimizer's range (a == b: none) */
    Tensor *state[2]; /* over [a, b): AdamW m and v, SGD velocity in [0]; NULL when there is none */
} OptimParam;

struct Optimizer {
    OptimConfig config;
    int n;
    OptimParam *params; /* n, after the struct in its allocation */
    int steps;
    OptimSlice *slices; /* room for one per parameter (a step's list for the kernel), after `params` */
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
    if (c->kind == OPTIM_SGD && !(c->momentum >= 0.0f && c->momentum < 1.0f))
        return remat_fail(REMAT_EINVAL, "sgd: momentum must be in [0, 1), got %g", c->momentum);
    if (c->kind == OPTIM_SGD) return REMAT_OK;
    if (c->kind != OPTIM_ADAMW) return remat_fail(REMAT_EINVAL, "optimizer: unknown kind %d", (int)c->kind);
    if (!(c->beta1 >= 0.0f && c->beta1 < 1.0f) || !(c->beta2 >= 0.0f && c->beta2 < 1.0f))
        return remat_fail(REMAT_EINVAL, "adamw: betas must be in [0, 1), got %g and %g", c->beta1, c->beta2);
    if (!(c->eps > 0.0f)) return remat_fail(REMAT_EINVAL, "adamw: eps must be > 0, got %g", c->eps);
    if (!(c->weight_decay >= 0.0f))
        return remat_fail(REMAT_EINVAL, "adamw: weight decay must be >= 0, got %g", c->weight_decay);
    return REMAT_OK;
}

/* A state tensor over parameter p's part of the range: its own shape when whole. */
static Tensor *state_tensor(const OptimParam *p)
{
    const Tensor *value = p->param.var->value;
    if (p->b - p->a == value->numel) return tensor_zeros(MEM_OPTIM, value->ndim, value->shape);
    return tensor_zeros(MEM_OPTIM, 1, (int[]){(int)(p->b - p->a)});
}

Optimizer *optim_create(const OptimConfig *config, const Param *params, int n)
{
    if (!config || !params || n <= 0)
        return remat_fail_null(REMAT_EINVAL, "optim_create: need a config and at least one parameter");
    if (check_config(config) != REMAT_OK) return NULL;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (!params[i].var || !params[i].var->requires_grad || params[i].var->value->dtype != DTYPE_F32)
            return remat_fail_null(REMAT_EINVAL, "optim_create: parameter %d (%s) is not a float leaf that requires "
                                   "grad", i, params[i].var ? params[i].var->name : "NULL");
        total += params[i].var->value->numel;
    }
    const size_t begin = config->begin, end = config->end ? config->end : total;
    if (begin >= end || end > total)
        return remat_fail_null(REMAT_EINVAL, "optim_create: range [%zu, %zu) is empty or outside the %zu "
                               "elements of the parameters", begin, end, total);
    Optimizer *opt = calloc(1, sizeof *opt + (size_t)n * (sizeof(OptimParam) + sizeof(OptimSlice)));
    if (!opt) return remat_fail_null(REMAT_ENOMEM, "optim_create: no memory for the optimizer's bookkeeping");
    *opt = (Optimizer){.config = *config, .n = n, .params = (OptimParam *)(opt + 1)};
    opt->slices = (OptimSlice *)(opt->params + n);

    const int n_states = config->kind == OPTIM_ADAMW ? 2 : config->momentum > 0.0f ? 1 : 0;
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        OptimParam *p = &opt->params[i];
        const size_t numel = params[i].var->value->numel;
        *p = (OptimParam){.param = params[i], .offset = offset};
        const size_t part = flat_overlap(begin, end, offset, numel, &p->a);
        p->b = p->a + part;
        offset += numel;
        if (part == 0) continue;
        for (int s = 0; s < n_states; s++)
            if (!(p->state[s] = state_tensor(p))) {
                optim_free(opt);
                return NULL;
            }
    }
    return opt;
}

void optim_free(Optimizer *opt)
{
    if (!opt) return;
    for (int i = 0; i < opt->n; i++)
        for (int s = 0; s < 2; s++) tensor_free(opt->params[i].state[s]);
    free(opt); /* its arrays with it */
}

RematStatus optim_step(Optimizer *opt, const float *grad, float *params)
{
    if (!opt) return remat_fail(REMAT_EINVAL, "optim_step: optimizer is NULL");
    /* Check everything before changing anything. */
    for (int i = 0; i < opt->n && !grad; i++)
        if (!opt->params[i].param.var->grad)
            return remat_fail(REMAT_ESTATE, "optim_step: parameter %d (%s) has no gradient — "
                              "run backward first, or remove it from the optimizer",
                              i, opt->params[i].param.var->name);
    const OptimConfig *c = &opt->config;
    opt->steps++;
    int count = 0;
    for (int i = 0; i < opt->n; i++) {
        const OptimParam *p = &opt->params[i];
        if (p->a == p->b) continue;
        const Var *v = p->param.var;
        const size_t in_range = p->offset + p->a - c->begin; /* its part's place in the flat arrays */
        opt->slices[count++] = (OptimSlice){
            .param = params ? params + in_range : v->value->f32 + p->a,
            .grad = grad ? grad + in_range : v->grad->f32 + p->a,
            .m = p->state[0] ? p->state[0]->f32 : NULL,
            .v = p->state[1] ? p->state[1]->f32 : NULL,
            .weight_decay = c->kind == OPTIM_ADAMW && p->param.decay ? c->weight_decay : 0.0f,
            .n = p->b - p->a,
        };
    }
    /* One pass over every parameter, its elements split evenly over the threads. */
    const OptimUpdate update = {.adamw = c->kind == OPTIM_ADAMW, .lr = c->lr, .momentum = c->momentum,
                                .beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps, .t = opt->steps};
    Phase previous = flops_set_phase(PHASE_OPTIMIZER);
    k_optim_update(opt->slices, count, &update);
    flops_set_phase(previous);
    return REMAT_OK;
}

void optim_zero_grad(Optimizer *opt)
{
    for (int i = 0; opt && i < opt->n; i++) var_zero_grad(opt->params[i].param.var);
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
    const OptimParam *p = opt && i >= 0 && i < opt->n ? &opt->params[i] : NULL;
    *state0 = p ? p->state[0] : NULL;
    *state1 = p ? p->state[1] : NULL;
}
