/*
 * bench_zero.c — data parallelism over MPI: what each ZeRO stage keeps per rank, what it
 * moves per step, what a step costs, and what the rank-ordered reduction costs against
 * MPI_Allreduce. Run it as K ranks: `mpirun -np K build/bench/bench_zero`; started plainly
 * it is one rank (K = 1, nothing moves). It writes <dir>/bench_zero_npK.json and CSV.
 *
 * Bytes are exact; times are only as quiet as the machine, and K ranks on fewer cores
 * than K are oversubscribed (every time measured so says it in the results' config).
 * It is a benchmark, not a test: it asserts nothing about time.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench/measure.h"
#include "parallel/zero.h"
#include "base/platform.h"

enum { N_STRATEGIES = 2 };
static const StrategyKind KINDS[N_STRATEGIES] = {STRATEGY_NONE, STRATEGY_FULL};

/* --project, --alpha S, --beta S: bench_zero's own flags. */
typedef struct ProjectOptions {
    bool project;
    float alpha, beta; /* seconds per message and per byte; -1: fitted here */
} ProjectOptions;

static ProjectOptions project = {.alpha = -1, .beta = -1};
static unsigned project_given;

/* --alpha and --beta set the network of --project's projection: without it they change
 * nothing (base/flags.h, Flag.applies). */
static const char *needs_project(const void *opts, const void *run)
{
    (void)run;
    return ((const ProjectOptions *)opts)->project ? NULL : "it sets the network of --project's projection, and "
                                                            "--project is not given";
}

static const Flag PROJECT_FLAGS[] = {
    {.name = "--project", .type = FLAG_SWITCH, .offset = offsetof(ProjectOptions, project),
     .help = "also project GPT-2's shapes to K = 1024, alpha-beta fitted here"},
    {.name = "--alpha", .type = FLAG_FLOAT, .offset = offsetof(ProjectOptions, alpha), .value = "S", .lo = 0, .hi = 1,
     .hi_open = true, .help = "a cluster's seconds per message for --project, e.g. 2e-6", .applies = needs_project},
    {.name = "--beta", .type = FLAG_FLOAT, .offset = offsetof(ProjectOptions, beta), .value = "S", .lo = 0, .hi = 1,
     .hi_open = true, .help = "a cluster's seconds per byte for --project", .applies = needs_project},
};

static BenchInfo info = {
    .name = "bench_zero",
    .question = "quiz question 8: what sharding across data-parallel ranks removes, and what it moves",
    .about = "  Run as K ranks (mpirun -np K). The ordered reduction against MPI_Allreduce; the GPT\n"
             "  (L=4 D=128 H=4 T=64 B=4 per rank, AdamW) at ZeRO stages 0 to 3 under none and full:\n"
             "  bytes per rank beside the formulas, bytes moved per step, median step time.",
    .quick = "a GPT of 2 blocks of width 16, arrays of 2^10 and 2^16 floats, 6 steps (seconds)",
    .full = "the GPT of the header, arrays of 2^10, 2^14, 2^18 and 2^21 floats, 15 samples each",
    .timed = true,
    .strategies = KINDS,
    .n_strategies = N_STRATEGIES,
    .own = {.flags = PROJECT_FLAGS, .n = 3, .opts = &project, .accepted = ~0u, .given = &project_given},
};

/* ---- the reduction ------------------------------------------------------------------------ */

typedef struct ReduceRow {
    size_t floats;
    const char *method;
    Estimate seconds;
    double min_seconds;
    uint64_t bytes_sent;
} ReduceRow;

static const ResultsColumn REDUCE_COLUMNS[] = {
    COLUMN(ReduceRow, floats, SIZE, "elements", SHOW("floats", "", 8, 0)),
    COLUMN(ReduceRow, method, STR, "", SHOW("method", "", 36, 0)),
    COLUMN_TIMED(ReduceRow, seconds, "seconds, rank 0's median", SHOW("median (95% interval)", "us", 26, 1)),
    COLUMN(ReduceRow, min_seconds, DOUBLE, "seconds, rank 0's fastest", SHOW("fastest", "us", 9, 1)), COLUMN_SAMPLES,
    COLUMN(ReduceRow, bytes_sent, U64, "bytes per call, rank 0"),
};

