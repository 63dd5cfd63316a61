/*
 * predict.c — train --predict-only: one training step's memory predicted from the flags
 * alone, nothing built: the chain model from the model's shapes (checkpoint/cost.h:
 * chain_model) and the one prediction the planners use (schedule_predict), or with
 * --offload the step walked event by event (predict_spill.c). And --results: the
 * same figures as JSON, predicted or, after a run, measured by the ledger.
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
#include "parallel/zero.h"
#include "tensor/flops.h"

/* The first part of the run the prediction does not cover, or NULL. */
static const char *unsupported(const TrainOptions *o)
{
    const StepOptions *s = &o->step;
    if (s->offload && (o->ranks > 1 || s->pipeline_stages || s->strategy.kind == STRATEGY_SELECTIVE))
        return "--offload with --ranks, --pipeline-stages or --strategy selective (the walk of a step's saves "
               "knows one process's plain layers and regions without a policy)";
    if (o->ranks > 1 && (s->pipeline_stages || s->accumulate > 1))
        return "--ranks with --pipeline-stages or --accumulate (K ranks are --accumulate K)";
    return NULL;
}

/* What a rank holds beside ACT that comes and goes within the step, in bytes: at ZeRO
 * stage 3 the group whole while used (a block's, or the rest's for the embedding and
 * head); from stage 2 the full gradients, made by backward, the rest's in the head's. */
typedef struct StepExtras {
    size_t block_group, rest_group, block_grads, rest_grads;
    size_t full_grads, reduce; /* from stage 2, and the reduction's workspace, after backward */
} StepExtras;

/* Rank 0 of o->ranks under ZeRO stage S (parallel/zero.h's table; one process is K = 1,
 * stage 0), for a model whose layers hold `block` parameters each and the rest `rest`:
 * kinds gets its params, grads and optimizer state at their peaks and the reduction's
 * workspace, *fixed what is resident between steps, *x what comes and goes in a step. */
static void rank_kinds(const TrainOptions *o, double block, double rest, size_t kinds[MEM_KIND_COUNT], size_t *fixed,
                       StepExtras *x)
{
    const int K = o->ranks, S = K > 1 ? o->step.zero_stage : 0;
    const size_t psi = kinds[MEM_PARAM] / sizeof(float), shard = shard_begin(psi, 1, K), f = sizeof(float);
    const int states = o->optimizer == OPTIM_SGD ? (o->momentum > 0.0f ? 1 : 0) : 2; /* AdamW: m and v */
    const ZeroBytes z = zero_resident_bytes(S, psi, shard, states);
    *x = (StepExtras){0};
    if (S == 3) x->block_group = (size_t)block * f, x->rest_group = (size_t)rest * f;
    if (S >= 2) x->block_grads = (size_t)block * f, x->rest_grads = (size_t)rest * f, x->full_grads = psi * f;
    x->reduce = K > 1 ? (dist_scratch_floats(shard) + (S < 2 ? shard : 0)) * f : 0; /* a chunk; the shard's sum */
    kinds[MEM_PARAM] = z.params + (x->block_group > x->rest_group ? x->block_group : x->rest_group);
    kinds[MEM_GRAD] = z.grads + x->full_grads;
    kinds[MEM_OPTIM] = z.optimizer;
    kinds[MEM_WORK] = x->reduce > kinds[MEM_WORK] ? x->reduce : kinds[MEM_WORK];
    *fixed = z.params + z.grads + z.optimizer;
}

/* The chain model of the run's model and batch (a GPT of `vocab` tokens), with `policy`'s
 * figures (NULL: none), and what is resident besides (rank_kinds, the MLP's teacher) in
 * its fixed memory; kinds (by MemKind) gets what does not depend on the schedule, *x what
 * a step adds beside ACT. NULL on error. */
