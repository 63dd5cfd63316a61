/*
 * train_report.c — what `train` prints (see train_report.h).
 */
#include "app/train_report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"
#include "checkpoint/dtr.h"
#include "models/data.h"

void report_header(FILE *out, const TrainOptions *o, const Model *m, const Schedule *s, bool planned)
{
    const PlatformInfo info = platform_info();
    const bool gpt = o->model == MODEL_GPT;
    char buf[32];
    fprintf(out, "remat train: %s, %d %s%s, %s %d, %s of parameters, %s, %d threads (OpenBLAS %s, %s)\n",
            name_of(&MODEL_KIND_NAMES, o->model), o->layers, gpt ? "block" : "layer", o->layers == 1 ? "" : "s",
            gpt ? "d_model" : "width", o->d_model, mem_format_bytes(buf, sizeof buf, model_param_bytes(m)),
            name_of(&OPTIM_KIND_NAMES, o->optimizer), info.threads, info.blas_threading, info.blas_core);
    const bool counter = gpt && o->dropout_rng == DROPOUT_RNG_COUNTER, fused = gpt && o->attention == ATTENTION_FUSED;
    if (counter || fused)
        fprintf(out, "  %s%s%s\n", counter ? "counter-based dropout (masks not kept)" : "",
                counter && fused ? ", " : "", fused ? "fused attention" : "");
    /* "checkpointing: sqrt, 3 regions", with Revolve's slots, the policy and whether the
     * generator is replayed; the line is left open for the planner's words. */
    fprintf(out, "  checkpointing: %s", name_of(&STRATEGY_NAMES, s->strategy));
    const int slots = s->strategy == STRATEGY_NONE ? 0 : schedule_revolve_slots(s);
    if (slots) {
        fprintf(out, ", Revolve with %d slot%s", slots, slots == 1 ? "" : "s");
    } else if (s->strategy == STRATEGY_DTR) {
        fprintf(out, ", evicting under the budget");
    } else if (s->strategy != STRATEGY_NONE) {
        const int regions = schedule_regions(s);
        fprintf(out, ", %d region%s", regions, regions == 1 ? "" : "s");
    }
    const Policy *policy = NULL; /* the first region's that has one */
    for (int i = 0; i < s->n_segments && !policy; i++)
        if (s->segments[i].kind == SEGMENT_REGION) policy = s->segments[i].policy;
    if (policy) fprintf(out, ", policy %s", policy->name);
    if (s->strategy != STRATEGY_NONE && !s->replay.preserve_rng) fprintf(out, ", generator NOT replayed");
    if (planned)
        fprintf(out, ", planner %s, budget %s", name_of(&PLANNER_NAMES, o->step.planner),
                mem_format_bytes(buf, sizeof buf, o->step.memory_budget));
    fputc('\n', out);
    if (planned) schedule_print(s, m->layers, out);
}

/* The first rule that holds, in this order: selective attention_core over fused attention;
 * from ZeRO stage 2, the full gradients above the activations at the peak; parameters,
 * gradients and optimizer state above them; and, when
 * --explain-memory saw the saved tensors live then, the head's logits the largest of them,
 * or a region's replay holding more of them than is kept. NULL when none holds. */
static const char *why_not_lower(const TrainOptions *o, const MemPeakMoment *p, const ExplainPeak *saved,
                                 char *buf, size_t size)
{
    const Strategy *s = &o->step.strategy;
    const bool regions = s->kind != STRATEGY_NONE && s->kind != STRATEGY_DTR;
    const size_t fixed = p->current[MEM_PARAM] + p->current[MEM_GRAD] + p->current[MEM_OPTIM];
    char f[32], a[32];
    if (s->kind == STRATEGY_SELECTIVE && o->attention == ATTENTION_FUSED &&
        (!s->policy || s->policy == &POLICY_ATTENTION_CORE))
        return "fused attention already keeps no T^2 tensor, so selective attention_core frees only the core's "
               "O(T) outputs";
    if (s->kind != STRATEGY_NONE && o->step.zero_stage >= 2 && p->current[MEM_GRAD] > p->current[MEM_ACT]) {
        snprintf(buf, size, "the peak holds the gradients backward makes in full (%s) before ZeRO stage %d's "
                 "reduce-scatter leaves this rank its shard: only between steps is the shard all that stays",
                 mem_format_bytes(f, sizeof f, p->current[MEM_GRAD]), o->step.zero_stage);
        return buf;
    }
    if (s->kind != STRATEGY_NONE && fixed > p->current[MEM_ACT]) {
        snprintf(buf, size, "the peak is the optimizer state (quiz question 8): parameters, gradients and "
                 "optimizer state held %s against %s of activations", mem_format_bytes(f, sizeof f, fixed),
                 mem_format_bytes(a, sizeof a, p->current[MEM_ACT]));
        return buf;
    }
    if (!regions || !saved) return NULL;
    if (saved->largest_op && !strcmp(saved->largest_op, "cross_entropy")) {
        snprintf(buf, size, "the peak is the head's logits, B*T*V = %d*%d*%d floats, outside every checkpoint "
                 "region", o->batch, o->seq, TEXT_VOCAB_SIZE);
        return buf;
    }
    if (saved->recomputed <= saved->kept) return NULL;
    snprintf(buf, size, "the peak is one region's replay working set (%s recomputed against %s kept); smaller "
             "regions would lower that part", mem_format_bytes(f, sizeof f, saved->recomputed),
             mem_format_bytes(a, sizeof a, saved->kept));
    return buf;
}

