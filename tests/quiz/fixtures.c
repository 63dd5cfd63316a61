/*
 * fixtures.c — the quiz tests' shared models and step helper (see fixtures.h).
 */
#include "tests/quiz/fixtures.h"

#include <math.h>
#include <string.h>

Model *quiz_gpt(float dropout)
{
    return gpt_create(&(GptConfig){.n_layers = 3, .d_model = 32, .n_heads = 4, .seq_len = 16,
                                   .vocab = 256, .dropout = dropout, .seed = 2026});
}

Var *quiz_tokens(uint64_t seed, Var **targets)
{
    Pcg32 rng;
    pcg32_seed(&rng, seed, 11);
    Tensor *x = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){2, 16});
    Tensor *t = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){2, 16});
    for (size_t i = 0; i < x->numel; i++) {
        x->i32[i] = (int32_t)pcg32_bounded(&rng, 256);
        t->i32[i] = (int32_t)pcg32_bounded(&rng, 256);
    }
    *targets = var_create(t, false, "targets");
    return var_create(x, false, "tokens");
}

QuizStep quiz_step(Model *model, const Strategy *strategy, Var *x, Var *targets)
{
    return quiz_step_offloaded(model, strategy, NULL, x, targets);
}

/* Where the gradients are copied once backward has computed them. */
typedef struct GradCopy {
    const Model *model;
    QuizStep *step;
} GradCopy;

static RematStatus copy_grads(void *user, Var *loss)
{
    (void)loss;
    GradCopy *c = user;
    for (int i = 0; i < c->model->n_params && i < 64; i++)
        c->step->grads[c->step->n_grads++] = tensor_clone(c->model->params[i].var->grad, MEM_WORK);
    return REMAT_OK;
}

QuizStep quiz_step_offloaded(Model *model, const Strategy *strategy, Offload *off, Var *x, Var *targets)
{
    return quiz_step_with(model, strategy, off, DROPOUT_RNG_STREAM, x, targets);
}

QuizStep quiz_step_with(Model *model, const Strategy *strategy, Offload *off, DropoutRng dropout_rng, Var *x,
                        Var *targets)
{
    QuizStep s = {0};
    GradCopy copy = {model, &s};
    Schedule *schedule = schedule_for_strategy(strategy, model->n_layers);
    TrainCtx ctx = {.training = true, .dropout_rng = dropout_rng, .seed = 7, .step = 0};
    pcg32_seed(&ctx.rng, 7, 7);
    flops_reset();
    mem_reset_peaks();
    const Step step = {.model = model, .schedule = schedule, .plugs = {step_offload_plug(off)}};
    StepResult result;
    const StepHooks hooks = {.backward_done = copy_grads, .user = &copy};
    s.status = step_run(&step, &(MicroBatch){x, targets}, 1, &ctx, &hooks, &result);
    s.loss = result.loss;
    s.stored_act = result.act_stored;
    s.peak_act = mem_peak(MEM_ACT);
    s.peak_disk = mem_peak(MEM_DISK);
    for (int p = 0; p < PHASE_COUNT; p++) s.flops[p] = flops_get((Phase)p);
    schedule_free(schedule);
    return s;
}

void quiz_step_free(QuizStep *s)
{
    for (int i = 0; i < s->n_grads; i++) tensor_free(s->grads[i]);
    s->n_grads = 0;
}

double quiz_max_grad_diff(const QuizStep *a, const QuizStep *b)
{
    double worst = 0.0;
    for (int i = 0; i < a->n_grads && i < b->n_grads; i++)
        for (size_t j = 0; j < a->grads[i]->numel; j++)
            worst = fmax(worst, fabs((double)a->grads[i]->f32[j] - (double)b->grads[i]->f32[j]));
    return worst;
}

bool quiz_same_grads(const QuizStep *a, const QuizStep *b)
{
    if (a->n_grads != b->n_grads || a->n_grads == 0) return false;
    for (int i = 0; i < a->n_grads; i++)
        if (memcmp(a->grads[i]->data, b->grads[i]->data, a->grads[i]->bytes)) return false;
    return true;
}
