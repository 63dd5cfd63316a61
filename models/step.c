/*
 * step.c — one training step (see step.h).
 */
#include "models/step.h"

#include <math.h>

#include "tensor/flops.h"

Var *step_forward(const Step *step, Var *input, Var *targets, TrainCtx *ctx)
{
    if (step->offload && offload_push(step->offload) != REMAT_OK) return NULL;
    Var *loss = model_loss_planned(step->model, step->schedule, input, targets, ctx);
    if (step->offload && offload_pop(step->offload) != REMAT_OK) { /* the records may not have reached the disk */
        var_free(loss);
        return NULL;
    }
    return loss;
}

RematStatus step_run(const Step *step, Var *input, Var *targets, TrainCtx *ctx, const StepHooks *hooks,
                     StepResult *out)
{
    *out = (StepResult){.loss = NAN};
    const Model *m = step->model;
    for (int i = 0; i < m->n_params; i++) var_zero_grad(m->params[i].var);

    flops_set_phase(PHASE_FORWARD);
    Var *loss = step_forward(step, input, targets, ctx);
    RematStatus status = loss ? REMAT_OK : remat_last_status();
    out->act_stored = mem_current(MEM_ACT);
    if (status == REMAT_OK && hooks && hooks->forward_done) status = hooks->forward_done(hooks->user, loss);
    if (status == REMAT_OK) status = backward(loss);
    if (status == REMAT_OK && hooks && hooks->backward_done) status = hooks->backward_done(hooks->user, loss);
    if (status == REMAT_OK && step->optim) status = optim_step(step->optim);
    if (loss) out->loss = loss->value->f32[0];
    var_free(loss);
    tape_reset(tape_current());
    flops_set_phase(PHASE_FORWARD);
    return status;
}
