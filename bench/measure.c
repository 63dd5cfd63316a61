/*
 * measure.c — measuring training steps, alternating variants, and the census of what a
 * forward keeps (see measure.h).
 */
#include "bench/measure.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/platform.h"

/* ---- batches and the models ---------------------------------------------------------------- */

/* A constant (B,T) Var of random byte tokens. */
static Var *random_tokens(int B, int T, Pcg32 *rng, const char *name)
{
    Tensor *t = tensor_create(MEM_ACT, DTYPE_I32, 2, (int[]){B, T});
    if (!t) return NULL;
    for (size_t i = 0; i < t->numel; i++) t->i32[i] = (int32_t)pcg32_bounded(rng, 256);
    return var_create(t, false, name);
}

/* After the model and its batch were made with `status`: the optimizer from `optim`, if any. */
static RematStatus model_bench_finish(ModelBench *g, RematStatus status, const OptimConfig *optim)
{
    if (status != REMAT_OK || !optim) return status;
    g->opt = optim_create(optim, g->model->params, g->model->n_params);
    return g->opt ? REMAT_OK : remat_last_status();
}

void results_config_gpt(Results *r, const GptShape *s)
{
    results_config_str(r, "model", "gpt");
    results_config_num(r, "layers", s->L);
    results_config_num(r, "d_model", s->C);
    results_config_num(r, "heads", s->H);
    if (s->T) results_config_num(r, "seq", s->T);
    results_config_num(r, "batch", s->B);
    results_config_num(r, "dropout", round((double)s->dropout * 1e6) / 1e6); /* 0.1, not 0.100000001 */
}

char *gpt_shape_str(char *buf, size_t size, const GptShape *s)
{
    snprintf(buf, size, "L=%d D=%d H=%d T=%d B=%d, dropout %g", s->L, s->C, s->H, s->T, s->B, (double)s->dropout);
    return buf;
}

const GptShape STEP_GPT = {.L = 4, .C = 256, .H = 4, .T = 128, .B = 8, .dropout = 0.1f};
const MlpShape STEP_MLP = {.N = 16, .W = 1024, .B = 256};

RematStatus gpt_bench_create(ModelBench *g, const GptShape *s, const OptimConfig *optim)
{
    *g = (ModelBench){0};
    g->model = gpt_create(&(GptConfig){.n_layers = s->L, .d_model = s->C, .n_heads = s->H, .seq_len = s->T,
                                       .vocab = 256, .dropout = s->dropout, .seed = 1});
    if (!g->model) return remat_last_status();
    Pcg32 tokens;
    pcg32_seed(&tokens, 2, 0xba7c4);
    g->batch.x = random_tokens(s->B, s->T, &tokens, "tokens");
    g->batch.y = g->batch.x ? random_tokens(s->B, s->T, &tokens, "targets") : NULL;
    return model_bench_finish(g, g->batch.y ? REMAT_OK : remat_last_status(), optim);
}

RematStatus mlp_bench_create(ModelBench *g, const MlpShape *s, MlpTask *task, const OptimConfig *optim)
{
    *g = (ModelBench){.model = mlp_create(&(MlpConfig){.n_layers = s->N, .width = s->W, .seed = 1})};
    if (!g->model) return remat_last_status();
    MlpTask *teacher = task ? task : mlp_task_create(s->W, 2);
    if (!teacher) return remat_last_status();
    Pcg32 rows;
    pcg32_seed(&rows, 2, 3);
    const RematStatus status = mlp_task_batch(teacher, &rows, s->B, &g->batch.x, &g->batch.y);
    if (!task) mlp_task_free(teacher);
    return model_bench_finish(g, status, optim);
}

void model_bench_free(ModelBench *g)
{
    optim_free(g->opt);
    var_free(g->batch.x);
    var_free(g->batch.y);
    model_free(g->model);
    *g = (ModelBench){0};
}

TrainCtx bench_ctx(uint64_t seed, uint64_t stream)
{
    TrainCtx ctx = {.training = true, .seed = seed};
    pcg32_seed(&ctx.rng, seed, stream);
    return ctx;
}

/* ---- one step ----------------------------------------------------------------------------- */

Variant bench_variant(const BenchOptions *opt, Variant v, bool gpt)
{
    if (!gpt) return v;
    v.dropout_rng = opt->dropout_rng;
    v.attention = opt->attention;
    return v;
}

/* Sets up `model` and `ctx` as variant `v` runs them: its attention cores (a GPT's), its
 * dropout generator and its thread count. REMAT_OK, or the error of a model that cannot
 * (or of a thread count out of range). */
static RematStatus variant_apply(const Variant *v, Model *model, TrainCtx *ctx)
{
    ctx->dropout_rng = v->dropout_rng;
    if (v->threads > 0 && platform_set_threads(v->threads) != REMAT_OK) return remat_last_status();
    if (gpt_config(model)) return gpt_set_attention(model, v->attention);
    if (v->attention == ATTENTION_NAIVE) return REMAT_OK;
    return remat_fail(REMAT_EINVAL, "variant %s: only a GPT has attention to fuse", v->name);
}