static ChainCost *run_cost(const TrainOptions *o, int vocab, const Policy *policy, size_t kinds[MEM_KIND_COUNT],
                           StepExtras *x)
{
    const TrainCtx ctx = {.training = true, .dropout_rng = o->dropout_rng};
    const GptConfig gpt = {.n_layers = o->layers, .d_model = o->d_model, .n_heads = o->heads, .seq_len = o->seq,
                           .vocab = vocab, .dropout = o->dropout, .attention = o->attention};
    const MlpConfig mlp = {.n_layers = o->layers, .width = o->d_model};
    const bool is_gpt = o->model == MODEL_GPT;
    const bool ops = o->step.strategy.kind == STRATEGY_BUDGET && o->step.planner == PLANNER_OPS;
    ChainCost *cost = is_gpt ? gpt_chain_model(&gpt, o->batch, &ctx, policy, ops)
                             : mlp_chain_model(&mlp, o->batch, policy, ops);
    if (!cost) return NULL;
    const size_t teacher = is_gpt ? 0 : (size_t)mlp_task_bytes(o->d_model);
    kinds[MEM_WORK] = cost->work_peak;
    kinds[MEM_PARAM] = (cost->fixed - teacher) / 2;
    /* a layer's parameters, and the rest's (the GPT's embeddings and final norm) */
    GptConfig none = gpt;
    none.n_layers = 0;
    const double all = is_gpt ? gpt_param_count(&gpt) : mlp_param_count(&mlp);
    const double rest = is_gpt ? gpt_param_count(&none) : 0;
    rank_kinds(o, (all - rest) / o->layers, rest, kinds, &cost->fixed, x);
    kinds[MEM_WORK] += teacher;
    cost->fixed += teacher;
    /* --accumulate K, a pipeline's M or K ranks: the other micro-batches, drawn before the
     * step (every rank draws all K), wait in ACT. */
    const int drawn = o->step.pipeline_stages ? o->step.micro_batches : o->ranks > 1 ? o->ranks : o->step.accumulate;
    const size_t waiting = (size_t)(drawn - 1) * cost->base;
    cost->base += waiting;
    cost->tail_peak += waiting;
    return cost;
}

/* Peaks by kind as JSON under `label` ("predicted", "measured"): params, grads, optimizer,
 * activations, workspace, disk (offload's spill file) and the peak of the resident ones at
 * once, in bytes, with the RECOMPUTE FLOPs of a step. */
static RematStatus write_results(const char *path, const char *label, const size_t kinds[MEM_KIND_COUNT],
                                 size_t peak, uint64_t recompute)
{
    char json[512];
    int n = snprintf(json, sizeof json, "{\"%s\": {", label);
    for (int k = 0; k < MEM_KIND_COUNT; k++)
        n += snprintf(json + n, sizeof json - (size_t)n, "\"%s\": %zu, ", name_of(&MEM_KIND_NAMES, k), kinds[k]);
    snprintf(json + n, sizeof json - (size_t)n, "\"peak\": %zu, \"recompute_flops\": %" PRIu64 "}}\n", peak,
             recompute);
    return file_replace_text("--results", path, json);
}

RematStatus train_write_measured(const char *path, int steps)
{
    size_t kinds[MEM_KIND_COUNT];
    for (int k = 0; k < MEM_KIND_COUNT; k++) kinds[k] = mem_peak((MemKind)k);
    return write_results(path, "measured", kinds, mem_peak_moment().resident,
                         steps ? flops_get(PHASE_RECOMPUTE) / (uint64_t)steps : 0);
}

/* ---- the moment of the peak ---------------------------------------------------------- */

/* The moment the step's memory peaks: what runs, its layers (none: the embedding or the
 * head), all it holds then above the resident state, ACT and the extras, and the op about
 * to run (its tag, in layer op_layer; −1: the embedding's or the head's). */
typedef struct Moment {
    const char *where;
    Segment at;
    size_t held;
    const char *op;
    int op_layer;
} Moment;

/* *best becomes that moment if what it holds there, `act` and the extras, is more. */
static void consider(Moment *best, const char *where, Segment at, size_t act, size_t extra, const char *op,
                     int op_layer)
{
    if (act + extra > best->held || !best->where) *best = (Moment){where, at, act + extra, op, op_layer};
}

