/*
 * step.c — one training step (see step.h): micro-batches, their gradients summed in
 * order, the reduction, the optimizer; and, at the end, the plugs of offload and of data
 * parallelism, which only a caller that asks for them installs.
 */
#include "models/step.h"

#include <math.h>
#include <stdlib.h>

#include "tensor/kernels.h"

/* The step's forward: the model under the schedule (model_loss_planned), the plugs'
 * forward_begin and forward_end around it. The loss, a new Var the caller owns, with the
 * tape holding what backward needs; NULL on error. */
static Var *step_forward(const Step *step, Var *input, Var *targets, TrainCtx *ctx)
{
    int begun = 0;
    RematStatus status = REMAT_OK;
    for (const StepPlug *p = step->plugs; begun < STEP_MAX_PLUGS && status == REMAT_OK; p++, begun++)
        if (p->forward_begin && (status = p->forward_begin(p->ctx)) != REMAT_OK) break;
    Var *loss = status == REMAT_OK ? model_loss_planned(step->model, step->schedule, input, targets, ctx) : NULL;
    while (begun-- > 0) { /* with offload, the records may not have reached the disk */
        const StepPlug *p = &step->plugs[begun];
        if (p->forward_end && p->forward_end(p->ctx) != REMAT_OK) loss = then_free(NULL, loss);
    }
    return loss;
}

/* The first micro-batch's gradient tensor itself becomes the sum (no copy: s = g_0
 * exactly), and backward allocates the next one afresh from zeros. */
void step_accumulate(const Model *m, Tensor **sums, int r)
{
    Phase previous = flops_set_phase(PHASE_BACKWARD); /* the adds are gradient work */
    for (int i = 0; i < m->n_params; i++) {
        Var *p = m->params[i].var;
        if (!p->grad) continue; /* no path from the loss: its gradient stays absent */
        if (r == 0 || !sums[i]) {
            sums[i] = p->grad;
            p->grad = NULL;
        } else {
            k_add(sums[i]->f32, sums[i]->f32, p->grad->f32, p->grad->numel);
        }
    }
    flops_set_phase(previous);
}

void step_apply_sums(const Model *m, Tensor **sums, int n)
{
    Phase previous = flops_set_phase(PHASE_BACKWARD);
    for (int i = 0; i < m->n_params; i++) {
        if (!sums[i]) continue;
        Var *p = m->params[i].var;
        k_scale(sums[i]->f32, sums[i]->f32, 1.0f / (float)n, sums[i]->numel);
        tensor_free(p->grad);
        p->grad = sums[i];
        sums[i] = NULL;
    }
    flops_set_phase(previous);
}

/* The micro-batches this process runs, each a forward and a backward from zeroed gradients
 * (`hooks`, may be NULL, look at the first on the way), their gradients left summed in
 * .grad (× 1/n when it runs them all); out->loss their losses summed in order (step_run
 * makes it their mean), *rng_after the step's generator as it ends. `first` is the index
 * of batches[0] among the step's micro-batches. */
static RematStatus run_micro_batches(const Step *step, const MicroBatch *batches, int n, int first,
                                     TrainCtx *ctx, const StepHooks *hooks, StepResult *out, Pcg32 *rng_after)
{
    const Model *m = step->model;
    Tensor **sums = n > 1 ? calloc((size_t)m->n_params, sizeof *sums) : NULL;
    if (n > 1 && !sums) return remat_fail(REMAT_ENOMEM, "step: no memory for the gradient sums");
    const Pcg32 step_rng = ctx->rng;
    const uint32_t step_micro_batch = ctx->micro_batch;
    RematStatus status = REMAT_OK;
    for (int r = 0; r < n && status == REMAT_OK; r++) {
        ctx->rng = step_rng; /* micro-batch r's stretch of the stream starts r strides ahead */
        pcg32_advance(&ctx->rng, (uint64_t)(first + r) * STEP_MICRO_BATCH_STRIDE);
        ctx->micro_batch = (uint32_t)(first + r); /* counter-based dropout's key, as the stream's jump */
        const StepHooks *look = r == 0 ? hooks : NULL;
        for (int i = 0; i < m->n_params; i++) var_zero_grad(m->params[i].var);
        flops_set_phase(PHASE_FORWARD);
        Var *loss = step_forward(step, batches[r].input, batches[r].targets, ctx);
        status = loss ? REMAT_OK : remat_last_status();
        out->act_stored = mem_current(MEM_ACT);
        if (status == REMAT_OK && look && look->forward_done) status = look->forward_done(look->user, loss);
        if (status == REMAT_OK) status = backward(loss);
        if (status == REMAT_OK && look && look->backward_done) status = look->backward_done(look->user, loss);
        const float value = loss ? loss->value->f32[0] : NAN;
        out->loss = r == 0 ? value : out->loss + value;
        var_free(loss);
        tape_reset();
        flops_set_phase(PHASE_FORWARD);
        Pcg32 after = ctx->rng; /* where the step's generator ends: back by r strides, mod 2^64 */
        pcg32_advance(&after, (uint64_t)0 - (uint64_t)(first + r) * STEP_MICRO_BATCH_STRIDE);
        if (status == REMAT_OK && r > 0 && (after.state != rng_after->state || after.inc != rng_after->inc))
            status = remat_fail(REMAT_ESTATE, "step: micro-batch %d drew a different number of dropout masks "
                                "than micro-batch 0; the generator after the step would depend on who ran it",
                                first + r);
        *rng_after = after;
        if (status == REMAT_OK && n > 1) step_accumulate(m, sums, r);
    }
    ctx->rng = step_rng;
    ctx->micro_batch = step_micro_batch;
    if (status == REMAT_OK && n > 1) step_apply_sums(m, sums, n);
    for (int i = 0; sums && i < m->n_params; i++) tensor_free(sums[i]); /* left only on error */
    free(sums);
    return status;
}