/* What `off` did since its stats read `before`: the counts and times that accumulate (the
 * others are those of now). */
static OffloadStats offload_stats_since(const Offload *off, const OffloadStats *before)
{
    OffloadStats d = offload_stats(off);
    d.records_written -= before->records_written;
    d.bytes_written -= before->bytes_written;
    d.kept -= before->kept;
    d.records_read -= before->records_read;
    d.prefetched -= before->prefetched;
    d.failures -= before->failures;
    d.write_seconds -= before->write_seconds;
    d.read_seconds -= before->read_seconds;
    d.read_wait_seconds -= before->read_wait_seconds;
    d.reads_waited -= before->reads_waited;
    d.thread_write_seconds -= before->thread_write_seconds;
    d.thread_write_bytes -= before->thread_write_bytes;
    d.thread_read_seconds -= before->thread_read_seconds;
    d.thread_read_bytes -= before->thread_read_bytes;
    d.thread_cpu_seconds -= before->thread_cpu_seconds;
    return d;
}

RematStatus step_measure(ModelBench *g, const Variant *v, TrainCtx *ctx, StepStats *stats)
{
    memset(stats, 0, sizeof *stats);
    if (variant_apply(v, g->model, ctx) != REMAT_OK) return remat_last_status();
    for (int k = 0; k < MEM_KIND_COUNT; k++) stats->start[k] = mem_current((MemKind)k);
    flops_reset();
    mem_reset_peaks();
    const OffloadStats io_before = v->offload ? offload_stats(v->offload) : (OffloadStats){0};
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    const long faults_before = usage.ru_minflt;
    const double t0 = platform_seconds();
    const Step step = {
        .model = g->model, .schedule = v->schedule, .optim = g->opt, .plugs = {step_offload_plug(v->offload)}};
    StepResult result;
    if (v->budget) mem_set_budget(v->budget);
    const RematStatus status = step_run(&step, &(MicroBatch){g->batch.x, g->batch.y}, 1, ctx, NULL, &result);
    stats->seconds = platform_seconds() - t0;
    if (v->budget) mem_set_budget(0);
    getrusage(RUSAGE_SELF, &usage);
    stats->minor_faults = usage.ru_minflt - faults_before;
    if (v->offload) stats->io = offload_stats_since(v->offload, &io_before);
    stats->act_stored = result.act_stored;
    for (int k = 0; k < MEM_KIND_COUNT; k++) stats->peak[k] = mem_peak((MemKind)k);
    stats->peak_resident = mem_peak_moment().resident;
    const FlopCounts flops = flops_snapshot();
    for (int p = 0; p < PHASE_COUNT; p++) {
        stats->flops[p] = flops.phase[p];
        stats->matmul_flops += flops.matmul[p];
        stats->matmul_seconds += flops.matmul_seconds[p];
        stats->phase_seconds[p] = flops.phase_seconds[p];
    }
    return status;
}

double flop_overhead(const StepStats *s)
{
    const double done = (double)(s->flops[PHASE_FORWARD] + s->flops[PHASE_BACKWARD]);
    return done > 0 ? (double)s->flops[PHASE_RECOMPUTE] / done : 0.0;
}

/* What one timed run of steps_alternate needs. */
typedef struct Alternation {
    ModelBench *g;
    const Variant *variants;
    int n;                   /* steps; the runs from n on are extra's */
    const ExtraRuns *extra;  /* NULL: none */
    TrainCtx *ctx;
    StepStats *out;
} Alternation;

static RematStatus alternation_step(void *ctx, int i, double *values)
{
    Alternation *a = ctx;
    if (i >= a->n) {
        for (int q = 0; q < STEP_QUANTITIES; q++) values[q] = 0.0;
        return a->extra->run(a->extra->ctx, i - a->n, values);
    }
    StepStats *s = &a->out[i];
    const RematStatus status = step_measure(a->g, &a->variants[i], a->ctx, s);
    values[STEP_SECONDS] = s->seconds;
    values[STEP_WRITE_SECONDS] = s->io.write_seconds;
    values[STEP_READ_SECONDS] = s->io.read_seconds;
    values[STEP_MATMUL_SECONDS] = s->matmul_seconds;
    values[STEP_OUTSIDE_MATMUL_SHARE] = s->seconds > 0 ? 1.0 - s->matmul_seconds / s->seconds : 0.0;
    values[STEP_MINOR_FAULTS] = (double)s->minor_faults;
    values[STEP_READ_WAIT_SECONDS] = s->io.read_wait_seconds;
    values[STEP_READS_WAITED] = (double)s->io.reads_waited;
    values[STEP_THREAD_READ_SECONDS] = s->io.thread_read_seconds;
    values[STEP_THREAD_WRITE_SECONDS] = s->io.thread_write_seconds;
    values[STEP_THREAD_CPU_SECONDS] = s->io.thread_cpu_seconds;
    for (int p = 0; p < PHASE_COUNT; p++) /* the step's share of wall time in each phase */
        values[STEP_PHASE_SHARE + p] = s->seconds > 0 ? s->phase_seconds[p] / s->seconds : 0.0;
    /* The forward and the backward by the ledger's phase clocks: the forward phase holds
     * the gradients' zeroing, the forward and offload_pop's wait for the writes; the
     * backward, its replays too. */
    values[STEP_FORWARD_SECONDS] = s->phase_seconds[PHASE_FORWARD];
    values[STEP_BACKWARD_SECONDS] = s->phase_seconds[PHASE_BACKWARD] + s->phase_seconds[PHASE_RECOMPUTE];
    return status;
}

