/*
 * bench_dropout.c — quiz question 7: a checkpointed block with dropout must replay the
 * random generator, or backward differentiates masks the forward never used.
 *
 * On a GPT with dropout 0.1, the gradients of one batch under each strategy, with the
 * generator replayed for the recomputation (the default) and without (train
 * --no-rng-replay), against none's: the largest difference (exactly 0 with replay), and
 * the verdict of the determinism check (Strategy.replay.determinism_check), which names
 * the region and the first recomputed op whose output diverged.
 *
 * What it is not: a test (tests/test_checkpoint.c proves the same on a smaller model); no
 * optimizer step runs, so the gradients compared are those of the same parameters.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/measure.h"

enum { N_STRATEGIES = 3 };
static const StrategyKind KINDS[N_STRATEGIES] = {STRATEGY_FULL, STRATEGY_SQRT, STRATEGY_SELECTIVE};

static const BenchInfo INFO = {
    .name = "bench_dropout",
    .question = "quiz question 7: replaying a region with dropout needs the generator state of its first forward",
    .about = "  The GPT with dropout 0.1: the largest |gradient difference| against none per strategy,\n"
             "  with and without RNG replay, and the determinism check's verdict.",
    .quick = "L = 4, D = 64, H = 4, T = 32, B = 2 (a second)",
    .full = "L = 4, D = 128, H = 4, T = 128, B = 4",
    .strategies = KINDS,
    .n_strategies = N_STRATEGIES,
    .step_flags = STEP_FLAG_POLICY,
    .model_flags = true,
};
static const uint64_t DROPOUT_SEED = 11;

/* One step's gradients (forward and backward; g has no optimizer, so no update) under `s`
 * with the model flags of the command line `o` (--dropout-rng, --attention), the dropout
 * generator seeded the same way each time (or the counter keyed by the same seed). */
static RematStatus gradients(ModelBench *g, const Strategy *s, const BenchOptions *o)
{
    Schedule *schedule = schedule_for_strategy(s, g->model->n_layers);
    if (!schedule) return remat_last_status();
    TrainCtx ctx = bench_ctx(DROPOUT_SEED, 1);
    StepStats unused;
    const Variant v =
        bench_variant(o, (Variant){.name = name_of(&STRATEGY_NAMES, s->kind), .schedule = schedule}, true);
    const RematStatus status = step_measure(g, &v, &ctx, &unused);
    schedule_free(schedule);
    return status;
}

/* The largest |a − b| over every parameter's gradient and the reference copies. */
static double max_grad_diff(const Model *m, Tensor *const *reference)
{
    double worst = 0.0;
    for (int i = 0; i < m->n_params; i++) {
        const Tensor *g = m->params[i].var->grad;
        for (size_t j = 0; j < g->numel; j++) worst = fmax(worst, fabs((double)g->f32[j] - reference[i]->f32[j]));
    }
    return worst;
}

/* One strategy with or without replay: what it measured. */
typedef struct Outcome {
    char strategy[64];
    bool replay;
    double diff;       /* max |grad − reference| */
    bool bit_identical; /* diff is 0 */
    const char *check; /* the determinism check's verdict: "passed" or "caught" */
    char message[512]; /* its message when it caught something */
} Outcome;

static const ResultsColumn COLUMNS[] = {
    COLUMN_AS("strategy", Outcome, strategy, STR_ARRAY, "", SHOW("strategy", "", 27, 0)),
    COLUMN_AS("rng_replay", Outcome, replay, BOOL, "bool", SHOW("RNG replay", "", 10, 0)),
    COLUMN_AS("max_abs_grad_diff", Outcome, diff, DOUBLE, "gradient units", SHOW("max |grad - none's|", "", 20, -3)),
    COLUMN(Outcome, bit_identical, BOOL, "bool", SHOW("bit-identical", "", 13, 0)),
    COLUMN_AS("determinism_check", Outcome, check, STR, "passed or caught", SHOW("determinism check", "", 17, 0)),
    COLUMN_AS("check_message", Outcome, message, STR_ARRAY, "", SHOW("", "", 0, 0)),
};

