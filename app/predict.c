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
#include <stdlib.h>

#include "app/paper_accounting.h"
#include "base/platform.h"
#include "base/file.h"
#include "models/data.h"
#include "models/mlp.h"
#include "parallel/group.h"
#include "parallel/pipeline.h"
#include "tensor/flops.h"

/* The first part of the run the prediction does not cover, or NULL. */
static const char *unsupported(const TrainOptions *o)
{
    const StepOptions *s = &o->step;
    if (s->offload) return "--offload (the spill file's timing is the run's)";
    if (dist_under_launcher()) return "more than one rank (data parallelism, ZeRO; a pipeline needs no mpirun)";
    if (s->strategy.kind == STRATEGY_DTR) return "--strategy dtr (its evictions depend on the run)";
    if (s->strategy.kind == STRATEGY_BUDGET) return "--strategy budget (its planners, ops among them, profile a step)";
    if (s->pipeline_stages && o->results) return "--results for a pipeline (it prints each stage's peak)";
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
    /* --accumulate K or a pipeline's M: the other micro-batches, drawn before the step, wait in ACT. */
    const int drawn = o->step.pipeline_stages ? o->step.micro_batches : o->step.accumulate;
    const size_t waiting = (size_t)(drawn - 1) * cost->base;
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
    char json[512];
    int n = snprintf(json, sizeof json, "{\"%s\": {", label);
    for (int k = 0; k < MEM_DISK; k++)
        n += snprintf(json + n, sizeof json - (size_t)n, "\"%s\": %zu, ", mem_kind_name((MemKind)k), kinds[k]);
    snprintf(json + n, sizeof json - (size_t)n, "\"peak\": %zu, \"recompute_flops\": %" PRIu64 "}}\n", peak,
             recompute);
    return file_replace_text("--results", path, json);
}

RematStatus train_write_measured(const char *path, int steps)
{
    size_t kinds[MEM_KIND_COUNT];
    for (int k = 0; k < MEM_KIND_COUNT; k++) kinds[k] = mem_peak((MemKind)k);
    return write_results(path, "measured", kinds, mem_peak_resident(),
                         steps ? flops_get(PHASE_RECOMPUTE) / (uint64_t)steps : 0);
}

/* ---- the moment of the peak ---------------------------------------------------------- */

/* Prints where schedule_predict's peak ACT is first reached, its figures (cost.h) in the step's
 * order: the embedding, plain layers' forwards (a region's holds less than its replay), the
 * head, the backwards from the last segment (a replay among them, as the ledger counts it). */
static void print_moment(FILE *out, const Schedule *s, const ChainCost *c)
{
    const size_t peak = s->predicted.peak_act;
    size_t state = c->base + c->embed;
    const char *where = c->base + c->embed_peak == peak ? "in the embedding's forward" : NULL;
    Segment at = {0}; /* its layers: none for the embedding or the head */
    for (int i = 0; i < s->n_segments && !where; i++) {
        const Segment *g = &s->segments[i];
        for (int k = g->first; g->kind == SEGMENT_PLAIN && k < g->first + g->count && !where; k++) {
            where = state + c->layers[k].fwd_peak == peak ? "in the forward of" : NULL;
            at = (Segment){.first = k, .count = where ? 1 : 0};
            state += c->layers[k].kept;
        }
        SegmentFigures f;
        if (g->kind != SEGMENT_PLAIN && chain_segment(c, g, &f)) state += f.adds;
    }
    if (!where && state + c->head_peak == peak) where = "in the head (its forward or backward)";
    for (int i = s->n_segments - 1; i >= 0 && !where; i--) {
        const Segment *g = &s->segments[i];
        const bool plain = g->kind == SEGMENT_PLAIN;
        for (int k = g->first + g->count - 1; k >= g->first && !where; k = plain ? k - 1 : -1) {
            const Segment one = plain ? (Segment){.kind = SEGMENT_PLAIN, .first = k, .count = 1} : *g;
            SegmentFigures f = {0};
            chain_segment(c, &one, &f);
            state -= f.adds;
            if (state + f.need == peak) where = plain ? "in the backward of" : "in the replay or backward of";
            at = one;
        }
    }
    fprintf(out, "  the peak is reached %s", where ? where : "in the embedding's backward");
    if (where && at.count) fprintf(out, at.count > 1 ? " h.%d-h.%d" : " h.%d", at.first, at.first + at.count - 1);
    fputc('\n', out);
}

/* ---- pipelines ------------------------------------------------------------------------ */