RematStatus steps_alternate(ModelBench *g, const Variant *variants, int n, const ExtraRuns *extra, TrainCtx *ctx,
                            const TimingPlan *plan, Progress *progress, const char *label, StepStats *out,
                            Timing *timing)
{
    Alternation a = {g, variants, n, extra, ctx, out};
    const int runs = n + (extra ? extra->count : 0);
    return timing_run(plan, runs, STEP_QUANTITIES, alternation_step, &a, progress, label, timing);
}

/* ---- the census --------------------------------------------------------------------------- */

/* Every op output of the forward, each with one reference held by the census. */
typedef struct Observed {
    struct {
        Tensor *tensor;
        const char *tag;
    } *outputs;
    int count, capacity;
} Observed;

static RematStatus observe_output(void *ctx, const OpInfo *op, const char *tag, int index, Tensor *out)
{
    (void)op, (void)index;
    Observed *o = ctx;
    if (o->count == o->capacity) {
        const int capacity = o->capacity ? 2 * o->capacity : 256;
        void *outputs = realloc(o->outputs, (size_t)capacity * sizeof *o->outputs);
        if (!outputs) return remat_fail(REMAT_ENOMEM, "census: no memory to follow %d outputs", capacity);
        o->outputs = outputs;
        o->capacity = capacity;
    }
    o->outputs[o->count].tensor = tensor_retain(out);
    o->outputs[o->count++].tag = tag ? tag : "untagged";
    return REMAT_OK;
}

/* Adds `bytes` under `tag`; c->tags has room for a tag per op output. */
static void census_add(Census *c, const char *tag, size_t bytes)
{
    int i = 0;
    while (i < c->count && strcmp(c->tags[i].tag, tag)) i++;
    if (i == c->count) c->tags[c->count++] = (TagBytes){tag, 0};
    c->tags[i].bytes += bytes;
    c->total += bytes;
}

RematStatus census_forward(ModelBench *g, const Variant *v, TrainCtx *ctx, Census *out)
{
    *out = (Census){0};
    Observed seen = {0};
    const OpHooks hooks = {.name = "census", .observe = observe_output, .ctx = &seen};
    if (variant_apply(v, g->model, ctx) != REMAT_OK || op_hooks_push(&hooks) != REMAT_OK) return remat_last_status();
    const FlopCounts before = flops_snapshot(); /* a census is not a measured step */
    Var *loss = model_loss_planned(g->model, v->schedule, g->batch.x, g->batch.y, ctx);
    op_hooks_pop();
    flops_restore(&before);
    RematStatus status = loss ? REMAT_OK : remat_last_status();

    /* Alive after the forward: an output that someone besides the census still holds,
     * counted under its tag (a tag per output at most; + 1: never a malloc of 0). */
    if (status == REMAT_OK && !(out->tags = malloc(((size_t)seen.count + 1) * sizeof *out->tags)))
        status = remat_fail(REMAT_ENOMEM, "census: no memory for the tags of %d outputs", seen.count);
    for (int i = 0; i < seen.count && status == REMAT_OK; i++) {
        const Tensor *t = seen.outputs[i].tensor;
        if (t->refcount > 1 && t->kind == MEM_ACT) census_add(out, seen.outputs[i].tag, t->bytes);
    }
    for (int i = 0; i < seen.count; i++) tensor_free(seen.outputs[i].tensor);
    free(seen.outputs);
    var_free(loss);
    tape_reset();
    if (status != REMAT_OK) census_free(out);
    return status;
}

size_t census_bytes(const Census *c, const char *prefix)
{
    size_t bytes = 0;
    const size_t n = strlen(prefix);
    for (int i = 0; i < c->count; i++)
        if (!strncmp(c->tags[i].tag, prefix, n)) bytes += c->tags[i].bytes;
    return bytes;
}

void census_free(Census *c)
{
    free(c->tags);
    *c = (Census){0};
}
