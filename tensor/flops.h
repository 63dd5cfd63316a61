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
 * Beside the FLOPs, the ledger keeps wall time, so a bench can say where a step's time
 * goes: the seconds each phase was current (from flops_reset to the read, the clock is
 * read only when the phase changes), and the seconds and FLOPs inside the matmuls
 * (k_matmul reads the clock before and after each call: two reads against a sgemm of at
 * least thousands of FLOPs). Everything else a phase spent is outside the matmuls:
 * elementwise and row kernels, attention cores, the optimizer's pass, allocation. The
 * fused attention's own tile products are its kernel's time, not the matmuls'. The times
 * are what the clock read on a possibly busy machine; the FLOPs are exact.
 *
 * The ledger is a process-wide singleton used from the main thread only; kernels add to
 * it once per call, outside their parallel loops.
 */
#ifndef REMAT_FLOPS_H
#define REMAT_FLOPS_H

#include <stdint.h>

#include "base/parse.h"

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

/* Adds one matmul call: `n` FLOPs (to the current phase, as flops_add, and to its matmul
 * FLOPs) that took `seconds` of wall time (to its matmul seconds). */
void flops_add_matmul(uint64_t n, double seconds);

/* FLOPs counted under `phase` since the last flops_reset(). */
uint64_t flops_get(Phase phase);

/* FLOPs of all phases together. */
uint64_t flops_total(void);

/* Every phase's count and times at one moment, since the last flops_reset(): read one to
 * see a step's matmul share and where its time went, or take one before work that should
 * not be counted (evaluating a model between training steps) and restore it afterwards. */
typedef struct FlopCounts {
    uint64_t phase[PHASE_COUNT];
    uint64_t matmul[PHASE_COUNT];         /* of them, inside matmuls (flops_add_matmul) */
    double matmul_seconds[PHASE_COUNT];   /* the seconds inside matmuls */
    double phase_seconds[PHASE_COUNT];    /* the seconds each phase was current, up to now */
} FlopCounts;

FlopCounts flops_snapshot(void);

/* Puts back every count and time of `counts`; the clock of the current phase restarts
 * now, so the seconds between the snapshot and the restore are not counted. */
void flops_restore(const FlopCounts *counts);

/* Zeroes every phase's count and times, sets the phase back to PHASE_FORWARD and starts
 * its clock. */
void flops_reset(void);

/* The names of the phases, "forward", "backward", "recompute", "optimizer":
 * name_of(&FLOP_PHASE_NAMES, phase) (base/parse.h). */
extern const NameTable FLOP_PHASE_NAMES;

#endif /* REMAT_FLOPS_H */
