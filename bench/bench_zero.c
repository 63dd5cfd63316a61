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

#include "app/train.h"
#include "bench/measure.h"
#include "models/data.h"
#include "parallel/zero.h"
#include "base/platform.h"

enum { N_STRATEGIES = 2 };
static const StrategyKind KINDS[N_STRATEGIES] = {STRATEGY_NONE, STRATEGY_FULL};

/* --project, --alpha S, --beta S, --check-prediction: bench_zero's own flags. */
typedef struct ProjectOptions {
    bool project;
    float alpha, beta; /* seconds per message and per byte; -1: fitted here */
    bool check;        /* only the prediction against the ledger, at GPT-2 small's shape */
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
    {.name = "--check-prediction", .type = FLAG_SWITCH, .offset = offsetof(ProjectOptions, check),
     .help = "only train --predict-only against rank 0's ledger at GPT-2\n"
             "small's shape (--quick: a small GPT), two steps per row"},
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
    .own = {.flags = PROJECT_FLAGS, .n = 4, .opts = &project, .accepted = ~0u, .given = &project_given},
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

/* The α–β network fitted from MPI_Allreduce's fastest times here, seconds per message and
 * per byte (0 on one rank, where nothing moves). A ring sends 2(K−1) messages and 2(K−1)/K ·
 * 4n bytes per rank: α is the time of the smallest size per message, β the time of the
 * largest per byte. Each ignores the other's term, so each is an upper bound: on a busy
 * machine a fit of both to the same points came out negative. */
typedef struct AllreduceFit {
    double alpha, beta;
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
        if (!x) return remat_fail(REMAT_ENOMEM, "bench_zero: no memory for %zu floats", n);
        float *shard = x + n, *scratch = x + 2 * n;
        double t[2][BENCH_MAX_STEPS];
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
            if (m == 1 && g->size > 1) { /* the fastest: the least disturbed by a busy machine */
                const double K = g->size;
                if (s == 0) fit->alpha = fastest / (2.0 * (K - 1)); /* small enough that latency is all of it */
                fit->beta = fastest / (2.0 * (K - 1) / K * 4.0 * (double)n); /* the largest size's, measured last */
            }
            results_add_row(table, &(ReduceRow){n, methods[m], e, fastest, sent[m]});
        }
        free(x);
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
    double t[BENCH_MAX_STEPS];
    if (status == REMAT_OK && !schedule) status = remat_last_status();
    TrainCtx ctx = bench_ctx(1, 2);
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
        row->peak_resident = mem_peak_moment().resident;
        for (int p = 0; p < COMM_PHASE_COUNT; p++) {
            row->sent[p] = comm_sent(&c, (CommPhase)p) / (uint64_t)steps;
            row->received[p] = comm_received(&c, (CommPhase)p) / (uint64_t)steps;
        }
    }
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
        StageRow row = {.stage = stage, .rank = r, .strategy = name_of(&STRATEGY_NAMES, kind),
                        .params = w->current[MEM_PARAM], .grads = w->current[MEM_GRAD],
                        .optimizer = w->current[MEM_OPTIM], .params_formula = b.params,
                        .grads_formula = b.grads, .optimizer_formula = b.optimizer,
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
 * up to 1024 ranks, by ZeRO stage and strategy: the memory is what `train --predict-only
 * --ranks K --zero S` predicts (train_predict_memory, exact where this machine can check
 * it: docs/MEASUREMENTS.md 10.1), the communication formulas this machine's runs check,
 * and an α–β model of the network (α seconds per message, β seconds per byte). It is not a
 * measurement. The communication, for Ψ parameters, K ranks, stage s:
 *   moved      stages 0-2: a reduce-scatter and an all-gather, 2(K−1)/K · 4Ψ;
 *              stage 3: the reduce-scatter, and every group gathered for its forward and
 *              its backward, the embedding and head a third time for the head's forward:
 *              (K−1)/K · 4(3Ψ + Ψ_embedding)
 *   messages   K−1 per reduce-scatter or all-gather, per group gathered at stage 3 */

/* A GPT's shape: L blocks of width C, H heads, vocabulary V, context T, B sequences per
 * rank (this model's: tied embedding and head, pre-LayerNorm blocks). */
typedef struct ProjectShape {
    const char *name;
    int L, C, H, V, T, B;
} ProjectShape;

/* One record of the projection table: what one rank holds at its peak and moves in one
 * configuration, in bytes, and the seconds the α–β model gives its communication. */
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
    COLUMN(ProjectRow, params, U64, "peak bytes per rank, predicted", SHOW("params", "GiB", 8, 2)),
    COLUMN(ProjectRow, grads, U64, "peak bytes per rank, predicted", SHOW("grads", "GiB", 8, 2)),
    COLUMN(ProjectRow, optimizer, U64, "peak bytes per rank, predicted", SHOW("optim", "GiB", 8, 2)),
    COLUMN(ProjectRow, activations, U64, "peak bytes per rank, predicted", SHOW("act", "GiB", 8, 2)),
    COLUMN(ProjectRow, total, U64, "peak bytes of all kinds at once per rank, predicted", SHOW("total", "GiB", 8, 2)),
    COLUMN(ProjectRow, moved, U64, "bytes received per rank per step", SHOW("moved", "MiB", 9, 1)),
    COLUMN(ProjectRow, comm_seconds, DOUBLE, "seconds per step, alpha-beta model", SHOW("comm", "s", 8, 4)),
};