/* Measures one strategy with and without replay into out[0] (with) and out[1] (without). */
static RematStatus compare(ModelBench *g, const Strategy *strategy, Tensor *const *reference, Outcome out[2],
                           const BenchOptions *o, Progress *progress)
{
    for (int i = 0; i < 2; i++) {
        Outcome *r = &out[i];
        if (strategy->kind == STRATEGY_SELECTIVE)
            snprintf(r->strategy, sizeof r->strategy, "selective (%s)",
                     strategy->policy ? strategy->policy->name : POLICY_ATTENTION_CORE.name);
        else
            snprintf(r->strategy, sizeof r->strategy, "%s", name_of(&STRATEGY_NAMES, strategy->kind));
        r->replay = i == 0;
        Strategy s = *strategy;
        s.replay.preserve_rng = r->replay;
        RematStatus status = gradients(g, &s, o);
        if (status != REMAT_OK) return status;
        r->diff = max_grad_diff(g->model, reference);
        r->bit_identical = r->diff == 0.0;

        s.replay.determinism_check = true;
        status = gradients(g, &s, o);
        if (status != REMAT_OK && status != REMAT_ESTATE) return status;
        r->check = status == REMAT_OK ? "passed" : "caught";
        if (status != REMAT_OK) snprintf(r->message, sizeof r->message, "%s", remat_last_error());
        remat_clear_error();
        char label[64];
        snprintf(label, sizeof label, "%.40s, replay %s", r->strategy, r->replay ? "on" : "off");
        progress_tick(progress, label);
    }
    return REMAT_OK;
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    const GptShape shape = o->quick ? (GptShape){.L = 4, .C = 64, .H = 4, .T = 32, .B = 2, .dropout = 0.1f}
                                    : (GptShape){.L = 4, .C = 128, .H = 4, .T = 128, .B = 4, .dropout = 0.1f};
    results_config_gpt(results, &shape);
    ResultsTable *table = RESULTS_TABLE(results, "gradients", "gradients of one batch against no checkpointing",
                                        COLUMNS);
    ModelBench g;
    RematStatus status = gpt_bench_create(&g, &shape, NULL);
    Model *m = g.model;

    /* The reference: every gradient without checkpointing, copied aside (MEM_WORK). */
    Tensor **reference = m ? calloc((size_t)m->n_params, sizeof *reference) : NULL;
    if (status == REMAT_OK && !reference) status = remat_fail(REMAT_ENOMEM, "no memory for the reference gradients");
    const Strategy none = strategy_defaults(STRATEGY_NONE);
    if (status == REMAT_OK) status = gradients(&g, &none, o);
    for (int i = 0; status == REMAT_OK && i < m->n_params; i++) {
        reference[i] = tensor_clone(m->params[i].var->grad, MEM_WORK);
        if (!reference[i]) status = remat_last_status();
    }

    Strategy sweep[N_STRATEGIES];
    const int n = bench_sweep(&INFO, o, NULL, sweep);
    Outcome outcomes[N_STRATEGIES][2] = {0};
    Progress progress;
    progress_begin(&progress, stdout, 2 * n);
    for (int k = 0; k < n && status == REMAT_OK; k++)
        status = compare(&g, &sweep[k], reference, outcomes[k], o, &progress);
    progress_end(&progress);
    if (status == REMAT_OK) {
        char text[64];
        printf("\n  GPT %s; gradients of one batch against no checkpointing\n",
               gpt_shape_str(text, sizeof text, &shape));
        results_print_head(table, 0);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < 2; i++) results_add_row(table, &outcomes[k][i]);
        if (o->dropout_rng == DROPOUT_RNG_COUNTER)
            printf("\n  Counter-based masks (--dropout-rng counter): every mask is a function of (seed, step,\n"
                   "  micro-batch, op, element), so a replay makes the same masks whether or not the generator\n"
                   "  is restored, and without replay too the gradients are none's to the bit.\n");
        else printf("\n  With the generator replayed, every region's recomputation draws the masks its first\n"
               "  forward drew, and the gradients are those of none to the bit. Without it, the replay\n"
               "  draws new masks: backward differentiates a forward that never happened. The\n"
               "  determinism check compares every recomputed op's output in the replay with the first\n"
               "  forward's, so it names the first op that diverged — here a dropout — in the first\n"
               "  region backward reaches (the last), even under selective attention_core, whose\n"
               "  region output itself comes from the policy's cache.\n");
    }
    for (int i = 0; reference && i < m->n_params; i++) tensor_free(reference[i]);
    free(reference);
    model_bench_free(&g);
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