/* What was resident when the peak since the ledger's reset was set, by kind, and its phase;
 * then, under a checkpointing strategy, one sentence saying why it did not lower that peak
 * more, when one of the rules holds (app/README.md). `saved` is what --explain-memory
 * saw live at the peak (explain_print_peak), or NULL when not known. */
static void report_peak(FILE *out, const TrainOptions *o, const ExplainPeak *saved)
{
    const MemPeakMoment p = mem_peak_moment();
    char buf[32], why[256];
    fprintf(out, "    at the peak (in %s):", name_of(&FLOP_PHASE_NAMES, p.phase));
    for (int k = 0; k < MEM_DISK; k++)
        fprintf(out, "%s %s %s", k ? "," : "", name_of(&MEM_KIND_NAMES, k),
                mem_format_bytes(buf, sizeof buf, p.current[k]));
    const bool strategy = o->step.strategy.kind != STRATEGY_NONE; /* every rule is about checkpointing */
    const char *sentence = strategy ? why_not_lower(o, &p, saved, why, sizeof why) : NULL;
    fputc('\n', out);
    if (sentence) fprintf(out, "    why checkpointing did not lower it more: %s\n", sentence);
}

void report_explained(FILE *out, const TrainOptions *o, Explain *explain, const StepResult *result,
                      const Prediction *p, const char *unpredicted)
{
    explain_stop(explain);
    fprintf(out, "\n");
    explain_print(explain, out, result->act_stored, mem_peak(MEM_ACT), p->made ? p->peak_act : 0, unpredicted);
    fprintf(out, "\n");
    const ExplainPeak saved = explain_print_peak(explain, out);
    report_peak(out, o, saved.largest_op ? &saved : NULL);
    fprintf(out, "\n");
    explain_free(explain);
}

/* The process's resident memory as the operating system counts it, beside the ledger:
 * what `top` shows, and why it is more than the ledger says. */
static void report_process(FILE *out, const TrainReport *r)
{
    const ResidentWatch *w = &r->resident;
    if (!w->known) {
        fprintf(out, "\n  (the process's resident memory: not known here, /proc/self/status cannot be read)\n");
        return;
    }
    char buf[32];
    const double unaccounted = (double)w->peak - (double)w->baseline - (double)r->ledger_peak;
    fprintf(out, "\n  the process, as the operating system counts it (resident set, /proc/self/status)\n");
    fprintf(out, "    %-16s %12s  (code, libraries, OpenMP, OpenBLAS, the allocator)\n", "before the model",
            mem_format_bytes(buf, sizeof buf, w->baseline));
    fprintf(out, "    %-16s %12s  (the ledger's resident peak above, + before the model)\n", "ledger + before",
            mem_format_bytes(buf, sizeof buf, w->baseline + r->ledger_peak));
    fprintf(out, "    %-16s %12s  %s\n", "measured peak", mem_format_bytes(buf, sizeof buf, w->peak),
            w->peak_of_work ? "(the kernel's, from before the model to the last step)"
                            : "(the kernel's, over the whole process)");
    fprintf(out, "    %-16s %7s%.1f MiB  not in the ledger: freed blocks the allocator keeps for reuse\n",
            "difference", unaccounted < 0 ? "-" : "+", fabs(unaccounted) / 1048576.0);
    fprintf(out, "    %-16s %12s  and no later block fitted (%s free at the end), OpenBLAS's\n", "", "",
            mem_format_bytes(buf, sizeof buf, w->heap_kept));
    fprintf(out, "    %-16s %12s  packing buffers, thread stacks, the tape's nodes\n", "", "");
}

