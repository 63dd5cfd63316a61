/*
 * train_report.h — what `train` prints: its header, the ledgers' report
 * and a sample of text. Internal to app/: only train.c prints through it, and it
 * decides nothing — every figure comes from the options, the ledgers or the run.
 */
#ifndef REMAT_APP_TRAIN_REPORT_H
#define REMAT_APP_TRAIN_REPORT_H

#include "checkpoint/explain.h"
#include "models/step.h"
#include "parallel/zero.h"
#include "app/train.h"

/* "remat train: gpt, 4 blocks, ..." and "  checkpointing: sqrt, 2 regions", left open
 * for the planner's words; then, for a planned schedule, the planner, the budget and the
 * schedule. */
void report_header(FILE *out, const TrainOptions *o, const Model *m, const Schedule *s, bool planned);

/* The peaks by kind, the FLOPs per step by phase and the median step's speed. */
void report_ledgers(FILE *out, const TrainOptions *o, const TrainReport *r);

/* --explain-memory, after the first step (`result`): what it kept for backward, tensor by
 * tensor, beside the schedule's prediction `p` (or why there is none, `unpredicted`), and
 * what was live at its peak, with what was resident then (as report_ledgers says it).
 * Stops and frees `explain`. */
void report_explained(FILE *out, const TrainOptions *o, Explain *explain, const StepResult *result,
                      const Prediction *p, const char *unpredicted);

/* Data parallelism's report, a collective of every rank of `world` (rank 0's `out` prints
 * it): each rank's parameters, gradients and optimizer state after the last step beside the
 * ZeRO formula for its shard, its peak, and its communication per step by phase.
 * REMAT_ENOMEM, or the gather's error. */
RematStatus report_ranks(FILE *out, const DistGroup *world, const Zero *z, int steps);

/* The pipeline's report, a collective (rank 0's `out` prints it): the theory, then per stage
 * its blocks, peak activations, live micro-batches, idle time and bytes moved to the next. */
RematStatus report_pipeline(FILE *out, const TrainOptions *o, const DistGroup *world, const StepPipeline *p,
                            int steps);

/* o->sample_chars characters the GPT generates (the caller asks only a GPT for more than 0). */
void report_sample(FILE *out, const TrainOptions *o, Model *m);

#endif /* REMAT_APP_TRAIN_REPORT_H */
