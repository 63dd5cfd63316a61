/*
 * bench_selective.c — quiz question 5: selective recomputation keeps the outputs of the
 * expensive ops and recomputes the cheap ones that are big to keep; and the same idea one
 * level down, inside the kernels: fused attention and counter-based dropout masks.
 *
 * The GPT (dropout 0.1) at several T, every block a region under each policy of FORMULAS,
 * each with each way of computing the attention core and its dropout (COMBOS; fused
 * attention with stream masks is refused, as they cannot be made again): the activation
 * bytes per layer a forward leaves for backward, by the tag of the op that made them (the
 * census of measure.h), beside the formulas; recompute FLOPs and step time, all variants
 * alternating; and at the longest T, a budget fused attention fits and naive does not.
 *
 * The formula. Korthikanti et al. 2022 count sbh(34 + 5as/h) bytes per layer with 16-bit
 * activations and 1-byte masks (s = T, b = B, h = C, a = H). Every tensor of theirs is one
 * this model's ops save (models/gpt.c), so in float32 it becomes 66·BTC + 9·BHT²; this
 * model's LayerNorms also keep mean and rstd, + 16·BT. Counter-based masks are not stored:
 * 64·BTC + 8·BHT² + 16·BT. Fused attention keeps its output and one log-sum-exp per row
 * instead of the (B,H,T,T) tensors: 68·BTC + 4·BHT + 16·BT. attention_core drops the T²
 * terms (and the fused op's output and rows); full keeps the block's input, 4·BTC;
 * dots_saveable, not in the paper, keeps 44·BTC + 4·BHT² (the scores), 44·BTC + 4·BHT fused.
 *
 * What it is not: a test of the policies (tests/test_checkpoint.c is); the smoke test
 * checks that the measured bytes of a --quick run equal the formulas.
 */
#include <stdio.h>

#include "bench/measure.h"

enum { N_POLICIES = 4, N_COMBOS = 3, N_VARIANTS = N_POLICIES * N_COMBOS, MAX_SEQS = 5 };

/* The rows are policies: none, full (nothing_saveable) and selective's presets. */
static const StrategyKind KINDS[] = {STRATEGY_NONE, STRATEGY_FULL, STRATEGY_SELECTIVE};

static const BenchInfo INFO = {
    .name = "bench_selective",
    .question = "quiz questions 5 and 7: selective recomputation recomputes the cheap, memory-heavy ops "
                "and keeps the expensive ones; fused attention and counter-based masks do it inside kernels",
    .about = "  The GPT per policy, attention and dropout generator: bytes per layer by op tag beside the\n"
             "  formulas, recompute FLOPs, step time; a budget fused attention fits and naive does not.",
    .quick = "L = 2, D = 128, B = 2, T = 64 and 128, rounds until +-5 points or 6 s in all",
    .full = "L = 4, B = 4, T = 128, 256, 512, 1024 and 2048 (naive attention up to 1024), 6 timed rounds "
            "after 1 warm-up round",
    .timed = true,
    .strategies = KINDS,
    .n_strategies = 3,
    .step_flags = STEP_FLAG_POLICY | STEP_FLAG_NO_RNG_REPLAY,
};

/* How the attention core and its dropout are computed. */
typedef struct Combo {
    const char *name;
    AttentionKind attention;
    DropoutRng dropout_rng;
} Combo;

enum { NAIVE_STREAM = 0, NAIVE_COUNTER = 1, FUSED_COUNTER = 2 };
static const Combo COMBOS[N_COMBOS] = {
    {"naive/stream", ATTENTION_NAIVE, DROPOUT_RNG_STREAM},
    {"naive/counter", ATTENTION_NAIVE, DROPOUT_RNG_COUNTER},
    {"fused/counter", ATTENTION_FUSED, DROPOUT_RNG_COUNTER},
};

/* Bytes per layer as btc·B·T·C + bht2·B·H·T² + bht·B·H·T + bt·B·T. */
typedef struct Coef {
    int btc, bht2, bht, bt;
} Coef;

