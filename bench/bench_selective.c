/*
 * bench_selective.c — quiz question 5: selective recomputation keeps the outputs of the
 * expensive ops and recomputes the cheap ones that are big to keep.
 *
 * On the GPT (D = 128, H = 4, dropout 0.1) at several sequence lengths T, it runs every
 * block as a checkpoint region under each selective policy — none (no checkpointing),
 * full (nothing_saveable), dots_saveable and attention_core — and reports:
 *
 *   - the activation bytes per layer a forward leaves for backward, by the tag of the op
 *     that made each tensor (measured with the census of measure.h), next to the per-layer
 *     formula of Korthikanti et al. 2022 adapted to float32 and to this model;
 *   - the recompute FLOP overhead and time overhead of a training step (policies
 *     interleaved step by step, bench/timing.h), with its interval and rounds.
 *
 * The formula. Korthikanti et al. count, per layer, sbh(34 + 5as/h) bytes with 16-bit
 * activations and 1-byte dropout masks (s = T, b = B, h = C, a = H). Every tensor of theirs
 * is one this model's ops save (autograd/layers_gpt.c), so in float32 (4 bytes) with
 * 1-byte masks it becomes 66·BTC + 9·BHT² bytes; this model's LayerNorms also keep their
 * mean and rstd (4 bytes per row each, two LayerNorms), + 16·BT. Selective recomputation
 * of the attention core drops the 9·BHT² term; full recomputation keeps only the block's
 * input, 4·BTC. dots_saveable is not in the paper; derived from the ops it is
 * 44·BTC + 4·BHT² (see POLICY_FORMULA).
 *
 * What it is not: a test of the policies (tests/test_checkpoint.c is); the smoke test
 * checks that the measured bytes of a --quick run equal the formulas.
 */
#include <stdio.h>
#include <string.h>

#include "bench/cli.h"
#include "bench/measure.h"
#include "bench/results.h"

enum { N_POLICIES = 4, MAX_SEQS = 3 };

/* The rows are policies: none, full (nothing_saveable) and selective's presets. */
static const StrategyKind KINDS[] = {STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SELECTIVE};

static const BenchInfo INFO = {
    .name = "bench_selective",
    .question = "quiz question 5: selective recomputation recomputes the cheap, memory-heavy ops "
                "and keeps the expensive ones",
    .about = "  The GPT (D = 128, H = 4, dropout 0.1) at T = 128, 256, 512 with every block a region\n"
             "  under the policies none, full (nothing_saveable), dots_saveable and attention_core:\n"
             "  activation bytes per layer by op tag next to Korthikanti et al.'s formula in float32,\n"
             "  recompute FLOP overhead and time overhead.",
    .quick = "L = 2, B = 2, T = 64 and 128, 6 or more rounds until every time overhead is within\n"
             "                      +-5 points, at most 3 s in all (a few seconds)",
    .full = "L = 4, B = 4, T = 128, 256 and 512, 7 timed rounds after 2 warm-up rounds",
    .timed = true,
    .strategies = KINDS,
    .n_strategies = 3,
    .step_flags = STEP_FLAG_POLICY | STEP_FLAG_NO_RNG_REPLAY,
};

/* A tensor a block keeps, by the tag of the op that made it, and its bytes under none:
 * btc·B·T·C + bht2·B·H·T² + bt·B·T. The rows with no bytes under none are outputs only
 * dots_saveable keeps. Korthikanti et al.'s terms are named in `what`. */
typedef struct TagRow {
    const char *tag;
    const char *what;
    int btc, bht2, bt;
} TagRow;

static const TagRow TAGS[] = {
    {"attn.ln", "LN1 out = QKV's input; mean, rstd", 4, 0, 8},
    {"attn.qkv", "QKV output (dots)", 0, 0, 0},
    {"attn.split_q", "Q: QK^T's input", 4, 0, 0},
    {"attn.split_k", "K: QK^T's input", 4, 0, 0},
    {"attn.split_v", "V: attention-over-V's input", 4, 0, 0},
    {"attn.scores", "QK^T (dots)", 0, 0, 0},
    {"attn.softmax", "softmax output", 0, 4, 0},
    {"attn.dropout", "its mask (1 B) and output", 0, 5, 0},
    {"attn.out", "attention over V (dots)", 0, 0, 0},
    {"attn.merge", "output projection's input", 4, 0, 0},
    {"attn.proj", "output projection (dots)", 0, 0, 0},
    {"attn.resid_dropout", "its mask (1 B)", 1, 0, 0},
    {"attn.residual", "LN2's input", 4, 0, 0},
    {"mlp.ln", "LN2 out = fc's input; mean, rstd", 4, 0, 8},
    {"mlp.fc", "fc output = GELU's input", 16, 0, 0},
    {"mlp.gelu", "GELU output = proj's input", 16, 0, 0},
    {"mlp.proj", "proj output (dots)", 0, 0, 0},
    {"mlp.dropout", "its mask (1 B)", 1, 0, 0},
    {"mlp.residual", "block output = next LN1's input", 4, 0, 0},
};
enum { N_TAGS = sizeof TAGS / sizeof TAGS[0] };