/* The moment of the peak: the step's moments in its order (the embedding, plain layers'
 * forwards — a region's holds less than its replay — the head, the backwards from the last
 * segment, a replay among them, as the ledger counts them) with schedule_predict's figures
 * (cost.h; Revolve's, over the whole chain, from revolve_predict), the first that holds the
 * most. A backward's gradients are counted as made (a bound: they are made during it). */
static Moment peak_moment(const Schedule *s, const ChainCost *c, const StepExtras *x)
{
    Moment best = {0};
    size_t state = c->base + c->embed;
    consider(&best, "in the embedding's forward", (Segment){0}, c->base + c->embed_peak, x->rest_group, c->embed_op,
             -1);
    for (int i = 0; i < s->n_segments; i++) {
        const Segment *g = &s->segments[i];
        for (int k = g->first; g->kind == SEGMENT_PLAIN && k < g->first + g->count; k++) {
            consider(&best, "in the forward of", (Segment){.first = k, .count = 1}, state + c->layers[k].fwd_peak,
                     x->block_group, c->layers[k].fwd_op, k);
            state += c->layers[k].kept;
        }
        SegmentFigures f;
        if (g->kind != SEGMENT_PLAIN && chain_segment(c, g, &f)) state += f.adds;
        if (g->kind == SEGMENT_REVOLVE) state = c->base + s->predicted.forward_kept; /* the whole chain's */
    }
    size_t grads = x->rest_grads;
    consider(&best, "in the head (its forward or backward)", (Segment){0}, state + c->head_peak,
             x->rest_group + grads, c->head_op, -1);
    for (int i = s->n_segments - 1; i >= 0; i--) {
        const Segment *g = &s->segments[i];
        const bool plain = g->kind == SEGMENT_PLAIN;
        for (int k = g->first + g->count - 1; k >= g->first; k = plain ? k - 1 : -1) {
            const Segment one = plain ? (Segment){.kind = SEGMENT_PLAIN, .first = k, .count = 1} : *g;
            SegmentFigures f = {0};
            chain_segment(c, &one, &f);
            if (g->kind == SEGMENT_REVOLVE) f.need = s->predicted.peak_act - state; /* its first forward's too */
            state -= f.adds;
            consider(&best, plain ? "in the backward of" : "in the replay or backward of", one, state + f.need,
                     x->block_group + grads + x->block_grads, f.op, f.op_layer);
            grads += (size_t)one.count * x->block_grads;
        }
    }
    consider(&best, "in the embedding's backward", (Segment){0}, c->tail_peak, x->rest_group + grads, c->tail_op, -1);
    return best;
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
    StepExtras x;
    ChainCost *c = run_cost(&mine, TEXT_VOCAB_SIZE, sch->segments[0].policy, kinds, &x);
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
 * the stage and the backward after it both find live − 1 others there. With --results,
 * the same figures as JSON, a stage each. */
static RematStatus predict_pipeline(const TrainOptions *o, FILE *out)
{
    const int P = o->step.pipeline_stages, M = o->step.micro_batches;
    const size_t size = 64 + 192 * (size_t)P;
    PipeAction *acts = malloc(2 * (size_t)M * sizeof *acts);
    char *json = o->results ? malloc(size) : NULL;
    RematStatus status = acts && (json || !o->results) ? REMAT_OK
                         : remat_fail(REMAT_ENOMEM, "--predict-only: no memory for %d actions", 2 * M);
    size_t used = json ? (size_t)snprintf(json, size, "{\"predicted\": {\"stages\": [") : 0;
    fprintf(out, "predicted peak activations of each stage (--predict-only: nothing built), %d stages, %s, %d "
            "micro-batches, strategy %s:\n", P, name_of(&PIPE_SCHEDULE_NAMES, o->step.pipeline_schedule), M,
            name_of(&STRATEGY_NAMES, o->step.strategy.kind));
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
            const size_t peak = one + (size_t)(most - 1) * held;
            /* a gradient sent after a backward is freed at the next receive that finds it gone */
            const size_t sent = in && o->step.pipeline_schedule == PIPE_1F1B && most < M ? in : 0;
            fprintf(out, "  stage %d, blocks %d-%d%s, %d micro-batch(es) at once: %zu bytes = one micro-batch's "
                    "step %zu + %d more in flight x %zu held\n    boundary buffers in these: %zu received a "
                    "micro-batch, %zu of gradient through its backward\n", s, first, first + count - 1,
                    s == 0 ? " and the embedding" : s + 1 == P ? " and the head" : "", most, peak, one, most - 1,
                    held, in, dy);
            if (sent) fprintf(out, "    and up to %zu more: the gradient it sent, until MPI says it went\n", sent);
            if (json)
                used += (size_t)snprintf(json + used, size - used, "%s{\"first\": %d, \"last\": %d, \"in_flight\": %d, "
                                      "\"activations\": %zu, \"up_to\": %zu}", s ? ", " : "", first,
                                      first + count - 1, most, peak, peak + sent);
        }
        schedule_free(sch);
        chain_cost_free(c);
    }
    if (status == REMAT_OK && json) {
        snprintf(json + used, size - used, "]}}\n");
        status = file_replace_text("--results", o->results, json);
    }
    free(acts), free(json);
    return status;
}