/* A tensor a block keeps, by the tag of the op that made it, and its bytes under none:
 * `none` with a stream, plus `mask` (1-byte masks) with a stream only; naive_only and
 * fused_only tags exist in one attention only. The rows with no bytes under none are
 * outputs only dots_saveable keeps. Korthikanti et al.'s terms are named in `what`. */
typedef struct TagRow {
    const char *tag;
    const char *what;
    Coef none, mask;
    bool naive_only, fused_only;
} TagRow;

static const TagRow TAGS[] = {
    {"attn.ln", "LN1 out = QKV's input; mean, rstd", {.btc = 4, .bt = 8}, {0}, false, false},
    {"attn.qkv", "QKV output (dots)", {0}, {0}, false, false},
    {"attn.split_q", "Q: QK^T's input", {.btc = 4}, {0}, false, false},
    {"attn.split_k", "K: QK^T's input", {.btc = 4}, {0}, false, false},
    {"attn.split_v", "V: attention-over-V's input", {.btc = 4}, {0}, false, false},
    {"attn.scores", "QK^T (dots)", {0}, {0}, true, false},
    {"attn.softmax", "softmax output", {.bht2 = 4}, {0}, true, false},
    {"attn.dropout", "its output, and mask (1 B)", {.bht2 = 4}, {.bht2 = 1}, true, false},
    {"attn.out", "attention over V (dots)", {0}, {0}, true, false},
    {"attn.fused", "fused: output, log-sum-exp rows", {.btc = 4, .bht = 4}, {0}, false, true},
    {"attn.merge", "output projection's input", {.btc = 4}, {0}, false, false},
    {"attn.proj", "output projection (dots)", {0}, {0}, false, false},
    {"attn.resid_dropout", "its mask (1 B)", {0}, {.btc = 1}, false, false},
    {"attn.residual", "LN2's input", {.btc = 4}, {0}, false, false},
    {"mlp.ln", "LN2 out = fc's input; mean, rstd", {.btc = 4, .bt = 8}, {0}, false, false},
    {"mlp.fc", "fc output = GELU's input", {.btc = 16}, {0}, false, false},
    {"mlp.gelu", "GELU output = proj's input", {.btc = 16}, {0}, false, false},
    {"mlp.proj", "proj output (dots)", {0}, {0}, false, false},
    {"mlp.dropout", "its mask (1 B)", {0}, {.btc = 1}, false, false},
    {"mlp.residual", "block output = next LN1's input", {.btc = 4}, {0}, false, false},
};
enum { N_TAGS = sizeof TAGS / sizeof TAGS[0] };

/* A policy and its per-layer formulas, one per combo, in the same coefficients. */
typedef struct PolicyFormula {
    const char *name;
    const Policy *policy;   /* NULL: no checkpointing */
    Coef model[N_COMBOS];   /* this model's bytes per layer */
    Coef paper;             /* Korthikanti et al. in float32 (naive/stream); zero where it has no count */
} PolicyFormula;

static const PolicyFormula FORMULAS[N_POLICIES] = {
    {"none", NULL, {{66, 9, 0, 16}, {64, 8, 0, 16}, {68, 0, 4, 16}}, {.btc = 66, .bht2 = 9}},
    /* full: the block's input only (the region's input, saved by its node). */
    {"full", &POLICY_NOTHING_SAVEABLE, {{.btc = 4}, {.btc = 4}, {.btc = 4}}, {.btc = 4}},
    /* dots: the block input 4, the QKV output 12, attention over V 4 (fused: its output 4
     * and rows), the two projections' outputs 4 + 4 and fc's 16 (BTC); the scores 4 (BHT²):
     * each is read in the replay by an op that is recomputed, so the policy's cache keeps it. */
    {"dots_saveable", &POLICY_DOTS_SAVEABLE, {{44, 4, 0, 0}, {44, 4, 0, 0}, {44, 0, 4, 0}}, {0}},
    /* attention_core: none without the core's tensors (and, counter-based, without masks). */
    {"attention_core", &POLICY_ATTENTION_CORE, {{66, 0, 0, 16}, {64, 0, 0, 16}, {64, 0, 0, 16}}, {.btc = 66}},
};