/* A policy and its per-layer formulas, in the same three coefficients. korthikanti is
 * false where the paper has no count (its figure is then this model's formula). */
typedef struct PolicyFormula {
    const char *name;
    const Policy *policy;  /* NULL: no checkpointing */
    TagRow model;          /* this model's bytes per layer */
    TagRow paper;          /* Korthikanti et al. in float32 */
    bool korthikanti;
} PolicyFormula;

static const PolicyFormula POLICY_FORMULA[N_POLICIES] = {
    {"none", NULL, {.btc = 66, .bht2 = 9, .bt = 16}, {.btc = 66, .bht2 = 9}, true},
    /* full: the block's input only (the region's input, saved by its node). */
    {"full", &POLICY_NOTHING_SAVEABLE, {.btc = 4}, {.btc = 4}, true},
    /* dots: the block input 4, the QKV output 12, attention over V 4, the two projections'
     * outputs 4 + 4 and fc's 16 (BTC); the scores 4 (BHT²): each is read in the replay
     * by an op that is recomputed, so the policy's cache keeps it. */
    {"dots_saveable", &POLICY_DOTS_SAVEABLE, {.btc = 44, .bht2 = 4}, {0}, false},
    {"attention_core", &POLICY_ATTENTION_CORE, {.btc = 66, .bt = 16}, {.btc = 66}, true},
};

/* The policies the command line leaves to measure (none first), and how regions replay. */
typedef struct Rows {
    const PolicyFormula *f[N_POLICIES];
    int n;
    bool preserve_rng;
} Rows;

/* --strategy keeps none and the rows of that strategy; --policy keeps, of selective's rows,
 * that policy's. */
static Rows rows_wanted(const BenchOptions *o)
{
    Rows rows = {.preserve_rng = o->step.strategy.preserve_rng};
    for (int p = 0; p < N_POLICIES; p++) {
        const Policy *policy = POLICY_FORMULA[p].policy;
        const StrategyKind kind = !policy                             ? STRATEGY_NONE
                                  : policy == &POLICY_NOTHING_SAVEABLE ? STRATEGY_FULL
                                                                       : STRATEGY_SELECTIVE;
        if (!bench_measures(o, kind)) continue;
        if (kind == STRATEGY_SELECTIVE && o->step.strategy.policy && o->step.strategy.policy != policy) continue;
        rows.f[rows.n++] = &POLICY_FORMULA[p];
    }
    return rows;
}

static size_t formula_bytes(const TagRow *f, const GptShape *s)
{
    const size_t B = (size_t)s->B, T = (size_t)s->T, C = (size_t)s->C, H = (size_t)s->H;
    return (size_t)f->btc * B * T * C + (size_t)f->bht2 * B * H * T * T + (size_t)f->bt * B * T;
}

/* What one sequence length measured, per policy. */
typedef struct SeqResult {
    const Rows *rows;
    GptShape shape;
    Census census[N_POLICIES];
    StepStats stats[N_POLICIES];
    Estimate step[N_POLICIES];     /* step seconds */
    Estimate overhead[N_POLICIES]; /* against none, paired by round */
    size_t batch_bytes;
} SeqResult;

/* Builds the GPT for one T, takes the census of each policy's forward, then times the
 * policies alternately. */
static RematStatus measure_seq(SeqResult *r, const TimingPlan *plan, Progress *progress)
{
    const OptimConfig adamw = optim_adamw_defaults(1e-3f);
    ModelBench g;
    RematStatus status = gpt_bench_create(&g, &r->shape, &adamw);
    Schedule *schedules[N_POLICIES] = {0};
    Variant variants[N_POLICIES];
    const Rows *rows = r->rows;
    for (int p = 0; p < rows->n && status == REMAT_OK; p++) {
        Strategy st = strategy_defaults(rows->f[p]->policy ? STRATEGY_SELECTIVE : STRATEGY_NONE);
        st.policy = rows->f[p]->policy;
        st.preserve_rng = rows->preserve_rng;
        schedules[p] = schedule_for_strategy(&st, g.model->n_layers);
        if (!schedules[p]) status = remat_last_status();
        variants[p] = (Variant){.name = rows->f[p]->name, .schedule = schedules[p]};
    }
    TrainCtx ctx = {.training = true};
    pcg32_seed(&ctx.rng, 3, 4);
    for (int p = 0; p < rows->n && status == REMAT_OK; p++)
        status = census_forward(g.model, &variants[p], &g.batch, &ctx, &r->census[p]);
    if (status == REMAT_OK) r->batch_bytes = g.batch.x->value->bytes + g.batch.y->value->bytes;
    char label[32];
    snprintf(label, sizeof label, "T=%d", r->shape.T);
    Timing timing = {0};
    if (status == REMAT_OK)
        status = steps_alternate(g.model, variants, rows->n, g.opt, &g.batch, &ctx, plan, progress, label, r->stats,
                                 &timing);
    for (int p = 0; p < rows->n && status == REMAT_OK; p++) {
        r->step[p] = timing_median(&timing, p, STEP_SECONDS);
        r->overhead[p] = timing_ratio(&timing, p, 0, STEP_SECONDS);
    }
    timing_free(&timing);
    for (int p = 0; p < rows->n; p++) schedule_free(schedules[p]);
    model_bench_free(&g);
    return status;
}