/* Rank 0 of K at `stage` under strategy `full` (true) or none, float32 AdamW, GPT-2's
 * dropout; REMAT_EINVAL if it is not predicted. */
static RematStatus project_row(const ProjectShape *s, int K, int stage, bool full, double alpha, double beta,
                               ProjectRow *p)
{
    TrainOptions o = train_defaults(MODEL_GPT);
    o.layers = s->L, o.d_model = s->C, o.heads = s->H, o.seq = s->T, o.batch = s->B, o.ranks = K;
    o.step.zero_stage = stage;
    o.step.strategy = strategy_defaults(full ? STRATEGY_FULL : STRATEGY_NONE);
    MemoryPrediction m;
    if (train_predict_memory(&o, s->V, &m, NULL) != REMAT_OK) return remat_last_status();
    const GptConfig gpt = {.n_layers = s->L, .d_model = s->C, .vocab = s->V, .seq_len = s->T};
    const uint64_t psi = (uint64_t)gpt_param_count(&gpt), embedding = (uint64_t)(s->V + s->T) * s->C + 2ull * s->C;
    *p = (ProjectRow){.model = s->name, .parameters = psi, .ranks = K, .stage = stage,
                      .strategy = full ? "full" : "none", .params = m.kinds[MEM_PARAM], .grads = m.kinds[MEM_GRAD],
                      .optimizer = m.kinds[MEM_OPTIM], .activations = m.kinds[MEM_ACT], .total = m.peak};
    const double share = (double)(K - 1) / K;
    const double moved = stage >= 3 ? share * 4.0 * (3.0 * (double)psi + (double)embedding)
                                    : 2.0 * share * 4.0 * (double)psi;
    p->moved = (uint64_t)moved;
    const uint64_t messages = (uint64_t)(K - 1) * (stage >= 3 ? 1 + 2ull * s->L + 3 : 2);
    p->comm_seconds = alpha * (double)messages + beta * moved;
    return REMAT_OK;
}

/* The projection for GPT-2 small to XL at K = 1, 8, 64, 1024, stages 0 to 3, none and full,
 * printed and recorded as the table "projection", with α and β as given, or else as `fit`. */
