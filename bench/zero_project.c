/*
 * zero_project.c — bench_zero's projection (see zero_project.h).
 *
 * The terms, for Ψ parameters, K ranks, stage s:
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
 * The resident state (params, grads, optimizer) is what bench_zero measures to the byte at
 * K = 2 and 4; the communication bytes of stages 0-2 are what it measures too.
 */
#include "bench/zero_project.h"

#include <stdio.h>

#include "parallel/zero.h"

static uint64_t block_params(const ProjectShape *s) { return 12ull * s->C * s->C + 13ull * s->C; }
static uint64_t embedding_params(const ProjectShape *s) { return (uint64_t)(s->V + s->T) * s->C + 2ull * s->C; }

Projection zero_project(const ProjectShape *s, int K, int stage, bool full, double alpha, double beta)
{
    Projection p = {.psi = embedding_params(s) + (uint64_t)s->L * block_params(s)};
    const uint64_t psi = p.psi, shard = (psi + (uint64_t)K - 1) / (uint64_t)K;
    const uint64_t largest = block_params(s) > embedding_params(s) ? block_params(s) : embedding_params(s);
    const ZeroBytes b = zero_resident_bytes(stage, psi, shard, 2); /* float32 AdamW */
    p.params = b.params + (stage >= 3 ? 4 * largest : 0);
    p.grads = b.grads;
    p.optimizer = b.optimizer;
    const uint64_t B = (uint64_t)s->B, T = (uint64_t)s->T, C = (uint64_t)s->C, H = (uint64_t)s->H;
    const uint64_t block = 66 * B * T * C + 9 * B * H * T * T + 16 * B * T;
    p.activations = (full ? (uint64_t)s->L * 4 * B * T * C + block : (uint64_t)s->L * block) + 4 * B * T * C +
                    4 * B * T * (uint64_t)s->V;
    const double share = (double)(K - 1) / K;
    const double moved = stage >= 3 ? share * 4.0 * (3.0 * (double)psi + (double)embedding_params(s))
                                    : 2.0 * share * 4.0 * (double)psi;
    p.moved = (uint64_t)moved;
    p.messages = (uint64_t)(K - 1) * (stage >= 3 ? 1 + 2ull * s->L + 3 : 2);
    p.seconds = alpha * (double)p.messages + beta * moved;
    return p;
}

void zero_fit_alpha_beta(int K, double n0, double t0, double n1, double t1, double *alpha, double *beta)
{
    (void)n0; /* small enough that latency is all of it */
    *alpha = t0 / (2.0 * (K - 1));
    *beta = t1 / (2.0 * (K - 1) / K * 4.0 * n1);
}

/* One record of the projection table. */
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

void zero_project_table(Results *results, double alpha, double beta)
{
    static const ProjectShape shapes[] = {
        {"gpt2 (124M)", 12, 768, 12, 50257, 1024, 1},  {"gpt2-medium (350M)", 24, 1024, 16, 50257, 1024, 1},
        {"gpt2-large (774M)", 36, 1280, 20, 50257, 1024, 1}, {"gpt2-xl (1.5B)", 48, 1600, 25, 50257, 1024, 1},
    };
    static const int ranks[] = {1, 8, 64, 1024};
    ResultsTable *table = results_row_table(results, "projection", "GPT-2 shapes per rank, by K, stage and strategy",
                                            PROJECT_COLUMNS, RESULTS_COUNT(PROJECT_COLUMNS), true);
    printf("\n  projection, one sequence of 1024 tokens per rank, float32 AdamW; alpha %.3g s, beta %.3g s/B\n"
           "  (per rank: params, grads, optimizer, activations estimated; received per step; comm)\n", alpha, beta);
    results_print_head(table, 0);
    for (int m = 0; m < 4; m++)
        for (int k = 0; k < 4; k++)
            for (int stage = 0; stage <= 3; stage++)
                for (int full = 0; full < 2; full++) {
                    const Projection p = zero_project(&shapes[m], ranks[k], stage, full, alpha, beta);
                    results_add_row(table, &(ProjectRow){shapes[m].name, p.psi, ranks[k], stage, full ? "full" : "none",
                                                         p.params, p.grads, p.optimizer, p.activations,
                                                         p.params + p.grads + p.optimizer + p.activations, p.moved,
                                                         p.seconds});
                }
}