/* One measured variant: a policy with a combo. */
typedef struct Row {
    const PolicyFormula *f;
    const Combo *combo;
} Row;

/* The variants the command line leaves to measure (none first), and how regions replay. */
typedef struct Rows {
    Row r[N_VARIANTS];
    int n;
    bool preserve_rng;
} Rows;

/* --strategy keeps none and the rows of that strategy; --policy keeps, of selective's rows,
 * that policy's. Every policy is measured with every combo. */
static Rows rows_wanted(const BenchOptions *o)
{
    Rows rows = {.preserve_rng = o->step.strategy.replay.preserve_rng};
    for (int p = 0; p < N_POLICIES; p++) {
        const Policy *policy = FORMULAS[p].policy;
        const StrategyKind kind = !policy                             ? STRATEGY_NONE
                                  : policy == &POLICY_NOTHING_SAVEABLE ? STRATEGY_FULL
                                                                       : STRATEGY_SELECTIVE;
        if (!bench_measures(o, kind)) continue;
        if (kind == STRATEGY_SELECTIVE && o->step.strategy.policy && o->step.strategy.policy != policy) continue;
        for (int c = 0; c < N_COMBOS; c++) rows.r[rows.n++] = (Row){&FORMULAS[p], &COMBOS[c]};
    }
    return rows;
}

static size_t coef_bytes(const Coef *f, const GptShape *s)
{
    const size_t B = (size_t)s->B, T = (size_t)s->T, C = (size_t)s->C, H = (size_t)s->H;
    return (size_t)f->btc * B * T * C + (size_t)f->bht2 * B * H * T * T + (size_t)f->bht * B * H * T +
           (size_t)f->bt * B * T;
}

/* A tag's bytes per layer under none with `combo`. */
static size_t tag_formula(const TagRow *t, const Combo *combo, const GptShape *s)
{
    const bool fused = combo->attention == ATTENTION_FUSED;
    if ((fused && t->naive_only) || (!fused && t->fused_only)) return 0;
    return coef_bytes(&t->none, s) + (combo->dropout_rng == DROPOUT_RNG_STREAM ? coef_bytes(&t->mask, s) : 0);
}

/* What one sequence length measured: variant k of the rounds is row ran[k] (the rows but
 * those left out: naive attention past the longest T it runs at); census and stats by variant. */
typedef struct SeqResult {
    GptShape shape;
    const Row *ran[N_VARIANTS];
    int n_ran;
    Census census[N_VARIANTS];
    StepStats stats[N_VARIANTS];
    Timing timing; /* variants interleaved (bench/timing.h) */
    size_t batch_bytes;
} SeqResult;

/* Builds the GPT for one T, takes the census of the forward of each of `rows`' variants, then
 * times the variants alternately. Naive attention runs only when `naive` is set. */
static RematStatus measure_seq(SeqResult *r, const Rows *rows, bool naive, const TimingPlan *plan, Progress *progress)
{
    const OptimConfig adamw = optim_adamw_defaults(1e-3f);
    ModelBench g;
    RematStatus status = gpt_bench_create(&g, &r->shape, &adamw);
    Variant variants[N_VARIANTS];
    int n = 0;
    for (int p = 0; p < rows->n; p++) {
        const Row *row = &rows->r[p];
        if (status != REMAT_OK || (!naive && row->combo->attention == ATTENTION_NAIVE)) continue;
        Strategy st = strategy_defaults(row->f->policy ? STRATEGY_SELECTIVE : STRATEGY_NONE);
        st.policy = row->f->policy;
        st.replay.preserve_rng = rows->preserve_rng;
        variants[n] = (Variant){.name = row->f->name, .schedule = schedule_for_strategy(&st, g.model->n_layers),
                                .dropout_rng = row->combo->dropout_rng, .attention = row->combo->attention};
        if (!variants[n].schedule) status = remat_last_status();
        r->ran[n++] = row;
    }
    r->n_ran = n;
    TrainCtx ctx = bench_ctx(3, 4);
    for (int k = 0; k < n && status == REMAT_OK; k++)
        status = census_forward(&g, &variants[k], &ctx, &r->census[k]);
    if (status == REMAT_OK) r->batch_bytes = g.batch.x->value->bytes + g.batch.y->value->bytes;
    char label[32];
    snprintf(label, sizeof label, "T=%d", r->shape.T);
    if (status == REMAT_OK)
        status = steps_alternate(&g, variants, n, NULL, &ctx, plan, progress, label, r->stats, &r->timing);
    for (int k = 0; k < n; k++) schedule_free(variants[k].schedule);
    model_bench_free(&g);
    return status;
}