RematStatus train_predict_memory(const TrainOptions *o, int vocab, MemoryPrediction *p, FILE *plan)
{
    const char *missing = unsupported(o);
    if (missing) return remat_fail(REMAT_EINVAL, "predicting a step: %s is not predicted", missing);
    *p = (MemoryPrediction){0}; /* DISK among it: 0 without offload */
    StepExtras x = {0};
    const bool budget = o->step.strategy.kind == STRATEGY_BUDGET; /* planned as the run plans it, on this model */
    const Strategy none = strategy_defaults(STRATEGY_NONE); /* dtr's step where it evicts nothing */
    const Strategy *strategy = o->step.strategy.kind == STRATEGY_DTR ? &none : &o->step.strategy;
    Schedule *s = budget ? NULL : schedule_for_strategy(strategy, o->layers);
    ChainCost *cost = budget || s ? run_cost(o, vocab, s ? s->segments[0].policy : NULL, p->kinds, &x) : NULL;
    if (budget && cost) s = planner_plan(o->step.planner, cost, o->step.memory_budget);
    RematStatus status = s && cost ? schedule_predict(s, cost) : remat_last_status();
    if (status == REMAT_OK && budget && plan) schedule_print(s, NULL, plan);
    if (status == REMAT_OK && o->step.offload) status = train_predict_spilled(cost, s, &o->step.offload_opts, p);
    if (status == REMAT_OK) {
        Prediction *q = &s->predicted; /* of one micro-batch: --accumulate K runs K alike (models/step.h) */
        const int K = o->step.accumulate;
        if (o->step.offload) /* the walk's ACT, and all at once what is resident besides */
            q->peak_act = p->kinds[MEM_ACT], q->peak_total = cost->fixed + cost->work_peak + q->peak_act;
        if (K > 1) { /* from the second on, each one's gradients are made beside the sum of those before */
            p->kinds[MEM_GRAD] *= 2;
            q->peak_total += p->kinds[MEM_PARAM]; /* as if all were there at the activations' peak */
        }
        const Segment at = {.first = p->first, .count = p->count};
        const Moment m = o->step.offload ? (Moment){p->moment, at, q->peak_act, NULL, -1} : peak_moment(s, cost, &x);
        const size_t fixed = cost->fixed + cost->work_peak, after = cost->fixed + x.full_grads + x.reduce;
        p->kinds[MEM_ACT] = q->peak_act;
        p->peak = fixed + m.held > q->peak_total ? fixed + m.held : q->peak_total;
        p->peak = after + cost->base > p->peak ? after + cost->base : p->peak; /* the reduction, batch still there */
        p->recompute_flops = q->recompute_flops * (uint64_t)K;
        p->forward_flops = q->forward_flops * (uint64_t)K;
        p->moment = m.where, p->first = m.at.first, p->count = m.at.count, p->op = m.op, p->op_layer = m.op_layer;
    }
    if (status == REMAT_OK && o->step.strategy.kind == STRATEGY_DTR && p->peak > o->step.memory_budget)
        status = remat_fail(REMAT_EINVAL, "--strategy dtr would evict under --memory-budget %zu bytes (the step needs "
                            "%zu without evicting): which tensors, and so what it recomputes, the run decides; from "
                            "%zu bytes it evicts nothing, and that is predicted", o->step.memory_budget, p->peak,
                            p->peak);
    schedule_free(s);
    chain_cost_free(cost);
    return status;
}

