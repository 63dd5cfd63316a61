/*
 * bench_attention.c — quiz question 5, inside one kernel: what fused causal attention
 * keeps and costs against the naive attention core, and which way of computing its tile
 * products is faster on this machine.
 *
 * One forward and backward of causal attention with counter-based dropout at several T,
 * the ways of FUSED and the naive kernels (the (T,T) scores by batched sgemm, softmax,
 * dropout, the product with v, and their backward) taking turns round by round
 * (bench/timing.h): median time, bytes kept between forward and backward (fused: its
 * output and one log-sum-exp per row; naive: the probabilities and their dropped copy),
 * FLOPs by phase. Naive attention runs up to T = 1024: at 2048 its (T,T) tensors alone take
 * 1.3 GB.
 *
 * What it is not: a training step (bench_selective times those) or a test
 * (tests/test_kernels.c checks both kernels against the textbook attention).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/cli.h"
#include "tensor/kernels.h"
#include "base/platform.h"

enum { N_FUSED = 4, N_WAYS = N_FUSED + 1, MAX_SEQS = 5 };

static const BenchInfo INFO = {
    .name = "bench_attention",
    .question = "quiz question 5: fused attention recomputes its (T,T) probabilities in backward instead of "
                "keeping them",
    .about = "  Causal attention with counter-based dropout: forward + backward time, bytes kept and\n"
             "  FLOPs of the fused kernel (BLAS tiles of 32, 64, 128, or its own loops) and the naive one.",
    .quick = "B = 2, H = 2, D = 32, T = 128 and 256, rounds until +-5 points or 2 s per T",
    .full = "B = 4, H = 4, D = 64, T = 256, 512, 1024 and 2048, 7 timed rounds after 1 warm-up",
    .timed = true,
};

/* Way w < N_FUSED is the fused kernel with FUSED[w]'s plan; way NAIVE the naive kernels. */
enum { NAIVE = N_FUSED };
static const struct {
    const char *name;
    AttnPlan plan;
} FUSED[N_FUSED] = {
    {"fused, blas, tile 64", {ATTN_PRODUCTS_BLAS, ATTN_TILE}},
    {"fused, blas, tile 32", {ATTN_PRODUCTS_BLAS, 32}},
    {"fused, blas, tile 128", {ATTN_PRODUCTS_BLAS, 128}},
    {"fused, loops, tile 64", {ATTN_PRODUCTS_LOOPS, ATTN_TILE}},
};

/* The buffers of one T: inputs, outputs and gradients, and what each way keeps. */
typedef struct Bufs {
    int BH, T, D;
    float *q, *k, *v, *dout, *out, *dq, *dk, *dv; /* q: where the one allocation starts */
    float *lse, *work;               /* fused (work: for the largest tile) */
    float *scores, *probs, *dropped; /* naive: (BH,T,T) each, and their gradients below */
    float *dprobs, *dscores;
} Bufs;

/* Every buffer of T in one allocation, each starting on a 64-byte line; q, k, v and dout
 * uniform in [-1, 1). */
static RematStatus bufs_create(Bufs *b, int BH, int T, int D, bool naive)
{
    *b = (Bufs){.BH = BH, .T = T, .D = D};
    const size_t n = (size_t)BH * T * D, nn = naive ? (size_t)BH * T * T : 1;
    size_t work = 0;
    for (int w = 0; w < N_FUSED; w++) {
        const size_t need = k_attention_work_floats(T, D, &FUSED[w].plan);
        work = need > work ? need : work;
    }
    float **parts[] = {&b->q, &b->k, &b->v, &b->dout, &b->out, &b->dq, &b->dk, &b->dv, &b->lse, &b->work,
                       &b->scores, &b->probs, &b->dropped, &b->dprobs, &b->dscores};
    const size_t sizes[] = {n, n, n, n, n, n, n, n, (size_t)BH * T, work, nn, nn, nn, nn, nn};
    enum { N_PARTS = sizeof sizes / sizeof sizes[0] };
    size_t at[N_PARTS + 1] = {0}; /* where each starts, in floats: a multiple of 16 */
    for (int i = 0; i < N_PARTS; i++) at[i + 1] = at[i] + (sizes[i] + 15) / 16 * 16;
    float *all = aligned_alloc(64, at[N_PARTS] * sizeof *all);
    if (!all) return remat_fail(REMAT_ENOMEM, "bench_attention: no memory for T = %d", T);
    for (int i = 0; i < N_PARTS; i++) *parts[i] = all + at[i];
    Pcg32 rng;
    pcg32_seed(&rng, (uint64_t)T, 7);
    for (int i = 0; i < 4; i++) /* q, k, v and dout */
        for (size_t j = 0; j < n; j++) (*parts[i])[j] = 2.0f * pcg32_float(&rng) - 1.0f;
    return REMAT_OK;
}