static RematStatus project_table(const DistGroup *g, const AllreduceFit *fit, double alpha, double beta,
                                 Results *results)
{
    static const ProjectShape shapes[] = {
        {"gpt2 (124M)", 12, 768, 12, 50257, 1024, 1},  {"gpt2-medium (350M)", 24, 1024, 16, 50257, 1024, 1},
        {"gpt2-large (774M)", 36, 1280, 20, 50257, 1024, 1}, {"gpt2-xl (1.5B)", 48, 1600, 25, 50257, 1024, 1},
    };
    static const int ranks[] = {1, 8, 64, 1024};
    const double fa = fit->alpha, fb = fit->beta;
    printf("\n  alpha-beta from MPI_Allreduce here (%d ranks): alpha %.3g s, beta %.3g s/B (%.2f GB/s)%s\n",
           g->size, fa, fb, fb > 0 ? 1e-9 / fb : 0.0, alpha >= 0 || beta >= 0 ? "; overridden by the flags" : "");
    results_config_num(results, "alpha_fitted_seconds", fa);
    results_config_num(results, "beta_fitted_seconds_per_byte", fb);
    alpha = alpha >= 0 ? alpha : fa;
    beta = beta >= 0 ? beta : fb;
    results_config_num(results, "alpha_seconds", alpha);
    results_config_num(results, "beta_seconds_per_byte", beta);
    ResultsTable *table = RESULTS_TABLE(results, "projection", "GPT-2 shapes per rank, by K, stage and strategy",
                                        PROJECT_COLUMNS);
    printf("\n  projection, one sequence of 1024 tokens per rank, float32 AdamW; alpha %.3g s, beta %.3g s/B\n"
           "  (rank 0's peaks as train --predict-only --ranks K --zero S predicts them: params, grads,\n"
           "  optimizer, activations, all at once; received per step; comm)\n", alpha, beta);
    results_print_head(table, 0);
    RematStatus status = REMAT_OK;
    for (int m = 0; m < 4; m++)
        for (int k = 0; k < 4; k++)
            for (int stage = 0; stage <= 3 && status == REMAT_OK; stage++)
                for (int full = 0; full < 2 && status == REMAT_OK; full++) {
                    ProjectRow row;
                    status = project_row(&shapes[m], ranks[k], stage, full, alpha, beta, &row);
                    if (status == REMAT_OK) results_add_row(table, &row);
                }
    return status;
}

/* ---- the prediction against the ledger (--check-prediction) --------------------------- */

/* One configuration: what train --predict-only predicts for rank 0, beside what rank 0's
 * ledger measured over two steps of the same run (train_run, as `train --results` does). */
typedef struct CheckRow {
    const char *config;
    int batch, stage; /* the ranks are the results' config's */
    uint64_t act_predicted, act_measured, peak_predicted, peak_measured;
    double peak_difference;
    const char *other_kinds; /* "equal", or the first of params, grads, optimizer, workspace that is not */
} CheckRow;

static const ResultsColumn CHECK_COLUMNS[] = {
    COLUMN(CheckRow, config, STR, "", SHOW("configuration", "", 24, 0)),
    COLUMN(CheckRow, batch, INT, "sequences per rank", SHOW("B", "", 2, 0)),
    COLUMN(CheckRow, stage, INT, "ZeRO stage", SHOW("stage", "", 5, 0)),
    COLUMN(CheckRow, act_predicted, U64, "bytes", SHOW("act predicted", "MiB", 14, 3)),
    COLUMN(CheckRow, act_measured, U64, "bytes", SHOW("act measured", "MiB", 13, 3)),
    COLUMN(CheckRow, peak_predicted, U64, "bytes", SHOW("peak predicted", "MiB", 15, 3)),
    COLUMN(CheckRow, peak_measured, U64, "bytes", SHOW("peak measured", "MiB", 14, 3)),
    COLUMN(CheckRow, peak_difference, DOUBLE, "ratio", SHOW("difference", "%", 11, 2)),
    COLUMN(CheckRow, other_kinds, STR, "", SHOW("other kinds", "", 12, 0)),
};

/* Predicts, then runs two steps of `o` on every rank (a collective), and records rank 0's row. */
static RematStatus check_one(ResultsTable *table, TrainOptions *o, const char *config, int K)
{
    MemoryPrediction p;
    o->ranks = K;
    RematStatus status = train_predict_memory(o, TEXT_VOCAB_SIZE, &p, NULL);
    o->ranks = 1; /* a run takes its ranks from mpirun */
    FILE *quiet = fopen("/dev/null", "w");
    TrainReport r = {0};
    if (status == REMAT_OK) status = quiet ? train_run(o, &r, quiet) : remat_fail(REMAT_EIO, "no /dev/null");
    train_report_free(&r);
    if (quiet) fclose(quiet);
    if (status != REMAT_OK) return status;
    CheckRow row = {.config = config, .batch = o->batch, .stage = o->step.zero_stage,
                    .act_predicted = p.kinds[MEM_ACT], .act_measured = r.peaks[MEM_ACT], .peak_predicted = p.peak,
                    .peak_measured = r.ledger_peak, .other_kinds = "equal"};
    row.peak_difference = ((double)row.peak_predicted - (double)row.peak_measured) / (double)row.peak_measured;
    for (int k = MEM_WORK; k >= MEM_PARAM; k--)
        if (k != MEM_ACT && p.kinds[k] != r.peaks[k]) row.other_kinds = name_of(&MEM_KIND_NAMES, k);
    results_add_row(table, &row);
    return REMAT_OK;
}