/* ---- the budget that fused attention fits and naive attention does not ---------------- */

/* One step of a combo at the longest T under the budget. */
typedef struct BudgetRow {
    int seq;
    const char *attention, *dropout_rng;
    size_t budget;
    bool fits;
    size_t peak_resident;
    const char *combo; /* printed only: the combo's name, */
    char why[240];     /* and when it does not fit, the ledger's message */
} BudgetRow;

static const ResultsColumn BUDGET_COLUMNS[] = {
    COLUMN(BudgetRow, seq, INT, "tokens"), COLUMN_PRINTED(BudgetRow, combo, STR, SHOW("", "", 14, 0)),
    COLUMN(BudgetRow, attention, STR, ""), COLUMN(BudgetRow, dropout_rng, STR, ""),
    COLUMN(BudgetRow, budget, SIZE, "bytes"), COLUMN(BudgetRow, fits, BOOL, "bool", SHOW("fits", "", 4, 0)),
    COLUMN(BudgetRow, peak_resident, SIZE, "bytes", WHEN(BudgetRow, fits), SHOW("peak", "MiB", 8, 2)),
    COLUMN_PRINTED(BudgetRow, why, STR_ARRAY, SHOW("", "", 0, 0)),
};

/* At shape s, without checkpointing, the budget is fused attention's peak resident bytes
 * plus half of what naive attention keeps beyond it (by the formulas, L·(8·BHT² − 4·BTC −
 * 4·BHT) with counter-based masks: its two (B,H,T,T) tensors against the fused output and
 * rows), rounded up to a MiB; then every combo tries one step under it. */
static RematStatus budget_demo(const GptShape *s, BudgetRow tries[N_COMBOS])
{
    const OptimConfig adamw = optim_adamw_defaults(1e-3f);
    ModelBench g;
    RematStatus status = gpt_bench_create(&g, s, &adamw);
    TrainCtx ctx = bench_ctx(3, 4);
    StepStats st;
    const Variant fused = {.name = "none", .dropout_rng = DROPOUT_RNG_COUNTER, .attention = ATTENTION_FUSED};
    if (status == REMAT_OK) status = step_measure(&g, &fused, &ctx, &st);
    const size_t mib = (size_t)1 << 20;
    const Coef naive = {.bht2 = 8}, fused_rows = {.btc = 4, .bht = 4};
    const size_t half = (size_t)s->L * (coef_bytes(&naive, s) - coef_bytes(&fused_rows, s)) / 2;
    const size_t budget = status == REMAT_OK ? (st.peak_resident + half + mib - 1) / mib * mib : 0;
    for (int c = 0; c < N_COMBOS && status == REMAT_OK; c++) {
        const Variant v = {.name = "none", .dropout_rng = COMBOS[c].dropout_rng, .attention = COMBOS[c].attention,
                           .budget = budget};
        tries[c] = (BudgetRow){s->T, name_of(&ATTENTION_KIND_NAMES, v.attention),
                               name_of(&DROPOUT_RNG_NAMES, v.dropout_rng), budget, .combo = COMBOS[c].name};
        const RematStatus tried = step_measure(&g, &v, &ctx, &st);
        tries[c].fits = tried == REMAT_OK;
        if (tries[c].fits) tries[c].peak_resident = st.peak_resident;
        else if (tried == REMAT_EOOM) snprintf(tries[c].why, sizeof tries[c].why, "%s", remat_last_error());
        else status = tried;
        remat_clear_error();
    }
    model_bench_free(&g);
    return status;
}