void report_ledgers(FILE *out, const TrainOptions *o, const TrainReport *r)
{
    const bool gpt = o->model == MODEL_GPT;
    char buf[32];
    fprintf(out, "\n  peak memory by kind over the run\n");
    for (int k = 0; k < MEM_DISK; k++)
        fprintf(out, "    %-12s %12s\n", name_of(&MEM_KIND_NAMES, k),
                mem_format_bytes(buf, sizeof buf, mem_peak((MemKind)k)));
    fprintf(out, "    %-12s %12s  (all kinds at the same moment)\n", "resident",
            mem_format_bytes(buf, sizeof buf, mem_peak_moment().resident));
    if (o->step.offload)
        fprintf(out, "    %-12s %12s  (in the spill file: not resident)\n", name_of(&MEM_KIND_NAMES, MEM_DISK),
                mem_format_bytes(buf, sizeof buf, mem_peak(MEM_DISK)));
    report_peak(out, o, NULL);
    report_process(out, r);
    if (r->steps_run == 0) return;
    fprintf(out, "\n  FLOPs per training step by phase\n");
    for (int p = 0; p < PHASE_COUNT; p++)
        fprintf(out, "    %-12s %10.3f GFLOP\n", name_of(&FLOP_PHASE_NAMES, p),
                (double)flops_get((Phase)p) / r->steps_run * 1e-9);
    if (o->step.strategy.kind == STRATEGY_DTR) {
        const DtrStats dtr = dtr_stats(); /* the process's: train runs one training */
        fprintf(out, "    dtr: %.1f evictions, %.1f tensors rematerialised by %.1f layer replays per step\n",
                (double)dtr.evictions / r->steps_run, (double)dtr.remats / r->steps_run,
                (double)dtr.replays / r->steps_run);
    }
    const double per_step = (double)flops_total() / r->steps_run;
    const int tokens = o->batch * (gpt ? o->seq : 1);
    fprintf(out, "\n  median step %.2f ms (fastest %.2f, slowest %.2f, of %d steps): %.1f GFLOP/s, %.0f %s/s\n",
            1e3 * r->median_step_seconds, 1e3 * r->fastest_step_seconds, 1e3 * r->slowest_step_seconds, r->steps_run,
            per_step / r->median_step_seconds * 1e-9, tokens / r->median_step_seconds, gpt ? "tokens" : "examples");
}

/* What one rank measured, gathered from every rank: the ledger's current bytes by kind
 * and its peak resident bytes, and the bytes it sent and received by phase. */
typedef struct RankFigures {
    uint64_t current[MEM_KIND_COUNT];
    uint64_t peak_resident;
    uint64_t sent[COMM_PHASE_COUNT];
    uint64_t received[COMM_PHASE_COUNT];
} RankFigures;

/* The report of `ranks`, zero_size(z) entries, rank r's at r. */
static void print_ranks(FILE *out, const Zero *z, const RankFigures *ranks, int steps)
{
    const int K = zero_size(z), stage = zero_stage(z);
    const size_t total = zero_total(z);
    char buf[32];
    fprintf(out, "\n  (the peaks and FLOPs above are rank 0's; every rank runs one micro-batch of each step)\n");
    fprintf(out, "\n  memory per rank after the last step, ZeRO stage %d over %d ranks (psi = %zu parameters;\n"
            "  formula: params %s, grads %s, optimizer %s, psi/K = the rank's shard)\n", stage, K, total,
            stage >= 3 ? "4psi/K" : "4psi", stage >= 2 ? "4psi/K" : "4psi", stage >= 1 ? "8psi/K" : "8psi");
    fprintf(out, "    %-6s", "rank");
    for (int k = MEM_PARAM; k <= MEM_OPTIM; k++) fprintf(out, " %14s %14s", name_of(&MEM_KIND_NAMES, k), "(formula)");
    fprintf(out, " %14s\n", "peak resident");
    for (int r = 0; r < K; r++) {
        const size_t shard = shard_begin(total, r + 1, K) - shard_begin(total, r, K);
        const ZeroBytes b = zero_resident_bytes(stage, total, shard, 2); /* float32 AdamW */
        const uint64_t formula[] = {[MEM_PARAM] = b.params, [MEM_GRAD] = b.grads, [MEM_OPTIM] = b.optimizer};
        fprintf(out, "    %-6d", r);
        for (int k = MEM_PARAM; k <= MEM_OPTIM; k++)
            fprintf(out, " %14" PRIu64 " %14" PRIu64, ranks[r].current[k], formula[k]);
        fprintf(out, " %14s\n", mem_format_bytes(buf, sizeof buf, ranks[r].peak_resident));
    }
    if (steps <= 0) return;
    fprintf(out, "\n  communication per step and rank, bytes sent / received\n    %-6s", "rank");
    for (int p = 0; p < COMM_PHASE_COUNT; p++) fprintf(out, " %25s", name_of(&COMM_PHASE_NAMES, p));
    fputc('\n', out);
    for (int r = 0; r < K; r++) {
        fprintf(out, "    %-6d", r);
        for (int p = 0; p < COMM_PHASE_COUNT; p++)
            fprintf(out, " %12" PRIu64 " / %10" PRIu64, ranks[r].sent[p] / (uint64_t)steps,
                    ranks[r].received[p] / (uint64_t)steps);
        fputc('\n', out);
    }
}

