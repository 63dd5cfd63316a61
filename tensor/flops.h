/*
 * flops.h — the FLOP ledger: how much arithmetic a training step did, by phase.
 *
 * Every kernel in tensor/ adds its own FLOP count to the *current phase*. The training
 * loop (and, later, checkpoint regions) set the phase; nothing else does. The four phases
 * answer quiz question 1: recomputation shows up as RECOMPUTE FLOPs, a cost paid on top
 * of FORWARD and BACKWARD.
 *
 * Counting convention: one multiply, add, compare or transcendental call (exp, tanh,
 * sqrt, division) on one element is one FLOP; a matmul of (M,K)·(K,N) is 2·M·N·K.
 * Each kernel's comment says what it counts.
 *
 * The ledger is a process-wide singleton used from the main thread only; kernels add to
 * it once per call, outside their parallel loops.
 */
#ifndef REMAT_FLOPS_H
#define REMAT_FLOPS_H

#include <stdint.h>

typedef enum Phase {
    PHASE_FORWARD = 0, /* the first forward pass of a step */
    PHASE_BACKWARD,    /* gradient computation */
    PHASE_RECOMPUTE,   /* forward work redone inside a checkpoint region's backward, or
                          inside a kernel's backward (fused attention's probabilities, a
                          counter-based dropout's mask) */
    PHASE_OPTIMIZER,   /* the parameter update */
    PHASE_COUNT
} Phase;

/* Sets the phase that later FLOPs are counted under; returns the previous phase so a
 * caller can put it back. */
Phase flops_set_phase(Phase phase);

/* The phase FLOPs are currently counted under. */
Phase flops_phase(void);

/* Adds `n` FLOPs to the current phase. */
void flops_add(uint64_t n);

/* Adds `n` FLOPs to `phase`, whatever the current one: for a backward kernel that redoes
 * forward work (PHASE_RECOMPUTE) beside its own. */
void flops_add_phase(Phase phase, uint64_t n);

/* FLOPs counted under `phase` since the last flops_reset(). */
uint64_t flops_get(Phase phase);

/* FLOPs of all phases together. */
uint64_t flops_total(void);

/* Every phase's count at one moment: take one before work that should not be counted
 * (evaluating a model between training steps) and restore it afterwards. */
typedef struct FlopCounts {
    uint64_t phase[PHASE_COUNT];
} FlopCounts;

FlopCounts flops_snapshot(void);
void flops_restore(const FlopCounts *counts);

/* Zeroes every phase's count and sets the phase back to PHASE_FORWARD. */
void flops_reset(void);

/* "forward", "backward", "recompute", "optimizer". */
const char *phase_name(Phase phase);

#endif /* REMAT_FLOPS_H */
