/*
 * predict.c — train --predict-only: one training step's memory predicted from the flags
 * alone, nothing built: the chain model from the model's shapes (checkpoint/cost.h:
 * chain_model) and the one prediction the planners use (schedule_predict). And --results:
 * the same figures as JSON, predicted or, after a run, measured by the ledger.
 *
 * What it is not: an estimate. A run it cannot predict exactly is refused, naming what
 * is not supported, rather than given a wrong figure. Only the peak of all kinds at once
 * is a bound where scratch or a second set of gradients comes and goes during the step.
 */
#include "app/train.h"

#include <inttypes.h>
#include <string.h>

#include "app/paper_accounting.h"
#include "base/platform.h"
#include "base/file.h"
#include "models/data.h"
#include "models/mlp.h"
#include "parallel/group.h"
#include "tensor/flops.h"

/* The first part of the run the prediction does not cover, or NULL. */
static const char *unsupported(const TrainOptions *o)
{
    const StepOptions *s = &o->step;
    if (s->offload) return "--offload (the spill file's timing is the run's)";
    if (dist_under_launcher()) return "more than one rank (data parallelism, ZeRO, pipelines)";
    if (s->strategy.kind == STRATEGY_DTR) return "--strategy dtr (its evictions depend on the run)";
    if (s->strategy.kind == STRATEGY_BUDGET) return "--strategy budget (its planners, ops among them, profile a step)";
    return NULL;
}

/* The chain model of the run's model and batch, with `policy`'s figures (NULL: none) and
 * the optimizer's state added to its fixed memory (every parameter, its gradient and the
 * MLP's teacher); kinds (by MemKind) gets those, which do not depend on the schedule, and
 * the workspace. NULL on error. */
static ChainCost *run_cost(const TrainOptions *o, const Policy *policy, size_t kinds[MEM_KIND_COUNT])
{
    const TrainCtx ctx = {.training = true, .dropout_rng = o->dropout_rng};
    const GptConfig gpt = {.n_layers = o->layers, .d_model = o->d_model, .n_heads = o->heads, .seq_len = o->seq,
                           .vocab = TEXT_VOCAB_SIZE, .dropout = o->dropout, .attention = o->attention};
    const bool is_gpt = o->model == MODEL_GPT;
    ChainCost *cost = is_gpt ? gpt_chain_model(&gpt, o->batch, &ctx, policy)
                             : mlp_chain_model(&(MlpConfig){.n_layers = o->layers, .width = o->d_model}, o->batch,
                                               policy);
    if (!cost) return NULL;
    const size_t teacher = is_gpt ? 0 : (size_t)mlp_task_bytes(o->d_model);
    kinds[MEM_WORK] = teacher + cost->work_peak;
    kinds[MEM_PARAM] = kinds[MEM_GRAD] = (cost->fixed - teacher) / 2;
    const int states = o->optimizer == OPTIM_SGD ? (o->momentum > 0.0f ? 1 : 0) : 2; /* AdamW: m and v */
    kinds[MEM_OPTIM] = (size_t)states * kinds[MEM_PARAM];
    cost->fixed += kinds[MEM_OPTIM];
    /* --accumulate K: the other micro-batches, drawn before the step, wait in ACT. */
    const size_t waiting = (size_t)(o->step.accumulate - 1) * cost->base;
    cost->base += waiting;
    cost->tail_peak += waiting;
    return cost;
}

/* Peaks by kind as JSON under `label` ("predicted", "measured"): params, grads, optimizer,
 * activations, workspace and the peak of them all at once, in bytes, with the RECOMPUTE
 * FLOPs of a step. */
static RematStatus write_results(const char *path, const char *label, const size_t kinds[MEM_KIND_COUNT],
                                 size_t peak, uint64_t recompute)
{
    FileReplacement f; /* a reader finds the old file or the new one, never a part */
    const char *step = "creating a temporary file beside it";
    int err = file_replace_start(&f, path, true);
    if (!err) {
        fprintf(f.out, "{\"%s\": {", label);
        for (int k = 0; k < MEM_DISK; k++) fprintf(f.out, "\"%s\": %zu, ", mem_kind_name((MemKind)k), kinds[k]);
        fprintf(f.out, "\"peak\": %zu, \"recompute_flops\": %" PRIu64 "}}\n", peak, recompute);
        err = file_replace_finish(&f, false, &step);
    }
    return err ? remat_fail(REMAT_EIO, "--results %s: %s failed: %s", path, step, strerror(err)) : REMAT_OK;
}

RematStatus train_write_measured(const char *path, int steps)
{
    size_t kinds[MEM_KIND_COUNT];
    for (int k = 0; k < MEM_KIND_COUNT; k++) kinds[k] = mem_peak((MemKind)k);
    return write_results(path, "measured", kinds, mem_peak_resident(),
                         steps ? flops_get(PHASE_RECOMPUTE) / (uint64_t)steps : 0);
}

RematStatus train_predict(const TrainOptions *o, FILE *out)
{
    const char *missing = unsupported(o);
    if (missing)
        return remat_fail(REMAT_EINVAL, "--predict-only does not predict %s yet: it predicts one process's step "
                          "under none, full, sqrt or selective", missing);
    if (o->accounting == ACCOUNTING_PAPER) {
        const PaperShape p = {.s = (uint64_t)o->seq, .b = (uint64_t)o->batch, .h = (uint64_t)o->d_model,
                              .a = (uint64_t)o->heads, .layers = o->layers, .t = o->tensor_parallel};
        return paper_accounting_report(&p, o->step.strategy.kind, o->results, out);
    }
    if (o->threads && platform_set_threads(o->threads) != REMAT_OK) /* fused attention's scratch is per thread */
        return remat_last_status();
    size_t kinds[MEM_KIND_COUNT];
    Schedule *s = schedule_for_strategy(&o->step.strategy, o->layers);
    ChainCost *cost = s ? run_cost(o, s->segments[0].policy, kinds) : NULL;
    RematStatus status = cost ? schedule_predict(s, cost) : remat_last_status();
    if (status == REMAT_OK) {
        Prediction *p = &s->predicted; /* of one micro-batch: --accumulate K runs K alike (models/step.h) */
        const int K = o->step.accumulate;
        p->forward_flops *= (uint64_t)K;
        p->recompute_flops *= (uint64_t)K;
        if (K > 1) { /* from the second on, each one's gradients are made beside the sum of those before */
            kinds[MEM_GRAD] *= 2;
            p->peak_total += kinds[MEM_PARAM]; /* as if all were there at the activations' peak */
        }
        kinds[MEM_ACT] = p->peak_act;
        fprintf(out, "predicted for one training step (--predict-only: nothing built), strategy %s:\n",
                strategy_name(o->step.strategy.kind));
        for (int k = 0; k < MEM_DISK; k++) fprintf(out, "  %-12s %14zu bytes\n", mem_kind_name((MemKind)k), kinds[k]);
        fprintf(out, "  %-12s %14zu bytes (all kinds at the same moment)\n", "peak", p->peak_total);
        fprintf(out, "  recompute    %" PRIu64 " FLOPs (the forward: %" PRIu64 ")\n", p->recompute_flops,
                p->forward_flops);
        if (o->results) status = write_results(o->results, "predicted", kinds, p->peak_total, p->recompute_flops);
    }
    schedule_free(s);
    chain_cost_free(cost);
    return status;
}