RematStatus report_ranks(FILE *out, const DistGroup *world, const Zero *z, int steps)
{
    const int K = world->size, n = (int)(sizeof(RankFigures) / sizeof(uint64_t));
    RankFigures mine = {.peak_resident = mem_peak_moment().resident}, *all = malloc((size_t)K * sizeof *all);
    if (!all) return remat_fail(REMAT_ENOMEM, "train: no memory for %d ranks' figures", K);
    for (int k = 0; k < MEM_KIND_COUNT; k++) mine.current[k] = mem_current((MemKind)k);
    const CommCounts c = comm_counts();
    for (int p = 0; p < COMM_PHASE_COUNT; p++) {
        mine.sent[p] = comm_sent(&c, (CommPhase)p);
        mine.received[p] = comm_received(&c, (CommPhase)p);
    }
    RematStatus status = dist_all_gather_u64(world, (const uint64_t *)&mine, n, (uint64_t *)all);
    if (status == REMAT_OK) print_ranks(out, z, all, steps);
    free(all);
    return status;
}

RematStatus report_pipeline(FILE *out, const TrainOptions *o, const DistGroup *world, const StepPipeline *p,
                            int steps)
{
    int first, count, P = world->size, M = o->step.micro_batches;
    size_t peak;
    const PipeLedger *l = step_pipeline_ledger(p, &peak);
    pipe_split(o->layers, P, world->rank, &first, &count);
    const uint64_t mine[] = {(uint64_t)first, (uint64_t)count, peak, (uint64_t)l->live_peak,
                             world->rank + 1 < P ? l->sent_next + l->received_next : l->sent_prev + l->received_prev,
                             (uint64_t)(1e6 * l->idle_seconds), (uint64_t)(1e6 * l->seconds)};
    enum { N = sizeof mine / sizeof *mine };
    uint64_t *all = malloc((size_t)P * N * sizeof *all), per = steps > 0 ? (uint64_t)steps : 1;
    if (!all) return remat_fail(REMAT_ENOMEM, "train: no memory for %d stages' figures", P);
    RematStatus status = dist_all_gather_u64(world, mine, N, all);
    fprintf(out, "  pipeline, %s: in theory stage 0 holds %d micro-batches at once, each rank idles (P-1)/(M+P-1) = "
            "%.1f%%, and each boundary moves 2*M*B*T*D*4 = %" PRIu64 " bytes a step\n", name_of(&PIPE_SCHEDULE_NAMES,
            o->step.pipeline_schedule), o->step.pipeline_schedule == PIPE_GPIPE || M < P ? M : P,
            100.0 * (P - 1) / (M + P - 1), (uint64_t)8 * M * o->batch * o->seq * o->d_model);
    for (int k = 0; k < P && status == REMAT_OK; k++) {
        const uint64_t *f = all + k * N;
        char act[32];
        fprintf(out, "    stage %d, blocks %" PRIu64 "-%" PRIu64 ": peak activations %s (%" PRIu64 " B), live "
                "micro-batches %" PRIu64 ", idle %.1f%% of %.1f ms a step, %" PRIu64 " bytes a step to and from "
                "stage %d\n", k,
                f[0], f[0] + f[1] - 1, mem_format_bytes(act, sizeof act, f[2]), f[2], f[3], 100.0 * (double)f[5] /
                (double)(f[6] ? f[6] : 1), 1e-3 * (double)f[6] / (double)per, f[4] / per, k + 1 < P ? k + 1 : k - 1);
    }
    free(all);
    return status;
}

void report_sample(FILE *out, const TrainOptions *o, Model *m)
{
    const int n = o->sample_chars;
    int32_t *text = malloc((size_t)n * sizeof *text);
    if (!text) return;
    Pcg32 rng;
    pcg32_seed(&rng, o->seed, 0x5a);
    if (gpt_generate(m, (const int32_t[]){'\n'}, 1, n, 0.8f, &rng, text) == REMAT_OK) { /* a prompt of one newline */
        fprintf(out, "\n  sample (temperature 0.8):\n  ");
        for (int i = 0; i < n; i++) ((char *)text)[i] = (char)text[i]; /* its bytes, in place */
        text_write_visible(out, (const char *)text, (size_t)n, "  ");
        fputc('\n', out);
    } else {
        fprintf(out, "\n  sample: %s\n", remat_last_error());
    }
    free(text);
}