static const ResultsField POLICY_FIELDS[] = {
    {"seq", "tokens"},
    {"policy", ""},
    {"act_per_layer", "bytes"},
    {"formula_per_layer", "bytes"},
    {"korthikanti_fp32_per_layer", "bytes"},
    {"outside_blocks", "bytes"},
    {"act_stored", "bytes"},
    {"census_complete", "bool"},
    {"peak_act", "bytes"},
    {"recompute_flops", "FLOPs"},
    {"flop_overhead", "ratio"},
    RESULTS_TIMED("step_seconds", "seconds"),
    RESULTS_TIMED("time_overhead", "ratio"),
    RESULTS_SAMPLES,
};

static const ResultsField TAG_FIELDS[] = {
    {"seq", "tokens"},
    {"policy", ""},
    {"tag", ""},
    {"bytes_per_layer", "bytes"},
    {"formula_none", "bytes"},
};

static void print_tags(const SeqResult *r, ResultsTable *tags)
{
    const GptShape *s = &r->shape;
    printf("\n  T = %d: activation bytes per layer left for backward, by the op that made them\n", s->T);
    printf("  %-18s %-34s", "tag", "what it is");
    const Rows *rows = r->rows;
    for (int p = 0; p < rows->n; p++) printf(" %14s", rows->f[p]->name);
    printf(" %14s\n", "formula (none)");
    for (int i = 0; i < N_TAGS; i++) {
        const size_t formula = formula_bytes(&TAGS[i], s);
        printf("  %-18s %-34s", TAGS[i].tag, TAGS[i].what);
        for (int p = 0; p < rows->n; p++) {
            const size_t bytes = census_bytes(&r->census[p], TAGS[i].tag) / (size_t)s->L;
            printf(" %14zu", bytes);
            ResultsRecord *rec = results_record(tags);
            record_num(rec, "seq", s->T);
            record_str(rec, "policy", rows->f[p]->name);
            record_str(rec, "tag", TAGS[i].tag);
            record_num(rec, "bytes_per_layer", (double)bytes);
            if (p == 0) record_num(rec, "formula_none", (double)formula);
        }
        printf(" %14zu\n", formula);
    }
}

static void print_policies(const SeqResult *r, ResultsTable *table)
{
    const GptShape *s = &r->shape;
    const Rows *rows = r->rows;
    const char *lines[] = {"per layer, measured", "this model's formula", "Korthikanti et al., fp32"};
    for (int row = 0; row < 3; row++) {
        printf("  %-53s", lines[row]);
        for (int p = 0; p < rows->n; p++) {
            const PolicyFormula *f = rows->f[p];
            const Census *c = &r->census[p];
            const size_t measured = (census_bytes(c, "attn.") + census_bytes(c, "mlp.")) / (size_t)s->L;
            const size_t formula = formula_bytes(&f->model, s);
            if (row == 0) printf(" %14zu", measured);
            else if (row == 1) printf(" %13zu%s", formula, measured == formula ? "=" : "!");
            else if (f->korthikanti) printf(" %14zu", formula_bytes(&f->paper, s));
            else printf(" %14s", "(not in paper)");
        }
        printf("\n");
    }
    printf("\n  %-16s %12s %12s %10s %11s %9s %9s %s\n", "policy", "stored MiB", "peak ACT MiB", "census",
           "recompute", "FLOP", "step ms", "time overhead");
    printf("  %-16s %12s %12s %10s %11s %9s %9s %s\n", "", "", "", "complete", "GFLOP", "overhead", "",
           "(95% interval, rounds)");
    for (int p = 0; p < rows->n; p++) {
        const PolicyFormula *f = rows->f[p];
        const Census *c = &r->census[p];
        const StepStats *st = &r->stats[p];
        const size_t measured = (census_bytes(c, "attn.") + census_bytes(c, "mlp.")) / (size_t)s->L;
        /* Everything the forward left is an op's output or the batch. */
        const bool complete = c->total + r->batch_bytes == st->act_stored;
        char spread[48];
        printf("  %-16s %12.2f %12.2f %10s %11.3f %8.1f%% %9.2f %s\n", f->name, mib(st->act_stored),
               mib(st->peak[MEM_ACT]), complete ? "yes" : "NO", 1e-9 * (double)st->flops[PHASE_RECOMPUTE],
               100.0 * flop_overhead(st), 1e3 * r->step[p].value,
               estimate_ratio_str(spread, sizeof spread, &r->overhead[p]));
        ResultsRecord *rec = results_record(table);
        record_num(rec, "seq", s->T);
        record_str(rec, "policy", f->name);
        record_num(rec, "act_per_layer", (double)measured);
        record_num(rec, "formula_per_layer", (double)formula_bytes(&f->model, s));
        if (f->korthikanti) record_num(rec, "korthikanti_fp32_per_layer", (double)formula_bytes(&f->paper, s));
        record_num(rec, "outside_blocks", (double)(c->total - measured * (size_t)s->L));
        record_num(rec, "act_stored", (double)st->act_stored);
        record_bool(rec, "census_complete", complete);
        record_num(rec, "peak_act", (double)st->peak[MEM_ACT]);
        record_num(rec, "recompute_flops", (double)st->flops[PHASE_RECOMPUTE]);
        record_num(rec, "flop_overhead", flop_overhead(st));
        record_estimate(rec, "step_seconds", &r->step[p]);
        record_estimate(rec, "time_overhead", &r->overhead[p]);
    }
}

