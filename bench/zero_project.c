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

const ResultsField ZERO_PROJECT_FIELDS[] = {
    {"model", ""}, {"parameters", "count"}, {"ranks", "K"}, {"stage", "ZeRO stage"}, {"strategy", ""},
    {"params", "bytes per rank"}, {"grads", "bytes per rank"}, {"optimizer", "bytes per rank"},
    {"activations", "bytes per rank, estimated"}, {"total", "bytes per rank"},
    {"moved", "bytes received per rank per step"}, {"comm_seconds", "seconds per step, alpha-beta model"},
};
const int ZERO_PROJECT_N_FIELDS = sizeof ZERO_PROJECT_FIELDS / sizeof ZERO_PROJECT_FIELDS[0];

void zero_project_table(double alpha, double beta, ResultsTable *table)
{
    static const ProjectShape shapes[] = {
        {"gpt2 (124M)", 12, 768, 12, 50257, 1024, 1},  {"gpt2-medium (350M)", 24, 1024, 16, 50257, 1024, 1},
        {"gpt2-large (774M)", 36, 1280, 20, 50257, 1024, 1}, {"gpt2-xl (1.5B)", 48, 1600, 25, 50257, 1024, 1},
    };
    static const int ranks[] = {1, 8, 64, 1024};
    printf("\n  projection, one sequence of 1024 tokens per rank, float32 AdamW; alpha %.3g s, beta %.3g s/B\n"
           "  (GiB per rank: params, grads, optimizer, activations estimated; MiB received per step; comm s)\n",
           alpha, beta);
    printf("    %-19s %5s %5s %-4s %8s %8s %8s %8s %8s %9s %8s\n", "model", "K", "stage", "ckpt", "params", "grads",
           "optim", "act", "total", "moved MiB", "comm s");
    for (int m = 0; m < 4; m++)
        for (int k = 0; k < 4; k++)
            for (int stage = 0; stage <= 3; stage++)
                for (int full = 0; full < 2; full++) {
                    const Projection p = zero_project(&shapes[m], ranks[k], stage, full, alpha, beta);
                    const uint64_t total = p.params + p.grads + p.optimizer + p.activations;
                    const double gib = 1.0 / (1u << 30);
                    printf("    %-19s %5d %5d %-4s %8.2f %8.2f %8.2f %8.2f %8.2f %9.1f %8.4f\n", shapes[m].name,
                           ranks[k], stage, full ? "full" : "none", gib * (double)p.params, gib * (double)p.grads,
                           gib * (double)p.optimizer, gib * (double)p.activations, gib * (double)total,
                           (double)p.moved / (1u << 20), p.seconds);
                    ResultsRecord *rec = results_record(table);
                    record_str(rec, "model", shapes[m].name);
                    record_num(rec, "parameters", (double)p.psi);
                    record_num(rec, "ranks", ranks[k]);
                    record_num(rec, "stage", stage);
                    record_str(rec, "strategy", full ? "full" : "none");
                    record_num(rec, "params", (double)p.params);
                    record_num(rec, "grads", (double)p.grads);
                    record_num(rec, "optimizer", (double)p.optimizer);
                    record_num(rec, "activations", (double)p.activations);
                    record_num(rec, "total", (double)total);
                    record_num(rec, "moved", (double)p.moved);
                    record_num(rec, "comm_seconds", p.seconds);
                }
}