/* One timed call of `method` (0 ordered, 1 MPI_Allreduce) on x (n floats), after a barrier. */
static double time_reduction(const DistGroup *g, int method, float *x, float *shard, float *scratch, size_t n)
{
    dist_barrier(g);
    const FlatPiece piece = {x, n};
    const FlatView v = {&piece, 1, n};
    const double t0 = platform_seconds();
    if (method == 0) {
        dist_reduce_scatter(g, &v, 1.0f, shard, scratch, COMM_GRAD_REDUCE);
        const size_t b = shard_begin(n, g->rank, g->size), e = shard_begin(n, g->rank + 1, g->size);
        flat_write(&v, b, e, shard);
        dist_all_gather(g, &v, NULL, COMM_GRAD_REDUCE);
    } else {
        dist_all_reduce(g, x, n, COMM_GRAD_REDUCE);
    }
    return platform_seconds() - t0;
}

/* The sizes measured and MPI_Allreduce's fastest time at each, for the α–β fit. */
typedef struct AllreduceFit {
    int n;
    double floats[4], seconds[4];
} AllreduceFit;

static RematStatus measure_reduction(const DistGroup *g, const BenchOptions *o, ResultsTable *table,
                                     AllreduceFit *fit)
{
    const size_t sizes[] = {1u << 10, 1u << 14, 1u << 18, 1u << 21};
    /* A fixed number of rounds, the same on every rank (a rank that stopped early would
     * leave the others waiting in the next collective): 6, the fewest with a 95% interval. */
    const int n_sizes = o->quick ? 2 : 4, samples = o->steps ? o->steps : o->quick ? 6 : 15;
    static const char *const methods[] = {"ordered reduce-scatter + all-gather", "MPI_Allreduce"};
    printf("\n  a sum over %d ranks, rank 0's time, median (95%% interval) and fastest of %d rounds\n", g->size,
           samples);
    results_print_head(table, 0);
    for (int s = 0; s < n_sizes; s++) {
        const size_t n = o->quick && s == 1 ? 1u << 16 : sizes[s];
        float *x = malloc(3 * n * sizeof *x); /* x, then the shard and scratch */
        double *t[2] = {malloc(2 * (size_t)samples * sizeof(double))};
        if (!x || !t[0]) {
            free(x);
            free(t[0]);
            return remat_fail(REMAT_ENOMEM, "bench_zero: no memory for %zu floats", n);
        }
        float *shard = x + n, *scratch = x + 2 * n;
        t[1] = t[0] + samples;
        for (size_t i = 0; i < n; i++) x[i] = 1e-3f * (float)(i % 1000);
        uint64_t sent[2] = {0};
        for (int k = 0; k < samples; k++)
            for (int m = 0; m < 2; m++) { /* taking turns, the first one alternating */
                const int method = (m + k) % 2;
                comm_reset();
                t[method][k] = time_reduction(g, method, x, shard, scratch, n);
                const CommCounts c = comm_counts();
                sent[method] = comm_sent(&c, COMM_GRAD_REDUCE);
            }
        for (int m = 0; m < 2; m++) {
            const Estimate e = estimate_median(t[m], samples);
            double fastest = t[m][0];
            for (int k = 1; k < samples; k++) fastest = t[m][k] < fastest ? t[m][k] : fastest;
            if (m == 1) { /* the fastest: the least disturbed by a busy machine */
                fit->floats[fit->n] = (double)n;
                fit->seconds[fit->n++] = fastest;
            }
            results_add_row(table, &(ReduceRow){n, methods[m], e, fastest, sent[m]});
        }
        free(x);
        free(t[0]);
    }
    comm_reset();
    return REMAT_OK;
}

/* ---- the stages ------------------------------------------------------------------------------ */

/* One record of the stages table: one rank at one stage under one strategy. */
typedef struct StageRow {
    int stage, rank;
    const char *strategy;
    uint64_t params, grads, optimizer, params_formula, grads_formula, optimizer_formula, peak_resident;
    uint64_t sent_per_step, received_per_step, grad_reduce_sent_per_step, param_gather_sent_per_step;
    Estimate step_seconds;
} StageRow;

