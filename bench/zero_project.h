/*
 * zero_project.h — bench_zero's projection: memory per rank and communication per step of
 * GPT-2's shapes (124M to 1.5B parameters) at up to 1024 ranks, by ZeRO stage and
 * checkpointing strategy, from formulas this machine's runs check, and an α–β model of the
 * network (α seconds per message, β seconds per byte).
 *
 * What it is not: a measurement. Which of its terms were checked against one, and where,
 * docs/MEASUREMENTS.md says (section 9.4).
 */
#ifndef REMAT_BENCH_ZERO_PROJECT_H
#define REMAT_BENCH_ZERO_PROJECT_H

#include <stdint.h>

#include "bench/results.h"

/* A GPT's shape: L blocks of width C, H heads, vocabulary V, context T, B sequences per
 * rank (this model's: tied embedding and head, pre-LayerNorm blocks). */
typedef struct ProjectShape {
    const char *name;
    int L, C, H, V, T, B;
} ProjectShape;

/* What one rank holds and moves in one configuration, in bytes; and the seconds the α–β
 * model gives its communication. */
typedef struct Projection {
    uint64_t psi;                        /* parameters */
    uint64_t params, grads, optimizer;   /* resident per rank (stage 3: + one group gathered) */
    uint64_t activations;                /* peak per rank, estimated (see zero_project.c) */
    uint64_t moved;                      /* bytes received per rank per step */
    uint64_t messages;                   /* messages per rank per step on the critical path */
    double seconds;                      /* α · messages + β · moved */
} Projection;

/* One rank of K at `stage` under strategy `full` (true) or none. */
Projection zero_project(const ProjectShape *s, int K, int stage, bool full, double alpha, double beta);

/* α and β from timings of MPI_Allreduce on K ranks (a ring: 2(K−1) messages,
 * 2(K−1)/K · 4n bytes per rank): α the time of the smallest size n0 per message, β the
 * time of the largest n1 per byte. Each ignores the other's term, so each is an upper
 * bound: on a busy machine a fit of both to the same points came out negative. */
void zero_fit_alpha_beta(int K, double n0, double t0, double n1, double t1, double *alpha, double *beta);

/* Prints the projection for GPT-2 small to XL at K = 1, 8, 64, 1024, stages 0 to 3, none and
 * full, and records it as the table "projection" of `results` (an error is results_write's
 * to report). */
void zero_project_table(Results *results, double alpha, double beta);

#endif /* REMAT_BENCH_ZERO_PROJECT_H */