RematStatus train_predict(const TrainOptions *o, FILE *out)
{
    const char *missing = dist_under_launcher() ? "a run under mpirun (give its ranks as --ranks K; a pipeline's "
                                                  "are its stages)" : unsupported(o);
    if (missing)
        return remat_fail(REMAT_EINVAL, "--predict-only does not predict %s yet: it predicts a step under none, full, "
                          "sqrt, selective, budget or dtr: one process's, rank 0's of --ranks K, or a pipeline's",
                          missing);
    if (o->accounting == ACCOUNTING_PAPER) {
        const PaperShape p = {.s = (uint64_t)o->seq, .b = (uint64_t)o->batch, .h = (uint64_t)o->d_model,
                              .a = (uint64_t)o->heads, .layers = o->layers, .t = o->tensor_parallel};
        return paper_accounting_report(&p, o->step.strategy.kind, o->results, out);
    }
    if (o->threads && platform_set_threads(o->threads) != REMAT_OK) /* fused attention's scratch is per thread */
        return remat_last_status();
    if (o->step.pipeline_stages) return predict_pipeline(o, out);
    MemoryPrediction p;
    if (train_predict_memory(o, TEXT_VOCAB_SIZE, &p, out) != REMAT_OK) return remat_last_status();
    fprintf(out, "predicted for one training step (--predict-only: nothing built), strategy %s",
            name_of(&STRATEGY_NAMES, o->step.strategy.kind));
    if (o->ranks > 1) fprintf(out, ", rank 0 of %d at ZeRO stage %d", o->ranks, o->step.zero_stage);
    fprintf(out, ":\n");
    for (int k = 0; k < (o->step.offload ? MEM_KIND_COUNT : MEM_DISK); k++)
        fprintf(out, "  %-12s %14zu bytes\n", name_of(&MEM_KIND_NAMES, k), p.kinds[k]);
    fprintf(out, "  %-12s %14zu bytes (all kinds at the same moment%s)\n", "peak", p.peak,
            o->ranks > 1 && o->step.zero_stage >= 2 ? "; a bound: the gradients of what backward runs counted as "
                                                      "made" : "");
    if (o->step.memory_budget)
        fprintf(out, "  --memory-budget %zu bytes: %s\n", o->step.memory_budget, p.peak <= o->step.memory_budget
                ? (o->step.strategy.kind == STRATEGY_DTR ? "the peak fits: dtr evicts nothing, its step is none's"
                                                         : "the peak fits")
                : "the peak is over it: the run stops out of memory if its ledger reaches it");
    fprintf(out, "  recompute    %" PRIu64 " FLOPs (the forward: %" PRIu64 ")\n", p.recompute_flops, p.forward_flops);
    fprintf(out, "  the peak is reached %s", p.moment);
    if (p.count) fprintf(out, p.count > 1 ? " h.%d-h.%d" : " h.%d", p.first, p.first + p.count - 1);
    if (p.op && p.op_layer >= 0) fprintf(out, ", at h.%d.%s", p.op_layer, p.op);
    else if (p.op) fprintf(out, ", at %s", p.op);
    fputc('\n', out);
    return o->results ? write_results(o->results, "predicted", p.kinds, p.peak, p.recompute_flops) : REMAT_OK;
}