static const ResultsColumn STAGE_COLUMNS[] = {
    COLUMN(StageRow, stage, INT, "ZeRO stage", SHOW("stage", "", 5, 0)),
    COLUMN(StageRow, strategy, STR, "", SHOW("strategy", "", 9, 0)),
    COLUMN(StageRow, rank, INT, "rank", SHOW("rank", "", 4, 0)),
    COLUMN(StageRow, params, U64, "bytes", SHOW("params", "MiB", 10, 3)),
    COLUMN(StageRow, grads, U64, "bytes", SHOW("grads", "MiB", 10, 3)),
    COLUMN(StageRow, optimizer, U64, "bytes", SHOW("optimizer", "MiB", 10, 3)),
    COLUMN(StageRow, params_formula, U64, "bytes", SHOW("(formula)", "MiB", 10, 3)),
    COLUMN(StageRow, grads_formula, U64, "bytes", SHOW("(formula)", "MiB", 10, 3)),
    COLUMN(StageRow, optimizer_formula, U64, "bytes", SHOW("(formula)", "MiB", 10, 3)),
    COLUMN(StageRow, peak_resident, U64, "bytes"),
    COLUMN(StageRow, sent_per_step, U64, "bytes", SHOW("sent/step", "MiB", 11, 3)),
    COLUMN(StageRow, received_per_step, U64, "bytes", SHOW("recv/step", "MiB", 11, 3)),
    COLUMN(StageRow, grad_reduce_sent_per_step, U64, "bytes"),
    COLUMN(StageRow, param_gather_sent_per_step, U64, "bytes"),
    COLUMN_TIMED(StageRow, step_seconds, "seconds, rank 0's median", SHOW("step (95% interval)", "ms", 22, 2)),
    COLUMN_SAMPLES,
};

/* What one rank reports after a configuration's steps. */
typedef struct RankRow {
    uint64_t current[MEM_KIND_COUNT], peak_resident, sent[COMM_PHASE_COUNT], received[COMM_PHASE_COUNT];
} RankRow;

/* Trains `steps` steps (after one untimed) at `stage` under `kind`, this rank on its own
 * batch; *seconds the median step on this rank, with its interval (bench/timing.h). */
static RematStatus run_stage(const DistGroup *g, const GptShape *shape, int stage, StrategyKind kind, int steps,
                             Estimate *seconds, RankRow *row)
{
    ModelBench b;
    RematStatus status = gpt_bench_create(&b, shape, NULL);
    Zero *z = status == REMAT_OK ? step_zero_create(b.model, g, stage) : NULL;
    const OptimConfig adamw = optim_adamw_defaults(1e-4f);
    Optimizer *opt = z ? zero_optimizer_create(z, &adamw) : NULL;
    const Strategy strategy = strategy_defaults(kind);
    Schedule *schedule = opt ? schedule_for_strategy(&strategy, b.model->n_layers) : NULL;
    double *t = malloc((size_t)steps * sizeof *t);
    if (status == REMAT_OK && (!schedule || !t)) status = t ? remat_last_status() : REMAT_ENOMEM;
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 1, 2);
    const Step step = {.model = b.model, .schedule = schedule, .optim = opt, .plugs = {step_zero_plug(z)}};
    const MicroBatch mb = {b.batch.x, b.batch.y};
    for (int s = -1; s < steps && status == REMAT_OK; s++) {
        if (s == 0) {
            comm_reset();
            mem_reset_peaks();
        }
        dist_barrier(g);
        const double t0 = platform_seconds();
        StepResult result;
        status = step_run(&step, &mb, 1, &ctx, NULL, &result);
        if (s >= 0) t[s] = platform_seconds() - t0;
    }
    if (status == REMAT_OK) {
        *seconds = estimate_median(t, steps);
        const CommCounts c = comm_counts();
        for (int k = 0; k < MEM_KIND_COUNT; k++) row->current[k] = mem_current((MemKind)k);
        row->peak_resident = mem_peak_resident();
        for (int p = 0; p < COMM_PHASE_COUNT; p++) {
            row->sent[p] = comm_sent(&c, (CommPhase)p) / (uint64_t)steps;
            row->received[p] = comm_received(&c, (CommPhase)p) / (uint64_t)steps;
        }
    }
    free(t);
    schedule_free(schedule);
    optim_free(opt);
    zero_free(z);
    model_bench_free(&b);
    return status;
}

static void record_stage(ResultsTable *table, int stage, StrategyKind kind, int K, size_t total, const RankRow *rows,
                         const Estimate *seconds)
{
    for (int r = 0; r < K; r++) {
        const RankRow *w = &rows[r];
        const uint64_t shard = shard_begin(total, r + 1, K) - shard_begin(total, r, K);
        const ZeroBytes b = zero_resident_bytes(stage, total, shard, 2); /* float32 AdamW */
        StageRow row = {.stage = stage, .rank = r, .strategy = strategy_name(kind), .params = w->current[MEM_PARAM],
                        .grads = w->current[MEM_GRAD], .optimizer = w->current[MEM_OPTIM],
                        .params_formula = b.params, .grads_formula = b.grads, .optimizer_formula = b.optimizer,
                        .peak_resident = w->peak_resident,
                        .grad_reduce_sent_per_step = w->sent[COMM_GRAD_REDUCE],
                        .param_gather_sent_per_step = w->sent[COMM_PARAM_GATHER], .step_seconds = *seconds};
        for (int p = 0; p < COMM_PHASE_COUNT; p++)
            row.sent_per_step += w->sent[p], row.received_per_step += w->received[p];
        results_add_row(table, &row);
    }
}