int main(int argc, char **argv)
{
    BenchOptions o;
    Results *results;
    const int start = bench_start(&INFO, argc, argv, &o, &results);
    if (start != BENCH_RUN) return start;
    const int seqs_full[MAX_SEQS] = {128, 256, 512}, seqs_quick[] = {64, 128};
    const int n_seqs = o.quick ? 2 : 3;
    const int *seqs = o.quick ? seqs_quick : seqs_full;
    const GptShape base = o.quick ? (GptShape){.L = 2, .C = 128, .H = 4, .B = 2, .dropout = 0.1f}
                                  : (GptShape){.L = 4, .C = 128, .H = 4, .B = 4, .dropout = 0.1f};
    const TimingPlan plan = bench_timing_plan(&o, o.quick ? 1 : 2, 7, 3.0 / n_seqs);
    results_config_gpt(results, &base);
    results_config_ints(results, "seqs", seqs, n_seqs);
    results_config_str(results, "optimizer", "adamw");
    results_config_plan(results, &plan);
    ResultsTable *policies = results_table(results, "policies", "per policy and sequence length", POLICY_FIELDS,
                                           (int)(sizeof POLICY_FIELDS / sizeof POLICY_FIELDS[0]), true);
    ResultsTable *tags = results_table(results, "tags", "activation bytes per layer by the tag of the op that made "
                                       "them", TAG_FIELDS, (int)(sizeof TAG_FIELDS / sizeof TAG_FIELDS[0]), true);
    RematStatus status = REMAT_OK;
    const Rows rows = rows_wanted(&o);
    SeqResult r[MAX_SEQS] = {0};
    Progress progress;
    progress_begin(&progress, n_seqs * timing_max_runs(&plan, rows.n));
    for (int i = 0; i < n_seqs && status == REMAT_OK; i++) {
        r[i].rows = &rows;
        r[i].shape = base;
        r[i].shape.T = seqs[i];
        status = measure_seq(&r[i], &plan, &progress);
    }
    progress_end(&progress);

    if (status == REMAT_OK) {
        printf("\n  GPT L=%d D=%d H=%d B=%d, dropout %g; every block a checkpoint region with the policy\n"
               "  (none: no regions)\n", base.L, base.C, base.H, base.B, (double)base.dropout);
        printf("  Korthikanti et al. 2022, per layer: sbh(34 + 5as/h) bytes in 16 bits with 1-byte masks;\n"
               "  in float32 with 1-byte masks, 66 BTC + 9 BHT^2 bytes. This model keeps each LayerNorm's mean\n"
               "  and rstd too (+16 BT): none = 66 BTC + 9 BHT^2 + 16 BT. attention_core drops the 9 BHT^2;\n"
               "  full keeps the block input, 4 BTC; dots_saveable keeps 44 BTC + 4 BHT^2 (not in the paper).\n");
        for (int i = 0; i < n_seqs; i++) {
            print_tags(&r[i], tags);
            print_policies(&r[i], policies);
        }
        printf("\n  (\"=\": measured exactly as the formula. \"census complete\": the bytes by tag plus the batch\n"
               "  are every byte of activations the forward left, so nothing kept went uncounted.)\n");
    }
    for (int i = 0; i < n_seqs; i++)
        for (int p = 0; p < rows.n; p++) census_free(&r[i].census[p]);
    return bench_finish(&INFO, &o, results, status);
}