/* On one rank: none, full, sqrt, selective's two presets and fused attention; on K ranks:
 * ZeRO stages 0 to 3 under none; each at batch 1 and 2 (--quick: 1), GPT-2 small's blocks
 * (12 of width 768, 12 heads, T = 1024, dropout 0.1) on remat's 256 tokens. */
static RematStatus check_prediction(const DistGroup *g, const BenchOptions *bo, Results *results)
{
    static const struct { const char *name, *policy; StrategyKind kind; bool fused; } configs[] = {
        {"none", NULL, STRATEGY_NONE, false}, {"full", NULL, STRATEGY_FULL, false},
        {"sqrt", NULL, STRATEGY_SQRT, false}, {"selective attention_core", "attention_core", STRATEGY_SELECTIVE, false},
        {"selective dots", "dots", STRATEGY_SELECTIVE, false}, {"none, fused attention", NULL, STRATEGY_NONE, true}};
    ResultsTable *table = RESULTS_TABLE(results, "prediction", "train --predict-only against rank 0's ledger",
                                        CHECK_COLUMNS);
    printf("\n  train --predict-only beside rank 0's ledger over two steps (other kinds: params, grads,\n"
           "  optimizer and workspace, equal or the first that is not)\n");
    results_print_head(table, 0);
    TrainOptions o = train_defaults(MODEL_GPT);
    o.layers = bo->quick ? 2 : 12, o.d_model = bo->quick ? 32 : 768, o.heads = bo->quick ? 2 : 12;
    o.seq = bo->quick ? 16 : 1024, o.steps = 2, o.eval_every = 0, o.eval_batches = 1, o.sample_chars = 0;
    o.quiet = true, o.threads = platform_info().threads;
    RematStatus status = REMAT_OK;
    for (int b = 1; b <= (bo->quick ? 1 : 2) && status == REMAT_OK; b++)
        for (int i = 0; i < (g->size > 1 ? 4 : 6) && status == REMAT_OK; i++) {
            TrainOptions run = o;
            run.batch = b;
            const int c = g->size > 1 ? 0 : i;
            run.step.strategy = strategy_defaults(configs[c].kind);
            if (configs[c].policy) run.step.strategy.policy = policy_by_name(configs[c].policy);
            if (configs[c].fused) run.attention = ATTENTION_FUSED, run.dropout_rng = DROPOUT_RNG_COUNTER;
            run.step.zero_stage = g->size > 1 ? i : 0;
            if (status == REMAT_OK) status = check_one(table, &run, configs[c].name, g->size);
        }
    return status;
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
    const DistFact facts[] = {
        dist_fact("--quick", "%d", o.quick), dist_fact("--steps", "%d", o.steps),
        dist_fact("--strategy", "%s", o.one_strategy ? name_of(&STRATEGY_NAMES, o.step.strategy.kind) : "-"),
        dist_fact("--project", "%d", project.project),
        dist_fact("--check-prediction", "%d", project.check)}; /* what the ranks run together */
    RematStatus status = dist_agree(&g, facts, 5, "every rank must be given the same flags");
    if (project.check) {
        if (status == REMAT_OK) status = check_prediction(&g, &o, results);
        return bench_finish_ranks(&info, &g, &o, results, status, true);
    }
    ResultsTable *reduce = RESULTS_TABLE(results, "reduce", "a sum over the ranks, ordered against MPI_Allreduce",
                                         REDUCE_COLUMNS);
    ResultsTable *stages = RESULTS_TABLE(results, "stages", "per rank and ZeRO stage: bytes kept, bytes moved, time",
                                         STAGE_COLUMNS);
    if (status == REMAT_OK) status = measure_stages(&g, &o, results, stages);
    AllreduceFit fit = {0};
    if (status == REMAT_OK) status = measure_reduction(&g, &o, reduce, &fit);
    if (status == REMAT_OK && project.project) status = project_table(&g, &fit, project.alpha, project.beta, results);
    return bench_finish_ranks(&info, &g, &o, results, status, true);
}