static RematStatus measure_stages(const DistGroup *g, const BenchOptions *o, Results *results, ResultsTable *table)
{
    const GptShape shape = o->quick ? (GptShape){.L = 2, .C = 16, .H = 2, .T = 8, .B = 2, .dropout = 0.1f}
                                    : (GptShape){.L = 4, .C = 128, .H = 4, .T = 64, .B = 4, .dropout = 0.1f};
    results_config_gpt(results, &shape);
    const int steps = o->steps ? o->steps : o->quick ? 6 : 15, n = (int)(sizeof(RankRow) / sizeof(uint64_t));
    RankRow *rows = malloc((size_t)g->size * sizeof *rows);
    if (!rows) return remat_fail(REMAT_ENOMEM, "bench_zero: no memory for %d ranks", g->size);
    printf("\n  per rank after %d steps (formula: params 4psi, or 4psi/K at stage 3, grads 4psi, or 4psi/K\n"
           "  from stage 2, optimizer 8psi, or 8psi/K from stage 1), bytes moved per step, rank 0's\n"
           "  median step\n", steps);
    results_print_head(table, 0);
    RematStatus status = REMAT_OK;
    size_t total = 0;
    for (int stage = 0; stage <= ZERO_MAX_STAGE && status == REMAT_OK; stage++)
        for (int k = 0; k < N_STRATEGIES && status == REMAT_OK; k++) {
            if (!bench_measures(o, KINDS[k])) continue;
            RankRow mine = {0};
            Estimate seconds = {0};
            status = run_stage(g, &shape, stage, KINDS[k], steps, &seconds, &mine);
            if (status != REMAT_OK) break;
            status = dist_all_gather_u64(g, (const uint64_t *)&mine, n, (uint64_t *)rows);
            if (stage == 0) total = rows[0].current[MEM_PARAM] / 4; /* unsharded */
            if (status == REMAT_OK) record_stage(table, stage, KINDS[k], g->size, total, rows, &seconds);
        }
    free(rows);
    return status;
}

/* ---- the projection (--project) ----------------------------------------------------------- */

/* Memory per rank and communication per step of GPT-2's shapes (124M to 1.5B parameters) at
 * up to 1024 ranks, by ZeRO stage and strategy, from formulas this machine's runs check, and
 * an α–β model of the network (α seconds per message, β seconds per byte). It is not a
 * measurement: which of its terms were checked against one, and where, docs/MEASUREMENTS.md
 * says (section 9.4). The terms, for Ψ parameters, K ranks, stage s:
 *   params     4Ψ, or 4Ψ/K + the largest group (a block's, or the embedding and head's)
 *              at stage 3, which gathers one group at a time
 *   grads      4Ψ, or 4Ψ/K from stage 2       optimizer  8Ψ, or 8Ψ/K from stage 1
 *   moved      stages 0-2: a reduce-scatter and an all-gather, 2(K−1)/K · 4Ψ;
 *              stage 3: the reduce-scatter, and every group gathered for its forward and
 *              its backward, the embedding and head a third time for the head's forward:
 *              (K−1)/K · 4(3Ψ + Ψ_embedding)
 *   messages   K−1 per reduce-scatter or all-gather, per group gathered at stage 3
 *   activations  this model's bytes per block (bench_selective checks them against its
 *              census to the byte): 66·BTC + 9·BHT² + 16·BT bytes for none, the block's
 *              input 4·BTC for full plus one block's bytes while it is recomputed; and
 *              an estimate of the rest: the embedding's output 4·BTC and the logits
 *              4·BTV (the head keeps its input and the loss its probabilities)
 * The resident state (params, grads, optimizer) is what the stages table measures to the
 * byte at K = 2 and 4; the communication bytes of stages 0-2 are what it measures too. */

/* A GPT's shape: L blocks of width C, H heads, vocabulary V, context T, B sequences per
 * rank (this model's: tied embedding and head, pre-LayerNorm blocks). */