/* ---- tables ------------------------------------------------------------------------------ */

/* A row of the policies table: one policy, attention and dropout generator at one T. */
typedef struct PolicyRow {
    int seq;
    const char *policy, *attention, *dropout_rng, *combo;
    size_t act_per_layer, formula_per_layer, korthikanti_fp32_per_layer, outside_blocks;
    bool korthikanti, census_complete;
    StepStats step; /* its last */
    double flop_overhead;
    Estimate step_seconds, time_overhead, time_vs_naive_stream;
    const char *as_formula, *census; /* printed only: "=" or "!", "complete" or "NO" */
} PolicyRow;

static const ResultsColumn POLICY_COLUMNS[] = {
    COLUMN(PolicyRow, seq, INT, "tokens"), COLUMN(PolicyRow, policy, STR, "", SHOW("policy", "", 16, 0)),
    COLUMN_PRINTED(PolicyRow, combo, STR, SHOW("attention/rng", "", 14, 0)), COLUMN(PolicyRow, attention, STR, ""),
    COLUMN(PolicyRow, dropout_rng, STR, ""),
    COLUMN(PolicyRow, act_per_layer, SIZE, "bytes", SHOW("per layer", "bytes", 12, 0)),
    COLUMN(PolicyRow, formula_per_layer, SIZE, "bytes", SHOW("formula", "bytes", 11, 0)),
    COLUMN_PRINTED(PolicyRow, as_formula, STR, SHOW("", "", 1, 0)),
    COLUMN(PolicyRow, korthikanti_fp32_per_layer, SIZE, "bytes", WHEN(PolicyRow, korthikanti)),
    COLUMN(PolicyRow, outside_blocks, SIZE, "bytes"),
    COLUMN_AS("act_stored", PolicyRow, step.act_stored, SIZE, "bytes"),
    COLUMN(PolicyRow, census_complete, BOOL, "bool"), COLUMN_PRINTED(PolicyRow, census, STR, SHOW("census", "", 8, 0)),
    COLUMN_AS("peak_act", PolicyRow, step.peak[MEM_ACT], SIZE, "bytes", SHOW("peak ACT", "MiB", 9, 2)),
    COLUMN_AS("recompute_flops", PolicyRow, step.flops[PHASE_RECOMPUTE], U64, "FLOPs",
              SHOW("recompute", "GFLOP", 9, 3)),
    COLUMN(PolicyRow, flop_overhead, DOUBLE, "ratio", SHOW("FLOP", "%", 6, 1)),
    COLUMN_TIMED(PolicyRow, step_seconds, "seconds", SHOW("step (95% interval)", "ms", 24, 1)),
    COLUMN_TIMED(PolicyRow, time_overhead, "ratio", SHOW("time overhead (95% interval, rounds)", "+%", 27, 1)),
    COLUMN_TIMED(PolicyRow, time_vs_naive_stream, "ratio"), COLUMN_SAMPLES,
};

typedef struct TagBytesRow {
    int seq;
    const char *policy, *attention, *dropout_rng, *tag;
    size_t bytes_per_layer, formula_none;
} TagBytesRow;

static const ResultsColumn TAG_COLUMNS[] = {
    COLUMN(TagBytesRow, seq, INT, "tokens"), COLUMN(TagBytesRow, policy, STR, ""),
    COLUMN(TagBytesRow, attention, STR, ""), COLUMN(TagBytesRow, dropout_rng, STR, ""),
    COLUMN(TagBytesRow, tag, STR, ""), COLUMN(TagBytesRow, bytes_per_layer, SIZE, "bytes"),
    COLUMN(TagBytesRow, formula_none, SIZE, "bytes"),
};

/* The variant that measured the row with `policy` (NULL: none) and `combo`, or −1. */
static int find_variant(const SeqResult *r, const Policy *policy, const Combo *combo)
{
    for (int k = 0; k < r->n_ran; k++)
        if (r->ran[k]->f->policy == policy && r->ran[k]->combo == combo) return k;
    return -1;
}