/* The naive GPT block's attention core, kernel by kernel, forward then backward. */
static void naive_step(Bufs *b, const AttnDropout *drop)
{
    const int BH = b->BH, T = b->T, D = b->D;
    const size_t nn = (size_t)BH * T * T;
    const float scale = 1.0f / sqrtf((float)D);
    k_matmul(b->scores, b->q, b->k, BH, T, T, D, CblasNoTrans, CblasTrans, scale, 0.0f);
    k_softmax_forward(b->probs, b->scores, BH * T, T, true);
    k_dropout_counter_forward(b->dropped, b->probs, drop->p, &drop->key, nn);
    k_matmul(b->out, b->dropped, b->v, BH, T, D, T, CblasNoTrans, CblasNoTrans, 1.0f, 0.0f);
    flops_set_phase(PHASE_BACKWARD);
    k_matmul(b->dprobs, b->dout, b->v, BH, T, T, D, CblasNoTrans, CblasTrans, 1.0f, 0.0f);
    k_matmul(b->dv, b->dropped, b->dout, BH, T, D, T, CblasTrans, CblasNoTrans, 1.0f, 1.0f);
    k_fill(b->dscores, 0.0f, nn); /* the dropout's input gradient, then the softmax's */
    k_dropout_counter_backward(b->dscores, b->dprobs, drop->p, &drop->key, nn);
    k_fill(b->dprobs, 0.0f, nn); /* from here on, the scores' gradient */
    k_softmax_backward(b->dprobs, b->probs, b->dscores, BH * T, T, true);
    k_matmul(b->dq, b->dprobs, b->k, BH, T, D, T, CblasNoTrans, CblasNoTrans, scale, 1.0f);
    k_matmul(b->dk, b->dprobs, b->q, BH, T, D, T, CblasTrans, CblasNoTrans, scale, 1.0f);
    flops_set_phase(PHASE_FORWARD);
}

/* What one way measured at one T. */
typedef struct WayResult {
    int seq, tile; /* seq: 0 where it did not run; tile: 0 for naive */
    const char *way;
    Estimate seconds;  /* forward + backward: the median of the rounds, with its interval */
    Estimate vs_naive; /* against naive attention in the same round (where it ran) */
    uint64_t flops[PHASE_COUNT];
    size_t kept; /* bytes kept between forward and backward */
} WayResult;

/* What a timed run of a way needs. */
typedef struct WayRuns {
    Bufs *b;
    const AttnDropout *drop;
    WayResult *out;
} WayRuns;

/* One timed run of timing_run: way `w` once, its seconds in values[0] and its FLOPs in
 * the WayResult. */
static RematStatus way_run(void *ctx, int w, double *values)
{
    WayRuns *r = ctx;
    Bufs *b = r->b;
    flops_reset();
    const double t0 = platform_seconds();
    if (w == NAIVE) {
        naive_step(b, r->drop);
    } else {
        const AttnPlan *plan = &FUSED[w].plan;
        k_attention_forward(b->out, b->lse, b->q, b->k, b->v, b->BH, b->T, b->D, r->drop, plan, b->work);
        flops_set_phase(PHASE_BACKWARD);
        k_attention_backward(b->dq, b->dk, b->dv, b->dout, b->q, b->k, b->v, b->out, b->lse, b->BH, b->T, b->D,
                             r->drop, plan, b->work);
        flops_set_phase(PHASE_FORWARD);
    }
    values[0] = platform_seconds() - t0;
    for (int p = 0; p < PHASE_COUNT; p++) r->out[w].flops[p] = flops_get((Phase)p);
    return REMAT_OK;
}

/* The ways at one T interleaved round by round as `plan` says (bench/timing.h). */
static RematStatus measure_seq(int BH, int T, int D, bool naive, const TimingPlan *plan, Progress *progress,
                               WayResult out[N_WAYS])
{
    Bufs b;
    RematStatus status = bufs_create(&b, BH, T, D, naive);
    if (status != REMAT_OK) return status;
    const AttnDropout drop = {.p = 0.1f, .key = {.seed = 3, .op = 1}};
    const int ways = naive ? N_WAYS : N_FUSED;
    char label[32];
    snprintf(label, sizeof label, "T=%d", T);
    WayRuns runs = {.b = &b, .drop = &drop, .out = out};
    Timing timing = {0};
    status = timing_run(plan, ways, 1, way_run, &runs, progress, label, &timing);
    for (int w = 0; w < ways && status == REMAT_OK; w++) {
        out[w].seq = T;
        out[w].way = w == NAIVE ? "naive" : FUSED[w].name;
        out[w].tile = w == NAIVE ? 0 : FUSED[w].plan.tile;
        out[w].seconds = timing_median(&timing, w, 0);
        if (naive) out[w].vs_naive = timing_ratio(&timing, w, NAIVE, 0);
        out[w].kept = w == NAIVE ? 2 * (size_t)BH * T * T * sizeof(float) : (size_t)BH * T * (D + 1) * sizeof(float);
    }
    timing_free(&timing);
    flops_reset();
    free(b.q);
    return status;
}