typedef struct ProjectShape {
    const char *name;
    int L, C, H, V, T, B;
} ProjectShape;

/* One record of the projection table: what one rank holds and moves in one configuration,
 * in bytes, and the seconds the α–β model gives its communication. */
typedef struct ProjectRow {
    const char *model;
    uint64_t parameters;
    int ranks, stage;
    const char *strategy;
    uint64_t params, grads, optimizer, activations, total, moved;
    double comm_seconds;
} ProjectRow;

static const ResultsColumn PROJECT_COLUMNS[] = {
    COLUMN(ProjectRow, model, STR, "", SHOW("model", "", 19, 0)), COLUMN(ProjectRow, parameters, U64, "count"),
    COLUMN(ProjectRow, ranks, INT, "K", SHOW("K", "", 5, 0)),
    COLUMN(ProjectRow, stage, INT, "ZeRO stage", SHOW("stage", "", 5, 0)),
    COLUMN(ProjectRow, strategy, STR, "", SHOW("ckpt", "", 4, 0)),
    COLUMN(ProjectRow, params, U64, "bytes per rank", SHOW("params", "GiB", 8, 2)),
    COLUMN(ProjectRow, grads, U64, "bytes per rank", SHOW("grads", "GiB", 8, 2)),
    COLUMN(ProjectRow, optimizer, U64, "bytes per rank", SHOW("optim", "GiB", 8, 2)),
    COLUMN(ProjectRow, activations, U64, "bytes per rank, estimated", SHOW("act", "GiB", 8, 2)),
    COLUMN(ProjectRow, total, U64, "bytes per rank", SHOW("total", "GiB", 8, 2)),
    COLUMN(ProjectRow, moved, U64, "bytes received per rank per step", SHOW("moved", "MiB", 9, 1)),
    COLUMN(ProjectRow, comm_seconds, DOUBLE, "seconds per step, alpha-beta model", SHOW("comm", "s", 8, 4)),
};

static uint64_t block_params(const ProjectShape *s) { return 12ull * s->C * s->C + 13ull * s->C; }
static uint64_t embedding_params(const ProjectShape *s) { return (uint64_t)(s->V + s->T) * s->C + 2ull * s->C; }

/* One rank of K at `stage` under strategy `full` (true) or none. */
static ProjectRow project_row(const ProjectShape *s, int K, int stage, bool full, double alpha, double beta)
{
    const uint64_t psi = embedding_params(s) + (uint64_t)s->L * block_params(s);
    const uint64_t shard = (psi + (uint64_t)K - 1) / (uint64_t)K;
    const uint64_t largest = block_params(s) > embedding_params(s) ? block_params(s) : embedding_params(s);
    const ZeroBytes b = zero_resident_bytes(stage, psi, shard, 2); /* float32 AdamW */
    ProjectRow p = {.model = s->name, .parameters = psi, .ranks = K, .stage = stage, .strategy = full ? "full" : "none",
                    .params = b.params + (stage >= 3 ? 4 * largest : 0), .grads = b.grads, .optimizer = b.optimizer};
    const uint64_t B = (uint64_t)s->B, T = (uint64_t)s->T, C = (uint64_t)s->C, H = (uint64_t)s->H;
    const uint64_t block = 66 * B * T * C + 9 * B * H * T * T + 16 * B * T;
    p.activations = (full ? (uint64_t)s->L * 4 * B * T * C + block : (uint64_t)s->L * block) + 4 * B * T * C +
                    4 * B * T * (uint64_t)s->V;
    p.total = p.params + p.grads + p.optimizer + p.activations;
    const double share = (double)(K - 1) / K;
    const double moved = stage >= 3 ? share * 4.0 * (3.0 * (double)psi + (double)embedding_params(s))
                                    : 2.0 * share * 4.0 * (double)psi;
    p.moved = (uint64_t)moved;
    const uint64_t messages = (uint64_t)(K - 1) * (stage >= 3 ? 1 + 2ull * s->L + 3 : 2);
    p.comm_seconds = alpha * (double)messages + beta * moved;
    return p;
}

/* Prints the projection for GPT-2 small to XL at K = 1, 8, 64, 1024, stages 0 to 3, none and
 * full, and records it as the table "projection" (an error is results_write's to report). */