/* Stage s's chain model: run_cost's for its blocks, with what a stage holds besides
 * (models/pipeline.c): after the first, its x_0 is the activation received; before the last,
 * no head, and its output and the gradient received (dy, which a last region counts as its
 * gradient in) stay to the end of its backward, where the loss and its seed would. */
static ChainCost *stage_cost(const TrainOptions *o, const Schedule *sch, int s)
{
    TrainOptions mine = *o;
    mine.layers = sch->n_layers;
    size_t kinds[MEM_KIND_COUNT];
    ChainCost *c = run_cost(&mine, sch->segments[0].policy, kinds);
    if (!c) return NULL;
    if (s + 1 < o->step.pipeline_stages) {
        const size_t out = c->layers[c->n_layers - 1].out_bytes;
        const size_t resid = sch->segments[sch->n_segments - 1].kind == SEGMENT_REGION ? out : 2 * out;
        for (int k = 0; k < c->n_layers; k++) c->layers[k].policy.need += resid - c->resid; /* measured with R */
        c->tail_peak += resid - c->resid;
        c->resid = resid;
        c->head_peak = c->head_kept = 0;
    }
    if (s > 0) { /* x_0 is the activation received, and no embedding's backward follows */
        c->embed = c->embed_peak = c->layers[0].in_bytes;
        c->tail_peak = 0;
    }
    return c;
}

/* Each stage's peak ACT: one micro-batch's step on its blocks (schedule_predict) under the
 * others it holds at once (walking its actions from pipe_actions, as the run does), each
 * holding what its forward left, and on the last stage the head's: the forward that fills
 * the stage and the backward after it both find live − 1 others there. */
static RematStatus predict_pipeline(const TrainOptions *o, FILE *out)
{
    const int P = o->step.pipeline_stages, M = o->step.micro_batches;
    PipeAction *acts = malloc(2 * (size_t)M * sizeof *acts);
    if (!acts) return remat_fail(REMAT_ENOMEM, "--predict-only: no memory for %d actions", 2 * M);
    fprintf(out, "predicted peak activations of each stage (--predict-only: nothing built), %d stages, %s, %d "
            "micro-batches, strategy %s:\n", P, name_of(&PIPE_SCHEDULE_NAMES, o->step.pipeline_schedule), M,
            strategy_name(o->step.strategy.kind));
    RematStatus status = REMAT_OK;
    for (int s = 0, first, count; s < P && status == REMAT_OK; s++) {
        const int n = pipe_actions(o->step.pipeline_schedule, P, s, M, acts);
        int live = 0, most = 0;
        for (int i = 0; i < n; i++) {
            live += acts[i].kind == PIPE_FORWARD ? 1 : -1;
            most = live > most ? live : most;
        }
        pipe_split(o->layers, P, s, &first, &count);
        Schedule *sch = schedule_for_strategy(&o->step.strategy, count);
        ChainCost *c = sch ? stage_cost(o, sch, s) : NULL;
        status = c ? schedule_predict(sch, c) : remat_last_status();
        if (status == REMAT_OK) {
            const size_t held = sch->predicted.forward_kept + c->head_kept, one = sch->predicted.peak_act;
            const size_t in = s > 0 ? c->layers[0].in_bytes : 0, dy = s + 1 < P ? c->layers[count - 1].out_bytes : 0;
            fprintf(out, "  stage %d, blocks %d-%d%s, %d micro-batch(es) at once: %zu bytes = one micro-batch's "
                    "step %zu + %d more in flight x %zu held\n    boundary buffers in these: %zu received a "
                    "micro-batch, %zu of gradient through its backward\n", s, first, first + count - 1,
                    s == 0 ? " and the embedding" : s + 1 == P ? " and the head" : "", most,
                    one + (size_t)(most - 1) * held, one, most - 1, held, in, dy);
            /* a gradient sent after a backward is freed at the next receive that finds it gone */
            if (in && o->step.pipeline_schedule == PIPE_1F1B && most < M)
                fprintf(out, "    and up to %zu more: the gradient it sent, until MPI says it went\n", in);
        }
        schedule_free(sch);
        chain_cost_free(c);
    }
    free(acts);
    return status;
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
    if (o->step.pipeline_stages) return predict_pipeline(o, out);
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
        print_moment(out, s, cost);
        if (o->results) status = write_results(o->results, "predicted", kinds, p->peak_total, p->recompute_flops);
    }
    schedule_free(s);
    chain_cost_free(cost);
    return status;
}