static void print_tags(const SeqResult *r, ResultsTable *tags)
{
    const GptShape *s = &r->shape;
    printf("\n  T = %d: activation bytes per layer left for backward without checkpointing, by the op that "
           "made them\n  %-18s %-34s", s->T, "tag", "what it is");
    for (int c = 0; c < N_COMBOS; c++) printf(" %15s", COMBOS[c].name);
    printf("\n");
    for (int i = 0; i < N_TAGS; i++) {
        printf("  %-18s %-34s", TAGS[i].tag, TAGS[i].what);
        for (int c = 0; c < N_COMBOS; c++) { /* the tag table is none's */
            const int k = find_variant(r, NULL, &COMBOS[c]);
            if (k < 0) {
                printf(" %15s", "-");
                continue;
            }
            const size_t bytes = census_bytes(&r->census[k], TAGS[i].tag) / (size_t)s->L;
            const size_t formula = tag_formula(&TAGS[i], &COMBOS[c], s);
            printf(" %14zu%s", bytes, bytes == formula ? "=" : "!");
            const TagBytesRow out = {s->T, FORMULAS[0].name, name_of(&ATTENTION_KIND_NAMES, COMBOS[c].attention),
                                     name_of(&DROPOUT_RNG_NAMES, COMBOS[c].dropout_rng), TAGS[i].tag, bytes, formula};
            results_add_row(tags, &out);
        }
        printf("\n");
    }
}

static void print_policies(const SeqResult *r, ResultsTable *table)
{
    const GptShape *s = &r->shape;
    printf("\n");
    results_print_head(table, 0);
    for (int k = 0; k < r->n_ran; k++) {
        const Row *row = r->ran[k];
        const Census *c = &r->census[k];
        const StepStats *st = &r->stats[k];
        const size_t measured = (census_bytes(c, "attn.") + census_bytes(c, "mlp.")) / (size_t)s->L; /* the blocks' */
        const size_t formula = coef_bytes(&row->f->model[row->combo - COMBOS], s); /* this model's */
        /* against the same attention and generator without a policy, and against the same
         * policy with naive attention and stream masks (if that ran): paired by round */
        const int base = find_variant(r, NULL, row->combo);
        const int plain = find_variant(r, row->f->policy, &COMBOS[NAIVE_STREAM]);
        const bool complete = c->total + r->batch_bytes == st->act_stored; /* every byte is an op's or the batch */
        results_add_row(table, &(PolicyRow){
            .seq = s->T, .policy = row->f->name, .attention = name_of(&ATTENTION_KIND_NAMES, row->combo->attention),
            .dropout_rng = name_of(&DROPOUT_RNG_NAMES, row->combo->dropout_rng), .combo = row->combo->name,
            .act_per_layer = measured, .formula_per_layer = formula,
            .korthikanti_fp32_per_layer = coef_bytes(&row->f->paper, s),
            .korthikanti = row->f->paper.btc > 0 && row->combo == &COMBOS[NAIVE_STREAM],
            .outside_blocks = c->total - measured * (size_t)s->L, .census_complete = complete, .step = *st,
            .flop_overhead = flop_overhead(st), .step_seconds = timing_median(&r->timing, k, STEP_SECONDS),
            .time_overhead = timing_ratio(&r->timing, k, base, STEP_SECONDS),
            .time_vs_naive_stream = plain < 0 ? (Estimate){0} : timing_ratio(&r->timing, k, plain, STEP_SECONDS),
            .as_formula = measured == formula ? "=" : "!", .census = complete ? "complete" : "NO"});
    }
}