static void project_all(Results *results, double alpha, double beta)
{
    static const ProjectShape shapes[] = {
        {"gpt2 (124M)", 12, 768, 12, 50257, 1024, 1},  {"gpt2-medium (350M)", 24, 1024, 16, 50257, 1024, 1},
        {"gpt2-large (774M)", 36, 1280, 20, 50257, 1024, 1}, {"gpt2-xl (1.5B)", 48, 1600, 25, 50257, 1024, 1},
    };
    static const int ranks[] = {1, 8, 64, 1024};
    ResultsTable *table = RESULTS_TABLE(results, "projection", "GPT-2 shapes per rank, by K, stage and strategy",
                                        PROJECT_COLUMNS);
    printf("\n  projection, one sequence of 1024 tokens per rank, float32 AdamW; alpha %.3g s, beta %.3g s/B\n"
           "  (per rank: params, grads, optimizer, activations estimated; received per step; comm)\n", alpha, beta);
    results_print_head(table, 0);
    for (int m = 0; m < 4; m++)
        for (int k = 0; k < 4; k++)
            for (int stage = 0; stage <= 3; stage++)
                for (int full = 0; full < 2; full++) {
                    const ProjectRow row = project_row(&shapes[m], ranks[k], stage, full, alpha, beta);
                    results_add_row(table, &row);
                }
}

/* The projection, with α and β as given, or else from MPI_Allreduce's fastest times here
 * (a ring: 2(K−1) messages, 2(K−1)/K · 4n bytes per rank): α the time of the smallest size
 * per message, β the time of the largest per byte (which needs more than one rank). Each
 * ignores the other's term, so each is an upper bound: on a busy machine a fit of both to
 * the same points came out negative. */
static void project_table(const DistGroup *g, const AllreduceFit *fit, double alpha, double beta, Results *results)
{
    double fa = 0, fb = 0;
    const int K = g->size;
    if (K > 1 && fit->n >= 2) {
        fa = fit->seconds[0] / (2.0 * (K - 1)); /* small enough that latency is all of it */
        fb = fit->seconds[fit->n - 1] / (2.0 * (K - 1) / K * 4.0 * fit->floats[fit->n - 1]);
    }
    printf("\n  alpha-beta from MPI_Allreduce here (%d ranks): alpha %.3g s, beta %.3g s/B (%.2f GB/s)%s\n",
           K, fa, fb, fb > 0 ? 1e-9 / fb : 0.0, alpha >= 0 || beta >= 0 ? "; overridden by the flags" : "");
    results_config_num(results, "alpha_fitted_seconds", fa);
    results_config_num(results, "beta_fitted_seconds_per_byte", fb);
    alpha = alpha >= 0 ? alpha : fa;
    beta = beta >= 0 ? beta : fb;
    results_config_num(results, "alpha_seconds", alpha);
    results_config_num(results, "beta_seconds_per_byte", beta);
    project_all(results, alpha, beta);
}

int main(int argc, char **argv)
{
    DistGroup g;
    BenchOptions o;
    Results *results;
    const int start = bench_start_ranks(&info, true, argc, argv, &g, &o, &results);
    if (start != BENCH_RUN) return start;
    if (project.project && g.size == 1 && (project.alpha < 0 || project.beta < 0)) { /* before measuring */
        fprintf(stderr, "bench_zero: --project on one rank needs --alpha and --beta: there is no network here to "
                "measure (run it as 2 ranks or more)\n");
        results_free(results);
        dist_finalize();
        return 2;
    }
    ResultsTable *reduce = RESULTS_TABLE(results, "reduce", "a sum over the ranks, ordered against MPI_Allreduce",
                                         REDUCE_COLUMNS);
    ResultsTable *stages = RESULTS_TABLE(results, "stages", "per rank and ZeRO stage: bytes kept, bytes moved, time",
                                         STAGE_COLUMNS);
    const DistFact facts[] = {dist_fact("--quick", "%d", o.quick), dist_fact("--steps", "%d", o.steps),
                              dist_fact("--strategy", "%s", o.one_strategy ? strategy_name(o.step.strategy.kind) : "-"),
                              dist_fact("--project", "%d", project.project)}; /* what the ranks run together */
    RematStatus status = dist_agree(&g, facts, 4, "every rank must be given the same flags");
    if (status == REMAT_OK) status = measure_stages(&g, &o, results, stages);
    AllreduceFit fit = {0};
    if (status == REMAT_OK) status = measure_reduction(&g, &o, reduce, &fit);
    if (status == REMAT_OK && project.project) project_table(&g, &fit, project.alpha, project.beta, results);
    return bench_finish_ranks(&info, &g, &o, results, status, true);
}
