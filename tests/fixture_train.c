/*
 * fixture_train.c — a few training steps of a small model, run one of the ways remat can
 * keep activations (see fixture_train.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "tests/fixture_train.h"
#include "tensor/flops.h"
#include "models/gpt.h"
#include "models/mlp.h"
#include "autograd/optim.h"
#include "checkpoint/revolve.h"

enum { MLP_BATCH = 4, GPT_BATCH = 2, GPT_SEQ = 8, TEACHER_SEED = 6 };

int fixture_clean_state(void **state)
{
    (void)state;
    tape_reset();
    remat_clear_error();
    flops_reset();
    const MemKind kinds[] = {MEM_PARAM, MEM_GRAD, MEM_OPTIM, MEM_ACT, MEM_DISK};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (mem_current(kinds[i]) != 0) return -1;
    return 0;
}

Model *fixture_model(const Trainee *t)
{
    if (!strcmp(t->kind, "mlp")) return mlp_create(&(MlpConfig){.n_layers = t->layers, .width = t->width, .seed = 5});
    return gpt_create(&(GptConfig){.n_layers = t->layers, .d_model = 16, .n_heads = 2, .seq_len = GPT_SEQ,
                                   .vocab = 256, .dropout = t->dropout > 0 ? t->dropout : 0.1f,
                                   .attention = t->attention, .seed = 7});
}

/* The teacher is rebuilt from its seed for every batch: at these widths that costs nothing,
 * and the fixture keeps no state between tests. */
static Var *mlp_batch(int width, Pcg32 *rng, Var **y)
{
    MlpTask *task = mlp_task_create(width, TEACHER_SEED);
    assert_non_null(task);
    Var *x;
    assert_int_equal(mlp_task_batch(task, rng, MLP_BATCH, &x, y), REMAT_OK);
    mlp_task_free(task);
    return x;
}

static Var *token_batch(Pcg32 *rng, Var **y)
{
    const int shape[] = {GPT_BATCH, GPT_SEQ};
    Tensor *x = tensor_create(MEM_ACT, DTYPE_I32, 2, shape);
    Tensor *t = tensor_create(MEM_ACT, DTYPE_I32, 2, shape);
    assert_true(x && t);
    for (size_t i = 0; i < x->numel; i++) {
        x->i32[i] = (int32_t)pcg32_bounded(rng, 256);
        t->i32[i] = (int32_t)pcg32_bounded(rng, 256);
    }
    *y = var_create(t, false, "targets");
    return var_create(x, false, "tokens");
}

Var *fixture_batch(const Trainee *t, Pcg32 *rng, Var **y)
{
    return !strcmp(t->kind, "mlp") ? mlp_batch(t->width, rng, y) : token_batch(rng, y);
}

Var *fixture_revolve_loss(Model *m, int slots, Var *x, Var *y, TrainCtx *ctx)
{
    Var *h = m->embed(m, x, ctx);
    Var *z = h ? revolve_forward(m->layers, m->n_layers, slots, h, ctx) : NULL;
    var_free(h);
    Var *loss = z ? m->head(m, z, y, ctx) : NULL;
    var_free(z);
    return loss;
}

TrainCtx fixture_ctx(const Trainee *t, int step)
{
    TrainCtx ctx = {.training = true, .dropout_rng = t->dropout_rng, .seed = 77, .step = (uint64_t)step};
    pcg32_seed(&ctx.rng, 77, 1);
    return ctx;
}

/* The strategy's schedule, when the way gives a strategy rather than a schedule. */
static Schedule *strategy_schedule(const Way *way, const Model *m)
{
    const Strategy none = strategy_defaults(STRATEGY_NONE);
    return way->schedule ? NULL : schedule_for_strategy(way->strategy ? way->strategy : &none, m->n_layers);
}

/* The first step's gradients, copied before the optimizer applies them. */
static RematStatus copy_grads(void *user, Var *loss)
{
    (void)loss;
    Outcome *out = user;
    for (int i = 0; i < out->n_params; i++) {
        out->grads[i] = tensor_clone(out->model->params[i].var->grad, MEM_WORK);
        if (!out->grads[i]) return remat_last_status();
    }
    return REMAT_OK;
}

RematStatus fixture_train(const Trainee *t, const Way *way, Outcome *out)
{
    *out = (Outcome){0};
    Model *m = fixture_model(t);
    assert_non_null(m);
    assert_true(m->n_params <= FIXTURE_MAX_PARAMS);
    Schedule *own = strategy_schedule(way, m);
    assert_true(own || way->schedule);
    const OptimConfig c = optim_adamw_defaults(1e-2f);
    Optimizer *opt = optim_create(&c, m->params, m->n_params);
    assert_non_null(opt);
    TrainCtx ctx = fixture_ctx(t, 0);
    Pcg32 data;
    pcg32_seed(&data, 78, 2);
    RematStatus status = REMAT_OK;
    out->n_params = m->n_params;
    out->model = m;
    const Step step = {.model = m, .schedule = own ? own : way->schedule, .optim = opt,
                       .plugs = {step_offload_plug(way->offload)}};
    const StepHooks first = {.backward_done = copy_grads, .user = out};
    for (int i = 0; i < FIXTURE_STEPS && status == REMAT_OK; i++) {
        Var *y, *x = fixture_batch(t, &data, &y);
        StepResult result;
        ctx.step = (uint64_t)i;
        if (way->step_peaks) mem_reset_peaks();
        if (way->memory_budget) mem_set_budget(way->memory_budget);
        status = step_run(&step, &(MicroBatch){x, y}, 1, &ctx, i == 0 ? &first : NULL, &result);
        if (way->memory_budget) mem_set_budget(0);
        if (way->step_peaks && mem_peak_moment().resident > out->peak) out->peak = mem_peak_moment().resident;
        if (way->step_peaks && mem_peak(MEM_ACT) > out->peak_act) out->peak_act = mem_peak(MEM_ACT);
        out->losses[i] = result.loss;
        var_free(x);
        var_free(y);
        /* Nothing of the step outlives it: sub-tapes, caches, Revolve's slots, records. */
        assert_int_equal(mem_current(MEM_ACT), 0);
        assert_int_equal(mem_current(MEM_DISK), 0);
    }
    for (int i = 0; i < m->n_params; i++) out->params[i] = tensor_clone(m->params[i].var->value, MEM_WORK);
    out->model = NULL;
    optim_free(opt);
    schedule_free(own);
    model_free(m);
    return status;
}

void outcome_free(Outcome *o)
{
    for (int i = 0; i < o->n_params; i++) {
        tensor_free(o->grads[i]);
        tensor_free(o->params[i]);
    }
    *o = (Outcome){0};
}

void assert_same_outcome(const Outcome *a, const Outcome *b, const char *what)
{
    for (int step = 0; step < FIXTURE_STEPS; step++)
        if (memcmp(&a->losses[step], &b->losses[step], sizeof(float)))
            fail_msg("%s: the loss of step %d differs (%.9g vs %.9g)", what, step, a->losses[step], b->losses[step]);
    assert_int_equal(a->n_params, b->n_params);
    for (int i = 0; i < a->n_params; i++) {
        assert_true(a->grads[i] && b->grads[i]);
        if (memcmp(a->grads[i]->data, b->grads[i]->data, a->grads[i]->bytes))
            fail_msg("%s: the gradient of parameter %d differs", what, i);
        if (memcmp(a->params[i]->data, b->params[i]->data, a->params[i]->bytes))
            fail_msg("%s: parameter %d differs after %d steps", what, i, FIXTURE_STEPS);
    }
}