static void print_formulas(const GptShape *base)
{
    printf("\n  GPT L=%d D=%d H=%d B=%d, dropout %g; every block a checkpoint region with the policy\n"
           "  (none: no regions). Bytes per layer:\n"
           "    Korthikanti et al. 2022: sbh(34 + 5as/h) in 16 bits with 1-byte masks; in float32, 66 BTC + 9 BHT^2.\n"
           "    This model also keeps each LayerNorm's mean and rstd (+16 BT):\n"
           "                      naive/stream              naive/counter             fused/counter\n"
           "    none             66 BTC + 9 BHT^2 + 16 BT  64 BTC + 8 BHT^2 + 16 BT  68 BTC + 4 BHT + 16 BT\n"
           "    attention_core   66 BTC + 16 BT            64 BTC + 16 BT            64 BTC + 16 BT\n"
           "    dots_saveable    44 BTC + 4 BHT^2          44 BTC + 4 BHT^2          44 BTC + 4 BHT\n"
           "    full             4 BTC                     4 BTC                     4 BTC\n",
           base->L, base->C, base->H, base->B, (double)base->dropout);
}

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    const int seqs_full[MAX_SEQS] = {128, 256, 512, 1024, 2048}, seqs_quick[] = {64, 128};
    const int n_seqs = o->quick ? 2 : 5, naive_max = o->quick ? 128 : 1024;
    const int *seqs = o->quick ? seqs_quick : seqs_full;
    const GptShape base = o->quick ? (GptShape){.L = 2, .C = 128, .H = 4, .B = 2, .dropout = 0.1f}
                                   : (GptShape){.L = 4, .C = 256, .H = 4, .B = 4, .dropout = 0.1f};
    results_config_gpt(results, &base); /* but its T: the sequence lengths follow */
    results_config_ints(results, "seqs", seqs, n_seqs);
    results_config_num(results, "naive_max_seq", naive_max);
    results_config_str(results, "optimizer", "adamw");
    const TimingPlan plan = bench_timing_plan(o, results, 1, 6, 6.0 / n_seqs);
    ResultsTable *policies = RESULTS_TABLE(results, "policies", "per policy, attention and dropout generator, "
                                           "and sequence length", POLICY_COLUMNS);
    ResultsTable *tags = RESULTS_TABLE(results, "tags", "activation bytes per layer without checkpointing by the "
                                       "tag of the op that made them", TAG_COLUMNS);
    ResultsTable *budgets = RESULTS_TABLE(results, "budget", "at the longest T without checkpointing, one step of "
                                          "each attention under a budget fused attention fits", BUDGET_COLUMNS);
    RematStatus status = REMAT_OK;
    const Rows rows = rows_wanted(o);
    static SeqResult r[MAX_SEQS];
    Progress progress;
    int units = 0;
    for (int i = 0; i < n_seqs; i++) units += timing_max_runs(&plan, seqs[i] <= naive_max ? rows.n : rows.n / N_COMBOS);
    progress_begin(&progress, stdout, units);
    for (int i = 0; i < n_seqs && status == REMAT_OK; i++) {
        r[i] = (SeqResult){.shape = base};
        r[i].shape.T = seqs[i];
        status = measure_seq(&r[i], &rows, seqs[i] <= naive_max, &plan, &progress);
    }
    progress_end(&progress);
    BudgetRow tries[N_COMBOS];
    if (status == REMAT_OK) status = budget_demo(&r[n_seqs - 1].shape, tries); /* at the longest T */

    if (status == REMAT_OK) {
        print_formulas(&base);
        for (int i = 0; i < n_seqs; i++) {
            print_tags(&r[i], tags);
            print_policies(&r[i], policies);
        }
        char b[32];
        printf("\n  T = %d, no checkpointing, under a budget of %s (fused attention's peak + half of what naive\n"
               "  attention keeps beyond it):\n", tries[0].seq, mem_format_bytes(b, sizeof b, tries[0].budget));
        results_print_head(budgets, 0);
        for (int c = 0; c < N_COMBOS; c++) results_add_row(budgets, &tries[c]);
        printf("\n  (\"=\": measured exactly as the formula. \"census complete\": the bytes by tag plus the batch\n"
               "  are every byte of activations the forward left, so nothing kept went uncounted. Times: median of\n"
               "  the rounds, variants interleaved; time overhead against none with the same attention and\n"
               "  generator, the median of the paired ratios with its 95%% interval and rounds.)\n");
    }
    for (int i = 0; i < n_seqs; i++) {
        for (int k = 0; k < rows.n; k++) census_free(&r[i].census[k]);
        timing_free(&r[i].timing);
    }
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