static const ResultsColumn COLUMNS[] = {
    COLUMN(WayResult, seq, INT, "tokens", SHOW("T", "", 5, 0)), COLUMN(WayResult, way, STR, "", SHOW("way", "", 22, 0)),
    COLUMN(WayResult, tile, INT, "rows and keys (0: naive, no tiles)"),
    COLUMN_TIMED(WayResult, seconds, "seconds", SHOW("median (95% interval)", "ms", 26, 2)),
    COLUMN(WayResult, kept, SIZE, "bytes", SHOW("kept", "MiB", 10, 2)),
    COLUMN_AS("forward_flops", WayResult, flops[PHASE_FORWARD], U64, "FLOPs", SHOW("forward", "GFLOP", 9, 2)),
    COLUMN_AS("backward_flops", WayResult, flops[PHASE_BACKWARD], U64, "FLOPs", SHOW("backward", "GFLOP", 9, 2)),
    COLUMN_AS("recompute_flops", WayResult, flops[PHASE_RECOMPUTE], U64, "FLOPs", SHOW("recompute", "GFLOP", 9, 2)),
    COLUMN_TIMED(WayResult, vs_naive, "ratio", SHOW("vs naive", "+%", 0, 1)), COLUMN_SAMPLES,
};

static RematStatus run_bench(const BenchOptions *o, Results *results)
{
    const int seqs_full[] = {256, 512, 1024, 2048}, seqs_quick[] = {128, 256};
    const int n_seqs = o->quick ? 2 : 4, naive_max = o->quick ? 256 : 1024;
    const int *seqs = o->quick ? seqs_quick : seqs_full;
    const int B = o->quick ? 2 : 4, H = o->quick ? 2 : 4, D = o->quick ? 32 : 64;
    results_config_num(results, "batch", B);
    results_config_num(results, "heads", H);
    results_config_num(results, "head_dim", D);
    results_config_num(results, "dropout", 0.1);
    results_config_str(results, "dropout_rng", "counter");
    results_config_num(results, "ops_tile", ATTN_TILE);
    results_config_ints(results, "seqs", seqs, n_seqs);
    results_config_num(results, "naive_max_seq", naive_max);
    const TimingPlan plan = bench_timing_plan(o, results, 1, 7, 4.0 / n_seqs);
    ResultsTable *table = RESULTS_TABLE(results, "ways", "one forward and backward of causal attention, per way "
                                        "and sequence length", COLUMNS);
    WayResult r[MAX_SEQS][N_WAYS] = {0};
    Progress progress;
    int units = 0;
    for (int i = 0; i < n_seqs; i++) units += timing_max_runs(&plan, seqs[i] <= naive_max ? N_WAYS : N_FUSED);
    progress_begin(&progress, stdout, units);
    RematStatus status = REMAT_OK;
    for (int i = 0; i < n_seqs && status == REMAT_OK; i++)
        status = measure_seq(B * H, seqs[i], D, seqs[i] <= naive_max, &plan, &progress, r[i]);
    progress_end(&progress);
    if (status == REMAT_OK) {
        printf("\n  B=%d H=%d D=%d, dropout 0.1 (counter-based); the ops use tiles of %d; ms: median of the\n"
               "  rounds (its 95%% interval), ways taking turns; kept: bytes between forward and backward;\n"
               "  GFLOP by phase (a tile computes its masked half too: larger tiles, more FLOPs);\n"
               "  vs naive: paired by round (interval, rounds)\n",
               B, H, D, ATTN_TILE);
        results_print_head(table, 0);
        for (int i = 0; i < n_seqs; i++)
            for (int w = 0; w < N_WAYS; w++)
                if (r[i][w].seq) results_add_row(table, &r[i][w]); /* it ran at this T */
    }
    return status;
}

int main(int argc, char **argv) { return bench_main(&INFO, argc, argv, run_bench); }