RematStatus step_run(const Step *step, const MicroBatch *batches, int n, TrainCtx *ctx, const StepHooks *hooks,
                     StepResult *out)
{
    *out = (StepResult){.loss = NAN};
    const StepPlug *ranks = NULL; /* the plug that reduces over the ranks, if one does */
    for (int k = 0; k < STEP_MAX_PLUGS; k++)
        if (step->plugs[k].reduce) ranks = &step->plugs[k];
    if (n < 1 || (ranks && n != 1))
        return remat_fail(REMAT_EINVAL, "step: %d micro-batches; a step runs at least one, and one per rank "
                          "under data parallelism", n);
    Pcg32 rng_after = ctx->rng;
    for (int k = 0; k < STEP_MAX_PLUGS; k++) /* every plug's pass_begin, in order */
        if (step->plugs[k].pass_begin) step->plugs[k].pass_begin(step->plugs[k].ctx);
    RematStatus status = run_micro_batches(step, batches, n, ranks ? ranks->micro_batch : 0, ctx, hooks, out,
                                           &rng_after); /* zero, forward, backward, accumulate */
    for (int k = 0; k < STEP_MAX_PLUGS; k++) /* and its pass_end */
        if (step->plugs[k].pass_end) step->plugs[k].pass_end(step->plugs[k].ctx);
    /* Reduce: the plug's over the ranks, or the mean of the n micro-batches run here (their
     * gradients are already × 1/n). Its adds are gradient work, as accumulation's. */
    flops_set_phase(PHASE_BACKWARD);
    if (status == REMAT_OK && ranks) status = ranks->reduce(ranks->ctx, out->loss, &out->loss);
    else if (status == REMAT_OK) out->loss /= (float)n;
    if (status == REMAT_OK && !isfinite(out->loss)) /* every rank has the same mean: all stop */
        status = remat_fail(REMAT_ESTATE, "step: the loss is not finite (%g): training diverged; the "
                            "parameters and the optimizer state are left as they were before this step",
                            (double)out->loss);
    /* Update: the plug's (this rank's shard), or the optimizer's over everything, from
     * each parameter's .grad (NULL, NULL). */
    if (status == REMAT_OK && step->optim)
        status = ranks && ranks->optimizer_step ? ranks->optimizer_step(ranks->ctx, step->optim)
                                                : optim_step(step->optim, NULL, NULL);
    if (status == REMAT_OK) ctx->rng = rng_after;
    flops_set_phase(PHASE_FORWARD);
    return status;
}

/* ---- the capabilities that plug in ------------------------------------------------------ */

static RematStatus offload_begin(void *off) { return offload_push(off); }
static RematStatus offload_end(void *off) { return offload_pop(off); }

StepPlug step_offload_plug(Offload *off)
{
    if (!off) return (StepPlug){0};
    return (StepPlug){.forward_begin = offload_begin, .forward_end = offload_end, .ctx = off};
}

static void zero_begin(void *z) { zero_step_begin(z); } /* stage 3: parameters gathered as they are used */
static void zero_end(void *z) { zero_step_end(z); }
static RematStatus zero_mean(void *z, float loss, float *mean_loss) { return zero_reduce(z, loss, mean_loss); }
static RematStatus zero_update(void *z, Optimizer *opt) { return zero_optimizer_step(z, opt); }

StepPlug step_zero_plug(Zero *zero)
{
    if (!zero) return (StepPlug){0};
    return (StepPlug){.pass_begin = zero_begin, .pass_end = zero_end, .reduce = zero_mean,
                      .optimizer_step = zero_update, .micro_batch = zero_rank(zero), .ctx = zero};
}

Zero *step_zero_create(Model *model, const DistGroup *g, int stage)
{
    Zero *z = zero_create(g, stage, model->params, model->n_params);
    RematStatus status = z ? REMAT_OK : remat_last_status();
    for (int l = 0; l < model->n_layers && status == REMAT_OK; l++)
        status = zero_add_group(z, model->layers[l], model->layers[l]->params, model->layers[l]->n_params);
    if (status == REMAT_OK) status = zero_add_group(z, model, NULL, 0); /* the embedding and head's */
    if (status == REMAT_OK) return z;
    zero_free(z);
    return NULL;
}
